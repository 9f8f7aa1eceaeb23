"""The report's compare sections (a part of :class:`qe.evaluation.report.ReportWriter`)."""
from __future__ import annotations

import math

import pandas as pd

from qe.evaluation.report.tables import CORR_NAMES, fnum, md_table


class CompareSections:
    """Which metric is better (Williams, PERM-BOTH) and one metric across datasets."""

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
