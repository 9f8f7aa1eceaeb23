"""DiscoScore (DS-Focus, DS-Sent) and the discourse baselines behind the qe scorer API.

Registered names (``qe.load(name, **options)``):

=====================  ====================================================  ======  =========  ==========
name                   what                                                  refs    better     empty text
=====================  ====================================================  ======  =========  ==========
``ds-focus-nn``        DS-Focus, noun foci (eq. 2)                           yes     lower      NaN
``ds-focus-entity``    DS-Focus, entity foci (threshold 0.8)                 yes     lower      NaN
``ds-focus-f-nn``      DS-Focus* ("F-score", Table 7), noun foci             yes     lower      NaN
``ds-focus-f-entity``  DS-Focus*, entity foci                                yes     lower      NaN
``ds-sent-u-nn``       DS-Sent, unweighted adjacency, noun foci (eq. 3)      yes     higher     NaN
``ds-sent-u-entity``   DS-Sent-u, entity foci (threshold 0.8; MT: 0.5)       yes     higher     NaN
``ds-sent-w-nn``       DS-Sent, weighted adjacency, noun foci                yes     higher     NaN
``ds-sent-w-entity``   DS-Sent-w, entity foci                                yes     higher     NaN
``discoscore``         DS-Focus (NN) as the score; all variants as components yes    lower      NaN
``rc`` / ``lc``        Wong & Kit (2012) repetition / lexical cohesion       no      higher     NaN
``entity-graph``       Guinaudeau & Strube (2013) average out-degree         no      higher     NaN
``lexical-graph``      Mesgar & Strube (2016), noun-vector cosine > 0.7      no      higher     NaN
``lexical-chain``      Gong et al. (2015) chain overlap with the reference   yes     higher     NaN
=====================  ====================================================  ======  =========  ==========

Defined values instead of crashes (each counted and logged as a warning when it happens):

* empty / whitespace-only output: NaN for every scorer (nothing to score); an empty reference is skipped
  (the output's score aggregates the other references; NaN if none is left).
* DS-Focus when hypothesis and reference share no focus (including a hypothesis or reference without nouns):
  eq. (2) is an empty sum. The value is ``no_common_foci`` (see :class:`DSFocusScorer`): by default
  ``"worst"`` = **+inf**, the worst distance, so a text unrelated to the reference never scores better than a
  related one; ``"authors"`` (= ``0.0``) is the paper's empty sum and the authors' code, which gives such a
  pair the *best* distance (users of the authors' code report zeros on texts with no repeated foci);
  ``"nan"`` leaves the pair unscored; any number is used as it is.
* DS-Sent without nouns: A = 0 and eq. (3) is still defined (plain sentence-embedding statistics).
* RC / LC of a text without nouns: **0.0** (no lexical cohesion device). Entity / Lexical Graph of a text with
  one sentence or no shared noun: 0.0 (no edge). Lexical Chain with no chain in the hypothesis: 0.0.

Multiple references: ``multi_ref="mean"`` for DS-Focus / DS-Sent (authors' code), ``"max"`` for Lexical Chain
(authors' code); ``mean | max | min | best`` (best = max for similarities, min for distances) are options.
"""
from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from qe.core.config import as_flag
from qe.discourse import metrics as M
from qe.discourse.engine import DiscourseEngine
from qe.discourse.foci import ParsedText, entity_foci, sentence_foci
from qe.core.scorer import Scorer

log = logging.getLogger(__name__)

MULTI_REF = ("mean", "max", "min", "best")
ENGINE_OPTIONS = ("model", "spacy_model", "vectors", "splitter", "lowercase", "device", "layer", "max_tokens",
                  "window", "stride", "subword", "cache_size")


def aggregate(values: list[float], how: str, higher_is_better: bool) -> float:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return math.nan
    if how == "best":
        how = "max" if higher_is_better else "min"
    if how == "mean":
        return float(np.mean(vals))
    if how == "max":
        return float(max(vals))
    if how == "min":
        return float(min(vals))
    raise ValueError(f"multi_ref={how!r}: choose one of {MULTI_REF}")


class DiscourseScorer(Scorer):
    """Base: owns (or shares) a :class:`DiscourseEngine`; engine options are passed through."""

    uses_encoder = True

    def __init__(self, engine: DiscourseEngine | None = None, **options: Any):
        eng_kw = {k: options.pop(k) for k in list(options) if k in ENGINE_OPTIONS}
        if options:
            raise TypeError(f"{type(self).__name__}: unknown option(s) {sorted(options)}")
        if engine is not None and eng_kw:
            raise TypeError(f"pass engine options {sorted(eng_kw)} to the shared DiscourseEngine, not the scorer")
        self.engine = engine or DiscourseEngine(**eng_kw)

    def _options(self) -> dict:
        """The scorer's own options, before the engine's, in its signature."""
        return {}

    def signature_fields(self) -> dict:
        return {**self._options(), **self.engine.signature_fields(self.uses_encoder)}

    def _entity_options(self) -> dict:
        """Threshold, matching and vectors of the entity foci (nothing for noun foci)."""
        if getattr(self, "focus", None) != "entity":
            return {}
        return {"thr": self.threshold, "match": self.entity_matching, "vec": self.engine.vectors_source}

    @property
    def signature_libraries(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("spacy", "transformers", "torch") if self.uses_encoder else ("spacy",)

    # helpers
    def _foci(self, parsed: ParsedText, focus: str, threshold: float, other: ParsedText | None = None,
              matching: str = "exact"):
        if focus == "nn":
            return parsed.noun_foci()
        lemmas = set(parsed.nouns)
        if matching == "joint" and other is not None:
            lemmas |= set(other.nouns)
        return entity_foci(parsed, self.engine.groups(lemmas, threshold))

    def _parse_and_embed(self, outputs, refs, progress, batch_size) -> tuple[dict, dict]:
        """Parse every distinct output and reference once; embed the non-empty ones. Returns text -> parse and
        text -> embeddings."""
        texts = list(dict.fromkeys([*outputs, *(r for rs in refs for r in rs)]))
        parsed = dict(zip(texts, self.engine.parse(texts)))
        nonempty = [t for t in texts if not parsed[t].empty]
        emb = dict(zip(nonempty, self.engine.embed(nonempty, progress=progress, batch_size=batch_size)))
        return parsed, emb

    def _warn(self, what: str, n: int) -> None:
        if n:
            log.warning("%s: %d %s", self.name, n, what)


def _check_focus(focus: str) -> str:
    focus = focus.lower()
    if focus not in ("nn", "entity"):
        raise ValueError(f"focus={focus!r}: use 'nn' or 'entity'")
    return focus


#: named values of ``no_common_foci``
NO_COMMON_FOCI = {"worst": math.inf, "inf": math.inf, "authors": 0.0, "nan": math.nan}


def no_common_value(value: float | str) -> float:
    """``no_common_foci`` as a number: ``"worst"``/``"inf"`` -> +inf, ``"authors"`` -> 0.0, ``"nan"`` -> NaN."""
    if isinstance(value, str):
        key = value.strip().lower()
        if key in NO_COMMON_FOCI:
            return NO_COMMON_FOCI[key]
        try:
            return float(key)
        except ValueError:
            raise ValueError(f"no_common_foci={value!r}: use {sorted(NO_COMMON_FOCI)} or a number") from None
    return float(value)


class DSFocusScorer(DiscourseScorer):
    """DS-Focus / FocusDiff (eqs. 1-2): a distance between the common foci of hypothesis and reference.

    ``no_common_foci`` — the value of a pair that shares no focus (eq. 2 is then an empty sum):

    * ``"worst"`` (default) = ``+inf``: the worst distance. DS-Focus is unbounded above (a focus embedding is a
      sum over its occurrences), so no finite value is worse than every distance a related pair can reach;
      +inf is the only choice under which a hypothesis that shares no focus with the reference never scores
      better than one that shares a focus. Rank statistics (Kendall, Spearman) put such outputs last; a mean
      over them is +inf and Pearson is undefined, so for those statistics choose ``"nan"`` (leave the pair
      out) explicitly.
    * ``"authors"`` = ``0.0``: the empty sum of eq. 2 and the authors' released code — the *best* distance,
      so an unrelated text outscores every related one (on NeR18, 119 of 420 summaries; the system the raters
      rank last gets the best mean DS-Focus). ``experiments/discoscore.py`` uses it to reproduce the paper.
    * ``"nan"``: the pair is unscored (the output's score aggregates its other references; NaN if none).
    * any number: used as it is.

    With several references, ``multi_ref="mean"`` averages the pairs (so one unrelated reference makes the
    mean +inf under ``"worst"``); ``"best"`` takes the smallest distance.
    """

    requires_refs = True
    higher_is_better = False

    def __init__(self, focus: str = "nn", threshold: float = 0.8, distance: str = "euclidean",
                 average: str = "precision", normalize: bool = True, multi_ref: str = "mean",
                 no_common_foci: float | str = "worst", entity_matching: str = "exact",
                 engine: DiscourseEngine | None = None, **options: Any):
        super().__init__(engine, **options)
        self.focus = _check_focus(focus)
        self.threshold = float(threshold)
        if distance not in ("euclidean", "squared"):
            raise ValueError(f"distance={distance!r}: use 'euclidean' or 'squared'")
        if average not in ("precision", "recall", "f", "harmonic"):
            raise ValueError(f"average={average!r}: use precision, recall, f or harmonic")
        if multi_ref not in MULTI_REF:
            raise ValueError(f"multi_ref={multi_ref!r}: choose one of {MULTI_REF}")
        if entity_matching not in ("exact", "joint"):
            raise ValueError(f"entity_matching={entity_matching!r}: use 'exact' or 'joint'")
        self.distance, self.average, self.normalize = distance, average, bool(normalize)
        self.multi_ref, self.entity_matching = multi_ref, entity_matching
        self.no_common_foci = no_common_value(no_common_foci)
        star = "*" if average == "f" else ""
        self.name = f"DS-Focus{star} ({'NN' if self.focus == 'nn' else 'Entity'})"

    def _options(self) -> dict:
        return {"focus": self.focus, **self._entity_options(), "dist": self.distance, "avg": self.average,
                "norm": int(self.normalize), "refs": self.multi_ref, "nocommon": self.no_common_foci}

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw) -> list[float]:
        parsed, emb = self._parse_and_embed(outputs, refs, progress, batch_size)
        scores, n_empty, n_nocommon = [], 0, 0
        for out, rs in zip(outputs, refs):
            ph = parsed[out]
            if ph.empty:
                scores.append(math.nan)
                n_empty += 1
                continue
            Zh = self._words(emb[out])
            vals = []
            for r in rs:
                pr = parsed[r]
                if pr.empty:
                    continue
                fh = self._foci(ph, self.focus, self.threshold, pr, self.entity_matching)
                fr = self._foci(pr, self.focus, self.threshold, ph, self.entity_matching)
                v = M.ds_focus(fh, Zh, fr, self._words(emb[r]), self.distance, self.average)
                if v is None:
                    n_nocommon += 1
                    v = self.no_common_foci
                vals.append(v)
            scores.append(aggregate(vals, self.multi_ref, self.higher_is_better))
        self._warn("empty output(s) scored NaN", n_empty)
        self._warn(f"hypothesis-reference pair(s) without a common focus scored {self.no_common_foci}", n_nocommon)
        return scores

    def _words(self, e) -> np.ndarray:
        Z = e.words.astype(np.float64)
        if self.normalize:
            Z = Z / (np.linalg.norm(Z, axis=1, keepdims=True) + 1e-30)
        return Z


class DSSentScorer(DiscourseScorer):
    """DS-Sent / SentGraph (eq. 3): cosine of graph embeddings of focus-connected sentence embeddings."""

    requires_refs = True
    higher_is_better = True

    def __init__(self, focus: str = "nn", weighted: bool = False, threshold: float = 0.8, normalize: bool = True,
                 multi_ref: str = "mean", entity_matching: str = "exact", engine: DiscourseEngine | None = None,
                 **options: Any):
        super().__init__(engine, **options)
        self.focus = _check_focus(focus)
        self.weighted = as_flag(weighted, "weighted")
        self.threshold = float(threshold)
        self.normalize = as_flag(normalize, "normalize")
        if multi_ref not in MULTI_REF:
            raise ValueError(f"multi_ref={multi_ref!r}: choose one of {MULTI_REF}")
        if entity_matching not in ("exact", "joint"):
            raise ValueError(f"entity_matching={entity_matching!r}: use 'exact' or 'joint'")
        self.multi_ref, self.entity_matching = multi_ref, entity_matching
        self.name = f"DS-Sent-{'w' if self.weighted else 'u'} ({'NN' if self.focus == 'nn' else 'Entity'})"

    def _options(self) -> dict:
        return {"focus": self.focus, **self._entity_options(), "adj": "w" if self.weighted else "u",
                "norm": int(self.normalize), "refs": self.multi_ref}

    def adjacency(self, parsed: ParsedText, other: ParsedText | None = None) -> np.ndarray:
        foci = self._foci(parsed, self.focus, self.threshold, other, self.entity_matching)
        return M.sentence_adjacency(sentence_foci(parsed, foci), self.weighted)

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw) -> list[float]:
        parsed, emb = self._parse_and_embed(outputs, refs, progress, batch_size)
        scores, n_empty = [], 0
        for out, rs in zip(outputs, refs):
            ph = parsed[out]
            if ph.empty:
                scores.append(math.nan)
                n_empty += 1
                continue
            vals = []
            for r in rs:
                pr = parsed[r]
                if pr.empty:
                    continue
                vals.append(M.ds_sent(emb[out].sentences, self.adjacency(ph, pr), emb[r].sentences,
                                      self.adjacency(pr, ph), self.normalize))
            scores.append(aggregate(vals, self.multi_ref, True))
        self._warn("empty output(s) scored NaN", n_empty)
        return scores


class DiscoScoreScorer(DiscourseScorer):
    """All DiscoScore variants on shared engines: ``score`` is DS-Focus (NN), the paper's best overall variant;
    ``score_components`` returns every variant (keys are the variants' names).

    The paper encodes DS-Focus with Conpono and DS-Sent with BERT-NLI: pass ``model=`` for the DS-Focus encoder
    and ``sent_model=`` for a different DS-Sent encoder (a second engine with the same other options); by
    default both use ``model``.
    """

    requires_refs = True
    higher_is_better = False
    name = "DiscoScore"

    def __init__(self, focus_threshold: float = 0.8, sent_threshold: float = 0.8, sent_model: str | None = None,
                 engine: DiscourseEngine | None = None, sent_engine: DiscourseEngine | None = None,
                 no_common_foci: float | str = "worst", **options: Any):
        eng_kw = {k: v for k, v in options.items() if k in ENGINE_OPTIONS}
        super().__init__(engine, **options)
        e = self.engine
        if sent_engine is None:
            sent_engine = e if sent_model is None else DiscourseEngine(**{**eng_kw, "model": sent_model})
        self.sent_engine = s = sent_engine
        self.variants: list[DiscourseScorer] = [
            DSFocusScorer("nn", engine=e, no_common_foci=no_common_foci),
            DSFocusScorer("entity", focus_threshold, engine=e, no_common_foci=no_common_foci),
            DSFocusScorer("nn", average="f", engine=e, no_common_foci=no_common_foci),
            DSFocusScorer("entity", focus_threshold, average="f", engine=e, no_common_foci=no_common_foci),
            DSSentScorer("nn", False, engine=s), DSSentScorer("entity", False, sent_threshold, engine=s),
            DSSentScorer("nn", True, engine=s), DSSentScorer("entity", True, sent_threshold, engine=s),
        ]
        self.main_component = self.variants[0].name  # score() is DS-Focus (NN)

    def _options(self) -> dict:
        return {"focus_thr": self.variants[1].threshold, "sent_thr": self.variants[5].threshold,
                "sent_enc": self.sent_engine.model if self.sent_engine is not self.engine else None,
                "nocommon": self.variants[0].no_common_foci}

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw):
        return self.variants[0]._score(outputs, mrs=mrs, refs=refs, batch_size=batch_size, progress=progress)

    def _score_components(self, outputs, *, mrs=None, refs=None, batch_size=None, progress=True, **kw):
        return {v.name: v._score(outputs, mrs=mrs, refs=refs, batch_size=batch_size, progress=progress)
                for v in self.variants}


# ------------------------------------------------------------------------------------------------------------
# baselines


class CohesionScorer(DiscourseScorer):
    """RC or LC (Wong & Kit 2012, as DiscoScore App. A.1 uses them); reference-free. See :func:`metrics.rc_lc`."""

    uses_encoder = False

    def __init__(self, kind: str = "rc", engine: DiscourseEngine | None = None, **options: Any):
        super().__init__(engine, **options)
        kind = kind.lower()
        if kind not in ("rc", "lc"):
            raise ValueError(f"kind={kind!r}: use 'rc' or 'lc'")
        self.kind = kind
        self.name = kind.upper()

    def _values(self, outputs):
        parsed = self.engine.parse(outputs)
        rc, lc, n_empty, n_nonoun = [], [], 0, 0
        for p in parsed:
            if p.empty:
                rc.append(math.nan), lc.append(math.nan)
                n_empty += 1
                continue
            v = M.rc_lc(p)
            if v is None:
                n_nonoun += 1
                v = (0.0, 0.0)
            rc.append(v[0]), lc.append(v[1])
        self._warn("empty output(s) scored NaN", n_empty)
        self._warn("output(s) without nouns scored 0.0", n_nonoun)
        return {"RC": rc, "LC": lc}

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw):
        return self._values(outputs)[self.name]

    def _score_components(self, outputs, *, mrs=None, refs=None, batch_size=None, progress=True, **kw):
        return self._values(outputs)


class GraphCoherenceScorer(DiscourseScorer):
    """Entity Graph (nouns shared, ``lexical=False``) or Lexical Graph (similar nouns, ``lexical=True``):
    average out-degree sum(A)/#sentences of the distance-weighted projection graph of the hypothesis."""

    uses_encoder = False

    def __init__(self, lexical: bool = False, threshold: float = 0.7, weighted: bool = False,
                 engine: DiscourseEngine | None = None, **options: Any):
        super().__init__(engine, **options)
        self.lexical, self.threshold, self.weighted = bool(lexical), float(threshold), bool(weighted)
        if self.lexical and self.weighted:
            raise ValueError("weighted=True is defined for the Entity Graph only")
        self.name = "Lexical Graph" if self.lexical else "Entity Graph"

    def _options(self) -> dict:
        if self.lexical:
            return {"thr": self.threshold, "vec": self.engine.vectors_source}
        return {"adj": "w" if self.weighted else "u"}

    def adjacency(self, p: ParsedText) -> np.ndarray:
        if self.lexical:
            return M.lexical_adjacency(p, self.engine.vectors, self.threshold)
        return M.sentence_adjacency(sentence_foci(p, p.noun_foci()), self.weighted)

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw):
        out, n_empty = [], 0
        for p in self.engine.parse(outputs):
            if p.empty:
                out.append(math.nan)
                n_empty += 1
            else:
                out.append(M.graph_outdegree(self.adjacency(p)))
        self._warn("empty output(s) scored NaN", n_empty)
        return out


class LexicalChainScorer(DiscourseScorer):
    """Lexical Chain (Gong et al. 2015) as DiscoScore App. A.1 uses it; see :func:`metrics.lexical_chain_score`."""

    uses_encoder = False
    requires_refs = True
    name = "Lexical Chain"

    def __init__(self, average: str = "sum", multi_ref: str = "max", engine: DiscourseEngine | None = None,
                 **options: Any):
        super().__init__(engine, **options)
        if average not in ("sum", "mean"):
            raise ValueError(f"average={average!r}: use 'sum' or 'mean'")
        if multi_ref not in MULTI_REF:
            raise ValueError(f"multi_ref={multi_ref!r}: choose one of {MULTI_REF}")
        self.average, self.multi_ref = average, multi_ref

    def _options(self) -> dict:
        return {"avg": self.average, "refs": self.multi_ref}

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw):
        texts = list(dict.fromkeys([*outputs, *(r for rs in refs for r in rs)]))
        parsed = dict(zip(texts, self.engine.parse(texts)))
        out, n_empty = [], 0
        for o, rs in zip(outputs, refs):
            if parsed[o].empty:
                out.append(math.nan)
                n_empty += 1
                continue
            vals = [M.lexical_chain_score(parsed[o], parsed[r], self.average) for r in rs if not parsed[r].empty]
            out.append(aggregate(vals, self.multi_ref, True))
        self._warn("empty output(s) scored NaN", n_empty)
        return out
