"""LightningModules for the trainable GRUEN parts.

* :class:`SequenceClassifierModule` — any HF encoder + a 2-way classification head. ``task=cola`` trains it
  on CoLA (acceptable = 1) and reports Matthews correlation on each validation set; ``task=sop`` trains it as
  a sentence-order head on segment pairs (0 = original order, 1 = swapped) and reports accuracy.
* :class:`SegmentPairClassifier` — the order head ``task=sop`` trains by default (``model.pooling=segments``):
  mean of the first segment's token states ⊕ mean of the second's → linear. Encoders whose [CLS] / pooler was
  never trained on pairs (the offline MiniLM, a sentence-transformers model trained with mean pooling) carry
  no order information in [CLS] — a linear probe on frozen MiniLM features separates original from swapped
  pairs at 0.49 (test) from [CLS] but 0.60 from the two segment means (``benchmarks/sop_feature_probe.py``,
  docs/results.md, GRUEN) — and a [CLS] head stayed at chance in three fine-tuning runs.
* :class:`MaskedLMModule` — fits a masked-LM head (optionally with the top encoder layers unfrozen) on any
  encoder, so that encoders shipped without a trained MLM head (the offline MiniLM) can give PLL scores.

Every constructor argument is a saved hyperparameter (plain values only, so Lightning checkpoints load with
``torch.load(weights_only=True)``).
"""
from __future__ import annotations

import math

import lightning.pytorch as pl
import torch
import torch.nn.functional as F


def _linear_warmup(optimizer, total_steps: int, warmup_ratio: float):
    warm = max(1, int(total_steps * warmup_ratio))

    def f(step):
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total_steps - step) / max(1, total_steps - warm))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, f)


def _configure(module: pl.LightningModule, params, lr, weight_decay, warmup_ratio, head=None):
    """AdamW (no decay on biases / LayerNorm) + linear warm-up and decay; ``head=(params, lr)`` gives those
    parameters their own learning rate."""
    head_ids = {id(p) for p in head[0]} if head else set()
    decay, no_decay, head_decay, head_no_decay = [], [], [], []
    for n, p in params:
        if not p.requires_grad:
            continue
        nd = p.ndim < 2 or "LayerNorm" in n or n.endswith("bias")
        if id(p) in head_ids:
            (head_no_decay if nd else head_decay).append(p)
        else:
            (no_decay if nd else decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    if head:
        groups += [{"params": head_decay, "weight_decay": weight_decay, "lr": head[1]},
                   {"params": head_no_decay, "weight_decay": 0.0, "lr": head[1]}]
    opt = torch.optim.AdamW([g for g in groups if g["params"]], lr=lr)
    trainer = module._trainer  # None when not attached (module.trainer raises then)
    total = int(trainer.estimated_stepping_batches) if trainer is not None else 1000
    sched = _linear_warmup(opt, max(1, total), warmup_ratio)
    return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def segment_means(hidden: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
    """Mean hidden state of the first segment's tokens ⊕ of the second's (token type 0 vs != 0; padding left out)."""
    att = attention_mask.unsqueeze(-1).to(hidden.dtype)
    second = (token_type_ids != 0).unsqueeze(-1).to(hidden.dtype) * att
    first = att - second
    return torch.cat([(hidden * first).sum(1) / first.sum(1).clamp_min(1.0),
                      (hidden * second).sum(1) / second.sum(1).clamp_min(1.0)], -1)


PAIR_HEAD_CONFIG = "pair_head.json"
PAIR_HEAD_WEIGHTS = "pair_head.safetensors"


class SegmentPairClassifier(torch.nn.Module):
    """Encoder + a classification head on the two segments' mean token states (a sequence-pair classifier).

    Segments are told apart by token type ids (``0`` = first segment, ``1`` = second, as BERT-style tokenizers
    emit them; special tokens count with the segment they are typed with). Returns an HF
    ``SequenceClassifierOutput`` so callers use ``.logits`` as with ``AutoModelForSequenceClassification``.
    Saved as an HF encoder folder plus ``pair_head.json`` / ``pair_head.safetensors`` (no pickle).
    """

    def __init__(self, encoder, num_labels: int = 2, dropout: float = 0.1):
        super().__init__()
        self.encoder = encoder
        hidden = int(encoder.config.hidden_size)
        self.num_labels, self.dropout_p = int(num_labels), float(dropout)
        self.dropout = torch.nn.Dropout(self.dropout_p)
        self.classifier = torch.nn.Linear(2 * hidden, self.num_labels)
        if int(getattr(encoder.config, "type_vocab_size", 2) or 0) < 2:
            raise ValueError(f"{encoder.config.model_type}: segment pooling needs two token types (type_vocab_size"
                             f" >= 2); use model.pooling=cls for this encoder")

    @property
    def base_model(self):
        return self.encoder

    @property
    def config(self):
        return self.encoder.config

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, **kw):
        from transformers.modeling_outputs import SequenceClassifierOutput

        if token_type_ids is None:
            raise ValueError("SegmentPairClassifier needs token_type_ids (which tokens belong to which segment)")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        h = self.encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
        pooled = segment_means(h, attention_mask, token_type_ids)
        return SequenceClassifierOutput(logits=self.classifier(self.dropout(pooled)))

    def save_pretrained(self, path, safe_serialization: bool = True):
        import json
        from pathlib import Path

        from safetensors.torch import save_file

        path = Path(path)
        self.encoder.save_pretrained(path, safe_serialization=True)
        (path / PAIR_HEAD_CONFIG).write_text(json.dumps({"pooling": "segments", "num_labels": self.num_labels,
                                                          "dropout": self.dropout_p}, indent=2))
        save_file({k: v.detach().contiguous() for k, v in self.classifier.state_dict().items()}, str(path / PAIR_HEAD_WEIGHTS))

    @classmethod
    def is_saved_in(cls, path) -> bool:
        from pathlib import Path

        return (Path(path) / PAIR_HEAD_CONFIG).is_file()

    @classmethod
    def from_pretrained(cls, path):
        import json
        from pathlib import Path

        from safetensors.torch import load_file
        from transformers import AutoModel

        path = Path(path)
        meta = json.loads((path / PAIR_HEAD_CONFIG).read_text())
        if meta.get("pooling") != "segments":
            raise ValueError(f"{path / PAIR_HEAD_CONFIG}: unknown pooling {meta.get('pooling')!r}")
        model = cls(AutoModel.from_pretrained(path), num_labels=int(meta["num_labels"]), dropout=float(meta["dropout"]))
        model.classifier.load_state_dict(load_file(str(path / PAIR_HEAD_WEIGHTS)))
        return model


class SequenceClassifierModule(pl.LightningModule):
    """HF encoder + 2-way head. ``pooling="cls"``: ``AutoModelForSequenceClassification`` (its own [CLS] /
    pooler head; CoLA, and SOP on encoders pre-trained with a pair objective); ``pooling="segments"``:
    :class:`SegmentPairClassifier` (sentence pairs only)."""

    def __init__(self, encoder: str = "bert-base-cased", num_labels: int = 2, lr: float = 2e-5,
                 weight_decay: float = 0.01, warmup_ratio: float = 0.1, metric: str = "mcc",
                 val_names: tuple[str, ...] | list[str] = ("in", "out"), dropout: float | None = None,
                 train_layers: int = -1, pooling: str = "cls", head_lr: float | None = None):
        super().__init__()
        self.save_hyperparameters()
        from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification

        from qe.offline import encoder_path

        path = encoder_path(encoder)
        cfg = AutoConfig.from_pretrained(path, num_labels=num_labels)
        if dropout is not None and hasattr(cfg, "hidden_dropout_prob"):
            cfg.hidden_dropout_prob = dropout
        if pooling == "cls":
            self.model = AutoModelForSequenceClassification.from_pretrained(path, config=cfg)
        elif pooling == "segments":
            head_dropout = dropout if dropout is not None else float(getattr(cfg, "hidden_dropout_prob", 0.1))
            self.model = SegmentPairClassifier(AutoModel.from_pretrained(path, config=cfg), num_labels, head_dropout)
        else:
            raise ValueError(f"model.pooling={pooling!r}: use 'cls' or 'segments'")
        self.model.train()  # from_pretrained returns eval mode; Lightning keeps the mode it finds (dropout on)
        if train_layers >= 0:  # fine-tune only the top `train_layers` layers (+ pooler and head): cheaper on CPU
            layers = _encoder_layers(self.model)
            keep = {id(p) for layer in (list(layers)[-train_layers:] if train_layers and layers is not None else [])
                    for p in layer.parameters()}
            base = self.model.base_model
            for n, p in base.named_parameters():
                p.requires_grad = id(p) in keep or n.startswith("pooler")
        if pooling == "segments":  # the [CLS] pooler is not used by this head: keep it out of the optimiser (and DDP)
            for n, p in self.model.base_model.named_parameters():
                if n.startswith("pooler"):
                    p.requires_grad = False
        self.val_names = list(val_names)
        self._preds: dict[int, list[torch.Tensor]] = {}
        self._labels: dict[int, list[torch.Tensor]] = {}

    def forward(self, **batch):
        return self.model(**{k: v for k, v in batch.items() if k != "labels"}).logits

    def training_step(self, batch, batch_idx):
        logits = self(**batch)
        loss = F.cross_entropy(logits, batch["labels"])
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch["labels"]))
        return loss

    def validation_step(self, batch, batch_idx, dataloader_idx: int = 0):
        logits = self(**batch)
        loss = F.cross_entropy(logits, batch["labels"], reduction="sum")
        self._preds.setdefault(dataloader_idx, []).append(logits.argmax(-1).cpu())
        self._labels.setdefault(dataloader_idx, []).append(batch["labels"].cpu())
        self._losses = getattr(self, "_losses", {})
        self._losses[dataloader_idx] = self._losses.get(dataloader_idx, 0.0) + float(loss)

    def on_validation_epoch_end(self):
        from sklearn.metrics import accuracy_score, matthews_corrcoef

        out = {}
        for i, name in enumerate(self.val_names):
            if i not in self._preds:
                continue
            p = torch.cat(self._preds[i]).numpy()
            y = torch.cat(self._labels[i]).numpy()
            out[f"val/acc_{name}"] = float(accuracy_score(y, p))
            out[f"val/mcc_{name}"] = float(matthews_corrcoef(y, p))
            out[f"val/loss_{name}"] = self._losses.get(i, 0.0) / max(1, len(y))
        if out:
            first = self.val_names[0]
            out["val/acc"] = out.get(f"val/acc_{first}", 0.0)
            out["val/mcc"] = out.get(f"val/mcc_{first}", 0.0)
            self.log_dict(out, prog_bar=True, add_dataloader_idx=False)
        self._preds, self._labels, self._losses = {}, {}, {}

    def configure_optimizers(self):
        h = self.hparams
        head_lr = h.get("head_lr")
        if not head_lr:
            return _configure(self, self.named_parameters(), h.lr, h.weight_decay, h.warmup_ratio)
        # a freshly initialised head may learn faster than the pretrained encoder it sits on
        enc = {id(p) for p in self.model.base_model.parameters()}
        named = [(n, p) for n, p in self.named_parameters() if p.requires_grad]
        return _configure(self, named, h.lr, h.weight_decay, h.warmup_ratio,
                          head=([p for _, p in named if id(p) not in enc], float(head_lr)))


def mlm_parts(model):
    """(encoder, head) of an HF masked LM so that logits can be computed at chosen positions only.

    Known layouts: BERT-like (``cls``), RoBERTa/XLM-R/DeBERTa (``lm_head``), ALBERT (``predictions``),
    DistilBERT (``vocab_transform`` + ``vocab_layer_norm`` + ``vocab_projector``). Returns ``(None, None)``
    for others; callers then fall back to the full-sequence logits (same numbers, more compute).
    """
    base = getattr(model, "base_model", None)
    for attr in ("cls", "lm_head", "predictions"):
        head = getattr(model, attr, None)
        if head is not None and base is not None:
            return base, head
    if hasattr(model, "vocab_projector") and base is not None:
        act = getattr(model, "activation", None)

        def head(h, m=model, act=act):
            h = m.vocab_transform(h)
            h = act(h) if act is not None else F.gelu(h)
            return m.vocab_projector(m.vocab_layer_norm(h))

        return base, head
    return None, None


class MaskedLMModule(pl.LightningModule):
    """Fit an MLM head on an encoder. ``train_layers`` top transformer layers are unfrozen (0 = head only);
    the input embeddings (tied to the output projection) stay frozen, so the vocabulary geometry is kept."""

    def __init__(self, encoder: str = "minilm", lr: float = 1e-3, encoder_lr: float = 5e-5, weight_decay: float = 0.01,
                 warmup_ratio: float = 0.06, train_layers: int = 2):
        super().__init__()
        self.save_hyperparameters()
        from transformers import AutoModelForMaskedLM

        from qe.offline import encoder_path

        self.model = AutoModelForMaskedLM.from_pretrained(encoder_path(encoder))
        self.model.train()
        self.encoder, self.head = mlm_parts(self.model)
        for p in self.model.parameters():
            p.requires_grad = False
        head_params = self.head.parameters() if isinstance(self.head, torch.nn.Module) else []
        for p in head_params:
            p.requires_grad = True
        emb = self.model.get_input_embeddings().weight
        emb.requires_grad = False  # tied decoder weight stays the pretrained embedding matrix
        self._encoder_params = []
        layers = _encoder_layers(self.model)
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
            hidden = self.encoder(**inputs).last_hidden_state[sel]
            logits = self.head(hidden)
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
        head = [(n, p) for n, p in self.named_parameters() if p.requires_grad and id(p) not in enc_ids]
        opt = torch.optim.AdamW([
            {"params": [p for _, p in head], "lr": h.lr, "weight_decay": h.weight_decay},
            {"params": self._encoder_params, "lr": h.encoder_lr, "weight_decay": h.weight_decay},
        ])
        total = int(self._trainer.estimated_stepping_batches) if self._trainer is not None else 1000
        return {"optimizer": opt, "lr_scheduler": {"scheduler": _linear_warmup(opt, max(1, total), h.warmup_ratio),
                                                   "interval": "step"}}


def _encoder_layers(model):
    base = model.base_model
    for path in ("encoder.layer", "transformer.layer", "encoder.albert_layer_groups", "layers"):
        obj = base
        try:
            for a in path.split("."):
                obj = getattr(obj, a)
            return obj
        except AttributeError:
            continue
    return None
