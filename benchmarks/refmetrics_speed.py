"""Sentences per second of every reference-based metric: 10,000 outputs with 2 references each, CPU, one process.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/refmetrics_speed.py [--n 10000] [--lm EXPORT] [--out FILE]

Texts: the EMNLP17 outputs and their human references (``emnlp17_refs``, references of all splits, two per
output, cycling through the 2,460 outputs) when the data directory is there, else the embedded rated sample. Each
metric scores the whole set once (after one warm-up call on 50 outputs, which also imports its library);
the time includes tokenisation. ``--lm`` adds ROUGE-LM (its LM part runs on CPU here; no GPU was measured).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

METRICS = ["bleu-1", "bleu-4", "nist-5", "rouge-1", "rouge-2", "rouge-4", "rouge-l", "rouge-w", "rouge-su4",
           "meteor", "cider-d", "ter", "chrf", "chrf++", "se", "lr2-f-mult", "lr3-r-mult"]


def texts(n: int):
    from qe.data.datasets import load_dataset

    try:
        recs = [r for r in load_dataset("emnlp17_refs", mode="all") if len(r.refs) >= 2]
        src = "emnlp17_refs(mode=all), outputs with >= 2 references"
    except (FileNotFoundError, KeyError):
        recs = [r for r in load_dataset("sample") if len(r.refs) >= 2]
        src = "embedded sample"
    outs = [recs[i % len(recs)].output for i in range(n)]
    refs = [recs[i % len(recs)].refs[:2] for i in range(n)]
    return outs, refs, src


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--lm", default=None, help="slor export: also time ROUGE-LM")
    ap.add_argument("--metrics", default=",".join(METRICS))
    ap.add_argument("--out", default="outputs/refmetrics_speed.json")
    a = ap.parse_args()
    import qe

    outs, refs, src = texts(a.n)
    names = a.metrics.split(",")
    jobs = [(n, {}) for n in names] + ([("rouge-lm", {"lm": a.lm, "device": "cpu"})] if a.lm else [])
    res = {"n": a.n, "refs_per_output": 2, "texts": src, "machine": f"{platform.processor() or platform.machine()}, "
           f"{os.cpu_count()} CPUs visible, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}", "metrics": {}}
    print(f"{a.n} outputs x 2 references ({src})")
    for name, opts in jobs:
        sc = qe.load(name, **opts)
        sc.score(outs[:50], refs=refs[:50], progress=False)
        t0 = time.perf_counter()
        sc.score(outs, refs=refs, progress=False)
        dt = time.perf_counter() - t0
        res["metrics"][name] = {"seconds": dt, "sent_per_s": a.n / dt, "signature": sc.signature}
        print(f"  {name:12s} {a.n / dt:10.0f} sent/s  ({dt:.1f} s)", flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    print(f"written: {a.out}")


if __name__ == "__main__":
    main()
