"""Hugging Face helpers shared by the GRUEN parts: the common set-up of a scoring model (:class:`HFPart`:
export/name resolution, device and token budget from :mod:`qe.core.runtime`, precision), special-token templates,
padding, and the segment-pair cut rule used alike by ``task=sop`` and the SOP scorer. No Lightning.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch

from qe.core.config import as_flag
from qe.core.runtime import default_budget, pick_device
from qe.gruen.format import load_pretrained, model_id, resolve_model


class HFPart:
    """What every GRUEN scoring model sets up: ``kind`` is the export kind it accepts; ``budget`` the default
    padded-token budget per forward pass as ``(gpu, cpu)``; ``precision`` (``fp32`` | ``bf16`` | ``fp16``) applies
    on CUDA only (autocast); CPU always runs fp32."""

    kind = ""
    budget = (65_536, 4_096)

    def __init__(self, model: str | Path, device: str | None = None, max_tokens: int | None = None,
                 precision: str = "fp32", verify: bool = True, allow_untrained_head: bool = False):
        from transformers import AutoTokenizer

        self.path, self.manifest = resolve_model(model, expected_kind=self.kind, verify=verify)
        self.spec = str(model)
        self.name = model_id(model, self.manifest)
        self.allow_untrained_head = as_flag(allow_untrained_head, "allow_untrained_head")
        self.device = pick_device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.special = SpecialTokens(self.tokenizer)
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        self.max_tokens = int(max_tokens or default_budget(self.device, gpu=self.budget[0], cpu=self.budget[1]))
        self.precision = precision if self.device.type == "cuda" else "fp32"
        self._dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.precision)

    def load(self, auto_cls):
        """``auto_cls`` weights from this part's folder, on its device, in eval mode; refuses an untrained head."""
        model = load_pretrained(auto_cls, self.path, name=self.spec, part=self.kind,
                                allow_untrained_head=self.allow_untrained_head)
        return model.to(self.device).eval()

    def autocast(self):
        return torch.autocast(self.device.type, dtype=self._dtype, enabled=self._dtype is not None)

    def pad(self, rows: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-padded ``input_ids`` and ``attention_mask`` (on the part's device) for id rows."""
        lengths = torch.as_tensor([len(r) for r in rows])
        ids = torch.full((len(rows), int(lengths.max())), self.pad_id, dtype=torch.long)
        for r, row in enumerate(rows):
            ids[r, : len(row)] = torch.as_tensor(row)
        att = (torch.arange(ids.shape[1])[None, :] < lengths[:, None]).long()
        return ids.to(self.device), att.to(self.device)


__all__ = ["HFPart", "keep_boundary", "SpecialTokens", "pad_pairs"]


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
