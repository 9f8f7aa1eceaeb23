"""The matcher's verdicts on the shipped probe sets: a rebuild check that holds on any machine.

The zoo's tiny content-aligner check (tests/zoo/test_rebuild_check.py) trains a model, and a trained model's bits and
probabilities are not the same across CPUs (other SIMD paths sum floats in another order). The matcher is rules over
tokens, with no floats that decide a verdict, so its verdicts on the probe sets are the same everywhere: publishing
them (``qe/resources/probes/matcher_verdicts.json``) makes any change to the matcher's decisions show up on any
machine (given the same spaCy parser, which the record names), and the trained model's comparison is left to the
machine that published it.

Regenerate after a deliberate matcher change::

    python -m qe.zoo.matcher_probes -o qe/resources/probes/matcher_verdicts.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from qe.data.record import dumps

#: probe sets the matcher reads (attribute lists and dialogue acts; RDF triples)
PROBE_SETS = ("mr_outputs", "mr_triples")
#: the lexicon settings the check runs with: the default (the shipped lexicons) and the rules alone
LEXICONS = ("auto", "none")


def published_path() -> Path:
    from qe.core.paths import resources_dir

    return resources_dir() / "probes" / "matcher_verdicts.json"


def _row(al) -> dict[str, Any]:
    """One probe's decisions, in a form that compares exactly: each fact's status (and the value a wrong one says),
    the invented facts and the repeats, sorted."""
    return {"facts": [[v.slot, v.value, v.status] + ([v.said_value] if v.said_value else []) for v in al.verdicts],
            "invented": sorted([h.get("slot") or "", str(h.get("value") or h.get("text") or "")]
                               for h in al.hallucinated),
            "repeated": sorted(str(r.get("slot") or "") for r in al.repeated)}


def verdicts(lexicon: str = "auto", probe_sets: Sequence[str] = PROBE_SETS, data_dir: str | None = None
             ) -> dict[str, Any]:
    """``{probe set: {"sha256": <file>, "rows": {probe id: decisions}}}`` of the matcher with ``lexicon``."""
    from qe.content.scorer import CoverageScorer
    from qe.zoo.fingerprint import load_probes

    scorer = CoverageScorer(lexicon=lexicon, data_dir=data_dir)
    out: dict[str, Any] = {}
    for name in probe_sets:
        probes = load_probes(name)
        rows = [r for r in probes.rows if r.get("mr")]
        als = scorer.align([r["output"] for r in rows], [r["mr"] for r in rows])
        out[name] = {"sha256": probes.sha256, "rows": {str(r["id"]): _row(a) for r, a in zip(rows, als)}}
    return out


def parser_name() -> str:
    """The spaCy pipeline the matcher parses with where distance is in doubt (``en_core_web_md-3.8.0``), or
    ``none``: another pipeline may attach a value word otherwise, so the record says which one it was made with."""
    from qe.content.align import _syntax_pipeline

    nlp = _syntax_pipeline()
    return "none" if nlp is None else f"{nlp.meta.get('lang')}_{nlp.meta.get('name')}-{nlp.meta.get('version')}"


def snapshot(data_dir: str | None = None) -> dict[str, Any]:
    """The whole published record: one :func:`verdicts` per lexicon setting, a digest of them, and the parser."""
    body = {lex: verdicts(lex, data_dir=data_dir) for lex in LEXICONS}
    digest = hashlib.sha256(dumps(body, sort_keys=True).encode("utf-8")).hexdigest()
    return {"version": 1, "digest": digest, "parser": parser_name(), "lexicons": body}


def differences(published: dict[str, Any], now: dict[str, Any], limit: int = 20) -> list[str]:
    """What moved, probe by probe: ``lexicon / probe set / id: published -> now`` (at most ``limit`` lines)."""
    lines: list[str] = []
    for lex in sorted(set(published.get("lexicons", {})) | set(now.get("lexicons", {}))):
        a, b = published.get("lexicons", {}).get(lex, {}), now.get("lexicons", {}).get(lex, {})
        for ps in sorted(set(a) | set(b)):
            ra, rb = a.get(ps, {}).get("rows", {}), b.get(ps, {}).get("rows", {})
            if a.get(ps, {}).get("sha256") != b.get(ps, {}).get("sha256"):
                lines.append(f"{lex} / {ps}: the probe file changed")
            for pid in sorted(set(ra) | set(rb)):
                if ra.get(pid) != rb.get(pid):
                    lines.append(f"{lex} / {ps} / {pid}: {json.dumps(ra.get(pid))} -> {json.dumps(rb.get(pid))}")
    return lines[:limit] + ([f"... and {len(lines) - limit} more"] if len(lines) > limit else [])


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m qe.zoo.matcher_probes", description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", help="write the record here (default: print the differences from the published)")
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args(argv)
    now = snapshot(args.data_dir)
    if args.out:
        Path(args.out).write_text(dumps(now, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                                  encoding="utf-8")
        print(f"matcher probe verdicts written to {args.out} (digest {now['digest'][:12]})")
        return 0
    published = json.loads(published_path().read_text(encoding="utf-8"))
    diff = differences(published, now)
    print("\n".join(diff) if diff else f"same as published ({now['digest'][:12]})")
    return 1 if diff else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
