"""Issue 49, item 8: a quiet console. `qe score` / `qe compare` print their INFO lines ("N records read from ...",
"scoring N records") only with -v/--verbose; warnings and errors still by default; -q leaves errors (and warnings)
only. Progress bars are drawn only on a terminal: the Progress helper and `qe evaluate` write none into a log file
or a pipe."""
import io
import re

from hydra.core.global_hydra import GlobalHydra

from qe.cli import main


class _Tty(io.StringIO):
    def isatty(self):
        return True


def _inputs(tmp_path):
    inp = tmp_path / "in.txt"
    inp.write_text("a b c\nd e\n")
    return inp


def test_score_info_lines_only_with_verbose(tmp_path, capsys):
    inp = _inputs(tmp_path)
    base = ["score", "-m", "length", "-i", str(inp), "-o", str(tmp_path / "o.jsonl")]
    assert main(base) == 0
    err = capsys.readouterr().err
    assert "INFO" not in err and "records read" not in err and "records written" not in err, err
    assert "2 outputs, 0 undefined" in err  # the summary is not a log line: it stays
    for flag in ("-v", "--verbose"):
        assert main([*base, flag]) == 0
        err = capsys.readouterr().err
        assert f"INFO qe.data: 2 records read from {inp}" in err, err
        assert "scoring 2 records with length" in err and "2/2 records written" in err
    # -q wins: nothing but errors and warnings
    assert main([*base, "-v", "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_compare_info_lines_only_with_verbose(tmp_path, capsys):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("a b c\nd e\nf\n")
    b.write_text("a b\nd e f\nf g\n")
    assert main(["compare", "-m", "length", str(a), str(b)]) == 0
    assert "INFO" not in capsys.readouterr().err
    assert main(["compare", "-m", "length", str(a), str(b), "-v"]) == 0
    assert "records read from" in capsys.readouterr().err


def test_warnings_still_reach_the_console_by_default(tmp_path, capsys):
    inp = _inputs(tmp_path)
    out = tmp_path / "o.jsonl"
    # a partial output whose last line was cut short by a crash: --resume warns and goes on
    (tmp_path / "o.jsonl.partial").write_text('{"id": "1", "outp')
    assert main(["score", "-m", "length", "-i", str(inp), "-o", str(out), "--resume"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"^WARNING qe: .*o\.jsonl\.partial:1: unreadable line ignored", err, re.M), err
    assert "INFO" not in err


def test_list_and_data_take_verbose(capsys):
    assert main(["list", "-v"]) == 0
    assert "scorers" in capsys.readouterr().out
    assert main(["data", "list", "--verbose"]) == 0


def test_progress_draws_no_bar_off_a_terminal(capsys, monkeypatch):
    from qe.core.runtime import Progress

    with Progress(5, "scoring things", enabled=True) as bar:
        bar.update(5)
    err = capsys.readouterr().err
    assert err == "", err  # no bar, no escape codes, no carriage returns in a log file
    tty = _Tty()
    monkeypatch.setattr("sys.stderr", tty)
    with Progress(5, "scoring things", enabled=True) as bar:
        bar.update(5)
    assert "scoring things" in tty.getvalue()  # a terminal: the bar


def test_qe_evaluate_draws_no_bar_off_a_terminal(tmp_path, capsys, monkeypatch):
    fast = ["stats.bootstrap.n=50", "stats.permutation.n=50", "plots.enabled=false", "stats.methods=[pearson]"]
    GlobalHydra.instance().clear()
    try:
        assert main(["evaluate", f"hydra.run.dir={tmp_path / 'log'}", *fast]) == 0
        err = capsys.readouterr().err
        assert "%|" not in err and "\r" not in err, err
        # the same run on a terminal draws its bars (progress=true is the default)
        tty = _Tty()
        monkeypatch.setattr("sys.stderr", tty)
        GlobalHydra.instance().clear()
        assert main(["evaluate", f"hydra.run.dir={tmp_path / 'tty'}", *fast]) == 0
        assert "%|" in tty.getvalue(), tty.getvalue()
    finally:
        GlobalHydra.instance().clear()
