"""Three precision rules, each measured on two domains or sets (docs/results/content-log.md, "Unchecked slots, auxiliary
patterns, lone unexplained words"): what a faithful text says of a slot the MR holds as ``dont_care`` / ``none`` is
not an invented fact; a pattern of auxiliaries, function words and negations only is not mined; a lone unexplained
word that no property's texts use is not a hallucinated triple fact. Tiny fixtures and the shipped lexicons only."""
from __future__ import annotations

import pytest

from qe.content import Matcher, shipped
from qe.content.lexicon import AUXILIARIES, NEGATIONS, mine


@pytest.fixture(scope="module")
def sf():
    return Matcher(shipped.load("sf"))


@pytest.mark.parametrize("mr, text", [
    ("inform_count(type='hotel',count='182',dogsallowed='dont_care')",
     "there are 182 hotels if you do not care whether dogs are allowed"),
    ("inform_count(type='hotel',count='182',acceptscreditcards='dont_care',hasinternet='dont_care')",
     "there are 182 hotels if you do not care whether they take credit cards or have internet"),
    ("inform(name='union hotel',dogsallowed='none',hasinternet='yes')",
     "the union hotel does not allow dogs and has internet"),
])
def test_what_a_text_says_of_an_unchecked_slot_is_no_invented_fact(sf, mr, text):
    al = sf.align(mr, text)
    assert al.hallucinated == []
    assert {v.status for v in al.verdicts if v.value in ("dont_care", "none")} == {"unchecked"}


def test_the_same_words_invent_a_fact_when_the_mr_lacks_the_slot(sf):
    al = sf.align("inform(name='union hotel',hasinternet='yes')", "the union hotel does not allow dogs and has internet")
    assert [(h["slot"], h["value"]) for h in al.hallucinated] == [("dogsallowed", "no")]
    # and a second value of a slot the MR holds with a checked value is still counted
    al = sf.align("inform(name='union hotel',dogsallowed='yes')", "the union hotel allows dogs , but not all dogs")
    assert all(h["slot"] != "dogsallowed" or h["value"] != "yes" for h in al.hallucinated)


def _kids_pairs():
    rows = []
    for i in range(40):
        rows.append((f"inform(name='place {i}';kidsallowed='no')", f"place {i} does not allow kids"))
        rows.append((f"inform(name='spot {i}';kidsallowed='no')", f"spot {i} is a place that does not allow kids"))
        rows.append((f"inform(name='site {i}';kidsallowed='yes')", f"site {i} allows kids"))
        rows.append((f"inform(name='room {i}';food='thai')", f"room {i} is a place that serves thai food"))
    return rows


def test_no_pattern_or_trigger_of_auxiliaries_function_words_and_negations_only():
    lex = mine(_kids_pairs(), min_count=3)
    sl = lex.slots["kidsallowed"]
    for g in list(sl.patterns) + sl.triggers:
        from qe.content.lexicon import _stopwords

        assert not all(w in _stopwords() or w in AUXILIARIES or w in NEGATIONS for w in g.split()), g
    m = Matcher(lex)
    for text in ("place 9 does not allow kids", "place 9 is a place that does not allow kids"):
        al = m.align("inform(name='place 9';kidsallowed='no')", text)
        assert al.hallucinated == [], text
        assert {v.slot: v.status for v in al.verdicts}["kidsallowed"] == "realised"
    # the other polarity is still read, and an unasked slot still invents
    al = m.align("inform(name='site 1';kidsallowed='no')", "site 1 allows kids")
    assert {v.slot: v.status for v in al.verdicts}["kidsallowed"] == "wrong"
    al = m.align("inform(name='room 1';food='thai')", "room 1 is a place that serves thai food and does not allow kids")
    assert [(h["slot"], h["value"]) for h in al.hallucinated] == [("kidsallowed", "no")]


def test_a_lone_unexplained_word_counts_only_as_a_property_word_or_a_name():
    """With the shipped WebNLG lexicon: "houses the government" (a word no property's texts use) is no hallucinated
    fact; "born" (a birthPlace word) relating the MR's own entities is; so is a name alone."""
    m = Matcher(shipped.load("webnlg"))
    mr = '[["Addis_Ababa_City_Hall", "currentTenants", "\\"Government of Addis Ababa\\""]]'

    def words(text):
        return [h["said"] for h in m.align(mr, text).hallucinated if h.get("kind") == "words"]

    assert words("Addis Ababa City Hall houses the Government of Addis Ababa.") == []
    assert words("Addis Ababa City Hall houses the Government of Addis Ababa, born there.") == ["born"]
    assert words("Addis Ababa City Hall houses the Government of Addis Ababa with Nixon.") == ["nixon"]
