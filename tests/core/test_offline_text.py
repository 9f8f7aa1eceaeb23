"""Offline resolution of pretrained resources and the shared sentence splitter."""
from pathlib import Path

import pytest

from qe.core.offline import encoder_path, load_spacy
from qe.core.text import split_sentences


def test_encoder_path_maps_minilm_aliases_to_the_wheel_and_passes_other_names_through():
    for alias in ("minilm", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        p = Path(encoder_path(alias))
        assert (p / "config.json").is_file() and (p / "model.safetensors").is_file()
    assert encoder_path("bert-base-cased") == "bert-base-cased"


def test_load_spacy_falls_back_to_wheels_and_reports_what_it_tried():
    nlp = load_spacy("en_core_web_sm")
    doc = nlp("The cats were sitting on the mats.")
    assert [t.lemma_ for t in doc if t.pos_ == "NOUN"] == ["cat", "mat"]
    with pytest.raises(OSError, match="spaCy pipeline 'xx_no_such_model' is not installed"):
        load_spacy("xx_no_such_model")


def test_split_sentences_methods_and_edge_cases():
    text = "Dr. Smith went home.  He ate 3.5 apples!\nThen he slept."
    assert split_sentences(text) == ["Dr. Smith went home.", "He ate 3.5 apples!", "Then he slept."]
    assert split_sentences(text, method="nupunkt")[0] == "Dr. Smith went home."
    assert split_sentences("a first line\n\n  a  second. line  \n", method="newline") == ["a first line", "a second. line"]
    assert split_sentences("") == [] and split_sentences(" \n\t ") == []
    assert split_sentences("no final punctuation") == ["no final punctuation"]
    with pytest.raises(TypeError):
        split_sentences(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown sentence splitter"):
        split_sentences("a. b.", method="regex")


def test_local_looking_path_is_never_sent_to_the_hub(tmp_path):
    import pytest

    from qe.core.offline import encoder_path

    for name in ("exports/cola_typo", "./models/x", str(tmp_path / "missing"), "~/no/such/model"):
        with pytest.raises(FileNotFoundError, match="nothing is looked up on the model hub"):
            encoder_path(name)
    assert encoder_path("bert-base-cased") == "bert-base-cased"  # a Hub id stays a Hub id
    assert encoder_path(str(tmp_path)) == str(tmp_path)


def test_export_names_stray_missing_and_changed_files(tmp_path):
    import pytest

    from qe.errors import ExportError
    from qe.core.export import export_writer, read_manifest, verify_checksum

    with export_writer(tmp_path / "e", kind="test") as d:
        (d / "a.bin").write_bytes(b"a")
        (d / "b.bin").write_bytes(b"b")
    e = tmp_path / "e"
    verify_checksum(e, read_manifest(e))
    (e / "notes.txt").write_text("mine")
    with pytest.raises(ExportError, match=r"stray file\(s\) not written by the export: notes.txt"):
        verify_checksum(e, read_manifest(e))
    (e / "notes.txt").unlink()
    (e / "a.bin").write_bytes(b"A")
    (e / "b.bin").unlink()
    with pytest.raises(ExportError, match=r"missing: b.bin; changed: a.bin"):
        verify_checksum(e, read_manifest(e))
