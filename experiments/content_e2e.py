"""Content alignment against gold: slot-level precision and recall of omissions and additions on the cleaned E2E
development references (docs/results/content.md).

    python -m experiments.content_e2e                     # every engine, 5 folds
    python -m experiments.content_e2e --engines matcher --folds 5 --json out.json

Gold: ``devel-fixed.no-ol.csv`` gives, for 4,299 human references, the MR each was written for (``orig_mr``) and the
MR it realises (``mr``, re-annotated by Dušek, Howcroft & Rieser 2019). For every fact of ``orig_mr`` an engine says
whether the reference realises it; a fact is *omitted* in gold when ``mr`` does not hold it (left out, or stated with
another value). An engine's *additions* are the (slot, value) pairs it reads in the text that ``orig_mr`` does not
hold; gold additions are those ``mr`` holds and ``orig_mr`` does not.

Engines: ``rules`` (values by their own surface forms, no data), ``matcher`` (plus a lexicon mined from the other
folds' references: cross-fitted, folds grouped by ``orig_mr`` so no MR is both mined and measured). Only the dev
split is read; the test references stay untouched.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

import numpy as np


def _facts(matcher, mr: str) -> set[tuple[str, str]]:
    from qe.content.lexicon import norm_value
    from qe.core.surface import norm_slot

    return {(norm_slot(s), norm_value(v)) for _, s, v in matcher.facts(mr)}


def _prf(tp: int, fp: int, fn: int) -> dict[str, float]:
    p = tp / (tp + fp) if tp + fp else float("nan")
    r = tp / (tp + fn) if tp + fn else float("nan")
    f = 2 * p * r / (p + r) if p + r and not (np.isnan(p) or np.isnan(r)) else float("nan")
    return {"precision": p, "recall": r, "f1": f, "tp": tp, "fp": fp, "fn": fn}


def evaluate(rows: list[dict], engine: str, folds: int = 5, seed: int = 1, **mine_kw) -> dict:
    from qe.content import Matcher, mine
    from qe.content.lexicon import norm_value
    from qe.core.surface import norm_slot

    groups = sorted({r["orig_mr"] for r in rows})
    rng = np.random.default_rng(seed)
    fold_of = dict(zip(groups, rng.permutation(len(groups)) % folds))
    c = Counter()
    per_slot: dict[str, Counter] = {}
    exact = 0
    for k in range(folds):
        test = [r for r in rows if fold_of[r["orig_mr"]] == k]
        if engine == "rules":
            m = Matcher()
        else:
            train = [(r["mr"], r["ref"]) for r in rows if fold_of[r["orig_mr"]] != k]
            m = Matcher(mine(train, source=f"e2e-dev-fold{k}", **mine_kw))
        for r in test:
            orig, gold = _facts(m, r["orig_mr"]), _facts(m, r["mr"])
            al = m.align(r["orig_mr"], r["ref"])
            pred_omit = {(norm_slot(v.slot), norm_value(v.value)) for v in al.verdicts
                         if v.status in ("omitted", "wrong")}
            realised = {(k2, v2) for k2, vals in al.realised_mr().items() for v2 in
                        [norm_value(x) for x in vals]}
            realised = {(norm_slot(s), v) for s, v in realised}
            pred_add = realised - orig
            gold_omit, gold_add = orig - gold, gold - orig
            for f in orig:
                key = f[0]
                ps = per_slot.setdefault(key, Counter())
                if f in gold_omit and f in pred_omit:
                    c["omit_tp"] += 1; ps["omit_tp"] += 1
                elif f in pred_omit:
                    c["omit_fp"] += 1; ps["omit_fp"] += 1
                elif f in gold_omit:
                    c["omit_fn"] += 1; ps["omit_fn"] += 1
            for f in gold_add | pred_add:
                ps = per_slot.setdefault(f[0], Counter())
                if f in gold_add and f in pred_add:
                    c["add_tp"] += 1; ps["add_tp"] += 1
                elif f in pred_add:
                    c["add_fp"] += 1; ps["add_fp"] += 1
                else:
                    c["add_fn"] += 1; ps["add_fn"] += 1
            realised_all = {(norm_slot(s), norm_value(v)) for s, vals in al.realised_mr().items() for v in vals}
            exact += realised_all == gold
    return {"engine": engine, "folds": folds, "rows": len(rows),
            "omissions": _prf(c["omit_tp"], c["omit_fp"], c["omit_fn"]),
            "additions": _prf(c["add_tp"], c["add_fp"], c["add_fn"]),
            "exact_mr": exact / len(rows),
            "per_slot": {s: {"omissions": _prf(v["omit_tp"], v["omit_fp"], v["omit_fn"]),
                             "additions": _prf(v["add_tp"], v["add_fp"], v["add_fn"])} for s, v in sorted(per_slot.items())}}


def table(results: list[dict]) -> str:
    lines = ["| engine | omissions P | R | F1 | additions P | R | F1 | MR exactly right |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        o, a = r["omissions"], r["additions"]
        lines.append(f"| {r['engine']} | {o['precision']:.3f} | {o['recall']:.3f} | {o['f1']:.3f} | {a['precision']:.3f} | "
                     f"{a['recall']:.3f} | {a['f1']:.3f} | {r['exact_mr']:.3f} |")
    return "\n".join(lines)


def slot_table(r: dict) -> str:
    lines = [f"per slot, {r['engine']}:", "| slot | omissions P | R | (gold) | additions P | R | (gold) |", "|---|---|---|---|---|---|---|"]
    for s, d in r["per_slot"].items():
        o, a = d["omissions"], d["additions"]
        lines.append(f"| {s} | {o['precision']:.3f} | {o['recall']:.3f} | {o['tp'] + o['fn']} | {a['precision']:.3f} | "
                     f"{a['recall']:.3f} | {a['tp'] + a['fn']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", nargs="+", default=["rules", "matcher"])
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--json", default=None, help="write every figure (per slot too) here")
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--min-precision", type=float, default=0.9)
    ap.add_argument("--min-share", type=float, default=0.1)
    a = ap.parse_args(argv)
    from qe.data.e2e import e2e_slot_gold

    rows = e2e_slot_gold("dev", a.data_dir)
    results = []
    for e in a.engines:
        t0 = time.time()
        res = evaluate(rows, e, a.folds, a.seed, min_count=a.min_count, min_precision=a.min_precision,
                       min_share=a.min_share)
        res["seconds"] = round(time.time() - t0, 1)
        results.append(res)
        print(f"{e}: {res['seconds']} s", file=sys.stderr)
    print(table(results))
    for r in results:
        print()
        print(slot_table(r))
    if a.json:
        from qe.core.jsonio import dumps

        with open(a.json, "w", encoding="utf-8") as f:
            f.write(dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
