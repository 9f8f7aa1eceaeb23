"""The meta-evaluation proper: every statistic of a report, computed from one :class:`EvalData`.

Levels and protocols (every table names its own):

* **instance level**, protocol ``none`` (flatten): one correlation over all outputs of a subset (all data, each
  dataset, each system -- the per-dataset and per-system breakdowns);
* **instance level**, protocol ``sys`` (per system, then average) and ``item`` (per item -- input / MR /
  document -- then average; the *summary level* of DiscoScore): mt-metrics-eval's ``average_by``; groups with
  fewer than ``min_group_size`` rated outputs or a constant side are skipped and counted;
* **system level**, two ways, each table named: the correlation of per-system *means of instance scores*
  (protocol ``system means``), and of the *corpus-level score* of each system (protocol ``corpus score``: the
  metric computed over all outputs of the system as its reference implementation does -- corpus BLEU / NIST /
  chrF / TER -- for scorers whose ``corpus_score`` pools statistics). A *unit* is a system within one dataset;
  pooled over datasets a unit is a dataset/system pair. Sets: "all systems", "excluding human" (Reiter & Belz's
  sets I and II) when a system is marked as human, and any named subset of ``stats.system_sets``.

Confounds (:func:`confounds`): partial correlations controlling for output length (words) and sentence count,
correlations within length bins, and a flag on metrics whose correlation they explain. Human agreement
(:func:`human_agreement`), per scope and set of systems: the **ceiling** -- agreement among the annotators of the
*same* criterion (rating keys ``<aspect>@<annotator>``): Krippendorff's alpha, one annotator vs the others, split-half
reliability stepped up with Spearman–Brown, at instance and system level (:func:`human_ceiling`) -- and, in a table
of its own and never called a ceiling, the correlations between *different* criteria.

Undefined stays undefined: a statistic that cannot be computed (one rating per system, too few items or units,
constant scores) is not reported as a number; ``Results.undefined`` names each skipped section and why, once.

p-values: scipy's for ``none`` and system level (``p_kind`` names the kind: analytic; Kendall's exact null
distribution for small samples without ties; a permutation test for Spearman with fewer than 10 points); for the
averaged protocols, which have no analytic
test, the percentile-bootstrap p-value over groups (only with at least ``MIN_BOOTSTRAP_GROUPS`` groups; it
reflects the spread between groups, not the sampling error inside them). The correction (none / Bonferroni / Holm) is applied across
the metrics of one table column: same level, protocol, subset, rating aspect and coefficient.
"""
from __future__ import annotations

import pandas as pd

from qe.evaluation.evaldata import (  # noqa: F401  (re-exported: the analysis API in one place)
    _corr_row,
    _finite_or_nan,
    _plural,
    _scopes,
    _seed,
    _subsets,
    _why_grouped,
    adjust_across_metrics,
    build_eval_data,
    check_system_names,
    constant_metrics,
    constant_ratings,
    corpus_column,
    CORR_COLUMNS,
    covariates_of,
    EvalData,
    MIN_BOOTSTRAP_GROUPS,
    MIN_CORRELATION_N,
    nan_counts,
    ONE_PER_SYSTEM,
    parse_pair,
    rated_outputs,
    Results,
    Settings,
    system_means,
    system_units,
    too_few_outputs,
    too_few_units,
    why_undefined,
)
from qe.evaluation.instance import (  # noqa: F401  (re-exported: the analysis API in one place)
    _flatten_rows,
    _grouped_rows,
    between_datasets,
    error_measures,
    instance_correlations,
    item_accuracy,
)
from qe.evaluation.system import (  # noqa: F401  (re-exported: the analysis API in one place)
    _given_pairs,
    _predicted,
    _system_pairs,
    system_level,
)
from qe.evaluation.compare import (  # noqa: F401  (re-exported: the analysis API in one place)
    perm_both_tests,
    williams_tests,
)
from qe.evaluation.confounds import (  # noqa: F401  (re-exported: the analysis API in one place)
    _confound_row,
    _explained,
    confounds,
    COVARIATE_SETS,
)
from qe.evaluation.agreement import (  # noqa: F401  (re-exported: the analysis API in one place)
    human_agreement,
    human_ceiling,
    system_sets_of,
)
from qe.evaluation.wmt import wmt_applicable, wmt_measures  # noqa: F401  (re-exported)


def analyse(d: EvalData, st: Settings, progress: bool = True, notes: list[str] | None = None) -> Results:
    """Every level and protocol of the report, one named step each (the report's sections in this order).

    What cannot be computed on these records is named in ``Results.undefined`` with its reason: too few rated
    outputs (instance level), too few systems (system level), one system (pairwise differences), ratings that do
    not vary, a per-system table (one record per system)."""
    notes = list(notes or [])
    check_system_names(d.systems, st, d.human_systems)
    undefined: dict[str, str] = {f"constant:{a}": why for a, why in constant_ratings(d).items()}
    undefined.update({f"constant_metric:{m}": why for m, why in constant_metrics(d).items()})
    scopes = _scopes(d)
    pooled_all = len(d.datasets) > 1
    few = too_few_outputs(d)
    no_instance = bool(few) or d.one_per_system
    if few:
        for key in ("instance", "errors"):
            undefined[key] = few
        if st.permutation_n and len(d.metrics) > 1:
            undefined["perm_both"] = few
        if st.between_datasets and pooled_all:
            undefined["between_datasets"] = few
        rows: list[dict] = []
    elif d.one_per_system:
        for key in ("instance", "item_accuracy", "errors", "perm_both", "between_datasets"):
            undefined[key] = ONE_PER_SYSTEM
        rows = []
    else:
        rows = instance_correlations(d, st, progress)
        if st.per_system and "none" in st.protocols and len(d.systems) > 1 and \
                not any(int((d.system == x).sum()) >= 3 for x in d.systems):
            undefined["per_system"] = "fewer than 3 outputs in every system, so no correlation within a system"
    sys_rows, system_means_df, sys_acc = system_level(d, st, scopes, pooled_all, notes, undefined)
    wmt_rows, clusters = [], pd.DataFrame()  # the WMT metrics-task view (acc23, SPA, rank clusters)
    if st.wmt:
        why_not = few or wmt_applicable(d)
        if why_not:
            undefined["wmt"] = why_not
        else:
            wmt_rows, clusters = wmt_measures(d, st, notes, progress)
    corr = adjust_across_metrics(pd.DataFrame(rows + sys_rows + wmt_rows, columns=list(CORR_COLUMNS)), st)
    errors = pd.DataFrame() if no_instance else error_measures(d, st, scopes)
    item_acc = pd.DataFrame() if d.one_per_system else item_accuracy(d, scopes)
    williams = williams_tests(d, st, scopes, pooled_all, instance=not no_instance)
    perm = pd.DataFrame() if no_instance else perm_both_tests(d, st, progress)
    between = pd.DataFrame() if no_instance else between_datasets(d, st)
    # pairwise system differences (Reiter & Belz 2009, Table 9)
    sp_rows, pred_rows = _system_pairs(d, st, notes, undefined)
    conf = confounds(d, st, scopes, pooled_all, undefined, instance=not no_instance)
    agree, alpha, ceiling = human_agreement(d, st, scopes, pooled_all, undefined)
    return Results(st, corr, nan_counts(d), errors, system_means_df, sys_acc, item_acc, williams, perm, between,
                   sp_rows, pred_rows, notes, conf, agree, alpha, undefined, ceiling=ceiling, rank_clusters=clusters)
