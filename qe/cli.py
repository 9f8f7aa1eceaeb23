"""Console script ``qe``.

    qe score --model PATH_OR_NAME --input FILE [--output scores.jsonl] [--opt score=nce] [--batch-size N]
    qe evaluate <hydra overrides ...>          # same as python evaluate.py ...
    qe list                                    # registered scorers and export kinds
    qe data list | verify [NAME] | download NAME
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from pathlib import Path
from typing import Any


def _parse_opts(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for it in items or []:
        if "=" not in it:
            raise SystemExit(f"--opt expects KEY=VALUE, got {it!r}")
        k, v = it.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def cmd_score(args: argparse.Namespace) -> int:
    import qe
    from qe.data import load_records

    records = load_records(args.input)
    opts = _parse_opts(args.opt)
    if args.device:
        opts["device"] = args.device
    scorer = qe.load(args.model, **opts)
    outputs = [r.output for r in records]
    mrs = [r.mr or "" for r in records] if scorer.requires_mrs else None
    if scorer.requires_mrs and any(r.mr is None for r in records):
        bad = next(r for r in records if r.mr is None)
        raise SystemExit(f"{args.input}: record {bad.id!r} has no 'mr', which {scorer.name} needs")
    refs = None
    if scorer.requires_refs:
        bad = next((r for r in records if not r.refs), None)
        if bad is not None:
            raise SystemExit(f"{args.input}: record {bad.id!r} has no 'refs', which {scorer.name} needs")
        refs = [r.refs for r in records]
    scores = scorer.score(outputs, mrs=mrs, refs=refs, batch_size=args.batch_size, progress=not args.quiet)
    out = sys.stdout if args.output in (None, "-") else open(args.output, "w", encoding="utf-8")
    try:
        for r, s in zip(records, scores):
            out.write(json.dumps({"id": r.id, "score": None if math.isnan(s) else s, "output": r.output},
                                 ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    valid = [s for s in scores if not math.isnan(s)]
    if not args.quiet:
        mean = sum(valid) / len(valid) if valid else float("nan")
        print(f"{scorer.signature}\n{len(scores)} outputs, {len(scores) - len(valid)} NaN, mean {mean:.4f}"
              + (f"; scores written to {args.output}" if args.output not in (None, "-") else ""), file=sys.stderr)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from qe.registry import EXPORT_KINDS, describe

    print("scorers (qe.load(NAME)):")
    print(describe())
    print("\nexport kinds (qe.load(EXPORT_DIR)): " + ", ".join(sorted(EXPORT_KINDS)))
    return 0


def cmd_data(args: argparse.Namespace) -> int:
    from qe.data import recipes

    if args.action == "list":
        return recipes.cmd_list()
    if args.action == "verify":
        return recipes.cmd_verify(args.name)
    if args.action == "download":
        if not args.name:
            raise SystemExit("qe data download NAME")
        return recipes.cmd_download(args.name)
    raise SystemExit(f"unknown action {args.action}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "evaluate":
        from qe.evaluation.cli import main as evaluate_main

        return evaluate_main(argv[1:])
    p = argparse.ArgumentParser(prog="qe", description="Quality estimation for NLG output")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("score", help="score outputs with an export or a registered scorer")
    s.add_argument("--model", "-m", required=True, help="export directory or registered scorer name")
    s.add_argument("--input", "-i", required=True, help=".txt (one output per line), .jsonl or .csv records")
    s.add_argument("--output", "-o", default=None, help="scores.jsonl (default: stdout)")
    s.add_argument("--batch-size", type=int, default=None)
    s.add_argument("--device", default=None, help="cpu, cuda, cuda:1 (default: GPU when available)")
    s.add_argument("--opt", action="append", default=[], help="scorer option KEY=VALUE (e.g. score=nce)")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress bar, no summary")
    s.set_defaults(fn=cmd_score)
    sub.add_parser("evaluate", help="score a rated dataset and meta-evaluate (Hydra overrides follow)")
    l_ = sub.add_parser("list", help="registered scorers and export kinds")
    l_.set_defaults(fn=cmd_list)
    d = sub.add_parser("data", help="public datasets: list, verify checksums, download")
    d.add_argument("action", choices=["list", "verify", "download"])
    d.add_argument("name", nargs="?")
    d.set_defaults(fn=cmd_data)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return int(args.fn(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
