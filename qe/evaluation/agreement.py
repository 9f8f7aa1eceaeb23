"""Human agreement: the ceiling a metric can be judged against - agreement among the annotators of the same
criterion (Krippendorff's alpha, one annotator vs the others, split-half reliability stepped up with Spearman-Brown,
at instance and system level) - and, never called a ceiling, the correlations between different criteria."""
from __future__ import annotations

import itertools
import math
from typing import Iterable

import numpy as np
import pandas as pd

from qe.evaluation import stats as S
from qe.evaluation.evaldata import _seed, EvalData, Settings, system_means, system_units


def system_sets_of(d: EvalData, st: Settings, systems: Iterable[str]) -> list[tuple[str, list[str]]]:
    """The named sets of systems among ``systems`` (those of one scope): all systems, excluding the human ones
    (when some are human and at least 2 are not), and each ``stats.system_sets`` entry -- as at system level."""
    systems = sorted(set(systems))
    human = set(d.human_systems)
    out = [("all systems", systems)]
    non_human = [x for x in systems if x not in human]
    if len(non_human) < len(systems) and len(non_human) >= 2:
        out.append(("excluding human", non_human))
    for name, names in (st.system_sets or {}).items():
        out.append((str(name), [x for x in systems if x in set(names)]))
    return out


def human_agreement(d: EvalData, st: Settings, scopes, pooled_all: bool,
                    undefined: dict[str, str]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Agreement among humans, for every scope and every set of systems (all, excluding human, named sets).

    Returns (between criteria, alpha, ceiling):

    * **between criteria** -- correlations between *different* rating columns (instance level unless the records
      are a per-system table, and system level on unit means), p-values with ``stats.tails`` (one-tailed: the
      criteria of one output are expected to correlate positively). Not a ceiling: two criteria may measure
      different things (Reiter & Belz 2009: clarity and accuracy), and a metric may beat that correlation;
    * **alpha** -- Krippendorff's alpha (interval) over the per-annotator ratings of each criterion;
    * **ceiling** -- agreement among the annotators of the *same* criterion, the ceiling for a metric's
      correlation with that criterion (:func:`human_ceiling`)."""
    rows, alpha_rows, ceil_rows = [], [], []
    aspects = list(d.ratings)
    pairs = list(itertools.combinations(aspects, 2))
    for sname, mask in scopes:
        pooled = pooled_all and sname == "all"
        units = system_units(d, mask, pooled)
        for set_name, systems in system_sets_of(d, st, d.system[mask].tolist()):
            smask = mask & np.isin(d.system, systems)
            if not smask.any():
                continue
            if not d.one_per_system:
                for a, b in pairs:
                    for meth in st.methods:
                        c = S.correlation(d.ratings[a][smask], d.ratings[b][smask], meth, st.tails, 1)
                        rows.append({"level": "instance", "subset": sname, "systems": set_name, "rating_a": a,
                                     "rating_b": b, "method": meth, "r": c.r, "p": c.p, "p_kind": c.p_kind, "n": c.n})
            means = system_means(d, smask, units)
            for a, b in pairs:
                for meth in st.methods:
                    c = S.correlation(means[f"rating:{a}"], means[f"rating:{b}"], meth, st.tails, 1)
                    rows.append({"level": "system", "subset": sname, "systems": set_name, "rating_a": a, "rating_b": b,
                                 "method": meth, "r": c.r, "p": c.p, "p_kind": c.p_kind, "n": c.n})
            for a, ann in d.annotations.items():
                m = ann[smask]
                alpha_rows.append({"subset": sname, "systems": set_name, "rating": a, "alpha": S.krippendorff_alpha(m),
                                   "annotators": int((~np.isnan(m)).any(axis=0).sum()),
                                   "units": int(((~np.isnan(m)).sum(axis=1) >= 2).sum()), "level": "interval"})
                ceil_rows += human_ceiling(d, st, a, smask, units, sname, set_name, alpha_rows[-1]["alpha"])
    if not pairs and not d.annotations:
        undefined["agreement"] = "one rating column and no per-annotator ratings (`ratings.<aspect>@<annotator>`)"
    if not d.annotations:
        undefined["ceiling"] = ("no per-annotator ratings (rating keys `<aspect>@<annotator>`), so no agreement among "
                                "annotators of one criterion")
    return pd.DataFrame(rows), pd.DataFrame(alpha_rows), pd.DataFrame(ceil_rows)


def human_ceiling(d: EvalData, st: Settings, aspect: str, mask: np.ndarray, units: np.ndarray, subset: str,
                  systems: str, alpha: float = math.nan) -> list[dict]:
    """Agreement among the annotators of one criterion (:func:`qe.evaluation.stats.annotator_agreement`), at
    instance level (outputs with >= 2 ratings) and at system level (per-unit means of both sides), for every
    coefficient of ``stats.methods``: one annotator vs the mean of the others, split-half correlation, the
    single-annotator reliability and the reliability ``R`` of the mean rating (split half stepped up,
    Spearman–Brown for unequal item-varying halves), and ``sqrt(R)``: by Spearman's (1904) correction for
    attenuation, no metric's Pearson correlation with the mean rating can exceed it (for rho and the system
    level an approximation)."""
    ann = d.annotations[aspect][mask]
    k = (~np.isnan(ann)).sum(axis=1)
    rows = []
    levels = [("instance", None, "outputs")]
    if not d.one_per_system:
        levels.append(("system", units[mask], "systems"))
    for level, groups, unit_name in levels:
        for meth in st.methods:
            res = S.annotator_agreement(ann, meth, groups=groups, draws=st.agreement_draws,
                                        seed=_seed(st.seed, "ceiling", level, subset, systems, aspect, meth))
            ovr, sh = res["one_vs_rest"], res["split_half"]
            full = sh.full
            rows.append({"level": level, "subset": subset, "systems": systems, "rating": aspect, "method": meth,
                         "alpha": alpha if level == "instance" else math.nan,
                         "one_vs_rest": ovr.r, "one_vs_rest_low": ovr.low, "one_vs_rest_high": ovr.high,
                         "split_half": sh.r, "split_half_low": sh.low, "split_half_high": sh.high,
                         "reliability_single": sh.single, "reliability": full,
                         "ceiling": math.sqrt(full) if not math.isnan(full) and full >= 0 else math.nan,
                         "n": ovr.n, "units": unit_name, "draws": sh.draws,
                         "ratings_per_output": float(k[k >= 1].mean()) if (k >= 1).any() else math.nan,
                         "outputs_rated_twice": int((k >= 2).sum())})
    return rows
