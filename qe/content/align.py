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

``hallucinated`` lists what the output states that is not in the MR: a value of a slot the MR does not have, a second
value of a slot it has, or (triples) a number the MR does not hold and, with a lexicon that knows how texts state
triples (``lexicon=webnlg``, :func:`~qe.content.lexicon.mine_triples`), each stretch of words that neither the
triples' entities nor their properties' usual words explain (``"kind": "words"``). ``repeated`` lists categorical
values stated more often than the MR holds them, in the same words (entity names are not counted: texts name an
entity again on purpose; a paraphrase of a stated value is not a repetition).

RDF triples: each triple is one fact, ``realised`` when its object entity (the new information) is found
(verbatim, near-verbatim, or as one of its usual surface forms: :func:`qe.core.surface.entity_variants`) and its
subject is named somewhere or is the subject of an earlier triple (a pronoun refers to it), else ``omitted``. The first
triple's subject is taken as named (texts refer to it in too many ways to require it): a text about another entity
that states the right objects is not caught.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from qe.content.lexicon import (NEGATIONS, UNCHECKED_VALUES, Lexicon, SlotLexicon, WordForms, entity_words, fold,
                                norm_tokens, norm_value, raw_tokens, rules_lexicon, slot_kind, unexplained_spans)
from qe.core.mr import TRIPLE_ACT, parse_acts
from qe.core.surface import entity_text, entity_variants, find_all, find_approx, norm_slot, property_words

STATUSES = ("realised", "omitted", "wrong", "unchecked")
#: tokens that end the scope of a negation cue (and of a value's context)
SCOPE_END = frozenset({".", "!", "?", ";", ",", ":", "but", "and", "although", "however", "while", "whereas", "yet"})
#: how many tokens before a binary slot's wording a negation cue may stand ("is not a family friendly")
NEGATION_WINDOW = 4
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

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None and k != "spans"}


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


def _negation_at(tokens: list[str], start: int) -> int | None:
    """The position of a negation cue among the few tokens before ``start``, in the same clause, or None."""
    for k in range(start - 1, max(-1, start - 1 - NEGATION_WINDOW), -1):
        t = tokens[k]
        if t in SCOPE_END:
            return None
        if t in NEGATIONS:
            return k
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
                    if form:
                        out.append((tuple(form), key, dict(sl.patterns.get(text, {v: 1})), "value"))
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
                    names: dict[str, str]) -> list[_Match]:
        idx = self._index()
        extra: dict[str, list] = {}
        for key, vals in mr_slots.items():  # MR values and slots the lexicon does not know
            sl = self.lexicon.slots.get(key)
            if sl is None:
                sl = self._slot_lex(key, vals)
                ents = self._entries(key, sl, vals, raw)
                if sl.kind == "binary":
                    words = tuple(norm_tokens(property_words(names.get(key, key))))
                    if words:
                        ents.append((words, key, None, "trigger"))
            else:
                ents = self._entries(key, SlotLexicon(sl.kind, sl.values, sl.patterns),
                                     [v for v in vals if v not in sl.values], raw)
                ents = [e for e in ents if e[3] == "value"]
            for e in ents:
                extra.setdefault(e[0][0], []).append(e)
        cands: list[_Match] = []
        seen = set()
        for i, tok in enumerate(tokens):
            for form, key, compat, source in idx.get(tok, []) + extra.get(tok, []):
                j = i + len(form)
                if tuple(tokens[i:j]) != form or (key, i, j, source) in seen and source != "value":
                    continue
                seen.add((key, i, j, source))
                cands.append(_Match(key, i, j, {"yes": 1} if compat is None else compat, " ".join(form),
                                    source if compat is not None else "trigger"))
        # an MR value not found verbatim may be there near-verbatim ("citycentre", "hotels")
        for key, vals in mr_slots.items():
            for v in vals:
                if v in UNCHECKED_VALUES or not v or any(c.slot == key and v in c.values for c in cands):
                    continue
                if self._slot_lex(key, vals).kind == "binary":
                    continue
                i, j = _find_near(tokens, v.split())
                if i >= 0:
                    cands.append(_Match(key, i, j, {v: 1}, " ".join(tokens[i:j]), "value"))
        return cands

    @staticmethod
    def _resolve(cands: list[_Match], mr_slots: dict[str, list[str]]) -> list[_Match]:
        """Longest matches first; a match overlapping one already taken is dropped; among matches of the same span,
        the one compatible with the MR wins (as the E2E slot-error script prefers the MR's value)."""
        def rank(m: _Match):
            in_mr = any(v in mr_slots.get(m.slot, []) for v in m.values) or (m.source != "value" and m.slot in mr_slots)
            return (-m.length, 0 if m.source == "value" else 1, 0 if in_mr else 1, m.start)

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
        for _, s, v in facts:
            mr_slots.setdefault(norm_slot(s), []).append(norm_value(v))
            raw[(norm_slot(s), norm_value(v))] = (v or "").strip()
        written = {norm_slot(s): s for _, s, _ in facts}
        matches = self._resolve(self._candidates(tokens, mr_slots, raw, written), mr_slots)
        # each match says one value of its slot (binary: its polarity, flipped by a negation cue before it)
        said: dict[str, list[tuple[_Match, dict[str, int]]]] = {}
        cue_words: dict[int, str] = {}  # a negated mention's words, its negation cue included ("not family friendly")
        for m in matches:
            vals = m.values
            sl = self.lexicon.slots.get(m.slot)
            if (sl is not None and sl.kind == "binary") or m.source == "trigger":
                best = max(vals, key=vals.get)
                pol = best in ("yes", "true")
                cue = _negation_at(tokens, m.start)
                if cue is not None and not (set(m.text.split()) & NEGATIONS):
                    pol = not pol
                    cue_words[id(m)] = " ".join(tokens[cue:m.end])
                vals = {("yes" if pol else "no"): 1}
            said.setdefault(m.slot, []).append((m, vals))
        al = Alignment()
        consumed: set[int] = set()
        # realised first (so a slot with two values, e.g. near[x], near[y], gets both), then wrong
        pending = []
        for _, s, v in facts:
            key, nv = norm_slot(s), norm_value(v)
            if v is not None and nv in UNCHECKED_VALUES:
                al.verdicts.append(Verdict(s, v, "unchecked"))
                continue
            if v is None:  # a slot without value (request(area)): talked about or not
                hit = next((k for k, (m, _) in enumerate(said.get(key, [])) if id(m) not in consumed), None)
                if hit is None:  # no pattern of the slot (a lexicon knows few for a slot's name): its words
                    words = norm_tokens(property_words(s))
                    ok = bool(words) and _slot_words_said(tokens, words)
                    al.verdicts.append(Verdict(s, v, "realised" if ok else "omitted",
                                               " ".join(words) if ok else None))
                    continue
                al.verdicts.append(Verdict(s, v, "omitted" if hit is None else "realised",
                                           None if hit is None else said[key][hit][0].text))
                if hit is not None:
                    consumed.add(id(said[key][hit][0]))
                continue
            free = [(m, vals) for m, vals in said.get(key, []) if id(m) not in consumed]
            hits = [m for m, vals in free if nv in vals]
            # mentions that fit several values ("rating of", "a price") do not realise the value when none of them
            # says it mostly and the output states another value of the slot outright ("a price range of more
            # than £30" for less than £20)
            if hits and not any(_firm(m, vals, nv) for m, vals in free if m in hits) and \
                    any(nv not in vals and _outright(m, vals) for m, vals in free):
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
                al.verdicts.append(Verdict(s, v, "omitted"))
        pos = {(f[1], f[2]): k for k, f in reversed(list(enumerate(facts)))}
        al.verdicts.sort(key=lambda vd: pos.get((vd.slot, vd.value), 0))
        # what else the output says: one hallucination per (slot, value) it states that the MR neither holds nor
        # had as the answer of a wrong verdict; a value stated in the same words more often than the MR holds it is
        # repeated (a paraphrase of it, "cheap ... low prices", is not counted)
        answered = {(norm_slot(v.slot), norm_value(v.said_value)) for v in al.verdicts
                    if v.status == "wrong" and v.said_value}
        stated: dict[tuple[str, str], Counter] = {}
        extra: dict[tuple[str, str], _Match] = {}
        for key, lst in said.items():
            for m, vals in lst:
                val = max(vals, key=vals.get)
                if id(m) in consumed or val in mr_slots.get(key, []):
                    stated.setdefault((key, val), Counter())[m.text] += 1
                elif len(vals) > 1 and any(u in mr_slots.get(key, []) or (key, u) in answered for u in vals):
                    continue  # a mention that fits several values, one of them accounted for: nothing new
                elif (key, val) not in answered and (key, val) not in extra:
                    extra[(key, val)] = m
        for (key, val), m in extra.items():
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

    def _written(self, key: str, val: str) -> str:
        sl = self.lexicon.slots.get(key)
        return sl.values.get(val, val) if sl is not None else val

    def _slot_name(self, key: str) -> str:
        """A slot the MR does not hold, named as the lexicon's data write it (``customer rating``), else its key."""
        sl = self.lexicon.slots.get(key)
        return (sl.name if sl is not None and sl.name else key)

    # ------------------------------------------------------------------------------------------ triples
    def _align_triples(self, facts, output: str) -> Alignment:
        tokens = norm_tokens(output)
        al = Alignment()
        seen_subjects: list[str] = []
        mr_numbers: set[str] = set()
        months: set[tuple[str, str]] = set()  # (an ISO date's month number, its year)
        for _, prop, so in facts:
            subj, obj = so.split(" | ", 1)
            s_txt, o_txt = entity_text(subj), entity_text(obj)
            # an ISO date's numbers are those of its written forms (day and year), and its month's number where it
            # is written in one numeric date with the year (texts copy "1982-07-23" or write "10/03/1983"; "March
            # 1932, flew 3 missions" still counts the 3); a season's second year in full ("2014–15" -> 2015)
            mr_numbers |= {t for x in (s_txt, o_txt) if not _ISO_DATE.match(x) for t in norm_tokens(x)
                           if _NUMBER.match(t)}
            for var in entity_variants(o_txt):
                mr_numbers |= {t for t in var if _NUMBER.match(t)}
            mr_numbers |= {m.group(1)[:2] + m.group(2) for x in (s_txt, o_txt) for m in _SEASON.finditer(x)}
            months |= {(str(int(m.group(2))), m.group(1)) for x in (s_txt, o_txt) for m in [_ISO_DATE.match(x)] if m}
            o_hit = _entity_hit(tokens, o_txt)
            s_hit = _entity_hit(tokens, s_txt) or s_txt in seen_subjects or not seen_subjects
            if s_txt not in seen_subjects:
                seen_subjects.append(s_txt)
            status = "realised" if o_hit and s_hit else "omitted"
            al.verdicts.append(Verdict(prop, f"{subj} | {obj}", status, o_hit or None))
        # a number written as a word is not counted ("one of the languages", "the two airports")
        trimmed = {_decimal_trim(x) for x in mr_numbers}  # "1.80" in the MR, "1.8" in the text
        for i, (t, raw) in enumerate(zip(tokens, raw_tokens(output))):
            if _NUMBER.match(t) and t not in mr_numbers and _decimal_trim(t) not in trimmed \
                    and _NUMBER.match(raw) and not any((t, y) in months for y in _numeric_date(tokens, i)):
                al.hallucinated.append({"slot": None, "value": t, "said": raw})
        if self.lexicon.has_triple_words:
            al.hallucinated.extend(self._unexplained(facts, tokens))
        return al

    def _property_forms(self, prop: str) -> WordForms:
        key = norm_slot(prop)
        got = self._prop_forms.get(key)
        if got is None:
            words = set(self.lexicon.properties.get(key, ())) | {fold(w) for w in property_words(prop).split()}
            got = self._prop_forms[key] = WordForms(words)
        return got

    def _unexplained(self, facts, tokens: list[str]) -> list[dict[str, Any]]:
        """Stretches of the output's words that no triple explains (a lexicon with triple words only,
        :func:`~qe.content.lexicon.mine_triples`): content words that are not forms of the triples' entity words, of
        the words texts use for their properties, or of the words common to all such texts. One hallucinated value
        per stretch (:func:`~qe.content.lexicon.unexplained_spans`)."""
        if self._common_forms is None:
            self._common_forms = WordForms(self.lexicon.common)
        ents = WordForms(entity_words([x for _, _, so in facts for x in so.split(" | ", 1)]))
        props = [self._property_forms(p) for p in dict.fromkeys(p for _, p, _ in facts)]
        folded = [fold(t) for t in tokens]

        def explained(t: str) -> bool:
            return t in ents or t in self._common_forms or any(t in f for f in props)

        out = []
        for span in unexplained_spans(folded, explained):
            text = " ".join(tokens[span[0]:span[-1] + 1])
            out.append({"slot": None, "value": " ".join(tokens[i] for i in span), "said": text, "kind": "words"})
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


def _entity_hit(tokens: list[str], text: str) -> str:
    """The words of the output that name an entity (verbatim, near-verbatim, or a usual surface form), or ''."""
    vt = norm_tokens(text)
    if vt and _find_every(tokens, vt):
        return " ".join(vt)
    if vt:
        i, j = _find_near(tokens, vt)
        if i >= 0:
            return " ".join(tokens[i:j])
    for var in entity_variants(text):
        form = [t for t in var if t not in ("-",)]
        form = norm_tokens(" ".join(form))
        if form and _find_every(tokens, form):
            return " ".join(form)
    return ""


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


def _surface_forms(value: str) -> list[list[str]]:
    from qe.core.surface import value_variants

    return [norm_tokens(" ".join(v)) for v in value_variants(value)]


__all__ = ["Alignment", "Matcher", "Verdict", "STATUSES", "NEGATION_WINDOW"]
