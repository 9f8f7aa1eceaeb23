"""The content check on SF references of every act, per act: how many references of each act get no error.

    OMP_NUM_THREADS=1 python -m experiments.sf_acts --data-dir ../shared/data --split valid
    OMP_NUM_THREADS=1 python -m experiments.sf_acts --data-dir ../shared/data --split valid --show request select

The rules for what an act means (questions offer values, a binary slot selected with both values is one question,
no-match denies the entity; :data:`qe.content.align.QUESTION_ACTS`, :data:`qe.content.align.NO_MATCH_ACTS`) were
written reading the *valid* split's errors (``--show`` prints the references with an error, MR and text, to this
terminal only: the project stores no corpus text); the test split is reported by ``experiments.content_precision``
(rows ``sfres-acts`` / ``sfhot-acts``). Every reference whose MR has a slot is counted (``goodbye()`` is not).
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--split", default="valid", choices=("train", "valid", "test"))
    ap.add_argument("--lexicon", default="auto", help="coverage's lexicon option (default auto: the shipped sf)")
    ap.add_argument("--show", nargs="*", default=(), metavar="ACT", help="print these acts' references with an error")
    a = ap.parse_args(argv)

    import qe
    from experiments.content_precision import run_scorer, sf_items

    scorer = qe.load("coverage", lexicon=a.lexicon, data_dir=a.data_dir)
    print(f"# {scorer.signature}; SF {a.split}, every act with a slot")
    for dom in ("sfres", "sfhot"):
        items = sf_items(dom, a.split, a.data_dir, acts=None)
        details = run_scorer(scorer, [i.mr for i in items], [i.ref for i in items])
        by: dict[str, Counter] = defaultdict(Counter)
        for it, d in zip(items, details):
            act = it.mr.split("(", 1)[0]
            k = d["counts"]
            bad = k["omitted"] + k["wrong"] + k["hallucinated"] + k["repeated"]
            by[act]["refs"] += 1
            by[act]["bad"] += bad > 0
            for what in ("omitted", "wrong", "hallucinated", "repeated"):
                by[act][what] += k[what]
            if bad and act in a.show:
                errs = [(v["slot"], v.get("value"), v["status"], v.get("said")) for v in d["verdicts"]
                        if v["status"] in ("omitted", "wrong")]
                inv = [(h.get("slot"), h.get("value"), h.get("said")) for h in d["hallucinated"]]
                print(f"    {it.mr} | {it.ref} | {errs} {inv}")
        refs = sum(c["refs"] for c in by.values())
        bad = sum(c["bad"] for c in by.values())
        print(f"{dom} {a.split}: {refs} references, {100 - 100 * bad / refs:.1f} % with no error")
        print(f"  {'act':18s} {'refs':>5s} {'no error':>9s} {'omitted':>8s} {'wrong':>6s} {'invented':>9s} "
              f"{'repeated':>9s}")
        for act, c in sorted(by.items(), key=lambda x: -x[1]["refs"]):
            print(f"  {act:18s} {c['refs']:5d} {100 - 100 * c['bad'] / c['refs']:8.1f}% {c['omitted']:8d} "
                  f"{c['wrong']:6d} {c['hallucinated']:9d} {c['repeated']:9d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
