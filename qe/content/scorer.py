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
corpus-level score, the system's SER pooled over its outputs: sum of errors / sum of N, over the outputs whose MR
holds a checkable fact (the others, like their coverage, count nothing: not even a value they invent).

``lexicon``: ``auto`` (default: per MR, by its slots - the known lexicon that has every slot of the MR: E2E
attribute slots use ``e2e``, SF hotel / restaurant slots ``sf``, in whatever MR format; RDF triples ``webnlg``; an MR
with a slot no known lexicon has is checked by the rules, with one warning naming those slots, and the signature says
``rules``: ``auto[e2e:<checksum>,rules]``; :class:`AutoMatcher`), ``none`` (the rules: values are found by their own
surface forms, binary slots by the words of their name), ``e2e`` (mined from the cleaned E2E development references:
the MR each reference realises), ``sf`` (mined from the SF Hotel / Restaurant training references), ``webnlg`` (RDF
triples: the words the WebNLG 2020 training references use for each property; with it the matcher also lists, as
hallucinated, the stretches of an output's words that no triple explains) or the path of a lexicon JSON file
(:mod:`qe.content.lexicon`; ``qe content mine`` writes one from your own (MR, text) pairs). The three dataset
lexicons ship with ``qe`` (``qe/resources/lexicons``, :mod:`qe.content.shipped`): no data folder is needed.
``e2e@data`` (``sf@data``, ``webnlg@data``) mines the lexicon from the data directory instead, once (10-50 s), then
reads it from the cache (:mod:`qe.content.cache`). A named lexicon or file that does not fit the MRs it scores (slots
it does not know; a triple lexicon on slot MRs or the reverse) is used as asked, with one warning. The signature
names each lexicon used by checksum.
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
import re
from functools import lru_cache
from typing import Any

from qe.content.align import Alignment, Matcher
from qe.content.lexicon import Lexicon
from qe.content.shipped import DATASET_LEXICONS, triple_pairs
from qe.content.shipped import mine_dataset_lexicon as _mine_dataset
from qe.core.scorer import Scorer
from qe.core.signature import Signature

#: the modules whose code decides ``coverage``'s verdicts and scores. Their source is fingerprinted into the signature
#: (``code:...``): the ``qe`` version alone does not change between two commits of a source checkout, and a resume
#: (``qe evaluate``, ``qe score --resume``) compares signatures, so scores made by an older matcher were reused as
#: this one's
VERDICT_MODULES = ("qe.content.align", "qe.content.lexicon", "qe.content.scorer", "qe.content.shipped",
                   "qe.content.aligner", "qe.core.surface", "qe.core.mr")


@lru_cache(maxsize=1)
def code_digest() -> str:
    """The sha256 (12 hex digits) of the source of :data:`VERDICT_MODULES`; ``?`` where a module's source cannot be
    read (a build without ``.py`` files: the ``qe`` version then tells releases apart, as before)."""
    import hashlib
    import importlib.util
    from pathlib import Path

    h = hashlib.sha256()
    for name in VERDICT_MODULES:
        spec = importlib.util.find_spec(name)
        origin = getattr(spec, "origin", None)
        if not origin or not origin.endswith(".py") or not Path(origin).is_file():
            return "?"
        h.update(name.encode() + b"\0" + Path(origin).read_bytes() + b"\0")
    return h.hexdigest()[:12]


#: what ``score=`` makes the score: the counts (``coverage``, the default) or ``coverage_soft`` (``soft``: partial
#: evidence and extents; ``soft-partial``: partial evidence only, the component then computed so)
SCORES = ("counts", "soft", "soft-partial")

#: the lexicons ``lexicon=auto`` (the default) chooses among, by the MR's slots (:func:`auto_lexicon`)
AUTO_LEXICONS = ("e2e", "sf", "webnlg")
#: which of several lexicons that all fit an MR ``lexicon=auto`` prefers, by the MR's format (:func:`qe.core.mr.detect`)
FORMAT_PREFERENCE = {"e2e": "e2e", "da": "sf", "triples": "webnlg"}
#: the suffix that asks for a dataset's lexicon mined from the data directory rather than the shipped one
MINED = "@data"


@lru_cache(maxsize=8)
def dataset_lexicon(name: str, data_dir: str | None = None) -> Lexicon:
    """The lexicon of a known dataset (:data:`DATASET_LEXICONS`): the one shipped with ``qe``
    (:func:`qe.content.shipped.load`, checked against its checksum; ``data_dir`` is not read), or, for ``<name>@data``,
    the one mined from the data directory (:func:`mined_lexicon`)."""
    if name.endswith(MINED):
        return mined_lexicon(name[:-len(MINED)], data_dir)
    if name not in DATASET_LEXICONS:
        raise ValueError(f"lexicon={name!r}: choose none, a lexicon JSON file, or one of {', '.join(DATASET_LEXICONS)} "
                         f"(add {MINED} to mine it from the data directory)")
    from qe.content import shipped

    return shipped.load(name)


def mined_lexicon(name: str, data_dir: str | None = None) -> Lexicon:
    """The lexicon of a known dataset mined from the data directory on first use and read back from the cache
    afterwards (:mod:`qe.content.cache`); ``lexicon=<name>@data``. A missing data file raises the error naming it."""
    if name not in DATASET_LEXICONS:
        raise ValueError(f"lexicon={name}{MINED}: choose one of {', '.join(n + MINED for n in DATASET_LEXICONS)}")
    from qe.content.cache import cached

    return cached(name, data_dir, lambda: mine_dataset_lexicon(name, data_dir))


def _announced(mine_fn):
    """Mining a dataset's lexicon on first use takes 10-50 s: a bar with the time spent on a terminal and an INFO
    log line around it (:class:`qe.content.mining.Working`), not silence."""
    from functools import wraps

    @wraps(mine_fn)
    def announced(name: str, data_dir: str | None = None) -> Lexicon:
        from qe.content.mining import Working

        with Working(f"coverage: mining the {name} lexicon from the data directory (once: the cache keeps it)"):
            return mine_fn(name, data_dir)

    return announced


@_announced
def mine_dataset_lexicon(name: str, data_dir: str | None = None) -> Lexicon:
    """Mine the lexicon of a known dataset from the data directory (no cache), announced on a terminal:
    :func:`qe.content.shipped.mine_dataset_lexicon` (it lives there so that the generator of the shipped lexicons
    does not import this module)."""
    return _mine_dataset(name, data_dir)


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
    if text in DATASET_LEXICONS or (text.endswith(MINED) and text[:-len(MINED)] in DATASET_LEXICONS):
        return dataset_lexicon(text, data_dir)
    from pathlib import Path

    if not Path(text).exists() and "/" not in text and not text.endswith(".json"):
        raise ValueError(f"lexicon={text!r}: not a known lexicon nor a file; choose none, "
                         f"{', '.join(DATASET_LEXICONS)} (shipped; <name>{MINED}: mined from the data directory), "
                         "or a lexicon JSON file")
    return Lexicon.load(text)


def mr_slots(mr: str, where: str = "<mr>", mr_format: str = "auto") -> tuple[bool, frozenset[str]]:
    """Whether an MR is RDF triples, and its slot names (:func:`~qe.core.surface.norm_slot`; a triple MR's
    properties)."""
    from qe.core.mr import TRIPLE_ACT
    from qe.core.surface import norm_slot

    facts = Matcher.facts(mr, where, mr_format)
    triples = bool(facts) and all(a == TRIPLE_ACT for a, _, _ in facts)
    return triples, frozenset(norm_slot(s) for _, s, _ in facts)


def lexicon_misfit(lex: Lexicon, triples: bool, slots: frozenset[str]) -> str | None:
    """Why ``lex`` does not fit an MR (None: it does): a slot lexicon fits an MR whose every slot it has, a lexicon of
    triple words (``webnlg``) an MR of RDF triples. The rules (no slots, no triple words) fit any MR."""
    if not lex.slots and not lex.has_triple_words:
        return None
    if triples:
        return None if lex.has_triple_words else "the MR holds RDF triples and the lexicon knows slots only"
    if not lex.slots:
        return "the MR holds slots and the lexicon knows RDF triple words only"
    unknown = sorted(slots - set(lex.slots))
    return f"slots the lexicon does not have: {', '.join(unknown)}" if unknown else None


def auto_lexicon(triples: bool, slots: frozenset[str], fmt: str | None,
                 lexicons: dict[str, Lexicon]) -> str | None:
    """``lexicon=auto``'s choice for one MR among ``lexicons`` (name -> lexicon), None for the rules.

    RDF triples take the lexicon of triple words (``webnlg``): their properties are an open vocabulary and that
    lexicon adds words, not facts of slots. An MR of slots takes a lexicon that has *every* one of its slots. Not most:
    slot names such as ``name``, ``type``, ``price``, ``area`` recur across domains, so a partial overlap is the mark of
    another domain (a laptop MR has 3 of its 5 slots in the SF lexicon; a BAGEL MR 4-5 of 5-6, and with the SF lexicon
    11 invented names per 100 faithful BAGEL references against none with the rules), and a lexicon whose slots hold
    every slot of the MR is of its domain, so that every fact it reports, invented ones included, is of a slot of that
    domain. Among several that fit, the one the MR's format suggests (:data:`FORMAT_PREFERENCE`), then the one with
    the fewest slots (the fewest slots it could report as invented), then by name. An MR without slots (``goodbye()``)
    takes none: no fact to check, no domain to speak for."""
    if triples:
        fit = [n for n, lex in lexicons.items() if lex.has_triple_words]
    elif not slots:
        return None
    else:
        fit = [n for n, lex in lexicons.items() if lex.slots and lexicon_misfit(lex, False, slots) is None]
    if not fit:
        return None
    prefer = FORMAT_PREFERENCE.get(fmt or "")
    return min(fit, key=lambda n: (n != prefer, len(lexicons[n].slots), n))


class AutoMatcher:
    """``lexicon=auto``: per MR, one :class:`~qe.content.align.Matcher` with the shipped lexicon whose slots hold every
    slot of the MR (:func:`auto_lexicon`), made when such an MR is first met. An MR with a slot no known lexicon has
    is checked by the rules, with one warning naming its unknown slots; the signature says what was used
    (:meth:`used`)."""

    name = "matcher"

    def __init__(self, data_dir: str | None = None, mr_format: str = "auto", lexicons: tuple[str, ...] = AUTO_LEXICONS):
        from qe.core.mr import MR_FORMATS

        if mr_format not in MR_FORMATS:
            raise ValueError(f"mr_format={mr_format!r}: choose one of {', '.join(MR_FORMATS)}")
        self.data_dir, self.mr_format = data_dir, mr_format
        self.names = tuple(lexicons)
        self._lexicons: dict[str, Lexicon] | None = None
        self._by_name: dict[str | None, Matcher] = {}
        self._choice: dict[tuple, str | None] = {}  # (triples, slots, format) -> the lexicon's name (None: rules)
        self._by_mr: dict[str, str | None] = {}  # an MR met before -> its choice
        self._used: dict[str, str] = {}  # lexicon name -> its checksum; "rules" -> "" when the rules were used
        self._warned = False

    def lexicons(self) -> dict[str, Lexicon]:
        """The known lexicons by name (the shipped ones, read on first use: a few milliseconds)."""
        if self._lexicons is None:
            self._lexicons = {n: dataset_lexicon(n, self.data_dir) for n in self.names}
        return self._lexicons

    def choose(self, mr: str, where: str = "<mr>") -> str | None:
        """The name of the lexicon :func:`auto_lexicon` picks for ``mr`` (None: the rules)."""
        from qe.core.mr import detect

        if mr in self._by_mr:  # the same MR again (one per system compared): no second parse
            return self._by_mr[mr]
        triples, slots = mr_slots(mr, where, self.mr_format)
        fmt = self.mr_format if self.mr_format != "auto" else detect(mr)
        key = (triples, slots, fmt)
        if key not in self._choice:
            got = self._choice[key] = auto_lexicon(triples, slots, fmt, self.lexicons())
            if got is None and slots and not self._warned:
                self._warn(slots, where)
        if len(self._by_mr) > 100_000:  # bounded: a long run over many MRs does not grow it without end
            self._by_mr.clear()
        self._by_mr[mr] = self._choice[key]
        return self._choice[key]

    def _warn(self, slots: frozenset[str], where: str) -> None:
        import logging

        self._warned = True
        # the slots that keep the nearest lexicon (the one missing the fewest) from fitting
        near = min(((sorted(slots - set(lex.slots)), n) for n, lex in self.lexicons().items() if lex.slots),
                   key=lambda x: (len(x[0]), x[1]), default=(sorted(slots), "none"))
        logging.getLogger("qe").warning(
            "coverage: lexicon=auto: no known lexicon (%s) has every slot of an MR (%s; unknown to the nearest, %s: "
            "%s); MRs like it are checked by the rules, which find values by their own words and binary slots by "
            "their names (weaker: paraphrased values read as omitted). A lexicon mined from your own pairs fits "
            "them: `qe content mine`, then --opt lexicon=<its file>. Said once", ", ".join(self.names), where,
            near[1], ", ".join(near[0]))

    def matcher_for(self, mr: str, where: str = "<mr>") -> Matcher:
        name = self.choose(mr, where)
        got = self._by_name.get(name)
        if got is None:
            lex = None if name is None else self.lexicons()[name]
            got = self._by_name[name] = Matcher(lex, mr_format=self.mr_format)
        if (name or "rules") not in self._used:  # the checksum once per lexicon (it serialises the whole lexicon)
            self._used[name or "rules"] = "" if name is None else got.lexicon.checksum
        return got

    def used(self) -> str:
        """The lexicons used so far, for the signature: ``auto`` before any MR, then ``auto[e2e:<checksum>]``, with
        ``rules`` when some MRs fit no known lexicon (``auto[e2e:<checksum>,rules]``)."""
        if not self._used:
            return "auto"
        parts = [k if k == "rules" else f"{k}:{v}" for k, v in sorted(self._used.items())]
        return f"auto[{','.join(parts)}]"

    def used_as(self, before: str) -> str:
        """What :meth:`used` would say now had the MRs picked the lexicons ``before`` (an earlier :meth:`used`:
        ``auto[sf:<checksum>,rules]``) names: their checksums as they are now (``<name>:missing`` for one no longer
        known), so a changed lexicon shows. A bare ``auto`` names nothing (``qe evaluate`` until 2026-12-07 recorded
        the signature before scoring): ``auto[unrecorded]``, which matches no scores."""
        m = re.fullmatch(r"auto\[(.*)\]", before)
        if m is None:
            return "auto[unrecorded]"
        parts = []
        for part in m.group(1).split(","):
            name = part.split(":", 1)[0]
            lex = self.lexicons().get(name)
            parts.append("rules" if name == "rules" else f"{name}:{lex.checksum if lex is not None else 'missing'}")
        return f"auto[{','.join(parts)}]"

    def align(self, mr: str, output: str, where: str = "<mr>") -> Alignment:
        return self.matcher_for(mr, where).align(mr, output, where=where)

    facts = staticmethod(Matcher.facts)


class FitMatcher(Matcher):
    """A :class:`~qe.content.align.Matcher` with a lexicon the user named (``lexicon=webnlg``, a file): it is used as
    asked, and the first MR it does not fit (:func:`lexicon_misfit`: a slot it does not have, a triple lexicon on
    slot MRs) gets one warning, so a lexicon of another domain is not used in silence."""

    def __init__(self, lexicon: Lexicon | None = None, mr_format: str = "auto", label: str | None = None):
        super().__init__(lexicon, mr_format=mr_format)
        self.label = label or self.lexicon.source  #: how the warning names the lexicon (as the user named it)
        self._fit_seen: set[tuple[bool, frozenset[str]]] = set()
        self._fit_warned = False

    def align(self, mr: str, output: str, where: str = "<mr>") -> Alignment:
        if not self._fit_warned and (self.lexicon.slots or self.lexicon.has_triple_words):
            key = mr_slots(mr, where, self.mr_format)
            if key not in self._fit_seen:
                self._fit_seen.add(key)
                why = lexicon_misfit(self.lexicon, *key)
                if why is not None:
                    import logging

                    self._fit_warned = True
                    logging.getLogger("qe").warning(
                        "coverage: lexicon %s does not fit the MRs it scores (%s: %s); scoring with it as asked, "
                        "but its verdicts and invented facts are of another domain's slots. lexicon=auto picks a "
                        "lexicon per MR by its slots. Said once", self.label, where, why)
        return super().align(mr, output, where=where)


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
                             else FitMatcher(resolve_lexicon(lexicon, data_dir), mr_format, self.lexicon_name))
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

    def signature_for(self, made_by: str) -> Signature:
        """With ``lexicon=auto`` the lexicons ``made_by`` names, with their checksums now (:meth:`AutoMatcher.used_as`):
        a scorer that has scored nothing says only ``auto``, which would match the scores of any lexicon."""
        sig = self.signature
        m = re.search(r"(?:^|\|)lexicon:(auto(?:\[[^\]|]*\])?)(?:\||$)", str(made_by))
        if not self.auto or m is None:
            return sig
        return Signature(sig.name, {**sig.fields, "lexicon": self.matcher.used_as(m.group(1))}, sig.versions)

    def identity(self) -> str:
        """With ``lexicon=auto``: every lexicon it may pick, with its checksum (``auto(e2e:...,sf:...,webnlg:...)``),
        so rows scored before a lexicon changed are not continued with the new one."""
        sig = self.signature
        if not self.auto:
            return str(sig)
        every = ",".join(f"{n}:{lex.checksum}" for n, lex in sorted(self.matcher.lexicons().items()))
        return str(Signature(sig.name, {**sig.fields, "lexicon": f"auto({every})"}, sig.versions))

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
        out["code"] = code_digest()
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
        errors and checkable facts; the set's score is their sums' ratio), so bootstrap CIs resample outputs.

        An output whose MR holds no checkable fact (only ``dontcare`` / ``none`` values) counts nothing, not even the
        values it invents: its SER is undefined, as its coverage is, and a pooled rate is over the facts that can be
        checked (4 faithful outputs and 4 such ones pooled to 1.5, not 0). Its row stays, as (0, 0), so
        that the items of systems compared on the same MRs stay paired."""
        import numpy as np

        from qe.significance import SetStatistic

        als = self.align(outputs, mrs)
        counted = ((a.errors(), a.counts()["facts"]) for a in als)
        stats = np.array([(e, n) if n > 0 else (0, 0) for e, n in counted], dtype=float).reshape(-1, 2)

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
    The dataset lexicons ship with ``qe`` (:mod:`qe.content.shipped`): no data directory is needed."""
    if options.get("aligner") not in (None, str(path)):
        raise ValueError(f"{path} is an aligner export: it cannot be loaded with another aligner={options['aligner']!r}")
    options.pop("aligner", None)
    from qe.core.scorer import check_options

    check_options(CoverageScorer, options, f"{path} (coverage with its aligner)")  # a typo: the valid keys, listed
    if "lexicon" in options:
        return CoverageScorer(aligner=str(path), **options)
    default = trained_lexicon(manifest)
    try:
        return CoverageScorer(aligner=str(path), lexicon=default, **options)
    except FileNotFoundError as exc:  # the dataset the default lexicon is mined from is not here
        raise FileNotFoundError(f"{exc} The export's default lexicon {default!r} is mined from it; "
                                "lexicon='none' (`--opt lexicon=none`) scores without it.") from None


__all__ = ["CoverageScorer", "soft_coverage", "AutoMatcher", "FitMatcher", "AUTO_LEXICONS", "FORMAT_PREFERENCE",
           "DATASET_LEXICONS", "MINED", "dataset_lexicon", "mined_lexicon", "mine_dataset_lexicon", "auto_lexicon",
           "lexicon_misfit", "mr_slots", "triple_pairs", "resolve_lexicon", "trained_lexicon", "from_export"]
