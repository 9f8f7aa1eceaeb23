"""Does the ranking of metrics change when ties are counted as the WMT metrics task counts them? (issue 57, item 5)

Reads the output folder of one ``qe evaluate`` run (its ``correlations.csv`` and ``scores.jsonl``) and prints, per
rating, each metric's rank by instance-level Spearman ρ and Kendall τ-b (flattened over all outputs; negated for a
metric where lower is better, marked ↓, as every WMT measure negates it), by
tie-calibrated pairwise accuracy ``acc23`` (grouped by input, ε chosen to maximise it; Deutsch et al. 2023) and by
SPA at the system level, beside the share of within-input output pairs the metric ties (and the humans tie):
the figure that explains a metric that moves.

    python -m experiments.ties_ranking outputs/evaluate/webnlg2020 [--json out.json]
"""
from __future__ import annotations

import argparse
import itertools
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd


def tie_shares(scores_path: Path, rating: str) -> dict[str, tuple[float, float]]:
    """metric -> (share of within-input pairs of outputs the metric scores equally, the same for ``rating``), over
    the inputs with two or more rated outputs."""
    by_item: dict[object, list[dict]] = defaultdict(list)
    with open(scores_path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r.get("ratings", {}).get(rating) is not None:
                by_item[(r.get("dataset"), r.get("item"))].append(r)
    metrics = sorted({m for rows in by_item.values() for r in rows for m in r.get("scores", {})})
    tied = dict.fromkeys(metrics, 0)
    human_tied = pairs = 0
    for rows in by_item.values():
        for a, b in itertools.combinations(rows, 2):
            pairs += 1
            human_tied += a["ratings"][rating] == b["ratings"][rating]
            for m in metrics:
                x, y = a["scores"].get(m), b["scores"].get(m)
                tied[m] += x is not None and y is not None and abs(float(x) - float(y)) <= 1e-12
    return {m: (tied[m] / pairs if pairs else float("nan"), human_tied / pairs if pairs else float("nan"))
            for m in metrics}


def _rank(values: pd.Series) -> pd.Series:
    return values.rank(ascending=False, method="min").astype("Int64")


def table(run: Path) -> dict[str, pd.DataFrame]:
    c = pd.read_csv(run / "correlations.csv")
    meta = run / "scores.meta.json"
    higher = {m: bool(v.get("higher_is_better", True)) for m, v in
              (json.loads(meta.read_text(encoding="utf-8")).get("metrics", {}) if meta.is_file() else {}).items()}
    c = c[c["subset"].astype(str).str.startswith("all")]
    out = {}
    for rating in sorted(c["rating"].unique()):
        d = c[c["rating"] == rating]

        def col(level: str, method: str, protocol: str, field: str = "r") -> pd.Series:
            x = d[(d["level"] == level) & (d["method"] == method) & (d["protocol"] == protocol)]
            return x.drop_duplicates("metric").set_index("metric")[field].astype(float)

        t = pd.DataFrame({"spearman": col("instance", "spearman", "none"),
                          "kendall_b": col("instance", "kendall", "none"),
                          "acc23_item": col("instance", "acc23", "item"),
                          "eps_item": col("instance", "acc23", "item", "epsilon"),
                          "spa": col("system", "spa", "paired permutation")})
        sign = pd.Series({m: 1.0 if higher.get(m, True) else -1.0 for m in t.index})
        t["spearman"], t["kendall_b"] = t["spearman"] * sign, t["kendall_b"] * sign  # ↓ metrics: negated, as acc23
        t.index = [m if higher.get(m, True) else f"{m} ↓" for m in t.index]
        for k in ("spearman", "kendall_b", "acc23_item", "spa"):
            t[f"rank_{k}"] = _rank(t[k])
        shares = tie_shares(run / "scores.jsonl", rating)
        t["metric_tied"] = [shares.get(m.removesuffix(" ↓"), (np.nan, np.nan))[0] for m in t.index]
        t["human_tied"] = [shares.get(m.removesuffix(" ↓"), (np.nan, np.nan))[1] for m in t.index]
        out[rating] = t.sort_values("rank_spearman")
    return out


def markdown(tables: dict[str, pd.DataFrame]) -> str:
    lines = []
    for rating, t in tables.items():
        lines += [f"**{rating}** (human-tied pairs within an input: {t['human_tied'].iloc[0]:.0%})", "",
                  "| metric | ρ (rank) | τ-b (rank) | acc23 by input, ε (rank) | SPA (rank) | pairs it ties |",
                  "|---|---|---|---|---|---|"]
        for m, r in t.iterrows():
            lines.append(f"| {m} | {r.spearman:.3f} ({r.rank_spearman}) | {r.kendall_b:.3f} ({r.rank_kendall_b}) | "
                         f"{r.acc23_item:.3f}, {r.eps_item:.3g} ({r.rank_acc23_item}) | {r.spa:.3f} ({r.rank_spa}) | "
                         f"{r.metric_tied:.0%} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a qe evaluate output folder")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    tables = table(Path(a.run))
    print(markdown(tables))
    if a.json:
        from qe.core.jsonio import dumps

        Path(a.json).write_text(dumps({k: v.reset_index().to_dict(orient="records") for k, v in tables.items()},
                                      indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
