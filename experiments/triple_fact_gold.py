"""Fact-level gold for the content check on RDF triples: one verdict per triple (realised, omitted, wrong) on
hand-written outputs for WebNLG 2020 *development* entries (docs/results/content-triples.md).

    python -m experiments.triple_fact_gold                      # rules only (lexicon=none)
    python -m experiments.triple_fact_gold --lexicon webnlg     # the words of the WebNLG training references
    python -m experiments.triple_fact_gold --clean              # + false `wrong` on the clean dev references

The gold (``experiments/gold/webnlg_dev_triple_facts.jsonl``) holds, per line, no data of the corpus but the entry's
id (``<member>#<eid>`` of :func:`qe.data.webnlg.webnlg_entries`, e.g. ``dev/3triples/Airport.xml#Id3``; the triples
are read from the development archive in the data directory), an output written for this gold, one label per triple
in the entry's order and the number of hallucinated clauses::

    {"id": "dev/3triples/Airport.xml#Id3", "output": "... is in Barcelona. ...",
     "labels": ["realised", "wrong", "realised"], "hallucinated": 0, "note": "location: said Barcelona"}

README. 135 outputs, 471 facts (292 realised, 74 omitted, 105 wrong), 12 invented clauses, written by hand for 135
development entries of 3 or 4 triples (one entry per first subject, drawn at random across the 16 categories, plus
the entries with nationality / deathPlace triples and the Madrid-Barajas airport ones). Each output realises some
triples, leaves some out and gets some wrong on purpose, and 12 add an invented clause; 15 are clean (every triple
realised, nothing added). The labels were written with the outputs, before the matcher was run on them, and none was
changed afterwards. How they were decided:

* ``realised``: the text states the triple (any wording; a pronoun for the subject; a converted unit, "125.8 metres"
  for ``125800.0 (millimetres)``, or "3.3528 metres below sea level" for ``-3.3528``, counts);
* ``wrong``: the text states the triple's subject and property with another object ("an American" for
  ``nationality | Canada``, "completed in December 2010" for ``December 2008``), or ties the object to a contradicting
  property ("born in St. Louis" for ``deathPlace | St._Louis``, "preceded by" for ``successor``). One clause is charged
  to one triple: to the triple of the property it states when the MR has one ("born in London" with ``birthPlace |
  Manchester`` and ``deathPlace | London``: birthPlace wrong, deathPlace omitted), else to the triple whose object it
  names under the contradicting property;
* ``omitted``: nothing says it; an object that appears only inside another name ("Madrid" in "Adolfo Suárez
  Madrid-Barajas Airport", "Indian" in "Indian Air Force", "Bacon" in "bacon sandwich") is not stated;
* ``hallucinated``: the clauses that state something no triple holds ("He also played football for Olympiacos");
  the wrong object of a wrong triple is not one.

Figures: precision / recall / F1 per verdict (the gold label against the matcher's), the confusion matrix, and for
hallucinations the share of outputs whose count the matcher gets exactly, the outputs with any (precision / recall),
and the totals. ``--clean``: every development reference the corpus marks ``good`` aligned with its own triples (it
realises all of them, so every ``wrong`` is a false alarm): the share of triples called wrong, and of references with
at least one. Nothing here reads a rating; the gold is for evaluation only (nothing is tuned on its figures).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

GOLD = Path(__file__).resolve().parent / "gold" / "webnlg_dev_triple_facts.jsonl"
VERDICTS = ("realised", "omitted", "wrong")


def load_gold(path: str | Path = GOLD) -> list[dict]:
    rows = []
    for k, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        r = json.loads(line)
        if not (isinstance(r.get("id"), str) and isinstance(r.get("output"), str)
                and isinstance(r.get("labels"), list) and all(x in VERDICTS for x in r["labels"])
                and isinstance(r.get("hallucinated"), int)):
            raise ValueError(f"{path}:{k}: expected id, output, labels (realised | omitted | wrong), hallucinated")
        rows.append(r)
    return rows


def entry_index(data_dir: str | None = None) -> dict:
    from qe.data.webnlg import webnlg_entries

    return {f"{e.member}#{e.eid}": e for e in webnlg_entries("dev", data_dir)}


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def evaluate(matcher, gold: list[dict], entries: dict) -> dict:
    """Per-verdict precision / recall / F1, the confusion matrix (gold -> predicted) and hallucination agreement."""
    confusion: Counter = Counter()
    hal_exact = hal_tp = hal_fp = hal_fn = 0
    hal_gold = hal_pred = 0
    rows = []
    for g in gold:
        e = entries.get(g["id"])
        if e is None:
            raise ValueError(f"gold id {g['id']!r}: no such development entry")
        if len(e.triples) != len(g["labels"]):
            raise ValueError(f"gold id {g['id']!r}: {len(g['labels'])} labels for {len(e.triples)} triples")
        al = matcher.align(e.mr, g["output"])
        pred = [v.status for v in al.verdicts]
        for a, b in zip(g["labels"], pred):
            confusion[(a, b)] += 1
        n = len(al.hallucinated)
        hal_gold += g["hallucinated"]
        hal_pred += n
        hal_exact += n == g["hallucinated"]
        hal_tp += bool(n) and bool(g["hallucinated"])
        hal_fp += bool(n) and not g["hallucinated"]
        hal_fn += not n and bool(g["hallucinated"])
        rows.append({"id": g["id"], "gold": g["labels"], "pred": pred, "hallucinated": g["hallucinated"],
                     "pred_hallucinated": [h.get("said") for h in al.hallucinated]})
    per = {}
    for v in VERDICTS:
        tp = confusion[(v, v)]
        fp = sum(c for (a, b), c in confusion.items() if b == v and a != v)
        fn = sum(c for (a, b), c in confusion.items() if a == v and b != v)
        p, r, f = prf(tp, fp, fn)
        per[v] = {"precision": p, "recall": r, "f1": f, "gold": tp + fn, "predicted": tp + fp}
    hp, hr, hf = prf(hal_tp, hal_fp, hal_fn)
    facts = sum(confusion.values())
    return {"facts": facts, "outputs": len(gold),
            "accuracy": sum(c for (a, b), c in confusion.items() if a == b) / max(1, facts),
            "verdicts": per, "confusion": {f"{a}->{b}": c for (a, b), c in sorted(confusion.items())},
            "hallucinated": {"exact": hal_exact / max(1, len(gold)), "gold_total": hal_gold, "pred_total": hal_pred,
                             "outputs_precision": hp, "outputs_recall": hr, "outputs_f1": hf},
            "rows": rows}


def clean_references(matcher, entries: dict) -> dict:
    """Every ``good`` development reference aligned with its own triples: the share of triples called wrong."""
    triples = wrong = omitted = refs = refs_wrong = 0
    examples = []
    for e in entries.values():
        for x in e.lexes:
            if x.comment != "good":
                continue
            al = matcher.align(e.mr, x.text)
            st = Counter(v.status for v in al.verdicts)
            refs += 1
            triples += sum(st.values())
            wrong += st["wrong"]
            omitted += st["omitted"]
            refs_wrong += st["wrong"] > 0
            if st["wrong"] and len(examples) < 400:
                examples.append({"id": f"{e.member}#{e.eid}", "text": x.text,
                                 "wrong": [(v.slot, v.value, v.said) for v in al.verdicts if v.status == "wrong"]})
    return {"references": refs, "triples": triples, "wrong": wrong, "wrong_rate": wrong / max(1, triples),
            "refs_with_wrong": refs_wrong / max(1, refs), "omitted_rate": omitted / max(1, triples),
            "examples": examples}


def report(res: dict, lexicon: str) -> str:
    lines = [f"lexicon={lexicon}: {res['outputs']} outputs, {res['facts']} facts, accuracy {res['accuracy']:.3f}",
             f"{'verdict':10} {'gold':>5} {'pred':>5} {'P':>6} {'R':>6} {'F1':>6}"]
    for v, m in res["verdicts"].items():
        lines.append(f"{v:10} {m['gold']:5d} {m['predicted']:5d} {m['precision']:6.3f} {m['recall']:6.3f} "
                     f"{m['f1']:6.3f}")
    lines.append("confusion (gold->pred): " + ", ".join(f"{k} {c}" for k, c in res["confusion"].items()))
    h = res["hallucinated"]
    lines.append(f"hallucinated clauses: gold {h['gold_total']}, matcher {h['pred_total']}; exact count agreement "
                 f"{h['exact']:.3f} of outputs; outputs with any: P {h['outputs_precision']:.3f} "
                 f"R {h['outputs_recall']:.3f} F1 {h['outputs_f1']:.3f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.triple_fact_gold", description=__doc__.split("\n\n")[0])
    ap.add_argument("--lexicon", default="none", choices=("none", "webnlg"),
                    help="none: rules only; webnlg: the words of the WebNLG 2020 training references (about 20 s)")
    ap.add_argument("--gold", default=str(GOLD), help="the gold JSONL (default: %(default)s)")
    ap.add_argument("--data-dir", default=None, help="the shared data directory (default: $QE_DATA_DIR)")
    ap.add_argument("--clean", action="store_true", help="also the false `wrong` rate on the clean dev references")
    ap.add_argument("--json", default=None, help="write every figure (and the per-output rows) to this JSON file")
    ap.add_argument("--show", action="store_true", help="print the outputs where the matcher disagrees")
    args = ap.parse_args(argv)

    from qe.content.align import Matcher
    from qe.content.scorer import resolve_lexicon

    t0 = time.perf_counter()
    matcher = Matcher(resolve_lexicon(args.lexicon, args.data_dir))
    entries = entry_index(args.data_dir)
    res = evaluate(matcher, load_gold(args.gold), entries)
    print(report(res, args.lexicon))
    if args.show:
        for r in res["rows"]:
            if r["gold"] != r["pred"] or r["hallucinated"] != len(r["pred_hallucinated"]):
                print(f"  {r['id']}: gold {r['gold']} pred {r['pred']}; hallucinated {r['hallucinated']} "
                      f"vs {r['pred_hallucinated']}")
    if args.clean:
        res["clean"] = clean_references(matcher, entries)
        c = res["clean"]
        print(f"clean dev references: {c['references']} texts, {c['triples']} triples; called wrong "
              f"{c['wrong']} ({100 * c['wrong_rate']:.2f} % of triples, {100 * c['refs_with_wrong']:.2f} % of "
              f"texts); omitted {100 * c['omitted_rate']:.2f} % of triples")
    print(f"({time.perf_counter() - t0:.1f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
