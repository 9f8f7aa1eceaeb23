"""Scores that rank (issue 50, item 2): does ``coverage_soft`` break the ties of ``coverage``, and does that help a
rank correlation with ratings when the choice is made out of fold? (docs/results/content-log.md, section "Scores that
rank").

    OMP_NUM_THREADS=1 python -m experiments.coverage_ranking --data-dir ../shared/data \\
        [--aligner /work/qe_models/content-aligner-webnlg] [--no-e2e] --json ranking.json

Candidates (fixed before any rating was read; :data:`MATCHER_CANDIDATES`): ``coverage`` (the counts),
``coverage_soft`` (partial evidence for omitted facts and extents for stretches of unexplained words:
:func:`qe.content.scorer.soft_coverage`), ``soft-partial`` (partial evidence only) and ``soft-extent`` (extents only),
all with ``lexicon=webnlg`` (the default for triples); with ``--aligner``, ``coverage`` and ``coverage_soft`` of the
matcher+aligner (the default combined engine; its verdicts' probabilities count as expected realised / wrong facts).

1. **Tied pairs** (no rating): the share of pairs of outputs with equal scores, within an input (pairs of outputs of
   one input) and over all pairs, on the WebNLG 2020 system outputs and on the E2E dev references scored against the
   MR each was written for (``orig_mr``; the E2E lexicon cross-fitted over 5 folds of ``orig_mr`` groups, as
   :mod:`experiments.e2e_natural_errors` mines it).
2. **Out-of-fold selection** on the WebNLG 2020 ratings (correctness, data_coverage, fluency): 5 folds of inputs
   (:func:`input_folds`: every output of one input - one ``test_eid``, one MR - in one fold); in each fold the
   candidate with the highest Spearman ρ on the other four folds (ties: the earlier candidate) is scored on the
   held-out fold (ρ and Pearson r). Reported: the chosen candidates, the mean of the five held-out figures, and the
   figures of the pooled out-of-fold scores; beside them every candidate's plain figure on all outputs (not a
   selection).
3. **Natural E2E slot errors** (no rating): pairwise accuracy (clean above erroneous references of the same
   ``orig_mr``) and ρ with minus the gold slot error rate, :func:`experiments.e2e_natural_errors.pairwise` /
   ``spearman_neg_ser``, for ``coverage`` and ``coverage_soft`` with the cross-fitted E2E lexicon.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict

import numpy as np

#: (name, partial evidence, extents) of each matcher candidate, in the order ties are broken
MATCHER_CANDIDATES = (("coverage", False, False), ("coverage_soft", True, True), ("soft-partial", True, False),
                      ("soft-extent", False, True))
CRITERIA = ("correctness", "data_coverage", "fluency")
#: scores equal to this many decimals are tied
DECIMALS = 9


# ----------------------------------------------------------------------------------------------------- ties
def tie_shares(scores, groups) -> dict[str, float]:
    """The share of tied pairs among pairs of outputs of one group (``within``) and among all pairs (``all``); NaN
    scores left out; also the number of distinct values."""
    s = np.asarray(scores, dtype=float)
    ok = np.isfinite(s)
    vals = np.round(s[ok], DECIMALS)
    gs = [g for g, k in zip(groups, ok) if k]

    def tied(values) -> tuple[int, int]:
        c = Counter(values.tolist())
        n = len(values)
        return sum(v * (v - 1) // 2 for v in c.values()), n * (n - 1) // 2

    t_all, p_all = tied(vals)
    by: dict = defaultdict(list)
    for g, v in zip(gs, vals):
        by[g].append(v)
    t_in = p_in = 0
    for v in by.values():
        t, p = tied(np.asarray(v))
        t_in, p_in = t_in + t, p_in + p
    return {"within": t_in / p_in if p_in else float("nan"), "all": t_all / p_all if p_all else float("nan"),
            "distinct": int(len(set(vals.tolist())))}


# ----------------------------------------------------------------------------------------------------- folds
from qe.core.folds import input_folds, input_groups  # noqa: E402  (re-exported: the fold assignment of this script)


# ----------------------------------------------------------------------------------------------------- selection
def _corr(x, y) -> tuple[float, float]:
    from scipy.stats import pearsonr, spearmanr

    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0:
        return float("nan"), float("nan")
    return float(spearmanr(x[ok], y[ok]).statistic), float(pearsonr(x[ok], y[ok]).statistic)


def select_out_of_fold(cands: dict[str, np.ndarray], y: np.ndarray, fold: np.ndarray) -> dict:
    """Per fold: the candidate with the highest Spearman ρ on the other folds (ties: the earlier), its held-out ρ and
    r; the means over folds; the pooled out-of-fold scores' ρ and r."""
    names = list(cands)
    oof = np.full(len(y), np.nan)
    per = []
    for k in sorted(set(fold.tolist())):
        train, test = fold != k, fold == k
        rhos = [_corr(cands[c][train], y[train])[0] for c in names]
        best = names[int(np.nanargmax(rhos))] if not all(np.isnan(rhos)) else names[0]
        rho, r = _corr(cands[best][test], y[test])
        base_rho, base_r = _corr(cands[names[0]][test], y[test])
        oof[test] = cands[best][test]
        per.append({"fold": int(k), "chosen": best, "train_rho": dict(zip(names, rhos)), "rho": rho, "r": r,
                    "base_rho": base_rho, "base_r": base_r, "n": int(test.sum())})
    prho, pr = _corr(oof, y)
    return {"folds": per, "mean_rho": float(np.mean([p["rho"] for p in per])),
            "mean_r": float(np.mean([p["r"] for p in per])), "pooled_rho": prho, "pooled_r": pr,
            "base_mean_rho": float(np.mean([p["base_rho"] for p in per])),
            "base_mean_r": float(np.mean([p["base_r"] for p in per])),
            "wins": int(sum(p["rho"] > p["base_rho"] for p in per)),
            "chosen": dict(Counter(p["chosen"] for p in per))}


def grouped_bootstrap_diff(a: np.ndarray, b: np.ndarray, y: np.ndarray, groups, n: int = 1000,
                           seed: int = 1) -> tuple[float, float, float]:
    """Spearman ρ(a) - ρ(b) on all outputs with a 95 % interval from resampling inputs (paired)."""
    from scipy.stats import rankdata

    g = np.asarray(groups)
    uniq = np.unique(g)
    idx = {u: np.flatnonzero(g == u) for u in uniq}
    rng = np.random.RandomState(seed)

    def rho(x, yy):
        rx, ry = rankdata(x), rankdata(yy)
        return float(np.corrcoef(rx, ry)[0, 1])

    point = rho(a, y) - rho(b, y)
    diffs = []
    for _ in range(n):
        take = np.concatenate([idx[u] for u in rng.choice(uniq, len(uniq))])
        diffs.append(rho(a[take], y[take]) - rho(b[take], y[take]))
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    return point, float(lo), float(hi)


# ----------------------------------------------------------------------------------------------------- data
def webnlg_candidates(records, data_dir: str | None, aligner: str | None) -> dict[str, np.ndarray]:
    """Each candidate's score of every WebNLG 2020 output (:data:`MATCHER_CANDIDATES`; with ``aligner``, also
    ``aligner:coverage`` and ``aligner:coverage_soft``)."""
    from qe.content.scorer import CoverageScorer, soft_coverage

    outs, mrs = [r.output for r in records], [r.mr for r in records]
    sc = CoverageScorer(lexicon="webnlg", data_dir=data_dir)
    als = sc.align(outs, mrs)
    cands = {name: np.array([soft_coverage(a, sc.penalties, partial=p, extent=e) for a in als])
             for name, p, e in MATCHER_CANDIDATES}
    assert np.allclose(cands["coverage"], [sc.figures(a)["coverage"] for a in als], equal_nan=True)
    if aligner:
        ca = CoverageScorer(lexicon="webnlg", data_dir=data_dir, aligner=aligner, device="cpu")
        figs = [ca.figures(a) for a in ca.align(outs, mrs)]
        cands["aligner:coverage"] = np.array([f["coverage"] for f in figs])
        cands["aligner:coverage_soft"] = np.array([f["coverage_soft"] for f in figs])
    return cands


def e2e_scores(rows, folds: int = 5, seed: int = 1) -> dict[str, np.ndarray]:
    """``coverage`` and ``coverage_soft`` of every E2E dev reference against its ``orig_mr``, with the lexicon of
    :func:`experiments.e2e_natural_errors.coverage_scores` (``min_count=10``, mined from the other folds)."""
    from experiments.e2e_natural_errors import _lexicon
    from qe.content import Matcher
    from qe.content.aligner_data import fold_of
    from qe.content.scorer import CoverageScorer

    fig = CoverageScorer(lexicon="none")  # the default penalties: only its formulas are used
    fold = fold_of([r["orig_mr"] for r in rows], folds, seed)
    out = {"coverage": np.full(len(rows), np.nan), "coverage_soft": np.full(len(rows), np.nan)}
    for k in range(folds):
        m = Matcher(_lexicon(rows, fold, k))
        for i, r in enumerate(rows):
            if fold[r["orig_mr"]] == k:
                f = fig.figures(m.align(r["orig_mr"], r["ref"]))
                out["coverage"][i], out["coverage_soft"][i] = f["coverage"], f["coverage_soft"]
    return out


# ----------------------------------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--aligner", default=None, help="a content_aligner export for triples (content-aligner-webnlg)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-e2e", action="store_true", help="leave out the E2E parts")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)

    from qe.data.webnlg import webnlg2020

    t0 = time.time()
    records = webnlg2020(a.data_dir)
    groups = input_groups([r.extra.get("test_eid", r.mr) for r in records], [r.mr for r in records])
    fold = input_folds(groups, a.folds, a.seed)
    cands = webnlg_candidates(records, a.data_dir, a.aligner)
    print(f"WebNLG 2020: {len(records)} outputs, {len(set(groups))} inputs, scored in {time.time() - t0:.0f} s",
          file=sys.stderr)
    res: dict = {"webnlg": {"outputs": len(records), "inputs": len(set(groups)), "ties": {}, "plain": {},
                            "oof": {}, "bootstrap": {}}}
    print("\n### Tied pairs, WebNLG 2020 system outputs\n")
    print("| candidate | within an input | all pairs | distinct values |\n|---|---|---|---|")
    for name, s in cands.items():
        t = res["webnlg"]["ties"][name] = tie_shares(s, groups)
        print(f"| {name} | {t['within']:.3f} | {t['all']:.3f} | {t['distinct']} |")

    if not a.no_e2e:
        from experiments.e2e_natural_errors import gold_errors, kind_of, pairwise, spearman_neg_ser
        from qe.data.e2e import e2e_slot_gold

        rows = e2e_slot_gold("dev", a.data_dir)
        e2e = e2e_scores(rows, a.folds, a.seed)
        eg = [r["orig_mr"] for r in rows]
        errs = [gold_errors(r["orig_mr"], r["mr"]) for r in rows]
        kinds = [kind_of(e) for e in errs]
        ser = np.array([(e["omitted"] + e["added"] + e["wrong"]) / e["facts"] if e["facts"] else np.nan
                        for e in errs])
        res["e2e"] = {"references": len(rows), "ties": {}, "natural": {}}
        print("\n### Tied pairs, E2E dev references against orig_mr (cross-fitted lexicon)\n")
        print("| candidate | within an MR | all pairs | distinct values |\n|---|---|---|---|")
        for name, s in e2e.items():
            t = res["e2e"]["ties"][name] = tie_shares(s, eg)
            print(f"| {name} | {t['within']:.3f} | {t['all']:.3f} | {t['distinct']} |")
        print("\n### Natural E2E slot errors (pairwise: erroneous references with a clean one of the same MR)\n")
        print("| candidate | all | omission | addition | mixed | ρ with −SER |\n|---|---|---|---|---|---|")
        for name, s in e2e.items():
            acc, rho = pairwise(eg, kinds, s), spearman_neg_ser(s, ser)
            res["e2e"]["natural"][name] = {"pairwise": acc, "rho_neg_ser": rho}
            cells = " | ".join(f"{acc[k][0]:.3f} ({acc[k][1]})" if k in acc else "–"
                               for k in ("all", "omission", "addition", "mixed"))
            print(f"| {name} | {cells} | {rho:.3f} |")

    # ratings: read only from here on
    matcher = {k: v for k, v in cands.items() if not k.startswith("aligner:")}
    pools = {"matcher": matcher}
    if a.aligner:
        pools["aligner"] = {k: v for k, v in cands.items() if k.startswith("aligner:")}
    print("\n### WebNLG 2020 ratings: out-of-fold selection (held-out ρ / r) and plain figures (not a selection)\n")
    print("| pool | criterion | chosen per fold | mean of folds ρ (r) | pooled out-of-fold ρ (r) | the pool's counts, same "
          "folds: mean ρ (r) | folds where the choice beats the counts (ρ) |\n|---|---|---|---|---|---|---|")
    for pool, cs in pools.items():
        for crit in CRITERIA:
            y = np.array([r.ratings[crit] for r in records], dtype=float)
            sel = select_out_of_fold(cs, y, fold)
            res["webnlg"]["oof"][f"{pool}/{crit}"] = sel
            chosen = ", ".join(p["chosen"] for p in sel["folds"])
            print(f"| {pool} | {crit} | {chosen} | {sel['mean_rho']:.3f} ({sel['mean_r']:.3f}) | "
                  f"{sel['pooled_rho']:.3f} ({sel['pooled_r']:.3f}) | {sel['base_mean_rho']:.3f} "
                  f"({sel['base_mean_r']:.3f}) | {sel['wins']} of {len(sel['folds'])} |")
    print("\n| candidate (plain, all outputs; not a selection) | " + " | ".join(CRITERIA) + " |")
    print("|---|" + "---|" * len(CRITERIA))
    for name, s in cands.items():
        cells = []
        for crit in CRITERIA:
            y = np.array([r.ratings[crit] for r in records], dtype=float)
            rho, r = _corr(s, y)
            res["webnlg"]["plain"].setdefault(name, {})[crit] = {"rho": rho, "r": r}
            cells.append(f"{rho:.3f} ({r:.3f})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\nρ(candidate) − ρ(its pool's counts) on all outputs, 95 % interval from 1,000 resamples of inputs "
          "(paired; not a selection):\n")
    for name in cands:
        counts = "aligner:coverage" if name.startswith("aligner:") else "coverage"
        if name == counts:
            continue
        for crit in CRITERIA:
            y = np.array([r.ratings[crit] for r in records], dtype=float)
            d, lo, hi = grouped_bootstrap_diff(cands[name], cands[counts], y, groups)
            res["webnlg"]["bootstrap"][f"{name}/{crit}"] = {"diff": d, "lo": lo, "hi": hi}
            print(f"- {name}, {crit}: {d:+.4f} [{lo:+.4f}, {hi:+.4f}]")
    print(f"\n({time.time() - t0:.0f} s)", file=sys.stderr)
    if a.json:
        from qe.core.jsonio import dumps

        with open(a.json, "w", encoding="utf-8") as f:
            f.write(dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
