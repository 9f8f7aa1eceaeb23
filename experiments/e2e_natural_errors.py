"""Do the content-aware scorers prefer the E2E references that realise their MR to those that do not? A rating-free
check on the *natural* slot errors of the cleaned E2E development references (docs/results/content.md).

    python -m experiments.e2e_natural_errors --data-dir ../shared/data \\
        --aligner s42=exports/ca_full_s42_f01,exports/ca_full_s42_f234 s1=...,... s2=...,... \\
        --ratpred rp1=ratpred-e2e-vectors rp2=/path/to/seed2/ratpred-e2e-vectors --mr-bertscore --json out.json

``devel-fixed.no-ol.csv`` gives, for 4,299 human references, the MR each was written for (``orig_mr``) and the MR it
realises (``mr``). Every reference is scored against ``orig_mr``, as a system output against its input. Its gold
errors against ``orig_mr``: *omitted* facts (a slot of ``orig_mr`` the text does not realise), *added* facts (a slot
it realises that ``orig_mr`` does not hold), *wrong* values (a slot of both with another value); the gold slot error
rate is their sum over the number of facts of ``orig_mr``. A reference is *clean* when it has none.

Two figures per scorer:

* **pairwise accuracy**: for each reference with a gold error, the share of the clean references of the same
  ``orig_mr`` it scores below (ties half), averaged over the erroneous references - overall and per kind of error:
  ``omission`` (only omitted facts), ``addition`` (only added facts), ``mixed`` (a wrong value, or omitted and added
  facts); 0.5 is chance;
* **ρ with the gold error rate**: Spearman between the score and minus the gold slot error rate over every reference
  (what a quality rating that follows slot errors would reward);
* **acc23 with the gold error rate**: tie-calibrated pairwise accuracy (Deutsch et al. 2023,
  :func:`qe.evaluation.wmt.tie_calibrated_accuracy`) against minus the gold slot error rate, over all pairs and over
  the pairs of one ``orig_mr``, with the ε that maximises it (most pairs are tied on both sides: SER is a ratio of
  small integers, and a good checker scores most references 1.0).

Scorers: ``length`` (words; the control), ``rules`` (the matcher with no lexicon, as hand-written slot checks work),
``matcher`` (plus the lexicon the zoo model uses, mined the same way - ``min_count=10`` - but from the other folds'
references only), ``cov-<seed>`` (the coverage score of the default ``combined`` engine with each fold's
cross-fitted aligner: the pair of ``content_aligner`` exports of one seed that left out complementary folds, as
``experiments.content_e2e`` measures them), ``<ratpred label>`` (RatPred exports read raw), ``ens-<seed>-<label>`` (the
equal-weight mean on [0, 1] that ``content-ratpred-e2e`` computes: coverage as it is, RatPred from its clip range) and,
with ``--mr-bertscore``, ``mr-bertscore`` F1. The folds are the split of ``experiments.content_e2e`` (5 folds of
``orig_mr`` groups, ``--seed``); no figure is chosen on the fold it is measured on.

Leaks to keep in mind: RatPred's E2E recipes train on synthetic errors made from these very references (paired with
their *cleaned* MR, never with ``orig_mr``), so its figures here are not held out; the cross-fitted aligners and
lexicons are. Only the dev split is read; the test references stay untouched, and nothing here sees a rating.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict

import numpy as np

KINDS = ("omission", "addition", "mixed")


def gold_errors(orig_mr: str, mr: str) -> dict[str, int]:
    """Omitted, added and wrong facts of a reference written for ``orig_mr`` that realises ``mr``, and the number of
    facts of ``orig_mr``."""
    from qe.content.aligner_data import fact_set

    orig, gold = fact_set(orig_mr), fact_set(mr)
    missing, extra = orig - gold, gold - orig
    wrong = {s for s, _ in missing} & {s for s, _ in extra}
    return {"omitted": sum(1 for s, _ in missing if s not in wrong), "added": sum(1 for s, _ in extra if s not in wrong),
            "wrong": len(wrong), "facts": len(orig)}


def kind_of(err: dict[str, int]) -> str | None:
    """``None`` (clean), ``omission``, ``addition`` or ``mixed``."""
    if not (err["omitted"] or err["added"] or err["wrong"]):
        return None
    if err["wrong"] or (err["omitted"] and err["added"]):
        return "mixed"
    return "omission" if err["omitted"] else "addition"


def pairwise(groups: list[str], kinds: list[str | None], scores: np.ndarray) -> dict[str, tuple[float, int]]:
    """Per kind (and ``all``): the mean over erroneous references of the share of their group's clean references
    scoring higher (ties half; NaN scores left out), and the number of erroneous references that had a pair."""
    clean: dict[str, list[float]] = defaultdict(list)
    for g, k, s in zip(groups, kinds, scores):
        if k is None and np.isfinite(s):
            clean[g].append(float(s))
    per: dict[str, list[float]] = defaultdict(list)
    for g, k, s in zip(groups, kinds, scores):
        if k is None or not np.isfinite(s) or not clean[g]:
            continue
        c = np.asarray(clean[g])
        acc = float(np.mean((c > s) + 0.5 * (c == s)))
        per[k].append(acc)
        per["all"].append(acc)
    return {k: (float(np.mean(v)) if v else float("nan"), len(v)) for k, v in per.items()}


def coverage_scores(rows: list[dict], folds: int, seed: int, aligners: list[str] | None, engine: str) -> np.ndarray:
    """The coverage score of every row by ``engine`` (``rules``, ``matcher`` or ``combined``), fold by fold with the
    fold's cross-fitted lexicon (and aligner)."""
    from experiments.content_e2e import aligner_for_folds
    from qe.content import Matcher
    from qe.content.aligner_data import fold_of
    from qe.content.scorer import CoverageScorer

    fig = CoverageScorer()  # the default penalties: only its formula is used
    fold = fold_of([r["orig_mr"] for r in rows], folds, seed)
    by_fold = aligner_for_folds(aligners, folds, seed) if engine == "combined" else {}
    out = np.full(len(rows), np.nan)
    for k in range(folds):
        idx = [i for i, r in enumerate(rows) if fold[r["orig_mr"]] == k]
        if engine == "rules":
            m = Matcher()
        else:
            lex = _lexicon(rows, fold, k)
            m = Matcher(lex)
        mrs, refs = [rows[i]["orig_mr"] for i in idx], [rows[i]["ref"] for i in idx]
        if engine == "combined":
            from qe.content.aligner import AlignedMatcher, Aligner

            als = AlignedMatcher(m, Aligner.load(by_fold[k], device="cpu"), "combined").align_many(mrs, refs)
        else:
            als = [m.align(mr, o) for mr, o in zip(mrs, refs)]
        for i, al in zip(idx, als):
            out[i] = fig.figures(al)["coverage"]
    return out


_LEX: dict[int, object] = {}


def _lexicon(rows, fold, k):
    from qe.content import mine

    if k not in _LEX:  # as the zoo's e2e lexicon (qe.content.scorer.dataset_lexicon), from the other folds only
        _LEX[k] = mine([(r["mr"], r["ref"]) for r in rows if fold[r["orig_mr"]] != k], source=f"e2e-dev-fold{k}",
                       min_count=10)
    return _LEX[k]


def spearman_neg_ser(scores: np.ndarray, ser: np.ndarray) -> float:
    from scipy.stats import spearmanr

    ok = np.isfinite(scores)
    return float(spearmanr(scores[ok], -ser[ok]).statistic)


def acc23_neg_ser(scores: np.ndarray, ser: np.ndarray, groups: list[str], average_by: str):
    """Tie-calibrated pairwise accuracy (acc23, Deutsch et al. 2023) of the score against minus the gold SER: over
    every pair of references (``none``) or the pairs written for one MR (``item``); ε chosen to maximise it."""
    from qe.evaluation.wmt import tie_calibrated_accuracy

    ok = np.isfinite(scores) & np.isfinite(ser)
    g = np.asarray(groups, dtype=object)[ok] if average_by == "item" else None
    return tie_calibrated_accuracy(-ser[ok], scores[ok], groups=g, average_by=average_by)


def _pairs(spec: str, what: str) -> tuple[str, str]:
    if "=" not in spec:
        raise SystemExit(f"{what} {spec!r}: give LABEL=VALUE")
    label, value = spec.split("=", 1)
    return label, value


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--aligner", nargs="*", default=[], metavar="SEED=EXPORT,EXPORT",
                    help="per aligner seed, the content_aligner exports that together left out every fold")
    ap.add_argument("--ratpred", nargs="*", default=[], metavar="LABEL=EXPORT", help="RatPred exports (read raw)")
    ap.add_argument("--mr-bertscore", action="store_true", help="also score mr-bertscore (F1)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)

    import qe
    from qe.data.e2e import e2e_slot_gold

    rows = e2e_slot_gold("dev", a.data_dir)
    errs = [gold_errors(r["orig_mr"], r["mr"]) for r in rows]
    kinds = [kind_of(e) for e in errs]
    ser = np.array([(e["omitted"] + e["added"] + e["wrong"]) / e["facts"] if e["facts"] else np.nan for e in errs])
    groups = [r["orig_mr"] for r in rows]
    mrs, refs = groups, [r["ref"] for r in rows]
    counts = {k: kinds.count(k) for k in KINDS}
    print(f"{len(rows)} references: {kinds.count(None)} clean, " + ", ".join(f"{v} {k}" for k, v in counts.items()),
          file=sys.stderr)

    scores: dict[str, np.ndarray] = {"length": np.array([len(t.split()) for t in refs], dtype=float)}
    t0 = time.time()
    for eng in ("rules", "matcher"):
        scores[eng] = coverage_scores(rows, a.folds, a.seed, None, eng)
    for spec in a.aligner:
        label, paths = _pairs(spec, "--aligner")
        scores[f"cov-{label}"] = coverage_scores(rows, a.folds, a.seed, paths.split(","), "combined")
        print(f"cov-{label}: {time.time() - t0:.0f} s", file=sys.stderr)
    raw = {}
    for spec in a.ratpred:
        label, path = _pairs(spec, "--ratpred")
        sc = qe.load(path, rounded=False)
        lo, hi = float(sc.manifest["config"]["predict"]["clip_lo"]), float(sc.manifest["config"]["predict"]["clip_hi"])
        raw[label] = np.asarray(sc.score(refs, mrs=mrs, progress=False), dtype=float)
        scores[label] = raw[label]
        for cov in [k for k in scores if k.startswith("cov-")]:
            scores[f"ens-{cov[4:]}-{label}"] = 0.5 * scores[cov] + 0.5 * (raw[label] - lo) / (hi - lo)
        print(f"{label}: {time.time() - t0:.0f} s", file=sys.stderr)
    if a.mr_bertscore:
        scores["mr-bertscore"] = np.asarray(qe.load("mr-bertscore").score(refs, mrs=mrs, progress=False), dtype=float)

    results = {}
    print("| scorer | all | omission | addition | mixed | ρ with −SER | acc23 (ε), all pairs | acc23 (ε), by MR |")
    print("|---|---|---|---|---|---|---|---|")
    for name, s in scores.items():
        acc = pairwise(groups, kinds, s)
        rho = spearman_neg_ser(s, ser)
        t_all, t_mr = acc23_neg_ser(s, ser, groups, "none"), acc23_neg_ser(s, ser, groups, "item")
        results[name] = {"pairwise": acc, "rho_neg_ser": rho, "acc23_none": t_all.value, "eps_none": t_all.epsilon,
                         "acc23_item": t_mr.value, "eps_item": t_mr.epsilon}
        cells = " | ".join(f"{acc[k][0]:.3f} ({acc[k][1]})" if k in acc else "–" for k in ("all", *KINDS))
        print(f"| {name} | {cells} | {rho:.3f} | {t_all.value:.3f} ({t_all.epsilon:.3g}) | "
              f"{t_mr.value:.3f} ({t_mr.epsilon:.3g}) |")
    if a.json:
        from qe.core.jsonio import dumps

        with open(a.json, "w", encoding="utf-8") as f:
            f.write(dumps({"rows": len(rows), "clean": kinds.count(None), "kinds": counts, "results": results},
                          indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
