"""How long the content matcher takes to align E2E-style outputs with their MRs (the ``coverage`` scorer's engine),
after its lexicon is loaded: the E2E lexicon mined from the cleaned dev references (``qe.content.scorer.dataset_lexicon``,
cached after the first use), then the first N dev references aligned with their original MRs, best of R repeats.

    OMP_NUM_THREADS=1 python benchmarks/matcher_speed.py --data-dir ../shared/data [--n 1500] [--repeats 3]

To time another commit's matcher on the same references: ``git worktree add /tmp/old COMMIT`` and run this file with
``PYTHONPATH=/tmp/old``.
"""
from __future__ import annotations

import argparse
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    import qe
    from qe.content import Matcher
    from qe.content.scorer import dataset_lexicon
    from qe.data.e2e import e2e_slot_gold

    rows = e2e_slot_gold("dev", a.data_dir)[:a.n]
    t0 = time.perf_counter()
    lex = dataset_lexicon("e2e", a.data_dir)
    load = time.perf_counter() - t0
    best = float("inf")
    for _ in range(a.repeats):
        m = Matcher(lex)  # a new matcher each time: its first-use indexes are part of the cost
        t0 = time.perf_counter()
        for r in rows:
            m.align(r["orig_mr"], r["ref"])
        best = min(best, time.perf_counter() - t0)
    print(f"qe from {qe.__file__}")
    print(f"lexicon: {load:.2f} s; {len(rows)} outputs aligned in {best:.3f} s (best of {a.repeats}): "
          f"{1000 * best / len(rows):.3f} ms per output; {getattr(m, 'parsed', '?')} sentences parsed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
