"""``qe train`` / ``qe evaluate``: the Hydra applications, run from any directory with only the wheel installed.

The configs ship inside the package (``qe/conf``, Hydra's package config source ``pkg://qe.conf``); a clone also
sees them as ``conf/`` at its root. ``$QE_CONF_DIR`` points both commands at another config tree (a copy a user
edits). Every Hydra override and flag works: ``qe train -m model.hidden_size=256,512``, ``qe evaluate --cfg job``.
``train.py`` / ``evaluate.py`` at the root of a clone are the same applications.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

CONFIG_PACKAGE = "pkg://qe.conf"


def config_path() -> str:
    """``$QE_CONF_DIR`` when set (it must hold train.yaml / evaluate.yaml), else the packaged configs."""
    env = os.environ.get("QE_CONF_DIR")
    if env:
        p = Path(env).expanduser().resolve()
        if not p.is_dir():
            raise FileNotFoundError(f"QE_CONF_DIR={env}: no such directory")
        return str(p)
    return CONFIG_PACKAGE


def packaged_conf_dir() -> Path:
    """The packaged config tree as a directory (for the compose API in tests and notebooks)."""
    return Path(__file__).resolve().parent / "conf"


def run_hydra(task: Callable, config_name: str, argv: list[str], prog: str) -> int:
    """Run ``task(cfg)`` as a Hydra application over ``argv`` (Hydra reads sys.argv, so it is swapped in)."""
    import hydra

    app = hydra.main(version_base="1.3", config_path=config_path(), config_name=config_name)(task)
    saved = sys.argv
    sys.argv = [prog, *argv]
    try:
        app()
    finally:
        sys.argv = saved
    return 0


def train(argv: list[str] | None = None) -> int:
    from qe.training import main_entry

    def _train(cfg):
        return main_entry(cfg)

    return run_hydra(_train, "train", list(sys.argv[1:] if argv is None else argv), "qe train")


def evaluate(argv: list[str] | None = None) -> int:
    from qe.evaluation.runner import run_evaluation

    def _evaluate(cfg):
        run_evaluation(cfg, entry="qe evaluate")

    return run_hydra(_evaluate, "evaluate", list(sys.argv[1:] if argv is None else argv), "qe evaluate")


__all__ = ["CONFIG_PACKAGE", "config_path", "packaged_conf_dir", "run_hydra", "train", "evaluate"]
