"""ROUGE-N and ROUGE-L (rouge-score), ROUGE-W and ROUGE-SU (hand-written).

All use rouge-score's tokeniser by default (lower-case, every non-alphanumeric character becomes a space), so
``rouge-l-mult`` is Kann et al.'s "tokenised and lower-cased" ROUGE-L with the best reference. ``measure`` picks
F (default; alpha = 0.5, the harmonic mean, as ROUGE-1.5.5's default), precision ``p`` or recall ``r``.

ROUGE-W and ROUGE-SU are written here because no maintained library has them (rouge-score covers N and L only;
the ROUGE-1.5.5 Perl script is unmaintained). Definitions follow Lin (2004):

* ROUGE-W: weighted LCS with f(k) = k^w (w = 1.2, ROUGE-1.5.5's default). WLCS is the dynamic programme of
  Lin's Fig. 2 (a run of k consecutive matches earns f(k)); R = f^-1(WLCS / f(|ref|)), P = f^-1(WLCS / f(|out|)),
  F = 2PR / (P + R) (``definition="lin"``, the default). ROUGE-1.5.5 differs: its recall divides by f(f(|ref|))
  (``computeWLCSScore`` weights the reference length a second time; ``wlcs`` already returned f(|ref|)), and its
  hit sums f over runs of consecutive matched *reference* positions of the LCS it traces back.
  ``definition="rouge155"`` reproduces that: "police kill the gunman" against "police killed the gunman" gives
  R = 0.51208, P = 0.67569, F = 0.58262 as ROUGE-1.5.5 prints (Lin's definition: R = P = F = 0.67569).
* ROUGE-SU<g>: skip-bigrams whose two words are separated by at most g intermediate words (Reiter & Belz 2009's
  reading of ROUGE-SU4), plus unigrams, counted as one multiset; P, R, F from clipped counts. (ROUGE-1.5.5 leaves
  the last word out of the unigram part; we count every unigram.)

Multiple references (besides the shared modes of :mod:`qe.refmetrics.base`): ROUGE-1.5.5's ``-f A`` is
``mode="rouge155-a"`` (hits and counts pooled over the references: R = sum of hits / sum of reference counts,
P = sum of hits / (K x output count)) and ``-f B`` is ``mode="rouge155-b"`` (the reference with the best *recall*,
the first one on ties; P, R and F from that reference), for ROUGE-N, ROUGE-L and ROUGE-W. ``max`` instead keeps the
reference that maximises the requested measure (F by default), and ``jackknife`` is pre-1.4 ROUGE. Every text is
one counting unit (no sentence splitting), as ROUGE-1.5.5 with one-line summaries; the corpus score is the mean of
the per-output scores, ROUGE-1.5.5's default averaging (``-t 0``).
"""
from __future__ import annotations

from collections import Counter

from qe.core.config import as_flag
from qe.refmetrics.base import RefScorer, f_measure, ngrams, pooled_max_counts, prf, tokenize

MEASURES = ("f", "p", "r")


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

    signature_libraries = ("rouge_score",)

    def _options(self) -> dict:
        return {"measure": self.measure, "beta": float(self.beta) if self.beta != 1.0 else None}

    def _pick(self, p: float, r: float) -> float:
        """F_beta = (1 + b^2) P R / (R + b^2 P) (b = 1: harmonic mean; coco-caption's ROUGE-L uses b = 1.2)."""
        return {"f": f_measure(p, r, self.beta), "p": p, "r": r}[self.measure]



class RougeScore(_RougeBase):
    """ROUGE-N (n = 1..9) or ROUGE-L through rouge-score's ``RougeScorer``.

    ``mode="max-pr"`` is coco-caption's rule (best P and best R over references, then F_beta; coco uses beta 1.2).
    ROUGE-N also has ``mode="union"``: the output's n-grams against the multiset union of the references'
    n-grams (each n-gram with its largest count in any reference), same tokeniser; ROUGE-L has no union mode
    (Lin's summary-level union-LCS is defined over sentences of one reference, not over alternative references).
    """

    INPUT = "text"
    MODES = ("max", "mean", "union", "first", "jackknife", "max-pr", "rouge155-a", "rouge155-b")

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
        if variant == "L" and self.mode == "union":
            raise ValueError(f"{self.name}: mode='union' is not supported; choose one of max, mean, first, jackknife")
        self._rtype = rtype
        self._tok = tok
        self._scorer = rouge_scorer.RougeScorer([rtype], tokenizer=tok)

    def preprocess(self, text: str) -> str:
        return text

    def _options(self) -> dict:
        return {**super()._options(), "stem": True if self.stem else None}

    def pair(self, hyp: str, ref: str) -> float:
        s = self._scorer.score(ref, hyp)[self._rtype]
        if self.measure == "f" and self.beta == 1.0:
            return s.fmeasure
        return self._pick(s.precision, s.recall)

    def score_one(self, hyp: str, refs: list[str]) -> float:
        """``mode="max-pr"``: coco-caption's multi-reference rule, the best precision and the best recall over the
        references (possibly from different references) combined into F_beta."""
        if self.mode in ROUGE155_MODES:
            h = self._tok.tokenize(hyp)
            return self._pick(*combine_155([self._hits(h, self._tok.tokenize(r)) for r in refs], self.mode))
        if self.mode != "max-pr":
            return super().score_one(hyp, refs)
        ss = [self._scorer.score(r, hyp)[self._rtype] for r in refs]
        return self._pick(max(s.precision for s in ss), max(s.recall for s in ss))

    def _hits(self, h: list[str], r: list[str]) -> tuple[float, float, float]:
        """(hits, reference count, output count) against one reference: clipped n-gram matches, or the LCS length."""
        if self.variant == "L":
            from rouge_score.rouge_scorer import _lcs_table

            lcs = _lcs_table(r, h)[-1][-1] if h and r else 0
            return float(lcs), float(len(r)), float(len(h))
        n = int(self.variant)
        hg, rg = ngrams(h, n), ngrams(r, n)
        return float(sum((hg & rg).values())), float(sum(rg.values())), float(sum(hg.values()))

    def union(self, hyp: str, refs: list[str]) -> float:
        n = int(self.variant)
        h = ngrams(self._tok.tokenize(hyp), n)
        pool = pooled_max_counts(ngrams(self._tok.tokenize(r), n) for r in refs)
        d = prf(sum((h & pool).values()), sum(h.values()), sum(pool.values()))
        return self._pick(d["p"], d["r"])


ROUGE155_MODES = ("rouge155-a", "rouge155-b")


def combine_155(stats, mode: str, weight: float | None = None) -> tuple[float, float]:
    """ROUGE-1.5.5's multi-reference scoring formula over per-reference ``(hits, ref count, output count)``:
    ``rouge155-a`` (``-f A``) pools hits and counts over the references; ``rouge155-b`` (``-f B``) keeps the
    reference with the highest recall hits / ref count (the first on ties). With ``weight`` (ROUGE-W) the counts are
    already weighted and the ratios go through f^-1. Returns (P, R)."""
    inv = (lambda v: v ** (1.0 / weight)) if weight else (lambda v: v)  # noqa: E731
    if mode == "rouge155-a":
        hit = sum(s[0] for s in stats)
        ref = sum(s[1] for s in stats)
        out = sum(s[2] for s in stats)
    elif mode == "rouge155-b":
        best, hit, ref, out = -1.0, 0.0, 0.0, 0.0
        for s in stats:
            rec = s[3] if len(s) > 3 else (s[0] / s[1] if s[1] > 0 else 0.0)
            if rec > best:
                best, hit, ref, out = rec, s[0], s[1], s[2]
    else:
        raise ValueError(mode)
    r = inv(hit / ref) if ref > 0 else 0.0
    p = inv(hit / out) if out > 0 else 0.0
    return p, r


# --------------------------------------------------------------------------------------------------------------
def wlcs_rouge155(ref: list[str], out: list[str], weight: float = 1.2) -> float:
    """ROUGE-1.5.5's WLCS hit for one reference unit (``wlcs_inner`` + ``markLCS`` + the run sum of ``wlcs``): the
    dynamic programme of Lin's Fig. 2 with the Perl script's tie rule (up before left), the LCS traced back, and f
    summed over the runs of consecutive matched reference positions."""
    m, n = len(ref), len(out)
    if m == 0 or n == 0:
        return 0.0
    c = [[0.0] * (n + 1) for _ in range(m + 1)]
    ln = [[0] * (n + 1) for _ in range(m + 1)]
    b = [[""] * (n + 1) for _ in range(m + 1)]
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            if ref[i - 1] == out[j - 1]:
                k = ln[i - 1][j - 1]
                c[i][j] = c[i - 1][j - 1] + (k + 1) ** weight - k**weight
                b[i][j], ln[i][j] = "d", k + 1
            elif c[i - 1][j] >= c[i][j - 1]:
                c[i][j], b[i][j] = c[i - 1][j], "u"
            else:
                c[i][j], b[i][j] = c[i][j - 1], "l"
    mask = [False] * m
    i, j = m, n
    while i and j:
        if b[i][j] == "d":
            i, j = i - 1, j - 1
            mask[i] = True
        elif b[i][j] == "u":
            i -= 1
        else:
            j -= 1
    hit, run = 0.0, 0
    for pos in range(m):
        if mask[pos]:
            run += 1
            if pos + 1 == m or not mask[pos + 1]:
                hit += run**weight
                run = 0
    return hit


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
    """ROUGE-W-<weight> (hand-written; see the module docstring). ``definition``: ``lin`` (Lin 2004, default) or
    ``rouge155`` (what ROUGE-1.5.5 prints, recall included); modes ``rouge155-a`` / ``rouge155-b`` (``-f A`` /
    ``-f B``) imply the ROUGE-1.5.5 definition."""

    MODES = ("max", "mean", "first", "jackknife", "rouge155-a", "rouge155-b")
    DEFINITIONS = ("lin", "rouge155")

    def __init__(self, weight: float = 1.2, definition: str = "lin", **kw):
        if weight < 1:
            raise ValueError("ROUGE-W weight must be >= 1")
        if definition not in self.DEFINITIONS:
            raise ValueError(f"ROUGE-W definition must be one of {self.DEFINITIONS}")
        self.weight = float(weight)
        self.name = f"ROUGE-W-{self.weight:g}"
        super().__init__(**kw)
        self.definition = "rouge155" if self.mode in ROUGE155_MODES else definition

    def _options(self) -> dict:
        return {**super()._options(), "w": float(self.weight),
                "def": "rouge155" if self.definition == "rouge155" else None}

    def _stats155(self, hyp: list[str], ref: list[str]) -> tuple[float, float, float, float]:
        """(hit, f(f(|ref|)), f(|out|), selection score f^-1(hit / f(|ref|))) as ROUGE-1.5.5's computeWLCSScore."""
        w = self.weight
        hit = wlcs_rouge155(ref, hyp, w)
        base = float(len(ref)) ** w
        return hit, base**w, float(len(hyp)) ** w, ((hit / base) ** (1 / w) if base > 0 else 0.0)

    def pair(self, hyp: list[str], ref: list[str]) -> float:
        if not hyp or not ref:
            return 0.0
        if self.definition == "rouge155":
            return self._pick(*combine_155([self._stats155(hyp, ref)], "rouge155-a", self.weight))
        score = wlcs(ref, hyp, self.weight)
        inv = 1.0 / self.weight
        r = (score / len(ref) ** self.weight) ** inv
        p = (score / len(hyp) ** self.weight) ** inv
        return self._pick(p, r)

    def score_one(self, hyp: list[str], refs: list[list[str]]) -> float:
        if self.mode in ROUGE155_MODES:
            return self._pick(*combine_155([self._stats155(hyp, r) for r in refs], self.mode, self.weight))
        return super().score_one(hyp, refs)


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
        self.unigrams = as_flag(unigrams, "rouge: unigrams")
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
