"""Synthetic training instances with artificial errors (RatPred, Section 3.3).

Five error types, applied to the *delexicalised* output tokens (so placeholders count as content words and
values are put back afterwards by :func:`qe.ratpred.mr.relexicalise`):

1. ``remove``          - remove a word (never the last word left);
2. ``duplicate``       - duplicate a word at its current position;
3. ``duplicate_rand``  - duplicate a word at a random position;
4. ``insert_rand``     - insert a random dictionary word (before the chosen word);
5. ``replace``         - replace a word by a random dictionary word (a different one when possible).

The word to act on is drawn uniformly among *content* tokens: articles and punctuation
(``^([!?,:.;]|the|an?)$``) are avoided while other tokens exist. The dictionary holds every token of the
training outputs with +1-smoothed unigram probabilities (:class:`Dictionary`).

Ratings (:func:`lowered_rating`): -1 per error; a rating of 5.5 or 6 drops to 4 at the first error, then -1
per further error; never below ``min_rating`` (1). This is the paper's rule. (The authors' released converter
computes ``max(1, min(4, r - n))``, which keeps a 6 at 4 for two errors; we follow the paper's text.)
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

ERROR_TYPES = ("remove", "duplicate", "duplicate_rand", "insert_rand", "replace")
FUNCTION_RE = re.compile(r"^([!?,:.;]|the|an?)$")


def lowered_rating(rating: float, n_errors: int, min_rating: float = 1.0) -> float:
    """Rating after ``n_errors`` synthetic errors (paper, Section 3.3)."""
    if n_errors < 0:
        raise ValueError(f"n_errors must be >= 0, got {n_errors}")
    if n_errors == 0:
        return float(rating)
    first = 4.0 if rating >= 5.5 else rating - 1.0
    return float(max(min_rating, first - (n_errors - 1)))


@dataclass
class Dictionary:
    """Word list with +1-smoothed unigram probabilities from all training outputs."""

    words: list[str]
    probs: np.ndarray

    @classmethod
    def from_token_lists(cls, token_lists) -> "Dictionary":
        c = Counter(t for toks in token_lists for t in toks)
        if not c:
            raise ValueError("cannot build a synthetic-error dictionary from no tokens")
        words = sorted(c)
        freq = np.array([c[w] + 1.0 for w in words])
        return cls(words, freq / freq.sum())

    def sample(self, rng: np.random.Generator, avoid: str | None = None, trials: int = 100) -> str:
        for _ in range(trials):
            w = self.words[int(rng.choice(len(self.words), p=self.probs))]
            if w != avoid:
                return w
        return w


def pick_position(tokens: list[str], rng: np.random.Generator) -> int:
    """Uniform among content tokens; any token when there are only articles/punctuation."""
    content = [i for i, t in enumerate(tokens) if not FUNCTION_RE.match(t)]
    pool = content if content else list(range(len(tokens)))
    return int(pool[int(rng.integers(len(pool)))])


def apply_error(tokens: list[str], kind: str, rng: np.random.Generator, dictionary: Dictionary,
                pos: int | None = None) -> list[str]:
    """Return a copy of ``tokens`` with one error of ``kind``; ``pos`` overrides the position choice."""
    if kind not in ERROR_TYPES:
        raise ValueError(f"unknown error type {kind!r}; choose from {ERROR_TYPES}")
    toks = list(tokens)
    if not toks:
        if kind in ("insert_rand", "replace", "duplicate_rand"):
            return [dictionary.sample(rng)]
        return toks
    i = pick_position(toks, rng) if pos is None else pos
    tok = toks[i]
    if kind == "remove":
        if len(toks) <= 1:
            raise ValueError("the last word left is never removed")
        del toks[i]
    elif kind == "duplicate":
        toks.insert(i, tok)
    elif kind == "duplicate_rand":
        toks.insert(int(rng.integers(len(toks) + 1)), tok)
    elif kind == "insert_rand":
        toks.insert(i, dictionary.sample(rng))
    elif kind == "replace":
        toks[i] = dictionary.sample(rng, avoid=tok)
    return toks


def distort(tokens: list[str], n_errors: int, rng: np.random.Generator, dictionary: Dictionary,
            kinds: tuple[str, ...] = ERROR_TYPES) -> tuple[list[str], list[str]]:
    """Apply ``n_errors`` random errors; ``remove`` is not drawn when one token is left. Returns (tokens, kinds)."""
    toks = list(tokens)
    done = []
    for _ in range(n_errors):
        allowed = [k for k in kinds if not (k == "remove" and len(toks) <= 1)]
        kind = allowed[int(rng.integers(len(allowed)))]
        toks = apply_error(toks, kind, rng, dictionary)
        done.append(kind)
    return toks, done
