"""Content alignment against gold: slot-level precision and recall of omissions and additions on the cleaned E2E
development references (docs/results/content.md).

    python -m experiments.content_e2e                     # every engine, 5 folds
    python -m experiments.content_e2e --engines matcher --folds 5 --json out.json
    python -m experiments.content_e2e --spread s42.json s1.json s2.json   # mean ± sd over seeds' --json files

Gold: ``devel-fixed.no-ol.csv`` gives, for 4,299 human references, the MR each was written for (``orig_mr``) and the
MR it realises (``mr``, re-annotated by Dušek, Howcroft & Rieser 2019). For every fact of ``orig_mr`` an engine says
whether the reference realises it; a fact is *omitted* in gold when ``mr`` does not hold it (left out, or stated with
another value). An engine's *additions* are the (slot, value) pairs it reads in the text that ``orig_mr`` does not
hold; gold additions are those ``mr`` holds and ``orig_mr`` does not.

Engines: ``rules`` (values by their own surface forms, no data), ``matcher`` (plus a lexicon mined from the other
folds' references: cross-fitted, folds grouped by ``orig_mr`` so no MR is both mined and measured). Only the dev
split is read; the test references stay untouched.

With ``--aligner EXPORT [EXPORT ...]`` (``content_aligner`` exports of ``qe train task=content_aligner
data.held_out=[...]``), three more engines, the modes of :class:`qe.content.aligner.AlignedMatcher`: ``aligner`` (the
aligner decides every fact; the additions are its own), ``matcher+aligner`` (the matcher's realised and wrong verdicts
stay, the aligner decides the facts it found nothing about) and ``matcher+aligner-override`` (the aligner decides the
matcher's wrong facts too). Each fold is measured with the export that left it out (``data.held_out`` in its
manifest, with the same ``--folds`` / ``--seed`` split), with the P(realised) threshold and the additions setting
that export chose for the mode on its own held-out training rows: nothing is chosen on the fold measured. The matcher
part uses the fold's cross-fitted lexicon, as the ``matcher`` engine.

    python -m experiments.content_e2e --engines matcher aligner matcher+aligner --min-count 10 \
        --aligner exports/content_aligner_f01 exports/content_aligner_f234
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

import numpy as np


def _prf(tp: int, fp: int, fn: int) -> dict[str, float]:
    p = tp / (tp + fp) if tp + fp else float("nan")
    r = tp / (tp + fn) if tp + fn else float("nan")
    f = 2 * p * r / (p + r) if p + r and not (np.isnan(p) or np.isnan(r)) else float("nan")
    return {"precision": p, "recall": r, "f1": f, "tp": tp, "fp": fp, "fn": fn}


ALIGNER_ENGINES = ("aligner", "matcher+aligner", "matcher+aligner-override")
_LOADED: dict[str, object] = {}
_LEXICONS: dict[tuple, object] = {}


def aligner_for_folds(paths: list[str], folds: int, seed: int) -> dict[int, str]:
    """fold -> the export that left it out; every export must have been trained on this split."""
    from qe.content.aligner import read_export

    out: dict[int, str] = {}
    for p in paths:
        _, config = read_export(p)
        data = config["manifest"].get("data", {})
        if data.get("name") != "e2e-dev-cleaned" or data.get("folds") != folds or data.get("fold_seed") != seed:
            raise SystemExit(f"--aligner {p}: trained on {data.get('name')!r} split into {data.get('folds')} folds "
                             f"(seed {data.get('fold_seed')}), not the e2e dev split of --folds {folds} --seed {seed}")
        for k in data.get("held_out") or []:
            out.setdefault(int(k), p)
    missing = [k for k in range(folds) if k not in out]
    if missing:
        raise SystemExit(f"--aligner: no export left out fold(s) {missing}: each fold must be measured with an "
                         "aligner that never saw it (qe train task=content_aligner data.held_out=[...])")
    return out


def evaluate(rows: list[dict], engine: str, folds: int = 5, seed: int = 1, aligners: list[str] | None = None,
             device: str | None = None, **mine_kw) -> dict:
    from qe.content import Matcher, mine
    from qe.content.aligner_data import fold_of, gold_counts

    fold_of_mr = fold_of([r["orig_mr"] for r in rows], folds, seed)
    by_fold = aligner_for_folds(aligners or [], folds, seed) if engine in ALIGNER_ENGINES else {}
    loaded = _LOADED  # one model (and its cache of answers) per export for every engine
    from qe.content.lexicon import norm_value
    from qe.core.surface import norm_slot

    c = Counter()
    per_slot: dict[str, Counter] = {}
    exact = 0
    thresholds = {}
    by_row: dict[str, dict] = {}
    for k in range(folds):
        test = [r for r in rows if fold_of_mr[r["orig_mr"]] == k]
        if engine == "rules":
            m = Matcher()
        else:
            lk = (k, folds, seed, tuple(sorted(mine_kw.items())))
            if lk not in _LEXICONS:  # mined once per fold for every engine that uses it
                train = [(r["mr"], r["ref"]) for r in rows if fold_of_mr[r["orig_mr"]] != k]
                _LEXICONS[lk] = mine(train, source=f"e2e-dev-fold{k}", **mine_kw)
            m = Matcher(_LEXICONS[lk])
        if engine in ALIGNER_ENGINES:
            from qe.content.aligner import AlignedMatcher, Aligner

            if by_fold[k] not in loaded:
                loaded[by_fold[k]] = Aligner.load(by_fold[k], device=device)  # None: CUDA when there is one
            mode = {"aligner": "aligner", "matcher+aligner": "combined", "matcher+aligner-override": "override"}[engine]
            eng = AlignedMatcher(m, loaded[by_fold[k]], mode)  # the export's threshold and additions for the mode
            thresholds[k] = {"threshold": eng.threshold, "additions": eng.additions}
            als = eng.align_many([r["orig_mr"] for r in test], [r["ref"] for r in test])
        else:
            als = [m.align(r["orig_mr"], r["ref"]) for r in test]
        for r, al in zip(test, als):
            per, same = gold_counts(r["orig_mr"], r["mr"], al)
            row = Counter()
            for slot, cnt in per.items():
                per_slot.setdefault(slot, Counter()).update(cnt)
                row.update(cnt)
            c.update(row)
            exact += same
            # kept for --bootstrap and --flips (not written to --json)
            by_row[r["line"]] = {"group": r["orig_mr"], "counts": [row[k] for k in _COUNTS] + [int(same)],
                                 "verdicts": {(norm_slot(v.slot), norm_value(v.value)): v.status for v in al.verdicts},
                                 "read": sorted((norm_slot(s), norm_value(x)) for s, xs in al.realised_mr().items()
                                                for x in xs)}
    out = {"engine": engine, "folds": folds, "rows": len(rows),
           "omissions": _prf(c["omit_tp"], c["omit_fp"], c["omit_fn"]),
           "additions": _prf(c["add_tp"], c["add_fp"], c["add_fn"]),
           "exact_mr": exact / len(rows),
           "per_slot": {s: {"omissions": _prf(v["omit_tp"], v["omit_fp"], v["omit_fn"]),
                            "additions": _prf(v["add_tp"], v["add_fp"], v["add_fn"])} for s, v in sorted(per_slot.items())}}
    if thresholds:
        out["aligner_settings"] = thresholds
        out["aligners"] = {k: by_fold[k] for k in range(folds)}
    out["_rows"] = by_row
    return out


_COUNTS = ("omit_tp", "omit_fp", "omit_fn", "add_tp", "add_fp", "add_fn")


def bootstrap(base: dict, other: dict, n: int, seed: int = 0) -> dict[str, tuple[float, float, float]]:
    """Paired bootstrap over MR groups (``orig_mr``): the difference other - base of omission F1, addition F1 and
    the share of MRs exactly right, with its 95 % percentile interval."""
    keys = sorted(base["_rows"])
    groups = sorted({base["_rows"][k]["group"] for k in keys})
    gi = {g: i for i, g in enumerate(groups)}
    x = np.zeros((len(groups), 14))
    for k in keys:
        x[gi[base["_rows"][k]["group"]]] += base["_rows"][k]["counts"] + other["_rows"][k]["counts"]

    def figs(t):
        def f1(tp, fp, fn):
            return 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        return np.array([f1(*t[7:10]) - f1(*t[0:3]), f1(*t[10:13]) - f1(*t[3:6]), (t[13] - t[6]) / len(keys)])

    rng = np.random.default_rng(seed)
    draws = np.array([figs(x[rng.integers(0, len(groups), len(groups))].sum(0)) for _ in range(n)])
    point = figs(x.sum(0))
    return {name: (float(point[i]), float(np.percentile(draws[:, i], 2.5)), float(np.percentile(draws[:, i], 97.5)))
            for i, name in enumerate(("omission F1", "addition F1", "MR exactly right"))}


def flips(rows: list[dict], base: dict, other: dict, show: int) -> str:
    """Facts whose verdict turns from omitted / wrong (``base``) to realised (``other``) or back, counted by whether
    the gold realises them, with the first ``show`` of each kind (slot, value, text)."""
    from qe.content.aligner_data import fact_set

    kinds: dict[str, list] = {"now realised, gold realised": [], "now realised, gold omitted": [],
                              "now omitted/wrong, gold omitted": [], "now omitted/wrong, gold realised": []}
    for r in rows:
        gold = fact_set(r["mr"])
        a, b = base["_rows"][r["line"]]["verdicts"], other["_rows"][r["line"]]["verdicts"]
        for f, st in a.items():
            st2 = b.get(f, st)
            if (st == "realised") == (st2 == "realised") or "unchecked" in (st, st2):
                continue
            now = "now realised" if st2 == "realised" else "now omitted/wrong"
            kinds[f"{now}, gold {'realised' if f in gold else 'omitted'}"].append((f, st, st2, r["ref"]))
    lines = [f"verdicts changed, {base['engine']} -> {other['engine']}:"]
    for kind, lst in kinds.items():
        by_slot = Counter(f[0] for f, *_ in lst).most_common()
        lines.append(f"  {kind}: {len(lst)} ({', '.join(f'{s} {n}' for s, n in by_slot)})")
        lines += [f"    {f[0]}={f[1]}: {st} -> {st2}: {text}" for f, st, st2, text in lst[:show]]
    return "\n".join(lines)


def disagreements(rows: list[dict], res: dict, k: int, seed: int = 20261206) -> str:
    """A random sample (``seed``) of ``k`` of the facts an engine decides otherwise than the gold: false omissions
    (``omit_fp``: the engine says omitted or wrong, the gold realised), missed omissions (``omit_fn``), false and
    missed additions; with the row's line, the gold MR and the text, to judge by hand which side is right."""
    import random

    from qe.content.aligner_data import fact_set

    out = []
    for r in rows:
        got = res["_rows"][r["line"]]
        orig, gold = fact_set(r["orig_mr"]), fact_set(r["mr"])
        pred_omit = {f for f, st in got["verdicts"].items() if st in ("omitted", "wrong")}
        for f in sorted(orig):
            if (f in pred_omit) != (f not in gold):
                out.append(("omit_fp" if f in pred_omit else "omit_fn", f, r))
        pred_add, gold_add = set(got["read"]) - orig, gold - orig
        for f in sorted(pred_add ^ gold_add):
            out.append(("add_fp" if f in pred_add else "add_fn", f, r))
    kinds = Counter(kind for kind, *_ in out)
    lines = [f"{res['engine']}: {len(out)} facts decided otherwise than the gold ("
             + ", ".join(f"{n} {kd}" for kd, n in sorted(kinds.items())) + f"); {min(k, len(out))} drawn (seed {seed}):"]
    for i, (kind, f, r) in enumerate(random.Random(seed).sample(out, min(k, len(out)))):
        lines.append(f"[{i}] line {r['line']} {kind} {f[0]}={f[1]} | gold: {r['mr']}\n      {r['ref']}")
    return "\n".join(lines)


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


def spread(runs: list[list[dict]]) -> str:
    """Mean ± sd over runs (``--json`` files of the same engines with the aligners of other seeds), one row per
    engine: omission and addition P / R / F1, MR exactly right."""
    import statistics

    def ms(xs: list[float]) -> str:
        xs = [x for x in xs if x is not None and x == x]  # NaN (or null in --json): nothing to measure
        if not xs:
            return "–"
        return f"{statistics.mean(xs):.3f} ± {statistics.stdev(xs):.3f}" if len(xs) > 1 else f"{xs[0]:.3f}"

    engines = [r["engine"] for r in runs[0]]
    for i, run in enumerate(runs[1:], 2):
        if [r["engine"] for r in run] != engines:
            raise SystemExit(f"--spread: file {i} has engines {[r['engine'] for r in run]}, the first {engines}")
    lines = [f"{len(runs)} runs, mean ± sd", "",
             "| engine | omissions P | R | F1 | additions P | R | F1 | MR exactly right |",
             "|---|---|---|---|---|---|---|---|"]
    for j, e in enumerate(engines):
        cells = [ms([run[j][kind][m] for run in runs]) for kind in ("omissions", "additions")
                 for m in ("precision", "recall", "f1")]
        lines.append(f"| {e} | " + " | ".join(cells) + f" | {ms([run[j]['exact_mr'] for run in runs])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", nargs="+", default=None,
                    help="rules, matcher (default: both) and, with --aligner, " + ", ".join(ALIGNER_ENGINES))
    ap.add_argument("--aligner", nargs="+", default=None, metavar="EXPORT",
                    help="content_aligner exports that together left out every fold (data.held_out)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--json", default=None, help="write every figure (per slot too) here")
    ap.add_argument("--bootstrap", type=int, default=0, metavar="N",
                    help="paired bootstrap (N resamples of MR groups) of every engine against the first one")
    ap.add_argument("--flips", type=int, default=None, metavar="K",
                    help="count the facts each engine decides otherwise than the first one, and show K of each kind")
    ap.add_argument("--disagreements", type=int, default=0, metavar="K",
                    help="print K randomly drawn facts that each engine decides otherwise than the gold (to judge "
                         "by hand which side is right)")
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--alias-lift", type=float, default=4.0,
                    help="qe.content.lexicon.mine's alias_lift: a value's other wordings (0: none, as before 2026-12-05)")
    ap.add_argument("--no-scale-aliases", action="store_true",
                    help="qe.content.mine's scale_aliases=False: no scale value written two ways (as before "
                         "2026-12-06)")
    ap.add_argument("--min-precision", type=float, default=0.9)
    ap.add_argument("--min-share", type=float, default=0.1)
    ap.add_argument("--device", default=None, help="where the aligners run (default: CUDA when there is one)")
    ap.add_argument("--spread", nargs="+", default=None, metavar="JSON",
                    help="only summarise --json files of earlier runs (other seeds): mean ± sd per engine")
    a = ap.parse_args(argv)
    if a.spread:
        runs = []
        for f in a.spread:
            with open(f, encoding="utf-8") as fh:
                runs.append(json.load(fh))
        print(spread(runs))
        return 0
    from qe.data.e2e import e2e_slot_gold

    engines = a.engines or (["rules", "matcher"] + (list(ALIGNER_ENGINES) if a.aligner else []))
    unknown = [e for e in engines if e not in ("rules", "matcher", *ALIGNER_ENGINES)]
    if unknown:
        ap.error(f"unknown engine(s) {unknown}")
    if any(e in ALIGNER_ENGINES for e in engines) and not a.aligner:
        ap.error("the aligner engines need --aligner EXPORT [EXPORT ...]")
    rows = e2e_slot_gold("dev", a.data_dir)
    results = []
    for e in engines:
        t0 = time.time()
        res = evaluate(rows, e, a.folds, a.seed, aligners=a.aligner, device=a.device, min_count=a.min_count,
                       min_precision=a.min_precision, min_share=a.min_share, alias_lift=a.alias_lift,
                       scale_aliases=not a.no_scale_aliases)
        res["seconds"] = round(time.time() - t0, 1)
        results.append(res)
        print(f"{e}: {res['seconds']} s", file=sys.stderr)
    print(table(results))
    for r in results:
        print()
        print(slot_table(r))
    for r in results[1:]:
        if a.bootstrap:
            print(f"\n{r['engine']} - {results[0]['engine']}, paired bootstrap over MR groups ({a.bootstrap} resamples):")
            for name, (d, lo, hi) in bootstrap(results[0], r, a.bootstrap).items():
                print(f"  {name}: {d:+.3f} (95 % interval {lo:+.3f} to {hi:+.3f})")
        if a.flips is not None:
            print()
            print(flips(rows, results[0], r, a.flips))
    if a.disagreements:
        for r in results:
            print()
            print(disagreements(rows, r, a.disagreements))
    if a.json:
        from qe.core.jsonio import dumps

        with open(a.json, "w", encoding="utf-8") as f:
            f.write(dumps([{k: v for k, v in r.items() if k != "_rows"} for r in results], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
