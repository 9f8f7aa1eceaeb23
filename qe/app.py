"""``qe train`` / ``qe evaluate``: the Hydra applications, run from any directory with only the wheel installed.

The configs ship inside the package (``qe/conf``, Hydra's package config source ``pkg://qe.conf``); a clone also
sees them as ``conf/`` at its root. ``$QE_CONF_DIR`` points both commands at another config tree (a copy a user
edits). Every Hydra override and flag works: ``qe train -m model.hidden_size=256,512``, ``qe evaluate --cfg job``.
``train.py`` / ``evaluate.py`` at the root of a clone are the same applications over the clone's ``conf/``.

Errors. A mistake the user can act on ends in one line on stderr and an exit status, without a traceback:

* 2 — bad input or configuration: a config group option that does not exist (``model=nope``: the available
  options are named), a sweeper or launcher plugin that is not installed (``hparams_search=lm_optuna``,
  ``hydra/launcher=slurm``: the pip extra that installs it is named), a malformed override, a data file that is
  missing or malformed (:class:`qe.errors.RecordError` names file:line), any other :class:`qe.errors.QEError`,
  a missing optional package (``logger=tensorboard``), a device this machine lacks (``trainer=gpu`` without
  CUDA; both checked before any data is read), a malformed Hydra command line (``-m --cfg job``);
* 3 — a model or export that cannot be loaded (:class:`qe.errors.ExportError`).

``HYDRA_FULL_ERROR=1`` in the environment, or ``--debug`` anywhere among the arguments (removed before Hydra sees
them), raises the original exception with its traceback instead. Anything else (a bug) keeps its traceback.

How: errors raised inside the task (data, exports, training) are caught in the task function, printed, and end
the process with ``SystemExit(status)``, which Hydra lets through untouched (it reports ``Exception`` only). In a
multirun job the error is raised on as :class:`JobError` instead, so that Hydra marks the job failed and runs the
rest of the sweep (the Optuna sweeper records a failed trial and goes on); the process then ends with the status.
Errors Hydra raises before the task runs (composing the config, loading plugins) are raised to :func:`run_hydra`
by running Hydra with ``HYDRA_FULL_ERROR=1`` set for the call, and reported there. A multirun ended early by a
job's error still writes its sweep summary (:mod:`qe.sweep`).
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any, Callable

CONFIG_PACKAGE = "pkg://qe.conf"
DISTRIBUTION = "qe-nlg"

EXIT_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_BAD_MODEL = 3

#: set (with HYDRA_FULL_ERROR=1) while run_hydra runs Hydra, so that a child process (a DDP rank re-running the
#: command) can tell the HYDRA_FULL_ERROR it inherits from one a user set
_COMPACT_MARK = "QE_COMPACT_ERRORS"

#: Hydra plugin configs (group/option) -> (what it is, distribution, extra of qe-nlg that installs it or None)
PLUGINS: dict[str, tuple[str, str, str | None]] = {
    "hydra/sweeper/optuna": ("the Optuna sweeper", "hydra-optuna-sweeper", "sweep"),
    "hydra/launcher/submitit_slurm": ("the submitit SLURM launcher", "hydra-submitit-launcher", "slurm"),
    "hydra/launcher/submitit_local": ("the submitit local launcher", "hydra-submitit-launcher", "slurm"),
    "hydra/launcher/joblib": ("the joblib launcher", "hydra-joblib-launcher", "joblib"),
    "hydra/sweeper/ax": ("the Ax sweeper", "hydra-ax-sweeper", None),
    "hydra/sweeper/nevergrad": ("the Nevergrad sweeper", "hydra-nevergrad-sweeper", None),
    "hydra/launcher/ray": ("the Ray launcher", "hydra-ray-launcher", None),
    "hydra/launcher/ray_aws": ("the Ray AWS launcher", "hydra-ray-launcher", None),
    "hydra/launcher/rq": ("the RQ launcher", "hydra-rq-launcher", None),
}
#: import names of those plugins (an ``_target_`` under them that cannot be imported is the same missing plugin)
_PLUGIN_MODULES = {
    "hydra_plugins.hydra_optuna_sweeper": "hydra/sweeper/optuna",
    "hydra_plugins.hydra_submitit_launcher": "hydra/launcher/submitit_slurm",
    "hydra_plugins.hydra_joblib_launcher": "hydra/launcher/joblib",
    "hydra_plugins.hydra_ax_sweeper": "hydra/sweeper/ax",
    "hydra_plugins.hydra_nevergrad_sweeper": "hydra/sweeper/nevergrad",
    "hydra_plugins.hydra_ray_launcher": "hydra/launcher/ray",
    "hydra_plugins.hydra_rq_launcher": "hydra/launcher/rq",
}


def install_hint(distribution: str, extra: str | None) -> str:
    return f"pip install '{DISTRIBUTION}[{extra}]'" if extra else f"pip install {distribution}"


class ConfigError(Exception):
    """A config that cannot run here, found before the task starts (reported as one line, exit status 2)."""


class MissingExtraError(ConfigError):
    """An optional package that a chosen config needs is not installed (the message names the pip extra)."""


class DeviceError(ConfigError):
    """A config asks for a device this machine lacks (``trainer=gpu`` without CUDA)."""


def config_path(default: str | None = None) -> str:
    """``$QE_CONF_DIR`` when set (it must hold train.yaml / evaluate.yaml), else ``default`` (a clone's conf/),
    else the packaged configs."""
    env = os.environ.get("QE_CONF_DIR")
    if env:
        p = Path(env).expanduser().resolve()
        if not p.is_dir():
            raise FileNotFoundError(f"QE_CONF_DIR={env}: no such directory")
        return str(p)
    return default or CONFIG_PACKAGE


def packaged_conf_dir() -> Path:
    """The packaged config tree as a directory (for the compose API in tests and notebooks)."""
    return Path(__file__).resolve().parent / "conf"


# ------------------------------------------------------------------------------------------------- errors
def _full_error_requested() -> bool:
    """HYDRA_FULL_ERROR=1 set by the user (not the one run_hydra sets for its own call)."""
    return os.environ.get("HYDRA_FULL_ERROR") == "1" and not os.environ.get(_COMPACT_MARK)


def _one_line(text: str) -> str:
    """Hydra's multi-line messages as one line; the config search path listing is dropped."""
    lines = []
    for ln in str(text).splitlines():
        s = ln.strip()
        if s.startswith("Config search path") or s.startswith("provider="):
            break
        if s and not s.startswith("Set the environment variable HYDRA_FULL_ERROR"):
            lines.append(s)
    out = " ".join(lines)
    return re.sub(r"\s+", " ", out).strip()


def _plugin_message(config_path_: str) -> str | None:
    """'hydra/sweeper/optuna' (a missing plugin config) -> the line that says what to install."""
    key = config_path_.strip("/")
    if key not in PLUGINS:
        return None
    what, dist, extra = PLUGINS[key]
    group, option = key.rsplit("/", 1)
    return (f"{group}={option} needs {what}, which is not installed: {install_hint(dist, extra)} "
            f"(the plugin's distribution is {dist})")


def _missing_config_message(exc: Exception) -> str:
    missing = str(getattr(exc, "missing_cfg_file", "") or "")
    text = str(exc)
    m = re.search(r"Could not (?:find|load) '([^']+)'", text)
    path = m.group(1) if m else missing
    plugin = _plugin_message(path) if path else None
    if plugin:
        return plugin
    where = re.match(r"In '([^']+)':", text)
    if m:
        msg = f"Could not find config '{path}'"
        if where:
            msg += f" (in '{where.group(1)}')"
        options = getattr(exc, "options", None)
        if options:
            group = path.rsplit("/", 1)[0] if "/" in path else path
            msg += f"; available options in '{group}': {', '.join(options)}"
        elif "/" in path:
            msg += f"; no option '{path.rsplit('/', 1)[1]}' in group '{path.rsplit('/', 1)[0]}'"
        return msg
    return _one_line(text)


def _plugin_from_text(text: str) -> str | None:
    for module, key in _PLUGIN_MODULES.items():
        if module in text:
            return _plugin_message(key)
    return None


def _raised_in_qe(exc: BaseException, packages: tuple[str, ...] = ("qe",)) -> bool:
    """The innermost frame of the traceback is in a module of ``packages``: qe raised it on purpose, with a
    message for the user (``ValueError("unknown corpus source ...")``), or Hydra did while reading its command
    line (``ValueError("Only one of --run, --multirun, --cfg ... can be specified")``)."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    name = tb.tb_frame.f_globals.get("__name__", "")
    return any(name == p or name.startswith(p + ".") for p in packages)


def describe(exc: BaseException) -> tuple[int, str] | None:
    """(exit status, one-line message) for an error the user can act on; None for anything else (a bug)."""
    from hydra.errors import HydraException, InstantiationException, MissingConfigException
    from omegaconf.errors import InterpolationResolutionError, MissingMandatoryValue, ValidationError

    from qe.errors import ExportError, QEError

    if isinstance(exc, ExportError):
        return EXIT_BAD_MODEL, _one_line(str(exc))
    if isinstance(exc, (QEError, ConfigError)):
        return EXIT_BAD_INPUT, _one_line(str(exc))
    if isinstance(exc, MissingConfigException):
        return EXIT_BAD_INPUT, _missing_config_message(exc)
    if isinstance(exc, HydraException):
        text = str(exc)
        cause = exc.__cause__
        plugin = _plugin_from_text(text + " " + str(cause or ""))
        if plugin:
            return EXIT_BAD_INPUT, plugin
        if isinstance(exc, InstantiationException) and cause is not None:
            # an instantiated object (a model, a logger, a dataset) that raised: its own error decides
            inner = describe(cause)
            if inner is not None:
                return inner
        msg = _one_line(text)
        if cause is not None and type(cause).__module__.startswith("omegaconf"):
            first = _one_line(str(cause).split("\n")[0])
            if first and first not in msg:
                msg += f" ({first})"
        return EXIT_BAD_INPUT, msg
    if isinstance(exc, (MissingMandatoryValue, InterpolationResolutionError, ValidationError)):
        return EXIT_BAD_INPUT, _one_line(str(exc))
    if isinstance(exc, ModuleNotFoundError):
        plugin = _plugin_from_text(str(exc))
        return (EXIT_BAD_INPUT, plugin) if plugin else None
    if isinstance(exc, FileNotFoundError):
        return EXIT_BAD_INPUT, _one_line(str(exc))
    if isinstance(exc, ValueError) and _raised_in_qe(exc, ("qe", "hydra")):
        return EXIT_BAD_INPUT, _one_line(str(exc))
    run_dir_error = _run_dir_oserror(exc)
    if run_dir_error is not None:
        reason = run_dir_error.strerror or type(run_dir_error).__name__
        return EXIT_BAD_INPUT, (f"cannot write the run folder (hydra.run.dir): {run_dir_error.filename}: {reason}; "
                                "choose a folder you can write")
    return None


def _run_dir_oserror(exc: BaseException) -> OSError | None:
    """The OSError of Hydra preparing the run folder (creating it, writing ``.hydra/`` or the job's log), which
    happens before the task runs: the error (or the one it was raised from) is an OSError with a file name, and the
    traceback goes through Hydra's ``run_job`` and its last qe or Hydra frame is Hydra's (the task's own errors end
    in qe frames)."""
    err = exc if isinstance(exc, OSError) else (exc.__cause__ or exc.__context__)
    if not isinstance(err, OSError) or not err.filename:
        return None
    last, in_run_job, tb = "", False, exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_globals.get("__name__", "")
        if name.split(".")[0] in ("qe", "hydra"):
            last = name
        in_run_job = in_run_job or (name == "hydra.core.utils" and tb.tb_frame.f_code.co_name == "run_job")
        tb = tb.tb_next
    return err if in_run_job and last.split(".")[0] == "hydra" else None


def _report(prog: str, message: str) -> None:
    sys.stdout.flush()
    print(f"{prog}: error: {message}", file=sys.stderr, flush=True)


class JobError(Exception):
    """A multirun job's error, already reported on stderr as one line: Hydra records the job as failed and runs the
    rest of the sweep (as it does for any exception; a ``SystemExit`` would end the sweep at that job), then raises
    it from the sweeper; :func:`run_hydra` ends the process with ``status`` without reporting it again."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message)
        self.status, self.message = status, message

    def __str__(self) -> str:
        return self.message


def _multirun_job() -> tuple[bool, str]:
    """(inside a multirun job, 'job 3 (seed=2 model.hidden_size=64): ' or '')."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        if not HydraConfig.initialized():
            return False, ""
        hc = HydraConfig.get()
        if hc.mode != RunMode.MULTIRUN:
            return False, ""
        return True, f"job {hc.job.num} ({' '.join(hc.overrides.task)}): "
    except Exception:  # pragma: no cover - a prefix is never worth a second error
        return False, ""


def _job_prefix() -> str:
    """'job 3 (seed=2 model.hidden_size=64): ' inside a multirun job, else ''."""
    return _multirun_job()[1]


def _task(task: Callable, prog: str, full: bool, argv: list[str]) -> Callable:
    """``task`` as Hydra's task function: the real ``sys.argv`` while it runs (a DDP rank re-runs the command
    from it), and an error the user can act on printed as one line, ending the process with its status."""

    def task_function(cfg):
        hydra_argv, sys.argv = sys.argv, argv
        try:
            return task(cfg)
        except Exception as exc:
            if full or _full_error_requested():
                raise
            d = describe(exc)
            if d is None:
                raise
            multirun, prefix = _multirun_job()
            _report(prog, prefix + d[1])
            if multirun:  # the other jobs of the sweep still run; the process ends with d[0] after them
                raise JobError(d[0], prefix + d[1]) from None
            raise SystemExit(d[0]) from None
        finally:
            sys.argv = hydra_argv

    task_function.__name__ = getattr(task, "__name__", "task")
    task_function.__module__ = getattr(task, "__module__", __name__)
    return task_function


def run_hydra(task: Callable, config_name: str, argv: list[str], prog: str, conf: str | None = None) -> int:
    """Run ``task(cfg)`` as a Hydra application over ``argv`` (``--debug`` is taken out: full tracebacks).

    ``conf``: the config directory (a clone's conf/); ``$QE_CONF_DIR`` wins over it, the packaged configs are the
    default. Returns 0; a user error raises ``SystemExit(2 or 3)`` after its line on stderr (see the module
    docstring); ``--help`` / ``--cfg`` end as Hydra ends them.
    """
    import hydra

    from qe import sweep

    argv = list(argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    full = debug or _full_error_requested()
    real_argv = list(sys.argv)
    saved_env = {k: os.environ.get(k) for k in ("HYDRA_FULL_ERROR", _COMPACT_MARK)}
    saved_argv = sys.argv
    sweep._active_sweep_dir = None
    try:
        path = config_path(conf)
        app = hydra.main(version_base="1.3", config_path=path, config_name=config_name)(
            _task(task, prog, full, real_argv))
        # Hydra reports the errors it raises itself (composition, plugins) and exits 1; with HYDRA_FULL_ERROR it
        # raises them, and they are reported below
        os.environ["HYDRA_FULL_ERROR"] = "1"
        if not full:
            os.environ[_COMPACT_MARK] = "1"
        sys.argv = [prog, *argv]
        app()
    except SystemExit:
        sweep.write_summary_after_failure()
        raise
    except KeyboardInterrupt:
        sweep.write_summary_after_failure()
        raise
    except JobError as exc:  # a multirun job's error, reported when the job ended; the summary has every job
        summary = sweep.write_summary_after_failure()
        if summary is not None:
            print(f"{prog}: sweep summary (failed jobs included): {summary}", file=sys.stderr, flush=True)
        raise SystemExit(exc.status) from None
    except Exception as exc:
        sweep.write_summary_after_failure()
        if full:
            raise
        d = describe(exc)
        if d is None:
            raise
        _report(prog, d[1])
        raise SystemExit(d[0]) from None
    finally:
        sys.argv = saved_argv
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return 0


# --------------------------------------------------------------------------------------------- preflight
def _tensorboard_available() -> bool:
    import importlib.util

    return any(importlib.util.find_spec(m) is not None for m in ("tensorboard", "tensorboardX"))


def check_optional_packages(cfg: Any) -> None:
    """Before any data is read: a configured logger whose package is missing (``logger=tensorboard``) is named
    with the extra that installs it."""
    section = cfg.get("logger") or {}
    for key in section:
        node = section.get(key)
        target = str(node.get("_target_", "")) if hasattr(node, "get") else ""
        if target.endswith("TensorBoardLogger") and not _tensorboard_available():
            raise MissingExtraError(
                f"logger.{key} (TensorBoardLogger) needs the tensorboard package, which is not installed: "
                f"{install_hint('tensorboard', 'tensorboard')}")


def check_device(cfg: Any) -> None:
    """Before any data is read: ``trainer=gpu`` / ``trainer=ddp`` (``trainer.accelerator`` gpu or cuda) on a machine
    without a usable CUDA device, or more GPUs than it has, is named with what to run instead."""
    trainer = cfg.get("trainer") or {}
    accel = str(trainer.get("accelerator", "") or "").lower()
    if accel not in ("gpu", "cuda"):
        return
    import torch

    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n == 0:
        build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        raise DeviceError(
            f"trainer.accelerator={accel}, but this machine has no usable CUDA device (torch {torch.__version__}, "
            f"{build}); run with trainer=cpu (or trainer=ddp_cpu), or install a CUDA build of torch on a GPU machine")
    devices = trainer.get("devices")
    if isinstance(devices, int) and devices > n and int(trainer.get("num_nodes", 1) or 1) == 1:
        raise DeviceError(f"trainer.devices={devices}, but this machine has {n} CUDA device(s); "
                                f"use trainer.devices={n} (or -1 for all)")


# ----------------------------------------------------------------------------------------------- console
#: ``qe train -v`` / ``python train.py --verbose``: ``$QE_VERBOSE`` (:func:`qe.core.runtime.verbose`) set for the run,
#: so the console shows every library's INFO lines again (Lightning's banners, its model summary table), as the run's
#: ``train.log`` does
VERBOSE_FLAGS = ("-v", "--verbose")


class ConsoleFilter:
    """A filter of the console handlers of a ``qe train`` run: qe's own lines (INFO and up: the per-epoch progress
    line, where the data came from) and every library's warnings and errors pass; the other libraries' INFO lines
    (Lightning's "GPU available", "LOCAL_RANK", "`Trainer.fit` stopped", the model summary; "Seed set to 42") go to
    the run's log file (``<run dir>/train.log``, Hydra's file handler) alone."""

    def filter(self, record) -> bool:
        import logging

        return record.levelno >= logging.WARNING or record.name == "qe" or record.name.startswith("qe.")


_CONSOLE_FILTER = ConsoleFilter()


def quiet_train_console() -> None:
    """Put :class:`ConsoleFilter` on the root logger's console handlers (Hydra's; not its file handler), unless
    :func:`qe.core.runtime.verbose`. Idempotent."""
    import logging

    from qe.core.runtime import verbose

    if verbose():
        return
    for h in logging.getLogger().handlers:
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler) \
                and _CONSOLE_FILTER not in h.filters:
            h.addFilter(_CONSOLE_FILTER)


# -------------------------------------------------------------------------------------------- applications
def train(argv: list[str] | None = None, *, prog: str = "qe train", conf: str | None = None) -> int:
    """``qe train`` (``train.py`` passes its own ``prog`` and the clone's ``conf``). ``-v`` / ``--verbose`` (taken
    out before Hydra sees the arguments) sets ``$QE_VERBOSE`` for the run: Lightning's INFO lines on the console
    too (by default they go to ``<run dir>/train.log`` only, :func:`quiet_train_console`)."""
    from qe.core.runtime import VERBOSE_ENV

    argv = list(sys.argv[1:] if argv is None else argv)
    saved = os.environ.get(VERBOSE_ENV)
    if any(a in VERBOSE_FLAGS for a in argv):
        argv = [a for a in argv if a not in VERBOSE_FLAGS]
        os.environ[VERBOSE_ENV] = "1"  # DDP ranks started from this process inherit it
    try:
        return _train(argv, prog, conf)
    finally:
        if saved is None:
            os.environ.pop(VERBOSE_ENV, None)
        else:
            os.environ[VERBOSE_ENV] = saved


def _train(argv: list[str], prog: str, conf: str | None) -> int:
    def train_task(cfg):
        quiet_train_console()  # before Lightning is imported: its import-time lines are INFO too
        from qe import training
        from qe.training import main_entry

        # the command a SIGTERM message tells the user to run to resume (qe/training.py: resume_command)
        training.ENTRY = f"python {sys.argv[0]}" if prog.endswith(".py") else prog

        try:
            check_optional_packages(cfg)
            check_device(cfg)
        except ConfigError as exc:  # a sweep job stopped here still gets its row in the sweep summary
            from qe.sweep import write_job_result

            write_job_result(cfg, None, error=exc)
            raise
        return main_entry(cfg)

    return run_hydra(train_task, "train", argv, prog, conf)


def evaluate(argv: list[str] | None = None, *, prog: str = "qe evaluate", conf: str | None = None,
             entry: str | None = None) -> int:
    """``qe evaluate`` (``evaluate.py`` passes its own ``prog`` / ``entry`` and the clone's ``conf``)."""

    def evaluate_task(cfg):
        from qe.evaluation.runner import run_evaluation

        run_evaluation(cfg, entry=entry or prog)

    from qe.core.rundir import register_resolvers

    register_resolvers()  # ${qe.new_dir:...}: the default run folder, one of its own per run (conf/evaluate.yaml)
    return run_hydra(evaluate_task, "evaluate", list(sys.argv[1:] if argv is None else argv), prog, conf)


__all__ = ["CONFIG_PACKAGE", "DISTRIBUTION", "EXIT_BAD_INPUT", "EXIT_BAD_MODEL", "PLUGINS", "config_path",
           "packaged_conf_dir", "describe", "install_hint", "run_hydra", "train", "evaluate", "check_optional_packages",
           "check_device"]
