"""Grammatical acceptability from a sequence classifier fine-tuned on CoLA (``task=cola`` export, kind
``acceptability``, or any HF CoLA classifier by name/path with ``positive_label``).

Per sentence: P(acceptable) = softmax(logits)[positive_label] (default), or the raw logit of the acceptable
class as the reference code uses (``logit=True`` in :meth:`AcceptabilityModel.scores`). Sentences are
length-sorted and batched under ``max_tokens`` padded tokens per pass. A sentence longer than the model
window is split into consecutive window-sized chunks; its probability (and logit) is the chunk values
averaged with chunk lengths as weights.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from qe.gruen.hf import SpecialTokens, default_budget, model_id, pick_device, resolve_model, token_budget_batches, versions

from qe.core.scorer import Scorer


class AcceptabilityModel:
    def __init__(self, model: str | Path, device: str | None = None, max_tokens: int | None = None,
                 positive_label: int | None = None, precision: str = "fp32", verify: bool = True):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        path, self.manifest = resolve_model(model, expected_kind="acceptability", verify=verify)
        self.name = model_id(model, self.manifest)
        self.device = pick_device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.special = SpecialTokens(self.tokenizer)
        self.model = AutoModelForSequenceClassification.from_pretrained(path).to(self.device).eval()
        if positive_label is None:
            positive_label = int((self.manifest or {}).get("config", {}).get("positive_label", 1))
        self.positive_label = int(positive_label)
        npos = int(getattr(self.model.config, "max_position_embeddings", 512))
        self.window = min(npos, 512)
        if getattr(self.model.config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
            self.window = min(npos - 2, 512)
        self.max_tokens = int(max_tokens or default_budget(self.device, gpu=262_144, cpu=8_192))
        self.precision = precision if self.device.type == "cuda" else "fp32"
        self._dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.precision)

    @property
    def signature(self) -> str:
        return f"cola:{self.name}|budget:{self.max_tokens}|prec:{self.precision}"

    @torch.inference_mode()
    def scores(self, sentences: Sequence[str], progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(P(acceptable), logit of the acceptable class) per sentence, in input order."""
        from tqdm.auto import tqdm

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
        order = np.argsort(-lengths, kind="stable")
        up, ul = np.zeros(len(units)), np.zeros(len(units))
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        pbar = tqdm(total=len(units), desc="acceptability", unit="sent", disable=not progress, leave=False)
        for b in token_budget_batches(lengths[order].tolist(), self.max_tokens):
            idx = order[b]
            L = int(lengths[idx].max())
            inp = torch.full((len(idx), L), pad, dtype=torch.long)
            for r, u in enumerate(idx):
                inp[r, : lengths[u]] = torch.as_tensor(units[u])
            att = (torch.arange(L)[None, :] < torch.as_tensor(lengths[idx])[:, None]).long()
            with torch.autocast(self.device.type, dtype=self._dtype, enabled=self._dtype is not None):
                lg = self.model(input_ids=inp.to(self.device), attention_mask=att.to(self.device)).logits.float()
            up[idx] = torch.softmax(lg, -1)[:, self.positive_label].double().cpu().numpy()
            ul[idx] = lg[:, self.positive_label].double().cpu().numpy()
            pbar.update(len(idx))
        pbar.close()
        w = (lengths - self.special.n_single).astype(float)
        wsum = np.zeros(n)
        np.add.at(wsum, owner_a, w)
        np.add.at(prob, owner_a, up * w)
        np.add.at(logit, owner_a, ul * w)
        return prob / wsum, logit / wsum


class AcceptabilityScorer(Scorer):
    """P(acceptable) of each output taken as one text (GRUEN splits into sentences; this does not)."""

    name = "acceptability"

    def __init__(self, model: str | Path, **kw: Any):
        self.m = AcceptabilityModel(model, **kw)

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw):
        empty = [not o.strip() for o in outputs]
        p, _ = self.m.scores([o if o.strip() else "." for o in outputs], progress=progress)
        return [float("nan") if e else float(x) for x, e in zip(p, empty)]

    @property
    def signature(self) -> str:
        return f"acceptability|{self.m.signature}|{versions()}"


def from_export(export_dir: Path, manifest: dict, **options: Any) -> AcceptabilityScorer:
    return AcceptabilityScorer(export_dir, **options)
