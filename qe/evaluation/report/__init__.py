"""``report.md``: readable markdown tables of a meta-evaluation (every table names its level, protocol,
test and correction), plus the machine-readable CSVs beside it."""
from __future__ import annotations

import math
import os
import platform
from pathlib import Path
from typing import Sequence

import pandas as pd

from qe.evaluation.analysis import EvalData, Results
from qe.evaluation.report.agreement import AgreementSections
from qe.evaluation.report.compare import CompareSections
from qe.evaluation.report.confounds import ConfoundSections
from qe.evaluation.report.content import ContentSections
from qe.evaluation.report.instance import InstanceSections
from qe.evaluation.report.system import SystemSections
from qe.evaluation.report.wmt import WMTSections
from qe.evaluation.report.tables import (  # noqa: F401  (re-exported)
    ABBR, CORR_NAMES, P_KINDS, PROTOCOL_NAMES, SYSTEM_WAYS, UNDEFINED_NAMES, _gpu, fnum, fp, md_table, undefined_name,
)


class ReportWriter(InstanceSections, SystemSections, CompareSections, ConfoundSections, AgreementSections,
                   ContentSections, WMTSections):
    def __init__(self, d: EvalData, res: Results, *, title: str, command: str | None = None,
                 dataset_desc: str = "", figures: Sequence[Path] = (), out_dir: Path | None = None,
                 elapsed_s: float | None = None, content=None):
        self.d, self.res, self.st = d, res, res.settings
        self.content = content  # qe.evaluation.content.ContentErrors (records with MRs) or None
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
        sel = c[(c.level == level) & (c.protocol == protocol) & (c.subset == subset) & c.method.isin(list(methods))]
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
        self.wmt_section()
        self.error_section()
        self.content_section()
        self.compare_section()
        self.between_section()
        self.pairs_section()
        self.figures_section()
        self.notes_section()
        return "\n".join(self.parts).rstrip() + "\n"


#: the CSV tables beside report.md: file stem -> attribute of :class:`Results`
TABLES = (("correlations", "correlations"), ("errors", "errors"), ("system_means", "system_means"),
          ("confounds", "confounds"), ("agreement", "agreement"), ("krippendorff_alpha", "alpha"),
          ("human_ceiling", "ceiling"), ("system_accuracy", "system_accuracy"), ("item_accuracy", "item_accuracy"),
          ("williams", "williams"), ("permutation", "permutation"), ("between_datasets", "between_datasets"),
          ("system_pairs", "system_pairs"), ("predicted_differences", "predicted"), ("rank_clusters", "rank_clusters"))


def write_outputs(out_dir: Path, res: Results) -> list[Path]:
    """The tables as CSV beside report.md."""
    out = []
    for name, attr in TABLES:
        frame = getattr(res, attr)
        if frame is not None and len(frame):
            p = out_dir / f"{name}.csv"
            frame.to_csv(p, index=False)
            out.append(p)
    return out


__all__ = ["ReportWriter", "TABLES", "write_outputs", "md_table", "fnum", "fp", "undefined_name", "ABBR", "CORR_NAMES",
           "P_KINDS", "PROTOCOL_NAMES", "SYSTEM_WAYS", "UNDEFINED_NAMES"]
