"""Grammatical acceptability from a sequence classifier fine-tuned on CoLA (``task=cola`` export, kind
``acceptability``, or any HF CoLA classifier by name/path with ``positive_label``).

Per sentence: P(acceptable) = softmax(logits)[positive_label] (default), or the raw logit of the acceptable
class as the reference code uses (the second array :meth:`AcceptabilityModel.scores` returns). Sentences are
length-sorted and batched under ``max_tokens`` padded tokens per pass. A sentence longer than the model
window is split into consecutive window-sized chunks; its probability (and logit) is the chunk values
averaged with chunk lengths as weights.

A plain encoder (e.g. ``minilm``) has no trained classification head: it is refused unless
``allow_untrained_head=True`` (see :func:`qe.gruen.format.load_pretrained`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from qe.core.runtime import run_length_batched
from qe.gruen.format import ACCEPTABILITY
from qe.gruen.hf import HFPart


class AcceptabilityModel(HFPart):
    kind = ACCEPTABILITY
    budget = (262_144, 8_192)

    def __init__(self, model, positive_label: int | None = None, **kw):
        super().__init__(model, **kw)
        from transformers import AutoModelForSequenceClassification

        self.model = self.load(AutoModelForSequenceClassification)
        if positive_label is None:
            positive_label = int((self.manifest or {}).get("config", {}).get("positive_label", 1))
        self.positive_label = int(positive_label)
        npos = int(getattr(self.model.config, "max_position_embeddings", 512))
        self.window = min(npos, 512)
        if getattr(self.model.config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
            self.window = min(npos - 2, 512)

    def signature_fields(self) -> dict:
        """This model's part of a scorer's signature."""
        return {"cola": self.name, "budget": self.max_tokens, "prec": self.precision}

    @torch.inference_mode()
    def scores(self, sentences: Sequence[str], progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(P(acceptable), logit of the acceptable class) per sentence, in input order."""
        tok = self.tokenizer
        n = len(sentences)
        prob, logit = np.zeros(n), np.zeros(n)
        if n == 0:
            return prob, logit
        inner = self.window - self.special.n_single
        enc = tok(list(sentences), add_special_tokens=False)["input_ids"]
        units, owner = [], []
        for i, ids in enumerate(enc):
            ids = ids or [tok.unk_token_id]
            for s in range(0, len(ids), inner):
                units.append(self.special.single(ids[s : s + inner]))
                owner.append(i)
        owner_a = np.asarray(owner)
        lengths = np.array([len(u) for u in units])

        def run(idx: list[int]) -> list[tuple[float, float]]:
            inp, att = self.pad([units[u] for u in idx])
            with self.autocast():
                lg = self.model(input_ids=inp, attention_mask=att).logits.float()
            p = torch.softmax(lg, -1)[:, self.positive_label].double().cpu().numpy()
            x = lg[:, self.positive_label].double().cpu().numpy()
            return list(zip(p.tolist(), x.tolist()))

        res = run_length_batched(lengths.tolist(), run, max_tokens=self.max_tokens, progress=progress,
                                 desc="acceptability", unit="sent")
        up, ul = np.array([r[0] for r in res]), np.array([r[1] for r in res])
        w = (lengths - self.special.n_single).astype(float)
        wsum = np.zeros(n)
        np.add.at(wsum, owner_a, w)
        np.add.at(prob, owner_a, up * w)
        np.add.at(logit, owner_a, ul * w)
        return prob / wsum, logit / wsum
