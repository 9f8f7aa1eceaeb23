"""Issue 56, item 6: the "silently wrong or lost" defects of `qe score`, `qe compare` and `qe content mine`, each on a
tiny fixture written here (no data folder needed):

* D1: the pooled SER of `-b`, `--system-level` and `qe compare --ser` leaves out the outputs whose MR has nothing to
  check (`dontcare` only), invented values and all, as the docs say;
* D2 / D3: `qe content mine` never overwrites its input, and writes through a temporary file: a full disk leaves the
  old lexicon whole and the error names it;
* D6 / D7: a folder given as `-i` / `--mrs` is called a folder; an `-o` below a regular file names that file;
* D8: rows a killed `qe score -o` left in OUTPUT.partial are not thrown away without `--force`;
* D9: a count below its least value (`qe compare --n -5`) is refused;
* D10: an empty or unparsable `--mrs` line is named by the MR file and its line;
* an empty output is scored as before, with one warning naming where it is;
* an option typo (`--opt lexcon=none`) lists the valid options;
* `qe content mine` shows a bar on a terminal (and none elsewhere).
"""
import errno
import json
import logging
import pathlib

import pytest

from qe.cli import EXIT_BAD_INPUT, main
from qe.content.lexicon import Lexicon, SlotLexicon

FAITHFUL = ["The Mill is a pub.", "The Eagle is a coffee shop.", "Zizzi is a pub.", "Aromi is a coffee shop."]
FAITHFUL_MRS = ["name[The Mill], eatType[pub]", "name[The Eagle], eatType[coffee shop]", "name[Zizzi], eatType[pub]",
                "name[Aromi], eatType[coffee shop]"]
#: outputs whose MR holds nothing to check, each inventing two values the tiny lexicon knows
UNCHECKED = ["There is a cheap Chinese place."] * 4
UNCHECKED_MRS = ["food[dontcare]"] * 4


def _lexicon(tmp_path) -> str:
    lex = Lexicon({"name": SlotLexicon("entity", {"the mill": "The Mill", "the eagle": "The Eagle", "zizzi": "Zizzi",
                                                  "aromi": "Aromi"}),
                   "eattype": SlotLexicon("category", {"pub": "pub", "coffee shop": "coffee shop"}, name="eatType"),
                   "food": SlotLexicon("category", {"chinese": "Chinese", "italian": "Italian"}),
                   "pricerange": SlotLexicon("category", {"cheap": "cheap", "high": "high"}, name="priceRange")},
                  source="tiny")
    path = tmp_path / "tiny-lexicon.json"
    lex.save(path)
    return str(path)


def _write(path, lines) -> str:
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return str(path)


def _errors(err: str) -> list[str]:
    return [x for x in err.strip().splitlines() if not x.startswith(("INFO ", "WARNING "))]


def _one_error(capsys) -> str:
    err = _errors(capsys.readouterr().err)
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


# ------------------------------------------------------------------------------------ D1: pooled SER, unchecked
def test_pooled_ser_leaves_out_outputs_with_nothing_to_check(tmp_path, capsys):
    lex = _lexicon(tmp_path)
    hyp = _write(tmp_path / "sys.txt", FAITHFUL + UNCHECKED)
    mrs = _write(tmp_path / "mrs.txt", FAITHFUL_MRS + UNCHECKED_MRS)
    assert main(["score", "-m", "coverage", "--opt", f"lexicon={lex}", "-i", hyp, "--mrs", mrs, "-o",
                 str(tmp_path / "rows.jsonl"), "-q"]) == 0
    rows = [json.loads(x) for x in (tmp_path / "rows.jsonl").read_text().splitlines()]
    # they do invent a value ("cheap"; "Chinese" is what they say of the slot the MR leaves unchecked, no invention)
    assert [r["details"]["counts"]["hallucinated"] for r in rows[4:]] == [1, 1, 1, 1]
    assert [r["score"] for r in rows[4:]] == [None] * 4  # and their coverage is undefined
    capsys.readouterr()
    assert main(["score", "-m", "coverage", "--opt", f"lexicon={lex}", "-i", hyp, "--mrs", mrs, "-b", "-q"]) == 0
    # pooled over every output it would be 0.5000: the 4 invented values over the 8 facts of the others
    assert capsys.readouterr().out.split() == ["0.0000"]
    assert main(["score", "-m", "coverage", "--opt", f"lexicon={lex}", "-i", hyp, "--mrs", mrs, "--system-level",
                 "--json", "-q"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert table["systems"][0]["corpus"] == 0.0 and table["systems"][0]["n"] == 8
    other = _write(tmp_path / "other.txt", FAITHFUL + ["The Mill."] * 4)
    assert main(["compare", "-m", "coverage", "--opt", f"lexicon={lex}", "--mrs", mrs, "--ser", "--json", "-q",
                 "--n", "50", hyp, other]) == 0
    res = json.loads(capsys.readouterr().out)["systems"]
    assert res[0]["score"] == 0.0 and res[1]["score"] == 0.0


def test_pooled_ser_from_python_and_a_paired_comparison(tmp_path):
    import qe
    from qe.significance import compare_systems

    scorer = qe.load("coverage", lexicon=_lexicon(tmp_path))
    outputs, mrs = FAITHFUL + UNCHECKED, FAITHFUL_MRS + UNCHECKED_MRS
    assert scorer.slot_error_rate(outputs, mrs) == 0.0
    stat = scorer.system_statistic(outputs, mrs)
    assert stat.stats.shape == (8, 2) and stat.stats[4:].sum() == 0  # rows kept (paired), counting nothing
    # one real error among the checkable facts: 1 / 8 facts, whatever the unchecked outputs invent
    worse = ["The Mill."] + FAITHFUL[1:] + UNCHECKED
    assert scorer.slot_error_rate(worse, mrs) == pytest.approx(1 / 8)
    res = compare_systems(scorer, {"a": outputs, "b": worse}, mrs=mrs, pooled=True, n_samples=50)
    assert res[0].score == 0.0 and res[1].score == pytest.approx(1 / 8)


# ------------------------------------------------------------------------------------- D2 / D3: qe content mine
PAIRS = [("name[The Mill], eatType[pub], priceRange[cheap]", "The Mill is a cheap pub."),
         ("name[The Eagle], eatType[coffee shop], priceRange[high]", "The Eagle is an expensive coffee shop."),
         ("name[Zizzi], eatType[pub], priceRange[high]", "Zizzi is a pub with high prices."),
         ("name[Aromi], eatType[coffee shop], priceRange[cheap]", "Aromi is a coffee shop with low prices.")] * 3


def _pairs(path) -> pathlib.Path:
    path.write_text("".join(json.dumps({"mr": m, "ref": t}) + "\n" for m, t in PAIRS), encoding="utf-8")
    return path


def test_mine_refuses_to_overwrite_its_input_even_with_force(tmp_path, capsys):
    inp = _pairs(tmp_path / "pairs.jsonl")
    before = inp.read_bytes()
    link = tmp_path / "link.jsonl"
    link.symlink_to(inp)
    for out in (inp, link):
        assert main(["content", "mine", "-i", str(inp), "-o", str(out), "--force", "--min-count", "2"]) \
            == EXIT_BAD_INPUT
        line = _one_error(capsys)
        assert str(out) in line and "input" in line, line
        assert inp.read_bytes() == before


def test_mine_writes_through_a_temporary_file_and_a_full_disk_keeps_the_old_lexicon(tmp_path, capsys, monkeypatch):
    inp = _pairs(tmp_path / "pairs.jsonl")
    out = tmp_path / "lex.json"
    assert main(["content", "mine", "-i", str(inp), "-o", str(out), "--min-count", "2", "-q"]) == 0
    old = out.read_bytes()
    Lexicon.load(out)
    real = pathlib.Path.write_text

    def disk_full(self, data, *a, **k):  # a third of the text gets written, then the disk is full
        real(self, data[: len(data) // 3], *a, **k)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pathlib.Path, "write_text", disk_full)
    assert main(["content", "mine", "-i", str(inp), "-o", str(out), "--min-count", "2", "--force", "-q"]) \
        == EXIT_BAD_INPUT
    line = _one_error(capsys)
    assert str(out) in line and "No space left on device" in line, line
    assert out.read_bytes() == old  # whole, as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lex.json", "pairs.jsonl"]  # no temporary file left


# ---------------------------------------------------------------------- D6 / D7: a folder, a file above the output
def test_a_folder_as_input_is_called_a_folder(tmp_path, capsys):
    folder = tmp_path / "run1"
    folder.mkdir()
    hyp = _write(tmp_path / "sys.txt", FAITHFUL)
    mrs = _write(tmp_path / "mrs.txt", FAITHFUL_MRS)
    for argv in (["content", "mine", "-i", str(folder), "-o", str(tmp_path / "lex.json")],
                 ["score", "-m", "length", "-i", str(folder)],
                 ["score", "-m", "coverage", "--opt", "lexicon=none", "-i", hyp, "--mrs", str(folder), "-b"],
                 ["score", "-m", "bleu", "-i", hyp, "-r", str(folder), "-b"]):
        assert main(argv) == EXIT_BAD_INPUT, argv
        line = _one_error(capsys)
        assert f"{folder} is a folder, not a file" in line and "no such file" not in line, line
    assert main(["score", "-m", "coverage", "--opt", "lexicon=none", "-i", hyp, "--mrs", mrs, "-b", "-q"]) == 0


def test_an_output_below_a_regular_file_names_that_file(tmp_path, capsys):
    inp = _pairs(tmp_path / "pairs.jsonl")
    blocker = tmp_path / "notes.txt"
    blocker.write_text("not a folder\n")
    hyp = _write(tmp_path / "sys.txt", FAITHFUL)
    for argv, out in ((["content", "mine", "-i", str(inp), "--min-count", "2"], blocker / "sub" / "lex.json"),
                      (["score", "-m", "length", "-i", hyp], blocker / "scores.jsonl")):
        assert main([*argv, "-o", str(out)]) == EXIT_BAD_INPUT
        line = _one_error(capsys)
        assert f"{blocker} is a file, not a folder" in line and "Errno" not in line, line
    assert blocker.read_text() == "not a folder\n"


# ------------------------------------------------------------------------------------ D8: an unfinished output
def test_rows_of_a_killed_run_are_not_thrown_away_without_force(tmp_path, capsys, monkeypatch):
    from qe.evaluation.baselines import LengthScorer

    hyp = _write(tmp_path / "sys.txt", FAITHFUL)
    out = tmp_path / "scores.jsonl"
    assert main(["score", "-m", "length", "-i", hyp, "-o", str(out), "-q"]) == 0
    rows = out.read_text().splitlines()
    out.unlink()
    real, calls = LengthScorer._score, []

    def killed_after_one_chunk(self, outputs, **kw):  # a Ctrl-C (or a kill) while the second chunk is scored
        calls.append(outputs)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, outputs, **kw)

    monkeypatch.setattr(LengthScorer, "_score", killed_after_one_chunk)
    assert main(["score", "-m", "length", "-i", hyp, "-o", str(out), "--chunk-size", "2", "-q"]) == 130
    monkeypatch.setattr(LengthScorer, "_score", real)
    partial = tmp_path / "scores.jsonl.partial"
    before = partial.read_bytes()
    assert len(before.splitlines()) == 2 and not out.exists()
    capsys.readouterr()
    assert main(["score", "-m", "length", "-i", hyp, "-o", str(out)]) == EXIT_BAD_INPUT
    line = _one_error(capsys)
    assert str(partial) in line and "2 rows" in line and "--resume" in line and "--force" in line, line
    assert partial.read_bytes() == before and not out.exists()  # nothing thrown away
    # --resume continues from the 2 rows; --force starts over
    assert main(["score", "-m", "length", "-i", hyp, "-o", str(out), "--resume"]) == 0
    assert "resuming: 2 of 4 records already scored" in capsys.readouterr().err
    assert out.read_text().splitlines() == rows
    partial.write_bytes(before)
    assert main(["score", "-m", "length", "-i", hyp, "-o", str(out), "--force", "-q"]) == 0
    assert out.read_text().splitlines() == rows and not partial.exists()
    assert main(["score", "-m", "length", "-i", hyp, "-o", str(out), "--force", "--resume"]) == EXIT_BAD_INPUT
    assert "give one of them" in _one_error(capsys)


# ---------------------------------------------------------------------------------------- D9: counts below 1
@pytest.mark.parametrize("flags, named", [(["--n", "-5"], "--n -5"), (["--n", "0"], "--n 0"),
                                          (["--ar-confidence", "-2"], "--ar-confidence -2"),
                                          (["--alpha", "1.5"], "--alpha 1.5")])
def test_compare_refuses_counts_below_their_least_value(tmp_path, capsys, flags, named, monkeypatch):
    import qe.significance as sig

    def never(*a, **k):
        raise AssertionError("the comparison ran")

    monkeypatch.setattr(sig, "compare_systems", never)
    a = _write(tmp_path / "a.txt", FAITHFUL)
    b = _write(tmp_path / "b.txt", FAITHFUL[::-1])
    assert main(["compare", "-m", "length", a, b, *flags]) == EXIT_BAD_INPUT
    assert _one_error(capsys).startswith(f"qe compare: error: {named}: must be")


@pytest.mark.parametrize("flags", [["--bootstrap", "-1"], ["--chunk-size", "0"], ["--batch-size", "0"],
                                   ["--devices", "0"]])
def test_score_refuses_counts_below_their_least_value(tmp_path, capsys, flags):
    hyp = _write(tmp_path / "sys.txt", FAITHFUL)
    assert main(["score", "-m", "length", "-i", hyp, "-b", *flags]) == EXIT_BAD_INPUT
    assert f"{flags[0]} {flags[1]}: must be" in _one_error(capsys)


# ------------------------------------------------------------------------------------ D10: the MR file's lines
@pytest.mark.parametrize("bad", ["", "   ", "name[The Eagle] eatType[[pub"])
def test_a_bad_mrs_line_is_named_by_the_mr_file_and_line(tmp_path, capsys, bad):
    hyp = _write(tmp_path / "sys.txt", FAITHFUL)
    mrs = _write(tmp_path / "mrs.txt", [FAITHFUL_MRS[0], bad, *FAITHFUL_MRS[2:]])
    for argv in (["score", "-m", "coverage", "--opt", "lexicon=none", "-i", hyp, "--mrs", mrs, "-b"],
                 ["compare", "-m", "coverage", "--opt", "lexicon=none", "--mrs", mrs, hyp, hyp]):
        assert main(argv) == EXIT_BAD_INPUT
        line = _one_error(capsys)
        assert f"--mrs {mrs}:2:" in line and "sys-2" not in line and "record" not in line, line


# ------------------------------------------------------------------------------------ an empty output, warned
def test_an_empty_output_keeps_its_score_and_is_warned_about_once(tmp_path, capsys):
    hyp = _write(tmp_path / "sys.txt", [FAITHFUL[0], "", FAITHFUL[2], "  "])
    mrs = _write(tmp_path / "mrs.txt", FAITHFUL_MRS)
    out = tmp_path / "scores.jsonl"
    assert main(["score", "-m", "coverage", "--opt", "lexicon=none", "-i", hyp, "--mrs", mrs, "-o", str(out)]) == 0
    warned = [x for x in capsys.readouterr().err.splitlines() if x.startswith("WARNING")]
    assert len(warned) == 1, warned
    assert "2 of 4 outputs are empty" in warned[0] and f"{hyp}:2, {hyp}:4" in warned[0], warned
    assert "coverage scored them 0" in warned[0], warned
    assert [json.loads(x)["score"] for x in out.read_text().splitlines()] == [1.0, 0.0, 1.0, 0.0]  # as documented
    assert main(["score", "-m", "coverage", "--opt", "lexicon=none", "-i", _write(tmp_path / "full.txt", FAITHFUL),
                 "--mrs", mrs, "-b"]) == 0
    assert "WARNING" not in capsys.readouterr().err


# ------------------------------------------------------------------------------------------- an option typo
def test_an_option_typo_lists_the_valid_options(tmp_path, capsys):
    hyp = _write(tmp_path / "sys.txt", FAITHFUL)
    mrs = _write(tmp_path / "mrs.txt", FAITHFUL_MRS)
    assert main(["score", "-m", "coverage", "--opt", "lexcon=none", "-i", hyp, "--mrs", mrs, "-b"]) == EXIT_BAD_INPUT
    line = _one_error(capsys)
    assert "unexpected keyword argument" not in line and "__init__" not in line, line
    assert "'lexcon' (did you mean 'lexicon'?)" in line and "wrong_penalty" in line and "mr_format" in line, line
    assert main(["score", "-m", "length", "--opt", "units=words", "-i", hyp, "-b"]) == EXIT_BAD_INPUT
    assert "length: unknown option 'units'; it takes no options" in _one_error(capsys)
    # a device given to a scorer that runs no model is still dropped, as before
    assert main(["score", "-m", "length", "--device", "cpu", "-i", hyp, "-b", "-q"]) == 0


# ----------------------------------------------------------------------------------- progress while mining
def test_mine_shows_a_bar_on_a_terminal_and_none_elsewhere(tmp_path, capsys, monkeypatch, caplog):
    import qe.core.runtime as runtime

    inp = _pairs(tmp_path / "pairs.jsonl")
    with caplog.at_level(logging.INFO, logger="qe"):
        assert main(["content", "mine", "-i", str(inp), "-o", str(tmp_path / "a.json"), "--min-count", "2"]) == 0
    assert "mining" not in capsys.readouterr().err  # not a terminal: no bar
    said = [r.getMessage() for r in caplog.records if "mining" in r.getMessage()]
    assert len(said) == 2 and said[1].endswith(" s") and "done in" in said[1], said  # the log lines instead
    monkeypatch.setattr(runtime, "stderr_is_terminal", lambda: True)
    assert main(["content", "mine", "-i", str(inp), "-o", str(tmp_path / "b.json"), "--min-count", "2"]) == 0
    assert f"qe content mine: mining {inp}" in capsys.readouterr().err  # the bar
    assert main(["content", "mine", "-i", str(inp), "-o", str(tmp_path / "c.json"), "--min-count", "2", "-q"]) == 0
    assert capsys.readouterr().err == ""  # -q: no bar
