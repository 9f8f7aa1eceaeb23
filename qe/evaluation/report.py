"""``report.md``: readable markdown tables of a meta-evaluation (every table names its level, protocol,
test and correction), plus the machine-readable CSVs beside it."""
from __future__ import annotations

import math
import os
import platform
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from qe.evaluation.analysis import EvalData, Results

CORR_NAMES = {"none": "no correction", "bonferroni": "Bonferroni-corrected", "holm": "Holm-corrected"}
ABBR = {"pearson": "r", "spearman": "ρ", "kendall": "τ"}
PROTOCOL_NAMES = {
    "none": "flatten (average_by=none): one correlation over all outputs",
    "sys": "per system, then averaged (average_by=sys)",
    "item": "per item, then averaged (average_by=item; summary level)",
    "system means": "correlation of per-system mean scores",
}


def _gpu() -> str:
    torch = sys.modules.get("torch")  # only report what a scorer actually had; never import torch for this
    if torch is not None and torch.cuda.is_available():
        return "GPU: " + torch.cuda.get_device_name(0)
    return "no GPU used" if torch is not None else "no GPU needed"


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    def cell(v):
        return str(v).replace("|", "\\|").replace("\n", " ")

    align = align or ("l" + "r" * (len(header) - 1))
    sep = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def fnum(v: Any, nd: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return f"{v:.{nd}f}"


def fp(p: float) -> str:
    if p is None or math.isnan(p):
        return "—"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


class ReportWriter:
    def __init__(self, d: EvalData, res: Results, *, title: str, command: str | None = None,
                 dataset_desc: str = "", figures: Sequence[Path] = (), out_dir: Path | None = None,
                 elapsed_s: float | None = None):
        self.d, self.res, self.st = d, res, res.settings
        self.title, self.command, self.dataset_desc = title, command, dataset_desc
        self.figures, self.out_dir, self.elapsed = list(figures), out_dir, elapsed_s
        self.parts: list[str] = []

    # ---- helpers ------------------------------------------------------------------------------------------------
    def sig_note(self, family: str = "metrics in each column") -> str:
        st = self.st
        tails = "two-tailed" if st.tails == 2 else "one-tailed in each metric's expected direction"
        corr = CORR_NAMES[st.correction]
        return f"`*` = p < {st.alpha:g} ({tails}, {corr} across the {family})"

    def mlabel(self, m: str) -> str:
        return m + ("" if self.d.info[m].higher_is_better else " ↓")

    def cell(self, row) -> str:
        if row is None or math.isnan(row["r"]):
            return "—"
        return f"{row['r']:.3f}" + ("*" if row["significant"] else "")

    def corr_table(self, level: str, protocol: str, subset: str, methods: Sequence[str]) -> str | None:
        c = self.res.correlations
        sel = c[(c.level == level) & (c.protocol == protocol) & (c.subset == subset)]
        if sel.empty:
            return None
        if sel["r"].isna().all():
            sk = int(sel["groups_skipped"].max())
            return (f"_No correlation is defined here (n = {int(sel['n'].max())} {sel['units'].iloc[0]}"
                    + (f"; {sk} groups with fewer than {self.st.min_group_size} outputs or a constant side" if sk else "")
                    + ")._")
        aspects = list(self.d.ratings)
        header = ["metric"] + [f"{a[:4]}. {ABBR[m]}" for a in aspects for m in methods]
        rows = []
        idx = {(r.metric, r.rating, r.method): r for r in sel.itertuples()}
        for mname in self.d.metrics:
            row = [self.mlabel(mname)]
            for a in aspects:
                for meth in methods:
                    r = idx.get((mname, a, meth))
                    row.append(self.cell(r._asdict()) if r is not None else "—")
            rows.append(row)
        ns = sorted({int(v) for v in sel["n"]})
        extra = ""
        if protocol in ("sys", "item"):
            sk = sorted({int(v) for v in sel["groups_skipped"]})
            extra = f"; groups skipped (fewer than {self.st.min_group_size} outputs or a constant side): {sk[0] if len(sk) == 1 else f'{sk[0]}–{sk[-1]}'}"
        unit = sel["units"].iloc[0]
        n_txt = f"{ns[0]}" if len(ns) == 1 else f"{ns[0]}–{ns[-1]}"
        return md_table(header, rows) + f"\n\n_n = {n_txt} {unit}{extra}._"

    # ---- sections -----------------------------------------------------------------------------------------------
    def header(self):
        d, st = self.d, self.st
        p = self.parts
        p.append(f"# {self.title}\n")
        if self.command:
            p.append(f"Command:\n\n```bash\n{self.command}\n```\n")
        import qe

        p.append(f"qe {qe.__version__}; Python {platform.python_version()} on {platform.machine()} "
                 f"({platform.system()}, {os.cpu_count()} CPU cores, {_gpu()})"
                 + (f"; scoring and analysis took {self.elapsed:.0f} s" if self.elapsed else "") + ".\n")
        tails = "two-tailed" if st.tails == 2 else "one-tailed (in each metric's expected direction)"
        p.append("## Settings\n")
        p.append(md_table(["setting", "value"], [
            ["coefficients", ", ".join(f"{m} ({ABBR[m]})" for m in st.methods) + "; Kendall is tau-b"],
            ["protocols", "; ".join(PROTOCOL_NAMES[x] for x in st.protocols)],
            ["p-values", f"{tails}; analytic (scipy) for flatten and system level, percentile bootstrap over groups for averaged protocols"],
            ["correction", f"{CORR_NAMES[st.correction]} across the metrics of each table column, α = {st.alpha:g}"],
            ["bootstrap", f"{st.bootstrap_n} resamples, {st.ci:.0%} percentile CI, seed {st.seed}; items resampled at instance level, groups for averaged protocols, systems at system level"],
            ["metric vs metric", f"Williams test on Pearson (one-tailed, uncorrected, as Graham & Baldwin 2014); PERM-BOTH ({st.permutation_method}, {st.permutation_n} permutations)"],
            ["error measures", f"MSE after the least-squares line (Kann et al. eq. 6); MAE / RMSE after min–max mapping into the rating range"
                               + (f", rounded to {st.round_to:g} steps" if st.round_to else "") + " (Dušek et al.)"],
            ["system differences", f"{'Wilcoxon signed-rank, ratings paired by item' if st.pairwise_test == 'wilcoxon' else 'Tukey HSD'}, "
                                   f"{CORR_NAMES[st.pairwise_correction] if st.pairwise_test == 'wilcoxon' else 'Tukey-corrected'} across system pairs, α = {st.pairwise_alpha:g}"],
        ], "ll"))
        p.append("")

    def data_section(self):
        d = self.d
        p = self.parts
        p.append("## Data\n")
        if self.dataset_desc:
            p.append(self.dataset_desc + "\n")
        ds_counts = pd.Series(d.dataset).value_counts().sort_index()
        sys_counts = pd.Series(d.system).value_counts().sort_index()
        items = f"{len(set(d.item.tolist()))} items (inputs)" if d.item is not None else "no item field"
        p.append(f"{d.n} rated outputs; datasets: " + ", ".join(f"{k} ({v})" for k, v in ds_counts.items())
                 + "; systems: " + ", ".join(f"{k} ({v})" for k, v in sys_counts.items())
                 + f"; {items}; rating aspects: {', '.join(d.ratings)}"
                 + (f"; human systems: {', '.join(d.human_systems)}" if d.human_systems else "; no system marked as human")
                 + (f"; rating scale [{d.rating_range[0]:g}, {d.rating_range[1]:g}]" if d.rating_range else "") + ".\n")
        p.append("### Metrics\n")
        rows = []
        nc = self.res.nan_counts.set_index("metric")
        for m, inf in self.d.info.items():
            dropped = ", ".join(f"{a}: {int(nc.loc[m, f'pairs_dropped:{a}'])}" for a in d.ratings)
            rows.append([m, inf.source, "higher" if inf.higher_is_better else "lower (↓)", int(nc.loc[m, "nan_scores"]),
                         dropped, f"`{inf.signature}`"])
        p.append(md_table(["metric", "source", "better", "NaN scores", "pairs dropped (NaN score or rating)", "signature"],
                          rows, "llrrll"))
        p.append("\nNaN scores are dropped pairwise (per metric and rating aspect) before any statistic; the counts are above.\n")

    def instance_section(self):
        p = self.parts
        st = self.st
        if "none" in st.protocols:
            p.append("## Instance level — protocol: flatten (average_by=none)\n")
            p.append("One correlation over all outputs of a subset. " + self.sig_note() + "; ↓ = lower is better, so a "
                     "good ↓ metric correlates negatively.\n")
            subs = [s for s in self.res.correlations.query("level == 'instance' and protocol == 'none'")["subset"].unique()]
            for s in [x for x in subs if not x.startswith("system=")]:
                t = self.corr_table("instance", "none", s, st.methods)
                if t:
                    p.append(f"### {'All data' if s == 'all' else s}\n\n{t}\n")
            if "pearson" in st.bootstrap_methods and st.bootstrap_n:
                p.append(self.ci_table("instance", "none", "pearson"))
            sys_subs = [x for x in subs if x.startswith("system=")]
            if sys_subs:
                p.append("### Per-system breakdown (instance level, flatten, within each system)\n")
                c = self.res.correlations
                sel = c[(c.level == "instance") & (c.protocol == "none") & c.subset.isin(sys_subs) & (c.method == "pearson")]
                idx = {(r.metric, r.rating, r.subset): r._asdict() for r in sel.itertuples()}
                header = ["metric"] + [f"{a[:4]}. r {s[7:]}" for a in self.d.ratings for s in sys_subs]
                rows = [[self.mlabel(m)] + [self.cell(idx.get((m, a, s))) for a in self.d.ratings for s in sys_subs]
                        for m in self.d.metrics]
                ns = {s: int(sel[sel.subset == s]["n"].max()) for s in sys_subs}
                p.append(md_table(header, rows) + "\n\n_Pearson; n = " + ", ".join(f"{s[7:]}: {n}" for s, n in ns.items())
                         + " outputs. Spearman and Kendall: `correlations.csv`._\n")
        for proto in [x for x in st.protocols if x != "none"]:
            c = self.res.correlations
            if c[(c.level == "instance") & (c.protocol == proto)].empty:
                if proto == "item":
                    p.append("## Summary level — protocol: per item, then averaged\n\nNot computed: the records have no item field (`dataset.item_key`).\n")
                continue
            name = ("Summary level — protocol: per item (input), then averaged (average_by=item)" if proto == "item"
                    else "Instance level — protocol: per system, then averaged (average_by=sys)")
            p.append(f"## {name}\n")
            p.append("Correlation inside each group, then the unweighted mean over groups where it is defined. "
                     "p-values: percentile bootstrap over groups (at least 5 groups; none with fewer). " + self.sig_note() + ".\n")
            for s in c[(c.level == "instance") & (c.protocol == proto)]["subset"].unique():
                t = self.corr_table("instance", proto, s, st.methods)
                if t:
                    p.append(f"### {'All data' if s == 'all' else s}\n\n{t}\n")
        ia = self.res.item_accuracy
        if len(ia):
            p.append("### Pairwise accuracy within items\n")
            p.append("Share of pairs of outputs for the same input, with different human ratings, that the metric "
                     "orders as humans do (metric ties count as misses; 0.5 = chance). Useful where items have only two "
                     "outputs and per-item correlations are undefined.\n")
            subs = list(ia["subset"].unique())
            header = ["metric"] + [f"{a[:4]}. {s}" for a in self.d.ratings for s in subs]
            idx = {(r.metric, r.rating, r.subset): r for r in ia.itertuples()}
            rows = [[self.mlabel(m)] + [fnum(idx[(m, a, s)].accuracy) for a in self.d.ratings for s in subs] for m in self.d.metrics]
            npairs = {(a, s): int(ia[(ia.rating == a) & (ia.subset == s)]["pairs"].max()) for a in self.d.ratings for s in subs}
            p.append(md_table(header, rows) + "\n\n_pairs: " + "; ".join(f"{a[:4]}. {s}: {n}" for (a, s), n in npairs.items()) + "._\n")

    def ci_table(self, level: str, protocol: str, method: str, subset_filter=None) -> str:
        c = self.res.correlations
        sel = c[(c.level == level) & (c.protocol == protocol) & (c.method == method) & c.ci_low.notna()]
        if subset_filter is not None:
            sel = sel[sel.subset.map(subset_filter)]
        if sel.empty:
            return ""
        subs = list(sel["subset"].unique())
        header = ["metric"] + [f"{a[:4]}. {s}" for a in self.d.ratings for s in subs]
        idx = {(r.metric, r.rating, r.subset): r for r in sel.itertuples()}

        def ci(r):
            return f"[{r.ci_low:.2f}, {r.ci_high:.2f}]" if r is not None else "—"

        rows = [[self.mlabel(m)] + [ci(idx.get((m, a, s))) for a in self.d.ratings for s in subs] for m in self.d.metrics]
        unit = {"instance": "outputs", "system": "systems"}[level]
        return (f"### {self.st.ci:.0%} bootstrap confidence intervals ({ABBR[method]}, {self.st.bootstrap_n} resamples of {unit}, seed {self.st.seed})\n\n"
                + md_table(header, rows) + "\n")

    def system_section(self):
        p = self.parts
        c = self.res.correlations
        sysc = c[c.level == "system"]
        if sysc.empty:
            return
        p.append("## System level — correlation of per-system means\n")
        p.append("A unit is a system within one dataset (pooled over datasets: a dataset/system pair). Sets: all "
                 "systems, and excluding systems marked as human (Reiter & Belz's sets I and II). With few units the "
                 "correlations are fragile: read the n and the bootstrap intervals. " + self.sig_note() + ".\n")
        sm = self.res.system_means
        top = sm[sm.subset == "all"].set_index("unit")
        cols = [f"rating:{a}" for a in self.d.ratings] + [f"metric:{m}" for m in self.d.metrics]
        header = ["score"] + [str(u) for u in top.index]
        rows = [["n outputs"] + [int(v) for v in top["n"]]]
        rows += [[(c_.split(":", 1)[1] if c_.startswith("metric:") and self.d.info[c_.split(':', 1)[1]].higher_is_better
                   else c_.split(":", 1)[1] + (" ↓" if c_.startswith("metric:") else " (human)"))]
                 + [fnum(v) for v in top[c_]] for c_ in cols]
        p.append("### Per-unit means (all data)\n\n" + md_table(header, rows) + "\n")
        for s in sysc["subset"].unique():
            t = self.corr_table("system", "system means", s, self.st.methods)
            if t:
                p.append(f"### {s}\n\n{t}\n")
        if self.st.bootstrap_n:
            p.append(self.ci_table("system", "system means", "pearson", lambda s: s.startswith("all ")))
        sa = self.res.system_accuracy
        if len(sa):
            p.append("### System-level pairwise accuracy\n")
            p.append("Share of unit pairs with different human means that the metric orders the same way (metric ties "
                     "count as misses).\n")
            subs = [s for s in sa["subset"].unique() if s.startswith("all ")]
            header = ["metric"] + [f"{a[:4]}. {s}" for a in self.d.ratings for s in subs]
            idx = {(r.metric, r.rating, r.subset): r for r in sa.itertuples()}
            rows = [[self.mlabel(m)] + [fnum(idx[(m, a, s)].accuracy, 2) for a in self.d.ratings for s in subs] for m in self.d.metrics]
            np_ = {s: int(sa[sa.subset == s]["pairs"].max()) for s in subs}
            p.append(md_table(header, rows) + "\n\n_pairs: " + "; ".join(f"{s}: {n}" for s, n in np_.items())
                     + ". Per dataset: `system_accuracy.csv`._\n")

    def error_section(self):
        e = self.res.errors
        if e.empty:
            return
        p = self.parts
        p.append("## Error measures\n")
        p.append("Over all outputs of a subset (flatten protocol). "
                 "MSE after the best linear fit of the rating on the metric (Kann et al. 2018, eq. 6; lower is better); "
                 "MAE and RMSE after mapping the metric min–max into the rating range"
                 + (f" and rounding to {self.st.round_to:g} steps" if self.st.round_to else "")
                 + " (Dušek et al. 2017; ↓ metrics reversed first). The constant baseline predicts the mean rating.\n")
        for s in e["subset"].unique():
            sel = e[e.subset == s]
            names = list(dict.fromkeys(sel["metric"]))
            header = ["metric"] + [f"{a[:4]}. {k}" for a in self.d.ratings for k in ("MSE fit", "MAE", "RMSE")]
            idx = {(r.metric, r.rating): r for r in sel.itertuples()}
            rows = []
            for m in names:
                lab = self.mlabel(m) if m in self.d.info else m
                row = [lab]
                for a in self.d.ratings:
                    r = idx.get((m, a))
                    row += [fnum(r.mse_fit), fnum(r.mae), fnum(r.rmse)] if r is not None else ["—"] * 3
                rows.append(row)
            rng = ", ".join(f"{a}: {sel[sel.rating == a]['range'].iloc[0]}" for a in self.d.ratings)
            p.append(f"### {'All data' if s == 'all' else s}\n\n" + md_table(header, rows) + f"\n\n_rating range {rng}._\n")

    def compare_section(self):
        w, pm = self.res.williams, self.res.permutation
        if w.empty and pm.empty:
            return
        p = self.parts
        p.append("## Comparing metrics\n")
        p.append(f"Does metric A correlate better with humans than metric B on the same outputs? Instance level: flatten "
                 f"protocol over all data; system level: per-unit means. Williams test "
                 f"(dependent Pearson correlations, one-tailed, α = {self.st.alpha:g}, uncorrected as in Graham & "
                 f"Baldwin 2014) and PERM-BOTH ({self.st.permutation_method}, {self.st.permutation_n} permutations, "
                 "one-tailed). ↓ metrics are negated first. Full p-value matrices: `williams.csv`, `permutation.csv`.\n")
        for a in self.d.ratings:
            rows = []
            wa = w[(w.level == "instance") & (w.subset == "all") & (w.rating == a)] if not w.empty else w
            pa = pm[pm.rating == a] if not pm.empty else pm
            ws = w[(w.level == "system") & (w.rating == a)] if not w.empty else w
            r_of = {}
            for r in wa.itertuples():
                r_of[r.metric_a], r_of[r.metric_b] = r.r_a, r.r_b
            for m in sorted(self.d.metrics, key=lambda m: -(r_of.get(m, -9) if not math.isnan(r_of.get(m, -9)) else -9)):
                beats_w = self._beats(wa, m)
                beats_p = self._beats(pa, m)
                beats_s = self._beats(ws, m)
                rows.append([self.mlabel(m), fnum(r_of.get(m, math.nan)), ", ".join(beats_w) or "—",
                             ", ".join(beats_p) or "—", ", ".join(beats_s) or "—"])
            p.append(f"### {a}\n\n" + md_table(["metric", "r (oriented, all)", "beats (Williams, instance)",
                                                  "beats (PERM-BOTH, instance)", "beats (Williams, system)"], rows, "lrlll") + "\n")

    def _beats(self, frame: pd.DataFrame, m: str) -> list[str]:
        out = []
        if frame is None or frame.empty:
            return out
        alpha = self.st.alpha
        for r in frame.itertuples():
            if r.metric_a == m and r.p_a_better < alpha:
                out.append(r.metric_b)
            elif r.metric_b == m and r.p_b_better < alpha:
                out.append(r.metric_a)
        return out

    def between_section(self):
        b = self.res.between_datasets
        if b is None or b.empty:
            return
        p = self.parts
        p.append("## One metric across datasets (Fisher z, independent samples)\n")
        p.append("Is a metric's Pearson r (instance level, flatten; ↓ metrics negated) different on two datasets? Two-tailed; "
                 f"{CORR_NAMES[self.st.correction]} across all tests of this table; `*` = p < {self.st.alpha:g}. Cell: r(A) − r(B).\n")
        pairs = list(dict.fromkeys(zip(b.dataset_a, b.dataset_b)))
        header = ["metric"] + [f"{a[:4]}. {x}−{y}" for a in self.d.ratings for x, y in pairs]
        idx = {(r.metric, r.rating, r.dataset_a, r.dataset_b): r for r in b.itertuples()}
        rows = []
        for m in self.d.metrics:
            row = [self.mlabel(m)]
            for a in self.d.ratings:
                for x, y in pairs:
                    r = idx.get((m, a, x, y))
                    if r is None or math.isnan(r.z):
                        row.append("—")
                    else:
                        row.append(f"{r.r_a - r.r_b:+.2f}" + ("*" if r.p_adj < self.st.alpha else ""))
            rows.append(row)
        p.append(md_table(header, rows) + "\n")

    def pairs_section(self):
        sp, pr = self.res.system_pairs, self.res.predicted
        if sp is None or sp.empty:
            return
        p = self.parts
        st = self.st
        p.append("## Pairwise system differences (Reiter & Belz 2009, Table 9)\n")
        test = sp["test"].iloc[0]
        p.append(f"Which pairs of systems do humans rate differently? {test}"
                 + (" on ratings paired by item (each system's ratings averaged per item first)" if test.startswith("Wilcoxon") else "")
                 + f"; {st.pairwise_correction.capitalize() if test.startswith('Wilcoxon') else 'Tukey'} correction across the pairs of each "
                 f"rating aspect; α = {st.pairwise_alpha:g}, two-tailed.\n")
        rows = [[r.rating, r.dataset, r.system_a, r.system_b, r.n, fnum(r.mean_a, 2), fnum(r.mean_b, 2), fp(r.p), fp(r.p_adj),
                 ("**" + r.better + "**") if r.significant else "n.s."] for r in sp.itertuples()]
        p.append(md_table(["rating", "dataset", "A", "B", "n pairs", "mean A", "mean B", "p", "p adj.", "better"], rows,
                          "llllrrrrrl") + "\n")
        if pr is not None and not pr.empty:
            p.append("### Significant human differences predicted by each metric\n")
            p.append("A difference is predicted when the metric's mean over the same items is higher for the system "
                     "humans prefer (↓ metrics negated).\n")
            header = ["metric"] + list(self.d.ratings)
            idx = {(r.metric, r.rating): r for r in pr.itertuples()}
            rows = [[self.mlabel(m)] + [f"{idx[(m, a)].predicted} / {idx[(m, a)].significant}" if (m, a) in idx else "—"
                                        for a in self.d.ratings] for m in self.d.metrics]
            p.append(md_table(header, rows) + "\n")

    def figures_section(self):
        if not self.figures:
            return
        p = self.parts
        p.append("## Figures\n")
        for f in self.figures:
            rel = f.relative_to(self.out_dir) if self.out_dir and f.is_relative_to(self.out_dir) else f
            p.append(f"![{f.stem}]({rel.as_posix()})\n")

    def notes_section(self):
        if self.res.notes:
            self.parts.append("## Notes\n\n" + "\n".join(f"- {n}" for n in self.res.notes) + "\n")

    def render(self) -> str:
        self.parts = []
        self.header()
        self.data_section()
        self.instance_section()
        self.system_section()
        self.error_section()
        self.compare_section()
        self.between_section()
        self.pairs_section()
        self.figures_section()
        self.notes_section()
        return "\n".join(self.parts).rstrip() + "\n"


def write_outputs(out_dir: Path, res: Results) -> list[Path]:
    """The tables as CSV beside report.md."""
    out = []
    for name, frame in [("correlations", res.correlations), ("errors", res.errors), ("system_means", res.system_means),
                        ("system_accuracy", res.system_accuracy), ("item_accuracy", res.item_accuracy),
                        ("williams", res.williams), ("permutation", res.permutation),
                        ("between_datasets", res.between_datasets), ("system_pairs", res.system_pairs),
                        ("predicted_differences", res.predicted)]:
        if frame is not None and len(frame):
            p = out_dir / f"{name}.csv"
            frame.to_csv(p, index=False)
            out.append(p)
    return out
