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
