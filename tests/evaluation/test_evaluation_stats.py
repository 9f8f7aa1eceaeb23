"""Meta-evaluation statistics against scipy / statsmodels / sklearn and published worked values."""
import math

import numpy as np
import pytest
import scipy.stats

from qe.evaluation import stats as S
from qe.evaluation.analysis import EvalData, Settings, analyse
from qe.evaluation.scoring import MetricInfo


@pytest.fixture
def xy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=80)
    y = 0.5 * x + rng.normal(size=80)
    y = np.round(y * 2) / 2  # ties, like 0.5-step median ratings
    return x, y


@pytest.mark.parametrize("method,fn", [("pearson", scipy.stats.pearsonr), ("spearman", scipy.stats.spearmanr),
                                       ("kendall", scipy.stats.kendalltau)])
def test_correlations_match_scipy_and_tails(xy, method, fn):
    x, y = xy
    ref = fn(x, y)
    c = S.correlation(x, y, method, tails=2)
    assert c.r == pytest.approx(ref.statistic) and c.p == pytest.approx(ref.pvalue) and c.n == 80
    # one-tailed in the expected direction = half the two-tailed p when the sign agrees
    assert S.correlation(x, y, method, tails=1).p == pytest.approx(ref.pvalue / 2, rel=1e-6)
    # a lower-is-better metric expected to correlate negatively: the same positive r is now "wrong way"
    assert S.correlation(x, y, method, tails=1, expected_sign=-1).p == pytest.approx(1 - ref.pvalue / 2, rel=1e-6)


def test_nan_pairs_are_dropped_and_undefined_is_nan(xy):
    x, y = xy
    x2 = x.copy()
    x2[:5] = np.nan
    c = S.correlation(x2, y)
    assert c.n == 75 and c.r == pytest.approx(scipy.stats.pearsonr(x[5:], y[5:]).statistic)
    assert math.isnan(S.correlation([1, 1, 1, 1], [1, 2, 3, 4]).r)
    assert math.isnan(S.correlation([1, 2], [1, 2]).r)


def test_small_sample_spearman_uses_permutation_p():
    # n = 3, rho = 1: the t approximation says p = 0; the exact two-sided permutation p is 2/6
    c = S.correlation([1, 2, 3], [2, 5, 9], "spearman")
    assert c.r == 1.0 and c.p == pytest.approx(2 / 6)


def test_rowwise_kendall_equals_scipy_tau_b():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 4, size=(50, 9)).astype(float)  # many ties
    y = rng.integers(0, 5, size=(50, 9)).astype(float)
    got = S.rowwise_kendall_small(x, y)
    want = [scipy.stats.kendalltau(a, b).statistic for a, b in zip(x, y)]
    np.testing.assert_allclose(got, want, equal_nan=True)
    np.testing.assert_allclose(S.rowwise_corr(x, y, "spearman"),
                               [scipy.stats.spearmanr(a, b).statistic for a, b in zip(x, y)], equal_nan=True)


def test_averaged_correlation_is_mean_of_group_correlations(xy):
    x, y = xy
    groups = np.repeat(["a", "b", "c", "d"], 20)
    groups[-18:] = "e"  # group d has only 2 members -> skipped
    g = S.averaged_correlation(x, y, groups, "spearman", min_group_size=3)
    want = [scipy.stats.spearmanr(x[groups == k], y[groups == k]).statistic for k in "abce"]
    assert g.r == pytest.approx(np.mean(want)) and g.n_groups == 4 and g.n_groups_skipped == 1


def test_mse_after_linear_fit_matches_sklearn(xy):
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import mean_squared_error

    x, y = xy
    lr = LinearRegression().fit(x[:, None], y)
    assert S.mse_linear_fit(x, y) == pytest.approx(mean_squared_error(y, lr.predict(x[:, None])))
    # a constant metric: the best linear function is the mean
    assert S.mse_linear_fit(np.ones_like(y), y) == pytest.approx(np.var(y))
    # invariant to linear transformations of the metric (Kann et al.)
    assert S.mse_linear_fit(3 * x - 7, y) == pytest.approx(S.mse_linear_fit(x, y))


def test_normalise_to_rating_range_and_rounding():
    np.testing.assert_allclose(S.normalise_to_range([0, 0.5, 1], 1, 6), [1, 3.5, 6])
    np.testing.assert_allclose(S.normalise_to_range([0, 0.5, 1], 1, 6, higher_is_better=False), [6, 3.5, 1])
    # 0.33 -> 1 + 0.33 * 5 = 2.65 -> 2.5; 0.35 -> 2.75 -> 3.0 (round half to even on 5.5 steps: 2.75 = 1 + 3.5*0.5)
    out = S.normalise_to_range([0, 0.33, 0.36, 1, np.nan], 1, 6, round_to=0.5)
    np.testing.assert_allclose(out[:4], [1, 2.5, 3.0, 6])
    assert np.isnan(out[4])
    mae, rmse = S.mae_rmse([1, 2, 4], [2, 2, 2])
    assert mae == pytest.approx(1.0) and rmse == pytest.approx(math.sqrt(5 / 3))


def test_williams_against_published_examples():
    # psych::r.test(n = 30, r12 = .5, r13 = .1, r23 = .7) -> "t value 3.38"; r23 = .1 -> 1.76; r23 = .8 -> 4.64
    # (worked examples of the Williams/Steiger test printed with R's psych package)
    assert S.williams_test(0.5, 0.1, 0.7, 30).statistic == pytest.approx(3.38, abs=0.005)
    assert S.williams_test(0.5, 0.1, 0.1, 30).statistic == pytest.approx(1.76, abs=0.005)
    assert S.williams_test(0.5, 0.1, 0.8, 30).statistic == pytest.approx(4.64, abs=0.005)
    # Steiger (1980) case A as in psych's examples: r.test(103, .4, .5, .1) -> t = -0.89, p = 0.37 (two-tailed)
    t = S.williams_test(0.4, 0.5, 0.1, 103, tails=2)
    assert t.statistic == pytest.approx(-0.89, abs=0.005) and t.p == pytest.approx(0.37, abs=0.005) and t.df == 100
    # one-tailed p for H1 r12 > r13 is the upper tail of t with n - 3 df (Graham & Baldwin 2014)
    t1 = S.williams_test(0.5, 0.1, 0.7, 30, tails=1)
    assert t1.p == pytest.approx(scipy.stats.t.sf(t1.statistic, 27))
    assert S.williams_test(0.1, 0.5, 0.7, 30, tails=1).p == pytest.approx(1 - t1.p)


def test_williams_from_data_uses_pearson_of_all_three(xy):
    x, y = xy
    rng = np.random.default_rng(3)
    z = x + rng.normal(size=x.size) * 2
    t, r1, r2 = S.williams_compare(y, x, z)
    r12, r13, r23 = (scipy.stats.pearsonr(a, b).statistic for a, b in ((y, x), (y, z), (x, z)))
    assert (r1, r2) == (pytest.approx(r12), pytest.approx(r13))
    assert t.statistic == pytest.approx(S.williams_test(r12, r13, r23, x.size).statistic)


def test_fisher_z_against_published_example():
    # psych::r.test(30, .4, .6): "z value 0.99 with probability 0.32"
    t = S.fisher_z_test(0.6, 30, 0.4, 30)
    assert t.statistic == pytest.approx(0.99, abs=0.005) and t.p == pytest.approx(0.32, abs=0.005)
    assert S.fisher_z_test(0.6, 30, 0.4, 30, tails=1).p == pytest.approx(t.p / 2)


def test_bootstrap_reproducible_with_seed_and_matches_scipy(xy):
    x, y = xy
    a = S.bootstrap_correlation(x, y, "pearson", n_resamples=300, seed=7)
    b = S.bootstrap_correlation(x, y, "pearson", n_resamples=300, seed=7)
    c = S.bootstrap_correlation(x, y, "pearson", n_resamples=300, seed=8)
    assert (a.low, a.high) == (b.low, b.high) and np.array_equal(a.distribution, b.distribution)
    assert (a.low, a.high) != (c.low, c.high)
    r = scipy.stats.pearsonr(x, y).statistic
    assert a.low < r < a.high and a.n_valid == 300
    ref = scipy.stats.bootstrap((x, y), lambda u, v, axis=-1: S.rowwise_pearson(u, v), paired=True, vectorized=True,
                                n_resamples=300, method="percentile", random_state=np.random.default_rng(7))
    assert a.low == pytest.approx(ref.confidence_interval.low) and a.high == pytest.approx(ref.confidence_interval.high)
    # the bootstrap p-value for r = 0 is tiny for a strong correlation
    assert a.p < 0.01


def test_perm_both_detects_better_metric_and_is_seeded(xy):
    x, y = xy
    rng = np.random.default_rng(5)
    good = y + rng.normal(size=y.size) * 0.3
    bad = rng.normal(size=y.size)
    r1 = S.perm_both(y, good, bad, n_permutations=400, seed=1)
    assert r1.p_a_better < 0.01 and r1.p_b_better > 0.99 and r1.delta > 0
    r2 = S.perm_both(y, good, bad, n_permutations=400, seed=1)
    assert r1 == r2
    # identical metrics: delta 0, every permutation ties -> p = 1 both ways
    r3 = S.perm_both(y, good, good, n_permutations=50, seed=1)
    assert r3.delta == pytest.approx(0) and r3.p_a_better == 1.0


def test_corrections_applied_as_stated():
    p = [0.01, 0.04, 0.03, np.nan]
    np.testing.assert_allclose(S.adjust_pvalues(p, "bonferroni")[:3], [0.03, 0.12, 0.09])
    # Holm by hand: sorted 0.01*3, 0.03*2, 0.04*1, then cumulative max -> 0.03, 0.06, 0.06
    np.testing.assert_allclose(S.adjust_pvalues(p, "holm")[:3], [0.03, 0.06, 0.06])
    assert np.isnan(S.adjust_pvalues(p, "holm")[3])
    np.testing.assert_allclose(S.adjust_pvalues(p, "none")[:3], p[:3])
    with pytest.raises(ValueError, match="unknown correction"):
        S.adjust_pvalues(p, "fdr")


def test_pairwise_accuracy_by_hand():
    # human 1 < 2 < 3 (pairs: 3); metric orders (1,2) right, (1,3) right, (2,3) tied -> miss
    assert S.pairwise_accuracy([1, 2, 3], [0.1, 0.5, 0.5]) == (pytest.approx(2 / 3), 3)
    assert S.pairwise_accuracy([1, 2, 3], [3, 2, 1], higher_is_better=False) == (1.0, 3)
    # within groups only: the cross-group pair is not counted
    acc, n = S.grouped_pairwise_accuracy([1, 2, 5, 1], [1, 2, 0.5, 9], groups=["a", "a", "b", "b"])
    assert n == 2 and acc == 0.5  # group a ordered right, group b wrong; (2, 5) crosses groups: ignored


def test_wilcoxon_matches_scipy():
    rng = np.random.default_rng(2)
    a = rng.integers(1, 7, 30).astype(float)
    b = np.clip(a - rng.integers(0, 3, 30), 1, 6).astype(float)
    assert S.wilcoxon_paired(a, b).p == pytest.approx(scipy.stats.wilcoxon(a, b).pvalue)
    assert S.wilcoxon_paired([1, 2], [1, 2]).p == 1.0


# ---- system level --------------------------------------------------------------------------------------------
def _data_from_system_means(means: dict[str, dict[str, float]], human=(), per_system=4, seed=0) -> EvalData:
    """Per-output data whose per-system means are exactly ``means`` (symmetric noise around each mean)."""
    rng = np.random.default_rng(seed)
    systems, cols = [], {}
    names = list(next(iter(means.values())))
    for s, vals in means.items():
        systems += [s] * per_system
        for k in names:
            noise = rng.normal(size=per_system // 2)
            cols.setdefault(k, []).extend(vals[k] + np.r_[noise, -noise])
    n = len(systems)
    ratings = {k: np.array(v) for k, v in cols.items() if k.startswith("h_")}
    metrics = {k: np.array(v) for k, v in cols.items() if not k.startswith("h_")}
    return EvalData(ids=np.array([f"x{i}" for i in range(n)], dtype=object), system=np.array(systems, dtype=object),
                    dataset=np.array(["D"] * n, dtype=object), item=None, ratings=ratings, metrics=metrics,
                    info={m: MetricInfo(m, "column") for m in metrics}, human_systems=list(human))


def test_system_level_from_items_equals_correlation_of_system_means():
    rng = np.random.default_rng(4)
    means = {f"s{i}": {"h_q": float(rng.uniform(1, 6)), "m": float(rng.normal())} for i in range(7)}
    d = _data_from_system_means(means, per_system=6)
    res = analyse(d, Settings(bootstrap_n=0, permutation_n=0, williams=False, protocols=["none"], per_system=False),
                  progress=False)
    c = res.correlations
    H = [v["h_q"] for v in means.values()]
    M = [v["m"] for v in means.values()]
    for meth, fn in [("pearson", scipy.stats.pearsonr), ("spearman", scipy.stats.spearmanr), ("kendall", scipy.stats.kendalltau)]:
        row = c[(c.level == "system") & (c.method == meth)].iloc[0]
        assert row.r == pytest.approx(fn(M, H).statistic) and row.n == 7


# Reiter & Belz (2009), Table 5 (system means of expert / non-expert ratings and metrics, Experiment 1) and
# Table 6 (Pearson r; set I: all systems and corpus texts, set II: NLG systems only).
RB_TABLE5 = {  # system: (Exp, Non, NIST-5, BLEU-4, ROUGE-SU4, ROUGE-2, SE)
    "ST-Hybrid": (3.82, 3.90, 6.382, 0.584, 0.558, 0.528, 0.705),
    "pCRU-greedy": (3.59, 3.51, 6.871, 0.694, 0.656, 0.634, 0.800),
    "ST-Corpus": (3.22, 3.62, 8.705, 0.951, 0.839, 0.815, 0.917),
    "pCRU-roulette": (3.11, 3.49, 6.206, 0.563, 0.554, 0.51, 0.735),
    "pCRU-2gram": (2.68, 3.29, 5.925, 0.598, 0.586, 0.556, 0.783),
    "pCRU-random": (2.43, 2.51, 4.608, 0.355, 0.462, 0.419, 0.649),
}
RB_TABLE6 = {  # metric: (Exp set I, Non set I, Exp set II, Non set II)
    "NIST-5": (0.534, 0.685, 0.836, 0.886), "BLEU-4": (0.461, 0.639, 0.700, 0.797),
    "ROUGE-SU4": (0.362, 0.518, 0.611, 0.654), "ROUGE-2": (0.379, 0.527, 0.616, 0.647),
    "SE": (0.260, 0.483, 0.339, 0.505),
}


def test_system_level_sets_reproduce_reiter_belz_table6():
    names = ["h_exp", "h_non", "NIST-5", "BLEU-4", "ROUGE-SU4", "ROUGE-2", "SE"]
    means = {s: dict(zip(names, v)) for s, v in RB_TABLE5.items()}
    d = _data_from_system_means(means, human=["ST-Corpus"])
    res = analyse(d, Settings(methods=["pearson"], tails=1, bootstrap_n=0, permutation_n=0, williams=False,
                              protocols=["none"], per_system=False), progress=False)
    c = res.correlations
    sysc = c[c.level == "system"].set_index(["subset", "rating", "metric"])
    for m, (e1, n1, e2, n2) in RB_TABLE6.items():
        # Table 5 is rounded to 2-3 digits, so the recomputed r agree with Table 6 to within 0.006
        assert sysc.loc[("all · all systems", "h_exp", m), "r"] == pytest.approx(e1, abs=0.006)
        assert sysc.loc[("all · all systems", "h_non", m), "r"] == pytest.approx(n1, abs=0.006)
        assert sysc.loc[("all · excluding human", "h_exp", m), "r"] == pytest.approx(e2, abs=0.006)
        assert sysc.loc[("all · excluding human", "h_non", m), "r"] == pytest.approx(n2, abs=0.006)
    # "For set II, NIST-5 has a significant correlation with both expert and non-expert scores" (1-tailed,
    # no correction); for set I none of the metrics does
    res0 = analyse(d, Settings(methods=["pearson"], tails=1, correction="none", bootstrap_n=0, permutation_n=0,
                               williams=False, protocols=["none"], per_system=False), progress=False)
    s0 = res0.correlations[res0.correlations.level == "system"]
    assert set(s0[s0.significant & (s0.subset == "all · excluding human")].metric) == {"NIST-5"}
    assert not s0[(s0.subset == "all · all systems")].significant.any()


def test_system_level_bootstrap_resamples_systems():
    rng = np.random.default_rng(6)
    means = {f"s{i}": {"h_q": float(i), "m": float(i + rng.normal() * 0.5)} for i in range(3)}
    d = _data_from_system_means(means, per_system=40)
    res = analyse(d, Settings(methods=["pearson"], bootstrap_n=200, permutation_n=0, williams=False,
                              protocols=["none"], per_system=False), progress=False)
    row = res.correlations.query("level == 'system'").iloc[0]
    # resampling 3 systems (not 120 outputs): some resamples repeat one system and are undefined
    assert row.ci_valid < 200 and row.ci_low <= row.r <= row.ci_high


def _pairs_data(test_items=True):
    """Three systems on 30 shared items: A clearly better than C, B in between (ratings 1-6)."""
    rng = np.random.default_rng(9)
    systems, items, h, good, bad = [], [], [], [], []
    for i in range(30):
        base = rng.uniform(2, 4)
        for s, shift in (("A", 1.5), ("B", 0.7), ("C", 0.0)):
            r = float(np.clip(np.round((base + shift + rng.normal(0, 0.3)) * 2) / 2, 1, 6))
            systems.append(s)
            items.append(f"D\x1fmr{i}")
            h.append(r)
            good.append(r + rng.normal(0, 0.2))
            bad.append(-r + rng.normal(0, 0.2))
    n = len(h)
    return EvalData(ids=np.array([f"x{i}" for i in range(n)], dtype=object), system=np.array(systems, dtype=object),
                    dataset=np.array(["D"] * n, dtype=object), item=np.array(items, dtype=object) if test_items else None,
                    ratings={"q": np.array(h)}, metrics={"good": np.array(good), "bad": np.array(bad)},
                    info={"good": MetricInfo("good", "column"), "bad": MetricInfo("bad", "column")})


def test_table9_counts_predicted_significant_differences():
    d = _pairs_data()
    res = analyse(d, Settings(methods=["pearson"], bootstrap_n=0, permutation_n=0, williams=False, protocols=["none"]),
                  progress=False)
    sp = res.system_pairs
    assert list(sp.test.unique()) == ["Wilcoxon signed-rank"] and len(sp) == 3 and sp.significant.all()
    # Bonferroni across the 3 pairs, p from scipy's Wilcoxon on the item-paired ratings
    a = d.ratings["q"][d.system == "A"]
    c = d.ratings["q"][d.system == "C"]
    row = sp[(sp.system_a == "A") & (sp.system_b == "C")].iloc[0]
    assert row.p == pytest.approx(scipy.stats.wilcoxon(a, c).pvalue) and row.p_adj == pytest.approx(min(1, 3 * row.p))
    assert row.better == "A"
    pred = res.predicted.set_index("metric")
    assert pred.loc["good", "predicted"] == 3 and pred.loc["bad", "predicted"] == 0 and pred.loc["good", "significant"] == 3


def test_tukey_without_items_matches_statsmodels():
    from statsmodels.stats.multicomp import pairwise_tukeyhsd

    d = _pairs_data(test_items=False)
    res = analyse(d, Settings(methods=["pearson"], bootstrap_n=0, permutation_n=0, williams=False, protocols=["none"]),
                  progress=False)
    assert any("Tukey HSD instead of Wilcoxon" in n for n in res.notes)
    ref = pairwise_tukeyhsd(d.ratings["q"], d.system)
    np.testing.assert_allclose(res.system_pairs["p"].to_numpy(), ref.pvalues)


def test_perm_both_with_groups_uses_the_averaged_protocol():
    rng = np.random.default_rng(11)
    groups = np.repeat(np.arange(20), 6)
    h = rng.normal(size=groups.size)
    good = h + rng.normal(size=h.size) * 0.5
    # "shifted" is as good inside each group but carries group offsets: equal per-item correlations, worse flat
    shifted = good + groups * 3.0
    flat = S.perm_both(h, good, shifted, n_permutations=300, seed=2)
    grouped = S.perm_both(h, good, shifted, groups=groups, n_permutations=300, seed=2)
    assert flat.delta > 0.3 and flat.p_a_better < 0.01
    assert grouped.delta == pytest.approx(0, abs=1e-9) and grouped.p_a_better > 0.05


# ---- p-values against independent computations (issue 14 point 6) ------------------------------------------
def _exact_perm_both(h, m1, m2, corr):
    """PERM-BOTH by brute force: every one of the 2^n patterns of swapping the two (z-scored) metrics' scores on
    an item is equally likely under the null; p = share of patterns whose delta is at least the observed one."""
    import itertools

    z = lambda v: (v - v.mean()) / v.std()  # noqa: E731  (population sd, as mt-metrics-eval)
    a, b = z(np.asarray(m1, float)), z(np.asarray(m2, float))
    observed = corr(h, a) - corr(h, b)
    ge = le = 0
    for swap in itertools.product((False, True), repeat=len(h)):
        s = np.array(swap)
        d = corr(h, np.where(s, b, a)) - corr(h, np.where(s, a, b))
        ge += d >= observed - 1e-12
        le += d <= observed + 1e-12
    n = 2 ** len(h)
    return ge / n, le / n, observed


@pytest.mark.parametrize("method,corr", [
    ("pearson", lambda x, y: np.corrcoef(x, y)[0, 1]),
    ("spearman", lambda x, y: scipy.stats.spearmanr(x, y).statistic),
])
def test_perm_both_p_value_matches_exact_enumeration_of_all_swaps(method, corr):
    rng = np.random.default_rng(21)
    n = 11
    h = rng.normal(size=n)
    m1 = h + rng.normal(size=n) * 0.9  # two metrics of similar quality: a p-value far from 0 and 1
    m2 = h + rng.normal(size=n) * 1.1
    exact_a, exact_b, observed = _exact_perm_both(h, m1, m2, corr)
    assert 0.05 < exact_a < 0.95  # a case where the test has something to decide
    n_perm = 20000
    res = S.perm_both(h, m1, m2, method, n_permutations=n_perm, seed=3)
    assert res.delta == pytest.approx(observed, abs=1e-12)
    se = math.sqrt(exact_a * (1 - exact_a) / n_perm)  # Monte-Carlo error of the sampled permutations
    assert abs(res.p_a_better - exact_a) < 5 * se
    assert abs(res.p_b_better - exact_b) < 5 * se


def test_bootstrap_p_values_match_independent_resampling_and_the_normal_approximation():
    rng = np.random.default_rng(3)
    v = rng.normal(0.15, 1.0, size=40)
    B, seed = 4000, 5
    res = S.bootstrap_averaged(list(v), n_resamples=B, seed=seed)
    # the same resamples drawn by hand (scipy's semantics: one (B, n) draw of indices from default_rng(seed))
    means = v[np.random.default_rng(seed).integers(0, v.size, (B, v.size))].mean(axis=1)
    assert res.p == pytest.approx(min(1.0, 2 * min(np.mean(means <= 0), np.mean(means >= 0))))
    one = S.bootstrap_averaged(list(v), n_resamples=B, seed=seed, tails=1)
    assert one.p == pytest.approx(np.mean(means <= 0))
    lo, hi = np.percentile(means, [2.5, 97.5])
    assert res.low == pytest.approx(lo, abs=1e-9) and res.high == pytest.approx(hi, abs=1e-9)
    # analytic: the bootstrap distribution of a mean is about normal with sd = sd(v) / sqrt(n)
    se = v.std() / math.sqrt(v.size)
    assert res.p == pytest.approx(2 * scipy.stats.norm.sf(abs(v.mean()) / se), abs=0.05)
    assert one.p == pytest.approx(scipy.stats.norm.sf(v.mean() / se), abs=0.03)
    # correlations: resampled pairs, each replicate's Pearson r computed with numpy
    x = rng.normal(size=30)
    y = 0.3 * x + rng.normal(size=30)
    rc = S.bootstrap_correlation(x, y, "pearson", n_resamples=2000, seed=9)
    idx = np.random.default_rng(9).integers(0, x.size, (2000, x.size))
    rs = np.array([np.corrcoef(x[i], y[i])[0, 1] for i in idx])
    assert rc.p == pytest.approx(min(1.0, 2 * min(np.mean(rs <= 0), np.mean(rs >= 0))))
