"""Statistics for validating metrics against human judgments.

Everything that a field library implements is taken from it: correlations and their p-values
(``scipy.stats.pearsonr / spearmanr / kendalltau``), the bootstrap (``scipy.stats.bootstrap``'s resamples and
percentile interval, drawn here in chunks: :func:`bootstrap`), the Wilcoxon
signed-rank test (``scipy.stats.wilcoxon``), Tukey HSD (``statsmodels``), multiple-comparison corrections
(``statsmodels.stats.multitest.multipletests``), MAE / RMSE (``sklearn.metrics``), the least-squares fit
(``scipy.stats.linregress``), partial correlations (``pingouin.partial_corr``) and Krippendorff's alpha (the
``krippendorff`` package). Hand-written here, because no maintained library offers them in this form:

* :func:`williams_test` -- Williams (1959) t-test for two dependent correlations sharing one variable, in the
  form of Steiger (1980, eq. 14) that Graham & Baldwin (2014) recommend for comparing MT metrics;
* :func:`fisher_z_test` -- two independent correlations via Fisher's z (a two-line formula);
* :func:`perm_both` -- the PERM-BOTH permutation test of Deutsch et al. (2021) as in mt-metrics-eval;
* :func:`pairwise_accuracy` -- share of pairs a metric orders as humans do (Kocmi et al. 2021);
* :func:`averaged_correlation` -- mt-metrics-eval's ``average_by`` protocols (correlation per group, then the
  mean over groups);
* :func:`spearman_brown`, :func:`split_half_reliability`, :func:`annotator_agreement` -- agreement among the
  annotators of one criterion when they are *not* fully crossed (each item rated by a different 1-3 of many
  workers): one annotator vs the mean of the others and random split halves of each item's annotators, with the
  Spearman (1910) - Brown (1910) step-up (see each docstring for the formula and why it is hand-written).

Scale. Memory grows with the data, not with resamples x outputs: the bootstrap and permutation draws are made
:data:`MAX_DRAW` values at a time, with the random stream of one big draw (the results do not depend on the chunk
size); from :data:`SUMS_MIN_N` outputs on, Pearson's r of a resample or permutation comes from sums (matrix-vector
products) rather than from a gathered copy of the data; per-item correlations of many small groups are vectorised
(:func:`small_group_correlations`).

Conventions. ``tails=2`` gives two-sided p-values; ``tails=1`` gives one-sided p-values in the *expected*
direction (``expected_sign=+1``: the metric should correlate positively; ``-1`` for lower-is-better metrics
such as TER). Pairs with a NaN on either side are dropped before anything is computed (callers report the
counts). A correlation that is undefined (fewer than 3 points, constant input) is NaN with p NaN.
"""
from __future__ import annotations

import gc
import math
import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import scipy.stats

METHODS = ("pearson", "spearman", "kendall")
PROTOCOLS = ("none", "sys", "item")
CORRECTIONS = ("none", "bonferroni", "holm")
#: below this many points Spearman's p-value comes from the permutation distribution (scipy.stats.permutation_test)
SMALL_N = 10
#: random pairings of that permutation test (scipy enumerates all n! pairings when n! <= this: exact up to n = 7)
PERMUTATIONS = 9999


def spearman_p_kind(n: int) -> str:
    """How :func:`correlation` gets Spearman's p-value for ``n`` complete pairs (the report's label)."""
    if n >= SMALL_N:
        return "analytic"
    return "permutation (exact)" if math.factorial(n) <= PERMUTATIONS else f"permutation ({PERMUTATIONS:,} random pairings)"


def kendall_p_kind(x, y, tau: float = 0.0) -> str:
    """scipy's ``kendalltau(method="auto")`` uses the exact null distribution without ties and with at most 33
    points or at most one discordant (or concordant) pair, the normal approximation otherwise."""
    x, y = np.asarray(x), np.asarray(y)
    n = x.size
    if np.unique(x).size < n or np.unique(y).size < n:
        return "analytic"
    pairs = n * (n - 1) / 2
    few = min((1 - tau) / 2 * pairs, (1 + tau) / 2 * pairs) <= 1 + 1e-9
    return "exact" if n <= 33 or few else "analytic"


@dataclass
class CorrResult:
    r: float
    p: float
    n: int
    #: where ``p`` comes from: "analytic" (scipy's t / normal approximation), "exact" (Kendall's exact null
    #: distribution, scipy's choice for small samples without ties), "permutation (exact)" / "permutation (9,999
    #: random pairings)" (Spearman with fewer than ``SMALL_N`` points); "" when undefined
    p_kind: str = "analytic"


def _alternative(tails: int, expected_sign: int = 1) -> str:
    if tails == 2:
        return "two-sided"
    if tails == 1:
        return "greater" if expected_sign >= 0 else "less"
    raise ValueError(f"tails must be 1 or 2, got {tails!r}")


def complete_pairs(x, y) -> tuple[np.ndarray, np.ndarray]:
    """``x, y`` as float arrays with every pair holding a NaN on either side removed."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"x and y differ in length: {x.shape} vs {y.shape}")
    ok = ~(np.isnan(x) | np.isnan(y))
    return x[ok], y[ok]


def _is_constant(a: np.ndarray) -> bool:
    return a.size == 0 or bool(np.all(a == a[0]))


def correlation(x, y, method: str = "pearson", tails: int = 2, expected_sign: int = 1) -> CorrResult:
    """Correlation of ``x`` with ``y`` and its p-value (scipy). Kendall is tau-b (ties corrected; scipy uses the
    exact null distribution for small samples without ties). Spearman with fewer than ``SMALL_N`` points gets a
    permutation p-value. Pearson's p assumes bivariate normality (the t test)."""
    x, y = complete_pairs(x, y)
    n = int(x.size)
    if n < 3 or _is_constant(x) or _is_constant(y):
        return CorrResult(math.nan, math.nan, n, "")
    alt = _alternative(tails, expected_sign)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "pearson":
            res = scipy.stats.pearsonr(x, y, alternative=alt)
        elif method == "spearman":
            res = scipy.stats.spearmanr(x, y, alternative=alt)
            if n < SMALL_N:
                # scipy's t approximation is far off for a handful of points (n = 3, rho = 1 gives p = 0): use the
                # permutation distribution instead (exact up to 7 points, 9,999 random pairings above)
                ry = scipy.stats.rankdata(y)

                def rho(a, axis=-1):  # permuting pairs permutes ranks: Pearson on ranks, vectorised
                    return rowwise_pearson(scipy.stats.rankdata(a, axis=-1), np.broadcast_to(ry, np.shape(a)))

                perm = scipy.stats.permutation_test(
                    (x,), rho, permutation_type="pairings", vectorized=True,
                    alternative=alt, n_resamples=PERMUTATIONS, random_state=np.random.default_rng(0))
                return CorrResult(float(res.statistic), float(perm.pvalue), n, spearman_p_kind(n))
        elif method == "kendall":
            res = scipy.stats.kendalltau(x, y, variant="b", alternative=alt)
            return CorrResult(float(res.statistic), float(res.pvalue), n,
                              kendall_p_kind(x, y, float(res.statistic)))
        else:
            raise ValueError(f"unknown correlation method {method!r}; choose one of {METHODS}")
    return CorrResult(float(res.statistic), float(res.pvalue), n)


def corr_value(x, y, method: str = "pearson") -> float:
    """Just the coefficient (NaN when undefined); no NaN filtering."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.size < 2 or _is_constant(x) or _is_constant(y):
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "pearson":
            return float(np.corrcoef(x, y)[0, 1])
        if method == "spearman":
            return float(scipy.stats.spearmanr(x, y).statistic)
        if method == "kendall":
            return float(scipy.stats.kendalltau(x, y, variant="b").statistic)
    raise ValueError(f"unknown correlation method {method!r}; choose one of {METHODS}")


# ---- vectorised coefficients over the rows of (B, n) matrices (bootstrap / permutation) --------------------
def rowwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x = x - x.mean(axis=-1, keepdims=True)
    y = y - y.mean(axis=-1, keepdims=True)
    num = (x * y).sum(axis=-1)
    den = np.sqrt((x * x).sum(axis=-1) * (y * y).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = num / den
    # constant rows give 0/0 = NaN; rounding can push |r| a hair above 1
    return np.clip(r, -1.0, 1.0)


def rowwise_corr(x: np.ndarray, y: np.ndarray, method: str) -> np.ndarray:
    x = np.atleast_2d(x)
    y = np.atleast_2d(y)
    if method == "pearson":
        return rowwise_pearson(x, y)
    if method == "spearman":
        return rowwise_pearson(scipy.stats.rankdata(x, axis=-1), scipy.stats.rankdata(y, axis=-1))
    if method == "kendall":
        if x.shape[-1] <= 200:
            return rowwise_kendall_small(x, y)
        return np.array([corr_value(a, b, "kendall") for a, b in zip(x, y)])
    raise ValueError(f"unknown correlation method {method!r}; choose one of {METHODS}")


def rowwise_kendall_small(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall tau-b per row from all pairwise signs, (C - D) / sqrt((n0 - n1)(n0 - n2)): O(n^2) memory per row,
    so only for short rows (system level, bootstrap over systems). Equals scipy's tau-b (tested)."""
    iu = np.triu_indices(x.shape[-1], 1)
    dx = np.sign(x[:, :, None] - x[:, None, :])[:, iu[0], iu[1]]
    dy = np.sign(y[:, :, None] - y[:, None, :])[:, iu[0], iu[1]]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (dx * dy).sum(-1) / np.sqrt((dx * dx).sum(-1) * (dy * dy).sum(-1))


# ---- averaging protocols (mt-metrics-eval's average_by) ----------------------------------------------------
@dataclass
class GroupedCorr:
    r: float
    n_groups: int
    n_groups_skipped: int
    per_group: dict


def group_correlations(x, y, groups, method: str = "pearson", min_group_size: int = 3) -> dict:
    """Correlation inside each group (NaN pairs dropped first); groups smaller than ``min_group_size`` or with a
    constant side give NaN. Keys in the order of the groups' string labels (the order the bootstrap over groups
    resamples).

    Groups of at most :data:`SMALL_GROUP` outputs (the ``item`` protocol: the outputs for one input) are computed
    all at once from per-group sums (:func:`small_group_correlations`); a million outputs in 100,000 items would
    otherwise take 100,000 scipy calls per coefficient. Larger groups (the ``sys`` protocol) get one call each."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    groups = np.asarray(groups, dtype=object)
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y, groups = x[ok], y[ok], groups[ok]
    out = {}
    if x.size == 0:
        return out
    codes = group_codes(groups)
    order = np.argsort(codes, kind="stable")
    g_sorted = codes[order]
    bounds = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1], True])
    starts, ends = bounds[:-1], bounds[1:]
    sizes = ends - starts
    enough = sizes >= max(2, min_group_size)
    small = enough & (sizes <= SMALL_GROUP)
    vals = np.full(starts.size, math.nan)
    if small.any():
        vals[small] = small_group_correlations(x, y, order, starts[small], ends[small], method)
    for k in np.flatnonzero(enough & ~small):
        idx = order[starts[k]:ends[k]]
        vals[k] = corr_value(x[idx], y[idx], method)
    for k, b in enumerate(starts):
        out[groups[order[b]]] = float(vals[k])
    return out


def group_codes(groups) -> np.ndarray:
    """An integer per group label, numbered in the sorted order of the labels as strings: the order of
    ``argsort(groups.astype(str))``, without that fixed-width unicode copy (4 bytes per character and output: 400 MB
    for a million 100-character item keys) and its slow string sort (``pandas.factorize`` hashes instead)."""
    import pandas as pd

    g = np.asarray(groups, dtype=object)
    if not all(isinstance(v, str) for v in g):
        g = np.array([str(v) for v in g], dtype=object)
    codes, _ = pd.factorize(g, sort=True)
    return codes


#: groups of at most this many outputs get their correlations from vectorised per-group sums
#: (:func:`small_group_correlations`: Kendall's tau-b looks at every pair in a group, so the cost grows with size^2)
SMALL_GROUP = 64


def _group_ranks(v: np.ndarray, gid: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties share the mean rank: ``scipy.stats.rankdata``) of ``v`` within each group
    ``gid`` (consecutive integer ids)."""
    order = np.lexsort((v, gid))
    vs, gs = v[order], gid[order]
    new_group = np.r_[True, gs[1:] != gs[:-1]]
    run_start = np.r_[True, (vs[1:] != vs[:-1]) | new_group[1:]]
    pos = np.arange(v.size)
    group_first = np.maximum.accumulate(np.where(new_group, pos, 0))
    run_id = np.cumsum(run_start) - 1
    first = np.flatnonzero(run_start)
    last = np.r_[first[1:], v.size] - 1
    # rank of a run = mean of its 1-based positions inside the group
    run_rank = (first + last) / 2.0 - group_first[first] + 1.0
    ranks = np.empty(v.size)
    ranks[order] = run_rank[run_id]
    return ranks


def small_group_correlations(x: np.ndarray, y: np.ndarray, order: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                             method: str) -> np.ndarray:
    """The correlation of ``x`` and ``y`` inside each group ``order[starts[k]:ends[k]]``, for many small groups at
    once: Pearson from the per-group centred sums, Spearman as Pearson on average ranks within each group, Kendall's
    tau-b as (C - D) / sqrt((n0 - n1)(n0 - n2)) from the signs of every pair inside a group (as
    :func:`rowwise_kendall_small`). NaN where a side is constant, as :func:`corr_value`. Equal to the one-group-at-a-
    time scipy / numpy values up to rounding (tested)."""
    sizes = ends - starts
    first = np.r_[0, np.cumsum(sizes)[:-1]]  # where each group starts in the concatenation
    idx = order[np.repeat(starts - first, sizes) + np.arange(int(sizes.sum()))]
    gid = np.repeat(np.arange(starts.size), sizes)
    xs, ys = x[idx], y[idx]
    const = (np.minimum.reduceat(xs, first) == np.maximum.reduceat(xs, first)) | \
        (np.minimum.reduceat(ys, first) == np.maximum.reduceat(ys, first))
    if method == "kendall":
        ii, jj = [], []
        for sz in np.unique(sizes):  # every pair (i < j) inside each group of that size
            a, b = np.triu_indices(int(sz), 1)
            base = first[sizes == sz][:, None]
            ii.append((base + a).ravel())
            jj.append((base + b).ravel())
        i, j = np.concatenate(ii), np.concatenate(jj)
        dx, dy = np.sign(xs[i] - xs[j]), np.sign(ys[i] - ys[j])
        g = gid[i]
        num = np.bincount(g, dx * dy, starts.size)
        den = np.sqrt(np.bincount(g, dx * dx, starts.size) * np.bincount(g, dy * dy, starts.size))
    else:
        if method == "spearman":
            xs, ys = _group_ranks(xs, gid), _group_ranks(ys, gid)
        elif method != "pearson":
            raise ValueError(f"unknown correlation method {method!r}; choose one of {METHODS}")
        cx = xs - (np.bincount(gid, xs, starts.size) / sizes)[gid]
        cy = ys - (np.bincount(gid, ys, starts.size) / sizes)[gid]
        num = np.bincount(gid, cx * cy, starts.size)
        den = np.sqrt(np.bincount(gid, cx * cx, starts.size) * np.bincount(gid, cy * cy, starts.size))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip(num / den, -1.0, 1.0)
    r[const] = math.nan
    return r


def averaged_correlation(x, y, groups, method: str = "pearson", min_group_size: int = 3) -> GroupedCorr:
    """Correlation per group, then the unweighted mean over groups where it is defined (mt-metrics-eval
    ``average_by='sys'|'item'`` with NaN correlations removed before averaging)."""
    per = group_correlations(x, y, groups, method, min_group_size)
    vals = np.array([v for v in per.values() if not math.isnan(v)])
    r = float(vals.mean()) if vals.size else math.nan
    return GroupedCorr(r, int(vals.size), len(per) - int(vals.size), per)


# ---- error measures ----------------------------------------------------------------------------------------
def mse_linear_fit(metric, human) -> float:
    """Kann, Rothe & Filippova (2018) eq. 6: MSE = min_f 1/|X| sum (f(x_i) - y_i)^2 over linear f, i.e. the mean
    squared residual of the least-squares line predicting the human rating ``y`` from the metric ``x``.
    A constant metric gets the best constant, the population variance of ``y``."""
    x, y = complete_pairs(metric, human)
    if x.size == 0:
        return math.nan
    if _is_constant(x):
        return float(np.var(y))
    fit = scipy.stats.linregress(x, y)
    resid = y - (fit.intercept + fit.slope * x)
    return float(np.mean(resid**2))


def normalise_to_range(metric, lo: float, hi: float, higher_is_better: bool = True,
                       round_to: float | None = None) -> np.ndarray:
    """Dušek, Novikova & Rieser (2017): map metric scores linearly onto the rating scale [lo, hi] (the metric's
    observed minimum -> lo, maximum -> hi; reversed for lower-is-better metrics), then optionally round to
    ``round_to`` steps counted from ``lo`` (0.5 in the paper). NaN stays NaN; a constant metric maps to the
    middle of the scale."""
    m = np.asarray(metric, dtype=float)
    if not higher_is_better:
        m = -m
    finite = m[~np.isnan(m)]
    if finite.size == 0:
        return m.copy()
    mn, mx = float(finite.min()), float(finite.max())
    if mx == mn:
        out = np.where(np.isnan(m), np.nan, (lo + hi) / 2.0)
    else:
        out = lo + (m - mn) / (mx - mn) * (hi - lo)
    if round_to:
        out = lo + np.round((out - lo) / round_to) * round_to
        out = np.clip(out, lo, hi)
    return out


def mae_rmse(pred, human) -> tuple[float, float]:
    """MAE and RMSE of predictions against human ratings (sklearn), NaN pairs dropped."""
    from sklearn.metrics import mean_absolute_error, mean_squared_error

    p, h = complete_pairs(pred, human)
    if p.size == 0:
        return math.nan, math.nan
    return float(mean_absolute_error(h, p)), float(math.sqrt(mean_squared_error(h, p)))


# ---- comparing correlations --------------------------------------------------------------------------------
@dataclass
class TestResult:
    statistic: float
    p: float
    df: float | None = None


def williams_test(r12: float, r13: float, r23: float, n: int, tails: int = 1) -> TestResult:
    """Williams test: is corr(1,2) larger than corr(1,3), when 2 and 3 are measured on the same n items?

    Williams (1959); Steiger (1980, eq. 14); used for MT metrics by Graham & Baldwin (2014, eq. 1)::

        t = (r12 - r13) sqrt((n - 1)(1 + r23)) / sqrt(2 (n - 1)/(n - 3) |R| + ((r12 + r13)/2)^2 (1 - r23)^3)
        |R| = 1 - r12^2 - r13^2 - r23^2 + 2 r12 r13 r23,    t ~ Student t with n - 3 degrees of freedom.

    Here 1 is the human score and 2, 3 the two metrics. ``tails=1``: p-value for H1 r12 > r13 (small when metric 2
    correlates better; near 1 when it correlates worse); ``tails=2``: two-sided.
    """
    if n <= 3:
        return TestResult(math.nan, math.nan, None)
    det = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    rbar = (r12 + r13) / 2
    den = 2 * (n - 1) / (n - 3) * det + rbar**2 * (1 - r23) ** 3
    if not den > 0:
        return TestResult(math.nan, math.nan, n - 3)
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(den)
    df = n - 3
    if tails == 1:
        p = float(scipy.stats.t.sf(t, df))
    elif tails == 2:
        p = float(2 * scipy.stats.t.sf(abs(t), df))
    else:
        raise ValueError(f"tails must be 1 or 2, got {tails!r}")
    return TestResult(float(t), p, df)


def williams_compare(human, m1, m2, tails: int = 1) -> tuple[TestResult, float, float]:
    """Williams test on Pearson correlations computed from data (items with a NaN anywhere dropped).
    Returns (test, r(human, m1), r(human, m2)); ``tails=1`` tests r(human, m1) > r(human, m2)."""
    h = np.asarray(human, float)
    a = np.asarray(m1, float)
    b = np.asarray(m2, float)
    ok = ~(np.isnan(h) | np.isnan(a) | np.isnan(b))
    h, a, b = h[ok], a[ok], b[ok]
    r12, r13, r23 = corr_value(h, a), corr_value(h, b), corr_value(a, b)
    if any(math.isnan(v) for v in (r12, r13, r23)):
        return TestResult(math.nan, math.nan, None), r12, r13
    return williams_test(r12, r13, r23, int(h.size), tails), r12, r13


def fisher_z_test(r1: float, n1: int, r2: float, n2: int, tails: int = 2) -> TestResult:
    """Difference of two independent Pearson correlations (e.g. one metric on two datasets):
    z = (atanh r1 - atanh r2) / sqrt(1/(n1 - 3) + 1/(n2 - 3)), standard normal under H0.
    ``tails=1``: H1 r1 > r2."""
    if n1 <= 3 or n2 <= 3 or any(math.isnan(v) for v in (r1, r2)):
        return TestResult(math.nan, math.nan)
    clip = 1 - 1e-12
    z = (math.atanh(max(-clip, min(clip, r1))) - math.atanh(max(-clip, min(clip, r2)))) / math.sqrt(
        1 / (n1 - 3) + 1 / (n2 - 3))
    if tails == 1:
        p = float(scipy.stats.norm.sf(z))
    elif tails == 2:
        p = float(2 * scipy.stats.norm.sf(abs(z)))
    else:
        raise ValueError(f"tails must be 1 or 2, got {tails!r}")
    return TestResult(float(z), p)


def perm_both(human, m1, m2, method: str = "pearson", groups=None, n_permutations: int = 1000, seed: int = 0,
              min_group_size: int = 3, batch: int | None = None, progress: bool = False) -> "PermResult":
    """PERM-BOTH (Deutsch, Dror & Roth 2021; mt-metrics-eval ``PermutationSigDiff``): one-sided p-value for
    "metric 1 correlates better with ``human`` than metric 2".

    Both metrics are z-normalised; each permutation swaps the two metrics' scores on every item independently
    with probability 1/2 and recomputes delta = corr(h, m1') - corr(h, m2'); p = share of permutations with a
    delta at least the observed one (``p_a_better``; ``p_b_better`` is the share at most the observed one, the
    test in the other direction). With ``groups`` the correlation is averaged over groups (the ``sys`` /
    ``item`` protocols). Items with a NaN anywhere are dropped. The permutations are drawn ``batch`` at a time
    (default: as many as fit :data:`MAX_DRAW` values), so memory is O(batch x n); the p-values do not depend on it.
    """
    h = np.asarray(human, float)
    a = np.asarray(m1, float)
    b = np.asarray(m2, float)
    ok = ~(np.isnan(h) | np.isnan(a) | np.isnan(b))
    h, a, b = h[ok], a[ok], b[ok]
    if h.size < 3 or _is_constant(a) or _is_constant(b):
        return PermResult(math.nan, math.nan, math.nan, 0)
    a = scipy.stats.zscore(a)
    b = scipy.stats.zscore(b)
    rng = np.random.default_rng(seed)
    if groups is None and method == "pearson" and h.size >= SUMS_MIN_N:
        return _perm_both_pearson_sums(h, a, b, n_permutations, rng, batch, progress)
    if groups is None:
        def stat(x, y):  # (B, n) -> (B,)
            return rowwise_corr(np.broadcast_to(h, x.shape), x, method) - rowwise_corr(np.broadcast_to(h, y.shape), y, method)
    else:
        g = np.asarray(groups, dtype=object)[ok].astype(str)
        idxs = [np.flatnonzero(g == k) for k in np.unique(g)]
        idxs = [i for i in idxs if i.size >= max(2, min_group_size)]

        def stat(x, y):
            vals1 = np.stack([rowwise_corr(np.broadcast_to(h[i], x[:, i].shape), x[:, i], method) for i in idxs], 1)
            vals2 = np.stack([rowwise_corr(np.broadcast_to(h[i], y[:, i].shape), y[:, i], method) for i in idxs], 1)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return np.nanmean(vals1, 1) - np.nanmean(vals2, 1)
    delta = float(stat(a[None, :], b[None, :])[0])

    def draws(k: int) -> np.ndarray:
        swap = rng.random((k, h.size)) < 0.5
        return stat(np.where(swap, b, a), np.where(swap, a, b))

    return _count_perm_draws(draws, delta, n_permutations, h.size, batch, progress)


def _count_perm_draws(draws, delta: float, n_permutations: int, n: int, batch: int | None,
                      progress: bool) -> "PermResult":
    """PERM-BOTH's counting: ``draws(k)`` gives the statistic of ``k`` fresh swaps (drawn from the caller's
    generator, one ``rng.random`` call per batch), in batches of ``batch`` (default: as many as :data:`MAX_DRAW` cells
    allow for ``n`` outputs); the p-values are the shares at or beyond the observed ``delta``, either way."""
    ge = le = done = 0
    batch = int(batch) if batch else max(1, min(n_permutations, MAX_DRAW // max(1, n)))
    bar = _draw_bar(n_permutations, n, "PERM-BOTH", progress)
    while done < n_permutations:
        k = min(batch, n_permutations - done)
        d = draws(k)
        ge += int(np.sum(d >= delta - 1e-12))
        le += int(np.sum(d <= delta + 1e-12))
        done += k
        if bar is not None:
            bar.update(k)
    if bar is not None:
        bar.close()
    return PermResult(ge / n_permutations, le / n_permutations, delta, n_permutations)


#: from this many outputs on, the Pearson statistics of the bootstrap and of PERM-BOTH come from sums (matrix
#: products with the resample counts / swap masks: :func:`_perm_both_pearson_sums`, :func:`_pearson_from_counts`)
#: instead of gathering a (B, n) copy of the data; the draws are the same, the values equal up to rounding (tested)
SUMS_MIN_N = 1000


def _perm_both_pearson_sums(h: np.ndarray, a: np.ndarray, b: np.ndarray, n_permutations: int, rng,
                            batch: int | None, progress: bool) -> "PermResult":
    """PERM-BOTH for Pearson's r without building the permuted score matrices: with ``swap`` the (k, n) 0/1 mask of
    a batch, the permuted metric 1 is ``a + swap * (b - a)`` and metric 2 ``b - swap * (b - a)``, so the sums
    Pearson's r needs (with the centred human scores ``hc``: sum hc x, sum x, sum x^2) are the unpermuted ones plus
    ``swap @ [hc (b - a), b - a, b^2 - a^2]``, one matrix-vector product per permutation. The same swaps as
    :func:`perm_both`'s general path (one ``rng.random`` draw per batch), so the same p-values up to rounding in the
    last digits."""
    n = h.size
    hc = h - h.mean()
    shh = float(hc @ hc)
    diff = b - a
    cols = np.stack([hc * diff, diff, b * b - a * a])  # (3, n)
    base_a = np.array([hc @ a, a.sum(), a @ a])
    base_b = np.array([hc @ b, b.sum(), b @ b])

    def r_of(sums: np.ndarray) -> np.ndarray:  # (k, 3) -> (k,)
        with np.errstate(invalid="ignore", divide="ignore"):
            var_n = sums[:, 2] - sums[:, 1] ** 2 / n
            return np.clip(sums[:, 0] / np.sqrt(shh * var_n), -1.0, 1.0)

    delta = float((r_of(base_a[None, :]) - r_of(base_b[None, :]))[0])

    def draws(k: int) -> np.ndarray:
        swap = rng.random((k, n)) < 0.5
        # one row at a time, each from a fresh array: the sums then do not depend on the batch (a (k, n) @ (n, 3)
        # product may add in another order for another k)
        moved = np.stack([cols @ row.astype(float) for row in swap])
        return r_of(base_a + moved) - r_of(base_b - moved)

    return _count_perm_draws(draws, delta, n_permutations, n, batch, progress)


@dataclass
class PermResult:
    p_a_better: float
    p_b_better: float
    delta: float
    permutations: int


# ---- bootstrap ---------------------------------------------------------------------------------------------
@dataclass
class BootstrapResult:
    low: float
    high: float
    p: float
    n_valid: int
    distribution: np.ndarray


#: the most resampled (or permuted) values one vectorised call of a bootstrap / permutation statistic receives: the
#: B x n draws are made in chunks of ``max(1, MAX_DRAW // n)`` rows, so that memory grows with n, not with B x n
#: (a million outputs x 1,000 resamples would be 8 GB of indices alone). The random stream does not depend on the
#: chunk size (numpy's ``Generator.integers`` / ``random`` draw the same values in one call or in several), so the
#: results are the same as with all draws at once (tested).
MAX_DRAW = 2_000_000

#: a bootstrap or permutation test with at least this many draws (B x n) shows a progress bar when asked to
PROGRESS_DRAWS = 50_000_000


def _draw_bar(total_rows: int, n: int, desc: str, progress: bool):
    """A tqdm bar over the rows (resamples / permutations) of a long draw, or None."""
    if not progress or total_rows * n < PROGRESS_DRAWS:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total_rows, desc=desc, unit="draw", leave=False)


def bootstrap(statistic: Callable[[np.ndarray], np.ndarray], n_units: int, n_resamples: int = 1000,
              ci: float = 0.95, seed: int = 0, tails: int = 2, expected_sign: int = 1, batch: int | None = None,
              progress: bool = False) -> BootstrapResult:
    """Percentile bootstrap over ``n_units`` resampling units (items, groups or systems). ``statistic(idx)``
    receives a (b, n_units) integer array of resampled unit indices and returns b values.

    The resamples are those of ``scipy.stats.bootstrap(..., method="percentile", random_state=default_rng(seed))``
    (one ``integers(0, n_units, (B, n_units))`` draw) and so is the interval (tested), but drawn here ``batch``
    rows at a time (default: as many as fit :data:`MAX_DRAW` values), so that memory stays O(batch x n_units)
    whatever ``n_resamples``, and the statistic gets the indices themselves (scipy would hand it a gathered copy
    of them). The draws, and so the result, do not depend on ``batch``. Resamples where the statistic is undefined
    (NaN, e.g. all draws the same system) are left out of the interval and counted in ``n_valid``. ``progress``: a
    bar on long runs (:data:`PROGRESS_DRAWS`).

    ``p`` is the bootstrap p-value for "statistic = 0" by inverting the percentile interval: two-sided
    2 * min(share <= 0, share >= 0); one-sided the share on the wrong side of 0 for ``expected_sign``.
    """
    if n_units < 2:
        return BootstrapResult(math.nan, math.nan, math.nan, 0, np.array([]))
    batch = int(batch) if batch else max(1, min(n_resamples, MAX_DRAW // n_units))
    bar = _draw_bar(n_resamples, n_units, "bootstrap", progress)
    rng = np.random.default_rng(seed)
    dist = np.empty(n_resamples)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            for start in range(0, n_resamples, batch):
                k = min(batch, n_resamples - start)
                dist[start:start + k] = statistic(rng.integers(0, n_units, (k, n_units)))
                if bar is not None:
                    bar.update(k)
    finally:
        if bar is not None:
            bar.close()
    valid = dist[~np.isnan(dist)]
    if valid.size == 0:
        return BootstrapResult(math.nan, math.nan, math.nan, 0, dist)
    a = (1 - ci) / 2
    lo, hi = (float(v) for v in np.percentile(valid, [100 * a, 100 * (1 - a)]))
    le, ge = float(np.mean(valid <= 0)), float(np.mean(valid >= 0))
    if tails == 2:
        p = min(1.0, 2 * min(le, ge))
    else:
        p = le if expected_sign >= 0 else ge
    return BootstrapResult(lo, hi, p, int(valid.size), dist)


def bootstrap_correlation(x, y, method: str = "pearson", n_resamples: int = 1000, ci: float = 0.95,
                          seed: int = 0, tails: int = 2, expected_sign: int = 1, batch: int | None = None,
                          progress: bool = False) -> BootstrapResult:
    """Bootstrap CI of a correlation, resampling items (pairs with a NaN dropped first); ``batch``:
    :func:`bootstrap`."""
    x, y = complete_pairs(x, y)
    if method == "pearson" and x.size >= SUMS_MIN_N:
        statistic = _pearson_from_counts(x, y)
    else:
        def statistic(idx):
            return rowwise_corr(x[idx], y[idx], method)
    return bootstrap(statistic, x.size, n_resamples, ci, seed, tails, expected_sign, batch, progress)


def _pearson_from_counts(x: np.ndarray, y: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Pearson's r of bootstrap resamples (rows of a (k, n) index array) from how often each pair is drawn: the
    counts ``w`` (one ``bincount``) times the columns ``[x, y, x^2, y^2, xy]`` of the data centred on its means
    (so that the moments do not cancel) give a row's moments in one matrix-vector product, instead of gathering two
    (k, n) copies of the data. A resample whose drawn values of a side are all equal gets NaN, as
    :func:`rowwise_pearson` gives it."""
    x0, y0 = x - x.mean(), y - y.mean()
    cols = np.stack([x0, y0, x0 * x0, y0 * y0, x0 * y0])  # (5, n)
    n = x.size
    tiny_x, tiny_y = 1e-9 * float(np.mean(x0 * x0)), 1e-9 * float(np.mean(y0 * y0))

    def stat(idx: np.ndarray) -> np.ndarray:
        # one resample at a time: the sums then do not depend on how many resamples a call gets
        counts = [np.bincount(row, minlength=n).astype(float) for row in idx]
        m = np.stack([cols @ w for w in counts]) / n
        vx, vy = m[:, 2] - m[:, 0] ** 2, m[:, 3] - m[:, 1] ** 2
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.clip((m[:, 4] - m[:, 0] * m[:, 1]) / np.sqrt(vx * vy), -1.0, 1.0)
        for i in np.flatnonzero((vx <= tiny_x) | (vy <= tiny_y)):  # rare: is a side really constant here?
            drawn = counts[i] > 0
            if _is_constant(x0[drawn]) or _is_constant(y0[drawn]):
                r[i] = math.nan
        return r

    return stat


def bootstrap_averaged(per_group_values: Sequence[float], n_resamples: int = 1000, ci: float = 0.95,
                       seed: int = 0, tails: int = 2, expected_sign: int = 1, batch: int | None = None,
                       progress: bool = False) -> BootstrapResult:
    """Bootstrap CI of a mean of per-group correlations, resampling groups (undefined groups left out)."""
    v = np.asarray([x for x in per_group_values if not math.isnan(x)], float)

    def stat(idx):
        return v[idx].mean(axis=-1)

    return bootstrap(stat, v.size, n_resamples, ci, seed, tails, expected_sign, batch, progress)


# ---- agreement on pairs ------------------------------------------------------------------------------------
def pairwise_accuracy(human, metric, higher_is_better: bool = True) -> tuple[float, int]:
    """Share of pairs with different human scores that the metric orders the same way (a metric tie counts as
    a miss), as in Kocmi et al. (2021) for systems. Returns (accuracy, number of pairs)."""
    h, m = complete_pairs(human, metric)
    if not higher_is_better:
        m = -m
    dh = np.sign(np.subtract.outer(h, h))
    dm = np.sign(np.subtract.outer(m, m))
    iu = np.triu_indices(h.size, 1)
    dh, dm = dh[iu], dm[iu]
    keep = dh != 0
    n = int(keep.sum())
    if n == 0:
        return math.nan, 0
    return float(np.mean(dh[keep] == dm[keep])), n


def within_group_pairs(groups) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays (i, j), i < j, of every pair of positions that share a group label."""
    g = group_codes(groups)
    order = np.argsort(g, kind="stable")
    gs = g[order]
    bounds = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1], True])
    ii, jj = [], []
    for b, e in zip(bounds[:-1], bounds[1:]):
        if e - b < 2:
            continue
        a, c = np.triu_indices(e - b, 1)
        ii.append(order[b:e][a])
        jj.append(order[b:e][c])
    if not ii:
        return np.array([], int), np.array([], int)
    return np.concatenate(ii), np.concatenate(jj)


def grouped_pairwise_accuracy(human, metric, groups=None, higher_is_better: bool = True,
                              pairs: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[float, int]:
    """Pairwise accuracy over the pairs inside each group (e.g. outputs for the same input), pooled over groups.
    ``pairs`` (from :func:`within_group_pairs`) may be passed to reuse the pair structure."""
    h = np.asarray(human, float)
    m = np.asarray(metric, float)
    i, j = pairs if pairs is not None else within_group_pairs(groups)
    if not higher_is_better:
        m = -m
    dh = np.sign(h[i] - h[j])
    dm = np.sign(m[i] - m[j])
    keep = ~(np.isnan(dh) | np.isnan(dm)) & (dh != 0)
    n = int(keep.sum())
    if n == 0:
        return math.nan, 0
    return float(np.mean(dh[keep] == dm[keep])), n


# ---- multiple comparisons ----------------------------------------------------------------------------------
def adjust_pvalues(pvalues: Sequence[float], method: str = "holm") -> np.ndarray:
    """Adjusted p-values across one family (statsmodels ``multipletests``). NaN p-values are not part of the
    family (m counts the defined ones) and stay NaN. ``method``: none | bonferroni | holm."""
    p = np.asarray(pvalues, float)
    if method in (None, "none"):
        return p.copy()
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}; choose one of {CORRECTIONS}")
    from statsmodels.stats.multitest import multipletests

    out = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        # multipletests(method="holm") calls gc.collect(), which costs ~0.1 s per call in a process holding many
        # objects (torch, pandas); freezing the current objects makes that collection cheap.
        gc.freeze()
        try:
            out[ok] = multipletests(p[ok], method=method)[1]
        finally:
            gc.unfreeze()
    return out


# ---- pairwise system differences ---------------------------------------------------------------------------
def wilcoxon_paired(a, b) -> TestResult:
    """Wilcoxon signed-rank test on paired ratings (scipy; zero differences dropped, Wilcox's method).
    No complete pair -> statistic and p NaN (undefined: there is nothing to test); all differences zero ->
    statistic NaN, p = 1 (the pairs exist and show no difference)."""
    a, b = complete_pairs(a, b)
    d = a - b
    if d.size == 0:
        return TestResult(math.nan, math.nan)
    if np.all(d == 0):
        return TestResult(math.nan, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = scipy.stats.wilcoxon(a, b)
    return TestResult(float(res.statistic), float(res.pvalue))


# ---- confounds and agreement -------------------------------------------------------------------------------
def _require(module: str, instead: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"the meta-evaluation needs `{module}` for this statistic: pip install {module} "
                          f"(or run without it: {instead})") from None


def partial_correlation(x, y, covariates: dict, method: str = "spearman") -> CorrResult:
    """Partial correlation of ``x`` and ``y`` controlling for ``covariates`` (name -> array), with its two-sided
    p-value: ``pingouin.partial_corr`` (residuals of both variables after the least-squares fit on the covariates;
    Spearman ranks every variable first; df = n - 2 - number of covariates). Rows with a NaN anywhere are dropped.
    Undefined (NaN) with fewer than ``3 + number of covariates`` rows or a constant variable."""
    import pandas as pd

    cols = {"x": np.asarray(x, float), "y": np.asarray(y, float)}
    names = []
    for i, (k, v) in enumerate(covariates.items()):
        cols[f"c{i}"] = np.asarray(v, float)
        names.append(f"c{i}")
    frame = pd.DataFrame(cols).dropna()
    n = int(len(frame))
    if n < 3 + len(names) or any(_is_constant(frame[c].to_numpy()) for c in frame.columns):
        return CorrResult(math.nan, math.nan, n)
    pingouin = _require("pingouin", "stats.confounds.enabled=false")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            res = pingouin.partial_corr(data=frame, x="x", y="y", covar=names, method=method)
        except ValueError:  # a covariate identical to x or y (the length baseline given length): undefined
            return CorrResult(math.nan, math.nan, n)
    r, p = float(res["r"].iloc[0]), float(res["p_val" if "p_val" in res.columns else "p-val"].iloc[0])
    return CorrResult(r, p, n)


def binned_correlation(x, y, covariate, bins: int = 5, method: str = "spearman",
                       min_group_size: int = 3) -> GroupedCorr:
    """Correlation of ``x`` and ``y`` inside bins of ``covariate`` (quantile bins, ties kept together), averaged
    over the bins where it is defined: what is left of a correlation when the covariate is held (nearly) fixed."""
    labels = bin_labels(covariate, bins)
    x = np.where(labels == "nan", np.nan, np.asarray(x, float))
    return averaged_correlation(x, y, labels, method, min_group_size)


def bin_labels(covariate, bins: int = 5) -> np.ndarray:
    """Quantile-bin label of each value (pandas ``qcut`` on dense ranks, so ties stay in one bin); "nan" for NaN."""
    c = np.asarray(covariate, float)
    ok = ~np.isnan(c)
    labels = np.full(c.shape, "nan", dtype=object)
    if ok.sum() >= 2:
        import pandas as pd

        codes = pd.qcut(pd.Series(c[ok]).rank(method="dense"), q=min(bins, int(ok.sum())), labels=False,
                        duplicates="drop")
        labels[ok] = np.asarray(codes).astype(str)
    return labels


#: the ``krippendorff`` package builds a (units x values x values) coincidence array; above this many distinct
#: values (continuous ratings) interval alpha comes from :func:`interval_alpha` instead
MAX_ALPHA_VALUES = 400


def interval_alpha(matrix) -> float:
    """Krippendorff's interval alpha from pairable values, without a coincidence matrix (Krippendorff 2011,
    "Computing Krippendorff's alpha-reliability", section C with the interval metric (c - k)^2)::

        D_o = 1/n sum_u 1/(m_u - 1) sum_{i != j in u} (v_i - v_j)^2,   D_e = 1/(n (n - 1)) sum_{i != j} (v_i - v_j)^2,
        alpha = 1 - D_o / D_e          (n pairable values, m_u values in unit u, units with m_u >= 2 only)

    Hand-written for continuous ratings, where the package's coincidence array (units x values x values) does not
    fit in memory; equal to the package wherever both run (tested)."""
    m = np.asarray(matrix, float)
    rows = [r[~np.isnan(r)] for r in m]
    rows = [r for r in rows if r.size >= 2]
    if len(rows) < 2:
        return math.nan
    allv = np.concatenate(rows)
    n = allv.size
    # sum over ordered pairs i != j of (v_i - v_j)^2 = 2 (m sum v^2 - (sum v)^2)
    d_o = sum(2 * (r.size * float(np.sum(r * r)) - float(np.sum(r)) ** 2) / (r.size - 1) for r in rows) / n
    d_e = 2 * (n * float(np.sum(allv * allv)) - float(np.sum(allv)) ** 2) / (n * (n - 1))
    return math.nan if d_e == 0 else 1 - d_o / d_e


def krippendorff_alpha(matrix, level: str = "interval") -> float:
    """Krippendorff's alpha (the ``krippendorff`` package) of a units x annotators matrix (NaN = not rated).
    NaN when fewer than two units have two or more ratings, or every rating is the same. Interval alpha of
    ratings with more than ``MAX_ALPHA_VALUES`` distinct values: :func:`interval_alpha` (same value)."""
    m = np.asarray(matrix, float)
    if m.ndim != 2 or m.shape[1] < 2:
        return math.nan
    pairable = (~np.isnan(m)).sum(axis=1) >= 2
    vals = m[pairable][~np.isnan(m[pairable])]
    if pairable.sum() < 2 or _is_constant(vals):
        return math.nan
    if level == "interval" and np.unique(vals).size > MAX_ALPHA_VALUES:
        return interval_alpha(m[pairable])
    krippendorff = _require("krippendorff", "no `<aspect>@<annotator>` rating keys")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return float(krippendorff.alpha(reliability_data=m[pairable].T, level_of_measurement=level))


# ---- agreement among the annotators of one criterion (the human ceiling) -----------------------------------
def spearman_brown(r: float, factor: float) -> float:
    """Spearman–Brown prophecy formula (Spearman 1910; Brown 1910): the reliability of a mean of ``factor`` times
    as many parallel ratings as the mean whose reliability (or split-half correlation) is ``r``::

        r_L = L r / (1 + (L - 1) r)

    ``factor = 2`` turns the correlation of two equal halves into the reliability of the whole. Hand-written: a
    one-line formula that scipy, statsmodels and pingouin do not offer. NaN when ``r`` is NaN or the denominator
    vanishes."""
    r, factor = float(r), float(factor)
    if math.isnan(r) or math.isnan(factor):
        return math.nan
    den = 1 + (factor - 1) * r
    return math.nan if den == 0 else factor * r / den


def split_half_reliability(r: float, h_a: float, h_b: float, h_full: float) -> tuple[float, float]:
    """Single-annotator reliability and the reliability of the full mean rating from the correlation ``r`` of two
    split halves whose sizes vary by item (a design that is not fully crossed).

    Classical test theory with parallel annotators (rating = true score T + independent error E, Lord & Novick
    1968, ch. 4): a mean of ``a`` ratings has error variance var(E) / a, so over items with varying half sizes the
    half means have error variance var(E) * h, with ``h`` the mean of 1/a over items. With q = var(E) / var(T)::

        r = 1 / sqrt((1 + q h_a) (1 + q h_b))   =>   h_a h_b q^2 + (h_a + h_b) q + 1 - 1/r^2 = 0

    gives q, then the single-annotator reliability 1 / (1 + q) and the reliability of the mean rating that the
    metrics are correlated with, 1 / (1 + q h_full), h_full = mean over items of 1/k (k annotators). With equal
    halves (h_a = h_b = 2 h_full) this is exactly the Spearman–Brown step-up by 2 (:func:`spearman_brown`); with
    WebNLG's 1-vs-2 halves of three annotators the plain step-up by 2 would understate the reliability.
    Hand-written because no library handles unequal, item-varying halves. ``r <= 0`` (no agreement): the
    plain Spearman–Brown step-up by sqrt(h_a h_b) / h_full, which is <= 0 as well."""
    if any(math.isnan(v) for v in (r, h_a, h_b, h_full)) or min(h_a, h_b, h_full) <= 0:
        return math.nan, math.nan
    if r <= 0:
        factor = math.sqrt(h_a * h_b) / h_full
        return spearman_brown(r, 1 / math.sqrt(h_a * h_b)), spearman_brown(r, factor)
    r = min(r, 1.0)
    a, b, c = h_a * h_b, h_a + h_b, 1 - 1 / r**2
    q = (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)
    return 1 / (1 + q), 1 / (1 + q * h_full)


def _compact(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ratings moved to the left (units x max ratings per unit, NaN padded) and their count: the
    annotators of a not fully crossed design (88 workers, 1-3 per item) need no 88 columns."""
    m = np.asarray(matrix, float)
    k = (~np.isnan(m)).sum(axis=1)
    width = max(int(k.max()) if k.size else 0, 1)
    order = np.argsort(np.isnan(m), axis=1, kind="stable")  # rated columns first, in column order
    v = np.take_along_axis(m, order, axis=1)[:, :width]
    return v, k


def split_draw(values: np.ndarray, k: np.ndarray, keys: np.ndarray, one_vs_rest: bool) -> tuple[np.ndarray, np.ndarray]:
    """One random split of every unit's ratings: ``values`` (units x w, rated first, NaN padded), ``k`` ratings
    per unit, ``keys`` (units x w) random sort keys that order each unit's annotators. One vs rest: A = the first
    annotator in that order, B = the mean of the others. Split half: A = the mean of the first floor(k/2), B = the
    mean of the remaining ceil(k/2). Units with fewer than 2 ratings get NaN on both sides."""
    w = values.shape[1]
    pos_key = np.where(np.arange(w)[None, :] < k[:, None], keys, np.inf)
    order = np.argsort(pos_key, axis=1, kind="stable")
    v = np.take_along_axis(values, order, axis=1)
    size_a = np.ones_like(k) if one_vs_rest else k // 2
    pos = np.arange(w)[None, :]
    in_a = pos < size_a[:, None]
    in_b = (pos >= size_a[:, None]) & (pos < k[:, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(in_a, v, 0.0).sum(axis=1) / in_a.sum(axis=1)
        b = np.where(in_b, v, 0.0).sum(axis=1) / in_b.sum(axis=1)
    bad = k < 2
    a[bad] = np.nan
    b[bad] = np.nan
    return a, b


@dataclass
class AgreementResult:
    """One estimator (``one_vs_rest`` / ``split_half``) on one coefficient, averaged over random draws."""
    r: float            #: mean over draws of the correlation of side A with side B
    low: float          #: 2.5th percentile over draws (the spread due to the random choice of annotators only)
    high: float         #: 97.5th percentile over draws
    n: int              #: units correlated (items with >= 2 ratings, or systems)
    draws: int
    #: split half only: single-annotator reliability and reliability of the full mean rating
    #: (:func:`split_half_reliability`); NaN for one vs rest and for Kendall's tau (no step-up formula)
    single: float = math.nan
    full: float = math.nan


def annotator_agreement(matrix, method: str = "pearson", groups=None, draws: int = 100, seed: int = 0,
                        min_units: int = 3) -> dict[str, AgreementResult]:
    """How well the annotators of one criterion agree, for a design that is not fully crossed.

    ``matrix``: units (outputs) x annotators, NaN = not rated; annotators may differ from unit to unit. Two
    estimators, each averaged over ``draws`` seeded random draws:

    * ``one_vs_rest`` -- per unit with >= 2 ratings, one randomly chosen annotator vs the mean of the others,
      correlated across units: the expected correlation of one human with the other humans (a metric that
      reaches it correlates with the ratings as well as one more annotator would);
    * ``split_half`` -- each unit's annotators cut into two random disjoint halves (floor(k/2) and ceil(k/2)),
      the half means correlated across units, then stepped up to the reliability of the full mean rating over
      all rated units (:func:`split_half_reliability`; equal halves: Spearman–Brown by 2).

    ``groups`` (one label per unit, e.g. the system): the system level -- both sides are averaged per group over
    the units with >= 2 ratings first, and the group means are correlated (the same items on both sides, so this
    measures annotator noise only, not item sampling). Spearman's rho is stepped up with the same formula (an
    approximation: it is Pearson's on ranks); Kendall's tau gets no reliability. Hand-written: no library
    computes these for annotators that are not fully crossed (pingouin's ICC needs every rater on every item)."""
    values, k = _compact(np.asarray(matrix, float))
    use = k >= 2
    rated = k >= 1
    out = {}
    if groups is not None:
        g = np.asarray(groups, dtype=object).astype(str)
        labels, inv = np.unique(g[use], return_inverse=True)
        n_units = labels.size
    else:
        n_units = int(use.sum())
    if n_units < min_units:
        for name in ("one_vs_rest", "split_half"):
            out[name] = AgreementResult(math.nan, math.nan, math.nan, n_units, 0)
        return out
    rng = np.random.default_rng(seed)
    vals, kk = values[use], k[use]
    for name in ("one_vs_rest", "split_half"):
        rs = []
        for _ in range(draws):
            a, b = split_draw(vals, kk, rng.random(vals.shape), name == "one_vs_rest")
            if groups is not None:
                cnt = np.bincount(inv, minlength=n_units)
                a = np.bincount(inv, weights=a, minlength=n_units) / cnt
                b = np.bincount(inv, weights=b, minlength=n_units) / cnt
            rs.append(corr_value(a, b, method))
        rs = np.asarray(rs, float)
        ok = rs[~np.isnan(rs)]
        if ok.size == 0:
            out[name] = AgreementResult(math.nan, math.nan, math.nan, n_units, draws)
            continue
        res = AgreementResult(float(ok.mean()), float(np.percentile(ok, 2.5)), float(np.percentile(ok, 97.5)),
                              n_units, draws)
        if name == "split_half" and method != "kendall":
            h_a = float(np.mean(1.0 / (kk // 2)))
            h_b = float(np.mean(1.0 / (kk - kk // 2)))
            h_full = float(np.mean(1.0 / k[rated]))
            res.single, res.full = split_half_reliability(res.r, h_a, h_b, h_full)
        out[name] = res
    return out
