"""``task=ensemble``: write an ``ensemble`` export from member exports (nothing is trained).

    python train.py task=ensemble +ensemble.members.gru=PATH_OR_ZOO_NAME +ensemble.members.minilm=... \\
        [+ensemble.weights.gru=2 +ensemble.weights.minilm=1] [+ensemble.cv_runs.gru=RUN_DIR ...] export_dir=DIR

``ensemble.cv_runs`` (optional, RatPred members): the members' run directories (their ``predictions.jsonl`` and
``dev_predictions.jsonl``: the cross-validated test and dev predictions, raw). The task scores the combination
on them exactly as the scorer combines (weighted mean of raw outputs, then the prediction rule), per seed, on the
pooled folds, and writes the figures into ``results.json`` and the export's metrics - so the export says what its
recipe measured. Only outputs every member predicted enter.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from qe.core.config import to_dict
from qe.export import MANIFEST, read_manifest

log = logging.getLogger(__name__)


def resolve_member(spec: str) -> Path:
    """An export directory, or the name of a built zoo model."""
    from qe import zoo

    p = Path(str(spec)).expanduser()
    if (p / MANIFEST).is_file():
        return p.resolve()
    if "/" not in str(spec) and zoo.is_built(str(spec)):
        return zoo.model_path(str(spec)).resolve()
    if "/" not in str(spec) and str(spec) in zoo.NAMES:
        raise FileNotFoundError(zoo.not_built_message(str(spec)))
    raise FileNotFoundError(f"ensemble member {spec!r}: not an export directory (no {MANIFEST}) nor a built zoo model")


def prediction_rule(manifests: dict[str, dict], predict: Any) -> tuple[dict | None, dict[str, dict]]:
    """(the ensemble's prediction rule, loader options per member) for ``ensemble.predict``: ``auto`` takes the
    members' common RatPred rule (members read raw), ``none`` the plain mean, a dict that rule."""
    names = list(manifests)
    if predict in (None, "none", "null"):
        return None, {n: {} for n in names}
    if isinstance(predict, dict):
        rule = {k: predict.get(k) for k in ("round_to", "clip_lo", "clip_hi")}
    elif predict == "auto":
        rules = {n: m.get("config", {}).get("predict") for n, m in manifests.items() if m["kind"] == "qe_gru"}
        if len(rules) < len(names) or not all(rules.values()):
            return None, {n: {} for n in names}
        first = next(iter(rules.values()))
        if any(r != first for r in rules.values()):
            raise ValueError(f"ensemble.predict=auto: the RatPred members round differently ({rules}); give "
                             "ensemble.predict={round_to: ..., clip_lo: ..., clip_hi: ...} or none")
        rule = dict(first)
    else:
        raise ValueError(f"ensemble.predict={predict!r}: auto, none, or {{round_to, clip_lo, clip_hi}}")
    opts = {n: ({"rounded": False} if manifests[n]["kind"] == "qe_gru" else {}) for n in names}
    return rule, opts


def read_run_predictions(run_dir: str | Path, split: str) -> dict[tuple, dict]:
    """``{(seed, fold, id): row}`` of a RatPred run's ``predictions.jsonl`` (test) or ``dev_predictions.jsonl``."""
    fname = "predictions.jsonl" if split == "test" else "dev_predictions.jsonl"
    path = Path(run_dir) / fname
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing (a RatPred run directory holds the cross-validated predictions)")
    out: dict[tuple, dict] = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            x = json.loads(line)
            key = (x["seed"], x["fold"], x["id"])
            if key in out:
                raise ValueError(f"{path}:{n}: (seed {x['seed']}, fold {x['fold']}, {x['id']}) twice")
            out[key] = x
    return out


def combine_predictions(tables: list[dict[tuple, dict]], weights: list[float], seeds: list,
                        rule: dict | None) -> tuple[np.ndarray, list[float], int]:
    """(combined predictions, gold ratings, n) over the (fold, id) keys every table predicted for every seed:
    per key the weighted mean over tables of the tables' raw outputs averaged over ``seeds``, then ``rule``."""
    from qe.ratpred.model import round_clip

    keys = sorted({(f, i) for (s, f, i) in tables[0] if s == seeds[0]}, key=lambda k: (k[0], str(k[1])))
    keys = [k for k in keys if all((s, *k) in t for t in tables for s in seeds)]
    w = np.asarray(weights, dtype=np.float64) / float(np.sum(weights))
    raw = np.array([sum(wj * np.mean([t[(s, *k)]["raw"] for s in seeds]) for wj, t in zip(w, tables)) for k in keys])
    gold = [tables[0][(seeds[0], *k)]["gold"] for k in keys]
    if rule:
        raw = round_clip(raw, rule.get("round_to"), rule.get("clip_lo"), rule.get("clip_hi"))
    return raw, gold, len(keys)


def cv_figures(runs: dict[str, str], weights: dict[str, float], rule: dict | None) -> dict[str, Any]:
    """The combination's correlations on the members' cross-validated predictions, per seed and split."""
    from qe.ratpred.model import correlations

    names = list(runs)
    out: dict[str, Any] = {}
    for split in ("dev", "test"):
        tables = [read_run_predictions(runs[n], split) for n in names]
        seeds = sorted(set.intersection(*[{k[0] for k in t} for t in tables]))
        if not seeds:
            raise ValueError(f"ensemble.cv_runs: the runs share no seed ({split})")
        for s in seeds:
            pred, gold, n = combine_predictions(tables, [weights[x] for x in names], [s], rule)
            m = correlations(pred, gold)
            out[f"seed{s}"] = {**out.get(f"seed{s}", {}), split: {**m, "n": n}}
    return out


def run(cfg) -> dict[str, Any]:
    from qe.ensemble.format import check_weights, save_ensemble_export
    from qe.training import log_metrics

    e = cfg.ensemble
    members = {str(k): resolve_member(str(v)) for k, v in (to_dict(e.members) or {}).items()}
    if len(members) < 2:
        raise ValueError("task=ensemble needs two or more members: +ensemble.members.NAME=EXPORT_DIR_OR_ZOO_NAME ...")
    manifests = {n: read_manifest(p) for n, p in members.items()}
    kinds = {m["kind"] for m in manifests.values()}
    if len(kinds) > 1 and not e.get("allow_mixed_kinds", False):
        raise ValueError(f"ensemble members are of different kinds ({', '.join(sorted(kinds))}); their scores are on "
                         "different scales: set ensemble.allow_mixed_kinds=true if the mean still means something")
    weights = check_weights(list(members), to_dict(e.get("weights")) or None)
    rule, options = prediction_rule(manifests, to_dict(e.get("predict", "auto")))
    metrics: dict[str, Any] = {f"weight/{n}": w for n, w in weights.items()}
    results: dict[str, Any] = {"members": {n: {"path": str(p), "kind": manifests[n]["kind"],
                                               "checksum": manifests[n].get("checksum"), "weight": weights[n]}
                                           for n, p in members.items()},
                               "predict": rule}
    runs = to_dict(e.get("cv_runs")) or {}
    if runs:
        if set(runs) != set(members):
            raise ValueError(f"ensemble.cv_runs names {sorted(runs)}, the members are {sorted(members)}")
        results["cv"] = cv_figures({n: str(runs[n]) for n in members}, weights, rule)
        for seed, sp in results["cv"].items():
            for split, m in sp.items():
                for k in ("pearson", "spearman"):
                    metrics[f"cv/{seed}/{split}/{k}"] = m[k]
        log.info("ensemble on the members' cross-validated predictions: %s", json.dumps(results["cv"], default=float))
    out_dir = Path(str(cfg.paths.output_dir))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results, indent=2, default=float) + "\n", encoding="utf-8")
    print(json.dumps({"weights": weights, "predict": rule, **({"cv": results["cv"]} if runs else {})}, indent=1,
                     default=float))
    log_metrics(cfg, metrics, run_dir=out_dir)
    if cfg.get("export"):
        dest = save_ensemble_export(Path(str(cfg.export_dir)).expanduser(), members, weights=weights, predict=rule,
                                    options=options, config={"members": {n: str(p) for n, p in members.items()},
                                                             "weights": weights, "predict": rule},
                                    data={"members": {n: manifests[n].get("data", {}) for n in members}},
                                    metrics=metrics)
        metrics["export_path"] = str(dest)
    return metrics
