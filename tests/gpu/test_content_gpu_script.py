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
