"""Shared parsing, encoding and caching for the discourse scorers.

One :class:`DiscourseEngine` holds the spaCy pipeline, the word vectors and (loaded on first use) the
contextual encoder. It parses and encodes each distinct text once and keeps the results in LRU caches, so
scoring seven systems against the same references, or several DiscoScore variants on the same data, encodes
every text once. Pass ``engine=`` to several scorers to share it.

Token embeddings (DS-Focus)
    A *word* (spaCy token) takes the embedding of its sub-word pieces: ``subword="last"`` (the authors' code
    uses the last piece of every word), ``"first"`` or ``"mean"``. Words with no piece (characters the
    tokenizer drops) get a zero vector. Word embeddings are L2-normalised when the DS-Focus option
    ``normalize`` is on (authors' code).
Sentence embeddings (DS-Sent)
    The mean of the embeddings of the pieces inside the sentence, all pieces encoded in the context of the
    whole text (authors' code).
"""
from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from qe.core.config import as_flag
from qe.discourse.foci import ParsedText, WordVectors, group_lemmas, parse_texts

log = logging.getLogger(__name__)


@dataclass
class TextEmbedding:
    words: np.ndarray  # [n_words, d]
    sentences: np.ndarray  # [n_sentences, d]


class _LRU(OrderedDict):
    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def get_(self, key):
        if key in self:
            self.move_to_end(key)
            return self[key]
        return None

    def put(self, key, value):
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


def pool_pieces(parsed: ParsedText, offsets: np.ndarray, vectors: np.ndarray, subword: str = "last") -> TextEmbedding:
    """Word embeddings (one per ``parsed.words``) and sentence embeddings from piece embeddings + offsets."""
    d = vectors.shape[1]
    nw, ns = len(parsed.words), len(parsed.sentences)
    W = np.zeros((nw, d), np.float32)
    S = np.zeros((ns, d), np.float32)
    if nw == 0 or len(offsets) == 0:
        return TextEmbedding(W, S)
    starts = offsets[:, 0]
    wstart = np.array([w.start for w in parsed.words])
    wend = np.array([w.end for w in parsed.words])
    owner = np.searchsorted(wstart, starts, side="right") - 1
    valid = (owner >= 0) & (starts < wend[np.clip(owner, 0, nw - 1)])
    missing = 0
    for w in range(nw):
        sel = np.nonzero(valid & (owner == w))[0]
        if not len(sel):
            missing += 1
            continue
        if subword == "last":
            W[w] = vectors[sel[-1]]
        elif subword == "first":
            W[w] = vectors[sel[0]]
        elif subword == "mean":
            W[w] = vectors[sel].mean(0)
        else:
            raise ValueError(f"subword={subword!r}: use last, first or mean")
    if missing:
        log.debug("%d word(s) without a sub-word piece got a zero embedding", missing)
    sstart = np.array([s for s, _ in parsed.sentences])
    sown = np.searchsorted(sstart, starts, side="right") - 1
    for s in range(ns):
        sel = sown == s
        if sel.any():
            S[s] = vectors[sel].mean(0)
    return TextEmbedding(W, S)


class DiscourseEngine:
    def __init__(self, model: str = "minilm", spacy_model: str = "en_core_web_md", vectors: str = "spacy",
                 splitter: str = "pysbd", lowercase: bool = False, device: str | None = None,
                 layer: int | None = None, max_tokens: int | None = None, window: int | None = None,
                 stride: int | None = None, subword: str = "last", cache_size: int = 50_000):
        if subword not in ("last", "first", "mean"):
            raise ValueError(f"subword={subword!r}: use last, first or mean")
        self.model = str(model)
        self.spacy_model = spacy_model
        self.vectors_source = str(vectors)
        self.splitter = splitter
        self.lowercase = as_flag(lowercase, "lowercase")
        self.subword = subword
        self._enc_kw = dict(device=device, layer=layer, max_tokens=max_tokens, window=window, stride=stride)
        self._nlp = None
        self._vectors = None
        self._encoder = None
        self._parsed = _LRU(cache_size)
        self._embedded = _LRU(cache_size)
        self._groups = _LRU(cache_size)

    # ---- lazily loaded resources ---------------------------------------------------------------------------
    @property
    def nlp(self):
        if self._nlp is None:
            from qe.core.offline import load_spacy

            self._nlp = load_spacy(self.spacy_model)
        return self._nlp

    @property
    def vectors(self) -> WordVectors:
        if self._vectors is None:
            self._vectors = WordVectors(self.vectors_source, nlp=self.nlp if self.vectors_source == "spacy" else None)
        return self._vectors

    @property
    def encoder(self):
        if self._encoder is None:
            from qe.core.encoder import ContextualEncoder

            self._encoder = ContextualEncoder(self.model, **self._enc_kw)
        return self._encoder

    # ---- cached work ----------------------------------------------------------------------------------------
    def parse(self, texts: list[str]) -> list[ParsedText]:
        todo = [t for t in dict.fromkeys(texts) if self._parsed.get_(t) is None]
        if todo:
            for t, p in zip(todo, parse_texts(todo, self.nlp, self.splitter, self.lowercase)):
                self._parsed.put(t, p)
        return [self._parsed.get_(t) or parse_texts([t], self.nlp, self.splitter, self.lowercase)[0] for t in texts]

    def embed(self, texts: list[str], progress: bool = False, batch_size: int | None = None) -> list[TextEmbedding]:
        todo = [t for t in dict.fromkeys(texts) if self._embedded.get_(t) is None]
        if todo:
            parsed = self.parse(todo)
            pieces = self.encoder.encode([p.text for p in parsed], progress=progress, batch_size=batch_size)
            for t, p, pe in zip(todo, parsed, pieces):
                self._embedded.put(t, pool_pieces(p, pe.offsets, pe.vectors, self.subword))
        out = []
        for t in texts:
            e = self._embedded.get_(t)
            if e is None:  # evicted by a tiny cache: recompute
                p = self.parse([t])[0]
                pe = self.encoder.encode([p.text])[0]
                e = pool_pieces(p, pe.offsets, pe.vectors, self.subword)
            out.append(e)
        return out

    def groups(self, lemmas, threshold: float) -> list[tuple[str, ...]]:
        key = (frozenset(lemmas), float(threshold))
        g = self._groups.get_(key)
        if g is None:
            g = group_lemmas(list(key[0]), self.vectors, threshold)
            self._groups.put(key, g)
        return g

    def signature_fields(self, with_encoder: bool = True) -> dict:
        """The engine's part of a discourse scorer's signature (the encoder only when the scorer uses it)."""
        fields = {}
        if with_encoder:
            lay = self._enc_kw.get("layer")
            fields = {"enc": self.model, "layer": "last" if lay is None else lay, "subword": self.subword}
        return {**fields, "spacy_model": self.spacy_model, "split": self.splitter, "lower": int(self.lowercase)}
