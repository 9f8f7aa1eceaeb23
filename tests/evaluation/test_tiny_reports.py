"""Reports on tiny inputs (issue 29, part 4): rated files with 1, 2 and 3 records, one system, one rating value and no
`system` field each give a report -- through `qe evaluate` and through the Python API -- whose undefined sections
say why (in the Summary, once per reason), never a traceback; and a property test over small random rated files."""
from __future__ import annotations

import csv
import json
import math
import random
import re
from pathlib import Path

import pytest

from qe import app
from qe.data import load_records, records_from_dicts
from qe.evaluation.runner import evaluate_records

#: cheap statistics: the tiny-input paths are what is tested, not the resampling
FAST_STATS = {"bootstrap": {"n": 20}, "permutation": {"n": 20}}
FAST_ARGS = ["stats.bootstrap.n=20", "stats.permutation.n=20", "progress=false"]
#: the length baseline (the default scorer group) and sentence BLEU: reference-based, with a pooled corpus score
MODELS = ["bleu-4"]


def _strict(text: str):
    def refuse(name):
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def assert_strict_outputs(out: Path) -> None:
    """Every JSON / JSONL file of a run parses with a parser that refuses NaN and Infinity."""
    files = sorted(out.glob("*.json")) + sorted(out.glob("*.jsonl"))
    assert any(f.name == "scores.jsonl" for f in files), files
    for f in files:
        text = f.read_text(encoding="utf-8")
        if f.suffix == ".jsonl":
            for n, line in enumerate(text.splitlines(), 1):
                assert line.strip(), f"{f}:{n}: empty line"
                _strict(line)
        else:
            _strict(text)


def summary_of(report: str) -> str:
    return report.split("## Settings")[0]


def assert_explained(report: str, undefined: dict[str, str] | None = None) -> None:
    """Every skipped section points to the Summary, and the Summary says why (each reason once)."""
    summary = summary_of(report)
    if "_Undefined (the reason is in the Summary)" in report:
        assert "Undefined (" in summary, summary
    for reason in (undefined or {}).values():
        assert summary.count(f"Undefined ({reason})") == 1, (reason, summary)
    assert re.search(r"\bnan\b|\binf\b", report) is None, "a raw nan / inf in report.md"
    assert "Traceback" not in report


def _rec(i, system="S", quality=3.0, *, with_system=True, mr=None, **extra):
    r = {"id": f"r{i}", "output": " ".join(["the cat sat on the mat"] * (1 + i % 3)) + f" {i}",
         "refs": ["the cat sat on the mat"], "ratings": {"quality": quality}}
    if with_system:
        r["system"] = system
    if mr is not None:
        r["mr"] = mr
    r.update(extra)
    return r


#: name -> (records, phrases the Summary must contain)
CASES = {
    "one_record": ([_rec(0)], ["only 1 rated output", "1 system; a system-level correlation needs at least 3",
                               "1 system, so there is no pair of systems to compare", "Instance level (every protocol)"]),
    "two_records": ([_rec(0, quality=2.0), _rec(1, quality=4.0)],
                    ["only 2 rated outputs", "a system-level correlation needs at least 3"]),
    "three_records_one_system": ([_rec(i, quality=float(i + 1)) for i in range(3)],
                                 ["1 system; a system-level correlation needs at least 3",
                                  "1 system, so there is no pair of systems to compare"]),
    "one_rating_value": ([_rec(i, system=f"S{i % 3}", quality=4.0) for i in range(6)],
                         ["every `quality` rating is 4", "every correlation and test on `quality`"]),
    "no_system_field": ([_rec(i, quality=float(i % 4), with_system=False) for i in range(5)],
                        ["the records have no `system` field"]),
}


def _write(path: Path, rows: list[dict]) -> Path:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return path
    aspects = sorted({k for r in rows for k in r.get("ratings", {})})
    cols = ["id"] + (["system"] if any("system" in r for r in rows) else []) + \
        (["mr"] if any("mr" in r for r in rows) else []) + ["output", "refs"] + [f"ratings.{a}" for a in aspects]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            row = []
            for c in cols:
                if c.startswith("ratings."):
                    v = r["ratings"].get(c[8:])
                    row.append("" if v is None or (isinstance(v, float) and math.isnan(v)) else v)
                elif c == "refs":
                    row.append(r["refs"][0] if r.get("refs") else "")
                else:
                    row.append(r.get(c, ""))
            w.writerow(row)
    return path


def _cli(tmp_path: Path, data: Path, *extra: str) -> Path:
    out = tmp_path / "run"
    rc = app.evaluate(["dataset=file", f"dataset.name={data}", f"output_dir={out}",
                       f"hydra.run.dir={tmp_path / 'hydra'}", f"models=[{','.join(MODELS)}]", *FAST_ARGS, *extra])
    assert rc == 0
    return out


# ---- through the CLI (`qe evaluate`, in process) ---------------------------------------------------------------
@pytest.mark.parametrize("case", list(CASES))
def test_tiny_file_through_the_cli_gives_a_report_that_says_why(case, tmp_path, capfd):
    rows, phrases = CASES[case]
    data = _write(tmp_path / f"{case}.jsonl", rows)
    out = _cli(tmp_path, data, "plots.enabled=" + ("true" if case in ("one_record", "no_system_field") else "false"))
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Warning" not in err, err
    report = (out / "report.md").read_text(encoding="utf-8")
    summary = summary_of(report)
    for phrase in phrases:
        assert phrase in summary, (phrase, summary)
    assert_explained(report)
    assert_strict_outputs(out)
    scores = [_strict(x) for x in (out / "scores.jsonl").read_text().splitlines()]
    assert [s["id"] for s in scores] == [r["id"] for r in rows]
    assert set(scores[0]["scores"]) == {"length", "bleu-4"}


def test_single_record_csv_through_the_console_script(tmp_path):
    """The issue's crash (`'DataFrame' object has no attribute 'level'` in system_section), as a user runs it."""
    import subprocess
    import sys

    data = tmp_path / "one.csv"
    data.write_text("id,system,output,ratings.quality\nx1,A,the cat sat on the mat,\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "qe", "evaluate", "dataset=file", f"dataset.name={data}",
                           f"output_dir={tmp_path / 'run'}", f"hydra.run.dir={tmp_path / 'hydra'}", "plots.enabled=false",
                           *FAST_ARGS], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    summary = summary_of(report)
    # the one rating is missing (an empty CSV cell): nothing is rated, and the report says so
    assert "only 0 rated outputs" in summary and "no record has a value for the rating `quality`" in summary
    assert "## System level" in report and "## Instance level" in report
    assert_explained(report)
    assert_strict_outputs(tmp_path / "run")
    row = _strict((tmp_path / "run" / "scores.jsonl").read_text())
    assert row["ratings"] == {"quality": None}


# ---- through the Python API ------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(CASES))
def test_tiny_records_through_the_python_api(case, tmp_path, capfd):
    rows, phrases = CASES[case]
    res = evaluate_records(records_from_dicts(rows), tmp_path / "out", scorers={"length": "length"}, models=MODELS,
                           stats=FAST_STATS, plots=False, progress=False)
    assert capfd.readouterr().err == ""  # no numpy / scipy / statsmodels warnings
    report = res["report"].read_text(encoding="utf-8")
    undefined = res["results"].undefined
    assert undefined, "a tiny input leaves something undefined"
    for phrase in phrases:
        assert phrase in summary_of(report)
    assert_explained(report, undefined)
    assert_strict_outputs(tmp_path / "out")


def test_what_is_undefined_on_tiny_inputs(tmp_path):
    """The keys and reasons of Results.undefined, case by case."""
    def undefined(rows, **kw):
        res = evaluate_records(records_from_dicts(rows), tmp_path / f"o{len(list(tmp_path.iterdir()))}",
                               scorers={"length": "length"}, stats=FAST_STATS, plots=False, progress=False, **kw)
        return res["results"].undefined, res["results"]

    und, res = undefined(CASES["one_record"][0])
    assert {"instance", "errors", "system", "pairs", "confounds"} <= set(und)
    assert und["system"].startswith("1 system;")
    assert res.correlations.empty and "level" in res.correlations.columns

    und, res = undefined(CASES["three_records_one_system"][0])
    assert "instance" not in und and "system" in und  # 3 outputs: instance level defined, system level not
    flat = res.correlations.query("level == 'instance' and protocol == 'none' and method == 'pearson'")
    assert len(flat) and (flat.n == 3).all()

    # two systems: pairwise accuracy of the two, no system-level correlation
    rows = [_rec(i, system=f"S{i % 2}", quality=float(i)) for i in range(4)]
    und, res = undefined(rows)
    assert und["system"].startswith("2 systems;") and "pairwise accuracy of the two" in und["system"]
    assert res.system_accuracy["pairs"].max() == 1

    # constant ratings: named, and no Tukey warnings (nothing to test)
    und, res = undefined(CASES["one_rating_value"][0])
    assert und["constant:quality"].startswith("every `quality` rating is 4")
    assert und["pairs"].startswith("nothing to test")


# ---- property test: small random rated files -------------------------------------------------------------------
def _random_rows(rnd: random.Random) -> list[dict]:
    n = rnd.randint(1, 6)
    n_sys = rnd.randint(1, 3)
    with_system = rnd.random() > 0.2
    aspects = ["quality"] + (["naturalness"] if rnd.random() < 0.4 else [])
    constant = rnd.random() < 0.2
    items = [f"inform(name=x{j})" for j in range(rnd.randint(1, 3))] if rnd.random() < 0.5 else None
    systems = [f"S{i % n_sys}" for i in range(n)]  # every one of the n_sys systems present when n allows
    rnd.shuffle(systems)
    rows = []
    for i in range(n):
        ratings = {}
        for a in aspects:
            v = 3.0 if constant else float(rnd.randint(1, 6))
            ratings[a] = None if rnd.random() < 0.25 else v
        r = {"id": f"p{i}", "output": " ".join(rnd.choice(["a", "cat", "sat", "on", "the", "mat", "."])
                                               for _ in range(rnd.randint(1, 12))),
             "refs": ["the cat sat on the mat ."], "ratings": ratings}
        if with_system:
            r["system"] = systems[i]
        if items:
            r["mr"] = rnd.choice(items)
        rows.append(r)
    return rows


def test_property_small_random_rated_files_never_crash_and_write_strict_json(tmp_path, capfd):
    rnd = random.Random(29)
    for case in range(20):
        rows = _random_rows(rnd)
        fmt = rnd.choice([".jsonl", ".csv"])
        d = tmp_path / f"case{case}"
        d.mkdir()
        data = _write(d / f"rated{fmt}", rows)
        what = f"case {case}: {data.read_text()}"
        if case % 2 == 0:  # the CLI, in process
            out = _cli(d, data, "plots.enabled=" + ("true" if case % 4 == 0 else "false"))
            report = (out / "report.md").read_text(encoding="utf-8")
            undefined = None
        else:  # the Python API on the same kind of file
            out = d / "out"
            res = evaluate_records(load_records(data), out, scorers={"length": "length"}, models=MODELS,
                                   stats=FAST_STATS, plots=case % 4 == 1, progress=False)
            report = res["report"].read_text(encoding="utf-8")
            undefined = res["results"].undefined
        err = capfd.readouterr().err
        assert "Traceback" not in err and "Warning" not in err, (what, err)
        assert report.startswith("# Meta-evaluation report"), what
        assert_explained(report, undefined)
        assert_strict_outputs(out)
        lines = (out / "scores.jsonl").read_text(encoding="utf-8").splitlines()
        assert len(lines) == len(rows), what
        for line, r in zip(lines, rows):
            got = _strict(line)
            assert got["id"] == r["id"]
            for a, v in r["ratings"].items():
                assert got["ratings"][a] == v, (what, line)  # a missing rating is null, never NaN
