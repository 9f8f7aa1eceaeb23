"""The measures the WMT metrics task has ranked metrics by since 2023, for ``qe evaluate`` and from Python.

* :func:`tie_calibrated_accuracy` -- pairwise accuracy with tie calibration, ``acc23`` (and its ``tau23`` form),
  Deutsch, Foster & Freitag (2023), "Ties Matter: Meta-Evaluating Modern Metrics with Pairwise Accuracy and Tie
  Calibration" (EMNLP 2023); the instance-level measure of WMT 2023 and 2024;
* :func:`soft_pairwise_accuracy` -- SPA, Thompson, Mathur, Deutsch & Khayrallah (2024), "Improving Statistical
  Significance in Human Evaluation of Automatic Metrics via Soft Pairwise Accuracy" (WMT 2024); ``1 - PCE`` in
  mt-metrics-eval; the system-level measure of WMT 2024;
* :func:`system_pairwise_accuracy` -- Kocmi et al. (2021), "To Ship or Not to Ship": the share of system pairs that a
  metric orders as the humans do;
* :func:`rank_clusters` -- metrics ranked by any of these measures and cut into significance clusters with WMT's
  greedy rule; the p-values come from :func:`perm_both_measure` (PERM-BOTH, Deutsch, Dror & Roth 2021, with any
  measure as the statistic) or, for ``acc23``, from :func:`pairwise_permutation_test` (the pair-swapping test WMT 2023
  and 2024 used for it).

The definitions follow google-research/mt-metrics-eval (``stats.KendallWithTiesOpt``, ``tau_optimization``,
``pce``, ``data.AssignRanks``), which is not on the package registry (a package there with that name is unrelated), so
these are written here from the papers and that package's documented behaviour and published test values
(tests/evaluation/test_wmt.py checks them). Where this module differs, the docstring says so.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import scipy.stats

VARIANTS = ("acc23", "tau23")
AVERAGE_BY = ("none", "item", "sys")
#: bins of the first pass of the epsilon sweep (see :func:`tie_calibrated_accuracy`)
_BINS = 1 << 14
#: pairs (or permutation x item cells) handled at once: bounds the memory of every loop in this module (~32 MB/array)
_CHUNK = 1 << 22
#: at most this many pairs: sorted outright, no binning pass
_FEW = 1 << 16


# ---- tie-calibrated pairwise accuracy -----------------------------------------------------------------------------
@dataclass
class TieCalibration:
    """Result of :func:`tie_calibrated_accuracy`."""
    value: float            #: acc23 in [0, 1] or tau23 in [-1, 1]; NaN when no pair exists
    epsilon: float          #: the tie threshold: metric differences <= epsilon count as metric ties
    variant: str
    average_by: str
    n_pairs: int            #: pairs compared (after sampling)
    n_groups: int           #: groups with at least one pair (1 for average_by="none")
    sample_rate: float = 1.0
    #: True when every sum was integer arithmetic (always for average_by="none"; for averaged variants when the least
    #: common multiple of the groups' pair counts is small enough); False: float sums, the max found up to ~1e-10
    exact: bool = True


def _codes(values, labels: bool = False):
    """Integer codes of group / system / item labels (compared as strings), in sorted label order (pandas.factorize:
    hashing, far faster than sorting a million strings); with ``labels``, (codes, sorted labels)."""
    import pandas as pd

    codes, uniq = pd.factorize(pd.Series(np.asarray(values, dtype=object)).astype(str), sort=True)
    codes = codes.astype(np.int64)
    return (codes, np.asarray(uniq, dtype=object)) if labels else codes


@dataclass
class _Groups:
    """The scores sorted by group, then by metric (ascending) and, among metric ties, by decreasing human score: the
    layout every pair loop works on. With ``atoms``, outputs with the same group, metric and human score are merged
    into one atom with a multiplicity ``c`` (a rounded or discrete metric then has far fewer atoms than outputs; the
    pairs inside an atom are tied on both sides). Only groups with at least 2 outputs are listed."""
    h: np.ndarray
    m: np.ndarray
    c: np.ndarray           #: outputs per atom (float; all 1 without atoms)
    starts: np.ndarray      #: first atom of each group
    sizes: np.ndarray       #: atoms per group
    outs: np.ndarray        #: outputs per group


def _as_groups(human, metric, groups, average_by: str, higher_is_better: bool, atoms: bool = True) -> _Groups:
    if average_by not in AVERAGE_BY:
        raise ValueError(f"average_by must be one of {AVERAGE_BY}, got {average_by!r}")
    h = np.asarray(human, dtype=float)
    m = np.asarray(metric, dtype=float)
    if h.shape != m.shape:
        raise ValueError(f"human and metric differ in shape: {h.shape} vs {m.shape}")
    if h.ndim == 2:  # systems x items, as mt-metrics-eval's matrices (NaN = missing)
        if groups is not None:
            raise ValueError("groups must be None for a systems x items matrix; average_by picks rows or columns")
        rows, cols = np.indices(h.shape)
        codes = {"none": np.zeros(h.size, np.int64), "sys": rows.ravel(), "item": cols.ravel()}[average_by]
        h, m = h.ravel(), m.ravel()
    elif h.ndim == 1:
        if groups is None:
            if average_by != "none":
                raise ValueError(f"average_by={average_by!r} needs groups (one label per score: the system or item)")
            codes = np.zeros(h.size, np.int64)
        else:
            if average_by == "none":
                raise ValueError("groups were given with average_by='none'; say what they are: 'item' or 'sys'")
            g = np.asarray(groups, dtype=object)
            if g.shape != h.shape:
                raise ValueError(f"groups has {g.shape[0]} labels for {h.size} scores")
            codes = _codes(g)
    else:
        raise ValueError(f"human and metric must be vectors or a systems x items matrix, got {h.ndim} dimensions")
    ok = ~(np.isnan(h) | np.isnan(m))
    h, m, codes = h[ok], m[ok], codes[ok]
    if not higher_is_better:
        m = -m
    order = np.lexsort((-h, m, codes))  # metric ties: higher human score first, so hj > hi implies m_j > m_i
    h, m, codes = h[order], m[order], codes[order]
    if atoms and h.size:
        new = np.r_[True, (codes[1:] != codes[:-1]) | (m[1:] != m[:-1]) | (h[1:] != h[:-1])]
        first = np.flatnonzero(new)
        c = np.diff(np.r_[first, h.size]).astype(float)
        h, m, codes = h[first], m[first], codes[first]
    else:
        c = np.ones(h.size)
    bounds = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1], True]) if codes.size else np.array([0])
    starts, sizes = bounds[:-1], np.diff(bounds)
    outs = np.add.reduceat(c, starts).astype(np.int64) if starts.size else np.array([], np.int64)
    keep = outs >= 2
    return _Groups(h, m, c, starts[keep].astype(np.int64), sizes[keep].astype(np.int64), outs[keep])


def _pairs_of_size(size: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(int(size), 1)


def _sampled_pairs(G: _Groups, rate: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each within-group pair kept with probability ``rate`` (a binomial count, then a uniform subset of that size:
    the same distribution as one coin per pair, as mt-metrics-eval samples), without enumerating the pairs.
    ``G`` without atoms. Returns (i, j, group index) in metric order."""
    npairs = G.sizes * (G.sizes - 1) // 2
    total = int(npairs.sum())
    rng = np.random.default_rng(seed)
    k = int(rng.binomial(total, rate)) if total else 0
    if k == 0:
        e = np.array([], np.int64)
        return e, e, e
    if k * 100 < total:  # a few of very many: uniform draws, duplicates redrawn (still a uniform k-subset)
        def distinct(x):
            x.sort()
            return x[np.r_[True, x[1:] != x[:-1]]]

        lin = distinct(rng.integers(0, total, size=k))
        while lin.size < k:
            lin = distinct(np.r_[lin, rng.integers(0, total, size=k - lin.size)])
    else:
        lin = np.sort(rng.choice(total, size=k, replace=False))
    ends = np.cumsum(npairs)
    g = np.searchsorted(ends, lin, side="right")
    r = lin - (ends[g] - npairs[g])
    sz = G.sizes[g]
    s = sz.astype(float)
    # row i of the upper triangle of an s x s matrix starts at pair i (2s - i - 1) / 2; the float root, then a fix
    i = np.floor(((2 * s - 1) - np.sqrt(np.maximum((2 * s - 1) ** 2 - 8 * r, 0))) / 2).astype(np.int64)
    i[i * (2 * sz - i - 1) // 2 > r] -= 1
    i[(i + 1) * (2 * sz - i - 2) // 2 <= r] += 1
    j = r - i * (2 * sz - i - 1) // 2 + i + 1
    return G.starts[g] + i, G.starts[g] + j, g


def _weights(counts: np.ndarray) -> tuple[np.ndarray, float, bool]:
    """Per-group weights that make a sum over pairs the mean over groups of each group's accuracy: L / N_g with L
    the least common multiple of the pair counts N_g when sums stay exact integers in float64, else 1 / N_g.
    Returns (weights of the groups with N_g > 0, the norm that turns a weighted sum into the mean, exact)."""
    counts = counts[counts > 0].astype(np.int64)
    G = int(counts.size)
    lcm = 1
    for c in np.unique(counts):
        lcm = math.lcm(lcm, int(c))
        if lcm * G > 2 ** 50:
            break
    if lcm * G <= 2 ** 50:
        return lcm / counts.astype(float), float(lcm * G), True
    return 1.0 / counts.astype(float), float(G), False


def _classify(G: _Groups, i: np.ndarray, j: np.ndarray):
    """(d, human tie, concordant, multiplicity) of atom pairs i < j of one group: d = m_j - m_i >= 0."""
    d = G.m[j] - G.m[i]
    hi, hj = G.h[i], G.h[j]
    return d, hi == hj, (hj > hi) & (d > 0), G.c[i] * G.c[j]


class _Sweep:
    """The pairs of a tie calibration, in chunks of bounded size. A pair's threshold is its metric difference d >= 0;
    counted as a metric tie it gains +w if the humans tie it (then right) and -w if it is concordant (then wrong);
    discordant pairs and pairs tied by the metric only never change. value(t) = (base + sum of the gains of pairs with
    d <= t) / norm, base = the weighted concordant pairs, w = the group's weight (:func:`_weights`) times the pair's
    multiplicity (atoms; the pairs inside an atom are human ties at d = 0: ``zero``).

    Full enumeration: groups of fewer than ~500 atoms (items) are gathered many at a time; a larger group (a system,
    or everything) is walked in blocks of rows of its upper triangle, as slices (no index arrays), since the atoms of a
    group are sorted by metric. Sampling: the drawn pairs of outputs, gathered."""

    def __init__(self, G: _Groups, sample_rate: float, seed: int):
        self.G = G
        self.dmax = float((G.m[G.starts + G.sizes - 1] - G.m[G.starts]).max()) if G.starts.size else 0.0
        self.sampled = sample_rate < 1.0
        self.zero = 0.0
        if not self.sampled:
            npairs = G.outs * (G.outs - 1) // 2
            self.n_pairs, self.n_groups = int(npairs.sum()), int(npairs.size)
            self.wg, self.norm, self.exact = _weights(npairs) if npairs.size else (np.array([]), 1.0, True)
            self.small = G.sizes * (G.sizes - 1) // 2 <= _CHUNK // 64
            gid = np.repeat(np.arange(G.starts.size), G.sizes)  # every atom of a listed group, with its group
            at = G.starts[gid] + np.arange(gid.size) - np.repeat(np.cumsum(G.sizes) - G.sizes, G.sizes)
            self.zero = float((self.wg[gid] * G.c[at] * (G.c[at] - 1) / 2).sum()) if at.size else 0.0
            cross = int((G.sizes * (G.sizes - 1) // 2).sum())
        else:
            self.i, self.j, g = _sampled_pairs(G, sample_rate, seed)
            counts = np.bincount(g, minlength=G.sizes.size)
            self.n_pairs, self.n_groups = int(self.i.size), int((counts > 0).sum())
            w, self.norm, self.exact = _weights(counts) if self.i.size else (np.array([]), 1.0, True)
            wg = np.zeros(counts.size)
            wg[counts > 0] = w
            self.wp = wg[g]
            cross = int(self.i.size)
        #: few pairs, or only small groups (gathered, not sliced: a second pass would gather them again): one bin,
        #: i.e. sort them all; the two-pass bound pays off for millions of pairs of large groups
        only_small = not self.sampled and not (~self.small).any()
        self.nbins = 1 if cross <= _FEW or (only_small and cross <= _CHUNK * 2) else _BINS
        self.scale = (self.nbins / self.dmax) if self.dmax > 0 else 0.0

    # -- every pair: (d, human tie, concordant, weight), arrays of any shape --------------------------------------
    def _small_chunks(self):
        G = self.G
        gidx = np.flatnonzero(self.small)
        for s in np.unique(G.sizes[gidx]):
            gs = gidx[G.sizes[gidx] == s]
            if s < 2:
                continue
            iu0, iu1 = _pairs_of_size(s)
            per = max(1, _CHUNK // iu0.size)
            for b in range(0, gs.size, per):
                base = G.starts[gs[b:b + per], None]
                w = np.broadcast_to(self.wg[gs[b:b + per], None], (base.shape[0], iu0.size)).ravel()
                yield (base + iu0[None, :]).ravel(), (base + iu1[None, :]).ravel(), w

    def _large(self):
        G = self.G
        for k in np.flatnonzero(~self.small):
            yield int(G.starts[k]), int(G.sizes[k]), float(self.wg[k])

    def _dense_blocks(self):
        """Blocks of rows of each large group's upper triangle: D (metric differences), T (human ties), C
        (concordant), weight, with T = C = False on and below the diagonal."""
        G = self.G
        for g0, s, w in self._large():
            a = 0
            while a < s - 1:
                r = max(1, min(s - 1 - a, (_CHUNK // 2) // (s - a)))
                i0 = g0 + a
                mi, hi = G.m[i0:i0 + r, None], G.h[i0:i0 + r, None]
                mj, hj = G.m[i0 + 1:g0 + s][None, :], G.h[i0 + 1:g0 + s][None, :]
                D = mj - mi
                T = hj == hi
                C = (hj > hi) & (D > 0)
                if r > 1:
                    low = np.tri(r, r, -1, dtype=bool)
                    T[:, :r] &= ~low
                    C[:, :r] &= ~low
                yield D, T, C, w * G.c[i0:i0 + r, None] * G.c[i0 + 1:g0 + s][None, :]
                a += r

    def chunks(self):
        if self.sampled:
            for b in range(0, self.i.size, _CHUNK):
                sl = slice(b, b + _CHUNK)
                d, tie, con, _ = _classify(self.G, self.i[sl], self.j[sl])
                yield d, tie, con, self.wp[sl]
            return
        for i, j, w in self._small_chunks():
            d, tie, con, mult = _classify(self.G, i, j)
            yield d, tie, con, w * mult
        yield from self._dense_blocks()

    def bins(self, d: np.ndarray) -> np.ndarray:
        """floor(d * B / dmax), clipped: monotone in d, so bins are intervals of thresholds in order."""
        return np.clip((d * self.scale).astype(np.int64), 0, self.nbins - 1)

    def pass1(self) -> tuple[np.ndarray, np.ndarray, float]:
        """Per bin: the net gain and the positive gain; and base. Each pair becomes one code 3 bin + class (0
        discordant or metric-only tie, 1 human tie, 2 concordant) and one bincount counts them all."""
        B = self.nbins
        cnt = np.zeros((B, 3))

        def add(code, w):
            if np.isscalar(w):
                cnt[:] += np.bincount(code.ravel(), minlength=3 * B).reshape(B, 3) * w
            else:
                cnt[:] += np.bincount(code.ravel(), weights=np.broadcast_to(w, code.shape).ravel(),
                                      minlength=3 * B).reshape(B, 3)

        if self.sampled:
            for d, tie, con, w in self.chunks():
                add(self.bins(d) * 3 + tie + 2 * con, w)
        else:
            for i, j, w in self._small_chunks():
                d, tie, con, mult = _classify(self.G, i, j)
                add(self.bins(d) * 3 + tie + 2 * con, w * mult)
            self._dense_pass1(add)
        cnt[0, 1] += self.zero
        return cnt[:, 1] - cnt[:, 2], cnt[:, 1].copy(), float(cnt[:, 2].sum())

    def _dense_pass1(self, add) -> None:
        """The large groups' codes, in place on each block: the atoms are sorted by metric (and, among metric ties,
        by decreasing human score), so d >= 0 along a row and the human order alone gives the class."""
        G = self.G
        rank = np.unique(G.h, return_inverse=True)[1].astype(np.int64)  # exact integer human ranks
        for g0, s, w in self._large():
            unit = bool(np.all(G.c[g0:g0 + s] == 1))
            a = 0
            while a < s - 1:
                r = max(1, min(s - 1 - a, (_CHUNK // 2) // (s - a)))
                i0 = g0 + a
                code = G.m[i0 + 1:g0 + s][None, :] - G.m[i0:i0 + r, None]
                code *= self.scale
                code = code.astype(np.int64)
                np.minimum(code, self.nbins - 1, out=code)
                code *= 3
                cls = rank[i0 + 1:g0 + s][None, :] - (rank[i0:i0 + r, None] - 1)  # 0 / 1 / 2 and beyond
                np.clip(cls, 0, 2, out=cls)
                if r > 1:  # on and below the diagonal (j <= i): bin 0, class 0 (counted as nothing)
                    low = np.tri(r, r, -1, dtype=bool)
                    code[:, :r][low] = 0
                    cls[:, :r][low] = 0
                code += cls
                add(code, w if unit else w * G.c[i0:i0 + r, None] * G.c[i0 + 1:g0 + s][None, :])
                a += r

    def pass2(self, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(d, gain) of the pairs whose bin is kept (and the within-atom ties at d = 0). Large groups: per row, only
        the atoms whose metric lies in the window of the kept bins (the atoms are sorted by metric, so a window is a
        slice), then the exact bin test."""
        ds, gs = [], []
        if keep[0] and self.zero:
            ds.append(np.zeros(1))
            gs.append(np.array([self.zero]))

        def take(d, tie, con, w, ok=None):
            b = self.bins(d)
            k = keep[b] & (tie | con)
            if ok is not None:
                k &= ok(b)
            gain = (tie.astype(float) - con) * w
            ds.append(d[k])
            gs.append(np.broadcast_to(gain, d.shape)[k])

        if self.sampled:
            for d, tie, con, w in self.chunks():
                take(d, tie, con, w)
        else:
            for i, j, w in self._small_chunks():
                d, tie, con, mult = _classify(self.G, i, j)
                take(d, tie, con, w * mult)
            kb = np.flatnonzero(keep)
            if kb.size and (~self.small).any():
                cut = np.flatnonzero(np.diff(kb) > 1)
                runs = list(zip(kb[np.r_[0, cut + 1]], kb[np.r_[cut, kb.size - 1]]))
                if len(runs) > 32:
                    runs = [(kb[0], kb[-1])]
                for k0, k1 in runs:
                    self._window(int(k0), int(k1), take)
        if not ds:
            return np.array([]), np.array([])
        return np.concatenate(ds), np.concatenate(gs)

    def _window(self, k0: int, k1: int, take) -> None:
        G = self.G
        lo = k0 / self.scale if self.scale else 0.0
        hi = (k1 + 1) / self.scale if self.scale else 0.0
        for g0, s, w in self._large():
            mg = G.m[g0:g0 + s]
            margin = 1e-9 * hi + 8 * np.finfo(float).eps * float(np.abs(mg).max()) + 1e-300
            jlo = np.maximum(np.arange(1, s + 1), np.searchsorted(mg, mg + (lo - margin), "left"))
            jhi = np.searchsorted(mg, mg + (hi + margin), "right")
            cnt = np.maximum(jhi - jlo, 0)
            ends = np.cumsum(cnt)
            r0 = 0
            while r0 < s:  # rows in batches of at most ~_CHUNK pairs
                r1 = int(np.searchsorted(ends, (ends[r0 - 1] if r0 else 0) + _CHUNK, "right"))
                r1 = min(s, max(r1, r0 + 1))
                c = cnt[r0:r1]
                tot = int(c.sum())
                if tot:
                    rows = np.repeat(np.arange(r0, r1), c)
                    offs = np.arange(tot) - np.repeat(np.cumsum(c) - c, c)
                    d, tie, con, mult = _classify(G, g0 + rows, g0 + jlo[rows] + offs)
                    take(d, tie, con, w * mult, lambda b: (b >= k0) & (b <= k1))
                r0 = r1

    def at(self, eps: float) -> float:
        """The weighted number of right pairs at threshold eps (no search): human ties within eps, concordant pairs
        beyond it."""
        total = self.zero
        for d, tie, con, w in self.chunks():
            right = (tie & (d <= eps)).astype(float) + (con & (d > eps))
            total += float((right * w).sum())
        return total


def _best_threshold(sw: _Sweep) -> tuple[float, float]:
    """(best weighted total, smallest threshold attaining it) over the thresholds {0} and every distinct pair
    difference, without sorting all pairs: the first pass bins d into _BINS ordered bins and sums each bin's gains and
    positive gains; the value at each bin's end is attained, so the best of those bounds the max from below, and a bin
    can only hold a better threshold when the value before it plus its positive gains reaches that bound. The second
    pass collects just the pairs of those bins, which are sorted and swept exactly."""
    if sw.nbins == 1:  # few pairs: every pair into the exact sweep
        keep = np.ones(1, bool)
        d, gain = sw.pass2(keep)
        base = -float(gain[gain < 0].sum())
        before, tol = np.zeros(1), (0.0 if sw.exact else 1e-10 * max(1.0, base))
    else:
        S, P, base = sw.pass1()
        before = np.cumsum(S) - S
        lb = float((base + before + S).max())
        tol = 0.0 if sw.exact else 1e-10 * max(1.0, abs(lb))
        keep = base + before + P >= lb - tol
        d, gain = sw.pass2(keep)
    best, eps = -math.inf, math.nan
    if keep[0]:  # threshold 0 (no new ties) is a candidate of its own, even with no pair at d = 0
        best, eps = base + float(gain[d == 0].sum()), 0.0
    if d.size:
        o = np.argsort(d, kind="stable")
        d, gain = d[o], gain[o]
        b = sw.bins(d)
        cs = np.cumsum(gain)
        first = np.r_[True, b[1:] != b[:-1]]
        start_at = np.maximum.accumulate(np.where(first, np.arange(d.size), 0))
        vals = base + before[b] + cs - (cs[start_at] - gain[start_at])
        last = np.r_[d[1:] != d[:-1], True]
        cand_d, cand_v = d[last], vals[last]
        top = float(cand_v.max())
        if top > best + tol:
            best = top
            eps = float(cand_d[np.flatnonzero(cand_v >= top - tol)[0]])
    return best, eps


def tie_calibrated_accuracy(human, metric, groups=None, average_by: str = "none", variant: str = "acc23",
                            sample_rate: float = 1.0, seed: int = 0, higher_is_better: bool = True,
                            epsilon: float | None = None) -> TieCalibration:
    """Pairwise accuracy with tie calibration (Deutsch, Foster & Freitag 2023, "Ties Matter").

    Over pairs of outputs, with Con / Dis the pairs the metric orders as / against the humans, T_h the pairs tied only
    by the humans, T_m only by the metric and T_hm by both::

        acc23 = (Con + T_hm) / (Con + Dis + T_h + T_m + T_hm)
        tau23 = (Con + T_hm - Dis - T_h - T_m) / (Con + Dis + T_h + T_m + T_hm)   (= 2 acc23 - 1)

    A pair counts as a metric tie when its metric scores differ by at most ``epsilon``, so a pair the humans tie is
    right when the metric scores it within epsilon. Tie calibration picks the epsilon that maximises the measure over
    every candidate threshold -- 0 and each distinct absolute metric difference of a pair -- and reports it; among
    thresholds with the same value the smallest wins (mt-metrics-eval's ``tau_optimization`` keeps the first maximum
    of its ascending sweep). The search is exact and deterministic, and never sorts all P pairs: outputs with the
    same group, metric and human score are merged (a coarse metric has few distinct values), then one O(P) pass
    counts the pairs' gains into ordered bins of the metric difference and a second pass sorts and sweeps only the
    pairs of the bins that can hold the maximum (``_best_threshold``); at most P log P, vectorised numpy, memory
    bounded by chunks (6,000 outputs flattened, 18 M pairs: about 0.3 s on one thread, ``benchmarks/acc23_speed.py``).
    Values are exact rationals computed in integer arithmetic wherever the groups' weights allow (always for
    ``average_by='none'``; ``TieCalibration.exact``). ``epsilon`` given: no search, the measure at that threshold
    (mt-metrics-eval's ``KendallVariants(..., epsilon=...)``).

    Inputs as mt-metrics-eval's ``KendallWithTiesOpt``: ``human`` and ``metric`` either as a systems x items matrix
    (NaN = missing; ``average_by`` 'none' flattens it, 'sys' compares each system's outputs across items, 'item' the
    systems' outputs for one item) or as vectors with ``groups`` (one label per score: the item or the system, and
    ``average_by`` names which). Averaged variants compute the measure inside each group and take the unweighted mean
    over groups with at least one pair, with one epsilon for the whole (as mt-metrics-eval does). Scores with a NaN
    on either side are dropped. ``higher_is_better=False`` negates the metric (TER).

    ``sample_rate`` < 1 keeps each pair with that probability (seeded by ``seed``; drawn without enumerating the
    pairs, so it also serves inputs with too many pairs to list); the value and epsilon are then estimates.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}")
    if epsilon is not None and not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    G = _as_groups(human, metric, groups, average_by, higher_is_better, atoms=sample_rate >= 1.0)
    sw = _Sweep(G, sample_rate, seed)
    if sw.n_pairs == 0:
        return TieCalibration(math.nan, math.nan, variant, average_by, 0, 0, sample_rate, sw.exact)
    if epsilon is None:
        total, eps = _best_threshold(sw)
    else:
        total, eps = sw.at(float(epsilon)), float(epsilon)
    acc = total / sw.norm
    value = acc if variant == "acc23" else 2.0 * acc - 1.0
    return TieCalibration(float(value), float(eps), variant, average_by, sw.n_pairs, sw.n_groups, sample_rate,
                          sw.exact)


# ---- pair outcomes and the pair-swapping permutation test -----------------------------------------------------------
def _canonical_pairs(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, group) of every within-group pair, as indices of the scores in their given order (the same pairs
    whatever the metric), for :func:`pairwise_permutation_test`; groups of one size at a time."""
    order = np.argsort(codes, kind="stable")
    cs = codes[order]
    bounds = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1], True]) if cs.size else np.array([0])
    starts, sizes = bounds[:-1], np.diff(bounds)
    ii, jj, gg = [], [], []
    for s in np.unique(sizes[sizes >= 2]):
        k = np.flatnonzero(sizes == s)
        a, c = _pairs_of_size(s)
        ii.append(order[(starts[k, None] + a[None, :]).ravel()])
        jj.append(order[(starts[k, None] + c[None, :]).ravel()])
        gg.append(np.repeat(k, a.size))
    if not ii:
        e = np.array([], np.int64)
        return e, e, e
    return np.concatenate(ii), np.concatenate(jj), np.concatenate(gg)


def _flat_codes(human, m1, m2, groups, average_by):
    h = np.asarray(human, float)
    a = np.asarray(m1, float)
    b = np.asarray(m2, float)
    if not (h.shape == a.shape == b.shape):
        raise ValueError(f"human and the two metrics differ in shape: {h.shape}, {a.shape}, {b.shape}")
    if average_by not in AVERAGE_BY:
        raise ValueError(f"average_by must be one of {AVERAGE_BY}, got {average_by!r}")
    if h.ndim == 2:
        rows, cols = np.indices(h.shape)
        codes = {"none": np.zeros(h.size, np.int64), "sys": rows.ravel(), "item": cols.ravel()}[average_by]
        h, a, b = h.ravel(), a.ravel(), b.ravel()
    elif (groups is None) != (average_by == "none"):
        raise ValueError("give groups exactly when average_by is 'item' or 'sys'")
    elif groups is None:
        codes = np.zeros(h.size, np.int64)
    else:
        codes = _codes(groups)
    ok = ~(np.isnan(h) | np.isnan(a) | np.isnan(b))
    return h[ok], a[ok], b[ok], codes[ok]


def _signs(rng: np.random.Generator, k: int, n: int) -> np.ndarray:
    """k x n random signs (+1 / -1, each with probability 1/2), 64 per raw 64-bit draw of the generator, row after
    row: the same rows come out whatever the number of rows asked at once (so chunking never changes the draws)."""
    words = (n + 63) // 64
    raw = rng.bit_generator.random_raw(k * words).astype("<u8").view(np.uint8).reshape(k, words * 8)
    return np.unpackbits(raw, axis=1, count=n).astype(np.float64) * 2.0 - 1.0


@dataclass
class PairTestResult:
    """One-sided test of "metric 1 is better than metric 2" on a pairwise measure."""
    p: float                #: share of permutations with a difference >= the observed one
    delta: float            #: measure(metric 1) - measure(metric 2)
    permutations: int
    epsilon1: float = math.nan
    epsilon2: float = math.nan


def pairwise_permutation_test(human, m1, m2, groups=None, average_by: str = "none", n_permutations: int = 1000,
                              seed: int = 0, epsilon1: float | None = None, epsilon2: float | None = None,
                              higher_is_better: tuple[bool, bool] = (True, True)) -> PairTestResult:
    """Is metric 1's tie-calibrated ``acc23`` higher than metric 2's? mt-metrics-eval's
    ``PairwisePermutationSigDiff`` (``perm_test='pairs'``, the test of its WMT 2023 / WMT 2024 task sets for acc23):
    each metric keeps its own epsilon (calibrated once, unless given), and each permutation swaps the two metrics'
    verdicts (right / wrong) on every pair independently with probability 1/2. With per-pair weights w (1 / pairs of
    its group, over groups) the null difference is a sum of w (r1 - r2) with random signs, so only pairs the two
    metrics judge differently matter and a draw is one matrix product. Returns the share of permutations with a
    difference at least the observed one (mt-metrics-eval does not add the observed statistic either)."""
    h, a, b, codes = _flat_codes(human, m1, m2, groups, average_by)
    if not higher_is_better[0]:
        a = -a
    if not higher_is_better[1]:
        b = -b
    g_arg = None if average_by == "none" else codes
    if epsilon1 is None:
        epsilon1 = tie_calibrated_accuracy(h, a, g_arg, average_by).epsilon
    if epsilon2 is None:
        epsilon2 = tie_calibrated_accuracy(h, b, g_arg, average_by).epsilon
    i, j, g = _canonical_pairs(codes)
    if i.size == 0 or math.isnan(epsilon1) or math.isnan(epsilon2):
        return PairTestResult(math.nan, math.nan, 0, epsilon1, epsilon2)
    hd = np.sign(h[i] - h[j])

    def right(m, eps):
        md = m[i] - m[j]
        return np.where(np.abs(md) <= eps, hd == 0, (hd != 0) & (np.sign(md) == hd))

    counts = np.bincount(g)
    w = 1.0 / (counts[g] * np.count_nonzero(counts))
    x = w * (right(a, epsilon1).astype(float) - right(b, epsilon2).astype(float))
    x = x[x != 0]
    delta = float(x.sum())
    if x.size == 0:
        return PairTestResult(1.0, 0.0, n_permutations, epsilon1, epsilon2)
    rng = np.random.default_rng(seed)
    tol = 1e-12 * float(np.abs(x).sum())
    ge, done = 0, 0
    rows = max(1, _CHUNK // x.size)
    while done < n_permutations:
        k = min(rows, n_permutations - done)
        ge += int(np.count_nonzero(_signs(rng, k, x.size) @ x >= delta - tol))
        done += k
    return PairTestResult(ge / n_permutations, delta, n_permutations, epsilon1, epsilon2)


# ---- soft pairwise accuracy ---------------------------------------------------------------------------------------
class _Layout:
    """Where each output goes in a systems x items matrix (labels sorted); built once, reused for every metric."""

    def __init__(self, systems, items):
        s = np.asarray(systems, dtype=object)
        it = np.asarray(items, dtype=object)
        if s.shape != it.shape:
            raise ValueError(f"systems and items differ in length: {s.shape} vs {it.shape}")
        si, self.systems = _codes(s, labels=True)
        ii, self.items = _codes(it, labels=True)
        self.cell = si.astype(np.int64) * self.items.size + ii
        self.n = int(s.size)
        self.shape = (self.systems.size, self.items.size)

    def matrix(self, scores) -> np.ndarray:
        """Mean score per (system, item) cell; NaN where the cell has no score."""
        x = np.asarray(scores, float)
        if x.shape != (self.n,):
            raise ValueError(f"{x.size} scores for {self.n} outputs")
        ok = ~np.isnan(x)
        size = self.shape[0] * self.shape[1]
        tot = np.bincount(self.cell[ok], weights=x[ok], minlength=size)
        cnt = np.bincount(self.cell[ok], minlength=size)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan).reshape(self.shape)


def systems_by_items(scores, systems, items) -> tuple[np.ndarray, list, list]:
    """A systems x items matrix (NaN = not scored) from parallel vectors; several scores of one system for one item are
    averaged. Returns (matrix, system labels, item labels), labels sorted."""
    lay = _Layout(systems, items)
    return lay.matrix(scores), list(lay.systems), list(lay.items)


def _count_ge(cols: np.ndarray, obs: np.ndarray, tol: np.ndarray, n_permutations: int, seed: int,
              pairs: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """For each column c (or each pair (i, j) of columns when ``pairs``), how many of the seeded sign draws give a
    signed sum (difference of signed sums) >= obs - tol. The draws depend only on seed, n_permutations and the
    number of rows, and come in chunks of bounded size."""
    L = cols.shape[0]
    rng = np.random.default_rng(seed)
    ge = np.zeros(obs.size, np.int64)
    rows = max(1, _CHUNK // max(L, 1))
    done = 0
    while done < n_permutations:
        k = min(rows, n_permutations - done)
        part = _signs(rng, k, L) @ cols
        null = part[:, pairs[0]] - part[:, pairs[1]] if pairs is not None else part
        ge += np.count_nonzero(null >= obs - tol, axis=0)
        done += k
    return ge


def pairwise_pvalues(matrix, n_permutations: int = 1000, seed: int = 4, valid=None) -> np.ndarray:
    """Paired permutation test between every two systems (Thompson et al. 2024; mt-metrics-eval
    ``pce.compute_pairwise_p_values``): ``matrix`` is systems x items (NaN = missing). For systems i < j, over the items
    both have (and ``valid`` marks, when given), the statistic is the sum of the differences x_i - x_j; each
    permutation flips the sign of every item's difference with probability 1/2 (swapping the two systems' scores on
    that item), and ``p[i, j]`` is the share of permutations with a sum at least the observed one: the one-sided
    p-value for "system i is better" (as theirs; no +1 for the observed statistic). Equality is judged with a relative
    tolerance of 1e-10 (the all-plus draw reproduces the observed sum up to rounding). The same sign draws serve every
    pair and depend only on ``seed``, ``n_permutations`` and the number of items, so the human and the metric p-values
    of :func:`soft_pairwise_accuracy` come from the same permutations. Draws are made in chunks, so memory stays
    bounded at any number of items. Returns an S x S array, NaN except the upper triangle; a pair with no shared item
    is NaN."""
    x = np.asarray(matrix, float)
    S, L = x.shape
    ok = ~np.isnan(x) if valid is None else (np.asarray(valid, bool) & ~np.isnan(x))
    x0 = np.where(ok, x, 0.0)
    iu0, iu1 = np.triu_indices(S, 1)
    out = np.full((S, S), np.nan)
    if iu0.size == 0 or L == 0:
        return out
    if ok.all():  # one product per system; pair differences after
        obs = x0[iu0].sum(1) - x0[iu1].sum(1)
        scale = np.abs(x0).sum(1)
        ge = _count_ge(x0.T, obs, 1e-10 * (scale[iu0] + scale[iu1]), n_permutations, seed, (iu0, iu1))
        out[iu0, iu1] = ge / n_permutations
        return out
    # missing scores: each pair over its shared items, pairs in blocks (the same draws for every block)
    per = max(1, _CHUNK // max(L, 1))
    for b in range(0, iu0.size, per):
        i, j = iu0[b:b + per], iu1[b:b + per]
        shared = ok[i] & ok[j]
        diffs = np.where(shared, x0[i] - x0[j], 0.0).T      # L x pairs of the block
        ge = _count_ge(diffs, diffs.sum(0), 1e-10 * np.abs(diffs).sum(0), n_permutations, seed, None)
        out[i, j] = np.where(shared.any(1), ge / n_permutations, np.nan)
    return out


@dataclass
class SPAResult:
    """Result of :func:`soft_pairwise_accuracy`."""
    value: float            #: 1 - mean over system pairs of |p_human - p_metric|; NaN with fewer than 2 systems
    n_systems: int
    n_pairs: int            #: system pairs with at least one shared item
    n_items: int
    permutations: int
    p_human: np.ndarray | None = field(repr=False, default=None)
    p_metric: np.ndarray | None = field(repr=False, default=None)
    systems: list = field(repr=False, default_factory=list)


class SPAMeasure:
    """:func:`soft_pairwise_accuracy` as a measure ``(human, metric) -> value`` over fixed systems and items, for
    :func:`perm_both_measure`: the matrix layout is built once and the human p-values are computed once per pattern
    of missing scores (PERM-BOTH's draws keep that pattern)."""

    def __init__(self, systems, items, n_permutations: int = 1000, seed: int = 4):
        self.layout = _Layout(systems, items)
        self.n_permutations, self.seed = int(n_permutations), int(seed)
        self._human: dict = {}

    def result(self, human, metric) -> SPAResult:
        h = np.asarray(human, float)
        m = np.asarray(metric, float)
        if h.shape != m.shape:
            raise ValueError(f"human and metric differ in length: {h.shape} vs {m.shape}")
        ok = ~(np.isnan(h) | np.isnan(m))
        H = self.layout.matrix(np.where(ok, h, np.nan))
        M = self.layout.matrix(np.where(ok, m, np.nan))
        valid = ~np.isnan(H) & ~np.isnan(M)
        S = H.shape[0]
        labels = list(self.layout.systems)
        if S < 2:
            return SPAResult(math.nan, S, 0, int(H.shape[1]), self.n_permutations, systems=labels)
        key = (h.tobytes(), valid.tobytes())
        ph = self._human.get(key)
        if ph is None:
            ph = self._human[key] = pairwise_pvalues(H, self.n_permutations, self.seed, valid)
        pm = pairwise_pvalues(M, self.n_permutations, self.seed, valid)
        iu = np.triu_indices(S, 1)
        diff = np.abs(ph[iu] - pm[iu])
        diff = diff[~np.isnan(diff)]
        value = 1.0 - float(diff.mean()) if diff.size else math.nan
        return SPAResult(value, S, int(diff.size), int(H.shape[1]), self.n_permutations, ph, pm, labels)

    def __call__(self, human, metric) -> float:
        return self.result(human, metric).value


def soft_pairwise_accuracy(human, metric, systems, items, n_permutations: int = 1000, seed: int = 4,
                           higher_is_better: bool = True) -> SPAResult:
    """Soft pairwise accuracy (Thompson, Mathur, Deutsch & Khayrallah 2024; ``1 - PCE``, the pairwise confidence
    error, in mt-metrics-eval), the system-level measure of WMT 2024::

        SPA = 1 - mean over system pairs (i, j) of | p_ij(human) - p_ij(metric) |

    where p_ij is the one-sided p-value of a paired permutation test that system i is better than system j
    (:func:`pairwise_pvalues`), once on the human scores and once on the metric scores of the items both systems have,
    with the same permutations. A metric that orders two systems as the humans do, and is as sure about it, loses
    nothing on that pair; pairs the humans cannot tell apart (p near 0.5) reward a metric that cannot either. Flat
    inputs: one score per output with its system and item (an item is an input; several outputs of one system for one
    item are averaged). An output counts only when both its human and its metric score exist. The default seed 4 is
    mt-metrics-eval's; their random streams differ from numpy's here, so values agree within Monte Carlo error (about
    0.01 at 1,000 permutations), not digit for digit. ``higher_is_better=False`` negates the metric."""
    m = np.asarray(metric, float)
    return SPAMeasure(systems, items, n_permutations, seed).result(human, m if higher_is_better else -m)


# ---- system-level pairwise accuracy --------------------------------------------------------------------------------
def system_pairwise_accuracy(human, metric, systems=None, higher_is_better: bool = True) -> tuple[float, int]:
    """Pairwise accuracy at the system level (Kocmi et al. 2021; mt-metrics-eval ``stats.Agreement``, WMT's
    system-level "accuracy"): the share of system pairs whose metric difference has the sign of the human difference,
    over all pairs (a pair the humans tie counts as right only when the metric ties it too). ``systems`` given: the
    inputs are per-output scores, averaged per system over the outputs with both scores; otherwise one score per
    system. Returns (accuracy, number of pairs); NaN with fewer than 2 systems."""
    h = np.asarray(human, float)
    m = np.asarray(metric, float)
    if h.shape != m.shape:
        raise ValueError(f"human and metric differ in length: {h.shape} vs {m.shape}")
    ok = ~(np.isnan(h) | np.isnan(m))
    if systems is not None:
        s = np.asarray(systems, dtype=object).astype(str)[ok]
        inv = _codes(s)
        cnt = np.bincount(inv)
        h = np.bincount(inv, weights=h[ok]) / cnt
        m = np.bincount(inv, weights=m[ok]) / cnt
    else:
        h, m = h[ok], m[ok]
    if not higher_is_better:
        m = -m
    if h.size < 2:
        return math.nan, 0
    i, j = np.triu_indices(h.size, 1)
    agree = np.sign(h[i] - h[j]) == np.sign(m[i] - m[j])
    return float(agree.mean()), int(i.size)


# ---- PERM-BOTH with any measure, and rank clusters -------------------------------------------------------------------
@dataclass
class PermTestResult:
    """One-sided PERM-BOTH test of "metric 1 is better than metric 2" on a measure."""
    p: float                #: share of permutations (of those run) with a difference >= the observed one
    delta: float            #: measure(metric 1) - measure(metric 2)
    permutations: int       #: permutations run (fewer than asked when early stopping ended the test)


def perm_both_measure(human, m1, m2, measure: Callable[[np.ndarray, np.ndarray], float], n_permutations: int = 1000,
                      seed: int = 0, block_size: int | None = None, early_min: float = 0.02,
                      early_max: float = 0.5) -> PermTestResult:
    """PERM-BOTH (Deutsch, Dror & Roth 2021; mt-metrics-eval ``PermutationSigDiff``) with any measure as the
    statistic -- SPA, acc23 re-calibrated on every draw, a correlation. :func:`qe.evaluation.stats.perm_both` is the
    same test with a correlation (vectorised over draws); this one calls ``measure(human, metric) -> float`` once per
    metric and draw, for measures that are not vectorised.

    Both metrics are z-normalised over the outputs where all three scores exist; each permutation swaps the two
    metrics' scores on every output independently with probability 1/2 and recomputes delta = measure(h, m1') -
    measure(h, m2'). ``block_size``: WMT's early stopping (mt-metrics-eval ``PermutationSigDiffParams``; its task
    defaults are 100, 0.02, 0.5): after each block of draws the test stops when the running p-value is below
    ``early_min`` or above ``early_max``. ``None``: all ``n_permutations`` draws."""
    h = np.asarray(human, float)
    a = np.asarray(m1, float)
    b = np.asarray(m2, float)
    ok = ~(np.isnan(h) | np.isnan(a) | np.isnan(b))
    if ok.sum() < 2 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
        return PermTestResult(math.nan, math.nan, 0)
    za = np.full(a.shape, np.nan)
    zb = np.full(b.shape, np.nan)
    za[ok] = scipy.stats.zscore(a[ok])
    zb[ok] = scipy.stats.zscore(b[ok])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        delta = float(measure(h, za)) - float(measure(h, zb))
        if math.isnan(delta):
            return PermTestResult(math.nan, math.nan, 0)
        rng = np.random.default_rng(seed)
        ge, done = 0, 0
        while done < n_permutations:
            swap = rng.random(h.shape) < 0.5
            x = np.where(swap, zb, za)
            y = np.where(swap, za, zb)
            ge += int(float(measure(h, x)) - float(measure(h, y)) >= delta - 1e-12)
            done += 1
            if block_size and done % block_size == 0 and not early_min <= ge / done <= early_max:
                break
    return PermTestResult(ge / done, delta, done)


def rank_clusters(measures: Mapping[str, float], significance: Callable[[str, str], float],
                  alpha: float = 0.05) -> list[dict]:
    """Metrics ranked by a measure (higher is better) and grouped into significance clusters as the WMT 2023 and 2024
    metrics tables are (mt-metrics-eval ``data.AssignRanks``).

    Metrics are sorted by decreasing measure (name second, for ties). Greedy rule: walking down the list, metric i
    starts a new cluster (rank + 1) when it is significantly worse than *any* metric of the current cluster, i.e.
    ``significance(k, i) <= alpha`` for some k from the cluster's first metric to i - 1; otherwise it joins the
    current cluster. ``significance(a, b)`` is the one-sided p-value for "a is better than b" (e.g.
    :func:`perm_both_measure` or :func:`pairwise_permutation_test` ``.p``); it is only called for the pairs the rule
    needs. Metrics whose measure is NaN come last, unranked (rank None).

    Returns one dict per metric in ranked order: metric, value, position (1-based), rank (the cluster), and p_min
    (the smallest p-value against the metrics of its cluster above it that decided the rank; NaN for the first)."""
    named = sorted(((float(v), str(k)) for k, v in measures.items() if not math.isnan(float(v))),
                   key=lambda t: (-t[0], t[1]))
    out: list[dict] = []
    rank, start = 1, 0
    for i, (v, name) in enumerate(named):
        ps = [float(significance(named[k][1], name)) for k in range(start, i)]
        p_min = min((p for p in ps if not math.isnan(p)), default=math.nan)
        if ps and p_min <= alpha:
            rank += 1
            start = i
        out.append({"metric": name, "value": v, "position": i + 1, "rank": rank, "p_min": p_min})
    for k, v in measures.items():
        if math.isnan(float(v)):
            out.append({"metric": str(k), "value": math.nan, "position": None, "rank": None, "p_min": math.nan})
    return out


# ---- qe evaluate: the WMT view of a rated set -------------------------------------------------------------------
#: cluster tests of SPA (PERM-BOTH, each draw re-running SPA's own permutation tests) stop early as WMT's do:
#: mt-metrics-eval Task defaults (block_size 100, early_min 0.02, early_max 0.5)
EARLY_STOP = (100, 0.02, 0.5)
#: measures of the WMT table and rank_clusters.csv (``measure`` column)
MEASURES = ("spa", "acc23")


def wmt_applicable(d) -> str | None:
    """Why the WMT measures are not computed on an :class:`qe.evaluation.evaldata.EvalData`, or None: they need
    several systems whose outputs share inputs (an item field, two systems or more, an item rated for two systems)."""
    if d.item is None:
        return "no item field (`dataset.item_key`), so no outputs of different systems for the same input"
    if len(d.systems) < 2:
        return "1 system, so no system pair"
    if d.one_per_system:
        return "one rating per system (a per-system table), so no outputs to compare within an input"
    import pandas as pd

    pairs = pd.DataFrame({"item": d.item.astype(str), "system": d.system.astype(str)}).drop_duplicates()
    if int(pairs.groupby("item").size().max()) < 2:
        return "no input has outputs of two systems"
    return None


def wmt_measures(d, st, notes: list[str] | None = None, progress: bool = False):
    """The WMT metrics-task view of a rated set with several systems over the same inputs, for ``qe evaluate``.

    Per rating aspect and metric, over all data (several datasets: a unit is a dataset/system pair, an item is an
    input of one dataset): ``acc23`` with tie calibration at the instance level for each protocol of
    ``stats.protocols`` (``none``, ``item``, ``sys``; mt-metrics-eval's average_by), SPA and the system-level pairwise
    accuracy; then rank clusters of the metrics by SPA and by acc23 (``item`` when the records have items, as WMT 2023
    / 2024 group it, else ``none``): SPA clusters by PERM-BOTH on the scores with SPA as the statistic (WMT 2024,
    with WMT's early stopping), acc23 clusters by the pair-swapping test (:func:`pairwise_permutation_test`, WMT's
    ``perm_test='pairs'``), ``stats.permutation.n`` draws, ``stats.alpha``, WMT's greedy rule (:func:`rank_clusters`).
    Above ``stats.wmt.max_pairs`` pairs an acc23 is computed on a seeded random sample of ``stats.wmt.sample_pairs``
    pairs (said in ``notes``).

    Returns (rows for ``Results.correlations``, the rank-cluster table)."""
    import pandas as pd

    from qe.evaluation.evaldata import _corr_row, _seed, system_units

    notes = notes if notes is not None else []
    rows: list[dict] = []
    clusters: list[dict] = []
    pooled = len(d.datasets) > 1
    units = system_units(d, np.ones(d.n, bool), pooled).astype(str)
    items = d.item.astype(str)
    codes = {"item": _codes(items), "sys": _codes(units)}  # to count the pairs before choosing to sample
    spa_subset = "all · all systems"
    protos = [p for p in st.protocols if p in AVERAGE_BY]
    cluster_proto = "item" if "item" in protos else ("none" if "none" in protos else protos[0] if protos else "item")
    sampled: list[str] = []
    for a in d.ratings:
        h = d.ratings[a]
        spa_measure = SPAMeasure(units, items, st.spa_permutations, seed=4)
        res_spa: dict[str, float] = {}
        res_acc: dict[str, TieCalibration] = {}
        for m in d.metrics:
            x = d.oriented(m)
            for proto in protos:
                groups = None if proto == "none" else (items if proto == "item" else units)
                ok = ~(np.isnan(h) | np.isnan(x))
                per = np.bincount(codes[proto][ok]) if proto != "none" else np.array([int(ok.sum())])
                total = int((per * (per - 1) // 2).sum())
                rate = 1.0 if total <= st.wmt_max_pairs else min(1.0, st.wmt_sample_pairs / total)
                if rate < 1.0:
                    sampled.append(f"{a}/{m}/{proto}: {rate:.3g} of {total:,} pairs")
                r = tie_calibrated_accuracy(h, x, groups, proto, sample_rate=rate,
                                            seed=_seed(st.seed, "acc23", a, m, proto))
                n_units = int(np.count_nonzero(~(np.isnan(h) | np.isnan(x)))) if proto == "none" else r.n_groups
                rows.append(_corr_row(level="instance", protocol=proto, subset="all",
                                      units={"none": "outputs", "item": "items", "sys": "systems"}[proto], rating=a,
                                      metric=m, method="acc23", r=r.value, n=n_units, epsilon=r.epsilon,
                                      p_kind="", why="" if r.n_pairs else "no pair of outputs within a group"))
                if proto == cluster_proto:
                    res_acc[m] = r
            sp = spa_measure.result(h, x)
            res_spa[m] = sp.value
            rows.append(_corr_row(level="system", protocol="paired permutation", subset=spa_subset, units="systems",
                                  rating=a, metric=m, method="spa", r=sp.value, n=sp.n_systems,
                                  why="" if sp.n_pairs else "no two systems share an input"))
            acc, _ = system_pairwise_accuracy(h, x, units)
            rows.append(_corr_row(level="system", protocol="system means", subset=spa_subset, units="systems",
                                  rating=a, metric=m, method="sys_pairwise_acc", r=acc, n=sp.n_systems))
        if not st.permutation_n:
            continue

        def sig_spa(x1, x2, a=a, spa_measure=spa_measure):
            return perm_both_measure(h, d.oriented(x1), d.oriented(x2), spa_measure, st.permutation_n,
                                     _seed(st.seed, "spa-perm", a, x1, x2), *EARLY_STOP).p

        def sig_acc(x1, x2, a=a, res_acc=res_acc):
            g = None if cluster_proto == "none" else (items if cluster_proto == "item" else units)
            return pairwise_permutation_test(h, d.oriented(x1), d.oriented(x2), g, cluster_proto,
                                             st.permutation_n, _seed(st.seed, "acc23-perm", a, x1, x2),
                                             res_acc[x1].epsilon, res_acc[x2].epsilon).p

        for measure, vals, sig, test, extra in (
                ("spa", res_spa, sig_spa, "PERM-BOTH (scores swapped per output; early stopping 100 / 0.02 / 0.5)",
                 {}),
                ("acc23", {k: v.value for k, v in res_acc.items()}, sig_acc, "pairs swapped (mt-metrics-eval "
                 "perm_test='pairs')", {k: v.epsilon for k, v in res_acc.items()})):
            for row in rank_clusters(vals, sig, st.alpha):
                clusters.append({"rating": a, "measure": measure,
                                 "protocol": cluster_proto if measure == "acc23" else "paired permutation",
                                 "metric": row["metric"], "value": row["value"],
                                 "epsilon": extra.get(row["metric"], math.nan), "position": row["position"],
                                 "rank": row["rank"], "p_min": row["p_min"], "test": test,
                                 "permutations": st.permutation_n, "alpha": st.alpha})
    if sampled:
        notes.append(f"acc23 on a seeded random sample of stats.wmt.sample_pairs = {st.wmt_sample_pairs:,} pairs where "
                     f"there are more than stats.wmt.max_pairs = {st.wmt_max_pairs:,}: " + "; ".join(sampled) + ".")
    return rows, pd.DataFrame(clusters)


__all__ = ["AVERAGE_BY", "EARLY_STOP", "MEASURES", "VARIANTS", "PairTestResult", "PermTestResult", "SPAResult",
           "TieCalibration", "SPAMeasure", "pairwise_permutation_test", "pairwise_pvalues", "perm_both_measure",
           "rank_clusters",
           "soft_pairwise_accuracy", "system_pairwise_accuracy", "systems_by_items", "tie_calibrated_accuracy",
           "wmt_applicable", "wmt_measures"]
