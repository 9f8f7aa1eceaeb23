"""Instance level: correlations over outputs - flattened (protocol ``none``: one correlation over all outputs of a
subset) or averaged over groups (``sys``: per system; ``item``: per input, DiscoScore's summary level) - and the
error measures, item accuracy and between-dataset differences computed over outputs."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from qe.evaluation import stats as S
from qe.evaluation.evaldata import (
    _corr_row, _scopes, _seed, _subsets, _why_grouped, EvalData, MIN_BOOTSTRAP_GROUPS, Settings, system_units,
    why_undefined,
)


def _flatten_rows(d: EvalData, st: Settings, m: str, a: str, subsets, progress: bool = False) -> list[dict]:
    """Instance level, protocol ``none``: one correlation over all outputs of each subset (+ bootstrap CI; a
    progress bar when ``progress`` and the resamples are many)."""
    rows = []
    x_all, h_all, sgn = d.metrics[m], d.ratings[a], d.sign(m)
    for sname, mask in subsets:
        x, h = x_all[mask], h_all[mask]
        dropped = int((np.isnan(x) | np.isnan(h)).sum())
        for meth in st.methods:
            c = S.correlation(x, h, meth, st.tails, sgn)
            row = _corr_row(level="instance", protocol="none", subset=sname, units="outputs", rating=a,
                            metric=m, method=meth, r=c.r, p=c.p, p_kind=c.p_kind, n=c.n, n_dropped=dropped,
                            why=why_undefined(x, h, m, a) if math.isnan(c.r) else "")
            if st.bootstrap_n and meth in st.bootstrap_methods and not sname.startswith("system=") and c.n >= 3:
                b = S.bootstrap_correlation(x, h, meth, st.bootstrap_n, st.ci,
                                            _seed(st.seed, "inst", sname, a, m, meth), st.tails, sgn,
                                            progress=progress)
                row.update(ci_low=b.low, ci_high=b.high, ci_valid=b.n_valid)
            rows.append(row)
    return rows


def _grouped_rows(d: EvalData, st: Settings, m: str, a: str, scopes, pooled_all: bool) -> list[dict]:
    """Instance level, protocols ``sys`` / ``item``: correlations within groups, averaged (+ bootstrap p, CI)."""
    rows = []
    x_all, h_all, sgn = d.metrics[m], d.ratings[a], d.sign(m)
    for proto in [p for p in st.protocols if p != "none"]:
        if proto == "item" and d.item is None:
            continue
        for sname, mask in scopes:
            # per system: a unit is a system within a dataset (dataset/system when datasets are pooled)
            groups = (system_units(d, mask, pooled_all and sname == "all") if proto == "sys" else d.item)[mask]
            x, h = x_all[mask], h_all[mask]
            dropped = int((np.isnan(x) | np.isnan(h)).sum())
            for meth in st.methods:
                g = S.averaged_correlation(x, h, groups, meth, st.min_group_size)
                row = _corr_row(level="instance", protocol=proto, subset=sname,
                                units="systems" if proto == "sys" else "items", rating=a, metric=m,
                                method=meth, r=g.r, n=g.n_groups, n_dropped=dropped,
                                groups_skipped=g.n_groups_skipped, p_kind="bootstrap",
                                why=_why_grouped(x, h, m, a, st) if math.isnan(g.r) else "")
                if st.bootstrap_n and g.n_groups >= MIN_BOOTSTRAP_GROUPS:
                    b = S.bootstrap_averaged(list(g.per_group.values()), st.bootstrap_n, st.ci,
                                             _seed(st.seed, proto, sname, a, m, meth), st.tails, sgn)
                    row.update(p=b.p, ci_low=b.low, ci_high=b.high, ci_valid=b.n_valid)
                rows.append(row)
    return rows


def instance_correlations(d: EvalData, st: Settings, progress: bool = True) -> list[dict]:
    """Instance-level correlation rows for every metric × rating: flatten (``none``), then ``sys`` / ``item``."""
    from tqdm.auto import tqdm

    subsets, scopes = _subsets(d, st.per_system), _scopes(d)
    pooled_all = len(d.datasets) > 1
    rows: list[dict] = []
    bar = tqdm(total=len(d.metrics) * len(d.ratings), desc="instance-level correlations", unit="metric×aspect",
               disable=not progress)
    for m in d.metrics:
        for a in d.ratings:
            if "none" in st.protocols:
                rows += _flatten_rows(d, st, m, a, subsets, progress)
            rows += _grouped_rows(d, st, m, a, scopes, pooled_all)
            bar.update(1)
    bar.close()
    return rows


def error_measures(d: EvalData, st: Settings, scopes) -> pd.DataFrame:
    """MSE of the best linear fit, and MAE / RMSE of each metric mapped onto the rating range (+ a constant).

    ``mae`` / ``rmse`` are always *after* the min-max mapping (Dušek et al.), never between a metric and a rating
    on different scales; ``mae_raw`` / ``rmse_raw`` (the metric taken as a prediction as it is) only where the scales
    match: a higher-is-better metric whose scores all lie in the rating range (``scale_match``)."""
    err_rows = []
    for sname, mask in scopes:
        for a in d.ratings:
            h = d.ratings[a][mask]
            hv = h[~np.isnan(h)]
            lo, hi = d.rating_range or st.rating_range or ((float(hv.min()), float(hv.max())) if hv.size else (math.nan, math.nan))
            rng = f"[{lo:g}, {hi:g}]" if not math.isnan(lo) else "none (no rating values)"
            if hv.size:
                const = np.full(h.shape, float(hv.mean()))
                mae, rmse = S.mae_rmse(const, h)
                err_rows.append({"subset": sname, "rating": a, "metric": "constant (mean rating)", "mse_fit": float(np.var(hv)),
                                 "mae": mae, "rmse": rmse, "n": int(hv.size), "range": rng})
            for m in d.metrics:
                x = d.metrics[m][mask]
                pred = S.normalise_to_range(x, lo, hi, d.info[m].higher_is_better, st.round_to)
                mae, rmse = S.mae_rmse(pred, h)
                n = int((~(np.isnan(x) | np.isnan(h))).sum())
                xv = x[~np.isnan(x)]
                match = bool(d.info[m].higher_is_better and xv.size and lo <= xv.min() and xv.max() <= hi
                             and np.ptp(xv) > 0.25 * (hi - lo))
                mae_raw, rmse_raw = S.mae_rmse(x, h) if match else (math.nan, math.nan)
                err_rows.append({"subset": sname, "rating": a, "metric": m, "mse_fit": S.mse_linear_fit(x, h),
                                 "mae": mae, "rmse": rmse, "n": n, "range": rng,
                                 "scale_match": match, "mae_raw": mae_raw, "rmse_raw": rmse_raw})
    return pd.DataFrame(err_rows)


def item_accuracy(d: EvalData, scopes) -> pd.DataFrame:
    """Item-level pairwise accuracy: pairs of outputs for the same input that metric and humans order alike."""
    item_rows = []
    if d.item is not None:
        for sname, mask in scopes:
            pairs_ij = S.within_group_pairs(d.item[mask])
            for a in d.ratings:
                for m in d.metrics:
                    acc, npairs = S.grouped_pairwise_accuracy(d.ratings[a][mask], d.metrics[m][mask],
                                                              higher_is_better=d.info[m].higher_is_better, pairs=pairs_ij)
                    item_rows.append({"subset": sname, "rating": a, "metric": m, "accuracy": acc, "pairs": npairs})
    return pd.DataFrame(item_rows)


def between_datasets(d: EvalData, st: Settings) -> pd.DataFrame:
    """One metric across datasets (independent samples): Fisher's z test of the Pearson correlations."""
    bd_rows = []
    if st.between_datasets and len(d.datasets) > 1:
        for a in d.ratings:
            for m in d.metrics:
                rs = {}
                for ds in d.datasets:
                    mask = d.dataset == ds
                    c = S.correlation(d.oriented(m)[mask], d.ratings[a][mask], "pearson")
                    rs[ds] = c
                for x, y in itertools.combinations(d.datasets, 2):
                    t = S.fisher_z_test(rs[x].r, rs[x].n, rs[y].r, rs[y].n, tails=2)
                    bd_rows.append({"rating": a, "metric": m, "dataset_a": x, "dataset_b": y, "r_a": rs[x].r,
                                    "n_a": rs[x].n, "r_b": rs[y].r, "n_b": rs[y].n, "z": t.statistic, "p": t.p})
    between = pd.DataFrame(bd_rows)
    if len(between):
        between["p_adj"] = S.adjust_pvalues(between["p"].to_numpy(float), st.correction)
    return between
