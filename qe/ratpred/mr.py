"""MR linearisation and (de)lexicalisation for RatPred (Dušek, Novikova & Rieser 2017, Section 3.2).

* :func:`linearise` turns a dialogue act ``inform(name='x',food=chinese)`` into the token sequence of
  "DA type - slot - value" triples: ``inform name X-name inform food X-food``. Acts without slots give
  ``act <null> <null>``, slots without values (``request(area)``) ``act area <null>``.
* :func:`delexicalise` replaces slot values by placeholders ``X-<slot>`` in the MR and, where the value's
  tokens occur in the output, in the output too (first unused occurrence; longer values first, as the
  authors' ``delex_sent``; a value not found verbatim may match a near-variant - ``hotels`` for ``hotel``,
  ``moderately`` for ``moderate``, ``city centre`` for ``citycentre`` - as the authors' fuzzy matcher
  does). Values that are unknown / "don't care" / binary (``none``, ``dont_care``, ``yes``, ``no``,
  ``yes or no``) are kept, as in the paper. Only the slots in :data:`DELEX_SLOTS` are delexicalised (the slot
  list of the authors' released converter: names, areas, food, prices, addresses, phone numbers, counts,
  types).
* :func:`delexicalise_text` is the string-level variant for reference metrics (an output or a reference against
  its MR, e.g. to compare with metric columns computed on delexicalised text): every whole-word occurrence of
  every slot's value becomes ``x-<slot>`` in the lower-cased text (longest value first); no tokenisation, all
  slots, and only unknown / don't care / binary values and BAGEL's anonymised ``X`` are kept
  (:data:`TEXT_KEEP_VALUES`).
* :func:`relexicalise` puts values back: the k-th ``X-<slot>`` placeholder in a token list gets the k-th
  value of that slot (the last one if there are more placeholders than values, e.g. after a synthetic
  "duplicate" error).

MR formats (:mod:`qe.core.mr`): dialogue acts (one or several), E2E attribute MRs
(``name[Blue Spice], customer rating[5 out of 5]``) and JSON (``{"name": "Blue Spice"}``), auto-detected per MR or
fixed with ``mr_format=``. Every format becomes a list of acts ``[(act, [(slot, value), ...])]`` (E2E and JSON:
one act ``inform``), so linearisation, delexicalisation and synthetic errors are the same code for all of them;
several acts are linearised one after another. Slot names are normalised by :func:`norm_slot` (lower case,
``_`` and spaces removed: ``customer rating`` -> ``customerrating``, ``eatType`` -> ``eattype``). E2E's price and
rating values are found in outputs also in their usual surface variants (:func:`value_variants`: ``£20-25`` as
``20-25``, ``5 out of 5`` as ``5 stars``); EMNLP17 values have none, so EMNLP17 results are unchanged.

RDF triples (WebNLG; format ``triples``): each triple is one act :data:`TRIPLE_ACT` with the slots ``subject``,
``property``, ``object``. Subjects and objects are *entities*: their text is :func:`entity_text` (underscores as
spaces, double quotes removed, lower case: ``Alan_Bean`` -> ``alan bean``, ``"Aarhus Lufthavn A/S"`` -> ``aarhus
lufthavn a/s``), properties are split into words (:func:`property_words`: ``birthPlace`` -> ``birth place``). Every
distinct entity of the MR (same text = same entity) gets one placeholder ``X-e1``, ``X-e2``, ... numbered in order of
first appearance (subject before object, triple by triple), so an entity shared by two triples - the object of one,
the subject of the next - keeps one placeholder; the linearisation keeps each triple together and marks where it
starts: ``<triple> X-e1 birth place X-e2 <triple> X-e1 occupation X-e3``. All entities are delexicalised (none is
"unknown" or binary). In the output, *every* occurrence of an entity is replaced (not only the first, as for slot
values: an entity is often named twice), matched case-insensitively on tokens, longest entity first; when the entity
is not there verbatim, its near-variants (as for slot values) and then its usual surface forms
(:func:`entity_variants`: without a disambiguating parenthesis ``Isis (band)`` -> ``isis``, without the unit
``185.0 (centimetres)`` -> ``185.0``, a whole number without ``.0``, the place before a comma ``wheeler, texas`` ->
``wheeler``, ISO dates as written out ``1932-03-15`` -> ``15 march 1932`` / ``march 15 , 1932``, a generic last word
left out ``german language`` -> ``german``) are tried, and the
placeholder then relexicalises to what the output said. An entity found in none of these forms stays *lexical* in the
output (its placeholder is still in the MR): e.g. a value the text paraphrases (``United_States`` as "American"), a
number written in words, a date in a form not listed. :class:`Delex` ``triples`` lists each triple's
(subject placeholder, property words, object placeholder) for the data-to-text synthetic errors
(:mod:`qe.ratpred.synth`).

Outputs are lower-cased and tokenised with :func:`qe.core.tokenization.word_tokenize`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from qe.core.mr import MR_FORMATS, TRIPLE_ACT, parse_acts  # noqa: F401  (MR_FORMATS re-exported)
from qe.core.surface import (NUMBER_WORDS as _NUMBER_WORDS, entity_text, entity_variants, find_all as _find_all,  # noqa: F401
                             find_approx as _find_approx, new_token_variants as _new_token_variants, norm_slot,
                             property_words, tok_close as _tok_close, value_variants)
from qe.core.tokenization import word_tokenize

NULL = "<null>"
#: entity slots of a triple act (delexicalised); ``property`` is kept as words
ENTITY_SLOTS = ("subject", "object")
#: slots whose values are delexicalised (slot names after removing "_", as in :func:`norm_slot`)
DELEX_SLOTS = frozenset({"count", "addr", "area", "food", "price", "phone", "near", "pricerange", "postcode",
                         "address", "eattype", "type", "goodformeal", "name",
                         "customerrating"})  # E2E's rating (no EMNLP17 slot has this name)
#: values never delexicalised: unknown, don't care and binary values
KEEP_VALUES = frozenset({"none", "dontcare", "dont_care", "yes", "no", "yes or no", "?", ""})
#: values :func:`delexicalise_text` keeps (unknown, don't care, binary, BAGEL's anonymised ``X``)
TEXT_KEEP_VALUES = frozenset({"yes", "no", "none", "dontcare", "dont_care", "x"})


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (the paper tokenises and lower-cases outputs)."""
    return word_tokenize(text, lowercase=True)


def parse(mr: str, where: str = "<mr>", mr_format: str = "auto") -> list[tuple[str, list[tuple[str, str | None]]]]:
    """Parse an MR in any format (:data:`MR_FORMATS`) into acts ``[(act, [(slot, value), ...]), ...]``; act names
    lower-cased, slot names normalised (:func:`norm_slot`), values stripped and lower-cased; triples: subject and
    object as :func:`entity_text`, the property as :func:`property_words`."""
    out = []
    for act, slots in parse_acts(mr, mr_format, where):
        if act == TRIPLE_ACT:
            out.append((act, [(s, property_words(v) if s == "property" else entity_text(v)) for s, v in slots]))
        else:
            out.append((act.lower(), [(norm_slot(s), None if v is None else v.strip().lower()) for s, v in slots]))
    return out


def _slots(acts) -> list[tuple[str, str | None]]:
    return [sv for _, slots in acts for sv in slots]


def placeholder(slot: str) -> str:
    return f"X-{slot}"


@dataclass
class Delex:
    """Result of delexicalising one (MR, output) pair."""

    mr_tokens: list[str]  # linearised, delexicalised MR
    out_tokens: list[str]  # delexicalised output tokens
    #: slot -> list of value token lists (in MR order), used to relexicalise (triples: ``e1`` -> [entity tokens])
    values: dict[str, list[list[str]]] = field(default_factory=dict)
    #: triple MRs: (subject placeholder, property words, object placeholder) per triple, in MR order; else empty
    triples: list[tuple[str, str, str]] = field(default_factory=list)


def _delex_slots(slots):
    out, values = [], {}
    for s, v in slots:
        if v is not None and s in DELEX_SLOTS and v not in KEEP_VALUES:
            values.setdefault(s, []).append(tokenize(v))
            out.append((s, placeholder(s)))
        else:
            out.append((s, v))
    return out, values


def linearise_slots(act: str, slots: list[tuple[str, str | None]]) -> list[str]:
    if not slots:
        return [act, NULL, NULL]
    toks: list[str] = []
    for s, v in slots:
        toks.append(act)
        toks.append(s)
        if v is None:
            toks.append(NULL)
        elif v.startswith("X-"):
            toks.append(v)
        else:  # multi-word values become several tokens after the slot
            toks.extend(tokenize(v) or [NULL])
    return toks


def linearise_triple(slots: list[tuple[str, str | None]]) -> list[str]:
    """One RDF triple: ``<triple>`` then subject, property words, object (placeholders or value tokens)."""
    toks = [TRIPLE_ACT]
    for _, v in slots:
        toks.extend([v] if v is not None and v.startswith("X-") else (tokenize(v or "") or [NULL]))
    return toks


def linearise_acts(acts) -> list[str]:
    """Several acts: each act's triples, one act after another (an RDF triple: :func:`linearise_triple`)."""
    return [t for act, slots in acts
            for t in (linearise_triple(slots) if act == TRIPLE_ACT else linearise_slots(act, slots))]


def _delex_acts(acts):
    """(delexicalised acts, values, candidates): ``candidates`` lists what to look for in an output, in MR order, as
    (key, value text, index into values[key], entity?) - every delexicalised slot value (key = slot, the k-th value of
    that slot) and every distinct triple entity once (key ``e<n>``)."""
    values: dict[str, list[list[str]]] = {}
    cands: list[tuple[str, str, int, bool]] = []
    entities: dict[str, str] = {}
    out = []
    for act, slots in acts:
        if act == TRIPLE_ACT:
            dslots = []
            for s, v in slots:
                if s in ENTITY_SLOTS and v:
                    key = entities.get(v)
                    if key is None:
                        key = entities[v] = f"e{len(entities) + 1}"
                        values[key] = [tokenize(v)]
                        cands.append((key, v, 0, True))
                    dslots.append((s, placeholder(key)))
                else:
                    dslots.append((s, v))
            out.append((act, dslots))
            continue
        dslots, _ = _delex_slots(slots)
        for s, v in slots:  # the values _delex_slots replaced, in MR order (k-th value of its slot)
            if v is not None and s in DELEX_SLOTS and v not in KEEP_VALUES:
                cands.append((s, v, len(values.get(s, [])), False))
                values.setdefault(s, []).append(tokenize(v))
        out.append((act, dslots))
    return out, values, cands


def _triples_of(dacts) -> list[tuple[str, str, str]]:
    return [tuple(v or "" for _, v in slots) for act, slots in dacts if act == TRIPLE_ACT]


def linearise(mr: str, delex: bool = True, where: str = "<mr>", mr_format: str = "auto") -> list[str]:
    """MR -> "DA type - slot - value" token triples (see module docstring)."""
    acts = parse(mr, where, mr_format)
    if delex:
        acts, _, _ = _delex_acts(acts)
    return linearise_acts(acts)


def _find(tokens: list[str], sub: list[str], used: list[bool]) -> int:
    n = len(sub)
    for i in range(len(tokens) - n + 1):
        if tokens[i:i + n] == sub and not any(used[i:i + n]):
            return i
    return -1


def _match_entity(toks: list[str], vt: list[str], text: str, used: list[bool]) -> list[tuple[int, int]]:
    """Spans of an RDF entity in the output: every verbatim occurrence; else the first near-variant; else every
    occurrence of its first surface form (:func:`entity_variants`) that occurs."""
    hits = _find_all(toks, vt, used)
    if hits:
        return [(i, i + len(vt)) for i in hits]
    i, j = _find_approx(toks, vt, used)
    if i >= 0:
        return [(i, j)]
    for var in entity_variants(text):
        hits = _find_all(toks, var, used)
        if hits:
            return [(i, i + len(var)) for i in hits]
    return []


def delexicalise(mr: str, output: str | list[str], delex: bool = True, where: str = "<mr>",
                 mr_format: str = "auto") -> Delex:
    """Delexicalise the MR and the matching values in the output (module docstring)."""
    acts = parse(mr, where, mr_format)
    toks = tokenize(output) if isinstance(output, str) else list(output)
    if not delex:
        return Delex(linearise_acts(acts), toks, {}, _triples_of(acts))
    # cands: the k-th value of each slot in MR order (its index into values[slot]), every triple entity once
    dacts, values, cands = _delex_acts(acts)
    used = [False] * len(toks)
    spans = []  # (start, length, placeholder)
    # longer values are matched first so that a value contained in another one cannot take its place (as the
    # authors' delex_sent)
    for s, v, k, entity in sorted(cands, key=lambda c: len(c[1]), reverse=True):
        vt = tokenize(v)
        if not vt:
            continue
        if entity:  # every occurrence; relexicalised with the first occurrence's surface form
            found = _match_entity(toks, vt, v, used)
            if found and toks[found[0][0]:found[0][1]] != vt:
                values[s][k] = toks[found[0][0]:found[0][1]]
        else:
            i = _find(toks, vt, used)
            j = i + len(vt)
            if i < 0:  # not verbatim: near-variants / moved spaces; relexicalise with the surface form then
                i, j = _find_approx(toks, vt, used)
                for var in value_variants(v) if i < 0 else ():  # E2E prices / ratings: usual surface forms
                    i = _find(toks, var, used)
                    if i >= 0:
                        j = i + len(var)
                        break
                if i >= 0:
                    values[s][k] = toks[i:j]
            found = [(i, j)] if i >= 0 else []
        for i, j in found:
            for m in range(i, j):
                used[m] = True
            spans.append((i, j - i, placeholder(s)))
    out: list[str] = []
    starts = {i: (n, ph) for i, n, ph in spans}
    i = 0
    while i < len(toks):
        if i in starts:
            n, ph = starts[i]
            out.append(ph)
            i += n
        else:
            out.append(toks[i])
            i += 1
    return Delex(linearise_acts(dacts), out, values, _triples_of(dacts))


def delexicalise_text(text: str, mr: str, keep: frozenset[str] = TEXT_KEEP_VALUES, where: str = "<mr>",
                      mr_format: str = "auto") -> str:
    """``text`` lower-cased, every whole-word occurrence of each MR value (longest first) replaced by
    ``x-<slot>`` (slot names as :func:`norm_slot`); values in ``keep`` stay. Triple MRs: each entity's text
    (:func:`entity_text`) by ``x-e<n>`` (its placeholder's number), properties untouched. See the module docstring."""
    acts = parse(mr, where, mr_format)
    t = text.lower()
    vals = [(v, s) for act, slots in acts if act != TRIPLE_ACT for s, v in slots if v and v not in keep]
    _, _, cands = _delex_acts([a for a in acts if a[0] == TRIPLE_ACT])
    vals += [(v, key) for key, v, _, _ in cands if v not in keep]
    for v, s in sorted(vals, key=lambda x: -len(x[0])):
        t = re.sub(r"(?<!\w)" + re.escape(v) + r"(?!\w)", f"x-{s}", t)
    return t


def relexicalise(tokens: list[str], values: dict[str, list[list[str]]]) -> list[str]:
    """Replace ``X-<slot>`` placeholders by the slot's values (k-th placeholder -> k-th value)."""
    seen: dict[str, int] = {}
    out: list[str] = []
    for t in tokens:
        if t.startswith("X-") and t[2:] in values and values[t[2:]]:
            s = t[2:]
            k = seen.get(s, 0)
            vals = values[s]
            out.extend(vals[min(k, len(vals) - 1)])
            seen[s] = k + 1
        else:
            out.append(t)
    return out
