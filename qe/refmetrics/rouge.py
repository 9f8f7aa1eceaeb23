"""ROUGE-N and ROUGE-L (rouge-score), ROUGE-W and ROUGE-SU (hand-written).

All use rouge-score's tokeniser by default (lower-case, every non-alphanumeric character becomes a space), so
``rouge-l-mult`` is Kann et al.'s "tokenised and lower-cased" ROUGE-L with the best reference. ``measure`` picks
F (default; alpha = 0.5, the harmonic mean, as ROUGE-1.5.5's default), precision ``p`` or recall ``r``.

ROUGE-W and ROUGE-SU are written here because no maintained library has them (rouge-score covers N and L only;
the ROUGE-1.5.5 Perl script is unmaintained). Definitions follow Lin (2004):

* ROUGE-W: weighted LCS with f(k) = k^w (w = 1.2, ROUGE-1.5.5's default). WLCS is the dynamic programme of
  Lin's Fig. 2 (a run of k consecutive matches earns f(k)); R = f^-1(WLCS / f(|ref|)), P = f^-1(WLCS / f(|out|)),
  F = 2PR / (P + R).
* ROUGE-SU<g>: skip-bigrams whose two words are separated by at most g intermediate words (Reiter & Belz 2009's
  reading of ROUGE-SU4), plus unigrams, counted as one multiset; P, R, F from clipped counts. (ROUGE-1.5.5 leaves
  the last word out of the unigram part; we count every unigram.)
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from qe.refmetrics.base import RefScorer, f_measure, ngrams, pooled_max_counts, prf, tokenize

MEASURES = ("f", "p", "r")


def _rouge_version() -> str:
    try:
        from importlib.metadata import version

        return f"rouge-score:{version('rouge-score')}"
    except Exception:  # pragma: no cover
        return "rouge-score:?"


class _TokenizerAdapter:
    """rouge-score accepts any object with ``tokenize(text) -> list[str]``."""

    def __init__(self, method: str, lowercase: bool):
        self.method, self.lowercase = method, lowercase

    def tokenize(self, text: str) -> list[str]:
        return tokenize(text, self.method, self.lowercase)


class _RougeBase(RefScorer):
    default_tokenize = "rouge"

    def __init__(self, measure: str = "f", beta: float = 1.0, **kw):
        if measure not in MEASURES:
            raise ValueError(f"measure must be one of {MEASURES}")
        self.measure, self.beta = measure, float(beta)
        super().__init__(**kw)

    def _options(self) -> str:
        return f"measure:{self.measure}" + (f"|beta:{self.beta:g}" if self.beta != 1.0 else "")

    def _pick(self, p: float, r: float) -> float:
        """F_beta = (1 + b^2) P R / (R + b^2 P) (b = 1: harmonic mean; coco-caption's ROUGE-L uses b = 1.2)."""
        return {"f": f_measure(p, r, self.beta), "p": p, "r": r}[self.measure]

    def _lib_versions(self) -> str:
        return _rouge_version()


class RougeScore(_RougeBase):
    """ROUGE-N (n = 1..9) or ROUGE-L through rouge-score's ``RougeScorer``."""

    INPUT = "text"
    MODES = ("max", "mean", "first", "jackknife")

    def __init__(self, variant: str = "L", stem: bool = False, **kw):
        variant = str(variant).upper()
        if variant != "L" and not (variant.isdigit() and 1 <= int(variant) <= 9):
            raise ValueError("ROUGE variant must be 'L' or 1..9")
        self.variant, self.stem = variant, bool(stem)
        self.name = f"ROUGE-{variant}"
        super().__init__(**kw)
        from rouge_score import rouge_scorer, tokenizers

        rtype = "rougeL" if variant == "L" else f"rouge{variant}"
        if self.tokenize_method == "rouge":
            tok = tokenizers.DefaultTokenizer(use_stemmer=self.stem)
        else:
            if self.stem:
                raise ValueError("stem=True needs tokenize='rouge' (rouge-score's Porter stemmer)")
            tok = _TokenizerAdapter(self.tokenize_method, self.lowercase)
        self._rtype = rtype
        self._scorer = rouge_scorer.RougeScorer([rtype], tokenizer=tok)

    def preprocess(self, text: str) -> str:
        return text

    def _options(self) -> str:
        return super()._options() + ("|stem:yes" if self.stem else "")

    def pair(self, hyp: str, ref: str) -> float:
        s = self._scorer.score(ref, hyp)[self._rtype]
        if self.measure == "f" and self.beta == 1.0:
            return s.fmeasure
        return self._pick(s.precision, s.recall)


# --------------------------------------------------------------------------------------------------------------
def wlcs(a: list[str], b: list[str], weight: float = 1.2) -> float:
    """Weighted LCS (Lin 2004, Fig. 2) with f(k) = k^weight."""
    m, n = len(a), len(b)
    if m == 0 or n == 0:
        return 0.0
    f = lambda k: k**weight  # noqa: E731
    c = [[0.0] * (n + 1) for _ in range(m + 1)]
    w = [[0] * (n + 1) for _ in range(m + 1)]
    for i in range(1, m + 1):
        ai = a[i - 1]
        ci, cp, wi, wp = c[i], c[i - 1], w[i], w[i - 1]
        for j in range(1, n + 1):
            if ai == b[j - 1]:
                k = wp[j - 1]
                ci[j] = cp[j - 1] + f(k + 1) - f(k)
                wi[j] = k + 1
            elif cp[j] > ci[j - 1]:
                ci[j] = cp[j]
                wi[j] = 0
            else:
                ci[j] = ci[j - 1]
                wi[j] = 0
    return c[m][n]


class RougeW(_RougeBase):
    """ROUGE-W-<weight> (hand-written; see the module docstring)."""

    MODES = ("max", "mean", "first", "jackknife")

    def __init__(self, weight: float = 1.2, **kw):
        if weight < 1:
            raise ValueError("ROUGE-W weight must be >= 1")
        self.weight = float(weight)
        self.name = f"ROUGE-W-{self.weight:g}"
        super().__init__(**kw)

    def _options(self) -> str:
        return super()._options() + f"|w:{self.weight:g}"

    def pair(self, hyp: list[str], ref: list[str]) -> float:
        if not hyp or not ref:
            return 0.0
        score = wlcs(ref, hyp, self.weight)
        inv = 1.0 / self.weight
        r = (score / len(ref) ** self.weight) ** inv
        p = (score / len(hyp) ** self.weight) ** inv
        return self._pick(p, r)


def skip_bigrams(tokens: list[str], max_gap: int | None) -> Counter:
    """Ordered word pairs (t_i, t_j), i < j, with at most ``max_gap`` words between them (None: any gap)."""
    out: Counter = Counter()
    n = len(tokens)
    for i in range(n):
        hi = n if max_gap is None else min(n, i + max_gap + 2)
        for j in range(i + 1, hi):
            out[(tokens[i], tokens[j])] += 1
    return out


class RougeSU(_RougeBase):
    """ROUGE-SU<gap> (skip-bigrams + unigrams) or ROUGE-S<gap> (``unigrams=False``); hand-written."""

    MODES = ("max", "mean", "union", "first", "jackknife")

    def __init__(self, max_gap: int | None = 4, unigrams: bool = True, **kw):
        self.max_gap = None if max_gap is None or max_gap < 0 else int(max_gap)
        self.unigrams = bool(unigrams)
        self.name = f"ROUGE-{'SU' if self.unigrams else 'S'}{'*' if self.max_gap is None else self.max_gap}"
        super().__init__(**kw)

    def _grams(self, toks: list[str]) -> Counter:
        g = skip_bigrams(toks, self.max_gap)
        if self.unigrams:
            g.update(ngrams(toks, 1))
        return g

    def _prf(self, h: Counter, r: Counter) -> float:
        match = sum((h & r).values())
        d = prf(match, sum(h.values()), sum(r.values()))
        return self._pick(d["p"], d["r"])

    def pair(self, hyp, ref) -> float:
        return self._prf(self._grams(hyp), self._grams(ref))

    def union(self, hyp, refs) -> float:
        return self._prf(self._grams(hyp), pooled_max_counts(self._grams(r) for r in refs))


def make_rouge(variant: str, **kw: Any) -> RefScorer:
    v = str(variant).upper()
    if v == "W":
        return RougeW(**kw)
    if v.startswith("SU") or v.startswith("S"):
        uni = v.startswith("SU")
        rest = v[2:] if uni else v[1:]
        gap = None if rest in ("", "*") else int(rest)
        kw.setdefault("max_gap", gap)
        return RougeSU(unigrams=uni, **kw)
    return RougeScore(variant=v, **kw)
