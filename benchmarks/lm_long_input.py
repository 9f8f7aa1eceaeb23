"""Very long inputs through the SLOR scorer: seconds, CPU seconds and peak RSS for one line of 1k / 10k / 50k words.

    python benchmarks/lm_long_input.py                                   # small (1x128) and default (2x512) LSTM
    python benchmarks/lm_long_input.py --export /tmp/lm_small --words 1000 10000 50000
    PYTHONPATH=/tmp/lm-before python benchmarks/lm_long_input.py --no-path   # the code of another checkout

Each measurement runs in a fresh process (so peak RSS belongs to that input alone): load the export, score one line
of N words drawn from the embedded sample corpus, report wall seconds, process CPU seconds, peak RSS and the score
(``logprob``: before/after comparisons must print the same number). Without ``--export`` the script writes exports
with random weights over the sample corpus's word vocabulary (speed does not depend on the weights): ``small``
(conf/model/lstm_lm_small.yaml sizes) and ``default`` (conf/model/lstm_lm.yaml, 2x512). ``--no-path`` keeps this
checkout off ``sys.path`` so that ``PYTHONPATH`` picks the ``qe`` package (e.g. an older checkout extracted with
``git archive <rev> | tar -x -C DIR``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SIZES = {"small": dict(embedding_dim=128, hidden_size=128, num_layers=1),
         "default": dict(embedding_dim=512, hidden_size=512, num_layers=2)}

CHILD = r"""
import json, random, resource, sys, time
import qe
export, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
from importlib.resources import files
words = files("qe").joinpath("resources/sample_corpus.txt").read_text(encoding="utf-8").split()
rng = random.Random(seed)
text = " ".join(rng.choice(words) for _ in range(n))
sc = qe.load(export, device="cpu", score="logprob")
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0, c0 = time.perf_counter(), time.process_time()
comps = sc.score_components([text], progress=False)
t1, c1 = time.perf_counter(), time.process_time()
print(json.dumps({"seconds": t1 - t0, "cpu_seconds": c1 - c0, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_before_mb": rss0 / 1024, "tokens": comps["length"][0], "logprob": comps["logprob"][0],
                  "chunk": getattr(sc, "last_chunk", None), "qe": qe.__file__}))
"""


def random_exports(dest: Path, names: list[str]) -> dict[str, Path]:
    import numpy as np
    import torch

    from qe.data.corpora import load_corpus
    from qe.lm import format as lm_format
    from qe.lm.format import unigram_logprobs
    from qe.lm.model import LSTMLM
    from qe.core.tokenization import WordTokenizer

    sents = load_corpus([{"name": "sample"}], None)
    tok = WordTokenizer.train(sents)
    ids = [np.asarray(tok.encode(s)) for s in sents]
    logp, _ = unigram_logprobs(ids, tok.vocab_size, (tok.pad_id, tok.bos_id, tok.eos_id))
    out = {}
    for name in names:
        torch.manual_seed(0)
        cfg = dict(vocab_size=tok.vocab_size, dropout=0.0, tie_weights=True, pad_id=tok.pad_id, **SIZES[name])
        out[name] = lm_format.save(dest / name, LSTMLM(**cfg), tok, logp, cfg)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--export", action="append", default=[], help="an slor export (repeatable); default: random ones")
    p.add_argument("--models", nargs="+", default=["small", "default"], choices=sorted(SIZES))
    p.add_argument("--words", nargs="+", type=int, default=[1000, 10_000, 50_000])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-path", action="store_true", help="score with the qe package PYTHONPATH gives")
    p.add_argument("--timeout", type=int, default=1800)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    env = dict(os.environ)
    if not args.no_path:
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.export:
            exports = {Path(e).name: Path(e) for e in args.export}
        else:
            sys.path.insert(0, str(REPO))
            exports = random_exports(Path(tmp), args.models)
        print(f"{'model':<10} {'words':>7} {'tokens':>7} {'seconds':>8} {'cpu_s':>8} {'peak_MB':>8} {'chunk':>6}  logprob")
        for name, export in exports.items():
            for n in args.words:
                # cwd outside any checkout: ``python -c`` puts the working directory first on sys.path
                r = subprocess.run([sys.executable, "-c", CHILD, str(Path(export).resolve()), str(n), str(args.seed)],
                                   env=env, cwd=tmp, capture_output=True, text=True, timeout=args.timeout)
                if r.returncode:
                    print(r.stderr[-2000:], file=sys.stderr)
                    raise SystemExit(r.returncode)
                row = {"model": name, "words": n, **json.loads(r.stdout.strip().splitlines()[-1])}
                rows.append(row)
                print(f"{name:<10} {n:>7} {int(row['tokens']):>7} {row['seconds']:>8.2f} {row['cpu_seconds']:>8.2f} "
                      f"{row['peak_rss_mb']:>8.0f} {str(row['chunk']):>6}  {row['logprob']:.4f}", flush=True)
    print(f"qe package: {rows[0]['qe'] if rows else '?'}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
