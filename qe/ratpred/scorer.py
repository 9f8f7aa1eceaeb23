"""Scorer for ``qe_gru`` exports (RatPred): ``qe.load(export).score(outputs, mrs=[...])``.

Each output is delexicalised against its MR exactly as in training and scored by the GRU regressor.
Predictions are rounded to the export's precision (0.5) and clipped to the training rating range, as in
the paper; ``qe.load(export, rounded=False)`` returns the raw regression values. MRs are required (a
``MissingInputError`` says so); an unparsable MR raises ``RecordError`` naming its index. Empty outputs are
scored as a sequence of one unknown token (a defined, low-information input). Inputs are batched by a
token budget after sorting by length; GRUs have no window, so long inputs are scored whole. Scores come back
in input order.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from qe.export import read_manifest, verify_checksum
from qe.ratpred.data import Vocab, collate
from qe.ratpred.module import RatPredNet, round_clip
from qe.ratpred.mr import delexicalise
from qe.ratpred.task import EXPORT_KIND, MODEL_FILE, VOCAB_FILE

from qe.core.scorer import Scorer


class RatPredScorer(Scorer):
    name = "RatPred"
    requires_mrs = True

    def __init__(self, export_dir: str | Path, device: str | None = None, rounded: bool = True,
                 max_tokens: int | None = None, verify: bool = True, manifest: dict | None = None):
        from safetensors.torch import load_model

        self.export_dir = Path(export_dir)
        self.manifest = manifest or read_manifest(self.export_dir, expected_kind=EXPORT_KIND)
        if verify:
            verify_checksum(self.export_dir, self.manifest)
        cfg = self.manifest["config"]
        self.vocab = Vocab(json.loads((self.export_dir / VOCAB_FILE).read_text(encoding="utf-8"))[2:])
        if len(self.vocab) != cfg["model"]["vocab_size"]:
            raise ValueError(f"{export_dir}: vocabulary has {len(self.vocab)} entries, model expects "
                             f"{cfg['model']['vocab_size']}")
        self.delex = bool(cfg.get("delex", True))
        self.predict_cfg = cfg.get("predict", {})
        self.rounded = rounded
        if device in (None, "auto"):
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.net = RatPredNet(**cfg["model"])
        load_model(self.net, str(self.export_dir / MODEL_FILE), device="cpu")
        self.net.to(self.device).eval()
        self.max_tokens = int(max_tokens or (200_000 if self.device.type == "cuda" else 20_000))
        self._checksum = self.manifest.get("checksum", "")[:12]

    @property
    def signature(self) -> str:
        from qe.version import __version__

        p = self.predict_cfg
        rnd = f"round:{p.get('round_to')}|clip:{p.get('clip_lo')}-{p.get('clip_hi')}" if self.rounded else "raw"
        return f"RatPred|qe_gru:{self._checksum}|setup:{self.manifest['config'].get('setup', '?')}|{rnd}|" \
               f"qe:{__version__}|torch:{torch.__version__}"

    @torch.no_grad()
    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kwargs):
        enc = []
        for i, (o, m) in enumerate(zip(outputs, mrs)):
            d = delexicalise(m, o, delex=self.delex, where=f"mrs[{i}]")
            enc.append((self.vocab.encode(d.mr_tokens), self.vocab.encode(d.out_tokens)))
        order = sorted(range(len(enc)), key=lambda i: len(enc[i][0]) + len(enc[i][1]))
        preds = np.zeros(len(enc))
        batches, cur, longest = [], [], 0
        for i in order:  # token budget: (batch size) x (longest MR + output) <= max_tokens
            ln = len(enc[i][0]) + len(enc[i][1])
            if cur and ((max(longest, ln) * (len(cur) + 1) > self.max_tokens) or
                        (batch_size and len(cur) >= batch_size)):
                batches.append(cur)
                cur, longest = [], 0
            cur.append(i)
            longest = max(longest, ln)
        if cur:
            batches.append(cur)
        for b in tqdm(batches, desc="RatPred", disable=not progress):
            batch = collate([(enc[i][0], enc[i][1], 0.0) for i in b])
            batch = {k: v.to(self.device) for k, v in batch.items()}
            p = self.net(batch["mr"], batch["mr_len"], batch["out"], batch["out_len"]).float().cpu().numpy()
            preds[b] = p
        if self.rounded:
            p = self.predict_cfg
            preds = round_clip(preds, p.get("round_to"), p.get("clip_lo"), p.get("clip_hi"))
        return preds.tolist()


def from_export(path: Path, manifest: dict, **options) -> RatPredScorer:
    return RatPredScorer(path, manifest=manifest, **options)
