"""benchmarks/content_gpu.py without a GPU: its step list, the figures it reads from an evaluation folder (also
when the analysis did not finish), and a fake run in which a failed build skips its evaluation. Not marked gpu."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cg():
    spec = importlib.util.spec_from_file_location("qe_bench_content_gpu", REPO / "benchmarks" / "content_gpu.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_steps_build_with_the_gpu_schedule_and_evaluate_what_was_built(cg, tmp_path):
    steps = cg.steps(tmp_path, smoke=False)
    names = [n for n, _, _ in steps]
    assert names[:2] == ["build_webnlg_s42", "eval_webnlg_s42"] and "build_e2e_s42" in names
    build = dict((n, c) for n, c, _ in steps)
    assert build["build_webnlg_s42"][-3:] == ["build", "content-aligner-webnlg", "--gpu"]
    assert build["build_webnlg_s1"][-2:] == ["--seed", "1"]
    ev = build["eval_webnlg_s1"]
    assert f"+scorers.coverage_aligner.options.aligner={tmp_path / 'models_s1' / 'content-aligner-webnlg'}" in ev
    assert "+scorers.coverage_aligner_only.options.aligner_mode=aligner" in ev
    smoke = dict((n, c) for n, c, _ in cg.steps(tmp_path, smoke=True))
    assert "--gpu" not in smoke["build_webnlg_s42"] and "trainer.max_steps=2" in smoke["build_webnlg_s42"][-1]


def test_ratings_figures_with_and_without_the_analysis(cg, tmp_path):
    (tmp_path / "scores.jsonl").write_text('{"id": 1}\n{"id": 2}\n')
    got = cg.ratings_figures(tmp_path)
    assert got["outputs_scored"] == 2 and got["correlations"] is None and "rerun" in got["why"]
    (tmp_path / "correlations.csv").write_text(
        "level,protocol,subset,units,rating,metric,method,r\n"
        "instance,none,all,outputs,correctness,coverage,spearman,0.3\n"
        "instance,item,all,items,correctness,coverage,spearman,0.9\n"
        "system,system means,all,systems,data_coverage,coverage,pearson,0.8\n"
        "instance,none,all,outputs,fluency,coverage,spearman,0.1\n")
    got = cg.ratings_figures(tmp_path)
    assert got["correlations"] == {"coverage": {"correctness/instance_spearman": 0.3,
                                                "data_coverage/system_pearson": 0.8}}


def test_a_failed_build_skips_its_evaluation_and_the_run_says_so(cg, tmp_path):
    def plan(out, smoke):
        py = sys.executable
        return [("build_webnlg_s42", [py, "-c", "raise SystemExit(3)"], 30),
                ("eval_webnlg_s42", [py, "-c", "print('never')"], 30),
                ("build_webnlg_s1", [py, "-c", "print('built')"], 30),
                ("dev_webnlg_s1", [py, "-c", "print('log line'); print('{\"x\": 1}')"], 30)]

    rc = cg.main(["--out", str(tmp_path)], plan=plan)
    summary = json.loads((tmp_path / "summary.json").read_text())
    st = {s["name"]: s for s in summary["steps"]}
    assert rc == 1
    assert st["build_webnlg_s42"]["status"] == "failed" and st["build_webnlg_s42"]["rc"] == 3
    assert st["eval_webnlg_s42"]["status"] == "skipped" and "did not finish" in st["eval_webnlg_s42"]["why"]
    assert st["build_webnlg_s1"]["status"] == "passed"
    assert st["dev_webnlg_s1"]["figures"] == {"x": 1}


def test_e2e_plan_trains_both_folds_per_seed_and_validates_the_end_of_the_pass(cg, tmp_path):
    plan = cg.steps_e2e(tmp_path, smoke=False)
    names = [p[0] for p in plan]
    assert {n for n in names if n.startswith("train_full")} == {
        f"train_full_s{s}_{f}" for s in (42, 1, 2) for f in ("f01", "f234")}
    cmd = dict((p[0], p[1]) for p in plan)
    full = cmd["train_full_s1_f234"]
    assert "data.held_out=[2,3,4]" in full and "seed=1" in full and "trainer=gpu" in full
    # the recipe's schedule, read from it: one pass validated at each quarter (an integer interval never validates
    # the pass's last steps), fp32, deterministic; what a cross-fitted run sets itself is not taken from the recipe
    sched = full[full.index("trainer.enable_progress_bar=false") + 1:]
    assert sched == ["trainer.max_steps=-1", "trainer.max_epochs=1", "trainer.val_check_interval=0.25",
                     "trainer.check_val_every_n_epoch=1", "trainer=gpu", "trainer.precision=32-true",
                     "trainer.deterministic=true"]
    assert sum(a.startswith("seed=") for a in full) == 1 and sum(a.startswith("data.held_out=") for a in full) == 1
    assert "trainer.max_steps=400" in cmd["train_400_s2_f01"]
    ev = cmd["e2e_full_s2"]
    assert ev[ev.index("--aligner") + 1:ev.index("--json")] == [str(tmp_path / "full_s2_f01"),
                                                                 str(tmp_path / "full_s2_f234")]
    assert cg._needs(ev, tmp_path) == [str(tmp_path / "full_s2_f01"), str(tmp_path / "full_s2_f234")]
    groups = [p[3] for p in plan]
    assert groups[:7] == ["train_full"] * 7 and groups[7:10] == ["eval_full"] * 3


def test_a_group_runs_side_by_side_with_its_own_times_threads_and_skips(cg, tmp_path):
    py = sys.executable
    sleep = "import os, time; time.sleep({}); print(os.environ.get('OMP_NUM_THREADS'))"

    def plan(out, smoke):
        return [("train_a", [py, "-c", sleep.format(1.5)], 30, "g"),
                ("train_b", [py, "-c", sleep.format(0.2)], 30, "g"),
                ("train_slow", [py, "-c", sleep.format(30)], 2, "g"),
                ("e2e_a", [py, "-c", "print(1)", "--aligner", str(out / "missing_export"), "--json", "x"], 30, "h")]

    rc = cg.main(["--out", str(tmp_path)], plan=plan)
    st = {s["name"]: s for s in json.loads((tmp_path / "summary.json").read_text())["steps"]}
    assert rc == 1
    # side by side: every step of the group started before the first one to end had ended
    first_end = min(st[n]["start_s"] + st[n]["seconds"] for n in ("train_a", "train_b", "train_slow"))
    assert all(st[n]["start_s"] < first_end for n in ("train_a", "train_b", "train_slow"))
    assert st["train_a"]["status"] == st["train_b"]["status"] == "passed"
    assert st["train_b"]["seconds"] < st["train_a"]["seconds"]  # each step's own end, not when it was collected
    assert st["train_slow"]["status"] == "timeout"
    threads = str(max(1, (__import__("os").cpu_count() or 1) // 3))
    assert st["train_a"]["threads"] == int(threads) and (tmp_path / "train_a.log").read_text().strip() == threads
    assert st["e2e_a"]["status"] == "skipped" and "missing_export" in st["e2e_a"]["why"]
