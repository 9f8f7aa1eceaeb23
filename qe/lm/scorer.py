"""SLOR, NCE and PPL from an LM export (Kann, Rothe & Filippova 2018, eqs. 1-4).

For a sentence S with tokens t_1..t_n (words or SentencePiece units after the normalisation in
:mod:`qe.core.tokenization`):

* ln p_M(S) = sum_{i=1..n+1} ln p(t_i | <s>, t_1..t_{i-1}) with t_{n+1} = </s>: the LM probability of the complete
  sentence, including the end-of-sentence event (the start symbol is given, not predicted);
* ln p_u(S) = sum_{i=1..n} ln p_u(t_i) (eq. 2, over the tokens of S; boundary symbols are not tokens of S);
* |S| = n, the number of tokens of S in the LM's own units (words for WordSLOR, pieces for WPSLOR);
* SLOR(S) = (ln p_M(S) - ln p_u(S)) / |S|;  NCE(S) = ln p_M(S) / |S|;  PPL(S) = exp(-NCE(S)).

Empty or whitespace-only outputs have n = 0, so all three scores are undefined: they get NaN (and a warning);
meta-evaluation drops NaN scores and reports how many. Non-string inputs raise ``TypeError`` naming the index.
Long inputs are scored whole: the LSTM has no window. They run in bounded memory and linear time: the sequence goes
through the LSTM and the output layer in chunks of time steps (the LSTM state carried across chunks, so the score is
exactly the unchunked one), at most ``logits_budget`` output-layer activations and :data:`~qe.lm.model.MAX_SCORE_CHUNK`
steps at a time; on CPU, the recurrence of a small batch runs on one intra-op thread
(:meth:`~qe.lm.model.LSTMLM.recurrence_threads`): a 50,000-word line took 76-109 s with two threads on a busy
2-core machine, about a second with one.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import torch

from qe.core.runtime import pick_device, run_length_batched
from qe.core.scorer import Scorer
from qe.lm import format as lm_format
from qe.lm.model import MAX_SCORE_CHUNK

log = logging.getLogger(__name__)

SCORES = ("slor", "nce", "ppl", "logprob")


class LMScorer(Scorer):
    def __init__(self, export_dir: str | Path, score: str = "slor", device: str | None = None,
                 max_tokens: int | None = None, logits_budget: int | None = None, precision: str = "fp32",
                 verify: bool = True, manifest: dict | None = None):
        score = score.lower()
        if score not in SCORES:
            raise ValueError(f"score={score!r}: choose one of {SCORES}")
        self.export_dir = Path(export_dir)
        self.score_type = score
        self.device = pick_device(device)
        lm = lm_format.load(self.export_dir, manifest, verify=verify, device=self.device)
        self.manifest, self.tokenizer, self.model, self.unigram = lm.manifest, lm.tokenizer, lm.model, lm.unigram
        self.model_kwargs = lm.model_kwargs
        gpu = self.device.type == "cuda"
        #: tokens (padded) per forward pass
        self.max_tokens = int(max_tokens or (262_144 if gpu else 8_192))
        #: floats of output-layer activations per chunk (bounds memory for long inputs; 2**24 floats = 64 MB)
        self.logits_budget = int(logits_budget or (2**30 if gpu else 2**24))
        #: time steps per chunk of the last batch (what bounded its memory)
        self.last_chunk: int | None = None
        if precision not in ("fp32", "bf16", "fp16"):
            raise ValueError("precision must be fp32, bf16 or fp16")
        self.precision = precision if gpu else "fp32"
        unit = "Word" if self.tokenizer.type == "word" else "WP"
        self.name = f"{unit}{score.upper() if score != 'logprob' else 'LogProb'}"
        self.higher_is_better = score != "ppl"
        self._checksum = self.manifest.get("checksum", "")[:12]

    signature_libraries = ("torch",)

    def signature_fields(self) -> dict:
        mk = self.model_kwargs
        return {"lm": f"{self.tokenizer.type}-{mk.get('num_layers', '?')}x{mk.get('hidden_size', '?')}",
                "V": self.tokenizer.vocab_size, "export": self._checksum, "prec": self.precision}

    # ---- core computation -------------------------------------------------------------------------------
    def _batch_logprobs(self, ids: list[list[int]], idx: list[int]) -> list[float]:
        """ln p_M(S) for the outputs ``idx`` (one padded batch ``<s> t1..tn`` -> ``t1..tn </s>``)."""
        inp, tgt = self._padded(ids, idx)
        L = inp.shape[1]
        chunk = self.chunk_steps(len(idx), L)
        self.last_chunk = chunk
        inp, tgt = inp.to(self.device, non_blocking=True), tgt.to(self.device, non_blocking=True)
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.precision)
        with torch.inference_mode(), torch.autocast(self.device.type, dtype=dtype, enabled=dtype is not None):
            lp = self.model.sequence_logprobs(inp, tgt, chunk=chunk)
        return lp.cpu().tolist()

    def _padded(self, ids: list[list[int]], idx: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """The batch's input ``<s> t1..tn`` and target ``t1..tn </s>`` rows, padded, built with array operations
        (a Python loop of small tensor operations per row cost 35-58 us a sentence on the 2-core CPU, 1.4-3 us this
        way: ``benchmarks/lm_score_host.py``); on a GPU this is host time the card waits for."""
        tok = self.tokenizer
        lens = np.fromiter((len(ids[j]) for j in idx), dtype=np.int64, count=len(idx))
        B, L = len(idx), int(lens.max()) + 1
        flat = np.fromiter((t for j in idx for t in ids[j]), dtype=np.int64, count=int(lens.sum()))
        rows = np.repeat(np.arange(B), lens)
        cols = np.arange(len(flat)) - np.repeat(np.cumsum(lens) - lens, lens)
        inp = np.full((B, L), tok.pad_id, dtype=np.int64)
        tgt = np.full((B, L), tok.pad_id, dtype=np.int64)
        inp[:, 0] = tok.bos_id
        inp[rows, cols + 1] = flat
        tgt[rows, cols] = flat
        tgt[np.arange(B), lens] = tok.eos_id
        return torch.from_numpy(inp), torch.from_numpy(tgt)

    def chunk_steps(self, batch: int, length: int) -> int:
        """Time steps per chunk for ``batch`` rows of ``length``: output-layer activations within ``logits_budget``
        and at most :data:`~qe.lm.model.MAX_SCORE_CHUNK` steps through the LSTM at once."""
        return max(1, min(length, MAX_SCORE_CHUNK, self.logits_budget // (batch * self.model.vocab_size)))

    def _raw(self, outputs: list[str], batch_size: int | None, progress: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ln p_M(S), ln p_u(S), |S|) for each output, in input order."""
        ids = self.tokenizer.encode_batch(outputs)
        n = np.array([len(x) for x in ids], dtype=np.int64)
        # ln p_u(S): one gather over all tokens and one sum per output (np.bincount), not a sum per output in Python
        flat = np.fromiter((t for x in ids for t in x), dtype=np.int64, count=int(n.sum()))
        uni = np.bincount(np.repeat(np.arange(len(ids)), n), weights=self.unigram[flat], minlength=len(ids))
        # padded length of a row is n + 1 (<s> / </s>); empty outputs (n = 0) are skipped and stay NaN
        lengths = [int(k) + 1 if k else 0 for k in n]
        lpm = run_length_batched(lengths, lambda idx: self._batch_logprobs(ids, idx), max_tokens=self.max_tokens,
                                 max_batch=int(batch_size) if batch_size else None, fill=float("nan"),
                                 skip_empty=True, progress=progress, desc=f"scoring {self.name}", unit="sent")
        empty = int((n == 0).sum())
        if empty:
            log.warning("%s: %d empty or whitespace-only output(s) scored NaN", self.name, empty)
        return np.asarray(lpm, dtype=np.float64), uni, n

    @staticmethod
    def _combine(lpm, uni, n) -> dict[str, np.ndarray]:
        with np.errstate(divide="ignore", invalid="ignore"):
            nn = np.where(n > 0, n, np.nan)
            nce = lpm / nn
            return {"slor": (lpm - uni) / nn, "nce": nce, "ppl": np.exp(-nce), "logprob": lpm}

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw) -> list[float]:
        return self._combine(*self._raw(outputs, batch_size, progress))[self.score_type].tolist()

    def _score_components(self, outputs, *, mrs=None, refs=None, batch_size=None, progress=True, **kw):
        """All LM scores at once: slor, nce, ppl, logprob, unigram_logprob, length."""
        lpm, uni, n = self._raw(outputs, batch_size, progress)
        out = {k: v.tolist() for k, v in self._combine(lpm, uni, n).items()}
        out["unigram_logprob"] = uni.tolist()
        out["length"] = n.astype(float).tolist()
        return out


def from_export(export_dir: Path, manifest: dict, **options: Any) -> LMScorer:
    return LMScorer(export_dir, manifest=manifest, **options)
