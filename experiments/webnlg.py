"""WebNLG 2020 (English, human evaluation of the challenge): the tables of docs/results/webnlg.md.

    qe evaluate dataset=webnlg2020 "scorer=[length]" "models=[bleu-4,chrf,meteor,bertscore,...]" \\
        output_dir=outputs/evaluate/webnlg2020
    python -m experiments.webnlg outputs/evaluate/webnlg2020 > webnlg_tables.md

Reads the evaluate run's CSVs (nothing is recomputed): ``correlations.csv`` (instance level, flatten over the 2,847
outputs, Spearman and Pearson; system level over the 16 system means), ``confounds.csv`` (Spearman partial correlation controlling for
output length in words) and ``human_ceiling.csv`` (agreement among the annotators of the *same* criterion: one
annotator vs the mean of the others, and sqrt of the Spearman-Brown reliability of the mean rating, the highest
correlation any metric can reach with that mean). Every metric the run scored appears; ``--order`` fixes the rows.

The WebNLG ratings are an evaluation set: this script only reports, nothing here selects or tunes on them.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

CRITERIA = ("correctness", "data_coverage", "fluency", "relevance", "text_structure")
SHORT = {"correctness": "corr.", "data_coverage": "data cov.", "fluency": "fluency", "relevance": "relevance",
         "text_structure": "text str."}


def _f(x: float | None, nd: int = 3) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def _cell(r: float | None, p: float | None, alpha: float = 0.05) -> str:
    return _f(r) + ("" if p is None or (isinstance(p, float) and math.isnan(p)) or p < alpha else "†")


def tables(run: Path, order: list[str] | None = None) -> str:
    corr = pd.read_csv(run / "correlations.csv")
    conf = pd.read_csv(run / "confounds.csv")
    ceil = pd.read_csv(run / "human_ceiling.csv")
    inst = corr[(corr.level == "instance") & (corr.protocol == "none") & (corr.subset == "all")]
    syst = corr[(corr.level == "system") & (corr.protocol == "system means")]
    # metrics with no defined correlation at all (e.g. GRUEN's coherence columns when no SOP model is given) are left out
    metrics = [m for m in dict.fromkeys(inst.metric) if inst[inst.metric == m].r.notna().any()]
    if order:
        metrics = [m for m in order if m in metrics] + [m for m in metrics if m not in order]

    def get(df: pd.DataFrame, metric: str, rating: str, method: str, col: str = "r") -> tuple[float, float]:
        row = df[(df.metric == metric) & (df.rating == rating) & (df.method == method)]
        if row.empty:
            return float("nan"), float("nan")
        return float(row.iloc[0][col]), float(row.iloc[0].get("p_adj", row.iloc[0]["p"]))

    def ceiling(level: str, rating: str, method: str, col: str) -> float:
        row = ceil[(ceil.level == level) & (ceil.subset == "all") & (ceil.rating == rating) & (ceil.method == method)]
        return float(row.iloc[0][col]) if not row.empty else float("nan")

    out = []
    head = "| metric | " + " | ".join(SHORT[c] for c in CRITERIA) + " |"
    rule = "|---|" + "---|" * len(CRITERIA)

    n_inst = int(inst.n.max())
    out += [f"**Instance level**: Spearman ρ over the {n_inst:,} outputs (flatten); in brackets the partial ρ "
            "controlling for output length in words. † = not significant at 0.05 after Holm's correction over the "
            "metrics of the column.", "", head, rule]
    for m in metrics:
        cells = []
        for c in CRITERIA:
            r, p = get(inst, m, c, "spearman")
            prow = conf[(conf.level == "instance") & (conf.metric == m) & (conf.rating == c)]
            part = float(prow.iloc[0].partial_length) if not prow.empty else float("nan")
            cells.append(_cell(r, p) + ("" if math.isnan(part) else f" ({_f(part)})"))
        out.append(f"| {m} | " + " | ".join(cells) + " |")
    out.append("| *one annotator vs the others* | "
               + " | ".join(_f(ceiling("instance", c, "spearman", "one_vs_rest")) for c in CRITERIA) + " |")
    out.append("| *ceiling √R of the mean rating* | "
               + " | ".join(_f(ceiling("instance", c, "spearman", "ceiling")) for c in CRITERIA) + " |")

    out += ["", f"**Instance level, Pearson r** over the {n_inst:,} outputs (flatten). † as above.", "", head, rule]
    for m in metrics:
        out.append(f"| {m} | " + " | ".join(_cell(*get(inst, m, c, "pearson")) for c in CRITERIA) + " |")
    out.append("| *one annotator vs the others* | "
               + " | ".join(_f(ceiling("instance", c, "pearson", "one_vs_rest")) for c in CRITERIA) + " |")
    out.append("| *ceiling √R of the mean rating* | "
               + " | ".join(_f(ceiling("instance", c, "pearson", "ceiling")) for c in CRITERIA) + " |")

    n_sys = int(syst.n.max()) if not syst.empty else 0
    out += ["", f"**System level**: Pearson r over the {n_sys} system means (Spearman in brackets). † as above.", "",
            head, rule]
    for m in metrics:
        cells = []
        for c in CRITERIA:
            r, p = get(syst, m, c, "pearson")
            rs, _ = get(syst, m, c, "spearman")
            cells.append(_cell(r, p) + f" ({_f(rs)})")
        out.append(f"| {m} | " + " | ".join(cells) + " |")
    out.append("| *one annotator vs the others* | "
               + " | ".join(f"{_f(ceiling('system', c, 'pearson', 'one_vs_rest'))} "
                            f"({_f(ceiling('system', c, 'spearman', 'one_vs_rest'))})" for c in CRITERIA) + " |")
    out.append("| *ceiling √R of the mean rating* | "
               + " | ".join(f"{_f(ceiling('system', c, 'pearson', 'ceiling'))} "
                            f"({_f(ceiling('system', c, 'spearman', 'ceiling'))})" for c in CRITERIA) + " |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a qe evaluate output directory on dataset=webnlg2020")
    ap.add_argument("--order", nargs="*", default=None, help="row order (metric labels)")
    a = ap.parse_args(argv)
    for f in ("correlations.csv", "confounds.csv", "human_ceiling.csv"):
        if not (a.run / f).is_file():
            print(f"experiments.webnlg: {a.run / f}: not found (run qe evaluate dataset=webnlg2020 first)",
                  file=sys.stderr)
            return 2
    sys.stdout.write(tables(a.run, a.order))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
