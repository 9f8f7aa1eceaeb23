"""`qe score` on real workloads: nothing lost, one-line errors with distinct exit codes, resume by record id."""
import json
import subprocess
import sys

import pytest

from qe.cli import EXIT_BAD_INPUT, EXIT_BAD_MODEL, main
from qe.core.scorer import Scorer
from qe.registry import SCORERS, register_scorer

CALLS: list[list[str]] = []


class CountingScorer(Scorer):
    """Scores an output by its number of words and records every batch it was asked to score."""

    name = "count-words"

    def _score(self, outputs, **kw):
        CALLS.append(list(outputs))
        return [float(len(o.split())) for o in outputs]

    def _score_components(self, outputs, **kw):
        return {"count-words": self.score(outputs, progress=False), "chars": [float(len(o)) for o in outputs]}


@pytest.fixture(autouse=True)
def counting_scorer():
    if "test-count-words" not in SCORERS:
        register_scorer("test-count-words")(CountingScorer)
    CALLS.clear()
    yield


def _records(path, n=5):
    rows = [{"id": f"r{i}", "system": "S", "output": " ".join(["w"] * (i + 1)), "refs": [f"ref {i}"],
             "ratings": {"quality": i}} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def test_output_keeps_input_fields_in_input_order(tmp_path):
    inp = tmp_path / "in.jsonl"
    rows = _records(inp)
    out = tmp_path / "deep" / "dir" / "scores.jsonl"  # missing folders are created before scoring
    assert main(["score", "-m", "test-count-words", "-i", str(inp), "-o", str(out), "-q", "--chunk-size", "2"]) == 0
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [g["id"] for g in got] == [r["id"] for r in rows]
    for g, r in zip(got, rows):
        assert g["system"] == r["system"] and g["refs"] == r["refs"] and g["ratings"] == {"quality": float(r["ratings"]["quality"])}
        assert g["score"] == len(r["output"].split())
    assert not (out.parent / "scores.jsonl.partial").exists()
    assert [len(c) for c in CALLS] == [2, 2, 1]  # scored in chunks, each written before the next


def test_output_that_is_the_input_is_refused(tmp_path, capsys):
    inp = tmp_path / "in.jsonl"
    _records(inp)
    before = inp.read_bytes()
    assert main(["score", "-m", "test-count-words", "-i", str(inp), "-o", str(inp)]) == EXIT_BAD_INPUT
    (tmp_path / "link.jsonl").symlink_to(inp)
    assert main(["score", "-m", "test-count-words", "-i", str(inp), "-o", str(tmp_path / "link.jsonl")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "is the input file" in err and "Traceback" not in err
    assert inp.read_bytes() == before and not CALLS


def test_unwritable_output_fails_before_scoring(tmp_path, capsys):
    inp = tmp_path / "in.jsonl"
    _records(inp)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code = main(["score", "-m", "test-count-words", "-i", str(inp), "-o", str(blocker / "scores.jsonl")])
    assert code == EXIT_BAD_INPUT and not CALLS
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_resume_scores_only_what_is_missing(tmp_path):
    inp = tmp_path / "in.jsonl"
    rows = _records(inp)
    out = tmp_path / "scores.jsonl"
    partial = tmp_path / "scores.jsonl.partial"
    # an interrupted run: two rows written (r3 and r0, as the partial output of another order of work), the third
    # torn mid-line; the rows carry what scored them and a digest of their record, as qe score writes them
    from qe.cli import _digest, _identity, _read_input

    recs = {r.id: r for r in _read_input(str(inp), "auto")}
    ident = _identity([("test-count-words", CountingScorer())], {}, False)
    mark = {i: {"_qe_sig": ident, "_qe_in": _digest(recs[i])} for i in recs}
    partial.write_text(json.dumps({"id": "r3", "score": 4.0, "output": "w w w w", **mark["r3"]}) + "\n"
                       + json.dumps({"id": "r0", "score": 1.0, "output": "w", **mark["r0"]}) + "\n"
                       + '{"id": "r1", "sco')
    assert main(["score", "-m", "test-count-words", "-i", str(inp), "-o", str(out), "--resume", "-q"]) == 0
    assert sorted(o for c in CALLS for o in c) == sorted(rows[i]["output"] for i in (1, 2, 4))
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [g["id"] for g in got] == [r["id"] for r in rows]
    assert [g["score"] for g in got] == [1.0, 2.0, 3.0, 4.0, 5.0]


class MainLastScorer(Scorer):
    """A composite whose own score is its last component and is named unlike the scorer (as ROUGE-LM, ensembles)."""

    name = "main-last"
    main_component = "total"

    def _score(self, outputs, **kw):
        return [2.0 * len(o) for o in outputs]

    def _score_components(self, outputs, **kw):
        return {"part": [float(len(o)) for o in outputs], "total": self.score(outputs, progress=False)}


def test_components_main_score_is_the_scorers_own(tmp_path, tiny_lm_export):
    from qe.cli import main_component

    if "test-main-last" not in SCORERS:
        register_scorer("test-main-last")(MainLastScorer)
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _records(inp, n=3)
    assert main(["score", "-m", "test-main-last", "-i", str(inp), "-o", str(out), "--components", "-q"]) == 0
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert all(g["score"] == g["components"]["total"] != g["components"]["part"] for g in got)
    with pytest.raises(RuntimeError, match="not among its components"):
        main_component(MainLastScorer(), {"part": [1.0]})
    # ROUGE-LM: its score is z(ROUGE) + z(WPSLOR), not its first component (once the written "score")
    out2 = tmp_path / "rlm.jsonl"
    assert main(["score", "-m", "rouge-lm", "--opt", f"lm={tiny_lm_export}", "-i", str(inp), "-o", str(out2),
                 "--components", "-q"]) == 0
    got = [json.loads(x) for x in out2.read_text().splitlines()]
    assert all(g["score"] == g["components"]["rouge_lm"] for g in got)
    assert any(g["score"] != g["components"]["rouge"] for g in got)


def test_components(tmp_path):
    inp = tmp_path / "in.jsonl"
    _records(inp, 2)
    out = tmp_path / "s.jsonl"
    assert main(["score", "-m", "test-count-words", "-i", str(inp), "-o", str(out), "--components", "-q"]) == 0
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert got[1]["components"] == {"count-words": 2.0, "chars": 3.0} and got[1]["score"] == 2.0


def test_non_utf8_input_names_file_and_line(tmp_path, capsys):
    inp = tmp_path / "latin1.txt"
    inp.write_bytes("fine line\ncaf\xe9 au lait\n".encode("latin-1"))
    assert main(["score", "-m", "length", "-i", str(inp)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"{inp}:2: not valid UTF-8" in err and "Traceback" not in err


def test_missing_refs_and_bad_records_are_one_line(tmp_path, capsys):
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "output": "x", "refs": ["x"]}\n{"id": "b", "output": "y"}\n')
    assert main(["score", "-m", "bleu-4", "-i", str(inp)]) == EXIT_BAD_INPUT
    err = [x for x in capsys.readouterr().err.strip().splitlines() if not x.startswith("INFO ")]  # log lines aside
    assert len(err) == 1 and "record 'b'" in err[0] and "'refs'" in err[0]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "output": "x"}\n{"id": "b", "output": "y", "ratings": {"q": "high"}}\n')
    assert main(["score", "-m", "length", "-i", str(bad)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"{bad}:2" in err and "'b'" in err and "Traceback" not in err


def test_unknown_model_exit_code(tmp_path, capsys):
    inp = tmp_path / "in.txt"
    inp.write_text("x\n")
    assert main(["score", "-m", str(tmp_path / "no_such_export"), "-i", str(inp)]) == EXIT_BAD_MODEL
    assert "neither an export directory nor a registered scorer" in capsys.readouterr().err
    with pytest.raises(Exception):
        main(["score", "-m", str(tmp_path / "no_such_export"), "-i", str(inp), "--debug"])


@pytest.mark.slow
def test_two_gloo_processes_give_the_scores_of_one(tmp_path):
    inp = tmp_path / "in.jsonl"
    rows = [{"id": f"r{i}", "output": f"the hotel {i} is near the park", "refs": ["the hotel is near the park", "a hotel"]}
            for i in range(11)]
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    assert main(["score", "-m", "chrf", "-i", str(inp), "-o", str(one), "-q"]) == 0
    # the sharded run in its own interpreter, as a user runs it (spawning workers from inside pytest's captured
    # streams leaves the parent's sys.stderr unusable for later tests)
    r = subprocess.run([sys.executable, "-m", "qe.cli", "score", "-m", "chrf", "-i", str(inp), "-o", str(two),
                        "-q", "--devices", "2", "--accelerator", "cpu", "--chunk-size", "3"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    a = [json.loads(x) for x in one.read_text().splitlines()]
    b = [json.loads(x) for x in two.read_text().splitlines()]
    assert a == b and [x["id"] for x in b] == [r["id"] for r in rows]
    assert not list(tmp_path.glob("two.jsonl.partial*"))


def test_log_lines_name_the_scorer_with_the_bar_off(tmp_path, capsys):
    inp = tmp_path / "in.txt"
    inp.write_text("a b c\nd e\n")
    assert main(["score", "-m", "length", "-i", str(inp), "-o", str(tmp_path / "o.jsonl"), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "scoring 2 records with length" in err and "2/2 records written" in err


def test_quiet_runs_silence_the_hugging_face_bars_too(tmp_path, monkeypatch, capsys):
    """-q (or no terminal) also turns off the HF libraries' own bars ("Loading weights"), read at their import."""
    import os

    from qe.cli import main

    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "")  # records the variable's state, restored afterwards
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS")
    (tmp_path / "o.txt").write_text("a b c\n", encoding="utf-8")
    assert main(["score", "-m", "length", "-i", str(tmp_path / "o.txt"), "-q"]) == 0
    assert os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS") == "1"


def test_passthrough_commands_into_a_log_silence_the_hugging_face_bars(monkeypatch, capsys):
    """qe zoo / train / evaluate / content with stderr not a terminal (pytest captures it): the HF bars are off too."""
    import os

    from qe.cli import main

    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "")
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS")
    assert main(["zoo", "list"]) == 0
    assert os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS") == "1"


def test_bad_input_leaves_no_empty_partial_output(tmp_path, capsys):
    from qe.cli import main

    (tmp_path / "o.txt").write_text("a\nb\n", encoding="utf-8")
    (tmp_path / "m.txt").write_text("name[A]\n", encoding="utf-8")
    out = tmp_path / "s.jsonl"
    assert main(["score", "-m", "coverage", "--opt", "lexicon=none",
                 "--mrs", str(tmp_path / "m.txt"), "-i", str(tmp_path / "o.txt"),
                 "-o", str(out), "-q"]) == 2
    assert "line-aligned" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "s.jsonl.partial").exists()


def test_resume_refuses_rows_scored_with_other_lexicons(tmp_path, monkeypatch):
    """coverage's lexicon=auto picks lexicons while it scores; what --resume compares names every lexicon it may
    pick, so rows scored before a shipped lexicon changed are not continued with the new one."""
    from qe.cli import _digest, _identity, _read_input
    from qe.content import shipped
    from qe.content.lexicon import Lexicon
    from qe.content.scorer import CoverageScorer

    sc = CoverageScorer()
    ident = _identity([("coverage", sc)], {}, False)
    assert "lexicon:auto(e2e:" in ident and ",sf:" in ident and ",webnlg:" in ident
    d = shipped.load("sf").to_dict()
    d["slots"].pop(sorted(d["slots"])[0])
    changed = CoverageScorer()
    monkeypatch.setattr(changed.matcher, "lexicons", lambda: {**sc.matcher.lexicons(), "sf": Lexicon.from_dict(d)})
    assert _identity([("coverage", changed)], {}, False) != ident
    # an end-to-end resume of a partial written by a run whose identity named only "auto" is refused, naming both
    inp, out = tmp_path / "in.jsonl", tmp_path / "scores.jsonl"
    inp.write_text(json.dumps({"id": "r0", "mr": "name[The Eagle], eatType[pub]", "output": "The Eagle is a pub."})
                   + "\n" + json.dumps({"id": "r1", "mr": "name[Zizzi]", "output": "Zizzi."}) + "\n")
    recs = {r.id: r for r in _read_input(str(inp), "auto")}
    old = str(sc.signature)
    (tmp_path / "scores.jsonl.partial").write_text(
        json.dumps({"id": "r0", "score": 1.0, "_qe_sig": old, "_qe_in": _digest(recs["r0"])}) + "\n")
    assert main(["score", "-m", "coverage", "-i", str(inp), "-o", str(out), "--resume", "-q"]) == EXIT_BAD_INPUT
    assert not out.exists()
