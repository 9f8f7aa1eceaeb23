"""Every config composes, and every task runs one tiny step on CPU (lightning-hydra-template style).

* ``test_every_config_composes``: each task and each experiment preset composes with the train config, and its
  model config (where it has ``_target_``) names an importable class.
* ``test_tiny_step``: each task (and each experiment preset) runs through ``qe.training.run_training`` on tiny
  settings, with the CSV logger (and a check that it wrote metrics) and with ``logger=none`` +
  ``trainer.precision=bf16-mixed`` (the autocast path GPU runs take, exercised on CPU).
Tasks that read the public data skip when it is absent.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from conftest import shared_data_dir

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"
TASKS = sorted(p.stem for p in (CONF / "task").glob("*.yaml"))
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))


@pytest.fixture
def compose_cfg(tmp_path):
    """compose(*overrides) -> DictConfig of conf/train.yaml with every path inside tmp_path."""

    def _compose(*overrides: str):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            return compose("train", overrides=[f"paths.output_dir={tmp_path}/run", f"paths.root_dir={tmp_path}",
                                               f"export_dir={tmp_path}/export", *overrides])

    return _compose


@pytest.mark.parametrize("group,name", [("task", t) for t in TASKS] + [("experiment", e) for e in EXPERIMENTS])
def test_every_config_composes(compose_cfg, group, name):
    from hydra.utils import get_class, get_method

    cfg = compose_cfg(f"{group}={name}")
    assert cfg.task.name
    assert cfg.task.get("builder") or cfg.task.get("runner"), f"{group}={name}: task has neither builder nor runner"
    get_method(cfg.task.get("builder") or cfg.task.get("runner"))
    model = cfg.get("model")
    if model is not None and "_target_" in model:
        get_class(model._target_)
    assert cfg.trainer._target_ == "lightning.pytorch.Trainer"


def test_old_task_name_warns(compose_cfg, caplog):
    from qe.training import _check_task_name

    cfg = compose_cfg("task=qe")
    assert cfg.task.name == "ratpred" and cfg.task.old_name == "qe"
    with caplog.at_level("WARNING"):
        _check_task_name(cfg)
    assert "task=qe is an old name; use task=ratpred" in caplog.text
    caplog.clear()
    _check_task_name(compose_cfg("task=ratpred"))
    assert "old name" not in caplog.text


def test_export_respects_umask(tmp_path):
    import os
    import stat

    from qe.export import export_writer

    old = os.umask(0o022)
    try:
        with export_writer(tmp_path / "exp", kind="test") as d:
            (d / "sub").mkdir()
            (d / "sub" / "w.bin").write_bytes(b"x")
    finally:
        os.umask(old)
    run_file = tmp_path / "plain.txt"
    run_file.write_text("x")
    for p, want in [(tmp_path / "exp", 0o755), (tmp_path / "exp" / "sub", 0o755),
                    (tmp_path / "exp" / "sub" / "w.bin", 0o644), (tmp_path / "exp" / "qe_export.json", 0o644)]:
        assert stat.S_IMODE(p.stat().st_mode) == want, p
