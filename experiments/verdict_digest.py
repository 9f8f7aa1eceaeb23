"""One digest of every verdict and invented fact the ``coverage`` check gives on a rated dataset's system outputs, per
lexicon: two checkouts that print the same digest read every output alike (docs/results/content-log.md, "A lone
digit; a predicate trigger alone", where a matcher change is shown to leave the EMNLP17 outputs untouched).

    OMP_NUM_THREADS=1 python -m experiments.verdict_digest --data-dir ../shared/data --lexicon auto sf
    # another commit's matcher on the same outputs:
    git worktree add /tmp/old COMMIT && PYTHONPATH=/tmp/old OMP_NUM_THREADS=1 python -m experiments.verdict_digest ...

Only the outputs and their MRs are read, never the ratings. ``--dataset`` is one of ``qe.data.datasets``' rated sets
(EMNLP17 by default; the project's held-out sets are not among them).

``--labels`` also reads the verdicts against hand labels (:data:`LABELS`: every error verdict and invented fact the
check gave on the EMNLP17 outputs at 550fa03 with ``lexicon=sf``, read by hand): per domain, how many of the errors
(``omitted``, ``wrong``) and invented facts it gives now are false alarms, and how many it gives that nobody read.
The nearest this project comes, on data it may use, to the issue's blind goal of no false invented facts on rated
systems' outputs (docs/results/content-log.md, "Rated system outputs read by hand").

    OMP_NUM_THREADS=1 python -m experiments.verdict_digest --data-dir ../shared/data --lexicon sf auto --labels
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
from collections import Counter
from pathlib import Path

#: hand labels of the check's verdicts on EMNLP17 system outputs: one JSON object a line, ``where``
#: (``emnlp17/<record id>/<system>``), ``slot``, ``value``, ``status`` (``omitted``, ``wrong`` or ``invented``),
#: ``label`` (an error verdict: ``error`` or ``false_alarm``; an invented fact: ``stated`` or ``false_alarm``), ``note``
LABELS = Path(__file__).resolve().parent / "gold" / "emnlp17_verdict_labels.jsonl"


def read_labels(path: Path = LABELS) -> dict[tuple[str, str, str, str], str]:
    """``{(where, slot, value, "error" | "invented"): label}``; an error's label holds whether it says omitted or
    wrong (lexicons differ there, the fact is the same). A line without a known label is refused, naming it."""
    out: dict[tuple[str, str, str, str], str] = {}
    for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        r = json.loads(line)
        kind = "invented" if r.get("status") == "invented" else "error"
        ok = ("stated", "false_alarm") if kind == "invented" else ("error", "false_alarm")
        if r.get("label") not in ok or not r.get("where") or "slot" not in r:
            raise ValueError(f"{path}:{k}: a {kind} label needs 'where', 'slot' and 'label' one of {ok}")
        key = (r["where"], r["slot"], str(r.get("value")), kind)
        if out.get(key, r["label"]) != r["label"]:
            raise ValueError(f"{path}:{k}: {key} labelled both {out[key]} and {r['label']}")
        out[key] = r["label"]
    return out


def against_labels(records, details: list[dict], labels: dict) -> dict[str, Counter]:
    """Per dataset: ``errors``, ``errors_false`` (labelled false alarms), ``errors_unread``, and the same for
    ``invented``; ``facts`` checked (every verdict that is not ``unchecked``)."""
    out: dict[str, Counter] = {}
    for r, d in zip(records, details):
        c = out.setdefault(r.dataset, Counter())
        where = f"emnlp17/{r.id}/{r.system}"
        found = [(v["slot"], str(v["value"]), "error") for v in d["verdicts"] if v["status"] in ("omitted", "wrong")]
        found += [(h["slot"], str(h["value"]), "invented") for h in d["hallucinated"]]
        c["facts"] += sum(v["status"] != "unchecked" for v in d["verdicts"])
        for slot, value, kind in found:
            name = "errors" if kind == "error" else "invented"
            c[name] += 1
            label = labels.get((where, slot, value, kind))
            c[name + ("_unread" if label is None else "_false" if label == "false_alarm" else "_true")] += 1
    return out


#: the tallies a row of ``--out`` holds
COUNTS = ("facts", "errors", "errors_false", "errors_unread", "invented", "invented_false", "invented_unread")


def write_csv(path: str, rows: list[dict], argv: list[str] | None) -> None:
    """The tallies, one row per lexicon and dataset, each with the command that made it, the machine and commit
    (read by docs/gen_tables.py)."""
    import csv
    import platform
    import subprocess
    import sys

    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).resolve().parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = ""
    args = sys.argv[1:] if argv is None else argv
    command = "OMP_NUM_THREADS=1 python -m experiments.verdict_digest " + " ".join(args)
    machine = f"{os.cpu_count()}-core CPU ({platform.machine()})"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["id", "lexicon", "dataset", *COUNTS, "commit", "command", "machine",
                                           "section"])
        w.writeheader()
        for r in rows:
            w.writerow({**r, "commit": commit, "command": command, "machine": machine,
                        "section": "results/content-log.md#rated-system-outputs-read-by-hand"})


def _table(counts: dict[str, Counter]) -> str:
    head = "| dataset | facts | errors | of them false (hand) | unread | invented | of them false (hand) | unread |"
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    total = Counter()
    for name in sorted(counts) + ["all"]:
        c = total if name == "all" else counts[name]
        if name != "all":
            total.update(c)
        lines.append(f"| {name} | {c['facts']} | {c['errors']} | {c['errors_false']} | {c['errors_unread']} | "
                     f"{c['invented']} | {c['invented_false']} | {c['invented_unread']} |")
    return "\n".join(lines)


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
    ap.add_argument("--labels", action="store_true", help=f"read the verdicts against the hand labels in {LABELS.name}")
    ap.add_argument("--out", default=None, help="with --labels: write the tallies to this CSV (one row per lexicon "
                                                "and dataset, with its command, machine and commit)")
    a = ap.parse_args(argv)
    labels = read_labels() if a.labels else None
    table_rows: list[dict] = []
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
        if labels is not None:
            counts = against_labels(records, details, labels)
            print(_table(counts))
            for name in sorted(counts):
                c = counts[name]
                table_rows.append({"id": f"{lex}-{name.lower()}", "lexicon": lex, "dataset": name,
                                   **{k: c[k] for k in COUNTS}})
    if a.out and table_rows:
        write_csv(a.out, table_rows, argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
