"""Issue 56, items 1-2 and part of 4: value words attached by syntax, mined patterns that stay in their slot, and
cues that need their slot's context (a one-letter value is not the article, a negation before a cue counts, a
plural realises its singular value).

The three faithful sentences are the issue's own ("Not done until"). They are checked three times: with the default
``lexicon=auto`` (the shipped E2E lexicon), with the E2E lexicon mined from the data folder by the current miner
(``lexicon=e2e@data``; skipped without the data), and with a tiny hand-built lexicon that holds the E2E wordings
they need (no data). The parse needs a spaCy English pipeline
(``en_core_web_sm`` is a dependency of qe; ``en_core_web_md`` is preferred where installed)."""
from __future__ import annotations

import pytest

from conftest import shared_data_dir
from qe.content import Matcher
from qe.content.lexicon import Lexicon, SlotLexicon, _out_of_slot, mine
from qe.content.scorer import CoverageScorer, dataset_lexicon

#: (MR, faithful text): every fact realised, nothing invented
FAITHFUL = [
    ("name[The Mill], eatType[pub], customer rating[low], priceRange[less than £20]",
     "The Mill is a pub with a low customer rating and a price range of less than £20."),
    ("name[The Mill], eatType[pub], customer rating[average], priceRange[cheap]",
     "The Mill is a cheap pub with an average rating and a price range that is low."),
    ("name[Zizzi], eatType[coffee shop], customer rating[high], priceRange[high]",
     "Zizzi is a coffee shop with high prices and a high customer rating."),
]


def _e2e_like() -> Lexicon:
    """The E2E wordings the three sentences need, as the miner writes them (the scale words both slots know)."""
    rating = SlotLexicon("category", {"low": "low", "average": "average", "high": "high"},
                         {"low": {"low": 486}, "average": {"average": 650}, "high": {"high": 432},
                          "highly rated": {"high": 84}, "rating is high": {"high": 45}}, name="customer rating")
    price = SlotLexicon("category", {"cheap": "cheap", "high": "high", "less than £ 20": "less than £20"},
                        {"cheap": {"cheap": 356, "less than £ 20": 53}, "high": {"high": 352},
                         "high price": {"high": 205}, "high prices": {"high": 27}, "low price": {"cheap": 33},
                         "low priced": {"cheap": 18}, "low prices": {"cheap": 13}, "prices are high": {"high": 11}},
                        name="priceRange")
    eat = SlotLexicon("category", {"pub": "pub", "coffee shop": "coffee shop", "restaurant": "restaurant"}, {},
                      name="eatType")
    family = SlotLexicon("binary", {"yes": "yes", "no": "no"}, {"not family": {"no": 312}},
                         ["child", "kid", "family", "friendly", "welcomes"], name="familyFriendly")
    return Lexicon({"customerrating": rating, "pricerange": price, "eattype": eat, "familyfriendly": family},
                   source="test")


def _faithful(al) -> tuple[list, list]:
    return [(v.slot, v.value, v.status) for v in al.verdicts if v.status != "realised"], al.hallucinated


@pytest.mark.parametrize("mr,text", FAITHFUL)
def test_the_issue_sentences_with_a_tiny_lexicon(mr, text):
    assert _faithful(Matcher(_e2e_like()).align(mr, text)) == ([], [])


@pytest.fixture(scope="module")
def mined_e2e():
    d = shared_data_dir()
    if d is None or not (d / "e2e" / "devel-fixed.no-ol.csv").is_file():
        pytest.skip("the data folder (QE_DATA_DIR / ../shared/data) with e2e/devel-fixed.no-ol.csv is absent")
    return str(d)


@pytest.mark.parametrize("mr,text", FAITHFUL)
def test_the_issue_sentences_with_the_e2e_lexicon_mined_from_the_data(mined_e2e, mr, text):
    row = CoverageScorer(lexicon="e2e@data", data_dir=mined_e2e).details([text], mrs=[mr])[0]
    assert [v for v in row["verdicts"] if v["status"] != "realised"] == []
    assert row["hallucinated"] == []


@pytest.mark.parametrize("mr,text", FAITHFUL)
def test_the_issue_sentences_with_the_default_lexicon(mr, text):
    """``lexicon=auto``: the shipped E2E lexicon (qe/resources/lexicons, what the miner makes from the data)."""
    dataset_lexicon.cache_clear()
    row = CoverageScorer().details([text], mrs=[mr])[0]
    assert [v for v in row["verdicts"] if v["status"] != "realised"] == []
    assert row["hallucinated"] == []


def test_a_scale_word_goes_to_the_slot_it_qualifies_not_the_nearest():
    """The parse places it: "prices ... are high" (subject of a copula), "highly priced", "a low customer rating"."""
    m = Matcher(_e2e_like())
    for mr, text in [("name[Zizzi], priceRange[high], customer rating[low]",
                      "At Zizzi the prices for a meal are really high, and it has a low customer rating."),
                     ("name[Zizzi], priceRange[cheap], customer rating[high]",
                      "Zizzi has a high rating, and its prices are low.")]:
        assert _faithful(m.align(mr, text)) == ([], []), text
    # the same word said of the other slot is that slot's wrong value, not an invented rating
    al = m.align("name[Zizzi], priceRange[cheap], customer rating[high]",
                 "Zizzi has a high rating and the prices at this place are high.")
    assert [(v.slot, v.status, v.said_value) for v in al.verdicts if v.status != "realised"] == \
        [("priceRange", "wrong", "high")]
    assert al.hallucinated == []


def test_children_are_not_welcome_is_a_negated_family_slot():
    al = Matcher(_e2e_like()).align("name[Zizzi], familyFriendly[yes]", "At Zizzi children are not welcome.")
    assert [(v.slot, v.status) for v in al.verdicts] == [("name", "realised"), ("familyFriendly", "wrong")]


# ------------------------------------------------------------------------------ patterns that stay in their slot
def test_a_pattern_spanning_another_slots_words_is_not_kept():
    own = {"customer", "rating", "low", "average", "high"}
    names = {"customerrating": {"customer", "rating"}, "pricerange": {"price", "range"}, "eattype": {"eat", "type"}}
    values = {"customerrating": {"low", "average", "high"}, "pricerange": {"cheap", "high"},
              "eattype": {"coffee", "shop", "pub"}}
    assert _out_of_slot("rating and a price".split(), "customerrating", own, names, values) == "other_slot_words"
    assert _out_of_slot("average rated coffee".split(), "customerrating", own, names, values) == "other_slot_words"
    assert _out_of_slot("average rating and".split(), "customerrating", own, names, values) == "function_word_edge"
    assert _out_of_slot("a high".split(), "customerrating", own, names, values) == "function_word_edge"
    assert _out_of_slot("rating is high".split(), "customerrating", own, names, values) is None
    # "low" is also a rating, but "low price" holds the price's own name: the price's pattern
    assert _out_of_slot("low price".split(), "pricerange", {"price", "range", "cheap", "high"}, names, values) is None


def test_the_miner_drops_a_pattern_that_spans_two_slots_and_counts_it():
    """Texts that always say "a <rating> rating and a price range of <price>": without the rule the miner keeps
    n-grams such as "rating and a price" for the rating (the words of both slots)."""
    ratings, prices = ["low", "average", "high"], ["cheap", "moderate", "high"]
    pairs = []
    for k in range(60):
        r, p = ratings[k % 3], prices[(k // 3) % 3]
        pairs.append((f"name[X{k}], customer rating[{r}], priceRange[{p}]",
                      f"X{k} has a {r} customer rating and a price range that is {p}."))
        pairs.append((f"name[Y{k}], customer rating[{r}]", f"Y{k} has a {r} customer rating and a view."))
    lex = mine(pairs, min_count=3)
    for key, sl in lex.slots.items():
        for g in list(sl.patterns) + sl.triggers:
            words = g.split()
            other = {"price", "range"} if key == "customerrating" else {"customer", "rating"}
            assert not (set(words) & other), (key, g)
            assert words[-1] not in ("and", "a", "that", "is"), (key, g)
    assert lex.settings["dropped_patterns"]["other_slot_words"] > 0
    assert lex.settings["dropped_patterns"]["function_word_edge"] > 0
    from qe.content.mining import summary

    assert any("not kept:" in line and "another slot's words" in line for line in summary(lex))


# ------------------------------------------------------------------------------ cues that need their context
def _laptop_like(context_words: dict | None = None) -> Lexicon:
    slots = {"type": SlotLexicon("category", {"television": "television", "laptop": "laptop"}, {}),
             "energyrating": SlotLexicon("category", {"a": "A", "a+": "A+", "b": "B"}, {}, name="energy rating"),
             "acceptscreditcards": SlotLexicon("binary", {"yes": "yes", "no": "no"}, {},
                                               ["use", "credit", "card", "cards"])}
    return Lexicon(slots, source="test", settings={"context_words": context_words} if context_words else {})


def test_a_one_letter_value_does_not_match_the_article():
    m = Matcher(_laptop_like())
    assert m.align("inform(name=x1;type=laptop)", "the x1 is a laptop .").hallucinated == []
    al = m.align("inform(name=x1;type=television;energyrating=b)",
                 "the x1 is a television with an energy rating of b .")
    assert [(v.slot, v.status) for v in al.verdicts] == [("name", "realised"), ("type", "realised"),
                                                         ("energyrating", "realised")]
    assert al.hallucinated == []  # "a television" is not the rating A
    al = m.align("inform(name=x1;type=television;energyrating=b)",
                 "the x1 is a television . its energy rating is b .")  # a copula's predicate: tied to its subject
    assert [(v.slot, v.status) for v in al.verdicts][-1] == ("energyrating", "realised")


def test_a_one_letter_mr_value_needs_its_context_without_a_lexicon():
    m = Matcher()  # the slot's name, as the MR writes it, is its context
    assert [v.status for v in m.align("inform(name=x1;energyRating=a)", "the x1 is a laptop .").verdicts] == \
        ["realised", "omitted"]
    assert [v.status for v in m.align("inform(name=x1;energyRating=a)",
                                      "the x1 laptop has an energy rating of a .").verdicts] == ["realised", "realised"]


def test_does_not_use_negates_a_cue_and_a_common_cue_needs_its_context():
    m = Matcher(_laptop_like({"acceptscreditcards": ["use"]}))
    al = m.align("inform(name=x1;acceptscreditcards=yes)", "the x1 does not use credit cards .")
    assert [(v.slot, v.status) for v in al.verdicts] == [("name", "realised"), ("acceptscreditcards", "wrong")]
    al = m.align("inform(name=x1;acceptscreditcards=no)", "the x1 does not use credit cards .")
    assert [(v.slot, v.status) for v in al.verdicts] == [("name", "realised"), ("acceptscreditcards", "realised")]
    # "used for business computing": no credit card in sight, so nothing about cards is invented
    al = m.align("inform(name=x1;type=laptop)", "the x1 is a laptop , and it is used for business computing .")
    assert al.hallucinated == []
    # without the miner's word that "use" is common, the parse says the same: a verb trigger with no word of its
    # slot tied to it states nothing (Matcher._untied_predicates); beside "credit cards" it still does
    m = Matcher(_laptop_like())
    assert m.align("inform(name=x1;type=laptop)",
                   "the x1 is a laptop , and it is used for business computing .").hallucinated == []
    assert [(h["slot"], h["value"]) for h in m.align("inform(name=x1;type=laptop)",
                                                     "the x1 is a laptop , and you can use credit cards .").hallucinated
            ] == [("acceptscreditcards", "yes")]


def test_a_plural_realises_its_singular_value():
    for lex in (_laptop_like(), None):  # a value the lexicon knows, and an MR value without a lexicon
        m = Matcher(lex)
        al = m.align("inform(name=x1;type=television)", "the x1 and x2 are televisions with a 40 inch screen .")
        assert [(v.slot, v.status, v.said) for v in al.verdicts] == [("name", "realised", "x1"),
                                                                     ("type", "realised", "televisions")]
    # a generic plural states no value the MR lacks ("restaurants" is no eatType of this MR)
    al = Matcher(_e2e_like()).align("name[Zizzi], priceRange[cheap]", "Zizzi is cheaper than most restaurants.")
    assert al.hallucinated == []


def test_the_miner_marks_common_words_that_need_their_context():
    """A word texts without the slot use often ("high" of prices), that the slot's texts write with its name
    words ("a high customer rating"), matches only with them."""
    pairs = []
    for k in range(40):
        pairs.append((f"name[X{k}], customer rating[high]", f"X{k} has a high customer rating."))
        pairs.append((f"name[X{k}], customer rating[low]", f"X{k} has a low customer rating."))
        pairs.append((f"name[Y{k}], priceRange[high]", f"Y{k} has high prices."))
    lex = mine(pairs, min_count=3)
    assert "high" in lex.settings.get("context_words", {}).get("customerrating", [])
    al = Matcher(lex).align("name[Y1], priceRange[high]", "Y1 has high prices.")
    assert al.hallucinated == []


def test_the_parse_runs_only_where_distance_is_in_doubt():
    m = Matcher(_e2e_like())
    m.align("name[Zizzi], customer rating[low]", "Zizzi has a low customer rating.")
    m.align("name[Zizzi], priceRange[cheap]", "Zizzi is a cheap pub.")
    assert m.parsed == 0
    m.align("name[Zizzi], priceRange[high], customer rating[low]",
            "At Zizzi the prices for a meal are really high, and it has a low customer rating.")
    assert m.parsed == 1


def _sf_like_pairs() -> list[tuple[str, str]]:
    """SF-style pairs: "restaurant" is written under MRs with and without a ``type``, and the restaurant name "range"
    is also the word of "price range"; "indian" is written only where the MR holds the food."""
    rows = []
    for i in range(30):
        rows.append((f"inform(name='place {i}';type='restaurant';food='indian')",
                     f"place {i} is an indian restaurant"))
        rows.append((f"inform(name='place {i}';pricerange='cheap')",
                     f"place {i} is a nice restaurant in the cheap price range"))
        rows.append((f"inform(name='range';food='thai')", "range serves thai food"))
        rows.append(("?request(pricerange)", "what price range of restaurant would you like"))
    return rows


def test_a_word_faithful_texts_write_without_its_slot_invents_nothing():
    """A one-word value that the mining texts whose MR lacks the slot write as often as those that hold it
    ("restaurant" of ``type``; the name "range" of "price range") is a background word: alone it reports no
    invented fact and no second value, while a discriminating word ("indian") still does."""
    lex = mine(_sf_like_pairs(), min_count=3)
    background = lex.settings.get("background_words") or {}
    assert "restaurant" in background.get("type", []) and "range" in background.get("name", [])
    assert "indian" not in background.get("food", [])
    m = Matcher(lex)
    al = m.align("inform(name='place 7';pricerange='cheap')", "place 7 is a nice restaurant in the cheap price range")
    assert al.hallucinated == [] and {v.status for v in al.verdicts} == {"realised"}
    al = m.align("inform(name='place 7';pricerange='cheap')", "place 7 is a cheap indian restaurant")
    assert [(h["slot"], h["value"]) for h in al.hallucinated] == [("food", "indian")]
    # the MR's own value is still realised by the background word
    al = m.align("inform(name='place 7';type='restaurant')", "place 7 is a restaurant")
    assert {v.slot: v.status for v in al.verdicts}["type"] == "realised"


# ------------------------------------------------------------------------------ a negation above, by the parse
@pytest.mark.parametrize("text", [
    "It is not a place to bring children.",
    "Zizzi is a pub, though not the best place to bring your kids.",
    "It is not the type of place people bring their kids.",
    "It is certainly not the kind of place you would bring your kids to.",
])
def test_a_negation_above_a_binary_slots_words_counts(text):
    """The negation stands more than :data:`NEGATION_WINDOW` words before the slot's words, over them in the parse
    (7 E2E references were read as family friendly; docs/results/content-log.md, "A negation above")."""
    m = Matcher(_e2e_like())
    al = m.align("name[Zizzi], familyFriendly[no]", "Zizzi is a pub. " + text)
    assert [(v.slot, v.status) for v in al.verdicts] == [("name", "realised"), ("familyFriendly", "realised")]
    assert [h for h in al.hallucinated if h["slot"] == "familyFriendly"] == []
    al = m.align("name[Zizzi]", "Zizzi is a pub. " + text)  # and said where the MR lacks it: its value is no
    assert [(h["slot"], h["value"]) for h in al.hallucinated if h["slot"] == "familyFriendly"] == [
        ("familyFriendly", "no")]


@pytest.mark.parametrize("text", [
    "It is not expensive and it is family friendly.",  # the negation is in another clause
    "If you are not in a hurry, bring the kids.",
    "It does n't serve wine but welcomes kids.",
    "Family dinner night would n't be complete without a visit.",  # after the words, which are no subject
    "There is no better place to take your kids.",  # a negated existential: no such place (inform_no_match)
    "There is n't a better place to take your children.",
])
def test_a_negation_of_another_clause_does_not_count(text):
    al = Matcher(_e2e_like()).align("name[Zizzi], familyFriendly[yes]", "Zizzi is a pub. " + text)
    assert [(v.slot, v.status) for v in al.verdicts] == [("name", "realised"), ("familyFriendly", "realised")]
    assert [h for h in al.hallucinated if h["slot"] == "familyFriendly"] == []


# ------------------------------------------------------------------------------ a trigger another noun qualifies
@pytest.mark.parametrize("text, invented", [
    ("Zizzi is a customer friendly pub.", []),
    ("Zizzi is a dog friendly pub.", []),
    ("Zizzi is a pub for the entire family.", [("familyFriendly", "yes")]),  # an adjective: still the slot
    ("Zizzi is a very child friendly pub.", [("familyFriendly", "yes")]),
])
def test_a_trigger_qualified_by_a_noun_of_no_word_of_its_slot_says_nothing_of_it(text, invented):
    al = Matcher(_e2e_like()).align("name[Zizzi], eatType[pub]", text)
    assert [(h["slot"], h["value"]) for h in al.hallucinated] == invented


def test_a_trigger_qualified_by_another_binary_slots_word_is_that_slots():
    """SF's shared lexicon knows "friendly" as kidsallowed's trigger: "a dog friendly hotel" said kidsallowed and
    left dogsallowed omitted."""
    from qe.content import shipped

    m = Matcher(shipped.load("sf"))
    al = m.align("inform(name='x';dogsallowed='yes';area='soma')", "x is a dog friendly hotel in soma")
    assert {v.slot: v.status for v in al.verdicts}["dogsallowed"] == "realised" and al.hallucinated == []
    al = m.align("inform(name='x';area='soma')", "x is a dog friendly hotel in soma")
    assert [(h["slot"], h["value"]) for h in al.hallucinated] == [("dogsallowed", "yes")]
