"""METEOR (nltk), CIDEr-D, string-edit distance (Reiter & Belz 2009) and Toutanova et al.'s LR2/LR3.

METEOR: nltk's ``meteor_score`` (Banerjee & Lavie 2005 parameters alpha 0.9, beta 3, gamma 0.5), matching
stages exact -> Porter stem -> WordNet synonym. WordNet is not installed on offline machines; when
``nltk.data.find("corpora/wordnet")`` fails (the data directory's ``nltk_data`` is searched too), the synonym stage
is switched off (an empty synonym source) and the signature says ``syn:off``. What is lacking compared with
METEOR 1.5 (Java, Denkowski & Lavie 2014), which most NLG papers used: WordNet synonyms (offline), the paraphrase
table, function/content word weighting and the tuned parameters. So scores are lower than METEOR 1.5's.

CIDEr-D: hand-written because coco-caption's ``pycocoevalcap`` is not a dependency of this project (and its
tokeniser needs Java). Semantics of ``pycocoevalcap.cider`` (which is CIDEr-D): n = 1..4; each text becomes
tf-idf vectors per order with weight tf * (ln N - ln max(1, df)), where df counts in how many outputs' reference
sets an n-gram occurs and N is the number of outputs in the scored set; per reference, per order: the sum over
the output's n-grams of min(v_out, v_ref) * v_ref divided by the two norms, times the Gaussian length penalty
exp(-(l_out - l_ref)^2 / (2 * 6^2)) (l = number of bigrams); mean over orders, mean over references, times 10.
A score therefore depends on the whole scored set (a set of one output scores 0). Tokens: 13a, lower-cased,
punctuation tokens removed (close to coco's PTB tokeniser, which drops punctuation).

SE (string-edit distance, Reiter & Belz 2009, section 3.3.1): word-level edit distance with substitution cost 2,
insertion and deletion cost 1, normalised to 0-1 with 1 = perfect match: SE = 1 - d / (|out| + |ref|) (|out| +
|ref| is the largest possible distance: delete everything, insert everything). With several references SE is the
mean over them (mode ``native`` = ``mean``). Hand-written: a 20-line dynamic programme. With these costs
d = |out| + |ref| - 2 LCS, so SE equals the LCS F-measure; the test suite checks this identity.

LR2 / LR3 (Toutanova et al. 2016, as Kann et al. 2018 use them): bigram (LR2) / trigram (LR3) overlap of the
lower-cased, tokenised output with the *union of the sets* of reference n-grams: recall = |G_out & U| / |U|,
precision = |G_out & U| / |G_out|, F = harmonic mean; measure ``r`` or ``f``. (Toutanova et al.'s own code and
their exact linguistic units are not public; this is the definition given by Kann et al.)
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from functools import lru_cache

import numpy as np

from qe.refmetrics.base import RefScorer, ngrams, prf


# --------------------------------------------------------------------------------------------------------------
# METEOR
# --------------------------------------------------------------------------------------------------------------
class _NoSynonyms:
    """Stands in for nltk's WordNet reader: no synsets, so only exact and stem matches are made."""

    def synsets(self, *a, **k):
        return []


@lru_cache(maxsize=1)
def find_wordnet():
    """nltk's WordNet reader when the corpus is installed (nltk's path or the data dir's nltk_data), else None."""
    import nltk

    try:
        from qe.core.paths import resolve_data_dir

        extra = resolve_data_dir(None) / "nltk_data"
        if extra.is_dir() and str(extra) not in nltk.data.path:
            nltk.data.path.append(str(extra))
    except Exception:  # pragma: no cover - no data dir configured
        pass
    for res in ("corpora/wordnet", "corpora/wordnet.zip"):
        try:
            nltk.data.find(res)
        except LookupError:
            continue
        from nltk.corpus import wordnet

        return wordnet
    return None


class METEOR(RefScorer):
    name = "METEOR"
    MODES = ("native", "max", "mean", "first", "jackknife")

    def __init__(self, synonyms: str = "auto", alpha: float = 0.9, beta: float = 3.0, gamma: float = 0.5, **kw):
        super().__init__(**kw)
        from nltk.stem.porter import PorterStemmer

        if synonyms not in ("auto", "off", "wordnet"):
            raise ValueError("synonyms must be auto, off or wordnet")
        wn = find_wordnet() if synonyms != "off" else None
        if synonyms == "wordnet" and wn is None:
            raise LookupError("METEOR synonyms='wordnet': nltk's WordNet corpus is not installed (nltk.download('wordnet'))")
        self._wn = wn if wn is not None else _NoSynonyms()
        self.synonyms = "wordnet" if wn is not None else "off"
        self._stemmer = PorterStemmer()
        self.alpha, self.beta, self.gamma = alpha, beta, gamma

    signature_libraries = ("nltk",)

    def _options(self) -> dict:
        return {"syn": self.synonyms, "alpha": self.alpha, "beta": self.beta, "gamma": self.gamma}

    def _meteor(self, hyp, refs) -> float:
        if not hyp:
            return 0.0
        from nltk.translate.meteor_score import meteor_score

        return meteor_score(refs, hyp, preprocess=str, stemmer=self._stemmer, wordnet=self._wn,
                            alpha=self.alpha, beta=self.beta, gamma=self.gamma)

    def pair(self, hyp, ref):
        return self._meteor(hyp, [ref])

    def native(self, hyp, refs):
        return self._meteor(hyp, refs)


# --------------------------------------------------------------------------------------------------------------
# CIDEr-D
# --------------------------------------------------------------------------------------------------------------
class CIDErD(RefScorer):
    name = "CIDEr-D"
    MODES = ("native", "max", "mean", "first", "jackknife")
    default_tokenize = "13a-nopunct"

    def __init__(self, n: int = 4, sigma: float = 6.0, **kw):
        self.n, self.sigma = int(n), float(sigma)
        super().__init__(**kw)
        self._df: Counter = Counter()
        self._log_n = 0.0

    def _options(self) -> dict:
        return {"n": self.n, "sigma": float(self.sigma), "df": "set"}

    def _counts(self, toks):
        c: Counter = Counter()
        for k in range(1, self.n + 1):
            c.update(ngrams(toks, k))
        return c

    def prepare(self, outputs, refs):
        df: Counter = Counter()
        m = 0
        for rr in refs:
            if not rr:
                continue
            m += 1
            seen = set()
            for r in rr:
                seen.update(self._counts(r))
            df.update(seen)
        self._df = df
        self._log_n = math.log(m) if m else 0.0

    def _vec(self, toks):
        vec = [defaultdict(float) for _ in range(self.n)]
        norm = np.zeros(self.n)
        for g, tf in self._counts(toks).items():
            k = len(g) - 1
            v = tf * (self._log_n - math.log(max(1.0, self._df[g])))
            vec[k][g] = v
            norm[k] += v * v
        return vec, np.sqrt(norm), max(0, len(toks) - 1)

    def _sim(self, h, r) -> float:
        (vh, nh, lh), (vr, nr, lr) = h, r
        pen = math.exp(-((lh - lr) ** 2) / (2 * self.sigma**2))
        val = np.zeros(self.n)
        for k in range(self.n):
            val[k] = sum(min(v, vr[k].get(g, 0.0)) * vr[k].get(g, 0.0) for g, v in vh[k].items())
            if nh[k] != 0 and nr[k] != 0:
                val[k] /= nh[k] * nr[k]
            val[k] *= pen
        return float(val.mean() * 10.0)

    def pair(self, hyp, ref):
        return self._sim(self._vec(hyp), self._vec(ref))

    def native(self, hyp, refs):
        h = self._vec(hyp)
        return float(np.mean([self._sim(h, self._vec(r)) for r in refs]))


# --------------------------------------------------------------------------------------------------------------
# SE
# --------------------------------------------------------------------------------------------------------------
def edit_distance(a: list[str], b: list[str], sub: float = 2.0, ins: float = 1.0, dele: float = 1.0) -> float:
    """Weighted Levenshtein distance turning ``a`` into ``b``."""
    prev = [j * ins for j in range(len(b) + 1)]
    for i in range(1, len(a) + 1):
        cur = [i * dele] + [0.0] * len(b)
        ai = a[i - 1]
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + dele, cur[j - 1] + ins, prev[j - 1] + (0.0 if ai == b[j - 1] else sub))
        prev = cur
    return float(prev[-1])


class StringEdit(RefScorer):
    name = "SE"
    MODES = ("native", "mean", "max", "first", "jackknife")

    def __init__(self, sub_cost: float = 2.0, indel_cost: float = 1.0, **kw):
        self.sub_cost, self.indel_cost = float(sub_cost), float(indel_cost)
        super().__init__(**kw)

    def _options(self) -> dict:
        return {"sub": float(self.sub_cost), "indel": float(self.indel_cost)}

    def pair(self, hyp, ref) -> float:
        worst = self.indel_cost * (len(hyp) + len(ref))
        if worst == 0:
            return 1.0
        d = edit_distance(hyp, ref, self.sub_cost, self.indel_cost, self.indel_cost)
        return 1.0 - min(d, worst) / worst

    def native(self, hyp, refs) -> float:
        return float(np.mean([self.pair(hyp, r) for r in refs]))


# --------------------------------------------------------------------------------------------------------------
# LR2 / LR3
# --------------------------------------------------------------------------------------------------------------
class LR(RefScorer):
    MODES = ("union", "max", "mean", "first", "jackknife")

    def __init__(self, n: int = 2, measure: str = "f", **kw):
        if measure not in ("f", "r", "p"):
            raise ValueError("LR measure must be f, r or p")
        self.n, self.measure = int(n), measure
        self.name = f"LR{self.n}-{measure.upper()}"
        super().__init__(**kw)

    def _options(self) -> dict:
        return {"sets": True, "n": self.n}

    def _set(self, toks) -> set:
        return set(ngrams(toks, self.n))

    def _score_sets(self, h: set, u: set) -> float:
        return prf(len(h & u), len(h), len(u))[self.measure]

    def pair(self, hyp, ref) -> float:
        return self._score_sets(self._set(hyp), self._set(ref))

    def union(self, hyp, refs) -> float:
        u: set = set()
        for r in refs:
            u |= self._set(r)
        return self._score_sets(self._set(hyp), u)
