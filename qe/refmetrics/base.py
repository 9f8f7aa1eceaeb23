"""Shared machinery of the reference-based metrics: tokenisation, multi-reference modes, empty inputs.

Multi-reference modes (option ``mode``; each metric lists the ones it supports in ``MODES``):

* ``native``  -- the metric's own multi-reference definition (BLEU/NIST: n-gram counts clipped by the maximum
  count in any reference and the closest reference length; TER: fewest edits over the references divided by
  the average reference length; chrF: sacrebleu's best-reference statistics; METEOR: nltk's best reference;
  CIDEr-D: mean over references; SE: mean over references, as Reiter & Belz 2009).
* ``max``     -- score against each reference separately and keep the best one (the maximum for metrics where
  higher is better, the minimum for TER).
* ``mean``    -- the mean of the per-reference scores.
* ``union``   -- pool the references' n-grams first (multiset union: the maximum count of each n-gram in any
  reference; sets for LR2/LR3 as Toutanova et al. 2016) and score against the pool (n-gram metrics only).
* ``first``   -- the first reference only (Kann et al.'s ``-single`` variants).
* ``jackknife`` -- the jackknifing procedure of Lin (2004, section 3.1) and of ROUGE before version 1.4: the mean
  over the K leave-one-out subsets of the best score in the subset (equals the score itself for one reference).
  ROUGE-1.4 dropped it ("Remove internal Jackknifing procedure", ROUGE-1.5.5.pl's revision notes); ROUGE-1.5.5
  scores multiple references with ``-f A`` (pool the counts over the references) or ``-f B`` (the reference with
  the best recall): :class:`~qe.refmetrics.rouge.RougeScore` modes ``rouge155-a`` / ``rouge155-b``. Reiter & Belz
  (2009) describe the jackknife, so their presets keep it.

Corpus (system) level: :meth:`RefScorer.corpus_score` is the metric for a whole set of outputs as its reference
implementation computes it. ``CORPUS`` says how: ``"pooled"`` (BLEU, chrF, TER through sacrebleu; NIST as mteval:
counts summed over the set before the ratios are taken) or ``"mean"`` (the mean of sentence scores, which is what
ROUGE-1.5.5 reports by default (``-t 0``), what pycocoevalcap reports for CIDEr-D, and what nltk offers for METEOR;
METEOR 1.5 would pool its statistics). The meta-evaluation computes system-level correlations on the corpus score
of each system where ``CORPUS == "pooled"`` (for ``"mean"`` it equals the mean of instance scores).

Empty inputs (documented behaviour, tested):

* A reference that is empty or whitespace-only is dropped. An output with no (non-empty) reference raises
  :class:`~qe.errors.MissingInputError` naming its index, or scores NaN with ``missing_refs="nan"``.
* An empty or whitespace-only output is scored by the metric like any other output (it simply matches nothing):
  0 for the similarity metrics, TER 1.0 (every reference word has to be inserted), SE 0.0.

All scores are on a 0-1 scale where the metric has one (sacrebleu's 0-100 BLEU, chrF and TER are divided by
100); NIST and CIDEr-D keep their own scales (NIST 0 to about 15, CIDEr-D 0 to 10).

These metrics are string computations on the CPU: there is no model, no GPU path and no window; outputs of any
length are scored whole. ``batch_size`` is accepted and ignored.
"""
from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Iterable

import numpy as np

from qe.errors import MissingInputError
from qe.core.scorer import Scorer

log = logging.getLogger(__name__)

MODES = ("native", "max", "mean", "union", "first", "jackknife")

# --------------------------------------------------------------------------------------------------------------
# tokenisation
# --------------------------------------------------------------------------------------------------------------
_PUNCT_TOKEN = re.compile(r"^[^\w\s]+$", re.UNICODE)


@lru_cache(maxsize=1)
def _tok13a():
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()


@lru_cache(maxsize=1)
def _rouge_tokenizer():
    from rouge_score import tokenizers

    return tokenizers.DefaultTokenizer(use_stemmer=False)


TOKENIZERS = ("13a", "rouge", "space", "13a-nopunct")


def tokenize(text: str, method: str = "13a", lowercase: bool = True) -> list[str]:
    """Split ``text`` into word tokens.

    * ``13a``: sacrebleu's mteval-v13a tokeniser (punctuation split off), the BLEU/NIST default;
    * ``13a-nopunct``: 13a, then tokens made only of punctuation dropped (close to the coco-caption PTB
      tokeniser used for CIDEr, which removes punctuation);
    * ``rouge``: rouge-score's tokeniser (lower-cases, replaces every non-alphanumeric character by a space);
    * ``space``: split on whitespace only (pre-tokenised input).
    """
    if method == "rouge":
        return _rouge_tokenizer().tokenize(text)
    if lowercase:
        text = text.lower()
    if method == "space":
        return text.split()
    if method in ("13a", "13a-nopunct"):
        toks = _tok13a()(text.strip()).split()
        if method == "13a-nopunct":
            toks = [t for t in toks if not _PUNCT_TOKEN.match(t)]
        return toks
    raise ValueError(f"tokenize={method!r}: choose one of {TOKENIZERS}")


def ngrams(tokens: Sequence[str], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def f_measure(p: float, r: float, beta: float = 1.0) -> float:
    if p <= 0.0 or r <= 0.0:
        return 0.0
    b2 = beta * beta
    return (1 + b2) * p * r / (r + b2 * p)


def prf(match: float, hyp_total: float, ref_total: float) -> dict[str, float]:
    p = match / hyp_total if hyp_total > 0 else 0.0
    r = match / ref_total if ref_total > 0 else 0.0
    return {"p": p, "r": r, "f": f_measure(p, r)}


# --------------------------------------------------------------------------------------------------------------
# the scorer base class
# --------------------------------------------------------------------------------------------------------------
class RefScorer(Scorer):
    """A reference-based metric. Subclasses implement :meth:`pair` (one output vs one reference, preprocessed)
    and optionally :meth:`native` / :meth:`union` (one output vs all its references) and :meth:`prepare`.
    """

    requires_refs = True
    #: modes this metric supports, first = default
    MODES: tuple[str, ...] = ("max", "mean", "first", "jackknife")
    #: how :meth:`corpus_score` aggregates a set: "pooled" (its own corpus-level definition) or "mean" (of sentences)
    CORPUS = "mean"
    #: preprocessing of outputs and references: "tokens" (list of str) or "text" (the string, for sacrebleu)
    INPUT = "tokens"
    default_tokenize = "13a"
    default_lowercase = True

    def __init__(self, mode: str | None = None, tokenize: str | None = None, lowercase: bool | None = None,
                 missing_refs: str = "error", **options: Any):
        mode = (mode or self.MODES[0]).lower()
        if mode not in self.MODES:
            raise ValueError(f"{self.name}: mode={mode!r} is not supported; choose one of {self.MODES}")
        if missing_refs not in ("error", "nan"):
            raise ValueError("missing_refs must be 'error' or 'nan'")
        self.mode = mode
        self.tokenize_method = tokenize or self.default_tokenize
        if self.tokenize_method not in TOKENIZERS:
            raise ValueError(f"tokenize={self.tokenize_method!r}: choose one of {TOKENIZERS}")
        self.lowercase = self.default_lowercase if lowercase is None else bool(lowercase)
        self.missing_refs = missing_refs
        if options:
            raise TypeError(f"{self.name}: unknown option(s) {sorted(options)}")

    # ---- to implement --------------------------------------------------------------------------------------
    def pair(self, hyp: Any, ref: Any) -> float:
        raise NotImplementedError

    def native(self, hyp: Any, refs: list[Any]) -> float:
        raise NotImplementedError(f"{self.name}: no native multi-reference definition")

    def union(self, hyp: Any, refs: list[Any]) -> float:
        raise NotImplementedError(f"{self.name}: mode 'union' is not defined")

    def prepare(self, outputs: list[Any], refs: list[list[Any]]) -> None:
        """Called once per ``score`` call with the preprocessed set (CIDEr-D computes document frequencies)."""

    # ---- shared ---------------------------------------------------------------------------------------------
    def preprocess(self, text: str) -> Any:
        if self.INPUT == "text":
            return text.lower() if self.lowercase else text
        return tokenize(text, self.tokenize_method, self.lowercase)

    def _options(self) -> dict:
        """The metric's own options (after mode, tokenizer and lower-casing) for its signature."""
        return {}

    def signature_fields(self) -> dict:
        tok = self.tokenize_method if self.INPUT == "tokens" else getattr(self, "_lib_tok", self.tokenize_method)
        return {"mode": self.mode, "tok": tok, "lc": bool(self.lowercase), **self._options()}

    def aggregate(self, per_ref: Sequence[float]) -> float:
        """Combine per-reference scores according to the mode (max/mean/first/jackknife)."""
        s = np.asarray(per_ref, dtype=float)
        best = np.max if self.higher_is_better else np.min
        if self.mode == "max":
            return float(best(s))
        if self.mode == "mean":
            return float(s.mean())
        if self.mode == "first":
            return float(s[0])
        if self.mode == "jackknife":
            if len(s) == 1:
                return float(s[0])
            return float(np.mean([best(np.delete(s, k)) for k in range(len(s))]))
        raise ValueError(self.mode)

    def score_one(self, hyp: Any, refs: list[Any]) -> float:
        if self.mode == "native":
            return float(self.native(hyp, refs))
        if self.mode == "union":
            return float(self.union(hyp, refs))
        if self.mode == "first":
            return float(self.pair(hyp, refs[0]))
        return self.aggregate([self.pair(hyp, r) for r in refs])

    def _clean_refs(self, refs: list[list[str]]) -> list[list[str]]:
        out = []
        for i, rr in enumerate(refs):
            kept = [r for r in rr if r.strip()]
            if not kept and self.missing_refs == "error":
                raise MissingInputError(
                    f"{self.name}: output {i} has no non-empty reference (pass missing_refs='nan' to score it NaN)")
            out.append(kept)
        return out

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw) -> list[float]:
        from qe.core.runtime import Progress

        refs = self._clean_refs(refs)
        hyps = [self.preprocess(o) for o in outputs]
        prefs = [[self.preprocess(r) for r in rr] for rr in refs]
        self.prepare(hyps, prefs)
        scores = []
        # a bar when progress is on; a log line every 30 s either way (a long run says what it is doing)
        with Progress(len(hyps), f"scoring {self.name}", enabled=progress, unit="sent") as bar:
            for h, rr in zip(hyps, prefs):
                scores.append(self.score_one(h, rr) if rr else math.nan)
                bar.update(1)
        return scores

    def corpus_score(self, outputs: Sequence[str], refs: Sequence[Any]) -> float:
        """The metric for a whole set. Default: the mean of the sentence scores (NaN ignored); BLEU, chrF, TER
        (sacrebleu) and NIST (mteval's pooled counts) override it with their corpus-level definitions
        (``CORPUS = "pooled"``)."""
        s = np.asarray(self.score(outputs, refs=refs, progress=False), dtype=float)
        return float(np.nanmean(s)) if np.isfinite(s).any() else math.nan


def pooled_max_counts(counters: Iterable[Counter]) -> Counter:
    """Multiset union: each n-gram with its largest count in any reference."""
    pool: Counter = Counter()
    for c in counters:
        pool |= c
    return pool

