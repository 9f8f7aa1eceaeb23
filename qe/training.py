"""The training side every family shares (``train.py`` is a thin wrapper around :func:`run_training`).

* :class:`QEModule` — the base LightningModule: constructor arguments are saved hyperparameters, the module knows
  its export kind and writes its own export through the family's ``format`` module;
* :func:`instantiate_model` — ``_target_`` model configs (``_partial_: true`` when the task supplies sizes such as
  the vocabulary);
* :func:`build_trainer` / :func:`fit` — trainer, loggers, callbacks and checkpoints from the config, for the
  standard loop and for runner tasks that fit many models (RatPred's folds × seeds × stages): ``logger=``,
  ``callbacks=``, ``trainer=`` and resume mean the same for every task;
* :func:`run_training` — fit, test, export; :func:`export_from_checkpoint` — an export from any checkpoint of a run.

A task is a function named by ``cfg.task.builder`` that takes the composed config and returns :class:`TaskParts`.
Tasks whose protocol is more than one fit (cross-validation, an SVR fit, a tuning search) name ``cfg.task.runner``
instead: ``run(cfg) -> dict``, built from :func:`fit` / :func:`build_trainer` so they honour the same groups.
Scorers never import this module.
"""
from __future__ import annotations

import functools
import inspect
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar

import hydra
import lightning.pytorch as pl
from omegaconf import DictConfig, OmegaConf

from qe.core.config import to_dict

log = logging.getLogger(__name__)

#: callbacks that need a logger; dropped (with a note) under ``logger=none``
_NEEDS_LOGGER = ("LearningRateMonitor",)

#: how the resume command printed after a SIGTERM starts (``qe train``; train.py sets ``python train.py``)
ENTRY = "qe train"


class QEModule(pl.LightningModule):
    """Base of every trainable qe model.

    Subclasses call ``self.save_hyperparameters()`` in ``__init__`` (every constructor argument is a saved
    hyperparameter, so a checkpoint says how to rebuild the module), set :attr:`export_kind`, and implement
    :meth:`export`, which writes the family's export through its ``format`` module (the only code its scorer reads).
    """

    #: the ``kind`` of the export this module writes (a key of :data:`qe.registry.EXPORT_KINDS`)
    export_kind: ClassVar[str] = ""

    def export(self, dest: str | Path, *, datamodule: Any = None, metrics: dict[str, Any] | None = None,
               cfg: DictConfig | None = None) -> Path:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} does not write an export")

    def configure_optimizers(self):
        """Adam(W) with the saved ``lr`` / ``weight_decay``; families with schedules override this."""
        import torch

        h = self.hparams
        wd = float(h.get("weight_decay", 0.0) or 0.0)
        opt = torch.optim.AdamW if wd else torch.optim.Adam
        return opt(self.parameters(), lr=float(h.get("lr", 1e-3)), **({"weight_decay": wd} if wd else {}))


@dataclass
class TaskParts:
    module: pl.LightningModule
    datamodule: pl.LightningDataModule
    #: export(module, datamodule, dest, metrics, cfg) -> Path, called on global rank 0 after fitting;
    #: None: ``module.export(dest, datamodule=..., metrics=..., cfg=...)``
    export: Callable[..., Path] | None = None
    #: extra callbacks the task needs (e.g. throughput logging)
    callbacks: list[pl.Callback] = field(default_factory=list)
    #: demo(export_path, cfg) -> None, prints a few scores at the end of the run (optional)
    demo: Callable[..., None] | None = None

    def write_export(self, dest: Path, metrics: dict[str, Any], cfg: DictConfig) -> Path:
        if self.export is not None:
            return self.export(self.module, self.datamodule, dest, metrics, cfg)
        return self.module.export(dest, datamodule=self.datamodule, metrics=metrics, cfg=cfg)


# ---------------------------------------------------------------------------------------------------- models
def instantiate_model(node: DictConfig | dict, **supplied: Any) -> Any:
    """Build ``cfg.model`` from its ``_target_``; a ``_partial_`` config is completed with ``supplied``
    (what only the task knows: vocabulary size, the tokenizer's pad id, ...)."""
    obj = hydra.utils.instantiate(node, _convert_="all")
    if isinstance(obj, functools.partial):
        obj = obj(**supplied)
    elif supplied:
        raise TypeError(f"model config {node.get('_target_')!r} is not _partial_, but the task supplies {sorted(supplied)}")
    return obj


def model_options(node: DictConfig | dict) -> dict[str, Any]:
    """A model config's options without Hydra's ``_target_`` / ``_partial_`` keys (for manifests and logs)."""
    d = to_dict(node)
    return {k: v for k, v in (d or {}).items() if not (k.startswith("_") and k.endswith("_"))}


# ---------------------------------------------------------------------------------------------------- resume
class RNGState(pl.Callback):
    """Saves every random state (Python, NumPy, torch CPU and CUDA) in each checkpoint and restores it when a
    resumed run starts training again, so a killed-and-resumed run draws the same dropout masks, shuffles and
    data-loader worker seeds as an uninterrupted one (Lightning restores weights, optimiser and loop counters,
    but not random states). Reading the states consumes nothing, so an uninterrupted run is unchanged by this
    callback. Scope: checkpoints written at the end of an epoch (the configured ModelCheckpoint's default).
    """

    # Restored at the first training batch of the resumed run: after the sanity check (which a resumed run repeats)
    # and after the training data-loader iterator was created. In the uninterrupted run that iterator is created
    # after the checkpoint was written, and creating it draws one seed from torch's generator (torch.utils.data's
    # shared-seed draw, also with num_workers=0); the resumed run replays that draw after restoring.
    # tests/training/test_resume.py checks the outcome: equal metrics and weights.

    def __init__(self) -> None:
        self._pending: dict[str, Any] | None = None

    def state_dict(self) -> dict[str, Any]:
        import random

        import numpy as np
        import torch

        np_state = np.random.get_state()
        state = {"python": random.getstate(),
                 "numpy": (np_state[0], torch.from_numpy(np_state[1].copy()), *np_state[2:]),
                 "torch": torch.get_rng_state()}
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state["cuda"] = torch.cuda.get_rng_state_all()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._pending = dict(state_dict)

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any,
                             batch_idx: int) -> None:
        if not self._pending:
            return
        import random

        import numpy as np
        import torch

        st, self._pending = self._pending, None
        py = st["python"]
        random.setstate((py[0], tuple(py[1]), py[2]))
        name, keys, *rest = st["numpy"]
        np.random.set_state((name, np.asarray(keys, dtype=np.uint32), *rest))
        torch.set_rng_state(st["torch"])
        if "cuda" in st and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(st["cuda"])
        loader = trainer.train_dataloader
        if getattr(loader, "generator", None) is None:  # a loader with its own generator draws from that instead
            torch.empty((), dtype=torch.int64).random_()  # the training iterator's seed draw (see above)


class SaveOnSigterm(pl.Callback):
    """On SIGTERM (a scheduler's preemption, ``kill``), Lightning stops after the current batch; this writes
    ``last.ckpt`` at that point so that a resumed run starts there instead of at the last epoch end.
    :func:`fit` then exits with status 143 and prints the command that resumes (:func:`resume_command`)."""

    def __init__(self, dirpath: str | Path):
        self.dirpath = Path(dirpath)
        self.saved: Path | None = None

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        from lightning.pytorch.utilities.exceptions import SIGTERMException

        if isinstance(exception, SIGTERMException) and trainer.state.fn == "fit":
            self.dirpath.mkdir(parents=True, exist_ok=True)
            path = self.dirpath / "last.ckpt"
            trainer.save_checkpoint(path)
            self.saved = path


class StopAtStep(pl.Callback):
    """Ends ``fit`` once ``step`` optimizer steps are done, leaving ``trainer.max_steps`` (and with it the length of
    the learning-rate schedule) as configured: one stage of a long schedule. Lightning validates when a run is asked
    to stop, so the stage ends with a validation and ``last.ckpt``; the next stage (the same command with a later
    ``step``, the same ``hydra.run.dir``, ``ckpt_path=last``) resumes there. ``step: null`` (or 0) never stops."""

    def __init__(self, step: int | None = None):
        self.step = int(step) if step else None

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.step and trainer.global_step >= self.step:  # this stage was run already: nothing to train
            log.warning("resumed at step %d, not before this stage's end (callbacks.stop_at_step.step=%d): "
                        "nothing to train", trainer.global_step, self.step)
            trainer.should_stop = True

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs, batch, batch_idx) -> None:
        if self.step and trainer.global_step >= self.step:
            if not trainer.should_stop:
                log.info("stage ends at step %d (callbacks.stop_at_step.step; trainer.max_steps=%s)",
                         trainer.global_step, trainer.max_steps)
            trainer.should_stop = True


def readable_checkpoint(path: str | Path) -> bool:
    """True when ``path`` is a complete checkpoint archive (every member's CRC checks; a file cut short by a
    kill during writing is not)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            return z.testzip() is None
    except (OSError, zipfile.BadZipFile, EOFError):
        return False


# ---------------------------------------------------------------------------------------------------- console
class _DropLightningTips(logging.Filter):
    """Drops Lightning's advertisements ("💡 Tip: ... litlogger / litmodels") and its matmul-precision tip (the
    precision is set from the config: :func:`set_matmul_precision`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return not ("Tip: For seamless" in msg or "set_float32_matmul_precision" in msg)


_TIPS_FILTER = _DropLightningTips()
#: the loggers Lightning's rank_zero_info / rank_zero_warn write to
_RANK_ZERO_LOGGERS = ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero",
                      "lightning_utilities.core.rank_zero")


def quiet_console() -> None:
    """One console: every Lightning line once, no advertisements, no deprecation noise from inside Lightning.

    * Lightning gives its ``lightning`` logger a stderr handler of its own (``INFO: ...``), and its
      ``lightning.pytorch`` / ``lightning.fabric`` loggers one when imported before logging is configured: each INFO
      line was printed twice, once by Hydra's console handler and once by Lightning's. When the root logger has
      handlers, those handlers are dropped and the records go to the root's (console and ``train.log``) alone;
    * the tips are dropped (:class:`_DropLightningTips`);
    * torch's ``LeafSpec`` FutureWarning, raised by Lightning's own ``lightning.pytorch.utilities._pytree``, is
      ignored (the code that could act on it is Lightning's). Idempotent.
    """
    import warnings

    if logging.getLogger().handlers:
        for name in ("lightning", "lightning.pytorch", "lightning.fabric"):
            lg = logging.getLogger(name)
            for h in list(lg.handlers):
                if type(h) is logging.StreamHandler:  # Lightning's own (a FileHandler is a subclass: kept)
                    lg.removeHandler(h)
            lg.propagate = True
    for name in _RANK_ZERO_LOGGERS:
        lg = logging.getLogger(name)
        if _TIPS_FILTER not in lg.filters:
            lg.addFilter(_TIPS_FILTER)
    warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated",
                            category=FutureWarning)


def set_matmul_precision(cfg: DictConfig) -> None:
    """``matmul_precision`` (train.yaml, default ``high``: TF32 on tensor cores) when a CUDA device is present;
    CPU runs are unchanged. Setting it is what Lightning's tip asks for; ``highest`` keeps full float32."""
    prec = cfg.get("matmul_precision")
    if not prec:
        return
    import torch

    if torch.cuda.is_available():
        torch.set_float32_matmul_precision(str(prec))


def console_is_terminal() -> bool:
    """Both stdout and stderr are terminals (a progress bar redraws there; anywhere else it leaves fragments)."""
    try:
        return sys.stderr.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


class EpochLog(pl.Callback):
    """The progress line that replaces the progress bar when the console is not a terminal: one INFO line after
    each validation (``epoch 2/10 step 300: train/loss 4.812, val/loss 4.901, val/ppl 134.4``)."""

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero or trainer.state.fn != "fit":
            return
        nums = {k: _num(v) for k, v in trainer.callback_metrics.items()}
        shown = ", ".join(f"{k} {v:.4g}" for k, v in sorted(nums.items()) if isinstance(v, float))
        total = f"/{trainer.max_epochs}" if trainer.max_epochs and trainer.max_epochs > 0 else ""
        log.info("epoch %d%s step %d: %s", trainer.current_epoch + 1, total, trainer.global_step, shown or "-")


# ---------------------------------------------------------------------------------------------------- trainer
def _instantiate_dict(section: DictConfig | None) -> list[Any]:
    out = []
    if not section:
        return out
    for _, conf in section.items():
        if isinstance(conf, DictConfig) and "_target_" in conf:
            out.append(hydra.utils.instantiate(conf))
    return out


def build_loggers(cfg: DictConfig, run_dir: str | Path | None = None, version: str | None = None) -> list[Any]:
    """The loggers of ``cfg.logger``; ``run_dir`` / ``version`` place them under a sub-run (one fold of a runner)."""
    section = cfg.get("logger")
    if not section:
        return []
    section = OmegaConf.create(to_dict(section, resolve=True))
    for _, conf in section.items():
        if not (isinstance(conf, DictConfig) and "_target_" in conf):
            continue
        if run_dir is not None and "save_dir" in conf:
            conf.save_dir = str(run_dir)
        if version is not None:
            target = str(conf._target_)
            if target.endswith(("CSVLogger", "TensorBoardLogger")):
                conf.version = version
            elif target.endswith("WandbLogger"):
                conf.name = f"{conf.get('name') or 'qe'}-{version}"
    return _instantiate_dict(section)


def build_callbacks(cfg: DictConfig, run_dir: str | Path | None = None, has_logger: bool = True,
                    extra: list[pl.Callback] | None = None, checkpoints: bool = True) -> list[pl.Callback]:
    """The callbacks of ``cfg.callbacks`` (checkpoints under ``run_dir/checkpoints`` when given) plus ``extra``."""
    section = cfg.get("callbacks")
    out: list[pl.Callback] = []
    if section:
        section = OmegaConf.create(to_dict(section, resolve=True))
        for key, conf in section.items():
            if not (isinstance(conf, DictConfig) and "_target_" in conf):
                continue
            cls = str(conf._target_).rsplit(".", 1)[-1]
            if not has_logger and cls in _NEEDS_LOGGER:
                log.info("callbacks.%s (%s) skipped: it needs a logger and logger=none", key, cls)
                continue
            if cls == "ModelCheckpoint":
                if not checkpoints:
                    continue
                if run_dir is not None:
                    conf.dirpath = str(Path(run_dir) / "checkpoints")
            out.append(hydra.utils.instantiate(conf))
    if checkpoints:
        ck_dir = Path(run_dir if run_dir is not None else cfg.paths.output_dir) / "checkpoints"
        out += [RNGState(), SaveOnSigterm(ck_dir)]
    return out + list(extra or [])


def build_trainer(cfg: DictConfig, extra_callbacks: list[pl.Callback] | None = None, *,
                  run_dir: str | Path | None = None, version: str | None = None, checkpoints: bool = True,
                  **overrides: Any) -> pl.Trainer:
    """``cfg.trainer`` with the configured loggers and callbacks; ``overrides`` win over the config
    (a runner's per-stage ``max_epochs``), ``run_dir`` relocates loggers and checkpoints for a sub-run."""
    quiet_console()
    set_matmul_precision(cfg)
    loggers = build_loggers(cfg, run_dir, version)
    callbacks = build_callbacks(cfg, run_dir, has_logger=bool(loggers), extra=extra_callbacks, checkpoints=checkpoints)
    tcfg = OmegaConf.create(to_dict(cfg.trainer, resolve=True))
    if run_dir is not None:
        tcfg.default_root_dir = str(run_dir)
    # the progress bar only where it can redraw; elsewhere (a log file, a pipe, a batch job) a line per validation
    if overrides.get("enable_progress_bar", tcfg.get("enable_progress_bar", True)) and not console_is_terminal():
        overrides["enable_progress_bar"] = False
        callbacks.append(EpochLog())
    if not any(isinstance(c, pl.callbacks.ModelCheckpoint) for c in callbacks):
        overrides.setdefault("enable_checkpointing", False)
    from qe.core.runtime import verbose

    if (not verbose() and overrides.get("enable_model_summary", tcfg.get("enable_model_summary", True)) is not False
            and not any(isinstance(c, pl.callbacks.ModelSummary) for c in callbacks)):
        # Lightning's default summary where rich is installed prints its table on the console itself; the plain one
        # is an INFO line, which goes to <run dir>/train.log (qe.app.quiet_train_console; -v shows it)
        callbacks.append(pl.callbacks.ModelSummary())
    return hydra.utils.instantiate(tcfg, callbacks=callbacks, logger=loggers or False, **overrides)


def resolve_ckpt(ckpt: Any, run_dir: str | Path) -> str | None:
    """``last`` -> ``run_dir/checkpoints/last.ckpt`` when it exists; a path must exist; null/none -> None.

    An unreadable ``last.ckpt`` (cut short by a kill) falls back, with a warning, to the newest readable
    checkpoint of the run; with none readable the run starts afresh (also with a warning).
    """
    if ckpt in (None, "", "none", "null"):
        return None
    if ckpt == "last":
        ck_dir = Path(run_dir) / "checkpoints"
        last = ck_dir / "last.ckpt"
        if not last.is_file():
            return None
        if readable_checkpoint(last):
            return str(last)
        others = sorted((p for p in ck_dir.glob("*.ckpt") if p != last and readable_checkpoint(p)),
                        key=lambda p: p.stat().st_mtime, reverse=True)
        if others:
            log.warning("%s is unreadable (cut short?); resuming from the newest readable checkpoint %s", last, others[0])
            return str(others[0])
        log.warning("%s is unreadable (cut short?) and no other checkpoint is readable; starting afresh", last)
        return None
    if not Path(ckpt).is_file():
        raise FileNotFoundError(f"ckpt_path={ckpt}: no such checkpoint")
    return str(ckpt)


def best_checkpoint(trainer: pl.Trainer) -> str | None:
    cb = trainer.checkpoint_callback
    if cb is not None and getattr(cb, "best_model_path", ""):
        return cb.best_model_path
    return None


def fit(cfg: DictConfig, module: pl.LightningModule, datamodule: pl.LightningDataModule | None = None, *,
        run_dir: str | Path | None = None, extra_callbacks: list[pl.Callback] | None = None,
        train_dataloaders: Any = None, val_dataloaders: Any = None, ckpt_path: Any = "last",
        version: str | None = None, **trainer_overrides: Any) -> tuple[pl.Trainer, dict[str, Any]]:
    """Fit ``module`` with the configured trainer, resuming from ``run_dir``'s last checkpoint when present.

    Returns the trainer and its callback metrics (floats). Runner tasks call this once per sub-run with
    their own ``run_dir`` so that every sub-run has its loggers, checkpoints and resume point.
    """
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    run_dir = Path(run_dir or cfg.paths.output_dir)
    trainer = build_trainer(cfg, extra_callbacks, run_dir=run_dir, version=version, **trainer_overrides)
    ckpt = resolve_ckpt(ckpt_path, run_dir)
    if ckpt:
        log.info("resuming from %s", ckpt)
    kw: dict[str, Any] = {"ckpt_path": ckpt}
    if ckpt and "weights_only" in inspect.signature(trainer.fit).parameters:
        kw["weights_only"] = True  # tensors and plain data only: a checkpoint is never unpickled (Lightning: False)
    if datamodule is not None:
        kw["datamodule"] = datamodule
    else:
        kw.update(train_dataloaders=train_dataloaders, val_dataloaders=val_dataloaders)
    try:
        trainer.fit(module, **kw)
    except SIGTERMException:
        saved = next((c.saved for c in trainer.callbacks if isinstance(c, SaveOnSigterm) and c.saved), None)
        msg = f"SIGTERM: stopped after step {trainer.global_step}"
        if saved:
            cmd = resume_command()
            how = (f"resume with: {cmd}" if cmd
                   else f"resume by running it again with paths.output_dir={run_dir} ckpt_path=last")
            msg += f"; checkpoint written to {saved}; {how}"
        else:
            msg += "; nothing saved"
        log.warning(msg)
        print(msg, file=sys.stderr, flush=True)
        raise SystemExit(143) from None
    return trainer, {k: _num(v) for k, v in trainer.callback_metrics.items()}


def _override_key(override: str) -> str:
    """'++trainer.max_epochs=3' -> 'trainer.max_epochs'; '~callbacks.early_stopping' -> 'callbacks.early_stopping'."""
    return override.split("=", 1)[0].lstrip("+~")


#: Hydra overrides a resumed single run must not repeat: where the run goes, and the sweep's own settings
_NOT_RESUMED = ("hydra.run.", "hydra.sweep.", "hydra.mode", "hydra.sweeper", "hydra/sweeper", "hydra.launcher",
                "hydra/launcher", "hydra.job.num", "hydra.job.id")


def resume_command() -> str | None:
    """The command that resumes the Hydra run in progress, for the SIGTERM message (None outside a Hydra run).

    ``cd <working directory> && qe train <the run's overrides> ckpt_path=last hydra.run.dir=<run dir>``: the same
    configuration (the run's own overrides, the job's for a multirun job), written into the same run folder, where
    ``ckpt_path=last`` picks up ``checkpoints/last.ckpt``. Rerunning the original command would start a new
    timestamped folder instead.
    """
    import shlex

    try:
        from hydra.core.hydra_config import HydraConfig

        if not HydraConfig.initialized():
            return None
        hc = HydraConfig.get()
        run_dir = Path(hc.runtime.output_dir).resolve()
        task = [o for o in hc.overrides.task if _override_key(o) != "ckpt_path"]
        hyd = [o for o in hc.overrides.hydra if not _override_key(o).startswith(_NOT_RESUMED)]
    except Exception:  # pragma: no cover - a message is never worth a second error
        return None
    args = [*task, "ckpt_path=last", *hyd, f"hydra.run.dir={run_dir}"]
    return f"cd {shlex.quote(os.getcwd())} && {ENTRY} " + " ".join(shlex.quote(a) for a in args)


def load_state_dict(ckpt_path: str | Path) -> dict[str, Any]:
    """The ``state_dict`` of a Lightning checkpoint, unpickled with ``weights_only=True`` (tensors, plain data)."""
    import torch

    ck = torch.load(str(ckpt_path), map_location="cpu", weights_only=True)
    return ck["state_dict"]


def plain_config(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config as plain data (stored in every export's manifest)."""
    return to_dict(cfg)


def _check_task_name(cfg: DictConfig) -> None:
    """An old task name (a config in conf/task that only sets ``task.old_name`` over the new one) warns."""
    old = cfg.task.get("old_name")
    if old:
        log.warning("task=%s is an old name; use task=%s", old, cfg.task.name)


def log_metrics(cfg: DictConfig, metrics: dict[str, Any], *, run_dir: str | Path | None = None,
                version: str | None = None, step: int | None = None, hparams: bool = True) -> None:
    """Send ``metrics`` (and the config as hyperparameters) to the configured loggers, for tasks that are not
    fitted by a Trainer (the SVR combiner, a tuning report): ``logger=csv|wandb|none`` means the same there."""
    loggers = build_loggers(cfg, run_dir if run_dir is not None else cfg.paths.output_dir, version)
    nums = {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    for lg in loggers:
        if hparams:
            lg.log_hyperparams(plain_config(cfg))
        lg.log_metrics(nums, step=step)
        lg.finalize("success")


def run_training(cfg: DictConfig) -> dict[str, Any]:
    """Fit, test, export. Returns the logged metrics (plus ``export_path``)."""
    quiet_console()
    _check_task_name(cfg)
    pl.seed_everything(int(cfg.seed), workers=True)
    runner = cfg.task.get("runner")
    if runner:
        return hydra.utils.get_method(runner)(cfg)

    builder = hydra.utils.get_method(cfg.task.builder)
    parts: TaskParts = builder(cfg)
    trainer, metrics = fit(cfg, parts.module, parts.datamodule, extra_callbacks=parts.callbacks,
                           ckpt_path=cfg.get("ckpt_path"))
    best = best_checkpoint(trainer)
    if cfg.get("test") and getattr(parts.datamodule, "has_test", lambda: False)():
        test_metrics = trainer.test(parts.module, datamodule=parts.datamodule, ckpt_path=best or None, verbose=False)
        for d in test_metrics:
            metrics.update({k: _num(v) for k, v in d.items()})
    elif best:
        parts.module.load_state_dict(load_state_dict(best))  # export the best weights even without a test split

    if cfg.get("export") and trainer.is_global_zero:
        dest = Path(cfg.export_dir).expanduser()
        path = parts.write_export(dest, metrics, cfg)
        metrics["export_path"] = str(path)
        print(f"\nexport written to: {path}")
        if parts.demo is not None:
            parts.demo(path, cfg)
    return metrics


def export_from_checkpoint(run_dir: str | Path, checkpoint: str = "best", dest: str | Path | None = None) -> Path:
    """Write a run's export from one of its checkpoints (a run stopped before its end, or an earlier best).

        python -m qe.training outputs/cola/runs/<run> --checkpoint best --dest exports/cola_minilm

    ``checkpoint``: ``best`` (the ModelCheckpoint's monitored best), ``last``, or a file path. The config is the
    run's own ``.hydra/config.yaml``; weights load with ``torch.load(weights_only=True)``. Works for every task
    built by ``task.builder``.
    """
    import torch

    run_dir = Path(run_dir)
    cfg = OmegaConf.load(run_dir / ".hydra" / "config.yaml")
    cfg.paths.output_dir = str(run_dir)
    if not cfg.task.get("builder"):
        raise ValueError(f"{run_dir}: task {cfg.task.get('name')!r} is a runner task; its runner writes the export")
    ck_dir = run_dir / "checkpoints"
    if checkpoint == "last":
        ck = ck_dir / "last.ckpt"
    elif checkpoint == "best":
        cands = sorted(p for p in ck_dir.glob("*.ckpt") if p.name != "last.ckpt")
        if not cands:
            raise FileNotFoundError(f"{ck_dir}: no best checkpoint")
        ck = cands[-1]
    else:
        ck = Path(checkpoint)
    parts: TaskParts = hydra.utils.get_method(cfg.task.builder)(cfg)
    state = torch.load(ck, map_location="cpu", weights_only=True)
    parts.module.load_state_dict(state["state_dict"])
    metrics: dict[str, Any] = {}
    for cb in state.get("callbacks", {}).values():
        if isinstance(cb, dict) and cb.get("best_model_score") is not None:
            metrics[f"best/{cfg.task.monitor}"] = float(cb["best_model_score"])
    metrics.update({"checkpoint_epoch": int(state.get("epoch", -1)), "checkpoint_step": int(state.get("global_step", -1))})
    quiet_console()
    val = pl.Trainer(accelerator="auto", devices=1, logger=False, enable_progress_bar=False,
                     enable_checkpointing=False).validate(parts.module, datamodule=parts.datamodule, verbose=False)
    for d in val:
        metrics.update({k: float(v) for k, v in d.items()})
    return parts.write_export(Path(dest) if dest else run_dir / "export", metrics, cfg)


def _num(v: Any) -> Any:
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


def main_entry(cfg: DictConfig) -> float | None:
    """What ``qe train`` / train.py run as the Hydra task; returns the value the sweeper optimises.

    Writes ``job_result.json`` into the run directory (metric, direction, best validation value, export path,
    status; also when the run fails), which :mod:`qe.sweep` turns into the sweep summary of a multirun.
    """
    import time

    from qe.sweep import write_job_result

    t0 = time.time()
    try:
        metrics = run_training(cfg)
    except BaseException as exc:
        write_job_result(cfg, None, error=exc, elapsed_s=time.time() - t0)
        raise
    write_job_result(cfg, metrics, elapsed_s=time.time() - t0)
    key = cfg.get("optimized_metric")
    if key and key in metrics and os.environ.get("LOCAL_RANK", "0") == "0":
        return float(metrics[key])
    return None


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="write a run's export from one of its checkpoints")
    ap.add_argument("run_dir")
    ap.add_argument("--checkpoint", default="best")
    ap.add_argument("--dest", default=None)
    a = ap.parse_args()
    print(export_from_checkpoint(a.run_dir, a.checkpoint, a.dest))
