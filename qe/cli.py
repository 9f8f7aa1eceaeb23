"""Console script ``qe``.

    qe score -m PATH_OR_NAME -i FILE|- [-i FILE ...] [-o FILE|-] [-r REFS.txt ...] [--mrs F] [--sources F]
             [--system-level [--json]] [--resume] [--components] [--opt score=nce] [--device cpu] [-q] [--debug]
             [--devices N --num-nodes M --accelerator cpu|gpu]          # sharded over processes
    qe compare -m METRIC [-r REFS.txt ...] BASELINE SYSTEM [SYSTEM ...] [--paired-bs|--paired-ar] [--json]
    qe train <hydra overrides ...>             # same as python train.py ... (packaged configs)
    qe evaluate <hydra overrides ...>          # same as python evaluate.py ...
    qe zoo list | build NAME | verify [NAME] | compare A B | pack NAME -o DIR | install ARCHIVE|URL | push NAME REPO | spread NAME
    qe list                                    # registered scorers and export kinds
    qe data list | verify [NAME] | download NAME
    qe --version

Exit codes: 0 success; 2 bad input (records, arguments, options, an output that would overwrite the input);
3 a model or export that cannot be loaded; 1 anything else (a bug: rerun with ``--debug`` for the traceback).
Errors are one line naming the file, line, record id and field where they apply; ``--debug`` adds the traceback.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
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
def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _check_output(inp: Path, out: Path) -> Path:
    """Refuse an output that is the input; make sure its folder exists and is writable before any scoring."""
    if _same_file(inp, out):
        raise CLIError(f"--output {out} is the input file; scores go to a new file (the input is never overwritten)")
    if out.is_dir():
        raise CLIError(f"--output {out} is a directory; give a file name such as {out / 'scores.jsonl'}")
    partial = _partial_path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(partial, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise CLIError(f"--output {out}: cannot write there ({exc.strerror}: {exc.filename})") from None
    return partial


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


def _rows(records, scores: list[float], components: dict[str, list[float]] | None) -> Iterable[dict]:
    for i, r in enumerate(records):
        row = r.to_dict()
        row["score"] = _finite(scores[i])
        if components is not None:
            row["components"] = {k: _finite(v[i]) for k, v in components.items()}
        yield row


def _chunks(n: int, size: int) -> Iterable[range]:
    size = max(1, int(size)) if size else n
    for s in range(0, n, size):
        yield range(s, min(n, s + size))


def _bar(args: argparse.Namespace) -> bool:
    return not (args.quiet or getattr(args, "no_progress", False))


def _score_into(sink, scorer, records, todo: list[int], kw_all: dict, args: argparse.Namespace,
                desc: str | None = None) -> dict[str, dict]:
    """Score ``records[i] for i in todo`` chunk by chunk, writing (and fsyncing) each chunk's rows to ``sink``."""
    rows_out: dict[str, dict] = {}
    chunk = len(todo) if scorer.corpus_dependent else args.chunk_size
    logging.getLogger("qe").info("%s: scoring %d records with %s", desc or "qe score", len(todo), scorer.signature)
    for part in _chunks(len(todo), chunk):
        idx = [todo[j] for j in part]
        recs = [records[i] for i in idx]
        kw = {k: [v[i] for i in idx] for k, v in kw_all.items()}
        if getattr(scorer, "accepts_ids", False):
            kw["ids"] = [r.id for r in recs]
        outputs = [r.output for r in recs]
        if args.components:
            comps = scorer.score_components(outputs, batch_size=args.batch_size, progress=_bar(args), **kw)
            main = comps[main_component(scorer, comps)]
            rows = list(_rows(recs, main, comps))
        else:
            scores = scorer.score(outputs, batch_size=args.batch_size, progress=_bar(args), **kw)
            rows = list(_rows(recs, scores, None))
        for row in rows:
            if sink is not None:
                sink.write(_dumps(row) + "\n")
            rows_out[row["id"]] = row
        if sink is not None:
            sink.flush()
            if sink is not sys.stdout:
                os.fsync(sink.fileno())
        logging.getLogger("qe").info("%s: %d/%d records written", desc or "qe score", len(rows_out), len(todo))
    return rows_out


def _partials(partial: Path) -> list[Path]:
    """The partial output and the per-rank partial outputs of a sharded run."""
    return [partial, *sorted(partial.parent.glob(partial.name + ".rank*"))]


def _prepare_partial(partial: Path, records, resume: bool) -> dict[str, dict]:
    """Rows already scored (``--resume``), rewritten into ``partial`` alone; without resume, empty partial files."""
    ids = {r.id for r in records}
    done: dict[str, dict] = {}
    if resume:
        for p in _partials(partial):
            done.update(_read_done(p, ids))
        if done:
            print(f"resuming: {len(done)} of {len(records)} records already scored in {partial}", file=sys.stderr)
    # rewrite the partial output with the readable rows only (a torn last line would swallow the next row)
    tmp = partial.with_name(partial.name + ".tmp")
    tmp.write_text("".join(_dumps(r) + "\n" for r in done.values()), encoding="utf-8")
    for p in _partials(partial):
        p.unlink(missing_ok=True)
    os.replace(tmp, partial)
    return done


def _merge(out: Path, partial: Path, records) -> dict[str, dict]:
    """Every partial row in input order into ``out``; refuse (keeping the partial files) when a record is missing."""
    ids = {r.id for r in records}
    rows: dict[str, dict] = {}
    for p in _partials(partial):
        rows.update(_read_done(p, ids))
    missing = [r.id for r in records if r.id not in rows]
    if missing:  # a bug, or a rank that died: keep the partial files for --resume
        raise CLIError(f"{len(missing)} records were not scored (first: {missing[0]!r}); rerun with --resume", 1)
    _finalise(out, partial, records, rows)
    return rows


def _summary(signature: str, rows: list[dict], where: str) -> None:
    """Signature, count, undefined and mean of the scores, on stderr (``-q`` silences it)."""
    vals = [r.get("score") for r in rows]
    valid = [v for v in vals if isinstance(v, (int, float))]
    mean = f"{sum(valid) / len(valid):.4f}" if valid else "undefined"
    print(f"{signature}\n{len(vals)} outputs, {len(vals) - len(valid)} undefined, mean {mean}; written to {where}",
          file=sys.stderr)


# ------------------------------------------------------------------------------------------- inputs (score)
STDIN = "-"


def _read_lines(path: str, flag: str) -> list[str]:
    """A plain line-aligned file (``-r`` / ``--mrs`` / ``--sources``): one entry per line, UTF-8 (a byte-order mark
    is dropped), the newline (``\\n`` or ``\\r\\n``) removed; a line that is not UTF-8 is named."""
    p = Path(path)
    if not p.exists() or p.is_dir():  # a pipe such as <(zcat ref.gz) is fine
        raise CLIError(f"{flag} {path}: no such file")
    from qe.data.record import read_text

    lines = read_text(p).split("\n")  # UTF-8 (a bad byte named by line and column), byte-order mark dropped
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
    return load_records(path, None if fmt == "auto" else fmt)


def _system_names(paths: list[str]) -> list[str]:
    """One name per input: the file stem, or the path as given where stems collide."""
    stems = ["stdin" if p == STDIN else Path(p).stem for p in paths]
    return stems if len(set(stems)) == len(stems) else list(paths)


def _check_aligned(flag: str, path: str, values: list, records, where: str) -> None:
    if len(values) != len(records):
        raise CLIError(f"{flag} {path} has {len(values)} lines, but {where} has {len(records)} outputs; the files "
                       "must be line-aligned")


def load_inputs(args: argparse.Namespace):
    """All records of ``-i`` (one system per file when several are given), with ``-r`` / ``--mrs`` / ``--sources``
    lines attached (they replace the records' own fields): (records, where), ``where`` naming the input."""
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
    n_ids = len({r.id for _, recs in per_file for r in recs})
    clash = n_ids < sum(len(recs) for _, recs in per_file)
    out = []
    for name, recs in per_file:
        for r in recs:
            if clash:  # the same ids in several inputs (one test set, several systems): make them unique
                r.id = f"{name}/{r.id}"
            out.append(r)
    return out, ", ".join("<stdin>" if p == STDIN else p for p in paths)


def cmd_score(args: argparse.Namespace) -> int:
    stdin = STDIN in args.input
    to_stdout = args.output in (None, STDIN) and not (args.system_level and args.output is None)
    out = None if args.output in (None, STDIN) else Path(args.output)
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
    partial = None
    if out is not None:
        for i in args.input:
            partial = _check_output(Path(os.devnull if i == STDIN else i), out)
    opts = _parse_opts(args.opt)
    if args.device:
        _check_device(args.device)
    if sharded:
        _score_sharded(args, opts, partial)
        return 0
    records, where = load_inputs(args)
    scorer = _load_scorer(args.model, opts, args.device)
    kw_all = _inputs(scorer, records, where)
    done = _prepare_partial(partial, records, args.resume) if partial is not None else {}
    todo = [i for i, r in enumerate(records) if r.id not in done]
    sink = sys.stdout if to_stdout else (open(partial, "a", encoding="utf-8") if partial is not None else None)
    try:
        rows = _score_into(sink, scorer, records, todo, kw_all, args)
    finally:
        if sink is not None and sink is not sys.stdout:
            sink.close()
    if out is not None:
        rows = _merge(out, partial, records)
    ordered = [rows[r.id] for r in records]
    if not args.quiet:
        _summary(scorer.signature, ordered, str(out) if out is not None else
                 ("standard output" if to_stdout else "nowhere (-o FILE keeps the per-output scores)"))
    if args.system_level:
        _print_system_level(args, scorer, records, ordered, kw_all)
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


def system_table(scorer, records, rows: list[dict], kw_all: dict, n_bootstrap: int, seed: int) -> list[dict]:
    """One row per system (the records' ``system``; "all" when they have none): see qe.significance.system_score."""
    from qe.significance import system_score

    refs_all = kw_all.get("refs") if getattr(scorer, "requires_refs", False) else None
    table = []
    for name, idx in _systems_of(records).items():
        scores = [math.nan if rows[i]["score"] is None else rows[i]["score"] for i in idx]
        refs = [refs_all[i] for i in idx] if refs_all is not None else None
        row = system_score(scorer, [records[i].output for i in idx], scores, refs=refs, n_bootstrap=n_bootstrap,
                           seed=seed)
        table.append({"system": name, **row})
    return table


def _print_system_level(args, scorer, records, rows: list[dict], kw_all: dict) -> None:
    table = system_table(scorer, records, rows, kw_all, args.bootstrap, args.seed)
    sig = Signature.of(scorer.signature).with_fields(bs=args.bootstrap, seed=args.seed)
    if args.json:
        from qe.core.jsonio import json_safe

        print(json.dumps(json_safe({"metric": scorer.name, "signature": sig,
                                    "higher_is_better": scorer.higher_is_better, "systems": table}), indent=2))
        return
    head = ["system", "n", "undefined", "mean", "corpus", "bootstrap mean ± 95% CI"]
    body = []
    for t in table:
        ci = "-" if t["ci"] is None else f"{t['ci_mean']:.4f} ± {t['ci_halfwidth']:.4f} (of the {t['ci_of']})"
        body.append([t["system"], str(t["n"]), str(t["undefined"]), _fmt(t["mean"]), _fmt(t["corpus"]), ci])
    print(render_table(head, body, right=(1, 2, 3, 4)))
    print(f"{scorer.name}: {'higher' if scorer.higher_is_better else 'lower'} is better; corpus = the metric's own "
          f"corpus-level score where it has one; CI = bootstrap 95 %\nsignature: {sig}")
    lib = next((t["library_signature"] for t in table if t.get("library_signature")), None)
    if lib:
        print(f"sacrebleu signature of the corpus scores and CIs: {lib}")


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
    if rank == 0:
        _prepare_partial(partial, records, a.resume)
    fabric.barrier()
    ids = {r.id for r in records}
    done = _read_done(partial, ids)
    todo = [i for i, r in enumerate(records) if r.id not in done]
    share = todo[rank * len(todo) // world:(rank + 1) * len(todo) // world]
    if fabric.device.type == "cuda":  # scorers' device "auto" then means this rank's GPU
        import torch

        torch.cuda.set_device(fabric.device)
    scorer = _load_scorer(a.model, opts, getattr(a, "device", None))
    kw_all = _inputs(scorer, records, where)
    with open(f"{partial}.rank{rank}", "w", encoding="utf-8") as sink:
        _score_into(sink, scorer, records, share, kw_all, a, desc=f"rank {rank}/{world}")
    fabric.barrier()
    if rank == 0:
        rows = _merge(Path(a.output), partial, records)
        if not a.quiet:
            _summary(Signature.of(scorer.signature).with_fields(processes=world), [rows[r.id] for r in records], a.output)


# ------------------------------------------------------------------------------------------------- compare
def cmd_compare(args: argparse.Namespace) -> int:
    """Paired significance tests of SYSTEMs against BASELINE (qe.significance), printed like sacrebleu's table."""
    from qe.significance import compare_systems

    files = [args.baseline, *args.systems]
    if files.count(STDIN) > 1:
        raise CLIError("- (standard input) may be given once")
    names = _system_names(files)
    systems = {}
    first = None
    for f, name in zip(files, names):
        ns = argparse.Namespace(input=[f], refs=args.refs, mrs=args.mrs, sources=args.sources, format=args.format)
        recs, _ = load_inputs(ns)
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
    kw = _inputs(scorer, first, args.baseline)  # the baseline's references / MRs / sources for every system
    test = "ar" if args.paired_ar else "bs"
    res = compare_systems(scorer, {k: [r.output for r in v] for k, v in systems.items()}, refs=kw.get("refs"),
                          mrs=kw.get("mrs"), sources=kw.get("sources"), test=test, n_samples=args.n,
                          seed=args.seed, ar_confidence=args.ar_confidence, batch_size=args.batch_size,
                          progress=not args.quiet)
    pvals = [r.p_value for r in res[1:]]
    adjusted = _adjust(pvals, args.correction)
    n_samples = args.n if args.n > 0 else (1000 if test == "bs" else 10000)
    sig = Signature.of(scorer.signature).with_fields(test="paired-bs" if test == "bs" else "paired-ar", n=n_samples, seed=args.seed)
    rows = []
    for i, r in enumerate(res):
        d = r.to_dict()
        d["p_adjusted"] = None if i == 0 else adjusted[i - 1]
        d["significant"] = None if i == 0 else bool(adjusted[i - 1] < args.alpha)
        rows.append(d)
    if args.json:
        from qe.core.jsonio import json_safe

        print(json.dumps(json_safe({"metric": scorer.name, "signature": sig, "test": test, "n_samples": n_samples,
                                    "seed": args.seed, "alpha": args.alpha, "correction": args.correction,
                                    "higher_is_better": scorer.higher_is_better, "systems": rows}), indent=2))
        return 0
    head = ["system", f"{scorer.name} (mean ± 95% CI)", "p-value" + ("" if args.correction == "none" else
                                                                    f" ({args.correction})")]
    body = []
    for d in rows:
        ci = "" if d["ci_halfwidth"] is None else f" ({d['mean']:.4f} ± {d['ci_halfwidth']:.4f})"
        p = "-" if d["baseline"] else f"{d['p_adjusted']:.4f}{' *' if d['significant'] else ''}"
        body.append([("Baseline: " if d["baseline"] else "") + d["system"], f"{d['score']:.4f}{ci}", p])
    print(render_table(head, body, right=(1, 2)))
    what = ("paired bootstrap resampling (Koehn 2004)" if test == "bs" else
            "paired approximate randomization (Riezler & Maxwell 2005)")
    print(f"{what}, {n_samples} {'resamples' if test == 'bs' else 'trials'}, {res[0].n} items; "
          f"* = p < {args.alpha}; {'higher' if scorer.higher_is_better else 'lower'} is better.\n"
          "Significance says the difference is unlikely to be chance, not which system is better or by how much.")
    if len(pvals) > 1 and args.correction == "none":
        print(f"{len(pvals)} comparisons: p-values are not corrected for multiple comparisons (--correction holm).")
    print(f"signature: {sig}")
    if res[0].library_signature:
        print(f"sacrebleu signature of the scores, CIs and p-values: {res[0].library_signature}")
    return 0


def _adjust(pvals: list[float], method: str) -> list[float]:
    if method == "none" or len(pvals) < 2:
        return list(pvals)
    from statsmodels.stats.multitest import multipletests

    return [float(x) for x in multipletests(pvals, method=method)[1]]


def _finalise(out: Path, partial: Path, records, rows: dict[str, dict]) -> None:
    """Write every row in input order to a temporary file beside ``out``, then rename it into place."""
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in records:
            f.write(_dumps(rows[r.id]) + "\n")
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
        raise CLIError(f"--model {model}: {msg}", EXIT_BAD_MODEL) from None
    except TypeError as exc:
        raise CLIError(f"--model {model}: bad options {opts}: {exc}") from None


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
            raise CLIError("qe data download NAME")
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
    s.add_argument("--model", "-m", required=True, help="export directory, registered scorer or zoo name")
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
    s.add_argument("--bootstrap", type=int, default=1000, help="resamples of the system-level CI (default 1000)")
    s.add_argument("--seed", type=int, default=12345, help="seed of the resampling (default 12345, as sacrebleu)")
    s.add_argument("--resume", action="store_true", help="continue OUTPUT.partial left by an interrupted run")
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
    s.add_argument("--no-progress", action="store_true",
                   help="no progress bar; progress goes to log lines instead (for batch jobs and log files)")
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
    c.add_argument("--n", type=int, default=0, help="resamples / trials (default: 1000 for bs, 10000 for ar)")
    c.add_argument("--ar-confidence", type=int, default=0,
                   help="bootstrap resamples for the CIs with --paired-ar (0: 1000, -1: none)")
    c.add_argument("--seed", type=int, default=12345, help="random seed (default 12345, sacrebleu's)")
    c.add_argument("--alpha", type=float, default=0.05, help="significance level of the * mark")
    c.add_argument("--correction", choices=["none", "holm", "bonferroni"], default="none",
                   help="adjust p-values for several systems (default none, as sacrebleu)")
    c.add_argument("--json", action="store_true", help="print JSON (score, ci, p_value per system)")
    c.add_argument("--opt", action="append", default=[], help="scorer option KEY=VALUE")
    c.add_argument("--device", default=None)
    c.add_argument("--batch-size", type=int, default=None)
    c.add_argument("--quiet", "-q", action="store_true", help="no progress bar, no log lines")
    c.add_argument("--debug", action="store_true", help="show the traceback of an error")
    c.set_defaults(fn=cmd_compare)
    sub.add_parser("train", help="train a model and write its export (Hydra overrides follow; packaged configs)")
    sub.add_parser("evaluate", help="score a rated dataset and meta-evaluate (Hydra overrides follow)")
    sub.add_parser("zoo", help="named models: list | build | verify | compare | pack | install | push | spread | command (qe zoo -h)")
    l_ = sub.add_parser("list", help="registered scorers and export kinds")
    l_.set_defaults(fn=cmd_list)
    d = sub.add_parser("data", help="public datasets: list, verify checksums, download")
    d.add_argument("action", choices=["list", "verify", "download"])
    d.add_argument("name", nargs="?")
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
PASSTHROUGH = ("train", "evaluate", "zoo")


def _passthrough(cmd: str, argv: list[str]) -> int:
    if cmd == "train":
        from qe.app import train

        return train(argv)
    if cmd == "evaluate":
        from qe.app import evaluate

        return evaluate(argv)
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
        return _passthrough(argv[0], argv[1:])
    args = _parser().parse_args(argv)
    with _logging_to_stderr(logging.WARNING if getattr(args, "quiet", False) else logging.INFO):
        return _run(args)


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
