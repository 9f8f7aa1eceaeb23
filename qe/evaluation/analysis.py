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

import itertools
import logging
import math
import warnings
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
    #: partial correlations controlling for length / sentence count, within-length-bin correlations, flags
    confounds: bool = True
    confound_method: str = "spearman"
    length_bins: int = 5
    #: a metric's correlation counts as explained by a confound when |partial| < flag_ratio * |raw| (raw significant)
    flag_ratio: float = 0.5
    #: ... or when |rho(metric, length)| or |rho(metric, sentence count)| >= flag_length_rho
    flag_length_rho: float = 0.5
    sentence_splitter: str = "pysbd"
    #: named subsets of systems for the system level: {name: [system, ...]}
    system_sets: dict = field(default_factory=dict)
    #: significant system differences given as input: [{rating, better, worse, dataset}] or "A>B" strings
    significant_pairs: list = field(default_factory=list)
    #: system level also on each system's corpus-level score (scorers with a pooled corpus_score)
    corpus_level: bool = True
    #: random draws of annotators averaged by the one-vs-rest and split-half agreement estimators
    agreement_draws: int = 100

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
        if self.confound_method not in ("pearson", "spearman"):
            raise ValueError(f"stats.confounds.method must be pearson or spearman, got {self.confound_method!r}")
        for name, systems in (self.system_sets or {}).items():
            if isinstance(systems, str) or not all(isinstance(x, str) for x in systems or []):
                raise ValueError(f"stats.system_sets.{name} must be a list of system names, got {systems!r}")
            if not systems:
                raise ValueError(f"stats.system_sets.{name} is empty; give the system names it holds")
        if self.agreement_draws < 1:
            raise ValueError(f"stats.agreement.draws must be at least 1, got {self.agreement_draws!r}")
        self.significant_pairs = [parse_pair(x) for x in (self.significant_pairs or [])]


def parse_pair(x) -> dict:
    """One externally given significant difference: ``"A>B"`` (every rating aspect, every dataset) or a mapping
    ``{better: A, worse: B, rating: optional, dataset: optional}``."""
    if isinstance(x, str):
        if ">" not in x:
            raise ValueError(f"stats.significant_pairs: {x!r} is not of the form 'better>worse'")
        a, b = (v.strip() for v in x.split(">", 1))
        return {"better": a, "worse": b, "rating": None, "dataset": None}
    x = dict(x)
    if not x.get("better") or not x.get("worse"):
        raise ValueError(f"stats.significant_pairs: {x!r} needs 'better' and 'worse' system names")
    unknown = set(x) - {"better", "worse", "rating", "dataset"}
    if unknown:
        raise ValueError(f"stats.significant_pairs: unknown key(s) {sorted(unknown)} in {x!r}")
    return {"better": str(x["better"]), "worse": str(x["worse"]), "rating": x.get("rating"), "dataset": x.get("dataset")}


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
    #: per-output confound covariates: "length" (whitespace words), "sentences" (sentence count); empty when the
    #: records have no output text
    covariates: dict[str, np.ndarray] = field(default_factory=dict)
    #: per-annotator ratings: aspect -> (n outputs, annotators) array (NaN = not rated), from keys aspect@annotator
    annotations: dict[str, np.ndarray] = field(default_factory=dict)
    #: corpus-level score per (dataset, system), for scorers with a pooled corpus_score: metric -> {unit: score}
    corpus: dict[str, dict[tuple[str, str], float]] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.ids.size)

    def outputs_per_unit(self) -> np.ndarray:
        """Number of records of each (dataset, system) unit."""
        return pd.Series(list(zip(self.dataset, self.system))).value_counts().to_numpy()

    @property
    def one_per_system(self) -> bool:
        """Every system has one record per dataset: the records are a per-system table (system-level scores)."""
        return self.n > 0 and int(self.outputs_per_unit().max()) == 1

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


def covariates_of(outputs: list[str], splitter: str = "pysbd") -> dict[str, np.ndarray]:
    """Length in whitespace words (the ``length`` baseline's unit) and sentence count (:func:`qe.core.text.split_sentences`)
    of each output; empty when no output has text."""
    from qe.core.text import split_sentences

    length = np.array([len(o.split()) for o in outputs], float)
    if not length.any():
        return {}
    sents = np.array([len(split_sentences(o, splitter)) if o.strip() else 0 for o in outputs], float)
    return {"length": length, "sentences": sents}


def _finite_or_nan(values, what: str, notes: list[str] | None) -> np.ndarray:
    """``values`` as floats with +-inf as NaN (a correlation, mean or fit has no place for an infinite score; in
    scores.jsonl it stays "inf" / "-inf"); the count is said in the report's notes."""
    v = np.asarray(values, float)
    inf = np.isinf(v)
    if not inf.any():
        return v
    if notes is not None:
        notes.append(f"{what}: {int(inf.sum())} infinite value(s) treated as missing (dropped pairwise like NaN).")
    return np.where(inf, np.nan, v)


def build_eval_data(records, metrics: dict[str, np.ndarray], info: dict[str, MetricInfo],
                    ratings: list[str] | None = None, item_key: str | None = "mr",
                    human_systems: Iterable[str] | None = None, rating_range=None,
                    dataset_name: str = "<dataset>", confounds: bool = True, sentence_splitter: str = "pysbd",
                    corpus: dict | None = None, notes: list[str] | None = None,
                    optional_human_systems: Iterable[str] | None = None) -> EvalData:
    """Align records, ratings and metric scores; check that the asked-for rating columns and item field exist.

    Rating keys ``<aspect>@<annotator>`` are per-annotator ratings: they feed Krippendorff's alpha and, where a
    record has no plain ``<aspect>`` rating, its mean over annotators is the aspect's rating.

    ``human_systems`` must name systems in the records (:func:`analyse` raises an error naming any other),
    except those also listed in ``optional_human_systems``: human systems a dataset may or may not load (the
    WebNLG reference, present only with ``include_reference=true``). An absent optional one is said in the notes."""
    from qe.evaluation.scoring import EvaluationConfigError

    present: list[str] = []
    annotators: dict[str, list[str]] = {}
    for r in records:
        for k in r.ratings:
            if "@" in k:
                a, who = k.split("@", 1)
                annotators.setdefault(a, [])
                if who not in annotators[a]:
                    annotators[a].append(who)
                k = a
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
    metrics = {m: _finite_or_nan(v, f"metric {m!r}", notes) for m, v in metrics.items()}
    item = None
    if item_key:
        vals = []
        for r in records:
            v = getattr(r, item_key, None) if item_key in ("mr", "source", "id", "output") else r.extra.get(item_key)
            if v is None or (isinstance(v, str) and not v.strip()):
                vals = None
                msg = f"item_key={item_key!r}: record {r.id!r} has no such field, so there is no item-level protocol"
                if notes is not None:  # said in the report's notes; no log line (nothing on the console)
                    notes.append(msg + ".")
                break
            vals.append(f"{r.dataset}\x1f{v}")  # items never cross datasets
        if vals is not None:
            item = np.array(vals, dtype=object)
    annotations = {a: np.array([[r.ratings.get(f"{a}@{w}", math.nan) for w in annotators[a]] for r in records], float)
                   for a in aspects if a in annotators}
    rating_cols = {}
    for a in aspects:
        v = np.array([r.ratings.get(a, math.nan) for r in records], float)
        if a in annotations:
            ann = annotations[a]
            has = (~np.isnan(ann)).any(axis=1)
            mean = np.full(len(records), math.nan)
            mean[has] = np.nanmean(ann[has], axis=1)
            v = np.where(np.isnan(v), mean, v)
        rating_cols[a] = _finite_or_nan(v, f"rating {a!r}", notes)
    present_systems = {r.system if r.system is not None else "(none)" for r in records}
    optional = list(dict.fromkeys(optional_human_systems or []))
    human = list(dict.fromkeys(list(human_systems or []) + optional))
    absent = [s for s in optional if s not in present_systems]
    if absent and notes is not None:
        notes.append(f"Human system(s) {', '.join(absent)} (dataset.optional_human_systems) not in these records, so "
                     "there is no 'excluding human' set" + (" for them" if len(absent) < len(human) else "") + ".")
    human = [s for s in human if s not in absent]
    return EvalData(
        ids=np.array([r.id for r in records], dtype=object),
        system=np.array([r.system if r.system is not None else "(none)" for r in records], dtype=object),
        dataset=np.array([r.dataset if r.dataset is not None else dataset_name for r in records], dtype=object),
        item=item,
        ratings=rating_cols,
        metrics=metrics, info=info, human_systems=human,
        rating_range=tuple(rating_range) if rating_range else None,
        covariates=covariates_of([r.output for r in records], sentence_splitter) if confounds else {},
        annotations=annotations, corpus=dict(corpus or {}))


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
    confounds: pd.DataFrame = field(default_factory=pd.DataFrame)
    agreement: pd.DataFrame = field(default_factory=pd.DataFrame)
    alpha: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: section -> why it is not computed ("undefined (reason)" in the report, said once)
    undefined: dict[str, str] = field(default_factory=dict)
    #: agreement among the annotators of each criterion (the human ceiling): :func:`human_ceiling`
    ceiling: pd.DataFrame = field(default_factory=pd.DataFrame)


def _seed(base: int, *key: Any) -> int:
    return (int(base) + zlib.crc32("|".join(map(str, key)).encode())) % (2**32)


def _subsets(d: EvalData, per_system: bool) -> list[tuple[str, np.ndarray]]:
    out = [("all", np.ones(d.n, bool))]
    if len(d.datasets) > 1:
        out += [(f"dataset={x}", d.dataset == x) for x in d.datasets]
    if per_system and len(d.systems) > 1:
        # a correlation within one system needs at least 3 of its outputs
        out += [(f"system={x}", d.system == x) for x in d.systems if int((d.system == x).sum()) >= 3]
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
    frame = pd.DataFrame({"unit": units[mask], "system": d.system[mask], "dataset": d.dataset[mask]})
    for a, v in d.ratings.items():
        frame[f"rating:{a}"] = v[mask]
    for m, v in d.metrics.items():
        frame[f"metric:{m}"] = v[mask]
    for c, v in d.covariates.items():
        frame[f"covariate:{c}"] = v[mask]
    g = frame.groupby("unit", sort=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a unit whose scores are all NaN has a NaN mean
        out = g.mean(numeric_only=True)
    out.insert(0, "n", g.size())
    out.insert(0, "dataset", g["dataset"].first())
    out.insert(0, "system", g["system"].first())
    return out


def corpus_column(d: EvalData, means: pd.DataFrame, metric: str) -> np.ndarray:
    """The corpus-level score of ``metric`` for each unit (row) of ``means``; NaN where none was computed."""
    table = d.corpus.get(metric, {})
    return np.array([table.get((ds, sy), math.nan) for ds, sy in zip(means["dataset"], means["system"])], float)


def _corr_row(**kw) -> dict:
    base = dict(level="", protocol="", subset="", units="", rating="", metric="", method="", r=math.nan,
                p=math.nan, p_kind="", n=0, n_dropped=0, groups_skipped=0, ci_low=math.nan, ci_high=math.nan,
                ci_valid=0, why="")
    base.update(kw)
    return base


#: the columns of ``Results.correlations`` (present even when no correlation is defined, e.g. one record)
CORR_COLUMNS = tuple(_corr_row())

#: the fewest rated outputs (instance level) or units (system level) a correlation needs
MIN_CORRELATION_N = 3


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else ("es" if word.endswith("s") else "s"))


#: why instance-level statistics are skipped for a per-system table
ONE_PER_SYSTEM = ("one rating per system: the records are a per-system table, so the instance level is the system "
                  "level (see System level)")


def rated_outputs(d: EvalData) -> int:
    """The most outputs any one rating aspect has a value for (NaN ratings do not count)."""
    return max((int((~np.isnan(v)).sum()) for v in d.ratings.values()), default=0)


def too_few_outputs(d: EvalData) -> str | None:
    """Why instance-level statistics are undefined on a tiny file (fewer than 3 rated outputs), or None."""
    n = rated_outputs(d)
    if n >= MIN_CORRELATION_N:
        return None
    return (f"only {_plural(n, 'rated output')}; a correlation, the fitted error measures and the metric-vs-metric "
            f"tests need at least {MIN_CORRELATION_N}")


def too_few_units(d: EvalData, n_units: int, pooled: bool) -> str | None:
    """Why the system level is undefined (fewer than 3 systems, or dataset/system pairs when datasets are pooled),
    or None."""
    if n_units >= MIN_CORRELATION_N:
        return None
    if d.systems == ["(none)"] and not pooled:
        what = "1 system: the records have no `system` field, so all outputs count as one system"
    elif pooled:
        what = _plural(n_units, "dataset/system pair") + (" (the records have no `system` field)"
                                                          if d.systems == ["(none)"] else "")
    else:
        what = _plural(n_units, "system")
    return f"{what}; a system-level correlation needs at least {MIN_CORRELATION_N}"


def why_undefined(x, h, metric: str, rating: str, n_min: int = MIN_CORRELATION_N) -> str:
    """Why a correlation of ``x`` (metric) with ``h`` (rating) is undefined here, or "" when it is defined:
    too few complete pairs, a constant metric, a constant rating."""
    x, h = S.complete_pairs(x, h)
    if x.size < n_min:
        return f"{_plural(int(x.size), 'complete pair')} (metric and rating both present); a correlation needs {n_min}"
    if S._is_constant(x):
        return f"`{metric}` is constant here (every score is {float(x[0]):g}), so it cannot correlate with anything"
    if S._is_constant(h):
        return f"`{rating}` is constant here (every rating is {float(h[0]):g})"
    return ""


def _why_grouped(x, h, metric: str, rating: str, st: Settings) -> str:
    """Why an averaged (per system / per item) correlation is undefined: a constant side over the whole scope,
    else no group with enough outputs in which both sides vary."""
    why = why_undefined(x, h, metric, rating)
    return why or (f"no group has {st.min_group_size} or more outputs in which both `{metric}` and `{rating}` vary")


def constant_metrics(d: EvalData) -> dict[str, str]:
    """Metrics that cannot correlate with anything: no score at all, or one score for every output."""
    out = {}
    for m, v in d.metrics.items():
        vv = v[~np.isnan(v)]
        if vv.size == 0:
            out[m] = f"the metric `{m}` has no score (every score is missing)"
        elif vv.size >= 2 and float(np.ptp(vv)) == 0.0:
            out[m] = (f"every `{m}` score is {float(vv[0]):g}: a constant metric cannot correlate with a rating or "
                      "order outputs or systems")
    return out


def check_system_names(systems: Iterable[str], st: Settings, human_systems: Iterable[str] = ()) -> None:
    """Every system named in ``stats.system_sets`` and ``human_systems`` is one of ``systems`` (those of the
    records); a misspelt name is an error naming it (and the closest names), never a silently smaller set."""
    import difflib

    from qe.evaluation.scoring import EvaluationConfigError

    known = sorted(set(systems))

    def unknown_msg(what: str, names: list[str]) -> str:
        hints = []
        for x in names:
            close = difflib.get_close_matches(x, known, n=2, cutoff=0.6)
            if close:
                hints.append(f"{x!r}: did you mean {' or '.join(repr(c) for c in close)}?")
        return (f"{what}: system(s) {names} not in the data" + (f" ({'; '.join(hints)})" if hints else "")
                + f"; its systems are: {known}")

    for name, systems in (st.system_sets or {}).items():
        missing = [x for x in systems if x not in known]
        if missing:
            raise EvaluationConfigError(unknown_msg(f"stats.system_sets.{name}", missing))
    missing = [x for x in human_systems if x not in known]
    if missing:
        raise EvaluationConfigError(unknown_msg("dataset.human_systems", missing)
                                    + " (a human system a dataset may leave out belongs in dataset.optional_human_systems)")


def constant_ratings(d: EvalData) -> dict[str, str]:
    """Rating aspects that cannot correlate with anything: no value at all, or one value in every rated output."""
    out = {}
    for a, v in d.ratings.items():
        vv = v[~np.isnan(v)]
        if vv.size == 0:
            out[a] = f"no record has a value for the rating `{a}`"
        elif vv.size >= 2 and float(np.ptp(vv)) == 0.0:
            out[a] = (f"every `{a}` rating is {float(vv[0]):g}: ratings that do not vary cannot correlate with a metric "
                      "or tell systems apart")
    return out


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
    corr = adjust_across_metrics(pd.DataFrame(rows + sys_rows, columns=list(CORR_COLUMNS)), st)
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
                   sp_rows, pred_rows, notes, conf, agree, alpha, undefined, ceiling=ceiling)


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
                            metric=m, method=meth, r=c.r, p=c.p, p_kind=c.p_kind, n=c.n, n_dropped=dropped,
                            why=why_undefined(x, h, m, a) if math.isnan(c.r) else "")
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
                rows += _flatten_rows(d, st, m, a, subsets)
            rows += _grouped_rows(d, st, m, a, scopes, pooled_all)
            bar.update(1)
    bar.close()
    return rows


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


# ---- confounds ------------------------------------------------------------------------------------------------
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


# ---- human agreement ------------------------------------------------------------------------------------------
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
