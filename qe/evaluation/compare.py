"""Which metric is better: Williams' test of dependent correlations (instance or system level) and the PERM-BOTH
permutation test over outputs."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from qe.evaluation import stats as S
from qe.evaluation.evaldata import _seed, EvalData, MIN_CORRELATION_N, Settings, system_means, system_units


def williams_tests(d: EvalData, st: Settings, scopes, pooled_all: bool, instance: bool = True) -> pd.DataFrame:
    """Metric vs metric, Williams' test for dependent Pearson correlations: instance level per scope (unless
    ``instance`` is false: a per-system table or too few outputs), and system level over all units pooled (with at
    least 3 units)."""
    w_rows = []
    metrics = list(d.metrics)
    if not (st.williams and len(metrics) > 1):
        return pd.DataFrame(w_rows)
    pairs = list(itertools.combinations(metrics, 2))
    for sname, mask in (scopes if instance and not d.one_per_system else []):
        for a in d.ratings:
            h = d.ratings[a][mask]
            for m1, m2 in pairs:
                t, r1, r2 = S.williams_compare(h, d.oriented(m1)[mask], d.oriented(m2)[mask], tails=1)
                n = int((~(np.isnan(h) | np.isnan(d.metrics[m1][mask]) | np.isnan(d.metrics[m2][mask]))).sum())
                w_rows.append({"level": "instance", "subset": sname, "rating": a, "metric_a": m1, "metric_b": m2,
                               "r_a": r1, "r_b": r2, "t": t.statistic, "p_a_better": t.p,
                               "p_b_better": (1 - t.p) if not math.isnan(t.p) else math.nan, "n": n})
    # system level, all units pooled
    means = system_means(d, np.ones(d.n, bool), system_units(d, np.ones(d.n, bool), pooled_all))
    for a in (d.ratings if len(means) >= MIN_CORRELATION_N else ()):
        H = means[f"rating:{a}"].to_numpy(float)
        for m1, m2 in pairs:
            X1 = means[f"metric:{m1}"].to_numpy(float) * d.sign(m1)
            X2 = means[f"metric:{m2}"].to_numpy(float) * d.sign(m2)
            t, r1, r2 = S.williams_compare(H, X1, X2, tails=1)
            w_rows.append({"level": "system", "subset": "all · all systems", "rating": a, "metric_a": m1,
                           "metric_b": m2, "r_a": r1, "r_b": r2, "t": t.statistic, "p_a_better": t.p,
                           "p_b_better": (1 - t.p) if not math.isnan(t.p) else math.nan, "n": int(len(means))})
    return pd.DataFrame(w_rows)


def perm_both_tests(d: EvalData, st: Settings, progress: bool = True) -> pd.DataFrame:
    """Metric vs metric, PERM-BOTH (Deutsch et al. 2021) over all outputs, for every pair of metrics and rating."""
    from tqdm.auto import tqdm

    p_rows = []
    metrics = list(d.metrics)
    if not (st.permutation_n and len(metrics) > 1):
        return pd.DataFrame(p_rows)
    pairs = list(itertools.combinations(metrics, 2))
    bar = tqdm(total=len(pairs) * len(d.ratings), desc="PERM-BOTH metric pairs", unit="pair", disable=not progress)
    for a in d.ratings:
        h = d.ratings[a]
        for m1, m2 in pairs:
            pr = S.perm_both(h, d.oriented(m1), d.oriented(m2), st.permutation_method,
                             n_permutations=st.permutation_n, seed=_seed(st.seed, "perm", a, m1, m2),
                             progress=progress)
            p_rows.append({"subset": "all", "rating": a, "metric_a": m1, "metric_b": m2, "method": st.permutation_method,
                           "delta": pr.delta, "p_a_better": pr.p_a_better, "p_b_better": pr.p_b_better,
                           "permutations": pr.permutations})
            bar.update(1)
    bar.close()
    return pd.DataFrame(p_rows)
