"""Dušek, Novikova & Rieser 2017 (RatPred): Table 3 / 4 baselines and report, from the library's scorers and runs.

    PYTHONPATH=. python -m experiments.ratpred baselines [--out outputs/ratpred_baselines.json]
    PYTHONPATH=. python -m experiments.ratpred report outputs/ratpred_baselines.json outputs/ratpred/runs/*/results.json
    PYTHONPATH=. python -m experiments.ratpred report --folds=0,2 <run>/results.json     # only these test folds
    PYTHONPATH=. python -m experiments.ratpred report --ensemble <seed-1 run> <seed-2 run>  # + a seed-ensemble row
    PYTHONPATH=. python -m experiments.ratpred report --williams <S1 run> <S4 run> ...      # + significance table
    PYTHONPATH=. python -m experiments.ratpred lodo <lodo run>/results.json ... [--in-domain=<cv run>/predictions.jsonl]
    PYTHONPATH=. python -m experiments.ratpred mismatch ratpred-e2e ratpred-emnlp17-s6   # E2E MR vs matched/other refs
    PYTHONPATH=. python -m experiments.ratpred combine gru=<run> minilm=<run>   # choose / average models on dev
    PYTHONPATH=. python -m experiments.ratpred export-check <export> <run> [<run> ...]   # export == its runs' fold 0

**Baselines** (``baselines``): the constant baseline (per CV fold, the training parts' mean rating, rounded to
0.5; the paper's constant is 4.5) and the word-overlap metrics, each output against all its references from
:mod:`qe.data.references`, computed with the library's registered scorers - ``qe.load("bleu-4" | "meteor" |
"rouge-l" | "cider-d")`` (:mod:`qe.refmetrics`). Normalisation to ratings as the authors' ``metric_to_rating``
script: min-max over all outputs to [0, 1], then 10 bins of 0.1 (floor) mapped to 1, 1.5, ..., 6. The authors'
own metric columns shipped in the EMNLP17 file (computed against their references) are scored the same way for
comparison.

**Report** (``report``): Markdown Table 3 (ours beside the paper's) from the baseline file and the runner's
``results.json`` files. Runs of the same setup (e.g. folds [0,1,2] and [3,4] run separately to keep each run
short) are pooled: their ``predictions.jsonl`` test predictions are concatenated per seed (a fold must not appear
twice) and scored together, exactly as one run over all folds would.

``--ensemble`` adds, for every setup run with two or more seeds, a row that is *not* the paper's protocol
(the paper averages the metrics over seeds): the seeds' raw predictions are averaged per test output, then
rounded to 0.5 and clipped to the 1-6 rating scale (every training part of EMNLP17 spans 1-6, so this is the
clip the runner applies) and scored once.

``--williams`` adds the paper's significance checks (Section 4.1: Williams test on Pearson correlations, as in
Table 3): per setup and seed, is the setup's rounded-prediction correlation with the human rating larger than
(a) that of S1 with the same seed, (b) that of each word-overlap metric (the authors' metric columns of the
EMNLP17 file, normalised as :func:`to_rating`), on the same test outputs? One-sided p, and Holm-adjusted p over
all the tests in the table (one family), so that the many comparisons do not inflate the number of
"significant" rows (Reiter & Belz 2009).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from qe.core.predictions import correlations

#: Table 3 metric rows -> the registered scorer (qe.refmetrics) that computes them
METRICS = {"BLEU": "bleu-4", "METEOR": "meteor", "ROUGE-L": "rouge-l", "CIDEr": "cider-d"}
#: Table 3 metric rows -> the authors' column of the EMNLP17 file
AUTHOR_COLUMNS = {"BLEU": "Bleu_4", "METEOR": "METEOR", "ROUGE-L": "ROUGE_L", "CIDEr": "CIDEr"}


def to_rating(scores, lo: float = 1.0, hi: float = 6.0, step: float = 0.5) -> np.ndarray:
    """Min-max to [0, 1], then floor into (hi - lo) / step bins: 1, 1.5, ..., 6 (the authors' quantisation)."""
    m = np.asarray(scores, dtype=np.float64)
    rng = m.max() - m.min()
    m = (m - m.min()) / rng if rng > 0 else np.zeros_like(m)
    nvals = (hi - lo) / step
    return lo + np.floor(m * nvals + 1e-9) * step


def constant_baseline(records, target="quality", n_parts=5, part_seed=1206, round_to=0.5):
    from qe.ratpred.data import cv_fold, make_parts

    parts = make_parts(records, n_parts, part_seed)
    pred, gold = [], []
    for f in range(n_parts):
        tr, _, te = cv_fold(parts, f)
        mean = float(np.mean([r.ratings[target] for r in tr]))
        c = round(mean / round_to) * round_to if round_to else mean
        pred += [c] * len(te)
        gold += [r.ratings[target] for r in te]
    m = correlations(pred, gold)
    m["pearson"] = m["spearman"] = float("nan")  # undefined for a constant
    return m


def baselines_main(argv=None):
    import qe
    from qe.data import load_dataset

    ap = argparse.ArgumentParser(description="Table 3 baselines: constant and word-overlap metric rows")
    ap.add_argument("--target", default="quality")
    ap.add_argument("--out", default="outputs/ratpred_baselines.json")
    args = ap.parse_args(argv)
    recs = load_dataset("emnlp17_refs")
    gold = np.array([r.ratings[args.target] for r in recs])
    outs = [r.output for r in recs]
    refs = [r.refs for r in recs]
    rows = {"Constant": constant_baseline(recs, args.target)}
    raw, sigs = {}, {}
    for name in METRICS:
        scorer = qe.load(METRICS[name])
        sigs[name] = scorer.signature
        raw[name] = scorer.score(outs, refs=refs, progress=False)
        rows[f"{name}* (recomputed)"] = correlations(to_rating(raw[name]), gold)
        rows[f"{name}* (authors' column)"] = correlations(
            to_rating([r.metrics[AUTHOR_COLUMNS[name]] for r in recs]), gold)
    print(f"{'':32s} {'Pearson':>8s} {'Spearman':>8s} {'MAE':>7s} {'RMSE':>7s}")
    for k, m in rows.items():
        print(f"{k:32s} {m['pearson']:8.3f} {m['spearman']:8.3f} {m['mae']:7.3f} {m['rmse']:7.3f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"rows": rows, "n": len(recs), "signatures": sigs,
                   "raw_means": {k: float(np.mean(v)) for k, v in raw.items()}}, f, indent=1)
    for k, v in sigs.items():
        print(f"{k}: {v}")
    print(f"written: {args.out}")


# ------------------------------------------------------------------------------------------------ report
#: Dušek, Novikova & Rieser 2017, Table 3 (Pearson, Spearman, MAE, RMSE)
PAPER = {
    "Constant": (None, None, 1.013, 1.233),
    "BLEU*": (0.074, 0.061, 2.264, 2.731),
    "METEOR*": (0.095, 0.099, 1.820, 2.129),
    "ROUGE-L*": (0.079, 0.072, 1.312, 1.674),
    "CIDEr*": (0.061, 0.058, 2.606, 2.935),
    "S1": (0.273, 0.260, 0.948, 1.258),
    "S2": (0.283, 0.268, 0.948, 1.273),
    "S3": (0.278, 0.261, 0.930, 1.257),
    "S4": (0.330, 0.274, 0.914, 1.226),
    "S5": (0.331, 0.265, 0.937, 1.245),
    "S6": (0.354, 0.287, 0.909, 1.208),
    # Table 4 (cross-domain, in-set = SFHOT)
    "S1 C1": (0.147, 0.136, 1.086, 1.416),
    "S1 C2": (0.162, 0.152, 0.985, 1.281),
    "S1 C3": (0.170, 0.166, 1.003, 1.315),
    "S2 C1": (0.196, 0.176, 1.059, 1.364),
    "S2 C2": (0.197, 0.189, 1.003, 1.311),
    "S2 C3": (0.219, 0.218, 0.988, 1.296),
    "S3 C1": (0.176, 0.163, 1.093, 1.420),
    "S3 C2": (0.147, 0.134, 1.037, 1.366),
    "S3 C3": (0.219, 0.216, 0.979, 1.302),
    "S4 C1": (0.264, 0.218, 0.983, 1.307),
    "S4 C2": (0.162, 0.138, 1.084, 1.448),
    "S4 C3": (0.247, 0.211, 0.983, 1.306),
    "S5 C1": (0.280, 0.221, 1.009, 1.341),
    "S5 C2": (0.173, 0.145, 1.077, 1.438),
    "S5 C3": (0.210, 0.162, 1.095, 1.442),
    "S6 C1": (0.271, 0.202, 0.991, 1.331),
    "S6 C2": (0.188, 0.178, 1.037, 1.392),
    "S6 C3": (0.224, 0.210, 1.002, 1.339),
}


def _f(v):
    return "-" if v is None or v != v else f"{v:.3f}"


def table(baselines: dict | None, results: list[dict], ensemble: bool = False) -> str:
    lines = ["| Setup | Pearson | Spearman | MAE | RMSE | paper Pearson | paper Spearman | paper MAE | paper RMSE |",
             "|---|---|---|---|---|---|---|---|---|"]
    rows = []
    if baselines:
        for k, m in baselines["rows"].items():
            rows.append((k, m))
    by_setup: dict[str, list[dict]] = {}
    for r in results:
        by_setup.setdefault(f"{r['setup']}" + ("" if r.get("mode", "cv") == "cv" else f" {r['mode']}"), []).append(r)
    for s in sorted(by_setup):
        summary, folds, seeds = pool(by_setup[s])
        rows.append((s, summary, f" (folds {folds}, seeds {seeds})"))
        if all("raw" in x for r in by_setup[s] for x in r["predictions"]):
            rows.append((s + " unrounded", pool(by_setup[s], "raw")[0], ""))
            if ensemble and len(seeds) > 1:
                m, n = seed_ensemble(by_setup[s])
                rows.append((s + f" seed ensemble (mean of {len(seeds)} seeds' raw outputs, rounded)", m,
                             f" ({n} outputs)"))
    for row in rows:
        name, m = row[0], row[1]
        note = row[2] if len(row) > 2 else ""
        key = name.replace(" unrounded", "")
        key = key.split(" seed ensemble")[0]
        # a C row with no paper figure must not borrow the Table 3 figure of its setup
        base = key.split(" ")[0] if all(f" {c}" not in key for c in ("C1", "C2", "C3")) else key
        p = PAPER.get(key, PAPER.get(base, (None,) * 4)) if "unrounded" not in name else (None,) * 4
        lines.append(f"| {name}{note} | {_f(m['pearson'])} | {_f(m['spearman'])} | {_f(m['mae'])} | {_f(m['rmse'])} | "
                     + " | ".join(_f(x) for x in p) + " |")
    return "\n".join(lines)


def pool(runs: list[dict], key: str = "pred") -> tuple[dict, list, list]:
    """Pool the test predictions of several result files (same setup) per seed; mean of metrics over seeds."""

    per_seed: dict = {}
    for r in runs:
        for row in r["predictions"]:
            per_seed.setdefault(row["seed"], {}).setdefault(row["fold"], []).append(row)
    folds_by_seed = {s: sorted(f) for s, f in per_seed.items()}
    union = sorted({f for v in folds_by_seed.values() for f in v})
    partial = {s: f for s, f in folds_by_seed.items() if f != union}
    if partial:  # a seed still running (or cut short) must not pass for a complete one in the row's label
        union = union + [f"seed {s}: only {f}" for s, f in sorted(partial.items())]
    ms = []
    for s, fd in per_seed.items():
        rows = [x for f in sorted(fd) for x in fd[f]]
        ms.append(correlations([x[key] for x in rows], [x["gold"] for x in rows]))
    summary = {k: float(np.mean([m[k] for m in ms])) for k in ms[0]}
    return summary, union, sorted(per_seed)


def seed_ensemble(runs: list[dict], round_to: float = 0.5, lo: float = 1.0, hi: float = 6.0) -> tuple[dict, int]:
    """Average the raw test predictions of all seeds per (fold, output), round + clip, score once.

    Only outputs predicted by every seed enter (a partial run would otherwise mix 1- and 2-seed means)."""
    from qe.core.predictions import round_clip

    seeds = {x["seed"] for r in runs for x in r["predictions"]}
    by_item: dict = {}
    for r in runs:
        for x in r["predictions"]:
            by_item.setdefault((x["fold"], x["id"]), {})[x["seed"]] = x
    items = [v for _, v in sorted(by_item.items(), key=lambda kv: (kv[0][0], str(kv[0][1])))
             if set(v) == seeds]
    raw = np.array([np.mean([x["raw"] for x in v.values()]) for v in items])
    gold = [next(iter(v.values()))["gold"] for v in items]
    return correlations(round_clip(raw, round_to, lo, hi), gold), len(items)


def williams_table(results: list[dict], data_dir: str | None = None) -> str:
    """Markdown table of one-sided Williams tests (rounded predictions): each cv setup vs S1 (same seed) and vs
    the authors' metric columns, on the pooled test outputs; Holm-adjusted over every test in the table."""
    from qe.data import load_dataset
    from qe.evaluation.stats import adjust_pvalues, williams_compare

    recs = load_dataset("emnlp17", data_dir=data_dir)
    metric = {name: dict(zip([r.id for r in recs], to_rating([r.metrics[col] for r in recs])))
              for name, col in AUTHOR_COLUMNS.items()}
    preds: dict = {}  # setup -> seed -> {id: (pred, gold)}
    for r in results:
        if r.get("mode", "cv") != "cv":
            continue
        for x in r["predictions"]:
            preds.setdefault(r["setup"], {}).setdefault(x["seed"], {})[x["id"]] = (x["pred"], x["gold"])
    rows = []
    for setup in sorted(preds):
        for seed in sorted(preds[setup]):
            mine = preds[setup][seed]
            rivals = dict(metric)
            if setup != "S1" and seed in preds.get("S1", {}):
                rivals = {"S1": {i: p for i, (p, _) in preds["S1"][seed].items()}, **rivals}
            for name, other in rivals.items():
                ids = sorted(i for i in mine if i in other)
                t, r_a, r_b = williams_compare([mine[i][1] for i in ids], [mine[i][0] for i in ids],
                                               [other[i] for i in ids], tails=1)
                rows.append([setup, seed, name, len(ids), r_a, r_b, t.statistic, t.p])
    adj = adjust_pvalues([r[-1] for r in rows], "holm") if rows else []
    lines = [f"Williams test (one-sided, H1: setup > rival; Pearson of rounded predictions); Holm over the "
             f"{len(rows)} tests of this table", "",
             "| setup | seed | rival | n | r setup | r rival | t | p | p Holm |", "|---|---|---|---|---|---|---|---|---|"]
    for row, pa in zip(rows, adj):
        setup, seed, name, n, r_a, r_b, t, p = row
        lines.append(f"| {setup} | {seed} | {name} | {n} | {r_a:.3f} | {r_b:.3f} | {t:.2f} | {p:.2g} | "
                     f"{'-' if np.isnan(pa) else f'{pa:.2g}'} |")
    return "\n".join(lines)


def _load_result(path: str) -> dict:
    d = json.load(open(path))
    if "rows" in d:
        return d
    preds = Path(path).with_name("predictions.jsonl")
    d["predictions"] = [json.loads(x) for x in open(preds)]
    seen = {}
    for x in d["predictions"]:
        seen.setdefault((x["seed"], x["fold"]), path)
    d["_keys"] = set(seen)
    return d


def report_main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    folds = None
    ensemble = "--ensemble" in argv
    williams = "--williams" in argv
    argv = [a for a in argv if a not in ("--ensemble", "--williams")]
    for a in [a for a in argv if a.startswith("--folds=")]:
        folds = {int(f) for f in a.split("=", 1)[1].split(",")}
        argv.remove(a)
    base, res = None, []
    taken: dict = {}
    for p in argv:
        d = _load_result(p)
        if "rows" in d:
            base = d
            continue
        if folds is not None:  # compare runs on the folds they share
            d["predictions"] = [x for x in d["predictions"] if x["fold"] in folds]
            d["_keys"] = {k for k in d["_keys"] if k[1] in folds}
            if not d["predictions"]:
                raise SystemExit(f"{p}: no test predictions for folds {sorted(folds)}")
        dup = {k for k in d["_keys"] if (d["setup"], d.get("mode"), k) in taken}
        if dup:
            raise SystemExit(f"{p}: (seed, fold) {sorted(dup)} of setup {d['setup']} already in {taken[(d['setup'], d.get('mode'), min(dup))]}")
        for k in d["_keys"]:
            taken[(d["setup"], d.get("mode"), k)] = p
        res.append(d)
    print(table(base, res, ensemble=ensemble))
    if williams:
        print()
        print(williams_table(res))


def in_domain_rows(path: str, domains: list[str], data_dir=None) -> list[dict]:
    """Per-dataset correlations of cross-validated (in-domain) test predictions (``predictions.jsonl`` of a
    ``cv`` run), one dict per seed: the in-domain counterpart of each leave-one-domain-out column."""
    from qe.data.datasets import load_dataset

    dataset_of = {r.id: r.dataset for r in load_dataset("emnlp17", data_dir=data_dir)}
    by_seed: dict = {}
    for line in open(path):
        x = json.loads(line)
        by_seed.setdefault(x["seed"], {}).setdefault(dataset_of[x["id"]], []).append(x)
    out = []
    for seed, per in sorted(by_seed.items()):
        row = {"seed": seed}
        for d in domains:
            xs = per.get(d, [])
            if xs:
                row[d] = correlations([x["pred"] for x in xs], [x["gold"] for x in xs])
                row[d]["raw_pearson"] = correlations([x["raw"] for x in xs], [x["gold"] for x in xs])["pearson"]
        out.append(row)
    return out


def lodo_table(paths: list[str], in_domain: list[str] = ()) -> str:
    """Markdown table of leave-one-domain-out runs (``experiment=ratpred_lodo``): per held-out domain, Pearson /
    Spearman of the rounded predictions (mean over the run's seeds, ± their std when two or more), raw Pearson,
    and the mean over domains; one row per run, labelled by its directory."""
    rows, domains = [], []
    for arg in paths:  # "a/results.json+b/results.json": runs of one variant with different seeds, pooled in one row
        runs, name = [], None
        for p in arg.split("+"):
            res = json.loads(Path(p).read_text())
            done = [r for r in res.get("runs", []) if r.get("label") and r.get("test")]
            if res.get("mode") != "lodo" or not done:
                raise SystemExit(f"{p}: no finished leave-one-domain-out fold (mode={res.get('mode')!r})")
            for d in sorted({r["label"] for r in done}):  # a partial run (stopped early) counts with its finished folds
                if d not in domains:
                    domains.append(d)
            runs.extend(done)
            name = name or (Path(p).parent.name if "+" not in arg else Path(p).parent.parent.name)
        by = {}
        for r in runs:
            by.setdefault(r["label"], []).append(r)
        per = {d: {f"{kind}/{k}": float(np.mean([r[kind][k] for r in rs])) for kind in ("test", "test_raw")
                   for k in ("pearson", "spearman")} for d, rs in by.items()}
        res = {"runs": runs, "fold_mean": {k: float(np.mean([v[k] for v in per.values()]))
                                           for k in next(iter(per.values()))}}
        rows.append((name, res, by))
    head = "| run | seeds | " + " | ".join(f"{d} r | {d} ρ" for d in domains) + " | mean r | mean ρ | mean raw r |"
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for name, res, by in rows:
        cells = []
        for d in domains:
            rs = by.get(d, [])
            for k in ("pearson", "spearman"):
                v = [r["test"][k] for r in rs]
                cells.append("-" if not v else f"{np.mean(v):.3f}" + (f" ± {np.std(v):.3f}" if len(v) > 1 else ""))
        fm = res["fold_mean"]
        seeds = sorted({r["seed"] for r in res["runs"]})
        out.append(f"| {name} | {','.join(map(str, seeds))} | " + " | ".join(cells) +
                   f" | **{fm['test/pearson']:.3f}** | {fm['test/spearman']:.3f} | {fm['test_raw/pearson']:.3f} |")
    for p in in_domain:  # in-domain cross-validation, split by dataset: what the held-out domain would get with ratings
        seeds_rows = in_domain_rows(p, domains)
        cells, means = [], {"pearson": [], "spearman": [], "raw_pearson": []}
        for d in domains:
            for k in ("pearson", "spearman"):
                v = [r[d][k] for r in seeds_rows if d in r]
                cells.append("-" if not v else f"{np.mean(v):.3f}" + (f" ± {np.std(v):.3f}" if len(v) > 1 else ""))
        for k in means:
            means[k] = np.mean([np.mean([r[d][k] for d in domains if d in r]) for r in seeds_rows])
        out.append(f"| in-domain CV: {Path(p).parent.name} | {','.join(str(r['seed']) for r in seeds_rows)} | "
                   + " | ".join(cells) + f" | {means['pearson']:.3f} | {means['spearman']:.3f} | "
                   f"{means['raw_pearson']:.3f} |")
    return "\n".join(out)


def mismatch_check(models: list[str], version: str = "cleaned", split: str = "dev", seed: int = 0) -> str:
    """A check on a domain without ratings: for every MR of the E2E split, one of its references (matched) and a
    reference of another, randomly drawn MR (mismatched), scored against the MR (raw predictions). A model that
    reads the MR ranks matched above mismatched. Not a quality estimate (no human rating is involved), and a model
    trained on these references (ratpred-e2e) has seen the matched pairs at rating 6."""
    import random

    import qe
    from qe.data.e2e import e2e_references

    refs = e2e_references(version, split)
    mrs = list(refs)
    rng = random.Random(seed)
    pairs = []
    for i, mr in enumerate(mrs):
        j = rng.randrange(len(mrs) - 1)
        j += j >= i
        pairs.append((mr, refs[mr][0], refs[mrs[j]][0]))
    from qe.ratpred.mr import delexicalise

    lines = [f"E2E {version} {split}: {len(pairs)} MRs, seed {seed}", "",
             "| model | unknown tokens (output / MR) | mean matched | mean mismatched | matched > mismatched | ties |",
             "|---|---|---|---|---|---|"]
    for name in models:
        s = qe.load(name, rounded=False)
        # share of the delexicalised tokens of every reference of the split that the model's vocabulary lacks
        unk = np.zeros(2)
        tot = np.zeros(2)
        for mr, rs in refs.items():
            for r in rs:
                d = delexicalise(mr, r, delex=s.delex, where=mr)
                for k, toks in enumerate((d.out_tokens, d.mr_tokens)):
                    unk[k] += sum(t not in s.vocab.stoi for t in toks)
                    tot[k] += len(toks)
        a = np.array(s.score([p[1] for p in pairs], mrs=[p[0] for p in pairs], progress=False))
        b = np.array(s.score([p[2] for p in pairs], mrs=[p[0] for p in pairs], progress=False))
        lines.append(f"| {name} | {100 * unk[0] / tot[0]:.1f} % / {100 * unk[1] / tot[1]:.1f} % | {a.mean():.2f} | "
                     f"{b.mean():.2f} | {100 * np.mean(a > b):.1f} % | {100 * np.mean(a == b):.1f} % |")
    return "\n".join(lines)


def _load_preds(arg: str, split: str) -> dict:
    """``DIR`` or ``DIR+DIR...`` (runs of one model over different seeds / folds) -> {(seed, fold, id): row}."""
    from qe.ensemble.task import read_run_predictions

    fname = "predictions.jsonl" if split == "test" else "dev_predictions.jsonl"
    out: dict = {}
    for d in arg.split("+"):
        path = Path(d)
        path = path.parent if path.is_file() else path
        if not (path / fname).is_file():
            raise SystemExit(f"{path}: no {fname} (dev predictions are written by runs of this version on; "
                             "rerun the model into a new directory)")
        try:
            rows = read_run_predictions(path, split)
        except ValueError as exc:
            raise SystemExit(str(exc)) from None
        twice = sorted(set(rows) & set(out), key=str)
        if twice:
            s, f, i = twice[0]
            raise SystemExit(f"{path / fname}: (seed {s}, fold {f}, {i}) twice among {arg}")
        out.update(rows)
    return out


def _scores(models: dict, names: tuple, split: str, seeds: list) -> dict:
    """Equal-weight mean of the raw outputs of ``names`` (and of ``seeds``) per test (or dev) output, rounded to 0.5
    and clipped to 1-6 as the runner does, scored once; only outputs every (model, seed) predicted. The same rule as
    an ``ensemble`` export of the models (:func:`qe.ensemble.task.combine_predictions`)."""
    from qe.ensemble.task import combine_predictions

    pred, gold, n = combine_predictions([models[x][split] for x in names], [1.0] * len(names), seeds,
                                        {"round_to": 0.5, "clip_lo": 1.0, "clip_hi": 6.0})
    m = correlations(pred, gold)
    return m | {"crit": (m["pearson"] + m["spearman"]) / 2, "n": n}


def combine_table(specs: list[str]) -> str:
    """Choose or combine RatPred models on **dev**, then report test (``combine NAME=RUN ...``).

    Candidates: every single model and every equal-weight mean of two or more of them (raw outputs averaged per
    output, then rounded to 0.5 and clipped to 1-6). Each candidate is scored on the pooled dev parts of all folds
    with the runner's own criterion, (Pearson + Spearman) / 2, and on the pooled test parts; per seed, and as a seed
    ensemble (the raw outputs of all seeds averaged too). The candidate with the best dev criterion (mean over
    seeds; for the seed ensembles, of the ensemble) is the selected one: its test row is the result, the others are
    context. The dev parts also chose each model's best pass, so dev figures are optimistic for every candidate
    alike."""
    from itertools import combinations

    models = {}
    for spec in specs:
        name, _, arg = spec.partition("=")
        if not arg:
            raise SystemExit(f"{spec!r}: give NAME=RUN_DIR (or NAME=DIR+DIR for a run split over processes)")
        models[name] = {"test": _load_preds(arg, "test"), "dev": _load_preds(arg, "dev")}
    seeds = sorted(set.intersection(*[{k[0] for k in m["test"]} for m in models.values()]))
    if not seeds:
        raise SystemExit("the runs share no seed")
    names = list(models)
    cands = [c for k in range(1, len(names) + 1) for c in combinations(names, k)]
    rows = []
    for c in cands:
        per = {s: {sp: _scores(models, c, sp, [s]) for sp in ("dev", "test")} for s in seeds}
        ens = {sp: _scores(models, c, sp, seeds) for sp in ("dev", "test")} if len(seeds) > 1 else None
        rows.append((c, per, ens))
    best = max(range(len(rows)), key=lambda j: np.mean([rows[j][1][s]["dev"]["crit"] for s in seeds]))
    best_ens = max(range(len(rows)), key=lambda j: rows[j][2]["dev"]["crit"]) if len(seeds) > 1 else None
    lines = [f"seeds {seeds}; candidates chosen on dev by (Pearson + Spearman) / 2 of rounded predictions", "",
             "| candidate | seeds | dev crit | dev r | test r | test ρ | MAE | RMSE | n test |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for j, (c, per, ens) in enumerate(rows):
        label = " + ".join(c) if len(c) > 1 else c[0]
        mark = " **(dev-selected)**" if j == best else ""
        dev_c = np.mean([per[s]["dev"]["crit"] for s in seeds])
        dev_r = np.mean([per[s]["dev"]["pearson"] for s in seeds])
        t = {k: np.mean([per[s]["test"][k] for s in seeds]) for k in ("pearson", "spearman", "mae", "rmse")}
        lines.append(f"| {label}{mark} | {'mean of ' if len(seeds) > 1 else ''}{','.join(map(str, seeds))} | "
                     f"{dev_c:.3f} | {dev_r:.3f} | {t['pearson']:.3f} | {t['spearman']:.3f} | {t['mae']:.3f} | "
                     f"{t['rmse']:.3f} | {per[seeds[0]]['test']['n']} |")
    if best_ens is not None:
        for j, (c, per, ens) in enumerate(rows):
            label = (" + ".join(c) if len(c) > 1 else c[0]) + " (seed ensemble)"
            mark = " **(dev-selected)**" if j == best_ens else ""
            d, t = ens["dev"], ens["test"]
            lines.append(f"| {label}{mark} | {','.join(map(str, seeds))} averaged | {d['crit']:.3f} | "
                         f"{d['pearson']:.3f} | {t['pearson']:.3f} | {t['spearman']:.3f} | {t['mae']:.3f} | "
                         f"{t['rmse']:.3f} | {t['n']} |")
    return "\n".join(lines)


def export_check(args: list[str]) -> str:
    """``export-check EXPORT RUN [RUN ...] [--dataset=NAME_OR_FILE]``: score fold 0's test outputs of EMNLP17 with a RatPred export (kind
    ``qe_gru``, or an ``ensemble`` of them, equal weights) and compare with the runs' own cross-validated predictions
    of that fold, combined as the ensemble combines them. A zoo export is its run's seed-``s`` fold-0 model, so the
    two must agree: the check that the exported model is the one the cross-validated figures describe (fold 0's
    test part is the only EMNLP17 data the fold-0 model never saw)."""
    import qe
    from qe.data import load_dataset
    from qe.ensemble.task import combine_predictions, read_run_predictions

    dataset = next((a.split("=", 1)[1] for a in args if a.startswith("--dataset=")), "emnlp17")
    args = [a for a in args if not a.startswith("--dataset=")]
    if len(args) < 2:
        raise SystemExit("export-check EXPORT RUN [RUN ...] [--dataset=NAME_OR_FILE]")
    export, runs = args[0], args[1:]
    recs = {r.id: r for r in load_dataset(dataset)}
    tables = [{k: v for k, v in read_run_predictions(r, "test").items() if k[1] == 0} for r in runs]
    want, gold, n = combine_predictions(tables, [1.0] * len(tables), None, {"round_to": 0.5, "clip_lo": 1.0, "clip_hi": 6.0})
    cols = set.intersection(*[{(f, i) for (_, f, i) in t} for t in tables])
    ids = [i for _, i in sorted(cols, key=lambda k: (k[0], str(k[1])))]
    got = np.asarray(qe.load(export).score([recs[i].output for i in ids], mrs=[recs[i].mr for i in ids], progress=False))
    same = int(np.sum(np.isclose(got, want)))
    return (f"fold 0 test outputs: {n}; export == runs' predictions combined: {same} / {n}\n"
            f"fold 0 Pearson: export {correlations(got, gold)['pearson']:.4f}, runs combined "
            f"{correlations(want, gold)['pearson']:.4f}")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m experiments.ratpred", description="RatPred Table 3 / 4 rows "
                                 "(see the module docstring)")
    ap.add_argument("command", choices=["baselines", "report", "lodo", "mismatch", "combine", "export-check"])
    ap.add_argument("args", nargs=argparse.REMAINDER, help="the command's own arguments")
    a = ap.parse_args(argv)
    if a.command == "mismatch":
        print(mismatch_check(a.args))
        return None
    if a.command == "combine":
        print(combine_table(a.args))
        return None
    if a.command == "export-check":
        print(export_check(a.args))
        return None
    if a.command == "lodo":
        ind = [x.split("=", 1)[1] for x in a.args if x.startswith("--in-domain=")]
        print(lodo_table([x for x in a.args if not x.startswith("--")], ind))
        return None
    return (baselines_main if a.command == "baselines" else report_main)(a.args)


if __name__ == "__main__":
    main()
