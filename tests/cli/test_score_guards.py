"""`qe score` / `qe compare` guards (issue 36): no file the run reads is overwritten, no node replaced, a resume
never mixes scorers or stale records, two runs on one output are kept apart, every -m is scored, one bar per job."""
import io
import json
import os
import re
import stat
import threading

import pytest

from qe.cli import EXIT_BAD_INPUT, EXIT_BAD_MODEL, main
from qe.core.scorer import Scorer
from qe.registry import SCORERS, register_scorer

CALLS: list[list[str]] = []
STOP = {"after": None}  # raise KeyboardInterrupt (a Ctrl-C) once this many batches were scored
NESTED: dict = {}


class StoppableWords(Scorer):
    """Words per output; stops (as a Ctrl-C would) after STOP["after"] batches, leaving a partial output."""

    name = "stoppable-words"

    def _score(self, outputs, **kw):
        if STOP["after"] is not None and len(CALLS) >= STOP["after"]:
            raise KeyboardInterrupt
        CALLS.append(list(outputs))
        return [float(len(o.split())) for o in outputs]


class SecondRunInside(Scorer):
    """While it scores, a second `qe score` on the same output is started (as from another shell)."""

    name = "second-run-inside"

    def _score(self, outputs, **kw):
        CALLS.append(list(outputs))
        if NESTED.get("argv") and len(CALLS) == 2:  # the first chunk is in the partial output
            partial = NESTED["partial"]
            NESTED["before"] = partial.read_bytes()
            NESTED["code"] = main(NESTED["argv"])
            NESTED["after"] = partial.read_bytes()
        return [float(len(o)) for o in outputs]


@pytest.fixture(autouse=True)
def scorers():
    for name, cls in (("test-stoppable-words", StoppableWords), ("test-second-run-inside", SecondRunInside)):
        if name not in SCORERS:
            register_scorer(name)(cls)
    CALLS.clear()
    STOP["after"] = None
    NESTED.clear()
    yield
    STOP["after"] = None


def _records(path, n=5):
    rows = [{"id": f"r{i}", "output": " ".join(["w"] * (i + 1)), "refs": [f"ref {i}"]} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def _lines(text):
    return [json.loads(x) for x in text.splitlines()]


def _errors(err):
    return [x for x in err.strip().splitlines() if not x.startswith(("INFO ", "WARNING "))]


# ---------------------------------------------------------------------------------- 1. -o is a file the run reads
@pytest.mark.parametrize("flag", ["-r", "--mrs", "--sources", "-i"])
def test_output_that_is_any_file_the_run_reads_is_refused(tmp_path, capsys, flag):
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("a b\nc\n")
    other = tmp_path / "other.txt"
    other.write_text("x y\nz\n")
    before = other.read_bytes()
    link = tmp_path / "link.txt"
    link.symlink_to(other)
    for target in (other, link):  # the file itself, and a path that leads to it
        code = main(["score", "-m", "length", "-i", str(hyp), flag, str(other), "-o", str(target)])
        assert code == EXIT_BAD_INPUT
        err = _errors(capsys.readouterr().err)
        assert len(err) == 1 and str(target) in err[0] and flag.lstrip("-") in err[0], err
        assert other.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hyp.txt", "link.txt", "other.txt"]  # nothing written


# ------------------------------------------------------------------------ 2. FIFO, character device, symlink as -o
def test_output_fifo_is_written_through_and_stays_a_fifo(tmp_path, capsys):
    inp = tmp_path / "in.jsonl"
    _records(inp, 3)
    fifo = tmp_path / "scores.fifo"
    os.mkfifo(fifo)
    got = {}

    def reader():
        with open(fifo, encoding="utf-8") as f:
            got["text"] = f.read()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    assert main(["score", "-m", "length", "-i", str(inp), "-o", str(fifo), "-q"]) == 0
    t.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [r["score"] for r in _lines(got["text"])] == [1.0, 2.0, 3.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "scores.fifo"]  # no partial beside it
    # nothing to resume in a stream
    assert main(["score", "-m", "length", "-i", str(inp), "-o", str(fifo), "--resume"]) == EXIT_BAD_INPUT
    err = _errors(capsys.readouterr().err)
    assert len(err) == 1 and "--resume" in err[0] and str(fifo) in err[0]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_output_character_device_is_written_through(tmp_path):
    inp = tmp_path / "in.jsonl"
    _records(inp, 2)
    if os.geteuid() == 0:  # root could replace /dev/null itself: use a private copy of it instead
        dev = tmp_path / "null"
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    else:  # /dev cannot be written by this user: /dev/null itself is safe to try
        dev = "/dev/null"
    assert main(["score", "-m", "length", "-i", str(inp), "-o", str(dev), "-q"]) == 0
    assert stat.S_ISCHR(os.lstat(dev).st_mode)
    assert not os.path.exists(f"{dev}.partial")


def test_output_symlink_stays_a_symlink_and_its_target_gets_the_scores(tmp_path):
    inp = tmp_path / "in.jsonl"
    _records(inp, 3)
    (tmp_path / "real").mkdir()
    (tmp_path / "links").mkdir()
    target = tmp_path / "real" / "scores.jsonl"
    target.write_text("old\n")
    link = tmp_path / "links" / "scores.jsonl"
    link.symlink_to(target)
    assert main(["score", "-m", "length", "-i", str(inp), "-o", str(link), "-q"]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert [r["score"] for r in _lines(target.read_text())] == [1.0, 2.0, 3.0]
    assert sorted(p.name for p in (tmp_path / "links").iterdir()) == ["scores.jsonl"]
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["scores.jsonl"]


# ------------------------------------------------------------------------------- 4./5. what --resume may reuse
def _interrupted(tmp_path, inp, out, extra=()):
    """A run stopped after its first chunk of 2 records: exit 130, the partial output kept."""
    STOP["after"] = 1
    code = main(["score", "-m", "test-stoppable-words", "-i", str(inp), "-o", str(out), "--chunk-size", "2", "-q",
                 *extra])
    STOP["after"] = None
    assert code == 130
    partial = tmp_path / (out.name + ".partial")
    assert len(partial.read_text().splitlines()) == 2
    CALLS.clear()
    return partial


def test_resume_with_another_scorer_is_refused_naming_both(tmp_path, capsys):
    inp, out = tmp_path / "in.jsonl", tmp_path / "scores.jsonl"
    _records(inp)
    partial = _interrupted(tmp_path, inp, out)
    before = partial.read_bytes()
    capsys.readouterr()
    assert main(["score", "-m", "length", "-i", str(inp), "-o", str(out), "--resume"]) == EXIT_BAD_INPUT
    err = _errors(capsys.readouterr().err)
    assert len(err) == 1 and "stoppable-words" in err[0] and "length|" in err[0] and str(partial) in err[0], err
    assert partial.read_bytes() == before and not out.exists()
    # other options of the same scorer are another scorer too
    assert main(["score", "-m", "test-stoppable-words", "-i", str(inp), "-o", str(out), "--resume",
                 "--components"]) == EXIT_BAD_INPUT
    assert partial.read_bytes() == before
    # the same scorer resumes, and the rows carry no trace of the bookkeeping
    assert main(["score", "-m", "test-stoppable-words", "-i", str(inp), "-o", str(out), "--resume", "-q"]) == 0
    assert sum(len(c) for c in CALLS) == 3
    rows = _lines(out.read_text())
    assert [r["score"] for r in rows] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert all(set(r) == {"id", "output", "refs", "score"} for r in rows)


def test_resume_rescores_records_changed_since(tmp_path, capsys):
    inp, out = tmp_path / "in.jsonl", tmp_path / "scores.jsonl"
    rows = _records(inp)
    _interrupted(tmp_path, inp, out)
    rows[0]["output"] = "now five words long here"  # r0 was scored (1 word) before the change
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    capsys.readouterr()
    assert main(["score", "-m", "test-stoppable-words", "-i", str(inp), "-o", str(out), "--resume"]) == 0
    got = _lines(out.read_text())
    assert got[0]["output"] == "now five words long here" and got[0]["score"] == 5.0
    assert [g["score"] for g in got[1:]] == [2.0, 3.0, 4.0, 5.0]
    assert sum(len(c) for c in CALLS) == 4  # r0 again, r2..r4
    assert "1 changed since and rescored" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------- 6. one run per output
def test_second_run_on_the_same_output_is_refused_and_leaves_the_partial_alone(tmp_path, capsys):
    inp, out = tmp_path / "in.jsonl", tmp_path / "scores.jsonl"
    _records(inp, 4)
    NESTED.update(argv=["score", "-m", "length", "-i", str(inp), "-o", str(out)],
                  partial=tmp_path / "scores.jsonl.partial")
    # chunk 1 is written before chunk 2 starts the second run
    assert main(["score", "-m", "test-second-run-inside", "-i", str(inp), "-o", str(out), "--chunk-size", "2",
                 "-q"]) == 0
    assert NESTED["code"] == EXIT_BAD_INPUT
    assert NESTED["before"] == NESTED["after"] and NESTED["before"].count(b"\n") == 2
    err = _errors(capsys.readouterr().err)
    assert len(err) == 1 and str(out) in err[0] and "another" in err[0], err
    assert [r["score"] for r in _lines(out.read_text())] == [1.0, 3.0, 5.0, 7.0]


def test_a_lock_left_by_a_crash_does_not_block(tmp_path):
    inp, out = tmp_path / "in.jsonl", tmp_path / "scores.jsonl"
    _records(inp, 2)
    (tmp_path / "scores.jsonl.lock").write_text("12345\n")  # a killed run's lock file: nobody holds it
    assert main(["score", "-m", "length", "-i", str(inp), "-o", str(out), "-q"]) == 0
    assert len(out.read_text().splitlines()) == 2


# ------------------------------------------------------------------------------------------- 8. several metrics
def test_single_metric_rows_are_unchanged(tmp_path):
    inp = tmp_path / "in.jsonl"
    _records(inp, 2)
    out = tmp_path / "s.jsonl"
    assert main(["score", "-m", "length", "-i", str(inp), "-o", str(out), "-q"]) == 0
    assert out.read_text() == ('{"id": "r0", "output": "w", "refs": ["ref 0"], "score": 1.0}\n'
                               '{"id": "r1", "output": "w w", "refs": ["ref 1"], "score": 2.0}\n')


def test_every_metric_given_is_scored(tmp_path, capsys):
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("the cat sat on the mat\na dog ran in the park\n")
    ref.write_text("the cat sat on a mat\na dog ran through the park\n")
    single = {}
    for m in ("bleu", "chrf"):
        assert main(["score", "-m", m, "-i", str(hyp), "-r", str(ref), "-q"]) == 0
        single[m] = [r["score"] for r in _lines(capsys.readouterr().out)]
    out = tmp_path / "both.jsonl"
    assert main(["score", "-m", "bleu", "-m", "chrf", "-i", str(hyp), "-r", str(ref), "-o", str(out)]) == 0
    rows = _lines(out.read_text())
    assert [r["scores"] for r in rows] == [{"bleu": b, "chrf": c} for b, c in zip(single["bleu"], single["chrf"])]
    assert all("score" not in r for r in rows)
    err = capsys.readouterr().err
    assert "BLEU-4|" in err and "chrF|" in err
    # one column per metric in the system-level table, text and JSON
    assert main(["score", "-m", "bleu", "-m", "chrf", "-i", str(hyp), "-r", str(ref), "--system-level", "-q"]) == 0
    text = capsys.readouterr().out
    assert re.search(r"^system\s+n\s+bleu \(corpus BLEU-4 ↑\)\s+chrf \(corpus chrF ↑\)\s*$", text, re.M), text
    assert text.count("signature: ") == 2
    assert main(["score", "-m", "bleu", "-m", "chrf", "-i", str(hyp), "-r", str(ref), "--system-level", "--json",
                 "-q"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert [m["metric"] for m in table["metrics"]] == ["bleu", "chrf"]
    (row,) = table["systems"]
    assert set(row["scores"]) == {"bleu", "chrf"} and row["scores"]["chrf"]["mean"] == pytest.approx(
        sum(single["chrf"]) / 2)


def test_several_metrics_resume_and_refuse_a_changed_set(tmp_path, capsys):
    inp, out = tmp_path / "in.jsonl", tmp_path / "scores.jsonl"
    _records(inp)
    _interrupted(tmp_path, inp, out, ("-m", "length"))
    assert main(["score", "-m", "test-stoppable-words", "-i", str(inp), "-o", str(out), "--resume"]) == EXIT_BAD_INPUT
    capsys.readouterr()
    assert main(["score", "-m", "test-stoppable-words", "-m", "length", "-i", str(inp), "-o", str(out), "--resume",
                 "-q"]) == 0
    assert sum(len(c) for c in CALLS) == 3
    rows = _lines(out.read_text())
    assert [r["scores"] for r in rows] == [{"test-stoppable-words": float(i), "length": float(i)} for i in range(1, 6)]


def test_the_same_metric_twice_is_refused(tmp_path, capsys):
    inp = tmp_path / "in.txt"
    inp.write_text("a\n")
    assert main(["score", "-m", "length", "-m", "length", "-i", str(inp)]) == EXIT_BAD_INPUT
    assert "length" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ 15. compare, empty
def test_compare_on_empty_files_names_the_file(tmp_path, capsys):
    a, b, ref = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "ref.txt"
    for f in (a, b, ref):
        f.write_text("")
    for args in (["-m", "bleu", "-r", str(ref)], ["-m", "length"]):
        assert main(["compare", *args, str(a), str(b)]) == EXIT_BAD_INPUT
        err = _errors(capsys.readouterr().err)
        assert len(err) == 1 and str(a) in err[0] and "no outputs" in err[0] and "max()" not in err[0], err


# ------------------------------------------------------------------------------------- 19. a quiet, honest console
def test_signature_is_printed_once(tmp_path, capsys):
    inp = tmp_path / "in.txt"
    inp.write_text("a b\nc\n")
    assert main(["score", "-m", "length", "-i", str(inp), "-o", str(tmp_path / "o.jsonl")]) == 0
    err = capsys.readouterr().err
    assert err.count("length|") == 1, err


def test_system_table_has_one_signature(tmp_path, capsys):
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("the cat sat on the mat\na dog ran in the park\n")
    ref.write_text("the cat sat on a mat\na dog ran through the park\n")
    assert main(["score", "-m", "bleu", "-i", str(hyp), "-r", str(ref), "--system-level", "-q"]) == 0
    out = capsys.readouterr().out
    sigs = [ln for ln in out.splitlines() if "signature" in ln]
    assert len(sigs) == 1 and sigs[0].startswith("signature: BLEU-4|"), out
    assert "corpus:[" in sigs[0]  # sacrebleu's corpus-level settings, inside the one signature


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_one_bar_per_job_and_none_off_a_terminal(tmp_path, capsys, monkeypatch):
    inp = tmp_path / "in.txt"
    inp.write_text("".join(f"w{i} x\n" for i in range(5)))
    out = tmp_path / "o.jsonl"
    # stderr is not a terminal (a log file, a pipe): no bar, no escape codes; the progress line (-v) once at the end
    assert main(["score", "-m", "length", "-i", str(inp), "-o", str(out), "--chunk-size", "1", "-v"]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and "%|" not in err and "\x1b[" not in err, err
    assert err.count("records written") == 1, err
    # a terminal: one bar for the whole job, not one per chunk
    tty = _Tty()
    monkeypatch.setattr("sys.stderr", tty)
    assert main(["score", "-m", "length", "-i", str(inp), "-o", str(out), "--chunk-size", "1"]) == 0
    bars = re.findall(r"\s0%\|", tty.getvalue())
    assert len(bars) == 1, tty.getvalue()


# ------------------------------------------------------------------------------------------ 20. first-day help
def test_misspelt_metric_gets_a_suggestion_first(tmp_path, capsys):
    inp = tmp_path / "in.txt"
    inp.write_text("a\n")
    assert main(["score", "-m", "blue", "-i", str(inp)]) == EXIT_BAD_MODEL
    err = _errors(capsys.readouterr().err)
    assert len(err) == 1 and "did you mean 'bleu'?" in err[0]
    assert err[0].index("did you mean") < err[0].index("Registered scorers")


def test_score_only_prints_one_number_per_metric(tmp_path, capsys):
    import sacrebleu

    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyps = ["the cat sat on the mat", "a dog ran in the park"]
    refs = ["the cat sat on a mat", "a dog ran through the park"]
    hyp.write_text("\n".join(hyps) + "\n")
    ref.write_text("\n".join(refs) + "\n")
    assert main(["score", "-m", "bleu", "-m", "chrf", "-m", "length", "-i", str(hyp), "-r", str(ref), "-b"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert float(lines[0]) == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score / 100, abs=1e-4)
    assert float(lines[1]) == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score / 100, abs=1e-4)
    assert float(lines[2]) == pytest.approx(6.0)  # length has no corpus score: the mean
