"""`qe evaluate` guards (issue 36, items 3, 7, 10, 12, 13): it never overwrites its input, two runs never share a run
folder, ratings outside `dataset.rating_range` are an error naming the record, a very long output is split for
sentence counting in linear time, and a run folder that cannot be written is one line with exit status 2."""
from __future__ import annotations

import datetime as _dt
import json
import time
from pathlib import Path

import pytest
from hydra.core.global_hydra import GlobalHydra

import qe
from qe import app
from qe.core.scorer import Scorer
from qe.data import records_from_dicts
from qe.evaluation.runner import evaluate_records
from qe.evaluation.scoring import EvaluationConfigError

FAST = ["stats.bootstrap.n=20", "stats.permutation.n=20", "progress=false", "plots.enabled=false",
        "stats.methods=[pearson]"]
CALLS = {"n": 0}


@qe.register_scorer("guards-counting")
class _Counting(Scorer):
    """Counts its calls: a run that reuses another run's scores never calls it."""

    name = "guards-counting"

    def _score(self, outputs, **kw):
        CALLS["n"] += 1
        return [float(len(o)) for o in outputs]


def _rows(n: int = 6, ratings=None) -> list[dict]:
    ratings = ratings or [1 + (i % 5) for i in range(n)]
    return [{"id": f"r{i}", "system": "AB"[i % 2], "mr": f"m{i // 2}",
             "output": "the cat sat on the mat " * (1 + i % 3), "ratings": {"quality": ratings[i]}} for i in range(n)]


def _write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _evaluate(*argv: str) -> int:
    GlobalHydra.instance().clear()
    try:
        return app.evaluate(list(argv))
    finally:
        GlobalHydra.instance().clear()


def _refused(capfd, *argv: str) -> str:
    """Run qe evaluate in process; it must end with exit status 2 and one line on stderr, no traceback."""
    with pytest.raises(SystemExit) as exc:
        _evaluate(*argv)
    err = capfd.readouterr().err
    assert exc.value.code == 2, err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("qe evaluate: error:")]
    assert len(lines) == 1, err
    return lines[0]


# ---- item 3: the input is never overwritten ------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["output_dir", "hydra.run.dir"])
def test_input_inside_the_run_folder_is_refused_before_anything_is_written(tmp_path, capfd, how):
    run = tmp_path / "run"
    data = _write(run / "scores.jsonl", _rows())
    before = data.read_bytes()
    where = [f"output_dir={run}", f"hydra.run.dir={tmp_path / 'hydra'}"] if how == "output_dir" else \
        [f"hydra.run.dir={run}"]
    line = _refused(capfd, "dataset=file", f"dataset.name={data}", *where, *FAST)
    assert str(data) in line and "overwrite" in line
    assert data.read_bytes() == before
    assert not (run / "report.md").exists() and not (run / "scores.meta.json").exists()


def test_a_csv_input_named_like_a_table_of_the_run_is_refused(tmp_path, capfd):
    run = tmp_path / "run"
    data = run / "correlations.csv"
    run.mkdir()
    data.write_text("id,system,output,ratings.quality\n" + "".join(f"x{i},A,out {i},{i % 5 + 1}\n" for i in range(6)),
                    encoding="utf-8")
    before = data.read_bytes()
    line = _refused(capfd, "dataset=file", f"dataset.name={data}", f"output_dir={run}",
                    f"hydra.run.dir={tmp_path / 'hydra'}", *FAST)
    assert "correlations.csv" in line
    assert data.read_bytes() == before


def test_input_elsewhere_in_the_run_folder_is_fine(tmp_path):
    run = tmp_path / "run"
    data = _write(run / "my_rated.jsonl", _rows())
    assert _evaluate("dataset=file", f"dataset.name={data}", f"output_dir={run}",
                     f"hydra.run.dir={tmp_path / 'hydra'}", *FAST) == 0
    assert (run / "report.md").is_file() and data.read_text(encoding="utf-8").count("\n") == 6


# ---- item 7: one run, one folder -----------------------------------------------------------------------------------
class _FrozenClock(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return cls(2026, 11, 26, 12, 0, 0)


def test_two_runs_in_the_same_second_get_two_folders_and_score_twice(tmp_path, monkeypatch):
    import hydra.core.utils

    monkeypatch.setattr(hydra.core.utils, "datetime", _FrozenClock)  # Hydra's ${now:...}: both runs in one second
    data = _write(tmp_path / "rated.jsonl", _rows())
    argv = ["dataset=file", f"dataset.name={data}", f"paths.root_dir={tmp_path}", "scorer=[]",
            "+scorers.count.model=guards-counting", *FAST]
    calls = CALLS["n"]
    assert _evaluate(*argv) == 0
    assert _evaluate(*argv, "title=second") == 0
    runs = sorted(p for p in (tmp_path / "outputs" / "evaluate" / "file").iterdir())
    assert [p.name for p in runs] == ["2026-11-26_12-00-00", "2026-11-26_12-00-00-2"]
    assert CALLS["n"] == calls + 2  # the second run scored; it did not reuse the first run's scores
    first, second = ((p / "report.md").read_text(encoding="utf-8") for p in runs)
    assert "second" not in first.splitlines()[0] and "second" in second.splitlines()[0]
    for p in runs:
        assert (p / "scores.jsonl").is_file() and (p / ".hydra" / "config.yaml").is_file()
        assert json.loads((p / "summary.json").read_text())["output_dir"] == str(p)


def test_claiming_a_run_folder_is_atomic_and_suffixed(tmp_path):
    from qe.core.rundir import claim_new_dir

    base = tmp_path / "a" / "b" / "2026-11-26_12-00-00"
    got = [claim_new_dir(str(base)) for _ in range(3)]
    assert got == [str(base), f"{base}-2", f"{base}-3"]
    assert all(Path(g).is_dir() for g in got)


def test_an_explicit_run_folder_still_resumes(tmp_path):
    """hydra.run.dir=<a run folder> asks for that folder: a rerun reuses its finished scorers (documented resume)."""
    data = _write(tmp_path / "rated.jsonl", _rows())
    argv = ["dataset=file", f"dataset.name={data}", f"hydra.run.dir={tmp_path / 'run'}", "scorer=[]",
            "+scorers.count.model=guards-counting", *FAST]
    calls = CALLS["n"]
    assert _evaluate(*argv) == 0 and _evaluate(*argv) == 0
    assert CALLS["n"] == calls + 1
    assert not (tmp_path / "run-2").exists()


# ---- item 10: ratings inside dataset.rating_range ------------------------------------------------------------------
@pytest.mark.parametrize("bad", [1000, -50])
def test_rating_outside_the_range_is_an_error_naming_the_record(tmp_path, capfd, bad):
    ratings = [1, 2, 3, bad, 4, 5]
    data = _write(tmp_path / "rated.jsonl", _rows(ratings=ratings))
    run = tmp_path / "run"
    line = _refused(capfd, "dataset=file", f"dataset.name={data}", "dataset.rating_range=[1,5]", f"output_dir={run}",
                    f"hydra.run.dir={tmp_path / 'hydra'}", *FAST)
    assert "'r3'" in line and "ratings.quality" in line and f"{bad:g}" in line and "[1, 5]" in line
    assert str(data) in line and "dataset.rating_range" in line
    assert not (run / "scores.jsonl").exists()  # refused before any scorer ran


def test_rating_range_checks_annotator_ratings_and_the_python_api(tmp_path):
    rows = _rows()
    rows[2]["ratings"] = {"quality@a1": 7.0, "quality@a2": 3.0}
    recs = records_from_dicts(rows, "mine")
    with pytest.raises(EvaluationConfigError, match=r"id='r2'.*ratings\.quality@a1.*= 7 .*\[1, 5\]"):
        evaluate_records(recs, tmp_path / "run", rating_range=[1, 5], models=["length"], plots=False,
                         progress=False)
    with pytest.raises(EvaluationConfigError, match=r"id='r2'.*stats\.rating_range"):
        evaluate_records(recs, tmp_path / "run", stats={"rating_range": [1, 5]}, models=["length"],
                         plots=False, progress=False)
    with pytest.raises(EvaluationConfigError, match=r"rating_range.*\[5, 1\].*low.*high"):
        evaluate_records(recs, tmp_path / "run", rating_range=[5, 1], models=["length"], plots=False,
                         progress=False)
    # inside the range (the bounds included), and with no range at all, it runs
    res = evaluate_records(recs, tmp_path / "ok", rating_range=[1, 7], models=["length"], plots=False,
                           progress=False,
                           stats={"bootstrap": {"n": 20}, "permutation": {"n": 20}})
    assert res["report"].is_file()


# ---- item 12: sentence counts of very long outputs -----------------------------------------------------------------
def test_long_text_is_counted_in_chunks_with_the_same_count(monkeypatch):
    from qe.core import text as T
    from qe.evaluation import evaldata

    sentence = "The cat sat on the mat. It was a sunny day, and Mr. Smith walked by at 3 p.m. with his dog! Did he? "
    long = sentence * 300  # ~30 kB of ordinary text (abbreviations too), 900 sentences
    seen: list[int] = []
    real = T.split_sentences

    def spy(text, method="pysbd", *a, **kw):
        seen.append(len(text))
        return real(text, method, *a, **kw)

    monkeypatch.setattr(T, "split_sentences", spy)
    n = evaldata.count_sentences(long, "pysbd")
    assert max(seen) <= evaldata.SENTENCE_CHUNK_CHARS and len(seen) > 1  # never the whole text at once
    assert n == 900 == len(real(long))  # the same count as splitting the whole text
    seen.clear()
    short = sentence * 3
    assert evaldata.count_sentences(short, "pysbd") == len(real(short)) == 9 and seen == [len(short)]  # unchanged
    assert evaldata.count_sentences("", "pysbd") == 0 and evaldata.count_sentences("   \n", "pysbd") == 0


def test_a_huge_output_without_spaces_is_cut_at_the_chunk_size(monkeypatch):
    from qe.core import text as T
    from qe.evaluation import evaldata

    seen: list[int] = []
    real = T.split_sentences
    monkeypatch.setattr(T, "split_sentences", lambda t, m="pysbd", *a, **k: (seen.append(len(t)), real(t, m))[1])
    assert evaldata.count_sentences("x" * (3 * evaldata.SENTENCE_CHUNK_CHARS + 5), "pysbd") >= 1
    assert max(seen) <= evaldata.SENTENCE_CHUNK_CHARS


def test_a_200kb_output_gets_its_confounds_in_seconds(tmp_path):
    sentence = "The cat sat on the mat. It was a sunny day, and Mr. Smith walked by at 3 p.m. with his dog! "
    huge = sentence * (200_000 // len(sentence))
    rows = _rows(4)
    rows[1]["output"] = huge
    recs = records_from_dicts(rows, "huge")
    t0 = time.perf_counter()
    res = evaluate_records(recs, tmp_path / "run", models=["length"], plots=False, progress=False,
                           stats={"bootstrap": {"n": 20}, "permutation": {"n": 20}, "methods": ["pearson"]})
    assert time.perf_counter() - t0 < 60  # sanity only (unchunked pysbd: minutes)
    assert res["data"].covariates["sentences"][1] == 2 * (len(huge) // len(sentence))  # pysbd: 2 per repeat
    assert "split into chunks" in res["report"].read_text(encoding="utf-8")


# ---- item 13: a run folder that cannot be written ------------------------------------------------------------------
def test_output_dir_under_a_file_is_one_line_exit_2(tmp_path, capfd):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder\n")
    data = _write(tmp_path / "rated.jsonl", _rows())
    line = _refused(capfd, "dataset=file", f"dataset.name={data}", f"output_dir={blocker / 'run'}",
                    f"hydra.run.dir={tmp_path / 'hydra'}", *FAST)
    assert str(blocker / "run") in line and "output_dir" in line
    line = _refused(capfd, "dataset=file", f"dataset.name={data}", f"output_dir={blocker}",
                    f"hydra.run.dir={tmp_path / 'hydra'}", *FAST)
    assert str(blocker) in line


def test_default_run_folder_under_a_file_is_one_line_exit_2(tmp_path, capfd):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder\n")
    data = _write(tmp_path / "rated.jsonl", _rows())
    line = _refused(capfd, "dataset=file", f"dataset.name={data}", f"paths.root_dir={blocker}", *FAST)
    assert str(blocker / "outputs") in line
    line = _refused(capfd, "dataset=file", f"dataset.name={data}", f"hydra.run.dir={blocker / 'run'}", *FAST)
    assert str(blocker / "run") in line
    # an existing folder whose files cannot be written (as root, read-only modes do not stop writes: the job log's
    # name taken by a folder stands in for it)
    (tmp_path / "taken" / "evaluate.log").mkdir(parents=True)
    line = _refused(capfd, "dataset=file", f"dataset.name={data}", f"hydra.run.dir={tmp_path / 'taken'}", *FAST)
    assert str(tmp_path / "taken" / "evaluate.log") in line and "hydra.run.dir" in line
