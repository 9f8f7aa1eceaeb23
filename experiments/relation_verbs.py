"""A lone verb between the MR's entities (docs/results/content-log.md, "A lone verb between the MR's entities"): with
triple MRs, a lone unexplained word that spaCy's parse makes a verb relating the MR's entities ("HIV genus is
*categorised* as Lentivirus", "*identified* by ISBN ...", "constructed *using* red granite") is no invented fact
(:meth:`qe.content.align.Matcher._relation_verb`). This measures the check with and without that rule (switched
off by patching :meth:`~qe.content.align.Matcher._relation_verb` for the length of a ``with without_rule():``
block).

    OMP_NUM_THREADS=1 python -m experiments.relation_verbs --data-dir ../shared/data

Reported: on the faithful WebNLG 2020 development references, the invented facts and those hand-labelled false alarms
(``experiments/gold/webnlg_dev_invented_labels.jsonl``); on the sets of :mod:`experiments.triple_words` (seed 0),
clean texts flagged and the added / swapped / relation texts detected. The rated correlations and the triple fact
gold: ``--ratings`` (ρ of ``coverage`` with the WebNLG 2020 ratings, without and with the rule, and the paired
difference's interval), and ``--run coverage_ranking|triple_fact_gold -- ARGS`` runs that experiment without the rule
(its own command runs it with). Only ``--ratings`` and ``--run coverage_ranking`` read ratings, to judge the rule after
it was written from the faithful references.
"""
from __future__ import annotations

import argparse
from contextlib import contextmanager


@contextmanager
def without_rule():
    """The check as it was before the rule (it never drops a lone verb between the MR's entities)."""
    from qe.content import align as A

    kept = A.Matcher._relation_verb
    A.Matcher._relation_verb = lambda self, *a, **k: False
    try:
        yield
    finally:
        A.Matcher._relation_verb = kept


def faithful(data_dir: str | None) -> dict[str, int]:
    from experiments.content_precision import invented_labels, webnlg_items
    from qe.content.scorer import CoverageScorer

    items = webnlg_items("dev", data_dir)
    details = CoverageScorer(lexicon="webnlg").details([i.ref for i in items], [i.mr for i in items])
    labels = invented_labels()
    got = [labels.get((it.where, h.get("said"))) for it, d in zip(items, details) for h in d["hallucinated"]]
    return {"references": len(items), "invented": len(got), "false_alarms": sum(x == "false_alarm" for x in got),
            "stated_or_reference_error": sum(x in ("stated", "reference_error") for x in got),
            "unlabelled": sum(x is None for x in got)}


def ratings(data_dir: str | None) -> int:
    """ρ (Spearman) of ``coverage`` with each WebNLG 2020 rating, without and with the rule, and the paired
    difference with its 95 % interval over 1,000 resamples of inputs (as ``experiments.coverage_ranking`` does)."""
    import numpy as np

    from experiments.coverage_ranking import (CRITERIA, _corr, grouped_bootstrap_diff, input_groups, tie_shares,
                                              webnlg_candidates)
    from qe.data.webnlg import webnlg2020

    records = webnlg2020(data_dir)
    groups = input_groups([r.extra.get("test_eid", r.mr) for r in records], [r.mr for r in records])
    with without_rule():
        old = webnlg_candidates(records, data_dir, None)["coverage"]
    new = webnlg_candidates(records, data_dir, None)["coverage"]
    print(f"WebNLG 2020 rated outputs: {len(records)}; tied pairs within an input "
          f"{tie_shares(old, groups)['within']:.3f} -> {tie_shares(new, groups)['within']:.3f}\n")
    print("| rating | ρ (r) without | ρ (r) with | ρ with − without [95 % interval] |\n|---|---|---|---|")
    for crit in CRITERIA:
        y = np.array([r.ratings[crit] for r in records], dtype=float)
        (r0, p0), (r1, p1) = _corr(old, y), _corr(new, y)
        d, lo, hi = grouped_bootstrap_diff(new, old, y, groups)
        print(f"| {crit} | {r0:.3f} ({p0:.3f}) | {r1:.3f} ({p1:.3f}) | {d:+.4f} [{lo:+.4f}, {hi:+.4f}] |")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.relation_verbs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--run", choices=("coverage_ranking", "triple_fact_gold"), default=None,
                    help="instead: run that experiment (its own options after --) without the rule")
    ap.add_argument("--ratings", action="store_true",
                    help="instead: ρ of coverage with the WebNLG 2020 ratings with and without the rule, and the "
                         "paired difference's 95 %% interval (1,000 resamples of inputs)")
    a, rest = ap.parse_known_args(argv)
    if a.ratings:
        return ratings(a.data_dir)
    if a.run:
        import importlib

        mod = importlib.import_module(f"experiments.{a.run}")
        with without_rule():
            return mod.main([x for x in rest if x != "--"])
    from experiments.triple_words import dev_sets, measure
    from qe.content import shipped
    from qe.data.webnlg import webnlg_entries

    sets = dev_sets(webnlg_entries("train", a.data_dir), webnlg_entries("dev", a.data_dir), 0)
    print("| lone verb between the MR's entities | faithful dev refs: invented (false alarms by hand / true / "
          "unlabelled) | clean flagged | added | swapped | relation detected |\n|---|---|---|---|---|---|")
    for name in ("counted (before)", "not counted (the rule)"):
        if name.startswith("counted"):
            with without_rule():
                f, m = faithful(a.data_dir), measure(shipped.load("webnlg"), sets)
        else:
            f, m = faithful(a.data_dir), measure(shipped.load("webnlg"), sets)
        print(f"| {name} | {f['invented']} ({f['false_alarms']} / {f['stated_or_reference_error']} / "
              f"{f['unlabelled']}) of {f['references']} | {100 * m['clean_flagged']:.1f} % | "
              f"{100 * m['added_detected']:.1f} % | {100 * m['swapped_detected']:.1f} % | "
              f"{100 * m['relation_detected']:.1f} % |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
