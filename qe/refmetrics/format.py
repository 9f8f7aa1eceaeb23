"""The ``svr`` export: what :mod:`qe.refmetrics.task` writes and :class:`qe.refmetrics.svr.SVRScorer` reads.

No pickle: ``svr.safetensors`` holds the support vectors, dual coefficients, intercept and the feature mean /
scale (float64); the manifest's ``config.svr`` holds kernel, gamma (resolved), coef0, degree, C, epsilon, the
feature names, the number of support vectors and the LM export's path and checksum (when a feature is
``lm:<score>``); ``config.train`` is the training run's resolved config.

This module imports neither Lightning nor Hydra nor scikit-learn (``save`` reads a fitted ``sklearn.svm.SVR``'s
attributes, it does not import sklearn).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from qe.core.export import export_checksum, export_writer, read_manifest, verify_checksum
# the kernels exported without pickle, and a fitted SVR's parameters: shared with the combiner (qe.core.svr)
from qe.core.svr import KERNELS, svr_params  # noqa: F401  (re-exported)
from qe.registry import EXPORT_FILES

EXPORT_KIND = "svr"
WEIGHTS = EXPORT_FILES[EXPORT_KIND]["weights"]


def save(dest: str | Path, model, features: Sequence[str], mean: np.ndarray, scale: np.ndarray,
         lm_export: str | Path | None, config: dict | None = None, data: dict | None = None,
         metrics: dict | None = None) -> Path:
    """Write a fitted ``sklearn.svm.SVR`` (and the standardisation of its features) as an ``svr`` export."""
    import torch
    from safetensors.torch import save_file

    if model.kernel not in KERNELS:
        raise ValueError(f"kernel {model.kernel!r} cannot be exported")
    lm_info = None
    if lm_export is not None and any(f.startswith("lm:") for f in features):
        lm_dir = Path(lm_export).resolve()
        lm_info = {"path": str(lm_dir), "checksum": read_manifest(lm_dir).get("checksum") or export_checksum(lm_dir)}
    spec = {**svr_params(model), "features": list(features), "lm_export": lm_info,
            "n_support": int(model.support_vectors_.shape[0])}
    tensors = {
        "support_vectors": torch.from_numpy(np.ascontiguousarray(model.support_vectors_, dtype=np.float64)),
        "dual_coef": torch.from_numpy(np.ascontiguousarray(model.dual_coef_[0], dtype=np.float64)),
        "intercept": torch.from_numpy(np.asarray(model.intercept_, dtype=np.float64).reshape(1)),
        "feature_mean": torch.from_numpy(np.asarray(mean, dtype=np.float64)),
        "feature_scale": torch.from_numpy(np.asarray(scale, dtype=np.float64)),
    }
    with export_writer(dest, kind=EXPORT_KIND, config={"svr": spec, "train": config or {}}, data=data,
                       metrics=metrics) as tmp:
        save_file(tensors, str(tmp / WEIGHTS))
    return Path(dest).resolve()


@dataclass
class SVRExport:
    """An ``svr`` export in memory (float64 numpy arrays)."""

    manifest: dict[str, Any]
    spec: dict[str, Any]  #: the manifest's ``config.svr``
    support_vectors: np.ndarray
    dual_coef: np.ndarray
    intercept: float
    feature_mean: np.ndarray
    feature_scale: np.ndarray

    @property
    def features(self) -> list[str]:
        return list(self.spec["features"])


def load(export_dir: str | Path, manifest: dict | None = None, *, verify: bool = True) -> SVRExport:
    """Read an ``svr`` export (kind and format version checked; the checksum too with ``verify``)."""
    from safetensors.numpy import load_file

    export_dir = Path(export_dir)
    manifest = manifest or read_manifest(export_dir, expected_kind=EXPORT_KIND)
    if verify:
        verify_checksum(export_dir, manifest)
    spec = manifest["config"]["svr"]
    t = load_file(str(export_dir / WEIGHTS))
    ex = SVRExport(manifest, spec, t["support_vectors"], t["dual_coef"], float(t["intercept"][0]),
                   t["feature_mean"], t["feature_scale"])
    if ex.support_vectors.shape[1] != len(ex.features):
        raise ValueError(f"{export_dir}: {ex.support_vectors.shape[1]} support-vector columns for "
                         f"{len(ex.features)} features")
    return ex


__all__ = ["EXPORT_KIND", "WEIGHTS", "KERNELS", "svr_params", "save", "load", "SVRExport"]
