"""Meta-evaluate DiscoScore and the discourse baselines on NeR18 (Zhao, Strube & Eger 2023, Table 7 / Table 5).

    python -m experiments.discoscore [--model minilm] [--no-lowercase] [--out outputs/discoscore]

Protocol (the authors' NewsRoomEval.py / analysis_Newsroom.py):

* every system summary is scored against the one reference; texts are lower-cased first (the authors lower-case
  hypothesis and reference before scoring; ``--no-lowercase`` turns this off);
* **system level**: the metric and each human aspect are averaged over the 60 documents per system, and
  Kendall's tau (scipy, tau-b) is taken over the 7 systems;
* **summary level**: Kendall's tau over the 7 systems within each document, averaged over documents
  (documents where the metric or the ratings are constant are skipped, as in BARTScore's script).

Correlations are reported *oriented*: a distance (DS-Focus, lower = better) is negated first, so a positive
tau means the metric agrees with the humans. The paper prints ``abs(tau)`` (its SUMMEval.py takes the absolute
value), so its figures carry no sign. NaN scores (empty texts) are left out of the means and counted.

A hypothesis that shares no focus with its reference gets the authors' DS-Focus value, eq. 2's empty sum 0.0
(``no_common_foci="authors"``; the library's default is ``"worst"``, see :class:`qe.discourse.scorer.DSFocusScorer`),
so that the figures are the paper's protocol; the row "no common focus = NaN" shows the effect of that choice.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import time
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

ASPECTS = ("coherence", "fluency", "informativeness", "relevance")

#: Table 7 of the paper (system-level Kendall x 100 on NeR18, Conpono / BERT-NLI encoders, printed as |tau|)
PAPER_TABLE7 = {
    "DS-Focus (NN)": (61.90, 61.90, 42.86, 52.38, 54.76),
    "DS-Focus* (NN)": (80.95, 80.95, 100.00, 90.47, 88.09),
    "DS-Sent-u (NN)": (14.29, 14.29, 14.29, 23.81, 16.67),
    "BARTScore": (42.58, 42.58, 23.80, 33.33, 35.57),
    "PRISM": (51.52, 42.58, 42.86, 52.38, 47.33),
}
#: Table 5 (summary-level Kendall x 100 averaged over the four aspects on NeR18)
PAPER_TABLE5 = {"DS-Focus (NN)": 10.42, "DS-Sent-u (NN)": 3.81, "BARTScore": 24.78, "PRISM": 18.89}


def variants(engine, sent_engine=None):
    """(label, scorer) pairs: every DiscoScore variant, the baselines, and two documented sensitivity checks.
    DS-Sent variants use ``sent_engine`` when given (the paper encodes DS-Sent with BERT-NLI)."""
    from qe.discourse.scorer import (CohesionScorer, DSFocusScorer, DSSentScorer, GraphCoherenceScorer,
                                      LexicalChainScorer)

    e = engine
    s = sent_engine or engine
    authors = "authors"  # eq. 2's empty sum (0.0) for pairs without a common focus, as the paper's code
    return [
        ("DS-Focus (NN)", DSFocusScorer("nn", engine=e, no_common_foci=authors)),
        ("DS-Focus (Entity)", DSFocusScorer("entity", 0.8, engine=e, no_common_foci=authors)),
        ("DS-Focus* (NN)", DSFocusScorer("nn", average="f", engine=e, no_common_foci=authors)),
        ("DS-Focus* (Entity)", DSFocusScorer("entity", 0.8, average="f", engine=e,
                                             no_common_foci=authors)),
        ("DS-Sent-u (NN)", DSSentScorer("nn", False, engine=s)),
        ("DS-Sent-u (Entity)", DSSentScorer("entity", False, 0.8, engine=s)),
        ("DS-Sent-w (NN)", DSSentScorer("nn", True, engine=s)),
        ("DS-Sent-w (Entity)", DSSentScorer("entity", True, 0.8, engine=s)),
        ("RC", CohesionScorer("rc", engine=e)),
        ("LC", CohesionScorer("lc", engine=e)),
        ("Entity Graph", GraphCoherenceScorer(False, engine=e)),
        ("Lexical Graph", GraphCoherenceScorer(True, 0.7, engine=e)),
        ("Lexical Chain", LexicalChainScorer(engine=e)),
        # sensitivity checks (not paper variants)
        ("DS-Focus (NN), squared distance", DSFocusScorer("nn", distance="squared", engine=e,
                                                               no_common_foci=authors)),
        ("DS-Focus (NN), no common focus = NaN", DSFocusScorer("nn", no_common_foci=math.nan, engine=e)),
    ]


def system_level(records, scores: np.ndarray, aspect: str) -> float:
    systems = sorted({r.system for r in records})
    m = [np.nanmean([s for r, s in zip(records, scores) if r.system == sy]) for sy in systems]
    h = [np.mean([r.ratings[aspect] for r in records if r.system == sy]) for sy in systems]
    return float(kendalltau(m, h)[0])


def summary_level(records, scores: np.ndarray, aspect: str) -> tuple[float, int]:
    by_doc: dict[str, list[tuple[float, float]]] = {}
    for r, s in zip(records, scores):
        by_doc.setdefault(r.extra["group"], []).append((s, r.ratings[aspect]))
    taus = []
    for pairs in by_doc.values():
        pairs = [(s, h) for s, h in pairs if not math.isnan(s)]
        m, h = [p[0] for p in pairs], [p[1] for p in pairs]
        if len(pairs) < 2 or len(set(m)) == 1 or len(set(h)) == 1:
            continue
        taus.append(kendalltau(m, h)[0])
    return (float(np.mean(taus)) if taus else math.nan), len(taus)


def dataset_statistics(records, engine) -> dict:
    """Table 9-style statistics and the eq. (4) discriminativeness of the Sec. 5 features on NeR18."""
    from qe.discourse.features import feature_discriminativeness

    hyps = [r.output for r in records]
    parsed = engine.parse(hyps)
    foci = [len(p.nouns) for p in parsed]
    good = [sum(1 for v in p.nouns.values() if len(v) > 1) for p in parsed]
    stats = {
        "sentences_per_hypothesis": float(np.mean([len(p.sentences) for p in parsed])),
        "foci_per_hypothesis": float(np.mean(foci)),
        "good_foci_per_hypothesis": float(np.mean(good)),
        "share_with_good_foci": float(np.mean([g > 0 for g in good])),
    }
    stats["discriminativeness"] = feature_discriminativeness(hyps, [r.refs[0] for r in records], engine)
    return stats


def run(model: str = "minilm", lowercase: bool = True, data_dir=None, out_dir: str | None = "outputs/discoscore",
        progress: bool = True, sent_model: str | None = None, **engine_kw) -> dict:
    from qe.data.datasets import load_dataset
    from qe.discourse.engine import DiscourseEngine

    records = load_dataset("ner18", data_dir=data_dir)
    engine = DiscourseEngine(model=model, lowercase=lowercase, **engine_kw)
    sent_engine = DiscourseEngine(model=sent_model, lowercase=lowercase, **engine_kw) if sent_model else None
    outputs = [r.output for r in records]
    refs = [r.refs for r in records]
    t0 = time.time()
    for eng in filter(None, (engine, sent_engine)):
        eng.embed(list(dict.fromkeys(outputs + [x for rs in refs for x in rs])), progress=progress)
    t_enc = time.time() - t0
    results = {}
    for label, sc in variants(engine, sent_engine):
        t = time.time()
        s = np.asarray(sc.score(outputs, refs=refs if sc.requires_refs else None, progress=False), dtype=float)
        sign = 1.0 if sc.higher_is_better else -1.0
        row = {"signature": sc.signature, "higher_is_better": sc.higher_is_better, "nan": int(np.isnan(s).sum()),
               "seconds": round(time.time() - t, 2)}
        row["system"] = {a: system_level(records, sign * s, a) for a in ASPECTS}
        row["summary"] = {a: summary_level(records, sign * s, a)[0] for a in ASPECTS}
        row["summary_docs"] = {a: summary_level(records, sign * s, a)[1] for a in ASPECTS}
        results[label] = row
    stats = dataset_statistics(records, engine)
    report = {"dataset": "NeR18", "n": len(records), "model": model, "sent_model": sent_model or model,
              "lowercase": lowercase,
              "engine": engine.signature(), "encode_seconds": round(t_enc, 2), "results": results,
              "statistics": stats, "total_seconds": round(time.time() - t0, 2)}
    if out_dir:
        p = Path(out_dir)
        p.mkdir(parents=True, exist_ok=True)
        (p / "ner18.json").write_text(json.dumps(report, indent=2))
    return report


def markdown(report: dict) -> str:
    def f(x):
        return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.2f}"

    lines = ["System-level Kendall τ × 100 (oriented; 7 systems). Paper = Table 7 (|τ|, Conpono/BERT-NLI).", "",
             "| metric | Coh | Flu | Inf | Rel | Avg | Avg of abs | paper Coh | Flu | Inf | Rel | Avg |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, row in report["results"].items():
        v = [row["system"][a] for a in ASPECTS]
        p = PAPER_TABLE7.get(label)
        ps = " | ".join(f"{x:.2f}" for x in p) if p else "– | – | – | – | –"
        lines.append(f"| {label} | " + " | ".join(f(x) for x in v) + f" | {f(float(np.mean(v)))} | "
                     f"{f(float(np.mean(np.abs(v))))} | {ps} |")
    lines += ["", "Summary-level Kendall τ × 100 (per document over 7 systems, averaged; oriented). "
              "Paper = Table 5 average.", "",
              "| metric | Coh | Flu | Inf | Rel | Avg | paper Avg |", "|---|---|---|---|---|---|---|"]
    for label, row in report["results"].items():
        v = [row["summary"][a] for a in ASPECTS]
        p = PAPER_TABLE5.get(label)
        lines.append(f"| {label} | " + " | ".join(f(x) for x in v) + f" | {f(float(np.mean(v)))} | "
                     f"{'–' if p is None else f'{p:.2f}'} |")
    st = report["statistics"]
    lines += ["", f"Hypotheses: {st['sentences_per_hypothesis']:.2f} sentences, {st['foci_per_hypothesis']:.2f} "
              f"foci, {st['good_foci_per_hypothesis']:.2f} good foci (occurring > 1), "
              f"{100 * st['share_with_good_foci']:.1f}% with a good focus.", "",
              "| feature | D (eq. 4) = share R(ref) < R(hyp) | R(ref) = R(hyp) | R(ref) > R(hyp) | pairs |",
              "|---|---|---|---|---|"]
    for k, d in st["discriminativeness"].items():
        lines.append(f"| {k} | {f(d['D'])} | {f(d['equal'])} | {f(d['ref_gt_hyp'])} | {d['n']} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="minilm", help="HF encoder name or path (default: offline MiniLM)")
    ap.add_argument("--sent-model", default=None, help="encoder for the DS-Sent variants (paper: BERT-NLI); "
                    "default: --model")
    ap.add_argument("--layer", type=int, default=None, help="hidden layer to use (default: last; paper: 8)")
    ap.add_argument("--no-lowercase", action="store_true", help="do not lower-case texts (authors do)")
    ap.add_argument("--vectors", default="spacy", help="word vectors for entities: 'spacy' or a word2vec text file")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", default="outputs/discoscore", help="folder for ner18.json")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR if a.quiet else logging.WARNING)
    rep = run(a.model, not a.no_lowercase, a.data_dir, a.out, progress=not a.quiet, sent_model=a.sent_model,
              layer=a.layer, vectors=a.vectors)
    print(f"# NeR18, encoder {rep['model']} (DS-Sent: {rep['sent_model']}), {rep['engine']}, {rep['n']} summaries, "
          f"{rep['total_seconds']} s\n")
    print(markdown(rep))


if __name__ == "__main__":
    main()
