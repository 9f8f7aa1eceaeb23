"""Training for the GRUEN family (``train.py task=cola|mlm|sop|gruen_tune``): LightningModules, builders, runner.

=========  =====================================================  =================  ========================
task       what is trained                                         export kind        consumed by
=========  =====================================================  =================  ========================
``cola``   encoder + 2-way head on CoLA in-domain train            ``acceptability``  grammaticality (g_i)
``mlm``    masked-LM head (+ top layers) on sentence corpora       ``mlm``            grammaticality (l_i, PLL)
``sop``    encoder + order head on segment pairs of documents      ``sop``            structure/coherence (y_c)
=========  =====================================================  =================  ========================

Model configs (``conf/model/hf_encoder.yaml``) name the module with ``_target_`` and ``_partial_: true``; the
builder supplies what only the task knows (``num_labels``, the names of the validation sets). Every constructor
argument is a saved hyperparameter (plain values only, so checkpoints load with ``torch.load(weights_only=True)``),
and each module writes its export through :mod:`qe.gruen.format` (:meth:`export`); an interrupted run is exported
from a checkpoint with the generic ``python -m qe.training <run dir> --checkpoint best``.
The classifiers' training (module, optimiser, data module) is shared with the content aligner and lives in
:mod:`qe.hf`; :class:`SequenceClassifierModule` adds GRUEN's export to it.

``task=gruen_tune`` (:func:`run`) scores a rated dataset with GRUEN, reports correlations and is what an Optuna
sweep tunes (dev split only). The rated outputs are split deterministically into **dev** and **test** by hashing
(dataset, MR) — outputs for the same input never straddle the split. Every weight and threshold of
:class:`~qe.gruen.scorer.GruenParams` can be set from ``gruen.params``; the value returned to a sweeper
(``optimized_metric``, default ``dev/spearman``) is the Spearman correlation on the **dev** split only, averaged over
datasets and the ratings in ``gruen.tune_ratings``. Test-split correlations are computed only when
``gruen.report_test`` is true (the Optuna config turns it off, so a sweep never sees them). Model outputs are cached
per part (:class:`~qe.gruen.scorer.PartCache`), so each trial only recombines numbers. Its metrics go to the
configured loggers (:func:`qe.training.log_metrics`), so ``logger=csv|wandb|none`` mean what they mean elsewhere.
"""
from __future__ import annotations

import hashlib
import logging
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from omegaconf import DictConfig

from qe.core.config import conf_defaults, to_dict
from qe.data.corpora import corpus_fingerprint, load_corpus, split_holdout, split_seed
from qe.core.jsonio import dumps
from qe.gruen import format as fmt
from qe.gruen.data import MLMDataModule, load_documents, read_cola, sop_pairs
from qe.gruen.model import encoder_layers, mlm_parts
from qe.hf.classifier import SequenceClassifierModule as _HFClassifier
# the old private names of the shared helpers, for code that imported them from here
from qe.hf.classifier import configure_adamw as _configure
from qe.hf.classifier import float_metrics as _float_metrics
from qe.hf.classifier import linear_warmup as _linear_warmup  # noqa: F401
from qe.hf.classifier import tokenizer_for as _tokenizer
from qe.hf.classifier import warmup_schedule as _schedule
from qe.hf.data import TextClassificationDataModule
from qe.training import QEModule, TaskParts, instantiate_model, log_metrics, plain_config

log = logging.getLogger(__name__)

#: the defaults of task=cola / task=sop / task=mlm (model group hf_encoder, then the task's own model section), written
#: once in qe/conf
COLA = conf_defaults("model/hf_encoder", "task/cola:model")
SOP = conf_defaults("model/hf_encoder", "task/sop:model")
MLM = conf_defaults("model/hf_encoder", "task/mlm:model")


def _cap(items: list, n) -> list:
    return items if not n else items[: int(n)]


# ------------------------------------------------------------------------------------------------ classifiers
class SequenceClassifierModule(_HFClassifier):
    """:class:`qe.hf.classifier.SequenceClassifierModule` (an HF encoder + 2-way head: training, validation, the
    optimiser) with GRUEN's export: an HF export of kind :attr:`export_kind` written by
    :func:`qe.gruen.format.save_hf_export`. The base of :class:`CoLAModule` and :class:`SOPModule`; configs and
    user code that name ``qe.gruen.task.SequenceClassifierModule`` get the class they got before the move."""

    def _export_config(self, datamodule) -> dict:
        return {"encoder": str(self.hparams.encoder), "model": dict(self.hparams),
                "max_length": int(getattr(datamodule, "max_length", 0) or 0)}

    def export(self, dest, *, datamodule=None, metrics=None, cfg=None) -> Path:
        config = {**self._export_config(datamodule), "train": plain_config(cfg) if cfg is not None else {}}
        return fmt.save_hf_export(Path(dest), self.model, datamodule.tokenizer, self.export_kind, config=config,
                                  data=dict(getattr(datamodule, "data_info", {}) or {}),
                                  metrics=_float_metrics(metrics))


class CoLAModule(SequenceClassifierModule):
    """``task=cola``: acceptable = label 1; export kind ``acceptability``."""

    export_kind = fmt.ACCEPTABILITY

    def _export_config(self, datamodule) -> dict:
        return {**super()._export_config(datamodule), "positive_label": 1}


class SOPModule(SequenceClassifierModule):
    """``task=sop``: label 0 = original order, 1 = swapped; segment-mean head by default; export kind ``sop``."""

    export_kind = fmt.SOP

    def __init__(self, encoder: str = SOP["encoder"], num_labels: int = 2, lr: float = SOP["lr"],
                 weight_decay: float = SOP["weight_decay"], warmup_ratio: float = SOP["warmup_ratio"],
                 val_names: Sequence[str] = ("val",), dropout: float | None = None,
                 train_layers: int = SOP["train_layers"], pooling: str = SOP["pooling"],
                 head_lr: float | None = SOP["head_lr"]):
        super().__init__(encoder, num_labels, lr, weight_decay, warmup_ratio, val_names, dropout, train_layers,
                         pooling, head_lr)

    def _export_config(self, datamodule) -> dict:
        return {**super()._export_config(datamodule), "label_original_order": fmt.LABEL_ORIGINAL,
                "label_swapped": fmt.LABEL_SWAPPED, "pooling": str(self.hparams.pooling)}


# ------------------------------------------------------------------------------------------------ MLM head
class MaskedLMModule(QEModule):
    """Fit an MLM head on an encoder. ``train_layers`` top transformer layers are unfrozen (0 = head only);
    the input embeddings (tied to the output projection) stay frozen, so the vocabulary geometry is kept."""

    export_kind = fmt.MLM

    def __init__(self, encoder: str = MLM["encoder"], lr: float = MLM["lr"], encoder_lr: float = MLM["encoder_lr"],
                 weight_decay: float = MLM["weight_decay"], warmup_ratio: float = MLM["warmup_ratio"],
                 train_layers: int = MLM["train_layers"]):
        super().__init__()
        self.save_hyperparameters()
        from transformers import AutoModelForMaskedLM

        from qe.core.offline import encoder_path

        self.model = AutoModelForMaskedLM.from_pretrained(encoder_path(encoder))
        self.model.train()
        self.encoder, self.head = mlm_parts(self.model)
        for p in self.model.parameters():
            p.requires_grad = False
        head_params = self.head.parameters() if isinstance(self.head, torch.nn.Module) else []
        for p in head_params:
            p.requires_grad = True
        self.model.get_input_embeddings().weight.requires_grad = False  # tied decoder weight stays pretrained
        self._encoder_params = []
        layers = encoder_layers(self.model)
        if train_layers > 0 and layers is not None:
            for layer in list(layers)[-train_layers:]:
                for p in layer.parameters():
                    p.requires_grad = True
                    self._encoder_params.append(p)
        self._val_nll = 0.0
        self._val_n = 0

    def _loss(self, batch):
        labels = batch["labels"]
        sel = labels != -100
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        if self.encoder is not None:
            logits = self.head(self.encoder(**inputs).last_hidden_state[sel])
        else:
            logits = self.model(**inputs).logits[sel]
        return F.cross_entropy(logits.float(), labels[sel], reduction="sum"), int(sel.sum())

    def training_step(self, batch, batch_idx):
        nll, n = self._loss(batch)
        loss = nll / max(1, n)
        self.log("train/loss", loss, prog_bar=True, batch_size=max(1, n))
        return loss

    def validation_step(self, batch, batch_idx):
        nll, n = self._loss(batch)
        self._val_nll += float(nll)
        self._val_n += n

    def on_validation_epoch_end(self):
        loss = self._val_nll / max(1, self._val_n)
        self.log_dict({"val/loss": loss, "val/ppl": math.exp(min(loss, 50.0))}, prog_bar=True)
        self._val_nll, self._val_n = 0.0, 0

    def configure_optimizers(self):
        h = self.hparams
        enc_ids = {id(p) for p in self._encoder_params}
        head = [p for _, p in self.named_parameters() if p.requires_grad and id(p) not in enc_ids]
        opt = torch.optim.AdamW([
            {"params": head, "lr": h.lr, "weight_decay": h.weight_decay},
            {"params": self._encoder_params, "lr": h.encoder_lr, "weight_decay": h.weight_decay},
        ])
        return _schedule(self, opt)

    def export(self, dest, *, datamodule=None, metrics=None, cfg=None) -> Path:
        config = {"encoder": str(self.hparams.encoder), "model": dict(self.hparams),
                  "train_layers": int(self.hparams.train_layers), "train": plain_config(cfg) if cfg is not None else {}}
        return fmt.save_hf_export(Path(dest), self.model, datamodule.tokenizer, fmt.MLM, config=config,
                                  data=dict(getattr(datamodule, "data_info", {}) or {}),
                                  metrics=_float_metrics(metrics))


# ------------------------------------------------------------------------------------------------ builders
def build_cola(cfg: DictConfig) -> TaskParts:
    d = cfg.data
    tok = _tokenizer(cfg.model.encoder)
    train = read_cola("train", cfg.paths.data_dir)
    train = (_cap(train[0], d.get("max_train")), _cap(train[1], d.get("max_train")))
    val = {"in": read_cola("dev_in", cfg.paths.data_dir), "out": read_cola("dev_out", cfg.paths.data_dir)}
    if d.get("max_val"):
        val = {k: (_cap(x, d.max_val), _cap(y, d.max_val)) for k, (x, y) in val.items()}
    dm = TextClassificationDataModule(tok, train, val, batch_size=int(d.batch_size), max_length=int(d.max_length),
                                      num_workers=int(d.get("num_workers", 0)), seed=int(cfg.seed))
    dm.data_info = {"name": "cola", "train_sentences": len(train[0]), "sha256": corpus_fingerprint(train[0]),
                    "dev_in": len(val["in"][0]), "dev_out": len(val["out"][0])}
    module = instantiate_model(cfg.model, num_labels=2, val_names=list(val))
    return TaskParts(module=module, datamodule=dm, demo=_demo_acceptability)


def _demo_scores(scorer: str, label: str):
    """demo(path, cfg): the run's ``demo_sentences`` scored by its export (``scorer``: a class of qe.gruen.scorer)."""

    def demo(path, cfg):
        from qe.gruen import scorer as sc

        sents = list(cfg.get("demo_sentences") or [])
        if sents:
            for s, v in zip(sents, getattr(sc, scorer)(path).score(sents, progress=False)):
                print(f"{label}={v:8.3f}  {s}")

    return demo


_demo_acceptability = _demo_scores("AcceptabilityScorer", "P(acceptable)")
_demo_mlm = _demo_scores("PLLScorer", "PLL/token")


def build_sop(cfg: DictConfig) -> TaskParts:
    d = cfg.data
    tok = _tokenizer(cfg.model.encoder)
    train_docs = _cap(load_documents(to_dict(d.train), cfg.paths.data_dir), d.get("max_train"))
    val_docs = _cap(load_documents(to_dict(d.val), cfg.paths.data_dir), d.get("max_val"))
    if not train_docs or not val_docs:
        raise ValueError(f"SOP data: {len(train_docs)} training and {len(val_docs)} validation documents; need both > 0")
    train = sop_pairs(train_docs, seed=int(cfg.seed), both=bool(d.get("both_orders", True)))
    val = {"val": sop_pairs(val_docs, seed=int(cfg.seed) + 1, both=True)}
    dm = TextClassificationDataModule(tok, train, val, batch_size=int(d.batch_size), max_length=int(d.max_length),
                                      num_workers=int(d.get("num_workers", 0)), seed=int(cfg.seed),
                                      pair_truncation=str(d.get("pair_truncation", "boundary")))
    dm.data_info = {"name": "+".join(str(dict(s).get("name")) for s in d.train), "train_documents": len(train_docs),
                    "train_pairs": len(train[0]), "val_documents": len(val_docs),
                    "sha256": corpus_fingerprint([" ".join(x) for x in train_docs])}
    module = instantiate_model(cfg.model, num_labels=2, val_names=list(val))
    return TaskParts(module=module, datamodule=dm, demo=_demo_sop)


def _demo_sop(path, cfg):
    from qe.gruen.coherence import CoherenceModel

    cm = CoherenceModel(path)
    doc = ["A 12-year-old schoolboy needed to be rescued after falling down an eight-foot drain in Peterborough.",
           "Firefighters worked with police and ambulance staff to free the boy, whose leg was trapped for more than "
           "half an hour down the hole.",
           "It is believed the rubber drain cover had been kicked out of position and within hours, the accident occurred."]
    for name, d in (("original", doc), ("shuffled", [doc[1], doc[2], doc[0]])):
        print(f"SOP loss {cm.sop_loss([d], progress=False)[0]:.3f}  ({name} order, Table 11 (h)/(g))")


def build_mlm(cfg: DictConfig) -> TaskParts:
    d = cfg.data
    tok = _tokenizer(cfg.model.encoder)
    train_all = load_corpus(to_dict(d.train), cfg.paths.data_dir)
    train, held = split_holdout(train_all, float(d.get("val_fraction", 0.0)), seed=split_seed(cfg))
    val = load_corpus(to_dict(d.val), cfg.paths.data_dir) if d.get("val") else []
    val = _cap(val + held, d.get("max_val"))
    train = _cap(train, d.get("max_train"))
    if not train or not val:
        raise ValueError(f"MLM data: {len(train)} training and {len(val)} validation sentences; need both > 0")
    dm = MLMDataModule(tok, train, val, batch_size=int(d.batch_size), max_length=int(d.max_length),
                       mlm_probability=float(d.get("mlm_probability", 0.15)), num_workers=int(d.get("num_workers", 0)),
                       seed=int(cfg.seed))
    dm.data_info = {"name": "+".join(str(dict(s).get("name")) + (f"-{dict(s)['split']}" if dict(s).get("split") else "")
                                     for s in d.train),
                    "train_sentences": len(train), "val_sentences": len(val), "sha256": corpus_fingerprint(train)}
    module = instantiate_model(cfg.model)
    return TaskParts(module=module, datamodule=dm, demo=_demo_mlm)


# ------------------------------------------------------------------------------------------------ task=gruen_tune
def dev_test_split(records, dev_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """Indices of the dev and test records: a hash of (seed, dataset, MR or output) decides, so all outputs for
    one input land on the same side."""
    dev, test = [], []
    for i, r in enumerate(records):
        key = f"{seed}:{r.dataset}:{r.mr if r.mr is not None else r.output}"
        h = int(hashlib.md5(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        (dev if h < dev_fraction else test).append(i)
    return dev, test


def correlations(scores: list[float], records, idx: list[int], ratings: list[str]) -> dict[str, dict[str, float]]:
    """Spearman / Pearson / n per ``<dataset>/<rating>`` over the records ``idx``."""
    from scipy.stats import pearsonr, spearmanr

    out: dict[str, dict[str, float]] = {}
    by_ds: dict[str, list[int]] = {}
    for i in idx:
        by_ds.setdefault(records[i].dataset or "all", []).append(i)
    for ds, ii in sorted(by_ds.items()):
        x = np.array([scores[i] for i in ii], dtype=float)
        for rt in ratings:
            y = np.array([records[i].ratings.get(rt, math.nan) for i in ii], dtype=float)
            ok = np.isfinite(x) & np.isfinite(y)
            if ok.sum() < 3 or np.std(x[ok]) == 0:
                rho = r = math.nan
            else:
                rho = float(spearmanr(x[ok], y[ok]).statistic)
                r = float(pearsonr(x[ok], y[ok]).statistic)
            out[f"{ds}/{rt}"] = {"spearman": rho, "pearson": r, "n": int(ok.sum())}
    return out


def run(cfg: DictConfig) -> dict[str, Any]:
    """``task=gruen_tune``: score, correlate, report (``gruen_report.json``), log, export (kind ``gruen``)."""
    from qe.data.datasets import load_dataset
    from qe.gruen.scorer import GruenScorer, PartCache, combine

    g = cfg.gruen
    records = load_dataset(str(g.dataset), data_dir=cfg.paths.data_dir)
    if g.get("max_records"):
        records = records[: int(g.max_records)]
    params = to_dict(g.params) or {}
    models = {k: (str(v) if v not in (None, "", "none") else None) for k, v in to_dict(g.models).items()}
    scorer = GruenScorer(acceptability=models["acceptability"], mlm=models["mlm"], sop=models.get("sop"),
                         preset=str(g.preset), splitter=str(g.splitter), device=g.get("device"),
                         allow_untrained_head=bool(g.get("allow_untrained_head", False)), **params)
    raw = scorer.raw([r.output for r in records], progress=bool(g.get("progress", True)),
                     cache=PartCache(g.get("cache_dir")))
    comps = combine(raw, scorer.params)
    dev, test = dev_test_split(records, float(g.dev_fraction), int(g.split_seed))
    ratings = list(g.ratings)
    res: dict[str, Any] = {"signature": scorer.signature, "n_dev": len(dev), "n_test": len(test),
                           "params": vars(scorer.params), "models": models}
    res["dev"] = correlations(comps["gruen"], records, dev, ratings)
    tune = [v["spearman"] for k, v in res["dev"].items() if k.split("/")[1] in set(g.tune_ratings)]
    tune = [x for x in tune if math.isfinite(x)]
    metrics: dict[str, Any] = {"dev/spearman": float(np.mean(tune)) if tune else -1.0}
    if g.get("report_test", True):
        res["test"] = correlations(comps["gruen"], records, test, ratings)
        res["all"] = correlations(comps["gruen"], records, list(range(len(records))), ratings)
        for split in ("test", "all"):
            for k, v in res[split].items():
                metrics[f"{split}/{k}/spearman"] = v["spearman"]
                metrics[f"{split}/{k}/pearson"] = v["pearson"]
    res["component_means"] = {k: float(np.mean(v)) for k, v in comps.items()}
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "gruen_report.json").write_text(dumps(res, indent=2, default=float))
    print(dumps({"signature": res["signature"], "dev/spearman": metrics["dev/spearman"],
                 **({"test": res["test"]} if "test" in res else {})}, indent=1, default=float))
    log_metrics(cfg, metrics, run_dir=out_dir)
    if cfg.get("export") and g.get("write_export", True):
        dest = fmt.save_gruen_export(Path(str(cfg.export_dir)).expanduser(), models=models,
                                     params=vars(scorer.params), preset=str(g.preset), splitter=str(g.splitter),
                                     data={"name": str(g.dataset), "dev": len(dev), "test": len(test)},
                                     metrics=_float_metrics(metrics))
        metrics["export_path"] = str(dest)
    return metrics
