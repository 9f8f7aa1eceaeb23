"""The report's system sections (a part of :class:`qe.evaluation.report.ReportWriter`)."""
from __future__ import annotations

import math

import pandas as pd

from qe.evaluation.report.tables import SYSTEM_WAYS, fnum, fp, md_table


class SystemSections:
    """System level: correlations of system means and corpus scores, per-system scores, the system-pair accuracy and
    Reiter & Belz's significant pairs."""

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
