"""``task=qe``: the RatPred experiment runner (cross-validation or C1-C3) and the ``qe_gru`` export.

``python train.py experiment=ratpred_s4`` runs, for every seed in ``protocol.seeds`` and every fold in
``protocol.folds``: build the fold's training set for the setup (:mod:`qe.ratpred.data`), build the
vocabulary from it, train with Lightning - with synthetic data first ``passes_synth`` passes over all data,
then ``passes_orig`` passes over the original data, starting from the best stage-1 parameters; each stage
keeps the parameters with its best dev (Pearson + Spearman) / 2 - and predict the test part. Per seed, the test predictions of all
folds are pooled (cross-validation over the whole dataset) and scored (Pearson, Spearman, MAE, RMSE); the
table reports the mean over seeds. ``results.json`` and ``predictions.jsonl`` go to the run directory; the
model of the first (seed, fold) is exported (kind ``qe_gru``).

The paper's protocol is ``passes_synth=20 passes_orig=500 seeds=[1,2,3,4,5] folds=[0,1,2,3,4]``; the
presets default to it; ``protocol.patience`` stops a stage after that many passes without a dev gain.
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from qe.data.datasets import load_dataset
from qe.export import export_writer
from qe.ratpred.data import (SETUPS, Instance, RatingDataset, Vocab, build_training_set, collate, cv_fold,
                             encode_instances, in_set_split, make_parts, real_instances, reference_pool)
from qe.ratpred.mr import delexicalise
from qe.ratpred.module import KeepBest, RatPredModule, correlations, round_clip
from qe.training import plain_config

log = logging.getLogger(__name__)

EXPORT_KIND = "qe_gru"
MODEL_FILE = "model.safetensors"
VOCAB_FILE = "vocab.json"


# ---------------------------------------------------------------------------------------------- training
def _loader(insts, vocab, delex, batch_size, shuffle, seed=0):
    ds = RatingDataset(*encode_instances(insts, vocab, delex))
    g = torch.Generator()
    g.manual_seed(seed)
    return torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=shuffle, collate_fn=collate,
                                       generator=g if shuffle else None, num_workers=0)


def _trainer(cfg: DictConfig | None, max_epochs: int, callbacks, logger=False) -> pl.Trainer:
    kw: dict[str, Any] = dict(max_epochs=max_epochs, callbacks=callbacks, logger=logger, enable_checkpointing=False,
                              num_sanity_val_steps=0, enable_model_summary=False, enable_progress_bar=False)
    if cfg is not None and cfg.get("trainer") is not None:
        t = OmegaConf.to_container(cfg.trainer, resolve=False)
        for k in ("accelerator", "devices", "precision", "deterministic"):
            if k in t:
                kw[k] = t[k]
    kw.setdefault("accelerator", "auto")
    kw.setdefault("devices", 1)
    return pl.Trainer(**kw)


def train_one(orig: list[Instance], extra: list[Instance], dev: list[Instance], model_cfg: dict, proto: dict,
              seed: int, cfg: DictConfig | None = None) -> tuple[RatPredModule, Vocab, dict]:
    """Two-stage training on one fold; returns the module with the best dev weights, its vocab and a log."""
    pl.seed_everything(seed, workers=True)
    delex = bool(proto.get("delex", True))
    train_all = orig + extra
    vocab = Vocab.build(d.mr_tokens + d.out_tokens
                        for d in (delexicalise(i.mr, i.output, delex=delex, where=i.src) for i in train_all))
    ratings = [i.rating for i in orig]
    module = RatPredModule(vocab_size=len(vocab), embedding_dim=int(model_cfg["embedding_dim"]),
                           hidden_size=int(model_cfg["hidden_size"]), tanh_layers=int(model_cfg["tanh_layers"]),
                           dropout=float(model_cfg["dropout"]), lr=float(model_cfg["lr"]),
                           round_to=model_cfg.get("round_to"),
                           clip_lo=min(ratings) if model_cfg.get("clip", True) else None,
                           clip_hi=max(ratings) if model_cfg.get("clip", True) else None,
                           select_rounded=bool(proto.get("select_rounded", False)),
                           init_bias=float(np.mean(ratings)) if model_cfg.get("init_bias_mean", True) else None)
    bs = int(model_cfg["batch_size"])
    dev_loader = _loader(dev, vocab, delex, 256, False)
    patience = proto.get("patience")
    min_passes = int(proto.get("min_passes") or 0)
    keep = KeepBest(patience=patience)
    info: dict[str, Any] = {"vocab": len(vocab), "train_original": len(orig), "train_total": len(train_all)}
    t0 = time.perf_counter()
    stages = []
    if extra and int(proto["passes_synth"]) > 0:
        stages.append(("synth+all", train_all, int(proto["passes_synth"])))
    stages.append(("original", orig, int(proto["passes_orig"])))
    for name, data, passes in stages:
        # each stage keeps its own best (paper: 20 passes "keeping the best parameters", then the passes over
        # the original data): the final model always comes from the original-data stage, so its output scale
        # is that of real ratings (a stage-1 model selected on correlation alone can be badly miscalibrated)
        keep = KeepBest(patience=patience, min_passes=min_passes)
        tr = _trainer(cfg, passes, [keep])
        tr.fit(module, train_dataloaders=_loader(data, vocab, delex, bs, True, seed), val_dataloaders=dev_loader)
        stages_info = {"stage": name, "instances": len(data), "epochs_run": tr.current_epoch,
                       "best_dev_corr": keep.best, "best_epoch": keep.best_epoch, "history": keep.history}
        info.setdefault("stages", []).append(stages_info)
        if keep.state is not None:
            module.load_state_dict(keep.state)
    info["seconds"] = time.perf_counter() - t0
    info["best_dev_corr"] = keep.best
    return module, vocab, info


@torch.no_grad()
def predict(module: RatPredModule, vocab: Vocab, insts: list[Instance], delex: bool = True,
            batch_size: int = 256, rounded: bool = True) -> np.ndarray:
    module.eval()
    dev = next(module.parameters()).device
    out = []
    for b in _loader(insts, vocab, delex, batch_size, False):
        b = {k: v.to(dev) for k, v in b.items()}
        out.append(module(b).float().cpu())
    p = torch.cat(out).numpy() if out else np.zeros(0)
    if rounded:
        h = module.hparams
        p = round_clip(p, h.round_to, h.clip_lo, h.clip_hi)
    return p


# ------------------------------------------------------------------------------------------------ runner
def _splits(cfg: DictConfig, records) -> list[tuple[int, list, list, list]]:
    proto = cfg.protocol
    mode = proto.get("mode", "cv")
    if mode == "cv":
        parts = make_parts(records, int(proto.n_parts), int(proto.part_seed), str(proto.get("group_by", "mr_output")))
        folds = list(proto.folds) if proto.get("folds") is not None else list(range(int(proto.n_parts)))
        return [(f, *cv_fold(parts, f, int(proto.n_train_parts), int(proto.n_dev_parts))) for f in folds]
    if mode in ("C1", "C2", "C3"):
        sp = in_set_split(records, dict(proto.in_set), int(proto.n_small), int(proto.n_small_dev),
                          int(proto.part_seed), str(proto.get("group_by", "mr_output")))
        train = {"C1": sp["small_train"], "C2": sp["out_train"], "C3": sp["out_train"] + sp["small_train"]}[mode]
        dev = sp["out_dev"] if mode == "C2" else sp["small_dev"]
        return [(0, train, dev, sp["in_test"])]
    raise ValueError(f"protocol.mode={mode!r}: use cv, C1, C2 or C3")


def run(cfg: DictConfig) -> dict[str, Any]:
    """Hydra runner (``task.runner``): the whole protocol; returns summary metrics."""
    torch.set_num_threads(int(cfg.protocol.get("threads") or torch.get_num_threads()))
    d = cfg.data
    records = load_dataset(d.dataset, data_dir=cfg.paths.data_dir,
                           **({"datasets": list(d.datasets)} if d.get("datasets") else {}))
    proto = OmegaConf.to_container(cfg.protocol, resolve=True)
    setup = str(proto["setup"])
    sources = tuple(proto.get("sources") or SETUPS[setup])
    pool = reference_pool(cfg.paths.data_dir) if {"source_train", "source_all"} & set(sources) else None
    model_cfg = OmegaConf.to_container(cfg.model, resolve=True)
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    splits = _splits(cfg, records)
    seeds = list(proto["seeds"])
    per_seed, per_seed_raw, runs, preds_rows = [], [], [], []
    first = None
    for seed in seeds:
        all_pred, all_raw, all_gold = [], [], []
        for fold, train, dev, test in splits:
            orig, extra, counts = build_training_set(
                train, test, sources, target=str(d.target), max_errors=int(proto["max_errors"]),
                seed=int(seed) * 1000 + fold, ref_pool=pool, delex=bool(proto.get("delex", True)))
            dev_i = real_instances(dev, str(d.target))  # checks MR present and rating a number, naming the record
            test_i = real_instances(test, str(d.target))
            module, vocab, info = train_one(orig, extra, dev_i, model_cfg, proto, int(seed), cfg)
            raw = predict(module, vocab, test_i, bool(proto.get("delex", True)), rounded=False)
            h = module.hparams
            p = round_clip(raw, h.round_to, h.clip_lo, h.clip_hi)
            gold = np.array([i.rating for i in test_i])
            m = correlations(p, gold)
            m_raw = correlations(raw, gold)
            log.info("setup %s seed %s fold %s: %s  (%d train instances, %.0fs)", setup, seed, fold,
                     {k: round(v, 3) for k, v in m.items()}, info["train_total"], info["seconds"])
            print(f"[ratpred {setup} seed={seed} fold={fold}] test {json.dumps({k: round(v, 3) for k, v in m.items()})}"
                  f" raw {json.dumps({k: round(v, 3) for k, v in m_raw.items()})}"
                  f" train={info['train_total']} dev_corr={info['best_dev_corr']:.3f} {info['seconds']:.0f}s",
                  flush=True)
            runs.append({"seed": seed, "fold": fold, "counts": counts, "test": m, "test_raw": m_raw, "dev": len(dev),
                         **info})
            all_pred.extend(p.tolist())
            all_raw.extend(raw.tolist())
            all_gold.extend(gold.tolist())
            preds_rows.extend({"seed": seed, "fold": fold, "id": i.src, "pred": float(x), "raw": float(y),
                               "gold": i.rating} for i, x, y in zip(test_i, p, raw))
            with open(out_dir / "predictions.jsonl", "w") as f:  # after every fold: an interrupted run keeps them
                for row in preds_rows:
                    f.write(json.dumps(row) + "\n")
            (out_dir / "results.json").write_text(json.dumps(
                {"setup": setup, "sources": list(sources), "mode": proto.get("mode", "cv"), "partial": True,
                 "runs": runs}, indent=1, default=str))
            if first is None:
                first = (module, vocab, info, m, fold, seed)
        per_seed.append(correlations(all_pred, all_gold))
        per_seed_raw.append(correlations(all_raw, all_gold))
    summary = {k: float(np.mean([s[k] for s in per_seed])) for k in per_seed[0]}
    summary_std = {k: float(np.std([s[k] for s in per_seed])) for k in per_seed[0]}
    result = {"setup": setup, "sources": list(sources), "mode": proto.get("mode", "cv"), "target": str(d.target),
              "summary": summary, "summary_std_over_seeds": summary_std, "per_seed": per_seed,
              "summary_raw": {k: float(np.mean([s[k] for s in per_seed_raw])) for k in per_seed_raw[0]}, "runs": runs,
              "config": plain_config(cfg)}
    (out_dir / "results.json").write_text(json.dumps(result, indent=1, default=str))
    with open(out_dir / "predictions.jsonl", "w") as f:
        for row in preds_rows:
            f.write(json.dumps(row) + "\n")
    print(f"\nRatPred {setup} ({proto.get('mode', 'cv')}, seeds={seeds}): "
          + "  ".join(f"{k}={v:.3f}" for k, v in summary.items()))
    print(f"results: {out_dir / 'results.json'}")
    metrics: dict[str, Any] = {f"test/{k}": v for k, v in summary.items()}
    metrics["val/corr"] = float(np.mean([r["best_dev_corr"] for r in runs]))
    if cfg.get("export") and first is not None:
        module, vocab, info, m, fold, seed = first
        dest = Path(cfg.export_dir).expanduser()
        path = save_export(dest, module, vocab, {"delex": bool(proto.get("delex", True)), "target": str(d.target),
                                                 "setup": setup, "fold": fold, "seed": seed,
                                                 "train": plain_config(cfg)},
                           data={"name": str(d.dataset), "records": len(records), "train_instances": info["train_total"]},
                           metrics={f"test/{k}": v for k, v in m.items()} | {"val/corr": info["best_dev_corr"]})
        metrics["export_path"] = str(path)
        print(f"export written to: {path}")
    return metrics


# ------------------------------------------------------------------------------------------------ export
def save_export(dest: str | Path, module: RatPredModule, vocab: Vocab, extra_config: dict | None = None,
                data: dict | None = None, metrics: dict | None = None) -> Path:
    """Write a ``qe_gru`` export: weights (safetensors), vocabulary (JSON), prediction settings."""
    from safetensors.torch import save_model

    net = module.net.float().cpu().eval()
    h = module.hparams
    config = {"model": module.model_config(),
              "predict": {"round_to": h.round_to, "clip_lo": h.clip_lo, "clip_hi": h.clip_hi},
              "vocab_sha256": vocab.fingerprint(), **(extra_config or {})}
    dest = Path(dest)
    with export_writer(dest, kind=EXPORT_KIND, config=config, data=data, metrics=metrics) as tmp:
        save_model(net, str(tmp / MODEL_FILE))
        (tmp / VOCAB_FILE).write_text(json.dumps(vocab.itos, ensure_ascii=False))
    return dest.resolve()
