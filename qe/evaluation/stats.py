"""Statistics for validating metrics against human judgments.

Everything that a field library implements is taken from it: correlations and their p-values
(``scipy.stats.pearsonr / spearmanr / kendalltau``), the bootstrap (``scipy.stats.bootstrap``), the Wilcoxon
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
  mean over groups).

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


@dataclass
class CorrResult:
    r: float
    p: float
    n: int


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
        return CorrResult(math.nan, math.nan, n)
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
                    alternative=alt, n_resamples=9999, random_state=np.random.default_rng(0))
                return CorrResult(float(res.statistic), float(perm.pvalue), n)
        elif method == "kendall":
            res = scipy.stats.kendalltau(x, y, variant="b", alternative=alt)
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
    constant side give NaN."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    groups = np.asarray(groups, dtype=object)
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y, groups = x[ok], y[ok], groups[ok]
    out = {}
    if x.size == 0:
        return out
    order = np.argsort(groups.astype(str), kind="stable")
    g_sorted = groups[order].astype(str)
    bounds = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1], True])
    for b, e in zip(bounds[:-1], bounds[1:]):
        idx = order[b:e]
        key = groups[idx[0]]
        out[key] = corr_value(x[idx], y[idx], method) if len(idx) >= max(2, min_group_size) else math.nan
    return out


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
              min_group_size: int = 3) -> "PermResult":
    """PERM-BOTH (Deutsch, Dror & Roth 2021; mt-metrics-eval ``PermutationSigDiff``): one-sided p-value for
    "metric 1 correlates better with ``human`` than metric 2".

    Both metrics are z-normalised; each permutation swaps the two metrics' scores on every item independently
    with probability 1/2 and recomputes delta = corr(h, m1') - corr(h, m2'); p = share of permutations with a
    delta at least the observed one (``p_a_better``; ``p_b_better`` is the share at most the observed one, the
    test in the other direction). With ``groups`` the correlation is averaged over groups (the ``sys`` /
    ``item`` protocols). Items with a NaN anywhere are dropped.
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
    ge = le = done = 0
    batch = max(1, min(n_permutations, 2_000_000 // max(1, h.size)))
    while done < n_permutations:
        k = min(batch, n_permutations - done)
        swap = rng.random((k, h.size)) < 0.5
        x = np.where(swap, b, a)
        y = np.where(swap, a, b)
        d = stat(x, y)
        ge += int(np.sum(d >= delta - 1e-12))
        le += int(np.sum(d <= delta + 1e-12))
        done += k
    return PermResult(ge / n_permutations, le / n_permutations, delta, n_permutations)


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


def bootstrap(statistic: Callable[[np.ndarray], np.ndarray], n_units: int, n_resamples: int = 1000,
              ci: float = 0.95, seed: int = 0, tails: int = 2, expected_sign: int = 1) -> BootstrapResult:
    """Percentile bootstrap over ``n_units`` resampling units (items, groups or systems) with
    ``scipy.stats.bootstrap``. ``statistic(idx)`` receives a (B, n_units) integer array of resampled unit indices
    and returns B values. Resamples where the statistic is undefined (NaN, e.g. all draws the same system) are
    left out of the interval and counted in ``n_valid``.

    ``p`` is the bootstrap p-value for "statistic = 0" by inverting the percentile interval: two-sided
    2 * min(share <= 0, share >= 0); one-sided the share on the wrong side of 0 for ``expected_sign``.
    """
    if n_units < 2:
        return BootstrapResult(math.nan, math.nan, math.nan, 0, np.array([]))

    def stat(idx, axis=-1):
        idx = np.asarray(idx).astype(np.int64)
        if idx.ndim == 1:
            return statistic(idx[None, :])[0]
        return statistic(idx.reshape(-1, idx.shape[-1])).reshape(idx.shape[:-1])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = scipy.stats.bootstrap((np.arange(n_units),), stat, vectorized=True, n_resamples=n_resamples,
                                    confidence_level=ci, method="percentile", axis=-1,
                                    random_state=np.random.default_rng(seed))
    dist = np.asarray(res.bootstrap_distribution, float)
    valid = dist[~np.isnan(dist)]
    if valid.size == 0:
        return BootstrapResult(math.nan, math.nan, math.nan, 0, dist)
    if valid.size == dist.size:
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    else:
        a = (1 - ci) / 2
        lo, hi = (float(v) for v in np.percentile(valid, [100 * a, 100 * (1 - a)]))
    le, ge = float(np.mean(valid <= 0)), float(np.mean(valid >= 0))
    if tails == 2:
        p = min(1.0, 2 * min(le, ge))
    else:
        p = le if expected_sign >= 0 else ge
    return BootstrapResult(lo, hi, p, int(valid.size), dist)


def bootstrap_correlation(x, y, method: str = "pearson", n_resamples: int = 1000, ci: float = 0.95,
                          seed: int = 0, tails: int = 2, expected_sign: int = 1) -> BootstrapResult:
    """Bootstrap CI of a correlation, resampling items (pairs with a NaN dropped first)."""
    x, y = complete_pairs(x, y)
    return bootstrap(lambda idx: rowwise_corr(x[idx], y[idx], method), x.size, n_resamples, ci, seed, tails,
                     expected_sign)


def bootstrap_averaged(per_group_values: Sequence[float], n_resamples: int = 1000, ci: float = 0.95,
                       seed: int = 0, tails: int = 2, expected_sign: int = 1) -> BootstrapResult:
    """Bootstrap CI of a mean of per-group correlations, resampling groups (undefined groups left out)."""
    v = np.asarray([x for x in per_group_values if not math.isnan(x)], float)

    def stat(idx):
        return v[idx].mean(axis=-1)

    return bootstrap(stat, v.size, n_resamples, ci, seed, tails, expected_sign)


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
    g = np.asarray(groups, dtype=object).astype(str)
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
    All differences zero -> statistic NaN, p = 1."""
    a, b = complete_pairs(a, b)
    d = a - b
    if d.size == 0 or np.all(d == 0):
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


def krippendorff_alpha(matrix, level: str = "interval") -> float:
    """Krippendorff's alpha (the ``krippendorff`` package) of a units x annotators matrix (NaN = not rated).
    NaN when fewer than two units have two or more ratings, or every rating is the same."""
    m = np.asarray(matrix, float)
    if m.ndim != 2 or m.shape[1] < 2:
        return math.nan
    pairable = (~np.isnan(m)).sum(axis=1) >= 2
    vals = m[pairable][~np.isnan(m[pairable])]
    if pairable.sum() < 2 or _is_constant(vals):
        return math.nan
    krippendorff = _require("krippendorff", "no `<aspect>@<annotator>` rating keys")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return float(krippendorff.alpha(reliability_data=m[pairable].T, level_of_measurement=level))
