"""The human ceiling done right -- agreement among the annotators of the *same* criterion (Krippendorff's alpha,
one annotator vs the others, split halves with Spearman–Brown, for annotators that are not fully crossed) -- and
the small meta-evaluation defects found on Reiter & Belz (2009): unknown system names, constant metrics, Wilcoxon
with no pairs, agreement per system set and with one-tailed p-values, permutation p-values labelled as such,
``stats.methods=[spearman]``."""
import math

import numpy as np
import pytest
import scipy.stats
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from qe.data.record import Record
from qe.evaluation import stats as S
from qe.evaluation.analysis import EvalData, Settings, analyse, build_eval_data
from qe.evaluation.report import ReportWriter
from qe.evaluation.runner import evaluate_records, run_evaluation
from qe.evaluation.scoring import EvaluationConfigError, MetricInfo
from tests.conftest import REPO

FAST = dict(protocols=["none"], bootstrap_n=0, permutation_n=0, williams=False, per_system=False, confounds=False,
            agreement_draws=20)
nan = math.nan


# ---- the estimators -------------------------------------------------------------------------------------------
def test_spearman_brown_formula():
    assert S.spearman_brown(0.5, 2) == pytest.approx(2 / 3)  # 2 * 0.5 / (1 + 0.5)
    assert S.spearman_brown(0.6, 3) == pytest.approx(1.8 / 2.2)
    assert S.spearman_brown(0.37, 1) == pytest.approx(0.37)
    assert S.spearman_brown(S.spearman_brown(0.4, 2.8), 1 / 2.8) == pytest.approx(0.4)  # stepping down undoes it
    assert S.spearman_brown(1.0, 5) == 1.0 and math.isnan(S.spearman_brown(nan, 2))
    # the generalised step-up: equal halves of m annotators each, full mean of 2m -> exactly Spearman–Brown by 2,
    # and the single-annotator reliability is Spearman–Brown by 1/m
    for r, m in ((0.3, 1), (0.55, 1), (0.55, 2)):
        single, full = S.split_half_reliability(r, 1 / m, 1 / m, 1 / (2 * m))
        assert full == pytest.approx(S.spearman_brown(r, 2)) and single == pytest.approx(S.spearman_brown(r, 1 / m))


def test_split_half_reliability_by_hand_for_unequal_halves():
    # halves of 1 and 2 annotators (WebNLG's 3 per output), full mean of 3: with single-annotator reliability
    # rho = 0.4 the half means have reliabilities R1 = 0.4, R2 = 0.8/1.2, so r = sqrt(R1 R2); the step-up must
    # give back rho and R3 = 1.2/1.8
    rho = 0.4
    r1, r2, r3 = rho, 2 * rho / (1 + rho), 3 * rho / (1 + 2 * rho)
    single, full = S.split_half_reliability(math.sqrt(r1 * r2), 1.0, 0.5, 1 / 3)
    assert single == pytest.approx(rho) and full == pytest.approx(r3)
    # the plain Spearman–Brown step-up by 2 would understate it
    assert S.spearman_brown(math.sqrt(r1 * r2), 2) < full - 0.01


def test_split_draw_by_hand():
    # 4 outputs, ratings moved left (NaN padded): 3, 2, 1 and 3 annotators
    values = np.array([[1.0, 2.0, 3.0], [4.0, 6.0, nan], [5.0, nan, nan], [2.0, 2.0, 8.0]])
    k = np.array([3, 2, 1, 3])
    keys = np.array([[0.9, 0.1, 0.5],   # order: 2, 3, 1
                     [0.2, 0.3, 0.0],   # order: 4, 6 (the padding key is ignored)
                     [0.5, 0.5, 0.5],
                     [0.4, 0.6, 0.1]])  # order: 8, 2, 2
    a, b = S.split_draw(values, k, keys, one_vs_rest=True)
    np.testing.assert_allclose(a, [2.0, 4.0, nan, 8.0])
    np.testing.assert_allclose(b, [2.0, 6.0, nan, 2.0])  # mean of (3, 1); 6; -; mean of (2, 2)
    a, b = S.split_draw(values, k, keys, one_vs_rest=False)  # floor(k/2) vs ceil(k/2)
    np.testing.assert_allclose(a, [2.0, 4.0, nan, 8.0])
    np.testing.assert_allclose(b, [2.0, 6.0, nan, 2.0])


def test_annotator_agreement_against_a_hand_computation():
    # 5 outputs, 4 annotators, not fully crossed
    m = np.array([[1, 2, nan, nan],
                  [nan, 3, 4, 5],
                  [6, nan, 6, nan],
                  [nan, nan, 2, 1],
                  [3, 5, 4, nan]], float)
    res = S.annotator_agreement(m, "pearson", draws=1, seed=7)
    # the same draw by hand: the keys come from numpy's default_rng(seed), one per compacted cell
    keys = np.random.default_rng(7).random((5, 3))
    rows = [[1, 2], [3, 4, 5], [6, 6], [2, 1], [3, 5, 4]]

    def halves(one_vs_rest, keys):
        xa, xb = [], []
        for r, kk in zip(rows, keys):
            order = [r[i] for i in np.argsort(kk[:len(r)], kind="stable")]
            na = 1 if one_vs_rest else len(r) // 2
            xa.append(np.mean(order[:na]))
            xb.append(np.mean(order[na:]))
        return xa, xb

    xa, xb = halves(True, keys)
    assert res["one_vs_rest"].r == pytest.approx(np.corrcoef(xa, xb)[0, 1]) and res["one_vs_rest"].n == 5
    keys2 = np.random.default_rng(7)
    keys2.random((5, 3))  # the one-vs-rest draw came first
    xa, xb = halves(False, keys2.random((5, 3)))
    r = np.corrcoef(xa, xb)[0, 1]
    sh = res["split_half"]
    assert sh.r == pytest.approx(r)
    # h: mean 1/size of half A (1,1,1,1,1), of half B (1,1/2,1,1,1/2), of the full mean (1/2,1/3,1/2,1/2,1/3)
    single, full = S.split_half_reliability(r, 1.0, 0.8, (3 * 0.5 + 2 / 3) / 5)
    assert (sh.single, sh.full) == (pytest.approx(single), pytest.approx(full))


def test_perfect_agreement_and_too_few_units():
    m = np.array([[1, 1, nan], [3, nan, 3], [nan, 5, 5], [2, 2, 2]], float)
    res = S.annotator_agreement(m, "spearman", draws=5)
    assert res["one_vs_rest"].r == pytest.approx(1) and res["split_half"].full == pytest.approx(1)
    # two outputs rated twice: undefined, not a number
    res = S.annotator_agreement(np.array([[1, 2], [3, 4], [5, nan]], float), draws=5)
    assert math.isnan(res["one_vs_rest"].r) and res["one_vs_rest"].n == 2


def _simulate(n=2500, workers=60, rho=0.5, seed=0, systems=None):
    """Parallel annotators (true score + independent noise), 1-3 different workers per output."""
    rng = np.random.default_rng(seed)
    t = rng.normal(size=n) * math.sqrt(rho)
    if systems is not None:
        t = t + np.asarray(systems, float)
    k = rng.choice([1, 2, 3], size=n, p=[0.02, 0.18, 0.8])
    m = np.full((n, workers), nan)
    for i in range(n):
        w = rng.choice(workers, k[i], replace=False)
        m[i, w] = t[i] + rng.normal(size=k[i]) * math.sqrt(1 - rho)
    return m, k


def test_not_fully_crossed_design_recovers_the_known_reliabilities():
    rho = 0.5
    m, k = _simulate(rho=rho)
    res = S.annotator_agreement(m, "pearson", draws=30, seed=1)
    sh, ovr = res["split_half"], res["one_vs_rest"]
    true_full = 1 / (1 + (1 - rho) / rho * np.mean(1 / k))  # reliability of the mean of each output's k ratings

    def rel(j):
        return j * rho / (1 + (j - 1) * rho)

    true_ovr = np.mean([math.sqrt(rel(1) * rel(j - 1)) for j in k if j >= 2])
    assert S.krippendorff_alpha(m) == pytest.approx(rho, abs=0.04)
    assert sh.single == pytest.approx(rho, abs=0.04) and sh.full == pytest.approx(true_full, abs=0.03)
    assert ovr.r == pytest.approx(true_ovr, abs=0.03)
    assert ovr.low <= ovr.r <= ovr.high and sh.draws == 30
    # the same seed gives the same figures
    again = S.annotator_agreement(m, "pearson", draws=30, seed=1)["split_half"]
    assert again.r == sh.r


def test_interval_alpha_equals_the_package():
    rng = np.random.default_rng(3)
    m = rng.integers(0, 20, (40, 5)).astype(float) + np.arange(40)[:, None] * 0.5
    m[rng.random(m.shape) < 0.35] = nan
    krippendorff = pytest.importorskip("krippendorff")
    pairable = (~np.isnan(m)).sum(axis=1) >= 2
    want = krippendorff.alpha(reliability_data=m[pairable].T, level_of_measurement="interval")
    assert S.interval_alpha(m) == pytest.approx(want)
    # continuous ratings (more distinct values than the package's coincidence array can hold) go through it
    cont, _ = _simulate(n=600, workers=20)
    assert S.krippendorff_alpha(cont) == pytest.approx(S.interval_alpha(cont[(~np.isnan(cont)).sum(axis=1) >= 2]))


# ---- in the meta-evaluation -----------------------------------------------------------------------------------
def _annotated_records(n_items=40, systems=("A", "B", "C", "D", "human"), seed=0):
    rng = np.random.default_rng(seed)
    recs = []
    shift = {s: i * 0.4 for i, s in enumerate(systems)}
    for j in range(n_items):
        base = rng.normal()
        for s in systems:
            t = base + shift[s]
            workers = rng.choice(12, rng.choice([2, 3]), replace=False)
            ratings = {}
            for w in workers:
                ratings[f"fluency@w{w}"] = float(np.round(3 + t + rng.normal(0, 0.7), 1))
                ratings[f"correctness@w{w}"] = float(np.round(3 + 0.5 * t + rng.normal(0, 1.0), 1))
            recs.append(Record(id=f"{s}-{j}", output="word " * (3 + j % 5), system=s, dataset="D",
                               ratings=ratings, extra={"item": f"i{j}"}))
    return recs


def _eval(recs, metrics=None, **kw):
    metrics = metrics or {"m": np.arange(len(recs), dtype=float) % 7}
    info = {m: MetricInfo(m, "column", True, m) for m in metrics}
    return build_eval_data(recs, {m: np.asarray(v, float) for m, v in metrics.items()}, info, item_key=None,
                           confounds=False, **kw)


def test_ceiling_in_the_report_per_level_and_system_set():
    recs = _annotated_records()
    d = _eval(recs, human_systems=["human"])
    res = analyse(d, Settings(methods=["pearson", "spearman"], system_sets={"top": ["C", "D", "human"]}, **FAST),
                  progress=False)
    ce = res.ceiling
    assert set(ce.level) == {"instance", "system"} and set(ce.rating) == {"fluency", "correctness"}
    assert set(ce.systems) == {"all systems", "excluding human", "top"}
    row = ce.query("level == 'instance' and systems == 'all systems' and rating == 'fluency' and method == 'pearson'").iloc[0]
    assert 0 < row.one_vs_rest < 1 and 0 < row.reliability < 1 and row.ceiling == pytest.approx(math.sqrt(row.reliability))
    assert row.n == len(recs) and row.alpha == pytest.approx(S.krippendorff_alpha(d.annotations["fluency"]))
    sysrow = ce.query("level == 'system' and systems == 'top' and rating == 'fluency' and method == 'pearson'").iloc[0]
    assert sysrow.n == 3 and sysrow.units == "systems"
    report = ReportWriter(d, res, title="t").render()
    summary = report.split("## Settings")[0]
    assert "## Human ceiling: agreement among the annotators of each criterion" in report
    assert "## Correlations between criteria (not a ceiling)" in report
    assert "Human ceiling at instance level" in summary and "one annotator vs the others" in summary
    # the correlation between different criteria is never called a ceiling
    for line in report.splitlines():
        if "ceiling" in line.lower():
            assert "fluency–correctness" not in line and "correctness–fluency" not in line
            assert "fluency – correctness" not in line and "correctness – fluency" not in line


def test_agreement_between_criteria_per_system_set_and_one_tailed():
    """Defect: agreement between ratings was computed over all systems only, and its p-value ignored tails=1."""
    recs = _annotated_records()
    d = _eval(recs, human_systems=["human"])
    sets = {"top": ["C", "D", "human"]}
    two = analyse(d, Settings(methods=["pearson"], system_sets=sets, tails=2, **FAST), progress=False).agreement
    one = analyse(d, Settings(methods=["pearson"], system_sets=sets, tails=1, **FAST), progress=False).agreement
    assert {"all systems", "excluding human", "top"} <= set(two.systems)
    means = {s: (np.mean(d.ratings["fluency"][d.system == s]), np.mean(d.ratings["correctness"][d.system == s]))
             for s in sets["top"]}
    want = scipy.stats.pearsonr([v[0] for v in means.values()], [v[1] for v in means.values()])
    row2 = two.query("level == 'system' and systems == 'top'").iloc[0]
    row1 = one.query("level == 'system' and systems == 'top'").iloc[0]
    assert row2.r == pytest.approx(want.statistic) and row2.n == 3 and row2.p == pytest.approx(want.pvalue)
    inst2 = two.query("level == 'instance' and systems == 'excluding human'").iloc[0]
    inst1 = one.query("level == 'instance' and systems == 'excluding human'").iloc[0]
    keep = d.system != "human"
    ref = scipy.stats.pearsonr(d.ratings["fluency"][keep], d.ratings["correctness"][keep])
    assert inst2.r == pytest.approx(ref.statistic) and inst2.n == int(keep.sum())
    # one-tailed (criteria expected to correlate positively): half the two-tailed p for a positive r
    assert inst1.r > 0 and inst1.p == pytest.approx(inst2.p / 2)
    assert row1.p == pytest.approx(scipy.stats.pearsonr([v[0] for v in means.values()], [v[1] for v in means.values()],
                                                         alternative="greater").pvalue)
    report = ReportWriter(d, analyse(d, Settings(methods=["pearson"], tails=1, **FAST), progress=False),
                          title="t").render()
    assert "one-tailed: criteria of the same outputs are expected to correlate positively" in report


def test_unknown_system_names_are_errors_naming_them():
    recs = _annotated_records(n_items=5)
    d = _eval(recs)
    with pytest.raises(EvaluationConfigError, match=r"stats\.system_sets\.top.*\['Dd'\].*did you mean 'D'"):
        analyse(d, Settings(system_sets={"top": ["C", "Dd"]}, **FAST), progress=False)
    with pytest.raises(EvaluationConfigError, match=r"dataset\.human_systems.*\['humna'\].*'human'"):
        analyse(_eval(recs, human_systems=["humna"]), Settings(**FAST), progress=False)
    with pytest.raises(ValueError, match="stats.system_sets.top is empty"):
        Settings(system_sets={"top": []})


def test_optional_human_system_may_be_absent(tmp_path):
    """WebNLG's config names the reference as human, but loads it only with include_reference=true: an optional
    human system that is absent is a note, not an error; present, it makes the 'excluding human' set."""
    recs = [r for r in _annotated_records(n_items=6) if r.system != "human"]
    out = evaluate_records(recs, tmp_path / "a", scorers={"length": "length"}, item_key=None, plots=False,
                           progress=False, human_systems=["ref"], optional_human_systems=["ref"],
                           stats={"bootstrap": {"n": 0}, "permutation": {"n": 0}, "agreement": {"draws": 5}})
    assert out["data"].human_systems == []
    assert any("ref (dataset.optional_human_systems) not in these records" in n for n in out["results"].notes)
    recs = _annotated_records(n_items=6)
    d = _eval(recs, optional_human_systems=["human"])
    assert d.human_systems == ["human"]
    res = analyse(d, Settings(methods=["pearson"], **FAST), progress=False)
    assert "all · excluding human" in set(res.correlations.subset)
    # the shipped config: the reference is both human and optional
    import yaml

    cfg = yaml.safe_load((REPO / "qe" / "conf" / "dataset" / "webnlg2020.yaml").read_text())
    assert cfg["optional_human_systems"] == cfg["human_systems"] == ["WebNLG-2020-reference"]


def _system_table_data(n_sys: int, const: bool = False) -> EvalData:
    rng = np.random.default_rng(n_sys)
    h = rng.normal(size=n_sys * 4)
    systems = np.repeat([f"S{i}" for i in range(n_sys)], 4)
    metrics = {"good": h + rng.normal(0, 0.5, h.size)}
    if const:
        metrics["flat"] = np.full(h.size, 0.5)
    return EvalData(ids=np.array([f"x{i}" for i in range(h.size)], dtype=object), system=systems.astype(object),
                    dataset=np.array(["D"] * h.size, dtype=object), item=None, ratings={"q": h}, metrics=metrics,
                    info={m: MetricInfo(m, "column") for m in metrics})


def test_constant_metric_says_why():
    d = _system_table_data(6, const=True)
    res = analyse(d, Settings(methods=["pearson", "spearman"], protocols=["none", "sys"], bootstrap_n=0,
                              permutation_n=0, williams=False, confounds=False), progress=False)
    c = res.correlations
    flat = c[c.metric == "flat"]
    assert flat.r.isna().all() and flat.why.str.contains("`flat` is constant here").all()
    assert (c[c.metric == "good"].why == "").all()
    assert res.undefined["constant_metric:flat"].startswith("every `flat` score is 0.5")
    report = ReportWriter(d, res, title="t").render()
    summary = report.split("## Settings")[0]
    assert "Undefined (every `flat` score is 0.5" in summary and "every correlation of the metric `flat`" in summary
    # every table with a — for `flat` says why, beside it
    for block in report.split("\n### "):
        if "q. r" in block and "| flat |" in block and "—" in block.split("| flat |")[1].split("\n")[0]:
            assert "— = undefined: `flat` is constant here (every score is 0.5" in block, block


def test_wilcoxon_with_no_pairs_is_undefined():
    t = S.wilcoxon_paired([], [])
    assert math.isnan(t.p) and math.isnan(t.statistic)
    assert S.wilcoxon_paired([1, 2], [1, 2]).p == 1.0  # pairs, no difference: p = 1 stays
    # A and B share no item; C shares items with both
    sys_, items, h = [], [], []
    rng = np.random.default_rng(0)
    for i in range(12):
        for s in (("A", "C") if i < 6 else ("B", "C")):
            sys_.append(s)
            items.append(f"D\x1fi{i}")
            h.append(float(rng.integers(1, 7)) + (1.5 if s == "C" else 0))
    n = len(h)
    d = EvalData(ids=np.array([f"x{i}" for i in range(n)], dtype=object), system=np.array(sys_, dtype=object),
                 dataset=np.array(["D"] * n, dtype=object), item=np.array(items, dtype=object),
                 ratings={"q": np.array(h)}, metrics={"m": np.array(h) + rng.normal(0, 1, n)},
                 info={"m": MetricInfo("m", "column")})
    res = analyse(d, Settings(methods=["pearson"], **FAST), progress=False)
    sp = res.system_pairs.set_index(["system_a", "system_b"])
    ab = sp.loc[("A", "B")]
    assert ab.n == 0 and math.isnan(ab.p) and math.isnan(ab.p_adj) and not ab.significant
    assert ab.better == "undefined (no pairs)"
    assert sp.loc[("A", "C")].n == 6 and not math.isnan(sp.loc[("A", "C")].p)
    # the family is the pairs that were tested: Bonferroni over 2, not 3
    assert sp.loc[("A", "C")].p_adj == pytest.approx(min(1, 2 * sp.loc[("A", "C")].p))
    report = ReportWriter(d, res, title="t").render()
    line = next(x for x in report.splitlines() if "| q | D | A | B |" in x)
    assert "undefined: no pairs" in line and "n.s." not in line and "1.000" not in line


@pytest.mark.parametrize("n_sys,kind", [(6, "permutation (exact)"), (9, "permutation (9,999 random pairings)"),
                                        (12, "analytic")])
def test_small_sample_spearman_p_values_are_labelled_permutation(n_sys, kind):
    d = _system_table_data(n_sys)
    res = analyse(d, Settings(methods=["pearson", "spearman"], **FAST), progress=False)
    c = res.correlations.set_index(["level", "method"])
    assert c.loc[("system", "spearman"), "p_kind"] == kind
    assert c.loc[("system", "pearson"), "p_kind"] == "analytic"
    report = ReportWriter(d, res, title="t").render()
    sys_block = report.split("### all · all systems — mean of instance scores")[1].split("\n### ")[0]
    if kind != "analytic":
        assert f"p-values of ρ from a {kind} test (Spearman with fewer than 10 points)" in sys_block
    else:
        assert "permutation" not in sys_block
    assert S.correlation([1, 2, 3, 4], [1, 3, 2, 4], "kendall").p_kind == "exact"
    assert S.correlation([1, 2, 2, 4], [1, 3, 2, 4], "kendall").p_kind == "analytic"  # ties: normal approximation


@pytest.fixture
def cfg_for(tmp_path):
    def make(*overrides):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
            return compose("evaluate", overrides=[f"output_dir={tmp_path / 'run'}", "progress=false",
                                                  "stats.bootstrap.n=20", "stats.permutation.n=0",
                                                  "plots.enabled=false", *overrides])

    yield make
    GlobalHydra.instance().clear()


def test_spearman_only_methods_run_end_to_end(cfg_for, tmp_path):
    """Bug: `qe evaluate "stats.methods=[spearman]"` crashed in the per-system table (it assumed Pearson)."""
    res = run_evaluation(cfg_for("stats.methods=[spearman]"))
    report = (tmp_path / "run" / "report.md").read_text()
    assert "### Per-system breakdown (instance level, flatten, within each system)" in report
    block = report.split("### Per-system breakdown (instance level, flatten, within each system)")[1]
    assert ". ρ sysA" in block.split("\n\n")[1] and "_Spearman; n = " in block
    # the only correlation coefficient is Spearman's; the WMT view adds its own measures (qe.evaluation.wmt)
    assert set(res["results"].correlations.method) - {"acc23", "spa", "sys_pairwise_acc"} == {"spearman"}


def test_misspelt_names_through_the_config(cfg_for):
    with pytest.raises(EvaluationConfigError, match=r"stats\.system_sets\.neural: system\(s\) \['sysZ'\] not in the data"):
        run_evaluation(cfg_for("stats.system_sets={neural: [sysA, sysZ]}"))
    with pytest.raises(EvaluationConfigError, match=r"dataset\.human_systems: system\(s\) \['humans'\].*'human'"):
        run_evaluation(cfg_for("dataset.human_systems=[humans]"))
