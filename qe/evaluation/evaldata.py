"""What every level of the meta-evaluation shares: the settings (:class:`Settings`), the scores and ratings of one
evaluation (:class:`EvalData`, built by :func:`build_eval_data`), the results container (:class:`Results`), per-system
units and means, the rules that say when a statistic is undefined (too few outputs, units or groups; constant scores
or ratings) and the correction for multiple comparisons across metrics. The statistics themselves are in
:mod:`qe.evaluation.instance`, :mod:`qe.evaluation.system`, :mod:`qe.evaluation.compare`,
:mod:`qe.evaluation.confounds` and :mod:`qe.evaluation.agreement`; :func:`qe.evaluation.analysis.analyse` runs them.
"""
from __future__ import annotations

import logging
import math
import re
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
    #: the WMT metrics-task measures (qe.evaluation.wmt): acc23, SPA, system pairwise accuracy, rank clusters
    wmt: bool = True
    #: permutations of each SPA paired permutation test (Thompson et al. 2024; mt-metrics-eval's 1,000)
    spa_permutations: int = 1000
    #: above this many pairs an acc23 is computed on a seeded random sample of ``wmt_sample_pairs`` pairs
    wmt_max_pairs: int = 100_000_000
    wmt_sample_pairs: int = 5_000_000

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
        for key, value, least in (("stats.bootstrap.n", self.bootstrap_n, 0),  # 0: no bootstrap CI
                                  ("stats.permutation.n", self.permutation_n, 0),  # 0: no permutation test
                                  ("stats.agreement.draws", self.agreement_draws, 0),
                                  ("stats.wmt.spa_permutations", self.spa_permutations, 1),
                                  ("stats.min_group_size", self.min_group_size, 2)):
            if int(value) < least:  # a negative count used to fail late, inside scipy, or run a default silently
                raise ValueError(f"{key} must be at least {least}, got {value!r}")
        if not 0.0 < float(self.ci) < 1.0:
            raise ValueError(f"stats.bootstrap.ci must be in (0, 1), got {self.ci!r}")
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
        if min(self.spa_permutations, self.wmt_max_pairs, self.wmt_sample_pairs) < 1:
            raise ValueError("stats.wmt.spa_permutations, max_pairs and sample_pairs must be at least 1, got "
                             f"{self.spa_permutations!r}, {self.wmt_max_pairs!r}, {self.wmt_sample_pairs!r}")
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


#: an output longer than this (characters) has its sentences counted chunk by chunk (:func:`count_sentences`):
#: pysbd's time grows with the square of a text's length (a 1 MB output ran for minutes); chunks keep it linear
SENTENCE_CHUNK_CHARS = 3_000


#: a text pysbd cannot split: no sentence-final punctuation (Latin or CJK), ellipsis, parenthesis (list items such as
#: "a)" or "1)"), bullet or line break anywhere but one final ``.``, ``!`` or ``?``. Most segment-level outputs (MT,
#: one-sentence NLG) are such texts; :func:`count_sentences` gives them 1 without running pysbd, as pysbd does
ONE_SENTENCE = re.compile(r"[^.!?\u3002\uff0e\uff01\uff1f\u2026()\u2022\u2043\r\n]*[.!?]?")


def count_sentences(text: str, splitter: str = "pysbd") -> int:
    """Number of sentences of ``text`` (:func:`qe.core.text.split_sentences`). A text longer than
    :data:`SENTENCE_CHUNK_CHARS` is split a chunk at a time, so that the time is linear in its length: a chunk of at
    most that many characters (cut at a space) is split, every sentence but its last is counted, and the next chunk
    starts where that last sentence starts (it may go on past the cut). The boundaries are the splitter's own, so the
    count is the whole text's except where the splitter would decide differently with more than a chunk of context;
    one sentence longer than a chunk is counted in pieces. Shorter texts are split whole, exactly as before."""
    from qe.core import text as T

    if not text.strip():
        return 0
    if splitter == "pysbd" and len(text) <= SENTENCE_CHUNK_CHARS and ONE_SENTENCE.fullmatch(text.strip()):
        return 1  # nothing pysbd could split at (tested against pysbd): 0.5 ms saved per output
    if splitter == "newline" or len(text) <= SENTENCE_CHUNK_CHARS:
        return len(T.split_sentences(text, splitter))
    flat = re.sub(r"\s+", " ", text).strip()
    n, start = 0, 0
    while True:
        piece = flat[start:start + SENTENCE_CHUNK_CHARS]
        if start + len(piece) >= len(flat):
            return n + len(T.split_sentences(piece, splitter))
        space = piece.rfind(" ")
        piece = piece[:space] if space > 0 else piece  # never cut inside a word (unless the chunk has no space)
        sents = T.split_sentences(piece, splitter)
        at = piece.rfind(sents[-1]) if len(sents) > 1 else -1
        if at > 0:  # the last sentence may run on past the cut: the next chunk starts with it
            n, start = n + len(sents) - 1, start + at
        else:
            n, start = n + len(sents), start + len(piece)


def covariates_of(outputs: list[str], splitter: str = "pysbd", notes: list[str] | None = None,
                  progress: bool = False) -> dict[str, np.ndarray]:
    """Length in whitespace words (the ``length`` baseline's unit) and sentence count (:func:`count_sentences`)
    of each output; empty when no output has text. An output counted in chunks is said in ``notes``. An output that
    occurs more than once is split once. ``progress``: a bar over the outputs (sentence splitting is the slow part
    of a large rated set)."""
    from tqdm.auto import tqdm

    length = np.array([len(o.split()) for o in outputs], float)
    if not length.any():
        return {}
    seen: dict[str, int] = {}
    sents = np.empty(len(outputs))
    for i, o in enumerate(tqdm(outputs, desc="sentence counts", unit="output", leave=False,
                               disable=not progress or len(outputs) < 50_000)):
        c = seen.get(o)
        if c is None:
            c = seen[o] = count_sentences(o, splitter)
        sents[i] = c
    del seen
    long = sum(len(o) > SENTENCE_CHUNK_CHARS for o in outputs) if splitter != "newline" else 0
    if long and notes is not None:
        notes.append(f"{_plural(long, 'output')} longer than {SENTENCE_CHUNK_CHARS:,} characters: for the sentence "
                     f"count (a confound covariate) {'it was' if long == 1 else 'they were'} split into chunks of at "
                     f"most {SENTENCE_CHUNK_CHARS:,} characters, each ending at a sentence boundary of the splitter, "
                     "so that counting takes linear time.")
    return {"length": length, "sentences": sents}


def rating_scale(value, key: str) -> tuple[float, float] | None:
    """``[low, high]`` from a config as two floats (None when not set); anything else is an error naming ``key``."""
    from qe.evaluation.scoring import EvaluationConfigError

    if value is None or (isinstance(value, (list, tuple)) and not value):
        return None
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise EvaluationConfigError(f"{key}={value!r}: give the rating scale as [low, high], e.g. [1, 5]") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise EvaluationConfigError(f"{key}=[{lo:g}, {hi:g}]: give the rating scale as [low, high] with low < high, "
                                    "both finite")
    return lo, hi


def check_rating_range(records, scale: tuple[float, float] | None, key: str, aspects: Iterable[str] | None = None,
                       source: str = "<records>") -> None:
    """Every finite rating of ``aspects`` (all when None; per-annotator ratings ``aspect@who`` included) lies in
    ``scale`` (bounds included). The first one outside is an error naming the records' source, the record's id, the
    field, the value and the range, with the number of others outside: a scale the ratings do not fit makes every
    MAE / RMSE "on [low, high]" wrong. NaN (missing) and infinite ratings (treated as missing, said in the notes)
    are not checked."""
    from qe.evaluation.scoring import EvaluationConfigError

    if scale is None:
        return
    lo, hi = scale
    wanted = set(aspects) if aspects else None
    first, count = None, 0
    for r in records:
        for k, v in r.ratings.items():
            if wanted is not None and k.split("@", 1)[0] not in wanted:
                continue
            if v is None or not math.isfinite(v) or lo <= v <= hi:
                continue
            count += 1
            if first is None:
                first = (r.id, k, v)
    if first is not None:
        rid, k, v = first
        more = f" ({count - 1} more rating{'' if count == 2 else 's'} outside it)" if count > 1 else ""
        raise EvaluationConfigError(f"{source}: record id={rid!r}: field 'ratings.{k}' = {v:g} is outside {key} "
                                    f"[{lo:g}, {hi:g}]{more}; fix the rating or set {key} to the scale the ratings "
                                    "use")


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
                    optional_human_systems: Iterable[str] | None = None, progress: bool = False) -> EvalData:
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
        covariates=covariates_of([r.output for r in records], sentence_splitter, notes, progress) if confounds else {},
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
    #: metrics ranked by SPA and by acc23 in significance clusters (qe.evaluation.wmt.wmt_measures)
    rank_clusters: pd.DataFrame = field(default_factory=pd.DataFrame)


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
                ci_valid=0, why="", epsilon=math.nan)
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


def _constant_columns(columns: dict[str, np.ndarray], empty: str, constant: str) -> dict[str, str]:
    """``{name: why}`` for columns with no value at all (``empty.format(name=...)``) or one value throughout
    (``constant.format(name=..., value=...)``)."""
    out = {}
    for name, v in columns.items():
        vv = v[~np.isnan(v)]
        if vv.size == 0:
            out[name] = empty.format(name=name)
        elif vv.size >= 2 and float(np.ptp(vv)) == 0.0:
            out[name] = constant.format(name=name, value=f"{float(vv[0]):g}")
    return out


def constant_metrics(d: EvalData) -> dict[str, str]:
    """Metrics that cannot correlate with anything: no score at all, or one score for every output."""
    return _constant_columns(d.metrics, "the metric `{name}` has no score (every score is missing)",
                             "every `{name}` score is {value}: a constant metric cannot correlate with a rating or "
                             "order outputs or systems")


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
    return _constant_columns(d.ratings, "no record has a value for the rating `{name}`",
                             "every `{name}` rating is {value}: ratings that do not vary cannot correlate with a metric "
                             "or tell systems apart")


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


def adjust_across_metrics(corr: pd.DataFrame, st: Settings) -> pd.DataFrame:
    """``p_adj``: p-values corrected across the metrics of one column (level, protocol, subset, rating, method);
    ``significant``: ``p_adj < alpha``."""
    corr["p_adj"] = np.nan
    if len(corr):
        for _, idx in corr.groupby(["level", "protocol", "subset", "rating", "method"], sort=False).groups.items():
            corr.loc[idx, "p_adj"] = S.adjust_pvalues(corr.loc[idx, "p"].to_numpy(float), st.correction)
    corr["significant"] = corr["p_adj"] < st.alpha
    return corr
