"""benchmarks/gpu_check.py's runner and summary on a fake step list (tiny Python subprocesses, no benchmark): the
schema of summary.json, figures parsed from a step's JSON and from pytest's JUnit XML, goals judged, and a step
that fails, times out, lacks a module or data is recorded as such while the others still run. Not marked gpu."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gc():
    spec = importlib.util.spec_from_file_location("qe_bench_gpu_check", REPO / "benchmarks" / "gpu_check.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(mod)
    return mod


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="3">
<testcase classname="tests.gpu.test_gpu_tier" name="test_a[lm-bf16]" time="1.0"/>
<testcase classname="tests.gpu.test_gpu_tier" name="test_b" time="1.0"><failure message="boom">x</failure></testcase>
<testcase classname="tests.gpu.test_gpu_tier" name="test_c" time="0.0"><skipped message="needs 2 GPUs"/></testcase>
</testsuite></testsuites>"""


def _py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_summary_of_a_fake_check(gc, tmp_path, capsys):
    write = "import json, sys; json.dump({'a': {'b': 5}, 'rows': [{'x': 2}]}, open(sys.argv[1], 'w'))"
    steps = [
        gc.Step("ok", [*_py(write), "{json}"], 30,
                figures={"b": ("a.b", 3, "min"), "x": ("rows.0.x", 1, "max"), "gone": ("nope.0", None, "min")}),
        gc.Step("fails", _py("import sys; print('bad'); sys.exit(3)"), 30),
        gc.Step("missing", _py("pass"), 30, needs=("no_such_module_qe_xyz",)),
        gc.Step("nodata", _py("pass"), 30, needs_data=("no_such_folder_qe_xyz",)),
        gc.Step("slow", _py("import time; time.sleep(30)"), 1),
        gc.Step("junit", [*_py(f"import sys; open(sys.argv[1], 'w').write({JUNIT!r})"), "{json}"], 30, output="junit"),
    ]
    path = gc.run_check(steps, tmp_path / "out", smoke=True, deadline_s=120)
    s = json.loads(path.read_text())
    assert s["schema"] == 1 and s["smoke"] is True and s["seconds"] > 0
    for key in ("device", "torch", "cuda", "git_commit", "git_dirty", "python", "missing_modules", "data_dir"):
        assert key in s["env"], key
    assert "no_such_module_qe_xyz" in s["env"]["missing_modules"]
    by = {r["name"]: r for r in s["steps"]}
    assert [r["name"] for r in s["steps"]] == ["ok", "fails", "missing", "nodata", "slow", "junit"]
    for r in s["steps"]:
        assert set(r) == {"name", "what", "command", "budget_s", "rc", "status", "seconds", "figures", "output",
                          "reason"}
    assert by["ok"]["status"] == "passed" and by["ok"]["rc"] == 0 and by["ok"]["output"] == "ok.json"
    assert by["ok"]["figures"] == {"b": {"value": 5, "goal": 3, "meets_goal": True},
                                   "x": {"value": 2, "goal": 1, "meets_goal": False},
                                   "gone": {"value": None, "goal": None, "meets_goal": None}}
    assert s["goals_missed"] == ["ok.x"]
    assert by["fails"]["status"] == "failed" and by["fails"]["rc"] == 3
    assert by["missing"]["status"] == "skipped" and "no_such_module_qe_xyz" in by["missing"]["reason"]
    assert by["nodata"]["status"] == "skipped" and "no_such_folder_qe_xyz" in by["nodata"]["reason"]
    assert by["slow"]["status"] == "timeout" and by["slow"]["seconds"] < 15
    j = by["junit"]["figures"]
    assert j["passed"] == ["tests.gpu.test_gpu_tier::test_a[lm-bf16]"]
    assert j["failed"] == ["tests.gpu.test_gpu_tier::test_b"]
    assert j["skipped"] == [{"name": "tests.gpu.test_gpu_tier::test_c", "reason": "needs 2 GPUs"}]
    assert j["counts"] == {"passed": 1, "failed": 1, "errors": 0, "skipped": 1}
    assert s["status_counts"] == {"passed": 2, "failed": 1, "skipped": 2, "timeout": 1}
    log = (tmp_path / "out" / "gpu_check.log").read_text()
    assert "===== fails:" in log and "bad" in log
    # one line per missing module, naming it
    assert "Python module 'no_such_module_qe_xyz' is not installed" in capsys.readouterr().out


def test_deadline_stops_starting_steps(gc, tmp_path):
    path = gc.run_check([gc.Step("late", _py("pass"), 30)], tmp_path / "o", smoke=True, deadline_s=0)
    rec = json.loads(path.read_text())["steps"][0]
    assert rec["status"] == "skipped" and "deadline" in rec["reason"]


def test_every_real_step_is_well_formed(gc):
    """The real step lists (GPU and smoke) name the same steps, write their JSON where the runner reads it, and the
    default GPU budgets fit the 10-minute check."""
    gpu, smoke = gc.steps(False), gc.steps(True)
    assert [s.name for s in gpu] == [s.name for s in smoke]
    for s in gpu + smoke:
        assert "{json}" in s.cmd and s.budget_s > 0
        assert all(len(f) == 3 and f[2] in ("min", "max") for f in s.figures.values())
    assert sum(s.budget_s for s in gpu if not s.optional) <= 580
    assert all(f[1] is None for s in smoke for f in s.figures.values())  # smoke never judges goals
