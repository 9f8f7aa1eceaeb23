"""``task=ratpred``: the experiment runner (the module is :mod:`qe.ratpred.module`, one (seed, fold) is fitted by
:mod:`qe.ratpred.fitting`, the folds come from :mod:`qe.ratpred.protocol`).

``python train.py experiment=ratpred_s4`` runs, for every seed in ``protocol.seeds`` and every fold in
``protocol.folds``: build the fold's training set for the setup (:mod:`qe.ratpred.data`), build the
vocabulary from it, train - with synthetic data first ``passes_synth`` passes over all data, then
``passes_orig`` passes over the original data, starting from the best stage-1 parameters; each stage keeps the
parameters with its best dev (Pearson + Spearman) / 2 (:class:`KeepBest`) - and predict the test part. Per
seed, the test predictions of all folds are pooled (cross-validation over the whole dataset) and scored
(Pearson, Spearman, MAE, RMSE); the table reports the mean over seeds. ``results.json``, ``predictions.jsonl``
(test parts) and ``dev_predictions.jsonl`` (dev parts, for choosing or combining models on dev:
``python -m experiments.ratpred combine``) go to the run directory; the model of the first (seed, fold) is
exported (kind ``qe_gru``).

Sub-runs. Every (seed, fold) lives in ``<run dir>/runs/seed{S}_fold{F}/``; each of its stages (``synth_all``,
``original``) is fitted by :func:`qe.training.fit` with that stage directory as its run directory, so the
configured trainer (precision, accelerator), loggers (``logger=csv`` writes ``<stage>/csv/version_*/metrics.csv``)
and callbacks apply, and checkpoints go to ``<stage>/checkpoints``. A finished stage leaves ``stage.json`` and its
best weights (``best.safetensors``); a finished (seed, fold) leaves ``result.json`` and ``predictions.jsonl``.
With ``ckpt_path=last`` (the default) a rerun into the same ``hydra.run.dir`` reuses finished sub-runs; an
unfinished one is retrained from its start (``protocol.resume=subrun``, the default: every sub-run is seeded at
its start, so the rerun ends with exactly the metrics of an uninterrupted run — tested), or, with
``protocol.resume=stage``, finished stages are reused and an interrupted stage resumes from its ``last.ckpt``
(KeepBest's best-so-far is in the checkpoint; less work lost, but not guaranteed bit-identical: the stage's shuffling
generator restarts). ``ckpt_path=null`` starts afresh. An uninterrupted run is bit-identical to the pre-sub-run
runner (no sanity validation: iterating a loader draws from torch's RNG).

The paper's protocol is ``passes_synth=20 passes_orig=500 seeds=[1,2,3,4,5] folds=[0,1,2,3,4]``; the
presets default to it; ``protocol.patience`` stops a stage after that many passes without a dev gain.
"""
from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig

from qe.core.config import to_dict
from qe.core.export import MANIFEST
from qe.core.jsonio import dumps
from qe.core.predictions import correlations, round_clip
from qe.data.datasets import load_dataset
from qe.ratpred import format as fmt
from qe.ratpred.data import SETUPS, build_training_set, real_instances, reference_pool
from qe.ratpred.fitting import STAGE_DIRS, build_module, init_embeddings, input_delex, is_cross, predict, train_one  # noqa: F401
from qe.ratpred.module import KeepBest, RatPredModule  # noqa: F401  (re-exported: configs name qe.ratpred.task.RatPredModule)
from qe.ratpred.protocol import fold_labels, splits as protocol_splits, target_records  # noqa: F401
from qe.ratpred.runfiles import _read_jsonl, _read_run_info, _write_jsonl  # noqa: F401
from qe.ratpred.synth import ERROR_TYPES
from qe.training import log_metrics, plain_config

log = logging.getLogger(__name__)


def _resume_mode(cfg: DictConfig) -> bool:
    ckpt = cfg.get("ckpt_path", "last")
    if ckpt in (None, "", "none", "null"):
        return False
    if ckpt != "last":
        raise ValueError(f"ckpt_path={ckpt}: task=ratpred runs many sub-runs; use ckpt_path=last (resume each "
                         "sub-run of this run directory) or ckpt_path=null (start afresh)")
    return True


def _check_callbacks(cfg: DictConfig) -> None:
    for key, conf in (cfg.get("callbacks") or {}).items():
        if conf is not None and str(conf.get("_target_", "")).endswith("EarlyStopping"):
            log.warning("callbacks.%s (EarlyStopping) is active: stages stop before their passes are done, unlike "
                        "the paper (callbacks.%s=null; protocol.patience is RatPred's own patience)", key, key)


def run(cfg: DictConfig) -> dict[str, Any]:
    """Hydra runner (``task.runner``): the whole protocol; returns summary metrics."""
    torch.set_num_threads(int(cfg.protocol.get("threads") or torch.get_num_threads()))
    _check_callbacks(cfg)
    resume = _resume_mode(cfg)
    d = cfg.data
    records = load_dataset(d.dataset, data_dir=cfg.paths.data_dir,
                           **({"datasets": list(d.datasets)} if d.get("datasets") else {}))
    proto = to_dict(cfg.protocol)
    setup = str(proto["setup"])
    sources = tuple(proto.get("sources") or SETUPS[setup])
    pool = reference_pool(cfg.paths.data_dir) if {"source_train", "source_all"} & set(sources) else None
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    splits = protocol_splits(cfg, records)
    labels = fold_labels(cfg, records)
    target = target_records(cfg) if "target_refs" in sources else []
    if "target_refs" in sources and not target:
        raise ValueError("synthetic source target_refs needs protocol.target_data (e.g. {name: e2e, split: dev})")
    if proto.get("target_data") and "target_refs" not in sources:
        log.warning("protocol.target_data is set but the synthetic sources %s do not include target_refs: unused",
                    list(sources))
    seeds = list(proto["seeds"])
    per_seed, per_seed_raw, runs, preds_rows, dev_rows = [], [], [], [], []
    first_dir = None
    for seed in seeds:
        all_pred, all_raw, all_gold = [], [], []
        for fold, train, dev, test in splits:
            sub = out_dir / "runs" / f"seed{seed}_fold{fold}"
            first_dir = first_dir or sub
            if resume and (sub / "result.json").is_file():
                run_info = _read_run_info(sub / "result.json")
                rows = _read_jsonl(sub / "predictions.jsonl")
                print(f"[ratpred {setup} seed={seed} fold={fold}] finished earlier: {sub}", flush=True)
            else:
                stage_resume = resume and str(proto.get("resume", "subrun")) == "stage"
                if not stage_resume and sub.exists():
                    shutil.rmtree(sub)  # exact resume: an unfinished sub-run starts again from its seed
                try:
                    run_info, rows = _run_one(cfg, proto, d, setup, sources, pool, seed, fold, train, dev, test, sub,
                                              stage_resume, export=bool(cfg.get("export")) and sub == first_dir,
                                              n_records=len(records), target=target)
                except SystemExit as exc:
                    if exc.code == 143 and not stage_resume:  # SIGTERM: the "resume with" line would mislead
                        msg = (f"note: protocol.resume=subrun (the default) restarts the unfinished sub-run {sub.name} "
                               "from its start when rerun, which is exact but loses its steps so far; add "
                               "protocol.resume=stage to the rerun to continue from its last.ckpt (not bit-identical)")
                        log.warning(msg)
                        print(msg, file=sys.stderr, flush=True)
                    raise
            if fold in labels:
                run_info["label"] = labels[fold]
            runs.append(run_info)
            if (sub / "dev_predictions.jsonl").is_file():  # absent in sub-runs finished before it was written
                dev_rows.extend(_read_jsonl(sub / "dev_predictions.jsonl"))
            all_pred.extend(r["pred"] for r in rows)
            all_raw.extend(r["raw"] for r in rows)
            all_gold.extend(r["gold"] for r in rows)
            preds_rows.extend(rows)
            _write_jsonl(out_dir / "predictions.jsonl", preds_rows)  # after every fold: an interrupted run keeps them
            _write_jsonl(out_dir / "dev_predictions.jsonl", dev_rows)
            (out_dir / "results.json").write_text(dumps(
                {"setup": setup, "sources": list(sources), "mode": proto.get("mode", "cv"), "partial": True,
                 "runs": runs}, indent=1, default=str))
        if all_gold:  # transfer mode has no rated test part
            per_seed.append(correlations(all_pred, all_gold))
            per_seed_raw.append(correlations(all_raw, all_gold))
    result = {"setup": setup, "sources": list(sources), "mode": proto.get("mode", "cv"), "target": str(d.target)}
    summary: dict[str, float] = {}
    if per_seed:
        summary = {k: float(np.mean([s[k] for s in per_seed])) for k in per_seed[0]}
        result.update(summary=summary, summary_std_over_seeds={k: float(np.std([s[k] for s in per_seed]))
                                                                for k in per_seed[0]},
                      per_seed=per_seed,
                      summary_raw={k: float(np.mean([s[k] for s in per_seed_raw])) for k in per_seed_raw[0]})
    if labels:  # lodo: each held-out domain on its own (mean over seeds), and the mean over domains
        per_fold = {}
        for fold, lab in labels.items():
            rs = [r for r in runs if r["fold"] == fold and r.get("test")]
            per_fold[lab] = {f"{kind}/{k}": float(np.mean([r[kind][k] for r in rs]))
                             for kind in ("test", "test_raw") for k in rs[0][kind]} | {"seeds": len(rs)}
        result["per_fold"] = per_fold
        result["fold_mean"] = {k: float(np.mean([v[k] for v in per_fold.values()]))
                               for k in next(iter(per_fold.values())) if k != "seeds"}
    result.update(runs=runs, config=plain_config(cfg))
    (out_dir / "results.json").write_text(dumps(result, indent=1, default=str))
    _write_jsonl(out_dir / "predictions.jsonl", preds_rows)
    print(f"\nRatPred {setup} ({proto.get('mode', 'cv')}, seeds={seeds}): "
          + ("  ".join(f"{k}={v:.3f}" for k, v in summary.items()) or "no rated test part"))
    for lab, m in result.get("per_fold", {}).items():
        print(f"  held out {lab}: pearson={m['test/pearson']:.3f} spearman={m['test/spearman']:.3f} "
              f"(raw {m['test_raw/pearson']:.3f}; {m['seeds']} seeds)")
    if "fold_mean" in result:
        print(f"  mean over held-out domains: pearson={result['fold_mean']['test/pearson']:.3f} "
              f"spearman={result['fold_mean']['test/spearman']:.3f}")
    print(f"results: {out_dir / 'results.json'}")
    metrics: dict[str, Any] = {f"test/{k}": v for k, v in summary.items()}
    metrics.update({f"lodo_mean/{k.split('/', 1)[1]}": v for k, v in result.get("fold_mean", {}).items()
                    if k.startswith("test/")})
    metrics["val/corr"] = float(np.mean([r["best_dev_corr"] for r in runs]))
    log_metrics(cfg, metrics, run_dir=out_dir)
    if cfg.get("export") and first_dir is not None:
        path = export_run(first_dir, Path(cfg.export_dir).expanduser())
        if path is not None:
            metrics["export_path"] = str(path)
    return metrics


def export_run(sub: Path, dest: Path) -> Path | None:
    """Copy the export of the first (seed, fold) sub-run to ``dest`` (the run's ``export_dir``), rewritten through
    :func:`qe.ratpred.format.save_export` so its manifest and card are those of ``dest``; None when that sub-run has
    no export (it finished in a run with ``export=false``)."""
    src = sub / "export"
    if not (src / MANIFEST).is_file():
        log.warning("%s has no export (its sub-run finished in a run with export=false): nothing exported", sub)
        return None
    man, net, vocab = fmt.load_export(src)
    c = man["config"]
    path = fmt.save_export(dest, net, vocab, c["model"], c["predict"],
                           {k: v for k, v in c.items() if k not in ("model", "predict", "vocab_sha256")},
                           data=man.get("data"), metrics=man.get("metrics"), sentence_tokens=fmt.export_tokens(src, net),
                           content=fmt.export_content(src, man))
    print(f"export written to: {path}")
    return path


def _run_one(cfg, proto, d, setup, sources, pool, seed, fold, train, dev, test, sub: Path, resume: bool,
             export: bool, n_records: int, target: list | None = None) -> tuple[dict, list[dict]]:
    """Train and test one (seed, fold) in its sub-run directory; returns its result entry and test predictions."""
    synth_delex = bool(proto.get("delex", True))
    delex = input_delex(cfg.model, proto)  # what the network reads (the cross-encoder: model.cross_delex)
    orig, extra, counts = build_training_set(
        train, test, sources, target=str(d.target), max_errors=int(proto["max_errors"]),
        seed=int(seed) * 1000 + fold, ref_pool=pool, delex=synth_delex, target_data=target,
        error_types=tuple(proto.get("error_types") or ERROR_TYPES), penalties=proto.get("error_penalties") or None)
    dev_i = real_instances(dev, str(d.target))  # checks MR present and rating a number, naming the record
    test_i = real_instances(test, str(d.target))
    module, vocab, info = train_one(orig, extra, dev_i, cfg.model, proto, int(seed), cfg, run_dir=sub, resume=resume)
    raw = predict(module, vocab, test_i, delex, rounded=False)
    c = module.predict_config()
    p = round_clip(raw, c["round_to"], c["clip_lo"], c["clip_hi"])
    gold = np.array([i.rating for i in test_i])
    m = correlations(p, gold) if len(gold) else {}
    m_raw = correlations(raw, gold) if len(gold) else {}
    log.info("setup %s seed %s fold %s: %s  (%d train instances, %.0fs)", setup, seed, fold,
             {k: round(v, 3) for k, v in m.items()}, info["train_total"], info["seconds"])
    print(f"[ratpred {setup} seed={seed} fold={fold}] test {dumps({k: round(v, 3) for k, v in m.items()})}"
          f" raw {dumps({k: round(v, 3) for k, v in m_raw.items()})}"
          f" train={info['train_total']} dev_corr={info['best_dev_corr']:.3f} {info['seconds']:.0f}s", flush=True)
    run_info = {"seed": seed, "fold": fold, "counts": counts, "test": m, "test_raw": m_raw, "dev": len(dev), **info}
    rows = [{"seed": seed, "fold": fold, "id": i.src, "pred": float(x), "raw": float(y), "gold": i.rating}
            for i, x, y in zip(test_i, p, raw)]
    # the dev part's predictions too: combining or choosing models afterwards (experiments.ratpred combine) must be
    # decided on dev, never on the test figures
    dev_raw = predict(module, vocab, dev_i, delex, rounded=False)
    dev_rows = [{"seed": seed, "fold": fold, "id": i.src, "pred": float(x), "raw": float(y), "gold": i.rating}
                for i, x, y in zip(dev_i, round_clip(dev_raw, c["round_to"], c["clip_lo"], c["clip_hi"]), dev_raw)]
    log_metrics(cfg, {f"test/{k}": v for k, v in m.items()} | {f"test_raw/{k}": v for k, v in m_raw.items()},
                run_dir=sub, hparams=False)
    if export:
        module.export(sub / "export", vocab=vocab, cfg=cfg,
                      config={"delex": delex, "synth_delex": synth_delex, "target": str(d.target), "setup": setup,
                              "fold": fold, "seed": seed},
                      data={"name": str(d.dataset), "records": n_records, "train_instances": info["train_total"]},
                      metrics={f"test/{k}": v for k, v in m.items()} | {"val/corr": info["best_dev_corr"]})
    _write_jsonl(sub / "predictions.jsonl", rows)
    _write_jsonl(sub / "dev_predictions.jsonl", dev_rows)
    (sub / "result.json").write_text(dumps(run_info, indent=1, default=str))  # last: marks the sub-run done
    if not proto.get("keep_checkpoints", False):
        for stage_dir in STAGE_DIRS.values():
            shutil.rmtree(sub / stage_dir / "checkpoints", ignore_errors=True)
    return run_info, rows
