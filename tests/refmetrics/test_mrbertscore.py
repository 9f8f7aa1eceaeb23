"""mr-bertscore: every MR format written out as text, the numbers are bertscore's against that text, an output that
says the MR scores above one that does not, and bad input is a one-line error naming the record."""
import json

import numpy as np
import pytest

import qe
from qe.cli import main
from qe.refmetrics.mrbertscore import mr_text
from qe.errors import MissingDependencyError, MissingInputError, RecordError

pytest.importorskip("bert_score", reason="bert-score is not installed: pip install 'bert-score>=0.3.13'")


@pytest.mark.parametrize("mr, text", [
    ("Alan_Bean | birthPlace | Wheeler,_Texas\nAlan_Bean | mission | \"Apollo_12\"",
     "Alan Bean birth place Wheeler, Texas. Alan Bean mission Apollo 12."),
    ('[["Turn_Me_On_(album)", "runtime", "\\"35.1\\"(minutes)"]]', "Turn Me On (album) runtime 35.1 (minutes)."),
    ("name[The Eagle], priceRange[cheap], familyFriendly[yes]", "name The Eagle, price range cheap, family friendly yes."),
    ("inform(name='Red Door Cafe',food=chinese)", "name Red Door Cafe, food chinese."),
    ("?request(area)", "request area."),
    ("inform(name=x)&confirm(area=centre)", "name x. confirm area centre."),
    ("reqmore()", "reqmore."),
    ('{"name": "Blue Spice", "near": ["a", "b"], "kids_allowed": null}', "name Blue Spice, near a, near b, kids allowed."),
])
def test_every_mr_format_written_out(mr, text):
    assert mr_text(mr) == text


def _minilm() -> None:
    from qe.core.offline import minilm_path

    try:
        minilm_path()
    except MissingDependencyError as exc:
        pytest.skip(f"offline MiniLM weights are absent ({exc})")


@pytest.fixture(scope="module")
def scorer():
    _minilm()
    return qe.load("mr-bertscore", device="cpu")


MRS = ["Alan_Bean | birthPlace | Wheeler,_Texas\nAlan_Bean | mission | Apollo_12",
       "name[The Eagle], food[French], area[riverside]"]
GOOD = ["Alan Bean was born in Wheeler, Texas, and flew on Apollo 12.",
        "The Eagle serves French food by the riverside."]
BAD = ["The stock market fell sharply on Tuesday.", "I like to play the guitar in the evening."]


def test_numbers_are_bertscore_against_the_written_mr(scorer):
    comps = scorer.score_components(GOOD, mrs=MRS, progress=False)
    plain = qe.load("bertscore", device="cpu").score_components(GOOD, refs=[mr_text(m) for m in MRS], progress=False)
    for k in ("precision", "recall", "f1"):
        np.testing.assert_allclose(comps[k], plain[k], atol=1e-6, rtol=0)
    assert scorer.score(GOOD, mrs=MRS, progress=False) == pytest.approx(comps["f1"], abs=1e-9)


def test_an_output_saying_the_mr_scores_above_an_unrelated_one(scorer):
    good = scorer.score_components(GOOD, mrs=MRS, progress=False)
    bad = scorer.score_components(BAD, mrs=MRS, progress=False)
    for k in ("precision", "recall", "f1"):
        assert all(g > b + 0.05 for g, b in zip(good[k], bad[k])), (k, good[k], bad[k])


def test_empty_output_scores_zero_and_bad_input_names_the_record(scorer):
    assert scorer.score(["", GOOD[1]], mrs=MRS, progress=False)[0] == 0.0
    nan_row = scorer.score_components([GOOD[0], GOOD[1]], mrs=[MRS[0], "inform()"], progress=False)
    assert all(np.isnan(nan_row[k][1]) and np.isfinite(nan_row[k][0]) for k in nan_row)  # nothing to write out
    with pytest.raises(MissingInputError, match="meaning representations"):
        scorer.score(GOOD)
    with pytest.raises(RecordError, match=r"record 'b7': field 'mr'.*cannot parse MR"):
        scorer.score(GOOD, mrs=[MRS[0], "((("], ids=["a1", "b7"], progress=False)
    with pytest.raises(RecordError, match=r"mrs\[1\]"):
        scorer.score(GOOD, mrs=[MRS[0], "((("], progress=False)


def test_options_signature_and_refusals(scorer):
    sig = str(scorer.signature)
    assert sig.startswith("MR-BERTScore|model:sentence-transformers/all-MiniLM-L6-v2|layer:6|idf:no")
    assert "|mr:auto|" in sig and "refs:" not in sig
    with pytest.raises(ValueError, match="mr_format"):
        qe.load("mr-bertscore", mr_format="xml")
    with pytest.raises(ValueError, match="missing_refs"):
        qe.load("mr-bertscore", missing_refs="nan")
    idf = qe.load("mr-bertscore", idf=True, device="cpu")
    assert idf.corpus_dependent and "idf:yes" in str(idf.signature)


def test_cli_score_with_mrs(scorer, tmp_path):
    (tmp_path / "out.txt").write_text("\n".join(GOOD) + "\n")
    (tmp_path / "mrs.txt").write_text("\n".join(m.replace("\n", " ; ") for m in MRS) + "\n")
    out = tmp_path / "scores.jsonl"
    assert main(["score", "-m", "mr-bertscore", "-i", str(tmp_path / "out.txt"), "--mrs", str(tmp_path / "mrs.txt"),
                 "-o", str(out), "-q", "--components"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["score"] for r in rows] == pytest.approx(scorer.score(GOOD, mrs=MRS, progress=False), abs=1e-6)
    assert set(rows[0]["components"]) == {"precision", "recall", "f1"}


def test_idf_needs_references_that_differ_and_reads_on_off_words():
    _minilm()
    with pytest.raises(ValueError, match="idf=True needs references that differ"):
        qe.load("mr-bertscore", idf=True).score(["The Eagle is a pub.", "The Eagle is cheap."],
                                                mrs=["name[The Eagle]"] * 2, progress=False)
    assert "|idf:no|" in qe.load("mr-bertscore", idf="no").signature  # bool("no") was True
    with pytest.raises(ValueError, match="idf='maybe'"):
        qe.load("mr-bertscore", idf="maybe")
