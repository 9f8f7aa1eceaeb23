"""``qe evaluate [hydra overrides ...]``: the same job as ``python evaluate.py``, for scripts.

The config tree is ``conf/`` of the qe checkout (or ``$QE_CONF_DIR``, or ``./conf`` when it holds an
``evaluate.yaml``); every Hydra override and flag works (``dataset=emnlp17``, ``stats.tails=1``, ``--cfg job``,
``-m`` for sweeps).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

CONFIG_NAME = "evaluate"


def conf_dir() -> Path:
    env = os.environ.get("QE_CONF_DIR")
    candidates = ([Path(env)] if env else []) + [Path.cwd() / "conf", Path(__file__).resolve().parents[2] / "conf"]
    for c in candidates:
        if (c / f"{CONFIG_NAME}.yaml").is_file():
            return c.resolve()
    raise FileNotFoundError(
        f"no {CONFIG_NAME}.yaml found in {', '.join(str(c) for c in candidates)}; run from a qe checkout or set "
        "QE_CONF_DIR to its conf/ folder")


def main(argv: list[str] | None = None) -> int:
    import hydra
    from omegaconf import DictConfig

    from qe.evaluation.runner import run_evaluation

    argv = list(sys.argv[1:] if argv is None else argv)

    @hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name=CONFIG_NAME)
    def _task(cfg: DictConfig) -> None:
        run_evaluation(cfg, entry="qe evaluate")

    saved = sys.argv
    sys.argv = ["qe evaluate"] + argv
    try:
        _task()
    finally:
        sys.argv = saved
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
