"""Exact resume: a run stopped after some epochs and resumed ends with the same numbers as an uninterrupted one;
a checkpoint cut short by a kill is skipped for the newest readable one."""
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from qe.training import readable_checkpoint, resolve_ckpt, run_training

REPO = Path(__file__).resolve().parents[2]


def _cfg(run_dir: Path, *overrides: str):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose("train", overrides=[
            "data=lm_sample", "model=lstm_lm_small", "model.hidden_size=32", "model.embedding_dim=32",
            "model.dropout=0.3", "logger=csv", "trainer=cpu", "trainer.enable_progress_bar=false",
            "+trainer.limit_train_batches=4", "+trainer.limit_val_batches=2", "demo_sentences=[]", "test=false",
            f"paths.output_dir={run_dir}", f"paths.root_dir={run_dir}", f"export_dir={run_dir}/export", *overrides])


def test_lm_killed_and_resumed_equals_uninterrupted(tmp_path):
    full = run_training(_cfg(tmp_path / "a", "trainer.max_epochs=3"))
    run_training(_cfg(tmp_path / "b", "trainer.max_epochs=1"))  # "killed" after epoch 1 (its last.ckpt stays)
    resumed = run_training(_cfg(tmp_path / "b", "trainer.max_epochs=3", "ckpt_path=last"))
    assert resumed["val/ppl"] == full["val/ppl"], (resumed["val/ppl"], full["val/ppl"])
    wa = torch.load(tmp_path / "a/checkpoints/last.ckpt", weights_only=True)["state_dict"]
    wb = torch.load(tmp_path / "b/checkpoints/last.ckpt", weights_only=True)["state_dict"]
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_truncated_last_checkpoint_falls_back_with_a_warning(tmp_path, caplog):
    run_training(_cfg(tmp_path, "trainer.max_epochs=2"))
    ck = tmp_path / "checkpoints"
    last = ck / "last.ckpt"
    assert readable_checkpoint(last)
    data = last.read_bytes()
    last.write_bytes(data[: len(data) // 2])  # a kill while writing
    assert not readable_checkpoint(last)
    with caplog.at_level("WARNING"):
        got = resolve_ckpt("last", tmp_path)
    assert got is not None and Path(got) != last and readable_checkpoint(got)
    assert "unreadable" in caplog.text
    for p in ck.glob("*.ckpt"):
        p.write_bytes(b"not a checkpoint")
    assert resolve_ckpt("last", tmp_path) is None


@pytest.mark.slow
def test_sigterm_saves_and_exits_promptly(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    env = dict(os.environ, PYTHONUNBUFFERED="1", QE_ROOT_DIR=str(tmp_path))
    args = ["data=lm_sample", "model=lstm_lm_small", "logger=none", "trainer=cpu", "trainer.max_epochs=1000",
            "trainer.enable_progress_bar=false", "+trainer.limit_train_batches=20", "+trainer.limit_val_batches=2",
            "demo_sentences=[]",
            f"hydra.run.dir={tmp_path}/run", f"export_dir={tmp_path}/export"]
    p = subprocess.Popen([sys.executable, str(REPO / "train.py"), *args], cwd=tmp_path, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ck = tmp_path / "run" / "checkpoints" / "last.ckpt"
    t0 = time.time()
    while not ck.exists() and time.time() - t0 < 300:  # wait until training is well under way (epoch 1 done)
        time.sleep(0.5)
    assert ck.exists(), "training never wrote a checkpoint"
    first = ck.stat().st_mtime_ns
    time.sleep(1.0)
    p.send_signal(signal.SIGTERM)
    t1 = time.time()
    out, _ = p.communicate(timeout=60)
    assert time.time() - t1 < 15, "did not exit within 15 s of SIGTERM"
    assert p.returncode == 143, out[-2000:]
    assert "checkpoint written to" in out and ck.stat().st_mtime_ns > first and readable_checkpoint(ck)


class _Planted:
    """Not a tensor or plain data: unpickling it would run this module's code."""

    loaded = False

    def __setstate__(self, state):
        _Planted.loaded = True
        self.__dict__.update(state)


def test_resume_never_unpickles_what_a_checkpoint_holds(tmp_path, monkeypatch):
    """A resume asks Lightning for ``weights_only=True`` (its default, None, loads with False and would unpickle
    anything): a checkpoint holding an object is refused, and the object's code never runs."""
    import functools
    import pickle

    import lightning.pytorch as pl

    run_training(_cfg(tmp_path, "trainer.max_epochs=1"))
    last = tmp_path / "checkpoints" / "last.ckpt"
    ck = torch.load(last, weights_only=True)
    ck["planted"] = _Planted()
    torch.save(ck, last)
    asked = []
    real_fit = pl.Trainer.fit

    @functools.wraps(real_fit)  # the same signature (qe asks for weights_only only where Lightning takes it)
    def fit(self, *a, **kw):
        asked.append(kw.get("weights_only"))
        return real_fit(self, *a, **kw)

    monkeypatch.setattr(pl.Trainer, "fit", fit)
    _Planted.loaded = False
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        run_training(_cfg(tmp_path, "trainer.max_epochs=2", "ckpt_path=last"))
    assert asked == [True] and not _Planted.loaded
