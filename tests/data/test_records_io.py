"""Records in: no row silently swallowed or misread (strict CSV quoting, record counts, byte-order marks), through
the Python API and the CLI."""
import json
import logging

import pytest

from qe.cli import EXIT_BAD_INPUT, main
from qe.data import load_records
from qe.data.record import dumps, json_safe, parse_records, read_csv_rows
from qe.errors import RecordError

GOOD_ROWS = "2,second,4\n3,third,5\n4,fourth,6\n"


def _csv(tmp_path, text, name="in.csv", encoding="utf-8"):
    p = tmp_path / name
    p.write_bytes(text.encode(encoding))
    return p


# ------------------------------------------------------------------------------------------ strict quoting
def test_unclosed_quote_is_an_error_naming_file_line_and_field(tmp_path):
    p = _csv(tmp_path, 'id,output,x\n1,"a b c,3\n' + GOOD_ROWS)
    with pytest.raises(RecordError) as e:
        load_records(p)
    msg = str(e.value)
    assert f"{p}:2:" in msg and "never closed" in msg and "'\"a b c,3'" in msg


def test_quote_closing_rows_later_is_an_error_naming_where_it_opened(tmp_path):
    p = _csv(tmp_path, 'id,output,x\n1,"a b c,3\n2,ok,4\n3,"ok",5\n')
    with pytest.raises(RecordError, match=r"in\.csv:4: malformed CSV.*from line 2 to line 4"):
        load_records(p)


def test_stray_quote_after_a_closed_field(tmp_path):
    with pytest.raises(RecordError, match=r"in\.csv:2: malformed CSV"):
        load_records(_csv(tmp_path, 'id,output,x\n1,"a"b,3\n'))


def test_row_closed_at_end_of_line_but_too_few_fields(tmp_path):
    p = _csv(tmp_path, 'id,output,x\n1,"a b c,3\n2,ok,4\n3,ok,5"\n')
    with pytest.raises(RecordError, match=r"in\.csv:2: 2 fields, fewer than the header's 3 columns \(the row spans"):
        load_records(p)


def test_legitimate_multiline_fields_blank_lines_and_inner_quotes(tmp_path, caplog):
    p = _csv(tmp_path, 'id,output\n1,"line one\nline two"\n\n2,"say ""hi"""\r\n3,5\'11" tall\n')
    with caplog.at_level(logging.INFO, logger="qe.data"):
        recs = load_records(p)
    assert [(r.id, r.output) for r in recs] == [("1", "line one\nline two"), ("2", 'say "hi"'), ("3", '5\'11" tall')]
    assert f"3 records read from {p} (1 with fields over several lines)" in caplog.text


def test_line_numbers_count_physical_lines(tmp_path):
    # the record after a two-line field starts on line 4; its error says so (csv.DictReader's row count would say 3)
    p = _csv(tmp_path, 'id,output,ratings.q\n1,"a\nb",3\n2,c,high\n')
    with pytest.raises(RecordError, match=r"in\.csv:4 \(id='2'\): field 'ratings.q' must be a number"):
        load_records(p)


def test_too_many_fields_and_repeated_header(tmp_path):
    with pytest.raises(RecordError, match=r"in\.csv:3: 4 fields, more than the header's 3"):
        load_records(_csv(tmp_path, "id,output,x\n1,a,2\n2,b,3,4\n"))
    with pytest.raises(RecordError, match=r"repeats column\(s\) \['output'\]"):
        load_records(_csv(tmp_path, "id,output,output\n1,a,b\n", "dup.csv"))


# --------------------------------------------------------------------------------------------- byte-order mark
def test_bom_is_stripped_in_csv_jsonl_and_txt(tmp_path):
    c = _csv(tmp_path, "\ufeffid,output,ratings.q\nr1,hello,4\n")
    (rec,) = load_records(c)
    assert rec.id == "r1" and rec.ratings == {"q": 4.0} and "\ufeffid" not in rec.extra
    j = tmp_path / "in.jsonl"
    j.write_text('\ufeff{"id": "j1", "output": "x"}\n', encoding="utf-8")
    assert [r.id for r in load_records(j)] == ["j1"]
    t = tmp_path / "in.txt"
    t.write_bytes("\ufefffirst\r\nsecond\r\n".encode())
    assert [r.output for r in load_records(t)] == ["first", "second"]


def test_header_names_compared_after_the_bom(tmp_path):
    _, rows = read_csv_rows("\ufeffoutput\nx\n", "mem.csv", required=("output",))
    assert rows == [(2, {"output": "x"})]


# ------------------------------------------------------------------------------------------------- the CLI
def test_cli_refuses_the_swallowing_csv_in_one_line(tmp_path, capsys):
    p = _csv(tmp_path, 'id,output,x\n1,"a b c,3\n' + GOOD_ROWS)
    assert main(["score", "-m", "length", "-i", str(p), "-o", str(tmp_path / "o.jsonl")]) == EXIT_BAD_INPUT
    err = [x for x in capsys.readouterr().err.splitlines() if not x.startswith("INFO ")]
    assert len(err) == 1 and f"{p}:2:" in err[0] and "never closed" in err[0]
    assert not (tmp_path / "o.jsonl").exists()


def test_cli_says_how_many_records_it_read(tmp_path, capsys):
    p = _csv(tmp_path, "\ufeffid,output\n" + "".join(f"r{i},out {i}\n" for i in range(5)))
    assert main(["score", "-m", "length", "-i", str(p), "-o", str(tmp_path / "o.jsonl"), "-v"]) == 0
    assert f"5 records read from {p}" in capsys.readouterr().err
    rows = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"r{i}" for i in range(5)]


def test_cli_stdin_csv_is_strict_too(tmp_path, capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO('id,output\n1,"open\n2,b\n'))
    assert main(["score", "-m", "length", "-i", "-", "--format", "csv", "-q"]) == EXIT_BAD_INPUT
    assert "<stdin>:2: a quoted field opened on this line is never closed" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- strict JSON
def _strict(line):
    return json.loads(line, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))


def test_json_safe_and_dumps():
    import numpy as np

    obj = {"a": float("nan"), "b": [np.float32(1.5), float("inf"), float("-inf")], "c": {"d": np.nan}, "e": (1, 2)}
    assert json_safe(obj) == {"a": None, "b": [1.5, "inf", "-inf"], "c": {"d": None}, "e": [1, 2]}
    assert _strict(dumps(obj))["b"] == [1.5, "inf", "-inf"]


def test_missing_rating_passed_through_is_null(tmp_path, capsys):
    p = _csv(tmp_path, "id,output,ratings.q,note\n1,good one,,x\n2,other,3,\n")
    assert main(["score", "-m", "length", "-i", str(p), "-q"]) == 0
    rows = [_strict(x) for x in capsys.readouterr().out.splitlines()]
    assert rows[0]["ratings"] == {"q": None} and rows[1]["ratings"] == {"q": 3.0}


def test_parse_records_names_unknown_format():
    with pytest.raises(RecordError, match="unknown format 'xml'"):
        parse_records("", "xml", "mem")
