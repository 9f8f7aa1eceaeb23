"""Reference-based metrics behind the scorer API, and Kann et al. (2018)'s combinations with an LM score.

    import qe
    qe.load("bleu-4").score(outputs, refs=[[r1, r2], ...])
    qe.load("rouge-l-mult").score(outputs, refs=refs)            # Kann et al.'s ROUGE-L-mult
    qe.load("rouge-lm", lm="exports/wp").score(outputs, refs=refs)  # z(ROUGE-L-mult) + z(WPSLOR)
    qe.load("exports/svr").score(outputs, refs=refs)              # a trained SVR combiner (task=svr)

Metric definitions, multi-reference modes and the handling of empty inputs: :mod:`qe.refmetrics.base`,
:mod:`qe.refmetrics.ngram`, :mod:`qe.refmetrics.rouge`, :mod:`qe.refmetrics.overlap`, :mod:`qe.refmetrics.bertscore`
(BERTScore through the bert-score package); :mod:`qe.refmetrics.mrbertscore` is its one referenceless member
(``mr-bertscore``: the output against its MR written out as text). Registered names and the
papers' presets: :data:`qe.registry.SCORERS` (``qe.refmetrics.describe()`` prints them).
"""
from __future__ import annotations

from qe.refmetrics.base import MODES, RefScorer, tokenize


def corpus_bleu(outputs, refs, **options) -> float:
    """sacrebleu corpus BLEU (0-1) of ``outputs`` against ``refs`` (one string or a list of strings per output)."""
    from qe.refmetrics.ngram import BLEU

    return BLEU(**options).corpus_score(outputs, refs)


def describe() -> str:
    """Every registered reference-metric name (presets of the papers included) and what it is."""
    from qe.registry import describe as _describe

    return _describe(prefix="qe.refmetrics")


__all__ = ["MODES", "RefScorer", "corpus_bleu", "describe", "tokenize"]
