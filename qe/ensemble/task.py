"""``task=ensemble``: write an ``ensemble`` export from member exports (nothing is trained).

    python train.py task=ensemble +ensemble.members.gru=PATH_OR_ZOO_NAME +ensemble.members.minilm=... \\
        [+ensemble.weights.gru=2 +ensemble.weights.minilm=1] [+ensemble.cv_runs.gru=RUN_DIR ...] export_dir=DIR
    python train.py task=ensemble +ensemble.members.content=content-aligner-webnlg \\
        +ensemble.members.ratpred=ratpred-webnlg-cross ensemble.scales=auto export_dir=DIR   # two scales, one mean

``ensemble.scales`` puts members of different scales on one: each member's score ``s`` becomes
``(s - lo) / (hi - lo)`` before the weighted mean; ``auto`` takes each member's declared range (:func:`declared_range`:
the manifest's ``score_range`` when the export declares one, else a RatPred export's clip range or [0, 1] for the
coverage score of a content-aligner export), or give
``{name: [lo, hi]}`` for every member. With scales the mean is not rounded (RatPred members are read raw) unless
``ensemble.predict`` gives a rule, and members of different kinds are allowed.

``ensemble.cv_runs`` (optional, RatPred members): the members' run directories (their ``predictions.jsonl`` and
``dev_predictions.jsonl``: the cross-validated test and dev predictions, raw). The task scores the combination
on them exactly as the scorer combines (weighted mean of raw outputs, then the prediction rule), pooled over the
folds - ``members``: each run with its own seed(s), as the export combines members trained with different seeds;
``seed<N>``: every seed the runs share - and writes the figures into ``results.json`` and the export's metrics
(``cv/members/test/pearson`` ...), so the export says what its recipe measured. Only outputs every member
predicted enter. ``python -m experiments.ratpred export-check`` shows that an export scores its runs' fold 0 as
their predictions say.
"""
from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np

from qe.core.config import to_dict
from qe.core.jsonio import dumps
from qe.core.export import MANIFEST, read_manifest

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


def declared_range(name: str, manifest: dict) -> list[float]:
    """``[lo, hi]`` a member's scores lie in, from its export: the manifest's ``score_range``, which RatPred (its clip
    range), content-aligner ([0, 1], the coverage score) and scaled ensemble ([0, 1]) exports write (any kind may:
    ``export_writer(..., extra={"score_range": [lo, hi]})``). Exports written before 2026-11-28 carry none; for them
    the same two ranges are read from the export itself (a RatPred export's prediction rule; a content aligner's
    kind). Other exports declare none (give ``ensemble.scales.NAME``)."""
    from qe.ensemble.format import check_scale

    kind = manifest.get("kind")
    if manifest.get("score_range") is not None:
        try:
            return check_scale(name, manifest["score_range"])
        except ValueError as exc:
            raise ValueError(f"ensemble.scales=auto: member {name} (kind {kind}) declares score_range "
                             f"{manifest['score_range']!r}: {exc}") from None
    # exports written before score_range existed (the published zoo builds among them)
    if kind == "qe_gru":
        rule = manifest.get("config", {}).get("predict") or {}
        lo, hi = rule.get("clip_lo"), rule.get("clip_hi")
        if lo is not None and hi is not None:
            return [float(lo), float(hi)]
    elif kind == "content_aligner":
        return [0.0, 1.0]
    raise ValueError(f"ensemble.scales=auto: member {name} (kind {kind}) declares no score range; give "
                     f"ensemble.scales={{{name}: [lo, hi], ...}} for every member")


def member_scales(manifests: dict[str, dict], scales: Any) -> dict[str, list[float]] | None:
    """``{name: [lo, hi]}`` for ``ensemble.scales`` (``auto``: :func:`declared_range`; a dict: as given, for every
    member) or None (empty: scores as they are)."""
    from qe.ensemble.format import check_scales

    if scales in (None, "none", "null", {}, ""):
        return None
    if scales == "auto":
        return {n: declared_range(n, m) for n, m in manifests.items()}
    if not isinstance(scales, dict):
        raise ValueError(f"ensemble.scales={scales!r}: auto, or {{name: [lo, hi]}} for every member")
    return check_scales(list(manifests), scales, what="ensemble.scales")


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
            # strict JSON: a NaN prediction or rating was written as null, an infinite one as "inf" / "-inf"
            x = {k: ((math.nan if v is None else float(v)) if k in ("pred", "raw", "gold") else v)
                 for k, v in json.loads(line).items()}
            key = (x["seed"], x["fold"], x["id"])
            if key in out:
                raise ValueError(f"{path}:{n}: (seed {x['seed']}, fold {x['fold']}, {x['id']}) twice")
            out[key] = x
    return out


def _collapse(table: dict[tuple, dict], seeds: list | None) -> dict[tuple, tuple[float, float]]:
    """``{(fold, id): (raw averaged over seeds, gold)}`` for the keys predicted by every one of ``seeds`` (None: every
    seed of the table)."""
    want = sorted({k[0] for k in table}) if seeds is None else list(seeds)
    by_key: dict[tuple, dict] = {}
    for (s, f, i), row in table.items():
        if s in want:
            by_key.setdefault((f, i), {})[s] = row
    return {k: (float(np.mean([v[s]["raw"] for s in want])), v[want[0]]["gold"])
            for k, v in by_key.items() if len(v) == len(want)}


def combine_predictions(tables: list[dict[tuple, dict]], weights: list[float], seeds: list | None,
                        rule: dict | None) -> tuple[np.ndarray, list[float], int]:
    """(combined predictions, gold ratings, n) over the (fold, id) keys every table predicted: per key the weighted
    mean over tables of the tables' raw outputs averaged over ``seeds`` (None: each table over all its own seeds,
    e.g. members trained with different seeds), then ``rule``."""
    from qe.core.predictions import round_clip

    cols = [_collapse(t, seeds) for t in tables]
    keys = sorted(set.intersection(*[set(c) for c in cols]), key=lambda k: (k[0], str(k[1])))
    w = np.asarray(weights, dtype=np.float64) / float(np.sum(weights))
    raw = np.array([sum(wj * c[k][0] for wj, c in zip(w, cols)) for k in keys])
    gold = [cols[0][k][1] for k in keys]
    if rule:
        raw = round_clip(raw, rule.get("round_to"), rule.get("clip_lo"), rule.get("clip_hi"))
    return raw, gold, len(keys)


def cv_figures(runs: dict[str, str], weights: dict[str, float], rule: dict | None) -> dict[str, Any]:
    """The combination's correlations on the members' cross-validated predictions, pooled over folds: ``members``
    combines every run over all its own seeds (what the export does when each member is one seed's model), and
    ``seed<N>`` the runs' sub-runs of seed N, for every seed all runs share."""
    from qe.core.predictions import correlations

    names = list(runs)
    out: dict[str, Any] = {}
    for split in ("dev", "test"):
        tables = [read_run_predictions(runs[n], split) for n in names]
        seeds = sorted(set.intersection(*[{k[0] for k in t} for t in tables]))
        for label, sd in [("members", None)] + [(f"seed{s}", [s]) for s in seeds]:
            pred, gold, n = combine_predictions(tables, [weights[x] for x in names], sd, rule)
            if n == 0:
                raise ValueError(f"ensemble.cv_runs: no {split} output predicted by every run ({label})")
            out.setdefault(label, {})[split] = {**correlations(pred, gold), "n": n}
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
    scales = member_scales(manifests, to_dict(e.get("scales")))
    if len(kinds) > 1 and not scales and not e.get("allow_mixed_kinds", False):
        raise ValueError(f"ensemble members are of different kinds ({', '.join(sorted(kinds))}); their scores are on "
                         "different scales: set ensemble.scales=auto (or {name: [lo, hi]}) to map each to [0, 1], "
                         "or ensemble.allow_mixed_kinds=true if the plain mean still means something")
    weights = check_weights(list(members), to_dict(e.get("weights")) or None)
    predict = to_dict(e.get("predict", "auto"))
    if scales:
        # members mapped to [0, 1]: no member's rounding rule applies to the mean (only a rule given here); RatPred
        # members are read raw
        rule = prediction_rule(manifests, predict)[0] if isinstance(predict, dict) else None
        options = {n: ({"rounded": False} if m["kind"] == "qe_gru" else {}) for n, m in manifests.items()}
    else:
        rule, options = prediction_rule(manifests, predict)
    metrics: dict[str, Any] = {f"weight/{n}": w for n, w in weights.items()}
    results: dict[str, Any] = {"members": {n: {"path": str(p), "kind": manifests[n]["kind"],
                                               "checksum": manifests[n].get("checksum"), "weight": weights[n]}
                                           for n, p in members.items()},
                               "predict": rule, "scales": scales}
    runs = to_dict(e.get("cv_runs")) or {}
    if runs and scales:
        raise ValueError("ensemble.cv_runs scores RatPred runs' own predictions on their scale; it does not combine "
                         "with ensemble.scales")
    if runs:
        if set(runs) != set(members):
            raise ValueError(f"ensemble.cv_runs names {sorted(runs)}, the members are {sorted(members)}")
        results["cv"] = cv_figures({n: str(runs[n]) for n in members}, weights, rule)
        for seed, sp in results["cv"].items():
            for split, m in sp.items():
                for k in ("pearson", "spearman"):
                    metrics[f"cv/{seed}/{split}/{k}"] = m[k]
        log.info("ensemble on the members' cross-validated predictions: %s", dumps(results["cv"], default=float))
    out_dir = Path(str(cfg.paths.output_dir))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(dumps(results, indent=2, default=float) + "\n", encoding="utf-8")
    print(dumps({"weights": weights, "predict": rule, **({"scales": scales} if scales else {}),
                 **({"cv": results["cv"]} if runs else {})}, indent=1, default=float))
    log_metrics(cfg, metrics, run_dir=out_dir)
    if cfg.get("export"):
        dest = save_ensemble_export(Path(str(cfg.export_dir)).expanduser(), members, weights=weights, predict=rule,
                                    options=options, scales=scales,
                                    config={"members": {n: str(p) for n, p in members.items()},
                                            "weights": weights, "predict": rule, "scales": scales},
                                    data={"members": {n: manifests[n].get("data", {}) for n in members}},
                                    metrics=metrics)
        metrics["export_path"] = str(dest)
    return metrics
