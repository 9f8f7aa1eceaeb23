"""Confounds (length, sentence count), human agreement and Krippendorff's alpha in the meta-evaluation."""
import math

import numpy as np
import pandas as pd
import pytest

from qe.data.record import Record
from qe.evaluation import stats as S
from qe.evaluation.analysis import Settings, analyse, build_eval_data, covariates_of
from qe.evaluation.report import ReportWriter
from qe.evaluation.scoring import MetricInfo

FAST = dict(methods=["pearson"], protocols=["none"], bootstrap_n=0, permutation_n=0, williams=False, per_system=False)


def _records(lengths, sentences=None, ratings=None, systems=None):
    recs = []
    for i, n in enumerate(lengths):
        k = 1 if sentences is None else int(sentences[i])
        words = ["word"] * int(n)
        # k sentences: split the words into k chunks, each ending with a full stop
        chunks = [words[j::k] for j in range(k)] if k > 1 else [words]
        text = " ".join(" ".join(c) + "." for c in chunks if c)
        recs.append(Record(id=f"r{i}", output=text, system=(systems[i] if systems is not None else f"S{i % 5}"),
                           dataset="D", ratings={a: float(v[i]) for a, v in (ratings or {}).items()}))
    return recs


def _data(recs, metrics, **kw):
    info = {m: MetricInfo(m, "column", True, m) for m in metrics}
    return build_eval_data(recs, {m: np.asarray(v, float) for m, v in metrics.items()}, info, item_key=None, **kw)


@pytest.fixture(scope="module")
def synthetic():
    rng = np.random.default_rng(0)
    n = 400
    length = rng.integers(3, 40, n).astype(float)
    u = rng.normal(size=n)
    quality = -0.6 * (length - length.mean()) / length.std() + u  # longer outputs rated lower, plus a length-free part
    metrics = {"lengthy": length + rng.normal(scale=3.0, size=n),      # length plus noise
               "honest": u + rng.normal(scale=0.7, size=n)}             # tracks the length-free part only
    recs = _records(length, ratings={"quality": quality})
    d = _data(recs, metrics)
    return d, analyse(d, Settings(**FAST))


def test_length_plus_noise_is_flagged_and_an_independent_metric_is_not(synthetic):
    d, res = synthetic
    cf = res.confounds.set_index(["level", "subset", "metric", "rating"])
    lengthy = cf.loc[("instance", "all", "lengthy", "quality")]
    honest = cf.loc[("instance", "all", "honest", "quality")]
    assert abs(lengthy.rho_length) > 0.9 and lengthy.explained and "ρ(metric, length)" in lengthy.reason
    assert lengthy.r < -0.3 and abs(lengthy.partial_length) < 0.5 * abs(lengthy.r)  # the raw correlation is length's
    assert abs(lengthy.within_length_bins) < 0.5 * abs(lengthy.r) and lengthy.bins == 5
    assert not honest.explained and abs(honest.rho_length) < 0.15
    assert abs(honest.partial_length) > 0.8 * abs(honest.r)
    report = ReportWriter(d, res, title="t").render()
    summary = report.split("## Settings")[0]
    assert "## Summary" in summary and "`lengthy`" in summary and "`honest`" not in summary
    assert "## Confounds: output length and sentence count" in report


def test_partial_correlation_equals_correlation_of_residuals():
    rng = np.random.default_rng(1)
    z = rng.normal(size=200)
    x = z + rng.normal(size=200)
    y = 0.5 * z + rng.normal(size=200)
    design = np.column_stack([np.ones_like(z), z])
    rx = x - design @ np.linalg.lstsq(design, x, rcond=None)[0]
    ry = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    pc = S.partial_correlation(x, y, {"z": z}, "pearson")
    assert pc.r == pytest.approx(np.corrcoef(rx, ry)[0, 1], abs=1e-10) and pc.n == 200
    # t test with n - 2 - k degrees of freedom
    t = pc.r * math.sqrt((200 - 3) / (1 - pc.r**2))
    import scipy.stats

    assert pc.p == pytest.approx(2 * scipy.stats.t.sf(abs(t), 197), rel=1e-6)
    assert math.isnan(S.partial_correlation(x, y, {"z": np.ones(200)}, "pearson").r)  # constant covariate
    assert math.isnan(S.partial_correlation(x[:3], y[:3], {"z": z[:3]}, "pearson").r)  # n < 3 + covariates


def test_sentence_count_confound_uses_the_project_splitter():
    cov = covariates_of(["One sentence here.", "Two of them. Yes two.", "", "Mr. Smith went home. He slept."])
    assert cov["length"].tolist() == [3, 5, 0, 6] and cov["sentences"].tolist() == [1, 2, 0, 2]
    rng = np.random.default_rng(2)
    n = 300
    sents = rng.integers(1, 5, n)
    length = sents * 6 + rng.integers(0, 3, n)
    quality = -0.8 * sents + rng.normal(size=n)
    recs = _records(length, sentences=sents, ratings={"quality": quality})
    d = _data(recs, {"discourse": sents + rng.normal(scale=0.3, size=n)})
    assert d.covariates["sentences"].tolist() == sents.tolist()
    row = analyse(d, Settings(**FAST)).confounds.query("level == 'instance' and subset == 'all'").iloc[0]
    assert row.explained and abs(row.partial_sentences) < 0.5 * abs(row.r)


def test_krippendorff_alpha_reproduces_the_published_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", 4 coders x 12 units with missing values:
    # interval alpha = 0.849 (nominal 0.743)
    nan = math.nan
    data = np.array([[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
                     [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
                     [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
                     [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]]).T
    assert S.krippendorff_alpha(data, "interval") == pytest.approx(0.849, abs=1e-3)
    assert S.krippendorff_alpha(data, "nominal") == pytest.approx(0.743, abs=1e-3)
    assert math.isnan(S.krippendorff_alpha(np.ones((5, 3))))


def test_per_annotator_ratings_give_alpha_and_the_mean_rating():
    rng = np.random.default_rng(3)
    truth = rng.integers(1, 6, 60).astype(float)
    recs = [Record(id=f"r{i}", output="a b c " * (1 + i % 4), system=f"S{i % 3}", dataset="D",
                   ratings={"quality@ann1": truth[i], "quality@ann2": truth[i] + rng.choice([0, 1]),
                            "fluency": truth[i] + rng.normal()})
            for i in range(60)]
    d = _data(recs, {"m": truth + rng.normal(size=60)})
    assert set(d.ratings) == {"quality", "fluency"} and d.annotations["quality"].shape == (60, 2)
    assert d.ratings["quality"] == pytest.approx((d.annotations["quality"]).mean(axis=1))
    res = analyse(d, Settings(**FAST))
    a = res.alpha.set_index("subset").loc["all"]
    assert a.annotators == 2 and a.units == 60 and 0.5 < a.alpha < 1
    ag = res.agreement.query("level == 'instance' and subset == 'all'").iloc[0]
    assert ag.r == pytest.approx(np.corrcoef(d.ratings["quality"], d.ratings["fluency"])[0, 1])
    report = ReportWriter(d, res, title="t").render()
    assert "Krippendorff's α" in report and "Human ceiling" in report
    assert pd.notna(ag.p)
