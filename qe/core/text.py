"""Sentence splitting shared by the document-level scorers (GRUEN, DiscoScore, ...).

pysbd (rule-based, Golden-Rules tested, works offline) is the default; ``nupunkt`` (Punkt-style) is the
alternative. Both are field libraries: nothing is hand-written here except whitespace clean-up.
"""
from __future__ import annotations

import functools
import re

_WS = re.compile(r"\s+")


@functools.lru_cache(maxsize=4)
def _pysbd(language: str = "en"):
    import pysbd

    return pysbd.Segmenter(language=language, clean=False)


def split_sentences(text: str, method: str = "pysbd", language: str = "en") -> list[str]:
    """Split ``text`` into sentences (stripped, empty ones dropped). Empty/whitespace text gives ``[]``."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    if method == "newline":  # one sentence per line, as given
        return [_WS.sub(" ", line).strip() for line in text.splitlines() if line.strip()]
    text = _WS.sub(" ", text).strip()
    if not text:
        return []
    if method == "pysbd":
        sents = _pysbd(language).segment(text)
    elif method == "nupunkt":
        import nupunkt

        sents = nupunkt.sent_tokenize(text)
    else:
        raise ValueError(f"unknown sentence splitter {method!r}; use pysbd, nupunkt or newline")
    return [s.strip() for s in sents if s and s.strip()]
