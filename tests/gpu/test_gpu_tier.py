"""The GPU tier: what only a CUDA machine can check, in one file (``python -m pytest -m gpu tests/gpu``).

* every family trains one tiny step on CUDA (``trainer=gpu``; bf16-mixed and fp32 for those a Lightning Trainer
  fits), writes its export and scores with it on CUDA: LM (SLOR), RatPred, the GRUEN parts (cola / mlm / sop, tiny random BERTs from
  tests/tiny_models.py; they read CoLA / Brown / WikiText-2 and skip without the data folder), the GRUEN
  combination (gruen_tune, scoring on CUDA), the SVR combiner and an ensemble of two LM exports;
* CPU / GPU parity of the scores of the exported LM and RatPred models (:data:`PARITY_ATOL`);
* a ``trainer=ddp`` run over every GPU present (NCCL; skips with fewer than 2);
* the zoo's ``--gpu`` schedule of the test recipe ``_tiny-slor``.

The tiny settings are tests/cli/test_configs.py's (imported, not copied): a family that trains there on CPU trains
here on CUDA. Every ``gpu`` test skips where torch sees no CUDA device (tests/conftest.py says why). The helpers
take the device as an argument and one unmarked test runs them on CPU, so they are exercised by every CPU run of
the suite and cannot rot between GPU sessions.
"""
from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.test_configs import NEEDS_DATA, _tiny_overrides, tiny_hf  # noqa: F401,F811  (tiny_hf is a fixture; compose_cfg comes from tests/conftest.py)
from conftest import shared_data_dir

REPO = Path(__file__).resolve().parents[2]
PRECISIONS = {"bf16": "bf16-mixed", "fp32": "32-true"}
#: every family that trains (or, for ensemble, is built) through run_training
FAMILIES = ("lm", "ratpred", "cola", "mlm", "sop", "gruen_tune", "svr", "ensemble")
#: those fitted by a Lightning Trainer: run in both precisions (the others do not use trainer.precision: GRUEN's
#: tuning scores with its parts, the SVR combiner is scikit-learn, an ensemble is written, not trained)
LIGHTNING = ("lm", "ratpred", "cola", "mlm", "sop")
#: Python packages a family needs beyond torch / Lightning / transformers / Hydra (a bare GPU image may lack them:
#: the test then skips naming the package; benchmarks/gpu_check.py says how to carry them)
FAMILY_NEEDS = {"sop": ("pysbd",), "gruen_tune": ("pysbd", "spacy", "nltk"), "svr": ("rouge_score",)}
#: Largest |CPU score - GPU score| accepted for the same export, per output: LM per-token SLOR / NCE (nats per
#: token) and RatPred's raw (unrounded) rating. Both sides run in fp32 with TF32 switched off (:func:`parity`), so
#: what differs is the order of summation (cuDNN's fused LSTM / GRU kernels, cuBLAS tiling), about 1e-6 for these
#: tiny models; 1e-4 leaves two orders of headroom and still catches what parity is for: a state not carried, a
#: mask or an id off by one, which move a score by 0.1 or more.
PARITY_ATOL = 1e-4


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _records(n: int = 12):
    from qe.data import load_dataset

    return [r for r in load_dataset("sample") if r.mr and r.refs][:n]


def score_export(export: str | Path, task: str, device: str, **options) -> list[float]:
    """Scores of ``export`` on the embedded sample (outputs, MRs, references) with the scorer on ``device``."""
    import qe

    recs = _records()
    opts = dict(options)
    if task != "svr":  # the SVR combiner's features here are CPU reference metrics: it takes no device
        opts["device"] = device
    scorer = qe.load(export, **opts)
    dev = getattr(scorer, "device", None)
    if dev is not None:
        assert str(dev).startswith(device), f"{task}: scorer on {dev}, asked for {device}"
    return scorer.score([r.output for r in recs], mrs=[r.mr for r in recs], refs=[r.refs for r in recs],
                        progress=False)


def train_export_score(compose, task: str, device: str, precision: str, tmp_path: Path, tiny: dict | None) -> dict:
    """One tiny training run of ``task`` on ``device`` (``cuda``: trainer=gpu; ``cpu``: trainer=cpu) at
    ``precision``, its export, and the export's scores on the same device. Returns metrics, export, scores."""
    from qe.training import run_training

    if task in NEEDS_DATA and shared_data_dir() is None:
        pytest.skip(f"task={task} reads ../shared/data (CoLA / Brown / WikiText-2), which is absent")
    missing = [m for m in FAMILY_NEEDS.get(task, ()) if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"task={task} needs the Python package(s) {', '.join(missing)}, not installed here")
    extra = [f"trainer={'gpu' if device == 'cuda' else 'cpu'}", f"trainer.precision={precision}", "logger=none"]
    if task == "gruen_tune":
        extra.append(f"gruen.device={device}")
    cfg = compose(f"task={task}", *_tiny_overrides(task, tmp_path, tiny), *extra)
    assert cfg.trainer.accelerator == ("gpu" if device == "cuda" else "cpu")
    metrics = run_training(cfg)
    export = Path(metrics["export_path"])
    assert (export / "qe_export.json").is_file()
    scores = score_export(export, task, device)
    finite = [s for s in scores if math.isfinite(s)]
    assert len(finite) >= len(scores) - 1, f"{task}: scores {scores}"
    return {"metrics": metrics, "export": export, "scores": scores, "cfg": cfg}


def parity(export: str | Path, task: str, device: str) -> float:
    """Largest |score on CPU - score on ``device``| of ``export`` (LM: SLOR and NCE per token; RatPred: the raw
    prediction), with fp32 everywhere and TF32 off while it runs (restored after)."""
    import numpy as np
    import torch

    import qe

    recs = _records()
    outs, mrs = [r.output for r in recs], [r.mr for r in recs]
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        got = {}
        for dev in ("cpu", device):
            if task == "lm":
                c = qe.load(export, device=dev, precision="fp32").score_components(outs, progress=False)
                got[dev] = np.array([c["slor"], c["nce"]], dtype=float)
            else:
                got[dev] = np.array(qe.load(export, device=dev, rounded=False).score(outs, mrs=mrs, progress=False))
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
    a, b = got["cpu"], got[device]
    assert np.isfinite(a).all() and np.isfinite(b).all()
    return float(np.abs(a - b).max())


# ---------------------------------------------------------------------------------------------- CPU: the helpers
def test_tier_helpers_run_on_cpu(compose_cfg, tmp_path):
    """The GPU tier's helpers, on CPU (not marked gpu: every CPU run of the suite checks them)."""
    out = train_export_score(compose_cfg, "lm", "cpu", "32-true", tmp_path, None)
    assert out["cfg"].trainer.precision == "32-true" and math.isfinite(out["metrics"]["val/ppl"])
    assert parity(out["export"], "lm", "cpu") == 0.0


# ---------------------------------------------------------------------------------------------- GPU
FAMILY_CASES = [(t, p) for t in FAMILIES for p in (PRECISIONS if t in LIGHTNING else ["fp32"])]


@pytest.mark.gpu
@pytest.mark.parametrize("task,prec", FAMILY_CASES, ids=[f"{t}-{p}" for t, p in FAMILY_CASES])
def test_family_trains_exports_and_scores_on_cuda(compose_cfg, tmp_path, tiny_hf, task, prec):
    out = train_export_score(compose_cfg, task, "cuda", PRECISIONS[prec], tmp_path, tiny_hf)
    if task == "lm":  # trainer=gpu's LM batching was in force
        assert out["cfg"].lm_gpu.max_tokens and out["cfg"].trainer.precision == PRECISIONS[prec]


@pytest.mark.gpu
@pytest.mark.parametrize("task", ["lm", "ratpred"])
def test_cpu_gpu_score_parity(compose_cfg, tmp_path, task):
    out = train_export_score(compose_cfg, task, "cuda", "32-true", tmp_path, None)
    diff = parity(out["export"], task, "cuda")
    assert diff <= PARITY_ATOL, f"{task}: CPU and CUDA scores differ by up to {diff:.3g} (> {PARITY_ATOL})"


@pytest.mark.gpu
@pytest.mark.slow
def test_ddp_over_every_gpu(tmp_path):
    import torch

    n = torch.cuda.device_count()
    if n < 2:
        pytest.skip(f"trainer=ddp needs at least 2 GPUs; this machine has {n}")
    env = dict(os.environ, PYTHONUNBUFFERED="1", QE_ROOT_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    args = ["data=lm_sample", "model=lstm_lm_small", "model.hidden_size=16", "model.embedding_dim=16", "logger=none",
            "trainer=ddp", f"trainer.devices={n}", "trainer.max_epochs=1", "trainer.enable_progress_bar=false",
            "data.batch_size=16", f"hydra.run.dir={tmp_path}/run", f"export_dir={tmp_path}/export",
            "demo_sentences=[]", "test=false"]
    r = subprocess.run([sys.executable, str(REPO / "train.py"), *args], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "nccl" in (r.stdout + r.stderr).lower() or (tmp_path / "export" / "qe_export.json").is_file()
    assert all(math.isfinite(s) for s in score_export(tmp_path / "export", "lm", "cuda"))


@pytest.mark.gpu
@pytest.mark.slow
def test_zoo_gpu_schedule_of_the_test_recipe(tmp_path):
    """``qe zoo build _tiny-slor --gpu`` with trainer=gpu on top (the test recipe has no GPU overrides of its own):
    builds, records the GPU schedule, and the model scores on CUDA."""
    import json

    from qe.zoo.build import build, get_recipe

    get_recipe("_tiny-slor")
    digest = build("_tiny-slor", tmp_path / "models", gpu=True, extra=("trainer=gpu",), quiet=True)
    assert digest
    rec = json.loads((tmp_path / "models" / ".zoo" / "_tiny-slor.json").read_text())
    assert rec["gpu"] is True and "trainer=gpu" in rec["command"]
    assert all(math.isfinite(s) for s in score_export(tmp_path / "models" / "_tiny-slor", "lm", "cuda"))
