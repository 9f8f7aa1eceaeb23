"""ROUGE-LM (z-sum of ROUGE-L-mult and an LM score) and the SVR combiner (task=svr): export without pickle,
loader predictions identical to sklearn's, the Hydra runner end to end on the embedded sample."""
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

import qe
from qe.errors import ExportError
from qe.lm.model import LSTMLM
from qe.lm.format import save as save_lm_export
from qe.lm.format import unigram_logprobs
from qe.refmetrics.format import save as save_svr_export
from qe.refmetrics.svr import SVRScorer, kann_mse
from qe.refmetrics.task import fit_and_evaluate, kann_split
from qe.core.tokenization import WordTokenizer

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def lm_export(tiny_lm_export):
    return tiny_lm_export


OUTS = ["the cat sat on the mat .", "a dog sat on the log .", "the the cat mat .", "the hotel allows dogs ."]
REFS = [["the cat sat on the mat ."], ["the dog sat on the log .", "a dog is on the log ."],
        ["the cat is on the mat ."], ["the hotel has free internet and allows dogs ."]]


def test_rouge_lm_is_the_sum_of_z_scores(lm_export, tmp_path):
    sc = qe.load("rouge-lm", lm=str(lm_export))
    comps = sc.score_components(OUTS, refs=REFS, progress=False)
    r = np.array(qe.load("rouge-l-mult").score(OUTS, refs=REFS, progress=False))
    s = np.array(qe.load(lm_export).score(OUTS, progress=False))
    assert comps["rouge"] == pytest.approx(r.tolist())
    assert comps["lm"] == pytest.approx(s.tolist())
    want = (r - r.mean()) / r.std() + (s - s.mean()) / s.std()
    assert sc.score(OUTS, refs=REFS, progress=False) == pytest.approx(want.tolist())
    sig = sc.signature
    assert sig.startswith("ROUGE-LM(") and sig.fields["norm"] == "set"
    assert sig.fields["rouge"].startswith("ROUGE-L|") and "export:" in sig.fields["lm"]  # both parts named in full
    # fixed statistics from a reference set, stored and reloaded: a one-output set then scores the same
    stats = sc.fit_stats(OUTS, REFS)
    path = sc.save_stats(tmp_path / "stats.json")
    fixed = qe.load("rouge-lm", lm=str(lm_export), stats=str(path))
    assert "norm:fixed" in fixed.signature
    assert fixed.score(OUTS[1:2], refs=REFS[1:2], progress=False)[0] == pytest.approx(want[1])
    assert json.loads(path.read_text())["rouge"] == pytest.approx(stats["rouge"])


def test_rouge_lm_empty_output_is_nan_and_lm_required(lm_export):
    got = qe.load("rouge-lm", lm=str(lm_export)).score(["", *OUTS], refs=[["x"], *REFS], progress=False)
    assert math.isnan(got[0]) and all(np.isfinite(got[1:]))
    with pytest.raises(ValueError, match="needs an LM export"):
        qe.load("rouge-lm")


def test_kann_mse_and_split():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert kann_mse(x, 2 * x + 1) == pytest.approx(0.0)
    assert kann_mse(x, np.array([1.0, -1.0, 1.0, -1.0])) == pytest.approx(1.0 * (1 - 0.2))  # var(y) (1 - r^2), r^2 = 0.5^2 / 1.25
    sp = kann_split(1200, 500, 500, seed=3)
    assert [len(sp[k]) for k in ("train", "dev", "test")] == [500, 500, 200]
    assert len(set(np.concatenate(list(sp.values())))) == 1200
    assert (kann_split(1200, 500, 500, seed=3)["test"] == sp["test"]).all()
    with pytest.raises(ValueError, match="no test records"):
        kann_split(900, 500, 500)


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly", "sigmoid"])
def test_exported_svr_reproduces_sklearn_exactly(tmp_path, kernel):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2)) * [0.2, 3.0] + [0.5, -1.0]
    y = np.clip(3 + 2 * X[:, 0] + 0.3 * X[:, 1] + rng.normal(scale=0.5, size=300), 1, 6)
    split = kann_split(300, 100, 100, seed=0)
    model, mean, scale, metrics = fit_and_evaluate(X, y, split, {"kernel": kernel})
    assert metrics["train/n"] == 100 and np.isfinite(metrics["test/pearson"])
    dest = save_svr_export(tmp_path / "svr", model, ["rouge-l-mult", "bleu-4"], mean, scale, lm_export=None)
    assert not any(p.suffix in (".pkl", ".pickle", ".joblib") for p in dest.iterdir())
    sc = qe.load(dest)
    assert isinstance(sc, SVRScorer) and sc.requires_refs
    want = model.predict((X - mean) / scale)
    got = sc.predict_features(X)
    assert np.max(np.abs(got - want)) <= 1e-12
    assert f"kernel:{kernel}" in sc.signature


def test_svr_export_checks(tmp_path, lm_export):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(60, 2)), rng.normal(size=60)
    model, mean, scale, _ = fit_and_evaluate(X, y, kann_split(60, 20, 20))
    dest = save_svr_export(tmp_path / "svr", model, ["rouge-l-mult", "lm:slor"], mean, scale, lm_export=lm_export)
    sc = qe.load(dest)
    # features computed from text and the stored LM: the same as computing them by hand
    X2 = np.stack([qe.load("rouge-l-mult").score(OUTS, refs=REFS, progress=False),
                   qe.load(lm_export).score(OUTS, progress=False)], axis=1)
    assert sc.score(OUTS, refs=REFS, progress=False) == pytest.approx(sc.predict_features(X2).tolist(), abs=1e-12)
    comps = sc.score_components(OUTS, refs=REFS, progress=False)
    assert set(comps) == {"rouge-l-mult", "lm:slor", "svr"}
    # a different LM export is refused (checksum), a missing one is named
    other = save_lm_export(tmp_path / "lm2", LSTMLM(vocab_size=qe.load(lm_export).tokenizer.vocab_size,
                                                      embedding_dim=8, hidden_size=8, num_layers=1, dropout=0.0,
                                                      tie_weights=True),
                           qe.load(lm_export).tokenizer, np.zeros(qe.load(lm_export).tokenizer.vocab_size),
                           dict(vocab_size=qe.load(lm_export).tokenizer.vocab_size, embedding_dim=8, hidden_size=8,
                                num_layers=1, dropout=0.0, tie_weights=True, pad_id=0))
    with pytest.raises(ValueError, match="checksum"):
        qe.load(dest, lm=str(other))
    with pytest.raises(FileNotFoundError, match="pass lm=PATH"):
        qe.load(dest, lm=str(tmp_path / "nowhere"))
    # tampering with the weights is detected
    (dest / "svr.safetensors").write_bytes((dest / "svr.safetensors").read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(ExportError, match=r"svr\.safetensors|checksum"):
        qe.load(dest)


@pytest.mark.parametrize("logger", ["none", "csv"])
def test_task_svr_runner_end_to_end(tmp_path, lm_export, logger):
    from hydra import compose, initialize_config_dir

    from qe.training import run_training

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[
            "task=svr", f"task.lm_export={lm_export}", "task.split.train=40", "task.split.dev=40",
            "task.progress=false", f"paths.output_dir={tmp_path}", f"paths.root_dir={tmp_path}",
            f"export_dir={tmp_path}/svr", f"logger={logger}"])
    metrics = run_training(cfg)
    # the runner's metrics go through the configured loggers, as for every task (qe.training.log_metrics)
    csvs = sorted(tmp_path.glob("csv/*/metrics.csv"))
    if logger == "none":
        assert not csvs
    else:
        assert len(csvs) == 1
        import csv

        rows = list(csv.DictReader(csvs[0].open()))
        assert float(rows[-1]["test/pearson"]) == pytest.approx(metrics["test/pearson"])
        assert float(rows[-1]["dev/mse"]) == pytest.approx(metrics["dev/mse"])
    assert metrics["train/n"] == 40 and metrics["dev/n"] == 40 and metrics["test/n"] > 0
    for k in ("test/pearson", "test/mse", "test/rouge-l-mult/pearson", "test/lm:slor/mse", "test/zsum/pearson"):
        assert np.isfinite(metrics[k]), k
    sc = qe.load(metrics["export_path"])
    recs = qe.data.datasets.load_dataset("sample")
    got = sc.score([r.output for r in recs[:5]], refs=[r.refs for r in recs[:5]], progress=False)
    assert all(np.isfinite(got))
    man = qe.core.export.read_manifest(metrics["export_path"], expected_kind="svr")
    assert man["config"]["svr"]["features"] == ["rouge-l-mult", "lm:slor"]
    assert man["data"]["rating"] == "naturalness"
    assert (tmp_path / "svr_report.json").is_file()
