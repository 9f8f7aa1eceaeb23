"""Hydra tasks for the trainable GRUEN parts (``train.py task=cola|mlm|sop``) and their exports.

=========  =====================================================  ===============  ========================
task       what is trained                                         export kind      consumed by
=========  =====================================================  ===============  ========================
``cola``   encoder + 2-way head on CoLA in-domain train            ``acceptability``  grammaticality (g_i)
``mlm``    masked-LM head (+ top layers) on sentence corpora       ``mlm``          grammaticality (l_i, PLL)
``sop``    encoder + order head on segment pairs of documents      ``sop``          structure/coherence (y_c)
=========  =====================================================  ===============  ========================
"""
from __future__ import annotations

import logging
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from qe.data.corpora import corpus_fingerprint, load_corpus, split_holdout
from qe.gruen.data import MLMDataModule, TextClassificationDataModule, load_documents, read_cola, sop_pairs
from qe.gruen.hf import save_hf_export
from qe.gruen.modules import MaskedLMModule, SequenceClassifierModule
from qe.training import TaskParts, plain_config

log = logging.getLogger(__name__)


def _tokenizer(encoder: str):
    from transformers import AutoTokenizer

    from qe.offline import encoder_path

    return AutoTokenizer.from_pretrained(encoder_path(encoder))


def _cap(items: list, n) -> list:
    return items if not n else items[: int(n)]


def _metrics(metrics: dict) -> dict:
    return {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))}


# ------------------------------------------------------------------------------------------------ CoLA
def build_cola(cfg: DictConfig) -> TaskParts:
    d, m = cfg.data, cfg.model
    tok = _tokenizer(m.encoder)
    train = read_cola("train", cfg.paths.data_dir)
    train = (_cap(train[0], d.get("max_train")), _cap(train[1], d.get("max_train")))
    val = {"in": read_cola("dev_in", cfg.paths.data_dir), "out": read_cola("dev_out", cfg.paths.data_dir)}
    dm = TextClassificationDataModule(tok, train, val, batch_size=int(d.batch_size), max_length=int(d.max_length),
                                      num_workers=int(d.get("num_workers", 0)), seed=int(cfg.seed))
    module = SequenceClassifierModule(encoder=str(m.encoder), lr=float(m.lr), weight_decay=float(m.weight_decay),
                                      warmup_ratio=float(m.warmup_ratio), metric="mcc", val_names=["in", "out"],
                                      train_layers=int(m.get("train_layers", -1)))
    data = {"name": "cola", "train_sentences": len(train[0]), "sha256": corpus_fingerprint(train[0]),
            "dev_in": len(val["in"][0]), "dev_out": len(val["out"][0])}

    def export(module, dm, dest, metrics, cfg):
        return save_hf_export(Path(dest), module.model, dm.tokenizer, "acceptability",
                              config={"encoder": str(m.encoder), "positive_label": 1, "max_length": int(d.max_length),
                                      "train": plain_config(cfg)},
                              data=data, metrics=_metrics(metrics))

    return TaskParts(module=module, datamodule=dm, export=export, demo=_demo_acceptability)


def _demo_acceptability(path, cfg):
    import qe

    sents = list(cfg.get("demo_sentences") or [])
    if sents:
        sc = qe.load(path)
        for s, p in zip(sents, sc.score(sents, progress=False)):
            print(f"P(acceptable)={p:.3f}  {s}")


# ------------------------------------------------------------------------------------------------ SOP
def build_sop(cfg: DictConfig) -> TaskParts:
    d, m = cfg.data, cfg.model
    tok = _tokenizer(m.encoder)
    train_docs = _cap(load_documents(OmegaConf.to_container(d.train, resolve=True), cfg.paths.data_dir), d.get("max_train"))
    val_docs = _cap(load_documents(OmegaConf.to_container(d.val, resolve=True), cfg.paths.data_dir), d.get("max_val"))
    if not train_docs or not val_docs:
        raise ValueError(f"SOP data: {len(train_docs)} training and {len(val_docs)} validation documents; need both > 0")
    train = sop_pairs(train_docs, seed=int(cfg.seed), both=bool(d.get("both_orders", True)))
    val = {"val": sop_pairs(val_docs, seed=int(cfg.seed) + 1, both=True)}
    dm = TextClassificationDataModule(tok, train, val, batch_size=int(d.batch_size), max_length=int(d.max_length),
                                      num_workers=int(d.get("num_workers", 0)), seed=int(cfg.seed),
                                      pair_truncation=str(d.get("pair_truncation", "boundary")))
    head_lr = m.get("head_lr")
    module = SequenceClassifierModule(encoder=str(m.encoder), lr=float(m.lr), weight_decay=float(m.weight_decay),
                                      warmup_ratio=float(m.warmup_ratio), metric="acc", val_names=["val"],
                                      train_layers=int(m.get("train_layers", -1)),
                                      pooling=str(m.get("pooling", "segments")),
                                      head_lr=float(head_lr) if head_lr else None)
    flat = [" ".join(x) for x in train_docs]
    data = {"name": "+".join(str(dict(s).get("name")) for s in d.train), "train_documents": len(train_docs),
            "train_pairs": len(train[0]), "val_documents": len(val_docs), "sha256": corpus_fingerprint(flat)}

    def export(module, dm, dest, metrics, cfg):
        return save_hf_export(Path(dest), module.model, dm.tokenizer, "sop",
                              config={"encoder": str(m.encoder), "label_original_order": 0, "label_swapped": 1,
                                      "pooling": str(m.get("pooling", "segments")),
                                      "max_length": int(d.max_length), "train": plain_config(cfg)},
                              data=data, metrics=_metrics(metrics))

    return TaskParts(module=module, datamodule=dm, export=export, demo=_demo_sop)


def _demo_sop(path, cfg):
    from qe.gruen.coherence import CoherenceModel

    cm = CoherenceModel(path)
    doc = ["A 12-year-old schoolboy needed to be rescued after falling down an eight-foot drain in Peterborough.",
           "Firefighters worked with police and ambulance staff to free the boy, whose leg was trapped for more than "
           "half an hour down the hole.",
           "It is believed the rubber drain cover had been kicked out of position and within hours, the accident occurred."]
    for name, d in (("original", doc), ("shuffled", [doc[1], doc[2], doc[0]])):
        print(f"SOP loss {cm.sop_loss([d], progress=False)[0]:.3f}  ({name} order, Table 11 (h)/(g))")


# ------------------------------------------------------------------------------------------------ MLM head
def build_mlm(cfg: DictConfig) -> TaskParts:
    d, m = cfg.data, cfg.model
    tok = _tokenizer(m.encoder)
    train_all = load_corpus(OmegaConf.to_container(d.train, resolve=True), cfg.paths.data_dir)
    train, held = split_holdout(train_all, float(d.get("val_fraction", 0.0)), seed=int(cfg.seed))
    val = load_corpus(OmegaConf.to_container(d.val, resolve=True), cfg.paths.data_dir) if d.get("val") else []
    val = _cap(val + held, d.get("max_val"))
    train = _cap(train, d.get("max_train"))
    if not train or not val:
        raise ValueError(f"MLM data: {len(train)} training and {len(val)} validation sentences; need both > 0")
    dm = MLMDataModule(tok, train, val, batch_size=int(d.batch_size), max_length=int(d.max_length),
                       mlm_probability=float(d.get("mlm_probability", 0.15)), num_workers=int(d.get("num_workers", 0)),
                       seed=int(cfg.seed))
    module = MaskedLMModule(encoder=str(m.encoder), lr=float(m.lr), encoder_lr=float(m.encoder_lr),
                            weight_decay=float(m.weight_decay), warmup_ratio=float(m.warmup_ratio),
                            train_layers=int(m.train_layers))
    data = {"name": "+".join(str(dict(s).get("name")) + (f"-{dict(s)['split']}" if dict(s).get("split") else "")
                             for s in d.train),
            "train_sentences": len(train), "val_sentences": len(val), "sha256": corpus_fingerprint(train)}

    def export(module, dm, dest, metrics, cfg):
        return save_hf_export(Path(dest), module.model, dm.tokenizer, "mlm",
                              config={"encoder": str(m.encoder), "train_layers": int(m.train_layers),
                                      "train": plain_config(cfg)},
                              data=data, metrics=_metrics(metrics))

    return TaskParts(module=module, datamodule=dm, export=export, demo=_demo_mlm)


def _demo_mlm(path, cfg):
    from qe.gruen.pll import PLLScorer

    sents = list(cfg.get("demo_sentences") or [])
    if sents:
        sc = PLLScorer(path)
        for s, v in zip(sents, sc.score(sents, progress=False)):
            print(f"PLL/token={v:8.3f}  {s}")


# ------------------------------------------------------------------------------------------------ interrupted runs
def export_from_checkpoint(run_dir: str | Path, checkpoint: str = "best", dest: str | Path | None = None) -> Path:
    """Write a run's export from one of its checkpoints (for runs stopped before their last epoch).

        python -m qe.gruen.tasks outputs/cola/runs/<run> --checkpoint best --dest exports/cola_minilm

    ``checkpoint``: ``best`` (the ModelCheckpoint's monitored best), ``last``, or a file path. The config is the
    run's own ``.hydra/config.yaml``; weights load with ``torch.load(weights_only=True)``.
    """
    import torch
    from omegaconf import OmegaConf

    run_dir = Path(run_dir)
    cfg = OmegaConf.load(run_dir / ".hydra" / "config.yaml")
    cfg.paths.output_dir = str(run_dir)
    ck_dir = run_dir / "checkpoints"
    if checkpoint == "last":
        ck = ck_dir / "last.ckpt"
    elif checkpoint == "best":
        cands = sorted(p for p in ck_dir.glob("*.ckpt") if p.name != "last.ckpt")
        if not cands:
            raise FileNotFoundError(f"{ck_dir}: no best checkpoint")
        ck = cands[-1]
    else:
        ck = Path(checkpoint)
    import hydra

    parts = hydra.utils.get_method(cfg.task.builder)(cfg)
    state = torch.load(ck, map_location="cpu", weights_only=True)
    parts.module.load_state_dict(state["state_dict"])
    metrics = {}
    for cb in state.get("callbacks", {}).values():
        if isinstance(cb, dict) and "best_model_score" in cb and cb["best_model_score"] is not None:
            metrics[f"best/{cfg.task.monitor}"] = float(cb["best_model_score"])
    metrics.update({"checkpoint_epoch": int(state.get("epoch", -1)), "checkpoint_step": int(state.get("global_step", -1))})
    import lightning.pytorch as pl

    val = pl.Trainer(accelerator="auto", devices=1, logger=False, enable_progress_bar=False,
                     enable_checkpointing=False).validate(parts.module, datamodule=parts.datamodule, verbose=False)
    for d in val:
        metrics.update({k: float(v) for k, v in d.items()})
    dest = Path(dest) if dest else run_dir / "export"
    return parts.export(parts.module, parts.datamodule, dest, metrics, cfg)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="write a GRUEN task's export from a checkpoint of its run")
    ap.add_argument("run_dir")
    ap.add_argument("--checkpoint", default="best")
    ap.add_argument("--dest", default=None)
    a = ap.parse_args()
    print(export_from_checkpoint(a.run_dir, a.checkpoint, a.dest))
