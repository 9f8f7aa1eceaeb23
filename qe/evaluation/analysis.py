"""The meta-evaluation proper: every statistic of a report, computed from one :class:`EvalData`.

Levels and protocols (every table names its own):

* **instance level**, protocol ``none`` (flatten): one correlation over all outputs of a subset (all data, each
  dataset, each system -- the per-dataset and per-system breakdowns);
* **instance level**, protocol ``sys`` (per system, then average) and ``item`` (per item -- input / MR /
  document -- then average; the *summary level* of DiscoScore): mt-metrics-eval's ``average_by``; groups with
  fewer than ``min_group_size`` rated outputs or a constant side are skipped and counted;
* **system level**: correlation of per-system means (a *unit* is a system within one dataset; pooled over
  datasets a unit is a dataset/system pair), for the sets "all systems" and "excluding human" (Reiter & Belz's
  sets I and II) when a system is marked as human.

p-values: analytic (scipy) for ``none`` and system level; for the averaged protocols, which have no analytic
test, the percentile-bootstrap p-value over groups (only with at least ``MIN_BOOTSTRAP_GROUPS`` groups; it
reflects the spread between groups, not the sampling error inside them). The correction (none / Bonferroni / Holm) is applied across
the metrics of one table column: same level, protocol, subset, rating aspect and coefficient.
"""
from __future__ import annotations

import itertools
import logging
import math
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
import pandas as pd

from qe.evaluation import stats as S
from qe.evaluation.scoring import MetricInfo

log = logging.getLogger(__name__)

#: an averaged correlation gets a bootstrap CI / p-value only when at least this many groups define it (resampling
#: two or three group means says nothing about the sampling error)
MIN_BOOTSTRAP_GROUPS = 5


@dataclass
class Settings:
    methods: list[str] = field(default_factory=lambda: list(S.METHODS))
    protocols: list[str] = field(default_factory=lambda: list(S.PROTOCOLS))
    tails: int = 2
    alpha: float = 0.05
    correction: str = "holm"
    bootstrap_n: int = 1000
    ci: float = 0.95
    #: coefficients that get item-resampling bootstrap CIs at instance level / flatten (the costly case);
    #: the averaged protocols and the system level always get them for every coefficient
    bootstrap_methods: list[str] = field(default_factory=lambda: ["pearson"])
    permutation_n: int = 1000
    permutation_method: str = "pearson"
    williams: bool = True
    min_group_size: int = 3
    rating_range: tuple[float, float] | None = None
    round_to: float | None = 0.5
    pairwise_test: str = "wilcoxon"
    pairwise_correction: str = "bonferroni"
    pairwise_alpha: float = 0.05
    per_system: bool = True
    between_datasets: bool = True
    seed: int = 1234

    def __post_init__(self):
        for m in self.methods:
            if m not in S.METHODS:
                raise ValueError(f"stats.methods: unknown {m!r}; choose from {S.METHODS}")
        for p in self.protocols:
            if p not in S.PROTOCOLS:
                raise ValueError(f"stats.protocols: unknown {p!r}; choose from {S.PROTOCOLS} "
                                 "(none = flatten, sys = per system then average, item = per item then average)")
        if self.tails not in (1, 2):
            raise ValueError(f"stats.tails must be 1 or 2, got {self.tails!r}")
        for c in (self.correction, self.pairwise_correction):
            if c not in S.CORRECTIONS:
                raise ValueError(f"unknown correction {c!r}; choose from {S.CORRECTIONS}")
        if self.pairwise_test not in ("wilcoxon", "tukey"):
            raise ValueError(f"stats.pairwise.test must be wilcoxon or tukey, got {self.pairwise_test!r}")


@dataclass
class EvalData:
    ids: np.ndarray
    system: np.ndarray
    dataset: np.ndarray
    item: np.ndarray | None
    ratings: dict[str, np.ndarray]
    metrics: dict[str, np.ndarray]
    info: dict[str, MetricInfo]
    human_systems: list[str] = field(default_factory=list)
    rating_range: tuple[float, float] | None = None

    @property
    def n(self) -> int:
        return int(self.ids.size)

    def sign(self, metric: str) -> int:
        return 1 if self.info[metric].higher_is_better else -1

    def oriented(self, metric: str) -> np.ndarray:
        return self.metrics[metric] * self.sign(metric)

    @property
    def datasets(self) -> list[str]:
        return sorted(set(self.dataset.tolist()))

    @property
    def systems(self) -> list[str]:
        return sorted(set(self.system.tolist()))


def build_eval_data(records, metrics: dict[str, np.ndarray], info: dict[str, MetricInfo],
                    ratings: list[str] | None = None, item_key: str | None = "mr",
                    human_systems: Iterable[str] | None = None, rating_range=None,
                    dataset_name: str = "<dataset>") -> EvalData:
    """Align records, ratings and metric scores; check that the asked-for rating columns and item field exist."""
    from qe.evaluation.scoring import EvaluationConfigError

    present: list[str] = []
    for r in records:
        for k in r.ratings:
            if k not in present:
                present.append(k)
    if not present:
        raise EvaluationConfigError(f"dataset {dataset_name!r} has no human ratings (no record has a 'ratings' "
                                    "field); meta-evaluation needs rated records")
    if ratings:
        missing = [a for a in ratings if a not in present]
        if missing:
            raise EvaluationConfigError(f"rating column(s) {missing} not found in dataset {dataset_name!r}; "
                                        f"its records have: {present}")
        aspects = list(ratings)
    else:
        aspects = present
    if not metrics:
        raise EvaluationConfigError(f"nothing to evaluate on {dataset_name!r}: no scorer configured and no "
                                    "precomputed metric columns selected (scorer=[...], models=[...] or metric_columns)")
    item = None
    if item_key:
        vals = []
        for r in records:
            v = getattr(r, item_key, None) if item_key in ("mr", "source", "id", "output") else r.extra.get(item_key)
            if v is None or (isinstance(v, str) and not v.strip()):
                vals = None
                log.warning("item_key=%r: record %r has no such field; item-level protocol disabled", item_key, r.id)
                break
            vals.append(f"{r.dataset}\x1f{v}")  # items never cross datasets
        if vals is not None:
            item = np.array(vals, dtype=object)
    return EvalData(
        ids=np.array([r.id for r in records], dtype=object),
        system=np.array([r.system if r.system is not None else "(none)" for r in records], dtype=object),
        dataset=np.array([r.dataset if r.dataset is not None else dataset_name for r in records], dtype=object),
        item=item,
        ratings={a: np.array([r.ratings.get(a, math.nan) for r in records], float) for a in aspects},
        metrics=metrics, info=info, human_systems=[s for s in (human_systems or [])],
        rating_range=tuple(rating_range) if rating_range else None)


@dataclass
class Results:
    settings: Settings
    correlations: pd.DataFrame
    nan_counts: pd.DataFrame
    errors: pd.DataFrame
    system_means: pd.DataFrame
    system_accuracy: pd.DataFrame
    item_accuracy: pd.DataFrame
    williams: pd.DataFrame
    permutation: pd.DataFrame
    between_datasets: pd.DataFrame
    system_pairs: pd.DataFrame
    predicted: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def _seed(base: int, *key: Any) -> int:
    return (int(base) + zlib.crc32("|".join(map(str, key)).encode())) % (2**32)


def _subsets(d: EvalData, per_system: bool) -> list[tuple[str, np.ndarray]]:
    out = [("all", np.ones(d.n, bool))]
    if len(d.datasets) > 1:
        out += [(f"dataset={x}", d.dataset == x) for x in d.datasets]
    if per_system and len(d.systems) > 1:
        out += [(f"system={x}", d.system == x) for x in d.systems]
    return out


def _scopes(d: EvalData) -> list[tuple[str, np.ndarray]]:
    out = [("all", np.ones(d.n, bool))]
    if len(d.datasets) > 1:
        out += [(f"dataset={x}", d.dataset == x) for x in d.datasets]
    return out


def system_units(d: EvalData, mask: np.ndarray, pooled: bool) -> np.ndarray:
    """Unit label per record: the system, or dataset/system when several datasets are pooled."""
    if pooled:
        return np.array([f"{a}/{b}" for a, b in zip(d.dataset, d.system)], dtype=object)
    return d.system.copy()


def system_means(d: EvalData, mask: np.ndarray, units: np.ndarray) -> pd.DataFrame:
    """Per-unit means of every rating and metric (NaN ignored), with the number of records."""
    frame = pd.DataFrame({"unit": units[mask], "system": d.system[mask]})
    for a, v in d.ratings.items():
        frame[f"rating:{a}"] = v[mask]
    for m, v in d.metrics.items():
        frame[f"metric:{m}"] = v[mask]
    g = frame.groupby("unit", sort=True)
    out = g.mean(numeric_only=True)
    out.insert(0, "n", g.size())
    out.insert(0, "system", g["system"].first())
    return out


def _corr_row(**kw) -> dict:
    base = dict(level="", protocol="", subset="", units="", rating="", metric="", method="", r=math.nan,
                p=math.nan, p_kind="", n=0, n_dropped=0, groups_skipped=0, ci_low=math.nan, ci_high=math.nan,
                ci_valid=0)
    base.update(kw)
    return base


def analyse(d: EvalData, st: Settings, progress: bool = True) -> Results:
    """Every level and protocol of the report, one named step each (the report's sections in this order)."""
    notes: list[str] = []
    scopes = _scopes(d)
    pooled_all = len(d.datasets) > 1
    rows = instance_correlations(d, st, progress)
    sys_rows, system_means_df, sys_acc = system_level(d, st, scopes, pooled_all, notes)
    corr = adjust_across_metrics(pd.DataFrame(rows + sys_rows), st)
    errors = error_measures(d, st, scopes)
    item_acc = item_accuracy(d, scopes)
    williams = williams_tests(d, st, scopes, pooled_all)
    perm = perm_both_tests(d, st, progress)
    between = between_datasets(d, st)
    # pairwise system differences (Reiter & Belz 2009, Table 9)
    sp_rows, pred_rows = _system_pairs(d, st, notes)
    return Results(st, corr, nan_counts(d), errors, system_means_df, sys_acc, item_acc, williams, perm, between,
                   sp_rows, pred_rows, notes)


def nan_counts(d: EvalData) -> pd.DataFrame:
    """Per metric: NaN scores, and the (metric, rating) pairs dropped for each rating."""
    nan_rows = []
    for m in d.metrics:
        row = {"metric": m, "source": d.info[m].source, "orientation": "higher" if d.info[m].higher_is_better else "lower",
               "n": d.n, "nan_scores": int(np.isnan(d.metrics[m]).sum())}
        for a in d.ratings:
            row[f"pairs_dropped:{a}"] = int((np.isnan(d.metrics[m]) | np.isnan(d.ratings[a])).sum())
        nan_rows.append(row)
    return pd.DataFrame(nan_rows)


def _flatten_rows(d: EvalData, st: Settings, m: str, a: str, subsets) -> list[dict]:
    """Instance level, protocol ``none``: one correlation over all outputs of each subset (+ bootstrap CI)."""
    rows = []
    x_all, h_all, sgn = d.metrics[m], d.ratings[a], d.sign(m)
    for sname, mask in subsets:
        x, h = x_all[mask], h_all[mask]
        dropped = int((np.isnan(x) | np.isnan(h)).sum())
        for meth in st.methods:
            c = S.correlation(x, h, meth, st.tails, sgn)
            row = _corr_row(level="instance", protocol="none", subset=sname, units="outputs", rating=a,
                            metric=m, method=meth, r=c.r, p=c.p, p_kind="analytic", n=c.n, n_dropped=dropped)
            if st.bootstrap_n and meth in st.bootstrap_methods and not sname.startswith("system=") and c.n >= 3:
                b = S.bootstrap_correlation(x, h, meth, st.bootstrap_n, st.ci,
                                            _seed(st.seed, "inst", sname, a, m, meth), st.tails, sgn)
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
                                groups_skipped=g.n_groups_skipped, p_kind="bootstrap")
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
                rows += _flatten_rows(d, st, m, a, subsets)
            rows += _grouped_rows(d, st, m, a, scopes, pooled_all)
            bar.update(1)
    bar.close()
    return rows


def system_level(d: EvalData, st: Settings, scopes, pooled_all: bool,
                 notes: list[str]) -> tuple[list[dict], pd.DataFrame, pd.DataFrame]:
    """System-level correlations of the per-system means (all systems, and without human systems), pairwise
    system accuracy, and the table of system means. Returns (correlation rows, means, accuracy)."""
    rows: list[dict] = []
    sm_frames = []
    sys_acc_rows = []
    human = set(d.human_systems)
    for sname, mask in scopes:
        pooled = pooled_all and sname == "all"
        units = system_units(d, mask, pooled)
        means = system_means(d, mask, units)
        means.insert(0, "subset", sname)
        sm_frames.append(means.reset_index())
        sets = [("all systems", np.ones(len(means), bool))]
        is_h = means["system"].isin(human).to_numpy()
        if is_h.any() and (~is_h).sum() >= 2:
            sets.append(("excluding human", ~is_h))
        unit_desc = "dataset/system pairs" if pooled else "systems"
        for set_name, keep in sets:
            mm = means[keep]
            if len(mm) < 3:
                notes.append(f"System level, {sname} · {set_name}: only {len(mm)} units, so no correlation is defined; "
                             "pairwise accuracy only (`system_accuracy.csv`).")
            for a in d.ratings:
                H = mm[f"rating:{a}"].to_numpy(float)
                for m in d.metrics:
                    X = mm[f"metric:{m}"].to_numpy(float)
                    sgn = d.sign(m)
                    for meth in st.methods if len(mm) >= 3 else ():
                        c = S.correlation(X, H, meth, st.tails, sgn)
                        row = _corr_row(level="system", protocol="system means", subset=f"{sname} · {set_name}",
                                        units=unit_desc, rating=a, metric=m, method=meth, r=c.r, p=c.p,
                                        p_kind="analytic", n=c.n)
                        if st.bootstrap_n and c.n >= 3:
                            Xc, Hc = S.complete_pairs(X, H)
                            b = S.bootstrap(lambda idx, Xc=Xc, Hc=Hc, meth=meth: S.rowwise_corr(Xc[idx], Hc[idx], meth),
                                            Xc.size, st.bootstrap_n, st.ci, _seed(st.seed, "sys", sname, set_name, a, m, meth),
                                            st.tails, sgn)
                            row.update(ci_low=b.low, ci_high=b.high, ci_valid=b.n_valid)
                        rows.append(row)
                    acc, npairs = S.pairwise_accuracy(H, X, d.info[m].higher_is_better)
                    sys_acc_rows.append({"subset": f"{sname} · {set_name}", "units": unit_desc, "rating": a, "metric": m,
                                         "accuracy": acc, "pairs": npairs, "n_units": int(len(mm))})
    system_means_df = pd.concat(sm_frames, ignore_index=True) if sm_frames else pd.DataFrame()
    return rows, system_means_df, pd.DataFrame(sys_acc_rows)


def adjust_across_metrics(corr: pd.DataFrame, st: Settings) -> pd.DataFrame:
    """``p_adj``: p-values corrected across the metrics of one column (level, protocol, subset, rating, method);
    ``significant``: ``p_adj < alpha``."""
    corr["p_adj"] = np.nan
    if len(corr):
        for _, idx in corr.groupby(["level", "protocol", "subset", "rating", "method"], sort=False).groups.items():
            corr.loc[idx, "p_adj"] = S.adjust_pvalues(corr.loc[idx, "p"].to_numpy(float), st.correction)
    corr["significant"] = corr["p_adj"] < st.alpha
    return corr


def error_measures(d: EvalData, st: Settings, scopes) -> pd.DataFrame:
    """MSE of the best linear fit, and MAE / RMSE of each metric mapped onto the rating range (+ a constant)."""
    err_rows = []
    for sname, mask in scopes:
        for a in d.ratings:
            h = d.ratings[a][mask]
            hv = h[~np.isnan(h)]
            lo, hi = d.rating_range or st.rating_range or ((float(hv.min()), float(hv.max())) if hv.size else (math.nan, math.nan))
            if hv.size:
                const = np.full(h.shape, float(hv.mean()))
                mae, rmse = S.mae_rmse(const, h)
                err_rows.append({"subset": sname, "rating": a, "metric": "constant (mean rating)", "mse_fit": float(np.var(hv)),
                                 "mae": mae, "rmse": rmse, "n": int(hv.size), "range": f"[{lo:g}, {hi:g}]"})
            for m in d.metrics:
                x = d.metrics[m][mask]
                pred = S.normalise_to_range(x, lo, hi, d.info[m].higher_is_better, st.round_to)
                mae, rmse = S.mae_rmse(pred, h)
                n = int((~(np.isnan(x) | np.isnan(h))).sum())
                err_rows.append({"subset": sname, "rating": a, "metric": m, "mse_fit": S.mse_linear_fit(x, h),
                                 "mae": mae, "rmse": rmse, "n": n, "range": f"[{lo:g}, {hi:g}]"})
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


def williams_tests(d: EvalData, st: Settings, scopes, pooled_all: bool) -> pd.DataFrame:
    """Metric vs metric, Williams' test for dependent Pearson correlations: instance level per scope, and system
    level over all units pooled."""
    w_rows = []
    metrics = list(d.metrics)
    if not (st.williams and len(metrics) > 1):
        return pd.DataFrame(w_rows)
    pairs = list(itertools.combinations(metrics, 2))
    for sname, mask in scopes:
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
    for a in d.ratings:
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
                             n_permutations=st.permutation_n, seed=_seed(st.seed, "perm", a, m1, m2))
            p_rows.append({"subset": "all", "rating": a, "metric_a": m1, "metric_b": m2, "method": st.permutation_method,
                           "delta": pr.delta, "p_a_better": pr.p_a_better, "p_b_better": pr.p_b_better,
                           "permutations": pr.permutations})
            bar.update(1)
    bar.close()
    return pd.DataFrame(p_rows)


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


def _system_pairs(d: EvalData, st: Settings, notes: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Which pairs of systems humans rate differently, and which of those differences each metric predicts.

    Wilcoxon: per dataset, each system's ratings are averaged per item (several outputs for one input become
    one rating), systems are paired on the items both have, and the signed-rank test compares them; the
    p-values of all pairs of one rating aspect form one family (``pairwise_correction``; Reiter & Belz used
    Bonferroni). Tukey: statsmodels' Tukey HSD on the unpaired ratings of each dataset. A difference counts as
    *predicted* by a metric when the metric's mean over the same items (oriented so that higher is better)
    differs in the same direction.
    """
    test = st.pairwise_test
    if test == "wilcoxon" and d.item is None:
        notes.append("Pairwise system differences: no item field to pair ratings on; used Tukey HSD instead of Wilcoxon.")
        test = "tukey"
    rows = []
    for a in d.ratings:
        fam = []
        for ds in d.datasets:
            mask = d.dataset == ds
            systems = sorted(set(d.system[mask].tolist()))
            if len(systems) < 2:
                continue
            frame = pd.DataFrame({"system": d.system[mask], "h": d.ratings[a][mask]})
            if d.item is not None:
                frame["item"] = d.item[mask]
            for m in d.metrics:
                frame[f"m:{m}"] = d.oriented(m)[mask]
            if test == "wilcoxon":
                per = frame.groupby(["system", "item"]).mean(numeric_only=True)
                for s1, s2 in itertools.combinations(systems, 2):
                    a1, a2 = per.loc[s1], per.loc[s2]
                    common = a1.index.intersection(a2.index)
                    x1, x2 = a1.loc[common], a2.loc[common]
                    ok = ~(x1["h"].isna() | x2["h"].isna())
                    x1, x2 = x1[ok], x2[ok]
                    t = S.wilcoxon_paired(x1["h"].to_numpy(), x2["h"].to_numpy())
                    diff = float((x1["h"] - x2["h"]).mean()) if len(x1) else math.nan
                    row = {"rating": a, "dataset": ds, "system_a": s1, "system_b": s2, "test": "Wilcoxon signed-rank",
                           "n": int(len(x1)), "mean_a": float(x1["h"].mean()), "mean_b": float(x2["h"].mean()),
                           "diff": diff, "statistic": t.statistic, "p": t.p}
                    for m in d.metrics:
                        row[f"m:{m}"] = float((x1[f"m:{m}"] - x2[f"m:{m}"]).mean())
                    fam.append(row)
            else:
                from statsmodels.stats.multicomp import pairwise_tukeyhsd

                f2 = frame.dropna(subset=["h"])
                res = pairwise_tukeyhsd(f2["h"].to_numpy(), f2["system"].to_numpy(), alpha=st.pairwise_alpha)
                mean = f2.groupby("system").mean(numeric_only=True)
                for i, (s1, s2) in enumerate(itertools.combinations(list(res.groupsunique), 2)):
                    row = {"rating": a, "dataset": ds, "system_a": s1, "system_b": s2, "test": "Tukey HSD",
                           "n": int((f2["system"].isin([s1, s2])).sum()), "mean_a": float(mean.loc[s1, "h"]),
                           "mean_b": float(mean.loc[s2, "h"]), "diff": float(mean.loc[s1, "h"] - mean.loc[s2, "h"]),
                           "statistic": float(res.meandiffs[i]), "p": float(res.pvalues[i])}
                    for m in d.metrics:
                        row[f"m:{m}"] = float(mean.loc[s1, f"m:{m}"] - mean.loc[s2, f"m:{m}"])
                    fam.append(row)
        if not fam:
            continue
        p = np.array([r["p"] for r in fam])
        padj = S.adjust_pvalues(p, st.pairwise_correction if test == "wilcoxon" else "none")
        for r, q in zip(fam, padj):
            r["p_adj"] = float(q)
            r["significant"] = bool(q < st.pairwise_alpha)
            r["better"] = (r["system_a"] if r["diff"] > 0 else r["system_b"]) if r["diff"] != 0 else "="
        rows += fam
    pairs = pd.DataFrame(rows)
    pred_rows = []
    if len(pairs):
        for a in d.ratings:
            sig = pairs[(pairs["rating"] == a) & pairs["significant"]]
            for m in d.metrics:
                hit = int(sum(1 for _, r in sig.iterrows() if np.sign(r[f"m:{m}"]) == np.sign(r["diff"]) and r["diff"] != 0))
                pred_rows.append({"rating": a, "metric": m, "predicted": hit, "significant": int(len(sig)),
                                  "pairs": int((pairs["rating"] == a).sum())})
    return pairs, pd.DataFrame(pred_rows)
