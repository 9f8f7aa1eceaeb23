"""Value lexicons mined from (MR, text) pairs: which word sequences realise which slot value.

A :class:`Lexicon` holds, per slot (names normalised by :func:`qe.core.surface.norm_slot`):

* ``kind``: ``binary`` (yes/no values, e.g. ``familyFriendly``), ``category`` (a closed set of values, e.g.
  ``priceRange``) or ``entity`` (many values written as names, e.g. ``name``, ``near``: only their own surface forms
  are used, nothing is mined for them);
* ``values``: every value seen (normalised text -> the value as written);
* ``patterns``: token sequences that realise the slot, each with the values it is *compatible* with and how often it
  was seen with each. A pattern may fit several values: the cleaned E2E data accept "cheap" for both ``cheap`` and
  ``less than £20``, so both are compatible with it; a value that is not compatible is contradicted by it;
* ``triggers`` (binary slots): sequences that say the slot is talked about (``family friendly``, ``kids``), whose
  polarity is read from negation cues before them (:mod:`qe.content.matcher`).

:func:`mine` learns it from pairs whose MR lists exactly what the text realises (the cleaned E2E references, or
references written for their MR). Every text is first *delexicalised*: each MR value found verbatim (or as one of its
usual surface forms) is replaced by a placeholder, so names never become patterns of the slots they co-occur with.
Then every 1-4-gram of the remaining tokens is counted with the slots and values of its MR; an n-gram is a pattern
of a slot when at least ``min_count`` texts hold it and at least ``min_precision`` of them have the slot in their MR;
its compatible values are those with at least ``min_share`` of its occurrences. n-grams made only of function words,
and n-grams whose shorter part is already a pattern of the same slot with the same values, are left out.

Hand-written where no field library fits: mining slot lexicons from delexicalised data is the E2E cleaning work's
idea (its slot-error script holds hand-written regular expressions); here they are learned, so a new domain needs
data, not code.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from qe.core.surface import NUMBER_WORDS, norm_slot, property_words, tok_close, tok_close_strict, tokenize

LEXICON_FORMAT = 1
#: values of yes/no slots (lower case)
BINARY_VALUES = frozenset({"yes", "no", "true", "false"})
#: values that state no fact to find in the text (unknown, don't care)
UNCHECKED_VALUES = frozenset({"none", "dontcare", "dont_care", "?", "", "x"})
#: negation cues read before a binary slot's trigger
NEGATIONS = frozenset({"not", "no", "non", "n't", "never", "without", "nor", "un"})
_NUMBER_OF = {w: d for d, w in NUMBER_WORDS.items()}
#: tokens dropped before matching (so "family-friendly" is "family friendly", "£20-25" is "£ 20 25")
_DROP = frozenset({"-", "–", "—", "‐", "'", '"', "`", "``", "''"})
_BOUNDARY = frozenset({".", "!", "?", ";", ",", ":", "(", ")", "but", "while", "although", "however"})


def _sklearn_stop_words() -> frozenset[str]:
    """scikit-learn's English stop-word list, read from its own module file without importing scikit-learn (whose
    import costs more than a second: the content check of a few outputs would spend most of its time there)."""
    import importlib.util

    spec = importlib.util.find_spec("sklearn")  # finds the package without running it
    path = None if spec is None or not spec.submodule_search_locations else \
        Path(next(iter(spec.submodule_search_locations))) / "feature_extraction" / "_stop_words.py"
    if path is not None and path.is_file():
        mod_spec = importlib.util.spec_from_file_location("qe._sklearn_stop_words", path)
        if mod_spec is not None and mod_spec.loader is not None:
            mod = importlib.util.module_from_spec(mod_spec)
            mod_spec.loader.exec_module(mod)
            words = getattr(mod, "ENGLISH_STOP_WORDS", None)
            if words:
                return frozenset(words)
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS  # another layout: the ordinary import

    return frozenset(ENGLISH_STOP_WORDS)


#: auxiliary forms scikit-learn's stop-word list leaves out (it holds "do", "has", "is"): no mined pattern or trigger
#: is made of these, stop words and negations only (:func:`mine`), and one in an older lexicon is matched only in its
#: slot's context (:func:`needs_context`)
AUXILIARIES = frozenset({"does", "did", "doing", "having", "shall"})


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    return _sklearn_stop_words() - NEGATIONS - {"cheap", "fire", "eleven", "five", "three", "one", "two", "four",
                                                         "six", "seven", "eight", "nine", "ten", "twenty", "thirty",
                                                         "fifty", "hundred", "first", "third", "top", "bottom", "front",
                                                         "back", "side", "full", "empty", "well", "only", "all", "many"}


_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
#: a suffix split off its word by a space and a hyphen, as the RNNLG corpora (SF restaurant and hotel; Wen et al.)
#: write their references: "child -s", "moderate -ly priced". Joined again ("childs", "moderately"), or "ly" and
#: "s" are words of their own: a mined pattern "ly", a value "cheap" beside a separate "ly"
_SPLIT_SUFFIX = re.compile(r"(?<=[^\W\d_]) -(s|ly)\b")


def _joined(text: str) -> str:
    """``text`` as the tokenisers read it: thousands separators dropped (``2,900``), split suffixes joined
    (``moderate -ly`` -> ``moderately``)."""
    return _SPLIT_SUFFIX.sub(r"\1", _THOUSANDS.sub("", text))


def _number(t: str) -> str:
    t = _NUMBER_OF.get(t, t)
    return t.lstrip("0") or "0" if t.isdigit() else t


def norm_tokens(text: str) -> list[str]:
    """Matching tokens: lower-cased words (:func:`qe.core.surface.tokenize`), hyphens and quotes dropped, number words
    as digits (``five-star`` -> ``5 star``), thousands separators and leading zeros dropped (``2,900`` -> ``2900``,
    ``06`` -> ``6``)."""
    return [_number(t) for t in raw_tokens(text)]


def raw_tokens(text: str) -> list[str]:
    """The tokens :func:`norm_tokens` makes, before number words become digits and leading zeros go (the same
    length: ``five-star`` -> ``five star`` where norm_tokens gives ``5 star``)."""
    return [t for t in tokenize(_joined(text)) if t not in _DROP]


def norm_value(value: str | None) -> str:
    """A value as matching text: its :func:`norm_tokens` joined by spaces."""
    return " ".join(norm_tokens(value or ""))


@dataclass
class SlotLexicon:
    kind: str  #: binary | category | entity
    values: dict[str, str] = field(default_factory=dict)  #: norm value -> value as written
    #: pattern (space-joined norm tokens) -> {norm value: count}
    patterns: dict[str, dict[str, int]] = field(default_factory=dict)
    triggers: list[str] = field(default_factory=list)
    examples: int = 0  #: texts whose MR holds the slot
    #: the slot's name as the data's MRs write it (``customer rating`` for the key ``customerrating``); outputs name
    #: a slot their MR does not hold by it. Not part of the checksum (lexicons mined before it keep theirs)
    name: str | None = None
    #: n-grams that say the slot is talked about, without a value ("what part of the city", "close to" for SF's
    #: ``near``): mined only for a slot the data asks for without a value (``request(near)``), and read only for such
    #: a fact (:func:`mine`). Left out of the JSON when empty (lexicons mined before it keep their checksum)
    about: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = {"kind": self.kind, "examples": self.examples, "values": self.values,
               "patterns": self.patterns, "triggers": self.triggers}
        if self.about:
            out["about"] = self.about
        if self.name:
            out["name"] = self.name
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "<lexicon>", slot: str | None = None) -> "SlotLexicon":
        """A slot's entry of a lexicon JSON; a malformed one raises ValueError naming ``where`` (the file), the slot
        and the field."""
        at = f"{where}: slot {slot!r}" if slot is not None else where
        if not isinstance(d, dict):
            raise ValueError(f"{at}: a slot entry must be a JSON object with 'kind' (binary, category or entity), "
                             f"not {type(d).__name__}")
        if not isinstance(d.get("kind"), str) or not d["kind"]:
            raise ValueError(f"{at}: field 'kind' is {'missing' if 'kind' not in d else 'not a name'}; give binary, "
                             "category or entity")
        for key, typ, what in (("values", dict, "an object"), ("patterns", dict, "an object"),
                               ("triggers", list, "a list"), ("about", list, "a list")):
            if key in d and not isinstance(d[key], typ):
                raise ValueError(f"{at}: field {key!r} must be {what}, not {type(d[key]).__name__}")
        # every string the matcher reads is checked here, where the file and slot can be named: an empty pattern
        # or a null value used to fail deep in the matcher (an IndexError; "expected string or bytes-like object")
        for key, v in d.get("values", {}).items():  # an empty value ("area=" in an SF act) is mined as ""
            if not isinstance(v, str):
                raise ValueError(f"{at}: field 'values', value {key!r}: must be the value as written (a string), "
                                 f"not {v!r}")
        for key, v in d.get("patterns", {}).items():
            if not key.strip():
                raise ValueError(f"{at}: field 'patterns': an empty pattern (key {key!r}) matches nothing; give the "
                                 "words that state the slot, or remove it")
            if not isinstance(v, dict):
                raise ValueError(f"{at}: field 'patterns', pattern {key!r}: must map values to counts (an object)")
            for value, count in v.items():
                if isinstance(count, bool) or not isinstance(count, (int, float)) or not count >= 0:
                    raise ValueError(f"{at}: field 'patterns', pattern {key!r}, value {value!r}: the count must be "
                                     f"a number >= 0, not {count!r}")
        for fld in ("triggers", "about"):
            for i, t in enumerate(d.get(fld, [])):
                if not isinstance(t, str) or not t.strip():
                    raise ValueError(f"{at}: field {fld!r}, item {i}: must be the words of a "
                                     f"{'trigger' if fld == 'triggers' else 'wording of the slot'} (a non-empty "
                                     f"string), not {t!r}")
        if d.get("name") is not None and not isinstance(d["name"], str):
            raise ValueError(f"{at}: field 'name' must be the slot's name as written (a string), not {d['name']!r}")
        try:
            examples = int(d.get("examples", 0))
        except (TypeError, ValueError):
            raise ValueError(f"{at}: field 'examples' must be a whole number, not {d['examples']!r}") from None
        return cls(d["kind"], dict(d.get("values", {})), {k: dict(v) for k, v in d.get("patterns", {}).items()},
                   list(d.get("triggers", [])), examples, d.get("name") or None, list(d.get("about", [])))


@dataclass
class Lexicon:
    slots: dict[str, SlotLexicon] = field(default_factory=dict)
    source: str = "rules"  #: what it was mined from (a dataset name, a file)
    settings: dict[str, Any] = field(default_factory=dict)
    #: RDF triples (:func:`mine_triples`): per property (:func:`~qe.core.surface.norm_slot` of its name), the words
    #: texts use to state it beyond its entities' names ("born" for ``birthPlace``)
    properties: dict[str, list[str]] = field(default_factory=dict)
    #: words texts about any triples use beyond the entities' names ("located", "known")
    common: list[str] = field(default_factory=list)
    #: RDF triples: per property, the words of other properties' lists that at least one of its own texts uses (a
    #: rarer wording of it: "works" for ``employer``, "falls" for ``genre``); in the one sentence that states a triple
    #: of that property such a word is its relation said another way, not a relation of its own
    attested: dict[str, list[str]] = field(default_factory=dict)

    def get(self, slot: str) -> SlotLexicon | None:
        return self.slots.get(norm_slot(slot))

    @property
    def has_triple_words(self) -> bool:
        """Whether it knows how texts state triples (:func:`mine_triples`): then the matcher lists the words of an
        output that no triple explains as hallucinated."""
        return bool(self.properties or self.common)

    def to_dict(self) -> dict[str, Any]:
        out = {"format": LEXICON_FORMAT, "source": self.source, "settings": self.settings,
               "slots": {k: v.to_dict() for k, v in sorted(self.slots.items())}}
        if self.has_triple_words:
            out["properties"] = {k: sorted(v) for k, v in sorted(self.properties.items())}
            out["common"] = sorted(self.common)
            if self.attested:
                out["attested"] = {k: sorted(v) for k, v in sorted(self.attested.items())}
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "<lexicon>") -> "Lexicon":
        if not isinstance(d, dict) or d.get("format") != LEXICON_FORMAT or not isinstance(d.get("slots"), dict):
            raise ValueError(f"{where}: not a qe content lexicon (expected a JSON object with format={LEXICON_FORMAT} "
                             "and slots)")
        props, common, attested = d.get("properties", {}), d.get("common", []), d.get("attested", {})
        if not isinstance(props, dict) or not all(isinstance(v, list) for v in props.values()) \
                or not isinstance(common, list):
            raise ValueError(f"{where}: 'properties' must map property names to word lists and 'common' be a list")
        if not isinstance(attested, dict) or not all(isinstance(v, list) for v in attested.values()):
            raise ValueError(f"{where}: 'attested' must map property names to word lists")
        for what, words in [*((f"'properties', property {k!r}", v) for k, v in props.items()), ("'common'", common),
                            *((f"'attested', property {k!r}", v) for k, v in attested.items())]:
            bad = next((w for w in words if not isinstance(w, str) or not w.strip()), "ok")
            if bad != "ok":
                raise ValueError(f"{where}: field {what}: {bad!r} is not a word (a non-empty string)")
        empty = next((k for k in d["slots"] if not k.strip()), None)
        if empty is not None:
            raise ValueError(f"{where}: field 'slots': a slot with an empty name ({empty!r}); name it as the MRs do")
        return cls({k: SlotLexicon.from_dict(v, where, k) for k, v in d["slots"].items()}, d.get("source", str(where)),
                   d.get("settings", {}), {str(k): [str(w) for w in v] for k, v in props.items()},
                   [str(w) for w in common], {str(k): [str(w) for w in v] for k, v in attested.items()})

    def save(self, path: str | Path) -> None:
        from qe.core.jsonio import dumps

        Path(path).write_text(dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> "Lexicon":
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8-sig"))  # a byte-order mark is dropped
        except UnicodeDecodeError as exc:
            raise ValueError(f"lexicon {p}: not UTF-8 JSON (byte 0x{exc.object[exc.start]:02x} at offset {exc.start} "
                             "is not UTF-8); save it as UTF-8") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"lexicon {p}: cannot read it ({exc})") from None
        return cls.from_dict(data, str(p))

    @property
    def checksum(self) -> str:
        """sha256 (12 hex digits) of the lexicon's JSON: the signature names it."""
        d = self.to_dict()
        # the slots' written names are not part of it (lexicons mined before they were kept keep their checksum)
        d["slots"] = {k: {f: x for f, x in v.items() if f != "name"} for k, v in d["slots"].items()}
        # slot lexicons keep the checksum they had before triple words existed
        # (and triple lexicons without attested words keep theirs)
        text = json.dumps(d["slots"] if not self.has_triple_words else
                          {k: d[k] for k in ("slots", "properties", "common", "attested") if k in d},
                          sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def slot_kind(values: Counter, n_texts: int, verbatim: float = 0.0) -> str:
    """``binary`` when every checkable value is yes/no; ``entity`` when the slot has many values (8 or more) that
    texts mostly write verbatim (names: ``verbatim`` is the share of texts holding their value as written); else
    ``category``."""
    checkable = {v for v in values if v not in UNCHECKED_VALUES}
    if checkable and checkable <= BINARY_VALUES:
        return "binary"
    if len(checkable) >= 8 and verbatim >= 0.7:
        return "entity"
    return "category"


def _ngrams(tokens: Sequence[str], max_n: int) -> set[str]:
    out = set()
    for n in range(1, max_n + 1):
        for i in range(len(tokens) - n + 1):
            gram = tokens[i:i + n]
            if any(t.startswith("<") or t in _BOUNDARY for t in gram):
                continue
            out.add(" ".join(gram))
    return out


def delexicalise(tokens: list[str], values: Iterable[str]) -> list[str]:
    """``tokens`` with every occurrence of each value's tokens (longest first) replaced by one ``<v>`` token."""
    toks = list(tokens)
    for v in sorted({v for v in values if v}, key=lambda v: -len(v.split())):
        vt = v.split()
        i, out = 0, []
        while i < len(toks):
            if toks[i:i + len(vt)] == vt:
                out.append("<v>")
                i += len(vt)
            else:
                out.append(toks[i])
                i += 1
        toks = out
    return toks


#: the largest chance (one-sided binomial tail at the slot's base rate) with which a trigger's texts may hold its
#: binary slot as often as they do (:func:`_trigger_holds`)
TRIGGER_ALPHA = 0.05


def _trigger_holds(g: str, key: str, c: int, cnt: int, gram_n: Counter, gram_slot, p_slot: float,
                   words_by2: dict[str, list[str]]) -> bool:
    """Whether the n-gram ``g`` (in ``cnt`` texts, ``c`` of them with binary slot ``key``) says the slot is talked
    about as the matcher will read it: a one-word trigger is matched in its other forms too (:func:`_word_form`:
    "location" also reads "located"), so its texts are those of every form the mining texts hold. (The n-gram itself
    passed the lift test, ``min_precision``.) Over those texts the slot's share must be unlikely by chance at its
    base rate (``p_slot``; one-sided binomial tail below :data:`TRIGGER_ALPHA`): of the thousands of n-grams tested,
    some hold a frequent slot in all of their few texts by chance ("rates", "budget" for E2E's familyFriendly, in 63 %
    of its MRs), and a rare form ("location", 29 texts) is no evidence for a common one ("located", 1,588 texts, 59 %
    with the slot)."""
    if " " not in g:
        # the forms the matcher reads: same first two letters (``words_by2``: the one-word n-grams by their first two
        # letters, as qe.content.align indexes triggers)
        for w in words_by2.get(g[:2], ()):
            if w != g and _word_form(w, g):
                c += gram_slot[w].get(key, 0)
                cnt += gram_n[w]
    return _chance(c, cnt, p_slot) < TRIGGER_ALPHA


def split_name(word: str, vocab: Collection[str]) -> list[str] | None:
    """A slot name written as one word (``pricerange``, ``acceptscreditcards``) as the fewest words of ``vocab`` (2
    letters or more each) that spell it (``price range``, ``accepts credit cards``); None when it is one word or no
    such split exists."""
    n = len(word)
    best: list[list[str] | None] = [None] * (n + 1)
    best[0] = []
    for i in range(2, n + 1):
        for j in range(max(0, i - 24), i - 1):
            prev = best[j]
            if prev is not None and i - j < n and word[j:i] in vocab and (
                    best[i] is None or len(prev) + 1 < len(best[i])):
                best[i] = prev + [word[j:i]]
    got = best[n]
    return got if got is not None and len(got) > 1 else None


def name_text(written: str, vocab: Collection[str] = ()) -> str:
    """A slot's name as words (:func:`~qe.core.surface.property_words`: ``priceRange`` -> ``price range``), a token
    split into words ``vocab`` (the words of the texts) holds (``pricerange`` -> ``price range``), also where the
    texts write the name as one word too (BAGEL's references: "pricerange" 6 times, "price" 46)."""
    out = []
    for t in norm_tokens(property_words(written)):
        parts = split_name(t, vocab) if vocab and t.isalpha() else None
        out.extend(parts or [t])
    return " ".join(out)


def _inflection_of(w: str, words: set[str]) -> bool:
    """Whether ``w`` is one of ``words`` or an inflection of one (-s, -es, -d, -ed, -ing; "priced", "prices",
    "pricing" of "price"): the same word, no other meaning (a derived word such as "pricey" says more)."""
    if w in words:
        return True
    for n in words:
        if w.startswith(n) and w[len(n):] in ("s", "es", "d", "ed", "ing"):
            return True
        if n.endswith("e") and w == n[:-1] + "ing":
            return True
    return False


def _chance(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p): how likely ``k`` of ``n`` texts hold a slot that ``p`` of all texts hold."""
    from scipy.stats import binom

    return float(binom.sf(k - 1, n, p))


def _lift(p_given: float, p_base: float) -> float:
    """How much of the remaining uncertainty knowing the n-gram removes: (P(x | g) - P(x)) / (1 - P(x))."""
    return (p_given - p_base) / (1 - p_base) if p_base < 1 else 0.0


def mine(pairs: Iterable[tuple[str, str]], *, source: str = "pairs", min_count: int = 5,
         min_precision: float = 0.8, min_share: float = 0.1, max_n: int = 4, where: str = "<pairs>",
         mr_format: str = "auto", alias_lift: float = 4.0,
         scale_pairs: dict[str, list[tuple[str, str, int]]] | None = None) -> Lexicon:
    """Mine a :class:`Lexicon` from ``(mr, text)`` pairs whose MR lists what the text realises.

    An n-gram ``g`` (1 to ``max_n`` tokens, seen in ``min_count`` texts or more, not only function words) is a
    pattern of slot ``s`` when it says that ``s`` is talked about: its normalised lift
    ``(P(s | g) - P(s)) / (1 - P(s))`` is at least ``min_precision`` (slots that every MR holds, such as E2E's
    ``name``, get no patterns). Its *compatible values* are those it makes more likely than they are
    among all texts holding ``s`` (1.5 times as likely, or halfway to certain for a common value), with a share of at least ``min_share`` of its occurrences;
    a value that most texts of a category slot hold needs the n-gram to share a word with it; a pattern is kept
    only when its compatible values cover ``min_precision`` of its occurrences (so a pattern that contradicts a
    value does so reliably). A pattern compatible with every value says the slot is talked about but not how: a
    binary slot keeps it as a *trigger* (its polarity is read from negation cues), other slots drop it. Entity slots
    (:func:`slot_kind`) are matched by their values' own surface forms only; their values are replaced by a
    placeholder in every text before counting, so a name never becomes a pattern of a slot it co-occurs with.

    A category slot's pattern also realises a value whose texts use it ``alias_lift`` times more often than the texts
    of the slot's other values (:func:`_add_aliases`: "low" for ``1 out of 5``; 0: off).

    ``scale_pairs`` (``{slot: [(A, B, readings), ...]}``): values that are one *scale value* written two ways ("high"
    and ``5 out of 5`` for E2E's ``customer rating``), found by :func:`qe.content.mining.mine` (which is
    ``qe.content.mine``: it mines once, matches the lexicon against the texts, and mines again with the pairs). Each
    pair's texts are counted as one value's (so that "low priced", written for ``cheap`` and for ``less than £20``,
    is a pattern of the two together although neither alone is most of its texts), and each value of a pair joins
    the compatible values of the other's wordings (:func:`_join_scale_pairs`).

    A slot the MRs ask for without a value (``request(near)``) also gets the words its questions use, read for such a
    fact only (:func:`_mine_about`: the field ``about``).

    Triples MRs (RDF) are skipped: their entities are matched by their own surface forms. ``mr_format``: how the MRs
    are read (:func:`qe.core.mr.parse_acts`; ``auto``: detected per MR)."""
    from qe.core.mr import TRIPLE_ACT, parse_acts

    stop = _stopwords()
    texts: list[tuple[dict[str, set[str]], list[str]]] = []
    values: dict[str, Counter] = defaultdict(Counter)
    verbatim: Counter = Counter()
    written: dict[str, dict[str, str]] = defaultdict(dict)
    slot_names: dict[str, str] = {}
    for k, (mr, text) in enumerate(pairs):
        acts = parse_acts(mr, mr_format, where=f"{where}[{k}]")
        if all(a == TRIPLE_ACT for a, _ in acts):
            continue
        toks = norm_tokens(text)
        joined = f" {' '.join(toks)} "
        facts: dict[str, set[str]] = defaultdict(set)
        for _, slots in acts:
            for s, v in slots:
                key, nv = norm_slot(s), norm_value(v)
                facts[key].add(nv)
                values[key][nv] += 1
                verbatim[key] += bool(nv) and f" {nv} " in joined
                written[key].setdefault(nv, (v or "").strip())
                slot_names.setdefault(key, s)
        texts.append((facts, toks))
    n = len(texts)
    n_slot = Counter(k for facts, _ in texts for k in facts)
    kinds = {k: slot_kind(values[k], n_slot[k], verbatim[k] / max(1, sum(values[k].values()))) for k in values}
    names = {v for k in values if kinds[k] == "entity" for v in values[k] if v not in UNCHECKED_VALUES}
    gram_n: Counter = Counter()
    gram_slot: dict[str, Counter] = defaultdict(Counter)
    gram_value: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for facts, toks in texts:
        grams = _ngrams(delexicalise(toks, names), max_n)
        grams = {g for g in grams if not all(t in stop or t in NEGATIONS or not t.isalnum() for t in g.split())}
        for g in grams:
            gram_n[g] += 1
            for key, vals in facts.items():
                gram_slot[g][key] += 1
                for v in vals:
                    gram_value[(g, key)][v] += 1
    lex = Lexicon(source=source, settings={"min_count": min_count, "min_precision": min_precision,
                                           "min_share": min_share, "max_n": max_n, "texts": n})
    # the slots' names as words; one written as one word is split into words the texts use ("pricerange": "price",
    # "range"), for the rule that a category slot's name words are no value words
    text_words: Counter = Counter(t for _, toks in texts for t in set(toks) if t.isalpha() and len(t) >= 2)
    vocab = {t for t, k in text_words.items() if k >= 2}
    named = {k: name_text(slot_names[k], vocab) for k in values}
    # each n-gram belongs to one slot at most: the one it says most about (the highest lift; ties go to a slot whose
    # values hold its words, then to the rarer slot) - so "chinese", frequent in texts whose MR also has an eatType,
    # is food's and not eatType's
    value_words = {k: {t for v in values[k] for t in v.split()} | set(norm_tokens(property_words(slot_names[k])))
                   for k in values}
    # a form of a slot's name word counts as the word ("low priced", "average prices": priceRange's, not the rating's
    # whose value "low" / "average" they hold)
    name_words_of = {k: set(norm_tokens(property_words(slot_names[k]))) for k in values}
    words_by2: dict[str, list[str]] = defaultdict(list)  # one-word n-grams by their first two letters
    for g in gram_n:
        if " " not in g and g.isalpha():
            words_by2[g[:2]].append(g)
    owner: dict[str, str] = {}
    for g, cnt in gram_n.items():
        if cnt < min_count:
            continue
        best = None
        for key, c in gram_slot[g].items():
            if kinds[key] == "entity" or n_slot[key] >= n:
                continue
            rank = (_holds_words(g.split(), value_words[key], name_words_of[key]),
                    round(_lift(c / cnt, n_slot[key] / n), 2), -n_slot[key])
            if best is None or rank > best[0]:
                best = (rank, key)
        if best is not None:
            owner[g] = best[1]
    # the checkable values of the category slots, as token lists: a longer n-gram of one slot that holds another
    # slot's value is not kept when the texts holding it realise that value ("a cheap english": priceRange's "cheap"
    # plus the food), or it would swallow that fact's words when matched (:func:`_borrowed`)
    others = {k: [v.split() for v in values[k] if v and v not in UNCHECKED_VALUES]
              for k in values if kinds[k] == "category"}
    # each slot's own words, for the rule that a pattern stays in its slot (:func:`_out_of_slot`): the words of its
    # name (not of an entity slot's: E2E's "near" is also the preposition of "near the river") and the content words
    # of its values (category slots)
    slot_name_words = {k: {w for w in norm_tokens(property_words(slot_names[k])) if content_word(w)}
                       for k in values if kinds[k] != "entity"}
    slot_value_words = {k: {t for v in values[k] if v not in UNCHECKED_VALUES for t in v.split() if content_word(t)}
                        for k in values if kinds[k] == "category"}
    dropped: Counter = Counter()
    context_words: dict[str, list[str]] = {}
    for key in sorted(values):
        sl = SlotLexicon(kinds[key], {v: written[key][v] for v in sorted(values[key])}, examples=n_slot[key],
                         name=slot_names[key] if slot_names[key] != key else None)
        lex.slots[key] = sl
        if kinds[key] == "entity" or n_slot[key] >= n:
            continue
        p_slot = n_slot[key] / n
        base = {v: c / n_slot[key] for v, c in values[key].items()}
        # one scale value written two ways (``scale_pairs``): the pair's texts are counted together
        group = {v: {v} for v in values[key]}
        for a, b, _ in (scale_pairs or {}).get(key, ()):
            if a not in group or b not in group:
                continue
            merged = group[a] | group[b]
            for v in merged:
                group[v] = merged

        def pooled(counts: Counter, v: str) -> int:
            return sum(counts.get(u, 0) for u in group[v])

        def base_of(v: str) -> float:
            return sum(base.get(u, 0.0) for u in group[v])
        checkable = {v for v in values[key] if v not in UNCHECKED_VALUES}
        binary = kinds[key] == "binary"
        # the slot's own words: single tokens that say the slot is talked about, and the tokens of its values; a
        # longer pattern must hold one (so "food in the high" is no pattern of food, however often it co-occurs)
        anchors = {t for v in checkable for t in v.split()}
        for g, cnt in gram_n.items():
            if " " not in g and cnt >= min_count and owner.get(g) == key and \
                    _lift(gram_slot[g].get(key, 0) / cnt, p_slot) >= min_precision:
                anchors.add(g)
        own_words = {t for v in checkable for t in v.split()}
        name_words = set(norm_tokens(property_words(slot_names[key])))
        # its name as the texts spell it (split: "price", "range" of "pricerange"), for the rule below only (as
        # anchors or other slots' words, split words shared by several slots - "allowed" - misread the slot)
        split_words = name_words | set(norm_tokens(named[key]))
        cands = []
        for g, cnt in gram_n.items():
            c = gram_slot[g].get(key, 0)
            if cnt < min_count or c < min_count or owner.get(g) != key or _lift(c / cnt, p_slot) < min_precision:
                continue
            words = g.split()
            if len(words) > 1 and not _holds_words(words, anchors, name_words | own_words):
                continue
            if len(words) > 1 and _borrowed(g, key, own_words, others, gram_value, cnt, min_precision):
                continue
            if kinds[key] == "category" and not any(w in own_words or (not _inflection_of(w, split_words)
                                                                       and w not in stop) for w in words):
                continue  # the slot's name (in any inflection: "priced", "prices") and function words only ("food
                # in the", "rating of", "is priced"): no value's words
            if all(w not in own_words and (w in stop or w in AUXILIARIES or w in NEGATIONS) for w in words):
                continue  # function words, auxiliaries and negations only ("does", "does not", "it does" of "does
                # not allow kids"): no value's words, and the negation is read around the slot's own words
            why = _out_of_slot(words, key, own_words | name_words, slot_name_words, slot_value_words)
            if why is not None:
                dropped[why] += 1
                continue
            share = gram_value[(g, key)]
            # a value most texts of the slot hold (E2E's "coffee shop") is evidenced by its own words only: that
            # an n-gram co-occurs with it says little
            compat = {v: k for v, k in share.items()
                      if v in checkable and pooled(share, v) / c >= min_share
                      and pooled(share, v) / c >= min(1.5 * base_of(v), (1 + base_of(v)) / 2)
                      and (base[v] < 0.5 or _holds_words(words, set(v.split()), set(v.split())))}
            covered = sum(compat.values()) / c
            negated = bool(set(words) & NEGATIONS)
            if binary and not negated and not (compat and len(compat) == 1 and covered >= 1 - min_share):
                # a trigger: the slot is talked about; the polarity is read around it (tested as the matcher reads
                # it, with its other forms: :func:`_trigger_holds`)
                if not _trigger_holds(g, key, c, cnt, gram_n, gram_slot, n_slot[key] / n, words_by2):
                    continue
                cands.append((g, None))
                continue
            if not compat or set(compat) >= checkable or covered < min_precision:
                continue
            cands.append((g, compat))
        if kinds[key] == "category":
            # the values' own words: which values a text that writes value w is annotated with ("low" also for
            # "1 out of 5", "cheap" also for "less than £20")
            for v in checkable:
                c = gram_value[(v, key)]
                tot = sum(c.values()) if c else 0
                if tot >= min_count:
                    compat = {u: k for u, k in c.items() if u in checkable and pooled(c, u) / tot >= min_share
                              and pooled(c, u) / tot >= min(1.5 * base_of(u), (1 + base_of(u)) / 2)}
                    compat[v] = c.get(v, 0) or 1
                    cands.append((v, compat))
        cands.sort(key=lambda x: (len(x[0].split()), x[0]))
        kept: dict[str, dict[str, int] | None] = {}
        for g, compat in cands:
            toks = g.split()
            subs = {" ".join(toks[i:j]) for i in range(len(toks)) for j in range(i + 1, len(toks) + 1)} - {g}
            if any(h in kept and (kept[h] is None if compat is None else
                                  kept[h] is not None and set(kept[h]) == set(compat)) for h in subs) or \
                    (compat is None and any(h in kept and kept[h] is None for h in subs)):
                continue  # a shorter pattern already says the same
            kept[g] = compat
        sl.patterns = {g: c for g, c in kept.items() if c is not None}
        sl.triggers = [g for g, c in kept.items() if c is None]
        if kinds[key] == "category" and alias_lift:
            _add_aliases(sl, key, checkable, values[key], n_slot[key], gram_slot, gram_value, min_count, min_share,
                         alias_lift)
        common = _context_words(key, sl, checkable, texts, gram_n, gram_slot, n, n_slot[key], slot_names[key])
        if common:
            context_words[key] = common
    _mine_about(lex, texts, names, n_slot, min_count, min_precision, max_n, stop)
    lex.settings["dropped_patterns"] = {why: dropped[why] for why in DROP_REASONS}
    if context_words:
        lex.settings["context_words"] = context_words
    background = _background_words(lex, texts, n_slot)
    if background:
        lex.settings["background_words"] = background
    scale = {k: [p for p in v if k in lex.slots and {p[0], p[1]} <= set(lex.slots[k].values)]
             for k, v in (scale_pairs or {}).items()}
    scale = {k: v for k, v in scale.items() if v}
    if scale:
        _join_scale_pairs(lex, scale)
        lex.settings["scale_pairs"] = {k: [[a, b] for a, b, _ in v] for k, v in sorted(scale.items())}
    return lex


#: two slots asked without a value are kindred when the values the texts give them share at least this share of the
#: smaller slot's values (and :data:`KINDRED_MIN` values or more): SF's ``area`` and ``near`` (18 of near's 42 values
#: are areas in the restaurant data, 11 of 19 in the hotel data: "nob hill", "presidio")
KINDRED_SHARE = 0.25
KINDRED_MIN = 2


def _kindred_groups(texts, asked: set[str]) -> list[frozenset[str]]:
    """Groups (two slots or more) of the slots in ``asked`` that are kindred (:data:`KINDRED_SHARE`): they take the
    same kind of value, so a question of one is a question of the other ("what part of the city are you looking for"
    under ``request(area)`` and under ``request(near)``). Binary and unchecked values do not count."""
    vals: dict[str, set[str]] = defaultdict(set)
    for facts, _ in texts:
        for k, vs in facts.items():
            if k in asked:
                vals[k] |= {v for v in vs if v not in UNCHECKED_VALUES and v not in BINARY_VALUES}
    parent = {k: k for k in asked}

    def root(k: str) -> str:
        while parent[k] != k:
            k = parent[k]
        return k

    keys = sorted(k for k in asked if vals[k])
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            shared = len(vals[a] & vals[b])
            if shared >= KINDRED_MIN and shared >= KINDRED_SHARE * min(len(vals[a]), len(vals[b])):
                parent[root(b)] = root(a)
    groups: dict[str, set[str]] = defaultdict(set)
    for k in asked:
        groups[root(k)].add(k)
    return [frozenset(g) for _, g in sorted(groups.items()) if len(g) > 1]


def _mine_about(lex: "Lexicon", texts, names: set[str], n_slot: Counter, min_count: int, min_precision: float,
                max_n: int, stop: frozenset[str]) -> None:
    """The wordings of each slot that texts ask for without a value (``request(near)``), read from the texts whose MR
    asks for a slot so (questions): an n-gram in ``min_count`` of them or more, ``min_count`` asking for the slot,
    whose normalised lift for the slot among them is at least ``min_precision`` and the highest of any asked slot's,
    unlikely by chance at the slot's rate among them (as a trigger: :data:`TRIGGER_ALPHA`), not only function words,
    not a value, pattern or trigger of the slot already, and no longer one whose part is kept ("close to", "what part
    of the city", "spend"). Why: a question names its slot in words of its own ("how much would you like to spend" for
    ``request(pricerange)``), which no value pattern holds; the matcher reads them for a fact without value only.

    Kindred slots (:func:`_kindred_groups`: they share their values) are read as one slot too, against the slots
    outside the group; a wording that singles the group out and that questions for each of them use is a wording of
    each: SF's hotel questions for ``area`` and for ``near`` are worded alike ("what part
    of the city are you looking for", "where are you looking"), so no wording singles out either slot alone. A wording
    that only one of them uses stays that slot's ("close" for near), and slots of other kinds never share a wording
    so: one that two of them share ("prefer") names neither. No wording is another slot's value with function words
    ("hotel", "a hotel": SF's ``type``; the location questions are mostly the hotel domain's, so "hotel" singles them
    out among the merged SF questions)."""
    asked_texts = [(frozenset(k for k, vals in facts.items() if "" in vals), toks) for facts, toks in texts]
    asked_texts = [(keys, toks) for keys, toks in asked_texts if keys]
    if not asked_texts:
        return
    m = len(asked_texts)
    n_asked = Counter(k for keys, _ in asked_texts for k in keys)
    groups = _kindred_groups(texts, set(n_asked))
    units = [frozenset([k]) for k in sorted(n_asked)] + groups
    n_unit = Counter({u: sum(1 for keys, _ in asked_texts if keys & u) for u in units})
    g_n: Counter = Counter()
    g_unit: dict[str, Counter] = defaultdict(Counter)
    for keys, toks in asked_texts:
        for g in _ngrams(delexicalise(toks, names), max_n):
            if all(t in stop or t in AUXILIARIES or t in NEGATIONS or not t.isalnum() for t in g.split()):
                continue
            g_n[g] += 1
            for u in units:
                if keys & u:
                    g_unit[g][u] += 1
    found: dict[str, list[str]] = defaultdict(list)
    for unit in units:
        members = [k for k in sorted(unit) if lex.slots.get(k) is not None]
        if not members or n_unit[unit] >= m:
            continue
        p = n_unit[unit] / m
        known = set().union(*(set(sl.patterns) | set(sl.triggers) | set(sl.values)
                              for sl in (lex.slots[k] for k in members)))
        rivals = [frozenset([o]) for o in n_asked if o not in unit]
        others = {v for o, sl in lex.slots.items() if o not in unit for v in sl.values}
        for g, cnt in g_n.items():
            c = g_unit[g].get(unit, 0)
            if cnt < min_count or c < min_count or g in known or _lift(c / cnt, p) < min_precision:
                continue
            content = [t for t in g.split() if t not in stop]
            if " ".join(content) in others or any(t in others for t in content):
                continue  # another slot's value ("hotel", "looking for a hotel": SF's type), not the question's words
            if any(_lift(g_unit[g].get(o, 0) / cnt, n_unit[o] / m) > _lift(c / cnt, p) for o in rivals):
                continue
            if len(unit) > 1 and not all(g_unit[g].get(frozenset([k]), 0) for k in unit):
                continue  # a wording of one of the kindred slots only ("close" for near) stays that slot's
            if _chance(c, cnt, p) < TRIGGER_ALPHA:
                for k in members:
                    found[k].append(g)
    for key, cands in found.items():
        kept: list[str] = []
        for g in sorted(set(cands), key=lambda x: (len(x.split()), x)):
            toks = g.split()
            if not any(" ".join(toks[i:j]) in kept for i in range(len(toks)) for j in range(i + 1, len(toks) + 1)):
                kept.append(g)
        lex.slots[key].about = kept


#: a one-word value, pattern or trigger that at least this share of the texts *without* its slot hold is a common
#: word (:func:`_context_words`)
CONTEXT_DF = 0.05
#: ... and it needs its slot's context to match when at least this share of its slot's texts that hold it have
#: the context around it
CONTEXT_SHARE = 0.5
#: how far (tokens, not across a clause boundary) a slot's context may stand from a word that needs it
CONTEXT_REACH = 4
#: what ends a word's context (as the matcher's SCOPE_END)
_CLAUSE_END = frozenset({".", "!", "?", ";", ",", ":", "but", "and", "although", "however", "while", "whereas",
                         "yet"})


#: a one-word value, pattern or trigger of a slot that at least this share of the faithful texts whose MR lacks the
#: slot write is a background word of the slot (:func:`_background_words`) ...
BACKGROUND_DF = 0.1
#: ... when those texts write it at least this share as often as the texts whose MR holds the slot (it tells little
#: about the slot)
BACKGROUND_RATIO = 0.5
#: ... judged only where at least this many texts lack the slot
BACKGROUND_MIN_TEXTS = 20


def _background_words(lex: "Lexicon", texts, n_slot: Counter) -> dict[str, list[str]]:
    """Per slot, the one-word forms that can state one of its values alone (one-word values, patterns and triggers)
    and that :data:`BACKGROUND_DF` or more of the texts whose MR lacks the slot write anyway, at least
    :data:`BACKGROUND_RATIO` as often as the texts that hold it: SF's "restaurant" and "hotel" (``type``: "a nice
    restaurant" under an MR with no type; 15 % and 18 % of the SF training texts without a type, 29 % and 17 % of
    those with one), the SF name "range" ("price range": 11 % without a name, 8 % with one). E2E has none at these
    thresholds (its nearest, priceRange's "high": 12 % without, 29 % with, is a context word). The texts are the
    mining pairs, which realise their MRs, so such a word on its own is no evidence that a text states the slot: the
    matcher does not report it as an invented fact, nor as a second value of a slot the MR holds (it still realises
    the MR's value, or says that value is wrong). Counted on the raw words (before names are delexicalised), once per
    text."""
    n = len(texts)
    cands: dict[str, set[str]] = {}
    for key, sl in lex.slots.items():
        if n - n_slot[key] < BACKGROUND_MIN_TEXTS:
            continue
        words = {g for g in list(sl.patterns) + list(sl.triggers) if " " not in g}
        words |= {v for v in sl.values if v and " " not in v and v not in UNCHECKED_VALUES and v not in BINARY_VALUES}
        if words:
            cands[key] = words
    if not cands:
        return {}
    wanted = set().union(*cands.values())
    df: Counter = Counter()  # texts holding the word
    df_with: dict[str, Counter] = defaultdict(Counter)  # ... whose MR holds the slot
    for facts, toks in texts:
        for w in wanted.intersection(toks):
            df[w] += 1
            for key in facts:
                df_with[w][key] += 1
    out = {}
    for key, words in sorted(cands.items()):
        lacking = n - n_slot[key]
        got = sorted(w for w in words if (df[w] - df_with[w][key]) / lacking >= max(
            BACKGROUND_DF, BACKGROUND_RATIO * df_with[w][key] / max(1, n_slot[key])))
        if got:
            out[key] = got
    return out


def slot_cues(key: str, sl: "SlotLexicon", name: str | None = None) -> set[str]:
    """The words that put a value of slot ``key`` in its context: the content words of its name (``name``, else the
    lexicon's or the key) and of its multi-word patterns and triggers, not words of its values ("rating", "rated",
    "customer", "star" for E2E's ``customer rating``; "credit", "card" for ``acceptscreditcards``)."""
    value_words = {t for v in sl.values for t in v.split()}
    words = {w for w in norm_tokens(property_words(name or sl.name or key)) if content_word(w)}
    for g in list(sl.patterns) + list(sl.triggers):
        toks = g.split()
        if len(toks) > 1:
            words |= {t for t in toks if content_word(t) and t not in value_words and t not in NEGATIONS}
    return words


def is_cue(t: str, cues: Collection[str]) -> bool:
    """Whether the token ``t`` is a word of ``cues`` or, as a content word, a form of one (:func:`_form_of`)."""
    return t in cues or (content_word(t) and any(_form_of(t, c) for c in cues))


def in_context(tokens: Sequence[str], i: int, j: int, cues: set[str], reach: int = CONTEXT_REACH) -> bool:
    """Whether a word of ``cues`` (or a form of one: :func:`is_cue`) stands within ``reach`` tokens of
    ``tokens[i:j]``, in its clause (:data:`_CLAUSE_END`)."""
    for start, step in ((i - 1, -1), (j, 1)):
        k = start
        while 0 <= k < len(tokens) and abs(k - (i if step < 0 else j - 1)) <= reach and tokens[k] not in _CLAUSE_END:
            if is_cue(tokens[k], cues):
                return True
            k += step
    return False


def needs_context(word: str) -> bool:
    """A word too weak to state a value alone, wherever it was mined: a single letter ("a" for an energy rating
    *A*) or a function word (:func:`function_words`)."""
    return (len(word) == 1 and word.isalpha()) or word in function_words() or word in AUXILIARIES


@lru_cache(maxsize=1)
def function_words() -> frozenset[str]:
    """The function words both scikit-learn's and spaCy's English stop-word lists hold (:func:`_stopwords` holds
    scikit-learn's, which also lists content words such as "mill", "system", "fire": "The Mill" is a name, not
    function words). spaCy's list is read from its module file without importing spaCy (as
    :func:`_sklearn_stop_words`); without spaCy, scikit-learn's alone."""
    import importlib.util

    spec = importlib.util.find_spec("spacy")
    path = None if spec is None or not spec.submodule_search_locations else \
        Path(next(iter(spec.submodule_search_locations))) / "lang" / "en" / "stop_words.py"
    if path is None or not path.is_file():
        return _stopwords()
    mod_spec = importlib.util.spec_from_file_location("qe._spacy_stop_words", path)
    if mod_spec is None or mod_spec.loader is None:
        return _stopwords()
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    return _stopwords() & frozenset(getattr(mod, "STOP_WORDS", ()) or _stopwords())


def _context_words(key: str, sl: "SlotLexicon", checkable: set[str], texts, gram_n: Counter, gram_slot, n: int,
                   n_key: int, name: str) -> list[str]:
    """The one-word values, patterns and triggers of slot ``key`` that match only in its context
    (:func:`in_context` of :func:`slot_cues`): besides single letters and function words (:func:`needs_context`,
    decided when matching), words common beyond the slot - held by :data:`CONTEXT_DF` or more of the texts whose MR
    lacks it - that its own texts mostly (:data:`CONTEXT_SHARE`) write in its context ("high" of ``customer
    rating``: "a high customer rating"; not SF's "hotel" of ``type``, which no text writes with a word of
    "type"): such a word alone says the slot's value no more often than it says something else."""
    if n <= n_key:
        return []
    words = {g for g in list(sl.patterns) + list(sl.triggers) if " " not in g}
    words |= {v for v in checkable if " " not in v and v not in BINARY_VALUES}
    cues = slot_cues(key, sl, name)
    out = []
    for w in sorted(words):
        if needs_context(w) or (gram_n.get(w, 0) - gram_slot[w].get(key, 0)) / (n - n_key) < CONTEXT_DF:
            continue
        held = ctx = 0
        for facts, toks in texts:
            if key not in facts or w not in toks:
                continue
            held += 1
            ctx += any(in_context(toks, i, i + 1, cues - {w}) for i, t in enumerate(toks) if t == w)
        if held and ctx / held >= CONTEXT_SHARE:
            out.append(w)
    return out


#: why a mined n-gram is not kept as a pattern although it passes the counts (:func:`_out_of_slot`), as
#: ``Lexicon.settings["dropped_patterns"]`` counts them
DROP_REASONS = ("other_slot_words", "function_word_edge")


def _out_of_slot(words: list[str], key: str, own: set[str], name_words: dict[str, set[str]],
                 value_words: dict[str, set[str]]) -> str | None:
    """Why the n-gram ``words``, a candidate pattern of slot ``key``, is not kept, or None.

    A pattern stays in its slot. It holds no word of another slot, unless the word is also ``key``'s own (``own``:
    its name's and values' words; "high" is both E2E slots'):

    * a word of another binary or category slot's name, or a form of one: "rating and a price" of ``customer
      rating`` holds priceRange's "price";
    * without a word of ``key``'s own name, a content word of another category slot's values: "average rated
      coffee" holds eatType's "coffee" (while "low price" is the price's although "low" is also a rating).

    Matched, such a pattern would swallow the words of another fact and say this slot's value where the text says
    the other's. And it does not end on a function word (:func:`_stopwords`; not a word of the slot's own values,
    such as "than" of ``less than £20``): "average rating and", "£ 20 and", "use a" reach into the next phrase. Nor
    does it start on function words before the slot's own words ("a 5", "the high", "it has an average": the words
    that say the value are mined on their own) or before a negation alone ("does not"). A function word that opens a
    phrase whose words are not the slot's own ("by the river", "near the river" for ``area[riverside]``) is what
    makes the n-gram say the value, and stays: on E2E, dropping those too cost the area slot 20 points of omission
    precision (docs/results/content-log.md,
    "Syntax attachment, patterns in their slot, cues in context")."""
    stop = _stopwords()
    names_own = any(content_word(t) and any(_form_of(t, w) for w in name_words.get(key, ())) for t in words)
    for t in words:
        if t in own or not content_word(t):
            continue
        for other in set(name_words) | set(value_words):
            if other == key:
                continue
            if any(_form_of(t, w) for w in name_words.get(other, ())) or (
                    not names_own and t in value_words.get(other, ())):
                return "other_slot_words"
    stop = stop | AUXILIARIES  # "food and does" (of "does not allow kids") ends on one as much as on "is"
    if len(words) > 1 and words[-1] in stop and words[-1] not in own:
        return "function_word_edge"
    if len(words) > 1 and words[0] in stop and words[0] not in own:
        core = words[next(i for i, w in enumerate(words) if w not in stop or w in own):] if any(
            w not in stop or w in own for w in words) else []
        if not any(content_word(w) and w not in NEGATIONS for w in core) or \
                any(w in value_words.get(key, ()) or w in own for w in core):
            return "function_word_edge"
    return None


def _holds_words(words: list[str], own: set[str], names: set[str]) -> bool:
    """Whether an n-gram's ``words`` hold one of a slot's ``own`` words (its values' and its name's) or a form of a
    word of its name (:func:`_form_of`: "priced" and "prices" for "price"; a function word is no form: "are" is not
    "area")."""
    stop = _stopwords()
    return any(w in own or (w not in stop and any(_form_of(w, x) for x in names)) for w in words)


def _join_scale_pairs(lex: "Lexicon", scale: dict[str, list[tuple[str, str, int]]]) -> None:
    """Each value of a scale pair joins the compatible values of the other's own words and patterns, with a smaller
    weight than the value the words name (so that an addition still says that one)."""
    for key, found in scale.items():
        sl = lex.slots[key]
        for a, b, k in found:
            forms = {y: sorted({y} | {g for g, compat in sl.patterns.items() if y in compat}) for y in (a, b)}
            for x, y in ((a, b), (b, a)):  # y's wordings also realise x
                for form in forms[y]:
                    compat = sl.patterns.setdefault(form, {y: k + 1}) if form == y else sl.patterns[form]
                    compat[x] = max(compat.get(x, 0), max(1, min(k, compat.get(y, 2) - 1)))


def _add_aliases(sl: "SlotLexicon", key: str, checkable: set[str], counts: Counter, n_key: int, gram_slot, gram_value,
                 min_count: int, min_share: float, lift: float) -> None:
    """A value's other wordings: a pattern of value B that the texts of value A use far more often than the texts
    of the slot's other values also realises A ("low" in 12 % of the E2E texts annotated ``1 out of 5``, against
    0-4 % of those of its other values; most texts holding it are ``low``'s). Kept as one more compatible value of
    the pattern (count: the texts of A that hold it) when at least ``min_count`` texts of A hold it, that is
    ``min_share`` of A's texts or more, and ``lift`` times the rate among the texts of the values neither A nor
    compatible with it already (docs/results/content-log.md, "A value's other wordings")."""
    for g, compat in sl.patterns.items():
        share = gram_value[(g, key)]
        c = gram_slot[g].get(key, 0)
        extra = {}
        for a in sorted(checkable - set(compat)):
            ga, na = share.get(a, 0), counts.get(a, 0)
            if ga < min_count or not na or ga / na < min_share:
                continue
            inside = set(compat) | {a}
            g_rest = c - sum(share.get(u, 0) for u in inside)
            n_rest = n_key - sum(counts.get(u, 0) for u in inside)
            if n_rest > 0 and ga / na >= lift * max(g_rest, 1) / n_rest:
                extra[a] = ga
        compat.update(extra)


def _borrowed(g: str, key: str, own_words: set[str], others: dict[str, list[list[str]]],
              gram_value: dict[tuple[str, str], Counter], n_texts: int, min_precision: float) -> bool:
    """Whether the n-gram ``g`` (a candidate pattern of slot ``key``) holds the value of another category slot that
    at least ``min_precision`` of the ``n_texts`` texts holding ``g`` have in their MR: its co-occurrence with
    ``key`` then rests on words that realise another fact ("a cheap english" of priceRange, mined from "a cheap
    English coffee shop", would take "english" from ``food[English]``). A value whose words are also words of
    ``key``'s own values (customer rating's "high", priceRange's "high") does not count, and a value the texts do not
    hold keeps the n-gram ("low price", "average price": priceRange wordings, not customer ratings)."""
    toks = g.split()
    for other, vals in others.items():
        if other == key:
            continue
        for vt in vals:
            if set(vt) <= own_words or not any(toks[i:i + len(vt)] == vt for i in range(len(toks) - len(vt) + 1)):
                continue
            if gram_value.get((g, other), Counter())[" ".join(vt)] >= min_precision * n_texts:
                return True
    return False


# ------------------------------------------------------------------------------------------ RDF triples
#: what closes a stretch of unexplained words (:func:`unexplained_spans`): punctuation and clause openers
SPAN_BOUNDARY = frozenset({".", ",", ";", ":", "!", "?", "(", ")", "and", "but", "which", "who", "whose", "where",
                           "while", "whilst", "although", "however"})


def fold(token: str) -> str:
    """A token without diacritics (``chișinău`` -> ``chisinau``): texts often drop them from foreign names."""
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", token) if not unicodedata.combining(c))


def content_word(token: str) -> bool:
    """A word that may state something: alphabetic, two letters or more, not a function word (numbers are checked
    on their own)."""
    return token.isalpha() and len(token) > 1 and token not in _stopwords()


def _form_of(t: str, w: str) -> bool:
    """``t`` a form of ``w``: near-variants (:func:`~qe.core.surface.tok_close`) or a shared beginning of 4 letters
    or more that is more than half of the longer word (``collaborates`` / ``collaborated``, ``american`` /
    ``america``, ``argentinian`` / ``argentina``, ``english`` / ``england``; not ``bornholm`` / ``born``)."""
    if tok_close(t, w):
        return True
    n = _shared_beginning(t, w)
    return n >= 4 and 2 * n > max(len(t), len(w))


def _shared_beginning(a: str, b: str) -> int:
    """How many letters ``a`` and ``b`` share from their start."""
    return next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


#: the endings by which two forms of one word may differ past their shared beginning (:func:`_word_form`:
#: "families" / "family", "welcoming" / "welcome", "children" / "child", "location" / "located")
INFLECTIONS = frozenset({"", "e", "s", "es", "d", "ed", "ing", "y", "ies", "ied", "ren", "er", "ers", "ion", "ions"})


def _word_form(a: str, b: str) -> bool:
    """Two forms of one word as the matcher reads a trigger (:func:`_form_of`: "kids" / "kid", "children" / "child",
    "allows" / "allow"), both of letters only, not one behind a negating prefix ("unfriendly" is not "friendly"). ``a``
    is the text's word: one shorter than 4 letters is no other form ("all" is not "allow", as in :class:`WordForms`).
    Two words that are no near-variants (:func:`~qe.core.surface.tok_close`) but share a long beginning must differ
    past it by :data:`INFLECTIONS` alone: "familiar" is no form of "family", "friends" none of "friendly", "interest"
    none of "internet", "childless" none of "child"."""
    if not (a.isalpha() and b.isalpha()) or len(a) < 4:
        return False
    if tok_close(a, b):
        return tok_close_strict(a, b)
    n = _shared_beginning(a, b)
    return n >= 4 and 2 * n > max(len(a), len(b)) and a[n:] in INFLECTIONS and b[n:] in INFLECTIONS


class WordForms:
    """A word set that also holds the forms of its words (:func:`_form_of`; a token shorter than 4 letters must be
    one of them exactly). Looked up by the first 4 letters, so a lookup costs a few comparisons."""

    def __init__(self, words: Iterable[str] = ()):
        self.words = set(words)
        self._by4: dict[str, list[str]] = defaultdict(list)
        for w in self.words:
            if len(w) >= 3:
                self._by4[w[:4]].append(w)

    def __contains__(self, t: str) -> bool:
        if t in self.words:
            return True
        if len(t) < 4:
            return False
        # a 3-letter word can be a form's beginning too (``usa`` -> ``usas``): look it up by its own letters
        return any(_form_of(t, w) for key in (t[:4], t[:3]) for w in self._by4.get(key, ()))


def entity_words(entities: Iterable[str]) -> set[str]:
    """The (folded) words of RDF subjects / objects and of their usual surface forms
    (:func:`~qe.core.surface.entity_variants`)."""
    from qe.core.surface import entity_text, entity_variants

    out: set[str] = set()
    for x in entities:
        et = entity_text(x)
        out |= {fold(t) for t in norm_tokens(et)}
        for var in entity_variants(et):
            out |= {fold(t) for t in var}
    return out


def unexplained_spans(tokens: Sequence[str], explained: Callable[[str], bool], max_gap: int = 3) -> list[list[int]]:
    """Positions of the content words (:func:`content_word`) of ``tokens`` (folded) that ``explained`` rejects,
    grouped into stretches: a word joins the stretch before it when at most ``max_gap`` positions separate them and
    none of the tokens between closes it (:data:`SPAN_BOUNDARY`) - one stretch, one thing said."""
    out: list[list[int]] = []
    for i, t in enumerate(tokens):
        if not content_word(t) or explained(t):
            continue
        if out and i - out[-1][-1] <= max_gap and not any(x in SPAN_BOUNDARY for x in tokens[out[-1][-1] + 1:i]):
            out[-1].append(i)
        else:
            out.append([i])
    return out


#: the defaults of :func:`mine_triples` and :func:`triple_words_lexicon` (chosen on WebNLG dev: mine_triples' docstring)
TRIPLE_WORDS_DEFAULTS: dict[str, Any] = {"min_count": 2, "min_property_share": 0.002, "min_common_share": 0.01,
                                         "common_lift": 1.5, "property_lift": 1.0}
_D = TRIPLE_WORDS_DEFAULTS


def mine_triples(pairs: Iterable[tuple[str, str]], *, source: str = "pairs", min_count: int = _D["min_count"],
                 min_property_share: float = _D["min_property_share"],
                 min_common_share: float = _D["min_common_share"],
                 common_lift: float | None = _D["common_lift"], property_lift: float | None = _D["property_lift"],
                 where: str = "<pairs>", mr_format: str = "auto") -> Lexicon:
    """How texts state RDF triples, mined from ``(mr, text)`` pairs whose text realises every triple of its MR (the
    WebNLG training references): a :class:`Lexicon` with no slots and, per property, the words texts use beyond the
    names of their entities (``born`` for ``birthPlace``), plus the words common to texts about any triples.

    Each text's content words (:func:`content_word`, diacritics folded) that are not a form of one of its entities'
    words (:func:`entity_words`, :class:`WordForms`) are counted once per text, with every property of its MR. A word
    is a property's when at least ``min_count`` of that property's texts and ``min_property_share`` of them hold it,
    common when at least ``min_count`` texts and ``min_common_share`` of all texts hold it. The matcher then lists,
    as hallucinated, the stretches of an output's words that neither its triples' entities, nor its properties'
    words (nor those of their names), nor the common words explain (:meth:`qe.content.align.Matcher.align`).

    A word a few properties own is neither common nor every property's (:func:`triple_words_lexicon`):
    ``common_lift`` keeps as common only words as common among the texts without their owners, ``property_lift`` keeps
    for a property only words its texts use at least that many times as often as texts do on the whole (None: off).

    The defaults were chosen on WebNLG development references (``python -m experiments.triple_words``). The
    thresholds: the highest mean detection of texts with another entry's sentence added or an object replaced, minus
    the share of clean references flagged (the lowest thresholds of its grid, where that index is nearly flat). The
    lifts (``--lifts``, at those thresholds): the same with texts that relate their own entities by a property they do
    not hold counted too; with them 6.0 % of clean references get a false alarm (4.7 % without), 99.9 % of the added
    sentences, 96.9 % of the replaced objects and 70.3 % of the relations (34.0 %) are found. On WebNLG no word is
    common by that rule: each text's words are explained by its own properties alone.

    Beside them, per property, the words some property owns that at least one of its own texts uses
    (:attr:`Lexicon.attested`: a rarer wording of it, read only in the one sentence that states its triple)."""
    return triple_words_lexicon(count_triple_words(pairs, where, mr_format), source=source, min_count=min_count,
                                min_property_share=min_property_share, min_common_share=min_common_share,
                                common_lift=common_lift, property_lift=property_lift)


@dataclass
class TripleWordCounts:
    """What :func:`mine_triples` counts (texts holding each word), kept apart so several thresholds can be tried."""

    texts: int
    property_texts: Counter
    per_property: dict[str, Counter]
    common: Counter
    #: per text, the properties of its MR (for :func:`triple_words_lexicon`'s ``common_lift``)
    text_properties: list[frozenset] = field(default_factory=list)
    #: word -> indices (into ``text_properties``) of the texts holding it
    word_texts: dict[str, list[int]] = field(default_factory=dict)


def count_triple_words(pairs: Iterable[tuple[str, str]], where: str = "<pairs>",
                       mr_format: str = "auto") -> TripleWordCounts:
    from qe.core.mr import TRIPLE_ACT, parse_acts

    per_prop: dict[str, Counter] = defaultdict(Counter)
    n_prop: Counter = Counter()
    common: Counter = Counter()
    text_props: list[frozenset] = []
    word_texts: dict[str, list[int]] = defaultdict(list)
    n = 0
    for k, (mr, text) in enumerate(pairs):
        acts = parse_acts(mr, mr_format, where=f"{where}[{k}]")
        triples = [dict(slots) for act, slots in acts if act == TRIPLE_ACT]
        if not triples:
            raise ValueError(f"{where}[{k}]: field 'mr' holds no RDF triples (mine_triples reads triple MRs only)")
        ents = WordForms(entity_words([t["subject"] for t in triples] + [t["object"] for t in triples]))
        words = {t for t in (fold(x) for x in norm_tokens(text)) if content_word(t) and t not in ents}
        common.update(words)
        props = frozenset(norm_slot(t["property"]) for t in triples)
        for w in words:
            word_texts[w].append(n)
        text_props.append(props)
        n += 1
        for prop in props:
            n_prop[prop] += 1
            per_prop[prop].update(words)
    if n == 0:
        raise ValueError(f"{where}: no pairs to mine")
    return TripleWordCounts(n, n_prop, dict(per_prop), common, text_props, dict(word_texts))


def common_words(counts: TripleWordCounts, min_count: int, min_common_share: float,
                 common_lift: float | None = None) -> list[str]:
    """The words common to texts about any triples: held by at least ``min_count`` texts and ``min_common_share`` of
    all texts. With ``common_lift``, a word must be that common also among the texts *without* its properties - the
    properties whose texts hold it at least ``common_lift`` times as often as texts do on the whole (``born``:
    ``birthPlace``, ``birthDate``, ...): a word that belongs to a few properties stays their word, and no longer
    explains itself in a text about other ones."""
    c = counts
    out = []
    rest_of: dict[frozenset, int] = {}  # owners -> texts without any of them
    for w, k in c.common.items():
        if k < min_count or k / c.texts < min_common_share:
            continue
        if common_lift is not None:
            if not c.text_properties:
                raise ValueError("common_lift needs the per-text counts of count_triple_words")
            rate = k / c.texts
            owners = frozenset(p for p, n_p in c.property_texts.items()
                               if c.per_property[p].get(w, 0) / n_p >= common_lift * rate)
            if owners:
                if owners not in rest_of:
                    rest_of[owners] = sum(1 for props in c.text_properties if not props & owners)
                rest = rest_of[owners]
                held = sum(1 for i in c.word_texts.get(w, ()) if not c.text_properties[i] & owners)
                if held < min_count or not rest or held / rest < min_common_share:
                    continue
        out.append(w)
    return sorted(out)


def triple_words_lexicon(counts: TripleWordCounts, *, source: str = "pairs", min_count: int = _D["min_count"],
                         min_property_share: float = _D["min_property_share"],
                         min_common_share: float = _D["min_common_share"],
                         common_lift: float | None = _D["common_lift"],
                         property_lift: float | None = _D["property_lift"]) -> Lexicon:
    """The :class:`Lexicon` of :func:`mine_triples` from its counts. ``common_lift``: :func:`common_words`;
    ``property_lift``: a word is a property's only if that property's texts hold it at least ``property_lift`` times
    as often as texts do on the whole (1: no less often than usual), so that a word all texts use now and then
    ("born" in 0.6 % of the texts about a `capital`, against 11 % of all WebNLG training texts) is not every
    property's word."""
    c = counts

    def own(p: str, w: str, k: int) -> bool:
        share = k / c.property_texts[p]
        return (k >= min_count and share >= min_property_share
                and (property_lift is None or share >= property_lift * c.common[w] / c.texts))

    props = {p: sorted(w for w, k in c.per_property[p].items() if own(p, w, k)) for p in sorted(c.per_property)}
    # the rarer wordings: words some property owns that at least one text of this property uses
    owned = {w for ws in props.values() for w in ws}
    attested = {p: sorted(c.per_property[p].keys() & owned - set(props[p])) for p in sorted(c.per_property)}
    settings = {"texts": c.texts, "min_count": min_count, "min_property_share": min_property_share,
                "min_common_share": min_common_share}
    for k, v in (("common_lift", common_lift), ("property_lift", property_lift)):
        if v is not None:
            settings[k] = v
    return Lexicon(source=source, settings=settings, properties={p: w for p, w in props.items() if w},
                   common=common_words(c, min_count, min_common_share, common_lift),
                   attested={p: w for p, w in attested.items() if w})


def rules_lexicon() -> Lexicon:
    """The lexicon used without data: nothing mined (values are matched by their own surface forms, binary slots by
    the words of the slot's name)."""
    return Lexicon(source="rules")


__all__ = ["Lexicon", "SlotLexicon", "WordForms", "mine", "mine_triples", "count_triple_words", "triple_words_lexicon",
           "common_words", "TRIPLE_WORDS_DEFAULTS", "unexplained_spans", "entity_words", "fold", "content_word",
           "norm_tokens", "raw_tokens", "norm_value", "rules_lexicon", "slot_kind", "delexicalise", "BINARY_VALUES",
           "UNCHECKED_VALUES", "NEGATIONS", "LEXICON_FORMAT"]
