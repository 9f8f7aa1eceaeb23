"""The content check on SF references of every act, per act: how many references of each act get no error.

    OMP_NUM_THREADS=1 python -m experiments.sf_acts --data-dir ../shared/data --split valid
    OMP_NUM_THREADS=1 python -m experiments.sf_acts --data-dir ../shared/data --split valid --show request select
    OMP_NUM_THREADS=1 python -m experiments.sf_acts --data-dir ../shared/data --split valid --wrong-slot
    python -m experiments.sf_acts --data-dir ../shared/data --kindred

The rules for what an act means (questions offer values, a binary slot selected with both values is one question,
no-match denies the entity; :data:`qe.content.align.QUESTION_ACTS`, :data:`qe.content.align.NO_MATCH_ACTS`) were
written reading the *valid* split's errors (``--show`` prints the references with an error, MR and text, to this
terminal only: the project stores no corpus text); the test split is reported by ``experiments.content_precision``
(rows ``sfres-acts`` / ``sfhot-acts``). Every reference whose MR has a slot is counted (``goodbye()`` is not).

``--wrong-slot`` asks the other way, whether the check still sees a question for the wrong slot: each question for
one slot without a value (``request(area)``) is scored under a request for every other slot its domain's questions
ask, and the table counts how many are called ``realised`` (a question for the wrong slot passed), split into
kindred slots (:func:`qe.content.lexicon._kindred_groups` on the domain's training pairs: their questions share a
wording by design) and slots of another kind.

``--kindred`` prints, per domain's training pairs, what the miner's kindred rule reads: each pair of slots asked
without a value that share values (how many of the smaller slot's), and, for each one-word value of a slot never
asked so ("hotel" of ``type``), how many questions write it and how many of those ask for a kindred slot, with the
lift the miner would compute within that domain.
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
    ap.add_argument("--wrong-slot", action="store_true",
                    help="score each question under a request for another slot instead (see the module's doc)")
    ap.add_argument("--kindred", action="store_true", help="print what the kindred rule reads (see the module's doc)")
    a = ap.parse_args(argv)
    if a.wrong_slot:
        return wrong_slot(a)
    if a.kindred:
        return kindred(a)

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


def _training_facts(dom: str, data_dir: str | None) -> tuple[list, set[str]]:
    """The domain's training pairs as the miner reads them (facts per text, words), and the slots asked without a
    value."""
    from experiments.content_precision import sf_items
    from qe.core.mr import parse_mr

    texts = []
    for it in sf_items(dom, "train", data_dir, acts=None):
        facts: dict[str, set[str]] = defaultdict(set)
        for slot, v in parse_mr(it.mr, it.where)[1]:
            facts[slot].add(v or "")
        texts.append((facts, it.ref.split()))
    return texts, {k for f, _ in texts for k, vs in f.items() if "" in vs}


def kindred(a) -> int:
    """What the kindred rule of :func:`qe.content.lexicon._mine_about` reads on each SF domain's training pairs."""
    from qe.content.lexicon import BINARY_VALUES, UNCHECKED_VALUES, _kindred_groups, _lift

    for dom in ("sfres", "sfhot"):
        texts, asked = _training_facts(dom, a.data_dir)
        vals: dict[str, set[str]] = defaultdict(set)
        for facts, _ in texts:
            for k, vs in facts.items():
                vals[k] |= {v for v in vs if v not in UNCHECKED_VALUES and v not in BINARY_VALUES}
        groups = _kindred_groups(texts, asked)
        print(f"{dom}: asked without a value: {', '.join(sorted(asked))}")
        for g in groups:
            x, y = sorted(g, key=lambda k: (len(vals[k]), k))[:2]
            print(f"  kindred {sorted(g)}: {len(vals[x] & vals[y])} of {x}'s {len(vals[x])} values are {y}'s")
        questions = [(frozenset(k for k, vs in f.items() if "" in vs), set(t)) for f, t in texts]
        questions = [(keys, words) for keys, words in questions if keys]
        in_group = {k for g in groups for k in g}
        base = sum(1 for keys, _ in questions if keys & in_group) / len(questions)
        for slot in sorted(set(vals) - asked):
            for v in sorted(v for v in vals[slot] if " " not in v):
                hit = [keys for keys, words in questions if v in words]
                if len(hit) >= 5 and in_group:
                    c = sum(1 for keys in hit if keys & in_group)
                    print(f"  {slot}={v!r}: in {len(hit)} questions, {c} ask for a kindred slot "
                          f"(lift {_lift(c / len(hit), base):.2f} within {dom})")
    return 0


def wrong_slot(a) -> int:
    """Questions scored under a request for another slot: how many the check calls realised."""
    import qe
    from experiments.content_precision import run_scorer, sf_items
    from qe.content.lexicon import _kindred_groups

    scorer = qe.load("coverage", lexicon=a.lexicon, data_dir=a.data_dir)
    print(f"# {scorer.signature}; SF {a.split}, questions for one slot without a value, under another slot's request")
    print(f"  {'domain':7s} {'slots':8s} {'pairs':>6s} {'realised':>9s}")
    for dom in ("sfres", "sfhot"):
        texts, asked = _training_facts(dom, a.data_dir)
        groups = _kindred_groups(texts, asked)
        qs = [(it.mr[len("request("):-1], it.ref) for it in sf_items(dom, a.split, a.data_dir, acts=("request",))
              if "=" not in it.mr and "," not in it.mr]
        slots = sorted({s for s, _ in qs})
        mrs, refs, kinds = [], [], []
        for s, ref in qs:
            for o in slots:
                if o != s:
                    mrs.append(f"request({o})")
                    refs.append(ref)
                    kinds.append("kindred" if any({s, o} <= g for g in groups) else "other")
        got: Counter = Counter()
        for kind, d in zip(kinds, run_scorer(scorer, mrs, refs)):
            got[(kind, "pairs")] += 1
            got[(kind, "realised")] += d["verdicts"][0]["status"] == "realised"
        for kind in ("other", "kindred"):
            if got[(kind, "pairs")]:
                print(f"  {dom:7s} {kind:8s} {got[(kind, 'pairs')]:6d} {got[(kind, 'realised')]:9d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
