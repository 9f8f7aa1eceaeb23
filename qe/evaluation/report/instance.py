"""The report's instance sections (a part of :class:`qe.evaluation.report.ReportWriter`)."""
from __future__ import annotations

import math

import pandas as pd

from qe.evaluation.report.tables import ABBR, fnum, md_table


class InstanceSections:
    """Instance level: the correlation tables of every protocol, their bootstrap CIs, and the error measures."""

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
