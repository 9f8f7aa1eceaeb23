"""``task=combiner``: fit a learned combiner of scorers on rated records and say how it transfers across domains.

    qe train task=combiner task.dataset=emnlp17 task.rating=quality \\
        'task.features=[length,{scorer: coverage, component: coverage, options: {lexicon: sf}},slor-word-domain:slor]' \\
        export_dir=exports/combiner_emnlp17

Steps: load the records (``task.dataset``; those with the rating and, when a feature needs them, MRs/references),
compute every feature once (:class:`qe.ensemble.combiner.FeatureSet`), then

1. **leave one domain out** (``task.domain_key``, default ``dataset``: EMNLP17's BAGEL / SFHOT / SFRES): for each
   domain, fit on the others and correlate the predictions with that domain's ratings; beside it, every feature
   alone. This is the figure to quote for a new domain (nothing of the held-out domain's ratings is used);
2. the final fit on every record, written as a ``combiner`` export (:mod:`qe.ensemble.combiner`) whose metrics hold
   the leave-one-domain-out figures.

Only hyperparameters chosen inside the training rows are used (ridge's penalty by leave-one-out on them), so the
held-out domain's figure is not tuned on it. Outputs: ``combiner_report.json`` and ``combiner_report.md`` in the run
directory, the metrics through the configured loggers (``lodo/<domain>/pearson`` ..., ``lodo/mean/pearson``).
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
from qe.ensemble import combiner as cb

log = logging.getLogger(__name__)


def _records(t, data_dir):
    from qe.data.datasets import load_dataset

    return load_dataset(t.dataset, data_dir=data_dir, **to_dict(t.get("dataset_options")))


def _groups(records, key) -> list[int]:
    """The input group of each record for ``task.cv_folds``: by ``key`` (a record attribute or ``extra`` field) when
    given, else by ``extra.test_eid`` where the records have one and by the MR (records sharing either are one
    input: :func:`qe.core.folds.input_groups`); records with neither are each their own input."""
    from qe.core.folds import input_groups

    def value(r, k):
        v = getattr(r, k, None) if hasattr(r, k) else r.extra.get(k)
        return v if v not in (None, "") else f"\0{r.id}"

    if key:
        missing = [r.id for r in records if (getattr(r, key, None) if hasattr(r, key) else r.extra.get(key)) in (None, "")]
        if missing:
            raise ValueError(f"task.group_key={key}: record {missing[0]} has no {key!r} "
                             f"({len(missing)} record(s) in all)")
        return input_groups([value(r, key) for r in records])
    return input_groups([value(r, "test_eid") for r in records], [value(r, "mr") for r in records])


def _cv_seeds(value: Any) -> list[int]:
    """``task.cv_seed``: one seed (an int; null: 1) or a list of them (each one fold assignment of the inputs,
    reported apart and as their mean: the feature scores are computed once)."""
    if value is None:
        return [1]  # 0 is a seed, not "the default"
    if isinstance(value, (list, tuple)) or (hasattr(value, "__iter__") and not isinstance(value, (str, bytes))):
        seeds = [int(v) for v in value]
        if not seeds or len(set(seeds)) != len(seeds):
            raise ValueError(f"task.cv_seed={list(value)}: give one seed or a list of distinct seeds")
        return seeds
    return [int(value)]


def run(cfg) -> dict[str, Any]:
    """Hydra runner (``cfg.task.runner``)."""
    from qe.training import log_metrics, plain_config

    t = cfg.task
    rating = str(t.rating)
    feats = cb.parse_features(to_dict(t.features) if not isinstance(t.features, str) else [t.features])
    fs = cb.FeatureSet(feats, device=t.get("device"))
    records = _records(t, cfg.paths.get("data_dir"))
    keep = [r for r in records if math.isfinite(float(r.ratings.get(rating, math.nan)))
            and (not fs.requires_mrs or (r.mr or "").strip())
            and (not fs.requires_refs or any(x.strip() for x in r.refs))]
    if len(keep) < 10:
        raise ValueError(f"task=combiner: only {len(keep)} records of {t.dataset} have a {rating!r} rating"
                         f"{' and an MR' if fs.requires_mrs else ''}{' and references' if fs.requires_refs else ''}")
    log.info("combiner: %d of %d records usable; features %s", len(keep), len(records), ", ".join(fs.columns))
    X = fs.matrix([r.output for r in keep], [r.mr for r in keep] if fs.requires_mrs else None,
                  [r.refs for r in keep] if fs.requires_refs else None, progress=bool(t.get("progress", True)))
    y = np.array([float(r.ratings[rating]) for r in keep])
    finite = np.isfinite(X).all(axis=1)
    if not finite.all():
        log.warning("combiner: %d records with a NaN feature (e.g. an empty output's LM score) left out of fitting "
                    "and of the correlations", int((~finite).sum()))
        keep = [r for r, ok in zip(keep, finite) if ok]
        X, y = X[finite], y[finite]
    model = to_dict(t.get("model")) or {"type": "ridge"}
    metrics: dict[str, Any] = {}
    report: dict[str, Any] = {"dataset": str(t.dataset), "rating": rating, "records": len(y),
                              "features": [f.to_dict() for f in feats], "model": model}
    key = t.get("domain_key")
    if key:
        domains = [str(getattr(r, key, None) if hasattr(r, key) else r.extra.get(key)) for r in keep]
        if len(set(domains)) >= 2:
            lodo = cb.leave_one_domain_out(X, y, domains, fs.columns, model)
            report["lodo"] = lodo
            for d, row in lodo["domains"].items():
                metrics[f"lodo/{d}/pearson"] = row["combiner"]["pearson"]
                metrics[f"lodo/{d}/spearman"] = row["combiner"]["spearman"]
            metrics["lodo/mean/pearson"] = lodo["mean"]["combiner"]["pearson"]
            metrics["lodo/mean/spearman"] = lodo["mean"]["combiner"]["spearman"]
            table = cb.format_lodo(lodo, f"Leave one {key} out: {t.dataset}, {rating} ({len(y)} records)")
            print("\n" + table)
            report["lodo_table"] = table
        else:
            log.warning("combiner: %s has one value (%s) - no leave-one-domain-out figure", key, domains[0])
    folds = t.get("cv_folds")
    if folds:
        groups = _groups(keep, t.get("group_key"))
        seeds = _cv_seeds(t.get("cv_seed"))
        out_dir = Path(cfg.paths.output_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        per_seed: dict[str, Any] = {}
        for i, seed in enumerate(seeds):
            cv = cb.grouped_cross_validation(X, y, groups, fs.columns, model, folds=int(folds), seed=seed,
                                             systems=[r.system for r in keep])
            oof = cv.pop("oof")
            cv["seed"] = seed
            per_seed[str(seed)] = cv
            where = "" if len(seeds) == 1 else f" fold seed {seed},"
            table = cb.format_cv(cv, f"Out of fold,{where} {folds} folds of {cv['groups']} inputs (grouped by "
                                     f"{t.get('group_key') or 'test_eid / MR'}): {t.dataset}, {rating} "
                                     f"({len(y)} records)")
            print("\n" + table)
            if i == 0:  # the first seed's figures keep the names of a one-seed run
                report["cv"], report["cv_table"] = cv, table
                for k in ("pearson", "spearman"):
                    metrics[f"cv/mean/{k}"] = cv["mean"]["combiner"][k]
                    metrics[f"cv/pooled/{k}"] = cv["pooled"][k]
                    metrics[f"cv/system/{k}"] = cv["system"][k]
            else:
                report["cv_table"] += "\n\n" + table
            name = "oof_predictions.jsonl" if i == 0 else f"oof_predictions_seed{seed}.jsonl"
            with open(out_dir / name, "w", encoding="utf-8") as f:
                for r, v in zip(keep, oof):
                    f.write(dumps({"id": r.id, "system": r.system, "oof": float(v),
                                   "rating": float(r.ratings[rating])}) + "\n")
        if len(seeds) > 1:
            summary = {k: float(np.mean([c["pooled"][k] for c in per_seed.values()])) for k in ("pearson", "spearman")}
            summary.update({f"system_{k}": float(np.mean([c["system"][k] for c in per_seed.values()]))
                            for k in ("pearson", "spearman")})
            report["cv_seeds"] = {"seeds": seeds, "per_seed": per_seed, "mean_of_seeds": summary}
            for k in ("pearson", "spearman"):
                metrics[f"cv/seeds_mean/pooled_{k}"] = summary[k]
                metrics[f"cv/seeds_mean/system_{k}"] = summary[f"system_{k}"]
            line = (f"Pooled out-of-fold figures over fold seeds {', '.join(map(str, seeds))}: Spearman "
                    + " / ".join(f"{c['pooled']['spearman']:.3f}" for c in per_seed.values())
                    + f" (mean {summary['spearman']:.3f}), Pearson "
                    + " / ".join(f"{c['pooled']['pearson']:.3f}" for c in per_seed.values())
                    + f" (mean {summary['pearson']:.3f}); system Pearson mean {summary['system_pearson']:.3f}")
            print("\n" + line)
            report["cv_table"] += "\n\n" + line
    fitted = cb.fit(X, y, model)
    pred = fitted.predict(X)
    r_all, rho_all = cb._corr(pred, y)
    metrics["train/pearson"], metrics["train/spearman"] = r_all, rho_all
    report["final"] = {"params": fitted.params, "weights": fitted.weights(fs.columns), "train_pearson": r_all,
                       "train_spearman": rho_all}
    if fitted.weights(fs.columns):
        print("\nweights of the standardised features (final fit on all records): "
              + ", ".join(f"{c} {w:+.3f}" for c, w in fitted.weights(fs.columns).items()))
    log_metrics(cfg, metrics)
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "combiner_report.json").write_text(dumps(report, indent=2) + "\n", encoding="utf-8")
    tables = [report[k] for k in ("lodo_table", "cv_table") if k in report]
    if tables:
        (out_dir / "combiner_report.md").write_text("\n\n".join(tables) + "\n", encoding="utf-8")
    if cfg.get("export"):
        data = {"name": str(t.dataset), "rating": rating, "records": len(y),
                "ids_sha256": hashlib.sha256("\n".join(r.id for r in keep).encode()).hexdigest()}
        path = cb.save(Path(cfg.export_dir).expanduser(), fitted, feats, provenance=fs.provenance(), rating=rating,
                       config=plain_config(cfg), data=data, metrics=metrics)
        metrics["export_path"] = str(path)
        print(f"\nexport written to: {path}")
    return metrics


__all__ = ["run"]
