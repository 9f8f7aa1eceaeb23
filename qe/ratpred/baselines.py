"""Table 3 baselines: constant (training mean) and word-overlap metrics against the human references.

    PYTHONPATH=. python -m qe.ratpred.baselines [--out outputs/ratpred_baselines.json]

Metrics (segment level, each output against all its references from :mod:`qe.data.references`):

* ``BLEU``: sacrebleu ``sentence_bleu`` (BLEU-4, exponential smoothing, ``tokenize="none"`` on our
  lower-cased word tokens);
* ``METEOR``: NLTK ``meteor_score`` with exact and Porter-stem matching only - the WordNet synonym module
  is switched off because no WordNet data is installed on this offline machine (the paper used METEOR 1.5
  via the COCO script, which also has synonym and paraphrase modules);
* ``ROUGE-L``: ``rouge_score`` ROUGE-L F-measure, best over references;
* ``CIDEr``: CIDEr-D (Vedantam et al. 2015) as in the COCO caption evaluation: tf-idf weighted n-gram
  (1-4) cosine, idf from the references of all outputs, clipping and a Gaussian length penalty (sigma 6),
  x 10. Hand-written (``cider_d``) because no CIDEr package is installed.

By default (``--impl registered``) the project's registered reference metrics are used
(``qe.load("bleu-4" | "meteor" | "rouge-l" | "cider")``, :mod:`qe.refmetrics`); ``--impl direct`` uses the small
field-library functions above instead (written before those existed; kept as an independent cross-check).

Normalisation to ratings as the authors' ``metric_to_rating`` script: min-max over all outputs to [0, 1],
then 10 bins of 0.1 (floor) mapped to 1, 1.5, ..., 6. The constant baseline predicts, per CV fold, the
training parts' mean rating, rounded to 0.5 (the paper's constant is 4.5). The authors' own metric columns
shipped in the EMNLP17 file (computed against their references) are scored the same way for comparison.
"""
from __future__ import annotations

import argparse
import json
import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from qe.ratpred.module import correlations


def tok(s: str) -> list[str]:
    from qe.ratpred.mr import tokenize

    return tokenize(s)


def bleu_sacrebleu(outputs: list[str], refs: list[list[str]]) -> list[float]:
    from sacrebleu.metrics import BLEU

    bleu = BLEU(effective_order=True, tokenize="none", smooth_method="exp")
    return [bleu.sentence_score(" ".join(tok(o)), [" ".join(tok(r)) for r in rs]).score / 100
            for o, rs in zip(outputs, refs)]


class _NoWordNet:
    """Stands in for WordNet in NLTK's METEOR: no synonyms (exact + stem matching only)."""

    @staticmethod
    def synsets(*a, **k):
        return []


def meteor_nltk(outputs: list[str], refs: list[list[str]]) -> list[float]:
    from nltk.translate.meteor_score import meteor_score

    return [float(meteor_score([tok(r) for r in rs], tok(o), wordnet=_NoWordNet())) for o, rs in zip(outputs, refs)]


def rouge_l(outputs: list[str], refs: list[list[str]]) -> list[float]:
    from rouge_score import rouge_scorer

    sc = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False, tokenizer=_Tok())
    return [float(sc.score_multi(rs, o)["rougeL"].fmeasure) for o, rs in zip(outputs, refs)]


class _Tok:
    def tokenize(self, text):
        return tok(text)


def _ngrams(t: list[str], n: int) -> Counter:
    return Counter(tuple(t[i:i + n]) for i in range(len(t) - n + 1))


def cider_d(outputs: list[str], refs: list[list[str]], n: int = 4, sigma: float = 6.0) -> list[float]:
    """CIDEr-D: idf over the reference sets of all outputs (one "document" per output's reference set)."""
    R = [[tok(r) for r in rs] for rs in refs]
    H = [tok(o) for o in outputs]
    df: dict[tuple, int] = defaultdict(int)
    for rs in R:
        for g in set(g for r in rs for k in range(1, n + 1) for g in _ngrams(r, k)):
            df[g] += 1
    log_n = math.log(float(len(R)))

    def vec(t):
        vs, norms = [], []
        for k in range(1, n + 1):
            c = _ngrams(t, k)
            v = {g: tf * (log_n - math.log(max(1.0, df.get(g, 0.0)))) for g, tf in c.items()}
            vs.append(v)
            norms.append(math.sqrt(sum(x * x for x in v.values())))
        return vs, norms, len(t)

    out = []
    for h, rs in zip(H, R):
        vh, nh, lh = vec(h)
        score = np.zeros(n)
        for r in rs:
            vr, nr, lr = vec(r)
            for k in range(n):
                val = sum(min(vh[k][g], vr[k][g]) * vr[k][g] for g in vh[k] if g in vr[k])  # clipped (CIDEr-D)
                if nh[k] and nr[k]:
                    val /= nh[k] * nr[k]
                else:
                    val = 0.0
                score[k] += val * math.exp(-((lh - lr) ** 2) / (2 * sigma ** 2))
        out.append(float(score.mean() / max(1, len(rs)) * 10.0))
    return out


METRICS = {"BLEU": bleu_sacrebleu, "METEOR": meteor_nltk, "ROUGE-L": rouge_l, "CIDEr": cider_d}
#: the project's registered reference metrics (qe.refmetrics) used by default
REGISTERED = {"BLEU": "bleu-4", "METEOR": "meteor", "ROUGE-L": "rouge-l", "CIDEr": "cider"}


def registered_metric(name: str):
    """``qe.load(<registered name>)`` scorer as a (outputs, refs) -> scores function."""
    import qe

    scorer = qe.load(REGISTERED[name])

    def fn(outputs, refs):
        return scorer.score(outputs, refs=refs, progress=False)

    fn.signature = scorer.signature
    return fn
AUTHOR_COLUMNS = {"BLEU": "Bleu_4", "METEOR": "METEOR", "ROUGE-L": "ROUGE_L", "CIDEr": "CIDEr"}


def to_rating(scores, lo: float = 1.0, hi: float = 6.0, step: float = 0.5) -> np.ndarray:
    """Min-max to [0, 1], then floor into (hi - lo) / step bins: 1, 1.5, ..., 6 (the authors' quantisation)."""
    m = np.asarray(scores, dtype=np.float64)
    rng = m.max() - m.min()
    m = (m - m.min()) / rng if rng > 0 else np.zeros_like(m)
    nvals = (hi - lo) / step
    return lo + np.floor(m * nvals + 1e-9) * step


def constant_baseline(records, target="quality", n_parts=5, part_seed=1206, round_to=0.5):
    from qe.ratpred.data import cv_fold, make_parts

    parts = make_parts(records, n_parts, part_seed)
    pred, gold = [], []
    for f in range(n_parts):
        tr, _, te = cv_fold(parts, f)
        mean = float(np.mean([r.ratings[target] for r in tr]))
        c = round(mean / round_to) * round_to if round_to else mean
        pred += [c] * len(te)
        gold += [r.ratings[target] for r in te]
    m = correlations(pred, gold)
    m["pearson"] = m["spearman"] = float("nan")  # undefined for a constant
    return m


def main(argv=None):
    from qe.data import load_dataset

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", default="quality")
    ap.add_argument("--out", default="outputs/ratpred_baselines.json")
    ap.add_argument("--impl", choices=["registered", "direct"], default="registered",
                    help="registered: qe.load('bleu-4' | 'meteor' | 'rouge-l' | 'cider'); direct: the small "
                         "field-library functions in this module")
    args = ap.parse_args(argv)
    recs = load_dataset("emnlp17_refs")
    gold = np.array([r.ratings[args.target] for r in recs])
    outs = [r.output for r in recs]
    refs = [r.refs for r in recs]
    rows = {"Constant": constant_baseline(recs, args.target)}
    raw, sigs = {}, {}
    for name in METRICS:
        fn = registered_metric(name) if args.impl == "registered" else METRICS[name]
        sigs[name] = getattr(fn, "signature", f"qe.ratpred.baselines.{METRICS[name].__name__}")
        raw[name] = fn(outs, refs)
        rows[f"{name}* (recomputed)"] = correlations(to_rating(raw[name]), gold)
        rows[f"{name}* (authors' column)"] = correlations(
            to_rating([r.metrics[AUTHOR_COLUMNS[name]] for r in recs]), gold)
    print(f"{'':32s} {'Pearson':>8s} {'Spearman':>8s} {'MAE':>7s} {'RMSE':>7s}")
    for k, m in rows.items():
        print(f"{k:32s} {m['pearson']:8.3f} {m['spearman']:8.3f} {m['mae']:7.3f} {m['rmse']:7.3f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"rows": rows, "n": len(recs), "impl": args.impl, "signatures": sigs,
                   "raw_means": {k: float(np.mean(v)) for k, v in raw.items()}}, f, indent=1)
    for k, v in sigs.items():
        print(f"{k}: {v}")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
