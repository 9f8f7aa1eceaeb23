"""Console script ``qe``.

    qe score --model PATH_OR_NAME --input FILE [--output scores.jsonl] [--resume] [--components] [--no-progress]
             [--opt score=nce] [--batch-size N] [--chunk-size N] [--device cpu] [--quiet] [--debug]
             [--devices N --num-nodes M --accelerator cpu|gpu]          # sharded over processes
    qe evaluate <hydra overrides ...>          # same as python evaluate.py ...
    qe list                                    # registered scorers and export kinds
    qe data list | verify [NAME] | download NAME

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
            sink.write(json.dumps(row, ensure_ascii=False) + "\n")
            rows_out[row["id"]] = row
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
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in done.values()), encoding="utf-8")
    for p in _partials(partial):
        p.unlink(missing_ok=True)
    os.replace(tmp, partial)
    return done


def _merge(out: Path, partial: Path, records) -> None:
    """Every partial row in input order into ``out``; refuse (keeping the partial files) when a record is missing."""
    ids = {r.id for r in records}
    rows: dict[str, dict] = {}
    for p in _partials(partial):
        rows.update(_read_done(p, ids))
    missing = [r.id for r in records if r.id not in rows]
    if missing:  # a bug, or a rank that died: keep the partial files for --resume
        raise CLIError(f"{len(missing)} records were not scored (first: {missing[0]!r}); rerun with --resume", 1)
    _finalise(out, partial, records, rows)


def _summary(signature: str, out: Path | None, n_scored: int) -> None:
    if out is None:
        print(f"{signature}\n{n_scored} outputs scored", file=sys.stderr)
        return
    vals = [json.loads(x)["score"] for x in out.read_text(encoding="utf-8").splitlines()]
    valid = [v for v in vals if v is not None]
    mean = sum(valid) / len(valid) if valid else float("nan")
    print(f"{signature}\n{len(vals)} outputs, {len(vals) - len(valid)} undefined (NaN), mean {mean:.4f}; "
          f"written to {out}", file=sys.stderr)


def cmd_score(args: argparse.Namespace) -> int:
    from qe.data import load_records

    inp = Path(args.input)
    to_stdout = args.output in (None, "-")
    out = None if to_stdout else Path(args.output)
    if args.resume and to_stdout:
        raise CLIError("--resume needs --output (the partial output to continue)")
    sharded = args.devices > 1 or args.num_nodes > 1
    if sharded and to_stdout:
        raise CLIError("--devices/--num-nodes need --output (each process writes its share, merged at the end)")
    partial = _check_output(inp, out) if out is not None else None
    opts = _parse_opts(args.opt)
    if args.device:
        opts["device"] = args.device
    if sharded:
        _score_sharded(args, opts, partial)
        return 0
    records = load_records(inp)
    scorer = _load_scorer(args.model, opts)
    kw_all = _inputs(scorer, records, inp)
    done = _prepare_partial(partial, records, args.resume) if partial is not None else {}
    todo = [i for i, r in enumerate(records) if r.id not in done]
    sink = sys.stdout if to_stdout else open(partial, "a", encoding="utf-8")
    try:
        _score_into(sink, scorer, records, todo, kw_all, args)
    finally:
        if sink is not sys.stdout:
            sink.close()
    if out is not None:
        _merge(out, partial, records)
    if not args.quiet:
        _summary(scorer.signature, out, len(todo))
    return 0


def _inputs(scorer, records, inp: Path) -> dict:
    from qe.core.inputs import scorer_inputs

    return scorer_inputs(scorer, records, where=str(inp))


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
    from qe.data import load_records

    a = argparse.Namespace(**args)
    partial = Path(partial_path)
    records = load_records(a.input)  # each process reads the input itself (nothing large is sent to it)
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
    scorer = _load_scorer(a.model, opts)
    kw_all = _inputs(scorer, records, Path(a.input))
    with open(f"{partial}.rank{rank}", "w", encoding="utf-8") as sink:
        _score_into(sink, scorer, records, share, kw_all, a, desc=f"rank {rank}/{world}")
    fabric.barrier()
    if rank == 0:
        _merge(Path(a.output), partial, records)
        if not a.quiet:
            _summary(scorer.signature + f"|processes:{world}", Path(a.output), len(todo))


def _finalise(out: Path, partial: Path, records, rows: dict[str, dict]) -> None:
    """Write every row in input order to a temporary file beside ``out``, then rename it into place."""
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(rows[r.id], ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out)
    for p in _partials(partial):
        p.unlink(missing_ok=True)


def _load_scorer(model: str, opts: dict[str, Any]):
    import qe
    from qe.errors import ExportError

    try:
        return qe.load(model, **opts)
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
    s = sub.add_parser("score", help="score outputs with an export or a registered scorer")
    s.add_argument("--model", "-m", required=True, help="export directory or registered scorer name")
    s.add_argument("--input", "-i", required=True, help=".txt (one output per line), .jsonl or .csv records")
    s.add_argument("--output", "-o", default=None,
                   help="scores.jsonl: the input records plus 'score' (default: stdout). Written to OUTPUT.partial "
                        "as scoring goes and moved into place at the end")
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
    sub.add_parser("train", help="train a model and write its export (Hydra overrides follow; packaged configs)")
    sub.add_parser("evaluate", help="score a rated dataset and meta-evaluate (Hydra overrides follow)")
    sub.add_parser("zoo", help="named models: list | build | verify | command (qe zoo -h)")
    l_ = sub.add_parser("list", help="registered scorers and export kinds")
    l_.set_defaults(fn=cmd_list)
    d = sub.add_parser("data", help="public datasets: list, verify checksums, download")
    d.add_argument("action", choices=["list", "verify", "download"])
    d.add_argument("name", nargs="?")
    d.add_argument("--debug", action="store_true", help="show the traceback of an error")
    d.set_defaults(fn=cmd_data)
    return p


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


def _setup_logging(level: int) -> None:
    """The ``qe`` loggers print to stderr at ``level`` (progress lines at INFO); the root logger is left alone."""
    lg = logging.getLogger("qe")
    if not any(isinstance(h, _StderrHandler) for h in lg.handlers):
        lg.addHandler(_StderrHandler())
    lg.setLevel(level)


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
    _setup_logging(logging.WARNING if getattr(args, "quiet", False) else logging.INFO)
    from qe.errors import QEError

    try:
        return int(args.fn(args) or 0)
    except CLIError as exc:
        if args.debug if hasattr(args, "debug") else False:
            raise
        print(f"qe {args.cmd}: error: {exc}", file=sys.stderr)
        return exc.code
    except (QEError, FileNotFoundError, ValueError, TypeError) as exc:
        # bad records (RecordError names file:line, id and field), missing inputs, bad option values
        if getattr(args, "debug", False):
            raise
        print(f"qe {args.cmd}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"qe {args.cmd}: interrupted; rerun with --resume to continue a partial output", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
