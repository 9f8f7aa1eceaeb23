"""Which content errors does each scorer catch? A rating-free check on the WebNLG *development* references.

    python -m experiments.content_checklist --data-dir ../shared/data \\
        cov=content-aligner-webnlg mrb=mr-bertscore rp1=ratpred-webnlg-cross length=length \\
        --ensemble ens1=cov+rp1 --json out.json

Each development entry gives one clean text (a reference drawn with ``--seed``, which realises its triples and
nothing else) and corrupted copies of it, scored against the same triples (the sets of
:func:`experiments.triple_words.dev_sets`, plus one):

* ``added``: a reference of another entry appended (facts the triples do not hold);
* ``swapped``: one object the text names verbatim replaced by another object of the same property (a wrong value);
* ``relation``: a sentence relating the entry's own subject and object by a property it does not hold;
* ``omitted``: the clean text without its last sentence (texts of two or more sentences; facts left out).

Per scorer and set: the share of pairs where the clean text scores higher than its corrupted copy (ties count half;
pairs with a NaN score are left out), so 0.5 is chance. ``length`` is the control: appending raises it, dropping a
sentence lowers it. Scorers are ``label=NAME`` (anything ``qe.load`` takes: a registered name, a zoo name, an export
directory); RatPred exports are read raw (``rounded=False``). ``--ensemble label=a+b`` adds the equal-weight mean of
two scored members on [0, 1] (coverage as it is, a RatPred rating from its clip range [1, 6]) - what
``ensemble.scales=auto`` computes - without scoring the members again. Only WebNLG's training and development splits
are read; nothing here sees a rating.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

KINDS = ("added", "swapped", "relation", "omitted")


def omitted_set(clean) -> list[tuple[str, str, str]]:
    """``[(mr, text without its last sentence, text)]`` for the clean texts of two or more sentences (pysbd)."""
    from qe.core.text import split_sentences

    out = []
    for mr, text, _ in clean:
        sents = split_sentences(text)
        if len(sents) >= 2:
            out.append((mr, " ".join(s.strip() for s in sents[:-1]), text))
    return out


def pair_accuracy(clean: np.ndarray, corrupt: np.ndarray) -> tuple[float, int]:
    """Share of pairs with clean > corrupt (ties half), over the pairs where both are finite; and their number."""
    ok = np.isfinite(clean) & np.isfinite(corrupt)
    if not ok.any():
        return float("nan"), 0
    c, k = clean[ok], corrupt[ok]
    return float(np.mean((c > k) + 0.5 * (c == k))), int(ok.sum())


def _load(spec: str):
    """``qe.load(spec)``; a RatPred export again with ``rounded=False`` (read raw, as an ensemble reads it)."""
    import qe
    from qe.ratpred.scorer import RatPredScorer

    scorer = qe.load(spec)
    return qe.load(spec, rounded=False) if isinstance(scorer, RatPredScorer) else scorer


def _unit(scorer, s: np.ndarray) -> np.ndarray:
    """A member's scores on [0, 1] as ``ensemble.scales=auto`` maps them (:func:`qe.ensemble.task.declared_range`:
    a RatPred rating from its clip range, the coverage score as it is); other scorers as they are."""
    from qe.ensemble.task import declared_range

    manifest = getattr(scorer, "manifest", None)
    if not manifest:
        return s
    lo, hi = declared_range("member", manifest)
    return (s - lo) / (hi - lo)


def main(argv=None) -> int:
    from experiments.triple_words import dev_sets
    from qe.data.webnlg import webnlg_entries

    ap = argparse.ArgumentParser(prog="python -m experiments.content_checklist", description=__doc__.split("\n\n")[0])
    ap.add_argument("scorers", nargs="+", help="label=NAME_OR_EXPORT")
    ap.add_argument("--ensemble", nargs="*", default=[], help="label=a+b: equal-weight mean of two scored members on [0, 1]")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=None, help="first N development entries only (a quick look)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)

    train, dev = webnlg_entries("train", a.data_dir), webnlg_entries("dev", a.data_dir)
    if a.limit:
        dev = dev[:a.limit]
    sets = dev_sets(train, dev, a.seed)
    sets["omitted"] = omitted_set(sets["clean"])
    print(" ".join(f"{k}: {len(v)}" for k, v in sets.items()), file=sys.stderr)

    texts = {k: ([t for _, t, _ in v], [mr for mr, _, _ in v], [b for _, _, b in v]) for k, v in sets.items()}
    clean_index = {t: i for i, t in enumerate(texts["clean"][0])}
    scores: dict[str, dict[str, np.ndarray]] = {}
    units: dict[str, dict[str, np.ndarray]] = {}
    for spec in a.scorers:
        label, _, name = spec.partition("=")
        if not name:
            ap.error(f"{spec!r}: give label=NAME")
        scorer = _load(name)
        t0 = time.time()
        scores[label] = {}
        for k, (outs, mrs, _) in texts.items():
            s = scorer.score(outs, mrs=mrs, progress=False)
            scores[label][k] = np.asarray(s, dtype=np.float64)
        units[label] = {k: _unit(scorer, v) for k, v in scores[label].items()}
        print(f"{label}: {scorer.signature} ({time.time() - t0:.0f} s)", file=sys.stderr)
    for spec in a.ensemble:
        label, _, pair = spec.partition("=")
        m1, _, m2 = pair.partition("+")
        if m1 not in units or m2 not in units:
            ap.error(f"--ensemble {spec!r}: score {m1!r} and {m2!r} first")
        scores[label] = {k: (units[m1][k] + units[m2][k]) / 2 for k in texts}

    table = {}
    for label, by_kind in scores.items():
        row = {}
        for k in KINDS:
            base = np.array([by_kind["clean"][clean_index[b]] for b in texts[k][2]])
            row[k], row[f"n_{k}"] = pair_accuracy(base, by_kind[k])
        row["mean"] = float(np.nanmean([row[k] for k in KINDS]))
        table[label] = row
    w = max(len(x) for x in table) + 2
    print(f"{'scorer':{w}s}" + "".join(f"{k:>10s}" for k in (*KINDS, "mean")))
    for label, row in table.items():
        print(f"{label:{w}s}" + "".join(f"{row[k]:10.3f}" for k in (*KINDS, "mean")))
    print("pairs: " + ", ".join(f"{k} {next(iter(table.values()))[f'n_{k}']}" for k in KINDS))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"seed": a.seed, "sets": {k: len(v) for k, v in sets.items()}, "table": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
