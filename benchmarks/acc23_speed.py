"""How long tie-calibrated pairwise accuracy (``acc23``, :func:`qe.evaluation.wmt.tie_calibrated_accuracy`) takes on
one CPU thread: a seeded synthetic rated set of SYSTEMS x ITEMS outputs (default 10 x 600 = 6,000), human ratings on a
1-5 integer scale (many ties, as crowd ratings have) and three metrics that differ only in how finely they are rounded:
continuous (8 decimals), 3 decimals, and 1 decimal (a coarse metric: many metric ties, so many outputs share a value).
For each metric and each ``average_by`` (``none``: all 17,997,000 pairs of the 6,000 outputs; ``item``: the 45 pairs of
each input; ``sys``: the 179,700 pairs of each system), the best of R runs, with the acc23 and epsilon found.

    OMP_NUM_THREADS=1 python benchmarks/acc23_speed.py [--systems 10] [--items 600] [--repeats 3]

Goal (issue 57): <= 1 s for 6,000 outputs with average_by none and item.
"""
from __future__ import annotations

import argparse
import os
import platform
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--systems", type=int, default=10)
    ap.add_argument("--items", type=int, default=600)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    import numpy as np

    from qe.evaluation.wmt import tie_calibrated_accuracy

    rng = np.random.default_rng(a.seed)
    quality = rng.normal(size=(a.systems, 1)) * 0.5 + rng.normal(size=(a.systems, a.items))
    human = np.clip(np.round(3 + quality), 1, 5)
    noise = rng.normal(scale=0.8, size=quality.shape)
    print(f"{a.systems} systems x {a.items} items = {human.size:,} outputs; Python {platform.python_version()}, "
          f"numpy {np.__version__}, {os.cpu_count()} CPU cores, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    print(f"{'metric':<12} {'average_by':<10} {'pairs':>12} {'seconds':>8} {'acc23':>8} {'epsilon':>10}")
    for name, digits in (("continuous", 8), ("3 decimals", 3), ("1 decimal", 1)):
        metric = np.round(quality + noise, digits)
        for avg in ("none", "item", "sys"):
            best = float("inf")
            for _ in range(a.repeats):
                t0 = time.perf_counter()
                r = tie_calibrated_accuracy(human, metric, average_by=avg)
                best = min(best, time.perf_counter() - t0)
            print(f"{name:<12} {avg:<10} {r.n_pairs:>12,} {best:>8.3f} {r.value:>8.4f} {r.epsilon:>10.4g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
