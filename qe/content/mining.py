"""``qe content mine``: a lexicon for your own domain from (MR, text) pairs, in one command.

    qe content mine -i pairs.csv -o my_lexicon.json            # columns mr and ref (or text / output)
    qe content mine -i pairs.jsonl --mr-format da -o my_lexicon.json --min-count 3
    qe score -m coverage --opt lexicon=my_lexicon.json -i outputs.txt --mrs mrs.txt

Each pair's text must realise its MR exactly (references written for their MR, or texts whose MR was corrected to
what they say, as the cleaned E2E data are): the miner learns which words state which slot value from them
(:func:`qe.content.lexicon.mine`). Pairs whose MRs are RDF triples give a triples lexicon instead: the words texts use
for each property (:func:`qe.content.lexicon.mine_triples`); one file holds one kind.

Input: CSV with a header, or JSON lines (one object per line). The MR comes from the ``mr`` column / field, the text
from the first of ``text``, ``ref``, ``output`` present (``--text-field`` names another); a ``refs`` list gives one
pair per reference. A problem names the file, the line and the field.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qe.errors import RecordError

TEXT_FIELDS = ("text", "ref", "output")


def read_pairs(path: str | Path, text_field: str | None = None, mr_field: str = "mr",
               fmt: str = "auto") -> list[tuple[str, str, str]]:
    """``[(mr, text, where), ...]`` from a CSV or JSONL file (module docstring); ``where`` is ``file:line``."""
    from qe.data.record import jsonl_objects, read_csv_rows, read_text

    p = Path(path)
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


def mine_file(path: str | Path, *, mr_format: str = "auto", text_field: str | None = None, mr_field: str = "mr",
              fmt: str = "auto", source: str | None = None, **settings: Any):
    """The lexicon mined from a file of pairs (:func:`read_pairs`): slot lexicon or triples lexicon by its MRs."""
    from qe.content.lexicon import mine, mine_triples
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
    lines = [f"lexicon from {lex.settings.get('texts', '?')} texts: {len(lex.slots)} slots, {n_val} values, "
             f"{n_pat} patterns, {n_trig} triggers"]
    for key, sl in sorted(lex.slots.items()):
        pats = sorted(sl.patterns, key=lambda g: -sum(sl.patterns[g].values()))
        shown = ", ".join(f"{g!r}" for g in (pats[:4] or sl.triggers[:4]))
        lines.append(f"  {sl.name or key:18s} {sl.kind:8s} {len(sl.values):4d} values {len(sl.patterns):4d} patterns"
                     + (f"  e.g. {shown}" if shown else ""))
    if n_pat + n_trig == 0:
        lines.append("  no patterns learned: too few pairs for --min-count? (values are still matched by their "
                     "own words)")
    return lines


def main(argv: Sequence[str]) -> int:
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
    m.add_argument("--force", action="store_true", help="overwrite an existing output file")
    m.add_argument("--quiet", "-q", action="store_true", help="no summary")
    m.add_argument("--debug", action="store_true", help="show the traceback of an error")
    args = ap.parse_args(list(argv))
    out = Path(args.output)
    try:
        if out.exists() and not args.force:
            raise FileExistsError(f"{out} exists: choose another -o or pass --force")
        if args.min_count is not None and args.min_count < 1:
            raise ValueError(f"--min-count {args.min_count}: must be 1 or more")
        settings = {} if args.min_count is None else {"min_count": args.min_count}
        lex = mine_file(args.input, mr_format=args.mr_format, text_field=args.text_field, mr_field=args.mr_field,
                        fmt=args.format, **settings)
        out.parent.mkdir(parents=True, exist_ok=True)
        lex.save(out)
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


__all__ = ["read_pairs", "mine_file", "summary", "main", "TEXT_FIELDS"]
