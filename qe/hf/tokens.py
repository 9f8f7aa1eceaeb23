"""Token-level helpers of the shared Hugging Face classifier (no Lightning): special-token templates, padding of
segment pairs, and the segment-pair cut rule used alike by GRUEN's ``task=sop``
(:class:`qe.hf.data.TextClassificationDataModule` with ``pair_truncation="boundary"``) and its SOP scorer
(:mod:`qe.gruen.coherence`).

Moved here from :mod:`qe.gruen.hf`, which still exports every name.
"""
from __future__ import annotations

from typing import Sequence

import torch


def keep_boundary(a: Sequence[int], b: Sequence[int], room: int) -> tuple[list[int], list[int], bool]:
    """Cut a segment pair to ``room`` tokens keeping the tokens next to the boundary: the *end* of ``a`` and the
    *start* of ``b``, each at most half the room (a shorter side lends its unused half to the other).
    Returns ``(a, b, cut)``. Used alike when the SOP head is trained and when it scores."""
    a, b = list(a), list(b)
    if len(a) + len(b) <= room:
        return a, b, False
    half = room // 2
    ka = min(len(a), max(half, room - len(b)))
    kb = min(len(b), room - ka)
    return a[len(a) - ka :], b[:kb], True


def pad_pairs(rows: Sequence[tuple[Sequence[int], Sequence[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad ``(input_ids, token_type_ids)`` rows into ``input_ids`` / ``attention_mask`` / ``token_type_ids``."""
    L = max(len(ids) for ids, _ in rows)
    out = {"input_ids": torch.full((len(rows), L), pad_id, dtype=torch.long),
           "attention_mask": torch.zeros((len(rows), L), dtype=torch.long),
           "token_type_ids": torch.zeros((len(rows), L), dtype=torch.long)}
    for r, (ids, tt) in enumerate(rows):
        out["input_ids"][r, : len(ids)] = torch.as_tensor(ids)
        out["token_type_ids"][r, : len(ids)] = torch.as_tensor(tt)
        out["attention_mask"][r, : len(ids)] = 1
    return out


class SpecialTokens:
    """Add a tokenizer's special tokens around id sequences (single or pair) without re-tokenising text.

    transformers 5 removed ``build_inputs_with_special_tokens`` from some tokenizers, so the template is read
    off the tokenizer itself: it encodes two probe words with and without special tokens and records what
    surrounds them (prefix / middle / suffix ids and their token types).
    """

    def __init__(self, tokenizer):
        a = tokenizer("hello", add_special_tokens=False)["input_ids"]
        b = tokenizer("world", add_special_tokens=False)["input_ids"]
        one = tokenizer("hello", add_special_tokens=True)
        two = tokenizer("hello", "world", add_special_tokens=True)
        ids1, ids2 = list(one["input_ids"]), list(two["input_ids"])
        i = _find(ids1, a)
        self.s_pre, self.s_suf = ids1[:i], ids1[i + len(a):]
        i = _find(ids2, a)
        j = _find(ids2, b, i + len(a))
        self.p_pre, self.p_mid, self.p_suf = ids2[:i], ids2[i + len(a) : j], ids2[j + len(b):]
        tt = list(two.get("token_type_ids") or [0] * len(ids2))
        self.tt_a = tt[0] if tt else 0
        self.tt_b = tt[j] if tt else 0
        self.n_single = len(self.s_pre) + len(self.s_suf)
        self.n_pair = len(self.p_pre) + len(self.p_mid) + len(self.p_suf)

    def single(self, ids: list[int]) -> list[int]:
        return self.s_pre + list(ids) + self.s_suf

    def pair(self, a: list[int], b: list[int]) -> tuple[list[int], list[int]]:
        ids = self.p_pre + list(a) + self.p_mid + list(b) + self.p_suf
        na = len(self.p_pre) + len(a) + len(self.p_mid)
        return ids, [self.tt_a] * na + [self.tt_b] * (len(ids) - na)


def _find(seq: list[int], sub: list[int], start: int = 0) -> int:
    for i in range(start, len(seq) - len(sub) + 1):
        if seq[i : i + len(sub)] == sub:
            return i
    raise ValueError("could not locate probe tokens in the tokenizer's output (unsupported tokenizer template)")


__all__ = ["keep_boundary", "pad_pairs", "SpecialTokens"]
