"""``task=svr``: fit Kann, Rothe & Filippova (2018, section 5.1)'s SVR combination of metrics (training side).

scikit-learn's ``SVR`` with its default parameters (RBF kernel, C = 1, epsilon = 0.1, gamma = "scale") predicts a
rating column (default ``naturalness``) from chosen features (default ROUGE-L-mult and WPSLOR; names as in
:func:`qe.refmetrics.svr.compute_features`). The split is Kann's: a seeded shuffle, the first 500 records train,
the next 500 dev, the rest test (``task.split``). Features are standardised with the training split's mean and
standard deviation (``task.standardize``; sklearn recommends it for RBF kernels; Kann et al. do not say, so it is
a switch). Dev is not used for any choice (the parameters are sklearn's defaults); its figures are reported
beside train and test.

:func:`run` is the task's runner (``cfg.task.runner``): its metrics go to the configured loggers through
:func:`qe.training.log_metrics` (``logger=csv|wandb|none`` as for every task), to ``svr_report.json`` in the run
directory, and into the export's manifest (:mod:`qe.refmetrics.format`, kind ``svr``).
"""
from __future__ import annotations

import hashlib
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np

from qe.core.config import to_dict
from qe.core.jsonio import dumps
from qe.refmetrics import format as fmt
from qe.refmetrics.svr import compute_features, feature_needs_refs, kann_mse, pearson

log = logging.getLogger(__name__)


def kann_split(n: int, n_train: int = 500, n_dev: int = 500, seed: int = 42) -> dict[str, np.ndarray]:
    """Seeded shuffle; the first n_train train, the next n_dev dev, the rest test."""
    if n_train + n_dev >= n:
        raise ValueError(f"split: {n_train} train + {n_dev} dev leaves no test records out of {n}")
    perm = np.random.default_rng(seed).permutation(n)
    return {"train": perm[:n_train], "dev": perm[n_train : n_train + n_dev], "test": perm[n_train + n_dev :]}


def fit_and_evaluate(X: np.ndarray, y: np.ndarray, split: dict[str, np.ndarray], svr_kwargs: dict | None = None,
                     standardize: bool = True):
    """Fit sklearn's SVR on split['train']; return (model, mean, scale, metrics per split)."""
    from sklearn.svm import SVR

    tr = split["train"]
    if standardize:
        mean, scale = X[tr].mean(axis=0), X[tr].std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
    else:
        mean, scale = np.zeros(X.shape[1]), np.ones(X.shape[1])
    Z = (X - mean) / scale
    model = SVR(**(svr_kwargs or {}))
    model.fit(Z[tr], y[tr])
    metrics = {}
    for part, idx in split.items():
        p = model.predict(Z[idx])
        metrics[f"{part}/pearson"] = pearson(p, y[idx])
        metrics[f"{part}/mse"] = kann_mse(p, y[idx])
        metrics[f"{part}/n"] = int(len(idx))
    return model, mean, scale, metrics


def baselines(X: np.ndarray, y: np.ndarray, features: list[str], test: np.ndarray) -> dict[str, float]:
    """The unsupervised baselines on the test records: each feature alone, and their z-sum (ROUGE-LM)."""
    from qe.refmetrics.combine import zstats, znorm

    metrics: dict[str, float] = {}
    zsum = np.zeros(len(test))
    for j, f in enumerate(features):
        metrics[f"test/{f}/pearson"] = pearson(X[test, j], y[test])
        metrics[f"test/{f}/mse"] = kann_mse(X[test, j], y[test])
        zsum = zsum + znorm(X[test, j], zstats(X[test, j]))
    metrics["test/zsum/pearson"] = pearson(zsum, y[test])
    metrics["test/zsum/mse"] = kann_mse(zsum, y[test])
    return metrics


def _records(cfg) -> list:
    from qe.data.datasets import load_dataset

    t = cfg.task
    return load_dataset(t.dataset, data_dir=cfg.paths.get("data_dir"), **to_dict(t.get("dataset_options")))


def run(cfg) -> dict[str, Any]:
    """Hydra runner (``cfg.task.runner``): features -> split -> SVR -> metrics (loggers) -> export."""
    from qe.training import log_metrics, plain_config

    t = cfg.task
    features = list(t.features)
    rating = str(t.rating)
    lm_export = t.get("lm_export")
    records = _records(cfg)
    need_refs = any(feature_needs_refs(f) for f in features)
    keep = [r for r in records if (not need_refs or any(x.strip() for x in r.refs))
            and math.isfinite(r.ratings.get(rating, math.nan))]
    if not keep:
        raise ValueError(f"task=svr: no record of {t.dataset} has references and a {rating!r} rating")
    log.info("svr: %d of %d records have references and a %s rating", len(keep), len(records), rating)
    outputs = [r.output for r in keep]
    refs = [r.refs for r in keep] if need_refs else None
    y = np.array([r.ratings[rating] for r in keep], dtype=float)
    X = compute_features(features, outputs, refs, lm_export, progress=bool(t.get("progress", True)))
    finite = np.isfinite(X).all(axis=1)
    if not finite.all():
        log.warning("svr: %d records with a NaN feature (e.g. empty output) dropped", int((~finite).sum()))
        keep = [r for r, ok in zip(keep, finite) if ok]
        X, y = X[finite], y[finite]
    sp = t.split
    split = kann_split(len(y), int(sp.train), int(sp.dev), int(sp.get("seed", cfg.seed)))
    model, mean, scale, metrics = fit_and_evaluate(X, y, split, to_dict(t.get("svr")),
                                                   bool(t.get("standardize", True)))
    te = split["test"]
    metrics.update(baselines(X, y, features, te))
    print(f"\nSVR on {t.dataset} ({rating}): train/dev/test = {len(split['train'])}/{len(split['dev'])}/{len(te)}")
    for k in sorted(metrics):
        if k.endswith("/pearson") or k.endswith("/mse"):
            print(f"  {k:40s} {metrics[k]:.4f}")
    log_metrics(cfg, metrics)
    if cfg.get("export"):
        dest = Path(cfg.export_dir).expanduser()
        data = {"name": str(t.dataset), "rating": rating, "records": len(y),
                "ids_sha256": hashlib.sha256("\n".join(r.id for r in keep).encode()).hexdigest()}
        path = fmt.save(dest, model, features, mean, scale, lm_export, config=plain_config(cfg), data=data,
                        metrics=metrics)
        metrics["export_path"] = str(path)
        print(f"\nexport written to: {path}")
        report = Path(cfg.paths.output_dir) / "svr_report.json"
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(dumps(metrics, indent=2) + "\n", encoding="utf-8")
    return metrics


__all__ = ["kann_split", "fit_and_evaluate", "baselines", "run"]
