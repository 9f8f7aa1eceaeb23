"""The `id` rule of records (docs/concepts/records.md): optional; a record without one gets ``<file stem>-<line
number>`` (``.json``: ``<stem>-<record number>``; standard input: ``stdin-<line>``); a present but empty id is an
error; ids are unique. The page says the same as the code."""
import io
import re

import pytest

from conftest import REPO
from qe.data import load_records
from qe.data.record import parse_records, read_records, records_from_dicts
from qe.errors import RecordError


def test_jsonl_without_ids_gets_stem_and_line_number(tmp_path):
    p = tmp_path / "hyp.jsonl"
    # line 3 is blank: the default id counts physical lines, as error messages do
    p.write_text('{"output": "a"}\n{"id": "mine", "output": "b"}\n\n{"output": "c"}\n{"id": 17, "output": "d"}\n')
    assert [r.id for r in load_records(p)] == ["hyp-1", "mine", "hyp-4", "17"]


def test_csv_txt_json_and_stdin_defaults(tmp_path):
    c = tmp_path / "sys_a.csv"
    c.write_text("output,system\nfirst,A\nsecond,A\n")  # header is line 1: the first record is line 2
    assert [r.id for r in load_records(c)] == ["sys_a-2", "sys_a-3"]
    t = tmp_path / "sys_b.txt"
    t.write_text("one\ntwo\n")
    assert [r.id for r in load_records(t)] == ["sys_b-1", "sys_b-2"]
    j = tmp_path / "sys_c.json"
    j.write_text('[{"output": "x"}, {"output": "y"}]')
    assert [r.id for r in load_records(j)] == ["sys_c-1", "sys_c-2"]
    assert [r.id for r in read_records(io.StringIO("u\nv\n"), "txt", "<stdin>")] == ["stdin-1", "stdin-2"]
    assert [r.id for r in read_records(io.StringIO('{"output": "u"}\n'), "jsonl", "<stdin>")] == ["stdin-1"]
    assert [r.id for r in records_from_dicts([{"output": "x"}], name="rows")] == ["rows-1"]


@pytest.mark.parametrize("text,fmt", [('{"id": "", "output": "a"}\n', "jsonl"),
                                      ('{"id": null, "output": "a"}\n', "jsonl"),
                                      ("id,output\n,a\n", "csv")])
def test_present_but_empty_id_is_an_error(text, fmt):
    with pytest.raises(RecordError, match=r"f\.(jsonl|csv):[12]\b.*field 'id' is empty.*leave the field out"):
        parse_records(text, fmt, f"f.{fmt}")


def test_a_default_id_that_clashes_with_a_given_one_is_a_duplicate():
    with pytest.raises(RecordError, match="duplicate id 'f-1'"):
        parse_records('{"output": "a"}\n{"id": "f-1", "output": "b"}\n', "jsonl", "f.jsonl")


def test_records_page_documents_id_as_optional_with_its_default():
    page = (REPO / "docs" / "concepts" / "records.md").read_text()
    row = next(ln for ln in page.splitlines() if ln.startswith("| `id` |"))
    assert re.match(r"\| `id` \| no \|", row), row
    assert "<file stem>-<line number>" in row
