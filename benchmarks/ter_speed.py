"""Multi-reference TER: sacrebleu's implementation (the ``ter`` scorer before its speed-up) against qe's fast one.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/ter_speed.py [--before 300] [--after 0] [--out FILE]

Texts: E2E's original test set (``load_dataset("e2e", version="original", split="test")``), every human
reference used as an output and scored against the *other* references of its MR (leave-one-out: 4,693 outputs,
10.2 references each on average, up to 44). ``before`` = the ``ter`` scorer with sacrebleu's own ``TER`` object as its metric
(what it used at git HEAD before this change), on a random subset of ``--before`` outputs;
``after`` = the ``ter`` scorer now, on the same subset (scores compared exactly) and on ``--after`` outputs
(0 = all). Both through ``Scorer.score`` (tokenisation included), default options (native mode, ``space``
tokenisation, case-insensitive). Wall-clock and process CPU time are reported: on a loaded machine the CPU time
is the fairer figure.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time
from pathlib import Path


def e2e_leave_one_out():
    from qe.data import load_dataset

    outs, refs = [], []
    for r in load_dataset("e2e", version="original", split="test"):
        others = [x for x in r.refs if x != r.output]
        if others:
            outs.append(r.output)
            refs.append(others)
    return outs, refs


def timed(scorer, outs, refs):
    t0, c0 = time.perf_counter(), time.process_time()
    s = scorer.score(outs, refs=refs, progress=False)
    return s, time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=int, default=300, help="outputs for the sacrebleu (before) timing")
    ap.add_argument("--after", type=int, default=0, help="outputs for the full fast timing (0 = all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="outputs/ter_speed.json")
    a = ap.parse_args()
    import qe
    from sacrebleu.metrics import TER as SacreTER

    outs, refs = e2e_leave_one_out()
    n_refs = [len(r) for r in refs]
    sub = sorted(random.Random(a.seed).sample(range(len(outs)), min(a.before, len(outs))))
    so, sr = [outs[i] for i in sub], [refs[i] for i in sub]

    after = qe.load("ter")
    before = qe.load("ter")
    before._m = SacreTER(normalized=False, case_sensitive=False)  # the metric object the scorer used at git HEAD
    after.score(outs[:20], refs=refs[:20], progress=False)  # warm-up: imports, tokenizer
    before.score(outs[:20], refs=refs[:20], progress=False)

    res = {"texts": "E2E original test, each reference vs the other references of its MR",
           "outputs": len(outs), "refs_per_output_mean": sum(n_refs) / len(n_refs), "refs_max": max(n_refs),
           "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs visible, "
                      f"load average {os.getloadavg()[0]:.1f} at start", "signature": after.signature}
    s_before, w_b, c_b = timed(before, so, sr)
    s_after, w_a, c_a = timed(after, so, sr)
    same = s_before == s_after
    res["subset"] = {"outputs": len(sub), "refs_per_output_mean": sum(map(len, sr)) / len(sr),
                     "before_ms_per_output": {"wall": 1e3 * w_b / len(sub), "cpu": 1e3 * c_b / len(sub)},
                     "after_ms_per_output": {"wall": 1e3 * w_a / len(sub), "cpu": 1e3 * c_a / len(sub)},
                     "speedup": {"wall": w_b / w_a, "cpu": c_b / c_a}, "identical_scores": same}
    print(f"subset of {len(sub)} outputs ({res['subset']['refs_per_output_mean']:.1f} refs each): "
          f"before {1e3 * w_b / len(sub):.1f} ms/output wall, {1e3 * c_b / len(sub):.1f} ms CPU; "
          f"after {1e3 * w_a / len(sub):.2f} ms wall, {1e3 * c_a / len(sub):.2f} ms CPU; "
          f"speed-up x{w_b / w_a:.0f} wall, x{c_b / c_a:.0f} CPU; identical scores: {same}", flush=True)
    n = a.after or len(outs)
    _, w, c = timed(after, outs[:n], refs[:n])
    res["after_all"] = {"outputs": n, "wall_s": w, "cpu_s": c, "ms_per_output": {"wall": 1e3 * w / n, "cpu": 1e3 * c / n}}
    print(f"after, {n} outputs: {w:.1f} s wall ({1e3 * w / n:.2f} ms/output), {c:.1f} s CPU "
          f"({1e3 * c / n:.2f} ms/output)")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    print(f"written: {a.out}")
    if not same:
        raise SystemExit("scores differ from sacrebleu's")


if __name__ == "__main__":
    main()
