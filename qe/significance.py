"""System-level scores, confidence intervals and paired significance tests for any qe scorer.

    from qe.significance import compare_systems, system_score
    results = compare_systems(qe.load("bleu"), {"base": hyps_a, "new": hyps_b}, refs=refs, test="bs")

Two tests, as sacrebleu offers them (``--paired-bs`` / ``--paired-ar``):

* **paired bootstrap resampling** (Koehn 2004): ``n`` resamples of the test items with replacement, the same
  resample for the baseline and each system; p = (#{resamples where |Δ| - mean|Δ| > |Δ observed|} + 1) / (n + 1).
  The system's 95 % CI comes from the same resamples.
* **approximate randomization** (Riezler & Maxwell 2005): ``n`` trials that swap each item's two outputs with
  probability 1/2; p = (#{trials where |Δ shuffled| > |Δ observed|} + 1) / (n + 1). The CI comes from a separate
  bootstrap of ``ar_confidence`` resamples (0: 1,000; -1: none).

What is resampled depends on the metric:

* **sacrebleu's metrics** (``bleu``/``bleu-N``, ``chrf``/``chrf++``, ``ter`` in ``native`` mode) go to sacrebleu's own
  ``PairedTest`` on their corpus-level definition, so scores, CIs and p-values equal ``sacrebleu --paired-bs`` /
  ``--paired-ar`` with the same seed and number of resamples (qe reports them on its 0-1 scale: sacrebleu's / 100).
* **other corpus-level metrics** (NIST-5: ``CORPUS == "pooled"``) are recomputed on every resample from their
  per-output sufficient statistics (NIST's information weights stay those of the whole test set's references).
* **every other scorer** (learned metrics, ROUGE, METEOR, ...): the statistic is the mean of the instance scores,
  recomputed on every resample. Items where any compared system scores NaN are left out of every system (the
  comparison stays paired); the result says how many items were used.

The random generator is numpy's ``default_rng(seed)`` drawn in sacrebleu's order; the CI is sacrebleu's: half the
width between the 2.5 % and 97.5 % order statistics of the resampled scores, around their mean.

One deliberate difference: when a system's score equals the baseline's (identical outputs, say), sacrebleu's
formula gives p = 1 / (n + 1) — "significant" (sacrebleu 2.6 prints ``p = 0.0010*`` for a file compared with a
copy of itself). A zero observed difference is no evidence of a difference, so qe reports p = 1.0 there; every
other p-value is sacrebleu's.
"""
from __future__ import annotations

import contextlib
import math
import os
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import numpy as np

DEFAULT_SAMPLES = {"bs": 1000, "ar": 10000}
DEFAULT_SEED = 12345
TESTS = ("bs", "ar")


@dataclass
class SystemResult:
    """One system's line of a comparison or a system-level table."""

    system: str
    score: float
    #: mean of the resampled scores and the half-width of their 95 % interval (sacrebleu's ``mean ± ci``)
    mean: float | None = None
    ci: float | None = None
    #: paired test against the baseline (None for the baseline itself)
    p_value: float | None = None
    #: items the figures use
    n: int = 0
    baseline: bool = False
    #: the library's own signature of the figure where an external library computed it (sacrebleu's
    #: ``nrefs:2|bs:1000|seed:12345|case:mixed|eff:no|...``, as ``sacrebleu --paired-bs`` prints it)
    library_signature: str | None = None

    @property
    def ci_interval(self) -> tuple[float, float] | None:
        if self.mean is None or self.ci is None:
            return None
        return (self.mean - self.ci, self.mean + self.ci)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ci"] = None if self.ci_interval is None else list(self.ci_interval)
        d["ci_halfwidth"] = self.ci
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def estimate_ci(scores: np.ndarray) -> tuple[float, float]:
    """(mean, half-width of the central 95 % of ``scores``), with sacrebleu's order statistics (n // 40). Resamples
    whose score is undefined (NaN: a pooled slot error rate over items without a checkable fact) are left out; with
    none left, (NaN, NaN)."""
    s = np.asarray(scores, dtype=float)
    s = np.sort(s[np.isfinite(s)])
    n = len(s)
    if n == 0:
        return float("nan"), float("nan")
    lo = n // 40
    return float(s.mean()), float(0.5 * (s[n - lo - 1] - s[lo]))


def p_value(sample_stats: np.ndarray, observed: float) -> float:
    """(#{sample_stats > observed} + 1) / (len + 1): never 0, so a test can never claim more than its trials show."""
    c = int(np.sum(np.asarray(sample_stats) > observed))
    return (c + 1) / (len(sample_stats) + 1)


# ------------------------------------------------------------------------------------------ set statistics
@dataclass
class SetStatistic:
    """Per-item sufficient statistics (n items x k) and the function that turns their sum into the set's score."""

    stats: np.ndarray
    #: summed statistics (rows x k) -> scores (rows)
    value: Callable[[np.ndarray], np.ndarray]
    kind: str  # "mean" | "pooled"

    def score(self, idx: np.ndarray | None = None) -> float:
        s = self.stats if idx is None else self.stats[idx]
        return float(self.value(s.sum(0, keepdims=True))[0])

    def resampled(self, idx: np.ndarray, chunk: int = 200) -> np.ndarray:
        """Scores of the sets ``stats[idx[r]]`` for each row r of ``idx`` (chunks bound the memory)."""
        out = [self.value(self.stats[idx[i:i + chunk]].sum(1)) for i in range(0, len(idx), chunk)]
        return np.concatenate(out) if out else np.zeros(0)

    def mixed(self, other: "SetStatistic", take_self: np.ndarray) -> np.ndarray:
        """Scores of the sets that take item j from ``self`` where ``take_self[r, j]`` and from ``other`` elsewhere."""
        sel = take_self.astype(self.stats.dtype)
        summed = sel @ self.stats + (1 - sel) @ other.stats
        return self.value(summed)


def _mean_value(summed: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return summed[:, 0] / summed[:, 1]


def mean_statistic(instance_scores: Sequence[float]) -> SetStatistic:
    """The mean of instance scores as a set statistic (NaN items must have been removed by the caller)."""
    x = np.asarray(instance_scores, dtype=float)
    return SetStatistic(np.stack([x, np.ones_like(x)], axis=1), _mean_value, "mean")


def pooled_statistic(scorer: Any, outputs: Sequence[str], refs: Sequence[Any]) -> SetStatistic | None:
    """Sufficient statistics of a corpus-level (``CORPUS == "pooled"``) metric that exposes them (NIST), else None."""
    if getattr(scorer, "CORPUS", None) != "pooled" or not hasattr(scorer, "_stats") or not hasattr(scorer, "_from_stats"):
        return None
    from qe.core.inputs import normalise_refs

    rr = scorer._clean_refs(normalise_refs(refs, len(outputs)))
    if not all(rr):
        return None
    hyps = [scorer.preprocess(o) for o in outputs]
    prefs = [[scorer.preprocess(x) for x in r] for r in rr]
    scorer.prepare(hyps, prefs)
    st = np.stack([scorer._stats(h, r) for h, r in zip(hyps, prefs)])

    def value(summed: np.ndarray) -> np.ndarray:
        return np.array([scorer._from_stats(row) for row in summed])

    return SetStatistic(st, value, "pooled")


# ---------------------------------------------------------------------------------------------- sacrebleu
def sacrebleu_metric(scorer: Any):
    """The sacrebleu ``Metric`` whose corpus score ``scorer.corpus_score`` is (BLEU, chrF, TER), else None."""
    fn = getattr(scorer, "corpus_metric", None)
    return fn() if fn is not None else None


def _sacre_inputs(scorer: Any, systems: dict[str, list[str]], refs: Sequence[Any]):
    """Preprocessed hypotheses per system and sacrebleu reference streams."""
    from qe.core.inputs import normalise_refs
    from qe.refmetrics.ngram import _ref_streams

    n = len(next(iter(systems.values())))
    rr = scorer._clean_refs(normalise_refs(refs, n))
    if not all(rr):
        i = next(i for i, r in enumerate(rr) if not r)
        raise ValueError(f"{scorer.name}: output {i + 1} has no non-empty reference; sacrebleu's paired tests need "
                         "one for every output")
    prep = getattr(scorer, "corpus_preprocess", lambda t: t)
    hyps = {k: [prep(o) for o in v] for k, v in systems.items()}
    streams = _ref_streams([[prep(x) for x in r] for r in rr])
    return hyps, streams


@contextlib.contextmanager
def _sacrebleu_seed(seed: int | None):
    old = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = "None" if seed is None else str(int(seed))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SACREBLEU_SEED", None)
        else:
            os.environ["SACREBLEU_SEED"] = old


def _sacre_compare(scorer, systems, refs, test, n_samples, seed, ar_confidence) -> list[SystemResult]:
    from sacrebleu.significance import PairedTest

    hyps, streams = _sacre_inputs(scorer, systems, refs)
    metric = sacrebleu_metric(scorer)
    with _sacrebleu_seed(seed):
        pt = PairedTest(list(hyps.items()), {"m": metric}, streams, test_type=test, n_samples=n_samples,
                        n_ar_confidence=ar_confidence, n_jobs=1)
        sigs, res = pt()
    n = len(streams[0])
    lib_sig = next(iter(sigs.values())).format() if sigs else None
    out = []
    key = next(k for k in res if k != "System")  # sacrebleu keys the column by the metric's own name
    for i, (name, r) in enumerate(zip(res["System"], res[key])):
        out.append(SystemResult(
            system=name, score=r.score / 100.0, mean=None if r.mean is None else float(r.mean) / 100.0,
            ci=None if r.ci is None else float(r.ci) / 100.0,
            p_value=None if i == 0 else (1.0 if r.score == res[key][0].score else float(r.p_value)),
            n=n, baseline=i == 0, library_signature=lib_sig))
    return out


# ------------------------------------------------------------------------------------------------ generic
def paired_test(stats: dict[str, SetStatistic], test: str = "bs", n_samples: int = 0, seed: int | None = DEFAULT_SEED,
                ar_confidence: int = 0) -> list[SystemResult]:
    """The first entry of ``stats`` is the baseline; the others are compared with it (same item order)."""
    if test not in TESTS:
        raise ValueError(f"test={test!r}: choose 'bs' (paired bootstrap) or 'ar' (approximate randomization)")
    n_samples = n_samples if n_samples > 0 else DEFAULT_SAMPLES[test]
    conf_n = n_samples if test == "bs" else (DEFAULT_SAMPLES["bs"] if ar_confidence == 0 else ar_confidence)
    names = list(stats)
    base = stats[names[0]]
    n = len(base.stats)
    bl_score = base.score()
    bl_mean = bl_ci = None
    if conf_n > 0 and n:
        idx0 = np.random.default_rng(seed).choice(n, size=(conf_n, n), replace=True)
        bl_mean, bl_ci = estimate_ci(base.resampled(idx0))
    out = [SystemResult(names[0], bl_score, bl_mean, bl_ci, None, n, True)]
    for name in names[1:]:
        st = stats[name]
        rng = np.random.default_rng(seed)
        sys_score = st.score()
        diff = abs(bl_score - sys_score)
        mean = ci = None
        if test == "bs":
            idx = rng.choice(n, size=(n_samples, n), replace=True)
            s_bl, s_sys = base.resampled(idx), st.resampled(idx)
            mean, ci = estimate_ci(s_sys)
            d = np.abs(s_sys - s_bl)
            d = d[np.isfinite(d)]  # resamples where either score is undefined (see estimate_ci) are left out
            p = p_value(d - d.mean(), diff) if len(d) else float("nan")
        else:
            pos = rng.integers(2, size=(n_samples, n), dtype=bool)
            a, b = base.mixed(st, pos), base.mixed(st, ~pos)
            d = np.abs(a - b)
            p = p_value(d[np.isfinite(d)], diff) if np.isfinite(d).any() else float("nan")
            if conf_n > 0:
                idx = rng.choice(n, size=(conf_n, n), replace=True)
                mean, ci = estimate_ci(st.resampled(idx))
        # an undefined score (NaN) has no p-value: a comparison with NaN would otherwise count as never exceeded
        p = float("nan") if not np.isfinite(diff) else 1.0 if diff == 0 else p
        out.append(SystemResult(name, sys_score, mean, ci, p, n, False))
    return out


def compare_systems(scorer: Any, systems: dict[str, Sequence[str]], refs: Sequence[Any] | None = None,
                    mrs: Sequence[str] | None = None, sources: Sequence[str] | None = None, test: str = "bs",
                    n_samples: int = 0, seed: int | None = DEFAULT_SEED, ar_confidence: int = 0,
                    batch_size: int | None = None, progress: bool = False,
                    instance_scores: dict[str, Sequence[float]] | None = None,
                    pooled: bool = False) -> list[SystemResult]:
    """Compare every system with the first (the baseline) on the same items; see the module docstring.

    ``instance_scores`` (system -> scores) skips scoring for scorers whose statistic is the instance mean.
    ``pooled``: compare the scorer's pooled set statistic (``scorer.system_statistic(outputs, mrs)``: the
    ``coverage`` scorer's slot error rate) instead of the mean of instance scores."""
    names = list(systems)
    if len(names) < 2:
        raise ValueError("compare needs a baseline and at least one system")
    outs = {k: list(v) for k, v in systems.items()}
    n = len(outs[names[0]])
    for k, v in outs.items():
        if len(v) != n:
            raise ValueError(f"system {k!r} has {len(v)} outputs, the baseline {names[0]!r} has {n}; a paired test "
                             "needs the same items in the same order")
    if test not in TESTS:
        raise ValueError(f"test={test!r}: choose 'bs' (paired bootstrap) or 'ar' (approximate randomization)")
    if pooled:
        if not hasattr(scorer, "system_statistic") or mrs is None:
            raise ValueError(f"{getattr(scorer, 'name', 'scorer')}: no pooled statistic over MRs to compare (the "
                             "coverage scorer's slot error rate needs --mrs)")
        return paired_test({k: scorer.system_statistic(v, mrs) for k, v in outs.items()}, test, n_samples, seed,
                           ar_confidence)
    if refs is not None and sacrebleu_metric(scorer) is not None:
        return _sacre_compare(scorer, outs, refs, test, n_samples, seed, ar_confidence)
    if refs is not None:
        pooled = {k: pooled_statistic(scorer, v, refs) for k, v in outs.items()}
        if all(p is not None for p in pooled.values()):
            return paired_test(pooled, test, n_samples, seed, ar_confidence)
    scores = {}
    for k, v in outs.items():
        if instance_scores is not None and k in instance_scores:
            scores[k] = np.asarray(instance_scores[k], dtype=float)
            continue
        kw: dict[str, Any] = {}
        if refs is not None:
            kw["refs"] = refs
        if mrs is not None:
            kw["mrs"] = mrs
        if sources is not None:
            kw["sources"] = sources
        scores[k] = np.asarray(scorer.score(v, batch_size=batch_size, progress=progress, **kw), dtype=float)
    keep = np.all(np.stack([np.isfinite(s) for s in scores.values()]), axis=0)
    if not keep.any():
        raise ValueError(f"{getattr(scorer, 'name', 'scorer')}: no item has a defined score for every system")
    return paired_test({k: mean_statistic(s[keep]) for k, s in scores.items()}, test, n_samples, seed,
                       ar_confidence)


def system_score(scorer: Any, outputs: Sequence[str], instance_scores: Sequence[float], refs: Sequence[Any] | None = None,
                 n_bootstrap: int = 1000, seed: int | None = DEFAULT_SEED,
                 statistic: "SetStatistic | None" = None) -> dict[str, Any]:
    """One system's figures: n, mean of the defined instance scores, the corpus-level score where the metric has one
    (sacrebleu's corpus BLEU / chrF / TER; NIST pooled), and a bootstrap 95 % CI of the system score (the corpus
    score where there is one, else the mean) as sacrebleu gives it: the mean of the resampled scores
    (``ci_mean``) plus or minus the larger distance to the 2.5th / 97.5th percentile (``ci_halfwidth``;
    ``ci`` = the interval). With few items the interval is wide and may pass the metric's range: it is reported,
    not clipped. sacrebleu's metrics use sacrebleu's own bootstrap
    (``corpus_score(..., n_bootstrap=...)``, the numbers of ``sacrebleu --confidence``). ``statistic``: the system's
    pooled statistic where the caller has one (the ``coverage`` scorer's slot error rate, which needs the MRs)."""
    x = np.asarray(instance_scores, dtype=float)
    ok = np.isfinite(x)
    row: dict[str, Any] = {"n": int(len(x)), "undefined": int((~ok).sum()),
                           "mean": float(x[ok].mean()) if ok.any() else None, "corpus": None,
                           "ci": None, "ci_mean": None, "ci_halfwidth": None, "ci_of": "mean"}
    metric = sacrebleu_metric(scorer) if refs is not None else None
    if metric is not None:
        hyps, streams = _sacre_inputs(scorer, {"s": list(outputs)}, refs)
        with _sacrebleu_seed(seed):
            res = metric.corpus_score(hyps["s"], streams, n_bootstrap=max(1, n_bootstrap))
        row["corpus"] = res.score / 100.0
        sig = metric.get_signature()
        if n_bootstrap > 1:
            sig.update("bs", n_bootstrap)
            sig.update("seed", str(seed).lower())
        row["library_signature"] = sig.format()
        if n_bootstrap > 1:
            m, ci = float(res._mean) / 100.0, float(res._ci) / 100.0
            row.update(ci=[m - ci, m + ci], ci_mean=m, ci_halfwidth=ci, ci_of="corpus")
        return row
    st = statistic if statistic is not None else (pooled_statistic(scorer, outputs, refs) if refs is not None else None)
    if st is None:
        if not ok.any():
            return row
        st = mean_statistic(x[ok])
    else:
        row["corpus"] = st.score()
        row["ci_of"] = "corpus"
    if n_bootstrap > 1 and len(st.stats):
        idx = np.random.default_rng(seed).choice(len(st.stats), size=(n_bootstrap, len(st.stats)), replace=True)
        m, ci = estimate_ci(st.resampled(idx))
        row.update(ci=[m - ci, m + ci], ci_mean=m, ci_halfwidth=ci)
    return row


__all__ = ["DEFAULT_SAMPLES", "DEFAULT_SEED", "TESTS", "SystemResult", "SetStatistic", "compare_systems",
           "estimate_ci", "mean_statistic", "paired_test", "p_value", "pooled_statistic", "sacrebleu_metric",
           "system_score"]
