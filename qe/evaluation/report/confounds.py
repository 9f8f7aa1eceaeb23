"""The report's confounds sections (a part of :class:`qe.evaluation.report.ReportWriter`)."""
from __future__ import annotations

import math

from qe.evaluation.report.tables import md_table


class ConfoundSections:
    """Confounds: partial correlations for length and sentence count, and the flag on explained metrics."""

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
