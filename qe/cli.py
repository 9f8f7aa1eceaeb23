"""Console script ``qe``.

    qe score -m PATH_OR_NAME [-m ...] -i FILE|- [-i FILE ...] [-o FILE|-] [-r REFS.txt ...] [--mrs F] [--sources F]
             [--system-level [--json] | -b] [--resume] [--components] [--opt score=nce] [--device cpu] [-q] [--debug]
             [--devices N --num-nodes M --accelerator cpu|gpu]          # sharded over processes
    qe compare -m METRIC [-r REFS.txt ...] BASELINE SYSTEM [SYSTEM ...] [--paired-bs|--paired-ar] [--json]
    qe train <hydra overrides ...>             # same as python train.py ... (packaged configs)
    qe evaluate <hydra overrides ...>          # same as python evaluate.py ...
    qe zoo list | build NAME | verify [NAME] | compare A B | pack NAME -o DIR | install ARCHIVE|URL | push NAME REPO | spread NAME
    qe list                                    # registered scorers and export kinds
    qe data list | verify [NAME] | download NAME
    qe --version

Exit codes: 0 success; 2 bad input (records, arguments, options, an output that would overwrite a file the run
reads, an output another run is writing, a --resume of another scorer's partial output);
3 a model or export that cannot be loaded; 1 anything else (a bug: rerun with ``--debug`` for the traceback).
Errors are one line naming the file, line, record id and field where they apply; ``--debug`` adds the traceback.
"""
from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import logging
import math
import os
import stat
import sys
from pathlib import Path
from typing import Any, Iterable

from qe.core.signature import Signature

EXIT_BAD_INPUT = 2
EXIT_BAD_MODEL = 3


class CLIError(Exception):
    """An error the user can act on: printed as one line, with its exit code."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT):
        super().__init__(message)
        self.code = code


def _parse_opts(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for it in items or []:
        if "=" not in it:
            raise CLIError(f"--opt expects KEY=VALUE, got {it!r}")
        k, v = it.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


# ---------------------------------------------------------------------------------------------------- score
#: bookkeeping fields of a partial output's rows (never in the final output): what scored the row (scorers, options,
#: --components) and a digest of the record it scored, so that --resume reuses a row only for the same scorers and
#: an unchanged record (docs/concepts/records.md, "Resuming")
PARTIAL_SIG, PARTIAL_DIGEST = "_qe_sig", "_qe_in"


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _check_output(out: Path, reads: list[tuple[str, str]]) -> None:
    """Refuse an output that is a file the run reads (``-i``, ``-r``, ``--mrs``, ``--sources``), before anything is
    written; a symlink or hard link to one of them counts as that file."""
    for flag, path in reads:
        if path is None or path == STDIN:
            continue
        if _same_file(Path(path), out):
            what = "the input file" if flag == "-i" else f"the {flag} file"
            raise CLIError(f"--output {out} is {what}{'' if flag == '-i' else ' ' + path}; scores go to a new file "
                           "(a file that qe score reads is never overwritten)")


def _output_target(out: Path) -> tuple[Path, str | None]:
    """Where the scores go: a symlink is followed (the partial output and the final rename happen beside the file it
    points to, the link stays a link); ``(path, kind)`` where ``kind`` names a node that is not a regular file (a
    FIFO, a character device such as /dev/null, a socket): such a node is written straight through, never
    replaced."""
    if out.is_symlink():
        try:
            out = Path(os.path.realpath(out, strict=True) if out.exists() else os.path.realpath(out))
        except (OSError, RuntimeError) as exc:
            raise CLIError(f"--output {out}: cannot follow the symbolic link ({exc})") from None
    try:
        st = os.stat(out)
    except FileNotFoundError:
        return out, None
    except OSError as exc:
        raise CLIError(f"--output {out}: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise CLIError(f"--output {out} is a directory; give a file name such as {out / 'scores.jsonl'}")
    if stat.S_ISREG(st.st_mode):
        return out, None
    kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a character device" if stat.S_ISCHR(st.st_mode) else
            "a block device" if stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else
            "not a regular file")
    return out, kind


def _prepare_output(out: Path) -> Path:
    """Make sure the output's folder exists and is writable (before any scoring); the partial output's path."""
    partial = _partial_path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(partial, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise CLIError(f"--output {out}: cannot write there ({exc.strerror}: {exc.filename})") from None
    return partial


class _OutputLock:
    """One ``qe score`` per output: an exclusive ``flock`` on ``OUTPUT.lock``, held for the whole run. A second run
    is refused at once. The kernel drops the lock when its process ends, however it ends, so the file a killed run
    leaves behind blocks nobody; a finished run removes it."""

    def __init__(self, out: Path):
        self.out, self.path, self.fd = out, out.with_name(out.name + ".lock"), None

    def __enter__(self) -> "_OutputLock":
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not on POSIX: no lock
            return self
        while True:
            try:
                self.out.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise CLIError(f"--output {self.out}: cannot write there ({exc.strerror}: {exc.filename})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                os.close(fd)
                raise CLIError(f"--output {self.out} is being written by another qe score run"
                               f"{f' (process {holder})' if holder.isdigit() else ''}; wait for it to end, or give "
                               "another -o") from None
            try:  # the lock file may have been removed (and made anew) by a run that ended meanwhile: lock that one
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                self.fd = fd
                return self
            os.close(fd)

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass
            os.close(self.fd)
            self.fd = None


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def _partial_path(out: Path) -> Path:
    return out.with_name(out.name + ".partial")


def _read_done(partial: Path, ids: set[str]) -> dict[str, dict]:
    """Rows already scored (by record id) in a partial output; a torn last line (a crash mid-write) is ignored."""
    done: dict[str, dict] = {}
    if not partial.is_file():
        return done
    with open(partial, encoding="utf-8") as f:
        for ln, line in enumerate(f, 1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                logging.getLogger("qe").warning("%s:%d: unreadable line ignored (an interrupted write)", partial, ln)
                continue
            if isinstance(row, dict) and str(row.get("id")) in ids:
                done[str(row["id"])] = row
    return done


def _digest(record) -> str:
    """A digest of everything a record holds (output, mr, refs, source, ratings, ...): a row of a partial output is
    reused by ``--resume`` only for the record it was written for."""
    text = json.dumps(record.to_dict(), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _identity(metrics: list[tuple[str, Any]], opts: dict, components: bool) -> str:
    """What scored a partial output's rows: the scorers' identities (``KEY=IDENTITY`` with several ``-m``;
    :meth:`~qe.core.scorer.Scorer.identity`: the signature, or for ``coverage --opt lexicon=auto`` every lexicon it may
    pick), the ``--opt`` options and ``--components``."""

    def of(scorer: Any) -> str:  # known before scoring (coverage's lexicon=auto: every lexicon it may pick)
        return scorer.identity() if hasattr(scorer, "identity") else str(scorer.signature)

    if len(metrics) == 1:
        ident = of(metrics[0][1])
    else:
        ident = " + ".join(f"{key}={of(scorer)}" for key, scorer in metrics)
    if opts:
        ident += " opt:" + json.dumps(opts, sort_keys=True)
    if components:
        ident += " components:yes"
    return ident


def _public(row: dict) -> dict:
    """A partial output's row without its bookkeeping fields."""
    if PARTIAL_SIG not in row and PARTIAL_DIGEST not in row:
        return row
    return {k: v for k, v in row.items() if k not in (PARTIAL_SIG, PARTIAL_DIGEST)}


def _dumps(row: dict) -> str:
    """One output line: strict JSON (NaN -> null, +-inf -> "inf"/"-inf" anywhere in the row; qe.data.record.dumps)."""
    from qe.core.jsonio import dumps

    return dumps(row)


def _finite(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def main_component(scorer, comps: dict[str, list[float]]) -> str:
    """The component that is the scorer's own score (``scorer.main_component``, else the one named like the scorer,
    else the first)."""
    key = getattr(scorer, "main_component", None)
    if key is not None:
        if key not in comps:
            raise RuntimeError(f"{scorer.name}: main_component {key!r} is not among its components {list(comps)}")
        return key
    return scorer.name if scorer.name in comps else next(iter(comps))


def _rows(records, keys: list[str], results: list[tuple[list[float], dict | None]],
          details: list[list[dict] | None] | None = None) -> Iterable[dict]:
    """Output rows: the record's fields, then ``score`` (one metric) or ``scores: {KEY: score}`` (several ``-m``,
    keyed as given), then ``components`` (``{KEY: {component: score}}`` with several), then ``details`` for scorers
    that explain their score (``coverage``: per-slot verdicts; ``{KEY: details}`` with several ``-m``)."""
    single = len(keys) == 1
    details = details or [None] * len(keys)
    for i, r in enumerate(records):
        row = r.to_dict()
        if single:
            scores, comps = results[0]
            row["score"] = _finite(scores[i])
            if comps is not None:
                row["components"] = {k: _finite(v[i]) for k, v in comps.items()}
        else:
            row["scores"] = {key: _finite(res[0][i]) for key, res in zip(keys, results)}
            if results[0][1] is not None:
                row["components"] = {key: {k: _finite(v[i]) for k, v in res[1].items()}
                                     for key, res in zip(keys, results)}
        if any(d is not None for d in details):
            row["details"] = details[0][i] if single else {k: d[i] for k, d in zip(keys, details) if d is not None}
        yield row


def _value(row: dict, key: str | None):
    """A row's score of metric ``key`` (``None``: the one metric of a single-metric run)."""
    return row.get("score") if key is None else (row.get("scores") or {}).get(key)


def _chunks(n: int, size: int) -> Iterable[range]:
    size = max(1, int(size or n or 1))
    for s in range(0, n, size):
        yield range(s, min(n, s + size))


def _bar(args: argparse.Namespace) -> bool:
    """A progress bar only on a terminal: in a log file or a pipe a bar is fragments and escape codes."""
    if getattr(args, "quiet", False) or getattr(args, "no_progress", False):
        return False
    from qe.core.runtime import stderr_is_terminal

    return stderr_is_terminal()


def _score_into(sink, metrics: list[tuple[str, Any]], records, todo: list[int], kw_alls: dict[str, dict],
                args: argparse.Namespace, desc: str | None = None, mark=None) -> dict[str, dict]:
    """Score ``records[i] for i in todo`` chunk by chunk with every metric, writing each chunk's rows to ``sink``.

    One progress bar for the whole job (the scorers' own bars are off; none when stderr is not a terminal), a log
    line at most every 30 s and one at the end. ``mark(record) -> dict``: bookkeeping fields added to each row
    written (a partial output's, which is fsynced after each chunk)."""
    from qe.core.runtime import Progress

    log = logging.getLogger("qe")
    desc = desc or "qe score"
    keys = [k for k, _ in metrics]
    names = ", ".join(s.name for _, s in metrics)
    rows_out: dict[str, dict] = {}
    chunk = len(todo) if any(s.corpus_dependent for _, s in metrics) else args.chunk_size
    log.info("%s: scoring %d records with %s", desc, len(todo), names)
    with Progress(len(todo), f"{desc}: {names}", enabled=_bar(args), unit="rec") as bar:
        for part in _chunks(len(todo), chunk):
            idx = [todo[j] for j in part]
            recs = [records[i] for i in idx]
            outputs = [r.output for r in recs]
            results, details = [], []
            for key, scorer in metrics:
                kw = {k: [v[i] for i in idx] for k, v in kw_alls[key].items()}
                if getattr(scorer, "accepts_ids", False):
                    kw["ids"] = [r.id for r in recs]
                if args.components:
                    comps = scorer.score_components(outputs, batch_size=args.batch_size, progress=False, **kw)
                    results.append((comps[main_component(scorer, comps)], comps))
                else:
                    results.append((scorer.score(outputs, batch_size=args.batch_size, progress=False, **kw), None))
                details.append(scorer.details(outputs, **kw) if callable(getattr(scorer, "details", None)) else None)
            for rec, row in zip(recs, _rows(recs, keys, results, details)):
                if sink is not None:
                    sink.write(_dumps({**row, **mark(rec)} if mark is not None else row) + "\n")
                rows_out[row["id"]] = row
            if sink is not None:
                sink.flush()
                if mark is not None:
                    os.fsync(sink.fileno())
            bar.update(len(idx))
    log.info("%s: %d/%d records written", desc, len(rows_out), len(todo))
    return rows_out


def _partials(partial: Path) -> list[Path]:
    """The partial output and the per-rank partial outputs of a sharded run."""
    return [partial, *sorted(partial.parent.glob(partial.name + ".rank*"))]


def _prepare_partial(partial: Path, records, resume: bool, ident: str) -> dict[str, dict]:
    """Rows already scored (``--resume``), rewritten into ``partial`` alone; without resume, empty partial files.

    A row is reused only when it was written by the same scorers and options (``ident``; another one is refused,
    naming both) for the same record (its digest; a record changed since is scored again)."""
    ids = {r.id for r in records}
    done: dict[str, dict] = {}
    if resume:
        found: dict[str, dict] = {}
        for p in _partials(partial):
            found.update(_read_done(p, ids))
        other = next((r for r in found.values() if r.get(PARTIAL_SIG) != ident), None)
        if other is not None:
            was = other.get(PARTIAL_SIG)
            was = repr(was) if was else "an older qe that recorded no signature"
            raise CLIError(f"--resume: {partial} was scored by {was}, this run scores with {ident!r}; give the same "
                           "-m/--opt/--components to continue it, or --force instead of --resume to start over")
        digests = {r.id: _digest(r) for r in records}
        done = {k: v for k, v in found.items() if v.get(PARTIAL_DIGEST) == digests[k]}
        if found:
            changed = len(found) - len(done)
            print(f"resuming: {len(done)} of {len(records)} records already scored in {partial}"
                  + (f"; {changed} changed since and rescored" if changed else ""), file=sys.stderr)
    # rewrite the partial output with the readable rows only (a torn last line would swallow the next row)
    tmp = partial.with_name(partial.name + ".tmp")
    tmp.write_text("".join(_dumps(r) + "\n" for r in done.values()), encoding="utf-8")
    for p in _partials(partial):
        p.unlink(missing_ok=True)
    os.replace(tmp, partial)
    return done


def _marker(ident: str):
    return lambda record: {PARTIAL_SIG: ident, PARTIAL_DIGEST: _digest(record)}


def _merge(out: Path, partial: Path, records, ident: str) -> dict[str, dict]:
    """Every partial row in input order into ``out``; refuse (keeping the partial files) when a record is missing."""
    ids = {r.id for r in records}
    found: dict[str, dict] = {}
    for p in _partials(partial):
        found.update(_read_done(p, ids))
    digests = {r.id: _digest(r) for r in records}
    rows = {k: _public(v) for k, v in found.items()
            if v.get(PARTIAL_SIG) == ident and v.get(PARTIAL_DIGEST) == digests[k]}
    missing = [r.id for r in records if r.id not in rows]
    if missing:  # a bug, or a rank that died: keep the partial files for --resume
        raise CLIError(f"{len(missing)} records were not scored (first: {missing[0]!r}); rerun with --resume", 1)
    _finalise(out, partial, records, rows)
    return rows


def _summary(metrics: list[tuple[str, Any]], rows: list[dict], where: str, **fields: Any) -> None:
    """Signature(s), count, undefined and mean of the scores with the figure's name and direction (``mean coverage
    0.8125 (higher is better)``), on stderr (``-q`` silences it)."""
    single = len(metrics) == 1
    parts, sigs = [], []
    for key, scorer in metrics:
        sigs.append(str(Signature.of(scorer.signature).with_fields(**fields) if fields else scorer.signature))
        vals = [_value(r, None if single else key) for r in rows]
        valid = [v for v in vals if isinstance(v, (int, float))]
        mean = f"{sum(valid) / len(valid):.4f}" if valid else "undefined"
        direction = _direction(bool(getattr(scorer, "higher_is_better", True)))
        parts.append(f"{'' if single else key + ': '}{len(vals) - len(valid)} undefined, "
                     f"mean {getattr(scorer, 'name', key)} {mean} ({direction})")
    print("\n".join(sigs) + f"\n{len(rows)} outputs, {'; '.join(parts)}; written to {where}", file=sys.stderr)


# ------------------------------------------------------------------------------------------- inputs (score)
STDIN = "-"


def _read_lines(path: str, flag: str) -> list[str]:
    """A plain line-aligned file (``-r`` / ``--mrs`` / ``--sources``): one entry per line, UTF-8 (a byte-order mark
    is dropped), the newline (``\\n`` or ``\\r\\n``) removed; a line that is not UTF-8 is named."""
    from qe.core.inputs import input_file_problem

    problem = input_file_problem(path)  # a pipe such as <(zcat ref.gz) is fine; a folder is said to be one
    if problem:
        raise CLIError(f"{flag} {problem}")
    from qe.data.record import read_text

    lines = read_text(Path(path)).split("\n")  # UTF-8 (a bad byte named by line and column), byte-order mark dropped
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def _read_input(path: str, fmt: str):
    """Records of one ``-i`` (a file, or ``-`` for standard input: plain text unless ``--format`` says otherwise)."""
    from qe.data import load_records

    if path == STDIN:
        from qe.data.record import read_records

        if sys.stdin is None or sys.stdin.isatty():
            raise CLIError("-i -: reading outputs from standard input, but nothing is piped in")
        # the bytes, decoded as UTF-8 whatever the locale says (a bad byte is named by line)
        return read_records(getattr(sys.stdin, "buffer", sys.stdin), "txt" if fmt == "auto" else fmt, "<stdin>")
    from qe.core.inputs import input_file_problem

    problem = input_file_problem(path)
    if problem:
        raise CLIError(f"-i {problem}")
    return load_records(path, None if fmt == "auto" else fmt)


def _system_names(paths: list[str]) -> list[str]:
    """One name per input: the file stem, or the path as given where stems collide."""
    stems = ["stdin" if p == STDIN else Path(p).stem for p in paths]
    return stems if len(set(stems)) == len(stems) else list(paths)


def _check_aligned(flag: str, path: str, values: list, records, where: str) -> None:
    if len(values) != len(records):
        raise CLIError(f"{flag} {path} has {len(values)} lines, but {where} has {len(records)} outputs; the files "
                       "must be line-aligned")


def load_inputs(args: argparse.Namespace, sizes: list[int] | None = None):
    """All records of ``-i`` (one system per file when several are given), with ``-r`` / ``--mrs`` / ``--sources``
    lines attached (they replace the records' own fields): (records, where), ``where`` naming the input. ``sizes``,
    when given, receives the number of records of each ``-i`` in order."""
    paths = list(args.input)
    if paths.count(STDIN) > 1:
        raise CLIError("-i - may be given once")
    ref_files = [(f, _read_lines(f, "-r")) for f in (args.refs or [])]
    mrs = _read_lines(args.mrs, "--mrs") if args.mrs else None
    sources = _read_lines(args.sources, "--sources") if args.sources else None
    names = _system_names(paths)
    per_file = []
    for path, name in zip(paths, names):
        recs = _read_input(path, args.format)
        where = "<stdin>" if path == STDIN else path
        for f, lines in ref_files:
            _check_aligned("-r", f, lines, recs, where)
        if ref_files:
            for i, r in enumerate(recs):
                r.refs = [lines[i] for _, lines in ref_files]
        if mrs is not None:
            _check_aligned("--mrs", args.mrs, mrs, recs, where)
            for r, v in zip(recs, mrs):
                r.mr = v
        if sources is not None:
            _check_aligned("--sources", args.sources, sources, recs, where)
            for r, v in zip(recs, sources):
                r.source = v
        if len(paths) > 1:
            for r in recs:
                r.system = r.system or name
        per_file.append((name, recs))
        if sizes is not None:
            sizes.append(len(recs))
    n_ids = len({r.id for _, recs in per_file for r in recs})
    clash = n_ids < sum(len(recs) for _, recs in per_file)
    out = []
    for name, recs in per_file:
        for r in recs:
            if clash:  # the same ids in several inputs (one test set, several systems): make them unique
                r.id = f"{name}/{r.id}"
            out.append(r)
    return out, ", ".join("<stdin>" if p == STDIN else p for p in paths)


def _models(args: argparse.Namespace) -> list[str]:
    """The ``-m`` given, in order; the same one twice is refused (its rows would have one key for two columns)."""
    models = list(args.model)
    seen: set[str] = set()
    for m in models:
        if m.lower() in seen:
            raise CLIError(f"-m {m} is given twice; give each metric once")
        seen.add(m.lower())
    return models


def _lock_here(args: argparse.Namespace) -> bool:
    """Whether this process locks the output: every run but the other ranks of a multi-node run (each node starts
    the same command; rank 0 holds the lock)."""
    if args.num_nodes <= 1:
        return True
    return os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")) == "0"


def cmd_score(args: argparse.Namespace) -> int:
    stdin = STDIN in args.input
    no_rows_on_stdout = args.system_level or args.score_only
    to_stdout = args.output == STDIN or (args.output is None and not no_rows_on_stdout)
    out = None if args.output in (None, STDIN) else Path(args.output)
    if args.score_only and args.system_level:
        raise CLIError("-b/--score-only prints one number per metric, --system-level a table: give one of them")
    if args.score_only and args.output == STDIN:
        raise CLIError("-b/--score-only prints its numbers on standard output; give -o FILE for the per-output scores")
    if args.system_level and args.output == STDIN:
        raise CLIError("--system-level prints its table on standard output; give -o FILE for the per-output scores")
    if args.json and not args.system_level:
        raise CLIError("--json is the format of the --system-level table; per-output scores are always JSON lines")
    if args.resume and out is None:
        raise CLIError("--resume needs --output (the partial output to continue)")
    sharded = args.devices > 1 or args.num_nodes > 1
    if sharded and (out is None or stdin or len(args.input) > 1):
        raise CLIError("--devices/--num-nodes need one input file and --output (each process reads the input and "
                       "writes its share, merged at the end)")
    if args.resume and stdin:
        raise CLIError("--resume needs an input file (standard input cannot be read twice)")
    if args.resume and args.force:
        raise CLIError("--resume continues OUTPUT.partial, --force throws it away: give one of them")
    _check_counts(args, ("--bootstrap", "bootstrap", 0, "0: no CI"), ("--chunk-size", "chunk_size", 1, None),
                  ("--batch-size", "batch_size", 1, None), ("--devices", "devices", 1, None),
                  ("--num-nodes", "num_nodes", 1, None))
    models = _models(args)
    through = None
    if out is not None:
        _check_output(out, [*(("-i", i) for i in args.input), *(("-r", r) for r in args.refs),
                            ("--mrs", args.mrs), ("--sources", args.sources)])
        from qe.core.inputs import output_place_problem

        problem = output_place_problem(out)
        if problem:
            raise CLIError(f"--output {problem}")
        out, through = _output_target(out)
        if through and args.resume:
            raise CLIError(f"--resume needs a regular file as --output; {out} is {through}, written straight through "
                           "(there is no partial output to continue)")
        if through and sharded:
            raise CLIError(f"--devices/--num-nodes need a regular file as --output; {out} is {through}")
        if through and not os.access(out, os.W_OK):
            raise CLIError(f"--output {out}: cannot write there (permission denied)")
    opts = _parse_opts(args.opt)
    if args.device:
        _check_device(args.device)
    lock = _OutputLock(out) if out is not None and not through and _lock_here(args) else _NoLock()
    with lock:
        if out is not None and not through and not args.resume and not args.force:
            _refuse_unfinished(out)
        fresh = out is not None and not through and not _partial_path(out).exists()
        partial = _prepare_output(out) if out is not None and not through else None
        try:
            if sharded:
                _score_sharded(args, opts, partial)
                return 0
            return _score_here(args, models, opts, out, partial, through, to_stdout)
        except BaseException:
            # a run that fails before scoring anything (bad input) leaves no empty partial output of its own behind
            if fresh and partial is not None and partial.is_file() and partial.stat().st_size == 0:
                partial.unlink()
            raise


def _check_counts(args: argparse.Namespace, *checks: tuple[str, str, int, str | None]) -> None:
    """Refuse a count option below its least value (``qe compare --n -5`` used to run the default 1,000
    resamples; ``--chunk-size -1`` one record at a time): ``(flag, attribute, least, what the least means)``;
    an option left at None (its default) is not checked."""
    for flag, attr, least, note in checks:
        v = getattr(args, attr, None)
        if v is not None and v < least:
            raise CLIError(f"{flag} {v}: must be {least} or more" + (f" ({note})" if note else ""))


def _unfinished_rows(partial: Path) -> int:
    """Rows a run that did not finish left in ``partial`` (and the rank files of a sharded run)."""
    n = 0
    for p in _partials(partial):
        if not p.is_file():
            continue
        with open(p, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                n += isinstance(row, dict) and "id" in row
    return n


def _refuse_unfinished(out: Path) -> None:
    """A partial output with rows in it is the work of a run that did not finish: starting over would throw those
    rows away in silence, so say so and name the two ways on."""
    partial = _partial_path(out)
    n = _unfinished_rows(partial)
    if n:
        raise CLIError(f"--output {out}: {partial} holds {n} row{'s' if n != 1 else ''} scored by a run that did not "
                       "finish; --resume continues from them, --force starts over (and throws them away)")


def _check_mr_lines(scorer, path: str | None, mrs: list[str | None]) -> None:
    """The ``--mrs`` lines a scorer that needs MRs will read: an empty one, or one its MR format cannot parse, is
    named by the MR file and line (it used to be blamed on the ``-i`` file's record)."""
    if path is None or not getattr(scorer, "requires_mrs", False):
        return
    fmt = getattr(scorer, "mr_format", None) or getattr(getattr(scorer, "matcher", None), "mr_format", None)
    from qe.core.mr import parse_acts

    for ln, mr in enumerate(mrs, 1):
        if mr is None or not mr.strip():
            raise CLIError(f"--mrs {path}:{ln}: an empty line; each line is the MR of the output on the same line "
                           "of each -i file")
        if fmt is not None:
            parse_acts(mr, fmt, where=f"--mrs {path}:{ln}")


def _mr_lines(args: argparse.Namespace, records) -> list[str | None]:
    """The ``--mrs`` lines as attached to ``records`` (every ``-i`` file holds one record per line of it, in
    order: :func:`load_inputs` checked it), without reading the file again (it may be a pipe)."""
    n = len(records) // max(1, len(args.input))
    return [r.mr for r in records[:n]]


def _empty_outputs(args: argparse.Namespace, records, sizes: list[int]) -> list[tuple[str, str]]:
    """``[(record id, where), ...]`` of the outputs that are empty or white space: ``FILE:LINE`` in a plain-text
    input, ``FILE record ID`` in records (``sizes``: the records of each ``-i``, from :func:`load_inputs`)."""
    out: list[tuple[str, str]] = []
    start = 0
    for path, n in zip(args.input, sizes):
        name = "<stdin>" if path == STDIN else path
        txt = args.format == "txt" or (args.format == "auto" and (path == STDIN or Path(path).suffix.lower() == ".txt"))
        for k, r in enumerate(records[start:start + n], 1):
            if not r.output.strip():
                out.append((r.id, f"{name}:{k}" if txt else f"{name} record {r.id!r}"))
        start += n
    return out


def _warn_empty(empty: list[tuple[str, str]], n: int, what: str) -> None:
    """One warning for the empty outputs: how many, the first few places, and ``what`` they were scored."""
    if not empty:
        return
    shown = ", ".join(w for _, w in empty[:5]) + (", ..." if len(empty) > 5 else "")
    logging.getLogger("qe").warning("%d of %d outputs %s empty (%s): %s", len(empty), n,
                                    "is" if len(empty) == 1 else "are", shown, what)


def _empty_scores(metrics: list[tuple[str, Any]], rows: dict[str, dict], empty: list[tuple[str, str]]) -> str:
    """What the empty outputs were scored, per metric: ``coverage scored them 0`` (the score each scorer documents
    for an output that says nothing)."""
    single = len(metrics) == 1
    parts = []
    for key, scorer in metrics:
        vals = sorted({_value(rows[i], None if single else key) for i, _ in empty if i in rows},
                      key=lambda v: (v is None, v if v is not None else 0))
        shown = ", ".join("undefined" if v is None else f"{v:g}" for v in vals[:3])
        parts.append(f"{getattr(scorer, 'name', key)} scored {'it' if len(empty) == 1 else 'them'} {shown}")
    return "; ".join(parts) + " (what each scorer gives an output that says nothing)"


def _score_here(args, models, opts, out, partial, through, to_stdout) -> int:
    sizes: list[int] = []
    records, where = load_inputs(args, sizes)
    metrics = [(m, _load_scorer(m, opts, args.device)) for m in models]
    for _, scorer in metrics:
        _check_mr_lines(scorer, args.mrs, _mr_lines(args, records) if args.mrs else [])
    kw_alls = {key: _inputs(scorer, records, where) for key, scorer in metrics}
    ident = _identity(metrics, opts, args.components)
    done = _prepare_partial(partial, records, args.resume, ident) if partial is not None else {}
    todo = [i for i, r in enumerate(records) if r.id not in done]
    if to_stdout:
        sink, mark = sys.stdout, None
    elif through:
        try:
            sink, mark = open(out, "w", encoding="utf-8"), None  # a FIFO or a device: straight through
        except OSError as exc:
            raise CLIError(f"--output {out}: cannot write there ({exc.strerror})") from None
    elif partial is not None:
        sink, mark = open(partial, "a", encoding="utf-8"), _marker(ident)
    else:
        sink, mark = None, None
    try:
        rows = _score_into(sink, metrics, records, todo, kw_alls, args, mark=mark)
    finally:
        if sink is not None and sink is not sys.stdout:
            sink.close()
    if partial is not None:
        rows = _merge(out, partial, records, ident)
    ordered = [rows[r.id] for r in records]
    empty = _empty_outputs(args, records, sizes)
    _warn_empty(empty, len(records), _empty_scores(metrics, rows, empty))
    if not args.quiet:
        _summary(metrics, ordered, str(out) if out is not None else
                 ("standard output" if to_stdout else "nowhere (-o FILE keeps the per-output scores)"))
    if args.system_level:
        _print_system_level(args, metrics, records, ordered, kw_alls)
    if args.score_only:
        _print_score_only(metrics, records, ordered, kw_alls, quiet=args.quiet)
    return 0


def _check_device(device: str) -> str:
    """A device this machine has, or one line saying what it has instead."""
    d = str(device).lower()
    if d in ("cpu", "auto"):
        return device
    import torch

    if d.startswith("cuda"):
        if not torch.cuda.is_available():
            build = "a CPU-only build" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}"
            raise CLIError(f"--device {device}: this machine has no CUDA device (torch {torch.__version__}, {build}); "
                           "use --device cpu or leave --device out")
        idx = d.split(":", 1)[1] if ":" in d else "0"
        if not idx.isdigit() or int(idx) >= torch.cuda.device_count():
            raise CLIError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s)")
        return device
    if d == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise CLIError("--device mps: Apple's MPS backend is not available here; use --device cpu")
        return device
    raise CLIError(f"--device {device}: unknown device; use cpu, cuda, cuda:N or mps")


def _systems_of(records) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        groups.setdefault(r.system if r.system is not None else "all", []).append(i)
    return groups


def system_table(scorer, records, rows: list[dict], kw_all: dict, n_bootstrap: int, seed: int,
                 key: str | None = None) -> list[dict]:
    """One row per system (the records' ``system``; "all" when they have none): see qe.significance.system_score.
    ``key``: the metric's key in the rows' ``scores`` (a run with several ``-m``); ``None``: their ``score``."""
    from qe.significance import system_score

    refs_all = kw_all.get("refs") if getattr(scorer, "requires_refs", False) else None
    table = []
    for name, idx in _systems_of(records).items():
        scores = [math.nan if _value(rows[i], key) is None else _value(rows[i], key) for i in idx]
        refs = [refs_all[i] for i in idx] if refs_all is not None else None
        stat = None
        if hasattr(scorer, "system_statistic") and kw_all.get("mrs") is not None:  # coverage: the pooled SER
            stat = scorer.system_statistic([records[i].output for i in idx], [kw_all["mrs"][i] for i in idx])
        row = system_score(scorer, [records[i].output for i in idx], scores, refs=refs, n_bootstrap=n_bootstrap,
                           seed=seed, statistic=stat)
        table.append({"system": name, **row})
    return table


def _table_signature(scorer, table: list[dict], n_bootstrap: int, seed: int) -> Signature:
    """The one signature of a system table: the scorer's (which made the per-output scores and their mean), the
    resampling, and, where a library computed the corpus score and CI (sacrebleu), that library's settings as
    ``corpus:[...]`` (sacrebleu's corpus BLEU has no effective order, so ``eff:no`` there while the per-output
    BLEU says ``eff:yes``). Each row's ``library_signature`` is folded into it."""
    lib = None
    for t in table:
        lib = t.pop("library_signature", None) or lib
    sig = Signature.of(scorer.signature).with_fields(bs=n_bootstrap, seed=seed)
    if lib:
        kept = [f for f in str(lib).split("|") if f.split(":", 1)[0] not in ("bs", "seed", "version")]
        sig = sig.with_fields(corpus=f"[{'|'.join(kept)}]")
    return sig


def _print_system_level(args, metrics: list[tuple[str, Any]], records, rows: list[dict], kw_alls: dict) -> None:
    single = len(metrics) == 1
    tables = []
    for key, scorer in metrics:
        table = system_table(scorer, records, rows, kw_alls[key], args.bootstrap, args.seed,
                             key=None if single else key)
        tables.append((key, scorer, table, _table_signature(scorer, table, args.bootstrap, args.seed)))
    figs = {key: _figures(scorer, any(t["corpus"] is not None for t in table)) for key, scorer, table, _ in tables}
    if single:
        key, scorer, table, sig = tables[0]
        f = figs[key]
        if args.json:
            from qe.core.jsonio import json_safe

            print(json.dumps(json_safe({"metric": scorer.name, "signature": sig,
                                        "higher_is_better": scorer.higher_is_better,
                                        "corpus_higher_is_better": _corpus_higher(scorer), **_meta(f),
                                        "systems": [_named(t, f) for t in table]}),
                             indent=2))
            return
        head = ["system", "n", "undefined", _header(f["mean"], "mean"), _header(f["corpus"], "corpus"),
                "bootstrap mean ± 95% CI"]
        body = []
        for t in table:
            ci = "-" if t["ci"] is None else f"{t['ci_mean']:.4f} ± {t['ci_halfwidth']:.4f} (of the {t['ci_of']})"
            body.append([t["system"], str(t["n"]), str(t["undefined"]), _fmt(t["mean"]), _fmt(t["corpus"]), ci])
        print(render_table(head, body, right=(1, 2, 3, 4)))
        corpus = _explain(f["corpus"]) if f["corpus"] else f"corpus: none ({scorer.name} has no corpus-level score)"
        print(f"{_explain(f['mean'])}; {corpus}; CI = bootstrap 95 % of the corpus score where there is one, else of "
              f"the mean\nsignature: {sig}")
        if "corpus" in sig.fields:
            print("(corpus:[...]: sacrebleu's settings of the corpus score and its CI; the fields before it: the "
                  "per-output scores and their mean)")
        return
    systems = list(_systems_of(records))
    if args.json:
        from qe.core.jsonio import json_safe

        print(json.dumps(json_safe({
            "metrics": [{"metric": key, "name": scorer.name, "signature": sig,
                         "higher_is_better": scorer.higher_is_better, "corpus_higher_is_better": _corpus_higher(scorer),
                         **_meta(figs[key])}
                        for key, scorer, _, sig in tables],
            "systems": [{"system": name, "n": tables[0][2][j]["n"],
                         "scores": {key: _named({k: v for k, v in table[j].items() if k not in ("system", "n")},
                                                figs[key])
                                    for key, _, table, _ in tables}}
                        for j, name in enumerate(systems)]}), indent=2))
        return
    # each column: the corpus-level score where the metric has one, else the mean; the header says which
    head = ["system", "n", *(f"{key} ({_header(figs[key]['corpus'] or figs[key]['mean'], '')})" for key, *_ in tables)]
    body = []
    for j, name in enumerate(systems):
        cells = []
        for _, _, table, _ in tables:
            t = table[j]
            value = t["corpus"] if t["corpus"] is not None else t["mean"]
            cell = _fmt(value) + ("" if t["ci"] is None else f" ± {t['ci_halfwidth']:.4f}")
            cells.append(cell + (f" ({t['undefined']} undefined)" if t["undefined"] else ""))
        body.append([name, str(tables[0][2][j]["n"]), *cells])
    print(render_table(head, body, right=tuple(range(1, len(head)))))
    print("each metric: its corpus-level score where it has one, else the mean of the per-output scores, ± the "
          f"bootstrap 95 % CI half-width; {_arrow(True)} higher is better, {_arrow(False)} lower is better")
    for key, scorer, table, sig in tables:
        note = getattr(scorer, "corpus_note", None)
        f = figs[key]["corpus"] or figs[key]["mean"]
        shown = f"the column: {f['label']}, {_direction(f['higher_is_better'])}"
        if note and figs[key]["corpus"] is not None:  # the column shows the corpus score
            what = f"corpus = {note}; {shown}"
        else:
            what = shown
        print(f"{key}: {scorer.name}, {what}\nsignature: {sig}")


def _corpus_higher(scorer) -> bool:
    """Whether a larger corpus-level score of ``scorer`` is better (:attr:`qe.core.scorer.Scorer.corpus_higher_is_better`)."""
    c = getattr(scorer, "corpus_higher_is_better", None)
    return bool(scorer.higher_is_better if c is None else c)


def _corpus_names(scorer) -> tuple[str, str]:
    """(short, long) name of ``scorer``'s corpus-level score: ("SER", "slot error rate"), ("BLEU-4", "corpus-level
    BLEU-4")."""
    short, long_ = getattr(scorer, "corpus_name", None), getattr(scorer, "corpus_long_name", None)
    short = short or scorer.name
    return short, long_ or f"corpus-level {short}"


def _direction(higher: bool) -> str:
    return "higher is better" if higher else "lower is better"


def _arrow(higher: bool) -> str:
    """↑ (higher is better) / ↓ (lower is better) where standard output can print them, else words."""
    arrow = "\u2191" if higher else "\u2193"
    try:
        arrow.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return "(higher is better)" if higher else "(lower is better)"
    return arrow


def _figures(scorer, has_corpus: bool) -> dict[str, dict | None]:
    """What the system figures of ``scorer`` are: ``{"mean": F, "corpus": F or None}`` (None: the scorer has no
    corpus-level score), each ``F = {"statistic", "label", "description", "higher_is_better"}``: the mean of the
    per-output scores (``mean coverage``, as the scorer's ``higher_is_better``) and the corpus-level score (``corpus
    SER``, as :attr:`~qe.core.scorer.Scorer.corpus_higher_is_better`)."""
    mean = {"statistic": scorer.name, "label": f"mean {scorer.name}",
            "higher_is_better": bool(scorer.higher_is_better),
            "description": f"the mean of the per-output {scorer.name} scores"}
    if not has_corpus:
        return {"mean": mean, "corpus": None}
    short, long_ = _corpus_names(scorer)
    note = getattr(scorer, "corpus_note", None)
    corpus = {"statistic": short, "label": f"corpus {short}", "higher_is_better": _corpus_higher(scorer),
              "description": note or f"{long_}, the metric's own score of the whole system"}
    return {"mean": mean, "corpus": corpus}


def _header(f: dict | None, bare: str) -> str:
    """A column header naming the figure and its direction (``mean coverage ↑``); ``bare`` when there is none."""
    return bare if f is None else f"{f['label']} {_arrow(f['higher_is_better'])}"


def _explain(f: dict) -> str:
    """``corpus SER ↓: the slot error rate pooled ... (errors / facts; lower is better)``, the direction said once."""
    d = f["description"]
    return f"{f['label']} {_arrow(f['higher_is_better'])}: {d}" + (
        "" if "is better" in d else f", {_direction(f['higher_is_better'])}")


def _named(row: dict, figs: dict) -> dict:
    """A system row (JSON) whose figures carry what they are: ``mean_statistic`` / ``mean_higher_is_better`` and
    ``corpus_statistic`` / ``corpus_higher_is_better`` (None where there is no corpus-level score)."""
    m, c = figs["mean"], figs["corpus"]
    return {**row, "mean_statistic": m["statistic"], "mean_higher_is_better": m["higher_is_better"],
            "corpus_statistic": None if c is None else c["statistic"],
            "corpus_higher_is_better": None if c is None else c["higher_is_better"]}


def _meta(figs: dict) -> dict:
    """The figures' names for the top of a JSON table (next to ``higher_is_better`` / ``corpus_higher_is_better``)."""
    c = figs["corpus"]
    return {"mean_statistic": figs["mean"]["statistic"], "corpus_statistic": None if c is None else c["statistic"],
            "corpus_description": None if c is None else c["description"]}


def _print_score_only(metrics: list[tuple[str, Any]], records, rows: list[dict], kw_alls: dict,
                      quiet: bool = False) -> None:
    """``-b``: one number per metric (per system, systems in input order), nothing else: the corpus-level score
    where the metric has one, else the mean of the per-output scores; ``nan`` when undefined. Where a number is not
    the mean of the per-output scores (``coverage``: the pooled slot error rate; BLEU: corpus BLEU), one line on
    stderr (not with ``-q``) says what it is, so that standard output stays one number per line."""
    single = len(metrics) == 1
    tables = [system_table(scorer, records, rows, kw_alls[key], 1, 12345, key=None if single else key)
              for key, scorer in metrics]
    figs = [_figures(scorer, any(t["corpus"] is not None for t in table))
            for (_, scorer), table in zip(metrics, tables)]
    if not quiet and any(f["corpus"] is not None for f in figs):
        said = []
        for (_, scorer), f in zip(metrics, figs):
            c = f["corpus"]
            if c is None:
                said.append(f"{scorer.name}'s mean of the per-output scores, "
                            f"{_direction(f['mean']['higher_is_better'])}")
            else:
                short, long_ = _corpus_names(scorer)
                what = long_ if long_ == f"corpus-level {short}" else f"{long_} ({short})"
                said.append(f"{scorer.name}'s corpus statistic: {what}, {_direction(c['higher_is_better'])}")
        several = len(tables[0]) > 1
        per = (" (per system, one line per metric in -m order)" if several and not single else
               " (one line per metric in -m order)" if not single else " (one line per system)" if several else "")
        print(f"qe score: -b prints{per} " + "; ".join(said), file=sys.stderr)
    for j in range(len(tables[0])):
        for table in tables:
            t = table[j]
            value = t["corpus"] if t["corpus"] is not None else t["mean"]
            print("nan" if value is None or not math.isfinite(value) else f"{value:.4f}")


def render_table(head: list[str], body: list[list[str]], right: tuple[int, ...] = ()) -> str:
    """A plain-text table (a header rule, columns padded; ``right``: right-aligned columns)."""
    widths = [max(len(str(r[j])) for r in [head, *body]) for j in range(len(head))]

    def line(cells):
        return "  ".join(str(c).rjust(w) if j in right else str(c).ljust(w)
                         for j, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(head), line(["-" * w for w in widths]), *(line(r) for r in body)])


def _fmt(x) -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.4f}"


def _inputs(scorer, records, where: str) -> dict:
    from qe.core.inputs import scorer_inputs

    return scorer_inputs(scorer, records, where=str(where))


def _score_sharded(args: argparse.Namespace, opts: dict, partial: Path) -> None:
    """Score over ``--devices`` processes (x ``--num-nodes``) with torch.distributed, through Lightning Fabric.

    Rank 0 prepares the partial output (``--resume``), every rank scores a contiguous share of what is left on
    its own device into ``OUTPUT.partial.rank<R>``, and rank 0 merges the shares in input order. One node: the
    processes are spawned here (gloo on CPU, NCCL on GPUs); several nodes: start one ``qe score`` per process
    (SLURM's srun, torchrun) with the same flags, and Fabric reads the cluster environment."""
    from lightning.fabric import Fabric

    strategy = "ddp_spawn" if args.num_nodes == 1 else "ddp"
    fabric = Fabric(accelerator=args.accelerator, devices=args.devices, num_nodes=args.num_nodes, strategy=strategy)
    fabric.launch(_shard_worker, {k: v for k, v in vars(args).items() if k != "fn"}, opts, str(partial))


def _shard_worker(fabric, args: dict, opts: dict, partial_path: str) -> None:
    a = argparse.Namespace(**args)
    partial = Path(partial_path)
    records, where = load_inputs(a)  # each process reads the input itself (nothing large is sent to it)
    rank, world = fabric.global_rank, fabric.world_size
    if fabric.device.type == "cuda":  # scorers' device "auto" then means this rank's GPU
        import torch

        torch.cuda.set_device(fabric.device)
    metrics = [(m, _load_scorer(m, opts, getattr(a, "device", None))) for m in a.model]
    kw_alls = {key: _inputs(scorer, records, where) for key, scorer in metrics}
    ident = _identity(metrics, opts, a.components)
    if rank == 0:
        _prepare_partial(partial, records, a.resume, ident)
    fabric.barrier()
    ids = {r.id for r in records}
    done = _read_done(partial, ids)
    todo = [i for i, r in enumerate(records) if r.id not in done]
    share = todo[rank * len(todo) // world:(rank + 1) * len(todo) // world]
    with open(f"{partial}.rank{rank}", "w", encoding="utf-8") as sink:
        _score_into(sink, metrics, records, share, kw_alls, a, desc=f"rank {rank}/{world}", mark=_marker(ident))
    fabric.barrier()
    if rank == 0:
        out = _output_target(Path(a.output))[0]
        rows = _merge(out, partial, records, ident)
        if not a.quiet:
            _summary(metrics, [rows[r.id] for r in records], a.output, processes=world)


# ------------------------------------------------------------------------------------------------- compare
def cmd_compare(args: argparse.Namespace) -> int:
    """Paired significance tests of SYSTEMs against BASELINE (qe.significance), printed like sacrebleu's table."""
    from qe.significance import compare_systems

    files = [args.baseline, *args.systems]
    if files.count(STDIN) > 1:
        raise CLIError("- (standard input) may be given once")
    _check_counts(args, ("--n", "n", 1, "the default: 1000 for bs, 10000 for ar"),
                  ("--ar-confidence", "ar_confidence", -1, "-1: no CIs, 0: 1000 resamples"),
                  ("--batch-size", "batch_size", 1, None))
    if not 0 < args.alpha < 1:
        raise CLIError(f"--alpha {args.alpha}: must be between 0 and 1 (a significance level such as 0.05)")
    names = _system_names(files)
    systems = {}
    first = None
    for f, name in zip(files, names):
        ns = argparse.Namespace(input=[f], refs=args.refs, mrs=args.mrs, sources=args.sources, format=args.format)
        recs, _ = load_inputs(ns)
        _warn_empty(_empty_outputs(ns, recs, [len(recs)]), len(recs),
                    f"each gets the score -m {args.model} gives an output that says nothing")
        if not recs:
            raise CLIError(f"{'<stdin>' if f == STDIN else f}: no outputs (an empty file); a paired test needs at "
                           "least one item")
        if first is None:
            first = recs
        elif len(recs) != len(first):
            raise CLIError(f"{f} has {len(recs)} outputs, the baseline {args.baseline} has {len(first)}; a paired test "
                           "needs the same items in the same order")
        systems[name] = recs
    opts = _parse_opts(args.opt)
    if args.device:
        _check_device(args.device)
    scorer = _load_scorer(args.model, opts, args.device)
    _check_mr_lines(scorer, args.mrs, [r.mr for r in first] if args.mrs else [])
    kw = _inputs(scorer, first, args.baseline)  # the baseline's references / MRs / sources for every system
    if args.ser:
        _check_checkable_facts(scorer, first, kw.get("mrs"), args)
    test = "ar" if args.paired_ar else "bs"
    res = compare_systems(scorer, {k: [r.output for r in v] for k, v in systems.items()}, refs=kw.get("refs"),
                          mrs=kw.get("mrs"), sources=kw.get("sources"), test=test, n_samples=args.n or 0,
                          seed=args.seed, ar_confidence=args.ar_confidence, batch_size=args.batch_size,
                          progress=not args.quiet, pooled=args.ser)
    pvals = [r.p_value for r in res[1:]]
    adjusted = _adjust(pvals, args.correction)
    n_samples = args.n if args.n else (1000 if test == "bs" else 10000)
    sig = Signature.of(scorer.signature).with_fields(test="paired-bs" if test == "bs" else "paired-ar", n=n_samples, seed=args.seed,
                                                     stat="ser" if args.ser else None)
    fig = _compared_figure(scorer, args.ser, kw.get("refs") is not None)
    higher = fig["higher_is_better"]  # a slot error rate: lower is better
    label = f"{fig['label']} {_arrow(higher)}"
    rows = []
    for i, r in enumerate(res):
        d = r.to_dict()
        d["p_adjusted"] = None if i == 0 else adjusted[i - 1]
        d["significant"] = None if i == 0 or adjusted[i - 1] is None else bool(adjusted[i - 1] < args.alpha)
        rows.append(d)
    if args.json:
        from qe.core.jsonio import json_safe

        print(json.dumps(json_safe({"metric": scorer.name, "signature": sig, "test": test, "n_samples": n_samples,
                                    "seed": args.seed, "alpha": args.alpha, "correction": args.correction,
                                    "statistic": "ser" if args.ser else "mean",
                                    "statistic_name": fig["statistic"], "statistic_label": fig["label"],
                                    "statistic_description": fig["description"],
                                    "higher_is_better": higher,
                                    "systems": [{**d, "statistic_name": fig["statistic"], "higher_is_better": higher}
                                                for d in rows]}), indent=2))
        return 0
    head = ["system", f"{label} (mean ± 95% CI)", "p-value" + ("" if args.correction == "none" else
                                                                    f" ({args.correction})")]
    body = []
    for d in rows:
        ci = "" if d["ci_halfwidth"] is None or d["mean"] is None else f" ({d['mean']:.4f} ± {d['ci_halfwidth']:.4f})"
        p = "-" if d["baseline"] else "n/a" if d["p_adjusted"] is None else \
            f"{d['p_adjusted']:.4f}{' *' if d['significant'] else ''}"
        score = "nan" if d["score"] is None else f"{d['score']:.4f}"
        body.append([("Baseline: " if d["baseline"] else "") + d["system"], score + ci, p])
    print(render_table(head, body, right=(1, 2)))
    what = ("paired bootstrap resampling (Koehn 2004)" if test == "bs" else
            "paired approximate randomization (Riezler & Maxwell 2005)")
    print(f"{what}, {n_samples} {'resamples' if test == 'bs' else 'trials'}, {res[0].n} items; "
          f"* = p < {args.alpha}; {_explain(fig)}.\n"
          "Significance says the difference is unlikely to be chance, not which system is better or by how much.")
    if len(pvals) > 1 and args.correction == "none":
        print(f"{len(pvals)} comparisons: p-values are not corrected for multiple comparisons (--correction holm).")
    print(f"signature: {sig}")
    if res[0].library_signature:
        print(f"sacrebleu signature of the scores, CIs and p-values: {res[0].library_signature}")
    return 0


def _compared_figure(scorer, ser: bool, has_refs: bool) -> dict:
    """What ``qe compare`` compares (see :func:`_figures`): ``--ser``: the pooled slot error rate; a metric with a
    corpus-level score over references (sacrebleu's BLEU / chrF / TER, NIST pooled): that score; else the mean of
    the per-output scores (as :func:`qe.significance.compare_systems` decides)."""
    from qe.significance import sacrebleu_metric

    corpus = ser or (has_refs and (sacrebleu_metric(scorer) is not None or (
        getattr(scorer, "CORPUS", None) == "pooled" and hasattr(scorer, "_stats") and hasattr(scorer, "_from_stats"))))
    figs = _figures(scorer, corpus)
    return figs["corpus"] or figs["mean"]


def _check_checkable_facts(scorer, records, mrs, args: argparse.Namespace) -> None:
    """``--ser`` compares slot error rates: errors over checkable facts. With no checkable fact in any MR (every slot
    ``dontcare`` / ``none``) there is no rate to compare: one line naming the MR file, exit status 2."""
    if mrs is None or not hasattr(scorer, "system_statistic"):
        return  # compare_systems says what is missing
    stats = scorer.system_statistic([r.output for r in records], list(mrs)).stats
    if len(stats) and float(stats[:, 1].sum()) > 0:
        return
    where = f"--mrs {args.mrs}" if args.mrs else f"the MRs of {args.baseline} (field 'mr')"
    raise CLIError(f"--ser: no output has a checkable fact in {where} (every slot is dontcare / none or none could be "
                   f"read): there is no slot error rate to compare")


def _adjust(pvals: list[float | None], method: str) -> list[float | None]:
    """Corrected p-values; an undefined one (None or NaN: a system without a score) stays None and is not counted."""
    ok = [i for i, p in enumerate(pvals) if p is not None and math.isfinite(p)]
    out: list[float | None] = [None] * len(pvals)
    if method == "none" or len(ok) < 2:
        for i in ok:
            out[i] = float(pvals[i])
        return out
    from statsmodels.stats.multitest import multipletests

    for i, x in zip(ok, multipletests([pvals[i] for i in ok], method=method)[1]):
        out[i] = float(x)
    return out


def _finalise(out: Path, partial: Path, records, rows: dict[str, dict]) -> None:
    """Write every row in input order to a temporary file beside ``out``, then rename it into place."""
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in records:
            f.write(_dumps(_public(rows[r.id])) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out)
    for p in _partials(partial):
        p.unlink(missing_ok=True)


def _load_scorer(model: str, opts: dict[str, Any], device: str | None = None):
    from qe.registry import load_on_device
    from qe.errors import ExportError

    try:
        return load_on_device(model, device, **opts)
    except (ExportError, KeyError, FileNotFoundError) as exc:
        msg = exc.args[0] if exc.args else str(exc)
        raise CLIError(f"--model {model}: {_did_you_mean(model)}{msg}", EXIT_BAD_MODEL) from None
    except TypeError as exc:
        raise CLIError(f"--model {model}: bad options {opts}: {exc}") from None


def _did_you_mean(model: str) -> str:
    """``did you mean 'bleu'? `` for a misspelt scorer or zoo name (``-m blue``); empty for a path or a known name."""
    if not model or "/" in model or os.sep in model or Path(model).exists():
        return ""
    try:
        from qe import zoo
        from qe.registry import available_scorers

        names = [*available_scorers(), *(n for n in zoo.NAMES if not n.startswith("_"))]
    except Exception:  # a hint only: never in the way of the error itself
        return ""
    if model.lower() in names:
        return ""
    close = difflib.get_close_matches(model.lower(), names, n=3, cutoff=0.6)
    if not close:
        return ""
    also = f" (or {', '.join(repr(c) for c in close[1:])})" if len(close) > 1 else ""
    return f"did you mean {close[0]!r}?{also} "


def cmd_list(args: argparse.Namespace) -> int:
    from qe.registry import EXPORT_KINDS, describe

    print("scorers (qe.load(NAME)):")
    print(describe())
    print("\nexport kinds (qe.load(EXPORT_DIR)): " + ", ".join(sorted(EXPORT_KINDS)))
    from qe import zoo

    print(f"\nnamed models (qe.load(NAME); built into {zoo.models_dir()} by `qe zoo build NAME`):")
    print(zoo.describe())
    return 0


def cmd_data(args: argparse.Namespace) -> int:
    from qe.data import recipes

    if args.action == "list":
        return recipes.cmd_list()
    if args.action == "verify":
        return recipes.cmd_verify(args.name)
    if args.action == "download":
        if not args.name:
            names = ", ".join(recipes.load_recipes())
            raise CLIError(f"name the dataset: qe data download NAME, NAME one of {names} (qe data list shows what "
                           "is here)")
        return recipes.cmd_download(args.name)
    raise CLIError(f"unknown action {args.action}")


def _parser() -> argparse.ArgumentParser:
    from qe.version import __version__

    p = argparse.ArgumentParser(prog="qe", description="Quality estimation for NLG output",
                                epilog="exit codes: 0 ok, 2 bad input, 3 model/export cannot be loaded, 1 bug")
    p.add_argument("--version", action="version", version=f"qe {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("score", help="score outputs with an export or a registered scorer",
                       description="Score each output (one JSON line per record, in input order) and optionally print "
                                   "a table per system. Examples: qe score -m bleu -i hyp.txt -r ref.txt; "
                                   "cat hyp.txt | qe score -m ratpred-e2e-vectors -i - --mrs mrs.txt; "
                                   "qe score -m chrf -r ref.txt -i sysA.txt -i sysB.txt --system-level")
    s.add_argument("--model", "-m", required=True, action="append",
                   help="export directory, registered scorer or zoo name; repeat for several metrics (each row then "
                        "has 'scores': {METRIC: score}, the table one column per metric)")
    s.add_argument("--input", "-i", required=True, action="append",
                   help=".txt (one output per line), .jsonl or .csv records; - reads standard input (plain text unless "
                        "--format). Repeat for several systems (one system per file)")
    s.add_argument("--format", choices=["auto", "txt", "jsonl", "csv"], default="auto",
                   help="input format (auto: by file suffix; standard input: txt)")
    s.add_argument("--refs", "-r", action="append", default=[], metavar="REFS.txt",
                   help="references, one per line, aligned with the outputs; repeat for several reference sets")
    s.add_argument("--mrs", default=None, metavar="MRS.txt", help="meaning representations, one per line")
    s.add_argument("--sources", default=None, metavar="SOURCES.txt", help="source documents, one per line")
    s.add_argument("--output", "-o", default=None,
                   help="scores.jsonl: the input records plus 'score' (default: standard output, or none with "
                        "--system-level). Written to OUTPUT.partial as scoring goes and moved into place at the end")
    s.add_argument("--system-level", action="store_true",
                   help="print a table per system: n, mean, corpus-level score, bootstrap 95%% CI, signature")
    s.add_argument("--json", action="store_true", help="the --system-level table as JSON")
    s.add_argument("--score-only", "-b", action="store_true",
                   help="print only the system score on standard output, one number per metric (and system): the "
                        "corpus-level score where the metric has one, else the mean (as sacrebleu -b); one line on "
                        "stderr names the statistic where it is not the mean (coverage: the slot error rate)")
    s.add_argument("--bootstrap", type=int, default=1000, help="resamples of the system-level CI (default 1000)")
    s.add_argument("--seed", type=int, default=12345, help="seed of the resampling (default 12345, as sacrebleu)")
    s.add_argument("--resume", action="store_true",
                   help="continue OUTPUT.partial left by an interrupted run (same -m/--opt; changed records are "
                        "scored again)")
    s.add_argument("--force", action="store_true",
                   help="start over when OUTPUT.partial holds rows of an interrupted run (without --resume or "
                        "--force such a run is refused, naming the file and its rows)")
    s.add_argument("--components", action="store_true", help="also write every component of composite scorers")
    s.add_argument("--batch-size", type=int, default=None)
    s.add_argument("--chunk-size", type=int, default=1000,
                   help="records scored between two writes of the partial output (default 1000)")
    s.add_argument("--device", default=None, help="cpu, cuda, cuda:1 (default: GPU when available)")
    s.add_argument("--devices", type=int, default=1,
                   help="processes (one per GPU with --accelerator gpu) sharing the input via torch.distributed")
    s.add_argument("--num-nodes", type=int, default=1, help="machines, each running `qe score` with the same flags")
    s.add_argument("--accelerator", default="auto", choices=["auto", "cpu", "gpu", "cuda"],
                   help="device kind for --devices (Lightning's names)")
    s.add_argument("--opt", action="append", default=[], help="scorer option KEY=VALUE (e.g. score=nce)")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress bar, no log lines, no summary")
    s.add_argument("--verbose", "-v", action="store_true",
                   help="log lines (INFO: records read, scoring progress) on stderr; by default only warnings and "
                        "errors")
    s.add_argument("--no-progress", action="store_true",
                   help="no progress bar; progress goes to log lines instead (INFO lines, as with -v; for batch "
                        "jobs and log files)")
    s.add_argument("--debug", action="store_true", help="show the traceback of an error")
    s.set_defaults(fn=cmd_score)
    c = sub.add_parser("compare", help="paired significance tests of systems against a baseline (as sacrebleu's)",
                       description="Compare SYSTEMs with BASELINE on the same items: paired bootstrap resampling "
                                   "(--paired-bs, default) or approximate randomization (--paired-ar). sacrebleu's "
                                   "metrics give sacrebleu's numbers; corpus-level metrics are recomputed on every "
                                   "resample; learned metrics resample their instance scores. Example: "
                                   "qe compare -m bleu -r ref.txt base.txt new.txt")
    c.add_argument("--model", "-m", required=True, help="export directory, registered scorer or zoo name")
    c.add_argument("baseline", help="the baseline's outputs (.txt / .jsonl / .csv; - for standard input)")
    c.add_argument("systems", nargs="+", help="systems compared with the baseline (same items, same order)")
    c.add_argument("--refs", "-r", action="append", default=[], metavar="REFS.txt",
                   help="references, one per line; repeat for several reference sets (else the baseline records')")
    c.add_argument("--mrs", default=None, metavar="MRS.txt", help="meaning representations, one per line")
    c.add_argument("--sources", default=None, metavar="SOURCES.txt", help="source documents, one per line")
    c.add_argument("--format", choices=["auto", "txt", "jsonl", "csv"], default="auto")
    t = c.add_mutually_exclusive_group()
    t.add_argument("--paired-bs", action="store_true", help="paired bootstrap resampling (default)")
    t.add_argument("--paired-ar", action="store_true", help="paired approximate randomization")
    c.add_argument("--n", type=int, default=None, help="resamples / trials (default: 1000 for bs, 10000 for ar)")
    c.add_argument("--ar-confidence", type=int, default=0,
                   help="bootstrap resamples for the CIs with --paired-ar (0: 1000, -1: none)")
    c.add_argument("--seed", type=int, default=12345, help="random seed (default 12345, sacrebleu's)")
    c.add_argument("--alpha", type=float, default=0.05, help="significance level of the * mark")
    c.add_argument("--correction", choices=["none", "holm", "bonferroni"], default="none",
                   help="adjust p-values for several systems (default none, as sacrebleu)")
    c.add_argument("--json", action="store_true", help="print JSON (score, ci, p_value per system)")
    c.add_argument("--ser", action="store_true",
                   help="with -m coverage and --mrs: test the pooled slot error rate (errors / facts over the items, "
                        "lower is better) instead of the mean coverage")
    c.add_argument("--opt", action="append", default=[], help="scorer option KEY=VALUE")
    c.add_argument("--device", default=None)
    c.add_argument("--batch-size", type=int, default=None)
    c.add_argument("--quiet", "-q", action="store_true", help="no progress bar, no log lines")
    c.add_argument("--verbose", "-v", action="store_true",
                   help="log lines (INFO: records read, scoring progress) on stderr; by default only warnings and "
                        "errors")
    c.add_argument("--debug", action="store_true", help="show the traceback of an error")
    c.set_defaults(fn=cmd_compare)
    sub.add_parser("train", help="train a model and write its export (Hydra overrides follow; packaged configs)")
    sub.add_parser("evaluate", help="score a rated dataset and meta-evaluate (Hydra overrides follow)")
    sub.add_parser("content", help="the content check's tools: mine (a lexicon for your domain from (MR, text) "
                                   "pairs; qe content mine -h)")
    sub.add_parser("zoo", help="named models: list | build | verify | compare | pack | install | push | spread | command (qe zoo -h)")
    l_ = sub.add_parser("list", help="registered scorers and export kinds")
    l_.add_argument("--verbose", "-v", action="store_true", help="log lines (INFO) on stderr")
    l_.set_defaults(fn=cmd_list)
    d = sub.add_parser("data", help="public datasets: list, verify checksums, download")
    d.add_argument("action", choices=["list", "verify", "download"])
    d.add_argument("name", nargs="?")
    d.add_argument("--verbose", "-v", action="store_true", help="log lines (INFO: files checked, downloads) on stderr")
    d.add_argument("--debug", action="store_true", help="show the traceback of an error")
    d.set_defaults(fn=cmd_data)
    return p


def _one_line(exc: BaseException) -> str:
    """The message on one line (a multi-line message keeps its first line and says how to see the rest)."""
    msg = str(exc.args[0]) if exc.args and isinstance(exc.args[0], str) else str(exc)
    lines = [ln for ln in msg.splitlines() if ln.strip()]
    return msg if len(lines) <= 1 else f"{lines[0]} (... rerun with --debug for the rest)"


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of the record (not the stream of the first call: an
    in-process caller such as pytest may swap and close it between calls)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


class _logging_to_stderr:
    """While a command runs, the ``qe`` loggers print to stderr at ``level`` (progress lines at INFO); afterwards
    the logger is as it was, so that an in-process caller (a script, a test) keeps its own logging. The root
    logger is left alone."""

    def __init__(self, level: int) -> None:
        self.level = level

    def __enter__(self) -> None:
        lg = logging.getLogger("qe")
        self.saved_level = lg.level
        self.handler = None
        if not any(isinstance(h, _StderrHandler) for h in lg.handlers):
            self.handler = _StderrHandler()
            lg.addHandler(self.handler)
        lg.setLevel(self.level)

    def __exit__(self, *exc) -> None:
        lg = logging.getLogger("qe")
        if self.handler is not None:
            lg.removeHandler(self.handler)
        lg.setLevel(self.saved_level)


#: subcommands whose arguments belong to another program (Hydra overrides; the zoo's own parser)
PASSTHROUGH = ("train", "evaluate", "zoo", "content")


def _passthrough(cmd: str, argv: list[str]) -> int:
    if cmd == "train":
        from qe.app import train

        return train(argv)
    if cmd == "evaluate":
        from qe.app import evaluate

        return evaluate(argv)
    if cmd == "content":
        from qe.content.mining import main as content_main

        return content_main(argv)
    from qe.zoo.build import ZooError, main as zoo_main

    debug = "--debug" in argv
    try:
        return zoo_main([a for a in argv if a != "--debug"])
    except ZooError as exc:
        if debug:
            raise
        print(f"qe zoo: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # `qe ... | head`: the reader went away; not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PASSTHROUGH:
        from qe.core.runtime import stderr_is_terminal

        if not stderr_is_terminal():  # qe zoo / train / evaluate / content into a log: no Hugging Face bars either
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        return _passthrough(argv[0], argv[1:])
    args = _parser().parse_args(argv)
    if not _bar(args):
        # the Hugging Face libraries' own bars ("Loading weights") follow ours: read when they are first imported
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    with _logging_to_stderr(_log_level(args)):
        return _run(args)


def _log_level(args: argparse.Namespace) -> int:
    """The ``qe`` loggers' level on stderr: warnings and errors by default, INFO lines (records read, scoring
    progress) with ``-v/--verbose`` or ``--no-progress`` (whose progress goes to those lines); ``-q/--quiet`` wins
    (warnings and errors only)."""
    if getattr(args, "quiet", False):
        return logging.WARNING
    return logging.INFO if getattr(args, "verbose", False) or getattr(args, "no_progress", False) else logging.WARNING


def _run(args: argparse.Namespace) -> int:
    from qe.errors import MissingDependencyError, QEError

    try:
        return int(args.fn(args) or 0)
    except CLIError as exc:
        if args.debug if hasattr(args, "debug") else False:
            raise
        print(f"qe {args.cmd}: error: {exc}", file=sys.stderr)
        return exc.code
    except MissingDependencyError as exc:  # an optional package / pretrained pipeline: says what to install
        if getattr(args, "debug", False):
            raise
        print(f"qe {args.cmd}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_MODEL
    except (QEError, FileNotFoundError, ValueError, TypeError) as exc:
        # bad records (RecordError names file:line, id and field), missing inputs, bad option values
        if getattr(args, "debug", False):
            raise
        print(f"qe {args.cmd}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"qe {args.cmd}: interrupted; rerun with --resume to continue a partial output", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
