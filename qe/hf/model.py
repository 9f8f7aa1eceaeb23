"""The networks of the shared Hugging Face classifier (plain ``torch.nn``; no Lightning): what
:class:`qe.hf.classifier.SequenceClassifierModule` trains and the scorers load.

* :class:`SegmentPairClassifier` — a sequence-pair head on the mean token states of the two segments (GRUEN's
  ``task=sop`` default, ``model.pooling=segments``; why: :mod:`qe.gruen.model`).
* :func:`build_classifier` — an HF encoder with a fresh ``num_labels``-way head: ``pooling="cls"`` (the encoder's own
  ``AutoModelForSequenceClassification`` head; CoLA, the content aligner) or ``"segments"``
  (:class:`SegmentPairClassifier`).
* :func:`encoder_layers` — the stack of transformer layers of an HF model (to fine-tune only the top ones).

Moved here from :mod:`qe.gruen.model`, which still exports every name.
"""
from __future__ import annotations

import torch


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
        from pathlib import Path

        from safetensors.torch import save_file

        from qe.core.jsonio import dumps

        path = Path(path)
        self.encoder.save_pretrained(path, safe_serialization=True)
        (path / PAIR_HEAD_CONFIG).write_text(dumps({"pooling": "segments", "num_labels": self.num_labels,
                                                     "dropout": self.dropout_p}, indent=2, ensure_ascii=True))
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


def build_classifier(encoder: str, num_labels: int = 2, pooling: str = "cls", dropout: float | None = None):
    """An HF encoder (name, path or the ``minilm`` alias) with a fresh ``num_labels``-way head."""
    from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification

    from qe.core.offline import encoder_path

    path = encoder_path(encoder)
    cfg = AutoConfig.from_pretrained(path, num_labels=num_labels)
    if dropout is not None and hasattr(cfg, "hidden_dropout_prob"):
        cfg.hidden_dropout_prob = dropout
    if pooling == "cls":
        return AutoModelForSequenceClassification.from_pretrained(path, config=cfg)
    if pooling == "segments":
        head_dropout = dropout if dropout is not None else float(getattr(cfg, "hidden_dropout_prob", 0.1))
        return SegmentPairClassifier(AutoModel.from_pretrained(path, config=cfg), num_labels, head_dropout)
    raise ValueError(f"model.pooling={pooling!r}: use 'cls' or 'segments'")



def encoder_layers(model):
    """The stack of transformer layers of an HF model (None for an unknown layout)."""
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


__all__ = ["segment_means", "SegmentPairClassifier", "PAIR_HEAD_CONFIG", "PAIR_HEAD_WEIGHTS", "build_classifier",
           "encoder_layers"]
