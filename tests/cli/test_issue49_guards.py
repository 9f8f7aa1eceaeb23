"""Issue 49, item 7: four defects that ended in a traceback, a bare field name, a quoted message or a silent ``nan``
are each one line on stderr naming the file and the field, with exit status 2 (3 for a model that cannot be
loaded): a read-only models folder for `qe zoo build`, a malformed or non-UTF-8 lexicon file, a zoo model that is
not built, and `qe compare --ser` over MRs without a checkable fact."""
import builtins
import json

import pytest

import qe
from qe.cli import EXIT_BAD_INPUT, EXIT_BAD_MODEL, main

TINY = "_tiny-slor"  # the test-only zoo recipe (qe/zoo/recipes/_tiny-slor.yaml): `qe zoo build` only
NAMED = "slor-word-brown-wt2"  # a named model of the zoo (qe.load resolves it), not built in a fresh $QE_MODELS


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def _no_build(monkeypatch):
    """A guard that let the build through would start `qe train`: fail the test instead."""
    import qe.zoo.build as zb

    def refuse(*a, **k):
        raise AssertionError("the build started although the models folder cannot be written")

    monkeypatch.setattr(zb.subprocess, "run", refuse)


# ----------------------------------------------------------------------------- 1. a models folder we cannot write
def test_zoo_build_into_a_read_only_models_folder_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    """Root ignores chmod, so the read-only folder is simulated: writing the folder's probe file is refused with
    PermissionError, as the kernel refuses it to a user without write permission."""
    import qe.zoo.build as zb

    models = tmp_path / "models"
    models.mkdir()
    monkeypatch.setenv("QE_MODELS", str(models))
    _no_build(monkeypatch)
    real_open = builtins.open

    def read_only(path, *a, **k):
        mode = a[0] if a else k.get("mode", "r")
        if str(path).startswith(str(models)) and any(c in mode for c in "wax+"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(zb, "open", read_only, raising=False)  # the module's own `open`, nothing else's
    assert main(["zoo", "build", TINY]) == EXIT_BAD_INPUT
    line = _one_line(capsys)
    assert line.startswith("qe zoo: error: ") and str(models) in line, line
    assert "not writable" in line and "Permission denied" in line and "QE_MODELS" in line, line
    assert not (models / ".build").exists()


def test_zoo_build_into_a_path_through_a_file_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    models = blocker / "models"  # mkdir fails even as root
    monkeypatch.setenv("QE_MODELS", str(models))
    _no_build(monkeypatch)
    assert main(["zoo", "build", TINY]) == EXIT_BAD_INPUT
    line = _one_line(capsys)
    assert str(models) in line and "not writable" in line and "QE_MODELS" in line, line
    assert "Traceback" not in line and "OSError" not in line


# ------------------------------------------------------------------------------------------ 2. a bad lexicon file
def _files(tmp_path):
    (tmp_path / "mrs.txt").write_text("name[A], food[Thai]\nname[B], food[French]\n", encoding="utf-8")
    (tmp_path / "out.txt").write_text("A serves Thai food .\nB is a pub .\n", encoding="utf-8")
    return ["-i", str(tmp_path / "out.txt"), "--mrs", str(tmp_path / "mrs.txt")]


def _lexicon(**slots) -> dict:
    from qe.content.lexicon import LEXICON_FORMAT

    return {"format": LEXICON_FORMAT, "source": "hand", "settings": {}, "slots": slots}


def test_a_lexicon_slot_without_kind_names_the_file_slot_and_field_exit_2(tmp_path, capsys):
    lex = tmp_path / "lex.json"
    lex.write_text(json.dumps(_lexicon(food={"values": {"thai": "Thai"}, "examples": 3})), encoding="utf-8")
    assert main(["score", "-m", "coverage", "--opt", f"lexicon={lex}", *_files(tmp_path)]) == EXIT_BAD_INPUT
    line = _one_line(capsys)
    assert str(lex) in line and "slot 'food'" in line and "'kind'" in line and "missing" in line, line
    assert line != "qe score: error: --model coverage: kind"
    # the library says the same (a ValueError: bad input, not a model that cannot be loaded)
    from qe.content.lexicon import Lexicon

    with pytest.raises(ValueError, match=r"lex\.json: slot 'food': field 'kind' is missing"):
        Lexicon.load(lex)


def test_a_lexicon_slot_with_a_malformed_field_names_it(tmp_path, capsys):
    lex = tmp_path / "lex.json"
    lex.write_text(json.dumps(_lexicon(food={"kind": "category", "triggers": "food"})), encoding="utf-8")
    assert main(["score", "-m", "coverage", "--opt", f"lexicon={lex}", *_files(tmp_path)]) == EXIT_BAD_INPUT
    line = _one_line(capsys)
    assert str(lex) in line and "slot 'food'" in line and "'triggers'" in line and "a list" in line, line


def test_a_lexicon_file_that_is_not_utf8_is_named_exit_2(tmp_path, capsys):
    lex = tmp_path / "latin1.json"
    lex.write_bytes(json.dumps(_lexicon(), ensure_ascii=False).replace('"hand"', '"caf\u00e9"').encode("latin-1"))
    assert main(["score", "-m", "coverage", "--opt", f"lexicon={lex}", *_files(tmp_path)]) == EXIT_BAD_INPUT
    line = _one_line(capsys)
    assert str(lex) in line and "not UTF-8 JSON" in line, line
    assert line != "qe score: error: utf-8"


# ----------------------------------------------------------------------------------- 3. a zoo model not built
def test_an_unbuilt_zoo_model_raises_model_not_built_error(tmp_path, monkeypatch):
    from qe.errors import ExportError, ModelNotBuiltError, QEError
    from qe.kinds import export_dir_of

    monkeypatch.setenv("QE_MODELS", str(tmp_path / "models"))
    with pytest.raises(ModelNotBuiltError) as e:
        qe.load(NAMED)
    exc = e.value
    # still what callers caught before: a KeyError (qe.load) and an ExportError (export_dir_of)
    assert isinstance(exc, KeyError) and isinstance(exc, ExportError) and isinstance(exc, QEError)
    assert str(exc) == exc.args[0]  # not a KeyError's repr in quotes
    assert f"qe zoo build {NAMED}" in str(exc) and str(tmp_path / "models") in str(exc)
    with pytest.raises(ModelNotBuiltError, match=f"qe zoo build {NAMED}"):
        export_dir_of(NAMED)


def test_qe_score_with_an_unbuilt_zoo_model_is_one_line_exit_3(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("QE_MODELS", str(tmp_path / "models"))
    (tmp_path / "in.txt").write_text("the cat sat on the mat .\n")
    assert main(["score", "-m", NAMED, "-i", str(tmp_path / "in.txt")]) == EXIT_BAD_MODEL
    line = _one_line(capsys)
    assert line.startswith(f"qe score: error: --model {NAMED}: '{NAMED}' is a named model of the zoo"), line
    assert f"Build it with: qe zoo build {NAMED}" in line and not line.endswith("'\"")


# ------------------------------------------------------------------------- 4. --ser without a checkable fact
def test_compare_ser_without_a_checkable_fact_is_one_line_exit_2(tmp_path, capsys):
    mrs = tmp_path / "mrs.txt"
    mrs.write_text("inform(area=dontcare)\ninform(area=dontcare)\ninform(area=dontcare)\n", encoding="utf-8")
    (tmp_path / "base.txt").write_text("any area .\nanywhere is fine .\nsomewhere .\n", encoding="utf-8")
    (tmp_path / "sys.txt").write_text("hello .\nhi .\nyes .\n", encoding="utf-8")
    args = ["compare", "-m", "coverage", "--opt", "lexicon=none", "--mrs", str(mrs), str(tmp_path / "base.txt"),
            str(tmp_path / "sys.txt")]
    assert main([*args, "--ser"]) == EXIT_BAD_INPUT
    captured = capsys.readouterr()
    assert "nan" not in captured.out
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and str(mrs) in err[0] and "no output has a checkable fact" in err[0], err
    assert main([*args, "--ser", "--json"]) == EXIT_BAD_INPUT
    assert capsys.readouterr().out == ""
    # as without --ser, which already refused it
    assert main(args) == EXIT_BAD_INPUT
