"""Folds grouped by input, for selecting anything on rated data out of fold.

Outputs of one input (one ``test_eid``, one MR, ...) must never sit on both sides of a split: a choice fitted on some
outputs of an input and scored on others of the same input flatters itself (the input's difficulty is shared). The
groups are the connected components of "shares a key" over every key given (:func:`input_groups`), dealt into folds
after one seeded shuffle (:func:`input_folds`). Used by ``task=combiner`` (``task.cv_folds``) and the experiments that
select on the WebNLG 2020 ratings (``experiments.coverage_ranking``); the protocol is stated on
docs/results/content.md. Written here because scikit-learn's ``GroupKFold`` balances fold sizes deterministically
(no shuffling before scikit-learn 1.6) and takes one key, where inputs here are joined over several.
"""
from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np


def input_groups(*keys: Sequence[Hashable]) -> list[int]:
    """One group id per output (0, 1, ... in order of first appearance): outputs that share a value of any of
    ``keys`` (each a sequence with one value per output) are in one group."""
    if not keys:
        raise ValueError("input_groups: give at least one key")
    n = len(keys[0])
    if any(len(k) != n for k in keys):
        raise ValueError(f"input_groups: keys of different lengths {[len(k) for k in keys]}")
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for ks in keys:
        first: dict = {}
        for i, k in enumerate(ks):
            if k in first:
                parent[find(i)] = find(first[k])
            else:
                first[k] = i
    roots = [find(i) for i in range(n)]
    ids = {r: j for j, r in enumerate(dict.fromkeys(roots))}
    return [ids[r] for r in roots]


def input_folds(groups: Sequence[Hashable], folds: int = 5, seed: int = 1) -> np.ndarray:
    """The fold (0 .. folds - 1) of each output: the distinct groups, sorted, shuffled with ``seed`` and dealt
    round-robin into ``folds``; every output of a group lands in its group's fold."""
    uniq = sorted(set(groups))
    if folds < 2:
        raise ValueError(f"folds={folds}: at least 2")
    if len(uniq) < folds:
        raise ValueError(f"{len(uniq)} input group(s) cannot fill {folds} folds")
    order = np.random.RandomState(seed).permutation(len(uniq))
    fold_of = {uniq[j]: k % folds for k, j in enumerate(order)}
    return np.array([fold_of[g] for g in groups])


__all__ = ["input_groups", "input_folds"]
