"""Issue 56, item 6, on the content check's own files (tiny fixtures written here; no data folder):

* D4 / D5: a lexicon file with an empty pattern, a null value, a null count or trigger is one ValueError naming the
  file, the slot and the field (it was an IndexError traceback, or "expected string or bytes-like object");
* an option typo to ``qe.load("coverage", ...)`` lists the scorer's options;
* mining a dataset's lexicon on first use says so (a log line; a bar on a terminal) instead of 10-50 s of silence;
* :func:`qe.content.mining.write_lexicon` never leaves half a file.
"""
import errno
import json
import logging
import pathlib

import pytest

from qe.content.lexicon import Lexicon, SlotLexicon


def _lexicon_dict() -> dict:
    lex = Lexicon({"pricerange": SlotLexicon("category", {"cheap": "cheap", "high": "high"},
                                             {"low prices": {"cheap": 3}}, ["price"], 12, name="priceRange")},
                  source="tiny")
    return lex.to_dict()


@pytest.mark.parametrize("field, broken, said", [
    ("patterns", {"": {"cheap": 3}}, "an empty pattern"),                       # D4: was an IndexError
    ("patterns", {"   ": {"cheap": 3}}, "an empty pattern"),
    ("values", {"cheap": None, "high": "high"}, "value 'cheap'"),               # D5: was "expected string ..."
    ("patterns", {"low prices": {"cheap": None}}, "value 'cheap': the count"),
    ("patterns", {"low prices": {"cheap": True}}, "value 'cheap': the count"),
    ("triggers", [None], "item 0"),
    ("triggers", [""], "item 0"),
])
def test_a_broken_lexicon_names_its_file_slot_and_field(tmp_path, field, broken, said):
    d = _lexicon_dict()
    d["slots"]["pricerange"][field] = broken
    path = tmp_path / "lex.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(ValueError) as err:
        Lexicon.load(path)
    msg = str(err.value)
    assert str(path) in msg and "slot 'pricerange'" in msg and f"field '{field}'" in msg and said in msg, msg
    # and the scorer says the same, before any output is scored
    from qe.content.scorer import CoverageScorer

    with pytest.raises(ValueError, match="slot 'pricerange'"):
        CoverageScorer(lexicon=str(path))


def test_triple_words_and_slot_names_are_checked_too(tmp_path):
    d = _lexicon_dict()
    d["properties"], d["common"] = {"birthplace": ["born", None]}, []
    with pytest.raises(ValueError, match=r"<x>: field 'properties', property 'birthplace': None is not a word"):
        Lexicon.from_dict(d, "<x>")
    d = _lexicon_dict()
    d["slots"][""] = d["slots"]["pricerange"]
    with pytest.raises(ValueError, match="a slot with an empty name"):
        Lexicon.from_dict(d, "<x>")


def test_what_the_miner_writes_still_loads(tmp_path):
    """An SF act with an empty value (``area=``) is mined as the value ""; the checks keep accepting it."""
    d = _lexicon_dict()
    d["slots"]["pricerange"]["values"][""] = ""
    lex = Lexicon.from_dict(d, "<x>")
    assert lex.slots["pricerange"].values[""] == "" and lex.slots["pricerange"].patterns == {"low prices": {"cheap": 3}}


def test_an_option_typo_lists_the_valid_options():
    import qe

    with pytest.raises(TypeError) as err:
        qe.load("coverage", lexcon="none")
    msg = str(err.value)
    assert "unexpected keyword argument" not in msg and "'lexcon' (did you mean 'lexicon'?)" in msg, msg
    assert "its options: lexicon, wrong_penalty" in msg and "score" in msg, msg
    with pytest.raises(TypeError, match="unknown options 'a', 'b'"):
        qe.load("coverage", a=1, b=2)
    assert qe.load("coverage", lexicon="none").name == "coverage"  # valid options as before


def test_mining_a_dataset_lexicon_on_first_use_says_so(caplog, capsys, monkeypatch):
    import qe.core.runtime as runtime
    from qe.content.scorer import _announced

    made = Lexicon({}, source="fake")
    mine = _announced(lambda name, data_dir=None: made)
    with caplog.at_level(logging.INFO, logger="qe"):
        assert mine("e2e") is made
    said = [r.getMessage() for r in caplog.records]
    assert said[0].startswith("coverage: mining the e2e lexicon from the data directory") and "done in" in said[1]
    assert capsys.readouterr().err == ""  # no bar: not a terminal
    monkeypatch.setattr(runtime, "stderr_is_terminal", lambda: True)
    assert mine("sf") is made
    assert "coverage: mining the sf lexicon" in capsys.readouterr().err  # the bar


def test_write_lexicon_is_all_or_nothing(tmp_path, monkeypatch):
    from qe.content.mining import write_lexicon

    out = tmp_path / "lex.json"
    write_lexicon(Lexicon.from_dict(_lexicon_dict()), out)
    old = out.read_bytes()
    real = pathlib.Path.write_text

    def disk_full(self, data, *a, **k):
        real(self, data[:10], *a, **k)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pathlib.Path, "write_text", disk_full)
    with pytest.raises(OSError, match=f"cannot write the lexicon {out}: No space left on device; {out} is as it was"):
        write_lexicon(Lexicon({}, source="other"), out)
    assert out.read_bytes() == old and [p.name for p in tmp_path.iterdir()] == ["lex.json"]
