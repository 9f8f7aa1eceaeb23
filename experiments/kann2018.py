"""Kann, Rothe & Filippova (2018) on EMNLP17: the analysis behind docs/results/refmetrics.md ("Reference-based metrics and
Kann's combinations").

    python -m experiments.kann2018 --lm exports/wp --out outputs/refmetrics_emnlp17.json

1. Every reference metric on the 2,460 EMNLP17 outputs against the human references of ``emnlp17_refs``
   (qe.data.references), correlated with the median ratings, beside the same correlations of the metric columns
   the dataset's authors shipped, and the agreement (Pearson / Spearman) between our scores and theirs.
2. Kann et al. (2018) Table 7 analogue on naturalness: SVR (ROUGE-L-mult + WPSLOR), ROUGE-LM, ROUGE-L-mult and
   WPSLOR on the test part of Kann's split (500 train / 500 dev / rest test), Pearson and MSE (eq. 6), for the
   split seed 42 (the ``task=svr`` default) and as mean +- sd over further seeds.

Everything is the library's: the metrics are registered scorers (``qe.load``), the features, SVR fit, split and
measures are ``task=svr``'s (:mod:`qe.refmetrics.svr`, :mod:`qe.refmetrics.task`), and variant C's
delexicalisation is RatPred's (:func:`qe.ratpred.mr.delexicalise`: slot values of the MR -> ``X-<slot>`` in
the lower-cased, tokenised text).
"""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

# our metric (name, options) -> the dataset's column with the same metric. Options chosen to be close to the tools
# the authors used (coco-caption for BLEU/ROUGE_L/CIDEr/METEOR: PTB tokens without punctuation, BLEU without
# smoothing, ROUGE-L F with beta 1.2; mteval for NIST; tercom for TER).
COCO_BLEU = {"tokenize": "13a-nopunct", "smooth_method": "none", "effective_order": False}
PAIRS = [
    ("bleu-1", COCO_BLEU, "Bleu_1"), ("bleu-2", COCO_BLEU, "Bleu_2"), ("bleu-3", COCO_BLEU, "Bleu_3"),
    ("bleu-4", COCO_BLEU, "Bleu_4"), ("bleu-4", {}, "Bleu_4"),
    ("nist-5", {}, "NIST"), ("rouge-l", {"beta": 1.2, "tokenize": "13a-nopunct", "mode": "max-pr"}, "ROUGE_L"),
    ("rouge-l", {}, "ROUGE_L"),
    ("meteor", {}, "METEOR"), ("cider-d", {}, "CIDEr"), ("ter", {}, "TER"),
    ("rouge-1", {}, None), ("rouge-2", {}, None), ("rouge-4", {}, None), ("rouge-w", {}, None),
    ("rouge-su4", {}, None), ("chrf", {}, None), ("chrf++", {}, None), ("se", {}, None), ("lr2-f-mult", {}, None),
    ("lr3-f-mult", {}, None), ("lr3-r-mult", {}, None), ("rouge-l-single", {}, None),
]
RATINGS = ("naturalness", "quality", "informativeness")


def delexicalise(text: str, mr: str) -> str:
    """``text`` with every occurrence of the MR's non-binary slot values replaced by ``x-<slot>`` placeholders
    (the MR module's text-level mode, :func:`qe.ratpred.mr.delexicalise_text`).

    Measured on EMNLP17: the authors' SF metric columns are reproduced far more often on delexicalised text
    (e.g. hyp "hotel metropolis is located at 25 mason st, ..." gives their Bleu_1 = 10/11 only when the name,
    address and phone become one token each)."""
    from qe.ratpred.mr import delexicalise_text

    return delexicalise_text(text, mr)


def _corr(x, y) -> tuple[float, float]:
    from scipy.stats import pearsonr, spearmanr

    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.std(x[ok]) == 0:
        return math.nan, math.nan
    return float(pearsonr(x[ok], y[ok])[0]), float(spearmanr(x[ok], y[ok])[0])


def _label(name, opts) -> str:
    return name + ("" if not opts else "(" + ",".join(f"{k}={v}" for k, v in opts.items()) + ")")


def metric_table(records, delex: bool = False, progress: bool = False) -> list[dict]:
    import qe

    outs = [delexicalise(r.output, r.mr) if delex and r.dataset != "BAGEL" else r.output for r in records]
    refs = [[delexicalise(x, r.mr) if delex and r.dataset != "BAGEL" else x for x in r.refs] for r in records]
    rows = []
    for name, opts, col in PAIRS:
        sc = qe.load(name, **opts)
        t0 = time.perf_counter()
        s = np.asarray(sc.score(outs, refs=refs, progress=progress), float)
        dt = time.perf_counter() - t0
        row = {"metric": _label(name, opts), "signature": sc.signature, "column": col, "seconds": dt}
        for rt in RATINGS:
            y = [r.ratings[rt] for r in records]
            row[f"ours/{rt}"] = _corr(s, y)
            if col:
                row[f"theirs/{rt}"] = _corr([r.metrics[col] for r in records], y)
        if col:
            t = np.array([r.metrics[col] for r in records], float)
            row["agreement"] = _corr(s, t)
            row["agreement_by_dataset"] = {ds: _corr(s[m], t[m]) for ds in ("BAGEL", "SFHOT", "SFRES")
                                           for m in [np.array([r.dataset == ds for r in records])]}
            row["identical_1e-3"] = float(np.mean(np.abs(s - t) < 1e-3))
            row["identical_by_dataset"] = {ds: float(np.mean(np.abs(s[m] - t[m]) < 1e-3))
                                           for ds in ("BAGEL", "SFHOT", "SFRES")
                                           for m in [np.array([r.dataset == ds for r in records])]}
        rows.append(row)
    return rows


def table7(records, lm: str, seeds=(42, 1, 2, 3, 4), rating: str = "naturalness", progress: bool = False) -> dict:
    from qe.refmetrics.svr import compute_features
    from qe.refmetrics.task import baselines, fit_and_evaluate, kann_split

    features = ["rouge-l-mult", "lm:slor"]
    outs = [r.output for r in records]
    refs = [r.refs for r in records]
    X = compute_features(features, outs, refs, lm_export=lm, progress=progress)
    y = np.array([r.ratings[rating] for r in records], float)
    ok = np.isfinite(X).all(axis=1)
    X, y = X[ok], y[ok]
    per_seed = {}
    for seed in seeds:
        split = kann_split(len(y), 500, 500, seed)
        _, _, _, m = fit_and_evaluate(X, y, split)
        te = split["test"]
        b = baselines(X, y, features, te)  # each feature alone and their z-sum (ROUGE-LM) on the test part
        per_seed[seed] = {
            "SVR: ROUGE+WPSLOR": (m["test/pearson"], m["test/mse"]),
            "ROUGE-LM": (b["test/zsum/pearson"], b["test/zsum/mse"]),
            "ROUGE-L-mult": (b["test/rouge-l-mult/pearson"], b["test/rouge-l-mult/mse"]),
            "WPSLOR": (b["test/lm:slor/pearson"], b["test/lm:slor/mse"]),
            "n_test": len(te),
        }
    return {"n": int(len(y)), "dropped_nan": int((~ok).sum()), "per_seed": per_seed}


def _print_metrics(rows) -> None:
    print(f"{'metric':58s} {'nat ours':>8s} {'theirs':>7s} {'qual ours':>9s} {'theirs':>7s} {'agree r':>7s} {'same':>5s}")
    for row in rows:
        th = row.get("theirs/naturalness", (math.nan,))[0]
        thq = row.get("theirs/quality", (math.nan,))[0]
        ag = row.get("agreement", (math.nan, math.nan))[0]
        print(f"{row['metric'][:58]:58s} {row['ours/naturalness'][0]:8.3f} {th:7.3f} {row['ours/quality'][0]:9.3f} "
              f"{thq:7.3f} {ag:7.3f} {row.get('identical_1e-3', math.nan):5.2f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lm", required=True, help="slor export (WordPiece) for WPSLOR")
    ap.add_argument("--out", default="outputs/refmetrics_emnlp17.json")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--seeds", default="42,1,2,3,4")
    ap.add_argument("--skip-metrics", action="store_true")
    a = ap.parse_args(argv)
    import qe
    from qe.data.datasets import load_dataset

    default = load_dataset("emnlp17_refs", data_dir=a.data_dir)  # test-split references first (qe.data.references)
    res = {"records": len(default), "without_refs": sum(1 for r in default if not r.refs),
           "lm": str(Path(a.lm).resolve()), "lm_signature": qe.load(a.lm).signature}
    default = [r for r in default if r.refs]
    if not a.skip_metrics:
        allrefs = [r for r in load_dataset("emnlp17_refs", data_dir=a.data_dir, mode="all") if r.refs]
        variants = {"A: test refs, lexicalised (emnlp17_refs default)": (default, False),
                    "B: refs of all splits, lexicalised": (allrefs, False),
                    "C: refs of all splits, SF delexicalised (closest to the authors)": (allrefs, True)}
        res["metrics"] = {}
        for label, (recs, dl) in variants.items():
            print(f"\n== {label} (n = {len(recs)}; refs/output {np.mean([len(r.refs) for r in recs]):.2f})")
            rows = metric_table(recs, delex=dl)
            res["metrics"][label] = rows
            _print_metrics(rows)
    res["table7"] = table7(default, a.lm, tuple(int(s) for s in a.seeds.split(",")))
    per = res["table7"]["per_seed"]
    print(f"\nTable 7 analogue (naturalness, test n = {next(iter(per.values()))['n_test']}):")
    for k in ("SVR: ROUGE+WPSLOR", "ROUGE-LM", "ROUGE-L-mult", "WPSLOR"):
        p = np.array([v[k][0] for v in per.values()])
        m = np.array([v[k][1] for v in per.values()])
        first = next(iter(per.values()))[k]
        print(f"  {k:20s} seed42 r={first[0]:.3f} mse={first[1]:.3f} | {len(p)} seeds r={p.mean():.3f}+-{p.std():.3f} "
              f"mse={m.mean():.3f}+-{m.std():.3f}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    main()
