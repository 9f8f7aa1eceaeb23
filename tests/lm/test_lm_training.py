"""Training through Hydra + Lightning: train -> export -> load, resume, DDP on CPU, multirun sweeps."""
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir

import qe
from qe.training import build_trainer, run_training

REPO = Path(__file__).resolve().parents[2]
FAST = ["data=lm_sample", "model=lstm_lm_small", "debug=fast", "logger=csv"]


def _cfg(tmp_path, *extra):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose("train", overrides=[*FAST, f"paths.output_dir={tmp_path}", f"paths.root_dir={tmp_path}",
                                           f"export_dir={tmp_path}/export", *extra])


@pytest.mark.parametrize("tokenizer", ["word", "sp"])
def test_train_export_load_identical_scores(tmp_path, tokenizer):
    from qe.lm.task import build

    extra = ["tokenizer=sp", "tokenizer.vocab_size=300"] if tokenizer == "sp" else []
    cfg = _cfg(tmp_path, *extra)
    parts = build(cfg)
    trainer = build_trainer(cfg, parts.callbacks)
    trainer.fit(parts.module, datamodule=parts.datamodule)
    assert parts.export is None and parts.module.export_kind == "slor"  # the module writes its own export
    export = parts.write_export(tmp_path / "export", {}, cfg)
    sents = ["the restaurant serves italian food .", "food the serves restaurant italian .", "a quiet hotel near the park"]
    scorer = qe.load(export, score="logprob")
    got = scorer.score(sents, progress=False)
    # the same numbers straight from the in-memory trained module
    tok, model = parts.datamodule.tokenizer, parts.module.model.eval()
    for s, g in zip(sents, got):
        ids = tok.encode(s)
        inp = torch.tensor([[tok.bos_id] + ids])
        tgt = torch.tensor([ids + [tok.eos_id]])
        assert g == pytest.approx(model.sequence_logprobs(inp, tgt).item(), abs=1e-5)
    assert scorer.name == ("WordLogProb" if tokenizer == "word" else "WPLogProb")
    manifest = qe.core.export.read_manifest(export)
    assert manifest["kind"] == "slor" and manifest["data"]["train_sentences"] > 0
    assert manifest["config"]["tokenizer"]["type"] == tokenizer
    # the manifest stores the plain LSTMLM arguments (not the _target_ config); the training config beside them
    assert manifest["config"]["model"] == {"vocab_size": tok.vocab_size, "embedding_dim": 128, "hidden_size": 128,
                                           "num_layers": 1, "dropout": 0.1, "tie_weights": True, "pad_id": tok.pad_id,
                                           "output_layer": "full", "adaptive_cutoffs": None, "adaptive_div_value": 4.0}
    assert manifest["config"]["train"]["model"]["_target_"] == "qe.lm.task.LanguageModelModule"


def test_model_config_builds_with_target_and_cli_overrides(tmp_path):
    from qe.lm.task import LanguageModelModule, build
    from qe.training import QEModule

    cfg = _cfg(tmp_path, "model.hidden_size=24", "model.embedding_dim=12", "model.num_layers=2")
    assert cfg.model._target_ == "qe.lm.task.LanguageModelModule" and cfg.model._partial_
    module = build(cfg).module
    assert isinstance(module, LanguageModelModule) and isinstance(module, QEModule)
    # vocab_size / pad_id come from the task's tokenizer; the rest from the config and its overrides
    assert module.hparams.hidden_size == 24 and module.hparams.embedding_dim == 12 and module.hparams.num_layers == 2
    assert module.model.lstm.hidden_size == 24 and module.model.proj is not None  # tied through a projection
    assert module.hparams.vocab_size == module.model.vocab_size > 4


def test_bf16_mixed_on_cpu_trains_and_exports(tmp_path):
    cfg = _cfg(tmp_path, "trainer.precision=bf16-mixed", "logger=none", "trainer.max_epochs=1", "demo_sentences=[]")
    m = run_training(cfg)
    assert math.isfinite(m["val/ppl"]) and Path(m["export_path"]).is_dir()
    assert all(math.isfinite(x) for x in qe.load(m["export_path"]).score(["the hotel is near the park ."], progress=False))


def test_adaptive_softmax_trains_under_bf16_mixed_exports_and_loads(tmp_path):
    """model=lstm_lm_adaptive: trains (bf16-mixed on CPU too), orders its head by training frequency, and the export
    rebuilds it: the scorer's log-probabilities are the trained module's, normalised over the vocabulary."""
    from qe.lm.task import build, target_counts

    cfg = _cfg(tmp_path, "model=lstm_lm_adaptive", "model.hidden_size=32", "model.embedding_dim=32", "model.num_layers=1",
               "model.adaptive_cutoffs=[40,200]", "model.lr=0.003", "trainer.precision=bf16-mixed")
    parts = build(cfg)
    model = parts.module.model
    assert model.output_layer == "adaptive" and model.adaptive.cutoffs[:2] == [40, 200]
    counts = target_counts(parts.datamodule)
    head = model.output_rank < 40
    assert counts[head].min() >= counts[~head].max()  # the head holds the most frequent targets
    before = [p.detach().clone() for p in model.adaptive.parameters()]
    trainer = build_trainer(cfg, parts.callbacks)
    trainer.fit(parts.module, datamodule=parts.datamodule)
    assert math.isfinite(float(trainer.callback_metrics["val/ppl"]))
    assert any(not torch.equal(a, b) for a, b in zip(before, model.adaptive.parameters()))  # it learnt
    export = parts.write_export(tmp_path / "export", {}, cfg)
    manifest = qe.core.export.read_manifest(export)
    assert manifest["config"]["model"]["output_layer"] == "adaptive"
    assert manifest["config"]["model"]["adaptive_cutoffs"] == [40, 200]
    tok, model = parts.datamodule.tokenizer, parts.module.model.eval().float()
    scorer = qe.load(export, score="logprob")
    sents = ["the restaurant serves italian food .", "a quiet hotel near the park"]
    for s, g in zip(sents, scorer.score(sents, progress=False)):
        ids = tok.encode(s)
        inp, tgt = torch.tensor([[tok.bos_id] + ids]), torch.tensor([ids + [tok.eos_id]])
        assert g == pytest.approx(model.sequence_logprobs(inp, tgt).item(), abs=1e-5)
        with torch.no_grad():
            lp = scorer.model.log_probs(scorer.model.hidden(inp)[0])
        assert torch.allclose(lp.double().exp().sum(-1), torch.ones(1, len(ids) + 1, dtype=torch.float64), atol=1e-5)
        assert g == pytest.approx(lp.gather(-1, tgt.unsqueeze(-1)).sum().item(), abs=1e-4)


def test_run_training_tests_exports_and_resumes(tmp_path):
    m1 = run_training(_cfg(tmp_path, "trainer.max_epochs=1"))
    assert Path(m1["export_path"]).is_dir() and math.isfinite(m1["val/ppl"])
    last = tmp_path / "checkpoints" / "last.ckpt"
    assert last.is_file()
    step1 = torch.load(last, map_location="cpu", weights_only=True)["global_step"]
    # same run directory, more epochs: picks up last.ckpt (ckpt_path=last is the default) and continues
    m2 = run_training(_cfg(tmp_path, "trainer.max_epochs=2"))
    step2 = torch.load(last, map_location="cpu", weights_only=True)["global_step"]
    assert step2 == 2 * step1 and step1 > 0
    assert m2["export_path"] == m1["export_path"]
    # the CSV logger always writes metrics
    assert list(tmp_path.glob("csv/**/metrics.csv"))


def _run(args, tmp_path, timeout=600):
    env = dict(os.environ, PYTHONUNBUFFERED="1", QE_ROOT_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, str(REPO / "train.py"), *args], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


@pytest.mark.slow
def test_ddp_two_processes_on_cpu(tmp_path):
    r = _run([*FAST, "trainer=ddp_cpu", f"hydra.run.dir={tmp_path}/run", f"export_dir={tmp_path}/export"], tmp_path)
    assert "export written to" in r.stdout
    sc = qe.load(tmp_path / "export")
    assert all(math.isfinite(x) for x in sc.score(["the hotel is near the park ."], progress=False))


@pytest.mark.slow
def test_multirun_sweep(tmp_path):
    _run(["-m", *FAST, "model.hidden_size=16,32", "model.embedding_dim=16", f"hydra.sweep.dir={tmp_path}/sweep",
          "demo_sentences=[]"], tmp_path)
    exports = sorted((tmp_path / "sweep").glob("*/export/qe_export.json"))
    assert len(exports) == 2
    sizes = {qe.core.export.read_manifest(e.parent)["config"]["model"]["hidden_size"] for e in exports}
    assert sizes == {16, 32}
