"""The ``svr`` scorer: Kann, Rothe & Filippova (2018, section 5.1)'s trained combination of metrics.

Features are named by strings: a registered scorer name (``rouge-l-mult``, ``bleu-4``, ...) or ``lm:<score>``
for a score of an LM export (``lm:slor`` = WPSLOR for a WordPiece export); :func:`compute_features` computes
them. :class:`SVRScorer` reads an ``svr`` export (:mod:`qe.refmetrics.format`; written by ``task=svr``,
:mod:`qe.refmetrics.task`) and recomputes the decision function the way libsvm does (per support vector, kernel
value, then a running sum in support-vector order, minus rho), so its predictions equal ``SVR.predict`` (the
tests compare them). :func:`pearson` and :func:`kann_mse` (Kann et al.'s eq. 6) are the measures the task and
``experiments/kann2018.py`` report.

This module imports neither Lightning, Hydra nor scikit-learn.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from qe.core.scorer import Scorer
from qe.core.svr import decision_function  # noqa: F401  (re-exported: qe.refmetrics.svr.decision_function)
from qe.core.export import read_manifest
from qe.refmetrics import format as fmt
from qe.refmetrics.format import EXPORT_KIND, WEIGHTS  # noqa: F401  (re-exported: the kind's names)

DEFAULT_FEATURES = ("rouge-l-mult", "lm:slor")


# --------------------------------------------------------------------------------------------------------------
# features and evaluation measures
# --------------------------------------------------------------------------------------------------------------
def feature_needs_refs(name: str) -> bool:
    if name.startswith("lm:"):
        return False
    import qe

    return bool(getattr(qe.load(name), "requires_refs", False))


def compute_features(features: Sequence[str], outputs: list[str], refs: list[list[str]] | None,
                     lm_export: str | Path | None = None, lm_scorer: Any = None, progress: bool = False,
                     device: str | None = None) -> np.ndarray:
    """Matrix (n_outputs, n_features) of feature values, columns in the order of ``features``."""
    import qe

    cols = []
    lm_comps = None
    for f in features:
        if f.startswith("lm:"):
            if lm_comps is None:
                sc = lm_scorer
                if sc is None:
                    if lm_export is None:
                        raise ValueError(f"feature {f!r} needs an LM export (task.lm_export / lm=...)")
                    sc = qe.load(lm_export, device=device)
                lm_comps = sc.score_components(outputs, progress=progress)
            key = f[3:]
            if key not in lm_comps:
                raise ValueError(f"feature {f!r}: the LM export gives {sorted(lm_comps)}")
            cols.append(np.asarray(lm_comps[key], dtype=float))
        else:
            sc = qe.load(f)
            cols.append(np.asarray(sc.score(outputs, refs=refs if sc.requires_refs else None, progress=progress),
                                   dtype=float))
    return np.stack(cols, axis=1) if cols else np.zeros((len(outputs), 0))


def pearson(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or x.std() == 0 or y.std() == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def kann_mse(x, y) -> float:
    """Kann et al. (2018) eq. 6: the MSE of the ratings y after the best linear map of the scores x."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    A = np.stack([x, np.ones_like(x)], axis=1)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    return float(np.mean((A @ coef - y) ** 2))


# --------------------------------------------------------------------------------------------------------------
# the model without pickle
# --------------------------------------------------------------------------------------------------------------
class SVRScorer(Scorer):
    """Scores outputs with an exported SVR: features -> standardise -> libsvm decision function."""

    def __init__(self, export_dir: str | Path, manifest: dict | None = None, lm: str | Path | None = None,
                 device: str | None = None, verify: bool = True):
        self.export_dir = Path(export_dir)
        ex = fmt.load(self.export_dir, manifest, verify=verify)
        self.manifest, self.spec = ex.manifest, ex.spec
        self.sv, self.dual, self.intercept = ex.support_vectors, ex.dual_coef, ex.intercept
        self.mean, self.scale = ex.feature_mean, ex.feature_scale
        self.features = ex.features
        self.device = device
        self.lm_export = None
        if any(f.startswith("lm:") for f in self.features):
            info = self.spec.get("lm_export") or {}
            self.lm_export = Path(lm) if lm is not None else Path(info.get("path", ""))
            if not self.lm_export.is_dir():
                raise FileNotFoundError(
                    f"{export_dir}: the LM export this SVR was trained with ({info.get('path')}) is not there; "
                    f"pass lm=PATH to the same export")
            got = read_manifest(self.lm_export).get("checksum")
            if info.get("checksum") and got != info["checksum"]:
                raise ValueError(f"{self.lm_export}: LM export checksum {str(got)[:12]} differs from the one the SVR "
                                 f"was trained with ({info['checksum'][:12]})")
        self.requires_refs = any(feature_needs_refs(f) for f in self.features)
        self.name = "SVR(" + "+".join(self.features) + ")"
        self._checksum = self.manifest.get("checksum", "")[:12]

    def signature_fields(self) -> dict:
        s = self.spec
        return {"kernel": s["kernel"], "C": float(s["C"]), "eps": float(s["epsilon"]), "gamma": f"{s['gamma']:.6g}",
                "nSV": s["n_support"], "export": self._checksum}

    def features_of(self, outputs, refs=None, progress: bool = False) -> np.ndarray:
        return compute_features(self.features, outputs, refs, self.lm_export, progress=progress, device=self.device)

    def predict_features(self, X: np.ndarray) -> np.ndarray:
        Z = (np.asarray(X, np.float64) - self.mean) / self.scale
        s = self.spec
        return decision_function(Z, self.sv, self.dual, self.intercept, s["kernel"], s["gamma"], s["coef0"], s["degree"])

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw):
        X = self.features_of(outputs, refs, progress)
        out = np.full(len(outputs), np.nan)
        ok = np.isfinite(X).all(axis=1)
        if ok.any():
            out[ok] = self.predict_features(X[ok])
        return out.tolist()

    def _score_components(self, outputs, *, mrs=None, refs=None, batch_size=None, progress=True, **kw):
        X = self.features_of(outputs, refs, progress)
        comps = {f: X[:, j].tolist() for j, f in enumerate(self.features)}
        out = np.full(len(outputs), np.nan)
        ok = np.isfinite(X).all(axis=1)
        if ok.any():
            out[ok] = self.predict_features(X[ok])
        comps["svr"] = out.tolist()
        return comps


def from_export(export_dir: Path, manifest: dict, **options: Any) -> SVRScorer:
    return SVRScorer(export_dir, manifest=manifest, **options)


