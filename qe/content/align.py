"""Content alignment: which facts of an MR an output realises, omits or states wrongly, and what it adds.

One interface for every MR format ``qe`` reads (:mod:`qe.core.mr`: dialogue acts, E2E attribute lists, JSON maps,
RDF triples)::

    from qe.content import Matcher
    a = Matcher().align("name[The Eagle], priceRange[cheap], familyFriendly[yes]",
                        "The Eagle is an expensive place that does not welcome children.")
    a.verdicts      # [Verdict(name=The Eagle: realised), Verdict(priceRange=cheap: wrong, said 'high'), ...]
    a.hallucinated  # values the output states that the MR does not hold
    a.counts()      # {"facts": 3, "realised": 1, "omitted": 0, "wrong": 2, "hallucinated": 0, "repeated": 0}

Verdicts (one per fact of the MR):

* ``realised`` - the value is stated (verbatim, as a usual surface form, or as a pattern of the lexicon compatible
  with it);
* ``wrong`` - the slot is talked about with another value (``cheap`` for ``priceRange[high]``; ``not
  family-friendly`` for ``familyFriendly[yes]``);
* ``omitted`` - nothing in the output says it;
* ``unchecked`` - the fact has nothing to find (``dontcare``, ``none``, a slot without value whose name has no
  known wording); unchecked facts count in no figure.

Slots that share words (E2E's ``priceRange`` and ``customer rating`` both say "high" and "average"): a one-word
mention whose nearest content word in its clause is a word of another category slot's name, and not of its own,
is that slot's ("high priced", "the price range is high"; :meth:`Matcher._attach`); where distance is in doubt
(another slot's name word in reach of a word it also knows), spaCy's dependency parse decides ("the prices at this
place are high": the subject of the copula). A pattern reads a form of its slot's name word ("average priced" for
"average price"). A single letter, a function word or a word the miner found common beyond its slot matches only
with a word of its slot in its clause (:meth:`Matcher._out_of_context`: the rating value "a" is not the article).
An MR value's plural realises it through the near-verbatim match ("televisions" for ``type[television]``). A binary
slot's trigger is read in other forms of its words ("kids", "children", "allows") and its polarity is flipped by a
negation cue a few words before it or right after it, past auxiliaries only ("children are not allowed").

``hallucinated`` lists what the output states that is not in the MR: a value of a slot the MR does not have, a second
value of a slot it has (not of a slot the MR holds as ``dontcare`` / ``none``: what a text says of that slot is the
fact's own wording), or (triples) a number the MR does not hold and, with a lexicon that knows how texts state
triples (``lexicon=webnlg``, :func:`~qe.content.lexicon.mine_triples`), each stretch of words that neither the
triples' entities nor their properties' usual words explain (``"kind": "words"``; a stretch of one word only when
some property's texts use it or it is a name: :data:`UNEXPLAINED_MIN_WORDS`; not a word that the texts of the
triple stated in that sentence alone use: :attr:`~qe.content.lexicon.Lexicon.attested`). ``repeated`` lists categorical
values stated more often than the MR holds them, in the same words (entity names are not counted: texts name an
entity again on purpose; a paraphrase of a stated value is not a repetition).

RDF triples: each triple is one fact, decided in four steps.

1. ``realised``: its object is found (verbatim, near-verbatim, or as one of its usual surface forms:
   :func:`qe.core.surface.entity_variants`; or written another way that :func:`_same_value` reads as the object:
   "Juventus FC" for ``Juventus_F.C.``, "LA" for ``Los_Angeles``) and its subject is named somewhere or is the subject
   of an earlier triple (a pronoun refers to it). The first triple's subject is taken as named (texts refer to it in
   too many ways to require it): a text about another entity that states the right objects is not caught. An
   occurrence inside another entity's name does not state the object ("Madrid" in "Adolfo Suárez Madrid-Barajas
   Airport" for ``location | Madrid``, "Indian" in "Indian Air Force" for ``India``); a year inside a date does.
2. ``wrong`` by a contradicting property: the object is found, but every mention of it is tied to the other side
   of a contradiction pair (:data:`CONTRADICTING`: birth and death places, dates, years; ``successor`` and
   ``predecessor``, ``followedBy`` and ``precededBy``), by that side's cue words nearest to it in its sentence
   (:data:`_SIDES`: "born", "died", "succeeded by", "preceded by", ...; not across "and" / "but"). "Born in St. Louis"
   for ``deathPlace | St._Louis`` is one error, charged to the MR's triple of the property the clause states when
   the MR has one with the same subject (``birthPlace | Dallas`` is then wrong, said "born in st. louis", and the
   death place is left omitted), else to the triple itself.
3. ``wrong`` by another object: the subject is named but the object is not found, and the output states, where the
   object should be, a value the MR does not hold of the object's type: a number for an object with a number (a
   date's year too), a name (a run of capitalised words holding a word that no entity or property name of the MR
   explains) for the others, and, with a lexicon of triple words, a lower-case stretch of unexplained words (the
   hallucination stretches below, not words many properties use). The value is tied to the triple by the
   property's cue words in the same sentence (up to 6 tokens before it, 4 after): the words of the property's name
   (:func:`~qe.core.surface.property_words`), its contradiction side's cues, and the words the lexicon mined for it
   (``Lexicon.properties``) that no other property of the MR has and few of all properties have
   (:data:`CUE_MAX_PROPERTIES`); failing those, by its type alone: a name right after "in" / "from" / "at" for a place
   property (:data:`PLACE_PROPERTIES`; only "from" for a nationality or origin: "is from Italy"), a demonym for a
   nationality ("an Austrian astronomer"), or a value ending with the object's last word ("Sony Records" for
   ``Philips_Records``). A value nearer another property's cues is that property's, unless every triple of that
   property is already answered ("discovered by the Austrian astronomer Walter Baade": the discoverer found,
   "discovered" does not claim "Austrian" from the nationality); each value answers one triple and each triple
   takes its nearest value.
4. ``wrong`` by one and one: a sentence about the subject (naming it, or a pronoun after a sentence that named it)
   that leaves exactly one triple with a number unanswered and states exactly one number the MR does not hold, tied
   to no triple by rule 3: that number is the triple's other object ("its runway is 1,200 metres long" for
   ``runwayLength | 600.0``). Numbers only: names and words carry no type to match by (on the clean development
   references, names paired so were mostly other entities). Otherwise the triple is ``omitted``.

``hallucinated`` (triples): numbers the MR does not hold and, with triple words, the stretches of unexplained words;
the value a ``wrong`` verdict reads (and its cue words) is that verdict's error, not also a hallucination, so "from
Italy" for ``nationality | Spain`` is one error. A stretch of unexplained words is one hallucination; a number is one
more (as before: a clause with a number and words counts two).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from qe.content.lexicon import (NEGATIONS, UNCHECKED_VALUES, Lexicon, SlotLexicon, WordForms, _form_of, _word_form,
                                content_word, entity_words, fold, function_words, in_context, is_cue, needs_context,
                                norm_tokens, norm_value, raw_tokens, rules_lexicon, slot_cues, slot_kind,
                                unexplained_spans)
from qe.core.mr import TRIPLE_ACT, parse_acts
from qe.core.surface import (NEGATING_PREFIXES, entity_text, entity_variants, find_all, find_approx, norm_slot,
                             property_words, tok_close_strict)

STATUSES = ("realised", "omitted", "wrong", "unchecked")
#: tokens that end the scope of a negation cue (and of a value's context)
SCOPE_END = frozenset({".", "!", "?", ";", ",", ":", "but", "and", "although", "however", "while", "whereas", "yet"})
#: dialogue acts that ask the user to choose a value of a slot (``?request(area)``, ``?select(kidsallowed=yes;
#: kidsallowed=no)``): the values a text names for an asked slot are the options it offers ("breakfast, lunch or
#: dinner?"), not facts it states; and a binary slot asked with both values is one question, realised by any wording
#: of the slot whatever its polarity ("do you care if kids are allowed?")
QUESTION_ACTS = frozenset({"request", "select"})
#: dialogue acts that say no entity fits their slots (``inform_no_match``): the negation of the existential ("there
#: are *no* hotels that allow dogs", "I could *not* find a restaurant that allows kids") is not the binary slot's
NO_MATCH_ACTS = frozenset({"inform_no_match"})
#: how many tokens before a binary slot's wording a negation cue may stand ("is not a family friendly")
NEGATION_WINDOW = 4
#: what links an elliptical clause to the one it shortens ("..., but the tecra b is not") (:meth:`Matcher._elliptical`)
_ELLIPSIS_LINKS = frozenset({",", ";", "but", "and", "while", "whereas"})
#: how many steps up the dependency parse a negation may stand from a binary slot's words and scope over them
#: (:meth:`Matcher._negated_above`)
NEGATION_DEPTH = 4
#: dependency labels of a noun that qualifies a trigger ("*dog* friendly", "*customer* friendly", "*user* friendly":
#: a noun phrase as adverbial modifier; not a compound or an adjective, as in "a *star* family restaurant", "the
#: *entire* family", "*available* internet", which still say the slot)
_NOUN_MODIFIERS = frozenset({"npadvmod"})
#: dependency labels of a clause that qualifies a noun ("hotels *that allow dogs*", "restaurants *allowing kids*")
_NOUN_CLAUSES = frozenset({"relcl", "acl"})
#: dependency labels of a noun's place in its clause: a prepositional phrase under one qualifies the noun ("no
#: laptops *for business computing*", "no hotels *with internet*")
_NOMINAL_DEPS = frozenset({"nsubj", "nsubjpass", "dobj", "attr", "pobj", "appos", "dative", "oprd"})
#: dependency labels of a clause of its own: a negation above one does not reach into it
_OWN_CLAUSE = frozenset({"conj", "advcl", "ccomp", "parataxis"})
#: how far (tokens, in its sentence) another category slot's word may stand from a one-word value mention for its
#: slot to be in doubt, so that the dependency parse decides it (:meth:`Matcher._attach`)
ATTACH_REACH = 6
#: what ends the sentence a value word is parsed in
_SENTENCE_END = frozenset({".", "!", "?", ";"})
#: relative pronouns: the subject of the copula in "a price range that is low" stands for the noun the clause
#: qualifies
_RELATIVES = frozenset({"that", "which", "who", "whose"})
#: dependency labels (spaCy's English scheme) whose head is what the word qualifies ("a *low* rating", "*highly*
#: priced", "*not* welcome")
_MODIFIER_DEPS = frozenset({"amod", "advmod", "compound", "nmod", "npadvmod", "nummod", "quantmod", "neg"})
#: the predicate of a copula ("prices are *high*"): what it qualifies is the copula's subject
_PREDICATE_DEPS = frozenset({"acomp", "attr", "oprd"})
#: the pipelines tried for the parse, best first (``en_core_web_sm`` is a dependency of qe)
SYNTAX_PIPELINES = ("en_core_web_md", "en_core_web_sm")
_SYNTAX: dict[str, Any] = {}
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)?$")
_ISO_DATE = re.compile(r"^(\d{3,4})-(\d\d)-\d\d$")
#: a season: "2014–15", "2014-15"
_SEASON = re.compile(r"\b(\d{4})\s*[–-]\s*(\d\d)\b")


@dataclass
class Verdict:
    slot: str
    value: str | None
    status: str
    said: str | None = None  #: the output's words the verdict rests on (realised: the value's wording; wrong: the
    #: words stating another value); None where no words were read (the aligner's own verdicts)
    engine: str = "matcher"  #: what decided it: ``matcher`` or ``aligner`` (:mod:`qe.content.aligner`)
    confidence: float | None = None  #: the aligner's probability of its verdict (aligner verdicts only)
    #: token spans (of :func:`~qe.content.lexicon.norm_tokens` of the output) of the words the verdict rests on;
    #: internal (the aligner's training data deletes them), never in :meth:`to_dict`
    spans: list[tuple[int, int]] | None = field(default=None, repr=False, compare=False)
    #: wrong verdicts: the canonical value the output states instead (as the lexicon writes it: ``high`` for "pricey")
    said_value: str | None = None
    #: omitted verdicts of the matcher: partial evidence, ``k / (n + 1)`` where ``n`` is the number of distinct content
    #: words and numbers of the value (of a triple: its object) and ``k`` how many of them the output writes outside
    #: the words of other verdicts, other values' mentions and the MR's names; None where it writes none (so always in
    #: (0, 1)). Read by the ``coverage_soft`` figure (:mod:`qe.content.scorer`)
    partial: float | None = field(default=None, compare=False)
    #: aligner verdicts: the aligner's probabilities ``{"realised": p, "omitted": p, "wrong": p}`` (internal, like
    #: ``spans``: never in :meth:`to_dict`; ``confidence`` is the one of the verdict)
    probs: dict[str, float] | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None and k not in ("spans", "probs")}


class Said(dict):
    """A ``hallucinated`` entry: a plain dict to every reader (equality, JSON), that also carries ``extent``: how much
    of what its sentence says it is, in ``(0, 1]`` (a stretch of unexplained words: its content words over its
    sentences' content words; 1 for a value or a number). Read by ``coverage_soft`` (:mod:`qe.content.scorer`)."""

    def __init__(self, *args: Any, extent: float = 1.0, **kw: Any):
        super().__init__(*args, **kw)
        self.extent = float(extent)

    def __reduce__(self):  # copies and pickles keep the extent
        return (_said, (dict(self), self.extent))


def _said(d: dict, extent: float) -> "Said":
    return Said(d, extent=extent)


@dataclass
class Alignment:
    verdicts: list[Verdict] = field(default_factory=list)
    hallucinated: list[dict[str, Any]] = field(default_factory=list)
    repeated: list[dict[str, Any]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        c = Counter(v.status for v in self.verdicts)
        return {"facts": sum(c[s] for s in ("realised", "omitted", "wrong")), "realised": c["realised"],
                "omitted": c["omitted"], "wrong": c["wrong"], "unchecked": c["unchecked"],
                "hallucinated": len(self.hallucinated), "repeated": sum(r.get("extra", 1) for r in self.repeated)}

    def errors(self) -> int:
        """Slot errors as the E2E papers count them: omitted + wrong + hallucinated + repeated."""
        c = self.counts()
        return c["omitted"] + c["wrong"] + c["hallucinated"] + c["repeated"]

    def realised_mr(self) -> dict[str, set[str]]:
        """What the output says, slot -> set of values (realised facts, the output's values of wrong ones, and the
        hallucinated values): the MR the text realises, as the cleaned E2E data annotate it."""
        out: dict[str, set[str]] = {}
        for v in self.verdicts:
            if v.status == "realised":
                out.setdefault(v.slot, set()).add(v.value or "")
            elif v.status == "wrong" and v.said_value is not None:
                out.setdefault(v.slot, set()).add(v.said_value)
        for h in self.hallucinated:
            if h.get("slot"):
                out.setdefault(h["slot"], set()).add(h["value"])
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"verdicts": [v.to_dict() for v in self.verdicts], "hallucinated": self.hallucinated,
                "repeated": self.repeated, "counts": self.counts()}


@dataclass
class _Match:
    slot: str  #: normalised slot key
    start: int
    end: int
    values: dict[str, int]  #: compatible norm values -> weight
    text: str
    source: str  #: value | pattern | trigger

    @property
    def length(self) -> int:
        return self.end - self.start


def _find_every(tokens: list[str], sub: list[str]) -> list[int]:
    n = len(sub)
    return [i for i in range(len(tokens) - n + 1) if n and tokens[i:i + n] == sub]


def _sentence_of(i: int, j: int, tokens: list[str]) -> tuple[int, int]:
    """Where the sentence that holds ``tokens[i:j]`` starts and ends (:data:`_SENTENCE_END`)."""
    a = i
    while a > 0 and tokens[a - 1] not in _SENTENCE_END:
        a -= 1
    b = j
    while b < len(tokens) and tokens[b] not in _SENTENCE_END:
        b += 1
    return a, b


def _ancestors(k: int, heads: list[int], steps: int) -> list[int]:
    """The words above word ``k`` of a parsed sentence, nearest first, at most ``steps`` of them (fewer at the root)."""
    out = []
    for _ in range(steps):
        if heads[k] == k:
            break
        k = heads[k]
        out.append(k)
    return out


def _lone_digit(m: "_Match", tokens: list[str]) -> bool:
    """A lexicon's one-word mention that is a one-digit number ("1", or "one" as
    :func:`~qe.content.lexicon.norm_tokens` writes it): as weak alone as a single letter ("all in *one*", "*one* can
    order", "the first kid friendly *one*" say no rating of 1), so it states a value only in its slot's context
    (:meth:`Matcher._out_of_context`). The MR's own value ("has 1 usb port" of ``usbports=1``) is read as the MR
    writes it."""
    return m.length == 1 and m.source != "value" and len(tokens[m.start]) == 1 and tokens[m.start].isdigit()


def _negation_at(tokens: list[str], start: int) -> int | None:
    """The position of a negation cue among the few tokens before ``start``, in the same clause, or None."""
    for k in range(start - 1, max(-1, start - 1 - NEGATION_WINDOW), -1):
        t = tokens[k]
        if t in SCOPE_END:
            return None
        if t in NEGATIONS:
            return k
    return None



#: what may stand between a binary slot's wording and a negation after it ("children are not allowed")
_AUXILIARIES = frozenset({"is", "are", "was", "were", "be", "'s", "'re", "should", "shall", "will", "would", "can",
                          "could", "may", "might", "must", "do", "does", "did", "really", "certainly"})


#: the auxiliaries that stand for a predicate in an elliptical clause ("the tecra b *is* not", "the other *has*")
_ELLIPSIS_AUX = (_AUXILIARIES | {"has", "have"}) - {"be", "really", "certainly"}


def _negation_after(tokens: list[str], end: int) -> int | None:
    """The position of a negation cue right after ``end``, past auxiliaries only ("children are not allowed",
    "kids not welcome", "children should not visit"), or None."""
    for k in range(end, min(len(tokens), end + 3)):
        t = tokens[k]
        if t in NEGATIONS and t not in ("non", "un", "without"):
            return k
        if t not in _AUXILIARIES:
            return None
    return None


def _syntax_pipeline():
    """spaCy's tokens-to-vectors, tagger and dependency parser (the first of :data:`SYNTAX_PIPELINES` that loads,
    through :func:`qe.core.offline.load_spacy`; lemmatizer and entities off), or None, with one warning, where none
    loads: then distance alone places value words (:meth:`Matcher._attach`)."""
    if "nlp" not in _SYNTAX:
        from qe.core.offline import load_spacy

        nlp, errors = None, []
        for name in SYNTAX_PIPELINES:
            try:
                nlp = load_spacy(name, disable=("ner", "lemmatizer", "attribute_ruler", "senter"))
                break
            except Exception as exc:  # noqa: BLE001 - a missing or broken pipeline: try the next, then go on without
                errors.append(f"{name}: {exc}")
        if nlp is None:
            import logging

            logging.getLogger("qe").warning("coverage: no spaCy parser loads (%s); value words are placed by "
                                            "distance alone", "; ".join(errors)[:300])
        _SYNTAX["nlp"] = nlp
    return _SYNTAX["nlp"]


@lru_cache(maxsize=100_000)
def _stem(t: str) -> str:
    """The Snowball (Porter 2) stem of an English word: "rated" and "rating" are one word for the parse's slots."""
    st = _SYNTAX.get("stemmer")
    if st is None:
        from nltk.stem.snowball import SnowballStemmer

        st = _SYNTAX["stemmer"] = SnowballStemmer("english")
    return st.stem(t)


def _governor(k: int, heads: list[int], deps: list[str], words: tuple[str, ...]) -> int | None:
    """What the word ``k`` of a parsed sentence qualifies: the head of a modifier ("a *low* rating", "*highly*
    priced"); for the predicate of a copula ("prices are *high*"), the copula's subject, or, when that subject is a
    relative pronoun or there is none, the noun the relative clause qualifies ("a price range that is *low*"); None
    for any other role."""
    dep = deps[k]
    if dep in _MODIFIER_DEPS:
        return heads[k] if heads[k] != k else None
    if dep in _PREDICATE_DEPS:
        cop = heads[k]
        subj = [j for j, (h, d) in enumerate(zip(heads, deps)) if h == cop and j != cop and d in ("nsubj", "nsubjpass")]
        if subj and words[subj[0]].lower() not in _RELATIVES:
            return subj[0]
        if deps[cop] in ("relcl", "acl") and heads[cop] != cop:
            return heads[cop]
    return None


class Matcher:
    """The matcher engine: value lexicons (:class:`~qe.content.lexicon.Lexicon`) plus surface-form rules.

    ``lexicon``: a mined :class:`Lexicon` (``None``: rules only - values by their own surface forms, binary slots by
    the words of the slot's name). ``name`` is what verdicts name as their engine."""

    name = "matcher"

    def __init__(self, lexicon: Lexicon | None = None, mr_format: str = "auto"):
        from qe.core.mr import MR_FORMATS

        if mr_format not in MR_FORMATS:
            raise ValueError(f"mr_format={mr_format!r}: choose one of {', '.join(MR_FORMATS)}")
        self.lexicon = lexicon or rules_lexicon()
        self.mr_format = mr_format  #: how MRs are read (auto: detected; qe.core.mr.MR_FORMATS)
        self._prop_forms: dict[str, WordForms] = {}
        self._common_forms: WordForms | None = None
        self._att: dict[str, frozenset] = {}  #: a property's rarer wordings (:meth:`_attested`)
        self._trig_idx: dict[str, list] | None = None  #: the lexicon's triggers by their first letters (first use)
        self._name_words_cache: dict[str, tuple[str, ...]] = {}  #: a slot's written name -> its content words
        self._binary_words_cache: dict[str, frozenset[str]] = {}  #: a binary slot -> its words (_binary_words)
        #: per set of category slots: token -> the slots whose name it is a word of (:meth:`_attach`)
        self._owners: dict[tuple, dict[str, set[str]]] = {}
        #: the dependency parses of the sentences :meth:`_attach` had to parse (words -> (heads, labels)), and how
        #: many it parsed (a figure for the benchmarks: parsing is for the few mentions distance cannot place)
        self._parses: dict[tuple[str, ...], tuple[list[int], list[str], list[str] | None] | None] = {}
        self.parsed = 0
        self._entry_cache: dict[tuple[str, str, tuple[str, ...]], dict[str, int] | None] = {}
        self._cues: dict[str, set[str]] = {}  #: a slot's context words (:meth:`_out_of_context`)
        self._cue_memo: dict[tuple, dict[str, set[str]]] = {}  #: per set of slots: token -> slots (:meth:`_cue_owner`)

    # --------------------------------------------------------------------------------------------- facts
    @staticmethod
    def facts(mr: str, where: str = "<mr>", mr_format: str = "auto") -> list[tuple[str, str, str | None]]:
        """``[(act, slot, value), ...]`` of an MR in any format (``mr_format``: as :func:`qe.core.mr.parse_acts`);
        triples as ``(TRIPLE_ACT, property, (s, o))``."""
        out = []
        for act, slots in parse_acts(mr, mr_format, where=where):
            if act == TRIPLE_ACT:
                d = dict(slots)
                out.append((act, d["property"], f"{d['subject']} | {d['object']}"))
            else:
                out.extend((act, s, v) for s, v in slots)
        return out

    # ------------------------------------------------------------------------------------------- align
    def align(self, mr: str, output: str, where: str = "<mr>") -> Alignment:
        facts = self.facts(mr, where, self.mr_format)
        if facts and all(a == TRIPLE_ACT for a, _, _ in facts):
            return self._align_triples(facts, output)
        return self._align_slots([f for f in facts if f[0] != TRIPLE_ACT], output)

    def _slot_lex(self, key: str, mr_values: list[str]) -> SlotLexicon:
        sl = self.lexicon.slots.get(key)
        if sl is not None:
            return sl
        return SlotLexicon(slot_kind(Counter(mr_values), 1), {v: v for v in mr_values})

    def _kind(self, key: str, mr_slots: dict[str, list[str]]) -> str:
        """A slot's kind: the lexicon's, else read off the MR's values (:func:`~qe.content.lexicon.slot_kind`)."""
        sl = self.lexicon.slots.get(key)
        return sl.kind if sl is not None else self._slot_lex(key, mr_slots[key]).kind

    def _entries(self, key: str, sl: SlotLexicon, values, raw: dict | None = None):
        """(tokens, slot, compatible values or None for a trigger, source) of one slot: its values' surface forms
        (a form the lexicon mined as a pattern takes the pattern's compatible values: "cheap" also fits ``less than
        £20``), its patterns and its triggers."""
        out = []
        if sl.kind == "binary":
            for pat in sl.triggers:
                out.append((tuple(pat.split()), key, None, "trigger"))
        else:
            for v in values:
                if v in UNCHECKED_VALUES:
                    continue
                forms = [v.split()] + _surface_forms((raw or {}).get((key, v)) or sl.values.get(v, v))
                for form in forms:
                    text = " ".join(form)
                    if form:  # a usual form ("5 stars") realises what the value's own words do ("high" too)
                        out.append((tuple(form), key, dict(sl.patterns.get(text) or sl.patterns.get(v) or {v: 1}),
                                    "value"))
        for pat, compat in sl.patterns.items():
            out.append((tuple(pat.split()), key, dict(compat), "pattern"))
        return out

    def _index(self) -> dict[str, list]:
        idx = getattr(self, "_idx", None)
        if idx is None:
            idx = {}
            for key, sl in self.lexicon.slots.items():
                for e in self._entries(key, sl, list(sl.values)):
                    idx.setdefault(e[0][0], []).append(e)
            self._idx = idx
        return idx

    def _candidates(self, tokens: list[str], mr_slots: dict[str, list[str]], raw: dict[tuple[str, str], str],
                    names: dict[str, str], output: str | None = None) -> list[_Match]:
        idx = self._index()
        extra: dict[str, list] = {}
        for key, vals in mr_slots.items():  # MR values and slots the lexicon does not know
            sl = self.lexicon.slots.get(key)
            if sl is None:
                sl = self._slot_lex(key, vals)
                ents = self._entries(key, sl, vals, raw)
                if sl.kind == "binary":
                    words = _name_cue(names.get(key, key), tokens)
                    # the first content word of its name alone, in any form and order around it: the thing the slot
                    # is about ("does not allow *kids*" for kidsallowed, "a *family* restaurant" for
                    # familyFriendly); its polarity is read as any trigger's. With the name's next word in its
                    # negated form it says no ("family unfriendly"; entered first: the name's own words would
                    # take "unfriendly" for a form of "friendly")
                    head, rest = _topic_word(names.get(key, key), tokens)
                    if head is not None:
                        ents += [((head, p + rest[0]), key, {"no": 1}, "trigger") for p in NEGATING_PREFIXES]
                    if words:
                        ents.append((words, key, None, "trigger"))
                    if head is not None and (head,) != tuple(words):
                        ents.append(((head,), key, None, "trigger"))
            else:
                ents = self._entries(key, SlotLexicon(sl.kind, sl.values, sl.patterns),
                                     [v for v in vals if v not in sl.values], raw)
                ents = [e for e in ents if e[3] == "value"]
            if sl.kind != "binary":
                for v in vals:
                    if v in UNCHECKED_VALUES:
                        continue
                    # an MR value of alternatives is said by each of them ("near lower pacific heights and
                    # japantown" for near='lower pacific heights or japantown'), as this slot's, not a kindred one's
                    parts = [a.strip() for a in v.split(" or ")] if " or " in v else []
                    # ... and an MR value written with "the" is the same without it (near='the castro')
                    for form in [v, *parts]:
                        words = form.split()
                        if form in parts and words:
                            ents.append((tuple(words), key, {v: 1}, "value"))
                        if words[:1] == ["the"] and len(words) > 1:
                            ents.append((tuple(words[1:]), key, {v: 1}, "value"))
            for e in ents:
                extra.setdefault(e[0][0], []).append(e)
        cands: list[_Match] = []
        seen = set()
        name_words: dict[str, tuple[str, ...]] = {}
        for i, tok in enumerate(tokens):
            for form, key, compat, source in idx.get(tok, []) + extra.get(tok, []):
                j = i + len(form)
                if (key, i, j, source) in seen and source != "value":
                    continue
                got = tuple(tokens[i:j])
                if got != form:
                    if len(got) != len(form) or len(form) < 2:
                        continue
                    words = name_words.get(key)
                    if words is None:
                        words = name_words[key] = self._name_words(key, names)
                    if not _name_form_match(got, form, words):
                        continue
                seen.add((key, i, j, source))
                cands.append(_Match(key, i, j, {"yes": 1} if compat is None else compat, " ".join(tokens[i:j]),
                                    source if compat is not None else "trigger"))
        # a binary slot's trigger in another form of its words ("kids" for "kid", "allows" for "allow", "children"
        # for "child"; not "unfriendly" for "friendly")
        if self._trig_idx is None:
            self._trig_idx = _by_first_letters((form, key) for lst in idx.values() for form, key, compat, _ in lst
                                               if compat is None)
        more = _by_first_letters((form, key) for lst in extra.values() for form, key, compat, _ in lst
                                 if compat is None)
        for i, tok in enumerate(tokens):
            for form, key in self._trig_idx.get(tok[:2], []) + more.get(tok[:2], []):
                j = i + len(form)
                if j > len(tokens) or (key, i, j, "trigger") in seen or tuple(tokens[i:j]) == form:
                    continue
                if all(a == b or _word_form(a, b) for a, b in zip(tokens[i:j], form)):
                    seen.add((key, i, j, "trigger"))
                    cands.append(_Match(key, i, j, {"yes": 1}, " ".join(tokens[i:j]), "trigger"))
        # an MR value not found verbatim may be there near-verbatim ("citycentre", "hotels")
        for key, vals in mr_slots.items():
            for v in vals:
                if v in UNCHECKED_VALUES or not v or any(c.slot == key and v in c.values for c in cands):
                    continue
                if self._kind(key, mr_slots) == "binary":
                    continue
                i, j = _find_near(tokens, v.split())
                if i >= 0:
                    cands.append(_Match(key, i, j, {v: 1}, " ".join(tokens[i:j]), "value"))
        cands = self._attach(cands, tokens, mr_slots, names, output)
        # after attaching: a word another slot's name claims is that slot's before its context is asked for.
        # A lone digit inside a longer mention of its slot ("1" of "1 out of 5") is left to that mention
        # (:meth:`_resolve` prefers it), without a parse
        inside = {(c.slot, k) for c in cands if c.length > 1 for k in range(c.start, c.end)}
        return [c for c in cands if (_lone_digit(c, tokens) and (c.slot, c.start) in inside)
                or not self._out_of_context(c, tokens, mr_slots, names, output, raw)]

    def _out_of_context(self, m: _Match, tokens: list[str], mr_slots: dict[str, list[str]],
                        names: dict[str, str], output: str | None = None,
                        raw: dict[tuple[str, str], str] | None = None) -> bool:
        """A mention too weak to state a value alone, with no word of its slot's context around it
        (:func:`~qe.content.lexicon.in_context`: a word of the slot's name or of its multi-word patterns and
        triggers within a few tokens of its clause): a single letter or function words (the rating value "a" is
        not the article; :func:`~qe.content.lexicon.needs_context`), or a word the lexicon's miner found common
        beyond the slot (``settings["context_words"]``). A single letter or function word must also be tied to that
        word by the dependency parse (:meth:`_tied`: "an energy rating of *b*", not "*a* television with an energy
        rating"). A negation before the mention still counts (:func:`_negation_at`): "does not use credit cards"
        is the slot's, negated. Names need no context: an entity slot's values, and an MR value written with a
        capital (``name[A]``), as :meth:`_align_slots` takes such a value for a name."""
        sl = self.lexicon.slots.get(m.slot)
        if (sl is not None and sl.kind == "entity") or (m.source == "value" and any(
                ((raw or {}).get((m.slot, v)) or "")[:1].isupper() for v in m.values)):
            return False
        words = tokens[m.start:m.end]
        weak = all(needs_context(t) for t in words) or _lone_digit(m, tokens)
        if not weak:
            ctx = self.lexicon.settings.get("context_words") if isinstance(self.lexicon.settings, dict) else None
            if m.length != 1 or not isinstance(ctx, dict) or not any(
                    words[0] == w or _word_form(words[0], w) for w in ctx.get(m.slot) or ()):
                return False
        cues = self._cues.get(m.slot)
        if cues is None:
            sl = self.lexicon.slots.get(m.slot) or self._slot_lex(m.slot, mr_slots.get(m.slot, []))
            cues = self._cues[m.slot] = slot_cues(m.slot, sl) | slot_cues(m.slot, sl, names.get(m.slot))
        if not in_context(tokens, m.start, m.end, cues):
            return True
        return weak and not self._tied(m.start, m.end, tokens, output, cues)

    def _binary_words(self, key: str) -> frozenset[str]:
        """The words of a binary slot: its triggers', its name's and its patterns' content words (negations and
        function words left out): ``family``, ``friendly``, ``kid``, ``children`` ... of ``familyFriendly``."""
        got = self._binary_words_cache.get(key)
        if got is None:
            sl = self.lexicon.slots.get(key)
            words = set(self._name_words(key, {}))
            if sl is not None:
                words |= {t for g in list(sl.triggers) + list(sl.patterns) for t in g.split()}
            got = self._binary_words_cache[key] = frozenset(w for w in words if content_word(w) and w not in NEGATIONS)
        return got

    def _qualified_triggers(self, matches: list[_Match], tokens: list[str], output: str | None,
                            mr_slots: dict[str, list[str]]) -> list[_Match]:
        """A one-word trigger that a noun of no word of its slot qualifies ("*dog* friendly", "*customer*
        friendly", "*adult* friendly"; spaCy's parse: the noun an ``npadvmod`` of the trigger, :data:`_NOUN_MODIFIERS`)
        says what that noun says, not its slot: the mention goes to the one other binary slot whose
        words hold a form of the noun (SF's "a dog friendly hotel": ``dogsallowed``, not ``kidsallowed``), or is
        dropped (E2E's "a customer friendly coffee shop" says nothing of families). Without a parser, or where the
        word before is one of the slot's own ("kid friendly", "very friendly"), the trigger stays."""
        keep: list[_Match] = []
        taken = {k for m in matches for k in range(m.start, m.end)}
        for m in matches:
            prev = tokens[m.start - 1] if m.start > 0 else ""
            if m.source != "trigger" or m.length != 1 or not content_word(prev) or \
                    any(_form_of(prev, w) for w in self._binary_words(m.slot)):
                keep.append(m)
                continue
            parse = self._parse_around(m.start - 1, m.end, tokens, output)
            if parse is None:
                keep.append(m)
                continue
            a, heads, deps, _ = parse
            if not (heads[m.start - 1 - a] == m.start - a and deps[m.start - 1 - a] in _NOUN_MODIFIERS):
                keep.append(m)
                continue
            binary = set(mr_slots) | {k for k, sl in self.lexicon.slots.items() if sl.kind == "binary"}
            owners = [k for k in sorted(binary) if k != m.slot and self._kind(k, mr_slots) == "binary"
                      and any(_form_of(prev, w) for w in self._binary_words(k))]
            if len(owners) == 1 and m.start - 1 not in taken:
                keep.append(_Match(owners[0], m.start - 1, m.end, {"yes": 1}, f"{prev} {m.text}", "trigger"))
        return keep

    def _untied_predicates(self, matches: list[_Match], tokens: list[str], output: str | None,
                           mr_slots: dict[str, list[str]]) -> list[_Match]:
        """A one-word trigger of a binary slot that is no noun by the parse (an adjective or a verb: "friendly",
        "welcome", "use") says the slot only of another of the slot's words (:meth:`_binary_words`): one within
        two tokens of it in its sentence ("kid friendly", "welcomes children", "use your credit card") or tied to
        it by the parse within two steps ("friendly to families", "welcoming to families"). Alone it says
        something else: "a friendly place", "Welcome to The Wrestlers" (E2E), "you will be able to use the
        internet there" (SF hotel, not ``acceptscreditcards``). A noun ("family", "kids", "internet") states its
        slot alone, as before; so does every trigger without a parser or a tagger."""
        keep: list[_Match] = []
        for m in matches:
            if m.source != "trigger" or m.length != 1 or self._kind(m.slot, mr_slots) != "binary":
                keep.append(m)
                continue
            word = tokens[m.start]
            own = {w for w in self._binary_words(m.slot) if w != word and not _form_of(word, w)
                   and not _form_of(w, word)}
            a, b = _sentence_of(m.start, m.end, tokens)
            if any(is_cue(t, own) for t in tokens[max(a, m.start - 2):m.start] + tokens[m.end:min(b, m.end + 2)]):
                keep.append(m)
                continue
            parse = self._parse_around(m.start, m.end, tokens, output, tags=True)
            tag = None if parse is None or parse[3] is None else parse[3][m.start - a]
            if not tag or tag.startswith("NN"):  # no parser or no tagger: as before
                keep.append(m)
                continue
            heads = parse[1]
            k = m.start - a
            tied = [c for c in range(b - a) if c != k and is_cue(tokens[a + c], own)]
            if any(k in _ancestors(c, heads, 2) or c in _ancestors(k, heads, 2) for c in tied):
                keep.append(m)
        return keep

    def _parse_around(self, i: int, j: int, tokens: list[str], output: str | None, tags: bool = False
                      ) -> tuple[int, list[int], list[str], list[str] | None] | None:
        """(where the sentence of ``tokens[i:j]`` starts, heads, labels, tags where asked: :meth:`_parse`) of its
        dependency parse, or None."""
        a, b = _sentence_of(i, j, tokens)
        cased = (_cased_tokens(output, tokens) if output is not None else None) or tokens
        parse = self._parse(tuple(cased[a:b]), tags=tags)
        return None if parse is None else (a, *parse)

    def _negated_above(self, i: int, j: int, tokens: list[str], output: str | None) -> int | None:
        """The position of a negation that scopes over the words ``tokens[i:j]`` by the dependency parse of their
        sentence, or None: a ``neg`` dependent ("not", "n't", "never") or the determiner "no" of a word on their way
        up to the root, within :data:`NEGATION_DEPTH` steps and not past a clause of its own (``conj``, ``advcl``,
        ``ccomp``, ``parataxis``): "It is *not* a place to bring children", "*not* the best place to bring your
        kids"; not "It is not expensive and it is family friendly". Nor a negated existential ("there are *no*
        hotels in Cow Hollow that allow dogs", "there is*n't* a better place to take your children"): it denies that
        such a place exists, as the act ``inform_no_match(dogsallowed='yes')`` says, not the slot. What the few
        words before and after a mention say (:func:`_negation_at`, :func:`_negation_after`) is read first. A
        negation after the words counts only where they are its verb's subject ("children under 12 are *not*
        allowed"; not "Family dinner night would*n't* be complete without ...")."""
        a, b = _sentence_of(i, j, tokens)
        if not any(t in NEGATIONS for t in tokens[a:i] + tokens[j:b]):
            return None  # no negation in the sentence: no parse needed (most mentions)
        parse = self._parse_around(i, j, tokens, output)
        if parse is None:
            return None
        _, heads, deps, _ = parse
        mine = range(i - a, j - a)
        top = next((k for k in mine if heads[k] not in mine or heads[k] == k), None)
        if top is None:
            return None

        def existential(x: int) -> bool:  # "there is/are ...", or the noun it says there is (none) of
            def expl(y: int) -> bool:
                return any(h == y and d == "expl" for h, d in zip(heads, deps))
            return expl(x) or (deps[x] in ("attr", "nsubj") and heads[x] != x and expl(heads[x]))
        k = top
        for step in range(NEGATION_DEPTH):
            if heads[k] == k or deps[k] in _OWN_CLAUSE:
                return None
            subject = step == 0 and deps[k] in ("nsubj", "nsubjpass")
            k = heads[k]
            if existential(k):
                return None
            for c, (h, d) in enumerate(zip(heads, deps)):
                if h == k and c != k and c not in mine and (d == "neg" or (d == "det" and tokens[a + c] == "no")) \
                        and (c < i - a or subject):
                    return a + c
        return None

    def _denies_existence(self, cue: int, i: int, j: int, tokens: list[str], output: str | None) -> bool:
        """Whether the negation cue at ``cue`` (before the words ``tokens[i:j]``) denies that an entity exists rather
        than the words: by the dependency parse of their sentence it qualifies neither the words nor a word on their
        way up to their clause's verb (within :data:`NEGATION_DEPTH` steps), but the noun their clause or phrase
        qualifies or a verb above ("there are *no* restaurants allowing kids", "I could *not* find a hotel that allows dogs"; not "a
        hotel that does *not* accept credit cards", "*no* dogs allowed"). False without a parser (the cue counts)."""
        parse = self._parse_around(i, j, tokens, output)
        if parse is None:
            return False
        a, heads, deps = parse[0], parse[1], parse[2]
        mine = set(range(i - a, j - a))
        c = cue - a
        if not 0 <= c < len(heads) or c in mine:
            return False
        # the words' own clause: the words and their way up to its verb ("kids are not *allowed*", "does not
        # *accept* credit cards"); not the noun a clause of theirs qualifies ("no *hotels* that allow dogs")
        own = set(mine)
        k = next((x for x in mine if heads[x] not in mine or heads[x] == x), None)
        for _ in range(NEGATION_DEPTH):
            # stop at the clause's verb (the root, or the head of a clause of its own or of one that qualifies a
            # noun), and at a phrase that qualifies a noun ("no laptops *for business computing*")
            if k is None or heads[k] == k or deps[k] in _NOUN_CLAUSES or deps[k] in _OWN_CLAUSE or (
                    deps[k] == "prep" and deps[heads[k]] in _NOMINAL_DEPS):
                break
            k = heads[k]
            own.add(k)
        return heads[c] not in own

    def _tied(self, i: int, j: int, tokens: list[str], output: str | None, cues: set[str]) -> bool:
        """Whether the words ``tokens[i:j]`` and a word of ``cues`` (or a form of one) are tied by the dependency
        parse of their sentence: one is on the other's way up to the root within 3 steps ("rating of *b*": b, of,
        rating), or the cue is what the words qualify as a copula's predicate (:func:`_governor`: "the rating is
        *b*"). True without a parser (the window of :meth:`_out_of_context` decides)."""
        parse = self._parse_around(i, j, tokens, output)
        if parse is None:
            return True
        a, heads = parse[0], parse[1]
        b = a + len(heads)

        def up(k: int) -> list[int]:
            return _ancestors(k, heads, 3)

        mine = set(range(i - a, j - a))
        cue_at = {k for k in range(b - a) if k not in mine and is_cue(tokens[a + k], cues)}
        if any(set(up(k)) & cue_at for k in mine) or any(set(up(c)) & mine for c in cue_at):
            return True
        # the predicate of a copula whose subject is the cue ("Customer rating is a *3*", "its energy rating is *b*")
        words = tuple(tokens[a:b])
        return any(_governor(k, heads, parse[2], words) in cue_at for k in mine)

    # ------------------------------------------------------------------------------- slots' own words
    def _name_words(self, key: str, names: dict[str, str]) -> tuple[str, ...]:
        """The content words of a slot's name (``price``, ``range`` for ``priceRange``; ``customer``, ``rating``
        for ``customer rating``): as the lexicon's data or the MR write it."""
        sl = self.lexicon.slots.get(key)
        written = names.get(key) or (sl.name if sl is not None and sl.name else key)
        got = self._name_words_cache.get(written)
        if got is None:
            got = self._name_words_cache[written] = tuple(w for w in norm_tokens(property_words(written))
                                         if content_word(w) and len(w) >= 3)
        return got

    def _attach(self, cands: list[_Match], tokens: list[str], mr_slots: dict[str, list[str]],
                names: dict[str, str], output: str | None = None) -> list[_Match]:
        """A value word belongs to the slot whose name it qualifies: "high" in "high priced" or "the price range is
        high" is the price's, "low" in "a low customer rating and a price range" the rating's. The one-word mentions
        of category slots at one position are placed in two steps.

        1. By distance (cheap, and right for most texts): the nearest content word after the word (else before it)
           within 3 tokens of its clause. When it is a word of another category slot's name, and not of the
           mention's own, the word is read as that slot's (:meth:`_one_word_entry`: a one-word pattern or value of
           it, or the slot's patterns of the word with its name's words: "low" of priceRange says what "low price",
           "low priced", "low prices" say); otherwise it stays as it is.
        2. By the dependency parse, where distance is in doubt (:meth:`_in_doubt`): words of two slots' names on
           either side ("a price range ... low customer rating"), or none next to the word but a word of another
           slot's name (:meth:`_cue_owner`) within :data:`ATTACH_REACH` tokens of its sentence ("the prices at this
           place are high", where "high" is also a rating), another slot that knows the word in either case. spaCy's parser (:func:`_syntax_pipeline`) parses that sentence
           (cached per sentence) and the word goes to the slot of what it qualifies (:func:`_governor`): the head of
           a modifier ("a *low* customer rating", "*highly* priced"), the subject of a copula for its predicate
           ("prices are *high*"), the noun a relative clause qualifies ("a price range that is *low*"). The other
           slots' mentions of the word at that position are dropped; where the parse names no single slot, or no
           parser is installed, step 1 decides.

        So the parser runs on few outputs: 60 of the first 1,500 E2E development references when this step alone
        parsed (docs/results/content-log.md, "Syntax attachment, patterns in their slot, cues in context"); 189 with
        the matcher's later uses of the parse (negations, qualified and predicate triggers, lone digits:
        ``benchmarks/matcher_speed.py`` prints the count)."""
        if not cands:
            return cands
        keys = set(mr_slots) | {k for k, sl in self.lexicon.slots.items() if sl.kind == "category"}
        cats = [k for k in sorted(keys) if self._kind(k, mr_slots) == "category"]
        if len(cats) < 2:
            return cands
        words = {k: self._name_words(k, names) for k in cats}

        # which slots' names a token is a word of, remembered per set of slots (the lexicon's and the MR's)
        owners = self._owners.setdefault(tuple((k, words[k]) for k in cats), {})

        def owner(t: str) -> set[str]:
            got = owners.get(t)
            if got is None:
                if len(owners) > 100_000:  # bounded: a long run over many MRs does not grow it without end
                    owners.clear()
                got = owners[t] = {k for k in cats if any(_form_of(t, w) for w in words[k])}
            return got

        def nearest(i: int, step: int) -> set[str]:
            k = i
            for _ in range(3):
                if not 0 <= k < len(tokens) or tokens[k] in SCOPE_END:
                    return set()
                if content_word(tokens[k]):
                    return owner(tokens[k])
                k += step
            return set()

        out: list[_Match] = []
        have = {(c.slot, c.start, c.end) for c in cands}
        at: dict[int, list[_Match]] = {}
        for c in cands:
            if c.length != 1 or c.slot not in words or c.source == "trigger":
                out.append(c)
            else:
                at.setdefault(c.start, []).append(c)
        cased: list[str] | None = None
        for i, group in at.items():
            after, before = nearest(i + 1, 1), nearest(i - 1, -1)
            near = after or before
            target = None
            if self._in_doubt(i, group, after, before, tokens, words, mr_slots, names):
                if cased is None:
                    cased = (_cased_tokens(output, tokens) if output is not None else None) or tokens
                target = self._syntax_slot(i, tokens, cased, words)
            if target is not None:  # the parse decides: the word is the mention of the slot it qualifies
                mine = [c for c in group if c.slot == target]
                if mine:
                    out.extend(mine)
                    continue
                word = group[0].text
                compat = self._one_word_entry(target, word, mr_slots, names)
                if compat is not None and (target, i, i + 1) not in have:
                    out.append(_Match(target, i, i + 1, compat, word, "pattern" if len(compat) > 1 else "value"))
                    have.add((target, i, i + 1))
                continue  # a word the slot it qualifies does not know says nothing of the others
            for c in group:  # distance decides
                other = sorted(near - {c.slot})
                if not near or c.slot in near or len(other) != 1:
                    out.append(c)
                    continue
                to = other[0]
                compat = self._one_word_entry(to, c.text, mr_slots, names)
                if compat is None:
                    out.append(c)
                elif (to, c.start, c.end) not in have:
                    out.append(_Match(to, c.start, c.end, compat, c.text, "pattern" if len(compat) > 1 else "value"))
                    have.add((to, c.start, c.end))
        # in the candidates' order (a new mention where the one it replaces stood): ties in _resolve go as before
        rank = {id(c): n for n, c in enumerate(cands)}
        first = {i: min(rank[id(c)] for c in group) for i, group in at.items()}
        return sorted(out, key=lambda m: rank.get(id(m), first.get(m.start, len(cands))))

    def _cue_owner(self, t: str, words: dict[str, tuple[str, ...]]) -> set[str]:
        """The category slots whose name ``t`` is a word of for the parse: a form of it (:func:`_form_of`) or the
        same Snowball stem ("rated" / "rating")."""
        if not content_word(t):
            return set()
        memo = self._cue_memo.setdefault(tuple(sorted(words.items())), {})
        got = memo.get(t)
        if got is None:
            if len(memo) > 100_000:  # bounded, as the owners of _attach
                memo.clear()
            st = _stem(t)
            got = memo[t] = {k for k, ws in words.items() if any(_form_of(t, w) or st == _stem(w) for w in ws)}
        return got

    def _in_doubt(self, i: int, group: list[_Match], after: set[str], before: set[str], tokens: list[str],
                  words: dict[str, tuple[str, ...]], mr_slots: dict[str, list[str]], names: dict[str, str]) -> bool:
        """Whether distance cannot tell which slot the word at ``i`` is said of: another slot that knows the word
        (:meth:`_one_word_entry`) has a word of its name next to it on one side and a slot another on the other
        side ("the price range ... *low* customer rating"), or, with no slot's word next to it, within
        :data:`ATTACH_REACH` tokens of its sentence (:meth:`_cue_owner`: "the prices at this pub are *high*")."""
        mine = {c.slot for c in group}
        word = group[0].text

        def knows(slots: set[str]) -> bool:  # another slot could claim the word
            return any(self._one_word_entry(k, word, mr_slots, names) is not None for k in slots - mine)

        if after and before:
            return after != before and knows(after | before)
        if after or before:
            return False
        reach: set[str] = set()
        for step in (1, -1):
            k = i + step
            while 0 <= k < len(tokens) and abs(k - i) <= ATTACH_REACH and tokens[k] not in _SENTENCE_END:
                reach |= self._cue_owner(tokens[k], words)
                k += step
        return knows(reach) or (len(mine) > 1 and bool(reach))

    def _syntax_slot(self, i: int, tokens: list[str], cased: list[str],
                     words: dict[str, tuple[str, ...]]) -> str | None:
        """The category slot the word ``tokens[i]`` qualifies by the dependency parse of its sentence, or None (no
        single slot, or no parser): the slot whose name holds the word it qualifies (:func:`_governor`) or, for a
        noun with compounds ("customer rating"), one of those."""
        a, b = _sentence_of(i, i + 1, tokens)
        sent = tuple(cased[a:b])
        parse = self._parse(sent)
        if parse is None:
            return None
        heads, deps = parse[0], parse[1]
        k = i - a
        for _ in range(3):  # up through modifiers of modifiers ("very highly priced")
            g = _governor(k, heads, deps, sent)
            if g is None:
                return None
            got = self._cue_owner(tokens[a + g], words)
            for j, (h, d) in enumerate(zip(heads, deps)):  # "customer rating": its compounds
                if h == g and j != g and d == "compound":
                    got = got | self._cue_owner(tokens[a + j], words)
            if got:
                return next(iter(got)) if len(got) == 1 else None
            if deps[g] not in _MODIFIER_DEPS:
                return None
            k = g
        return None

    def _parse(self, words: tuple[str, ...], tags: bool = False
               ) -> tuple[list[int], list[str], list[str] | None] | None:
        """(heads, labels, Penn Treebank tags) of spaCy's dependency parse of ``words`` (pre-tokenised: one spaCy
        token per matcher token), cached per sentence; None without a parser. The tagger runs only where ``tags``
        asks for them (:meth:`_untied_predicates`); otherwise the tags are None."""
        got = self._parses.get(words, False)
        if got is not False and (got is None or not tags or got[2] is not None):
            return got
        nlp = _syntax_pipeline()
        got = None
        if nlp is not None:
            from spacy.tokens import Doc

            doc = Doc(nlp.vocab, words=list(words))
            for name, proc in nlp.pipeline:
                if name != "tagger" or tags:
                    doc = proc(doc)
            got = ([t.head.i for t in doc], [t.dep_ for t in doc], [t.tag_ for t in doc] if tags else None)
            self.parsed += 1
        if len(self._parses) > 20_000:  # bounded, as the owners above
            self._parses.clear()
        self._parses[words] = got
        return got

    def _one_word_entry(self, key: str, word: str, mr_slots: dict[str, list[str]],
                        names: dict[str, str] | None = None) -> dict[str, int] | None:
        """The compatible values of a slot's one-word pattern or value that is ``word`` or a form of it; else what
        the slot's patterns made of the word and words of the slot's name say ("low" of priceRange: "low price",
        "low priced", "low prices" together), or None."""
        ck = (key, word, tuple(sorted(mr_slots.get(key, []))))
        if ck in self._entry_cache:
            return self._entry_cache[ck]
        sl = self.lexicon.slots.get(key)
        entries: dict[str, dict[str, int]] = {}
        if sl is not None:
            entries.update({p: dict(c) for p, c in sl.patterns.items() if " " not in p})
            for v in sl.values:
                if " " not in v and v not in entries and v not in UNCHECKED_VALUES:
                    entries[v] = {v: 1}
        for v in mr_slots.get(key, []):
            if v and " " not in v and v not in entries and v not in UNCHECKED_VALUES:
                entries[v] = {v: 1}
        got: dict[str, int] | None = None
        if word in entries:
            got = entries[word]
        else:
            hit = [e for e in entries if tok_close_strict(word, e)]
            if len(hit) == 1:
                got = entries[hit[0]]
            elif sl is not None:
                own = self._name_words(key, names or {})
                merged: dict[str, int] = {}
                for p, compat in sl.patterns.items():
                    toks = p.split()
                    rest = [t for t in toks if t != word]
                    if len(toks) > 1 and len(rest) < len(toks) and any(content_word(t) for t in rest) and all(
                            not content_word(t) or any(_form_of(t, w) for w in own) for t in rest):
                        for v, n in compat.items():
                            merged[v] = merged.get(v, 0) + n
                got = merged or None
        if len(self._entry_cache) > 50_000:
            self._entry_cache.clear()
        self._entry_cache[ck] = got
        return got

    @staticmethod
    def _resolve(cands: list[_Match], mr_slots: dict[str, list[str]]) -> list[_Match]:
        """Longest matches first; a match overlapping one already taken is dropped; among matches of the same span,
        the one compatible with the MR wins (as the E2E slot-error script prefers the MR's value)."""
        def rank(m: _Match):
            in_mr = any(v in mr_slots.get(m.slot, []) for v in m.values) or (m.source != "value" and m.slot in mr_slots)
            # a value is as long with or without "the" before it: "near the castro" under near=castro is the MR's
            # near[castro], not the longer area[the castro] of a slot that takes the same places
            the = m.length > 1 and m.source == "value" and m.text.startswith("the ")
            return (-(m.length - the), 0 if m.source == "value" else 1, 0 if in_mr else 1, m.start)

        taken: list[_Match] = []
        used = set()
        for m in sorted(cands, key=rank):
            span = set(range(m.start, m.end))
            if span & used:
                continue
            used |= span
            taken.append(m)
        return sorted(taken, key=lambda m: m.start)

    def _align_slots(self, facts: list[tuple[str, str, str | None]], output: str) -> Alignment:
        tokens = norm_tokens(output)
        mr_slots: dict[str, list[str]] = {}
        raw: dict[tuple[str, str], str] = {}
        spelled = _binary_spellings(facts, self.lexicon)  # true / false / 1 / 0 of a binary slot -> yes / no
        for _, s, v in facts:
            key, nv = norm_slot(s), norm_value(v)
            nv = spelled.get((key, nv), nv)
            mr_slots.setdefault(key, []).append(nv)
            raw[(key, nv)] = (v or "").strip()
        written = {norm_slot(s): s for _, s, _ in facts}
        acts_of: dict[str, set[str]] = {}
        for act, s, _ in facts:
            acts_of.setdefault(norm_slot(s), set()).add(act)
        # slots a question asks for (:data:`QUESTION_ACTS`): the values a text names for them are options, no facts
        asked = {key for key, acts in acts_of.items() if acts & QUESTION_ACTS}
        matches = self._resolve(self._candidates(tokens, mr_slots, raw, written, output), mr_slots)
        matches = self._qualified_triggers(matches, tokens, output, mr_slots)
        matches = self._untied_predicates(matches, tokens, output, mr_slots)
        # each match says one value of its slot (binary: its polarity, flipped by a negation cue before it)
        said: dict[str, list[tuple[_Match, dict[str, int]]]] = {}
        cue_words: dict[int, str] = {}  # a negated mention's words, its negation cue included ("not family friendly")
        base_pol: dict[int, bool] = {}  # a binary mention's polarity before any negation
        for m in matches:
            vals = m.values
            sl = self.lexicon.slots.get(m.slot)
            if (sl is not None and sl.kind == "binary") or m.source == "trigger":
                best = max(vals, key=vals.get)
                pol = best in ("yes", "true")
                base_pol[id(m)] = pol  # what the words say without a negation (an elliptical clause repeats it)
                # in a no-match act a negation may deny the entity, not the slot (:meth:`_denies_existence`)
                no_match = bool(acts_of.get(m.slot)) and acts_of[m.slot] <= NO_MATCH_ACTS
                cue = _negation_at(tokens, m.start)
                if cue is not None and no_match and self._denies_existence(cue, m.start, m.end, tokens, output):
                    cue = None  # "there are no hotels that allow dogs": no such hotel, not no dogs
                after = _negation_after(tokens, m.end) if cue is None else None
                above = self._negated_above(m.start, m.end, tokens, output) \
                    if cue is None and after is None and not (set(m.text.split()) & NEGATIONS) else None
                if above is not None and no_match and self._denies_existence(above, m.start, m.end, tokens, output):
                    above = None  # "I could not find a restaurant that allows kids"
                if cue is not None and not (set(m.text.split()) & NEGATIONS):
                    pol = not pol
                    cue_words[id(m)] = " ".join(tokens[cue:m.end])
                elif after is not None and not (set(m.text.split()) & NEGATIONS):
                    pol = not pol
                    cue_words[id(m)] = " ".join(tokens[m.start:after + 1])
                elif above is not None:
                    pol = not pol
                    cue_words[id(m)] = " ".join(tokens[min(above, m.start):max(above + 1, m.end)])
                vals = {("yes" if pol else "no"): 1}
            said.setdefault(m.slot, []).append((m, vals))
        al = Alignment()
        consumed: set[int] = set()
        # realised first (so a slot with two values, e.g. near[x], near[y], gets both), then wrong
        pending = []
        for act, s, v in facts:
            key, nv = norm_slot(s), norm_value(v)
            nv = spelled.get((key, nv), nv)
            if v is not None and nv in UNCHECKED_VALUES:
                al.verdicts.append(Verdict(s, v, "unchecked"))
                continue
            if act == "select" and v is not None and self._kind(key, mr_slots) == "binary":
                # "do you care if kids are allowed?" asks select(kidsallowed=yes, kidsallowed=no): any wording of
                # the slot realises each of its alternatives, whatever its polarity
                ms = [m for m, _ in said.get(key, [])]
                al.verdicts.append(Verdict(s, v, "realised", cue_words.get(id(ms[0]), ms[0].text),
                                           spans=[(m.start, m.end) for m in ms]) if ms else Verdict(s, v, "omitted"))
                consumed.update(id(m) for m in ms)
                continue
            if v is None:  # a slot without value (request(area)): talked about or not
                hit = next((k for k, (m, _) in enumerate(said.get(key, [])) if id(m) not in consumed), None)
                if hit is None:  # no pattern of the slot (a lexicon knows few for a slot's name): its words, or
                    # a wording the lexicon mined for the slot asked without a value ("close to", "what part of the
                    # city": :func:`qe.content.lexicon._mine_about`)
                    sl = self.lexicon.slots.get(key)
                    words = norm_tokens(property_words(s))
                    found = " ".join(words) if words and _slot_words_said(tokens, words) else next(
                        (g for g in (sl.about if sl is not None else ()) if _slot_words_said(tokens, g.split())), None)
                    if found is None:  # the head word of its name alone ("what meal ..." for goodformeal)
                        head = self._name_head(s, tokens, mr_slots)
                        found = head if head is not None and _slot_words_said(tokens, [head]) else None
                    al.verdicts.append(Verdict(s, v, "realised" if found else "omitted", found))
                    continue
                al.verdicts.append(Verdict(s, v, "omitted" if hit is None else "realised",
                                           None if hit is None else said[key][hit][0].text))
                if hit is not None:
                    consumed.add(id(said[key][hit][0]))
                continue
            free = [(m, vals) for m, vals in said.get(key, []) if id(m) not in consumed]
            # a value of alternatives ("hayes valley or glen park") is realised by a mention of any of them
            alts = {nv} | ({a.strip() for a in nv.split(" or ")} if " or " in nv else set())
            # ... and a value is the same with or without "the" before it (SF hotel's MRs write area='castro' and
            # area='the castro' for one place: "in the castro area" said the second, a wrong value)
            alts |= {a[4:] if a.startswith("the ") else "the " + a for a in alts}
            hits = [m for m, vals in free if alts & set(vals)]
            # mentions that fit several values ("rating of", "a price") do not realise the value when none of them
            # says it mostly and the output states another value of the slot outright ("a price range of more
            # than £30" for less than £20)
            if hits and not any(_firm(m, vals, a) for m, vals in free if m in hits for a in alts) and \
                    any(not alts & set(vals) and _outright(m, vals) for m, vals in free):
                hits = []
            if hits:
                for m in hits:  # every mention of the value realises this one fact
                    consumed.add(id(m))
                al.verdicts.append(Verdict(s, v, "realised", cue_words.get(id(hits[0]), hits[0].text), spans=[(m.start, m.end) for m in hits]))
            else:
                pending.append((s, v, key, nv))
        for s, v, key, nv in pending:
            other = [(m, vals) for m, vals in said.get(key, []) if id(m) not in consumed]
            # the mention that states another value outright answers first
            other.sort(key=lambda mv: (nv in mv[1], not _outright(*mv)))
            if other:
                m, vals = other[0]
                consumed.add(id(m))
                val = max(vals, key=vals.get)
                al.verdicts.append(Verdict(s, v, "wrong", cue_words.get(id(m), m.text), spans=[(m.start, m.end)],
                                           said_value=self._written(key, val)))
            else:
                binary = self._kind(key, mr_slots) == "binary"
                said_by = self._elliptical(key, nv, said, base_pol, mr_slots, tokens) if binary else None
                if said_by is not None:
                    al.verdicts.append(Verdict(s, v, "realised", " ".join(tokens[said_by[0]:said_by[1]]),
                                               spans=[said_by]))
                    continue
                al.verdicts.append(Verdict(s, v, "omitted", partial=None if binary else _partial(
                    raw.get((key, nv)) or v, tokens, {i for m in matches for i in range(m.start, m.end)})))
        # a value that names a kind ("placetoeat") is stated by any word of that kind, whichever fact that word
        # also realises ("the riverside restaurant" for type=placetoeat and eattype=restaurant)
        # likewise the usual wordings of an area (:data:`_AREA_WORDINGS`): they realise the MR's value, and are not
        # read as a value the MR lacks
        for k, vd in enumerate(al.verdicts):
            nv = norm_value(vd.value) if vd.status == "omitted" and vd.value else ""
            kind = _KIND_WORDS.get(nv) or _AREA_WORDINGS.get(nv.replace(" ", ""))
            hit = next((f for f in kind or () if _find_every(tokens, norm_tokens(f))), None)
            if hit is not None:
                al.verdicts[k] = Verdict(vd.slot, vd.value, "realised", hit)
        pos = {(f[1], f[2]): k for k, f in reversed(list(enumerate(facts)))}
        al.verdicts.sort(key=lambda vd: pos.get((vd.slot, vd.value), 0))
        # what else the output says: one hallucination per (slot, value) it states that the MR neither holds nor
        # had as the answer of a wrong verdict; a value stated in the same words more often than the MR holds it is
        # repeated (a paraphrase of it, "cheap ... low prices", is not counted)
        answered = {(norm_slot(v.slot), norm_value(v.said_value)) for v in al.verdicts
                    if v.status == "wrong" and v.said_value}
        stated: dict[tuple[str, str], Counter] = {}
        extra: dict[tuple[str, str], _Match] = {}
        # the alternatives of an MR value "a or b" (SF's area='hayes valley or glen park'): each is that fact's
        alternatives = {(key, part.strip()) for key, vals in mr_slots.items() for v in vals if " or " in v
                        for part in v.split(" or ")}
        for key, lst in said.items():
            for m, vals in lst:
                val = max(vals, key=vals.get)
                if (key, val) in alternatives:
                    continue
                if id(m) in consumed or val in mr_slots.get(key, []):
                    stated.setdefault((key, val), Counter())[m.text] += 1
                elif len(vals) > 1 and any(u in mr_slots.get(key, []) or (key, u) in answered for u in vals):
                    continue  # a mention that fits several values, one of them accounted for: nothing new
                elif (key, val) not in answered and (key, val) not in extra:
                    extra[(key, val)] = m
        background = self.lexicon.settings.get("background_words") if isinstance(self.lexicon.settings, dict) \
            else None
        # a slot the MR holds with an unchecked value ("dogsallowed=dont_care", "hasinternet=none") is the MR's:
        # what the output says of it ("if you do not care whether dogs are allowed", "does not have internet") is
        # that fact's wording, not a fact the MR lacks
        unchecked = {norm_slot(vd.slot) for vd in al.verdicts if vd.status == "unchecked" and vd.value is not None}
        for (key, val), m in extra.items():
            if key in unchecked or key in asked:
                continue  # asked: "breakfast, brunch, lunch or dinner?" offers values of request(goodformeal)
            sl = self.lexicon.slots.get(key)
            if sl is not None and sl.kind == "entity" and m.length == 1 and tokens[m.start] in function_words():
                continue  # a name that is a function word ("so", a restaurant) states a name the MR lacks nowhere:
                # "so , you want a place good for any meal"
            if m.length == 1 and isinstance(background, dict) and tokens[m.start] in (background.get(key) or ()):
                continue  # a word faithful texts write without the slot ("restaurant", "price range"): alone, no
                # evidence that the text states this value (a fact of the MR it still realises, or says is wrong)
            al.hallucinated.append({"slot": written.get(key, self._slot_name(key)), "value": self._written(key, val),
                                    "said": cue_words.get(id(m), m.text)})
        for (key, val), texts in stated.items():
            n = max(texts.values())
            sl = self.lexicon.slots.get(key)
            # without a lexicon entry a value written with a capital is taken as a name ("The Eagle"), not counted
            kind = sl.kind if sl is not None else ("entity" if raw.get((key, val), "")[:1].isupper() else "category")
            expected = mr_slots.get(key, []).count(val)
            if kind == "category" and expected and n > expected:
                al.repeated.append({"slot": written.get(key, key), "value": self._written(key, val),
                                    "extra": n - expected})
        return al

    def _elliptical(self, key: str, value: str, said: dict, base_pol: dict[int, bool],
                    mr_slots: dict[str, list[str]], tokens: list[str]) -> tuple[int, int] | None:
        """The span of an elliptical clause that says ``value`` of the binary slot ``key`` for another entity, or
        None: "the satellite a is for business computing, but the tecra b is *not*" (a comparison of two entities,
        ``isforbusinesscomputing=true`` and ``=false`` in one MR). Read only where the MR holds both values of the
        slot and more than one entity, after a mention of the slot in the same sentence: a link ("," "but" "while"
        "whereas" "and"), one of the MR's entities ("the" before it or not) or "the other (one)", an auxiliary, an
        optional negation, and the clause's end. The clause repeats the mention's words without their negation and
        adds its own: "X is not for business computing, but Y *is*" says yes."""
        if set(mr_slots.get(key, ())) != {"yes", "no"}:
            return None
        names = [norm_tokens(v) for k, vals in mr_slots.items() if k == "name" or self._kind(k, mr_slots) == "entity"
                 for v in vals if v not in UNCHECKED_VALUES]
        if len(names) < 2:
            return None
        referents = [tuple(n) for n in names if n] + [tuple(n[1:]) for n in names if len(n) > 1 and n[0] == "the"]
        referents += [tuple(norm_tokens(w)) for w in ("other one", "other", "latter", "former", "second one", "second")]
        referents.sort(key=len, reverse=True)  # the longest that fits first
        for m, _ in said.get(key, []):
            if id(m) not in base_pol:
                continue
            k = m.end
            while k < len(tokens) and tokens[k] not in (".", "!", "?"):
                if tokens[k] not in _ELLIPSIS_LINKS:
                    k += 1
                    continue
                while k < len(tokens) and tokens[k] in _ELLIPSIS_LINKS:
                    k += 1
                start = k
                p = k + (k < len(tokens) and tokens[k] == "the")
                ref = next((r for r in referents if tuple(tokens[p:p + len(r)]) == r), None)
                if ref is None:
                    continue
                q = p + len(ref)
                if q >= len(tokens) or tokens[q] not in _ELLIPSIS_AUX:
                    continue
                q += 1
                negated = q < len(tokens) and tokens[q] in ("not", "n't")
                q += negated
                if q < len(tokens) and tokens[q] not in _ELLIPSIS_LINKS and tokens[q] not in (".", "!", "?"):
                    continue
                if (base_pol[id(m)] != negated) == (value == "yes"):
                    return (start, q)
        return None

    def _lexicon_words(self) -> frozenset[str]:
        """Every word of the lexicon's values, patterns, triggers and question wordings (cached): what a slot's name
        written as one word (``goodformeal``) is split into, with the output's words."""
        words = getattr(self, "_lex_words", None)
        if words is None:
            words = set()
            for sl in self.lexicon.slots.values():
                for entry in [*sl.values, *sl.patterns, *sl.triggers, *sl.about]:
                    words.update(t for t in entry.split() if t.isalpha())
            words = self._lex_words = frozenset(words)
        return words

    def _name_head(self, name: str, tokens: list[str], mr_slots: dict[str, list[str]]) -> str | None:
        """The word of a slot's name that says the slot is asked about, for a slot asked without a value: the last
        content word of its name (split into words when written as one: ``goodformeal`` -> good for meal, so
        "what *meal* are you looking for") that no other slot's name has ("range" of ``pricerange`` and
        ``driverange`` says neither; ``price`` and ``drive`` do). None where there is none."""
        vocab = self._lexicon_words() | {t for t in tokens if t.isalpha()}
        key = norm_slot(name)
        pieces = _word_break(name, vocab)
        others: set[str] = set()
        known = vocab | {p for p in pieces if len(p) >= 3}  # so "range" is found in the other names too
        for k in set(self.lexicon.slots) | set(mr_slots):
            if k != key:
                sl = self.lexicon.slots.get(k)
                others.update(_word_break((sl.name if sl is not None and sl.name else k), known))
        return next((p for p in reversed(pieces) if content_word(p) and len(p) >= 3 and p not in others), None)

    def _written(self, key: str, val: str) -> str:
        sl = self.lexicon.slots.get(key)
        return sl.values.get(val, val) if sl is not None else val

    def _slot_name(self, key: str) -> str:
        """A slot the MR does not hold, named as the lexicon's data write it (``customer rating``), else its key."""
        sl = self.lexicon.slots.get(key)
        return (sl.name if sl is not None and sl.name else key)

    # ------------------------------------------------------------------------------------------ triples
    def _align_triples(self, facts, output: str) -> Alignment:
        output = expand_abbreviations(output)
        tokens = norm_tokens(output)
        cased = _cased_tokens(output, tokens)
        triples = [_Triple(prop, *so.split(" | ", 1)) for _, prop, so in facts]
        mr_numbers, months = _triple_numbers(triples)
        trimmed = {_decimal_trim(x) for x in mr_numbers}  # "1.80" in the MR, "1.8" in the text
        # every occurrence of every entity of the MR; one inside another entity's name ("madrid" in "adolfo suárez
        # madrid-barajas airport", "indian" in "indian air force") does not state it (a year inside a date does)
        names = list(dict.fromkeys(x for t in triples for x in (t.s_txt, t.o_txt)))
        occ = {x: _entity_spans(tokens, x, names) for x in names}
        literal = {e.o_txt for e in triples if e.obj.startswith('"')} | {e.s_txt for e in triples
                                                                          if e.subj.startswith('"')}
        free = {x: [sp for sp in occ[x] if _all_numbers(x) or not _inside_other(sp, x, occ, literal, tokens)]
                for x in names}
        taken = [False] * len(tokens)
        for x in names:
            for i, j in occ[x]:
                taken[i:j] = [True] * (j - i)
        sentence = _sentence_ids(tokens, taken)
        n = len(triples)
        status: list[str | None] = [None] * n
        said: list[str | None] = [None] * n
        spans: list[list[tuple[int, int]] | None] = [None] * n
        said_value: list[str | None] = [None] * n
        seen: list[str] = []
        s_hit = []
        for t in triples:  # the subject named (not only inside another name), an earlier triple's, or the first's
            s_hit.append(bool(free[t.s_txt]) or t.s_txt in seen or not seen)
            if t.s_txt not in seen:
                seen.append(t.s_txt)
        # 1. realised: the object stated outside other names, not only under the cue of a contradicting property
        sides = _side_cues(tokens)
        contradicted: dict[int, tuple[tuple[int, int], tuple[int, int]]] = {}
        for k, t in enumerate(triples):
            found = free[t.o_txt]
            if not found or not s_hit[k]:
                continue
            if t.key in CONTRADICTING:
                own, _ = CONTRADICTING[t.key]
                tied = [(sp, _nearest_side(sides, sp, sentence, tokens, taken)) for sp in found]
                ok = [sp for sp, cue in tied if cue is None or cue[2] != _OPPOSITE[own]]
                if not ok:
                    contradicted[k] = (tied[0][0], tied[0][1][:2])
                    continue
                found = ok
            status[k], said[k], spans[k] = "realised", " ".join(tokens[found[0][0]:found[0][1]]), found
        # 2. the object tied to a contradicting property ("born in St. Louis" for deathPlace): one clause, one error,
        # charged to the MR's triple of the property it states when there is one (birthPlace said St. Louis), else to
        # the triple whose object it names
        consumed: set[int] = set()
        for k, (sp, cue) in contradicted.items():
            t = triples[k]
            a, b = min(sp[0], cue[0]), max(sp[1], cue[1])
            other = next((m for m, u in enumerate(triples) if status[m] is None and s_hit[m] and u.s_txt == t.s_txt
                          and u.key == CONTRADICTING[t.key][1]), None)
            if other is not None:
                status[other], said_value[other] = "wrong", t.o_txt
                said[other], spans[other] = " ".join(tokens[a:b]), [cue, sp]
            elif status[k] is None:
                status[k], said[k], spans[k] = "wrong", " ".join(tokens[a:b]), [cue, sp]
            consumed.update(range(a, b))
        # 3. another object: a value the MR does not hold, of the object's type, where the object should be
        foreign_numbers = {i for i, (tok, raw) in enumerate(zip(tokens, raw_tokens(output)))
                           if _NUMBER.match(tok) and tok not in mr_numbers and _decimal_trim(tok) not in trimmed
                           and _NUMBER.match(raw) and not any((tok, y) in months for y in _numeric_date(tokens, i))}
        pending = [k for k in range(n) if status[k] is None and s_hit[k]]
        if cased:  # a demonym states a nationality or country ("a Canadian", "a Polish national")
            for k in pending:
                t = triples[k]
                hit = _demonym_of(t, tokens, cased, taken, consumed) if t.key in DEMONYM_OBJECTS else None
                if hit is None:
                    hit = _alias_of(t, tokens, cased, taken, consumed)
                if hit is not None:
                    status[k], said[k], spans[k] = "realised", tokens[hit], [(hit, hit + 1)]
                    consumed.add(hit)
            pending = [k for k in pending if status[k] is None]
        if pending:
            self._other_objects(triples, pending, tokens, raw_tokens(output), cased, taken, consumed, foreign_numbers,
                                sentence, status, said, spans, said_value)
        al = Alignment()
        for k, t in enumerate(triples):
            st = status[k] or "omitted"
            part = None
            if st == "omitted":  # partial evidence: the object's words outside other names and other verdicts' words
                other = set(consumed) | {i for x in names if x != t.o_txt for a, b in occ[x] for i in range(a, b)} | {
                    i for m in range(n) if m != k and status[m] for a, b in (spans[m] or ()) for i in range(a, b)}
                part = _partial(t.o_txt, tokens, other)
            al.verdicts.append(Verdict(t.prop, f"{t.subj} | {t.obj}", st, said[k] if st != "omitted" else None,
                                       spans=spans[k] if st != "omitted" else None, said_value=said_value[k],
                                       partial=part))
        # what else it says: numbers the MR does not hold (a number written as a word is not counted: "one of the
        # languages"); the words of a wrong verdict are its error, not also a hallucination
        for i in sorted(foreign_numbers - consumed):
            al.hallucinated.append({"slot": None, "value": tokens[i], "said": raw_tokens(output)[i]})
        if self.lexicon.has_triple_words:
            # the sentences that state a triple no other sentence states (its object named there and nowhere else):
            # a lone word there is that triple's relation said another way
            def stating() -> dict[int, set[str]]:  # sentence -> the properties it alone states (asked when needed)
                folded = [_decimal_trim(fold(t)) for t in tokens]
                once: dict[int, set[str]] = {}
                for k in range(n):
                    if status[k] != "realised" or not spans[k]:
                        continue
                    words = {_decimal_trim(fold(w)) for w in norm_tokens(triples[k].o_txt)
                             if _NUMBER.match(w) or content_word(fold(w))}
                    sids = {sentence[i] for i, _ in spans[k]}
                    sids |= {sentence[i] for i, t in enumerate(folded) if t in words}
                    if len(sids) == 1:
                        once.setdefault(next(iter(sids)), set()).add(triples[k].key)
                return once

            al.hallucinated.extend(self._unexplained(facts, tokens, consumed, sentence, cased, stating))
        return al

    def _other_objects(self, triples, pending, tokens, raw, cased, taken, consumed, foreign_numbers, sentence,
                       status, said, spans, said_value) -> None:
        """Rule 3 of the module docstring: each pending triple (object not found, subject named) takes the nearest
        value of its object's type that the MR does not hold (a number; a name; with triple words, a stretch of
        unexplained words) tied to it by its property's cue words (or, for places, by a preposition; for a
        nationality, a demonym; for a name, its head word), unless another property's cue is nearer."""
        cue_forms = self._cue_forms(triples)
        own = WordForms(w for k in dict.fromkeys(t.key for t in triples) for w in self._own_words(triples, k))
        ents = WordForms(entity_words([x for t in triples for x in (t.subj, t.obj)])
                         | {w for t in triples for a in _ALIASES.get(t.o_txt, ()) for w in a.split()})
        cands = []
        for a, b, kind in _value_candidates(tokens, cased, taken, consumed, foreign_numbers, sentence,
                                            lambda t: t in ents or t in own):
            while kind == "name" and b - a > 1 and fold(tokens[a]) in own:  # a title: "President B. M. Reddy"
                a += 1
            cands.append((a, b, kind))
        if self.lexicon.has_triple_words:  # stretches of words no triple explains ("jazz" for genre Blues)
            df = self._word_df()
            used = {i for a, b, _ in cands for i in range(a, b)} | consumed
            # lower-case words only (names are read as names above), not the usual wording of many properties
            blank = ["" if (i in used or taken[i] or (cased and not cased[i][:1].islower())
                            or df.get(fold(t), 0) > CUE_MAX_WORDS) else fold(t) for i, t in enumerate(tokens)]
            for span in unexplained_spans(blank, self._explained(triples)):
                cands.append((span[0], span[-1] + 1, "words"))
        cue_pos = {key: _cue_positions(tokens, forms, taken) for key, forms in cue_forms.items()}
        # the words of birth, death, succession tie a value to those, whether the MR has such a property or not
        for i, j, side in _side_cues(tokens):
            cue_pos.setdefault("~" + side, []).append((i, j, 0.0))
        pairs = []
        names = list(dict.fromkeys(x for t in triples for x in (t.s_txt, t.o_txt)))
        # a property whose every triple is already settled (its object found) has stated its value: its words do not
        # claim another ("discovered by the Austrian astronomer Walter Baade": "Austrian" is not the discoverer's)
        open_keys = {triples[k].key for k in pending}
        settled = {t.key for t in triples} - open_keys
        for ci, (a, b, kind) in enumerate(cands):
            same = [k for k in pending if _has_number(triples[k].o_txt) == (kind == "number")
                    and _same_value(tokens, raw, a, b, taken, triples[k].o_txt, kind, cased)]
            if same:  # the object written another way ("Juventus FC"): realised
                pairs += [(-1.0, a, k, ci) for k in same]
                continue
            if any(_same_value(tokens, raw, a, b, taken, x, kind, cased) for x in names):
                continue  # another entity of the MR written another way: no value
            dist = {}
            for key, pos in cue_pos.items():
                d = _cue_distance(pos, a, b, sentence, tokens)
                if d is not None:
                    dist[key] = d
            for k in pending:
                t = triples[k]
                if _has_number(t.o_txt) != (kind == "number"):
                    continue
                d = dist.get(t.key)
                if d is None:
                    d = _fallback(t, tokens, cased, a, b, kind)
                    if d is None:
                        continue
                if kind == "words" and d > WORDS_DISTANCE:
                    continue  # plain words need their property's words right by them ("performs jazz")
                its = {t.key, "~" + CONTRADICTING[t.key][0]} if t.key in CONTRADICTING else {t.key}
                if any(d2 < d for q, d2 in dist.items() if q not in its and q not in settled):
                    continue  # the value is nearer another property's words: it states that one
                pairs.append((d, a, k, ci))
        done_k, done_c = set(), set()
        for d, a, k, ci in sorted(pairs):
            if k in done_k or ci in done_c:
                continue
            a, b, _ = cands[ci]
            if any(i in consumed for i in range(a, b)):
                continue
            done_k.add(k)
            done_c.add(ci)
            consumed.update(range(a, b))
            status[k], said[k], spans[k] = ("realised" if d < 0 else "wrong"), " ".join(tokens[a:b]), [(a, b)]
            if d >= 0:
                said_value[k] = said[k]
        # 4. one and one (module docstring): a sentence about a triple's subject that leaves exactly one triple with
        # a number unanswered and states exactly one number the MR does not hold: that number is the triple's other
        # object - one error, not an omission plus a hallucination ("its runway is 1,200 metres long" for
        # runwayLength 600.0 when no cue word ties them)
        left = [k for k in pending if status[k] is None]
        if not left:
            return
        subj_sent: dict[str, set[int]] = {}
        for t in triples:
            if t.s_txt not in subj_sent:
                subj_sent[t.s_txt] = {sentence[i] for i, _ in _entity_spans(tokens, t.s_txt, names)}
        named = set().union(*subj_sent.values())
        pron = {sentence[i] for i, tok in enumerate(tokens) if tok in _PRONOUNS}

        def about(k: int, sid: int) -> bool:  # the sentence names the subject, or refers to it by a pronoun only
            own = subj_sent.get(triples[k].s_txt, set())
            return sid in own or (sid in pron and sid not in named and any(x < sid for x in own))

        # numbers only: a name or a stretch of words has no type to match the object's by (on the clean WebNLG dev
        # references, names paired so were mostly other entities: "Alan B Miller Hall" for a country; the numbers,
        # the references' own wrong dates and counts; docs/results/content-triples.md)
        free_c = [ci for ci in range(len(cands)) if ci not in done_c and cands[ci][2] == "number"
                  and not any(i in consumed for i in range(cands[ci][0], cands[ci][1]))]
        by_sent: dict[int, list[int]] = {}
        for ci in free_c:
            by_sent.setdefault(sentence[cands[ci][0]], []).append(ci)
        for sid, cis in sorted(by_sent.items()):
            ks = [k for k in left if status[k] is None and _has_number(triples[k].o_txt) and about(k, sid)]
            if len(ks) != 1 or len(cis) != 1:
                continue
            (k,), (ci,) = ks, cis
            a, b, _ = cands[ci]
            consumed.update(range(a, b))
            status[k], said[k], spans[k] = "wrong", " ".join(tokens[a:b]), [(a, b)]
            said_value[k] = said[k]

    def _own_words(self, triples, key: str) -> set[str]:
        """A property's own words: those of its name (content words, folded) and, for a property of a contradiction
        pair, its side's one-word cues (``born`` for the birth properties)."""
        prop = next(t.prop for t in triples if t.key == key)
        out = {fold(w) for w in norm_tokens(property_words(prop)) if content_word(fold(w))}
        if key in CONTRADICTING:
            out |= {c for c in _SIDES[CONTRADICTING[key][0]] if " " not in c}
        return out

    def _cue_forms(self, triples) -> dict[str, tuple[WordForms, WordForms, list[tuple[str, ...]]]]:
        """Per property of the MR: its own words, the words the lexicon mined for it that only it of the MR's
        properties has and that few properties have at all (:data:`CUE_MAX_PROPERTIES`), and its side's multi-word
        cues (``succeeded by``)."""
        keys = list(dict.fromkeys(t.key for t in triples))
        lex = {k: set(self.lexicon.properties.get(k, ())) for k in keys}
        df = self._word_df()
        out = {}
        for k in keys:
            others = set().union(*(lex[q] for q in keys if q != k)) if len(keys) > 1 else set()
            mined = {w for w in lex[k] - others if df.get(w, 0) <= CUE_MAX_PROPERTIES and content_word(w)}
            multi = [tuple(c.split()) for c in _SIDES[CONTRADICTING[k][0]] if " " in c] if k in CONTRADICTING else []
            out[k] = (WordForms(self._own_words(triples, k)), WordForms(mined), multi)
        return out

    def _word_df(self) -> Counter:
        df = getattr(self, "_df", None)
        if df is None:
            df = self._df = Counter(w for ws in self.lexicon.properties.values() for w in set(ws))
        return df

    def _attested(self, key: str) -> frozenset:
        """The rarer wordings of a property (:attr:`~qe.content.lexicon.Lexicon.attested`), as a set."""
        got = self._att.get(key)
        if got is None:
            got = self._att[key] = frozenset(self.lexicon.attested.get(key, ()))
        return got

    def _explained(self, triples):
        if self._common_forms is None:
            self._common_forms = WordForms(self.lexicon.common)
        ents = WordForms(entity_words([x for t in triples for x in (t.subj, t.obj)])
                         | shorthands([x for t in triples for x in (t.s_txt, t.o_txt)])[0])
        props = [self._property_forms(p) for p in dict.fromkeys(t.prop for t in triples)]
        return lambda t: t in ents or t in self._common_forms or any(t in f for f in props)

    def _property_forms(self, prop: str) -> WordForms:
        key = norm_slot(prop)
        got = self._prop_forms.get(key)
        if got is None:
            words = set(self.lexicon.properties.get(key, ())) | {fold(w) for w in property_words(prop).split()}
            got = self._prop_forms[key] = WordForms(words)
        return got

    def _unexplained(self, facts, tokens: list[str], skip: set[int] = frozenset(),
                     sentence: list[int] | None = None, cased: list[str] | None = None,
                     stating: Callable[[], dict[int, set[str]]] | None = None) -> list[dict[str, Any]]:
        """Stretches of the output's words that no triple explains (a lexicon with triple words only,
        :func:`~qe.content.lexicon.mine_triples`): content words that are not forms of the triples' entity words, of
        the words texts use for their properties, or of the words common to all such texts. One hallucinated value
        per stretch (:func:`~qe.content.lexicon.unexplained_spans`). ``skip``: positions already accounted for (the
        words of wrong verdicts). Each entry is a :class:`Said` whose ``extent`` is its content words' share of the
        content words of the sentences it stands in (``sentence``: the sentence of each token; None: the output is
        one sentence). A stretch of one word counts only when some property's texts use that word (a relation said:
        "born") or it is written with a capital inside a sentence (a name: "born in Errata"; "Having a density of
        ..." is not one): a lone word no property's texts use is a paraphrase or a typo far more often than a fact
        (:data:`UNEXPLAINED_MIN_WORDS`; ``cased``: the output's tokens as written, None when they could not be lined
        up). Such a word standing in a sentence that states a triple no other sentence states (its object named there
        and nowhere else; ``stating()``: sentence -> those triples' properties) is that triple's relation said another
        way when the triple's property's texts use it (:attr:`~qe.content.lexicon.Lexicon.attested`: "who works for
        General Motors" for ``employer``), unless it is a birth or death word (:data:`_SIDES`). A lone word the
        dependency parse makes an adverbial modifier is none either (:meth:`_adverb`: "was originally drafted")."""
        triples = [_Triple(prop, *so.split(" | ", 1)) for _, prop, so in facts]
        explained = self._explained(triples)
        entity = None  # the MR's entity words, folded (for a lone verb: :meth:`_relation_verb`)
        folded = ["" if i in skip else fold(t) for i, t in enumerate(tokens)]
        relation_words = self._word_df()
        sentence = sentence if sentence is not None else [0] * len(tokens)
        out = []
        once = None
        for span in unexplained_spans(folded, explained):
            if len(span) < UNEXPLAINED_MIN_WORDS:
                name = any(cased and cased[i][:1].isupper() and i > 0 and tokens[i - 1] not in _SENTENCE_END
                           for i in span)
                if not name and not any(folded[i] in relation_words for i in span):
                    continue  # one lone word no property's texts use ("falls in the genre", "houses", a typo)
                if not name and stating is not None and not any(folded[i] in _SIDE_WORDS for i in span):
                    if once is None:
                        once = stating()
                    if any(folded[i] in self._attested(key) for key in once.get(sentence[span[0]], ()) for i in span):
                        continue  # in the one sentence that states a triple, a wording its property's texts use
                if not name and self._adverb(span[0], tokens, cased, sentence):
                    continue  # "originally drafted", "approximately $556 million": how, not what
                if not name and folded[span[0]] not in _SIDE_WORDS:
                    if entity is None:
                        entity = {fold(w) for w in entity_words([x for t in triples for x in (t.subj, t.obj)])} \
                            | shorthands([x for t in triples for x in (t.s_txt, t.o_txt)])[0]
                    if self._relation_verb(span[0], tokens, cased, sentence, entity):
                        continue  # "is categorised as Lentivirus", "constructed using red granite": the relation
            text = " ".join(tokens[span[0]:span[-1] + 1])
            own = {sentence[i] for i in span}
            words = sum(1 for i, t in enumerate(tokens) if sentence[i] in own and content_word(fold(t)))
            out.append(Said({"slot": None, "value": " ".join(tokens[i] for i in span), "said": text, "kind": "words"},
                            extent=min(1.0, len(span) / max(words, 1))))
        return out

    def _relation_verb(self, i: int, tokens: list[str], cased: list[str] | None, sentence: list[int],
                       entity: set[str]) -> bool:
        """Whether the dependency parse of its sentence makes token ``i`` a verb that relates the MR's entities
        (:func:`_relates_entities`; ``entity``: their words, folded): "HIV genus is *categorised* as Lentivirus", "a
        novel *identified* by ISBN 0-439-92550-9", "constructed *using* red granite". Such a word says a relation
        between facts the MR holds, in words no training text of the property used; it states no fact of its own.
        False without a parser."""
        own = [k for k in range(len(tokens)) if sentence[k] == sentence[i]]
        words = cased if cased is not None else tokens
        parse = self._parse(tuple(words[k] for k in own))
        return parse is not None and _relates_entities(own.index(i), [tokens[k] for k in own], parse[0], parse[1],
                                                       entity)

    def _adverb(self, i: int, tokens: list[str], cased: list[str] | None, sentence: list[int]) -> bool:
        """Whether the dependency parse of its sentence makes token ``i`` an adverbial modifier (``advmod``:
        "originally", "additionally", "approximately"): it says how or when a clause holds, not a fact of its own.
        False without a parser."""
        own = [k for k in range(len(tokens)) if sentence[k] == sentence[i]]
        words = cased if cased is not None else tokens
        parse = self._parse(tuple(words[k] for k in own))
        return parse is not None and parse[1][own.index(i)] == "advmod"


#: dependents that make a word a verb (:func:`_relates_entities`)
_VERB_DEPENDENTS = frozenset({"nsubj", "nsubjpass", "dobj", "agent", "auxpass", "aux", "dative", "prt", "xcomp"})
#: a clause a verb heads without a subject of its own ("a novel *identified* by ISBN ...", "constructed *using* ...")
_VERB_CLAUSES = frozenset({"relcl", "acl", "xcomp", "advcl", "pcomp"})
_RELATIVE_WORDS = frozenset({"which", "who", "that"})


def _relates_entities(i: int, words: list[str], heads: list[int], deps: list[str], entity: set[str]) -> bool:
    """Whether word ``i`` of a parsed sentence (``words``: its tokens) is a verb that relates words of ``entity``. A
    verb: the parse gives it a subject, object, agent, auxiliary, dative, particle or open complement, or makes it a
    clause (:data:`_VERB_CLAUSES`) with an object, a prepositional phrase or an agent. It relates the entities when
    a word of one stands under one of its dependents other than its subject, and a word of one (or a pronoun, or a
    relative pronoun) under its subject, or else in what it hangs from."""
    kids = [c for c, h in enumerate(heads) if h == i and c != i]

    def under(c: int) -> list[int]:
        out, todo = [], [c]
        while todo:
            x = todo.pop()
            out.append(x)
            todo.extend(y for y, h in enumerate(heads) if h == x and y != x)
        return out

    def ent(x: int) -> bool:
        return fold(words[x]) in entity

    if not (any(deps[c] in _VERB_DEPENDENTS for c in kids) or (
            deps[i] in _VERB_CLAUSES and any(deps[c] in ("dobj", "prep", "agent") for c in kids))):
        return False
    if not any(ent(x) for c in kids if deps[c] not in ("nsubj", "nsubjpass", "punct", "cc") for x in under(c)):
        return False
    if any(ent(x) or words[x] in _PRONOUNS or words[x] in _RELATIVE_WORDS
           for c in kids if deps[c] in ("nsubj", "nsubjpass") for x in under(c)):
        return True
    if heads[i] == i:
        return False
    mine = set(under(i))
    return any(ent(x) for x in under(heads[i]) if x not in mine)


import difflib  # noqa: E402  (the triples' helpers below)

from qe.content.lexicon import content_word  # noqa: E402


class _Triple:
    """One RDF triple of an MR, with its property key and its entities as text."""

    __slots__ = ("prop", "subj", "obj", "key", "s_txt", "o_txt")

    def __init__(self, prop: str, subj: str, obj: str):
        self.prop, self.subj, self.obj = prop, subj, obj
        self.key, self.s_txt, self.o_txt = norm_slot(prop), entity_text(subj), entity_text(obj)


#: words that refer back to an entity named before (rule 4 of the triples: a sentence about the subject)
_PRONOUNS = frozenset("he she it its his her hers they their them him".split())
#: contradiction pairs (module docstring): property key -> (its side, the property on the other side)
CONTRADICTING = {"birthplace": ("birth", "deathplace"), "deathplace": ("death", "birthplace"),
                 "birthdate": ("birth", "deathdate"), "deathdate": ("death", "birthdate"),
                 "birthyear": ("birth", "deathyear"), "deathyear": ("death", "birthyear"),
                 "successor": ("later", "predecessor"), "predecessor": ("earlier", "successor"),
                 "followedby": ("later", "precededby"), "precededby": ("earlier", "followedby")}
#: the cue words of each side of a contradiction pair
_SIDES = {"birth": ("born", "birth", "birthplace", "birthday", "native"),
          "death": ("died", "dies", "dying", "death", "dead", "deathplace", "killed", "buried", "passed away"),
          "later": ("succeeded by", "followed by"),
          "earlier": ("preceded by",)}
#: the one-word cues of every side: a lone one is a relation of its own ("Aarhus Airport was born in Aarhus")
_SIDE_WORDS = frozenset(c for cues in _SIDES.values() for c in cues if " " not in c)
_OPPOSITE = {"birth": "death", "death": "birth", "later": "earlier", "earlier": "later"}
#: properties whose object is a place: a name right after one of :data:`_PLACE_PREPS` may be another object of theirs
PLACE_PROPERTIES = frozenset({"country", "nationality", "citizenship", "location", "city", "birthplace", "deathplace",
                              "region", "state", "ispartof", "cityserved", "ground", "origin", "countryorigin",
                              "assembly", "residence", "hometown", "headquarter", "headquarters", "locationcity",
                              "stateoforigin", "restingplace"})
_PLACE_PREPS = frozenset({"in", "from", "at"})
#: place properties that say where someone or something comes from: only "from" ties a place to them
ORIGIN_PROPERTIES = frozenset({"nationality", "citizenship", "origin", "countryorigin", "stateoforigin", "hometown"})
_ORIGIN_PREPS = frozenset({"from"})
#: verbs after which "in" / "from" / "at" still introduces the place of a place property (after other verbs, such as
#: "graduating from", "played in", it belongs to them)
_PLACE_VERBS = frozenset({"located", "based", "situated", "headquartered", "born", "raised", "hailing", "coming",
                          "originated", "originating", "assembled", "built", "founded", "established", "lived",
                          "living", "settled", "buried", "died", "found"})
#: properties whose object a demonym states ("an Austrian astronomer" for nationality)
DEMONYM_PROPERTIES = frozenset({"nationality", "citizenship", "stateoforigin"})
_DEMONYM = re.compile(r"^[A-Z][a-z]+(?:an|ish|ese|ch|i)s?$")
#: properties whose (one-word) object a demonym of it realises ("a Canadian" for ``nationality | Canada``)
DEMONYM_OBJECTS = DEMONYM_PROPERTIES | {"country", "countryorigin"}
#: the usual other names of the two countries texts name most by them: never another value of theirs (not a surface
#: form either: the matcher does not read "an American" as ``United_States``)
_ALIASES = {"united states": ("u.s", "u.s.a", "usa", "america", "american", "americans"),
            "united kingdom": ("uk", "u.k", "britain", "british"), "netherlands": ("dutch",),
            "philippines": ("filipino", "philippine")}
#: a mined word is a cue of its property only if at most this many of the lexicon's properties hold it
CUE_MAX_PROPERTIES = 25
#: a lower-case word that more of the lexicon's properties hold is wording, never a value
CUE_MAX_WORDS = 9
#: how near its property's words a stretch of plain (lower-case) words must stand to be another object
WORDS_DISTANCE = 3.0
#: the fewest content words a stretch no triple explains needs to be reported as hallucinated by itself; a shorter one
#: counts when its word is a word some property's texts use (a relation said: "born") or a name written with a
#: capital inside a sentence. On faithful WebNLG development references 248 of 265 invented facts were one word,
#: mostly a property said another way ("falls in the genre", "houses") or a typo (docs/results/content-log.md,
#: "Unchecked slots, auxiliary patterns, lone unexplained words")
UNEXPLAINED_MIN_WORDS = 2
#: how far (in tokens between) a cue may stand before / after the value it ties to its property, in one sentence
CUE_BEFORE, CUE_AFTER = 6, 4
#: how far a birth / death / succession cue may stand before the object it ties ("born on 07/23/1927 in Dallas")
SIDE_BEFORE = 8
_COORDINATORS = frozenset({"and", "but"})
#: the distance given to a value tied by its type alone (a place after a preposition, a demonym; by its head word:
#: :data:`HEAD_DISTANCE`): any cue of another property nearer takes it
FALLBACK_DISTANCE, HEAD_DISTANCE = 7.0, 3.0
_MONTH_NAMES_LIST = "january february march april may june july august september october november december".split()
_MONTH_NAMES = frozenset(_MONTH_NAMES_LIST)
#: abbreviations before a number: a month's, with or without a full stop ("Sept. 27, 2003", "Dec 2016"), and "No."
#: for number ("ISSN No. 1588-2632"; "no 5" is left as it is); :func:`expand_abbreviations`
_ABBREVIATIONS = {**{m[:3]: m.capitalize() for m in _MONTH_NAMES_LIST if m != "may"}, "sept": "September",
                  "no": "number"}
_ABBREVIATED = re.compile(r"\b(?:(" + "|".join(sorted(set(_ABBREVIATIONS) - {"no"}, key=len, reverse=True))
                          + r")\.?|(no)\.)(?=\s*\d)", re.IGNORECASE)


def expand_abbreviations(text: str) -> str:
    """The abbreviations of :data:`_ABBREVIATED` written out where a number follows them: "Sept. 27, 2003" ->
    "September 27, 2003", "LCCN No. 83646315" -> "LCCN number 83646315". Written short, the month is no month name
    (the date it begins is not found, and the word counts as one no triple explains), its full stop ends the
    sentence, and "No." reads as the word no."""
    return _ABBREVIATED.sub(lambda m: _ABBREVIATIONS[(m.group(1) or m.group(2)).lower()], text)


#: lower-case words that may stand inside a name ("Rio de Janeiro", "Port Authority of New York")
_NAME_LINKS = frozenset({"of", "de", "del", "da", "di", "do", "dos", "du", "la", "le", "van", "von", "y", "&"})
#: the words of a name its initials leave out ("mit" for Massachusetts Institute of Technology)
_NOT_INITIALS = _NAME_LINKS | {"and", "for", "the", "in", "at", "on"}
#: what ends a sentence for :func:`_sentence_ids` besides a full stop that ends no name or abbreviation
_TRIPLE_SENTENCE_END = frozenset({"!", "?", ";"})


def _cased_tokens(output: str, tokens: list[str]) -> list[str] | None:
    """The tokens of :func:`~qe.content.lexicon.norm_tokens` as written (capitals kept), or None where the two
    tokenisations do not line up."""
    from qe.content.lexicon import _DROP, _joined
    from qe.core.tokenization import word_tokenize

    cased = [t for t in word_tokenize(_joined(output), lowercase=False) if t.lower() not in _DROP]
    raw = raw_tokens(output)
    if len(cased) != len(tokens) or any(c.lower() != r for c, r in zip(cased, raw)):
        return None
    return cased


#: Roman numerals after the first word of a name ("World War II", "Felipe VI of Spain"), as numbers; not the one-letter
#: ones ("Malcolm X", "Aston Martin V")
_ROMAN = {r: str(k) for k, r in enumerate(
    "i ii iii iv v vi vii viii ix x xi xii xiii xiv xv xvi xvii xviii xix xx".split(), 1) if len(r) > 1}
_LETTERS_DIGITS = re.compile(r"\d+|[^\W\d_]+")


def shorthands(entities: Iterable[str]) -> tuple[set[str], set[str]]:
    """Shorter ways texts write the MR's entities (entity texts, :func:`~qe.core.surface.entity_text`): words that
    state nothing new, and numbers the MR holds. Words: the initials of a name's words outside its links, from the
    first word on, two letters or more ("obe" for Order of the British Empire, "mp" for Member of Parliament for
    Gravesham, "gd" for General Dynamics); two neighbouring words joined ("lacrosse" for La Crosse); the parts of a
    word that joins letters and digits ("arena" for 3Arena). Numbers: those parts' digits ("3"), and the number of a
    Roman numeral after a name's first word ("2" for World War II: "world war 2"). Read only to decide what no triple
    explains: none of them realises a triple."""
    words: set[str] = set()
    numbers: set[str] = set()
    for x in entities:
        w, n = _shorthands_of(x)
        words |= w
        numbers |= n
    return words, numbers


@lru_cache(maxsize=50_000)
def _shorthands_of(x: str) -> tuple[frozenset, frozenset]:
    """:func:`shorthands` of one entity text (cached: each output's triples ask twice, for numbers and for words)."""
    words: set[str] = set()
    numbers: set[str] = set()
    toks = [fold(t) for t in norm_tokens(x) if t.isalnum()]
    heads = [t for t in toks if t not in _NOT_INITIALS]
    initials = "".join(t[0] for t in heads if t.isalpha())
    if len(heads) >= 2 and len(initials) == len(heads):
        words |= {initials[:k] for k in range(2, len(initials) + 1)}
    if len(heads) >= 3 and heads[-1] in _ROMAN and all(t.isalpha() for t in heads):  # "wwii" for World War II
        words.add("".join(t[0] for t in heads[:-1]) + heads[-1])
    words |= {a + b for a, b in zip(toks, toks[1:]) if a.isalpha() and b.isalpha()}
    for k, t in enumerate(toks):
        parts = _LETTERS_DIGITS.findall(t)
        if len(parts) > 1:
            words |= {p for p in parts if not p.isdigit()}
            numbers |= {str(int(p)) for p in parts if p.isdigit()}
        if k > 0 and t in _ROMAN:
            numbers.add(_ROMAN[t])
    return frozenset(words), frozenset(numbers)


def _triple_numbers(triples: list[_Triple]) -> tuple[set[str], set[tuple[str, str]]]:
    """The numbers the triples hold, and (month number, year) of their ISO dates. An ISO date's numbers are those of
    its written forms (day and year), and its month's number where it is written in one numeric date with the year
    (texts copy "1982-07-23" or write "10/03/1983"; "March 1932, flew 3 missions" still counts the 3); a season's
    second year in full ("2014–15" -> 2015)."""
    mr_numbers: set[str] = set()
    months: set[tuple[str, str]] = set()
    for t in triples:
        xs = (t.s_txt, t.o_txt)
        mr_numbers |= {tok for x in xs if not _ISO_DATE.match(x) for tok in norm_tokens(x) if _NUMBER.match(tok)}
        for var in entity_variants(t.o_txt):
            mr_numbers |= {tok for tok in var if _NUMBER.match(tok)}
        mr_numbers |= {m.group(1)[:2] + m.group(2) for x in xs for m in _SEASON.finditer(x)}
        mr_numbers |= shorthands(xs)[1]
        months |= {(str(int(m.group(2))), m.group(1)) for x in xs for m in [_ISO_DATE.match(x)] if m}
    return mr_numbers, months


def _find_near_free(tokens: list[str], sub: list[str], used: list[bool]) -> tuple[int, int]:
    """:func:`_find_near` among the positions not ``used``."""
    i, j = find_approx(tokens, sub, used, strict=True)
    if i < 0:
        folded, fsub = [fold(t) for t in tokens], [fold(t) for t in sub]
        if folded != tokens or fsub != sub:
            i, j = find_approx(folded, fsub, used, strict=True)
    return i, j


def _entity_spans(tokens: list[str], text: str, others: Iterable[str] = ()) -> list[tuple[int, int]]:
    """Every occurrence of an entity (its :func:`~qe.core.surface.entity_text`) in the output: verbatim, else
    near-verbatim, else as its usual surface forms (:func:`~qe.core.surface.entity_variants`); overlapping
    occurrences keep the longest."""
    vt = norm_tokens(text)
    if not vt:
        return []
    out = [(i, i + len(vt)) for i in _find_every(tokens, vt)]
    if out:
        return out
    used = [False] * len(tokens)
    while True:
        i, j = _find_near_free(tokens, vt, used)
        if i < 0:
            break
        out.append((i, j))
        used[i:j] = [True] * (j - i)
    if out:
        return out
    folded = None
    for form in [norm_tokens(" ".join(t for t in var if t != "-")) for var in entity_variants(text)] + \
            _matcher_forms(text, others):
        if form:
            out += [(i, i + len(form)) for i in _find_every(tokens, form)]
            ff = [fold(t) for t in form]
            if ff != form or folded is not None:  # without diacritics ("daniel martinez" for Daniel_Martínez)
                folded = folded if folded is not None else [fold(t) for t in tokens]
                out += [(i, i + len(ff)) for i in _find_every(folded, ff)]
    kept: list[tuple[int, int]] = []
    for sp in sorted(out, key=lambda s: (s[0] - s[1], s[0])):
        if not any(a < sp[1] and sp[0] < b for a, b in kept):
            kept.append(sp)
    return sorted(kept)


_WRITTEN_DATE = re.compile(r"^(?:(\d{1,2}) (" + "|".join(_MONTH_NAMES_LIST) + r")|(" + "|".join(_MONTH_NAMES_LIST)
                           + r") (\d{1,2}),?) (\d{4})$")
#: the short names texts write for two countries: each realises the country (demonyms are read by
#: :func:`_alias_of`, for the properties a demonym states)
_SHORT_NAMES = {"united states": ("u.s", "u.s.a", "usa", "america"), "united kingdom": ("uk", "u.k", "britain")}
#: a country's other names written with capitals ("US", not the pronoun "us"), and its demonyms (:func:`_alias_of`)
_CASED_NAMES = {"united states": ({"US"}, {"American", "Americans"}), "united kingdom": (set(), {"British"})}
#: the words that state a literal value another way
_VALUE_WORDS = {"deceased": ("died", "dead", "passed away")}


def _matcher_forms(text: str, others: Iterable[str] = ()) -> list[list[str]]:
    """More surface forms of an entity than :func:`~qe.core.surface.entity_variants` gives, for the matcher only
    (RatPred's delexicalisation and the triple-words miner keep those): the name without the full stops of its
    abbreviations ("st louis" for ``St._Louis``); "and" for "&"; a written-out date's other forms ("30th March
    2007" for ``"30 March 2007"``); the initials of a name of three words or more, outside its links ("mit" for
    Massachusetts Institute of Technology; not one that is a country's short name); the head of "A of B" / "A in
    (the) B" when A has two words or more and B is another entity of the MR (``others``), which the text names on its
    own ("felipe vi" for ``Felipe_VI_of_Spain`` beside ``Spain``, "prime minister" for ``Prime_Minister_of_Romania``
    beside ``Romania``); a country's short names (:data:`_SHORT_NAMES`) and a literal value's other words
    (:data:`_VALUE_WORDS`: "died" for ``"Deceased"``). ``text`` is an entity text (:func:`entity_text`)."""
    et = entity_text(text)
    out: list[list[str]] = []
    toks = norm_tokens(et)
    if "." in toks[1:-1]:
        out.append([t for t in toks if t != "."])
    if "&" in toks:  # "College of William and Mary" for College_of_William_&_Mary
        out.append(["and" if t == "&" else t for t in toks])
    date = _WRITTEN_DATE.match(et)
    if date:  # a date the MR writes out ("30 March 2007"): its other written forms ("30th March 2007", "March 30, 2007")
        d, mo, y = (date.group(1) or date.group(4)), (date.group(2) or date.group(3)), date.group(5)
        iso = f"{y}-{_MONTH_NAMES_LIST.index(mo) + 1:02d}-{int(d):02d}"
        out += [norm_tokens(" ".join(v)) for v in entity_variants(iso)]
    head = et.split(",")[0]
    initials = [w for w in head.split() if w not in _NOT_INITIALS]
    acronym = "".join(w[0] for w in initials)
    if len(initials) >= 3 and all(w.isalpha() for w in initials) and \
            not any(acronym in names for names in _SHORT_NAMES.values()):  # "mit": Massachusetts Institute of ...
        out.append([acronym])
    words = [t for t in toks if t != "."]
    known = {" ".join(t for t in norm_tokens(o) if t != ".") for o in others} - {" ".join(words)}
    known |= {f for o in known for f in _SHORT_NAMES.get(o, ())}
    for i in range(2, len(words) - 1):  # every "A of B" / "A in (the) B" split with two words or more in A
        rest = words[i + 1:][1:] if words[i + 1:i + 2] == ["the"] else words[i + 1:]
        if words[i] in ("of", "in") and " ".join(rest) in known and not _has_number(" ".join(words[:i])):
            out.append(words[:i])
    for form in _SHORT_NAMES.get(et, ()) + _VALUE_WORDS.get(et, ()):
        out.append(norm_tokens(form))
    return out


def _all_numbers(text: str) -> bool:
    toks = norm_tokens(text)
    return bool(toks) and all(_NUMBER.match(t) for t in toks)


def _has_number(text: str) -> bool:
    return any(_NUMBER.match(t) for t in norm_tokens(text))


def _inside_other(sp: tuple[int, int], text: str, occ: dict[str, list[tuple[int, int]]], literal: set[str],
                  tokens: list[str]) -> bool:
    """An occurrence inside a longer occurrence of another entity's name ("madrid" in the airport's name); not one
    inside a literal value (``"compressed rice cooked in banana leaf ..."``) nor one written after a comma of the name
    it is in, as its qualifier ("new jersey" in "egg harbor township, new jersey" states it)."""
    return any(a <= sp[0] and sp[1] <= b and b - a > sp[1] - sp[0] and "," not in tokens[a:sp[0]]
               for x, spans in occ.items() if x != text and x not in literal for a, b in spans)


def _sentence_ids(tokens: list[str], taken: list[bool]) -> list[int]:
    """The sentence of each token: a full stop ends one unless it is part of an MR name ("St. Louis") or follows an
    initial or abbreviation ("D.", "Jr.", "U.S."; a number with a decimal point, "2702.0.", is no abbreviation)."""
    out, sid = [], 0
    for i, t in enumerate(tokens):
        out.append(sid)
        if t in _TRIPLE_SENTENCE_END or (t == "." and not taken[i] and not (
                i > 0 and (("." in tokens[i - 1] and not _NUMBER.match(tokens[i - 1]))
                           or (len(tokens[i - 1]) <= 2 and tokens[i - 1].isalpha())))):
            sid += 1
    return out


def _side_cues(tokens: list[str]) -> list[tuple[int, int, str]]:
    """Where the output uses a cue word of a contradiction side (:data:`_SIDES`): (start, end, side)."""
    out = []
    for side, cues in _SIDES.items():
        for cue in cues:
            c = cue.split()
            out += [(i, i + len(c), side) for i in _find_every(tokens, c)]
    return out


def _plain_between(tokens: list[str], taken: list[bool], i: int, j: int) -> bool:
    """Nothing between ``i`` and ``j`` but function words, punctuation, numbers, month names and the MR's names (no
    verb or other word of another clause: "died in New York City, worked as the United States ...")."""
    return all(taken[k] or not content_word(tokens[k]) or tokens[k] in _MONTH_NAMES for k in range(i, j))


def _nearest_side(sides, sp: tuple[int, int], sentence: list[int], tokens: list[str], taken: list[bool]):
    """The side cue nearest before the span (up to :data:`SIDE_BEFORE` tokens between, same sentence), else the
    nearest after it (:data:`CUE_AFTER`); neither across "and" / "but" ("born in Dallas and died in ...") nor across
    another clause's words (:func:`_plain_between`); else None."""
    a, b = sp
    before = [c for c in sides if c[1] <= a and a - c[1] <= SIDE_BEFORE and sentence[c[0]] == sentence[a]
              and not _COORDINATORS & set(tokens[c[1]:a]) and _plain_between(tokens, taken, c[1], a)]
    if before:
        return max(before, key=lambda c: c[1])
    after = [c for c in sides if c[0] >= b and c[0] - b <= CUE_AFTER and sentence[c[0]] == sentence[b - 1]
             and not _COORDINATORS & set(tokens[b:c[0]]) and _plain_between(tokens, taken, b, c[0])]
    return min(after, key=lambda c: c[0]) if after else None


def _demonym_of(t: _Triple, tokens: list[str], cased: list[str], taken: list[bool], consumed: set[int]) -> int | None:
    """Where the output writes the demonym of a one-word object (the same first three letters: "Canadian",
    "Polish"), outside the MR's names, or None."""
    ow = norm_tokens(t.o_txt)
    if len(ow) != 1 or len(ow[0]) < 4 or not ow[0].isalpha():
        return None
    for i, c in enumerate(cased):
        if not taken[i] and i not in consumed and _DEMONYM.match(c) and fold(tokens[i])[:3] == fold(ow[0])[:3] \
                and tokens[i] != ow[0]:
            return i
    return None


def _alias_of(t: _Triple, tokens: list[str], cased: list[str], taken: list[bool], consumed: set[int]) -> int | None:
    """Where the output writes a country's other name that needs its capitals ("US") or, for a property a demonym
    states (:data:`DEMONYM_OBJECTS`), its demonym ("American", "British"), outside the MR's names, or None."""
    forms = _CASED_NAMES.get(t.o_txt)
    if forms is None:
        return None
    names, demonyms = forms
    for i, c in enumerate(cased):
        if not taken[i] and i not in consumed and (c in names or (t.key in DEMONYM_OBJECTS and c in demonyms)):
            return i
    return None


def _cue_positions(tokens: list[str], forms, taken: list[bool]) -> list[tuple[int, int, float]]:
    """Where a property's cues stand (outside the MR's names): (start, end, weight); its own words weigh 0, the
    lexicon's mined words 0.5 (a weaker tie)."""
    own, mined, multi = forms
    out = []
    for i, t in enumerate(tokens):
        if taken[i]:
            continue
        f = fold(t)
        if not content_word(f):
            continue
        if f in own:
            out.append((i, i + 1, 0.0))
        elif f in mined:
            out.append((i, i + 1, 0.5))
    for c in multi:
        out += [(i, i + len(c), 0.0) for i in _find_every(tokens, list(c)) if not any(taken[i:i + len(c)])]
    return out


def _cue_distance(pos, a: int, b: int, sentence: list[int], tokens: list[str]) -> float | None:
    """Tokens between the value ``tokens[a:b]`` and the nearest cue in its sentence (within the windows), plus the
    cue's weight; 0 for a cue inside the value ("Sony Records" for recordLabel); None if there is none. A cue does
    not reach across "and" / "but" ("the leader is X and the capital is Y")."""
    best = None
    for i, j, w in pos:
        if j <= a:
            gap = a - j
            if gap > CUE_BEFORE or sentence[i] != sentence[a] or _COORDINATORS & set(tokens[j:a]):
                continue
        elif i >= b:
            gap = i - b
            if gap > CUE_AFTER or sentence[i] != sentence[b - 1] or _COORDINATORS & set(tokens[b:i]):
                continue
        else:
            gap = 0
        d = gap + w
        best = d if best is None else min(best, d)
    return best


def _fallback(t: _Triple, tokens: list[str], cased: list[str] | None, a: int, b: int, kind: str) -> float | None:
    """A value tied to a triple by its type alone: a name right after "in" / "from" / "at" for a place property
    (:data:`PLACE_PROPERTIES`; not after another verb: "graduating from MIT"), a demonym for a nationality, or a
    value ending with (or written just before) the
    object's last word ("Sony Records" for ``Philips_Records``, "V6 engine" for ``Straight-four_engine``)."""
    if kind == "number":
        return None
    if kind == "name" and t.key in PLACE_PROPERTIES:
        k = a - 1
        if k >= 0 and tokens[k] == "the":
            k -= 1
        if k >= 0 and tokens[k] in (_ORIGIN_PREPS if t.key in ORIGIN_PROPERTIES else _PLACE_PREPS) and not (
                k > 0 and tokens[k - 1].endswith(("ed", "ing")) and tokens[k - 1] not in _PLACE_VERBS):
            return FALLBACK_DISTANCE
    if kind == "name" and t.key in DEMONYM_PROPERTIES and b - a == 1 and cased and _DEMONYM.match(cased[a]):
        return FALLBACK_DISTANCE
    words = norm_tokens(" ".join(re.sub(r"\([^()]*\)", " ", t.o_txt).split()))
    if len(words) > 1 and content_word(fold(words[-1])):
        head = WordForms([fold(words[-1])])
        if fold(tokens[b - 1]) in head or (b < len(tokens) and fold(tokens[b]) in head):
            return HEAD_DISTANCE
    return None


#: how alike the letters of a value and an entity must be (difflib's ratio) for a misspelling of it ("Abiliene")
FUZZY_RATIO = 0.9
_UNFOLDED = str.maketrans({"ß": "ss", "ø": "o", "ı": "i", "ł": "l", "æ": "ae", "đ": "d", "œ": "oe"})


def _letters(x: str) -> str:
    """Letters and digits only, diacritics and the letters NFKD does not split folded ("løkke" -> "lokke")."""
    return "".join(ch for ch in fold(x.lower().translate(_UNFOLDED)) if ch.isalnum())


def _short(words: list[str]) -> list[str]:
    """The short tokens of a name that tell it from its neighbours ("B" in "Série B", "J" in "Honda J engine")."""
    from qe.content.lexicon import _stopwords

    return sorted(w for w in words if len(w) <= 2 and w not in _stopwords())


def _same_value(tokens: list[str], raw: list[str], a: int, b: int, taken: list[bool], text: str, kind: str,
                cased: list[str] | None = None) -> bool:
    """The value ``tokens[a:b]`` is the entity ``text`` written another way: the same digits (``.0999`` for
    ``0.0999``); the same letters without dots and spaces, with the MR names written next to it ("Juventus FC",
    "AFC Ajax NV"); its initials ("LA", "WWII"); a run of its words ("Honda K", "V8" for ``AMC_V8_engine``); its last
    word with initials or short forms before it ("K. Mitsotakis", "VW Polo"); its demonym ("Spanish" for Spain); or,
    with the same short tokens (so "Série B" is not ``Série_C``), nearly its letters ("Abiliene", "Aston Mastin DBS")
    or most of its words ("Japanese occupied British Borneo")."""
    obj = " ".join(re.sub(r"\([^()]*\)", " ", text).split())
    forms = [obj] + ([obj.split(",")[0]] if "," in obj else [])
    if kind == "number":
        digits = "".join(ch for ch in "".join(raw[a:b]) if ch.isdigit())
        return len(digits) >= 3 and any(digits in "".join(ch for ch in f if ch.isdigit()) for f in forms)
    left, right = a, b
    while left > 0 and taken[left - 1]:
        left -= 1
    while right < len(tokens) and taken[right]:
        right += 1
    cands = {_letters(" ".join(tokens[i:j])) for i, j in {(a, b), (left, b), (a, right), (left, right)}}
    cw = [_letters(w) for w in tokens[a:b] if _letters(w)]
    if not cw:
        return False
    demonym = len(cw) == 1 and cased is not None and _DEMONYM.match(cased[a])
    for f in forms:
        ow = [_letters(w) for w in norm_tokens(f) if _letters(w)]
        if not ow:
            continue
        ol = "".join(ow)
        initials = "".join(w if len(w) <= 2 and w.isalpha() and w not in ("of", "de") else w[0] for w in ow)
        if ol in cands or (len(cw) == 1 and len(ow) >= 2 and cw[0] in (initials, "".join(w[0] for w in ow))):
            return True
        if any(ow[i:i + len(cw)] == cw for i in range(len(ow) - len(cw) + 1)) and \
                (len(cw) > 1 or any(ch.isdigit() for ch in cw[0])):
            return True
        if len(ow) > 1 and len(cw) > 1 and len(ow[-1]) >= 4 and cw[-1] == ow[-1] and \
                all(len(w) <= 3 or any(o.startswith(w) for o in ow[:-1]) for w in cw[:-1]):
            return True
        if demonym and len(ow) == 1 and len(ow[0]) >= 4 and cw[0][:3] == ow[0][:3]:
            return True
        if len(cw) == 1 and len(ow) == 1 and len(cw[0]) >= 4 and ow[0].startswith(cw[0]):
            return True  # a short form ("Math" for Mathematics)
        if _short(cw) != _short(ow):
            continue
        if len("".join(cw)) >= 5 and difflib.SequenceMatcher(None, "".join(cw), ol).ratio() >= FUZZY_RATIO:
            return True
        long_c, long_o = [w for w in cw if len(w) > 2], [w for w in ow if len(w) > 2]
        if len(long_o) >= 2 and len(long_c) >= 2:
            fo, fc = WordForms(long_o), WordForms(long_c)
            if sum(w in fo for w in long_c) >= 2 / 3 * len(long_c) and \
                    sum(w in fc for w in long_o) >= 2 / 3 * len(long_o):
                return True
    return False


def _value_candidates(tokens: list[str], cased: list[str] | None, taken: list[bool], consumed: set[int],
                      foreign_numbers: set[int], sentence: list[int], explained) -> list[tuple[int, int, str]]:
    """Values the output states that the MR does not hold: (start, end, kind). ``number``: a run of numbers (with
    the month names and slashes written with them) holding a number the MR does not; ``name`` (with the output's
    capitals): a run of capitalised words (and the small words inside names) holding a word that is neither a form
    of the MR's entity words nor a word of its properties' names (``explained``); not a name written right after an
    MR name as its qualifier ("Dallas, Texas")."""
    from qe.content.lexicon import _stopwords

    stop = _stopwords()
    n = len(tokens)
    out: list[tuple[int, int, str]] = []

    def free(i: int) -> bool:
        return not taken[i] and i not in consumed

    def numeric(i: int) -> bool:
        return bool(_NUMBER.match(tokens[i])) or tokens[i] in _MONTH_NAMES

    i = 0
    while i < n:
        if i in foreign_numbers and free(i):
            a, b = i, i + 1
            while a > 0 and free(a - 1) and (numeric(a - 1) or (tokens[a - 1] == "/" and a > 1 and numeric(a - 2))):
                a -= 1
            while b < n and free(b) and (numeric(b) or (tokens[b] == "/" and b + 1 < n and numeric(b + 1))):
                b += 1
            out.append((a, b, "number"))
            i = b
            continue
        i += 1
    if cased is None:
        return out
    in_number = {k for a, b, _ in out for k in range(a, b)}

    def capital(i: int) -> bool:
        c = cased[i]
        return free(i) and i not in in_number and tokens[i] not in stop and tokens[i] not in _MONTH_NAMES and (
            c[:1].isupper() or (any(ch.isdigit() for ch in c) and any(ch.isalpha() for ch in c)))

    def foreign(i: int, size: int) -> bool:
        f = fold(tokens[i])
        if any(ch.isdigit() for ch in f):
            return any(ch.isalpha() for ch in f)
        if len(f) == 1:
            return f.isalpha() and size > 1
        return f.isalpha() and content_word(f) and not explained(f)

    i = 0
    while i < n:
        if not capital(i):
            i += 1
            continue
        j = i + 1
        while j < n:
            if capital(j):
                j += 1
            elif j + 1 < n and capital(j + 1) and free(j) and (tokens[j] in _NAME_LINKS or (
                    tokens[j] == "." and ("." in tokens[j - 1] or len(tokens[j - 1]) <= 3))):
                j += 2
            else:
                break
        qualifier = i >= 2 and tokens[i - 1] in (",", "(") and taken[i - 2]
        opener = j - i == 1 and (i == 0 or sentence[i - 1] != sentence[i])  # "Designed by ...": capital as first word
        if not qualifier and not opener and any(foreign(k, j - i) for k in range(i, j)):
            out.append((i, j, "name"))
        i = j
    return out


def _numeric_date(tokens: list[str], i: int) -> list[str]:
    """The numbers written together with ``tokens[i]`` as one numeric date (``1982-07-23``, ``10/03/1983``: joined by
    separators only, up to two numbers away)."""
    out = []
    for step in (-1, 1):
        j, k = i + step, 0
        while 0 <= j < len(tokens) and k < 4 and (_NUMBER.match(tokens[j]) or tokens[j] in ("/", ".")):
            if _NUMBER.match(tokens[j]):
                out.append(tokens[j])
            j, k = j + step, k + 1
    return out


def _find_near(tokens: list[str], sub: list[str]) -> tuple[int, int]:
    """:func:`~qe.core.surface.find_approx` for values: no near-variants of numbers or negated forms (``strict``),
    then the same with diacritics folded on both sides (``Café Rouge`` / ``Cafe Rouge``)."""
    unused = [False] * len(tokens)
    i, j = find_approx(tokens, sub, unused, strict=True)
    if i < 0:
        folded, fsub = [fold(t) for t in tokens], [fold(t) for t in sub]
        if folded != tokens or fsub != sub:
            i, j = find_approx(folded, fsub, unused, strict=True)
    return i, j


def _name_form_match(got: tuple[str, ...], form: tuple[str, ...], words: tuple[str, ...]) -> bool:
    """``got`` spells the pattern ``form`` but for a word of its slot's name (``words``) written in another form
    ("average priced" for "average price", "high prices" for "high price")."""
    for a, b in zip(got, form):
        if a != b and not (b in words and _form_of(a, b)):
            return False
    return True


def _by_first_letters(triggers) -> dict[str, list[tuple[tuple[str, ...], str]]]:
    """Triggers ``(form, slot)`` by the first two letters of their first word: a word in another form begins as it
    does ("kids" / "kid"), so only those are tried."""
    out: dict[str, list] = {}
    for form, key in triggers:
        out.setdefault(form[0][:2], []).append((form, key))
    return out


def _slot_words_said(tokens: list[str], words: list[str]) -> bool:
    """A slot's name in the output: as written, in the plural, or with spaces moved (``pricerange`` / ``price
    range``); not as a near-variant (``are`` is not ``area``)."""
    unused = [False] * len(tokens)
    if find_all(tokens, words, unused) or find_all(tokens, words[:-1] + [words[-1] + "s"], unused):
        return True
    i, j = find_approx(tokens, words, unused, strict=True)
    return i >= 0 and "".join(tokens[i:j]) == "".join(words)


def _firm(m: "_Match", vals: dict[str, int], value: str) -> bool:
    """A mention that says ``value``: outright, or with more than half of its weight (``highly rated``: high 84 of
    117 in the E2E lexicon; ``rating of``: 5 out of 5 only 138 of 505)."""
    return _outright(m, vals) or vals.get(value, 0) > 0.5 * sum(vals.values())


def _outright(m: "_Match", vals: dict[str, int]) -> bool:
    """A mention that states one value: the value itself, a surface form of it, or a pattern with one value."""
    return m.source == "value" or len(vals) == 1


def _decimal_trim(t: str) -> str:
    """``25.0`` -> ``25``, ``2.50`` -> ``2.5``; a whole number stays as it is (``120`` is not ``12``)."""
    return t.rstrip("0").rstrip(".") if "." in t else t


def _partial(value: str, tokens: list[str], other: set[int]) -> float | None:
    """Partial evidence for an omitted value (:attr:`Verdict.partial`): ``k / (n + 1)``, ``n`` the distinct content
    words and numbers of ``value`` (folded), ``k`` those the output writes (a form of the word: "italian" for
    "italy" counts, as :class:`~qe.content.lexicon.WordForms` reads forms) at positions outside ``other``; None when
    ``k`` is 0."""
    words = {fold(w) for w in norm_tokens(value) if content_word(fold(w)) or _NUMBER.match(w)}
    if not words:
        return None
    forms = WordForms(fold(t) for i, t in enumerate(tokens) if i not in other)
    k = sum(1 for w in words if w in forms)
    return k / (len(words) + 1) if k else None


#: address words and their usual abbreviations ("1 kearny st" for "1 kearny street"; SF hotel and restaurant
#: references abbreviate the MRs' addresses)
_ADDRESS_ABBREVIATIONS = {"street": "st", "avenue": "ave", "boulevard": "blvd", "road": "rd", "place": "pl",
                          "square": "sq", "lane": "ln"}


#: a value that names a kind of thing, and the words that name one of that kind: each realises the value, also when it
#: realises another fact (:meth:`Matcher.align`; BAGEL's ``type=placetoeat``: "a restaurant", "a pub", "a place to eat")
_KIND_WORDS = {"placetoeat": ("place to eat", "places to eat", "restaurant", "restaurants", "pub", "pubs", "bar",
                              "bars", "cafe", "café", "coffee shop", "venue", "eatery", "establishment", "place",
                              "places", "spot", "diner", "bistro", "brasserie")}


#: how texts say the two areas E2E and BAGEL share (keyed by the value without spaces: "city centre", "citycentre"):
#: each realises the MR's value when nothing else did; none is read as a value the MR lacks (:meth:`Matcher.align`)
_AREA_WORDINGS = {
    "citycentre": ("centre of town", "centre of the town", "center of town", "center of the town", "centre of the city",
                   "center of the city", "town centre", "town center", "middle of town", "middle of the town",
                   "middle of the city", "heart of the city", "heart of town", "downtown",
                   # the centre named alone or as the city's, in either spelling ("in the centre of city", "in the
                   # city's centre", BAGEL's citycentre as "the city center"; E2E: "near the centre")
                   "the centre", "the center", "centre of city", "center of city", "city 's centre", "city 's center",
                   "city center"),
    "riverside": ("by the river", "side of the river", "next to the river", "near the river", "on the river",
                  "along the river", "river side", "riverfront", "waterfront", "banks of the river",
                  # the river with any word of place before it ("close to the river", "just off the river",
                  # "beside the river", "near Polonia and the river", "down by river")
                  "the river", "by river"),
}


def _surface_forms(value: str) -> list[list[str]]:
    """The value's other usual wordings (:func:`qe.core.surface.value_variants`, shared with RatPred's
    delexicalisation), plus one the matcher alone reads: an address with its street word abbreviated (kept out of
    ``value_variants`` so that RatPred's inputs do not change). A price range said "between £20 and £25" was tried
    too and not kept: on the faithful E2E dev references it added 3 invented facts and realised nothing more."""
    from qe.core.surface import value_variants

    forms = [norm_tokens(" ".join(v)) for v in value_variants(value)]
    words = norm_tokens(value)
    if len(words) > 1 and words[-1] in _ADDRESS_ABBREVIATIONS:
        forms.append(words[:-1] + [_ADDRESS_ABBREVIATIONS[words[-1]]])
    seen, out = {" ".join(words)}, []
    for f in forms:
        if f and " ".join(f) not in seen:
            seen.add(" ".join(f))
            out.append(f)
    return out


# --------------------------------------------------------------------------------- binary values in any spelling
#: how MRs spell the two values of a binary slot (the matcher reads polarity as yes / no)
BINARY_SPELLINGS = {"yes": "yes", "true": "yes", "1": "yes", "no": "no", "false": "no", "0": "no"}
#: a slot name that asks a yes/no question ("isForBusinessComputing", "hasUsbPort", "acceptsCards"): 1 / 0 values of
#: such a slot are binary; of any other slot (``stars=1``) they stay numbers
_PREDICATE_NAME = re.compile(r"^(?:is|has|have|can|does|allows|accepts|offers|supports)[a-z_ ]{3,}$")


def _binary_spellings(facts, lexicon: Lexicon) -> dict[tuple[str, str], str]:
    """``{(slot key, value): "yes" | "no"}`` for the MR's values of binary slots spelled otherwise than yes / no, so
    that ``isforbusinesscomputing=false`` is matched, and said, as ``no`` (verdicts keep the MR's own spelling).

    ``true`` / ``false`` (any case) are binary wherever they stand, as :func:`~qe.content.lexicon.slot_kind` reads them;
    ``1`` / ``0`` are when the lexicon knows the slot as binary, or when every value the MR gives the slot is 1 or 0
    and its name asks a yes/no question (:data:`_PREDICATE_NAME`)."""
    by_slot: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    for _, s, v in facts:
        if v is not None:
            by_slot.setdefault(norm_slot(s), []).append(norm_value(v))
            names[norm_slot(s)] = s
    out: dict[tuple[str, str], str] = {}
    for key, vals in by_slot.items():
        sl = lexicon.slots.get(key)
        numeric_ok = (sl is not None and sl.kind == "binary") or (
            all(v in ("1", "0") for v in vals) and bool(_PREDICATE_NAME.match(names[key].lower())))
        for v in vals:
            canon = BINARY_SPELLINGS.get(v)
            if canon is not None and canon != v and (v not in ("1", "0") or numeric_ok):
                out[(key, v)] = canon
    return out


#: the function words a slot's name written as one word joins its words with (``isforbusinesscomputing``)
_NAME_JOINERS = frozenset({"an", "is", "in", "on", "of", "for", "to", "at", "by", "and", "or", "the", "has", "have",
                           "with", "can", "does", "are", "per", "not", "no"})


def _word_break(name: str, vocab: frozenset[str] | set[str]) -> list[str]:
    """A slot's name as words: :func:`~qe.core.surface.property_words` (``good_for_meal``, ``familyFriendly``), and a
    name written as one lower-case word split by dynamic programming into words of ``vocab``, the fewest letters
    outside it first and then the fewest pieces (``goodformeal`` -> good for meal with "good" unknown:
    ``goodf``/``or`` leaves more letters unknown)."""
    words = norm_tokens(property_words(name))
    if len(words) != 1 or len(words[0]) < 6 or not words[0].isalpha():
        return words
    whole = words[0]
    best: list[tuple[int, int, list[str]] | None] = [(0, 0, [])] + [None] * len(whole)
    for i in range(1, len(whole) + 1):
        for j in range(max(0, i - 30), i):
            head, piece = best[j], whole[j:i]
            if head is None:
                continue
            known = piece in _NAME_JOINERS or (len(piece) >= 3 and piece in vocab)
            if not known and len(piece) < 3:
                continue  # no stray letters ("price|r|an|ge")
            cand = (head[0] + (0 if known else len(piece)), head[1] + 1, head[2] + [piece])
            if best[i] is None or cand[:2] < best[i][:2]:
                best[i] = cand
    return best[-1][2] if best[-1] is not None else words


def _topic_word(name: str, tokens: list[str]) -> tuple[str | None, list[str]]:
    """The first content word of a binary slot's name of two content words or more (``kids`` of kidsallowed,
    ``family`` of familyFriendly, ``business`` of isforbusinesscomputing), the name split into the output's words
    (:func:`_word_break`), and the content words after it; (None, []) for a name of one content word, or one whose
    first content word the output does not use in any form."""
    pieces = _word_break(name, {t for t in tokens if t.isalpha()})
    content = [p for p in pieces if content_word(p) and len(p) >= 3]
    if len(content) < 2 or content[0] not in tokens and not any(_word_form(t, content[0]) for t in tokens):
        return None, []
    return content[0], content[1:]


def _name_cue(name: str, tokens: list[str]) -> tuple[str, ...]:
    """The words of a binary slot's name that say it is talked about, for a slot no lexicon knows: the name's words
    (``family friendly`` for ``familyFriendly``, as :func:`~qe.core.surface.property_words` splits it). A name written
    as one lower-case word (``isforbusinesscomputing``) is split into the output's words and function words, the
    fewest pieces first, and its leading and trailing function words dropped (``business computing``; a negation
    before them is read as for any trigger: "it is not for business computing"); a name that does not split so is
    kept whole (it then matches only itself)."""
    words = tuple(norm_tokens(property_words(name)))
    if len(words) != 1 or len(words[0]) < 6 or not words[0].isalpha():
        return words
    from qe.content.lexicon import _stopwords

    whole = words[0]
    vocab = {t for t in tokens if t.isalpha() and len(t) >= 2} | {w for w in _stopwords() if w.isalpha()}
    # best[i]: the fewest pieces that spell whole[:i] (a word-break by dynamic programming)
    best: list[list[str] | None] = [[]] + [None] * len(whole)
    for i in range(1, len(whole) + 1):
        for j in range(max(0, i - 30), i):
            piece, head = whole[j:i], best[j]
            if head is not None and piece in vocab and (best[i] is None or len(head) + 1 < len(best[i])):
                best[i] = head + [piece]
    pieces = best[-1] or [whole]
    while len(pieces) > 1 and not content_word(pieces[0]):
        pieces = pieces[1:]
    while len(pieces) > 1 and not content_word(pieces[-1]):
        pieces = pieces[:-1]
    return tuple(pieces) if any(content_word(w) for w in pieces) else words


__all__ = ["Alignment", "Matcher", "Verdict", "Said", "STATUSES", "NEGATION_WINDOW", "BINARY_SPELLINGS"]
