"""GRUEN (Zhu & Bhat 2020) reproductions: the coherence module's order discrimination and the Table 3 comparison.

``order`` — does an SOP head prefer the original sentence order? Each document (>= 2 sentences) is scored in its
original order and in ``--shuffles`` seeded random permutations that differ from it; the head's mean SOP loss over
all splits (:class:`qe.gruen.coherence.CoherenceModel`, the scorer's own computation, y_c = -loss) is compared per
(document, permutation):

* **accuracy** — fraction of pairs where the original has the lower loss (ties count 1/2; chance = 0.5),
* mean loss of original and shuffled orders, and a one-sided Wilcoxon signed-rank test on the paired
  differences (``scipy.stats.wilcoxon``),
* with ``--rating`` on a rated dataset, Spearman / Pearson of y_c with that human rating over the outputs
  that have at least two sentences (one-sentence outputs have y_c = 0 by definition and are left out).

Documents come from a rated dataset (``--dataset ner18``: outputs split with GRUEN's preprocessing) or from a
document source of ``task=sop`` (``--docs wikitext2:test``, ``--docs brown``); ``--skip`` / ``--limit`` select
which, e.g. to leave out the documents a training run validated on.

``table3`` — Spearman / Pearson per dataset and rating of several ``task=gruen_tune`` reports beside the paper's
Table 3 (``label=path/to/gruen_report.json`` ...; ``--split=all|dev|test``).

    python -m experiments.gruen order --sop exports/sop_minilm --docs wikitext2:test --skip 300 --limit 500
    python -m experiments.gruen order --sop exports/sop_minilm --dataset ner18 --rating coherence
    python -m experiments.gruen table3 --split=all "paper-mode=runs/gruen/emnlp_GRUEN/gruen_report.json"
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path
from typing import Sequence

import numpy as np


def permutations(doc: Sequence[str], k: int, rng: random.Random) -> list[list[str]]:
    """Up to ``k`` distinct orders of ``doc`` that differ from the original (fewer when not that many exist)."""
    seen, out = {tuple(doc)}, []
    want = min(k, math.factorial(len(doc)) - 1)  # repeated sentences give fewer distinct orders: the tries cap ends the loop
    tries = 0
    while len(out) < want and tries < 100 * k:
        tries += 1
        p = list(doc)
        rng.shuffle(p)
        if tuple(p) not in seen:
            seen.add(tuple(p))
            out.append(p)
    return out


def order_discrimination(model, docs: Sequence[list[str]], shuffles: int = 1, seed: int = 0,
                         progress: bool = True, per_document: bool = False) -> dict:
    """Paired comparison of original vs shuffled SOP losses (see module docstring). ``per_document=True`` adds
    ``original_losses``: the loss of each document of >= 2 sentences, in input order."""
    from scipy.stats import wilcoxon

    rng = random.Random(seed)
    docs = [list(d) for d in docs if len(d) >= 2]
    if not docs:
        raise ValueError("order discrimination needs documents of at least two sentences; none given")
    perms = [permutations(d, shuffles, rng) for d in docs]
    flat = docs + [p for ps in perms for p in ps]
    loss = model.sop_loss(flat, progress=progress)
    orig, pos = loss[: len(docs)], len(docs)
    o, s = [], []
    for i, ps in enumerate(perms):
        for _ in ps:
            o.append(orig[i])
            s.append(loss[pos])
            pos += 1
    o, s = np.asarray(o), np.asarray(s)
    diff = s - o
    res = {"documents": len(docs), "pairs": int(len(o)), "accuracy": float(np.mean((diff > 0) + 0.5 * (diff == 0))),
           "loss_original": float(o.mean()), "loss_shuffled": float(s.mean()),
           "mean_sentences": float(np.mean([len(d) for d in docs]))}
    res["wilcoxon_p"] = float(wilcoxon(s, o, alternative="greater").pvalue) if np.any(diff != 0) else 1.0
    if per_document:
        res["original_losses"] = [float(x) for x in orig]
    return res


def _documents(args) -> tuple[list[list[str]], list]:
    if args.dataset:
        from qe.data import load_dataset
        from qe.gruen.preprocess import preprocess

        recs = load_dataset(args.dataset, data_dir=args.data_dir)
        return [preprocess(r.output, splitter=args.splitter) for r in recs], recs
    from qe.gruen.data import load_documents

    name, _, split = args.docs.partition(":")
    spec = {"name": name, **({"split": split} if split else {})}
    return load_documents([spec], args.data_dir), []


def order_main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m experiments.gruen order",
                                 description="original vs shuffled sentence order under an SOP head")
    ap.add_argument("--sop", required=True, help="SOP export, HF pair classifier folder or ALBERT checkpoint")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--dataset", help="rated dataset name (load_dataset), e.g. ner18")
    src.add_argument("--docs", help="document source: wikitext2:<split> | brown")
    ap.add_argument("--rating", action="append", default=[], help="correlate y_c with this rating (repeatable)")
    ap.add_argument("--skip", type=int, default=0)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--shuffles", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--splitter", default="pysbd")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--device", default=None)
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args(argv)

    from qe.gruen.coherence import CoherenceModel

    docs, recs = _documents(args)
    end = None if args.limit is None else args.skip + args.limit
    docs, recs = docs[args.skip:end], recs[args.skip:end]
    model = CoherenceModel(args.sop, device=args.device)
    res = {"sop": model.signature, "source": args.dataset or args.docs, "skip": args.skip,
           **order_discrimination(model, docs, args.shuffles, args.seed, per_document=True)}
    yc = [-v for v in res.pop("original_losses")]  # y_c of the documents with >= 2 sentences, reused below
    if args.rating:
        from scipy.stats import pearsonr, spearmanr

        multi = [i for i, d in enumerate(docs) if len(d) >= 2]
        for name in args.rating:
            pts = [(y, recs[i].ratings[name]) for y, i in zip(yc, multi) if recs[i].ratings.get(name) is not None]
            if len(pts) < 3:
                raise SystemExit(f"--rating {name}: only {len(pts)} multi-sentence outputs carry it")
            a, b = map(np.asarray, zip(*pts))
            res[f"{name}/spearman"] = float(spearmanr(a, b)[0])
            res[f"{name}/pearson"] = float(pearsonr(a, b)[0])
            res[f"{name}/n"] = len(pts)
    print("| | |\n|---|---|")
    for k, v in res.items():
        print(f"| {k} | {v:.4g} |" if isinstance(v, float) else f"| {k} | {v} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)
    return res


PAPER_TABLE3 = {  # Zhu & Bhat 2020, Table 3: GRUEN (bert-base-cased PLL + CoLA, ALBERT SOP), all outputs
    "BAGEL/naturalness": (0.22, 0.32), "BAGEL/quality": (0.19, 0.26),
    "SFHOT/naturalness": (0.44, 0.48), "SFHOT/quality": (0.44, 0.51),
    "SFRES/naturalness": (0.24, 0.25), "SFRES/quality": (0.27, 0.27),
}


def markdown(reports: dict[str, str], split: str = "all") -> str:
    """A table of Spearman / Pearson per dataset and rating for several reports (label -> gruen_report.json)."""
    loaded = {k: json.loads(Path(v).read_text()) for k, v in reports.items()}
    head = "| dataset / rating | paper ρ / r | " + " | ".join(f"{k} ρ / r" for k in loaded) + " |"
    lines = [head, "|" + "---|" * (2 + len(loaded))]
    for key, (pr, pp) in PAPER_TABLE3.items():
        cells = []
        for rep in loaded.values():
            v = rep.get(split, {}).get(key)
            cells.append("—" if v is None else f"{v['spearman']:.2f} / {v['pearson']:.2f} (n={v['n']})")
        lines.append(f"| {key} | {pr:.2f} / {pp:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table3_main(argv=None) -> str:
    args = list(argv or [])
    split = "all"
    if args and args[0].startswith("--split="):
        split, args = args[0].split("=", 1)[1], args[1:]
    if not args:
        raise SystemExit("usage: python -m experiments.gruen table3 [--split=all|dev|test] label=gruen_report.json ...")
    table = markdown(dict(a.split("=", 1) for a in args), split)
    print(table)
    return table


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"order": order_main, "table3": table3_main}
    if not argv or argv[0] not in commands:
        raise SystemExit(f"usage: python -m experiments.gruen {{{'|'.join(commands)}}} ...  (see the module docstring)")
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    main()
