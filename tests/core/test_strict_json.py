"""Every output is strict JSON (issue 29, part 3): NaN anywhere in a written record becomes null and +-inf the
strings "inf" / "-inf" (qe.data.record.json_safe / dumps) -- scores.jsonl and the other files of `qe evaluate` /
`evaluate_records`, export manifests, RatPred / ensemble prediction files, caches -- and what qe reads back from
its own files turns null / "inf" into NaN / inf again. A guard keeps new writers from calling json.dump(s) directly."""
from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import numpy as np
import pytest

from qe import app
from qe.data import records_from_dicts
from tests.conftest import REPO


def strict(text: str):
    def refuse(name):
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def strict_lines(path: Path) -> list:
    return [strict(x) for x in path.read_text(encoding="utf-8").splitlines()]


def assert_run_outputs_strict(out: Path) -> None:
    files = sorted(out.glob("*.json")) + sorted(out.glob("*.jsonl"))
    assert {"scores.jsonl", "scores.meta.json"} <= {f.name for f in files}
    for f in files:
        strict_lines(f) if f.suffix == ".jsonl" else strict(f.read_text(encoding="utf-8"))


def test_strict_parser_refuses_what_json_dumps_writes_by_default():
    with pytest.raises(ValueError, match="NaN"):
        strict(json.dumps({"x": math.nan}))
    with pytest.raises(ValueError, match="Infinity"):
        strict(json.dumps([-math.inf]))


# ---- qe evaluate / evaluate_records -----------------------------------------------------------------------------
def test_scores_file_nan_inf_and_resume(tmp_path):
    from qe.evaluation.scoring import MetricInfo, _read_previous, ids_digest, write_scores

    recs = records_from_dicts([{"id": "a", "output": "x", "ratings": {"q": math.nan}},
                               {"id": "b", "output": "y", "ratings": {"q": math.inf}},
                               {"id": "c", "output": "z", "ratings": {"q": 2}}])
    metrics = {"m": np.array([math.nan, math.inf, -math.inf]), "n": np.array([1.0, 2.0, np.float32(3.5)])}
    info = {k: MetricInfo(k, "scorer") for k in metrics}
    corpus = {"m": {("D", "S"): math.nan}}
    write_scores(tmp_path, recs, [None, {"mr": ["s", "p", "o"]}, None], metrics, info, {"m": "spec"},
                 ids_digest(recs), corpus)
    rows = strict_lines(tmp_path / "scores.jsonl")
    assert [r["scores"]["m"] for r in rows] == [None, "inf", "-inf"]
    assert [r["ratings"]["q"] for r in rows] == [None, "inf", 2.0]
    assert rows[2]["scores"]["n"] == 3.5 and rows[1]["item"] == {"mr": ["s", "p", "o"]}
    meta = strict((tmp_path / "scores.meta.json").read_text())
    assert meta["corpus"]["m"] == {"D\x1fS": None}
    # a resumed run reads its own checkpoint back as NaN / inf
    cols, _ = _read_previous(tmp_path, ids_digest(recs))
    m = cols["m"]
    assert math.isnan(m[0]) and m[1] == math.inf and m[2] == -math.inf


def test_qe_evaluate_missing_csv_rating_and_non_finite_metric_file(tmp_path, capfd):
    """The issue's case (a missing rating in a CSV passed through as NaN), through `qe evaluate`: null in
    scores.jsonl; a metric file's nan / inf scores are null / "inf" and left out of the statistics with a note."""
    data = tmp_path / "rated.csv"
    rows = ["id,system,output,ratings.quality,ratings.naturalness"]
    for i in range(9):
        q = "" if i == 4 else str(1 + i % 5)
        rows.append(f"r{i},S{i % 3},{' '.join(['word'] * (2 + i))},{q},{1 + (i * 2) % 5}")
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    ext = tmp_path / "ext.csv"
    ext.write_text("id,score\n" + "".join(f"r{i},{ {2: 'nan', 5: 'inf'}.get(i, i / 10)}\n" for i in range(9)))
    out = tmp_path / "run"
    rc = app.evaluate(["dataset=file", f"dataset.name={data}", f"output_dir={out}", f"hydra.run.dir={tmp_path / 'h'}",
                       f"+metric_files.ext={ext}", "stats.bootstrap.n=20", "stats.permutation.n=20", "plots.enabled=false",
                       "progress=false"])
    assert rc == 0
    assert "Warning" not in capfd.readouterr().err
    assert_run_outputs_strict(out)
    got = {r["id"]: r for r in strict_lines(out / "scores.jsonl")}
    assert got["r4"]["ratings"]["quality"] is None and got["r4"]["ratings"]["naturalness"] == 4.0
    assert got["r2"]["scores"]["ext"] is None and got["r5"]["scores"]["ext"] == "inf"
    assert got["r0"]["scores"] == {"length": 2.0, "ext": 0.0}
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "metric 'ext': 1 infinite value(s) treated as missing" in report
    summary = strict((out / "summary.json").read_text())
    assert summary["records"] == 9


def test_python_api_infinite_and_missing_values(tmp_path, capfd):
    from qe.evaluation.runner import evaluate_records

    rows = [{"id": f"r{i}", "system": f"S{i % 3}", "output": "a b c " * (i + 1),
             "ratings": {"q": None if i == 4 else float(i % 5)},
             "metrics": {"col": {2: math.inf, 5: None, 7: -math.inf}.get(i, float(i))}} for i in range(9)]
    res = evaluate_records(records_from_dicts(rows), tmp_path / "out", scorers={"length": "length"},
                           stats={"bootstrap": {"n": 20}, "permutation": {"n": 20}}, plots=True, progress=False)
    # no RuntimeWarning from inf - inf, no LinAlgError in the figures (INFO log lines aside: a handler that an
    # earlier CLI test installed on the "qe" logger may still print them)
    assert [x for x in capfd.readouterr().err.splitlines() if not x.startswith("INFO ")] == []
    assert_run_outputs_strict(tmp_path / "out")
    got = strict_lines(tmp_path / "out" / "scores.jsonl")
    assert [g["scores"]["col"] for g in got][2:8] == ["inf", 3.0, 4.0, None, 6.0, "-inf"]
    assert got[4]["ratings"]["q"] is None
    d = res["data"]
    assert np.isnan(d.metrics["col"][[2, 5, 7]]).all()  # left out of every statistic, like NaN
    assert "metric 'col': 2 infinite value(s) treated as missing" in res["report"].read_text()


# ---- exports, predictions, caches --------------------------------------------------------------------------------
def test_export_manifest_is_strict_and_the_card_shows_a_null_figure_as_nan(tmp_path):
    from qe.core.export import MANIFEST, export_writer, read_manifest
    from qe.zoo.card import _figure_rows

    with export_writer(tmp_path / "exp", kind="test_kind", config={"lr": np.float32(0.5)}, card=False,
                       metrics={"val/corr": math.nan, "val/loss": np.float64(math.inf), "val/mae": 0.25,
                                "test/rmse": np.float32(-math.inf)}) as tmp:
        (tmp / "weights.bin").write_bytes(b"\0")
    m = strict((tmp_path / "exp" / MANIFEST).read_text(encoding="utf-8"))
    assert m["metrics"] == {"val/corr": None, "val/loss": "inf", "val/mae": 0.25, "test/rmse": "-inf"}
    assert m["config"] == {"lr": 0.5}
    assert read_manifest(tmp_path / "exp", "test_kind")["metrics"]["val/mae"] == 0.25
    rows = {k: v for k, v, _ in _figure_rows(m)}
    assert rows["val/corr"] == "NaN" and rows["val/mae"] == "0.25"


def test_ratpred_prediction_files_round_trip(tmp_path):
    from qe.ratpred.task import _read_jsonl, _read_run_info, _write_jsonl

    rows = [{"seed": 1, "fold": 0, "id": "a", "pred": math.nan, "raw": math.inf, "gold": 3.0},
            {"seed": 1, "fold": 0, "id": "b", "pred": 2.5, "raw": 2.4, "gold": math.nan}]
    p = tmp_path / "predictions.jsonl"
    _write_jsonl(p, rows)
    assert [r["pred"] for r in strict_lines(p)] == [None, 2.5] and strict_lines(p)[0]["raw"] == "inf"
    back = _read_jsonl(p)
    assert math.isnan(back[0]["pred"]) and back[0]["raw"] == math.inf and math.isnan(back[1]["gold"])
    assert back[1]["pred"] == 2.5 and back[0]["id"] == "a"
    from qe.core.jsonio import dumps

    (tmp_path / "result.json").write_text(dumps({"best_dev_corr": -math.inf, "test": {"pearson": math.nan}}))
    info = _read_run_info(tmp_path / "result.json")
    assert info["best_dev_corr"] == -math.inf and math.isnan(info["test"]["pearson"])


def test_ensemble_reads_null_predictions_as_nan(tmp_path):
    from qe.core.jsonio import dumps
    from qe.ensemble.task import read_run_predictions

    (tmp_path / "predictions.jsonl").write_text(
        dumps({"seed": 1, "fold": 0, "id": "a", "pred": None, "raw": "-inf", "gold": 4}) + "\n")
    row = read_run_predictions(tmp_path, "test")[(1, 0, "a")]
    assert math.isnan(row["pred"]) and row["raw"] == -math.inf and row["gold"] == 4.0


def test_gruen_part_cache_round_trips_nan_and_inf(tmp_path):
    from qe.gruen.scorer import PartCache

    cache = PartCache(tmp_path)
    res = (np.array([1.0, math.nan, math.inf]), np.array([3, 4, 5]))
    first = cache.get("pll|m", ["a", "b", "c"], lambda: res)
    (f,) = tmp_path.glob("*.json")
    strict(f.read_text())
    again = cache.get("pll|m", ["a", "b", "c"], lambda: pytest.fail("recomputed"))
    assert np.array_equal(again[0], first[0], equal_nan=True) and again[0].dtype == float
    assert again[1].tolist() == [3, 4, 5] and again[1].dtype.kind == "i"


# ---- guard: writers go through qe.data.record.dumps ------------------------------------------------------------
#: json.dump(s) calls that write no output though the guard's rule catches them, each with why (file, function)
NOT_OUTPUT = {
    ("qe/lm/task.py", "_cached_tokenizer"): "hashed into a cache key",
}
#: files that own the strict writer, or whose JSON output another part of issue 29 covers
OWNERS = {"qe/data/record.py", "qe/cli.py"}
#: calls that put text on disk or on a console
SINKS = {"write", "write_text", "write_bytes", "writelines", "encode", "print", "info", "warning"}


def _json_writes() -> list[tuple[str, str, int]]:
    """Every ``json.dump(...)`` in qe/, and every ``json.dumps(...)`` whose statement also writes, prints or encodes
    (a JSON text kept as a field value or an error message is not an output file). Returns (file, function, line)."""
    found = []
    for path in sorted((REPO / "qe").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel in OWNERS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("dump", "dumps") and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "json"):
                continue
            stmt, fn, up = None, "<module>", parents.get(node)
            while up is not None:
                if stmt is None and isinstance(up, ast.stmt):
                    stmt = up
                if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    fn = up.name
                    break
                up = parents.get(up)
            sinks = {c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", "")
                     for c in ast.walk(stmt) if isinstance(c, ast.Call)} if stmt is not None else set()
            if node.func.attr == "dump" or sinks & SINKS:
                found.append((rel, fn, node.lineno))
    return found


def test_the_guard_sees_a_json_writer():
    tree_src = "import json\ndef f(p, x):\n    p.write_text(json.dumps(x))\n"
    stmt = ast.parse(tree_src).body[1].body[0]
    assert {c.func.attr for c in ast.walk(stmt) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)} \
        & SINKS == {"write_text"}
    assert ("qe/lm/task.py", "_cached_tokenizer") in {(f, fn) for f, fn, _ in _json_writes()}


def test_every_json_writer_in_qe_is_strict():
    """A json.dump(s) that writes an output file or a console line writes NaN / Infinity unless it goes through
    qe.data.record.dumps; list it in NOT_OUTPUT (with why) only when what it writes is not an output."""
    offenders = [f"{f}:{line} in {fn}()" for f, fn, line in _json_writes() if (f, fn) not in NOT_OUTPUT]
    assert not offenders, ("use qe.data.record.dumps (strict JSON: NaN -> null, +-inf -> 'inf'/'-inf') in: "
                           + "; ".join(offenders))
