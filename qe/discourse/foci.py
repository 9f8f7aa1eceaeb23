"""Foci: nouns and semantic entities (Zhao, Strube & Eger 2023, Sec. 3 "Choice of Focus").

Parsing
    A text is split into sentences with :func:`qe.core.text.split_sentences` (pysbd by default), the sentences are
    re-joined with single spaces (so sentence and token boundaries coincide), and the result is run through a
    spaCy pipeline (:func:`qe.core.offline.load_spacy`, ``en_core_web_md`` by default). Every spaCy token that is not
    whitespace is a *word*; a word whose coarse POS is ``NOUN`` or ``PROPN`` is a *noun*, identified by its
    lemma, lower-cased (so "Berlin" and "berlin" are one focus).

NN foci
    One focus per distinct noun lemma; its occurrences are the words carrying that lemma.

Entity foci
    Distinct noun lemmas are grouped into semantic entities: two lemmas are linked when the cosine of their word
    vectors is greater than ``threshold``; entities are the connected components of that graph (a lemma without
    a vector, or without a similar partner, is an entity on its own). The entity's key is the sorted tuple of
    its lemmas; its occurrences are the union of its lemmas' occurrences. This is the paper's construction
    (the paper used Dep2Vec vectors; here the vectors are configurable, see :class:`WordVectors`).
    ``entity_matching="exact"`` (paper) matches an entity between hypothesis and reference only if both texts
    produced the same group of lemmas; ``"joint"`` builds the groups once over the union of both texts' lemmas,
    so that {car} in one text and {car, vehicle} in the other are the same entity.
"""
from __future__ import annotations

import bz2
import gzip
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

NOUN_POS = ("NOUN", "PROPN")

FocusKey = tuple  # (lemma,) for NN, (lemma1, lemma2, ...) sorted for entities


@dataclass
class Word:
    start: int
    end: int
    lemma: str
    pos: str
    sent: int


@dataclass
class ParsedText:
    """A text after sentence splitting and tagging. ``text`` is the normalised text the spans refer to."""

    text: str
    sentences: list[tuple[int, int]]
    words: list[Word]
    nouns: dict[str, list[int]] = field(default_factory=dict)  # lemma -> word indices, in text order

    @property
    def empty(self) -> bool:
        return not self.words

    def noun_foci(self) -> dict[FocusKey, list[int]]:
        return {(lem,): idx for lem, idx in self.nouns.items()}

    def sentences_of(self, word_indices: list[int]) -> list[int]:
        return [self.words[i].sent for i in word_indices]


def parse_texts(texts: list[str], nlp, splitter: str = "pysbd", lowercase: bool = False,
                batch_size: int = 64) -> list[ParsedText]:
    from qe.core.text import split_sentences

    prepared = []
    for t in texts:
        if lowercase:
            t = t.lower()
        sents = split_sentences(t, method=splitter)
        spans, pos = [], 0
        for s in sents:
            spans.append((pos, pos + len(s)))
            pos += len(s) + 1
        prepared.append((" ".join(sents), spans))
    out = []
    docs = nlp.pipe([p[0] for p in prepared], batch_size=batch_size)
    for (norm, spans), doc in zip(prepared, docs):
        words: list[Word] = []
        nouns: dict[str, list[int]] = {}
        starts = np.array([s for s, _ in spans], dtype=np.int64)
        for tok in doc:
            if tok.is_space:
                continue
            sent = int(np.searchsorted(starts, tok.idx, side="right") - 1) if len(starts) else 0
            lemma = (tok.lemma_ or tok.text).lower()
            words.append(Word(tok.idx, tok.idx + len(tok.text), lemma, tok.pos_, sent))
            if tok.pos_ in NOUN_POS:
                nouns.setdefault(lemma, []).append(len(words) - 1)
        out.append(ParsedText(norm, spans, words, nouns))
    return out


class WordVectors:
    """Static word vectors for grouping nouns into entities.

    ``source="spacy"``: the vectors of the spaCy pipeline used for parsing (``en_core_web_md``: 300-d, 20k
    distinct vectors shared by 685k keys, so rare words that were pruned to the same row have cosine 1.0).
    Any other string is a path to a word2vec *text* file (``word v1 ... vd`` per line, optional ``n d`` header,
    optionally ``.gz`` / ``.bz2``), e.g. Levy & Goldberg's dependency-based ``deps.words`` used in the paper.
    Look-up tries the word as given, then lower-cased.
    """

    def __init__(self, source: str = "spacy", nlp=None):
        self.source = str(source)
        self._nlp = nlp
        self._table: dict[str, np.ndarray] | None = None
        if self.source != "spacy":
            self._table = self._read_text_vectors(Path(self.source))
        elif nlp is None:
            raise ValueError("WordVectors('spacy') needs the spaCy pipeline")
        elif nlp.vocab.vectors.shape[0] == 0:
            raise ValueError("the spaCy pipeline has no word vectors (use en_core_web_md or pass a vectors file)")

    @staticmethod
    def _read_text_vectors(path: Path) -> dict[str, np.ndarray]:
        if not path.is_file():
            raise FileNotFoundError(f"word-vector file {path} not found")
        opener = {".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix, open)
        table: dict[str, np.ndarray] = {}
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            for ln, line in enumerate(f, 1):
                parts = line.rstrip().split(" ")
                if ln == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                    continue
                if len(parts) < 3:
                    continue
                try:
                    table[parts[0]] = np.asarray(parts[1:], dtype=np.float32)
                except ValueError:
                    raise ValueError(f"{path}:{ln}: not a word2vec text line") from None
        return table

    def get(self, word: str) -> np.ndarray | None:
        for w in (word, word.lower()):
            if self._table is not None:
                v = self._table.get(w)
                if v is not None:
                    return v
            else:
                vocab = self._nlp.vocab
                if vocab.has_vector(w):
                    return np.asarray(vocab.get_vector(w), dtype=np.float32)
        return None

    def similarity_matrix(self, words: list[str]) -> np.ndarray:
        """Cosine similarities; pairs where a word has no (or a zero) vector get -inf (never linked)."""
        n = len(words)
        sims = np.full((n, n), -np.inf)
        vecs = [self.get(w) for w in words]
        have = [i for i, v in enumerate(vecs) if v is not None and np.linalg.norm(v) > 0]
        if have:
            m = np.stack([vecs[i] / np.linalg.norm(vecs[i]) for i in have]).astype(np.float64)
            sims[np.ix_(have, have)] = m @ m.T
        return sims


def group_lemmas(lemmas: list[str], vectors: WordVectors, threshold: float) -> list[tuple[str, ...]]:
    """Connected components of the graph linking lemmas with vector cosine > ``threshold`` (sorted tuples)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    lemmas = sorted(set(lemmas))
    if not lemmas:
        return []
    sims = vectors.similarity_matrix(lemmas)
    adj = sims > threshold
    np.fill_diagonal(adj, False)
    _, labels = connected_components(csr_matrix(adj), directed=False)
    groups: dict[int, list[str]] = {}
    for lem, lab in zip(lemmas, labels):
        groups.setdefault(int(lab), []).append(lem)
    return sorted(tuple(sorted(g)) for g in groups.values())


def entity_foci(parsed: ParsedText, groups: list[tuple[str, ...]]) -> dict[FocusKey, list[int]]:
    """Foci of ``parsed`` under an entity grouping (groups may contain lemmas absent from this text)."""
    out: dict[FocusKey, list[int]] = {}
    for g in groups:
        idx = sorted(i for lem in g for i in parsed.nouns.get(lem, ()))
        if idx:
            out[g] = idx
    return out


def sentence_foci(parsed: ParsedText, foci: dict[FocusKey, list[int]]) -> list[set]:
    """For each sentence, the set of foci occurring in it."""
    per = [set() for _ in parsed.sentences]
    for key, idx in foci.items():
        for i in idx:
            per[parsed.words[i].sent].add(key)
    return per
