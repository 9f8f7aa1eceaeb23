"""Hugging Face helpers shared by the GRUEN parts: the common set-up of a scoring model (:class:`HFPart`:
export/name resolution, device and token budget from :mod:`qe.core.runtime`, precision), special-token templates,
padding, and the segment-pair cut rule used alike by ``task=sop`` and the SOP scorer. No Lightning. The last three
(:class:`SpecialTokens`, :func:`pad_pairs`, :func:`keep_boundary`) live in :mod:`qe.hf.tokens`, shared with the
classifier training of :mod:`qe.hf`, and are exported here under their old names.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch

from qe.core.config import as_flag
from qe.core.runtime import default_budget, pick_device
from qe.gruen.format import load_pretrained, model_id, resolve_model
from qe.hf.tokens import SpecialTokens, keep_boundary, pad_pairs


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
