"""Confounds: partial correlations controlling for output length (words) and sentence count, correlations within
length bins, and the flag on metrics whose correlation the covariates explain."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from qe.evaluation import stats as S
from qe.evaluation.evaldata import (
    _plural, EvalData, MIN_CORRELATION_N, rated_outputs, Settings, system_means, system_units,
)


#: covariate sets of the partial correlations (column suffix -> covariates)
COVARIATE_SETS = (("length", ("length",)), ("sentences", ("sentences",)), ("both", ("length", "sentences")))


def _confound_row(x, h, cov: dict[str, np.ndarray], st: Settings, binned: np.ndarray | None) -> dict:
    """One metric x rating: raw, with the covariates, partial, within length bins (``binned``: bin labels)."""
    meth = st.confound_method
    raw = S.correlation(x, h, meth)
    row = {"method": meth, "n": raw.n, "r": raw.r, "p": raw.p,
           "rho_length": S.correlation(x, cov["length"], meth).r,
           "rho_sentences": S.correlation(x, cov["sentences"], meth).r}
    done: dict[tuple, S.CorrResult] = {}
    for label, names in COVARIATE_SETS:
        # a covariate that does not vary here (every output one sentence) controls for nothing: leave it out
        use = tuple(k for k in names if not S._is_constant(cov[k][~np.isnan(cov[k])]))
        if use not in done:
            done[use] = (S.partial_correlation(x, h, {k: cov[k] for k in use}, meth) if use
                         else S.CorrResult(math.nan, math.nan, raw.n))
        row[f"partial_{label}"], row[f"p_partial_{label}"] = done[use].r, done[use].p
    if binned is not None:
        xb = np.where(binned == "nan", np.nan, np.asarray(x, float))
        b = S.averaged_correlation(xb, h, binned, meth, st.min_group_size)
        row["within_length_bins"], row["bins"] = b.r, b.n_groups
    else:
        row["within_length_bins"], row["bins"] = math.nan, 0
    row["explained"], row["reason"] = _explained(row, st)
    return row


def _explained(row: dict, st: Settings) -> tuple[bool, str]:
    """The flag rule: |ρ(metric, length)| or |ρ(metric, sentence count)| >= flag_length_rho, or a raw correlation
    significant at alpha (uncorrected) whose partial correlation given length or sentence count keeps less than
    flag_ratio of its size."""
    reasons = []
    for key, what in (("rho_length", "length"), ("rho_sentences", "sentence count")):
        rl = row[key]
        if not math.isnan(rl) and abs(rl) >= st.flag_length_rho:
            reasons.append(f"ρ(metric, {what}) = {rl:.2f}")
    r, p = row["r"], row["p"]
    if not math.isnan(r) and not math.isnan(p) and p < st.alpha:
        for label, what in (("length", "length"), ("sentences", "sentence count")):
            pr = row[f"partial_{label}"]
            if not math.isnan(pr) and abs(pr) < st.flag_ratio * abs(r):
                reasons.append(f"partial | {what} = {pr:.2f} vs raw {r:.2f}")
    return bool(reasons), "; ".join(reasons)


def confounds(d: EvalData, st: Settings, scopes, pooled_all: bool, undefined: dict[str, str],
              instance: bool = True) -> pd.DataFrame:
    """Does output length or sentence count explain a metric's correlation with a rating?

    For every metric x rating, at instance level (flatten, each scope) and at system level (per-unit means of the
    metric, the rating and the covariates): the raw correlation, the metric's correlation with length and sentence
    count, partial correlations controlling for length, for sentence count and for both (pingouin), the mean
    correlation within length bins (instance level), and the flag of :func:`_explained`."""
    if not st.confounds:
        return pd.DataFrame()
    if not d.covariates:
        undefined["confounds"] = "the records have no output text, so neither length nor sentence count is defined"
        return pd.DataFrame()
    rows = []
    if instance and not d.one_per_system:
        for sname, mask in scopes:
            cov = {k: v[mask] for k, v in d.covariates.items()}
            labels = S.bin_labels(cov["length"], st.length_bins)
            for m in d.metrics:
                for a in d.ratings:
                    row = _confound_row(d.metrics[m][mask], d.ratings[a][mask], cov, st, binned=labels)
                    rows.append({"level": "instance", "subset": sname, "units": "outputs", "rating": a, "metric": m, **row})
    for sname, mask in scopes:
        pooled = pooled_all and sname == "all"
        means = system_means(d, mask, system_units(d, mask, pooled))
        if len(means) < MIN_CORRELATION_N:
            continue
        cov = {k: means[f"covariate:{k}"].to_numpy(float) for k in d.covariates}
        for m in d.metrics:
            for a in d.ratings:
                row = _confound_row(means[f"metric:{m}"].to_numpy(float), means[f"rating:{a}"].to_numpy(float), cov, st,
                                    binned=None)
                rows.append({"level": "system", "subset": f"{sname} · all systems",
                             "units": "dataset/system pairs" if pooled else "systems", "rating": a, "metric": m, **row})
    if not rows:  # instance level skipped (too few outputs) and fewer than 3 units over all data
        n_units = len(system_means(d, np.ones(d.n, bool), system_units(d, np.ones(d.n, bool), pooled_all)))
        undefined["confounds"] = (f"{_plural(rated_outputs(d), 'rated output')} in {_plural(n_units, 'system')}: "
                                  f"a partial correlation needs at least {MIN_CORRELATION_N} outputs (instance level) "
                                  f"or {MIN_CORRELATION_N} systems (system level)")
    return pd.DataFrame(rows)
