"""Mean and spread over seeds of a scorer's correlations with human ratings, from several ``qe evaluate`` folders,
and Williams tests of each seed's scorer against reference metrics scored in one of them (docs/results/content.md).

    python -m experiments.seed_spread outputs/eval_s42 outputs/eval_s1 outputs/eval_s2 \
        --metrics coverage_aligner coverage_aligner_only --against chrf bertscore \
        --ratings correctness data_coverage fluency relevance text_structure
    python -m experiments.seed_spread outputs/eval_s42 outputs/eval_s1 outputs/eval_s2 \
        --metrics ens.ensemble --paired ens.content ens.ratpred      # the ensemble against its members, per seed
    python -m experiments.seed_spread F1 F2 F3 --metrics ens.ensemble --against chrf bertscore \
        --plot fig.png --goal correctness=0.451 fluency=0.410                # bars per rating, goals dashed

Each folder is one seed's evaluation of the same dataset (the same record ids); an output without a score or
rating (null) is left out of the correlations that need it, and Williams' test drops it too. Per rating and metric: the instance
Spearman and Pearson correlation of every seed (all outputs, flattened, as ``qe evaluate``'s ``correlations.csv``
reports them), their mean and standard deviation (n - 1), and the system-level Spearman and Pearson over system
means read from each folder's ``correlations.csv``. ``--against`` names metrics found in any one folder's
``scores.jsonl`` (scored once: a reference metric does not change with the seed): each seed's scorer is tested
against each of them with Williams' test (one-sided, both directions), on the scores (Pearson) and on their ranks
(Spearman). ``--paired`` names metrics scored in *every* folder (an ensemble's own members, say): each ``--metrics``
entry is tested against each of them within each folder, its own seed against its own seed. The folders are read,
never written; nothing is scored.
"""
from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from scipy.stats import pearsonr, rankdata, spearmanr

from qe.evaluation.stats import williams_compare


def read_scores(folder: Path) -> dict[str, dict[str, Any]]:
    path = folder / "scores.jsonl"
    if not path.is_file():
        raise SystemExit(f"{folder}: no scores.jsonl (a qe evaluate output folder?)")
    rows = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            rows[str(row["id"])] = row
    return rows


def system_level(folder: Path) -> dict[tuple[str, str, str], float]:
    out = {}
    path = folder / "correlations.csv"
    if not path.is_file():
        return out
    with open(path, encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            if r["level"] == "system" and r["r"] not in ("", "nan"):
                out[(r["rating"], r["metric"], r["method"])] = float(r["r"])
    return out


def column(rows: dict[str, dict[str, Any]], ids: Sequence[str], field: str, key: str, where: Path) -> np.ndarray:
    try:
        return np.array([np.nan if rows[i][field].get(key) is None else float(rows[i][field][key]) for i in ids])
    except KeyError:
        raise SystemExit(f"{where}: record {ids[0]!r} and others have no {field}.{key}") from None


def spread(folders: Sequence[Path], metrics: Sequence[str], against: Sequence[str], ratings: Sequence[str],
           paired: Sequence[str] = ()) -> dict[str, Any]:
    runs = [read_scores(f) for f in folders]
    ids = sorted(runs[0])
    for f, r in zip(folders[1:], runs[1:]):
        if sorted(r) != ids:
            raise SystemExit(f"{f}: other record ids than {folders[0]}")
    systems = [system_level(f) for f in folders]
    refs = {}
    for m in against:
        hit = next(((f, r) for f, r in zip(folders, runs) if m in r[ids[0]]["scores"]), None)
        if hit is None:
            raise SystemExit(f"--against {m}: scored in none of the folders")
        refs[m] = column(hit[1], ids, "scores", m, hit[0])
    out: dict[str, Any] = {"folders": [str(f) for f in folders], "n": len(ids), "rows": [], "williams": []}
    for rating in ratings:
        human = column(runs[0], ids, "ratings", rating, folders[0])
        ok = ~np.isnan(human)
        for m in metrics:
            per = [column(r, ids, "scores", m, f) for f, r in zip(folders, runs)]
            rho = [float(spearmanr(human[both], x[both]).statistic) for x in per if (both := ok & ~np.isnan(x)).any()]
            r = [float(pearsonr(human[both], x[both]).statistic) for x in per if (both := ok & ~np.isnan(x)).any()]
            sys_rho = [s.get((rating, m, "spearman"), np.nan) for s in systems]
            sys_r = [s.get((rating, m, "pearson"), np.nan) for s in systems]
            out["rows"].append({"rating": rating, "metric": m, "spearman": rho, "pearson": r,
                                "system_spearman": sys_rho, "system_pearson": sys_r})
            pairs = [(ref, [x_ref] * len(folders)) for ref, x_ref in refs.items()]
            pairs += [(p, [column(r, ids, "scores", p, f) for f, r in zip(folders, runs)]) for p in paired if p != m]
            for ref, x_refs in pairs:
                for seed, x, x_ref in zip(folders, per, x_refs):
                    keep = ok & ~np.isnan(x) & ~np.isnan(x_ref)
                    t_r, _, _ = williams_compare(human[keep], x[keep], x_ref[keep])
                    t_rank, _, _ = williams_compare(rankdata(human[keep]), rankdata(x[keep]), rankdata(x_ref[keep]))
                    out["williams"].append({"rating": rating, "metric": m, "against": ref, "folder": str(seed),
                                            "p_metric_better_r": t_r.p, "p_against_better_r": 1 - t_r.p,
                                            "p_metric_better_rank": t_rank.p, "p_against_better_rank": 1 - t_rank.p})
        for ref, x_ref in refs.items():
            both = ok & ~np.isnan(x_ref)
            out["rows"].append({"rating": rating, "metric": ref,
                                "spearman": [float(spearmanr(human[both], x_ref[both]).statistic)],
                                "pearson": [float(pearsonr(human[both], x_ref[both]).statistic)],
                                "system_spearman": [next((s[(rating, ref, "spearman")] for s in systems
                                                          if (rating, ref, "spearman") in s), np.nan)],
                                "system_pearson": [next((s[(rating, ref, "pearson")] for s in systems
                                                         if (rating, ref, "pearson") in s), np.nan)]})
    return out


def describe(folder: Path, metrics: Sequence[str]) -> str:
    """How each metric's scores are spread in one folder: distinct values, sd, 5/50/95th percentiles, share at max."""
    rows = read_scores(folder)
    ids = sorted(rows)
    lines = ["| metric | distinct | sd | 5 % / 50 % / 95 % | share at its max |", "|---|---|---|---|---|"]
    for m in metrics:
        x = column(rows, ids, "scores", m, folder)
        x = x[~np.isnan(x)]
        p = np.percentile(x, [5, 50, 95])
        lines.append(f"| {m} | {len(np.unique(np.round(x, 9)))} | {x.std():.3f} | {p[0]:.3f} / {p[1]:.3f} / {p[2]:.3f} | "
                     f"{float(np.mean(x == x.max())):.3f} |")
    return "\n".join(lines)


def _ms(xs: Sequence[float]) -> str:
    xs = [x for x in xs if not np.isnan(x)]
    if not xs:
        return "–"
    if len(xs) == 1:
        return f"{xs[0]:.3f}"
    return f"{np.mean(xs):.3f} ± {np.std(xs, ddof=1):.3f}"


def table(res: dict[str, Any]) -> str:
    lines = ["| rating | metric | instance ρ per folder | ρ mean ± sd | r mean ± sd | system ρ | system r |",
             "|---|---|---|---|---|---|---|"]
    for row in res["rows"]:
        lines.append(f"| {row['rating']} | {row['metric']} | {' / '.join(f'{x:.3f}' for x in row['spearman'])} | "
                     f"{_ms(row['spearman'])} | {_ms(row['pearson'])} | {_ms(row['system_spearman'])} | "
                     f"{_ms(row['system_pearson'])} |")
    if res["williams"]:
        lines += ["", "| rating | metric | against | p (metric better), r / ranks, per folder | "
                      "p (against better), r / ranks |", "|---|---|---|---|---|"]
        keys = list(dict.fromkeys((w["rating"], w["metric"], w["against"]) for w in res["williams"]))
        for k in keys:
            ws = [w for w in res["williams"] if (w["rating"], w["metric"], w["against"]) == k]
            better = " ; ".join(f"{w['p_metric_better_r']:.2g} / {w['p_metric_better_rank']:.2g}" for w in ws)
            worse = " ; ".join(f"{w['p_against_better_r']:.2g} / {w['p_against_better_rank']:.2g}" for w in ws)
            lines.append(f"| {k[0]} | {k[1]} | {k[2]} | {better} | {worse} |")
    return "\n".join(lines)


def plot(res: dict[str, Any], path: Path, goals: dict[str, float] | None = None) -> Path:
    """One panel per rating: each metric's instance Spearman ρ (mean over the folders, bars; the spread over the
    folders as error bars, sd), the reference metrics of ``--against`` in grey, a goal per rating as a dashed line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratings = list(dict.fromkeys(r["rating"] for r in res["rows"]))
    metrics = list(dict.fromkeys(r["metric"] for r in res["rows"]))
    refs = {r["metric"] for r in res["rows"] if len(r["spearman"]) == 1 and len(res["folders"]) > 1}
    fig, axes = plt.subplots(1, len(ratings), figsize=(3.2 * len(ratings), 0.45 * len(metrics) + 1.4), sharey=True,
                             squeeze=False)
    for ax, rating in zip(axes[0], ratings):
        rows = {r["metric"]: r["spearman"] for r in res["rows"] if r["rating"] == rating}
        y = np.arange(len(metrics))
        means = [float(np.mean(rows[m])) if m in rows else np.nan for m in metrics]
        sds = [float(np.std(rows[m], ddof=1)) if m in rows and len(rows[m]) > 1 else 0.0 for m in metrics]
        colours = ["0.65" if m in refs else "C0" for m in metrics]
        ax.barh(y, means, xerr=sds, color=colours, capsize=2)
        for yi, v in zip(y, means):
            if not np.isnan(v):
                ax.text(v, yi, f" {v:.3f}", va="center", fontsize=7)
        if goals and rating in goals:
            ax.axvline(goals[rating], ls="--", color="C3", lw=1)
        ax.set_title(rating.replace("_", " "), fontsize=9)
        ax.set_xlabel("instance Spearman ρ", fontsize=8)
        ax.set_xlim(0, max([v for v in means if not np.isnan(v)] + list((goals or {}).values()) + [0.1]) * 1.25)
        ax.tick_params(labelsize=7)
    axes[0][0].set_yticks(np.arange(len(metrics)), metrics)
    axes[0][0].invert_yaxis()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.seed_spread", description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path, help="qe evaluate output folders, one per seed")
    ap.add_argument("--metrics", nargs="+", required=True)
    ap.add_argument("--against", nargs="*", default=[])
    ap.add_argument("--paired", nargs="*", default=[], help="metrics of every folder to test against per folder")
    ap.add_argument("--ratings", nargs="+", default=["correctness", "data_coverage", "fluency", "relevance",
                                                      "text_structure"])
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    ap.add_argument("--describe", action="store_true", help="only how each metric's scores are spread, per folder")
    ap.add_argument("--plot", type=Path, default=None, help="also draw the instance ρ per rating into this image")
    ap.add_argument("--goal", nargs="*", default=[], metavar="RATING=RHO", help="a dashed line per rating in --plot")
    a = ap.parse_args(argv)
    goals = {}
    for g in a.goal:
        k, _, v = g.partition("=")
        try:
            goals[k] = float(v)
        except ValueError:
            ap.error(f"--goal {g!r}: give RATING=RHO, e.g. correctness=0.451")
    if a.describe:
        print("\n\n".join(f"{f}\n\n{describe(f, a.metrics)}" for f in a.folders))
        return 0
    res = spread(a.folders, a.metrics, a.against, a.ratings, a.paired)
    print(table(res))
    if a.plot:
        print(f"plot: {plot(res, a.plot, goals)}")
    if a.json:
        from qe.core.jsonio import dumps

        a.json.write_text(dumps(res, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
