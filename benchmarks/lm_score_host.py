"""Host-side batch assembly of the LM scorer (no model): the per-row loop it replaced against ``LMScorer._padded``.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/lm_score_host.py

On a GPU this assembly runs on the host between forward passes, so its cost per sentence bounds scoring throughput
whatever the card (the GPU check measured 19 k sentences/s with the loop: docs/results/performance.md#gpu).
100,000 synthetic sentences of 5-27 ids, batches of 16,000 rows; the two builds are checked equal.
"""
from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np
import torch

from qe.lm.scorer import LMScorer

TOK = SimpleNamespace(pad_id=0, bos_id=2, eos_id=3)


def per_row_loop(ids: list[list[int]], idx: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """What ``LMScorer._batch_logprobs`` did before: small tensor operations for every row."""
    L = max(len(ids[j]) for j in idx) + 1
    inp = torch.full((len(idx), L), TOK.pad_id, dtype=torch.long)
    tgt = torch.full((len(idx), L), TOK.pad_id, dtype=torch.long)
    for r, j in enumerate(idx):
        t = torch.tensor(ids[j], dtype=torch.long)
        inp[r, 0] = TOK.bos_id
        inp[r, 1 : len(t) + 1] = t
        tgt[r, : len(t)] = t
        tgt[r, len(t)] = TOK.eos_id
    return inp, tgt


def main() -> None:
    rng = np.random.default_rng(0)
    ids = [rng.integers(4, 16000, size=L).tolist() for L in rng.integers(5, 28, size=100_000)]
    idx = list(range(len(ids)))
    fake = SimpleNamespace(tokenizer=TOK)
    array_build = lambda a, b: LMScorer._padded(fake, a, b)  # noqa: E731
    a, b = per_row_loop(ids, idx[:5000]), array_build(ids, idx[:5000])
    assert all(torch.equal(x, y) for x, y in zip(a, b)), "the two builds differ"
    for name, f in (("per-row loop", per_row_loop), ("array build", array_build)):
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            for s in range(0, len(idx), 16_000):
                f(ids, idx[s : s + 16_000])
            best = min(best, time.perf_counter() - t)
        print(f"{name:14s} {best:.3f} s per 100,000 sentences ({best / 1e5 * 1e6:.1f} us each)")


if __name__ == "__main__":
    main()
