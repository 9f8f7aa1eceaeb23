"""System level: correlations of per-system means of instance scores and of corpus-level scores, and Reiter & Belz's
Table 9 analysis - which system pairs the human ratings tell apart, and which of those each metric predicts."""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd

from qe.evaluation import stats as S
from qe.evaluation.evaldata import (
    _corr_row, _seed, corpus_column, EvalData, MIN_CORRELATION_N, Settings, system_means, system_units,
    too_few_units, why_undefined,
)


def system_level(d: EvalData, st: Settings, scopes, pooled_all: bool, notes: list[str],
                 undefined: dict[str, str] | None = None) -> tuple[list[dict], pd.DataFrame, pd.DataFrame]:
    """System-level correlations of the per-system means (all systems, and without human systems), pairwise
    system accuracy, and the table of system means. Returns (correlation rows, means, accuracy); fewer than 3
    units over all data makes the system level undefined (``undefined["system"]``, with the reason)."""
    undefined = {} if undefined is None else undefined
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
        for set_name, systems in (st.system_sets or {}).items():
            sets.append((str(set_name), means["system"].isin(list(systems)).to_numpy()))
        unit_desc = "dataset/system pairs" if pooled else "systems"
        for set_name, keep in sets:
            mm = means[keep]
            if sname == "all" and set_name == "all systems":
                why = too_few_units(d, len(mm), pooled)
                if why:
                    undefined["system"] = why + ("; pairwise accuracy of the two only (`system_accuracy.csv`)"
                                                 if len(mm) == 2 else "")
            elif len(mm) < MIN_CORRELATION_N:
                notes.append(f"System level, {sname} · {set_name}: undefined (only {len(mm)} units; a correlation needs "
                             "3); pairwise accuracy only (`system_accuracy.csv`).")
            for a in d.ratings:
                H = mm[f"rating:{a}"].to_numpy(float)
                for m in d.metrics:
                    sgn = d.sign(m)
                    ways = [("system means", mm[f"metric:{m}"].to_numpy(float))]
                    if st.corpus_level and m in d.corpus:
                        ways.append(("corpus score", corpus_column(d, mm, m)))
                    for proto, X in ways:
                        for meth in st.methods if len(mm) >= MIN_CORRELATION_N else ():
                            c = S.correlation(X, H, meth, st.tails, sgn)
                            row = _corr_row(level="system", protocol=proto, subset=f"{sname} · {set_name}",
                                            units=unit_desc, rating=a, metric=m, method=meth, r=c.r, p=c.p,
                                            p_kind=c.p_kind, n=c.n,
                                            why=why_undefined(X, H, m, a) if math.isnan(c.r) else "")
                            if st.bootstrap_n and c.n >= 3:
                                Xc, Hc = S.complete_pairs(X, H)
                                key = ("sys", sname, set_name, a, m, meth) + (() if proto == "system means" else (proto,))
                                b = S.bootstrap(lambda idx, Xc=Xc, Hc=Hc, meth=meth: S.rowwise_corr(Xc[idx], Hc[idx], meth),
                                                Xc.size, st.bootstrap_n, st.ci, _seed(st.seed, *key), st.tails, sgn)
                                row.update(ci_low=b.low, ci_high=b.high, ci_valid=b.n_valid)
                            rows.append(row)
                    X = ways[0][1]
                    acc, npairs = S.pairwise_accuracy(H, X, d.info[m].higher_is_better)
                    sys_acc_rows.append({"subset": f"{sname} · {set_name}", "units": unit_desc, "rating": a, "metric": m,
                                         "accuracy": acc, "pairs": npairs, "n_units": int(len(mm))})
    system_means_df = pd.concat(sm_frames, ignore_index=True) if sm_frames else pd.DataFrame()
    return rows, system_means_df, pd.DataFrame(sys_acc_rows)


def _given_pairs(d: EvalData, st: Settings) -> list[dict]:
    """Rows for externally given significant differences (``stats.significant_pairs``): the human means where
    ratings exist and each metric's difference of system means (oriented), better minus worse."""
    from qe.evaluation.scoring import EvaluationConfigError

    rows = []
    for gp in st.significant_pairs:
        for s_ in (gp["better"], gp["worse"]):
            if s_ not in d.systems:
                raise EvaluationConfigError(f"stats.significant_pairs: system {s_!r} is not in the data; systems: {d.systems}")
        aspects = [gp["rating"]] if gp.get("rating") else list(d.ratings)
        for a in aspects:
            if a not in d.ratings:
                raise EvaluationConfigError(f"stats.significant_pairs: rating {a!r} is not evaluated; ratings: {list(d.ratings)}")
            for ds in ([gp["dataset"]] if gp.get("dataset") else d.datasets):
                ma = (d.dataset == ds) & (d.system == gp["better"])
                mb = (d.dataset == ds) & (d.system == gp["worse"])
                if not (ma.any() and mb.any()):
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    row = {"rating": a, "dataset": ds, "system_a": gp["better"], "system_b": gp["worse"],
                           "test": "given (stats.significant_pairs)", "n": int(ma.sum() + mb.sum()),
                           "mean_a": float(np.nanmean(d.ratings[a][ma])) if (~np.isnan(d.ratings[a][ma])).any() else math.nan,
                           "mean_b": float(np.nanmean(d.ratings[a][mb])) if (~np.isnan(d.ratings[a][mb])).any() else math.nan,
                           "diff": 1.0, "statistic": math.nan, "p": math.nan, "p_adj": math.nan, "significant": True,
                           "better": gp["better"]}
                    for m in d.metrics:
                        row[f"m:{m}"] = float(np.nanmean(d.oriented(m)[ma]) - np.nanmean(d.oriented(m)[mb]))
                rows.append(row)
    return rows


def _predicted(d: EvalData, pairs: pd.DataFrame) -> pd.DataFrame:
    pred_rows = []
    if len(pairs):
        for a in d.ratings:
            sig = pairs[(pairs["rating"] == a) & pairs["significant"]]
            for m in d.metrics:
                hit = int(sum(1 for _, r in sig.iterrows() if np.sign(r[f"m:{m}"]) == np.sign(r["diff"]) and r["diff"] != 0))
                pred_rows.append({"rating": a, "metric": m, "predicted": hit, "significant": int(len(sig)),
                                  "pairs": int((pairs["rating"] == a).sum())})
    return pd.DataFrame(pred_rows)


def _system_pairs(d: EvalData, st: Settings, notes: list[str],
                  undefined: dict[str, str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Which pairs of systems humans rate differently, and which of those differences each metric predicts.

    Wilcoxon: per dataset, each system's ratings are averaged per item (several outputs for one input become
    one rating), systems are paired on the items both have, and the signed-rank test compares them; the
    p-values of all pairs of one rating aspect form one family (``pairwise_correction``; Reiter & Belz used
    Bonferroni). Tukey: statsmodels' Tukey HSD on the unpaired ratings of each dataset. A difference counts as
    *predicted* by a metric when the metric's mean over the same items (oriented so that higher is better)
    differs in the same direction.
    """
    undefined = {} if undefined is None else undefined
    if st.significant_pairs:
        pairs = pd.DataFrame(_given_pairs(d, st))
        return pairs, _predicted(d, pairs)
    if not any(len(set(d.system[d.dataset == ds].tolist())) >= 2 for ds in d.datasets):
        undefined["pairs"] = ("1 system: the records have no `system` field, so there is no pair of systems to compare"
                              if d.systems == ["(none)"] else
                              "1 system" + (" in each dataset" if len(d.datasets) > 1 else "")
                              + ", so there is no pair of systems to compare")
        return pd.DataFrame(), pd.DataFrame()
    if d.one_per_system:
        undefined["pairs"] = ("one rating per system, so no test of system differences is possible; give published "
                              "significant differences with `stats.significant_pairs`")
        return pd.DataFrame(), pd.DataFrame()
    test = st.pairwise_test
    if test == "wilcoxon" and d.item is None:
        notes.append("Pairwise system differences: no item field to pair ratings on; used Tukey HSD instead of Wilcoxon.")
        test = "tukey"
    rows = []
    skipped: list[str] = []  # (dataset, rating) families with nothing to test, and why
    for a in d.ratings:
        fam = []
        for ds in d.datasets:
            mask = d.dataset == ds
            systems = sorted(set(d.system[mask].tolist()))
            if len(systems) < 2:
                continue
            h = d.ratings[a][mask]
            hv = h[~np.isnan(h)]
            if hv.size == 0 or float(np.ptp(hv)) == 0.0:
                skipped.append(f"{ds}, {a}: " + ("no rating values" if hv.size == 0 else
                                                f"every rating is {float(hv[0]):g}, so no system is rated differently"))
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
                           "n": int(len(x1)), "mean_a": float(x1["h"].mean()) if len(x1) else math.nan,
                           "mean_b": float(x2["h"].mean()) if len(x1) else math.nan,
                           "diff": diff, "statistic": t.statistic, "p": t.p}
                    for m in d.metrics:
                        row[f"m:{m}"] = float((x1[f"m:{m}"] - x2[f"m:{m}"]).mean()) if len(x1) else math.nan
                    fam.append(row)
            else:
                from statsmodels.stats.multicomp import pairwise_tukeyhsd

                f2 = frame.dropna(subset=["h"])
                sizes = f2.groupby("system").size()
                if len(sizes) < 2 or int(sizes.min()) < 2:
                    skipped.append(f"{ds}, {a}: a system has fewer than 2 ratings, so Tukey HSD is undefined "
                                   "(give known differences with `stats.significant_pairs`)")
                    continue
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
            if math.isnan(r["p"]) and r["n"] == 0:  # no item rated for both systems: nothing was tested
                r["better"] = "undefined (no pairs)"
            elif math.isnan(r["diff"]):
                r["better"] = "undefined"
            else:
                r["better"] = (r["system_a"] if r["diff"] > 0 else r["system_b"]) if r["diff"] != 0 else "="
        rows += fam
    if skipped:
        if rows:  # the other families are in the table; these are named in the notes
            notes.append("Pairwise system differences not tested for " + "; ".join(skipped) + ".")
        else:
            undefined["pairs"] = "nothing to test: " + "; ".join(skipped)
    pairs = pd.DataFrame(rows)
    return pairs, _predicted(d, pairs)
