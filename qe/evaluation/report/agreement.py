"""The report's agreement sections (a part of :class:`qe.evaluation.report.ReportWriter`)."""
from __future__ import annotations

import math

import pandas as pd

from qe.evaluation.report.tables import ABBR, fnum, md_table


class AgreementSections:
    """Human agreement: the annotator ceiling and the correlations between criteria."""

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
