"""One digest of every verdict and invented fact the ``coverage`` check gives on a rated dataset's system outputs, per
lexicon: two checkouts that print the same digest read every output alike (docs/results/content-log.md, "A lone
digit; a predicate trigger alone", where a matcher change is shown to leave the EMNLP17 outputs untouched).

    OMP_NUM_THREADS=1 python -m experiments.verdict_digest --data-dir ../shared/data --lexicon auto sf
    # another commit's matcher on the same outputs:
    git worktree add /tmp/old COMMIT && PYTHONPATH=/tmp/old OMP_NUM_THREADS=1 python -m experiments.verdict_digest ...

Only the outputs and their MRs are read, never the ratings. ``--dataset`` is one of ``qe.data.datasets``' rated sets
(EMNLP17 by default; the project's held-out sets are not among them).
"""
from __future__ import annotations

import argparse
import hashlib
import json


def digest(details: list[dict]) -> str:
    """The sha256 (12 hex digits) of the verdicts and invented facts, output by output, in a canonical JSON form."""
    h = hashlib.sha256()
    for d in details:
        h.update(json.dumps([d["verdicts"], d["hallucinated"], d["repeated"]], sort_keys=True).encode())
        h.update(b"\n")
    return h.hexdigest()[:12]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--dataset", default="emnlp17", choices=["emnlp17"])
    ap.add_argument("--lexicon", nargs="+", default=["auto"])
    a = ap.parse_args(argv)
    import qe
    from qe.data.datasets import emnlp17

    records = emnlp17(a.data_dir)
    outputs, mrs = [r.output for r in records], [r.mr for r in records]
    print(f"qe from {qe.__file__}; {len(records)} {a.dataset} outputs")
    for lex in a.lexicon:
        scorer = qe.load("coverage", lexicon=lex, data_dir=a.data_dir)
        details: list[dict] = []
        for i in range(0, len(outputs), 500):
            details.extend(scorer.details(outputs[i:i + 500], mrs=mrs[i:i + 500]))
        invented = sum(len(d["hallucinated"]) for d in details)
        print(f"lexicon={lex}: digest {digest(details)}, {invented} invented facts")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
