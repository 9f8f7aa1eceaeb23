"""Precision of the content check on faithful text, every domain, and leave-one-domain-out (issue 56, items 3-4).

    OMP_NUM_THREADS=1 python -m experiments.content_precision --data-dir ../shared/data --lodo \\
        --out docs/results/data/content_precision.csv
    python -m experiments.content_precision --domains sfres sfhot --lexicon none      # the rules, two domains

A faithful reference realises every fact of its MR and says nothing else, so whatever ``coverage`` flags on it is a
false alarm. Per domain (:data:`DOMAINS`) and per setting it reports: references, facts, **invented facts per 100
references** (``hallucinated``), **facts not ``realised`` per 100 facts** (split into ``omitted`` / ``wrong``) and
the share of references with no error at all (nothing omitted, wrong, invented or repeated). Settings: ``default``
(``lexicon=auto``, what a user gets), ``rules`` (``lexicon=none``), ``file`` (``--lexicon FILE``) and, with
``--lodo``, ``lodo``: a lexicon mined with ``qe content mine`` from the domain's own training pairs only (the command
is recorded in the row), scoring the domain's held-out references.

Domains and the references read:

* ``e2e``: the cleaned E2E *development* references with the MR each realises (column ``mr``; ``orig_mr`` is what
  they were written for). LODO: 5 folds of ``orig_mr`` groups (:func:`qe.content.aligner_data.fold_of`, seed 1, the
  split of ``experiments.content_e2e``), mined on 4, scored on the 5th. The default lexicon (``e2e``) is mined from
  all of these references, so the ``default`` E2E row is in-sample for it; the LODO row is not.
  ``e2e-test`` (opt-in, read-only): the cleaned test references, scored and never mined, for a precision row only.
* ``sfres`` / ``sfhot``: SF Restaurant / Hotel *test* references (:func:`qe.data.references.sf_references`), acts
  :data:`SF_ACTS`: ``inform``, ``inform_only_match`` and ``inform_count`` assert their slots of one entity (or a
  count), which a faithful text states. Left out: ``inform_no_match`` (its slots are stated under a negated
  existential, "there are no hotels that allow dogs", so a binary slot reads negated: a question of act semantics,
  not of finding words), ``confirm`` / ``select`` / ``request`` (questions; ``select`` offers two values),
  ``reqmore`` / ``goodbye`` (no slots). LODO: mined from the domain's training references (every act, as the
  ``sf`` lexicon is), scored on its test references.
* ``sfres-acts`` / ``sfhot-acts``: the same test sets, every act that has a slot (``request``, ``select``,
  ``confirm``, ``inform_no_match`` too): what a user of a dialogue system meets. The check reads what each act
  means (:data:`qe.content.align.QUESTION_ACTS`, :data:`qe.content.align.NO_MATCH_ACTS`). LODO as above.
* ``bagel``: BAGEL's 404 references, *relexicalised*: the reader (:func:`qe.data.references.bagel_references`) keeps
  them delexicalised (``X`` for names, near, addresses, quoted areas) with abstract MRs, as the rated EMNLP17 outputs
  are. Here each ``[slot+X]X`` is filled with the next value of that slot in ``FULL_DA`` (the abstract DA's ``X``
  positions, in order), the alignment brackets are stripped, and the MR is ``FULL_DA`` (case kept). Its ``type=
  placetoeat`` is a fact no reference words (it is counted; see the causes). LODO: 5 folds of abstract DAs (seed 1).
* ``webnlg``: WebNLG 2020 *development* references marked ``good``. LODO: mined from the training references
  marked ``good`` (the ``webnlg`` lexicon's pairs, :func:`qe.content.scorer.triple_pairs`), scored on dev.

Recall beside precision, on what can be labelled:

* the E2E slot gold (``experiments.content_e2e.evaluate``: omission and addition F1, cross-fitted; ``default`` is
  its ``matcher`` engine with the settings of the published figure, ``--min-count 10``; ``rules`` its ``rules``
  engine; ``lodo`` its matcher with the LODO fold lexicons) and the triple fact gold ``wrong`` F1
  (``experiments.triple_fact_gold.evaluate``);
* **synthetic swaps and deletions** (seeded, ``--seed``): in each reference one fact, drawn among those whose value
  is written verbatim (case-insensitive, on word boundaries, every occurrence) and whose value string neither holds
  nor is held by another value of the MR, has its value (a) swapped for another value of the same slot seen in the
  domain (not one of the MR's, not one already in the text, not one of :data:`SAME_MEANING` with it) - found when the
  check does not call the fact ``realised``; (b) deleted - found when it is ``omitted`` or ``wrong``. Binary
  (yes/no/true/false) and unchecked (``dontcare``, ``none``) facts are not edited. Triples: the object is the value
  (:func:`qe.core.surface.entity_text`), the property the slot.

The **naive exact-string check** beside every figure: a fact is realised iff its value string (case-insensitive,
white space squeezed, on word boundaries) is in the text; it never invents facts. It cannot judge binary facts or
facts without a value: those are left out of its denominator (``naive_facts`` counts what it judged), and
``not_realised_nonbinary_per_100_facts`` gives ``coverage`` on the same facts, for a like-for-like comparison.

Causes: every invented fact and every fact not ``realised`` gets a heuristic cause (:func:`invented_cause`,
:func:`not_realised_cause`), counted per (setting, domain) in the examples JSON with the first ``--examples`` of each
kind and the first :data:`PER_CAUSE` of each cause. That JSON names each example by where it is in the data
(``file:line`` / ``member#id``) with the slot, the value and the words that triggered it, and holds no MR or
reference text: the project stores no corpus data (the datasets' licences). ``--examples-text PATH`` also writes the
examples with their MR and reference to PATH, to read them (keep it out of the repository). Nothing here reads a
rating or the E2E test references for anything that informs a rule.

**Read by hand.** Invented facts on faithful references are not all false: a reference may state what its MR lacks.
The labels of ``experiments/gold/*_invented_labels.jsonl`` (:data:`LABEL_FILES`: where, the words read, ``stated`` /
``reference_error`` / ``false_alarm``, a note; written by reading the references, never from a rating) are matched to
each invented fact by where it is and the words read: ``invented_hand_labelled`` counts those with a label, and
``false_alarms_per_100_refs_hand`` gives the ``false_alarm`` ones per 100 references where *every* invented fact of
the row has a label (blank otherwise). The labels were first written for the default rows; the facts only the
leave-one-domain-out lexicons invent (E2E's folds, SF, BAGEL) were read on 2026-12-07 (their notes end "[LODO ...]").
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

DOMAINS = ("e2e", "sfres", "sfhot", "sfres-acts", "sfhot-acts", "bagel", "webnlg")
OPTIONAL_DOMAINS = ("e2e-test",)
#: the SF acts kept (module docstring says why the others are left out)
SF_ACTS = ("inform", "inform_only_match", "inform_count")
SF_NAMES = {"sfres": "SFRES", "sfhot": "SFHOT"}
#: the SF test references of *every* act that has a slot (questions, offers, no match and confirmations too): what a
#: user of a dialogue system meets (module docstring)
SF_EVERY_ACT = {"sfres-acts": "sfres", "sfhot-acts": "sfhot"}
#: values that are one scale point written two ways: a swap between them is no change of meaning (E2E's price and
#: rating scales as the cleaned data and the E2E slot-error script read them)
SAME_MEANING: dict[str, list[frozenset[str]]] = {
    "pricerange": [frozenset({"cheap", "less than £20"}), frozenset({"moderate", "£20-25"}),
                   frozenset({"high", "more than £30"})],
    "customerrating": [frozenset({"low", "1 out of 5"}), frozenset({"average", "3 out of 5"}),
                       frozenset({"high", "5 out of 5"})],
}
BINARY_VALUES = frozenset({"yes", "no", "true", "false"})
FIGURES = ("references", "facts", "invented", "invented_per_100_refs", "invented_hand_labelled",
           "false_alarms_per_100_refs_hand", "not_realised_per_100_facts",
           "omitted_per_100_facts", "wrong_per_100_facts", "refs_without_error_pct", "binary_facts",
           "not_realised_nonbinary_per_100_facts", "swaps", "swaps_found_pct", "swaps_wrong_pct", "deletions",
           "deletions_found_pct", "naive_facts", "naive_not_realised_per_100_facts", "naive_refs_without_error_pct",
           "naive_swaps_found_pct", "naive_deletions_found_pct")
COLUMNS = ("setting", "domain", *FIGURES, "slot_gold_omission_f1", "slot_gold_addition_f1", "triple_gold_wrong_f1",
           "lexicon", "mine_command", "seconds", "command", "machine", "commit")
#: the settings of ``experiments.content_e2e``'s published matcher figure (``--min-count 10``, its other defaults)
E2E_GOLD_MINING = {"min_count": 10, "min_precision": 0.9, "min_share": 0.1, "alias_lift": 4.0, "scale_aliases": True}


@dataclass
class Item:
    """One faithful (MR, reference) pair; ``group`` keeps references of one MR in one fold."""

    mr: str
    ref: str
    where: str
    group: str = ""


@dataclass
class Edit:
    """A reference with one fact's value swapped or deleted."""

    mr: str
    text: str
    slot: str
    value: str  #: the fact's value as the MR writes it (triples: ``subject | object``)
    kind: str  #: swap | deletion
    old: str  #: the words replaced
    new: str  #: what replaced them ("" for a deletion)
    where: str


# ------------------------------------------------------------------------------------------------- the facts
def facts_of(mr: str) -> list[tuple[str, str | None, str | None]]:
    """``[(slot, value as the MR writes it, the words to look for), ...]``: for triples the property, ``subject |
    object`` and the object as text (:func:`qe.core.surface.entity_text`); else the slot, its value and the value
    without quotes."""
    from qe.content.align import Matcher
    from qe.core.mr import TRIPLE_ACT
    from qe.core.surface import entity_text

    out = []
    for act, slot, value in Matcher.facts(mr):
        if value is None:
            out.append((slot, None, None))
        elif act == TRIPLE_ACT:  # entity_text without its lower-casing: a swap writes the object as cased
            obj = value.split(" | ", 1)[1]
            words = " ".join(obj.replace("_", " ").replace('"', " ").replace("(", " (").split())
            assert words.lower() == entity_text(obj), (words, entity_text(obj))
            out.append((slot, value, words))
        else:
            out.append((slot, value, " ".join(value.strip().strip("'\"").split())))
    return out


def fact_kind(value: str | None, words: str | None) -> str:
    """``unchecked`` (what ``coverage`` leaves out: ``dontcare``, ``none``), ``binary`` (yes / no / true / false),
    ``novalue`` (a slot without value) or ``value``."""
    from qe.content.lexicon import UNCHECKED_VALUES, norm_value

    if value is None:
        return "novalue"
    if norm_value(words) in UNCHECKED_VALUES or norm_value(value) in UNCHECKED_VALUES:
        return "unchecked"
    if (words or "").strip().lower() in BINARY_VALUES:
        return "binary"
    return "value"


def _pattern(words: str) -> re.Pattern:
    return re.compile(r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words.split()) + r"(?!\w)", re.IGNORECASE)


def naive_found(words: str, text: str) -> bool:
    """The naive exact-string check: the value's words in the text, case-insensitive, white space squeezed, on word
    boundaries."""
    return bool(words.strip()) and _pattern(words).search(" ".join(text.lower().split())) is not None


def naive_verdicts(mr: str, text: str) -> list[tuple[str, str | None, str]]:
    """The naive check's verdict per fact: ``realised`` / ``omitted`` for values, ``unjudged`` for binary facts and
    slots without value (it cannot read polarity or a slot's name), ``unchecked`` as ``coverage`` has them."""
    out = []
    for slot, value, words in facts_of(mr):
        kind = fact_kind(value, words)
        if kind == "unchecked":
            out.append((slot, value, "unchecked"))
        elif kind in ("binary", "novalue"):
            out.append((slot, value, "unjudged"))
        else:
            out.append((slot, value, "realised" if naive_found(words, text) else "omitted"))
    return out


def verdict_of(detail: dict, slot: str, value: str | None, nth: int = 0) -> dict | None:
    """The ``nth`` verdict of a fact in a ``details()`` row (verdicts name the slot and value as the MR writes
    them)."""
    hits = [v for v in detail["verdicts"] if v["slot"] == slot and v.get("value") == value]
    return hits[nth] if nth < len(hits) else None


# ------------------------------------------------------------------------------------------------- the data
def e2e_items(split: str, data_dir: str | None) -> list[Item]:
    from qe.data.e2e import e2e_slot_gold

    return [Item(r["mr"], r["ref"], f"e2e/{split}:{r['line']}", r["orig_mr"]) for r in e2e_slot_gold(split, data_dir)]


def sf_items(domain: str, split: str, data_dir: str | None, acts: tuple[str, ...] | None = SF_ACTS,
             with_slots: bool = True) -> list[Item]:
    """SF references of ``split``: the acts ``acts`` (None: every act) whose MR has a slot (``with_slots=False``:
    also those without: ``goodbye()``, as the miner reads them)."""
    from qe.data.references import sf_references

    out = []
    for r in sf_references(SF_NAMES[domain], split, data_dir):
        act = r.mr.split("(", 1)[0]
        if (acts is not None and act not in acts) or (with_slots and r.mr.endswith("()")):
            continue
        out.append(Item(r.mr, r.ref, r.source, r.mr))
    return out


def relexicalise_bagel(full_da: str, abstract_da: str, tagged: str, where: str) -> tuple[str, str]:
    """``(MR, text)`` of one BAGEL instance: the text with each ``[slot+X]X`` filled with the next ``FULL_DA`` value
    of that slot among the abstract DA's ``X`` positions, the alignment brackets stripped; the MR is ``FULL_DA``."""
    from qe.core.mr import parse_mr

    _, full = parse_mr(full_da, where)
    _, abstract = parse_mr(abstract_da, where)
    if [s for s, _ in full] != [s for s, _ in abstract]:
        raise ValueError(f"{where}: FULL_DA and ABSTRACT_DA hold other slots ({full_da!r} / {abstract_da!r})")
    queue: dict[str, list[str]] = defaultdict(list)
    for (slot, v), (_, a) in zip(full, abstract):
        if a is not None and re.fullmatch(r"X\d*", a.strip("'\"")):
            queue[slot].append(v or "")
    parts = re.split(r"(\[[^\]]*\])", tagged)
    out, slot_x, used = [], None, {}
    for p in parts:
        if p.startswith("[") and p.endswith("]"):
            tag = p[1:-1]
            slot_x = tag.split("+", 1)[0] if tag.endswith("+X") else None
            continue
        if slot_x is not None and re.search(r"\bX\b", p):
            if queue[slot_x]:
                used[slot_x] = queue[slot_x].pop(0)
            elif slot_x not in used:
                raise ValueError(f"{where}: more [{slot_x}+X] in the reference than X values of {slot_x} in FULL_DA")
            # a name said twice: the last one again; "the X" for "The Bakers" is "The Bakers"
            pat = r"(?:\b[Tt]he\s+)?\bX\b" if used[slot_x].lower().startswith("the ") else r"\bX\b"
            p = re.sub(pat, lambda _: used[slot_x], p, count=1)
            if out and pat.startswith("(?:") and re.search(r"\b[Tt]he\s*$", out[-1]) and p.startswith(used[slot_x]):
                out[-1] = re.sub(r"\b[Tt]he\s*$", "", out[-1])
        out.append(p)
    text = " ".join("".join(out).split())
    if re.search(r"\bX\b", text):
        raise ValueError(f"{where}: an X left in the relexicalised reference {text!r}")
    return full_da, text


def bagel_items(data_dir: str | None) -> list[Item]:
    from qe.core.paths import require, resolve_data_dir
    from qe.data.references import BAGEL_FILE

    path = require(resolve_data_dir(data_dir) / BAGEL_FILE, "BAGEL ACL10-inform-training.txt")
    out: list[Item] = []
    full = abstract = None
    for ln, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if line.startswith("FULL_DA"):
            full = line.split("=", 1)[1].strip()
        elif line.startswith("ABSTRACT_DA"):
            abstract = line.split("=", 1)[1].strip()
        elif line.startswith("->"):
            m = re.match(r'->\s*"(.*)";\s*$', line)
            if not m or full is None or abstract is None:
                raise ValueError(f"{path}:{ln}: a reference line without FULL_DA / ABSTRACT_DA before it, or not "
                                 '-> "...";')
            mr, text = relexicalise_bagel(full, abstract, m.group(1), f"{path}:{ln}")
            out.append(Item(mr, text, f"{BAGEL_FILE}:{ln}", abstract))
            full = abstract = None
    return out


def webnlg_items(split: str, data_dir: str | None) -> list[Item]:
    from qe.data.webnlg import webnlg_entries

    return [Item(e.mr, x.text, f"webnlg2020/{e.member}#{e.eid}", e.mr)
            for e in webnlg_entries(split, data_dir) for x in e.lexes if x.comment == "good"]


def domain_items(domain: str, data_dir: str | None) -> list[Item]:
    """The faithful references a domain is measured on (module docstring)."""
    if domain == "e2e":
        return e2e_items("dev", data_dir)
    if domain == "e2e-test":
        return e2e_items("test", data_dir)
    if domain in SF_NAMES:
        return sf_items(domain, "test", data_dir)
    if domain in SF_EVERY_ACT:
        return sf_items(SF_EVERY_ACT[domain], "test", data_dir, acts=None)
    if domain == "bagel":
        return bagel_items(data_dir)
    if domain == "webnlg":
        return webnlg_items("dev", data_dir)
    raise ValueError(f"unknown domain {domain!r}; choose from {', '.join(DOMAINS + OPTIONAL_DOMAINS)}")


# ------------------------------------------------------------------------------------------ swaps and deletions
def slot_values(items: list[Item]) -> dict[str, list[str]]:
    """Per slot (triples: property), the values' words seen in a domain's references, sorted."""
    seen: dict[str, set[str]] = defaultdict(set)
    for it in items:
        for slot, value, words in facts_of(it.mr):
            if fact_kind(value, words) == "value":
                seen[slot].add(words)
    return {k: sorted(v) for k, v in seen.items()}


def domain_values(items: list[Item]) -> dict[str, set[str]]:
    """Normalised slot -> the normalised values a domain's MRs hold (what a domain "has", for the causes)."""
    from qe.content.lexicon import norm_value
    from qe.core.surface import norm_slot

    out: dict[str, set[str]] = defaultdict(set)
    for it in items:
        for slot, value, _ in facts_of(it.mr):
            out[norm_slot(slot)].add(norm_value(value))
    return dict(out)


def _same_meaning(slot: str, a: str, b: str) -> bool:
    key = slot.lower().replace(" ", "").replace("_", "")
    return any(a.lower() in g and b.lower() in g for g in SAME_MEANING.get(key, []))


def _overlaps(a: str, b: str) -> bool:
    a, b = f" {a.lower()} ", f" {b.lower()} "
    return a in b or b in a


def editable(mr: str, text: str) -> list[tuple[int, str, str, str]]:
    """``[(fact index, slot, value, words), ...]``: the facts whose value is written verbatim and whose words
    neither hold nor are held by another fact's value (or, for triples, a subject)."""
    facts = facts_of(mr)
    others = [w for _, _, w in facts if w]
    subjects = [v.split(" | ", 1)[0].replace("_", " ") for _, v, w in facts if v and " | " in v]
    out = []
    for i, (slot, value, words) in enumerate(facts):
        if fact_kind(value, words) != "value" or not naive_found(words, text):
            continue
        rest = [w for j, w in enumerate(others) if j != i and w.lower() != words.lower()] + subjects
        if any(_overlaps(words, o) for o in rest) or sum(w.lower() == words.lower() for w in others) > 1:
            continue
        out.append((i, slot, value, words))
    return out


def _replace(text: str, words: str, new: str) -> str:
    """``text`` (white space squeezed) with every verbatim occurrence of ``words`` replaced by ``new``."""
    got = _pattern(words).sub(lambda _: new, " ".join(text.split()))
    got = re.sub(r"\s+([,.;:!?])", r"\1", " ".join(got.split()))
    return re.sub(r"([,;:])(?:\s*[,;:])+", r"\1", got)


def make_edits(items: list[Item], values: dict[str, list[str]], seed: int) -> list[Edit]:
    """One swap and one deletion per reference where a fact can be edited (module docstring), drawn with
    ``random.Random(seed)``: the draws depend on the items' order only."""
    rng = random.Random(seed)
    out: list[Edit] = []
    for it in items:
        cands = editable(it.mr, it.ref)
        if not cands:
            continue
        mr_words = {w.lower() for _, _, w in facts_of(it.mr) if w}
        low = " ".join(it.ref.lower().split())
        swappable = []
        for i, slot, value, words in cands:
            alts = [v for v in values.get(slot, []) if v.lower() not in mr_words and not _overlaps(v, words)
                    and not _same_meaning(slot, v, words) and not naive_found(v, low)]
            if alts:
                swappable.append((i, slot, value, words, alts))
        if swappable:
            i, slot, value, words, alts = swappable[rng.randrange(len(swappable))]
            new = alts[rng.randrange(len(alts))]
            out.append(Edit(it.mr, _replace(it.ref, words, new), slot, value, "swap", words, new, it.where))
        i, slot, value, words = cands[rng.randrange(len(cands))]
        out.append(Edit(it.mr, _replace(it.ref, words, ""), slot, value, "deletion", words, "", it.where))
    return out


# ------------------------------------------------------------------------------------------------ the causes
def _said_tokens(said: str | None) -> list[str]:
    from qe.content.lexicon import norm_tokens

    return norm_tokens(said or "")


def invented_cause(h: dict, mr: str, domain_values: dict[str, set[str]]) -> str:
    """A heuristic cause of an invented fact on a faithful text, with the slot in brackets (what the matcher's
    engineers look at first). ``domain_values``: normalised slot -> the normalised values the domain's MRs hold.
    The first rule that fits, in this order: the triples' kinds; a slot the domain never has; words that are all
    function words or one letter; a pattern with ``and`` / ``with`` / ``or`` / ``,`` inside (two slots' words); words
    of one of the MR's values; a value the domain never has for the slot (a foreign lexicon's); a pattern ending on a
    function word; a second value of a slot the MR has; another slot's value."""
    from qe.content.lexicon import content_word, norm_tokens, norm_value
    from qe.core.surface import norm_slot

    if h.get("kind") == "words":
        return "triples: a stretch of words no triple explains"
    if h.get("slot") is None:
        return ("triples: a number the MR does not hold" if re.search(r"\d", str(h.get("value", "")))
                else "triples: other")
    said = _said_tokens(h.get("said"))
    facts = facts_of(mr)
    slot = norm_slot(h["slot"])
    tag = f" [{h['slot']}]"
    mr_slots = {norm_slot(s) for s, _, _ in facts}
    value_words = {t for _, _, w in facts if w for t in norm_tokens(w)}
    if slot not in domain_values:
        return "a slot the domain does not have (another domain's lexicon)" + tag
    if said and not any(content_word(t) and len(t) > 1 for t in said):
        return "function words or a single letter only" + tag
    if len(said) > 1 and any(t in ("and", "with", ",", "or") for t in said[1:-1]):
        return "a pattern that spans two slots' words" + tag
    if said and set(said) <= value_words:
        return "words of one of the MR's values, read again" + tag
    if norm_value(str(h.get("value", ""))) not in domain_values[slot]:
        return "a value the domain never has for this slot (another domain's lexicon)" + tag
    if len(said) > 1 and not content_word(said[-1]):
        return "a pattern that ends on a function word" + tag
    if slot in mr_slots:
        return "a second value of a slot the MR has" + tag
    return "a slot the MR does not have, from words of no MR value" + tag


def not_realised_cause(v: dict, words: str | None, kind: str, text: str, mr: str) -> str:
    """A heuristic cause of a fact of a faithful text that ``coverage`` does not call ``realised``, with the slot in
    brackets."""
    from qe.content.lexicon import norm_tokens
    from qe.core.surface import norm_slot

    tag = f" [{v['slot']}]"
    if kind == "binary":
        return f"binary value {(words or '').lower()}: {v['status']}" + tag
    if kind == "novalue":
        return f"slot without value: {v['status']}" + tag
    if words and "," in words:
        return f"a comma inside the value: {v['status']}" + tag
    if words and " or " in f" {words.lower()} ":
        return f"a value of alternatives ('x or y'): {v['status']}" + tag
    verbatim = bool(words) and naive_found(words, text)
    if v["status"] == "wrong":
        said = set(_said_tokens(v.get("said")))
        other = {t for s, _, w in facts_of(mr) if w and norm_slot(s) != norm_slot(v["slot"]) for t in norm_tokens(w)}
        if said & other:
            return "wrong: another fact's words attached to this slot" + tag
        return ("wrong: written verbatim, another reading won" if verbatim
                else "wrong: a paraphrase read as another value") + tag
    if verbatim:
        return "omitted though written verbatim" + tag
    return "omitted: paraphrased (the naive check misses it too)" + tag


# ------------------------------------------------------------------------------------------------- measuring
#: the hand labels of invented facts on faithful references (module docstring, "Read by hand")
LABEL_FILES = tuple(sorted((Path(__file__).resolve().parent / "gold").glob("*_invented_labels.jsonl")))


@lru_cache(maxsize=1)
def invented_labels() -> dict[tuple[str, str], str]:
    """(where, words read) -> label, from :data:`LABEL_FILES` (one entry may hold several references: WebNLG's
    ``member#id``; the same words read there must then have one label)."""
    out: dict[tuple[str, str], str] = {}
    for path in LABEL_FILES:
        for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                r = json.loads(line)
                if r.get("label") not in ("stated", "reference_error", "false_alarm"):
                    raise ValueError(f"{path}:{k}: field 'label' must be stated, reference_error or false_alarm")
                key = (r["where"], r["said"])
                if out.get(key, r["label"]) != r["label"]:
                    raise ValueError(f"{path}:{k}: {key} labelled both {out[key]} and {r['label']}")
                out[key] = r["label"]
    return out


@dataclass
class Tally:
    """What one (setting, domain) counts; :meth:`figures` turns it into the CSV's figures."""

    refs: int = 0
    c: Counter = field(default_factory=Counter)
    invented_causes: Counter = field(default_factory=Counter)
    not_realised_causes: Counter = field(default_factory=Counter)
    naive_missed: Counter = field(default_factory=Counter)  #: slot -> facts the naive check does not find
    by_slot: Counter = field(default_factory=Counter)  #: the causes with their slot ("... [slot]")
    by_cause: dict = field(default_factory=dict)  #: cause -> its first few examples (invented and not realised)
    invented_examples: list = field(default_factory=list)
    not_realised_examples: list = field(default_factory=list)

    def figures(self) -> dict[str, float | int | str]:
        c = self.c

        def per(a: float, b: float, k: float = 100.0) -> float | str:
            return round(k * a / b, 2) if b else ""

        return {"references": self.refs, "facts": c["facts"], "invented": c["invented"],
                "invented_per_100_refs": per(c["invented"], self.refs),
                "invented_hand_labelled": c["invented_labelled"],
                "false_alarms_per_100_refs_hand": per(c["invented_false"], self.refs)
                if c["invented_labelled"] == c["invented"] else "",
                "not_realised_per_100_facts": per(c["omitted"] + c["wrong"], c["facts"]),
                "omitted_per_100_facts": per(c["omitted"], c["facts"]),
                "wrong_per_100_facts": per(c["wrong"], c["facts"]),
                "refs_without_error_pct": per(c["clean_refs"], self.refs),
                "binary_facts": c["binary"],
                "not_realised_nonbinary_per_100_facts": per(c["nb_not_realised"], c["naive_facts"]),
                "swaps": c["swap"], "swaps_found_pct": per(c["swap_found"], c["swap"]),
                "swaps_wrong_pct": per(c["swap_wrong"], c["swap"]),
                "deletions": c["deletion"], "deletions_found_pct": per(c["deletion_found"], c["deletion"]),
                "naive_facts": c["naive_facts"],
                "naive_not_realised_per_100_facts": per(c["naive_not_realised"], c["naive_facts"]),
                "naive_refs_without_error_pct": per(c["naive_clean_refs"], self.refs),
                "naive_swaps_found_pct": per(c["naive_swap_found"], c["swap"]),
                "naive_deletions_found_pct": per(c["naive_deletion_found"], c["deletion"])}


#: examples kept per cause (beside the first ``--examples`` of each kind)
PER_CAUSE = 5


def _keep(store: dict, key: str, example: dict, n: int) -> None:
    lst = store.setdefault(key, [])
    if len(lst) < n:
        lst.append(example)


def _untagged(cause: str) -> str:
    return re.sub(r" \[[^\]]*\]$", "", cause)


def tally_faithful(t: Tally, items: list[Item], details: list[dict], domain_values: dict[str, set[str]],
                   examples: int = 20) -> None:
    """Count one chunk of faithful references' ``details()`` rows (and the naive check on them) into ``t``."""
    for it, d in zip(items, details):
        t.refs += 1
        k = d["counts"]
        t.c["facts"] += k["facts"]
        t.c["omitted"] += k["omitted"]
        t.c["wrong"] += k["wrong"]
        t.c["invented"] += k["hallucinated"]
        t.c["clean_refs"] += (k["omitted"] + k["wrong"] + k["hallucinated"] + k["repeated"]) == 0
        naive_bad = 0
        seen: Counter = Counter()
        for slot, value, words in facts_of(it.mr):
            kind = fact_kind(value, words)
            v = verdict_of(d, slot, value, seen[(slot, value)])
            seen[(slot, value)] += 1
            if kind == "unchecked" or v is None:
                continue
            if kind == "binary":
                t.c["binary"] += 1
            if v["status"] in ("omitted", "wrong"):
                cause = not_realised_cause(v, words, kind, it.ref, it.mr)
                t.not_realised_causes[_untagged(cause)] += 1
                t.by_slot["not realised: " + cause] += 1
                ex = {"where": it.where, "mr": it.mr, "reference": it.ref, "slot": slot, "value": value,
                      "status": v["status"], "said": v.get("said"), "cause": cause}
                if len(t.not_realised_examples) < examples:
                    t.not_realised_examples.append(ex)
                _keep(t.by_cause, "not realised: " + _untagged(cause), ex, PER_CAUSE)
            if kind == "value":
                t.c["naive_facts"] += 1
                t.c["nb_not_realised"] += v["status"] in ("omitted", "wrong")
                if not naive_found(words, it.ref):
                    t.c["naive_not_realised"] += 1
                    t.naive_missed[slot] += 1
                    naive_bad += 1
        t.c["naive_clean_refs"] += naive_bad == 0
        for h in d["hallucinated"]:
            label = invented_labels().get((it.where, h.get("said")))
            t.c["invented_labelled"] += label is not None
            t.c["invented_false"] += label == "false_alarm"
            cause = invented_cause(h, it.mr, domain_values)
            t.invented_causes[_untagged(cause)] += 1
            t.by_slot["invented: " + cause] += 1
            ex = {"where": it.where, "mr": it.mr, "reference": it.ref, "invented_slot": h.get("slot"),
                  "invented_value": h.get("value"), "said": h.get("said"), "kind": h.get("kind"), "cause": cause}
            if len(t.invented_examples) < examples:
                t.invented_examples.append(ex)
            _keep(t.by_cause, "invented: " + _untagged(cause), ex, PER_CAUSE)


def tally_edits(t: Tally, edits: list[Edit], details: list[dict]) -> None:
    """Count one chunk of edited references: found = the edited fact is not ``realised`` (swap) / is ``omitted`` or
    ``wrong`` (deletion); the naive check finds it when the old words are gone from the text."""
    for e, d in zip(edits, details):
        facts = facts_of(e.mr)
        nth = sum(1 for s, v, _ in facts[:[i for i, f in enumerate(facts) if f[0] == e.slot and f[1] == e.value][0]]
                  if s == e.slot and v == e.value)
        v = verdict_of(d, e.slot, e.value, nth)
        status = v["status"] if v else "missing"
        t.c[e.kind] += 1
        t.c[f"{e.kind}_found"] += status in ("omitted", "wrong")
        t.c[f"{e.kind}_wrong"] += status == "wrong"
        t.c[f"naive_{e.kind}_found"] += not naive_found(e.old, e.text)


def run_scorer(scorer, mrs: list[str], texts: list[str], bar=None, chunk: int = 200) -> list[dict]:
    out: list[dict] = []
    for i in range(0, len(texts), chunk):
        out.extend(scorer.details(texts[i:i + chunk], mrs=mrs[i:i + chunk]))
        if bar is not None:
            bar.update(len(texts[i:i + chunk]))
    return out


def measure(scorer, items: list[Item], edits: list[Edit], domain_values: dict[str, set[str]], t: Tally | None = None,
            bar=None, examples: int = 20) -> Tally:
    """Faithful references and their edits scored with ``scorer`` (anything with ``details(outputs, mrs=)``)."""
    t = t or Tally()
    tally_faithful(t, items, run_scorer(scorer, [i.mr for i in items], [i.ref for i in items], bar), domain_values,
                   examples)
    tally_edits(t, edits, run_scorer(scorer, [e.mr for e in edits], [e.text for e in edits], bar))
    return t


# ------------------------------------------------------------------------------------ leave one domain out
def _sha_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def mine_lexicon(name: str, pairs: list[tuple[str, str]], cache: Path, min_count: int | None) -> tuple[Path, str]:
    """A lexicon mined from ``pairs`` with ``qe content mine`` (:func:`qe.content.mining.main`, what the CLI
    calls), kept in ``cache`` by the pairs' checksum and the miner's code; returns its path and the command."""
    from qe.content.cache import miner_version
    from qe.content.mining import main as content_main

    cache.mkdir(parents=True, exist_ok=True)
    pairs_file = cache / f"{name}-pairs.csv"
    with open(pairs_file, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mr", "ref"])
        w.writerows(pairs)
    mc = [] if min_count is None else ["--min-count", str(min_count)]
    suffix = "" if min_count is None else f"-m{min_count}"
    out = cache / f"{name}-{_sha_file(pairs_file)}-{miner_version()}{suffix}.json"
    argv = ["mine", "-i", str(pairs_file), "-o", str(out), "-q", *mc]
    command = "qe content " + " ".join(argv)
    if not out.is_file():
        tmp = out.with_name(f".{out.name}.{os.getpid()}.json")
        rc = content_main(["mine", "-i", str(pairs_file), "-o", str(tmp), "-q", "--force", *mc])
        if rc != 0:
            raise SystemExit(f"content_precision: `{command}` failed (exit {rc}) for {name}")
        os.replace(tmp, out)
    return out, command


def lodo_tasks(domain: str, items: list[Item], data_dir: str | None, folds: int, seed: int
               ) -> list[tuple[str, list[tuple[str, str]], list[Item]]]:
    """``[(name, training pairs, held-out faithful items), ...]`` of a domain (module docstring)."""
    from qe.content.aligner_data import fold_of

    if domain in SF_NAMES or domain in SF_EVERY_ACT:
        base = SF_EVERY_ACT.get(domain, domain)
        train = [(i.mr, i.ref) for i in sf_items(base, "train", data_dir, acts=None, with_slots=False)]
        return [(f"{base}-train", train, items)]
    if domain == "webnlg":
        return [("webnlg-train", [(i.mr, i.ref) for i in webnlg_items("train", data_dir)], items)]
    if domain in ("e2e", "bagel"):
        fold = fold_of([i.group for i in items], folds, seed)
        return [(f"{domain}-fold{k}", [(i.mr, i.ref) for i in items if fold[i.group] != k],
                 [i for i in items if fold[i.group] == k]) for k in range(folds)]
    raise ValueError(f"--lodo: no training pairs for {domain!r}")


# -------------------------------------------------------------------------------------------------- recall gold
def e2e_slot_gold(data_dir: str | None, engine: str, lodo_lexicons: dict[int, object] | None = None,
                  lodo_kw: dict | None = None, folds: int = 5, seed: int = 1,
                  cache: Path | None = None) -> tuple[float, float]:
    """Omission and addition F1 on the E2E slot gold (``experiments.content_e2e.evaluate``, cross-fitted). With
    ``lodo_lexicons`` (fold -> lexicon) its fold lexicons are those (put in its per-fold cache under the key its
    ``evaluate`` looks up, so it mines nothing)."""
    from experiments import content_e2e
    from qe.data.e2e import e2e_slot_gold as gold_rows

    rows = gold_rows("dev", data_dir)
    if lodo_lexicons is not None:
        kw = dict(lodo_kw or {})
        for k, lex in lodo_lexicons.items():
            content_e2e._LEXICONS[(k, folds, seed, tuple(sorted(kw.items())))] = lex
        res = content_e2e.evaluate(rows, "matcher", folds, seed, **kw)
    elif engine == "rules":
        res = content_e2e.evaluate(rows, "rules", folds, seed)
    else:
        if cache is not None:  # the fold lexicons mined once and kept, as the LODO ones
            from qe.content.aligner_data import fold_of

            fold = fold_of([r["orig_mr"] for r in rows], folds, seed)
            key = tuple(sorted(E2E_GOLD_MINING.items()))
            for k in range(folds):
                train = [(r["mr"], r["ref"]) for r in rows if fold[r["orig_mr"]] != k]
                content_e2e._LEXICONS[(k, folds, seed, key)] = mined(f"e2e-gold-fold{k}", train, cache,
                                                                     E2E_GOLD_MINING)
        res = content_e2e.evaluate(rows, "matcher", folds, seed, **E2E_GOLD_MINING)
    return res["omissions"]["f1"], res["additions"]["f1"]


def mined(name: str, pairs: list[tuple[str, str]], cache: Path, settings: dict):
    """``qe.content.mine(pairs, **settings)`` (what ``experiments.content_e2e`` calls), kept in ``cache`` by the
    pairs' and settings' checksum and the miner's code."""
    from qe.content import mine
    from qe.content.cache import miner_version
    from qe.content.lexicon import Lexicon

    h = hashlib.sha256(json.dumps([pairs, sorted(settings.items())], ensure_ascii=False).encode()).hexdigest()[:12]
    path = cache / f"{name}-{h}-{miner_version()}.json"
    if path.is_file():
        return Lexicon.load(path)
    lex = mine(pairs, source=f"e2e-dev-fold{name[-1]}", **settings)
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.json")
    lex.save(tmp)
    os.replace(tmp, path)
    return lex


def triple_gold_wrong_f1(matcher, data_dir: str | None) -> float:
    """``wrong`` F1 on the triple fact gold (``experiments.triple_fact_gold.evaluate``)."""
    from experiments import triple_fact_gold as tg

    return tg.evaluate(matcher, tg.load_gold(), tg.entry_index(data_dir))["verdicts"]["wrong"]["f1"]


# --------------------------------------------------------------------------------------------------- the run
def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                             cwd=Path(__file__).resolve().parent.parent, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "qe"], capture_output=True,
                               text=True, cwd=Path(__file__).resolve().parent.parent, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty-qe" if dirty else "") if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine() -> str:
    threads = os.environ.get("OMP_NUM_THREADS", "unset")
    return f"{os.cpu_count()}-core CPU ({platform.machine()}), OMP_NUM_THREADS={threads}"


def table(rows: list[dict]) -> str:
    """The Markdown table of the CSV rows (the figures the log shows)."""
    head = ("| setting | domain | refs | facts | invented / 100 refs | not realised / 100 facts (omitted / wrong) | "
            "naive: not realised / 100 of its facts | coverage on those facts | refs without error (naive) | "
            "swaps found (naive) | deletions found (naive) |")
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        lines.append(f"| {r['setting']} | {r['domain']} | {r['references']} | {r['facts']} | "
                     f"{r['invented_per_100_refs']} | {r['not_realised_per_100_facts']} "
                     f"({r['omitted_per_100_facts']} / {r['wrong_per_100_facts']}) | "
                     f"{r['naive_not_realised_per_100_facts']} | {r['not_realised_nonbinary_per_100_facts']} | "
                     f"{r['refs_without_error_pct']} % ({r['naive_refs_without_error_pct']} %) | "
                     f"{r['swaps_found_pct']} % ({r['naive_swaps_found_pct']} %) | "
                     f"{r['deletions_found_pct']} % ({r['naive_deletions_found_pct']} %) |")
    return "\n".join(lines)


def without_text(examples):
    """The examples with their ``mr`` and ``reference`` fields left out (what the repository keeps)."""
    if isinstance(examples, dict):
        return {k: without_text(v) for k, v in examples.items() if k not in ("mr", "reference")}
    if isinstance(examples, list):
        return [without_text(x) for x in examples]
    return examples


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.content_precision", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None, help="the shared data directory (default: $QE_DATA_DIR)")
    ap.add_argument("--domains", nargs="+", default=list(DOMAINS), choices=list(DOMAINS + OPTIONAL_DOMAINS))
    ap.add_argument("--lexicon", nargs="+", default=["auto", "none"], metavar="auto|none|FILE",
                    help="the settings scored on every domain: auto (row 'default'), none ('rules'), a lexicon JSON "
                         "file ('file'); default: auto none")
    ap.add_argument("--lodo", action="store_true", help="also the leave-one-domain-out rows (mines a lexicon per "
                                                        "domain / fold with qe content mine)")
    ap.add_argument("--lodo-min-count", type=int, default=None,
                    help="--min-count for qe content mine (default: the CLI's own)")
    ap.add_argument("--folds", type=int, default=5, help="folds of E2E dev and BAGEL for --lodo (default 5)")
    ap.add_argument("--fold-seed", type=int, default=1, help="the fold split's seed (content_e2e's: 1)")
    ap.add_argument("--seed", type=int, default=20261207, help="seed of the swaps and deletions")
    ap.add_argument("--no-gold", action="store_true", help="skip the E2E slot gold and triple gold figures")
    ap.add_argument("--examples", type=int, default=20, help="examples kept per (setting, domain) and kind")
    ap.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "qe_content_precision"),
                    help="where the mined LODO lexicons are kept (default: %(default)s)")
    ap.add_argument("--commit", default=None, help="the code's commit to record (default: git rev-parse HEAD of this "
                                                   "checkout, +dirty-qe when qe/ has changes)")
    ap.add_argument("--out", default="docs/results/data/content_precision.csv")
    ap.add_argument("--examples-out", default=None,
                    help="the examples JSON, without corpus text (default: --out with _examples.json in place of "
                         ".csv)")
    ap.add_argument("--examples-text", default=None, metavar="PATH",
                    help="also write the examples with their MR and reference text here (outside the repository)")
    a = ap.parse_args(argv)

    import qe
    from qe.content.lexicon import Lexicon
    from tqdm import tqdm

    command = "python -m experiments.content_precision " + " ".join(argv if argv is not None else sys.argv[1:])
    commit, mach = a.commit or _commit(), machine()
    t_start = time.time()
    items = {d: domain_items(d, a.data_dir) for d in a.domains}
    edits = {d: make_edits(items[d], slot_values(items[d]), a.seed) for d in a.domains}
    dvalues = {d: domain_values(items[d]) for d in a.domains}
    settings = [({"auto": "default", "none": "rules"}.get(x.lower(), "file"), x) for x in a.lexicon]
    work = sum(len(items[d]) + len(edits[d]) for d in a.domains) * (len(settings) + a.lodo)
    bar = tqdm(total=work, unit="text", desc="content precision", dynamic_ncols=True)
    rows: list[dict] = []
    examples: dict[str, dict] = {}

    def record(setting: str, domain: str, t: Tally, lexicon: str, seconds: float, mine_command: str = "",
               gold: dict | None = None) -> None:
        row = {"setting": setting, "domain": domain, **t.figures(), "slot_gold_omission_f1": "",
               "slot_gold_addition_f1": "", "triple_gold_wrong_f1": "", **(gold or {}), "lexicon": lexicon,
               "mine_command": mine_command, "seconds": round(seconds, 1), "command": command, "machine": mach,
               "commit": commit}
        rows.append(row)
        examples[f"{setting}/{domain}"] = {
            "invented_causes": dict(t.invented_causes.most_common()),
            "not_realised_causes": dict(t.not_realised_causes.most_common()),
            "causes_by_slot_top40": dict(t.by_slot.most_common(40)),
            "naive_not_found_by_slot": dict(t.naive_missed.most_common()),
            "invented": t.invented_examples, "not_realised": t.not_realised_examples,
            f"first_{PER_CAUSE}_per_cause": t.by_cause}
        bar.write(f"{setting:8s} {domain:9s} invented/100 refs {row['invented_per_100_refs']}, not realised/100 "
                  f"facts {row['not_realised_per_100_facts']} (naive {row['naive_not_realised_per_100_facts']}), "
                  f"swaps {row['swaps_found_pct']} %, deletions {row['deletions_found_pct']} % ({seconds:.0f} s)")

    for setting, lex in settings:
        for d in a.domains:
            t0 = time.time()
            bar.set_description(f"{setting}/{d}")
            scorer = qe.load("coverage", lexicon=lex, data_dir=a.data_dir)
            t = measure(scorer, items[d], edits[d], dvalues[d], bar=bar, examples=a.examples)
            gold = {}
            if not a.no_gold and setting in ("default", "rules") and d == "e2e":
                bar.set_description(f"{setting}/{d}: E2E slot gold")
                o, ad = e2e_slot_gold(a.data_dir, "rules" if setting == "rules" else "matcher",
                                      cache=Path(a.cache_dir))
                gold = {"slot_gold_omission_f1": round(o, 3), "slot_gold_addition_f1": round(ad, 3)}
            if not a.no_gold and d == "webnlg":
                gold = {"triple_gold_wrong_f1": round(triple_gold_wrong_f1(scorer.engine, a.data_dir), 3)}
            used = scorer.signature_fields().get("lexicon", lex)
            record(setting, d, t, used, time.time() - t0, gold=gold)
    if a.lodo:
        for d in a.domains:
            if d == "e2e-test":
                continue  # never mined from: read-only
            t0 = time.time()
            t = Tally()
            commands, lexicons = [], {}
            for k, (name, train, held) in enumerate(lodo_tasks(d, items[d], a.data_dir, a.folds, a.fold_seed)):
                bar.set_description(f"lodo/{d}: mining {name}")
                path, cmd = mine_lexicon(name, train, Path(a.cache_dir), a.lodo_min_count)
                commands.append(cmd)
                lexicons[k] = Lexicon.load(path)
                bar.set_description(f"lodo/{d}")
                held_where = {i.where for i in held}
                scorer = qe.load("coverage", lexicon=str(path), data_dir=a.data_dir)
                measure(scorer, held, [e for e in edits[d] if e.where in held_where], dvalues[d], t, bar,
                        a.examples)
            gold = {}
            if not a.no_gold and d == "e2e":
                kw = {"min_count": a.lodo_min_count or 5}
                o, ad = e2e_slot_gold(a.data_dir, "matcher", lexicons, kw, a.folds, a.fold_seed)
                gold = {"slot_gold_omission_f1": round(o, 3), "slot_gold_addition_f1": round(ad, 3)}
            if not a.no_gold and d == "webnlg":
                from qe.content.align import Matcher

                gold = {"triple_gold_wrong_f1": round(triple_gold_wrong_f1(Matcher(lexicons[0]), a.data_dir), 3)}
            record("lodo", d, t, "; ".join(f"{n}:{lex.checksum}" for n, lex in
                                           zip([c.split(" -o ")[1].split()[0] for c in commands], lexicons.values())),
                   time.time() - t0, " && ".join(commands), gold)
    bar.close()
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(COLUMNS))
        w.writeheader()
        w.writerows(rows)
    ex_out = Path(a.examples_out) if a.examples_out else out.with_name(out.stem + "_examples.json")
    head = {"command": command, "machine": mach, "commit": commit, "seed": a.seed}
    ex_out.write_text(json.dumps({**head, "by_setting_domain": without_text(examples)}, indent=1,
                                 ensure_ascii=False) + "\n", encoding="utf-8")
    if a.examples_text:
        Path(a.examples_text).write_text(json.dumps({**head, "by_setting_domain": examples}, indent=1,
                                                    ensure_ascii=False) + "\n", encoding="utf-8")
    print(table(rows))
    print(f"\nwritten: {out}, {ex_out} ({time.time() - t_start:.0f} s; {mach}; commit {commit})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
