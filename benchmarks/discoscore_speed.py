"""Throughput of DiscoScore and the discourse baselines: documents (hypothesis-reference pairs) per second.

    PYTHONPATH=. python benchmarks/discoscore_speed.py                    # NeR18 summaries, MiniLM, auto device
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/discoscore_speed.py --device cpu --json outputs/discoscore/speed.json

Data: the 420 NeR18 system summaries with their references (mean 51 / 35 words) and, for long inputs, the 60
NeR18 source articles (mean ~800 words, so the encoder runs sliding windows) scored against their references.
Falls back to the embedded sample set when the shared data folder is absent.

Each scorer row starts from a *cold* engine (spaCy + encoder loaded beforehand and excluded; parse and
encode caches empty), so it includes parsing, encoding and the metric. ``warm`` rows reuse the caches of the
first run, i.e. what extra variants cost once texts are encoded. GPU is used when present (``--device cuda``).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing


def load_pairs(long: bool):
    from qe.data.datasets import load_dataset

    try:
        recs = load_dataset("ner18")
    except FileNotFoundError:
        recs = load_dataset("sample")
        return [r.output for r in recs], [r.refs or [r.output] for r in recs], "sample"
    if long:
        seen = {}
        for r in recs:
            seen.setdefault(r.extra["group"], r)
        return [r.source for r in seen.values()], [r.refs for r in seen.values()], "NeR18 sources"
    return [r.output for r in recs], [r.refs for r in recs], "NeR18 summaries"


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--device", default=None, help="cpu | cuda (default: cuda when present)")
    ap.add_argument("--scorers", default="ds-focus-nn,ds-focus-entity,ds-sent-u-nn,ds-sent-w-entity,rc,lc,"
                    "entity-graph,lexical-graph,lexical-chain")
    ap.add_argument("--json", default=None, help="also write the rows to this file")
    a = ap.parse_args(argv)

    import torch

    import qe
    from qe.discourse.engine import DiscourseEngine

    dev = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    print(f"device: {dev} ({torch.get_num_threads()} torch threads); encoder: {a.model}")
    rows = []
    for long in (False, True):
        outs, refs, what = load_pairs(long)
        names = a.scorers.split(",") if not long else ["ds-focus-nn", "ds-sent-u-nn"]
        shared = None
        for name in names:
            eng = DiscourseEngine(model=a.model, device=dev)
            _ = eng.nlp, eng.vectors
            if not name.startswith(("rc", "lc", "entity", "lexical")):
                _ = eng.encoder
            sc = qe.load(name, engine=eng)
            t = time.perf_counter()
            sc.score(outs, refs=refs if sc.requires_refs else None, progress=False)
            dt = time.perf_counter() - t
            rows.append({"data": what, "scorer": name, "cache": "cold", "docs": len(outs), "seconds": round(dt, 2),
                         "docs_per_s": round(len(outs) / dt, 1)})
            if shared is None and sc.requires_refs and name.startswith("ds"):
                shared = eng
        if shared is not None and not long:
            for name in names:
                if not name.startswith("ds"):
                    continue
                sc = qe.load(name, engine=shared)
                t = time.perf_counter()
                sc.score(outs, refs=refs, progress=False)
                dt = time.perf_counter() - t
                rows.append({"data": what, "scorer": name, "cache": "warm", "docs": len(outs),
                             "seconds": round(dt, 2), "docs_per_s": round(len(outs) / dt, 1)})
    print("| data | scorer | cache | docs | seconds | docs/s |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['data']} | {r['scorer']} | {r['cache']} | {r['docs']} | {r['seconds']} | {r['docs_per_s']} |")
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps({"device": dev, "model": a.model, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
