"""``qe evaluate`` at scale (issue 57, item 7): the bootstrap and permutation draws made in chunks give the results
of one big draw, the fast paths (sums instead of gathered copies, vectorised per-item correlations, the one-sentence
shortcut) equal the plain computations, and a whole analysis is the same whatever the chunk size."""
import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from qe.evaluation import stats as S
from qe.evaluation.analysis import EvalData, Settings, analyse
from qe.evaluation.evaldata import ONE_SENTENCE, count_sentences
from qe.evaluation.scoring import MetricInfo


def _xy(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = np.clip(np.round(3 + x + rng.normal(size=n)), 1, 5)  # 1-5 ratings: many ties
    return x, y


@pytest.mark.parametrize("n", [12, 1500])  # 1500: the Pearson-from-counts path (S.SUMS_MIN_N)
def test_bootstrap_in_chunks_equals_one_draw_and_scipy(n):
    x, y = _xy(n)
    one = S.bootstrap_correlation(x, y, n_resamples=300, seed=5, batch=300)
    for batch in (1, 7, None):
        b = S.bootstrap_correlation(x, y, n_resamples=300, seed=5, batch=batch)
        assert np.array_equal(b.distribution, one.distribution, equal_nan=True)
        assert (b.low, b.high, b.p, b.n_valid) == (one.low, one.high, one.p, one.n_valid)
    # the resamples are scipy's: one (B, n) draw of indices from default_rng(seed)
    ref = scipy.stats.bootstrap((np.arange(n),), lambda i, axis=-1: S.rowwise_pearson(x[i], y[i]), vectorized=True,
                                n_resamples=300, method="percentile", random_state=np.random.default_rng(5))
    assert np.allclose(one.distribution, ref.bootstrap_distribution, atol=1e-12, rtol=0, equal_nan=True)
    assert one.low == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert one.high == pytest.approx(ref.confidence_interval.high, abs=1e-12)


def test_bootstrap_averaged_in_chunks_equals_one_draw():
    v = list(np.random.default_rng(2).normal(0.2, 1, size=333))
    one = S.bootstrap_averaged(v, n_resamples=500, seed=3, batch=500)
    for batch in (1, 64, None):
        b = S.bootstrap_averaged(v, n_resamples=500, seed=3, batch=batch)
        assert np.array_equal(b.distribution, one.distribution) and (b.low, b.high, b.p) == (one.low, one.high, one.p)


def test_default_chunk_keeps_memory_bounded(monkeypatch):
    seen = []
    x, y = _xy(2000)

    def spy(idx):
        seen.append(idx.shape[0])
        return S.rowwise_pearson(x[idx], y[idx])

    monkeypatch.setattr(S, "MAX_DRAW", 10_000)
    S.bootstrap(spy, x.size, n_resamples=100, seed=1)
    assert max(seen) == 5 and sum(seen) == 100


def test_pearson_from_counts_equals_gathered_resamples():
    x, y = _xy(1200, seed=4)
    idx = np.random.default_rng(0).integers(0, x.size, (40, x.size))
    fast = S._pearson_from_counts(x, y)(idx)
    assert np.allclose(fast, S.rowwise_pearson(x[idx], y[idx]), atol=1e-12, rtol=0)
    # a resample that misses the one output where a side varies: undefined (NaN), as with the gathered copy
    x1 = np.zeros(1200)
    x1[7] = 1.0
    rows = np.stack([np.r_[np.arange(7), np.arange(8, 1200), 0], np.arange(1200)])
    got = S._pearson_from_counts(x1, y)(rows)
    assert math.isnan(got[0]) and math.isnan(S.rowwise_pearson(x1[rows], y[rows])[0])
    assert got[1] == pytest.approx(S.rowwise_pearson(x1[rows], y[rows])[1], abs=1e-12)


@pytest.mark.parametrize("n", [40, 1500])
def test_perm_both_in_chunks_equals_one_draw(n):
    rng = np.random.default_rng(1)
    h = rng.integers(1, 6, n).astype(float)
    m1, m2 = h + rng.normal(size=n) * 2, h + rng.normal(size=n) * 2.3
    one = S.perm_both(h, m1, m2, n_permutations=200, seed=9, batch=200)
    for batch in (1, 13, None):
        r = S.perm_both(h, m1, m2, n_permutations=200, seed=9, batch=batch)
        assert (r.p_a_better, r.p_b_better, r.delta) == (one.p_a_better, one.p_b_better, one.delta)


def test_perm_both_from_sums_equals_permuted_copies(monkeypatch):
    rng = np.random.default_rng(3)
    n = 1500
    h = rng.integers(1, 6, n).astype(float)
    m1, m2 = h + rng.normal(size=n) * 2, h + rng.normal(size=n) * 2.1
    fast = S.perm_both(h, m1, m2, n_permutations=300, seed=4)
    monkeypatch.setattr(S, "SUMS_MIN_N", 10**9)  # the general path: permuted copies of both metrics
    plain = S.perm_both(h, m1, m2, n_permutations=300, seed=4)
    assert fast.delta == pytest.approx(plain.delta, abs=1e-12)
    assert (fast.p_a_better, fast.p_b_better) == (plain.p_a_better, plain.p_b_better)
    assert 0 < plain.p_a_better < 1


@pytest.mark.parametrize("method", S.METHODS)
def test_vectorised_group_correlations_equal_one_group_at_a_time(method):
    rng = np.random.default_rng(7)
    n = 900
    groups = np.array([f"item{g}" for g in rng.integers(0, 120, n)], dtype=object)
    groups[:80] = "big"  # one group above SMALL_GROUP: the per-group scipy call
    x = rng.integers(0, 4, n).astype(float)  # ties, and some constant groups
    y = rng.integers(1, 6, n).astype(float)
    x[rng.random(n) < 0.05] = np.nan
    for min_size in (2, 3, 6):
        got = S.group_correlations(x, y, groups, method, min_size)
        ok = ~np.isnan(x)
        labels = groups[ok].astype(str)
        ref = {}
        for g in sorted(set(labels)):
            i = np.flatnonzero(labels == g)
            ref[g] = S.corr_value(x[ok][i], y[ok][i], method) if i.size >= max(2, min_size) else math.nan
        assert list(got) == list(ref)  # the order the bootstrap over groups resamples
        a, b = np.array(list(got.values())), np.array(list(ref.values()))
        assert np.array_equal(np.isnan(a), np.isnan(b)) and (~np.isnan(b)).sum() > 20
        assert np.allclose(a[~np.isnan(a)], b[~np.isnan(b)], atol=1e-12, rtol=0)


def test_one_sentence_shortcut_agrees_with_pysbd():
    from qe.core.text import split_sentences

    rng = np.random.default_rng(0)
    words = ["the", "a", "b", "i", "Mr", "Dr", "U.S", "12", "1", "-", "e.g", "(", ")", '"', "'", ",", ";", ":", "etc",
             "No", "St", "vs", "3.5", "x", "...", "!", "?", "."]
    shortcut = 0
    for _ in range(600):
        text = " ".join(rng.choice(words, rng.integers(1, 12))) + str(rng.choice(["", ".", "!", "?", ". ", "..."]))
        n = count_sentences(text)
        assert n == len(split_sentences(text, "pysbd")), text
        shortcut += bool(ONE_SENTENCE.fullmatch(text.strip()))
    assert shortcut >= 80  # the shortcut was taken often, not just the slow path


def _eval_data(n_items=60, systems=5, seed=0) -> EvalData:
    rng = np.random.default_rng(seed)
    n = n_items * systems
    q = rng.normal(size=n)
    length = np.clip(np.round(12 + 3 * q + rng.normal(0, 4, n)), 3, 30)
    return EvalData(
        ids=np.array([f"x{i}" for i in range(n)], dtype=object),
        system=np.array([f"s{i % systems}" for i in range(n)], dtype=object),
        dataset=np.array(["D"] * n, dtype=object),
        item=np.array([f"D\x1fi{i // systems}" for i in range(n)], dtype=object),
        ratings={"quality": np.clip(np.round(3 + q), 1, 5), "adequacy": np.round(np.clip(60 + 15 * q, 0, 100), 1)},
        metrics={"length": length, "judge": q + rng.normal(size=n)},
        info={"length": MetricInfo("length", "scorer"), "judge": MetricInfo("judge", "column")},
        covariates={"length": length, "sentences": np.ones(n)})


@pytest.mark.parametrize("items", [60, 250])  # 250 x 5 outputs: the sums paths (S.SUMS_MIN_N) as well
def test_analysis_is_the_same_whatever_the_chunk_size(monkeypatch, items):
    d = _eval_data(items)
    st = Settings(bootstrap_n=200, permutation_n=200, methods=["pearson", "spearman", "kendall"],
                  bootstrap_methods=["pearson", "spearman"])
    whole = analyse(d, st, progress=False)
    monkeypatch.setattr(S, "MAX_DRAW", 1)  # one resample / permutation per call
    chunked = analyse(d, st, progress=False)
    for name, rows in (("correlations", 10), ("permutation", 2)):  # permutation: 2 aspects x 1 metric pair
        a, b = getattr(whole, name), getattr(chunked, name)
        assert len(a) >= rows
        pd.testing.assert_frame_equal(a, b)
    assert whole.correlations["ci_low"].notna().sum() > 10


def test_group_codes_order_groups_as_their_string_labels():
    rng = np.random.default_rng(0)
    g = np.array([f"i{v}" for v in rng.integers(0, 50, 300)] + [3, "x\x1fé", "Z", 3.5], dtype=object)
    np.testing.assert_array_equal(np.argsort(S.group_codes(g), kind="stable"), np.argsort(g.astype(str), kind="stable"))
