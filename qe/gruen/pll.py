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
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from qe.gruen.hf import SpecialTokens, default_budget, model_id, pick_device, resolve_model, versions
from qe.gruen.modules import mlm_parts

log = logging.getLogger(__name__)


class MaskedLM:
    """A masked LM (HF name/path, ``minilm`` alias, or an export of kind ``mlm``) with batched PLL."""

    def __init__(self, model: str | Path = "bert-base-cased", device: str | None = None, max_tokens: int | None = None,
                 precision: str = "fp32", verify: bool = True):
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        path, self.manifest = resolve_model(model, expected_kind="mlm", verify=verify)
        self.name = model_id(model, self.manifest)
        self.device = pick_device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.special = SpecialTokens(self.tokenizer)
        self.model = AutoModelForMaskedLM.from_pretrained(path).to(self.device).eval()
        if self.tokenizer.mask_token_id is None:
            raise ValueError(f"{model}: tokenizer has no mask token; PLL needs a masked LM")
        self.encoder, self.head = mlm_parts(self.model)
        npos = int(getattr(self.model.config, "max_position_embeddings", 512))
        # RoBERTa-style position ids start after the padding index, so two positions are unusable
        roberta = getattr(self.model.config, "model_type", "") in ("roberta", "xlm-roberta", "camembert")
        self.window = npos - 2 if roberta else npos
        self.max_tokens = int(max_tokens or default_budget(self.device))
        self.precision = precision if self.device.type == "cuda" else "fp32"
        self._dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.precision)

    @property
    def signature(self) -> str:
        return f"mlm:{self.name}|budget:{self.max_tokens}|prec:{self.precision}"

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

    # ------------------------------------------------------------------ masked PLL
    @torch.inference_mode()
    def pll(self, sentences: Sequence[str], progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(sum of masked log-probabilities, number of word pieces scored) per sentence, in input order."""
        from tqdm.auto import tqdm

        n = len(sentences)
        total, count = np.zeros(n), np.zeros(n, dtype=np.int64)
        units, owner = self._units(sentences)
        if not units:
            return total, count
        lengths = np.array([len(u) for u in units])
        order = np.argsort(-lengths, kind="stable")
        # every masked copy: (unit, position), longest units first
        pre, suf = len(self.special.s_pre), len(self.special.s_suf)
        cu = np.concatenate([np.full(lengths[u] - pre - suf, u) for u in order])
        cp = np.concatenate([np.arange(pre, lengths[u] - suf) for u in order])
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        mask_id = self.tokenizer.mask_token_id
        pbar = tqdm(total=len(cu), desc="PLL (masked copies)", unit="copy", disable=not progress, leave=False)
        unit_sum = np.zeros(len(units))
        i = 0
        while i < len(cu):
            L = int(lengths[cu[i]])
            bs = max(1, self.max_tokens // L)
            bu, bp = cu[i : i + bs], cp[i : i + bs]
            uniq, inv = np.unique(bu, return_inverse=True)
            U = torch.full((len(uniq), L), pad, dtype=torch.long)
            for r, u in enumerate(uniq):
                U[r, : lengths[u]] = torch.as_tensor(units[u])
            att_u = (torch.arange(L)[None, :] < torch.as_tensor(lengths[uniq])[:, None]).long()
            inv_t, pos = torch.as_tensor(inv), torch.as_tensor(bp)
            inp = U[inv_t].clone()
            rows = torch.arange(len(bu))
            target = inp[rows, pos].clone()
            inp[rows, pos] = mask_id
            inp, att, pos_d, target = (x.to(self.device, non_blocking=True) for x in (inp, att_u[inv_t], pos, target))
            with torch.autocast(self.device.type, dtype=self._dtype, enabled=self._dtype is not None):
                if self.encoder is not None:
                    h = self.encoder(input_ids=inp, attention_mask=att).last_hidden_state
                    logits = self.head(h[rows.to(self.device), pos_d])
                else:
                    logits = self.model(input_ids=inp, attention_mask=att).logits[rows.to(self.device), pos_d]
            lp = torch.log_softmax(logits.float(), dim=-1).gather(1, target[:, None])[:, 0]
            np.add.at(unit_sum, bu, lp.double().cpu().numpy())
            pbar.update(len(bu))
            i += len(bu)
        pbar.close()
        np.add.at(total, owner, unit_sum)
        np.add.at(count, owner, lengths - pre - suf)
        return total, count

    # ------------------------------------------------------------------ the reference code's unmasked variant
    @torch.inference_mode()
    def unmasked_ce(self, sentences: Sequence[str], progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(sum of cross-entropy over all positions incl. specials, number of positions) per sentence, unmasked."""
        from tqdm.auto import tqdm

        from qe.gruen.hf import token_budget_batches

        n = len(sentences)
        total, count = np.zeros(n), np.zeros(n, dtype=np.int64)
        units, owner = self._units(sentences)
        if not units:
            return total, count
        lengths = np.array([len(u) for u in units])
        order = np.argsort(-lengths, kind="stable")
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        unit_sum = np.zeros(len(units))
        pbar = tqdm(total=len(units), desc="LM (unmasked)", unit="sent", disable=not progress, leave=False)
        for b in token_budget_batches(lengths[order].tolist(), self.max_tokens):
            idx = order[b]
            L = int(lengths[idx].max())
            inp = torch.full((len(idx), L), pad, dtype=torch.long)
            for r, u in enumerate(idx):
                inp[r, : lengths[u]] = torch.as_tensor(units[u])
            att = (torch.arange(L)[None, :] < torch.as_tensor(lengths[idx])[:, None]).long()
            inp_d, att_d = inp.to(self.device), att.to(self.device)
            with torch.autocast(self.device.type, dtype=self._dtype, enabled=self._dtype is not None):
                logits = self.model(input_ids=inp_d, attention_mask=att_d).logits
            ce = torch.nn.functional.cross_entropy(logits.float().transpose(1, 2), inp_d, reduction="none")
            unit_sum[idx] = (ce * att_d).sum(1).double().cpu().numpy()
            pbar.update(len(idx))
        pbar.close()
        np.add.at(total, owner, unit_sum)
        np.add.at(count, owner, lengths)
        return total, count


class PLLScorer:
    """Standalone per-output PLL (mean log-probability per word piece; NaN for empty outputs)."""

    def __init__(self, model: str | Path, **kw):
        self.lm = MaskedLM(model, **kw)

    def score(self, outputs: list[str], progress: bool = False) -> list[float]:
        s, n = self.lm.pll(outputs, progress=progress)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (s / np.where(n > 0, n, np.nan)).tolist()

    @property
    def signature(self) -> str:
        return f"pll|{self.lm.signature}|{versions()}"
