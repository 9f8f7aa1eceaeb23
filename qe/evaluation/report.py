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
    "system means": "system level, mean of instance scores: correlation of per-system means",
    "corpus score": "system level, corpus-level score: the metric computed over all outputs of each system",
}
SYSTEM_WAYS = {"system means": "mean of instance scores", "corpus score": "corpus-level score"}
UNDEFINED_NAMES = {
    "instance": "Instance level (every protocol)", "item_accuracy": "Pairwise accuracy within items",
    "errors": "Error measures", "perm_both": "PERM-BOTH", "between_datasets": "One metric across datasets",
    "pairs": "Pairwise system differences", "per_system": "Per-system breakdown",
    "agreement": "Correlations between criteria", "ceiling": "Human ceiling (agreement among annotators)",
    "confounds": "Confounds", "system": "System level (correlations)",
}
#: how a p-value was obtained (``p_kind`` of a correlation row), for the footnotes of a table
P_KINDS = {"exact": "Kendall's exact null distribution (small sample, no ties)"}


def undefined_name(key: str) -> str:
    """The report's name for a skipped section (``Results.undefined`` key)."""
    if key.startswith("constant:"):
        return f"every correlation and test on `{key.split(':', 1)[1]}`"
    if key.startswith("constant_metric:"):
        return f"every correlation of the metric `{key.split(':', 1)[1]}`"
    return UNDEFINED_NAMES.get(key, key)


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

    def undefined(self, key: str, title: str | None = None, what: str = "section") -> bool:
        """Writes "undefined (reason)" for a skipped section (once) and says whether it was skipped."""
        reason = self.res.undefined.get(key)
        if reason is None:
            return False
        if title:
            self.parts.append(f"{title}\n")
        self.parts.append(f"_Undefined (the reason is in the Summary); {what} skipped._\n")
        return True

    def corr_table(self, level: str, protocol: str, subset: str, methods: Sequence[str],
                   metrics: Sequence[str] | None = None) -> str | None:
        c = self.res.correlations
        sel = c[(c.level == level) & (c.protocol == protocol) & (c.subset == subset)]
        if sel.empty:
            return None
        if sel["r"].isna().all():
            sk = int(sel["groups_skipped"].max())
            n = int(sel["n"].max())
            why = (f"{sk} groups with fewer than {self.st.min_group_size} outputs or a constant side" if sk
                   else "fewer than 3 pairs" if n < 3 else "a constant side")
            reasons = [w for w in dict.fromkeys(sel["why"]) if isinstance(w, str) and w] if "why" in sel else []
            return f"_Undefined (n = {n} {sel['units'].iloc[0]}: {'; '.join(reasons) if reasons else why})._"
        aspects = list(self.d.ratings)
        header = ["metric"] + [f"{a[:4]}. {ABBR[m]}" for a in aspects for m in methods]
        rows = []
        idx = {(r.metric, r.rating, r.method): r for r in sel.itertuples()}
        for mname in (self.d.metrics if metrics is None else metrics):
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
        if sel["p"].isna().all():
            extra += ("; no p-values: the bootstrap over groups needs at least 5 groups (or stats.bootstrap.n > 0), so no "
                      "`*`" if protocol in ("sys", "item") else "; no p-values")
        extra += self.p_kind_note(sel) + self.why_note(sel)
        return md_table(header, rows) + f"\n\n_n = {n_txt} {unit}{extra}._"

    @staticmethod
    def p_kind_note(sel: pd.DataFrame) -> str:
        """Names the p-values of a table that are not analytic (permutation / exact), per coefficient."""
        if "p_kind" not in sel:
            return ""
        kinds = {}
        for r in sel.itertuples():
            if isinstance(r.p_kind, str) and r.p_kind not in ("", "analytic", "bootstrap"):
                kinds.setdefault(r.p_kind, set()).add(ABBR.get(r.method, r.method))
        return "".join(f"; p-values of {', '.join(sorted(ms))} from {P_KINDS.get(k, f'a {k} test')}"
                       + (" (Spearman with fewer than 10 points)" if k.startswith("permutation") else "")
                       for k, ms in sorted(kinds.items()))

    @staticmethod
    def why_note(sel: pd.DataFrame) -> str:
        """Why each — (undefined) cell of a table is undefined, once per reason."""
        if "why" not in sel:
            return ""
        reasons = list(dict.fromkeys(w for w, r in zip(sel["why"], sel["r"]) if isinstance(w, str) and w and math.isnan(r)))
        return ("; — = undefined: " + "; ".join(reasons)) if reasons else ""

    # ---- sections -----------------------------------------------------------------------------------------------
    def header(self):
        st = self.st
        p = self.parts
        p.append(f"# {self.title}\n")
        if self.command:
            p.append(f"Command:\n\n```bash\n{self.command}\n```\n")
        import qe

        p.append(f"qe {qe.__version__}; Python {platform.python_version()} on {platform.machine()} "
                 f"({platform.system()}, {os.cpu_count()} CPU cores, {_gpu()})"
                 + (f"; scoring and analysis took {self.elapsed:.0f} s" if self.elapsed else "") + ".\n")
        self.summary()
        tails = "two-tailed" if st.tails == 2 else "one-tailed (in each metric's expected direction)"
        p.append("## Settings\n")
        p.append(md_table(["setting", "value"], [
            ["coefficients", ", ".join(f"{m} ({ABBR[m]})" for m in st.methods) + "; Kendall is tau-b"],
            ["protocols", "; ".join(PROTOCOL_NAMES[x] for x in st.protocols)],
            ["p-values", f"{tails}; scipy's for flatten and system level (analytic; Spearman with fewer than 10 points: "
                         "permutation test, exact up to 7; Kendall without ties up to 33 points: exact null distribution; "
                         "each table names the non-analytic ones), percentile bootstrap over groups for averaged protocols"],
            ["correction", f"{CORR_NAMES[st.correction]} across the metrics of each table column, α = {st.alpha:g}"],
            ["bootstrap", f"{st.bootstrap_n} resamples, {st.ci:.0%} percentile CI, seed {st.seed}; items resampled at instance level, groups for averaged protocols, systems at system level"],
            ["metric vs metric", f"Williams test on Pearson (one-tailed, uncorrected, as Graham & Baldwin 2014); PERM-BOTH ({st.permutation_method}, {st.permutation_n} permutations)"],
            ["error measures", "MSE after the least-squares line (Kann et al. eq. 6); MAE / RMSE after min–max mapping into the rating range"
                               + (f", rounded to {st.round_to:g} steps" if st.round_to else "") + " (Dušek et al.)"],
            ["system differences", ("given as input (`stats.significant_pairs`), not tested" if st.significant_pairs else
                                    f"{'Wilcoxon signed-rank, ratings paired by item' if st.pairwise_test == 'wilcoxon' else 'Tukey HSD'}, "
                                    f"{CORR_NAMES[st.pairwise_correction] if st.pairwise_test == 'wilcoxon' else 'Tukey-corrected'} across system pairs, α = {st.pairwise_alpha:g}")],
            ["system level", "two ways, named in every table: mean of instance scores per system, and"
                             + (" the corpus-level score of each system (scorers with a pooled corpus score: BLEU, NIST, chrF, TER)"
                                if st.corpus_level else " (corpus-level scores off)")
                             + (f"; system sets: {', '.join(st.system_sets)}" if st.system_sets else "")],
            ["confounds", (f"{st.confound_method} partial correlations controlling for length (words) and sentence count "
                           f"({st.sentence_splitter}), pingouin; {st.length_bins} length bins; flag: |partial| < {st.flag_ratio:g}·|raw| "
                           f"(raw p < {st.alpha:g}) or |ρ(metric, length or sentence count)| ≥ {st.flag_length_rho:g}") if st.confounds else "off"],
        ], "ll"))
        p.append("")

    def summary(self):
        """What a reader must know first: flagged confounds, the human ceiling, and what is undefined."""
        p = self.parts
        lines = []
        cf = self.res.confounds
        if cf is not None and len(cf):
            inst = cf[(cf.level == "instance") & (cf.subset == "all")]
            sysl = cf[(cf.level == "system") & (cf.subset == "all · all systems")]
            for level, frame in (("instance level", inst), ("system level", sysl)):
                if frame.empty:
                    continue
                itself = {m for m in frame.metric.unique() if (frame[frame.metric == m]["rho_length"].abs() > 0.999).all()}
                flagged = frame[frame.explained & ~frame.metric.isin(itself)]
                if len(flagged):
                    per: dict[str, list[str]] = {}
                    for r in flagged.itertuples():
                        for reason in r.reason.split("; "):
                            txt = reason if reason.startswith("ρ(") else f"{r.rating}: {reason}"
                            if txt not in per.setdefault(r.metric, []):
                                per[r.metric].append(txt)
                    n = int(frame["n"].max())
                    lines.append(f"**Confounded at {level}** (all data, {n} {frame['units'].iloc[0]}, "
                                 f"{self.st.confound_method}): "
                                 + "; ".join(f"`{m}` ({', '.join(v)})" for m, v in per.items())
                                 + ". Read these correlations as partly length / sentence-count effects (section Confounds).")
                else:
                    lines.append(f"No metric's correlation at {level} is explained by length or sentence count by the flag rule"
                                 + (f" (`{'`, `'.join(sorted(itself))}` is length itself)" if itself else "") + ".")

        ce = self.res.ceiling
        if ce is not None and len(ce):
            for level in ("instance", "system"):
                x = ce[(ce.level == level) & (ce.subset == "all") & (ce.systems == "all systems")]
                if len(x):
                    lines.append(f"Human ceiling at {level} level (agreement among the annotators of each criterion, "
                                 f"all data; section Human ceiling): " + "; ".join(
                                     self._ceiling_text(x[x.rating == a], level) for a in dict.fromkeys(x.rating)) + ".")
        by_reason: dict[str, list[str]] = {}
        for key, reason in self.res.undefined.items():
            by_reason.setdefault(reason, []).append(undefined_name(key))
        for reason, names in by_reason.items():
            lines.append(f"Undefined ({reason}), so skipped: {'; '.join(names)}.")
        if lines:
            p.append("## Summary\n\n" + "\n".join(f"- {x}" for x in lines) + "\n")

    def data_section(self):
        d = self.d
        p = self.parts
        p.append("## Data\n")
        if self.dataset_desc:
            p.append(self.dataset_desc + "\n")
        ds_counts = pd.Series(d.dataset).value_counts().sort_index()
        sys_counts = pd.Series(d.system).value_counts().sort_index()
        items = f"{len(set(d.item.tolist()))} items (inputs)" if d.item is not None else "no item field"
        p.append(f"{d.n} rated output{'' if d.n == 1 else 's'}; datasets: " + ", ".join(f"{k} ({v})" for k, v in ds_counts.items())
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
        if self.undefined("instance", "## Instance level"):
            return
        if "none" in st.protocols:
            p.append("## Instance level — protocol: flatten (average_by=none)\n")
            p.append("One correlation over all outputs of a subset. " + self.sig_note() + "; ↓ = lower is better, so a "
                     "good ↓ metric correlates negatively.\n")
            subs = [s for s in self.res.correlations.query("level == 'instance' and protocol == 'none'")["subset"].unique()]
            for s in [x for x in subs if not x.startswith("system=")]:
                t = self.corr_table("instance", "none", s, st.methods)
                if t:
                    p.append(f"### {'All data' if s == 'all' else s}\n\n{t}\n" + self.ceiling_note(s, "instance"))
            if "pearson" in st.bootstrap_methods and st.bootstrap_n:
                p.append(self.ci_table("instance", "none", "pearson"))
            sys_subs = [x for x in subs if x.startswith("system=")]
            self.undefined("per_system", "### Per-system breakdown (instance level, flatten, within each system)")
            if sys_subs:
                p.append("### Per-system breakdown (instance level, flatten, within each system)\n")
                c = self.res.correlations
                # Pearson where it was computed, else the first coefficient asked for (stats.methods=[spearman])
                meth = "pearson" if "pearson" in st.methods else st.methods[0]
                sel = c[(c.level == "instance") & (c.protocol == "none") & c.subset.isin(sys_subs) & (c.method == meth)]
                idx = {(r.metric, r.rating, r.subset): r._asdict() for r in sel.itertuples()}
                header = ["metric"] + [f"{a[:4]}. {ABBR[meth]} {s[7:]}" for a in self.d.ratings for s in sys_subs]
                rows = [[self.mlabel(m)] + [self.cell(idx.get((m, a, s))) for a in self.d.ratings for s in sys_subs]
                        for m in self.d.metrics]
                ns = {s: int(sel[sel.subset == s]["n"].max()) if (sel.subset == s).any() else 0 for s in sys_subs}
                others = [x.capitalize() for x in st.methods if x != meth]
                p.append(md_table(header, rows) + f"\n\n_{meth.capitalize()}; n = " + ", ".join(f"{s[7:]}: {n}" for s, n in ns.items())
                         + " outputs" + self.p_kind_note(sel) + self.why_note(sel)
                         + (f". {' and '.join(others)}: `correlations.csv`" if others else "") + "._\n")
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
        if ia is not None and len(ia):
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

    def _primary(self) -> str:
        """The coefficient whose reliability is shown (Spearman–Brown is defined for Pearson; rho approximately)."""
        return next((m for m in ("pearson", "spearman") if m in self.st.methods), self.st.methods[0])

    def _ceiling_text(self, rows: pd.DataFrame, level: str) -> str:
        """One criterion's ceiling in words: alpha, one annotator vs the others per coefficient, reliability of the
        mean rating and its square root."""
        if rows.empty:
            return ""
        a = rows["rating"].iloc[0]
        by = {r.method: r for r in rows.itertuples()}
        parts = []
        first = rows.iloc[0]
        if level == "instance" and not math.isnan(first["alpha"]):
            parts.append(f"α {first['alpha']:.2f}")
        ovr = [f"{ABBR[m]} {by[m].one_vs_rest:.2f}" for m in self.st.methods if m in by and not math.isnan(by[m].one_vs_rest)]
        if ovr:
            parts.append("one annotator vs the others " + ", ".join(ovr))
        pm = by.get(self._primary())
        if pm is not None and not math.isnan(pm.reliability):
            parts.append(f"reliability of the mean rating R = {pm.reliability:.2f} ({ABBR[pm.method]}, split half, "
                         f"Spearman–Brown), √R = {fnum(pm.ceiling, 2)}")
        if not parts:
            return f"`{a}` undefined (n = {int(first['n'])} {first['units']} with two or more ratings)"
        return f"`{a}` " + ", ".join(parts)

    def ceiling_note(self, subset: str, level: str = "instance", systems: str = "all systems") -> str:
        """The human ceiling beside the metric correlations of the same level, subset and set of systems: agreement
        among the annotators of each criterion (never the correlation between different criteria)."""
        ce = self.res.ceiling
        if ce is None or ce.empty:
            return ""
        sel = ce[(ce.level == level) & (ce.subset == subset) & (ce.systems == systems)]
        if sel.empty:
            return ""
        texts = [t for t in (self._ceiling_text(sel[sel.rating == a], level) for a in dict.fromkeys(sel.rating)) if t]
        return ("\n_Human ceiling (agreement among the annotators of the same criterion; a metric reaching the "
                "one-vs-others value correlates like one more annotator, and no metric's r with the mean rating can "
                "exceed √R): " + "; ".join(texts) + "._\n") if texts else ""

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
        sm = self.res.system_means
        if sysc.empty and "system" not in self.res.undefined:
            return
        p.append("## System level — mean of instance scores and corpus-level score\n")
        if self.undefined("system", what="correlations"):
            if sm is not None and len(sm):
                self.system_scores_table(sm)
            self.system_accuracy_table()
            return
        p.append("A unit is a system within one dataset (pooled over datasets: a dataset/system pair). Two ways, each "
                 "table named: the **mean of instance scores** of each system, and, for metrics with a corpus-level "
                 "definition (BLEU, NIST, chrF, TER computed over all of a system's outputs, as sacrebleu / mteval do), "
                 "the **corpus-level score** of each system — what Reiter & Belz and most MT/NLG metric studies "
                 "correlate. Sets: all systems, excluding systems marked as human (Reiter & Belz's sets I and II), and "
                 "the named `stats.system_sets`. With few units the correlations are fragile: read the n and the "
                 "bootstrap intervals. " + self.sig_note() + ".\n")
        self.system_scores_table(sm)
        for s in sysc["subset"].unique():
            for proto in ("system means", "corpus score"):
                t = self.corr_table("system", proto, s, self.st.methods,
                                    None if proto == "system means" else [m for m in self.d.metrics if m in self.d.corpus])
                if t:
                    scope, _, systems = s.partition(" · ")
                    p.append(f"### {s} — {SYSTEM_WAYS[proto]}\n\n{t}\n"
                             + (self.ceiling_note(scope, "system", systems) if proto == "system means" else ""))
        if self.st.bootstrap_n:
            p.append(self.ci_table("system", "system means", "pearson", lambda s: s.startswith("all ")))
        self.system_accuracy_table()

    def system_scores_table(self, sm: pd.DataFrame):
        """Per-unit means of every rating and metric (all data), and corpus-level scores."""
        p = self.parts
        top = sm[sm.subset == "all"].set_index("unit")
        cols = [f"rating:{a}" for a in self.d.ratings] + [f"metric:{m}" for m in self.d.metrics]
        header = ["score"] + [str(u) for u in top.index]
        rows = [["n outputs"] + [int(v) for v in top["n"]]]
        rows += [[(c_.split(":", 1)[1] if c_.startswith("metric:") and self.d.info[c_.split(':', 1)[1]].higher_is_better
                   else c_.split(":", 1)[1] + (" ↓" if c_.startswith("metric:") else " (human)"))]
                 + [fnum(v) for v in top[c_]] for c_ in cols]
        from qe.evaluation.analysis import corpus_column

        for m in [m for m in self.d.metrics if m in self.d.corpus]:
            rows.append([f"{self.mlabel(m)} (corpus-level)"] + [fnum(v) for v in corpus_column(self.d, top, m)])
        p.append("### Per-unit scores (all data; metric rows are means of instance scores unless marked corpus-level)\n\n"
                 + md_table(header, rows) + "\n")

    def system_accuracy_table(self):
        p = self.parts
        sa = self.res.system_accuracy
        if sa is not None and len(sa) and int(sa["pairs"].max()) > 0:
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
        if self.undefined("errors", "## Error measures"):
            return
        e = self.res.errors
        if e is None or e.empty:
            return
        p = self.parts
        p.append("## Error measures\n")
        p.append("Over all outputs of a subset (flatten protocol). "
                 "MSE after the best linear fit of the rating on the metric (Kann et al. 2018, eq. 6; lower is better); "
                 "MAE and RMSE after mapping the metric min–max into the rating range"
                 + (f" and rounding to {self.st.round_to:g} steps" if self.st.round_to else "")
                 + " (Dušek et al. 2017; ↓ metrics reversed first) — never between a metric and a rating on different "
                 "scales. The constant baseline predicts the mean rating.\n")
        raw = bool(e.get("scale_match", pd.Series(dtype=bool)).fillna(False).astype(bool).any())
        kinds = ("MSE fit", "MAE mapped", "RMSE mapped") + (("MAE raw", "RMSE raw") if raw else ())
        if raw:
            p.append("Raw MAE / RMSE (the metric taken as a prediction as it is) only for metrics on the rating scale "
                     "(higher is better, every score inside the rating range); — elsewhere.\n")
        for s in e["subset"].unique():
            sel = e[e.subset == s]
            names = list(dict.fromkeys(sel["metric"]))
            header = ["metric"] + [f"{a[:4]}. {k}" for a in self.d.ratings for k in kinds]
            idx = {(r.metric, r.rating): r for r in sel.itertuples()}
            rows = []
            for m in names:
                lab = self.mlabel(m) if m in self.d.info else m
                row = [lab]
                for a in self.d.ratings:
                    r = idx.get((m, a))
                    vals = [fnum(r.mse_fit), fnum(r.mae), fnum(r.rmse)] if r is not None else ["—"] * 3
                    if raw:
                        vals += [fnum(getattr(r, "mae_raw", math.nan)), fnum(getattr(r, "rmse_raw", math.nan))] if r is not None else ["—"] * 2
                    row += vals
                rows.append(row)
            rng = ", ".join(f"{a}: {sel[sel.rating == a]['range'].iloc[0]}" for a in self.d.ratings)
            p.append(f"### {'All data' if s == 'all' else s}\n\n" + md_table(header, rows) + f"\n\n_rating range {rng}._\n")

    def compare_section(self):
        w, pm = self.res.williams, self.res.permutation
        if (w is None or w.empty) and (pm is None or pm.empty):
            return
        p = self.parts
        p.append("## Comparing metrics\n")
        p.append(f"Does metric A correlate better with humans than metric B on the same outputs? Instance level: flatten "
                 f"protocol over all data; system level: per-unit means. Williams test "
                 f"(dependent Pearson correlations, one-tailed, α = {self.st.alpha:g}, uncorrected as in Graham & "
                 f"Baldwin 2014) and PERM-BOTH ({self.st.permutation_method}, {self.st.permutation_n} permutations, "
                 "one-tailed). ↓ metrics are negated first. Full p-value matrices: `williams.csv`, `permutation.csv`.\n")
        system_only = "instance" in self.res.undefined
        for a in self.d.ratings:
            rows = []
            wa = w[(w.level == "instance") & (w.subset == "all") & (w.rating == a)] if not w.empty else w
            pa = pm[pm.rating == a] if pm is not None and not pm.empty else pm
            ws = w[(w.level == "system") & (w.rating == a)] if not w.empty else w
            r_of = {}
            for r in (ws if system_only else wa).itertuples():
                r_of[r.metric_a], r_of[r.metric_b] = r.r_a, r.r_b
            for m in sorted(self.d.metrics, key=lambda m: -(r_of.get(m, -9) if not math.isnan(r_of.get(m, -9)) else -9)):
                beats_s = ", ".join(self._beats(ws, m)) or "—"
                if system_only:
                    rows.append([self.mlabel(m), fnum(r_of.get(m, math.nan)), beats_s])
                else:
                    rows.append([self.mlabel(m), fnum(r_of.get(m, math.nan)), ", ".join(self._beats(wa, m)) or "—",
                                 ", ".join(self._beats(pa, m)) or "—", beats_s])
            header = (["metric", "r (oriented, system means)", "beats (Williams, system)"] if system_only else
                      ["metric", "r (oriented, all)", "beats (Williams, instance)", "beats (PERM-BOTH, instance)",
                       "beats (Williams, system)"])
            p.append(f"### {a}\n\n" + md_table(header, rows, "lr" + "l" * (len(header) - 2)) + "\n")

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
        title = "## Pairwise system differences (Reiter & Belz 2009, Table 9)"
        sp, pr = self.res.system_pairs, self.res.predicted
        if (sp is None or sp.empty) and self.undefined("pairs", title):
            return
        if sp is None or sp.empty:
            return
        p = self.parts
        st = self.st
        p.append(title + "\n")
        test = sp["test"].iloc[0]
        if test.startswith("given"):
            p.append("Significant differences given as input (`stats.significant_pairs`, e.g. a published list); no test "
                     "was run here, so there are no p-values. Human means where the records carry ratings; n = outputs of "
                     "the two systems.\n")
            rows = [[r.rating, r.dataset, f"**{r.system_a}**", r.system_b, r.n, fnum(r.mean_a, 2), fnum(r.mean_b, 2)]
                    for r in sp.itertuples()]
            p.append(md_table(["rating", "dataset", "better", "worse", "n outputs", "mean better", "mean worse"], rows,
                              "llllrrr") + "\n")
        else:
            p.append(f"Which pairs of systems do humans rate differently? {test}"
                     + (" on ratings paired by item (each system's ratings averaged per item first)" if test.startswith("Wilcoxon") else "")
                     + f"; {st.pairwise_correction.capitalize() if test.startswith('Wilcoxon') else 'Tukey'} correction across the pairs of each "
                     f"rating aspect; α = {st.pairwise_alpha:g}, two-tailed.\n")
            n_head = "n pairs (items)" if test.startswith("Wilcoxon") else "n ratings"
            rows = [[r.rating, r.dataset, r.system_a, r.system_b, r.n, fnum(r.mean_a, 2), fnum(r.mean_b, 2)]
                    + (["undefined", "—", "undefined: no pairs (no item rated for both systems)"]
                       if r.n == 0 and math.isnan(r.p) else
                       [fp(r.p), fp(r.p_adj), ("**" + r.better + "**") if r.significant else "n.s."])
                    for r in sp.itertuples()]
            p.append(md_table(["rating", "dataset", "A", "B", n_head, "mean A", "mean B", "p", "p adj.", "better"], rows,
                              "llllrrrrrl") + "\n")
        if pr is not None and not pr.empty:
            p.append("### Significant human differences predicted by each metric\n")
            p.append("A difference is predicted when the metric's mean is higher for the system humans prefer (↓ metrics "
                     "negated): over the items both systems share for tested pairs, over all outputs of the two systems "
                     "for given pairs.\n")
            header = ["metric"] + list(self.d.ratings)
            idx = {(r.metric, r.rating): r for r in pr.itertuples()}
            rows = [[self.mlabel(m)] + [f"{idx[(m, a)].predicted} / {idx[(m, a)].significant}" if (m, a) in idx else "—"
                                        for a in self.d.ratings] for m in self.d.metrics]
            p.append(md_table(header, rows) + "\n")

    def confound_section(self):
        title = "## Confounds: output length and sentence count"
        if self.undefined("confounds", title):
            return
        cf = self.res.confounds
        if cf is None or cf.empty:
            return
        p, st = self.parts, self.st
        p.append(title + "\n")
        p.append(f"Does a metric correlate with a rating only because both follow output length (words) or the number "
                 f"of sentences? {st.confound_method.capitalize()} coefficients: raw, the metric with length (ρ len) and "
                 f"sentence count (ρ sent), partial correlations controlling for length, for sentence count and for both "
                 f"(pingouin `partial_corr`), and at instance level the mean correlation inside {st.length_bins} length "
                 f"bins. **Flag**: |ρ(metric, length)| or |ρ(metric, sentence count)| ≥ {st.flag_length_rho:g}, or a raw correlation significant at "
                 f"α = {st.alpha:g} (uncorrected) whose partial given length or sentence count is below "
                 f"{st.flag_ratio:g}·|raw|. `*` = partial p < {st.alpha:g} (uncorrected). Every scope and level: "
                 "`confounds.csv`.\n")

        def c(v, pv=None):
            return "—" if v is None or math.isnan(v) else f"{v:.3f}" + ("*" if pv is not None and not math.isnan(pv) and pv < st.alpha else "")

        for level, subset in (("instance", "all"), ("system", "all · all systems")):
            sel = cf[(cf.level == level) & (cf.subset == subset)]
            if sel.empty:
                continue
            const_sent = sel["p_partial_sentences"].isna().all() and sel["partial_sentences"].isna().all()
            rows = []
            for r in sel.itertuples():
                rows.append([self.mlabel(r.metric), r.rating, c(r.r, r.p), c(r.rho_length), c(r.rho_sentences),
                             c(r.partial_length, r.p_partial_length), c(r.partial_sentences, r.p_partial_sentences),
                             c(r.partial_both, r.p_partial_both)] + ([c(r.within_length_bins)] if level == "instance" else [])
                            + ["**yes**" if r.explained else "no"])
            header = ["metric", "rating", "raw", "ρ len", "ρ sent", "partial | len", "partial | sent", "partial | both"] \
                + (["within length bins"] if level == "instance" else []) + ["flag"]
            n = int(sel["n"].max())
            p.append(f"### {'Instance level (flatten), all data' if level == 'instance' else 'System level, means of instance scores, all systems'}\n\n"
                     + md_table(header, rows, "ll" + "r" * (len(header) - 3) + "l")
                     + f"\n\n_n = {n} {sel['units'].iloc[0]}"
                     + ("; sentence count does not vary here, so partials given it are undefined (—)" if const_sent else "")
                     + (f"; {int(sel['bins'].max())} length bins" if level == "instance" else "") + "._\n")
        figs = [f for f in self.figures if f.stem.startswith("length_")]
        for f in figs:
            rel = f.relative_to(self.out_dir) if self.out_dir and f.is_relative_to(self.out_dir) else f
            p.append(f"![{f.stem}]({rel.as_posix()})\n")

    def ceiling_section(self):
        """Agreement among the annotators of each criterion: the ceiling for a metric's correlation with it."""
        title = "## Human ceiling: agreement among the annotators of each criterion"
        ce = self.res.ceiling
        if ce is None or ce.empty:
            if self.d.annotations:
                return
            self.undefined("ceiling", title)
            return
        p, st = self.parts, self.st
        prim = self._primary()
        p.append(title + "\n")
        draws = int(ce["draws"].max())
        p.append("How well do the humans agree with each other on the *same* criterion? Per-annotator ratings "
                 "(`ratings.<aspect>@<annotator>`); annotators need not be fully crossed (each output may be rated by "
                 "different people). **α**: Krippendorff's α (interval; the `krippendorff` package), about the "
                 "reliability of one annotator. **One vs others**: per output with two or more ratings, one randomly "
                 "chosen annotator against the mean of the others, correlated over outputs (instance level) or over "
                 "per-system means (system level): a metric that correlates with the mean rating this well does as well "
                 "as one more annotator. **Split half**: each output's annotators cut into two random halves, the "
                 "half means correlated; stepped up (Spearman–Brown, generalised to halves of unequal, item-varying "
                 "size) to **R**, the reliability of the mean rating the metrics are compared with, and the "
                 "single-annotator reliability **R₁** (compare α). **√R** bounds any metric's Pearson correlation with "
                 "the mean rating (Spearman's correction for attenuation; for ρ and at system level an approximation). "
                 f"Every value is the mean over {draws} seeded random draws of annotators; the spread over draws and "
                 "every scope and set of systems: `human_ceiling.csv`. At system level both sides average the same "
                 "outputs, so only annotator noise is measured, not the sampling of inputs.\n")
        for (sub, systems), g in ce.groupby(["subset", "systems"], sort=False):
            for level in ("instance", "system"):
                x = g[g.level == level]
                if x.empty:
                    continue
                header = ["criterion"] + (["α"] if level == "instance" else []) \
                    + [f"one vs others {ABBR[m]}" for m in st.methods] + [f"split half {ABBR[prim]}", "R₁", "R", "√R", "n"]
                rows = []
                for a in dict.fromkeys(x.rating):
                    by = {r.method: r for r in x[x.rating == a].itertuples()}
                    pm = by.get(prim)
                    first = next(iter(by.values()))
                    rows.append([a] + ([fnum(first.alpha)] if level == "instance" else [])
                                + [fnum(by[m].one_vs_rest) if m in by else "—" for m in st.methods]
                                + ([fnum(pm.split_half), fnum(pm.reliability_single), fnum(pm.reliability), fnum(pm.ceiling)]
                                   if pm is not None else ["—"] * 4) + [int(first.n)])
                first = x.iloc[0]
                unit = "outputs rated twice or more" if level == "instance" else "systems"
                p.append(f"### {level.capitalize()} level — {'all data' if sub == 'all' else sub}, {systems}\n\n"
                         + md_table(header, rows)
                         + f"\n\n_n = {unit}; {first['ratings_per_output']:.2f} ratings per rated output on average; "
                         + "— = undefined (fewer than 3 units with two or more ratings, or no variation)._\n")

    def criteria_section(self):
        """Correlations between different criteria: their own table, never called a ceiling."""
        title = "## Correlations between criteria (not a ceiling)"
        ag = self.res.agreement
        if ag is None or ag.empty:
            if self.undefined("agreement", title):
                return
            return
        p, st = self.parts, self.st
        p.append(title + "\n")
        p.append("How do the *different* criteria relate (same outputs / same units)? This is not a ceiling for "
                 "metrics: two criteria can measure different things, and a metric may correlate with a criterion "
                 "better than another criterion does (Reiter & Belz 2009: NIST-5 correlates with clarity better than "
                 "accuracy does). The ceiling is the agreement among annotators of the same criterion (above).\n")
        rows = []
        skipped = set()
        for (lv, sub, systems, a, b), g in ag.groupby(["level", "subset", "systems", "rating_a", "rating_b"], sort=False):
            if g["r"].isna().all():
                skipped.add(f"{lv} level, {sub}, {systems} (n = {int(g['n'].max())})")
                continue
            idx = {r.method: r for r in g.itertuples()}
            rows.append([lv, sub, systems, f"{a} – {b}"]
                        + [(f"{idx[m].r:.3f}" + ("*" if idx[m].p < st.alpha else ""))
                           if m in idx and not math.isnan(idx[m].r) else "—" for m in st.methods]
                        + [int(g["n"].max())])
        tails = ("two-tailed" if st.tails == 2 else
                 "one-tailed: criteria of the same outputs are expected to correlate positively")
        p.append(md_table(["level", "subset", "systems", "criteria"] + [ABBR[m] for m in st.methods] + ["n"], rows,
                          "llll" + "r" * (len(st.methods) + 1))
                 + f"\n\n_`*` = p < {st.alpha:g} ({tails}, uncorrected)" + self.p_kind_note(ag)
                 + (f"; undefined (fewer than 3 units or a constant side): {', '.join(sorted(skipped))}" if skipped else "")
                 + "._\n")

    def figures_section(self):
        if not self.figures:
            return
        p = self.parts
        p.append("## Figures\n")
        for f in [f for f in self.figures if not f.stem.startswith("length_")]:
            rel = f.relative_to(self.out_dir) if self.out_dir and f.is_relative_to(self.out_dir) else f
            p.append(f"![{f.stem}]({rel.as_posix()})\n")

    def notes_section(self):
        if self.res.notes:
            self.parts.append("## Notes\n\n" + "\n".join(f"- {n}" for n in self.res.notes) + "\n")

    def render(self) -> str:
        self.parts = []
        self.header()
        self.data_section()
        self.ceiling_section()
        self.criteria_section()
        self.confound_section()
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
                        ("confounds", res.confounds), ("agreement", res.agreement), ("krippendorff_alpha", res.alpha),
                        ("human_ceiling", res.ceiling),
                        ("system_accuracy", res.system_accuracy), ("item_accuracy", res.item_accuracy),
                        ("williams", res.williams), ("permutation", res.permutation),
                        ("between_datasets", res.between_datasets), ("system_pairs", res.system_pairs),
                        ("predicted_differences", res.predicted)]:
        if frame is not None and len(frame):
            p = out_dir / f"{name}.csv"
            frame.to_csv(p, index=False)
            out.append(p)
    return out
