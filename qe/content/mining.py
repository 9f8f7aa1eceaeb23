"""``qe content mine``: a lexicon for your own domain from (MR, text) pairs, in one command.

    qe content mine -i pairs.csv -o my_lexicon.json            # columns mr and ref (or text / output)
    qe content mine -i pairs.jsonl --mr-format da -o my_lexicon.json --min-count 3
    qe score -m coverage --opt lexicon=my_lexicon.json -i outputs.txt --mrs mrs.txt

Each pair's text must realise its MR exactly (references written for their MR, or texts whose MR was corrected to
what they say, as the cleaned E2E data are): the miner learns which words state which slot value from them
(:func:`mine`). Pairs whose MRs are RDF triples give a triples lexicon instead: the words texts use
for each property (:func:`qe.content.lexicon.mine_triples`); one file holds one kind.

Input: CSV with a header, or JSON lines (one object per line). The MR comes from the ``mr`` column / field, the text
from the first of ``text``, ``ref``, ``output`` present (``--text-field`` names another); a ``refs`` list gives one
pair per reference. A problem names the file, the line and the field.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from qe.errors import RecordError

TEXT_FIELDS = ("text", "ref", "output")


def read_pairs(path: str | Path, text_field: str | None = None, mr_field: str = "mr",
               fmt: str = "auto") -> list[tuple[str, str, str]]:
    """``[(mr, text, where), ...]`` from a CSV or JSONL file (module docstring); ``where`` is ``file:line``."""
    from qe.core.inputs import input_file_problem
    from qe.data.record import jsonl_objects, read_csv_rows, read_text

    p = Path(path)
    problem = input_file_problem(p)
    if problem:
        raise FileNotFoundError(problem)
    text = read_text(p)
    fmt = fmt if fmt != "auto" else ("csv" if p.suffix.lower() == ".csv" else
                                     "jsonl" if p.suffix.lower() in (".jsonl", ".ndjson") else "")
    if fmt not in ("csv", "jsonl"):
        raise RecordError(f"{p}: cannot tell its format from the suffix {p.suffix!r}: give a .csv or .jsonl file "
                          "(or --format csv / jsonl)")
    rows: list[tuple[int, dict[str, Any]]] = []
    if fmt == "csv":
        _, rows = read_csv_rows(text, str(p), required=[mr_field])
    else:
        rows = list(jsonl_objects(text, str(p)))
    out = []
    for ln, d in rows:
        where = f"{p}:{ln}"
        mr = d.get(mr_field)
        if not isinstance(mr, str) or not mr.strip():
            raise RecordError(f"{where}: field {mr_field!r} is missing or empty (the MR the text realises)")
        names = [text_field] if text_field else [*TEXT_FIELDS, "refs"]
        key = next((k for k in names if k in d and d[k] not in (None, "", [])), None)
        if key is None:
            raise RecordError(f"{where}: no text: give a field named {' / '.join(repr(n) for n in names)}")
        value = d[key]
        if fmt == "csv" and key == "refs" and isinstance(value, str) and value.lstrip().startswith("["):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass
        texts = value if isinstance(value, list) else [value]
        for t in texts:
            if not isinstance(t, str) or not t.strip():
                raise RecordError(f"{where}: field {key!r} must hold text (found {t!r})")
            out.append((mr, t, where))
    if not out:
        raise RecordError(f"{p}: no pairs to mine")
    return out


#: the fewest readings of one value as the other (both ways together) that make two wordings of one scale value
SCALE_MIN_READS = 3


def mine(pairs: Iterable[tuple[str, str]], *, scale_aliases: bool = True, **settings: Any):
    """``qe.content.mine``: a :class:`~qe.content.lexicon.Lexicon` mined from ``(mr, text)`` pairs whose MR lists
    what the text realises (:func:`qe.content.lexicon.mine`; ``settings`` are its keywords). Then the lexicon is
    matched against the same texts: two values of a category slot that it reads for each other far more often than
    for the slot's other values are one scale value written two ways (:func:`scale_pairs`: E2E's ``high`` and ``5 out
    of 5``), and the patterns are mined once more with each pair counted as one value. ``scale_aliases=False``: the
    first mining alone (as before 2026-12-06)."""
    from qe.content.lexicon import mine as mine_patterns
    from qe.core.mr import TRIPLE_ACT, parse_acts

    pairs = list(pairs)
    lex = mine_patterns(pairs, **settings)
    lift = settings.get("alias_lift", 4.0)
    if not (scale_aliases and lift and any(sl.kind == "category" and sl.patterns for sl in lex.slots.values())):
        return lex
    fmt = settings.get("mr_format", "auto")
    plain = [(mr, t) for mr, t in pairs if not all(a == TRIPLE_ACT for a, _ in parse_acts(mr, fmt))]
    found = scale_pairs(lex, plain, fmt, lift)
    return mine_patterns(pairs, scale_pairs=found, **settings) if found else lex


def scale_pairs(lex, pairs: list[tuple[str, str]], mr_format: str,
                 lift: float) -> dict[str, list[tuple[str, str, int]]]:
    """One scale written two ways: ``{slot: [(A, B, readings), ...]}``. The mined lexicon is matched against the
    texts it was mined from. Where it reads value B for a fact whose MR says A (a ``wrong`` verdict the data
    contradict: the MRs list what the texts say), the pair counts. A and B are two wordings of one value when such
    readings, both ways together, number :data:`SCALE_MIN_READS` or more and their rate among the texts of A and B
    is ``lift`` times the rate at which A or B is read for the slot's other values. On the E2E development texts:
    "a high customer rating" for ``5 out of 5`` and the like, 1-4 % of the two values' texts, against 0.1 % for the
    others (lift 7-58); pairs that are two values (``average`` / ``high``: "average prices" beside a high rating)
    come out at a lift of 0.1-0.6. Computed, not a list: the E2E scales are found in the data, not written down
    (docs/results/content-log.md, "One scale, two wordings")."""
    from qe.content.align import Matcher
    from qe.content.lexicon import norm_value
    from qe.core.surface import norm_slot

    cats = {k for k, sl in lex.slots.items() if sl.kind == "category" and sl.patterns}
    matcher = Matcher(lex, mr_format=mr_format)
    n: dict[str, Counter] = defaultdict(Counter)
    read: dict[str, Counter] = defaultdict(Counter)
    for mr, text in pairs:
        try:
            al = matcher.align(mr, text)
        except ValueError:
            continue
        for v in al.verdicts:
            key = norm_slot(v.slot)
            if key not in cats or v.value is None:
                continue
            a = norm_value(v.value)
            n[key][a] += 1
            if v.status == "wrong" and v.said_value:
                b = norm_value(v.said_value)
                if b != a and b in lex.slots[key].values:
                    read[key][(a, b)] += 1
    out: dict[str, list[tuple[str, str, int]]] = {}
    for key in sorted(read):
        for a, b in sorted({tuple(sorted(p)) for p in read[key]}):
            k = read[key].get((a, b), 0) + read[key].get((b, a), 0)
            n_ab = n[key][a] + n[key][b]
            rest_n = sum(c for v, c in n[key].items() if v not in (a, b))
            rest_k = sum(c for (x, y), c in read[key].items() if y in (a, b) and x not in (a, b))
            if k >= SCALE_MIN_READS and rest_n and k / n_ab >= lift * max(rest_k, 1) / rest_n:
                out.setdefault(key, []).append((a, b, k))
    return out



def mine_file(path: str | Path, *, mr_format: str = "auto", text_field: str | None = None, mr_field: str = "mr",
              fmt: str = "auto", source: str | None = None, **settings: Any):
    """The lexicon mined from a file of pairs (:func:`read_pairs`): slot lexicon or triples lexicon by its MRs."""
    from qe.content.lexicon import mine_triples
    from qe.core.mr import TRIPLE_ACT, parse_acts

    pairs = read_pairs(path, text_field, mr_field, fmt)
    kinds = set()
    for mr, _, where in pairs:
        acts = parse_acts(mr, mr_format, where=f"{where}: field {mr_field!r}")
        kinds.add("triples" if acts and all(a == TRIPLE_ACT for a, _ in acts) else "slots")
    if len(kinds) > 1:
        raise RecordError(f"{path}: mixes RDF-triple MRs with slot MRs; mine each kind from its own file")
    source = source or Path(path).name
    plain = [(mr, t) for mr, t, _ in pairs]
    if kinds == {"triples"}:
        allowed = {k: v for k, v in settings.items() if k in ("min_count",)}
        return mine_triples(plain, source=source, where=str(path), mr_format=mr_format, **allowed)
    return mine(plain, source=source, where=str(path), mr_format=mr_format, **settings)


def summary(lex) -> list[str]:
    """A few lines saying what a lexicon learned."""
    if lex.has_triple_words:
        words = sum(len(v) for v in lex.properties.values())
        lines = [f"triples lexicon from {lex.settings.get('texts', '?')} texts: {len(lex.properties)} properties, "
                 f"{words} property words, {len(lex.common)} common words"]
        for prop, ws in sorted(lex.properties.items(), key=lambda kv: -len(kv[1]))[:5]:
            lines.append(f"  {prop:24s} {', '.join(ws[:8])}{' ...' if len(ws) > 8 else ''}")
        return lines
    n_val = sum(len(s.values) for s in lex.slots.values())
    n_pat = sum(len(s.patterns) for s in lex.slots.values())
    n_trig = sum(len(s.triggers) for s in lex.slots.values())
    n_about = sum(len(s.about) for s in lex.slots.values())
    lines = [f"lexicon from {lex.settings.get('texts', '?')} texts: {len(lex.slots)} slots, {n_val} values, "
             f"{n_pat} patterns, {n_trig} triggers"
             + (f", {n_about} wordings of slots asked without a value" if n_about else "")]
    for key, sl in sorted(lex.slots.items()):
        pats = sorted(sl.patterns, key=lambda g: -sum(sl.patterns[g].values()))
        shown = ", ".join(f"{g!r}" for g in (pats[:4] or sl.triggers[:4]))
        lines.append(f"  {sl.name or key:18s} {sl.kind:8s} {len(sl.values):4d} values {len(sl.patterns):4d} patterns"
                     + (f"  e.g. {shown}" if shown else ""))
    dropped = lex.settings.get("dropped_patterns")
    if dropped:  # n-grams the counts would keep but that leave their slot (qe.content.lexicon._out_of_slot)
        lines.append(f"  not kept: {dropped.get('other_slot_words', 0)} n-grams holding another slot's words, "
                     f"{dropped.get('function_word_edge', 0)} starting or ending on a function word")
    for key, found in sorted(lex.settings.get("scale_pairs", {}).items()):  # what the miner took as one value
        sl = lex.slots.get(key)
        values = sl.values if sl is not None else {}
        lines.append(f"  one value written two ways ({(sl.name if sl is not None else None) or key}): "
                     + "; ".join(f"{values.get(a, a)} = {values.get(b, b)}" for a, b in found))
    if n_pat + n_trig == 0:
        lines.append("  no patterns learned: too few pairs for --min-count? (values are still matched by their "
                     "own words)")
    return lines


log = logging.getLogger("qe")


class Working:
    """Says that a long step runs (mining a lexicon: 10-50 s): on a terminal a bar with the time spent, redrawn
    twice a second (the miner reports no count to fill a bar with); elsewhere no bar. An INFO log line when it
    starts and one when it ends, with the time taken (``qe score -v`` shows them)."""

    def __init__(self, desc: str, enabled: bool = True):
        self.desc, self.enabled = desc, enabled
        self._bar: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "Working":
        from qe.core.runtime import stderr_is_terminal

        self._t0 = time.monotonic()
        log.info("%s ...", self.desc)
        if self.enabled and stderr_is_terminal():
            from tqdm.auto import tqdm

            self._bar = tqdm(total=None, desc=self.desc, bar_format="{desc}: {elapsed}", leave=False)
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()
        return self

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            self._bar.refresh()

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.close()
        log.info("%s: %s in %.1f s", self.desc, "failed" if exc[0] else "done", time.monotonic() - self._t0)


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths are one file (the same path, or links to one file)."""
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def write_lexicon(lex, out: str | Path) -> None:
    """Write a lexicon's JSON to a temporary file in ``out``'s folder and rename it into place (:func:`os.replace`):
    a reader never sees half a file, and a write that fails (a full disk) leaves ``out`` as it was and raises an
    OSError naming ``out``."""
    out = Path(out)
    if out.is_symlink():  # the file the link points to is written; the link stays a link
        out = Path(os.path.realpath(out))
    from qe.core.paths import write_atomically

    try:
        write_atomically(out, lex.save, fsync=True)
    except OSError as exc:
        kept = f"; {out} is as it was" if out.exists() else ""
        raise OSError(f"cannot write the lexicon {out}: {exc.strerror or exc}{kept}") from exc


def main(argv: Sequence[str]) -> int:
    from qe.core.inputs import input_file_problem, output_place_problem
    from qe.core.mr import MR_FORMATS

    ap = argparse.ArgumentParser(prog="qe content", description="The content check's tools (qe score -m coverage).")
    sub = ap.add_subparsers(dest="action", required=True)
    m = sub.add_parser("mine", help="mine a lexicon from (MR, text) pairs of your domain",
                       description="Mine a lexicon for your own domain from (MR, text) pairs whose MR lists what "
                                   "the text says, print what it learned and write it as JSON. Example: qe content "
                                   "mine -i pairs.csv -o lex.json; then qe score -m coverage --opt lexicon=lex.json "
                                   "-i outputs.txt --mrs mrs.txt")
    m.add_argument("--input", "-i", required=True, help="pairs: .csv (header with mr and text / ref / output) or .jsonl")
    m.add_argument("--output", "-o", required=True, help="the lexicon JSON file to write")
    m.add_argument("--mr-format", default="auto", choices=list(MR_FORMATS),
                   help="how MRs are written (default auto: detected per MR)")
    m.add_argument("--format", default="auto", choices=["auto", "csv", "jsonl"], help="input format (auto: suffix)")
    m.add_argument("--text-field", default=None, help="the column / field holding the text (default: text, ref, "
                                                       "output, refs: the first present)")
    m.add_argument("--mr-field", default="mr", help="the column / field holding the MR (default mr)")
    m.add_argument("--min-count", type=int, default=None,
                   help="texts an n-gram must appear in to become a pattern (default 5; triples 2); lower it for "
                        "a few hundred pairs")
    m.add_argument("--force", action="store_true", help="overwrite an existing output file (never the input)")
    m.add_argument("--quiet", "-q", action="store_true", help="no summary, no bar")
    m.add_argument("--debug", action="store_true", help="show the traceback of an error")
    args = ap.parse_args(list(argv))
    out = Path(args.output)
    try:  # everything that can be checked is checked before the mining (10-50 s on a few thousand pairs)
        problem = input_file_problem(args.input)
        if problem:
            raise FileNotFoundError(f"-i {problem}")
        if _same_file(Path(args.input), out):
            raise FileExistsError(f"-o {out} is the input file -i {args.input}; write the lexicon to a new file "
                                  "(qe content mine never overwrites what it reads, not even with --force)")
        problem = output_place_problem(out)
        if problem:
            raise FileExistsError(f"-o {problem}")
        if out.is_dir():
            raise IsADirectoryError(f"-o {out} is a folder; give a file name such as {out / 'lexicon.json'}")
        if out.exists() and not args.force:
            raise FileExistsError(f"{out} exists: choose another -o or pass --force")
        if args.min_count is not None and args.min_count < 1:
            raise ValueError(f"--min-count {args.min_count}: must be 1 or more")
        settings = {} if args.min_count is None else {"min_count": args.min_count}
        with Working(f"qe content mine: mining {args.input}", enabled=not args.quiet):
            lex = mine_file(args.input, mr_format=args.mr_format, text_field=args.text_field,
                            mr_field=args.mr_field, fmt=args.format, **settings)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_lexicon(lex, out)
    except (ValueError, OSError, RecordError) as exc:
        if args.debug:
            raise
        msg = str(exc.args[0]) if exc.args and isinstance(exc.args[0], str) else str(exc)
        print(f"qe content mine: error: {msg.splitlines()[0] if msg else type(exc).__name__}", file=sys.stderr)
        return 2
    if not args.quiet:
        print("\n".join(summary(lex)))
        print(f"written: {out}  (use it: qe score -m coverage --opt lexicon={out} -i OUTPUTS --mrs MRS)")
    return 0


__all__ = ["read_pairs", "mine", "scale_pairs", "mine_file", "summary", "main", "write_lexicon", "Working",
           "TEXT_FIELDS", "SCALE_MIN_READS"]
