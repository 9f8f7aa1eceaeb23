"""GRUEN preprocessing (Section 3): split an output into sentences and drop one-word sentences.

* Line breaks are sentence boundaries (the reference code turns ``\\n`` into ``". "`` before splitting).
* Each line is split with :func:`qe.core.text.split_sentences`: ``pysbd`` by default; ``nupunkt`` (a Punkt
  implementation, the paper's tokenizer family) as the option. pysbd is the default because nupunkt keeps
  "... will meet Oct. Infant cough-and-cold products ..." (Table 11 (e)) as one sentence.
* A sentence counts as a sentence only if it has more than one word once ASCII punctuation is removed
  (``len(s.translate(no_punct).split()) > 1``, the reference code's rule): fragments such as ``"Yes."`` are
  dropped.

An output left with no sentence (empty, whitespace only, or only one-word fragments) is an **empty output**;
:mod:`qe.gruen.scorer` documents the score it gets.
"""
from __future__ import annotations

import string

from qe.core.text import split_sentences

_NO_PUNCT = str.maketrans("", "", string.punctuation)


def word_count(sentence: str) -> int:
    return len(sentence.translate(_NO_PUNCT).split())


def preprocess(text: str, splitter: str = "pysbd", min_words: int = 2) -> list[str]:
    """Sentences of ``text`` with at least ``min_words`` words (punctuation removed)."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    out: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        for s in split_sentences(line, method=splitter):
            if word_count(s) >= min_words:
                out.append(s)
    return out
