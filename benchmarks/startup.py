"""Start-up cost of the scoring side: `qe list`, `qe score` of 3 sentences with a word-LM export, and the content
check (`qe score -m coverage`, no option: lexicon=auto) on E2E MRs and on RDF triples against `qe score -m length`.

Issue 14's goal: `qe score` (3 sentences, word-LM export) within 2 s of `python -c "import torch"` on the same
machine, `qe list` under 1.5 s. Every command runs in a fresh interpreter, ``--repeat`` times; the table gives the
median wall time. ``--importtime`` adds the top cumulative imports of `qe score` (``python -X importtime``).

    python benchmarks/startup.py                          # this checkout (trains a tiny word LM export first)
    python benchmarks/startup.py --repo /tmp/qe-before    # another checkout, e.g. a git worktree of an older commit

Issue 49's goal: a second `qe score -m coverage` (its lexicon mined by a first call and read from the cache) starts
within 1 s of `qe score -m length` on the same input. The coverage rows need the data directory (E2E dev, WebNLG
2020 train); they use a fresh models folder (the lexicon cache), primed by one untimed call each.

The export is built with that checkout's own `train.py` (embedded sample corpus, `model=lstm_lm_small`, one short
epoch), so each checkout is measured with an export its code wrote.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SENTENCES = ["the golden fork is an italian restaurant .", "restaurant the fork golden .",
             "the committee approved the new budget on tuesday ."]


def timed(cmd: list[str], env: dict, cwd: Path, repeat: int) -> tuple[float, float, list[float]]:
    """(median wall s, median CPU s of the child, wall times): CPU time (user + system) is the figure to trust on
    a busy machine, where wall time also counts waiting for a core."""
    times, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        r = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return statistics.median(times), statistics.median(cpus), times


def build_export(repo: Path, work: Path, env: dict) -> Path:
    dest = work / "lm_export"
    cmd = [sys.executable, "train.py", "model=lstm_lm_small", "debug=fast", "logger=csv", "trainer=cpu",
           f"hydra.run.dir={work}/run", f"export_dir={dest}", "demo_sentences=[]", "test=false"]
    r = subprocess.run(cmd, env=env, cwd=repo, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"building the LM export failed:\n{r.stderr[-3000:]}")
    return dest


def importtime_top(cmd: list[str], env: dict, cwd: Path, n: int = 15) -> list[tuple[float, str]]:
    r = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], env=env, cwd=cwd, capture_output=True, text=True)
    rows = []
    for line in r.stderr.splitlines():
        # "import time: <self us> | <cumulative us> | <nesting spaces><module>"
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        parts = line.split("|", 2)
        if len(parts) != 3:
            continue
        try:
            cum = int(parts[1].strip())
        except ValueError:
            continue
        name = parts[2][1:]  # one space follows the bar; more mean a nested import
        if not name.startswith(" "):
            rows.append((cum / 1e6, name.strip()))
    return sorted(rows, reverse=True)[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--importtime", action="store_true")
    a = ap.parse_args()
    repo = Path(a.repo).resolve()
    env = {**os.environ, "PYTHONPATH": str(repo), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    with tempfile.TemporaryDirectory() as td:
        work = Path(td)
        export = build_export(repo, work, env)
        inp = work / "three.txt"
        inp.write_text("\n".join(SENTENCES) + "\n")
        py = sys.executable
        cmds = {
            'python -c "import torch"': [py, "-c", "import torch"],
            "qe list": [py, "-m", "qe.cli", "list"],
            "qe score (3 sentences, word LM)": [py, "-m", "qe.cli", "score", "--model", str(export), "--input",
                                                str(inp), "--output", str(work / "s.jsonl"), "--quiet"],
        }
        e2e_mr = "name[The Eagle], eatType[pub], priceRange[cheap], area[riverside]"
        triples = "Alan_Bean | birthPlace | Wheeler,_Texas ; Alan_Bean | nationality | United_States"
        for stem, mr, out in (("e2e", e2e_mr, "The Eagle is a cheap pub by the river ."),
                              ("triples", triples, "Alan Bean , born in Wheeler , Texas , is American .")):
            (work / f"{stem}.jsonl").write_text("".join(json.dumps({"id": f"{stem}{i}", "mr": mr, "output": out})
                                                        + "\n" for i in range(3)))
            args = ["--input", str(work / f"{stem}.jsonl"), "--output", str(work / f"{stem}.scores.jsonl"), "-q"]
            cmds[f"qe score -m length ({stem}, 3 outputs)"] = [py, "-m", "qe.cli", "score", "-m", "length", *args]
            cmds[f"qe score -m coverage ({stem}, 3 outputs, lexicon cached)"] = [py, "-m", "qe.cli", "score", "-m",
                                                                                  "coverage", *args]
        env["QE_MODELS"] = str(work / "models")  # a fresh lexicon cache, primed below
        for stem in ("e2e", "triples"):
            prime = cmds[f"qe score -m coverage ({stem}, 3 outputs, lexicon cached)"]
            t = time.perf_counter()
            r = subprocess.run(prime, env=env, cwd=repo, capture_output=True, text=True)
            print(f"first `qe score -m coverage` ({stem}: mines the lexicon): {time.perf_counter() - t:.1f} s"
                  + ("" if r.returncode == 0 else f" FAILED: {r.stderr[-500:]}"))
        rows = {}
        for name, cmd in cmds.items():
            rows[name] = timed(cmd, env, repo, a.repeat)
        base, base_cpu = rows['python -c "import torch"'][:2]
        print(f"repo: {repo}  (median of {a.repeat} fresh interpreters, OMP_NUM_THREADS={env['OMP_NUM_THREADS']}, "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)\n")
        print("| command | wall s (median) | minus `import torch` | CPU s (median) | minus `import torch` | wall runs (s) |")
        print("|---|---:|---:|---:|---:|---|")
        for name, (med, cpu, times) in rows.items():
            print(f"| `{name}` | {med:.2f} | {med - base:+.2f} | {cpu:.2f} | {cpu - base_cpu:+.2f} | "
                  f"{' '.join(f'{t:.2f}' for t in times)} |")
        for stem in ("e2e", "triples"):
            cov = rows[f"qe score -m coverage ({stem}, 3 outputs, lexicon cached)"]
            length = rows[f"qe score -m length ({stem}, 3 outputs)"]
            print(f"\ncoverage minus length ({stem}): wall {cov[0] - length[0]:+.2f} s, CPU {cov[1] - length[1]:+.2f} s "
                  f"(goal: within 1 s)")
        if a.importtime:
            print("\ntop-level imports of `qe score` by cumulative time (python -X importtime):\n")
            print("| module | cumulative s |")
            print("|---|---:|")
            for cum, name in importtime_top(cmds["qe score (3 sentences, word LM)"], env, repo):
                print(f"| {name} | {cum:.2f} |")


if __name__ == "__main__":
    main()
