"""A mined pattern of one slot must not hold another fact's value words: with the E2E lexicon, "a cheap english"
(a priceRange wording mined from "a cheap English coffee shop") swallowed "english", so ``food[English]`` was
counted omitted in "The Eagle is a cheap English coffee shop." (qe.content.lexicon._borrowed). Reproduced on a tiny
hand-made corpus (the bug shows with the check switched off, so the test is not vacuous), then on the E2E data."""
from __future__ import annotations

from collections import Counter

import pytest
from conftest import needs_data

from qe.content import Matcher
from qe.content import lexicon as lexmod

MR = "name[The Eagle], eatType[coffee shop], food[English], priceRange[cheap]"
TEXT = "The Eagle is a cheap English coffee shop."


def _pairs() -> list[tuple[str, str]]:
    """food more common than priceRange (so priceRange owns "cheap english"), and "cheap" alone also fits
    ``less than £20`` while "cheap english" fits ``cheap`` only (so the longer n-gram is not subsumed by "cheap")."""
    rows = [(12, "eatType[coffee shop], food[English], priceRange[cheap]", "is a cheap English coffee shop."),
            (40, "food[English]", "serves English food."),
            (6, "eatType[pub], priceRange[cheap]", "is a cheap pub."),
            (6, "eatType[pub], priceRange[less than £20]", "is a cheap pub."),
            (14, "eatType[pub], priceRange[high]", "is an expensive pub.")]
    return [(f"name[N{k}x{i}], {mr}", f"N{k}x{i} {text}") for k, (n, mr, text) in enumerate(rows) for i in range(n)]


def _verdicts(lex, mr: str = MR, text: str = TEXT) -> dict[str, str]:
    return {v.slot: v.status for v in Matcher(lex).align(mr, text).verdicts}


def test_a_pattern_holding_another_facts_value_is_not_mined(monkeypatch):
    fixed = lexmod.mine(_pairs(), min_count=3)
    assert "cheap english" not in fixed.slots["pricerange"].patterns
    assert _verdicts(fixed) == {"name": "realised", "eatType": "realised", "food": "realised",
                                "priceRange": "realised"}
    # the same corpus without the checks (this one, and the later rule that keeps a pattern in its slot, which now
    # drops "cheap english" too): the bug they guard against
    monkeypatch.setattr(lexmod, "_borrowed", lambda *a, **k: False)
    monkeypatch.setattr(lexmod, "_out_of_slot", lambda *a, **k: None)
    buggy = lexmod.mine(_pairs(), min_count=3)
    assert buggy.slots["pricerange"].patterns["cheap english"] == {"cheap": 12}
    assert _verdicts(buggy)["food"] == "omitted"


def test_the_freed_words_are_read_as_an_addition_when_the_mr_lacks_the_food():
    al = Matcher(lexmod.mine(_pairs(), min_count=3)).align(
        "name[The Eagle], eatType[coffee shop], priceRange[cheap]", TEXT)
    assert [(h["slot"], h["value"]) for h in al.hallucinated] == [("food", "English")]


@pytest.mark.parametrize("gram, slot, own, other, seen, borrowed", [
    ("a cheap english", "pricerange", {"cheap", "high"}, ("food", "english"), 11, True),  # the texts hold the food
    ("low price", "pricerange", {"cheap", "high"}, ("customerrating", "low"), 2, False),  # they do not: kept
    ("high customer rating", "customerrating", {"high", "low"}, ("pricerange", "high"), 12, False),  # own word
])
def test_which_ngrams_borrow_another_slots_value(gram, slot, own, other, seen, borrowed):
    key, value = other
    gram_value = {(gram, key): Counter({value: seen})}
    assert lexmod._borrowed(gram, slot, own, {key: [value.split()], slot: [["x"]]}, gram_value, 12, 0.8) is borrowed


@needs_data
def test_e2e_lexicon_reads_the_food_of_a_cheap_english_coffee_shop():
    import qe

    scorer = qe.load("coverage", lexicon="e2e")
    d = scorer.details([TEXT], mrs=[MR])[0]
    assert {v["slot"]: v["status"] for v in d["verdicts"]}["food"] == "realised"
    assert d["counts"]["omitted"] == 0 and scorer.score([TEXT], mrs=[MR]) == [1.0]
