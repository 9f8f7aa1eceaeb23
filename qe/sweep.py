"""What a sweep found: ``sweep_summary.csv`` / ``sweep_summary.md`` in the sweep directory after every multirun.

Every training job writes ``job_result.json`` into its own output directory (:func:`write_job_result`, called by
:func:`qe.training.main_entry`): the optimised metric's name, value and direction, the best validation value of the
task's monitor (the checkpoint callback's ``best_model_score``), the export path and the job's status. At the end
of a multirun the Hydra callback :class:`SweepSummary` (``hydra.callbacks.sweep_summary`` in conf/train.yaml) scans
the sweep directory for job folders and writes one row per job, best first in the metric's direction::

    qe train -m model.hidden_size=256,512 seed=1,2
    # -> outputs/lm_word/multiruns/<time>/sweep_summary.md

The files are read back from disk, not collected from the launcher's return values, so the summary is the same
whichever launcher ran the jobs (basic, joblib, submitit: jobs in other processes or on other machines). A job
that failed says so (``failed`` / ``interrupted``); a folder without ``job_result.json`` (a job killed before it
ended, or still running) is listed as ``no result``. ``python -m qe.sweep SWEEP_DIR`` rewrites the summary of a
sweep directory by hand (after a sweep was stopped, or when more jobs were added to it).

This module imports nothing heavy: Hydra instantiates the callback in the launching process and in every job.
"""
from __future__ import annotations

import csv
import json
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

from qe.core.jsonio import dumps

log = logging.getLogger(__name__)

RESULT_FILE = "job_result.json"
SUMMARY_CSV = "sweep_summary.csv"
SUMMARY_MD = "sweep_summary.md"

MINIMIZE, MAXIMIZE = "minimize", "maximize"
#: metric names that are better when lower (used only when neither the sweeper nor the task says)
_LOWER_IS_BETTER = ("loss", "ppl", "perplexity", "error", "err", "mae", "mse", "rmse", "wer", "ter")

#: the sweep directory of the multirun running in this process (set by :meth:`SweepSummary.on_multirun_start`),
#: so that :mod:`qe.app` can still write the summary when a job's error ends the sweep early
_active_sweep_dir: Path | None = None


# ------------------------------------------------------------------------------------------------ job side
def _direction_word(mode: Any) -> str | None:
    m = str(mode or "").lower()
    if m in ("min", MINIMIZE):
        return MINIMIZE
    if m in ("max", MAXIMIZE):
        return MAXIMIZE
    return None


def metric_direction(cfg: Any, metric: str | None, hydra_cfg: Any = None) -> str:
    """``minimize`` / ``maximize`` for ``metric``: the sweeper's ``direction`` (Optuna) when it sets one, else the
    task's ``monitor_mode`` when the metric is the task's monitor, else a guess from the name (loss, ppl, error:
    minimise)."""
    if hydra_cfg is not None:
        sweeper_dir = (hydra_cfg.get("sweeper") or {}).get("direction")
        if isinstance(sweeper_dir, (list, tuple)) or type(sweeper_dir).__name__ == "ListConfig":
            sweeper_dir = sweeper_dir[0] if len(sweeper_dir) == 1 else None
        word = _direction_word(sweeper_dir)
        if word:
            return word
    task = cfg.get("task") if cfg is not None else None
    if task is not None and metric and metric == task.get("monitor"):
        word = _direction_word(task.get("monitor_mode"))
        if word:
            return word
    name = (metric or "").lower().rsplit("/", 1)[-1]
    return MINIMIZE if any(name == w or name.endswith(("_" + w, "-" + w)) for w in _LOWER_IS_BETTER) else MAXIMIZE


def _float_or_none(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def best_checkpoint_score(run_dir: str | Path) -> tuple[str | None, float | None]:
    """(monitor, best value) recorded by the run's ModelCheckpoint in ``<run_dir>/checkpoints/last.ckpt``
    (memory-mapped, so a large checkpoint is not read); (None, None) when there is none."""
    last = Path(run_dir) / "checkpoints" / "last.ckpt"
    if not last.is_file():
        return None, None
    try:
        import torch

        state = torch.load(str(last), map_location="cpu", weights_only=True, mmap=True)
    except Exception as exc:  # a checkpoint cut short, an old format: the summary goes on without it
        log.debug("best score not read from %s: %s", last, exc)
        return None, None
    for key, cb in (state.get("callbacks") or {}).items():
        if str(key).startswith("ModelCheckpoint") and isinstance(cb, dict) and cb.get("best_model_score") is not None:
            monitor = cb.get("monitor")
            return (str(monitor) if monitor else None), _float_or_none(cb["best_model_score"])
    return None, None


def _hydra_job() -> Any:
    try:
        from hydra.core.hydra_config import HydraConfig

        return HydraConfig.get() if HydraConfig.initialized() else None
    except Exception:  # pragma: no cover - Hydra not importable / not running
        return None


def _job_num(hc: Any) -> int | None:
    """``hydra.job.num`` in a multirun; None in a single run (where it is unset)."""
    if hc is None:
        return None
    from omegaconf import OmegaConf

    num = OmegaConf.select(hc, "job.num", default=None, throw_on_missing=False)
    return int(num) if isinstance(num, int) else None


def _is_rank_zero() -> bool:
    return os.environ.get("LOCAL_RANK", "0") == "0" and os.environ.get("NODE_RANK", "0") == "0"


def job_result(cfg: Any, metrics: dict[str, Any] | None, *, error: BaseException | None = None,
               elapsed_s: float | None = None) -> dict[str, Any]:
    """The record :func:`write_job_result` writes (see the module docstring)."""
    hc = _hydra_job()
    metric = cfg.get("optimized_metric") if cfg is not None else None
    metric = str(metric) if metric else None
    run_dir = Path(str(cfg.paths.output_dir)) if cfg is not None and cfg.get("paths") else None
    metrics = metrics or {}
    best_name, best = best_checkpoint_score(run_dir) if run_dir is not None else (None, None)
    if best is None and metric and f"best/{metric}" in metrics:
        best_name, best = metric, _float_or_none(metrics[f"best/{metric}"])
    if error is None:
        status = "completed"
    elif isinstance(error, KeyboardInterrupt) or (isinstance(error, SystemExit) and error.code in (130, 143)):
        status = "interrupted"
    else:
        status = "failed"
    rec: dict[str, Any] = {
        "job": _job_num(hc),
        "overrides": list(hc.overrides.task) if hc is not None else [],
        "metric": metric,
        "value": _float_or_none(metrics.get(metric)) if metric else None,
        "direction": metric_direction(cfg, metric, hc),
        "best_metric": best_name,
        "best_value": best,
        "export_path": metrics.get("export_path"),
        "status": status,
        "error": None if error is None else (f"{type(error).__name__}: {error}".splitlines() or [""])[0][:500],
        "elapsed_s": None if elapsed_s is None else round(float(elapsed_s), 1),
        "output_dir": str(run_dir) if run_dir is not None else None,
        "written": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    return rec


def write_job_result(cfg: Any, metrics: dict[str, Any] | None, *, error: BaseException | None = None,
                     elapsed_s: float | None = None) -> Path | None:
    """Write ``<output dir>/job_result.json`` (global rank 0 only; never raises: a result file that cannot be
    written must not fail a finished run)."""
    if not _is_rank_zero():
        return None
    try:
        rec = job_result(cfg, metrics, error=error, elapsed_s=elapsed_s)
        if not rec["output_dir"]:
            return None
        out = Path(rec["output_dir"]) / RESULT_FILE
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(dumps(rec, indent=1) + "\n", encoding="utf-8")  # strict JSON: a NaN objective -> null
        os.replace(tmp, out)
        return out
    except Exception as exc:  # pragma: no cover - disk full, read-only run dir
        log.warning("%s not written: %s", RESULT_FILE, exc)
        return None


# ---------------------------------------------------------------------------------------------- sweep side
def _read_yaml_list(path: Path) -> list[str]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return []
    return [str(x) for x in data] if isinstance(data, list) else []


def _job_dirs(sweep_dir: Path) -> list[Path]:
    """Folders under ``sweep_dir`` that are Hydra jobs (``.hydra/overrides.yaml``) or hold a ``job_result.json``."""
    found = {p.parent.parent for p in sweep_dir.glob("**/.hydra/overrides.yaml")}
    found |= {p.parent for p in sweep_dir.glob(f"**/{RESULT_FILE}")}
    found.discard(sweep_dir)
    return sorted(found)


def collect(sweep_dir: str | Path) -> list[dict[str, Any]]:
    """One record per job folder of ``sweep_dir`` (see :func:`job_result`; ``status: no result`` without one)."""
    sweep_dir = Path(sweep_dir)
    rows = []
    for d in _job_dirs(sweep_dir):
        rec: dict[str, Any] = {}
        f = d / RESULT_FILE
        if f.is_file():
            try:
                rec = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                rec = {"status": "unreadable result", "error": str(exc)}
        else:
            rec = {"status": "no result"}
        if not rec.get("overrides"):
            rec["overrides"] = _read_yaml_list(d / ".hydra" / "overrides.yaml")
        if rec.get("job") is None:
            rel = d.relative_to(sweep_dir).as_posix()
            rec["job"] = int(rel) if rel.isdigit() else rel
        rec["dir"] = d
        rows.append(rec)
    return rows


def _sort_key(direction: str):
    def key(r: dict[str, Any]):
        v = _float_or_none(r.get("value"))
        job = r.get("job")
        job_key = (0, job, "") if isinstance(job, int) else (1, 0, str(job))
        if v is None:
            return (1, 0.0, job_key)
        return (0, v if direction == MINIMIZE else -v, job_key)

    return key


def _fmt(v: Any) -> str:
    f = _float_or_none(v)
    if f is None:
        return "" if v is None else str(v)
    return f"{f:.6g}"


def _rel(path: Any, base: Path) -> str:
    if not path:
        return ""
    try:
        return Path(path).resolve().relative_to(base.resolve()).as_posix()
    except (ValueError, OSError):
        return str(path)


def write_summary(sweep_dir: str | Path) -> tuple[Path, Path] | None:
    """Write ``sweep_summary.csv`` and ``sweep_summary.md`` into ``sweep_dir``; None when it holds no job."""
    sweep_dir = Path(sweep_dir)
    rows = collect(sweep_dir)
    if not rows:
        return None
    names = [r["metric"] for r in rows if r.get("metric")]
    metric = max(set(names), key=names.count) if names else "metric"
    mixed = len(set(names)) > 1
    directions = [r["direction"] for r in rows if r.get("metric") == metric and r.get("direction")]
    direction = directions[0] if directions else metric_direction(None, metric)
    best_names = [r["best_metric"] for r in rows if r.get("best_metric")]
    best_label = f"best {max(set(best_names), key=best_names.count)}" if best_names else "best validation"
    rows.sort(key=_sort_key(direction))

    header = ["job", "overrides", metric, best_label, "export_path", "status"] + (["metric"] if mixed else [])
    csv_path = sweep_dir / SUMMARY_CSV
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for r in rows:
            w.writerow([r.get("job"), " ".join(r.get("overrides") or []), _fmt(r.get("value")), _fmt(r.get("best_value")),
                        r.get("export_path") or "", r.get("status") or ""] + ([r.get("metric") or ""] if mixed else []))

    def cell(s: Any) -> str:
        return str(s).replace("|", "\\|").replace("\n", " ")

    # the markdown table shows what differs between jobs; what they share is said once above it
    lists = [list(r.get("overrides") or []) for r in rows]
    common = [o for o in lists[0] if all(o in ls for ls in lists[1:])] if len(lists) > 1 else []

    def varying(r: dict[str, Any]) -> str:
        return " ".join(o for o in (r.get("overrides") or []) if o not in common)

    done = [r for r in rows if r.get("status") == "completed"]
    ranked = [r for r in rows if _float_or_none(r.get("value")) is not None]
    lines = [f"# Sweep summary: {sweep_dir}", ""]
    lines.append(f"{len(rows)} jobs ({len(done)} completed), sorted by `{metric}` ({direction}); "
                 f"`{best_label}` is the best validation value of each job's checkpoint monitor; export paths are "
                 f"relative to the sweep directory.")
    if common:
        lines.append(f"Overrides of every job: `{' '.join(common)}`.")
    if ranked:
        b = ranked[0]
        lines.append(f"Best: job {b.get('job')} (`{varying(b) or 'no other overrides'}`), "
                     f"`{metric}` = {_fmt(b.get('value'))}.")
    lines += ["", "| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        ov = varying(r)
        status = r.get("status") or ""
        if r.get("error") and status != "completed":
            status += f": {r['error']}"
        vals = [r.get("job"), f"`{ov}`" if ov else "", _fmt(r.get("value")), _fmt(r.get("best_value")),
                _rel(r.get("export_path"), sweep_dir), status] + ([r.get("metric") or ""] if mixed else [])
        lines.append("| " + " | ".join(cell(v) for v in vals) + " |")
    md_path = sweep_dir / SUMMARY_MD
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return csv_path, md_path


def write_summary_after_failure() -> Path | None:
    """The summary of the sweep this process was running when a job's error ended it (called by :mod:`qe.app`)."""
    global _active_sweep_dir
    d, _active_sweep_dir = _active_sweep_dir, None
    if d is None or not d.is_dir():
        return None
    try:
        out = write_summary(d)
    except Exception as exc:  # pragma: no cover - never hide the job's error behind this one
        log.warning("sweep summary not written: %s", exc)
        return None
    return out[1] if out else None


try:
    from hydra.experimental.callback import Callback as _HydraCallback
except ImportError:  # pragma: no cover - hydra-core is a dependency
    _HydraCallback = object  # type: ignore[assignment,misc]


class SweepSummary(_HydraCallback):  # type: ignore[misc,valid-type]
    """Hydra callback: writes the sweep summary at the end of every multirun (``hydra.callbacks`` in train.yaml)."""

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        global _active_sweep_dir
        _active_sweep_dir = Path(str(config.hydra.sweep.dir))

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        global _active_sweep_dir
        _active_sweep_dir = None
        sweep_dir = Path(str(config.hydra.sweep.dir))
        try:
            out = write_summary(sweep_dir)
        except Exception as exc:  # a summary must never turn a finished sweep into a failure
            log.warning("sweep summary not written: %s", exc)
            return
        if out:
            log.info("sweep summary: %s", out[1])


if __name__ == "__main__":
    import argparse
    import sys

    ap = argparse.ArgumentParser(description="write sweep_summary.csv / .md for a multirun directory")
    ap.add_argument("sweep_dir")
    a = ap.parse_args()
    res = write_summary(a.sweep_dir)
    if res is None:
        print(f"{a.sweep_dir}: no job folders", file=sys.stderr)
        raise SystemExit(2)
    print(res[1])
