"""Undefined stays undefined: a per-system table (one record per system) runs end to end, says "undefined" once
with its reason, prints nothing on stderr; system level two ways (mean of instance scores vs corpus score)."""
import numpy as np
import pytest
import scipy.stats
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from qe.evaluation.runner import run_evaluation
from tests.conftest import REPO


@pytest.fixture
def cfg_for(tmp_path):
    def make(*overrides):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
            return compose("evaluate", overrides=[f"output_dir={tmp_path / 'run'}", "progress=false", *overrides])

    yield make
    GlobalHydra.instance().clear()


def _system_table(path, with_text=False):
    # a published per-system table: 6 systems, one row each, two rating columns, two metric columns
    q = [3.5, 1.1, 3.4, 4.7, 4.4, 1.7]
    nat = [3.4, 0.5, 4.4, 4.1, 4.2, 1.2]
    bleu = [0.39, 0.13, 0.31, 0.48, 0.38, 0.15]
    lines = ["id,system,dataset,output,ratings.quality,ratings.naturalness,metrics.bleu,metrics.ter"]
    for i in range(6):
        text = " ".join(["w"] * (5 + 3 * i)) if with_text else ""
        lines.append(f"s{i},S{i},D,{text},{q[i]},{nat[i]},{bleu[i]},{1 - bleu[i]:.3f}")
    path.write_text("\n".join(lines) + "\n")
    return q, bleu


def test_per_system_table_end_to_end_says_undefined_once_and_nothing_on_stderr(cfg_for, tmp_path, capfd):
    path = tmp_path / "table.csv"
    q, bleu = _system_table(path)
    capfd.readouterr()
    res = run_evaluation(cfg_for("dataset=file", f"dataset.name={path}", "scorer=[]", "dataset.lower_is_better=[ter]",
                                 "stats.bootstrap.n=50"))
    out, err = capfd.readouterr()
    assert err == "", err  # no numpy / scipy / pandas warnings, no log lines
    report = (tmp_path / "run" / "report.md").read_text()
    summary = report.split("## Settings")[0]
    reason = "one rating per system: the records are a per-system table"
    assert summary.count(reason) == 1 and report.count(reason) == 1  # said once, in the summary
    for name in ("Instance level", "Error measures", "PERM-BOTH", "Pairwise system differences", "Confounds"):
        assert name in summary
    assert "stats.significant_pairs" in summary and "no output text" in summary
    # skipped sections: no tables, no significance columns for tests that did not run
    assert "## Instance level — protocol" not in report and "p adj." not in report and "n.s." not in report
    assert "n pairs" not in report and "Per-system breakdown (instance" not in report
    assert "beats (PERM-BOTH" not in report and "r (oriented, system means)" in report
    # the system level is there, correct, and named
    c = res["results"].correlations
    row = c.query("level == 'system' and protocol == 'system means' and rating == 'quality' and metric == 'bleu' "
                  "and method == 'pearson'").iloc[0]
    assert row.r == pytest.approx(scipy.stats.pearsonr(bleu, q).statistic) and row.n == 6
    assert "### all · all systems — mean of instance scores" in report
    assert set(c.level) == {"system"}


def test_given_significant_pairs_replace_the_tests(cfg_for, tmp_path, capfd):
    path = tmp_path / "table.csv"
    _system_table(path, with_text=True)
    capfd.readouterr()
    res = run_evaluation(cfg_for("dataset=file", f"dataset.name={path}", "scorer=[]", "dataset.lower_is_better=[ter]",
                                 "stats.bootstrap.n=0", "stats.permutation.n=0", "plots.enabled=false",
                                 "stats.significant_pairs=['S3>S1',{better: S0, worse: S2, rating: quality}]",
                                 "stats.system_sets={top: [S0,S2,S3,S4]}"))
    assert capfd.readouterr().err == ""
    pred = res["results"].predicted.set_index(["rating", "metric"])
    # quality: S3>S1 (bleu 0.48 > 0.13: predicted) and S0>S2 (0.39 > 0.31: predicted); naturalness: S3>S1 only
    assert (pred.loc[("quality", "bleu"), "predicted"], pred.loc[("quality", "bleu"), "significant"]) == (2, 2)
    assert (pred.loc[("naturalness", "ter"), "predicted"], pred.loc[("naturalness", "ter"), "significant"]) == (1, 1)
    report = (tmp_path / "run" / "report.md").read_text()
    assert "given as input (`stats.significant_pairs`)" in report and "p adj." not in report
    assert "| bleu | 2 / 2 | 1 / 1 |" in report
    c = res["results"].correlations
    top = c.query("level == 'system' and subset == 'all · top' and method == 'pearson'")
    assert len(top) and (top.n == 4).all()
    # the system-level confound section exists (outputs have text now); instance level stays undefined
    assert "System level, means of instance scores" in report


def test_system_level_two_ways_corpus_bleu_per_system(tmp_path):
    import qe
    from qe.data import load_dataset
    from qe.evaluation.runner import evaluate_records

    recs = load_dataset("sample")
    res = evaluate_records(recs, tmp_path / "out", scorers={"bleu": "bleu-4", "cider": "cider-d"}, plots=False,
                           progress=False, ratings=["quality"],
                           stats={"bootstrap": {"n": 0}, "permutation": {"n": 0}, "williams": False,
                                  "protocols": ["none"], "methods": ["pearson"], "confounds": {"enabled": False}})
    d = res["data"]
    assert set(d.corpus) == {"bleu"}  # CIDEr-D's corpus score is the mean of sentence scores: nothing to add
    units = sorted({(r.dataset, r.system) for r in recs})
    scorer = qe.load("bleu-4")
    corpus = {u: scorer.corpus_score([r.output for r in recs if (r.dataset, r.system) == u],
                                     [r.refs for r in recs if (r.dataset, r.system) == u]) for u in units}
    assert d.corpus["bleu"] == pytest.approx(corpus)
    human = [np.mean([r.ratings["quality"] for r in recs if (r.dataset, r.system) == u]) for u in units]
    c = res["results"].correlations.query("level == 'system' and subset == 'all · all systems' and metric == 'bleu'")
    cs = c[c.protocol == "corpus score"].iloc[0]
    mean = c[c.protocol == "system means"].iloc[0]
    assert cs.r == pytest.approx(scipy.stats.pearsonr([corpus[u] for u in units], human).statistic)
    assert cs.r != pytest.approx(mean.r)
    report = res["report"].read_text()
    assert "— corpus-level score" in report and "bleu (corpus-level)" in report
    # resume keeps the corpus scores
    res2 = evaluate_records(recs, tmp_path / "out", scorers={"bleu": "bleu-4", "cider": "cider-d"}, plots=False,
                            progress=False, ratings=["quality"],
                            stats={"bootstrap": {"n": 0}, "permutation": {"n": 0}, "williams": False,
                                   "protocols": ["none"], "methods": ["pearson"], "confounds": {"enabled": False}})
    assert res2["data"].corpus["bleu"] == pytest.approx(corpus)


def test_metric_files_join_by_id(tmp_path):
    """metric_files: scores computed elsewhere (cross-validated predictions) join by record id; filter picks one
    seed, reduce=mean averages, and a missing id or a duplicate is an error naming it."""
    import json

    import numpy as np

    from qe.data.record import Record
    from qe.evaluation.scoring import EvaluationConfigError, read_metric_file

    recs = [Record(id=f"r{i}", output="x", ratings={"q": float(i)}) for i in range(3)]
    f = tmp_path / "preds.jsonl"
    f.write_text("".join(json.dumps({"id": f"r{i}", "seed": s, "raw": i * 10 + s}) + "\n"
                         for s in (1, 2) for i in range(3)))
    v, desc = read_metric_file("rp", {"path": str(f), "field": "raw", "filter": {"seed": 2}}, recs)
    assert v.tolist() == [2.0, 12.0, 22.0] and "filter" in desc
    v, _ = read_metric_file("rp", {"path": str(f), "field": "raw", "reduce": "mean"}, recs)
    assert np.allclose(v, [1.5, 11.5, 21.5])
    with pytest.raises(EvaluationConfigError, match="'r0' has 2 rows"):
        read_metric_file("rp", {"path": str(f), "field": "raw"}, recs)
    with pytest.raises(EvaluationConfigError, match=r"1 of 4 records have no row.*r9"):
        read_metric_file("rp", {"path": str(f), "field": "raw", "filter": {"seed": 1}},
                         recs + [Record(id="r9", output="y")])
    c = tmp_path / "s.csv"
    c.write_text("id,score\nr0,0.5\nr1,oops\nr2,1\n")
    with pytest.raises(EvaluationConfigError, match=r"s.csv:3: field 'score' = 'oops'"):
        read_metric_file("rp", str(c), recs)
