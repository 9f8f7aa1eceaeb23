"""The one training loop every task shares (``train.py`` is a thin wrapper around :func:`run_training`).

A task is a function named by ``cfg.task.builder`` that takes the composed config and returns
:class:`TaskParts`: the LightningModule, its LightningDataModule, and how to write the export. Tasks that are
not trained by gradient descent (e.g. the scikit-learn SVR combiner) set ``cfg.task.runner`` instead: a
function ``run(cfg) -> dict`` that does everything itself.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import hydra
import lightning.pytorch as pl
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)


@dataclass
class TaskParts:
    module: pl.LightningModule
    datamodule: pl.LightningDataModule
    #: export(module, datamodule, dest, metrics, cfg) -> Path, called on global rank 0 after fitting
    export: Callable[..., Path]
    #: extra callbacks the task needs (e.g. throughput logging)
    callbacks: list[pl.Callback] = field(default_factory=list)
    #: demo(export_path, cfg) -> None, prints a few scores at the end of the run (optional)
    demo: Callable[..., None] | None = None


def _instantiate_dict(cfg_section: DictConfig | None) -> list[Any]:
    out = []
    if not cfg_section:
        return out
    for _, conf in cfg_section.items():
        if isinstance(conf, DictConfig) and "_target_" in conf:
            out.append(hydra.utils.instantiate(conf))
    return out


def build_trainer(cfg: DictConfig, extra_callbacks: list[pl.Callback] | None = None) -> pl.Trainer:
    callbacks = _instantiate_dict(cfg.get("callbacks")) + list(extra_callbacks or [])
    loggers = _instantiate_dict(cfg.get("logger"))
    return hydra.utils.instantiate(cfg.trainer, callbacks=callbacks, logger=loggers or False)


def _resolve_ckpt(cfg: DictConfig) -> str | None:
    ck = cfg.get("ckpt_path")
    if ck in (None, "", "none", "null"):
        return None
    if ck == "last":
        last = Path(cfg.paths.output_dir) / "checkpoints" / "last.ckpt"
        return str(last) if last.is_file() else None
    if not Path(ck).is_file():
        raise FileNotFoundError(f"ckpt_path={ck}: no such checkpoint")
    return str(ck)


def plain_config(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config as plain data (stored in every export's manifest)."""
    c = OmegaConf.to_container(cfg, resolve=False)
    try:
        c = OmegaConf.to_container(cfg, resolve=True)
    except Exception:  # hydra: interpolations can only be resolved inside a Hydra run
        pass
    return c  # type: ignore[return-value]


def run_training(cfg: DictConfig) -> dict[str, Any]:
    """Fit, test, export. Returns the logged metrics (plus ``export_path``)."""
    pl.seed_everything(int(cfg.seed), workers=True)
    runner = cfg.task.get("runner")
    if runner:
        return hydra.utils.get_method(runner)(cfg)

    builder = hydra.utils.get_method(cfg.task.builder)
    parts: TaskParts = builder(cfg)
    trainer = build_trainer(cfg, parts.callbacks)
    ckpt = _resolve_ckpt(cfg)
    if ckpt:
        log.info("resuming from %s", ckpt)
    trainer.fit(parts.module, datamodule=parts.datamodule, ckpt_path=ckpt)
    metrics = {k: _num(v) for k, v in trainer.callback_metrics.items()}

    best = None
    ckpt_cb = trainer.checkpoint_callback
    if ckpt_cb is not None and getattr(ckpt_cb, "best_model_path", ""):
        best = ckpt_cb.best_model_path
    if cfg.get("test") and getattr(parts.datamodule, "has_test", lambda: False)():
        test_metrics = trainer.test(parts.module, datamodule=parts.datamodule, ckpt_path=best or None, verbose=False)
        for d in test_metrics:
            metrics.update({k: _num(v) for k, v in d.items()})
    elif best:
        # load the best weights for export even without a test split
        state = _load_state_dict(best)
        parts.module.load_state_dict(state)

    if cfg.get("export") and trainer.is_global_zero:
        dest = Path(cfg.export_dir).expanduser()
        path = parts.export(parts.module, parts.datamodule, dest, metrics, cfg)
        metrics["export_path"] = str(path)
        print(f"\nexport written to: {path}")
        if parts.demo is not None:
            parts.demo(path, cfg)
    return metrics


def _load_state_dict(ckpt_path: str) -> dict[str, Any]:
    import torch

    # Lightning checkpoints written by this run; weights_only keeps unpickling to tensors and plain containers
    ck = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    return ck["state_dict"]


def _num(v: Any) -> Any:
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


def main_entry(cfg: DictConfig) -> float | None:
    """What train.py's @hydra.main calls; returns the value the sweeper optimises."""
    metrics = run_training(cfg)
    key = cfg.get("optimized_metric")
    if key and key in metrics and os.environ.get("LOCAL_RANK", "0") == "0":
        return float(metrics[key])
    return None
