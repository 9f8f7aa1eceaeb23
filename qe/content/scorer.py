"""The referenceless ``coverage`` scorer: how much of its MR an output realises, and what it gets wrong.

    qe score -m coverage -i outputs.txt --mrs mrs.txt -o scores.jsonl         # rows carry the per-slot verdicts
    qe score -m coverage --opt lexicon=e2e -i outputs.txt --mrs mrs.txt --system-level   # SER per system
    qe.load("coverage").score(outputs, mrs=mrs)

Per output, with the counts of :class:`qe.content.align.Alignment` (``N`` = facts that can be checked: realised +
omitted + wrong)::

    coverage = clip((realised - wrong_penalty * wrong - hallucination_penalty * hallucinated
                     - repeat_penalty * repeated) / N, 0, 1)          (defaults 1, 1, 0.5)
    ser      = (omitted + wrong + hallucinated + repeated) / N      (the slot error rate of the E2E papers)
    precision = realised / (realised + wrong + hallucinated)         (of what the output states, the share right)
    recall    = realised / N                                         (of the MR's facts, the share stated right)
    f1        = 2 * precision * recall / (precision + recall)        (0 when both are 0)

``coverage_soft`` (a component; issue 50, item 2) is the same formula over *expected* counts, so that outputs with
equal counts are still ordered by how much of each fact and of each invented statement the output holds
(:func:`soft_coverage`)::

    coverage_soft = clip((sum_f r_f - wrong_penalty * sum_f w_f - hallucination_penalty * sum_h e_h
                          - repeat_penalty * repeated) / N, 0, 1)

``r_f`` / ``w_f`` per fact: 1 / 0 for a realised verdict of the matcher, 0 / 1 for a wrong one; for an omitted one
``r_f`` is its partial evidence (:attr:`~qe.content.align.Verdict.partial`: ``k / (n + 1)``, ``k`` of the ``n``
distinct content words and numbers of its value - of a triple, its object - written outside other verdicts' words,
other values' mentions and the MR's names; 0 when none); for a verdict of the aligner, its probabilities
P(realised) / P(wrong). ``e_h`` per hallucination: 1 for a value or a number; for a stretch of unexplained words
(``lexicon=webnlg``) its extent, the share of its sentence's content words it is (an invented sentence: 1; one odd
word in a long sentence: little); for a slot the aligner adds, its confidence. Parameter-free beyond the penalties;
equal to ``coverage`` whenever the evidence is all-or-nothing (no partial evidence, no stretch short of its sentence,
no aligner verdict); within [0, 1]. It was fixed (with the two variants ``experiments.coverage_ranking`` compares:
partial evidence alone, extents alone) before it was correlated with any rating. ``score``: ``counts`` (the default:
the score is ``coverage``, as published), ``soft`` (the score is ``coverage_soft``) or ``soft-partial`` (the score is
``coverage_soft`` with partial evidence only, every hallucination counting 1; the component is then computed so); the
signature names it when it is not the default. Out-of-fold on the WebNLG 2020 ratings (5 folds of inputs) the soft
figures gain 0.006 - 0.015 of Spearman rho over the counts; 71 % of those outputs score 1.0 (every fact realised,
nothing invented), a cell no content figure can order (docs/results/content-log.md, "Scores that rank").

All are undefined (NaN) when the MR holds no fact that can be checked (only ``dontcare`` / ``none`` values); an
output that states nothing (neither a fact of its MR nor a value it does not hold) has precision 0, not an undefined
one: it says nothing right. Precision and recall split the score as PARENT-style data-to-text metrics do: recall is
the analogue of what the WebNLG 2020 human evaluation calls data coverage (the text describes all predicates of
the data), precision of what it asks under correctness and relevance (the objects it states for the data's
predicates are right; it describes only predicates of the data). Repetitions count in neither. The penalties were
set without any rating: a wrong value is as bad as a missing one plus a false statement, a stated value the MR does
not hold costs one fact, a repetition half. ``--system-level`` reports the mean coverage per system and, as its
corpus-level score, the system's SER pooled over its outputs: sum of errors / sum of N.

``lexicon``: ``auto`` (default: per MR, by its format - E2E attribute lists use ``e2e``, dialogue acts ``sf``, RDF
triples ``webnlg``, anything else the rules; a lexicon whose data are not in the data directory is replaced by the
rules with one warning naming ``qe data download <dataset>``, and the signature says so: ``auto[e2e:rules-no-data]``),
``none`` (the rules: values are found by their own surface forms, binary slots by the words of their name), ``e2e``
(mined from the cleaned E2E development references in the data directory: the MR each reference realises), ``sf``
(mined from the SF Hotel / Restaurant training references), ``webnlg`` (RDF triples: the words the WebNLG 2020
training references use for each property; with it the matcher also lists, as hallucinated, the stretches of an
output's words that no triple explains) or the path of a lexicon JSON file (:mod:`qe.content.lexicon`; ``qe content
mine`` writes one from your own (MR, text) pairs). A dataset's lexicon is mined once (10-50 s) and then read from the
cache (:mod:`qe.content.cache`). The signature names each lexicon used by checksum.
``mr_format`` (default ``auto``): how MRs are read (``da``, ``e2e``, ``json``, ``triples``; :func:`qe.core.mr.parse_acts`),
for MRs whose format detection gets wrong (an E2E value holding ``|``).

``aligner``: a ``content_aligner`` export (``qe train task=content_aligner``, :mod:`qe.content.aligner`), as a
directory or as the name of a zoo model built into ``$QE_MODELS`` (``content-aligner-e2e``; not built: one line with
its build command, exit 3 in ``qe score``): the
matcher's ``realised`` and ``wrong`` verdicts stay, the aligner decides the facts the matcher found nothing about
(``aligner_mode=override``: its ``wrong`` ones too; ``aligner``: every fact); ``aligner_threshold`` (P(realised))
and ``aligner_additions`` (ask about the slots the MR does not hold) override what the export chose for the mode.
Each verdict names its engine.

``qe.load(<content_aligner export>)`` (or its zoo name) is this scorer with that aligner (:func:`from_export`); its
lexicon is, unless given, the one the export's training config names (:func:`trained_lexicon`: the dataset it was
trained on, ``e2e`` for ``content-aligner-e2e``), else the scorer's default (``none``).
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from qe.content.align import Alignment, Matcher
from qe.content.lexicon import Lexicon
from qe.content.mining import mine
from qe.core.scorer import Scorer

#: lexicons mined from a dataset on demand: name -> (what it reads, how)
DATASET_LEXICONS = {"e2e": "the cleaned E2E development references (e2e/devel-fixed.no-ol.csv: column mr, ref)",
                    "sf": "the SF Hotel and SF Restaurant training references (sfx/*/train.json; dialogue acts)",
                    "webnlg": "the WebNLG 2020 training references (webnlg2020/train.tar.xz; RDF triples: the words "
                              "texts use for each property, qe.content.lexicon.mine_triples)"}


#: what ``score=`` makes the score: the counts (``coverage``, the default) or ``coverage_soft`` (``soft``: partial
#: evidence and extents; ``soft-partial``: partial evidence only, the component then computed so)
SCORES = ("counts", "soft", "soft-partial")

#: what ``lexicon=auto`` (the default) uses for each MR format (:func:`qe.core.mr.detect`): E2E attribute lists the
#: E2E lexicon, dialogue acts the SF Hotel / Restaurant one, RDF triples the WebNLG one; other formats (JSON maps)
#: the rules
AUTO_LEXICONS = {"e2e": "e2e", "da": "sf", "triples": "webnlg"}


@lru_cache(maxsize=4)
def dataset_lexicon(name: str, data_dir: str | None = None) -> Lexicon:
    """The lexicon of a known dataset (:data:`DATASET_LEXICONS`), mined from the data directory on first use and
    read back from the cache afterwards (:mod:`qe.content.cache`)."""
    if name not in DATASET_LEXICONS:
        raise ValueError(f"lexicon={name!r}: choose none, a lexicon JSON file, or one of {', '.join(DATASET_LEXICONS)}")
    from qe.content.cache import cached

    return cached(name, data_dir, lambda: mine_dataset_lexicon(name, data_dir))


def mine_dataset_lexicon(name: str, data_dir: str | None = None) -> Lexicon:
    """Mine the lexicon of a known dataset (:data:`DATASET_LEXICONS`) from the data directory (no cache)."""
    if name == "e2e":
        from qe.data.e2e import e2e_slot_gold

        rows = e2e_slot_gold("dev", data_dir)
        return mine([(r["mr"], r["ref"]) for r in rows], source="e2e-dev-cleaned", min_count=10)
    if name == "sf":
        from qe.data.references import SF_DOMAINS, sf_references

        refs = [r for d in SF_DOMAINS for r in sf_references(d, "train", data_dir)]
        return mine([(r.mr, r.ref) for r in refs], source="sf-train", min_count=10)
    if name == "webnlg":
        from qe.content.lexicon import mine_triples
        from qe.data.webnlg import webnlg_entries

        return mine_triples(triple_pairs(webnlg_entries("train", data_dir)), source="webnlg-train",
                            where="webnlg2020/train")
    raise ValueError(f"lexicon={name!r}: choose none, a lexicon JSON file, or one of {', '.join(DATASET_LEXICONS)}")


def triple_pairs(entries) -> list[tuple[str, str]]:
    """The ``(mr, text)`` pairs the ``webnlg`` lexicon is mined from: every reference of each WebNLG entry that the
    corpus marks ``good``."""
    return [(e.mr, x.text) for e in entries for x in e.lexes if x.comment == "good"]


def resolve_lexicon(lexicon: str | Lexicon | None, data_dir: str | None = None) -> Lexicon | None:
    """A lexicon option as a :class:`Lexicon` (None: the rules alone). ``auto`` is the scorer's per-MR choice
    (:class:`AutoMatcher`), not a lexicon."""
    if lexicon is None or isinstance(lexicon, Lexicon):
        return lexicon
    text = str(lexicon)
    if text.lower() in ("none", "rules", ""):
        return None
    if text.lower() == "auto":
        raise ValueError("lexicon='auto' picks a lexicon per MR: use CoverageScorer(lexicon='auto'), or name one of "
                         f"none, {', '.join(DATASET_LEXICONS)} or a lexicon JSON file here")
    if text in DATASET_LEXICONS:
        return dataset_lexicon(text, data_dir)
    from pathlib import Path

    if not Path(text).exists() and "/" not in text and not text.endswith(".json"):
        raise ValueError(f"lexicon={text!r}: not a known lexicon nor a file; choose none, "
                         f"{', '.join(DATASET_LEXICONS)}, or a lexicon JSON file")
    return Lexicon.load(text)


class AutoMatcher:
    """``lexicon=auto``: one :class:`~qe.content.align.Matcher` per MR format, each with the lexicon of
    :data:`AUTO_LEXICONS`, made when an MR of that format is first met. A lexicon whose data are not in the data
    directory is replaced by the rules, with one warning that names ``qe data download <dataset>``; the signature says
    so (:meth:`used`)."""

    name = "matcher"

    def __init__(self, data_dir: str | None = None, mr_format: str = "auto"):
        from qe.core.mr import MR_FORMATS

        if mr_format not in MR_FORMATS:
            raise ValueError(f"mr_format={mr_format!r}: choose one of {', '.join(MR_FORMATS)}")
        self.data_dir, self.mr_format = data_dir, mr_format
        self._by_format: dict[str | None, Matcher] = {}
        self._used: dict[str, str] = {}  # lexicon name -> its checksum, or "absent"

    def matcher_for(self, mr: str) -> Matcher:
        from qe.core.mr import detect

        fmt = self.mr_format if self.mr_format != "auto" else detect(mr)
        got = self._by_format.get(fmt)
        if got is None:
            got = self._by_format[fmt] = Matcher(self._lexicon(AUTO_LEXICONS.get(fmt or "")), mr_format=self.mr_format)
        return got

    def _lexicon(self, name: str | None) -> Lexicon | None:
        if name is None:
            return None
        from qe.content import cache

        absent = cache.missing(name, self.data_dir)
        if absent:
            if name not in self._used:
                import logging

                logging.getLogger("qe").warning(
                    "coverage: lexicon=auto: the %s lexicon is mined from %s, not in the data directory; scoring with "
                    "the rules (weaker: wrong values and invented facts go unseen). Get it with `qe data download "
                    "%s` (or set QE_DATA_DIR), or pass --opt lexicon=none to silence this", name,
                    ", ".join(str(p) for p in absent), cache.DATASETS[name])
            self._used[name] = "absent"
            return None
        lex = dataset_lexicon(name, self.data_dir)
        self._used[name] = lex.checksum
        return lex

    def used(self) -> str:
        """The lexicons used so far, for the signature: ``auto`` before any MR, then ``auto[e2e:<checksum>]``, with
        ``rules`` for a lexicon whose data were absent (``auto[e2e:rules-no-data]``)."""
        if not self._used:
            return "auto"
        parts = [f"{k}:{'rules-no-data' if v == 'absent' else v}" for k, v in sorted(self._used.items())]
        return f"auto[{','.join(parts)}]"

    def align(self, mr: str, output: str, where: str = "<mr>") -> Alignment:
        return self.matcher_for(mr).align(mr, output, where=where)

    facts = staticmethod(Matcher.facts)


class CoverageScorer(Scorer):
    name = "coverage"
    requires_mrs = True
    higher_is_better = True
    main_component = "coverage"

    def __init__(self, lexicon: str | Lexicon | None = "auto", wrong_penalty: float = 1.0,
                 hallucination_penalty: float = 1.0, repeat_penalty: float = 0.5, data_dir: str | None = None,
                 aligner: str | None = None, aligner_mode: str = "combined", aligner_threshold: float | None = None,
                 aligner_additions: bool | None = None, device: str | None = None, batch_size: int = 64,
                 mr_format: str = "auto", score: str = "counts"):
        if score not in SCORES:
            raise ValueError(f"coverage: score={score!r}: choose {', '.join(SCORES)}")
        self.score_kind = score
        if score != "counts":
            self.main_component = "coverage_soft"
        for k, v in (("wrong_penalty", wrong_penalty), ("hallucination_penalty", hallucination_penalty),
                     ("repeat_penalty", repeat_penalty)):
            if not isinstance(v, (int, float)) or v < 0 or not math.isfinite(v):
                raise ValueError(f"coverage: {k}={v!r} must be a number >= 0")
        if isinstance(lexicon, str) and lexicon.strip().lower() == "auto" and aligner not in (None, "", "none"):
            lexicon = _aligner_lexicon(aligner)  # the lexicon the aligner was trained with (its thresholds' matcher)
        self.lexicon_name = "none" if lexicon is None else str(getattr(lexicon, "source", lexicon))
        self.auto = isinstance(lexicon, str) and lexicon.strip().lower() == "auto"
        self.matcher: Any = (AutoMatcher(data_dir, mr_format) if self.auto
                             else Matcher(resolve_lexicon(lexicon, data_dir), mr_format=mr_format))
        self.engine: Any = self.matcher
        if aligner in (None, "", "none"):
            given = [k for k, v, unset in (("aligner_mode", aligner_mode, "combined"),
                                           ("aligner_threshold", aligner_threshold, None),
                                           ("aligner_additions", aligner_additions, None)) if v != unset]
            if given:
                raise ValueError(f"coverage: {', '.join(given)} without aligner=: name a content_aligner export "
                                 "(or a zoo name such as content-aligner-e2e) for it to apply to")
        else:
            from qe.content.aligner import MODES, AlignedMatcher, Aligner
            from qe.kinds import export_dir_of

            if aligner_mode not in MODES:
                raise ValueError(f"coverage: aligner_mode={aligner_mode!r}: choose {', '.join(MODES)}")
            if aligner_threshold is not None and not (isinstance(aligner_threshold, (int, float))
                                                      and 0 <= aligner_threshold <= 1):
                raise ValueError(f"coverage: aligner_threshold={aligner_threshold!r} must be a number in [0, 1]")
            aligner = str(export_dir_of(aligner))  # a zoo name -> $QE_MODELS/<name>
            self.engine = AlignedMatcher(self.matcher, Aligner.load(aligner, device=device, batch_size=batch_size),
                                         aligner_mode, aligner_additions, aligner_threshold)
        self.penalties = (float(wrong_penalty), float(hallucination_penalty), float(repeat_penalty))
        self._last: tuple | None = None

    def signature_fields(self) -> dict[str, Any]:
        if self.auto:
            lexicon = self.matcher.used()
        else:
            lex = self.matcher.lexicon
            lexicon = "none" if lex.source == "rules" else f"{self.lexicon_name}:{lex.checksum}"
        out = {"engine": self.engine.name, "lexicon": lexicon, "pen": "{:g}/{:g}/{:g}".format(*self.penalties)}
        if self.matcher.mr_format != "auto":
            out["mr"] = self.matcher.mr_format
        if self.score_kind != "counts":
            out["score"] = self.score_kind
        if self.engine is not self.matcher:
            eng = self.engine
            out["aligner"] = f"{eng.aligner.name}@t{eng.threshold:g}" + ("" if eng.additions else "/noadd")
        return out

    # ------------------------------------------------------------------------------------------ per output
    def align(self, outputs, mrs, ids=None) -> list[Alignment]:
        """One :class:`Alignment` per output. The last call's result is kept, so ``qe score`` asking for the scores
        and then the details of the same chunk aligns it once."""
        if isinstance(outputs, str) or isinstance(mrs, str):
            raise TypeError("coverage: outputs and mrs are lists of strings (one MR per output), not a string")
        outputs, mrs = list(outputs), list(mrs)
        if len(outputs) != len(mrs):
            raise ValueError(f"coverage: {len(outputs)} outputs but {len(mrs)} MRs (one MR per output)")
        key = (tuple(outputs), tuple(mrs))
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        wheres = [f"mrs[{i}]" if ids is None else f"record {ids[i]!r}: field 'mr'" for i in range(len(mrs))]
        if hasattr(self.engine, "align_many"):  # the aligner asks its questions in batches
            out = self.engine.align_many(list(mrs), list(outputs), wheres)
        else:
            out = [self.engine.align(mr, o, where=w) for o, mr, w in zip(outputs, mrs, wheres)]
        self._last = (key, out)
        return out

    def figures(self, al: Alignment) -> dict[str, float]:
        c = al.counts()
        n = c["facts"]
        wp, hp, rp = self.penalties
        if n == 0:
            cov = ser = prec = rec = f1 = math.nan
        else:
            cov = min(1.0, max(0.0, (c["realised"] - wp * c["wrong"] - hp * c["hallucinated"] - rp * c["repeated"]) / n))
            ser = al.errors() / n
            stated = c["realised"] + c["wrong"] + c["hallucinated"]
            prec = c["realised"] / stated if stated else 0.0
            rec = c["realised"] / n
            f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        soft = soft_coverage(al, self.penalties, extent=self.score_kind != "soft-partial")
        return {"coverage": cov, "coverage_soft": soft, "ser": ser, "precision": prec, "recall": rec, "f1": f1,
                **{k: float(c[k]) for k in ("facts", "realised", "omitted", "wrong", "hallucinated", "repeated")}}

    accepts_ids = True

    def _score(self, outputs, *, mrs, refs, batch_size, progress, ids=None, **kw) -> list[float]:
        return [self.figures(a)[self.main_component] for a in self.align(outputs, mrs, ids)]

    def _score_components(self, outputs, *, mrs=None, refs=None, batch_size=None, progress=True, ids=None,
                          **kw) -> dict[str, list[float]]:
        figs = [self.figures(a) for a in self.align(outputs, mrs, ids)]
        return {k: [f[k] for f in figs] for k in figs[0]} if figs else {}

    def details(self, outputs, mrs=None, ids=None, **kw) -> list[dict[str, Any]]:
        """Per output: the verdict of every fact, the hallucinated and repeated values, the counts (the JSON ``qe
        score`` writes as each row's ``details``)."""
        if mrs is None:
            self._check_inputs(list(outputs), mrs, None, {})
        return [a.to_dict() for a in self.align(outputs, mrs, ids)]

    #: what ``qe score --system-level`` shows as the corpus column
    corpus_note = "the slot error rate pooled over the system's outputs (errors / facts; lower is better)"
    corpus_higher_is_better = False
    corpus_name = "SER"
    corpus_long_name = "slot error rate"

    def system_statistic(self, outputs, mrs):
        """The pooled slot error rate of a set of outputs as a :class:`qe.significance.SetStatistic` (per output:
        errors and checkable facts; the set's score is their sums' ratio), so bootstrap CIs resample outputs."""
        import numpy as np

        from qe.significance import SetStatistic

        als = self.align(outputs, mrs)
        stats = np.array([[a.errors(), a.counts()["facts"]] for a in als], dtype=float).reshape(-1, 2)

        def value(summed):
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(summed[:, 1] > 0, summed[:, 0] / summed[:, 1], np.nan)

        return SetStatistic(stats, value, "pooled")

    def slot_error_rate(self, outputs, mrs) -> float:
        """The pooled slot error rate: sum of errors over sum of checkable facts (NaN when there are none)."""
        return self.system_statistic(outputs, mrs).score()


def soft_coverage(al: Alignment, penalties: tuple[float, float, float] = (1.0, 1.0, 0.5), partial: bool = True,
                  extent: bool = True) -> float:
    """``coverage_soft`` of an alignment (module docstring): the coverage formula over expected counts. ``partial``
    / ``extent`` off count omitted facts as 0 / every hallucination as 1 (the variants
    ``experiments.coverage_ranking`` compares; both off is ``coverage`` for the matcher's verdicts). NaN when the MR
    holds no fact that can be checked."""
    wp, hp, rp = penalties
    realised = wrong = 0.0
    n = 0
    for v in al.verdicts:
        if v.status not in ("realised", "omitted", "wrong"):
            continue
        n += 1
        if v.probs is not None:  # the aligner's verdict: its probabilities
            realised += v.probs["realised"]
            wrong += v.probs["wrong"]
        elif v.status == "realised":
            realised += 1.0
        elif v.status == "wrong":
            wrong += 1.0
        elif partial and v.partial:
            realised += v.partial
    if n == 0:
        return math.nan
    invented = 0.0
    for h in al.hallucinated:
        if not extent:
            invented += 1.0
        elif h.get("engine") == "aligner" and h.get("confidence") is not None:
            invented += float(h["confidence"])
        else:
            invented += float(getattr(h, "extent", 1.0))
    repeated = sum(r.get("extra", 1) for r in al.repeated)
    return min(1.0, max(0.0, (realised - wp * wrong - hp * invented - rp * repeated) / n))


def _aligner_lexicon(aligner: str) -> str | None:
    """``lexicon=auto`` with an aligner: the lexicon its export was trained with (:func:`trained_lexicon`), else the
    rules - an aligner's thresholds were calibrated with that matcher."""
    from qe.core.export import read_manifest
    from qe.errors import QEError
    from qe.kinds import export_dir_of

    try:
        return trained_lexicon(read_manifest(export_dir_of(aligner)))
    except (OSError, ValueError, KeyError, QEError):
        return None  # Aligner.load names the problem with the export below


def trained_lexicon(manifest: dict[str, Any]) -> str | None:
    """The lexicon a ``content_aligner`` export is used with by default: a ``lexicon`` its training config records
    (``config.train.lexicon`` or ``config.train.data.lexicon``), else its training data when that is a dataset with a
    lexicon of its own (``config.train.data.source``: ``e2e`` -> the E2E lexicon, mined from the same cleaned
    development references the aligner was trained on; the matcher that calibrated its thresholds had a lexicon mined
    from its training rows the same way; ``webnlg`` -> the words the WebNLG training references use for each
    property, which add hallucinated words and leave every verdict, so the thresholds, as they were), else None (the
    scorer's default, ``none``: e.g. an aligner trained on a CSV file of pairs)."""
    train = (manifest.get("config") or {}).get("train") or {}
    data = train.get("data") or {}
    named = train.get("lexicon") or data.get("lexicon")
    if named:
        return str(named)
    source = str(data.get("source") or "")
    return source if source in DATASET_LEXICONS else None


def from_export(path, manifest: dict[str, Any], **options: Any) -> CoverageScorer:
    """Loader of the ``content_aligner`` export kind (:mod:`qe.kinds`): the ``coverage`` scorer using the export as
    its aligner, with ``lexicon`` defaulting to :func:`trained_lexicon` (``lexicon="none"`` asks for the rules alone).
    The E2E lexicon is mined from the data directory (``$QE_DATA_DIR``) on first use."""
    if options.get("aligner") not in (None, str(path)):
        raise ValueError(f"{path} is an aligner export: it cannot be loaded with another aligner={options['aligner']!r}")
    options.pop("aligner", None)
    if "lexicon" in options:
        return CoverageScorer(aligner=str(path), **options)
    default = trained_lexicon(manifest)
    try:
        return CoverageScorer(aligner=str(path), lexicon=default, **options)
    except FileNotFoundError as exc:  # the dataset the default lexicon is mined from is not here
        raise FileNotFoundError(f"{exc} The export's default lexicon {default!r} is mined from it; "
                                "lexicon='none' (`--opt lexicon=none`) scores without it.") from None


__all__ = ["CoverageScorer", "soft_coverage", "AutoMatcher", "AUTO_LEXICONS", "DATASET_LEXICONS", "dataset_lexicon",
           "mine_dataset_lexicon", "triple_pairs", "resolve_lexicon", "trained_lexicon", "from_export"]
