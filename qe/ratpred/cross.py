"""Input of RatPred's cross-encoder (``model.encoder=cross``): the (MR, output) pair as one sub-word sequence.

``[CLS] linearised MR [SEP] output [SEP]`` in the model's own special tokens and token types, read off a probe pair the
tokenizer encodes itself (:func:`pair_frame`; BERT: type 0 for [CLS], the MR and its [SEP], 1 for the output and the
final [SEP]).
The MR is the linearised MR and the output the tokenised output of :func:`qe.ratpred.mr.delexicalise` - lexical
(``model.cross_delex=false``, the default) or delexicalised - joined by spaces, exactly as in training.

Truncation rule (:func:`fit_pair`), applied only when a pair is longer than the window (``max_len`` = the model's
maximum length, or ``model.pair_max_len``, minus the special tokens): the shorter side is kept whole and the longer
one cut at its end to fill the window; when both sides exceed half the window, the MR keeps the first half and the
output the rest. Both sides always keep at least half the window (or all of themselves), so neither disappears. A
truncated pair is counted and logged (a warning per call, with the count), never cut silently. With all-MiniLM-L6-v2
(512 positions) no pair of ratpred-webnlg's 223.5k training instances comes near the window (measured: mean 60
pieces, 95th percentile 121, longest 273; benchmarks/ratpred_cross_speed.py).

Imported by the scorer: transformers and numpy only (no Lightning, Hydra or training code).
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

_PAIRS: dict[tuple[str, int | None], "PairTokens"] = {}


def fit_pair(a: list[int], b: list[int], budget: int) -> tuple[list[int], list[int]]:
    """``a`` (MR pieces) and ``b`` (output pieces) cut to at most ``budget`` pieces together (module docstring)."""
    la, lb = len(a), len(b)
    if la + lb <= budget:
        return a, b
    half = budget // 2
    if la <= half:
        return a, b[:budget - la]
    if lb <= budget - half:
        return a[:budget - lb], b
    return a[:half], b[:budget - half]


def pair_frame(tokenizer, name: str = "model") -> dict:
    """The special tokens around a sequence pair and their token types, found by encoding a probe pair with and
    without them (BERT: ``[CLS] a [SEP] b [SEP]``, types 0 ... 0 1 ... 1; RoBERTa: ``<s> a </s></s> b </s>``, no
    types -> all 0)."""
    bare = tokenizer("probe", add_special_tokens=False)["input_ids"]
    enc = tokenizer("probe", "probe", add_special_tokens=True, return_token_type_ids=True)
    full = list(enc["input_ids"])
    types = list(enc.get("token_type_ids") or [0] * len(full))
    k = len(bare)
    at = [i for i in range(len(full) - k + 1) if full[i:i + k] == bare]
    if len(at) < 2:
        raise ValueError(f"{name}: cannot locate the two sequences of a pair inside its special tokens")
    i, j = at[0], next(x for x in at if x >= at[0] + k)
    return {"prefix": full[:i], "middle": full[i + k:j], "suffix": full[j + k:],
            "prefix_types": types[:i], "middle_types": types[i + k:j], "suffix_types": types[j + k:],
            "a_type": types[i], "b_type": types[j]}


class PairTokens:
    """Sub-word ids and token types of (MR text, output text) pairs for a cross-encoder (``model`` a name for
    :func:`qe.core.offline.encoder_path` or a directory holding the tokenizer, e.g. an export's ``sentence_model/``)."""

    #: marks this encoder input for :func:`qe.ratpred.data.encode_instances` / :func:`qe.ratpred.data.make_loader`
    pairs = True

    def __init__(self, model: str | Path = "minilm", max_len: int | None = None):
        from transformers import AutoConfig, AutoTokenizer

        from qe.core.tokens import sequence_frame
        from qe.core.offline import encoder_path

        self.model_name = str(model)
        path = encoder_path(self.model_name)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        conf = AutoConfig.from_pretrained(path)
        self.dim = int(conf.hidden_size)
        _, _, window = sequence_frame(self.tokenizer, conf, self.model_name)
        if max_len is not None and int(max_len) > window:
            raise ValueError(f"pair_max_len={max_len} exceeds the window of {self.model_name} ({window} pieces)")
        self.max_len = int(max_len or window)
        self.frame = pair_frame(self.tokenizer, self.model_name)
        self.n_special = sum(len(self.frame[k]) for k in ("prefix", "middle", "suffix"))
        self.budget = self.max_len - self.n_special
        if self.budget < 2:
            raise ValueError(f"pair_max_len={self.max_len}: no room for an MR and an output after {self.n_special} "
                             "special tokens")
        #: pairs cut by the truncation rule so far (this object's lifetime)
        self.truncated = 0

    @classmethod
    def shared(cls, model: str = "minilm", max_len: int | None = None) -> "PairTokens":
        """One tokenizer per (model name, max_len) in this process."""
        key = (str(model), None if max_len is None else int(max_len))
        if key not in _PAIRS:
            _PAIRS[key] = cls(model, max_len)
        return _PAIRS[key]

    def __call__(self, mrs: list[str], outputs: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """One (ids, token types) pair of int32 arrays per (MR, output)."""
        if len(mrs) != len(outputs):
            raise ValueError(f"PairTokens: {len(mrs)} MRs for {len(outputs)} outputs")
        if not mrs:
            return []
        tok = self.tokenizer
        kw = dict(add_special_tokens=False, verbose=False, return_attention_mask=False, return_token_type_ids=False)
        a_ids, b_ids = tok(list(mrs), **kw)["input_ids"], tok(list(outputs), **kw)["input_ids"]
        out, cut = [], 0
        for a, b in zip(a_ids, b_ids):
            if len(a) + len(b) > self.budget:
                a, b = fit_pair(a, b, self.budget)
                cut += 1
            f = self.frame
            ids = f["prefix"] + list(a) + f["middle"] + list(b) + f["suffix"]
            types = (f["prefix_types"] + [f["a_type"]] * len(a) + f["middle_types"] + [f["b_type"]] * len(b)
                     + f["suffix_types"])
            out.append((np.asarray(ids, dtype=np.int32), np.asarray(types, dtype=np.int32)))
        if cut:
            self.truncated += cut
            log.warning("cross-encoder: %d of %d (MR, output) pairs exceed the %d-piece window and were cut by the "
                        "documented rule (qe/ratpred/cross.py: the shorter side whole, the longer cut at its end)",
                        cut, len(mrs), self.max_len)
        return out

    def save(self, dest: str | Path) -> None:
        """The tokenizer files, for an export that rebuilds the encoder offline."""
        self.tokenizer.save_pretrained(str(dest))
