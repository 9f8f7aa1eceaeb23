"""Non-redundancy (Section 3, Appendix B.1): four inter-sentence features over every pair of sentences.

For a pair (a, b) of sentences (stripped strings; words = whitespace tokens, punctuation attached, as the
reference code) the features and the condition under which each one is a *hit* (defaults as the paper):

* **A** longest common substring (characters) > ``a_ratio`` (0.8) x characters of the shorter sentence;
* **B** words in that longest common substring > ``b_ratio`` (0.8) x words of the shorter sentence;
* **C** character edit distance (Levenshtein) < ``c_ratio`` (0.6) x characters of the longer sentence;
* **D** number of words of a that occur in b > ``d_ratio`` (0.8) x words of the shorter sentence.

(The paper's text writes the A/B/D thresholds as "< 80 %", but the hits it lists in Table 10 and the
reference code are "more overlap than 80 %"; that is what is implemented.) Identical sentences, or one
contained in the other, count as all four hits. Pairs whose longer sentence has fewer than ``min_words`` (5)
words are not compared (the reference code's guard against short fragments).
y_r = -``penalty`` (0.1) x total hits over all C(n, 2) pairs; y_r <= 0, and 0 for fewer than two sentences.

The longest common substring uses :class:`difflib.SequenceMatcher` (standard library) with the junk
heuristic off so that long sentences are not treated specially; the edit distance is NLTK's
:func:`nltk.edit_distance` (unit costs).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class RedundancyConfig:
    a_ratio: float = 0.8
    b_ratio: float = 0.8
    c_ratio: float = 0.6
    d_ratio: float = 0.8
    min_words: int = 5
    penalty: float = 0.1


def _edit_distance(a: str, b: str) -> int:
    from nltk.metrics.distance import edit_distance

    return int(edit_distance(a, b))


def pair_stats(a: str, b: str) -> tuple:
    """Raw feature values of a pair (threshold-free, so thresholds can be tuned without recomputing):
    (contained, max_words, min_words, lcs_chars, lcs_words, min_chars, edit, max_chars, common_words)."""
    a, b = a.strip(), b.strip()
    aw, bw = a.split(), b.split()
    contained = a == b or a in b or b in a
    if contained:
        return (True, max(len(aw), len(bw)), min(len(aw), len(bw)), 0, 0, 0, 0, 0, 0)
    m = difflib.SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b))
    lcs_words = len(a[m.a : m.a + m.size].strip().split())
    bset = set(bw)
    common = sum(1 for w in aw if w in bset)
    return (False, max(len(aw), len(bw)), min(len(aw), len(bw)), m.size, lcs_words, min(len(a), len(b)),
            _edit_distance(a, b), max(len(a), len(b)), common)


def features_from_stats(st: tuple, cfg: RedundancyConfig = RedundancyConfig()) -> str:
    contained, maxw, minw, lcs_c, lcs_w, minc, edit, maxc, common = st
    if contained:
        return "ABCD"
    if maxw < cfg.min_words:
        return ""
    hits = ""
    hits += "A" if lcs_c > cfg.a_ratio * minc else ""
    hits += "B" if lcs_w > cfg.b_ratio * minw else ""
    hits += "C" if edit < cfg.c_ratio * maxc else ""
    hits += "D" if common > cfg.d_ratio * minw else ""
    return hits


def pair_features(a: str, b: str, cfg: RedundancyConfig = RedundancyConfig()) -> str:
    """The hit features of a pair as a string of letters, e.g. ``"ABCD"``, ``"CD"`` or ``""``."""
    return features_from_stats(pair_stats(a, b), cfg)


def all_pair_stats(sentences: list[str]) -> list[tuple]:
    return [pair_stats(sentences[i], sentences[j]) for i in range(len(sentences) - 1)
            for j in range(i + 1, len(sentences))]


def redundancy_hits(sentences: list[str], cfg: RedundancyConfig = RedundancyConfig()) -> int:
    return sum(len(features_from_stats(st, cfg)) for st in all_pair_stats(sentences))


def redundancy_score(sentences: list[str], cfg: RedundancyConfig = RedundancyConfig()) -> float:
    """y_r = -penalty x hits (0 for fewer than two sentences)."""
    return -cfg.penalty * redundancy_hits(sentences, cfg)
