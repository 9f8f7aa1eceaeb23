"""Meta-evaluation: how well do metrics agree with human judgments? (``python evaluate.py`` / ``qe evaluate``)

* :mod:`qe.evaluation.stats` -- correlations, error measures, Williams / Fisher z / PERM-BOTH tests, bootstrap,
  corrections, pairwise accuracy (scipy / statsmodels where they implement a statistic);
* :mod:`qe.evaluation.scoring` -- score a rated dataset with scorers (checkpointed ``scores.jsonl``) and collect
  the metric columns shipped with the records;
* :mod:`qe.evaluation.analysis` -- every level (instance / summary / system: mean of instance scores and
  corpus-level score) and protocol of a report, confounds (length, sentence count), human agreement, and what is
  undefined;
* :mod:`qe.evaluation.wmt` -- the WMT metrics-task measures: tie-calibrated pairwise accuracy (acc23 / tau23,
  Deutsch et al. 2023), soft pairwise accuracy (SPA, Thompson et al. 2024), system-level pairwise accuracy (Kocmi
  et al. 2021), PERM-BOTH with any measure, and rank clusters as the WMT 2023 / 2024 tables show them;
* :mod:`qe.evaluation.report`, :mod:`qe.evaluation.plots` -- ``report.md`` and its figures;
* :mod:`qe.evaluation.runner` -- the one command (Hydra config ``conf/evaluate.yaml``).

Submodules are imported on use so that ``import qe`` stays cheap.
"""
from __future__ import annotations

__all__ = ["run_evaluation", "evaluate_records"]


def __getattr__(name):
    if name in __all__:
        from qe.evaluation import runner

        return getattr(runner, name)
    raise AttributeError(name)
