"""Training data for the learned aligner (:mod:`qe.content.aligner`): (query, output) pairs labelled
``realised`` / ``omitted`` / ``wrong``, generated from (MR, text) pairs whose MR lists what the text realises.

No label is written by hand. For each row (``mr``: what the text realises, ``ref``: the text, optionally
``orig_mr``: the MR it was written for, as in the cleaned E2E data) :func:`make_examples` yields:

* ``fact`` (realised): every fact of ``mr`` with the text - the MR says the text realises it, whether the matcher
  finds it (the lexicon's words, the value's own surface forms: the delexicalisation positions) or not (a paraphrase
  the lexicon misses, which is what the aligner is for). Facts of entity slots (names) are kept with probability
  ``p_entity``: they are many and easy;
* ``drop`` (omitted): one fact the matcher locates has its words deleted from the text (every span the matcher
  read it from, with the function words just before it: "with a cheap" -> ""), asked about the shortened text;
  skipped when the matcher still finds the fact in what is left;
* ``swap`` (wrong): one fact asked with another value of its slot (the text unchanged: it states the slot with its
  own value), or, for a fact the matcher found verbatim, the text's words replaced by another value's words (the
  MR unchanged). Skipped when the matcher reads the new value as compatible with the text ("cheap" fits both
  ``cheap`` and ``less than £20`` in the cleaned E2E data);
* ``add`` (omitted): a fact of a slot the MR does not hold, with a value seen in training, asked about the
  unchanged text - a fluent text that does not say it; skipped when the matcher finds the slot in the text;
* ``slot`` / ``slot_absent`` (realised / omitted): the slot's name alone ("price range"), asked whether the text
  talks about it at all (the additions question), for one slot the MR holds and one it does not;
* ``real`` (omitted / wrong): with ``orig_mr``, the facts of ``orig_mr`` that ``mr`` does not hold - the errors the
  text really makes (``wrong`` when ``mr`` holds the slot with another value). They are the cleaning's annotation
  of the training rows, so they are used only for rows of the training side of a split (:func:`fold_of`).

RatPred's synthetic errors (:mod:`qe.ratpred.synth`) act on single words of a delexicalised output and do not say
which fact they broke (only its ``drop_triple`` / ``wrong_value`` do, for RDF triples); the fact-level errors above
are their slot-value counterparts, located by the matcher's spans.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qe.content.lexicon import UNCHECKED_VALUES, norm_tokens, norm_value, slot_kind
from qe.core.mr import TRIPLE_ACT
from qe.core.surface import entity_text, norm_slot, property_words

LABELS = ("realised", "omitted", "wrong")
REALISED, OMITTED, WRONG = 0, 1, 2
KINDS = ("fact", "drop", "swap", "add", "slot", "slot_absent", "real")
#: function words deleted with a dropped span when they stand right before it (up to two: "in the [riverside]";
#: "serves [cheap]" keeps "serves")
_LEAD = frozenset({"a", "an", "the", "with", "of", "in", "its", "for", "at", "by"})


def query(slot: str, value: str | None = None) -> str:
    """The first segment of an aligner input: the slot's words and the value (``customer rating : 5 out of 5``), or
    the slot's words alone for the additions question (``price range``)."""
    words = property_words(slot).lower()
    return words if value is None else f"{words} : {value}"


def triple_query(prop: str, subject: str, obj: str) -> str:
    """The query of an RDF triple (:mod:`qe.content.aligner_triples`): ``subject words | property words | object
    words``. Here rather than there so that :mod:`qe.content.aligner` reads it without importing the label generator
    (which imports the aligner to measure it)."""
    return f"{entity_text(subject)} | {property_words(prop)} | {entity_text(obj)}"


def verdict_query(slot: str, value: str | None) -> str:
    """The query of a triple verdict of :class:`~qe.content.align.Matcher` (slot: the property; value:
    ``subject | object``)."""
    subj, _, obj = (value or "").partition(" | ")
    return triple_query(slot, subj, obj)


def output_text(text: str | Sequence[str]) -> str:
    """The second segment: the output as matching tokens (:func:`~qe.content.lexicon.norm_tokens`, joined), so that
    texts with deleted spans and untouched texts look alike."""
    return " ".join(text if not isinstance(text, str) else norm_tokens(text))


@dataclass(frozen=True)
class Example:
    query: str
    text: str
    label: int
    kind: str  #: one of :data:`KINDS`
    slot: str = ""

    @property
    def pair(self) -> tuple[str, str]:
        return (self.query, self.text)


def fold_of(keys: Iterable[str], folds: int, seed: int) -> dict[str, int]:
    """Fold of every distinct key (an MR string): a permutation of the sorted keys, cut in ``folds`` - the split
    ``experiments.content_e2e`` uses, so an aligner trained without some folds is measured on exactly those."""
    groups = sorted(set(keys))
    rng = np.random.default_rng(seed)
    return dict(zip(groups, (rng.permutation(len(groups)) % folds).tolist()))


def _facts(mr: str) -> list[tuple[str, str]]:
    from qe.content.align import Matcher

    return [(s, v) for a, s, v in Matcher.facts(mr) if a != TRIPLE_ACT and v is not None]


def checkable(value: str | None) -> bool:
    return value is not None and norm_value(value) not in UNCHECKED_VALUES


@dataclass
class Inventory:
    """What the training rows hold, per slot (normalised key): the slot as written, its kind (binary / category /
    entity, :func:`~qe.content.lexicon.slot_kind`) and its values as written, most frequent first. The aligner's
    export keeps it: wrong values and additions are searched among these values."""

    slots: dict[str, dict[str, Any]]

    @classmethod
    def from_rows(cls, rows: Iterable[dict]) -> "Inventory":
        values: dict[str, Counter] = {}
        names: dict[str, str] = {}
        verbatim: Counter = Counter()
        for r in rows:
            joined = f" {output_text(r['ref'])} "
            for s, v in _facts(r["mr"]):
                if not checkable(v):
                    continue
                key = norm_slot(s)
                names.setdefault(key, s)
                values.setdefault(key, Counter())[v.strip()] += 1
                verbatim[key] += f" {norm_value(v)} " in joined
        slots = {}
        for key, c in sorted(values.items()):
            kind = slot_kind(Counter({norm_value(v): n for v, n in c.items()}), 1,
                             verbatim[key] / max(1, sum(c.values())))
            slots[key] = {"name": names[key], "kind": kind, "values": [v for v, _ in c.most_common()]}
        return cls(slots)

    def to_dict(self) -> dict[str, Any]:
        return {"slots": self.slots}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Inventory":
        return cls({k: dict(v) for k, v in (d or {}).get("slots", {}).items()})

    def values(self, slot: str) -> list[str]:
        return list(self.slots.get(norm_slot(slot), {}).get("values", []))

    def kind(self, slot: str) -> str | None:
        return self.slots.get(norm_slot(slot), {}).get("kind")


def _replace_fact(mr_facts: list[tuple[str, str]], k: int, value: str) -> str:
    return ", ".join(f"{s}[{value if i == k else v}]" for i, (s, v) in enumerate(mr_facts))


def _mr(facts: list[tuple[str, str]]) -> str:
    return ", ".join(f"{s}[{v}]" for s, v in facts)


def _verdict(matcher, mr: str, text: str | list[str], slot: str, value: str):
    al = matcher.align(mr, text if isinstance(text, str) else " ".join(text))
    key, nv = norm_slot(slot), norm_value(value)
    return next((v for v in al.verdicts if norm_slot(v.slot) == key and norm_value(v.value) == nv), None)


def drop_spans(tokens: list[str], spans: list[tuple[int, int]]) -> list[str]:
    """``tokens`` without the ``spans`` and the function words (:data:`_LEAD`) right before each; a doubled
    punctuation mark left behind is merged."""
    gone = set()
    for i, j in spans:
        gone.update(range(i, j))
        k = i - 1
        while k >= 0 and k not in gone and tokens[k] in _LEAD and i - k <= 2:
            gone.add(k)
            k -= 1
    out: list[str] = []
    for i, t in enumerate(tokens):
        if i in gone:
            continue
        if out and not t.isalnum() and not out[-1].isalnum() and t == out[-1]:
            continue
        out.append(t)
    return out


def make_examples(rows: Iterable[dict], matcher, inventory: Inventory, rng: np.random.Generator, *,
                  synthetic: bool = True, real_errors: bool = True, slot_queries: bool = True,
                  p_entity: float = 0.25) -> list[Example]:
    """Labelled (query, output) pairs from rows ``{"mr", "ref"[, "orig_mr"]}`` (module docstring); ``matcher`` is a
    :class:`~qe.content.align.Matcher` (with a lexicon mined from the same training rows) that locates facts in
    texts and vetoes synthetic labels it contradicts; ``rng`` draws which fact each error acts on."""
    out: list[Example] = []
    for r in rows:
        facts = [(s, v) for s, v in _facts(r["mr"]) if checkable(v)]
        toks = norm_tokens(r["ref"])
        text = output_text(toks)
        if not facts or not toks:
            continue
        al = matcher.align(_mr(facts), r["ref"])
        verdicts = {(norm_slot(v.slot), norm_value(v.value)): v for v in al.verdicts}
        for s, v in facts:
            if inventory.kind(s) == "entity" and rng.random() >= p_entity:
                continue
            out.append(Example(query(s, v), text, REALISED, "fact", s))
        if synthetic:
            out += _drop(facts, toks, verdicts, matcher, rng)
            out += _swap(facts, toks, text, verdicts, matcher, inventory, rng, r["ref"])
            out += _add(facts, text, matcher, inventory, rng, r["ref"])
        if slot_queries:
            held = {norm_slot(s) for s, _ in facts}
            own = [s for s, _ in facts if inventory.kind(s) != "entity"]
            if own:
                s = own[int(rng.integers(len(own)))]
                out.append(Example(query(s), text, REALISED, "slot", s))
            absent = [d["name"] for k, d in inventory.slots.items() if k not in held and d["kind"] != "entity"]
            if absent:
                s = absent[int(rng.integers(len(absent)))]
                vd = _verdict(matcher, _mr(facts + [(s, inventory.values(s)[0])]), r["ref"], s, inventory.values(s)[0])
                if vd is not None and vd.status == "omitted":
                    out.append(Example(query(s), text, OMITTED, "slot_absent", s))
        if real_errors and r.get("orig_mr"):
            gold = {(norm_slot(s), norm_value(v)) for s, v in facts}
            gold_slots = {k for k, _ in gold}
            for s, v in _facts(r["orig_mr"]):
                if checkable(v) and (norm_slot(s), norm_value(v)) not in gold:
                    out.append(Example(query(s, v), text, WRONG if norm_slot(s) in gold_slots else OMITTED, "real", s))
    return out


def _drop(facts, toks, verdicts, matcher, rng) -> list[Example]:
    cands = [(s, v) for s, v in facts if (vd := verdicts.get((norm_slot(s), norm_value(v)))) is not None
             and vd.status == "realised" and vd.spans]
    if not cands:
        return []
    s, v = cands[int(rng.integers(len(cands)))]
    left = drop_spans(toks, verdicts[(norm_slot(s), norm_value(v))].spans)
    if len(left) < 2:
        return []
    vd = _verdict(matcher, _mr(facts), left, s, v)
    if vd is None or vd.status == "realised":
        return []
    return [Example(query(s, v), output_text(left), OMITTED, "drop", s)]


def _swap(facts, toks, text, verdicts, matcher, inventory, rng, ref) -> list[Example]:
    cands = [k for k, (s, v) in enumerate(facts) if len(inventory.values(s)) > 1]
    if not cands:
        return []
    k = cands[int(rng.integers(len(cands)))]
    s, v = facts[k]
    others = [u for u in inventory.values(s) if norm_value(u) != norm_value(v)]
    new = others[int(rng.integers(len(others)))]
    vd = verdicts.get((norm_slot(s), norm_value(v)))
    verbatim = vd is not None and vd.status == "realised" and vd.spans and \
        any(toks[i:j] == norm_value(v).split() for i, j in vd.spans)
    if verbatim and rng.random() < 0.5:  # the text states another value; the MR keeps its own
        out_toks: list[str] = []
        i = 0
        spans = sorted(sp for sp in vd.spans if toks[sp[0]:sp[1]] == norm_value(v).split())
        for a, b in spans:
            out_toks += toks[i:a] + norm_tokens(new)
            i = b
        out_toks += toks[i:]
        nv = _verdict(matcher, _mr(facts), out_toks, s, v)
        if nv is not None and nv.status != "realised":
            return [Example(query(s, v), output_text(out_toks), WRONG, "swap", s)]
        return []
    nv = _verdict(matcher, _replace_fact(facts, k, new), ref, s, new)
    if nv is None or nv.status == "realised":
        return []
    return [Example(query(s, new), text, WRONG, "swap", s)]


def _add(facts, text, matcher, inventory, rng, ref) -> list[Example]:
    held = {norm_slot(s) for s, _ in facts}
    absent = [d["name"] for key, d in inventory.slots.items() if key not in held and d["values"]]
    if not absent:
        return []
    s = absent[int(rng.integers(len(absent)))]
    vals = inventory.values(s)
    v = vals[int(rng.integers(len(vals)))]
    vd = _verdict(matcher, _mr(facts + [(s, v)]), ref, s, v)
    if vd is None or vd.status != "omitted":
        return []
    return [Example(query(s, v), text, OMITTED, "add", s)]




# ----------------------------------------------------------------------------------------------------- gold
def fact_set(mr: str) -> set[tuple[str, str]]:
    """The facts of an MR as (normalised slot, normalised value) pairs."""
    from qe.content.align import Matcher

    return {(norm_slot(s), norm_value(v)) for _, s, v in Matcher.facts(mr)}


def gold_counts(orig_mr: str, gold_mr: str, al) -> tuple[dict[str, Counter], bool]:
    """Compare an :class:`~qe.content.align.Alignment` of ``orig_mr`` with the MR its text realises (``gold_mr``).
    Per slot: ``omit_tp/fp/fn`` (a fact of ``orig_mr`` the engine says omitted or wrong, against the facts
    ``gold_mr`` does not hold) and ``add_tp/fp/fn`` (the (slot, value) pairs the engine reads that ``orig_mr`` does
    not hold, against those ``gold_mr`` holds and ``orig_mr`` does not); and whether the MR the engine reads is
    exactly ``gold_mr`` (docs/results/content-log.md)."""
    orig, gold = fact_set(orig_mr), fact_set(gold_mr)
    pred_omit = {(norm_slot(v.slot), norm_value(v.value)) for v in al.verdicts if v.status in ("omitted", "wrong")}
    realised = {(norm_slot(s), norm_value(v)) for s, vals in al.realised_mr().items() for v in vals}
    pred_add = realised - orig
    gold_omit, gold_add = orig - gold, gold - orig
    per: dict[str, Counter] = {}
    for f in orig:
        c = per.setdefault(f[0], Counter())
        if f in gold_omit and f in pred_omit:
            c["omit_tp"] += 1
        elif f in pred_omit:
            c["omit_fp"] += 1
        elif f in gold_omit:
            c["omit_fn"] += 1
    for f in gold_add | pred_add:
        c = per.setdefault(f[0], Counter())
        c["add_tp" if f in gold_add and f in pred_add else "add_fp" if f in pred_add else "add_fn"] += 1
    return per, realised == gold


def f1(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


__all__ = ["LABELS", "REALISED", "OMITTED", "WRONG", "KINDS", "Example", "Inventory", "fold_of", "make_examples",
           "query", "output_text", "drop_spans", "checkable", "fact_set", "gold_counts", "f1"]
