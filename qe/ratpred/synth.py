"""Synthetic training instances with artificial errors (RatPred, Section 3.3), and data-to-text errors for RDF
triple MRs.

The paper's five error types (:data:`ERROR_TYPES`), applied to the *delexicalised* output tokens (so placeholders
count as content words and values are put back afterwards by :func:`qe.ratpred.mr.relexicalise`):

1. ``remove``          - remove a word (never the last word left);
2. ``duplicate``       - duplicate a word at its current position;
3. ``duplicate_rand``  - duplicate a word at a random position;
4. ``insert_rand``     - insert a random dictionary word (before the chosen word);
5. ``replace``         - replace a word by a random dictionary word (a different one when possible).

The word to act on is drawn uniformly among *content* tokens: articles and punctuation
(``^([!?,:.;]|the|an?)$``) are avoided while other tokens exist. The dictionary holds every token of the
training outputs with +1-smoothed unigram probabilities (:class:`Dictionary`).

Data-to-text errors (:data:`D2T_ERROR_TYPES`; not in the paper): they need the MR's triples
(:class:`qe.ratpred.mr.Delex` ``triples``: subject and object placeholder ``X-e<n>`` per triple) and act on one triple,
drawn uniformly among the triples they apply to (``pos`` picks it by its index in the MR instead):

6. ``drop_triple``    - drop a triple's content: every mention of its entities that no other triple names is removed
   (its object and subject; when both are shared with other triples, its object alone); not when nothing would be
   left;
7. ``repeat_triple``  - repeat a triple: the phrase ending in its object's first mention (from the token after the
   previous placeholder or punctuation mark) is inserted again after it, joined by ``and``
   (``X-e1 was born in X-e2 .`` -> ``X-e1 was born in X-e2 and was born in X-e2 .``); the subject's when the object
   is not mentioned;
8. ``swap_entities``  - swap subject and object: the first mentions of a triple's subject and object change places
   (``X-e2 was born in X-e1``);
9. ``wrong_value``    - a wrong entity or value: every mention of one of the triple's entities becomes another entity
   of the corpus (:class:`EntityPool`: one that stood in the same role - subject or object - of the same property
   elsewhere, e.g. another birth place; any corpus entity when there is none), never one of this MR's own entities.
   The wrong value is written out as words, so it stays lexical when the output is delexicalised again.

A setup chooses its error types (``protocol.error_types``; default the paper's five). For each error, the type is
drawn uniformly among the chosen types that apply to the current tokens (``remove`` needs two tokens; the
data-to-text types need a triple MR and a mention of the entity they act on; ``wrong_value`` a corpus entity); when
none of the chosen types applies, among the paper's five. Outputs of dialogue-act MRs therefore only ever get the
paper's errors, drawn exactly as with the paper's five alone.

Ratings (:func:`lowered_rating`, :func:`penalised_rating`): the paper takes 1 per error; a rating of 5.5 or 6
drops to 4 at the first error, then -1 per further error; never below ``min_rating`` (1). (The authors' released
converter computes ``max(1, min(4, r - n))``, which keeps a 6 at 4 for two errors; we follow the paper's text.)
Each error type has a penalty (:data:`ERROR_PENALTY`, ``protocol.error_penalties`` overrides it) in place of the
paper's 1: the first error takes a 5.5 / 6 to ``4 - (penalty - 1)``, any other rating down by its penalty; later
errors take their penalties. The paper's five and ``drop_triple`` / ``repeat_triple`` cost 1 - the latter two are
the content-level forms of what the paper's ``remove`` / ``duplicate`` already do when they hit a placeholder;
``swap_entities`` and ``wrong_value`` cost 2: they leave a fluent text that states a false fact, which none of the
paper's errors produce, and a rater reading the data sees it at once. These two penalties are a design choice, not
fitted to any rating (no WebNLG rating may be used for it); with every penalty 1 the rule is the paper's.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

#: the paper's five error types
ERROR_TYPES = ("remove", "duplicate", "duplicate_rand", "insert_rand", "replace")
#: data-to-text error types for RDF triple MRs (module docstring)
D2T_ERROR_TYPES = ("drop_triple", "repeat_triple", "swap_entities", "wrong_value")
ALL_ERROR_TYPES = ERROR_TYPES + D2T_ERROR_TYPES
#: rating penalty per error of each type (module docstring)
ERROR_PENALTY: dict[str, float] = {**{k: 1.0 for k in ERROR_TYPES}, "drop_triple": 1.0, "repeat_triple": 1.0,
                                   "swap_entities": 2.0, "wrong_value": 2.0}
FUNCTION_RE = re.compile(r"^([!?,:.;]|the|an?)$")
_BOUNDARY_RE = re.compile(r"^[!?,:.;]$")


def lowered_rating(rating: float, n_errors: int, min_rating: float = 1.0) -> float:
    """Rating after ``n_errors`` synthetic errors (paper, Section 3.3)."""
    if n_errors < 0:
        raise ValueError(f"n_errors must be >= 0, got {n_errors}")
    if n_errors == 0:
        return float(rating)
    first = 4.0 if rating >= 5.5 else rating - 1.0
    return float(max(min_rating, first - (n_errors - 1)))


def check_error_types(kinds) -> tuple[str, ...]:
    """``kinds`` as a tuple, every name known (ValueError naming the unknown ones and the choices)."""
    kinds = tuple(kinds)
    bad = [k for k in kinds if k not in ALL_ERROR_TYPES]
    if bad or not kinds:
        raise ValueError(f"error types {bad or '[]'}: choose one or more of {', '.join(ALL_ERROR_TYPES)}")
    return kinds


def error_penalties(overrides: dict | None = None) -> dict[str, float]:
    """:data:`ERROR_PENALTY` with ``overrides`` (error type -> penalty > 0) applied."""
    out = dict(ERROR_PENALTY)
    for k, v in (overrides or {}).items():
        if k not in out:
            raise ValueError(f"error_penalties: unknown error type {k!r}; choose from {', '.join(ALL_ERROR_TYPES)}")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise ValueError(f"error_penalties.{k}: a penalty must be a number > 0, got {v!r}")
        out[k] = float(v)
    return out


def penalised_rating(rating: float, kinds, penalties: dict[str, float] | None = None,
                     min_rating: float = 1.0) -> float:
    """Rating after the errors ``kinds`` (in the order made), each costing its penalty (module docstring); with
    every penalty 1 exactly :func:`lowered_rating`."""
    pen = ERROR_PENALTY if penalties is None else penalties
    kinds = list(kinds)
    if all(pen[k] == 1.0 for k in kinds):
        return lowered_rating(rating, len(kinds), min_rating)
    r = float(rating)
    for i, k in enumerate(kinds):
        r = 4.0 - (pen[k] - 1.0) if i == 0 and rating >= 5.5 else r - pen[k]
    return float(max(min_rating, r))


class EntityPool:
    """Subjects and objects of a corpus of triple MRs, as token tuples: per (role, property words) and all together
    (sorted, so a seeded draw is reproducible), for the ``wrong_value`` error."""

    def __init__(self, by_key: dict[tuple[str, str], list[tuple[str, ...]]], every: list[tuple[str, ...]]):
        self.by_key, self.every = by_key, every

    @classmethod
    def from_mrs(cls, mrs) -> "EntityPool":
        """From MR strings; MRs that are not triples are skipped (they may be unparsable in any other way too)."""
        from qe.ratpred.mr import TRIPLE_ACT, parse, tokenize
        from qe.core.mr import detect

        keys: dict[tuple[str, str], set] = {}
        every: set = set()
        for mr in dict.fromkeys(mrs):
            if not mr or detect(mr) != "triples":
                continue
            for act, slots in parse(mr):
                if act != TRIPLE_ACT:
                    continue
                sv = dict(slots)
                for role in ("subject", "object"):
                    t = tuple(tokenize(sv[role]))
                    if t:
                        keys.setdefault((role, sv["property"]), set()).add(t)
                        every.add(t)
        return cls({k: sorted(v) for k, v in keys.items()}, sorted(every))

    def __len__(self) -> int:
        return len(self.every)

    def sample(self, rng: np.random.Generator, role: str, prop: str, avoid=frozenset(),
               trials: int = 20) -> list[str] | None:
        """An entity that stood as ``role`` of ``prop`` in the corpus, else any entity; never one whose text
        (tokens joined by spaces) is in ``avoid``; None when there is none."""
        for pool in (self.by_key.get((role, prop), ()), self.every):
            if not pool:
                continue
            for _ in range(trials):
                e = pool[int(rng.integers(len(pool)))]
                if " ".join(e) not in avoid:
                    return list(e)
            rest = [e for e in pool if " ".join(e) not in avoid]
            if rest:
                return list(rest[int(rng.integers(len(rest)))])
        return None


@dataclass
class Dictionary:
    """Word list with +1-smoothed unigram probabilities from all training outputs."""

    words: list[str]
    probs: np.ndarray
    #: corpus entities for ``wrong_value`` (None: that error type never applies)
    entities: EntityPool | None = None

    @classmethod
    def from_token_lists(cls, token_lists, entities: EntityPool | None = None) -> "Dictionary":
        c = Counter(t for toks in token_lists for t in toks)
        if not c:
            raise ValueError("cannot build a synthetic-error dictionary from no tokens")
        words = sorted(c)
        freq = np.array([c[w] + 1.0 for w in words])
        return cls(words, freq / freq.sum(), entities)

    def sample(self, rng: np.random.Generator, avoid: str | None = None, trials: int = 100) -> str:
        for _ in range(trials):
            w = self.words[int(rng.choice(len(self.words), p=self.probs))]
            if w != avoid:
                return w
        return w


def pick_position(tokens: list[str], rng: np.random.Generator) -> int:
    """Uniform among content tokens; any token when there are only articles/punctuation."""
    content = [i for i, t in enumerate(tokens) if not FUNCTION_RE.match(t)]
    pool = content if content else list(range(len(tokens)))
    return int(pool[int(rng.integers(len(pool)))])


Triple = tuple[str, str, str]  # (subject placeholder, property words, object placeholder)


def _shared(triples: list[Triple], ph: str) -> bool:
    return sum(ph in (t[0], t[2]) for t in triples) > 1


def _drop_targets(toks: list[str], triples: list[Triple], t: Triple) -> list[str]:
    """The placeholders ``drop_triple`` removes for triple ``t`` (module docstring); empty when it does not apply."""
    present = [ph for ph in dict.fromkeys((t[2], t[0])) if ph and ph in toks]
    own = [ph for ph in present if not _shared(triples, ph)]
    targets = own or ([t[2]] if t[2] in present else [])
    if not targets or all(x in targets for x in toks):
        return []
    return targets


def _wrong_value_roles(toks: list[str], t: Triple) -> list[tuple[str, str]]:
    return [(role, ph) for role, ph in (("subject", t[0]), ("object", t[2])) if ph and ph in toks]


def _triple_applies(kind: str, toks: list[str], triples: list[Triple], t: Triple, dictionary: "Dictionary") -> bool:
    if kind == "drop_triple":
        return bool(_drop_targets(toks, triples, t))
    if kind == "repeat_triple":
        return t[0] in toks or t[2] in toks
    if kind == "swap_entities":
        return t[0] != t[2] and t[0] in toks and t[2] in toks
    if kind == "wrong_value":
        return bool(_wrong_value_roles(toks, t)) and dictionary.entities is not None and len(dictionary.entities) > 0
    raise ValueError(f"not a data-to-text error type: {kind!r}")


def applies(kind: str, tokens: list[str], dictionary: "Dictionary", triples=()) -> bool:
    """Whether an error of ``kind`` can be made in ``tokens`` (module docstring)."""
    if kind in ERROR_TYPES:
        return not (kind == "remove" and len(tokens) <= 1)
    triples = list(triples)
    return any(_triple_applies(kind, tokens, triples, t, dictionary) for t in triples)


def _apply_d2t(toks: list[str], kind: str, rng: np.random.Generator, dictionary: "Dictionary", triples: list[Triple],
               pos: int | None, avoid) -> list[str]:
    if pos is None:
        fits = [t for t in triples if _triple_applies(kind, toks, triples, t, dictionary)]
        if not fits:
            raise ValueError(f"error type {kind!r} does not apply to this output (no triple entity of the right kind "
                             "is mentioned)")
        t = fits[int(rng.integers(len(fits)))]
    else:
        if not 0 <= pos < len(triples):
            raise ValueError(f"triple {pos} out of range: the MR has {len(triples)} triples")
        t = triples[pos]
        if not _triple_applies(kind, toks, triples, t, dictionary):
            raise ValueError(f"error type {kind!r} does not apply to triple {pos} {t} of this output")
    if kind == "drop_triple":
        targets = _drop_targets(toks, triples, t)
        return [x for x in toks if x not in targets]
    if kind == "repeat_triple":
        ph = t[2] if t[2] in toks else t[0]
        i = toks.index(ph)
        j = i - 1
        while j >= 0 and not (toks[j].startswith("X-") or _BOUNDARY_RE.match(toks[j])):
            j -= 1
        return toks[:i + 1] + ["and", *toks[j + 1:i + 1]] + toks[i + 1:]
    if kind == "swap_entities":
        a, b = toks.index(t[0]), toks.index(t[2])
        toks[a], toks[b] = toks[b], toks[a]
        return toks
    # wrong_value
    roles = _wrong_value_roles(toks, t)
    role, ph = roles[int(rng.integers(len(roles)))]
    new = dictionary.entities.sample(rng, role, t[1], avoid)
    if new is None:
        raise ValueError("wrong_value: the corpus has no entity other than this MR's own")
    out: list[str] = []
    for x in toks:
        out.extend(new if x == ph else [x])
    return out


def apply_error(tokens: list[str], kind: str, rng: np.random.Generator, dictionary: Dictionary,
                pos: int | None = None, triples=(), avoid=frozenset()) -> list[str]:
    """Return a copy of ``tokens`` with one error of ``kind``; ``pos`` overrides the position choice (for the
    data-to-text types: the index of the triple to act on). ``triples``: (subject placeholder, property words,
    object placeholder) per triple of the MR (:attr:`qe.ratpred.mr.Delex.triples`); ``avoid``: this MR's entity
    texts, never drawn as a wrong value."""
    if kind not in ALL_ERROR_TYPES:
        raise ValueError(f"unknown error type {kind!r}; choose from {ALL_ERROR_TYPES}")
    toks = list(tokens)
    if kind in D2T_ERROR_TYPES:
        return _apply_d2t(toks, kind, rng, dictionary, list(triples), pos, avoid)
    if not toks:
        if kind in ("insert_rand", "replace", "duplicate_rand"):
            return [dictionary.sample(rng)]
        return toks
    i = pick_position(toks, rng) if pos is None else pos
    tok = toks[i]
    if kind == "remove":
        if len(toks) <= 1:
            raise ValueError("the last word left is never removed")
        del toks[i]
    elif kind == "duplicate":
        toks.insert(i, tok)
    elif kind == "duplicate_rand":
        toks.insert(int(rng.integers(len(toks) + 1)), tok)
    elif kind == "insert_rand":
        toks.insert(i, dictionary.sample(rng))
    elif kind == "replace":
        toks[i] = dictionary.sample(rng, avoid=tok)
    return toks


def distort(tokens: list[str], n_errors: int, rng: np.random.Generator, dictionary: Dictionary,
            kinds: tuple[str, ...] = ERROR_TYPES, triples=(), avoid=frozenset()) -> tuple[list[str], list[str]]:
    """Apply ``n_errors`` random errors, each of a type drawn among ``kinds`` that apply (:func:`applies`; none:
    among the paper's five). Returns (tokens, kinds made)."""
    toks = list(tokens)
    triples = list(triples)
    done = []
    for _ in range(n_errors):
        allowed = [k for k in kinds if applies(k, toks, dictionary, triples)]
        if not allowed:
            allowed = [k for k in ERROR_TYPES if applies(k, toks, dictionary)]
        kind = allowed[int(rng.integers(len(allowed)))]
        toks = apply_error(toks, kind, rng, dictionary, triples=triples, avoid=avoid)
        done.append(kind)
    return toks, done
