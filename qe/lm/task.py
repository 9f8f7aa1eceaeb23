"""``task=lm``: the training side of the LM family (Lightning; scorers never import this module).

* :class:`LanguageModelModule` — the LightningModule around :class:`~qe.lm.model.LSTMLM` (Adam, token-level
  cross-entropy, perplexity); built from ``conf/model/lstm_lm*.yaml`` (``_target_`` + ``_partial_``: the task
  supplies ``vocab_size`` and ``pad_id`` from the tokenizer); writes the ``slor`` export through :mod:`qe.lm.format`;
* :func:`build` — tokenizer, data and module from the config (``task.builder``); under ``trainer=gpu`` (the config's
  ``lm_gpu`` node) token-budget batches, loader workers and a learning rate scaled for the larger batch
  (:func:`gpu_batching`, :func:`scaled_lr`);
* :class:`TokenThroughput` — training tokens/s; :func:`demo` — prints a few scores after the run.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from omegaconf import DictConfig
from torchmetrics import SumMetric

from qe.core.config import to_dict
from qe.data.corpora import corpus_fingerprint, load_corpus, split_holdout, split_seed
from qe.lm import format as lm_format
from qe.lm.data import LMDataModule
from qe.lm.format import EXPORT_KIND, save as save_lm_export, unigram_logprobs  # noqa: F401  (old names, re-exported)
from qe.lm.model import D, LSTMLM
from qe.core.tokenization import Tokenizer, load_tokenizer, train_tokenizer
from qe.training import QEModule, TaskParts, instantiate_model, plain_config

log = logging.getLogger(__name__)


class LanguageModelModule(QEModule):
    """LSTM LM trained with token-level cross-entropy; validation/test perplexity per token (``</s>`` included)."""

    export_kind = EXPORT_KIND

    def __init__(
        self,
        vocab_size: int,
        pad_id: int = 0,
        embedding_dim: int = D["embedding_dim"],
        hidden_size: int = D["hidden_size"],
        num_layers: int = D["num_layers"],
        dropout: float = D["dropout"],
        tie_weights: bool = D["tie_weights"],
        lr: float = D["lr"],
        weight_decay: float = D["weight_decay"],
        output_layer: str = D["output_layer"],
        adaptive_cutoffs: list[int] | None = D["adaptive_cutoffs"],
        adaptive_div_value: float = D["adaptive_div_value"],
    ):
        super().__init__()
        self.save_hyperparameters()
        self.model = LSTMLM(**self.model_config())
        self.val_nll, self.val_tokens = SumMetric(), SumMetric()
        self.test_nll, self.test_tokens = SumMetric(), SumMetric()

    def model_config(self) -> dict:
        """The plain ``LSTMLM`` keyword arguments (what the export's manifest stores)."""
        kw = {k: self.hparams[k] for k in lm_format.MODEL_ARGS if k in self.hparams}
        if kw.get("adaptive_cutoffs") is not None:
            kw["adaptive_cutoffs"] = [int(c) for c in kw["adaptive_cutoffs"]]  # a ListConfig from Hydra -> plain
        return kw

    def training_step(self, batch, batch_idx):
        nll, n = self.model.loss(batch["inp"], batch["tgt"])
        loss = nll / n.clamp(min=1)
        self.log("train/loss", loss, prog_bar=True, batch_size=int(n))
        return loss

    def _eval_step(self, batch, nll_metric, tok_metric):
        nll, n = self.model.loss(batch["inp"], batch["tgt"])
        nll_metric.update(nll.detach().double())
        tok_metric.update(n.double())

    def validation_step(self, batch, batch_idx):
        self._eval_step(batch, self.val_nll, self.val_tokens)

    def on_validation_epoch_end(self):
        loss = self.val_nll.compute() / self.val_tokens.compute().clamp(min=1)
        self.log_dict({"val/loss": loss.float(), "val/ppl": torch.exp(loss).float()}, prog_bar=True, sync_dist=False)
        self.val_nll.reset()
        self.val_tokens.reset()

    def test_step(self, batch, batch_idx):
        self._eval_step(batch, self.test_nll, self.test_tokens)

    def on_test_epoch_end(self):
        loss = self.test_nll.compute() / self.test_tokens.compute().clamp(min=1)
        self.log_dict({"test/loss": loss.float(), "test/ppl": torch.exp(loss).float(),
                       "test/tokens": self.test_tokens.compute().float()})
        self.test_nll.reset()
        self.test_tokens.reset()

    def configure_optimizers(self):
        # plain Adam with L2 weight decay (Kann et al.), not the base class's AdamW
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)

    def export(self, dest: str | Path, *, datamodule: LMDataModule | None = None, metrics: dict[str, Any] | None = None,
               cfg: DictConfig | None = None) -> Path:
        """Write the ``slor`` export: weights, tokenizer, and the unigram table counted on the training split."""
        if datamodule is None:
            raise ValueError("the LM export needs the datamodule (tokenizer and training corpus for the unigram table)")
        datamodule.setup("fit")
        tok = datamodule.tokenizer
        logp, uni_info = unigram_logprobs(datamodule.data["train"].ids, tok.vocab_size,
                                          (tok.pad_id, tok.bos_id, tok.eos_id))
        keep = {k: v for k, v in (metrics or {}).items() if isinstance(v, (int, float))}
        extra = {"unigram": uni_info, "train": plain_config(cfg) if cfg is not None else {}}
        return lm_format.save(dest, self.model, tok, logp, model_config=self.model_config(), extra_config=extra,
                              data=datamodule.data_info(), metrics=keep)


class TokenThroughput(pl.Callback):
    """Logs training tokens/s (target tokens, all ranks together) per epoch, excluding validation time."""

    def __init__(self):
        self._tokens = 0
        self._time = 0.0
        self._t0 = None

    def on_train_epoch_start(self, trainer, pl_module):
        self._tokens, self._time = 0, 0.0

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self._t0 = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if torch.cuda.is_available() and pl_module.device.type == "cuda":
            torch.cuda.synchronize()
        self._time += time.perf_counter() - (self._t0 or time.perf_counter())
        self._tokens += int(batch["ntokens"])

    def on_train_epoch_end(self, trainer, pl_module):
        if self._time > 0:
            tps = self._tokens * trainer.world_size / self._time
            pl_module.log("train/tokens_per_sec", float(tps), sync_dist=False, rank_zero_only=True)
            self.last_tokens_per_sec = tps


def _cached_tokenizer(cfg: DictConfig, sentences: list[str]) -> Tokenizer:
    """Rank 0 trains the tokenizer before DDP workers start; workers (same Hydra run dir) load it."""
    tok_cfg = to_dict(cfg.tokenizer)
    key = corpus_fingerprint(sentences)[:16] + "-" + hashlib.sha256(json.dumps(tok_cfg, sort_keys=True).encode()).hexdigest()[:12]
    cache = Path(cfg.paths.output_dir) / "tokenizer" / key
    if (cache / "tokenizer.json").is_file():
        tok = load_tokenizer(cache)
        _warn_shortfall(tok)
        return tok
    tok = train_tokenizer(tok_cfg, sentences)
    _warn_shortfall(tok)
    if int(os.environ.get("LOCAL_RANK", "0")) == 0:
        tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        tok.save(tmp)
        try:
            os.replace(tmp, cache)
        except OSError:
            pass
    return tok


def _warn_shortfall(tok: Tokenizer) -> None:
    """A SentencePiece vocabulary smaller than ``tokenizer.vocab_size`` asked for is said (once per run, on rank 0);
    the export's ``config.tokenizer`` records both numbers (``vocab_size``, ``vocab_size_requested``)."""
    msg = getattr(tok, "shortfall", lambda: None)()
    if msg and int(os.environ.get("LOCAL_RANK", "0")) == 0:
        log.warning(msg)


def target_counts(dm: LMDataModule) -> torch.Tensor:
    """How often each token id is a training target (``</s>`` once per sentence); sets the datamodule up."""
    dm.setup("fit")
    tok = dm.tokenizer
    ids = dm.data["train"].ids
    flat = np.concatenate(ids) if len(ids) else np.zeros(0, dtype=np.int64)
    counts = np.bincount(flat, minlength=tok.vocab_size).astype(np.float64)
    counts[tok.eos_id] += len(ids)
    return torch.from_numpy(counts)


def _source_name(s) -> str:
    s = dict(s)
    return s.get("name", "?") + (f"-{s['split']}" if s.get("split") else "") + (f":{s['path']}" if s.get("path") else "")


def scaled_lr(lr: float, batch: float, ref: float, rule: str = "sqrt", max_scale: float = 4.0) -> tuple[float, float]:
    """The learning rate for ``batch`` sentences per optimizer step when ``lr`` was chosen for ``ref``; returns
    ``(lr, factor)``.

    ``sqrt``: ``lr * sqrt(batch / ref)``, the square-root rule for Adam (the noise of a gradient mean falls with the
    square root of the batch, and Adam's update is normalised by the gradient's scale, so the rate that keeps the
    update noise of the smaller batch grows with the square root, not linearly: Malladi et al. 2022, "On the SDEs and
    scaling rules for adaptive gradient algorithms"). ``linear``: ``lr * batch / ref`` (the SGD rule). ``none``:
    unchanged. The factor is capped at ``max_scale`` (an LSTM with Adam diverges well before the rule stops holding;
    4 = the sqrt rule up to 16 x the reference batch); batches smaller than ``ref`` scale down the same way.
    """
    if rule in (None, "none") or batch <= 0 or ref <= 0:
        return float(lr), 1.0
    if rule == "sqrt":
        f = math.sqrt(batch / ref)
    elif rule == "linear":
        f = batch / ref
    else:
        raise ValueError(f"lm_gpu.lr_scaling={rule!r}: choose sqrt, linear or none")
    f = min(f, float(max_scale))
    return float(lr) * f, f


def _step_replicas(tcfg) -> int:
    """Batches that make one optimizer step: devices x nodes x gradient accumulation (``devices: auto`` / -1 on
    a CUDA machine: every visible GPU)."""
    dev = tcfg.get("devices", 1)
    if isinstance(dev, str) and dev.strip().isdigit():
        dev = int(dev)
    if isinstance(dev, int) and dev > 0:
        n = dev
    elif dev is not None and not isinstance(dev, (int, str)):  # a list of device ids
        n = len(list(dev))
    else:
        n = torch.cuda.device_count() if str(tcfg.get("accelerator", "auto")) in ("auto", "gpu", "cuda") else 1
    return max(1, n) * int(tcfg.get("num_nodes", 1) or 1) * int(tcfg.get("accumulate_grad_batches", 1) or 1)


def gpu_batching(cfg: DictConfig, dm: LMDataModule, base_lr: float) -> tuple[float, dict[str, Any]]:
    """``lm_gpu`` (set by ``trainer=gpu``): the learning rate for the token-budget batches of ``dm`` and a record
    of the rule (logged, and stored in the export's training config through the config itself).

    The reference is ``lm_gpu.lr_ref_batch`` sentences, or ``data.batch_size`` when that is null: the model's ``lr``
    is the one chosen for the configured sentence batches (128 for the Brown / WikiText-2 / mixed data the zoo's LMs
    use). The batch is the mean number of sentences per optimizer step under the budget (all devices together).
    """
    g = cfg.lm_gpu
    stats = dm.train_batch_stats()
    replicas = _step_replicas(cfg.trainer)
    step_sentences = stats["sentences_per_batch"] * replicas
    ref = float(g.get("lr_ref_batch") or cfg.data.batch_size)
    lr, factor = scaled_lr(base_lr, step_sentences, ref, str(g.get("lr_scaling", "sqrt")),
                           float(g.get("lr_max_scale", 4.0)))
    info = {"max_tokens": dm.max_tokens, "batches_per_epoch": stats["batches"],
            "sentences_per_batch": round(stats["sentences_per_batch"], 1),
            "padded_tokens_per_batch": round(stats["padded_tokens_per_batch"]), "replicas": replicas,
            "ref_batch": ref, "lr_scaling": str(g.get("lr_scaling", "sqrt")), "lr_factor": round(factor, 4),
            "base_lr": float(base_lr), "lr": lr, "num_workers": dm.num_workers}
    log.info("lm_gpu: batches of at most %d tokens (%.0f sentences on average, %d per epoch, x%d per step); "
             "lr %.3g -> %.3g (%s rule from %g sentences, factor %.2f)", dm.max_tokens, stats["sentences_per_batch"],
             stats["batches"], replicas, base_lr, lr, info["lr_scaling"], ref, factor)
    return lr, info


def build(cfg: DictConfig) -> TaskParts:
    d = cfg.data
    train_all = load_corpus(to_dict(d.train), cfg.paths.data_dir)
    train, held = split_holdout(train_all, float(d.get("val_fraction", 0.0)), seed=split_seed(cfg))
    val = load_corpus(to_dict(d.val), cfg.paths.data_dir) if d.get("val") else []
    val = val + held
    test = load_corpus(to_dict(d.test), cfg.paths.data_dir) if d.get("test") else []
    if not train or not val:
        raise ValueError(f"LM data: {len(train)} training and {len(val)} validation sentences; need both > 0")
    tokenizer = _cached_tokenizer(cfg, train)
    # trainer=gpu adds the lm_gpu node: token-budget batches, loader workers, the scaled learning rate
    # (data.max_tokens, when set, is the budget with or without it)
    g = cfg.get("lm_gpu") or {}
    max_tokens = d.get("max_tokens") or g.get("max_tokens")
    workers = max(int(d.get("num_workers", 0)), int(g.get("num_workers", 0) or 0))
    dm = LMDataModule(tokenizer, train, val, test, batch_size=int(d.batch_size),
                      bucket_batches=int(d.get("bucket_batches", 50)), max_length=d.get("max_length"),
                      num_workers=workers, seed=int(cfg.seed), name="+".join(_source_name(s) for s in d.train),
                      max_tokens=max_tokens)
    supplied: dict[str, Any] = {}
    if g and max_tokens and "lr" in cfg.model:
        supplied["lr"], _ = gpu_batching(cfg, dm, float(cfg.model.lr))
    module = instantiate_model(cfg.model, vocab_size=tokenizer.vocab_size, pad_id=tokenizer.pad_id, **supplied)
    if module.model.output_layer == "adaptive":
        # adaptive softmax: head = the most frequent targets of the training split (the tokenizer's ids stay)
        module.model.set_output_order(target_counts(dm))
    return TaskParts(module=module, datamodule=dm, callbacks=[TokenThroughput()], demo=demo)


def demo(export_path: Path, cfg: DictConfig) -> None:
    import qe

    sents = list(cfg.get("demo_sentences") or [])
    if not sents:
        return
    scorer = qe.load(export_path)
    comps = scorer.score_components(sents, progress=False)
    print(f"\n{scorer.signature}")
    print(f"{'SLOR':>8} {'NCE':>8} {'PPL':>10}  sentence")
    for i, s in enumerate(sents):
        print(f"{comps['slor'][i]:8.3f} {comps['nce'][i]:8.3f} {comps['ppl'][i]:10.2f}  {s}")
