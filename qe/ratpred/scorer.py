"""Scorer for ``qe_gru`` exports (RatPred): ``qe.load(export).score(outputs, mrs=[...])``.

Each output is delexicalised against its MR exactly as in training and scored by the GRU regressor.
Predictions are rounded to the export's precision (0.5) and clipped to the training rating range, as in
the paper; ``qe.load(export, rounded=False)`` returns the raw regression values. MRs are required (a
``MissingInputError`` says so). MRs may be dialogue acts, E2E attribute lists or JSON, detected per MR;
``qe.load(export, mr_format="e2e")`` (``qe score --opt mr_format=e2e``) fixes the format
(:mod:`qe.core.mr`). An unparsable MR raises ``RecordError`` naming the record (``ids=[...]`` passed to
``score`` give record ids, else its index ``mrs[i]``), the formats tried and the offending text. Empty outputs are
scored as a sequence of one unknown token (a defined, low-information input). Inputs are batched by a
token budget (MR + output tokens) after sorting by length (:func:`qe.core.runtime.run_length_batched`); GRUs
have no window, so long inputs are scored whole. Scores come back in input order.

Exports of the sentence-encoder variants (``model.encoder=sentence|both``) name their frozen sentence model in the
manifest (``sentence_model``, e.g. ``minilm``); the scorer loads it (offline for ``minilm``) and embeds the
delexicalised MR and output texts exactly as in training (:mod:`qe.ratpred.sentvec`). An export with a fine-tuned
sentence encoder (``model.finetune_sentence``) carries the encoder (weights in model.safetensors, config and tokenizer
in ``sentence_model/``): the scorer tokenises the texts and the network encodes them itself, offline.

Cross-encoder exports (``model.encoder=cross``) carry their encoder the same way; the scorer builds each
``[CLS] MR [SEP] output [SEP]`` pair as in training (lexical unless the manifest's ``delex`` says otherwise; the
truncation rule of :mod:`qe.ratpred.cross`, logged when it applies) and batches by the pairs' sub-word lengths.
Exports of a model with content features (``model.content_features``; manifest ``config.content_features``) carry
their matcher's lexicon; the scorer computes each pair's content vector from the lexical MR and output with the
function training used (:func:`qe.ratpred.content_features.content_vector`), so no data directory is needed.
``precision="bf16"`` runs the network under bfloat16 autocast on whatever device it is on (CPU or GPU; default
``"32"``: float32, the precision the export's figures and fingerprint were measured in).

Imports only the family's format and model modules (no Lightning, Hydra or training code).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from qe.core.runtime import default_budget, pick_device, run_length_batched
from qe.core.scorer import Scorer
from qe.ratpred.format import export_content, load_export
from qe.core.predictions import round_clip
from qe.ratpred.model import collate, net_inputs
from qe.ratpred.mr import delexicalise
from qe.core.mr import MR_FORMATS

#: padded (MR + output) tokens per forward pass
BUDGET = {"gpu": 200_000, "cpu": 20_000}
#: sentence-encoder exports: at most this many texts' vectors stay in memory between batches
SENTENCE_MEMORY = 50_000
#: scorer precisions: float32, or bfloat16 autocast (CPU or GPU)
PRECISIONS = ("32", "bf16")


class RatPredScorer(Scorer):
    accepts_ids = True
    name = "RatPred"
    requires_mrs = True

    def __init__(self, export_dir: str | Path, device: str | None = None, rounded: bool = True,
                 max_tokens: int | None = None, verify: bool = True, manifest: dict | None = None,
                 mr_format: str = "auto", precision: str = "32"):
        if str(precision) not in PRECISIONS:
            raise ValueError(f"precision={precision!r}: choose one of {', '.join(PRECISIONS)}")
        self.precision = str(precision)
        if mr_format not in MR_FORMATS:
            raise ValueError(f"mr_format={mr_format!r}: choose one of {', '.join(MR_FORMATS)}")
        self.mr_format = mr_format
        self.export_dir = Path(export_dir)
        self.manifest, net, self.vocab = load_export(self.export_dir, manifest, verify=verify)
        cfg = self.manifest["config"]
        self.delex = bool(cfg.get("delex", True))
        self.predict_cfg = cfg.get("predict", {})
        self.rounded = rounded
        self.device = pick_device(device)
        self.net = net.to(self.device).eval()
        self.sent = None
        if net.cross:
            from qe.ratpred.cross import PairTokens
            from qe.ratpred.format import SENTENCE_DIR

            self.sent = PairTokens(self.export_dir / SENTENCE_DIR, net.pair_max_len)
            self.sent.model_name = f"{cfg.get('sentence_model', '?')}+cross"
        elif net.finetune_sentence:
            from qe.ratpred.format import SENTENCE_DIR
            from qe.ratpred.sentvec import SentenceTokens

            self.sent = SentenceTokens(self.export_dir / SENTENCE_DIR)
            self.sent.model_name = f"{cfg.get('sentence_model', '?')}+finetuned"
        elif net.encoder != "gru":
            from qe.ratpred.sentvec import SentenceVectors

            name = cfg.get("sentence_model")
            if not name:
                raise ValueError(f"{self.export_dir}: model.encoder={net.encoder!r} but the manifest names no "
                                 "sentence_model")
            # bounded memory for long scoring runs: 50k texts' vectors (~75 MB at 384-d); MRs repeat, outputs rarely
            self.sent = SentenceVectors(str(name), device=str(self.device), max_cached=SENTENCE_MEMORY)
            want = int(cfg["model"].get("sent_dim", 0))
            if self.sent.dim != want:
                raise ValueError(f"{self.export_dir}: sentence model {name!r} gives {self.sent.dim}-d vectors, "
                                 f"the network was trained on {want}-d ones")
        #: the content features of a model trained with them (None otherwise)
        self.content = export_content(self.export_dir, self.manifest) if net.content_dim else None
        if net.content_dim and self.content is None:
            raise ValueError(f"{self.export_dir}: the network reads content features but the manifest has no "
                             "content_features entry")
        self.max_tokens = int(max_tokens or default_budget(self.device, **BUDGET))
        self._checksum = self.manifest.get("checksum", "")[:12]

    signature_libraries = ("torch",)

    def signature_fields(self) -> dict:
        p = self.predict_cfg
        rnd = {"round": p.get("round_to"), "clip": f"{p.get('clip_lo')}-{p.get('clip_hi')}"} if self.rounded \
            else {"pred": "raw"}
        return {"qe_gru": self._checksum,
                "enc": None if self.sent is None else f"{self.net.encoder}/{self.sent.model_name}",
                "setup": self.manifest["config"].get("setup", "?"), **rnd,
                "mr": None if self.mr_format == "auto" else self.mr_format,
                "content": None if self.content is None else self.content.manifest()["lexicon_sha"] or "rules",
                "prec": None if self.precision == "32" else self.precision}

    @torch.no_grad()
    def _score(self, outputs, *, mrs, refs, batch_size, progress, ids=None, **kwargs):
        if ids is not None and len(ids) != len(outputs):
            raise ValueError(f"ids: got {len(ids)} entries for {len(outputs)} outputs")
        enc, texts = [], []
        for i, (o, m) in enumerate(zip(outputs, mrs)):
            where = f"mrs[{i}] (record {ids[i]!r})" if ids is not None else f"mrs[{i}]"
            d = delexicalise(m, o, delex=self.delex, where=where, mr_format=self.mr_format)
            enc.append((self.vocab.encode(d.mr_tokens), self.vocab.encode(d.out_tokens)))
            texts.append((" ".join(d.mr_tokens), " ".join(d.out_tokens)))

        pairs = self.sent([t[0] for t in texts], [t[1] for t in texts]) if self.net.cross else None
        content = None
        if self.content is not None:  # lexical MR and output, exactly as in training
            where = [f"mrs[{i}] (record {ids[i]!r})" if ids is not None else f"mrs[{i}]" for i in range(len(mrs))]
            content = self.content(list(mrs), list(outputs), where)
        bf16 = self.precision == "bf16"

        def run(idx: list[int]) -> list[float]:
            if pairs is not None:
                items = [([1], [1], 0.0, pairs[i]) for i in idx]
            else:
                items = [(enc[i][0], enc[i][1], 0.0) for i in idx]
            if self.sent is not None and pairs is None:
                mv, ov = self.sent([texts[i][0] for i in idx]), self.sent([texts[i][1] for i in idx])
                items = [(*it, a, b) for it, a, b in zip(items, mv, ov)]
            if content is not None:
                items = [(*it, content[i]) for it, i in zip(items, idx)]
            b = {k: v.to(self.device) for k, v in collate(items).items()}
            with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=bf16):
                return self.net(*net_inputs(b)).float().cpu().tolist()

        lengths = [len(p[0]) for p in pairs] if pairs is not None else [len(m) + len(o) for m, o in enc]
        preds = np.asarray(run_length_batched(lengths, run, max_tokens=self.max_tokens,
                                              max_batch=batch_size, progress=progress, desc="RatPred"))
        if self.rounded:
            p = self.predict_cfg
            preds = round_clip(preds, p.get("round_to"), p.get("clip_lo"), p.get("clip_hi"))
        return preds.tolist()


def from_export(path: Path, manifest: dict, **options) -> RatPredScorer:
    return RatPredScorer(path, manifest=manifest, **options)
