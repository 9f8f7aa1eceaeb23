"""Masked-LM sentence likelihood for GRUEN's grammaticality module.

**Masked (the paper, default).** For a sentence with word pieces w_1..w_k,
``PLL = sum_j log p(w_j | w_1..w_{j-1}, [MASK], w_{j+1}..w_k)`` (Wang & Cho 2019; Salazar et al. 2020): one
copy of the sentence per word piece, with that piece masked. Copies of *all* sentences are pooled, sorted by
length and cut into batches whose padded size (copies x longest copy) stays under ``max_tokens``, so a long
sentence's copies are spread over several passes and short sentences share passes. Only the hidden state at
the masked position goes through the vocabulary projection (the MLM head), which is where most of the
compute of a naive implementation goes. Scores are per sentence: the PLL sum and k (word pieces scored).

**Unmasked (the reference code's variant, ``likelihood="unmasked"``).** One pass per sentence without any mask
and the MLM loss with ``labels = input_ids``: the mean cross-entropy over all positions including [CLS] and
[SEP]; the code turns it into a "perplexity" ``exp(mean CE)``. It measures how well BERT copies visible
tokens, not a likelihood; it is kept so users can compare.

**Long sentences.** A sentence longer than the model window (``max_position_embeddings`` minus the two
special tokens) is split into consecutive chunks that fit; each chunk is scored as its own sequence and the
sums are added (k counts all pieces). Nothing is dropped. The reference code cut sentences at 510 pieces.

**Untrained heads.** An encoder shipped without a trained MLM head (the offline ``minilm``) is refused unless
``allow_untrained_head=True``: its PLL would come from a random projection (train one with ``task=mlm``).
"""
from __future__ import annotations

import logging
from typing import Sequence

import numpy as np
import torch

from qe.core.runtime import run_length_batched
from qe.gruen.format import MLM
from qe.gruen.hf import HFPart
from qe.gruen.model import mlm_parts

log = logging.getLogger(__name__)


class MaskedLM(HFPart):
    """A masked LM (HF name/path, ``minilm`` alias, or an export of kind ``mlm``) with batched PLL."""

    kind = MLM

    def __init__(self, model="bert-base-cased", **kw):
        super().__init__(model, **kw)
        from transformers import AutoModelForMaskedLM

        if self.tokenizer.mask_token_id is None:
            raise ValueError(f"{model}: tokenizer has no mask token; PLL needs a masked LM")
        self.model = self.load(AutoModelForMaskedLM)
        self.encoder, self.head = mlm_parts(self.model)
        npos = int(getattr(self.model.config, "max_position_embeddings", 512))
        # RoBERTa-style position ids start after the padding index, so two positions are unusable
        roberta = getattr(self.model.config, "model_type", "") in ("roberta", "xlm-roberta", "camembert")
        self.window = npos - 2 if roberta else npos

    def signature_fields(self) -> dict:
        """This model's part of a scorer's signature."""
        return {"mlm": self.name, "budget": self.max_tokens, "prec": self.precision}

    # ------------------------------------------------------------------ tokenisation into window-sized units
    def _units(self, sentences: Sequence[str]) -> tuple[list[list[int]], np.ndarray]:
        """Token ids with specials of each chunk, and the sentence index of each chunk."""
        tok = self.tokenizer
        inner = self.window - self.special.n_single
        units, owner = [], []
        enc = tok(list(sentences), add_special_tokens=False)["input_ids"] if sentences else []
        for i, ids in enumerate(enc):
            for s in range(0, max(1, len(ids)), inner):
                chunk = ids[s : s + inner]
                if not chunk:
                    continue
                units.append(self.special.single(chunk))
                owner.append(i)
        return units, np.asarray(owner, dtype=np.int64)

    def _per_sentence(self, sentences: Sequence[str], per_unit) -> tuple[np.ndarray, np.ndarray]:
        """Sum ``per_unit(units, lengths) -> (values, counts)`` over each sentence's window-sized units."""
        n = len(sentences)
        total, count = np.zeros(n), np.zeros(n, dtype=np.int64)
        units, owner = self._units(sentences)
        if units:
            values, counts = per_unit(units, np.array([len(u) for u in units]))
            np.add.at(total, owner, values)
            np.add.at(count, owner, counts)
        return total, count

    # ------------------------------------------------------------------ masked PLL
    @torch.inference_mode()
    def pll(self, sentences: Sequence[str], progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(sum of masked log-probabilities, number of word pieces scored) per sentence, in input order."""
        return self._per_sentence(sentences, lambda units, lengths: self._pll_units(units, lengths, progress))

    def _pll_units(self, units: list[list[int]], lengths: np.ndarray, progress: bool) -> tuple[np.ndarray, np.ndarray]:
        # every masked copy: (unit, position); the shared batcher sorts them longest first (stable: unit, position)
        pre, suf = len(self.special.s_pre), len(self.special.s_suf)
        cu = np.concatenate([np.full(lengths[u] - pre - suf, u) for u in range(len(units))])
        cp = np.concatenate([np.arange(pre, lengths[u] - suf) for u in range(len(units))])
        mask_id = self.tokenizer.mask_token_id

        def run(copies: list[int]) -> list[float]:
            bu, bp = cu[copies], cp[copies]
            uniq, inv = np.unique(bu, return_inverse=True)
            U, att_u = self.pad([units[u] for u in uniq])
            inv_t = torch.as_tensor(inv, device=self.device)
            rows = torch.arange(len(bu), device=self.device)
            pos = torch.as_tensor(bp, device=self.device)
            inp = U[inv_t].clone()
            target = inp[rows, pos].clone()
            inp[rows, pos] = mask_id
            att = att_u[inv_t]
            with self.autocast():
                if self.encoder is not None:
                    h = self.encoder(input_ids=inp, attention_mask=att).last_hidden_state
                    logits = self.head(h[rows, pos])
                else:
                    logits = self.model(input_ids=inp, attention_mask=att).logits[rows, pos]
            lp = torch.log_softmax(logits.float(), dim=-1).gather(1, target[:, None])[:, 0]
            return lp.double().cpu().numpy().tolist()

        lp = run_length_batched(lengths[cu].tolist(), run, max_tokens=self.max_tokens, progress=progress,
                                desc="PLL (masked copies)", unit="copy")
        unit_sum = np.zeros(len(units))
        done = np.argsort(-lengths[cu], kind="stable")  # summed in the order the copies ran (bit-identical sums)
        np.add.at(unit_sum, cu[done], np.asarray(lp, dtype=float)[done])
        return unit_sum, lengths - pre - suf

    # ------------------------------------------------------------------ the reference code's unmasked variant
    @torch.inference_mode()
    def unmasked_ce(self, sentences: Sequence[str], progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(sum of cross-entropy over all positions incl. specials, number of positions) per sentence, unmasked."""
        return self._per_sentence(sentences, lambda units, lengths: self._unmasked_units(units, lengths, progress))

    def _unmasked_units(self, units: list[list[int]], lengths: np.ndarray, progress: bool) -> tuple[np.ndarray, np.ndarray]:
        def run(idx: list[int]) -> list[float]:
            inp, att = self.pad([units[u] for u in idx])
            with self.autocast():
                logits = self.model(input_ids=inp, attention_mask=att).logits
            ce = torch.nn.functional.cross_entropy(logits.float().transpose(1, 2), inp, reduction="none")
            return (ce * att).sum(1).double().cpu().numpy().tolist()

        unit_sum = np.asarray(run_length_batched(lengths.tolist(), run, max_tokens=self.max_tokens, progress=progress,
                                                 desc="LM (unmasked)", unit="sent"), dtype=float)
        return unit_sum, lengths
