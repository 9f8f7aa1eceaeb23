"""``coverage_soft`` (issue 50, item 2): the coverage formula over expected counts - partial evidence for omitted
facts, the extent of unexplained words, the aligner's probabilities - and the fold assignment of
``experiments.coverage_ranking``."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from qe.content import Matcher
from qe.content.align import Alignment, Verdict
from qe.content.lexicon import mine_triples
from qe.content.scorer import CoverageScorer, soft_coverage
from qe.data.webnlg import triples_mr

REPO = Path(__file__).resolve().parents[2]

E2E_MR = "name[The Eagle], food[Fast food], eatType[coffee shop]"
TRIPLES = triples_mr([("Alan_Bean", "nationality", "United_States"), ("Alan_Bean", "birthPlace", "Wheeler,_Texas")])
PAIRS = [
    (triples_mr([("Alan_Bean", "birthPlace", "Wheeler,_Texas")]), "Alan Bean was born in Wheeler, Texas."),
    (triples_mr([("Elliot_See", "birthPlace", "Dallas")]), "Elliot See was born in Dallas."),
    (triples_mr([("Alan_Bean", "nationality", "United_States")]), "Alan Bean is from the United States."),
    (triples_mr([("Elliot_See", "nationality", "United_States")]), "Elliot See is from the United States."),
]


def _figs(scorer, outputs, mrs):
    return [scorer.figures(a) for a in scorer.align(outputs, mrs)]


def test_the_component_exists_and_lies_in_the_unit_interval():
    s = CoverageScorer(lexicon="none")
    outs = ["The Eagle is a coffee shop serving fast food.", "The Eagle serves food.", "Nothing here.",
            "The Eagle, The Eagle, a pub with cheap Italian food and 5 stars, 1999."]
    comps = s.score_components(outs, mrs=[E2E_MR] * len(outs), progress=False)
    assert "coverage_soft" in comps and len(comps["coverage_soft"]) == len(outs)
    assert all(0.0 <= x <= 1.0 for x in comps["coverage_soft"])
    assert s.score(outs, mrs=[E2E_MR] * len(outs), progress=False) == comps["coverage"]  # the score is unchanged
    assert math.isnan(s.figures(Alignment([Verdict("area", "dontcare", "unchecked")]))["coverage_soft"])


def test_equal_to_coverage_when_the_evidence_is_all_or_nothing():
    s = CoverageScorer(lexicon="none")
    outs = ["The Eagle is a coffee shop serving fast food.", "The Eagle is a coffee shop.", "The Eagle is nice.",
            "Something else entirely."]
    for f in _figs(s, outs, [E2E_MR] * len(outs)):
        assert f["coverage_soft"] == pytest.approx(f["coverage"])
    # triples: realised, omitted without a word of the object, a hallucinated number (a value: always all of it)
    t = CoverageScorer(lexicon="none")
    for text in ["Alan Bean, born in Wheeler, Texas, is from the United States.", "Alan Bean is from the United States.",
                 "Alan Bean is from the United States. He flew in 1969."]:
        f = _figs(t, [text], [TRIPLES])[0]
        assert f["coverage_soft"] == pytest.approx(f["coverage"]), text
    # a stretch of unexplained words that is its whole sentence counts as much as before
    lex = mine_triples(PAIRS, source="tiny", min_count=1, min_property_share=0.3, min_common_share=0.9)
    m = Matcher(lex)
    al = m.align(TRIPLES, "Alan Bean, born in Wheeler, Texas, is from the United States. He liked cake.")
    assert [h["value"] for h in al.hallucinated] == ["liked cake"] and al.hallucinated[0].extent == 1.0
    assert soft_coverage(al) == pytest.approx(0.5) == s.figures(al)["coverage"]


def test_equal_counts_are_ordered_by_partial_evidence():
    s = CoverageScorer(lexicon="none")
    half, none = _figs(s, ["The Eagle serves food.", "The Eagle is nice."], [E2E_MR] * 2)
    assert half["coverage"] == none["coverage"] and half["omitted"] == none["omitted"] == 2
    assert half["coverage_soft"] > none["coverage_soft"] == none["coverage"]
    al = s.align(["The Eagle serves food."], [E2E_MR])[0]
    food = next(v for v in al.verdicts if v.slot == "food")
    assert food.status == "omitted" and food.partial == pytest.approx(1 / 3)  # 1 of 2 words: 1 / (2 + 1)
    assert al.to_dict()["verdicts"][1]["partial"] == pytest.approx(1 / 3)
    assert "partial" not in al.to_dict()["verdicts"][2]  # no word of "coffee shop": no field, as before
    # triples: one word of "Wheeler, Texas" outside the MR's names
    texas, nothing = _figs(s, ["Alan Bean was born in Texas.", "Alan Bean was born somewhere."], [TRIPLES] * 2)
    assert texas["coverage"] == nothing["coverage"] and texas["omitted"] == nothing["omitted"]
    assert texas["coverage_soft"] > nothing["coverage_soft"]
    # a word inside another name of the MR is no evidence: "Texas" in the subject's name
    mr = triples_mr([("Texas_Rangers", "city", "Arlington,_Texas"), ("Texas_Rangers", "league", "MLB")])
    al = Matcher().align(mr, "The Texas Rangers play in MLB.")
    assert al.verdicts[0].status == "omitted" and al.verdicts[0].partial is None


def test_equal_counts_are_ordered_by_the_extent_of_unexplained_words():
    lex = mine_triples(PAIRS, source="tiny", min_count=1, min_property_share=0.3, min_common_share=0.9)
    s = CoverageScorer(lexicon=lex)
    small, whole = _figs(s, ["Alan Bean, a famous man born in Wheeler, Texas, is from the United States.",
                             "Alan Bean, born in Wheeler, Texas, is from the United States. He liked cake."], [TRIPLES] * 2)
    assert small["hallucinated"] == whole["hallucinated"] == 1 and small["coverage"] == whole["coverage"] == 0.5
    assert small["coverage_soft"] > whole["coverage_soft"] == whole["coverage"]
    assert 0.5 < small["coverage_soft"] <= 1.0
    # the variants: each refinement off
    al = s.align(["Alan Bean, a famous man born in Wheeler, Texas, is from the United States."], [TRIPLES])[0]
    assert soft_coverage(al, extent=False) == pytest.approx(0.5)
    assert soft_coverage(al, partial=False) == pytest.approx(small["coverage_soft"])


def test_aligner_verdicts_count_their_probabilities():
    v = [Verdict("name", "A", "realised"),
         Verdict("food", "Thai", "wrong", engine="aligner", confidence=0.5,
                 probs={"realised": 0.3, "omitted": 0.2, "wrong": 0.5}),
         Verdict("area", "riverside", "realised", engine="aligner", confidence=0.9,
                 probs={"realised": 0.9, "omitted": 0.1, "wrong": 0.0})]
    al = Alignment(v, [{"slot": "priceRange", "value": "cheap", "engine": "aligner", "confidence": 0.6}])
    assert soft_coverage(al) == pytest.approx((1 + 0.3 + 0.9 - 0.5 - 0.6) / 3)
    assert "probs" not in al.to_dict()["verdicts"][1]  # internal, as spans
    one_hot = Alignment([Verdict("name", "A", "realised"), Verdict("food", "Thai", "wrong", engine="aligner",
                                                                   probs={"realised": 0.0, "omitted": 0.0, "wrong": 1.0})])
    assert soft_coverage(one_hot) == pytest.approx(CoverageScorer(lexicon="none").figures(one_hot)["coverage"])


@pytest.fixture(scope="module")
def tiny_aligner(tmp_path_factory):
    """A content_aligner export holding a tiny random BERT (no training: the probabilities are what they are)."""
    sys.path.insert(0, str(REPO / "tests"))
    from tiny_models import _tiny_config, _tiny_tokenizer
    from transformers import BertForSequenceClassification
    import torch

    from qe.content.aligner import save_export
    from qe.content.aligner_data import Inventory

    torch.manual_seed(0)
    tmp = tmp_path_factory.mktemp("soft_aligner")
    tok = _tiny_tokenizer(tmp / "tok")
    model = BertForSequenceClassification(_tiny_config(tok, num_labels=3)).eval()
    rows = [{"mr": "name[The Eagle], food[Fast food], priceRange[cheap]", "ref": "The Eagle serves cheap fast food."}]
    config = {"thresholds": {m: 0.34 for m in ("combined", "override", "aligner")},
              "additions": {m: False for m in ("combined", "override", "aligner")},
              "inventory": Inventory.from_rows(rows).to_dict(), "max_length": 64}
    return save_export(tmp / "export", model, tok, config=config, data={"name": "tiny"}, metrics={})


def test_the_aligner_path_on_a_tiny_export(tiny_aligner):
    import qe

    s = qe.load("coverage", lexicon="none", aligner=str(tiny_aligner), device="cpu")
    outs = ["The Eagle serves fast food.", "The Eagle is nice.", "The Eagle is a place."]
    mrs = ["name[The Eagle], food[Fast food], priceRange[cheap]"] * 3
    for al in s.align(outs, mrs):
        asked = [v for v in al.verdicts if v.engine == "aligner"]
        assert asked and all(v.probs is not None and sum(v.probs.values()) == pytest.approx(1, abs=1e-4)
                             for v in asked)
        f = s.figures(al)
        assert 0.0 <= f["coverage_soft"] <= 1.0
        exp = sum(v.probs["realised"] if v.probs else float(v.status == "realised") for v in al.verdicts) - \
            sum(v.probs["wrong"] if v.probs else float(v.status == "wrong") for v in al.verdicts) - \
            sum(float(h.get("confidence", 1.0)) for h in al.hallucinated)
        assert f["coverage_soft"] == pytest.approx(min(1.0, max(0.0, exp / f["facts"])))
    comps = s.score_components(outs, mrs=mrs, progress=False)
    assert len(set(np.round(comps["coverage_soft"], 9))) >= len(set(np.round(comps["coverage"], 9)))


# ------------------------------------------------------------------------------------------ the experiment script
def test_fold_assignment_keeps_every_input_in_one_fold():
    from experiments.coverage_ranking import input_folds, input_groups, select_out_of_fold, tie_shares

    rng = np.random.RandomState(0)
    eids = [f"Id{k}" for k in rng.randint(0, 40, 400)]
    mrs = [f"mr{int(e[2:]) // 2}" for e in eids]  # two test_eids share each MR: one input
    groups = input_groups(eids, mrs)
    fold = input_folds(groups, 5, seed=1)
    for key in (eids, mrs, groups):
        by: dict = {}
        for k, f in zip(key, fold):
            by.setdefault(k, set()).add(int(f))
        assert all(len(v) == 1 for v in by.values())
    assert sorted(set(fold.tolist())) == [0, 1, 2, 3, 4]
    assert (input_folds(groups, 5, seed=1) == fold).all()  # deterministic
    # selection: the candidate that follows the rating wins in every fold, out of fold
    y = rng.rand(400)
    sel = select_out_of_fold({"noise": rng.rand(400), "good": y + 0.1 * rng.rand(400)}, y, fold)
    assert [p["chosen"] for p in sel["folds"]] == ["good"] * 5 and sel["pooled_rho"] > 0.9
    # tied pairs: within a group and over all pairs
    t = tie_shares([1, 1, 0.5, 0.5, np.nan], ["a", "a", "a", "b", "b"])
    assert t["within"] == pytest.approx(1 / 3) and t["all"] == pytest.approx(2 / 6) and t["distinct"] == 2


def test_score_option_makes_the_soft_figure_the_score_only_when_asked(tmp_path):
    import json

    from qe.cli import main

    outs, mrs = ["The Eagle serves food.", "The Eagle is nice."], [E2E_MR] * 2
    counts, soft = CoverageScorer(lexicon="none"), CoverageScorer(lexicon="none", score="soft")
    assert counts.score(outs, mrs=mrs, progress=False) == [pytest.approx(1 / 3)] * 2  # the counts: a tie
    got = soft.score(outs, mrs=mrs, progress=False)
    assert got[0] > got[1] == pytest.approx(1 / 3)
    assert "score:" not in str(counts.signature) and "score:soft" in str(soft.signature)
    with pytest.raises(ValueError, match="score='rank'"):
        CoverageScorer(score="rank")
    # soft-partial: extents off (a stretch of unexplained words counts 1 again)
    lex = mine_triples(PAIRS, source="tiny", min_count=1, min_property_share=0.3, min_common_share=0.9)
    text = "Alan Bean, a famous man born in Wheeler, Texas, is from the United States."
    assert CoverageScorer(lexicon=lex, score="soft-partial").score([text], mrs=[TRIPLES], progress=False) == \
        [pytest.approx(0.5)] and CoverageScorer(lexicon=lex, score="soft").score([text], mrs=[TRIPLES])[0] > 0.5
    (tmp_path / "mrs.txt").write_text("\n".join(mrs) + "\n", encoding="utf-8")
    (tmp_path / "out.txt").write_text("\n".join(outs) + "\n", encoding="utf-8")
    out = tmp_path / "s.jsonl"
    assert main(["score", "-m", "coverage", "--opt", "lexicon=none", "--opt", "score=soft", "-i",
                 str(tmp_path / "out.txt"), "--mrs", str(tmp_path / "mrs.txt"), "-o", str(out), "-q"]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert rows[0]["score"] == pytest.approx(got[0]) and rows[1]["score"] == pytest.approx(got[1])
