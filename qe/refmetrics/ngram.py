"""BLEU-1..4, chrF, TER (sacrebleu) and NIST-5 (mteval-v13a's definition, hand-written; see :class:`NIST`).

BLEU at the sentence level uses sacrebleu's ``sentence_score`` with ``effective_order=True`` and, by default,
``smooth_method="exp"`` (sacrebleu's default for sentence BLEU: the k-th precision with zero matches is replaced
by 1 / (2^k * total), Chen & Cherry 2014 method 3). Other choices: ``floor`` (zero counts replaced by
``smooth_value``, default 0.1), ``add-k`` (counts + ``smooth_value``, default 1, for n > 1), ``none`` (a sentence
without a 4-gram match scores 0; this is what coco-caption's BLEU does up to its 1e-9-sized epsilons).
Sentence scores are on 0-1 (sacrebleu's number / 100). ``corpus_score`` gives sacrebleu's corpus BLEU.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Sequence

import numpy as np

from qe.refmetrics.base import RefScorer, ngrams, pooled_max_counts, tokenize
from qe.core.scorer import check_texts, normalise_refs


def _ref_streams(refs: list[list[str]]) -> list[list[str | None]]:
    """Per-output reference lists -> sacrebleu's reference streams (padded with None where an output has fewer)."""
    k = max(len(r) for r in refs)
    return [[rr[j] if j < len(rr) else None for rr in refs] for j in range(k)]


class _SacreMetric(RefScorer):
    """Base for sacrebleu metrics: inputs are strings; sacrebleu tokenises (or not) itself."""

    INPUT = "text"
    MODES = ("native", "max", "mean", "first", "jackknife")
    CORPUS = "pooled"
    default_lowercase = False

    def preprocess(self, text: str) -> str:  # sacrebleu lower-cases itself
        return text

    signature_libraries = ("sacrebleu",)

    def _metric(self):
        raise NotImplementedError

    def _get(self):
        m = getattr(self, "_m", None)
        if m is None:
            m = self._m = self._metric()
        return m

    def pair(self, hyp: str, ref: str) -> float:
        return self._get().sentence_score(hyp, [ref]).score / 100.0

    def native(self, hyp: str, refs: list[str]) -> float:
        return self._get().sentence_score(hyp, refs).score / 100.0

    def corpus_metric(self):
        """The sacrebleu ``Metric`` of the corpus-level score (sacrebleu's own class and corpus defaults), for
        :meth:`corpus_score` and sacrebleu's paired tests / bootstrap CIs (:mod:`qe.significance`)."""
        return self._metric()

    def corpus_preprocess(self, text: str) -> str:
        """What the corpus metric is given for ``text`` (qe-side tokenisation where sacrebleu's is off)."""
        return text

    def corpus_score(self, outputs: Sequence[str], refs: Sequence[Any]) -> float:
        """sacrebleu's corpus-level score (0-1) over all outputs; outputs without references are skipped."""
        outputs = [self.corpus_preprocess(o) for o in check_texts(outputs)]
        rr = self._clean_refs([[self.corpus_preprocess(x) for x in r] for r in normalise_refs(refs, len(outputs))])
        keep = [i for i, r in enumerate(rr) if r]
        if not keep:
            return math.nan
        hyps = [outputs[i] for i in keep]
        streams = _ref_streams([rr[i] for i in keep])
        return self._corpus_scorer().corpus_score(hyps, streams).score / 100.0

    def _corpus_scorer(self):
        """What :meth:`corpus_score` computes with: the corpus metric (TER: the same numbers, faster)."""
        m = getattr(self, "_cm", None)
        if m is None:
            m = self._cm = self.corpus_metric()
        return m


class _NoEffOrderWarning:
    """Drops sacrebleu's per-sentence advice to enable effective_order (only that message)."""

    def filter(self, record) -> bool:
        return "effective_order" not in record.getMessage()


class BLEU(_SacreMetric):
    """Sentence BLEU-n (sacrebleu). Tokeniser ``13a`` by default, case-sensitive unless ``lowercase=True``."""

    def __init__(self, n: int = 4, smooth_method: str = "exp", smooth_value: float | None = None,
                 effective_order: bool = True, **kw):
        if not 1 <= int(n) <= 4:
            raise ValueError("BLEU: n must be 1..4")
        self.n = int(n)
        self.name = f"BLEU-{self.n}"
        if smooth_method not in ("exp", "floor", "add-k", "none"):
            raise ValueError("smooth_method must be exp, floor, add-k or none")
        self.smooth_method, self.smooth_value, self.effective_order = smooth_method, smooth_value, effective_order
        super().__init__(**kw)
        self._lib_tok = self.tokenize_method

    def preprocess(self, text: str) -> str:
        """13a: sacrebleu tokenises; any other qe tokeniser (``space``, ``13a-nopunct``, ``rouge``) runs here and
        sacrebleu gets the space-joined tokens with its own tokenisation off."""
        if self.tokenize_method == "13a":
            return text
        return " ".join(tokenize(text, self.tokenize_method, self.lowercase))

    def _metric(self):
        import logging

        from sacrebleu.metrics import BLEU as _B

        if not self.effective_order:  # sacrebleu would warn once per sentence; the signature records the choice
            lg = logging.getLogger("sacrebleu")
            if not any(isinstance(f, _NoEffOrderWarning) for f in lg.filters):
                lg.addFilter(_NoEffOrderWarning())

        return _B(max_ngram_order=self.n, smooth_method=self.smooth_method, smooth_value=self.smooth_value,
                  effective_order=self.effective_order, lowercase=self.lowercase,
                  tokenize="13a" if self.tokenize_method == "13a" else "none")

    def corpus_preprocess(self, text: str) -> str:
        return self.preprocess(text)

    def corpus_metric(self):
        """sacrebleu's corpus BLEU with this scorer's options and sacrebleu's corpus default ``effective_order=False``
        (effective order is a sentence-level device), so the number equals ``sacrebleu REF -i HYP``."""
        from sacrebleu.metrics import BLEU as _B

        return _B(max_ngram_order=self.n, smooth_method=self.smooth_method, smooth_value=self.smooth_value,
                  effective_order=False, lowercase=self.lowercase,
                  tokenize="13a" if self.tokenize_method == "13a" else "none")

    def _options(self) -> dict:
        return {"smooth": f"{self.smooth_method}{'' if self.smooth_value is None else self.smooth_value}",
                "eff": bool(self.effective_order)}

    def union(self, hyp, refs):  # BLEU's own clipping already uses the multiset union of the references
        return self.native(hyp, refs)


BLEU.MODES = ("native", "max", "mean", "union", "first", "jackknife")


class CHRF(_SacreMetric):
    """chrF (``word_order=0``) or chrF++ (``word_order=2``), sacrebleu, beta 2, 0-1 scale."""

    def __init__(self, word_order: int = 0, char_order: int = 6, beta: int = 2, **kw):
        self.word_order, self.char_order, self.beta = int(word_order), int(char_order), int(beta)
        self.name = "chrF++" if self.word_order else "chrF"
        super().__init__(**kw)
        self._lib_tok = "chars"

    def _metric(self):
        from sacrebleu.metrics import CHRF as _C

        return _C(char_order=self.char_order, word_order=self.word_order, beta=self.beta, lowercase=self.lowercase)

    def _options(self) -> dict:
        return {"char": self.char_order, "word": self.word_order, "beta": self.beta}


class TER(_SacreMetric):
    """Translation edit rate (sacrebleu), edits / reference length, 0-1 and above; lower is better.

    ``lowercase`` maps to sacrebleu's ``case_sensitive=False`` (default: case-insensitive, sacrebleu's default);
    ``tokenize="13a"`` turns on sacrebleu's ``normalized=True`` (tercom's tokenisation), ``space`` leaves it off.
    Native multi-reference TER: fewest edits over the references / average reference length.

    The numbers are sacrebleu's, bit for bit (sentence and corpus scores), computed by :mod:`qe.refmetrics.ter`:
    the same shift search and beam edit distance, with a bit-parallel distance, shift candidates pruned by bounds,
    and references skipped when a bag-of-words bound shows they cannot have fewer edits; about 60x less CPU time than
    sacrebleu's own on E2E's multi-reference test set (``benchmarks/ter_speed.py``).
    """

    name = "TER"
    higher_is_better = False
    default_lowercase = True
    default_tokenize = "space"

    def __init__(self, **kw):
        super().__init__(**kw)
        if self.tokenize_method not in ("13a", "space"):
            raise ValueError("TER: tokenize must be '13a' (tercom normalisation) or 'space'")
        self._lib_tok = "tercom-norm" if self.tokenize_method == "13a" else "space"

    def _metric(self):  # sacrebleu's TER numbers, computed by qe.refmetrics.ter
        from qe.refmetrics.ter import FastTER

        return FastTER(normalized=self.tokenize_method == "13a", case_sensitive=not self.lowercase)

    def corpus_metric(self):
        """sacrebleu's own TER (same numbers as FastTER, tested): its sufficient statistics drive sacrebleu's paired
        tests and bootstrap CIs."""
        from sacrebleu.metrics import TER as _T

        return _T(normalized=self.tokenize_method == "13a", case_sensitive=not self.lowercase)

    def _corpus_scorer(self):
        return self._get()


# --------------------------------------------------------------------------------------------------------------
class NIST(RefScorer):
    """NIST-n (Doddington 2002) as mteval-v13a computes it; hand-written.

    Why not nltk: ``nltk.translate.nist_score.sentence_nist`` divides by zero for outputs shorter than n words and
    takes the per-order best reference instead of clipping against all references jointly; its information
    weights come only from the sentence's own references.

    Definition: info(w_1..w_k) = log2(count(w_1..w_{k-1}) / count(w_1..w_k)) over the reference texts (for k=1
    the numerator is the number of reference words). For an output, for each order k <= n: the sum of info over
    its k-grams that match a reference (clipped by the largest count in any one reference), divided by the number
    of its k-grams (an order with no k-grams in the output contributes 0). Score = the sum over k, times the
    brevity penalty exp(beta * ln(min(1, len_out / mean_ref_len))^2) with beta = ln 0.5 / ln(1.5)^2.

    ``info="set"`` (default, as mteval) counts n-grams over all references of the scored set (so a score depends
    on the other references in the set, as in mteval); ``info="sentence"`` uses only the output's own references
    (nltk's sentence-level choice; then equal to nltk's ``sentence_nist`` for one reference and outputs of at
    least n words).

    :meth:`corpus_score` is mteval's system score (``CORPUS = "pooled"``): per order, the information of the matched
    n-grams summed over every output of the set divided by the number of output n-grams summed over the set, and the
    brevity penalty of the total output length against the sum of each output's mean reference length -- not the
    mean of sentence scores (which on short NLG outputs is noticeably higher). Equals nltk's ``corpus_nist`` for one
    reference per output (tested).
    """

    MODES = ("native", "max", "mean", "first", "jackknife")
    CORPUS = "pooled"
    BETA = math.log(0.5) / math.log(1.5) ** 2

    def __init__(self, n: int = 5, info: str = "set", **kw):
        self.n = int(n)
        self.name = f"NIST-{self.n}"
        if info not in ("set", "sentence"):
            raise ValueError("NIST: info must be 'set' or 'sentence'")
        self.info = info
        super().__init__(**kw)
        self._counts: Counter | None = None
        self._total = 0

    def _options(self) -> dict:
        return {"info": self.info}

    def _count(self, refs_tokens) -> tuple[Counter, int]:
        """n-gram counts (orders 1..n) over the reference texts, and their number of words."""
        c: Counter = Counter()
        total = 0
        for r in refs_tokens:
            total += len(r)
            for k in range(1, min(self.n, len(r)) + 1):
                c.update(ngrams(r, k))
        return c, total

    def prepare(self, outputs, refs):
        if self.info == "set":
            self._counts, self._total = self._count([r for rr in refs for r in rr])

    def _info(self, counts: Counter, total: int, g: tuple) -> float:
        num = counts[g[:-1]] if len(g) > 1 else total
        den = counts[g]
        return math.log2(num / den) if den > 0 and num > 0 else 0.0

    def _stats(self, hyp: list[str], refs: list[list[str]]) -> np.ndarray:
        """[matched info of order 1..n, output n-grams of order 1..n, output length, mean reference length]:
        sums of these over a set give mteval's corpus score."""
        if self.info == "sentence" or self._counts is None:
            counts, total = self._count(refs)
        else:
            counts, total = self._counts, self._total
        st = np.zeros(2 * self.n + 2)
        for k in range(1, self.n + 1):
            h = ngrams(hyp, k)
            st[self.n + k - 1] = sum(h.values())
            if not h:
                continue
            pool = pooled_max_counts(ngrams(r, k) for r in refs)
            st[k - 1] = sum(min(c, pool[g]) * self._info(counts, total, g) for g, c in h.items() if g in pool)
        st[-2] = len(hyp)
        st[-1] = float(np.mean([len(r) for r in refs]))
        return st

    def _from_stats(self, st: np.ndarray) -> float:
        n = self.n
        score = sum(st[k] / st[n + k] for k in range(n) if st[n + k] > 0)
        ratio = st[-2] / st[-1] if st[-1] > 0 else 0.0
        if ratio <= 0:
            return 0.0
        return float(score * math.exp(self.BETA * math.log(min(1.0, ratio)) ** 2))

    def _nist(self, hyp: list[str], refs: list[list[str]]) -> float:
        return self._from_stats(self._stats(hyp, refs))

    def corpus_score(self, outputs: Sequence[str], refs: Sequence[Any]) -> float:
        """mteval-v13a's system-level NIST: statistics pooled over the set (see the class docstring); outputs
        without references are skipped. Multi-reference as ``native`` (clipping against all references jointly)."""
        outputs = check_texts(outputs)
        rr = self._clean_refs(normalise_refs(refs, len(outputs)))
        keep = [i for i, r in enumerate(rr) if r]
        if not keep:
            return math.nan
        hyps = [self.preprocess(outputs[i]) for i in keep]
        prefs = [[self.preprocess(x) for x in rr[i]] for i in keep]
        self.prepare(hyps, prefs)
        return self._from_stats(sum(self._stats(h, r) for h, r in zip(hyps, prefs)))

    def pair(self, hyp, ref):
        return self._nist(hyp, [ref])

    def native(self, hyp, refs):
        return self._nist(hyp, refs)
