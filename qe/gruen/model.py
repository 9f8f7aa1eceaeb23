"""The GRUEN family's networks (plain ``torch.nn``; no Lightning): what ``task.py`` trains and the scorers load.

* :class:`SegmentPairClassifier` — the order head ``task=sop`` trains by default (``model.pooling=segments``):
  mean of the first segment's token states ⊕ mean of the second's → linear. Encoders whose [CLS] / pooler was
  never trained on pairs (the offline MiniLM, a sentence-transformers model trained with mean pooling) carry
  no order information in [CLS] — a linear probe on frozen MiniLM features separates original from swapped
  pairs at 0.49 (test) from [CLS] but 0.60 from the two segment means (``benchmarks/sop_feature_probe.py``,
  docs/results/gruen.md) — and a [CLS] head stayed at chance in three fine-tuning runs.
* :func:`build_classifier` — an HF encoder with a 2-way head: ``pooling="cls"`` (the encoder's own
  ``AutoModelForSequenceClassification`` head; CoLA) or ``"segments"`` (:class:`SegmentPairClassifier`).
* :func:`mlm_parts` — (encoder, head) of a masked LM, so that logits are computed at the masked positions only.

The first two and :func:`encoder_layers` live in :mod:`qe.hf.model` (shared with the content aligner's training)
and are exported here under their old names.
"""
from __future__ import annotations

import torch.nn.functional as F

from qe.hf.model import (PAIR_HEAD_CONFIG, PAIR_HEAD_WEIGHTS, SegmentPairClassifier, build_classifier,
                         encoder_layers, segment_means)


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


__all__ = ["segment_means", "SegmentPairClassifier", "PAIR_HEAD_CONFIG", "PAIR_HEAD_WEIGHTS", "build_classifier",
           "encoder_layers", "mlm_parts"]
