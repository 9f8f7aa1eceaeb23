"""The report's WMT metrics-task section (a part of :class:`qe.evaluation.report.ReportWriter`): one row per metric
with SPA, system-level pairwise accuracy, tie-calibrated acc23 and the rank clusters, laid out as the WMT 2024
metrics task reports its results."""
from __future__ import annotations

import math

from qe.evaluation.report.tables import fnum, md_table

TITLE = "## WMT metrics-task view: SPA, system pairwise accuracy, tie-calibrated acc23, rank clusters"


class WMTSections:
    """:func:`qe.evaluation.wmt.wmt_measures` as a table per rating aspect."""

    def wmt_section(self):
        if not self.st.wmt:
            return
        if self.undefined("wmt", TITLE):
            return
        c = self.res.correlations
        sel = c[c.method.isin(["acc23", "spa", "sys_pairwise_acc"])]
        if sel.empty:
            return
        rc = self.res.rank_clusters
        st = self.st
        p = self.parts
        acc_proto = (str(rc["protocol"][rc.measure == "acc23"].iloc[0]) if rc is not None and len(rc)
                     and (rc.measure == "acc23").any() else ("item" if "item" in set(sel.protocol) else "none"))
        p.append(TITLE + "\n")
        p.append(
            "The measures the WMT metrics task ranks metrics by (WMT 2024: SPA at system level, tie-calibrated "
            "pairwise accuracy at segment level, each with significance clusters). **SPA** (soft pairwise accuracy, "
            "Thompson et al. 2024; 1 − PCE in mt-metrics-eval): for every pair of systems, a paired permutation test "
            f"({st.spa_permutations:,} permutations over the inputs both systems have) gives a one-sided p-value under "
            "the human scores and under the metric; SPA = 1 − the mean |p_human − p_metric|. **Sys. acc.**: the "
            "share of system pairs whose metric difference has the sign of the human difference (Kocmi et al. 2021). "
            "**acc23** (Deutsch, Foster & Freitag 2023, \"Ties Matter\"): over pairs of outputs, (concordant + tied by "
            "both) / all pairs, where a metric difference ≤ ε counts as a metric tie and ε (in brackets, in the "
            "metric's own units) is chosen to maximise acc23"
            + {"item": ", computed over the outputs for each input and averaged over inputs (WMT's grouping)",
               "none": ", over all pairs of outputs", "sys": ", within each system and averaged"}.get(acc_proto, "")
            + "; other groupings are in `correlations.csv` (`method=acc23`, `protocol` none / item / sys). "
            "**Rank**: significance clusters (WMT's greedy rule, mt-metrics-eval `AssignRanks`: sorted by the measure, "
            "a metric starts a new cluster when it is significantly worse than any metric of the current cluster, "
            f"one-sided p ≤ {st.alpha:g}, uncorrected); SPA by PERM-BOTH on the metric scores with SPA as the "
            "statistic, acc23 by swapping the two metrics' verdicts on each pair (mt-metrics-eval's pair test), "
            f"{st.permutation_n:,} permutations each (`rank_clusters.csv`). ↓ = lower is better (negated before "
            "every measure). All data; several datasets: a unit is a dataset/system pair.\n")
        for a in self.d.ratings:
            rows = []
            for m in self.d.metrics:
                def get(method, protocol=None):
                    s = sel[(sel.rating == a) & (sel.metric == m) & (sel.method == method)]
                    if protocol is not None:
                        s = s[s.protocol == protocol]
                    return s.iloc[0] if len(s) else None

                def rank(measure):
                    if rc is None or rc.empty:
                        return None
                    r = rc[(rc.rating == a) & (rc.metric == m) & (rc.measure == measure)]
                    return None if r.empty or r["rank"].isna().all() else int(r["rank"].iloc[0])

                spa, sacc, acc = get("spa"), get("sys_pairwise_acc"), get("acc23", acc_proto)
                acc_txt = "—" if acc is None or math.isnan(acc.r) else f"{acc.r:.3f} ({acc.epsilon:.3g})"
                rows.append((rank("spa"), -(spa.r if spa is not None and not math.isnan(spa.r) else -math.inf), m,
                             [self.mlabel(m), fnum(spa.r if spa is not None else math.nan),
                              str(rank("spa") or "—"), fnum(sacc.r if sacc is not None else math.nan),
                              acc_txt, str(rank("acc23") or "—")]))
            rows.sort(key=lambda t: (t[0] if t[0] is not None else math.inf, t[1], t[2]))
            n_sys = sel[(sel.rating == a) & (sel.method == "spa")]["n"]
            n_txt = f"{int(n_sys.max())} systems" if len(n_sys) else ""
            p.append(f"### {a}\n\n" + md_table(["metric", "SPA", "rank (SPA)", "sys. acc.", f"acc23 (ε), {acc_proto}",
                                                "rank (acc23)"], [r[3] for r in rows], "lrrrrr")
                     + (f"\n\n_{n_txt}; rows sorted by SPA cluster, then SPA._\n" if n_txt else "\n"))
