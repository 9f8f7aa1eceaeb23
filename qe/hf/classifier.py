"""Fine-tuning a Hugging Face encoder with a sequence-classification head (Lightning): the module GRUEN's
``task=cola`` / ``task=sop`` and the content aligner (``task=content_aligner``) train, its optimiser (AdamW, no decay
on biases / LayerNorm, linear warm-up and decay) and the helpers their builders share.

:class:`SequenceClassifierModule` trains and validates; it writes no export: each family subclasses it with its own
``export`` (:class:`qe.gruen.task.CoLAModule` / :class:`~qe.gruen.task.SOPModule` through :mod:`qe.gruen.format`,
:class:`qe.content.task.ContentAlignerModule` through :mod:`qe.content.aligner`). Its signature defaults are those of
``conf/model/hf_encoder.yaml``.

Moved here from :mod:`qe.gruen.task` (which still exports ``SequenceClassifierModule``, with GRUEN's export, and the
old private names); the scorers never import this module (it loads Lightning).
"""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from qe.core.config import conf_defaults
from qe.hf.model import build_classifier, encoder_layers
from qe.training import QEModule

#: the defaults of the model group hf_encoder (task=cola's model section adds only its _target_)
HF_ENCODER = conf_defaults("model/hf_encoder")


# ------------------------------------------------------------------------------------------------ optimisation
def linear_warmup(optimizer, total_steps: int, warmup_ratio: float):
    warm = max(1, int(total_steps * warmup_ratio))

    def f(step):
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total_steps - step) / max(1, total_steps - warm))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, f)


def warmup_schedule(module: QEModule, opt) -> dict:
    """``configure_optimizers``' answer: ``opt`` with :func:`linear_warmup` over the trainer's estimated steps
    (1000 when the module is not attached to a trainer), stepped every batch; ``module.hparams.warmup_ratio``."""
    trainer = module._trainer  # None when not attached (module.trainer raises then)
    total = int(trainer.estimated_stepping_batches) if trainer is not None else 1000
    sched = linear_warmup(opt, max(1, total), module.hparams.warmup_ratio)
    return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def configure_adamw(module: QEModule, params, lr, weight_decay, head=None):
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
    return warmup_schedule(module, torch.optim.AdamW([g for g in groups if g["params"]], lr=lr))


# ------------------------------------------------------------------------------------------------ builders' helpers
def float_metrics(metrics: dict | None) -> dict:
    """The numeric entries of a metrics dict as floats (booleans and everything else left out): an export's
    ``metrics``."""
    return {k: float(v) for k, v in (metrics or {}).items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def tokenizer_for(encoder: str):
    """The tokenizer of an encoder given by Hub name, local path or offline alias (``minilm``)."""
    from transformers import AutoTokenizer

    from qe.core.offline import encoder_path

    return AutoTokenizer.from_pretrained(encoder_path(encoder))


# ------------------------------------------------------------------------------------------------ the module
class SequenceClassifierModule(QEModule):
    """HF encoder + ``num_labels``-way head. ``pooling="cls"``: ``AutoModelForSequenceClassification`` (its own
    [CLS] / pooler head; CoLA, the content aligner, and SOP on encoders pre-trained with a pair objective);
    ``pooling="segments"``: :class:`~qe.hf.model.SegmentPairClassifier` (sentence pairs only). Reports accuracy,
    Matthews correlation and loss on each validation set (``val/acc_<name>``, ...; ``val/acc`` / ``val/mcc`` for the
    first). Subclasses set :attr:`export_kind` and write the export (:meth:`export`)."""

    def __init__(self, encoder: str = HF_ENCODER["encoder"], num_labels: int = 2, lr: float = HF_ENCODER["lr"],
                 weight_decay: float = HF_ENCODER["weight_decay"], warmup_ratio: float = HF_ENCODER["warmup_ratio"],
                 val_names: Sequence[str] = ("in", "out"), dropout: float | None = None,
                 train_layers: int = HF_ENCODER["train_layers"], pooling: str = "cls", head_lr: float | None = None):
        super().__init__()
        self.save_hyperparameters()
        self.model = build_classifier(encoder, num_labels, pooling, dropout)
        self.model.train()  # from_pretrained returns eval mode; Lightning keeps the mode it finds (dropout on)
        if train_layers >= 0:  # fine-tune only the top `train_layers` layers (+ pooler and head): cheaper on CPU
            layers = encoder_layers(self.model)
            keep = {id(p) for layer in (list(layers)[-train_layers:] if train_layers and layers is not None else [])
                    for p in layer.parameters()}
            for n, p in self.model.base_model.named_parameters():
                p.requires_grad = id(p) in keep or n.startswith("pooler")
        if pooling == "segments":  # the [CLS] pooler is not used by this head: keep it out of the optimiser (and DDP)
            for n, p in self.model.base_model.named_parameters():
                if n.startswith("pooler"):
                    p.requires_grad = False
        self.val_names = list(val_names)
        self._preds: dict[int, list[torch.Tensor]] = {}
        self._labels: dict[int, list[torch.Tensor]] = {}
        self._losses: dict[int, float] = {}

    def forward(self, **batch):
        return self.model(**{k: v for k, v in batch.items() if k != "labels"}).logits

    def training_step(self, batch, batch_idx):
        logits = self(**batch)
        loss = F.cross_entropy(logits.float(), batch["labels"])
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch["labels"]))
        return loss

    def validation_step(self, batch, batch_idx, dataloader_idx: int = 0):
        logits = self(**batch).float()
        loss = F.cross_entropy(logits, batch["labels"], reduction="sum")
        self._preds.setdefault(dataloader_idx, []).append(logits.argmax(-1).cpu())
        self._labels.setdefault(dataloader_idx, []).append(batch["labels"].cpu())
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
        if not h.get("head_lr"):
            return configure_adamw(self, self.named_parameters(), h.lr, h.weight_decay)
        # a freshly initialised head may learn faster than the pretrained encoder it sits on
        enc = {id(p) for p in self.model.base_model.parameters()}
        named = [(n, p) for n, p in self.named_parameters() if p.requires_grad]
        return configure_adamw(self, named, h.lr, h.weight_decay,
                               head=([p for _, p in named if id(p) not in enc], float(h.head_lr)))


__all__ = ["SequenceClassifierModule", "linear_warmup", "warmup_schedule", "configure_adamw", "float_metrics",
           "tokenizer_for", "HF_ENCODER"]
