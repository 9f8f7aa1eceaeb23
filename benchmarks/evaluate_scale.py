"""Time and peak memory of ``qe evaluate`` on a synthetic rated set as it grows (issue 57, "Third, scale").

For each N on the command line, a seeded rated file is written to a temporary folder: 10 systems, N / 10 inputs
(every system has an output for every input), an output of 3-30 words per system and input (one sentence, a fifth of
them two), and two human ratings with ties: ``quality`` on a 1-5 scale (integers) and ``adequacy`` on 0-100 (a mean
of 1-3 integer ratings, as crowd workers give them). ``qe evaluate`` then runs on it in a subprocess with the
``length`` scorer and every other setting at its default (bootstrap, permutations, confounds, plots, ...), and the
child's own peak resident memory is read from ``os.wait4`` (the same figure as ``/usr/bin/time -v``'s "Maximum
resident set size"). Prints one line per N: outputs, seconds, peak GB.

``--inputs source`` (the default) gives each input a source sentence, as WMT's rated sets have, and makes it the item
(``dataset.item_key=source``); ``--inputs mr`` gives E2E-style MRs instead (item = MR), which adds the report's
"Content errors" section (every output aligned with its MR). ``--columns K`` ships K precomputed metric columns in
the records (noisy copies of the quality), so that the metric-vs-metric tests (Williams, PERM-BOTH) run as well.

    OMP_NUM_THREADS=1 python benchmarks/evaluate_scale.py [N ...]        # default: 6000 60000 120000
    OMP_NUM_THREADS=1 python benchmarks/evaluate_scale.py 1000000 --stages --keep /tmp/eval_1m  # keep the folder

To measure another checkout (e.g. ``git archive HEAD | tar -x -C /tmp/orig`` before a change), run this file from
that folder with ``PYTHONPATH`` pointing there: ``python -m`` puts the working folder first on the module path.

``--extra`` passes further Hydra overrides to ``qe evaluate`` (e.g. ``--extra plots.enabled=false``). ``--stages``
also prints, from inside the run, the seconds and resident memory (at the end and at the peak, sampled every 5 ms)
of each stage: loading, scoring, building the arrays, each step of the analysis, figures, the content check.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("the a restaurant serves cheap italian food near river centre family friendly it is located in city "
         "with high customer rating and coffee shop pub that offers english french chinese moderate price").split()
SYSTEMS = 10


def write_rated(path: Path, n: int, seed: int = 0, inputs: str = "source", columns: int = 0) -> None:
    """``n`` rated outputs (rounded down to a multiple of 10): 10 systems x n / 10 inputs, with a system quality
    and an output quality that the ratings (and, weakly, the output length) follow, so that correlations are neither
    0 nor 1 and the ratings have the ties real ones have."""
    rng = random.Random(seed)
    items = n // SYSTEMS
    sys_q = [rng.gauss(0, 0.5) for _ in range(SYSTEMS)]
    with open(path, "w", encoding="utf-8") as f:
        for i in range(items):
            if inputs == "mr":
                given = {"mr": f"inform(name='place {i}';food='{rng.choice(WORDS)}';area='{rng.choice(WORDS)}')"}
            else:
                given = {"source": f"source sentence {i}: " + " ".join(rng.choice(WORDS) for _ in range(12)) + "."}
            for s in range(SYSTEMS):
                q = sys_q[s] + rng.gauss(0, 1)
                length = max(3, min(30, int(round(12 + 3 * q + rng.gauss(0, 5)))))
                words = [rng.choice(WORDS) for _ in range(length)]
                cut = length // 2 if rng.random() < 0.2 else length
                text = " ".join(words[:cut]) + "." + (" " + " ".join(words[cut:]) + "." if cut < length else "")
                quality = max(1, min(5, int(round(3 + q))))
                workers = rng.randint(1, 3)
                adequacy = sum(max(0, min(100, int(round(60 + 15 * q + rng.gauss(0, 15))))) for _ in range(workers))
                rec = {"id": f"i{i}-s{s}", "system": f"sys{s}", **given, "output": text,
                       "ratings": {"quality": float(quality), "adequacy": round(adequacy / workers, 2)}}
                if columns:
                    rec["metrics"] = {f"judge{k + 1}": round(q + rng.gauss(0, 1 + k), 4) for k in range(columns)}
                f.write(json.dumps(rec) + "\n")


STAGES = {"qe.data.datasets": ["load_dataset"],
          "qe.evaluation.runner": ["collect_metrics", "build_eval_data", "analyse", "content_errors"],
          "qe.evaluation.analysis": ["instance_correlations", "system_level", "wmt_measures", "error_measures",
                                     "item_accuracy", "williams_tests", "perm_both_tests", "between_datasets",
                                     "_system_pairs", "confounds", "human_agreement"],
          "qe.evaluation.plots": ["plot_all"], "qe.evaluation.report": ["write_outputs"]}


def staged(argv: list[str]) -> int:
    """``qe evaluate argv`` in this process, with each function of :data:`STAGES` timed and its peak resident
    memory sampled (a thread reads /proc/self/statm every 5 ms)."""
    import functools
    import importlib
    import threading

    page = os.sysconf("SC_PAGE_SIZE")

    def rss() -> float:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * page / 1e9

    peak = [0.0]
    lock = threading.Lock()  # a stage's reset of the peak must not be overwritten by a sample taken before it

    def sample():
        while True:
            r = rss()
            with lock:
                peak[0] = max(peak[0], r)
            time.sleep(0.005)

    threading.Thread(target=sample, daemon=True).start()
    depth = [0]

    def wrap(mod, name):
        f = getattr(mod, name, None)
        if f is None:  # a stage this checkout does not have
            return

        @functools.wraps(f)
        def timed(*a, **k):
            with lock:
                outer, peak[0] = peak[0], rss()
            t0 = time.perf_counter()
            depth[0] += 1
            try:
                return f(*a, **k)
            finally:
                depth[0] -= 1
                with lock:
                    own, peak[0] = peak[0], max(outer, peak[0])
                print(f"  stage {'  ' * depth[0]}{name}: {time.perf_counter() - t0:.1f} s, "
                      f"{rss():.2f} GB at the end, peak {own:.2f} GB", file=sys.stderr, flush=True)

        setattr(mod, name, timed)

    for module, names in STAGES.items():
        mod = importlib.import_module(module)
        for name in names:
            wrap(mod, name)
    from qe.app import evaluate

    return evaluate(argv)


def run_one(n: int, work: Path, extra: list[str], seed: int, inputs: str, columns: int,
            stages: bool = False) -> tuple[float, float, int]:
    """(seconds, peak GB of the ``qe evaluate`` process, exit status) for ``n`` outputs."""
    data = work / f"rated_{n}.jsonl"
    write_rated(data, n, seed, inputs, columns)
    out = work / f"eval_{n}"
    args = ["dataset=file", f"dataset.name={data}", f"dataset.item_key={inputs}", f"hydra.run.dir={out}",
            "scorer=[length]", *extra]
    cmd = [sys.executable, *([__file__, "--staged"] if stages else ["-m", "qe.evaluation.cli"]), *args]
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    t0 = time.perf_counter()
    with open(work / f"eval_{n}.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    secs = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return secs, usage.ru_maxrss * 1024 / 1e9, proc.returncode  # ru_maxrss: KiB on Linux


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", nargs="*", type=int, default=[6000, 60000, 120000], help="rated outputs per run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--inputs", choices=("source", "mr"), default="source",
                    help="what each input is: a source sentence (WMT) or an E2E-style MR (adds the content check)")
    ap.add_argument("--columns", type=int, default=0, help="precomputed metric columns shipped in the records")
    ap.add_argument("--keep", default=None, help="write the rated files and run folders here (kept)")
    ap.add_argument("--extra", nargs="*", default=[], help="more Hydra overrides for qe evaluate")
    ap.add_argument("--stages", action="store_true", help="print each stage's seconds and memory (from the log)")
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--staged"]:  # the child of --stages
        return staged(argv[1:])
    a = ap.parse_args(argv)
    tmp = None if a.keep else tempfile.TemporaryDirectory(prefix="qe_eval_scale_")
    work = Path(a.keep or tmp.name)
    work.mkdir(parents=True, exist_ok=True)
    print(f"{'outputs':>9} {'seconds':>8} {'peak GB':>8}", flush=True)
    failed = 0
    for n in a.n:
        secs, gb, rc = run_one(n, work, a.extra, a.seed, a.inputs, a.columns, a.stages)
        print(f"{n:>9,} {secs:>8.1f} {gb:>8.2f}" + (f"   FAILED (exit {rc}; see {work}/eval_{n}.log)" if rc else ""),
              flush=True)
        if a.stages:
            for line in (work / f"eval_{n}.log").read_text().splitlines():
                if line.startswith("  stage "):
                    print(line[len("  stage "):], flush=True)
        failed += rc != 0
    if tmp is not None:
        tmp.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
