"""Hallucinated words for RDF triples: how well the matcher's unexplained-words check (a lexicon mined by
:func:`qe.content.lexicon.mine_triples` from the WebNLG 2020 *training* references) tells clean texts from texts
that say more than their triples, on the WebNLG *development* references (docs/results/content.md).

    python -m experiments.triple_words --data-dir ../shared/data                 # the grid, and the chosen setting
    python -m experiments.triple_words --grid 0.005:0.002:2 --json out.json      # one setting

Three sets, one text per development entry (a reference drawn with ``--seed``):

* ``clean``: the reference as it is (it realises its triples and, by the corpus' design, nothing else) - every
  stretch the matcher lists is a false alarm; reported: the share of texts with at least one;
* ``added``: the reference plus a reference of another development entry (another first subject): detected when
  the matcher lists more stretches than for the clean text;
* ``swapped``: one object the reference names verbatim replaced by another object of the same property seen in
  training (its words not among the entry's entity words): detected likewise.

``J`` = mean detection rate of ``added`` and ``swapped`` minus the clean texts' false-alarm rate (Youden's index);
the setting with the highest J is the one :func:`~qe.content.lexicon.mine_triples` uses by default. Reported beside
it, not chosen on (it came later): ``relation``, the clean text plus a sentence relating its own first subject and
object by a property the entry does not hold (:func:`relation_set`: only relation words are new). This grid runs
without the lifts, as it did when it chose the thresholds; ``--lifts`` chooses them at those thresholds by ``J3``
(the relation set counted). Only the training and development splits are read; nothing here sees a rating.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict

import numpy as np

GRID = [(p, c, m) for p in (0.002, 0.005, 0.01, 0.02, 0.05) for c in (0.001, 0.002, 0.005, 0.01) for m in (2, 5)]
#: ``--lifts``: common_lift x property_lift (None: off), at the thresholds the first grid chose
LIFTS = [(cl, pl) for cl in (None, 1.5, 2, 3, 5, 10) for pl in (None, 0.5, 1, 1.5, 2, 3)]


def dev_sets(train, dev, seed: int = 0) -> dict[str, list[tuple[str, str, str]]]:
    """``{"clean": [(mr, text, ""), ...], "added": [(mr, text + other, text)], "swapped": [(mr, swapped, text)]}``."""
    from qe.content.lexicon import entity_words, fold, norm_tokens
    from qe.core.surface import entity_text

    rng = np.random.default_rng(seed)
    objects = defaultdict(list)
    for e in train:
        for _, p, o in e.triples:
            objects[p].append(o)
    out: dict[str, list] = {"clean": [], "added": [], "swapped": []}
    for e in dev:
        text = e.lexes[int(rng.integers(len(e.lexes)))].text
        out["clean"].append((e.mr, text, ""))
        other = dev[int(rng.integers(len(dev)))]
        while other.triples[0][0] == e.triples[0][0]:
            other = dev[int(rng.integers(len(dev)))]
        out["added"].append((e.mr, f"{text} {other.lexes[0].text}", text))
        ents = entity_words([x for s, _, o in e.triples for x in (s, o)])
        for _, p, o in e.triples:
            ot = entity_text(o)
            if len(objects[p]) < 2 or not ot or ot not in text.lower():
                continue
            new = entity_text(objects[p][int(rng.integers(len(objects[p])))])
            new_words = {fold(t) for t in norm_tokens(new)}
            if not new_words or new_words & ents or not any(t.isalpha() and len(t) > 1 for t in new_words):
                continue
            i = text.lower().index(ot)
            out["swapped"].append((e.mr, text[:i] + new + text[i + len(ot):], text))
            break
    out["relation"] = relation_set(train, dev, out["clean"], seed)
    return out


def relation_set(train, dev, clean, seed: int = 0) -> list[tuple[str, str, str]]:
    """``[(mr, text + sentence, text)]``: each clean text with one more sentence that relates its first triple's own
    subject and object by another property - a one-triple training reference of a property the entry does not hold,
    its subject and object (named verbatim there) replaced by the entry's. Only the relation's words are new: the
    hallucination is a relation, not a name. Drawn from their own random stream, so the other sets stay as they are."""
    import re

    from qe.core.surface import entity_text

    rng = np.random.default_rng([seed, 1])
    templates = []
    for e in train:
        if len(e.triples) != 1:
            continue
        s_, p_, o_ = e.triples[0]
        st, ot = entity_text(s_), entity_text(o_)
        for x in e.lexes:
            low = x.text.lower()
            if st and ot and st in low and ot in low and st not in ot and ot not in st:
                templates.append((p_, x.text, st, ot))
    out = []
    for e, (mr, text, _) in zip(dev, clean):
        props = {p for _, p, _ in e.triples}
        s0, _, o0 = e.triples[0]
        for _ in range(20):
            p_, t, st, ot = templates[int(rng.integers(len(templates)))]
            if p_ in props:
                continue
            sent = re.sub(re.escape(st), lambda _m: entity_text(s0).title(), t, count=1, flags=re.I)
            sent = re.sub(re.escape(ot), lambda _m: entity_text(o0).title(), sent, count=1, flags=re.I)
            out.append((mr, f"{text} {sent}", text))
            break
    return out


def measure(lexicon, sets) -> dict[str, float]:
    from qe.content.align import Matcher

    m = Matcher(lexicon)

    def n_words(mr, text):  # stretches of unexplained words, and objects read as another one (a wrong verdict)
        al = m.align(mr, text)
        return sum(h.get("kind") == "words" for h in al.hallucinated) + sum(v.status == "wrong" for v in al.verdicts)

    clean = [n_words(mr, t) for mr, t, _ in sets["clean"]]
    out = {"clean_flagged": float(np.mean([c > 0 for c in clean])), "clean_stretches": float(np.mean(clean))}
    for kind in ("added", "swapped", "relation"):
        if kind in sets:
            out[f"{kind}_detected"] = float(np.mean([n_words(mr, t) > n_words(mr, base)
                                                     for mr, t, base in sets[kind]]))
    # the criterion that chose the thresholds; J3 counts the relation set too (what chose common_lift)
    out["J"] = (out["added_detected"] + out["swapped_detected"]) / 2 - out["clean_flagged"]
    if "relation_detected" in out:
        out["J3"] = (out["added_detected"] + out["swapped_detected"] + out["relation_detected"]) / 3 \
            - out["clean_flagged"]
    return out


def false_alarms(lexicon, sets) -> list[tuple[str, int]]:
    """The word stretches the matcher lists in the clean texts (all false alarms), most frequent first."""
    from collections import Counter

    from qe.content.align import Matcher

    m = Matcher(lexicon)
    c = Counter(h["said"] for mr, t, _ in sets["clean"] for h in m.align(mr, t).hallucinated
                if h.get("kind") == "words")
    return c.most_common()


def number_alarms(dev) -> tuple[int, int]:
    """(references with a number the matcher calls hallucinated, all references) over every development reference:
    each realises its triples, so nearly every such number is a false alarm of the number rules."""
    from qe.content.align import Matcher

    m = Matcher()
    flags = [any("kind" not in h for h in m.align(e.mr, x.text).hallucinated) for e in dev for x in e.lexes]
    return sum(flags), len(flags)


def main(argv=None) -> int:
    from qe.content.lexicon import count_triple_words, triple_words_lexicon
    from qe.content.scorer import triple_pairs
    from qe.data.webnlg import webnlg_entries

    ap = argparse.ArgumentParser(prog="python -m experiments.triple_words", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None, help="the shared data directory (default: $QE_DATA_DIR)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--grid", nargs="*", default=None, metavar="PROP:COMMON:COUNT",
                    help="settings min_property_share:min_common_share:min_count (default: the built-in grid)")
    ap.add_argument("--json", default=None, help="write every setting's figures here")
    ap.add_argument("--lifts", action="store_true",
                    help="instead of the threshold grid: common_lift x property_lift at the default thresholds, "
                         "chosen by J3 (the relation set counted)")
    a = ap.parse_args(argv)
    grid = GRID if not a.grid else [(float(x.split(":")[0]), float(x.split(":")[1]), int(x.split(":")[2]))
                                    for x in a.grid]
    t0 = time.time()
    train, dev = webnlg_entries("train", a.data_dir), webnlg_entries("dev", a.data_dir)
    counts = count_triple_words(triple_pairs(train), "webnlg2020/train")  # what lexicon=webnlg is mined from
    sets = dev_sets(train, dev, a.seed)
    print(f"training texts {counts.texts}; development: clean {len(sets['clean'])}, added {len(sets['added'])}, "
          f"swapped {len(sets['swapped'])}, relation {len(sets['relation'])}", file=sys.stderr)
    if a.lifts:
        return lift_grid(counts, sets, a.json, t0)
    rows = []
    print("| min property share | min common share | min count | clean flagged | stretches per clean text | "
          "added detected | swapped detected | J | relation detected |\n|---|---|---|---|---|---|---|---|---|")
    for p, c, m in grid:
        # the threshold grid was run (and chose the thresholds) before the lifts existed: without them
        lex = triple_words_lexicon(counts, min_count=m, min_property_share=p, min_common_share=c, common_lift=None,
                                   property_lift=None)
        r = {"min_property_share": p, "min_common_share": c, "min_count": m, **measure(lex, sets)}
        rows.append(r)
        print(f"| {p:g} | {c:g} | {m} | {r['clean_flagged']:.3f} | {r['clean_stretches']:.3f} | "
              f"{r['added_detected']:.3f} | {r['swapped_detected']:.3f} | {r['J']:.3f} | "
              f"{r['relation_detected']:.3f} |", flush=True)
    best = max(rows, key=lambda r: r["J"])
    k, n = number_alarms(dev)
    print(f"\ndevelopment references with a number called hallucinated (matcher, no lexicon): {k} of {n} "
          f"({100 * k / n:.1f} %)")
    print(f"highest J: min_property_share={best['min_property_share']:g} "
          f"min_common_share={best['min_common_share']:g} min_count={best['min_count']} (J {best['J']:.3f}); "
          f"{time.time() - t0:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"seed": a.seed, "rows": rows, "best": best, "number_alarms": [k, n]}, f, indent=1)
    return 0


def lift_grid(counts, sets, json_path, t0) -> int:
    """The ``--lifts`` grid: which words explain themselves in any text (``common_lift``) and which are a property's
    (``property_lift``), chosen by J3 (ties to 3 decimals: fewer clean texts flagged)."""
    from qe.content.lexicon import triple_words_lexicon

    rows = []
    print("| common lift | property lift | common words | property words | clean flagged | added detected | "
          "swapped detected | relation detected | J | J3 |\n|---|---|---|---|---|---|---|---|---|---|")
    for cl, pl in LIFTS:
        lex = triple_words_lexicon(counts, common_lift=cl, property_lift=pl)
        r = {"common_lift": cl, "property_lift": pl, "common_words": len(lex.common),
             "property_words": sum(map(len, lex.properties.values())), **measure(lex, sets)}
        rows.append(r)
        print(f"| {cl or 'off'} | {pl or 'off'} | {r['common_words']} | {r['property_words']} | "
              f"{r['clean_flagged']:.3f} | {r['added_detected']:.3f} | {r['swapped_detected']:.3f} | "
              f"{r['relation_detected']:.3f} | {r['J']:.3f} | {r['J3']:.3f} |", flush=True)
    best = max(rows, key=lambda r: (round(r["J3"], 3), -r["clean_flagged"]))
    print(f"\nhighest J3: common_lift={best['common_lift']} property_lift={best['property_lift']} "
          f"(J3 {best['J3']:.3f}, clean flagged {best['clean_flagged']:.3f}); {time.time() - t0:.0f} s")
    alarms = false_alarms(triple_words_lexicon(counts, common_lift=best["common_lift"],
                                               property_lift=best["property_lift"]), sets)
    best["false_alarms"] = alarms
    print("its most frequent false alarms on the clean texts: "
          + ", ".join(f"{t!r} ({n})" for t, n in alarms[:10]))
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"rows": rows, "best": best}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
