"""A learned combiner over any set of scorers: features -> standardise -> ridge or SVR -> one score.

The SVR of Kann et al. (``task=svr``, :mod:`qe.refmetrics.task`) combines reference metrics and an LM score; the
``ensemble`` kind averages RatPred members with fixed weights. A combiner generalises both to any feature set -
referenceless signals above all: content coverage (``coverage``, with its components), RatPred exports, GRUEN
acceptability, SLOR, length - and says how well the combination transfers to a domain whose ratings it never saw
(leave one domain out, :func:`leave_one_domain_out`).

A **feature** is one column of numbers per output, named by a scorer and optionally one of its components:

* a string ``"NAME"`` or ``"NAME:COMPONENT"`` (``"coverage:ser"``, ``"slor-word-domain:slor"``), where NAME is anything
  :func:`qe.load` accepts (a registered scorer, a built zoo model, an export directory);
* a mapping ``{scorer: NAME, component: COMPONENT, options: {...}, name: COLUMN}`` when the scorer needs options
  (``{scorer: coverage, options: {lexicon: sf}}``).

Each distinct (scorer, options) is loaded and run once; components come from one ``score_components`` call. An
output whose feature is NaN (an empty output's SLOR) gets a NaN combined score (as ``task=svr`` does).

Models (``model.type``): ``ridge`` (scikit-learn ``RidgeCV``: the penalty chosen by efficient leave-one-out on the
training rows only, over ``model.alphas``) and ``svr`` (``sklearn.svm.SVR``, default parameters unless given). Both
are fitted on standardised features (the training rows' mean and standard deviation) and exported without pickle:
``combiner.safetensors`` holds mean, scale and the ridge coefficients or the SVR's support vectors and dual
coefficients; ``combiner.json`` the feature specs, the model's parameters and, for every feature that reads an export,
that export's checksum (loading refuses another build of it, as ``svr`` does for its LM).

This module imports neither Lightning nor Hydra; scikit-learn only when fitting.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from qe.core.jsonio import dumps
from qe.core.scorer import Scorer
from qe.errors import ExportError

from qe.kinds import EXPORT_FILES

KIND = "combiner"
SPEC = EXPORT_FILES[KIND]["spec"]
WEIGHTS = EXPORT_FILES[KIND]["weights"]
MODEL_TYPES = ("ridge", "svr")
DEFAULT_ALPHAS = tuple(float(a) for a in np.logspace(-3, 3, 13))


# ------------------------------------------------------------------------------------------------------ features
@dataclass(frozen=True)
class Feature:
    """One feature column: ``scorer`` (what :func:`qe.load` takes), an optional ``component``, load ``options``."""

    scorer: str
    component: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    name: str = ""

    @property
    def column(self) -> str:
        return self.name or (f"{self.scorer}:{self.component}" if self.component else self.scorer)

    @property
    def load_key(self) -> str:
        return json.dumps([self.scorer, self.options], sort_keys=True, default=str)

    def to_dict(self) -> dict[str, Any]:
        return {"scorer": self.scorer, "component": self.component, "options": dict(self.options),
                "name": self.column}


def parse_feature(spec: Any, where: str = "features") -> Feature:
    """A feature from its string (``NAME`` / ``NAME:COMPONENT``) or mapping form; a bad spec raises ValueError."""
    if isinstance(spec, Feature):
        return spec
    if isinstance(spec, str):
        if not spec.strip():
            raise ValueError(f"{where}: an empty feature name")
        # a Windows drive or URL would contain ':' too; a component is the part after the LAST ':' when the rest
        # is not a path that exists
        name, sep, comp = spec.rpartition(":")
        if sep and name and "/" not in comp and not Path(spec).exists():
            return Feature(scorer=name, component=comp)
        return Feature(scorer=spec)
    if hasattr(spec, "items"):
        d = dict(spec.items())
        unknown = sorted(set(d) - {"scorer", "component", "options", "name"})
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)} (a feature has scorer, component, "
                             f"options, name)")
        if not d.get("scorer"):
            raise ValueError(f"{where}: a feature mapping needs 'scorer'")
        opts = d.get("options") or {}
        if not hasattr(opts, "items"):
            raise ValueError(f"{where}: options must be a mapping, got {opts!r}")
        return Feature(scorer=str(d["scorer"]), component=(str(d["component"]) if d.get("component") else None),
                       options={str(k): v for k, v in dict(opts.items()).items()}, name=str(d.get("name") or ""))
    raise ValueError(f"{where}: a feature is a string or a mapping, got {type(spec).__name__}")


def parse_features(specs: Iterable[Any]) -> list[Feature]:
    feats = [parse_feature(s, f"features[{i}]") for i, s in enumerate(specs)]
    if not feats:
        raise ValueError("a combiner needs at least one feature")
    seen: dict[str, int] = {}
    for i, f in enumerate(feats):
        if f.column in seen:
            raise ValueError(f"features[{i}]: column {f.column!r} is also features[{seen[f.column]}] (give one a name)")
        seen[f.column] = i
    return feats


class FeatureSet:
    """Loads each distinct scorer of ``features`` once and computes the feature matrix for outputs."""

    def __init__(self, features: Sequence[Any], *, device: str | None = None, scorers: dict[str, Scorer] | None = None):
        import qe

        self.features = parse_features(features)
        self.scorers: dict[str, Scorer] = dict(scorers or {})
        for f in self.features:
            if f.load_key not in self.scorers:
                opts = dict(f.options)
                if device is not None and _is_export(f.scorer):
                    opts.setdefault("device", device)
                self.scorers[f.load_key] = qe.load(f.scorer, **opts)

    @property
    def columns(self) -> list[str]:
        return [f.column for f in self.features]

    @property
    def requires_mrs(self) -> bool:
        return any(self.scorers[f.load_key].requires_mrs for f in self.features)

    @property
    def requires_refs(self) -> bool:
        return any(self.scorers[f.load_key].requires_refs for f in self.features)

    @property
    def requires_sources(self) -> bool:
        return any(self.scorers[f.load_key].requires_sources for f in self.features)

    def matrix(self, outputs: Sequence[str], mrs=None, refs=None, *, progress: bool = False,
               batch_size: int | None = None) -> np.ndarray:
        """(n_outputs, n_features) float64; a scorer that lacks a requested component raises ValueError."""
        cache: dict[str, dict[str, list[float]]] = {}
        cols = []
        for f in self.features:
            sc = self.scorers[f.load_key]
            kw = {"mrs": mrs, "refs": refs if sc.requires_refs else None, "progress": progress, "batch_size": batch_size}
            if f.component is None:
                key = f.load_key + "#score"
                if key not in cache:
                    cache[key] = {"score": sc.score(outputs, **kw)}
                vals = cache[key]["score"]
            else:
                if f.load_key not in cache:
                    cache[f.load_key] = sc.score_components(outputs, **kw)
                comps = cache[f.load_key]
                if f.component not in comps:
                    raise ValueError(f"feature {f.column!r}: {f.scorer} gives the components {sorted(comps)}")
                vals = comps[f.component]
            cols.append(np.asarray(vals, dtype=np.float64))
        return np.stack(cols, axis=1)

    def provenance(self) -> dict[str, Any]:
        """For each feature that reads an export: its path and checksum (what the export must find again)."""
        out = {}
        for f in self.features:
            ck = _export_checksum(f.scorer)
            if ck is not None:
                out[f.column] = {"scorer": f.scorer, "checksum": ck}
        return out


def _is_export(spec: str) -> bool:
    from qe import zoo

    p = Path(spec).expanduser()
    return (p / "qe_export.json").is_file() or ("/" not in spec and zoo.is_built(spec))


def _export_checksum(spec: str) -> str | None:
    from qe import zoo
    from qe.core.export import MANIFEST, read_manifest

    p = Path(spec).expanduser()
    if not (p / MANIFEST).is_file():
        if "/" in spec or not zoo.is_built(spec):
            return None
        p = zoo.model_path(spec)
    return read_manifest(p).get("checksum")


# ------------------------------------------------------------------------------------------------------ models
@dataclass
class Fitted:
    """A fitted combination: standardisation + ridge (coef, intercept) or SVR (support vectors, dual, intercept)."""

    type: str
    mean: np.ndarray
    scale: np.ndarray
    params: dict[str, Any]
    arrays: dict[str, np.ndarray]

    def predict(self, X: np.ndarray) -> np.ndarray:
        Z = (np.asarray(X, np.float64) - self.mean) / self.scale
        if self.type == "ridge":
            return Z @ self.arrays["coef"] + float(self.arrays["intercept"][0])
        from qe.core.svr import decision_function

        p = self.params
        return decision_function(Z, self.arrays["support_vectors"], self.arrays["dual_coef"],
                                 float(self.arrays["intercept"][0]), p["kernel"], p["gamma"], p["coef0"], p["degree"])

    def weights(self, columns: Sequence[str]) -> dict[str, float] | None:
        """Ridge: the weight of each standardised feature (what the combination leans on); SVR: None."""
        if self.type != "ridge":
            return None
        return {c: float(w) for c, w in zip(columns, self.arrays["coef"])}


def fit(X: np.ndarray, y: np.ndarray, model: dict[str, Any] | None = None) -> Fitted:
    """Fit ``model`` ({type: ridge|svr, ...}) on rows with finite features and rating."""
    model = dict(model or {})
    kind = str(model.pop("type", "ridge"))
    if kind not in MODEL_TYPES:
        raise ValueError(f"model.type={kind!r}: choose one of {', '.join(MODEL_TYPES)}")
    X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
    ok = np.isfinite(X).all(axis=1) & np.isfinite(y)
    if ok.sum() < 3:
        raise ValueError(f"a combiner needs at least 3 rows with every feature and the rating; got {int(ok.sum())}")
    X, y = X[ok], y[ok]
    mean, scale = X.mean(axis=0), X.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    Z = (X - mean) / scale
    if kind == "ridge":
        from sklearn.linear_model import RidgeCV

        alphas = tuple(float(a) for a in (model.pop("alphas", None) or DEFAULT_ALPHAS))
        if model:
            raise ValueError(f"model (ridge): unknown key(s) {', '.join(sorted(model))} (ridge takes alphas)")
        m = RidgeCV(alphas=alphas).fit(Z, y)
        return Fitted("ridge", mean, scale, {"alpha": float(m.alpha_), "alphas": list(alphas)},
                      {"coef": np.asarray(m.coef_, np.float64), "intercept": np.asarray([m.intercept_], np.float64)})
    from sklearn.svm import SVR

    from qe.core.svr import KERNELS, svr_params

    m = SVR(**model).fit(Z, y)
    if m.kernel not in KERNELS:
        raise ValueError(f"model.kernel={m.kernel!r} cannot be exported (use one of {', '.join(KERNELS)})")
    return Fitted("svr", mean, scale, {**svr_params(m), "n_support": int(m.support_vectors_.shape[0])},
                  {"support_vectors": np.asarray(m.support_vectors_, np.float64),
                   "dual_coef": np.asarray(m.dual_coef_[0], np.float64),
                   "intercept": np.asarray(m.intercept_, np.float64).reshape(1)})


def _corr(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    from scipy.stats import pearsonr, spearmanr

    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3 or np.std(a[ok]) == 0 or np.std(b[ok]) == 0:
        return math.nan, math.nan
    return float(pearsonr(a[ok], b[ok])[0]), float(spearmanr(a[ok], b[ok])[0])


def leave_one_domain_out(X: np.ndarray, y: np.ndarray, domains: Sequence[str], columns: Sequence[str],
                         model: dict[str, Any] | None = None) -> dict[str, Any]:
    """For each domain: fit on the others, predict it. Returns per-domain and mean Pearson/Spearman of the combiner
    and of every feature alone (its raw value, no fitting: what each signal gives by itself), plus the weights of each
    fold's ridge (how stable the combination is across folds)."""
    domains = np.asarray([str(d) for d in domains])
    names = sorted(set(domains))
    if len(names) < 2:
        raise ValueError(f"leave one domain out needs two or more domains, got {names}")
    out: dict[str, Any] = {"domains": {}, "columns": list(columns)}
    for d in names:
        test = domains == d
        fitted = fit(X[~test], y[~test], model)
        pred = fitted.predict(X[test])
        r, rho = _corr(pred, y[test])
        row = {"n": int(test.sum()), "combiner": {"pearson": r, "spearman": rho}, "features": {},
               "weights": fitted.weights(columns), "params": {k: v for k, v in fitted.params.items() if k != "alphas"}}
        for j, c in enumerate(columns):
            fr, frho = _corr(X[test, j], y[test])
            row["features"][c] = {"pearson": fr, "spearman": frho}
        out["domains"][d] = row
    rows = out["domains"].values()
    out["mean"] = {"combiner": {m: float(np.nanmean([r["combiner"][m] for r in rows])) for m in ("pearson", "spearman")},
                   "features": {c: {m: float(np.nanmean([r["features"][c][m] for r in rows]))
                                    for m in ("pearson", "spearman")} for c in columns}}
    return out


def _system_corr(pred: np.ndarray, y: np.ndarray, systems: Sequence[str]) -> tuple[float, float]:
    """Pearson / Spearman of the systems' mean prediction with their mean rating (rows with both finite)."""
    ok = np.isfinite(pred) & np.isfinite(y)
    sy = np.asarray([str(s) for s in systems])[ok]
    names = sorted(set(sy.tolist()))
    if len(names) < 3:
        return math.nan, math.nan
    mp = np.array([pred[ok][sy == n].mean() for n in names])
    my = np.array([y[ok][sy == n].mean() for n in names])
    return _corr(mp, my)


def grouped_cross_validation(X: np.ndarray, y: np.ndarray, groups: Sequence[Any], columns: Sequence[str],
                             model: dict[str, Any] | None = None, folds: int = 5, seed: int = 1,
                             systems: Sequence[str] | None = None) -> dict[str, Any]:
    """Out-of-fold figures with folds grouped by input (:func:`qe.core.folds.input_folds`: every output of one group
    in one fold). For each fold: fit on the others, predict it. Returns each fold's held-out Pearson / Spearman (and
    the same fold's figures of every feature alone, signed as they come), their means, the pooled out-of-fold
    predictions' figures (``pooled``), the system-level figures of the pooled predictions when ``systems`` is given,
    every fold's ridge weights, and ``oof`` (the out-of-fold predictions, one per row)."""
    from qe.core.folds import input_folds

    X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
    fold = input_folds(list(groups), folds, seed)
    oof = np.full(len(y), np.nan)
    out: dict[str, Any] = {"folds": {}, "columns": list(columns), "k": int(folds), "seed": int(seed),
                           "groups": len(set(groups))}
    for k in range(folds):
        test = fold == k
        fitted = fit(X[~test], y[~test], model)
        oof[test] = fitted.predict(X[test])
        r, rho = _corr(oof[test], y[test])
        row = {"n": int(test.sum()), "combiner": {"pearson": r, "spearman": rho}, "features": {},
               "weights": fitted.weights(columns), "params": {k: v for k, v in fitted.params.items() if k != "alphas"}}
        for j, c in enumerate(columns):
            fr, frho = _corr(X[test, j], y[test])
            row["features"][c] = {"pearson": fr, "spearman": frho}
        out["folds"][str(k)] = row
    rows = out["folds"].values()
    out["mean"] = {"combiner": {m: float(np.nanmean([r["combiner"][m] for r in rows])) for m in ("pearson", "spearman")},
                   "features": {c: {m: float(np.nanmean([r["features"][c][m] for r in rows]))
                                    for m in ("pearson", "spearman")} for c in columns}}
    pr, prho = _corr(oof, y)
    out["pooled"] = {"pearson": pr, "spearman": prho}
    if systems is not None:
        sr, srho = _system_corr(oof, y, systems)
        out["system"] = {"pearson": sr, "spearman": srho, "systems": len(set(map(str, systems)))}
        out["system_features"] = {}
        for j, c in enumerate(columns):
            fr, frho = _system_corr(X[:, j], y, systems)
            out["system_features"][c] = {"pearson": fr, "spearman": frho}
    out["oof"] = oof
    return out


def format_cv(report: dict[str, Any], title: str = "") -> str:
    """The grouped cross-validation report as a Markdown table: the combiner out of fold, then each feature alone
    (no fitting: its raw values on the same folds, signed as they come)."""
    sys_on = "system" in report
    head = ("| signal | mean of folds r / ρ | pooled out-of-fold r / ρ |"
            + (" system level r / ρ |" if sys_on else ""))
    lines = ([title, ""] if title else []) + [head, "|---|---|---|" + ("---|" if sys_on else "")]
    m, p = report["mean"]["combiner"], report["pooled"]
    row = f"| **combiner** | {m['pearson']:.3f} / {m['spearman']:.3f} | {p['pearson']:.3f} / {p['spearman']:.3f} |"
    if sys_on:
        row += f" {report['system']['pearson']:.3f} / {report['system']['spearman']:.3f} |"
    lines.append(row)
    for c in report["columns"]:
        f = report["mean"]["features"][c]
        row = f"| {c} | {f['pearson']:.3f} / {f['spearman']:.3f} | – |"
        if sys_on:
            sf = report["system_features"][c]
            row += f" {sf['pearson']:.3f} / {sf['spearman']:.3f} |"
        lines.append(row)
    return "\n".join(lines)


def format_lodo(report: dict[str, Any], title: str = "") -> str:
    """The leave-one-domain-out report as a Markdown table (rows: combiner, then each feature alone)."""
    doms = list(report["domains"])
    head = "| signal | " + " | ".join(f"{d} r / ρ" for d in doms) + " | mean r | mean ρ |"
    lines = ([f"{title}", ""] if title else []) + [head, "|" + "---|" * (len(doms) + 3)]

    def fmt_row(label, get):
        cells = [f"{get(report['domains'][d])['pearson']:.3f} / {get(report['domains'][d])['spearman']:.3f}"
                 for d in doms]
        m = get(report["mean"])
        return f"| {label} | " + " | ".join(cells) + f" | {m['pearson']:.3f} | {m['spearman']:.3f} |"

    lines.append(fmt_row("**combiner**", lambda r: r["combiner"]))
    for c in report["columns"]:
        lines.append(fmt_row(c, lambda r, c=c: r["features"][c]))
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------ export
def save(dest: str | Path, fitted: Fitted, features: Sequence[Feature], *, provenance: dict[str, Any] | None = None,
         rating: str | None = None, config: dict | None = None, data: dict | None = None,
         metrics: dict | None = None) -> Path:
    """Write a ``combiner`` export (no pickle: JSON + safetensors)."""
    import torch
    from safetensors.torch import save_file

    from qe.core.export import export_writer

    spec = {"features": [f.to_dict() for f in features], "model": {"type": fitted.type, **fitted.params},
            "rating": rating, "provenance": provenance or {}}
    tensors = {"feature_mean": fitted.mean, "feature_scale": fitted.scale, **fitted.arrays}
    with export_writer(dest, kind=KIND, config={"combiner": spec, "train": config or {}}, data=data,
                       metrics=metrics) as tmp:
        (tmp / SPEC).write_text(dumps(spec, indent=2) + "\n", encoding="utf-8")
        save_file({k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float64)) for k, v in tensors.items()},
                  str(tmp / WEIGHTS))
    return Path(dest).resolve()


def load_fitted(export_dir: str | Path) -> tuple[Fitted, list[Feature], dict[str, Any]]:
    from safetensors.numpy import load_file

    d = Path(export_dir)
    try:
        spec = json.loads((d / SPEC).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ExportError(f"{d / SPEC}: cannot read the combiner spec ({exc})") from None
    try:
        feats = parse_features(spec["features"])
        params = dict(spec["model"])
        kind = params.pop("type")
    except (KeyError, TypeError, ValueError) as exc:
        raise ExportError(f"{d / SPEC}: malformed combiner spec ({exc})") from None
    arrays = {k: np.asarray(v, np.float64) for k, v in load_file(str(d / WEIGHTS)).items()}
    need = {"ridge": ("coef", "intercept"), "svr": ("support_vectors", "dual_coef", "intercept")}.get(kind)
    if need is None:
        raise ExportError(f"{d / SPEC}: model type {kind!r} is not one of {', '.join(MODEL_TYPES)}")
    missing = [k for k in ("feature_mean", "feature_scale", *need) if k not in arrays]
    if missing:
        raise ExportError(f"{d / WEIGHTS}: missing {', '.join(missing)}")
    if arrays["feature_mean"].shape != (len(feats),):
        raise ExportError(f"{d / WEIGHTS}: {arrays['feature_mean'].shape[0]} feature means for {len(feats)} features")
    mean, scale = arrays.pop("feature_mean"), arrays.pop("feature_scale")
    return Fitted(kind, mean, scale, params, arrays), feats, spec


class CombinerScorer(Scorer):
    """Scores outputs with a ``combiner`` export: every feature's scorer, then the fitted combination.

    ``score_components`` gives each feature column and ``combiner``. Options: ``device`` (passed to export-based
    features), ``verify`` (default True: a feature export whose checksum differs from the one the combiner was
    trained with is refused)."""

    main_component = "combiner"

    def __init__(self, export_dir: str | Path, manifest: dict | None = None, device: str | None = None,
                 verify: bool = True):
        self.export_dir = Path(export_dir)
        self.fitted, feats, self.spec = load_fitted(self.export_dir)
        if verify:
            for col, info in (self.spec.get("provenance") or {}).items():
                got = _export_checksum(info["scorer"])
                if got != info.get("checksum"):
                    raise ExportError(
                        f"{self.export_dir}: feature {col!r} reads {info['scorer']}, whose checksum is "
                        f"{str(got)[:12] if got else 'unavailable (not built?)'}; the combiner was trained with "
                        f"{str(info.get('checksum'))[:12]} (rebuild it, or pass verify=False to accept)")
        self.featureset = FeatureSet(feats, device=device)
        self.requires_mrs = self.featureset.requires_mrs
        self.requires_refs = self.featureset.requires_refs
        self.requires_sources = self.featureset.requires_sources
        self.name = "Combiner(" + "+".join(self.featureset.columns) + ")"
        self._checksum = str((manifest or {}).get("checksum", ""))[:12]

    def signature_fields(self) -> dict:
        m = self.spec["model"]
        return {"combiner": self._checksum or None, "model": m["type"],
                **({"alpha": f"{m['alpha']:.3g}"} if m["type"] == "ridge" else {"C": m.get("C")}),
                "features": "+".join(self.featureset.columns)}

    def _predict(self, X: np.ndarray) -> np.ndarray:
        out = np.full(len(X), np.nan)
        ok = np.isfinite(X).all(axis=1)
        if ok.any():
            out[ok] = self.fitted.predict(X[ok])
        return out

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw):
        return self._predict(self.featureset.matrix(outputs, mrs, refs, progress=progress,
                                                    batch_size=batch_size)).tolist()

    def _score_components(self, outputs, *, mrs=None, refs=None, batch_size=None, progress=True, **kw):
        X = self.featureset.matrix(outputs, mrs, refs, progress=progress, batch_size=batch_size)
        comps = {c: X[:, j].tolist() for j, c in enumerate(self.featureset.columns)}
        comps["combiner"] = self._predict(X).tolist()
        return comps


def from_export(export_dir: Path, manifest: dict, **options: Any) -> CombinerScorer:
    return CombinerScorer(export_dir, manifest=manifest, **options)


__all__ = ["Feature", "parse_feature", "parse_features", "FeatureSet", "Fitted", "fit", "leave_one_domain_out",
           "format_lodo", "grouped_cross_validation", "format_cv", "save", "load_fitted", "CombinerScorer", "from_export", "KIND", "SPEC", "WEIGHTS"]
