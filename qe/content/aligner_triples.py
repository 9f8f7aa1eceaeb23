"""Training data for the learned aligner on RDF triples (WebNLG): (query, output) pairs labelled ``realised`` /
``omitted`` / ``wrong``, generated from WebNLG *training* entries (each reference text realises every triple of its
entry). The attribute-value counterpart is :mod:`qe.content.aligner_data`; the model, its export and its use are
those of :mod:`qe.content.aligner` (``qe train task=content_aligner data.source=webnlg``).

A triple's query is its three parts as words, ``subject | property | object`` (:func:`triple_query`: DBpedia names
with underscores as spaces and quotes dropped, :func:`~qe.core.surface.entity_text`; the property split into words,
:func:`~qe.core.surface.property_words`): ``alan bean | birth place | wheeler, texas``. The output is its matching
tokens, as for slots (:func:`~qe.content.aligner_data.output_text`).

For each row (one reference text of an entry, ``lexes_per_entry`` per entry) :func:`make_triple_examples` yields:

* ``fact`` (realised): every triple of the entry with the text; those the matcher finds (its object is named) are
  kept with probability ``p_found`` - the aligner is asked about the others in the combined engine;
* ``other`` (omitted): a triple of another training entry that shares the subject (another fact about the same
  entity: the hard case) or the property, asked about the unchanged text; skipped when the matcher finds its object
  in the text;
* ``drop`` (omitted): a triple whose object the matcher finds has its words deleted from the text (every place they
  stand, with the function words just before, :func:`~qe.content.aligner_data.drop_spans`; a short clause opened by a
  comma or semicolon goes with them when no other triple's object is in it: ", which is in wheeler , texas");
  skipped when the matcher still finds the object;
* ``swap`` (wrong): the triple with its object replaced by another object seen with the same property in training,
  the text unchanged (it states the property with its own object); skipped when the matcher finds the new object in
  the text;
* ``swap_text`` (wrong): where the matcher found the object's own words, they are replaced by another object's of the
  same property (the triple asked unchanged); skipped when the matcher still finds the triple's object;
* ``prop`` (wrong; ``prop_negatives``): a triple asked with another property, the text unchanged - the property
  drawn from those seen in training with the triple's own object or sharing an object with its property (its object
  type fits: birth place -> death place), half of the time (when there are some) from those of them the subject has
  in other training triples (the hard case: a fact the entity may well have); skipped when the new (subject,
  property, object) is one of the entry's triples or of a training triple with the same subject and object (then the
  text may well realise it), or when the two properties are close (:meth:`TripleInventory.close`: place properties,
  names sharing a word, stated together). Labelled ``wrong``, not ``omitted``: the text names both entities and
  relates them, but by another relation - a misstatement of the asked fact, as a swapped object is. The matcher is
  not a veto here (it checks objects only, so it mostly calls these realised: the error the combined engine cannot
  see). Drawn from their own random stream (``prop_rng``), so the other kinds' pairs for a fixed seed are those
  generated without it.

Every example records the matcher's verdict on its (triple, text) - what the combined engine keeps - so that the
threshold on P(realised) can be chosen on held-out entries (:func:`calibrate_triples`; WebNLG has no omission gold:
the labels are the generated ones).
"""
from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qe.content.aligner_data import (LABELS, OMITTED, REALISED, WRONG, Example, drop_spans, f1, output_text,  # noqa: F401
                                     triple_query, verdict_query)  # the queries live there: qe.content.aligner reads them too
from qe.content.lexicon import norm_tokens
from qe.core.surface import entity_text, property_words

log = logging.getLogger(__name__)

TRIPLE_KINDS = ("fact", "other", "drop", "swap", "swap_text", "prop")
#: the query format an export trained on triples records (``config.query_triples``)
QUERY_FORMAT = "subject words | property words | object words"
#: where a clause opened by a comma may end; it is deleted with a dropped object only when it is this short
_CLAUSE_END = frozenset({",", ";", ".", "!", "?", ")"})
_CLAUSE_MAX = 10
#: WebNLG's properties that place an entity, used for one another (a text saying "located in texas" for ``state``):
#: never ``prop`` negatives of each other
_PLACE_PROPERTIES = frozenset({"location", "country", "isPartOf", "region", "city", "state", "headquarter"})
#: words of property names too general to make two properties one (birth place / death place)
_GENERIC_WORDS = frozenset({"place", "name", "date", "year", "number", "length", "type", "code", "total", "size",
                            "start", "end", "feet", "runway", "surface"})
#: two properties stated between the same subject and object this often (share of the rarer one's pairs) are close
_CLOSE_SHARE = 0.25


@dataclass(frozen=True)
class TripleExample(Example):
    triple: tuple[str, str, str] = ("", "", "")  #: (subject, property, object) asked about
    matcher: str = ""  #: the matcher's verdict on the triple and the text (``realised`` / ``omitted``)


def rows_from_entries(entries: Iterable, rng: np.random.Generator, lexes_per_entry: int = 1) -> list[dict]:
    """Rows ``{"mr", "ref", "triples"}``: up to ``lexes_per_entry`` reference texts per entry (drawn), the corpus'
    ``bad`` texts left out."""
    rows = []
    for e in entries:
        lexes = [x for x in e.lexes if x.comment != "bad" and x.text.strip()]
        if not lexes or not e.triples:
            continue
        pick = rng.permutation(len(lexes))[:max(1, int(lexes_per_entry))]
        rows += [{"mr": e.mr, "ref": lexes[int(k)].text, "triples": [tuple(t) for t in e.triples]}
                 for k in sorted(pick)]
    return rows


@dataclass
class TripleInventory:
    """Per property (as written) its objects, most frequent first; per subject and per property the training
    triples that hold it (for the ``other`` negatives)."""

    objects: dict[str, list[str]]
    by_subject: dict[str, list[tuple[str, str, str]]]
    by_property: dict[str, list[tuple[str, str, str]]]

    def __post_init__(self) -> None:
        self._fits: dict[str, list[str]] | None = None
        self._by_object: dict[str, list[str]] | None = None
        self._pairs: dict[tuple[str, str], set[str]] | None = None
        self._close: set[tuple[str, str]] = set()

    def _index(self) -> None:
        objs = {p: {entity_text(o) for o in os} for p, os in self.objects.items()}
        by_o: dict[str, set[str]] = {}
        for p, os in objs.items():
            for o in os:
                by_o.setdefault(o, set()).add(p)
        self._by_object = {o: sorted(ps) for o, ps in by_o.items()}
        self._fits = {p: sorted({q for o in os for q in by_o[o]} - {p}) for p, os in objs.items()}
        pairs: dict[tuple[str, str], set[str]] = {}
        for ts in self.by_subject.values():
            for s, p, o in ts:
                pairs.setdefault((entity_text(s), entity_text(o)), set()).add(p)
        self._pairs = pairs
        n: Counter = Counter(p for ps in pairs.values() for p in ps)
        co: Counter = Counter((a, b) for ps in pairs.values() for a in ps for b in ps if a != b)
        self._close = {(a, b) for (a, b), c in co.items() if c >= _CLOSE_SHARE * min(n[a], n[b])}

    def close(self, p: str, q: str) -> bool:
        """Whether a text stating ``p`` may well state ``q`` too, so that asking ``q`` is no sure negative: both in
        :data:`_PLACE_PROPERTIES`; a content word of their names shares its first four letters (operator / operating
        organisation; :data:`_GENERIC_WORDS` do not count: birth place / death place stay apart); or training
        triples state both between the same subject and object for at least :data:`_CLOSE_SHARE` of the rarer one's
        pairs (club / youth club, language / official language)."""
        if self._pairs is None:
            self._index()
        if p in _PLACE_PROPERTIES and q in _PLACE_PROPERTIES:
            return True
        stems = [{w[:4] for w in property_words(x).split() if len(w) >= 4 and w not in _GENERIC_WORDS} for x in (p, q)]
        return bool(stems[0] & stems[1]) or (p, q) in self._close

    def fitting_properties(self, prop: str, obj: str) -> list[str]:
        """Properties other than ``prop`` whose object type fits: seen in training with ``obj`` itself or with an
        object ``prop`` is seen with (sorted)."""
        if self._fits is None:
            self._index()
        return sorted((set(self._fits.get(prop, [])) | set(self._by_object.get(entity_text(obj), []))) - {prop})

    def pair_properties(self, subject: str, obj: str) -> set[str]:
        """The properties training triples state between ``subject`` and ``obj`` (by their words)."""
        if self._pairs is None:
            self._index()
        return self._pairs.get((entity_text(subject), entity_text(obj)), set())

    @classmethod
    def from_rows(cls, rows: Iterable[dict]) -> "TripleInventory":
        objs: dict[str, Counter] = {}
        by_s: dict[str, set] = {}
        by_p: dict[str, set] = {}
        for r in rows:
            for s, p, o in r["triples"]:
                objs.setdefault(p, Counter())[o] += 1
                by_s.setdefault(entity_text(s), set()).add((s, p, o))
                by_p.setdefault(p, set()).add((s, p, o))
        return cls({p: [o for o, _ in sorted(c.items(), key=lambda x: (-x[1], x[0]))] for p, c in sorted(objs.items())},
                   {k: sorted(v) for k, v in sorted(by_s.items())}, {k: sorted(v) for k, v in sorted(by_p.items())})


def _align1(matcher, triple: tuple[str, str, str], text: str | list[str]):
    """The matcher's verdict on one triple (only its object is checked when it is alone)."""
    out = text if isinstance(text, str) else " ".join(text)
    return matcher.align(json.dumps([list(triple)], ensure_ascii=False), out).verdicts[0]


def _find(tokens: list[str], sub: list[str]) -> list[tuple[int, int]]:
    n = len(sub)
    return [(i, i + n) for i in range(len(tokens) - n + 1) if n and tokens[i:i + n] == sub]


def _outside_subject(tokens: list[str], sub: list[str], subject: str) -> list[tuple[int, int]]:
    """Where ``sub`` stands in ``tokens`` outside the places the subject is named (``aarhus`` in ``aarhus airport``
    is the subject's name, not the object ``aarhus``)."""
    subj = {i for a, b in _find(tokens, norm_tokens(entity_text(subject))) for i in range(a, b)}
    return [(a, b) for a, b in _find(tokens, sub) if not subj & set(range(a, b))]


def _clause(tokens: list[str], i: int, j: int, keep: set[int]) -> tuple[int, int] | None:
    """The clause around ``tokens[i:j]`` opened by a comma or semicolon and closed by punctuation, when it is short and
    holds none of the ``keep`` positions; the opening mark goes with it, the closing one stays."""
    a = i - 1
    while a >= 0 and tokens[a] not in _CLAUSE_END:
        a -= 1
    b = j
    while b < len(tokens) and tokens[b] not in _CLAUSE_END:
        b += 1
    if a < 0 or tokens[a] not in (",", ";") or b - a - 1 > _CLAUSE_MAX or any(a <= k < b for k in keep):
        return None
    return a, b


def make_triple_examples(rows: Iterable[dict], matcher, inventory: TripleInventory, rng: np.random.Generator, *,
                         p_found: float = 0.5, prop_rng: np.random.Generator | None = None) -> list[TripleExample]:
    """Labelled pairs from rows ``{"triples", "ref"}`` (module docstring); ``matcher`` (:class:`~qe.content.align.
    Matcher`) locates objects and vetoes the synthetic labels it contradicts; ``rng`` draws what each error acts
    on. ``prop_rng`` given: ``prop`` negatives too, drawn from it alone (the other kinds' pairs are the same with or
    without them)."""
    out: list[TripleExample] = []
    for r in rows:
        triples = [tuple(t) for t in r["triples"]]
        toks = norm_tokens(r["ref"])
        if not triples or not toks:
            continue
        text = output_text(toks)
        verdicts = [_align1(matcher, t, r["ref"]) for t in triples]
        for t, v in zip(triples, verdicts):
            if v.status == "realised" and rng.random() >= p_found:
                continue
            out.append(_ex(t, text, REALISED, "fact", v.status))
        out += _other(triples, r["ref"], text, matcher, inventory, rng)
        out += _drop_triple(triples, verdicts, toks, matcher, rng)
        out += _swap_triple(triples, verdicts, toks, r["ref"], text, matcher, inventory, rng)
        if prop_rng is not None:
            out += _prop_triple(triples, r["ref"], text, matcher, inventory, prop_rng)
    return out


def _ex(t, text: str, label: int, kind: str, matcher_status: str) -> TripleExample:
    s, p, o = t
    return TripleExample(triple_query(p, s, o), text, label, kind, p, (s, p, o), matcher_status)


def _other(triples, ref, text, matcher, inventory, rng) -> list[TripleExample]:
    own = {(entity_text(s), p, entity_text(o)) for s, p, o in triples}
    pools = []
    for s, p, o in triples:
        pools.append(inventory.by_subject.get(entity_text(s), []))
    subj = [t for pool in pools for t in pool if (entity_text(t[0]), t[1], entity_text(t[2])) not in own]
    prop = [t for _, p, _ in triples for t in inventory.by_property.get(p, [])
            if (entity_text(t[0]), t[1], entity_text(t[2])) not in own]
    cands = subj if subj and (not prop or rng.random() < 0.5) else prop
    if not cands:
        return []
    t = cands[int(rng.integers(len(cands)))]
    v = _align1(matcher, t, ref)
    if v.status == "realised":
        return []
    return [_ex(t, text, OMITTED, "other", v.status)]


def _drop_triple(triples, verdicts, toks, matcher, rng) -> list[TripleExample]:
    cands = [k for k, v in enumerate(verdicts) if v.status == "realised" and v.said]
    if not cands:
        return []
    k = cands[int(rng.integers(len(cands)))]
    spans = _outside_subject(toks, verdicts[k].said.split(), triples[k][0])
    if not spans:
        return []
    keep = {i for m, v in enumerate(verdicts) if m != k and v.said for a, b in _find(toks, v.said.split())
            for i in range(a, b)}
    cl = _clause(toks, *spans[0], keep)
    if cl is not None:
        spans = [cl] + spans[1:]
    left = drop_spans(toks, spans)
    if len(left) < 2:
        return []
    v = _align1(matcher, triples[k], left)
    if v.status == "realised":
        return []
    return [_ex(triples[k], output_text(left), OMITTED, "drop", v.status)]


def _swap_triple(triples, verdicts, toks, ref, text, matcher, inventory, rng) -> list[TripleExample]:
    own = {entity_text(o) for _, _, o in triples}
    cands = [k for k, (_, p, _) in enumerate(triples)
             if any(entity_text(u) not in own for u in inventory.objects.get(p, []))]
    if not cands:
        return []
    k = cands[int(rng.integers(len(cands)))]
    s, p, o = triples[k]
    others = [u for u in inventory.objects[p] if entity_text(u) not in own]
    new = others[int(rng.integers(len(others)))]
    v = verdicts[k]
    spans = _outside_subject(toks, v.said.split(), s) if v.status == "realised" and v.said else []
    if spans and rng.random() < 0.5:  # the text states another object; the triple keeps its own
        new_toks = norm_tokens(entity_text(new).split(" (")[0])
        out_toks: list[str] = []
        i = 0
        for a, b in spans:
            if a < i:
                continue
            out_toks += toks[i:a] + new_toks
            i = b
        out_toks += toks[i:]
        nv = _align1(matcher, (s, p, o), out_toks)
        if nv.status == "realised" or not new_toks:
            return []
        return [_ex((s, p, o), output_text(out_toks), WRONG, "swap_text", nv.status)]
    nv = _align1(matcher, (s, p, new), ref)
    if nv.status == "realised":
        return []
    return [_ex((s, p, new), text, WRONG, "swap", nv.status)]


def _prop_triple(triples, ref, text, matcher, inventory: TripleInventory, rng) -> list[TripleExample]:
    own = {(entity_text(s), p, entity_text(o)) for s, p, o in triples}

    def allowed(s, p, o, props):
        seen = inventory.pair_properties(s, o)
        return [q for q in props if q not in seen and (entity_text(s), q, entity_text(o)) not in own
                and not inventory.close(p, q)]

    cands = []
    for s, p, o in triples:
        fit = allowed(s, p, o, inventory.fitting_properties(p, o))
        seen = {q for _, q, _ in inventory.by_subject.get(entity_text(s), [])}
        subj = [q for q in fit if q in seen]
        if fit:
            cands.append(((s, p, o), fit, subj))
    if not cands:
        return []
    (s, p, o), fit, subj = cands[int(rng.integers(len(cands)))]
    pool = subj if subj and (not fit or rng.random() < 0.5) else fit
    q = pool[int(rng.integers(len(pool)))]
    v = _align1(matcher, (s, q, o), ref)
    return [_ex((s, q, o), text, WRONG, "prop", v.status)]


# ------------------------------------------------------------------------------------------------- calibration
THRESHOLDS = tuple(round(x, 2) for x in np.arange(0.05, 0.96, 0.05))


def engine_figures(examples: Sequence[TripleExample], p_realised: np.ndarray, threshold: float | None,
                   combined: bool = True, overrule: np.ndarray | None = None) -> dict[str, float]:
    """Figures of an engine on labelled triple pairs: ``threshold`` None is the matcher alone; else the aligner says
    realised when P(realised) reaches it - for the pairs the matcher calls omitted only when ``combined``;
    ``overrule`` (combined only; ``override`` on triples): where true, a pair the matcher calls realised is an error
    (the aligner's most likely label is ``wrong``). Realised
    recall (of the ``realised`` pairs), error precision / recall / F1 (``omitted`` or ``wrong`` against realised),
    accuracy and MCC of realised vs not."""
    from sklearn.metrics import matthews_corrcoef

    gold = np.array([e.label != REALISED for e in examples])
    matcher_err = np.array([e.matcher != "realised" for e in examples])
    if threshold is None:
        pred = matcher_err
    else:
        al_err = np.asarray(p_realised) < threshold
        pred = (matcher_err & al_err) if combined else al_err
        if combined and overrule is not None:
            pred = pred | (~matcher_err & np.asarray(overrule, bool))
    tp, fp, fn = int((pred & gold).sum()), int((pred & ~gold).sum()), int((~pred & gold).sum())
    return {"realised_recall": float((~pred & ~gold).sum() / max(1, (~gold).sum())),
            "error_precision": tp / max(1, tp + fp), "error_recall": tp / max(1, tp + fn), "error_f1": f1(tp, fp, fn),
            "accuracy": float((pred == gold).mean()) if len(gold) else float("nan"),
            "mcc": float(matthews_corrcoef(gold, pred)) if len(set(gold)) > 1 else 0.0}


def calibrate_triples(aligner, examples: Sequence[TripleExample]) -> dict[str, Any]:
    """Per engine mode, the P(realised) threshold of :data:`THRESHOLDS` with the best error F1 on the held-out
    entries' generated pairs (ties: nearest 0.5); ``override`` is ``combined`` with the matcher's realised triples
    overruled where ``wrong`` is the aligner's most likely label (:class:`~qe.content.aligner.AlignedMatcher`). No
    additions are asked about for triples."""
    from qe.content.aligner import MODES

    probs = aligner.probs([e.pair for e in examples]) if examples else np.zeros((0, len(LABELS)))
    p, wrong = probs[:, REALISED], probs.argmax(axis=1) == WRONG
    out: dict[str, Any] = {"thresholds": {}, "additions": {m: False for m in MODES}, "table": {}, "metrics": {}}
    m = engine_figures(examples, p, None)
    out["metrics"].update({f"val/triples_{k}_matcher": v for k, v in m.items()})
    for mode in MODES:
        comb = mode != "aligner"
        over = wrong if mode == "override" else None
        table = {t: engine_figures(examples, p, t, comb, over)["error_f1"] for t in THRESHOLDS}
        best = max(table, key=lambda t: (round(table[t], 6), -abs(t - 0.5)))
        out["thresholds"][mode] = best
        out["table"][mode] = {str(t): round(v, 4) for t, v in table.items()}
        figs = engine_figures(examples, p, best, comb, over)
        out["metrics"].update({f"val/triples_{k}_{mode}": v for k, v in figs.items()})
        log.info("aligner on triples, mode %s: threshold %.2f (error F1 %.3f; matcher %.3f; %d pairs)", mode, best,
                 table[best], m["error_f1"], len(examples))
    out["why"] = f"per mode, the best error F1 on {len(examples)} generated pairs of held-out training entries"
    return out


# ------------------------------------------------------------------------------------------------- measurement
def measure_dev(export: str, data_dir=None, seed: int = 7, threshold: float | None = None,
                prop_negatives: bool = True) -> dict[str, Any]:
    """The matcher against the matcher + aligner (combined and override; and the aligner alone) on WebNLG *dev*:
    realised recall over every triple of every dev reference text (each realises all its entry's triples), with each
    engine's whole-MR alignment; and the figures of :func:`engine_figures` on labels generated from one reference per
    dev entry (all facts kept, objects to swap drawn from the training entries' inventory; ``prop`` negatives from
    their own stream, seeded ``seed + 1``, unless ``prop_negatives`` is false). ``threshold`` None: the export's per
    mode."""
    from qe.content import Matcher
    from qe.content.aligner import AlignedMatcher, Aligner
    from qe.data.webnlg import webnlg_entries

    aligner = Aligner.load(export)
    matcher = Matcher()
    dev = webnlg_entries("dev", data_dir)
    mrs, outs = zip(*[(e.mr, x.text) for e in dev for x in e.lexes if x.comment != "bad"])
    matched = [matcher.align(m, o) for m, o in zip(mrs, outs)]
    out: dict[str, Any] = {"dev_entries": len(dev), "dev_texts": len(outs)}
    engines = {"matcher": None, "matcher+aligner": "combined", "matcher+aligner-override": "override",
               "aligner": "aligner"}
    for name, mode in engines.items():
        als = matched if mode is None else AlignedMatcher(matcher, aligner, mode, threshold=threshold).align_many(
            list(mrs), list(outs), matched=matched)
        c = Counter(v.status for al in als for v in al.verdicts)
        out[f"realised_recall_refs/{name}"] = c["realised"] / max(1, sum(c.values()))
    out["triples_refs"] = int(sum(len(al.verdicts) for al in matched))
    rng = np.random.default_rng(seed)
    train_rows = rows_from_entries(webnlg_entries("train", data_dir), np.random.default_rng(seed))
    rows = rows_from_entries(dev, rng)
    ex = make_triple_examples(rows, matcher, TripleInventory.from_rows(train_rows), rng, p_found=1.0,
                              prop_rng=np.random.default_rng(seed + 1) if prop_negatives else None)
    out["generated"] = kind_counts(ex)
    probs = aligner.probs([e.pair for e in ex])
    p, wrong = probs[:, REALISED], probs.argmax(axis=1) == WRONG
    for name, mode in engines.items():
        t = None if mode is None else (threshold if threshold is not None else aligner.threshold_for(mode))
        comb, over = mode in ("combined", "override"), (wrong if mode == "override" else None)
        out.update({f"{k}/{name}": v for k, v in engine_figures(ex, p, t, comb, over).items()})
        out[f"threshold/{name}"] = t
        for kind in TRIPLE_KINDS:
            sub = [i for i, e in enumerate(ex) if e.kind == kind]
            if not sub:
                continue
            f = engine_figures([ex[i] for i in sub], p[sub], t, comb, None if over is None else over[sub])
            out[f"accuracy_{kind}/{name}"] = f["accuracy"]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m qe.content.aligner_triples EXPORT [--data-dir D] [--threshold T]``: :func:`measure_dev` as
    JSON."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m qe.content.aligner_triples", description=measure_dev.__doc__)
    ap.add_argument("export")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--threshold", type=float, default=None)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-prop", action="store_true", help="no wrong-property (prop) negatives in the generated labels")
    a = ap.parse_args(argv)
    from qe.core.jsonio import dumps

    print(dumps(measure_dev(a.export, a.data_dir, a.seed, a.threshold, not a.no_prop), indent=1))
    return 0


def kind_counts(examples: Iterable[Example]) -> dict[str, int]:
    c = Counter(f"{e.kind}_{LABELS[e.label]}" for e in examples)
    return dict(sorted(c.items()))


__all__ = ["TRIPLE_KINDS", "QUERY_FORMAT", "TripleExample", "TripleInventory", "triple_query", "verdict_query",
           "rows_from_entries", "make_triple_examples", "engine_figures", "calibrate_triples", "kind_counts",
           "THRESHOLDS", "measure_dev"]


if __name__ == "__main__":
    raise SystemExit(main())
