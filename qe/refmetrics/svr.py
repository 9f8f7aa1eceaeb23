"""``task=svr``: Kann, Rothe & Filippova (2018, section 5.1)'s trained combination of metrics.

scikit-learn's ``SVR`` with its default parameters (RBF kernel, C = 1, epsilon = 0.1, gamma = "scale") predicts a
rating column (default ``naturalness``) from chosen features (default ROUGE-L-mult and WPSLOR). The split is
Kann's: a seeded shuffle, the first 500 records train, the next 500 dev, the rest test (``task.split``).
Features are standardised with the training split's mean and standard deviation (``task.standardize``; sklearn
recommends it for RBF kernels; Kann et al. do not say, so it is a switch). Dev is not used for any choice (the
parameters are sklearn's defaults); its figures are reported beside train and test.

Features are named by strings: a registered scorer name (``rouge-l-mult``, ``bleu-4``, ...) or ``lm:<score>``
for a score of the LM export given as ``task.lm_export`` (``lm:slor`` = WPSLOR for a WordPiece export).

The export (kind ``svr``) stores no pickle: ``svr.safetensors`` holds the support vectors, dual coefficients,
intercept and the feature mean/scale (float64); the manifest's ``config.svr`` holds kernel, gamma (resolved),
coef0, degree, the feature names and the LM export's path and checksum. :class:`SVRScorer` recomputes the
decision function the way libsvm does (per support vector, kernel value, then a running sum in support-vector
order, minus rho), so its predictions equal ``SVR.predict`` (the tests compare them).
"""
from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from qe.export import export_checksum, export_writer, read_manifest, verify_checksum

from qe.core.scorer import Scorer

log = logging.getLogger(__name__)

EXPORT_KIND = "svr"
WEIGHTS = "svr.safetensors"
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


def kann_split(n: int, n_train: int = 500, n_dev: int = 500, seed: int = 42) -> dict[str, np.ndarray]:
    """Seeded shuffle; the first n_train train, the next n_dev dev, the rest test."""
    if n_train + n_dev >= n:
        raise ValueError(f"split: {n_train} train + {n_dev} dev leaves no test records out of {n}")
    perm = np.random.default_rng(seed).permutation(n)
    return {"train": perm[:n_train], "dev": perm[n_train : n_train + n_dev], "test": perm[n_train + n_dev :]}


# --------------------------------------------------------------------------------------------------------------
# the model without pickle
# --------------------------------------------------------------------------------------------------------------
def svr_params(model) -> dict[str, Any]:
    gamma = float(getattr(model, "_gamma", model.gamma if isinstance(model.gamma, (int, float)) else 0.0))
    return {"kernel": model.kernel, "gamma": gamma, "coef0": float(model.coef0), "degree": int(model.degree),
            "C": float(model.C), "epsilon": float(model.epsilon)}


def decision_function(X: np.ndarray, sv: np.ndarray, dual: np.ndarray, intercept: float, kernel: str,
                      gamma: float, coef0: float, degree: int) -> np.ndarray:
    """libsvm's prediction: sum_i dual_i * K(sv_i, x) accumulated in support-vector order, + intercept (= -rho)."""
    X = np.asarray(X, dtype=np.float64)
    total = np.zeros(len(X), dtype=np.float64)
    for i in range(sv.shape[0]):
        s = sv[i]
        if kernel == "rbf":
            acc = np.zeros(len(X))
            for j in range(X.shape[1]):
                d = X[:, j] - s[j]
                acc = acc + d * d
            k = np.exp(-gamma * acc)
        else:
            dot = np.zeros(len(X))
            for j in range(X.shape[1]):
                dot = dot + X[:, j] * s[j]
            if kernel == "linear":
                k = dot
            elif kernel == "poly":
                k = (gamma * dot + coef0) ** degree
            elif kernel == "sigmoid":
                k = np.tanh(gamma * dot + coef0)
            else:
                raise ValueError(f"kernel {kernel!r} is not supported without pickle (precomputed kernels)")
        total = total + dual[i] * k
    return total + intercept


def save_svr_export(dest: str | Path, model, features: Sequence[str], mean: np.ndarray, scale: np.ndarray,
                    lm_export: str | Path | None, config: dict | None = None, data: dict | None = None,
                    metrics: dict | None = None) -> Path:
    import torch
    from safetensors.torch import save_file

    if model.kernel not in ("rbf", "linear", "poly", "sigmoid"):
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


class SVRScorer(Scorer):
    """Scores outputs with an exported SVR: features -> standardise -> libsvm decision function."""

    def __init__(self, export_dir: str | Path, manifest: dict | None = None, lm: str | Path | None = None,
                 device: str | None = None, verify: bool = True):
        from safetensors.numpy import load_file

        self.export_dir = Path(export_dir)
        self.manifest = manifest or read_manifest(self.export_dir, expected_kind=EXPORT_KIND)
        if verify:
            verify_checksum(self.export_dir, self.manifest)
        self.spec = self.manifest["config"]["svr"]
        t = load_file(str(self.export_dir / WEIGHTS))
        self.sv, self.dual = t["support_vectors"], t["dual_coef"]
        self.intercept = float(t["intercept"][0])
        self.mean, self.scale = t["feature_mean"], t["feature_scale"]
        self.features = list(self.spec["features"])
        if self.sv.shape[1] != len(self.features):
            raise ValueError(f"{export_dir}: {self.sv.shape[1]} support-vector columns for {len(self.features)} features")
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

    @property
    def signature(self) -> str:
        from qe.version import __version__

        s = self.spec
        return (f"{self.name}|kernel:{s['kernel']}|C:{s['C']:g}|eps:{s['epsilon']:g}|gamma:{s['gamma']:.6g}"
                f"|nSV:{s['n_support']}|export:{self._checksum}|qe:{__version__}")

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


# --------------------------------------------------------------------------------------------------------------
# the task runner
# --------------------------------------------------------------------------------------------------------------
def _records(cfg) -> list:
    from qe.data.datasets import load_dataset

    t = cfg.task
    opts = _plain(t.get("dataset_options"))
    return load_dataset(t.dataset, data_dir=cfg.paths.get("data_dir"), **opts)


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


def run(cfg) -> dict[str, Any]:
    """Hydra runner (``cfg.task.runner``): features -> split -> SVR -> metrics -> export; returns the metrics."""
    from qe.refmetrics.combine import zstats, znorm
    from qe.training import plain_config

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
    svr_kwargs = _plain(t.get("svr"))
    model, mean, scale, metrics = fit_and_evaluate(X, y, split, svr_kwargs, bool(t.get("standardize", True)))
    # the unsupervised baselines on the same test records: each feature alone, and their z-sum (ROUGE-LM)
    te = split["test"]
    zsum = np.zeros(len(te))
    for j, f in enumerate(features):
        metrics[f"test/{f}/pearson"] = pearson(X[te, j], y[te])
        metrics[f"test/{f}/mse"] = kann_mse(X[te, j], y[te])
        zsum = zsum + znorm(X[te, j], zstats(X[te, j]))
    metrics["test/zsum/pearson"] = pearson(zsum, y[te])
    metrics["test/zsum/mse"] = kann_mse(zsum, y[te])
    print(f"\nSVR on {t.dataset} ({rating}): train/dev/test = {len(split['train'])}/{len(split['dev'])}/{len(te)}")
    for k in sorted(metrics):
        if k.endswith("/pearson") or k.endswith("/mse"):
            print(f"  {k:40s} {metrics[k]:.4f}")
    if cfg.get("export"):
        dest = Path(cfg.export_dir).expanduser()
        data = {"name": str(t.dataset), "rating": rating, "records": len(y),
                "ids_sha256": _ids_hash([r.id for r in keep])}
        path = save_svr_export(dest, model, features, mean, scale, lm_export, config=plain_config(cfg),
                               data=data, metrics=metrics)
        metrics["export_path"] = str(path)
        print(f"\nexport written to: {path}")
        report = Path(cfg.paths.output_dir) / "svr_report.json"
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    return metrics


def _plain(node) -> dict:
    from omegaconf import OmegaConf

    if node is None:
        return {}
    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else dict(node)


def _ids_hash(ids: list[str]) -> str:
    import hashlib

    return hashlib.sha256("\n".join(ids).encode()).hexdigest()
