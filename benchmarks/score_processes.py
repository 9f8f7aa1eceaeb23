"""`qe score` with one process vs `--devices N` gloo processes on CPU: wall time, CPU time, identical output.

    python benchmarks/score_processes.py                     # 4,000 sentences, devices 1 and 2
    python benchmarks/score_processes.py --n 20000 --devices 1 2 4 --export exports/wp_lm

Without ``--export`` a small word LM is trained first on the embedded sample corpus (`model=lstm_lm_small`, one
short epoch; weights barely matter for speed). The input is sentences of the sample corpus, cycled to ``--n``.
Each ``--devices N`` run starts N processes (Lightning Fabric, ddp_spawn, gloo), so it pays N start-ups; the
table gives the totals and whether the scores equal the one-process run's.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--devices", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--export", default=None)
    ap.add_argument("--model", default="lstm_lm_small", help="model config of the LM trained when no --export is given")
    a = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    with tempfile.TemporaryDirectory() as td:
        work = Path(td)
        export = a.export
        if export is None:
            export = str(work / "lm")
            subprocess.run([sys.executable, "train.py", f"model={a.model}", "debug=fast", "logger=none",
                            "trainer=cpu", f"hydra.run.dir={work}/run", f"export_dir={export}", "demo_sentences=[]",
                            "test=false"], cwd=REPO, env=env, check=True, capture_output=True)
        corpus = [s for s in (REPO / "qe/resources/sample_corpus.txt").read_text().splitlines() if s.strip()]
        inp = work / "in.txt"
        inp.write_text("\n".join(corpus[i % len(corpus)] for i in range(a.n)) + "\n")
        rows, ref = [], None
        for d in a.devices:
            out = work / f"out{d}.jsonl"
            cmd = [sys.executable, "-m", "qe.cli", "score", "-m", export, "-i", str(inp), "-o", str(out), "-q"]
            if d > 1:
                cmd += ["--devices", str(d), "--accelerator", "cpu"]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run(cmd, cwd=REPO, env=env, check=True)
            wall = time.perf_counter() - t
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            scores = [json.loads(x)["score"] for x in out.read_text().splitlines()]
            ref = scores if ref is None else ref
            diff = max((abs(x - y) for x, y in zip(scores, ref) if x is not None and y is not None), default=0.0)
            rows.append((d, wall, cpu, diff))
        print(f"{a.n} sentences, export {export}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, "
              f"OMP_NUM_THREADS={env['OMP_NUM_THREADS']}\n")
        print("| processes | wall s | CPU s (all processes) | sentences / wall s | max abs score difference vs 1 process |")
        print("|---:|---:|---:|---:|---:|")
        for d, wall, cpu, diff in rows:
            print(f"| {d} | {wall:.1f} | {cpu:.1f} | {a.n / wall:.0f} | {diff:.2e} |")


if __name__ == "__main__":
    main()
