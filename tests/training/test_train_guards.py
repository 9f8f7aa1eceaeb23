"""``qe train`` guards (issue 36): a vocabulary smaller than asked for is said and recorded (item 9); the SIGTERM
message gives the command that resumes, and that command does resume (18); a quiet console (19)."""
import json
import logging
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import lightning.pytorch as pl
import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

REPO = Path(__file__).resolve().parents[2]
TINY = ["data=lm_sample", "model=lstm_lm_small", "model.hidden_size=16", "model.embedding_dim=16", "logger=none",
        "trainer=cpu", "+trainer.limit_train_batches=3", "+trainer.limit_val_batches=1", "trainer.log_every_n_steps=1",
        "demo_sentences=[]", "test=false"]


def _cfg(tmp_path, *extra):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose("train", overrides=[*TINY, f"paths.output_dir={tmp_path}", f"paths.root_dir={tmp_path}",
                                           f"export_dir={tmp_path}/export", *extra])


# ------------------------------------------------------------------------------------------ 9: vocabulary size
def test_sp_vocab_smaller_than_requested_warns_once_and_is_recorded(tmp_path, caplog):
    from qe.core.export import read_manifest
    from qe.core.tokenization import load_tokenizer
    from qe.lm.task import build

    cfg = _cfg(tmp_path, "tokenizer=sp", "tokenizer.vocab_size=2000")
    with caplog.at_level(logging.WARNING):
        parts = build(cfg)
    real = parts.datamodule.tokenizer.vocab_size
    assert real < 2000
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "vocab_size" in r.getMessage()]
    assert len(lines) == 1 and "2000" in lines[0] and str(real) in lines[0] and "\n" not in lines[0], lines
    export = parts.write_export(tmp_path / "export", {}, cfg)
    tok_cfg = read_manifest(export)["config"]["tokenizer"]
    assert tok_cfg["vocab_size"] == real and tok_cfg["vocab_size_requested"] == 2000, tok_cfg
    # the tokenizer read back (the export's, and the run's cache a resumed run loads) keeps both numbers
    again = load_tokenizer(export)
    assert again.vocab_size == real and again.settings()["vocab_size_requested"] == 2000
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        build(cfg)  # the same run again: the tokenizer comes from the run's cache, and the warning still says so
    assert sum("vocab_size" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING) == 1


def test_sp_hard_vocab_limit_is_one_line_naming_both_numbers(tiny_corpus):
    from qe.core.tokenization import SentencePieceTokenizer

    with pytest.raises(ValueError, match=r"tokenizer.vocab_size=2000.*<= \d+") as e:
        SentencePieceTokenizer.train(tiny_corpus, vocab_size=2000, hard_vocab_limit=True)
    assert "\n" not in str(e.value)


def test_sp_vocab_reached_records_no_shortfall(tiny_corpus, caplog):
    from qe.core.tokenization import SentencePieceTokenizer

    with caplog.at_level(logging.WARNING):
        tok = SentencePieceTokenizer.train(tiny_corpus, vocab_size=40)
    assert tok.vocab_size == 40 and tok.shortfall() is None and "vocab_size_requested" not in tok.settings()
    assert not caplog.records


# ------------------------------------------------------------------------------------------ 18: SIGTERM -> resume
class _SigtermAt(pl.Callback):
    """Sends this process a real SIGTERM after training batch ``at`` (Lightning's handler turns it into a stop)."""

    def __init__(self, at):
        self.at = at

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.global_step == self.at:
            os.kill(os.getpid(), signal.SIGTERM)


class _FirstStep(pl.Callback):
    seen: list = []

    def on_train_start(self, trainer, pl_module):
        _FirstStep.seen.append(trainer.global_step)


@pytest.mark.slow  # two tiny trainings through the whole application
def test_sigterm_message_is_the_command_that_resumes(tmp_path, monkeypatch, capsys):
    from qe import app, training

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("QE_ROOT_DIR", str(tmp_path))
    real_build = training.build_callbacks
    extra = [_SigtermAt(2)]
    monkeypatch.setattr(training, "build_callbacks", lambda *a, **k: real_build(*a, **k) + extra)
    args = [*TINY, "trainer.max_epochs=1", "ckpt_path=null"]  # null: the resume command must say ckpt_path=last
    with pytest.raises(SystemExit) as e:
        app.train(args, prog="qe train")
    assert e.value.code == 143
    err = capsys.readouterr().err
    m = re.search(r"resume with: (.+)$", err, re.M)
    assert m, err[-2000:]
    cd, sep, command = m.group(1).partition(" && ")
    assert sep and shlex.split(cd) == ["cd", str(tmp_path)]
    argv = shlex.split(command)
    assert argv[:2] == ["qe", "train"], argv
    runs = list(tmp_path.glob("outputs/*/runs/*"))
    assert len(runs) == 1 and (runs[0] / "checkpoints" / "last.ckpt").is_file()
    assert f"hydra.run.dir={runs[0].resolve()}" in argv

    # the printed command, run as printed (here in-process): same run folder, training goes on from step 2
    extra[:] = [_FirstStep()]
    _FirstStep.seen = []
    assert app.train(argv[2:], prog="qe train") == 0
    assert _FirstStep.seen == [2]
    assert list(tmp_path.glob("outputs/*/runs/*")) == runs
    assert (runs[0] / "export" / "qe_export.json").is_file()
    assert json.loads((runs[0] / "job_result.json").read_text())["status"] == "completed"


# ------------------------------------------------------------------------------------------ 19: a quiet console
@pytest.mark.slow
def test_train_console_is_quiet_when_not_a_terminal(tmp_path):
    env = dict(os.environ, PYTHONUNBUFFERED="1", QE_ROOT_DIR=str(tmp_path))
    env.pop("FORCE_COLOR", None)
    # -v: Lightning's INFO lines on the console too (without it they go to train.log: tests/training/test_quiet_train.py)
    args = ["-v", *TINY, "trainer.max_epochs=1", "logger=csv", f"hydra.run.dir={tmp_path}/run"]  # the bar: default
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with open(out, "w") as fo, open(err, "w") as fe:
        r = subprocess.run([sys.executable, "-m", "qe", "train", *args], cwd=tmp_path, env=env, stdout=fo, stderr=fe,
                           stdin=subprocess.DEVNULL, timeout=300)
    so, se = out.read_text(), err.read_text()
    assert r.returncode == 0, se[-3000:]
    assert "litlogger" not in so + se and "litmodels" not in so + se
    assert "set_float32_matmul_precision" not in so + se
    assert "LeafSpec" not in se and "site-packages" not in se, se
    assert "\r" not in so + se and "\x1b[" not in so + se
    assert "Epoch 0/0" not in so  # no final frame of a progress bar either
    # every INFO line once, whichever stream it went to
    msgs = [re.sub(r"^(\[[^\]]*\]){3} - |^INFO: ", "", ln) for ln in (so + se).splitlines() if "INFO" in ln]
    assert msgs and len(msgs) == len(set(msgs)), msgs
    assert any("Seed set to 42" in m for m in msgs)
    # instead of the bar: one plain line per validation
    assert re.search(r"epoch 1/1 .*val/loss", so + se), so + se


def test_lightning_tips_are_dropped_and_its_own_handlers_removed(caplog):
    from lightning.fabric.utilities.rank_zero import rank_zero_info

    from qe.training import quiet_console

    quiet_console()
    with caplog.at_level(logging.INFO):
        rank_zero_info("\U0001F4A1 Tip: For seamless cloud logging and experiment tracking, try installing [litlogger]")
        rank_zero_info("You are using a CUDA device ('H100') that has Tensor Cores. To properly utilize them, you "
                       "should set `torch.set_float32_matmul_precision('medium' | 'high')`")
        rank_zero_info("GPU available: False, used: False")
    assert [r.getMessage() for r in caplog.records] == ["GPU available: False, used: False"]
    # records reach the root's handlers (Hydra's console and train.log) only: no handler of Lightning's own prints them
    for name in ("lightning", "lightning.pytorch", "lightning.fabric"):
        assert not [h for h in logging.getLogger(name).handlers if type(h) is logging.StreamHandler], name


def test_matmul_precision_is_set_on_cuda_only(tmp_path, monkeypatch):
    import torch

    from qe.training import set_matmul_precision

    cfg = _cfg(tmp_path)
    assert cfg.matmul_precision == "high"
    calls = []
    monkeypatch.setattr(torch, "set_float32_matmul_precision", calls.append)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    set_matmul_precision(cfg)
    assert calls == []  # CPU runs: unchanged
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    set_matmul_precision(cfg)
    assert calls == ["high"]
