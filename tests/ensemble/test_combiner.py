"""The learned combiner (qe/ensemble/combiner.py, task=combiner): feature specs, the fitted models against
scikit-learn, leave-one-domain-out on rows whose domains differ, and an export that qe.load scores as the task fitted."""
import json
import pathlib

import numpy as np
import pytest

import qe
from qe.ensemble import combiner as cb
from qe.errors import ExportError


def test_feature_specs():
    assert cb.parse_feature("length") == cb.Feature("length")
    f = cb.parse_feature("coverage:ser")
    assert (f.scorer, f.component, f.column) == ("coverage", "ser", "coverage:ser")
    g = cb.parse_feature({"scorer": "coverage", "component": "coverage", "options": {"lexicon": "sf"}, "name": "cov"})
    assert (g.column, g.options) == ("cov", {"lexicon": "sf"})
    with pytest.raises(ValueError, match="unknown key.*weight"):
        cb.parse_feature({"scorer": "length", "weight": 2})
    with pytest.raises(ValueError, match="needs 'scorer'"):
        cb.parse_feature({"component": "x"})
    with pytest.raises(ValueError, match="also features\\[0\\]"):
        cb.parse_features(["length", "length"])
    with pytest.raises(ValueError, match="at least one feature"):
        cb.parse_features([])


def test_missing_component_names_the_ones_there():
    fs = cb.FeatureSet(["coverage:nonsense"])
    with pytest.raises(ValueError, match="coverage:nonsense.*'coverage'.*'ser'"):
        fs.matrix(["the x is cheap"], mrs=["inform(name='x';pricerange='cheap')"])


def _data(seed=0, n=90):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * [1.0, 10.0, 0.1] + [0.0, 5.0, 1.0]
    y = 2.0 * X[:, 0] - 0.1 * X[:, 1] + rng.normal(scale=0.5, size=n)
    return X, y


@pytest.mark.parametrize("model", [{"type": "ridge"}, {"type": "svr"}, {"type": "svr", "C": 3.0, "kernel": "linear"}])
def test_fitted_predicts_as_sklearn(model):
    from sklearn.linear_model import RidgeCV
    from sklearn.svm import SVR

    X, y = _data()
    fitted = cb.fit(X, y, model)
    Z = (X - X.mean(0)) / X.std(0)
    params = {k: v for k, v in model.items() if k != "type"}
    ref = (RidgeCV(alphas=cb.DEFAULT_ALPHAS) if model["type"] == "ridge" else SVR(**params)).fit(Z, y)
    np.testing.assert_allclose(fitted.predict(X), ref.predict(Z), rtol=1e-9, atol=1e-9)


def test_fit_refuses_bad_models_and_too_few_rows():
    X, y = _data()
    with pytest.raises(ValueError, match="model.type='gbm'"):
        cb.fit(X, y, {"type": "gbm"})
    with pytest.raises(ValueError, match="unknown key.*C"):
        cb.fit(X, y, {"type": "ridge", "C": 1})
    with pytest.raises(ValueError, match="at least 3 rows"):
        cb.fit(X[:2], y[:2])


def test_lodo_fits_without_the_held_out_domain():
    """Domain B's ratings follow the second feature, the four others' the first: a fit without B cannot know B's
    rule, so B's combiner correlation is poor while its second feature alone is good; B's fold leans on the first."""
    rng = np.random.default_rng(1)
    n = 60
    X = rng.normal(size=(5 * n, 2))
    doms = np.repeat(["A", "B", "C", "D", "E"], n)
    y = np.where(doms == "B", X[:, 1], X[:, 0]) + rng.normal(scale=0.1, size=5 * n)
    rep = cb.leave_one_domain_out(X, y, doms, ["f0", "f1"])
    assert rep["domains"]["A"]["combiner"]["pearson"] > 0.85
    assert abs(rep["domains"]["B"]["combiner"]["pearson"]) < 0.4
    assert rep["domains"]["B"]["features"]["f1"]["pearson"] > 0.9
    w = rep["domains"]["B"]["weights"]
    assert w["f0"] > 0.5 and abs(w["f1"]) < 0.1
    # the fold's model is exactly a fit on the other two domains
    again = cb.fit(X[doms != "B"], y[doms != "B"])
    assert again.weights(["f0", "f1"]) == pytest.approx(w)
    table = cb.format_lodo(rep, "t")
    assert "**combiner**" in table and "| f1 |" in table
    with pytest.raises(ValueError, match="two or more domains"):
        cb.leave_one_domain_out(X, y, ["A"] * len(y), ["f0", "f1"])


def test_grouped_cv_keeps_an_input_out_of_its_own_fit():
    """Each input's outputs share a per-input offset in the rating that the features cannot see; a fit that saw
    other outputs of an input is not possible here, so the out-of-fold figure is each fold's fit on other inputs,
    and the pooled predictions are exactly those fits' predictions."""
    from qe.core.folds import input_folds

    rng = np.random.default_rng(2)
    groups = np.repeat(np.arange(40), 8)
    X = rng.normal(size=(len(groups), 2))
    y = 2 * X[:, 0] + rng.normal(size=40)[groups] + rng.normal(scale=0.1, size=len(groups))
    systems = np.tile([f"s{k}" for k in range(8)], 40)
    rep = cb.grouped_cross_validation(X, y, groups, ["f0", "f1"], folds=5, seed=3, systems=systems)
    fold = input_folds(list(groups), 5, 3)
    for g in range(40):
        assert len(set(fold[groups == g])) == 1
    k = 2
    again = cb.fit(X[fold != k], y[fold != k])
    np.testing.assert_allclose(rep["oof"][fold == k], again.predict(X[fold == k]))
    assert rep["folds"][str(k)]["weights"] == pytest.approx(again.weights(["f0", "f1"]))
    assert rep["pooled"]["pearson"] > 0.7 and rep["mean"]["features"]["f1"]["pearson"] < 0.3
    assert rep["groups"] == 40 and rep["system"]["systems"] == 8 and set(rep["system_features"]) == {"f0", "f1"}
    table = cb.format_cv({k: v for k, v in rep.items() if k != "oof"}, "t")
    assert "**combiner**" in table and "system level" in table
    with pytest.raises(ValueError, match="cannot fill 5 folds"):
        cb.grouped_cross_validation(X[:16], y[:16], groups[:16], ["f0", "f1"], folds=5)


def test_task_reports_out_of_fold_figures(tmp_path):
    metrics = _run_task(tmp_path, "task.dataset=sample", "task.rating=quality", "task.domain_key=null",
                        "task.cv_folds=3", "export=false")
    assert {"cv/mean/spearman", "cv/pooled/pearson", "cv/system/pearson"} <= set(metrics)
    assert not any(k.startswith("lodo/") for k in metrics)
    report = json.loads((tmp_path / "run" / "combiner_report.json").read_text())
    assert report["cv"]["k"] == 3 and "oof" not in report["cv"]
    rows = [json.loads(x) for x in (tmp_path / "run" / "oof_predictions.jsonl").read_text().splitlines()]
    assert len(rows) == report["records"] and all(np.isfinite(r["oof"]) for r in rows)
    assert (tmp_path / "run" / "combiner_report.md").read_text().startswith("Out of fold, 3 folds")
    with pytest.raises(ValueError, match="task.group_key=nope: record .* has no 'nope'"):
        _run_task(tmp_path / "b", "task.dataset=sample", "task.rating=quality", "task.domain_key=null",
                  "task.cv_folds=3", "task.group_key=nope", "export=false")


def test_task_reports_several_fold_seeds_from_one_scoring(tmp_path):
    """``task.cv_seed=[1,2,3]``: each seed's figures, the first under the one-seed names, and their mean; the first
    seed's figures equal a run with that seed alone."""
    one = _run_task(tmp_path / "one", "task.dataset=sample", "task.rating=quality", "task.domain_key=null",
                    "task.cv_folds=3", "task.cv_seed=2", "export=false")
    many = _run_task(tmp_path / "many", "task.dataset=sample", "task.rating=quality", "task.domain_key=null",
                     "task.cv_folds=3", "task.cv_seed=[2,5,7]", "export=false")
    assert many["cv/pooled/spearman"] == pytest.approx(one["cv/pooled/spearman"])
    report = json.loads((tmp_path / "many" / "run" / "combiner_report.json").read_text())
    per = report["cv_seeds"]["per_seed"]
    assert report["cv_seeds"]["seeds"] == [2, 5, 7] and list(per) == ["2", "5", "7"]
    mean = np.mean([per[k]["pooled"]["spearman"] for k in per])
    assert many["cv/seeds_mean/pooled_spearman"] == pytest.approx(mean)
    assert len({per[k]["pooled"]["spearman"] for k in per}) > 1  # other fold assignments, other figures
    run = tmp_path / "many" / "run"
    assert (run / "oof_predictions.jsonl").is_file() and (run / "oof_predictions_seed7.jsonl").is_file()
    assert "Pooled out-of-fold figures over fold seeds 2, 5, 7" in (run / "combiner_report.md").read_text()
    with pytest.raises(ValueError, match="distinct seeds"):
        _run_task(tmp_path / "bad", "task.dataset=sample", "task.rating=quality", "task.domain_key=null",
                  "task.cv_folds=3", "task.cv_seed=[1,1]", "export=false")


def _run_task(tmp_path, *overrides):
    from hydra import compose, initialize_config_dir
    from omegaconf import open_dict

    from qe.training import run_training

    conf = pathlib.Path(__file__).resolve().parents[2] / "conf"
    with initialize_config_dir(str(conf), version_base="1.3"):
        cfg = compose("train", overrides=["task=combiner", "logger=none", "task.progress=false", *overrides])
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp_path / "run")
        cfg.export_dir = str(tmp_path / "export")
    return run_training(cfg)


def test_task_exports_what_qe_load_scores(tmp_path):
    from qe.data.datasets import load_dataset

    metrics = _run_task(tmp_path, "task.dataset=sample", "task.rating=quality")
    assert set(metrics) >= {"lodo/SAMPLE-HOTEL/pearson", "lodo/SAMPLE-REST/pearson", "lodo/mean/pearson"}
    report = json.loads((tmp_path / "run" / "combiner_report.json").read_text())
    assert report["final"]["weights"].keys() == {"length", "coverage:coverage"}
    assert (tmp_path / "run" / "combiner_report.md").read_text().startswith("Leave one dataset out")
    sc = qe.load(metrics["export_path"])
    assert sc.requires_mrs and sc.main_component == "combiner"
    recs = [r for r in load_dataset("sample") if r.output.strip() and r.mr][:12]
    outs, mrs = [r.output for r in recs], [r.mr for r in recs]
    comps = sc.score_components(outs, mrs=mrs, progress=False)
    fitted, feats, _ = cb.load_fitted(metrics["export_path"])
    X = np.stack([comps["length"], comps["coverage:coverage"]], axis=1)
    np.testing.assert_allclose(sc.score(outs, mrs=mrs, progress=False), fitted.predict(X))
    np.testing.assert_allclose(comps["combiner"], fitted.predict(X))
    # the length feature is what the length scorer says
    assert comps["length"] == qe.load("length").score(outs, progress=False)
    assert "combiner" in str(sc.signature)


def test_export_refuses_another_build_of_a_feature_model(tmp_path, tiny_corpus):
    from conftest import make_lm_export
    from qe.data.datasets import load_dataset

    lm = make_lm_export(tmp_path / "lm", tiny_corpus)[0]
    metrics = _run_task(tmp_path, "task.dataset=sample", f"task.features=[length,'{lm}:slor']")
    sc = qe.load(metrics["export_path"])
    outs = [r.output for r in load_dataset("sample")[:5]]
    assert len(sc.score(outs, progress=False)) == 5
    # another LM at the same path (a rebuild): refused, naming the feature, unless verify=False
    make_lm_export(tmp_path / "lm2", tiny_corpus, seed=7)
    import shutil

    shutil.rmtree(lm)
    shutil.copytree(tmp_path / "lm2", lm)
    with pytest.raises(ExportError, match=r"feature '.*:slor' reads .*checksum"):
        qe.load(metrics["export_path"])
    assert len(qe.load(metrics["export_path"], verify=False).score(outs, progress=False)) == 5


def test_damaged_spec_is_one_error(tmp_path):
    metrics = _run_task(tmp_path, "task.dataset=sample", "task.features=[length]", "task.domain_key=null")
    assert not any(k.startswith("lodo/") for k in metrics)
    spec = pathlib.Path(metrics["export_path"]) / cb.SPEC
    spec.write_text(json.dumps({"features": [], "model": {"type": "ridge"}}))
    with pytest.raises(ExportError, match="combiner.json: malformed combiner spec"):
        cb.load_fitted(metrics["export_path"])
