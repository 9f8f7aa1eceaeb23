"""Issue 49, item 8: `qe train` / `python train.py` print their result and a few lines of their own; Lightning's
banners ("GPU available", "Seed set", the model summary table, "`Trainer.fit` stopped") go to the run's log file
(<run dir>/train.log) instead of the console. Warnings still reach the console; -v (or QE_VERBOSE=1) brings the
banners back (tests/training/test_train_guards.py::test_train_console_is_quiet_when_not_a_terminal)."""
import os
import subprocess
import sys

from conftest import REPO

#: the tiny LM run of tests/training/test_train_guards.py (seconds), one epoch; log_every_n_steps above the 3
#: batches: Lightning warns about it (with a logger), and the warning must reach the console
TINY = ["data=lm_sample", "model=lstm_lm_small", "model.hidden_size=16", "model.embedding_dim=16", "logger=csv",
        "trainer=cpu", "+trainer.limit_train_batches=3", "+trainer.limit_val_batches=1", "trainer.max_epochs=1",
        "trainer.log_every_n_steps=50", "test=false"]
BANNERS = ("GPU available", "Seed set to 42", "Trainable params", "`Trainer.fit` stopped")


def test_train_prints_its_result_and_few_lines_lightning_goes_to_train_log(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("QE_VERBOSE", "HYDRA_FULL_ERROR", "LOCAL_RANK")}
    env.update(PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", QE_ROOT_DIR=str(tmp_path))
    run = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "qe", "train", *TINY, f"hydra.run.dir={run}"], cwd=tmp_path, env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    console = r.stdout + r.stderr
    assert r.returncode == 0, console[-3000:]
    lines = console.splitlines()
    # the result (export path, the demo's signature, table header and four sentences: 9 lines) and a few lines of qe's
    # own (where the data came from, one progress line per epoch) and the warning
    assert len(lines) <= 12, console
    before = r.stdout.split("export written to:")[0].splitlines() + r.stderr.splitlines()
    assert len([ln for ln in before if ln.strip()]) <= 3, console
    assert "export written to:" in r.stdout and "SLOR" in r.stdout
    for banner in BANNERS:
        assert banner not in console, (banner, console)
    assert "┃" not in console and "Name" not in console  # no model summary table (rich or plain)
    # warnings still reach the console
    assert "smaller than the logging interval" in r.stderr, r.stderr
    # Lightning's lines are in the run's log file
    log = (run / "train.log").read_text()
    for banner in BANNERS:
        assert banner in log, (banner, log)
    assert "epoch 1/1" in log  # qe's own lines too
