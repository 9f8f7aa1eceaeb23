"""Structure and coherence (Section 3): sentence-order-prediction (SOP) loss over every split of the output.

For an output with sentences s_1..s_n (n >= 2) and every i in 1..n-1, A = s_1..s_i and B = s_i+1..s_n:
the positive example is (A, B) with label "original order" and the negative one (B, A) with label "swapped".
The SOP loss is the mean logistic (cross-entropy) loss over these 2(n-1) examples, and y_c = -loss
(the scorer multiplies it by ``coherence_weight``). Outputs with fewer than two sentences have no split:
loss 0, y_c = 0.

Models: an export of kind ``sop`` (``task=sop``: any encoder with a trained order head — the default
segment-mean head :class:`qe.gruen.model.SegmentPairClassifier` or an HF [CLS] head; label 0 = original,
1 = swapped), any HF sequence-pair classifier folder with that convention, or an ALBERT checkpoint with its
pre-trained SOP head (``AlbertForPreTraining``, e.g. ``albert-base-v2`` for online users, the paper's model):
ALBERT's ``sop_logits`` use the same labels.

Window rule: when [CLS] A [SEP] B [SEP] does not fit the window, the tokens next to the boundary are kept —
the *end* of the first segment and the *start* of the second, each at most half the window (the shorter side
lends its unused half to the other; :func:`qe.gruen.hf.keep_boundary`, the rule ``task=sop`` trains with).
The number of pairs cut this way is logged.

A plain encoder (e.g. ``minilm``) loaded as a pair classifier has a random head: refused unless
``allow_untrained_head=True``.
"""
from __future__ import annotations

import logging
from typing import Sequence

import numpy as np
import torch

from qe.core.runtime import run_length_batched
from qe.gruen.format import LABEL_ORIGINAL, LABEL_SWAPPED, SOP
from qe.gruen.hf import HFPart, keep_boundary, pad_pairs
from qe.gruen.model import SegmentPairClassifier

log = logging.getLogger(__name__)


class CoherenceModel(HFPart):
    kind = SOP
    budget = (131_072, 8_192)

    def __init__(self, model, **kw):
        super().__init__(model, **kw)
        from transformers import AutoConfig, AutoModelForSequenceClassification

        cfg = AutoConfig.from_pretrained(self.path)
        segments = SegmentPairClassifier.is_saved_in(self.path)  # task=sop with model.pooling=segments
        self.albert = self.manifest is None and not segments and cfg.model_type == "albert" and \
            "AlbertForSequenceClassification" not in (cfg.architectures or [])
        if segments:
            self.model = SegmentPairClassifier.from_pretrained(self.path).to(self.device).eval()
        elif self.albert:
            from transformers import AlbertForPreTraining

            self.model = self.load(AlbertForPreTraining)
        else:
            self.model = self.load(AutoModelForSequenceClassification)
        self.window = min(int(getattr(cfg, "max_position_embeddings", 512)), 512)
        self.truncated = 0

    def signature_fields(self) -> dict:
        """This model's part of a scorer's signature."""
        return {"sop": f"{self.name}{'(albert-sop-head)' if self.albert else ''}", "budget": self.max_tokens}

    def _pair(self, a: list[int], b: list[int]) -> tuple[list[int], list[int]]:
        a, b, cut = keep_boundary(a, b, self.window - self.special.n_pair)
        self.truncated += cut
        return self.special.pair(a, b)

    @torch.inference_mode()
    def sop_loss(self, docs: Sequence[list[str]], progress: bool = False) -> list[float]:
        """Mean SOP loss per output (0.0 for fewer than two sentences)."""
        tok = self.tokenizer
        ex_ids, ex_tt, ex_label, ex_doc = [], [], [], []
        sent_ids: dict[str, list[int]] = {}
        allsent = list(dict.fromkeys(s for d in docs for s in d))
        if allsent:
            enc = tok(allsent, add_special_tokens=False)["input_ids"]
            sent_ids = dict(zip(allsent, enc))
        self.truncated = 0
        for di, d in enumerate(docs):
            for i in range(1, len(d)):
                a = [t for s in d[:i] for t in sent_ids[s]]
                b = [t for s in d[i:] for t in sent_ids[s]]
                for (x, y), lab in (((a, b), LABEL_ORIGINAL), ((b, a), LABEL_SWAPPED)):
                    ids, tt = self._pair(x, y)
                    ex_ids.append(ids); ex_tt.append(tt); ex_label.append(lab); ex_doc.append(di)
        if self.truncated:
            log.info("SOP: %d segment pairs longer than the %d-token window kept their boundary tokens only",
                     self.truncated, self.window)

        def run(idx: list[int]) -> list[float]:
            kw = {k: v.to(self.device) for k, v in pad_pairs([(ex_ids[e], ex_tt[e]) for e in idx], self.pad_id).items()}
            with self.autocast():
                out = self.model(**kw)
            logits = (out.sop_logits if self.albert else out.logits).float()
            y = torch.as_tensor([ex_label[e] for e in idx], device=logits.device)
            return torch.nn.functional.cross_entropy(logits, y, reduction="none").double().cpu().numpy().tolist()

        loss = np.asarray(run_length_batched([len(x) for x in ex_ids], run, max_tokens=self.max_tokens,
                                             progress=progress, desc="SOP", unit="pair"), dtype=float)
        tot, cnt = np.zeros(len(docs)), np.zeros(len(docs))
        np.add.at(tot, np.asarray(ex_doc, dtype=np.int64), loss)
        np.add.at(cnt, np.asarray(ex_doc, dtype=np.int64), 1)
        return [float(t / c) if c else 0.0 for t, c in zip(tot, cnt)]
