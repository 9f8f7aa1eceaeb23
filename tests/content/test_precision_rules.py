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


def _repeat(n, *templates):
    """``n`` copies of each (MR, text) template pair, ``{i}`` filled with the copy's number (a distinct name)."""
    return [(mr.format(i=i), text.format(i=i)) for i in range(n) for mr, text in templates]


_THAI = ("inform(name='room {i}';food='thai')", "room {i} is a place that serves thai food")


def _kids_pairs():
    return _repeat(40, ("inform(name='place {i}';kidsallowed='no')", "place {i} does not allow kids"),
                   ("inform(name='spot {i}';kidsallowed='no')", "spot {i} is a place that does not allow kids"),
                   ("inform(name='site {i}';kidsallowed='yes')", "site {i} allows kids"), _THAI)


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


def _priced_pairs():
    """SF-style pairs where "priced" stands beside the value moderate far more often than beside cheap ("moderate -ly
    priced", "moderately priced"), and other texts that say no price."""
    return _repeat(12, ("inform(name='spot {i}';pricerange='moderate')", "spot {i} is a moderate -ly priced place"),
                   ("inform(name='cafe {i}';pricerange='moderate')", "cafe {i} is moderately priced"),
                   ("inform(name='site {i}';pricerange='cheap')", "site {i} is a cheap place"),
                   ("inform(name='bar {i}';pricerange='cheap')", "bar {i} has a cheap price range"),
                   ("inform(name='inn {i}';pricerange='expensive')", "inn {i} is an expensive place"), _THAI) + [
        ("inform(name='hall 1';pricerange='cheap')", "hall 1 is cheap -ly priced")]


def test_the_slots_name_in_any_inflection_is_no_value_word():
    """"priced" (an inflection of pricerange's name word "price", split as the texts write it) says the price is
    talked about, not which: no pattern of moderate, so "a cheap place, priced for everyone" invents no second value;
    "moderately" still is one (written "moderate -ly" as the SF corpora write it, or as one word)."""
    lex = mine(_priced_pairs(), min_count=3)
    pats = lex.slots["pricerange"].patterns
    assert not {"priced", "is priced", "ly priced"} & set(pats)
    assert "moderately" in pats or "moderately priced" in pats
    m = Matcher(lex)
    al = m.align("inform(name='hall 2';pricerange='cheap')", "hall 2 is a cheap place , priced for everyone")
    assert al.hallucinated == [] and [v.status for v in al.verdicts if v.slot == "pricerange"] == ["realised"]
    from qe.content.lexicon import _inflection_of

    assert _inflection_of("priced", {"price"}) and _inflection_of("pricing", {"price"})
    assert not _inflection_of("pricey", {"price"})  # a derived word says more ("a pricey hotel": expensive)


def test_a_split_suffix_is_joined_to_its_word():
    """The RNNLG corpora (SF restaurant and hotel) split suffixes off with a space and a hyphen."""
    from qe.content.align import _cased_tokens
    from qe.content.lexicon import norm_tokens

    assert norm_tokens("a moderate -ly priced hotel") == ["a", "moderately", "priced", "hotel"]
    assert norm_tokens("child -s and kid -s are allowed") == ["childs", "and", "kids", "are", "allowed"]
    # a dash between words, a minus before a number, a hyphen inside a word: as before
    assert norm_tokens("a - s , -5 , x-ray") == ["a", "s", ",", "5", ",", "x", "ray"]
    text = "Child -s are welcome at the 2,900 seat Cheap -ly Priced Hall"
    assert _cased_tokens(text, norm_tokens(text)) == ["Childs", "are", "welcome", "at", "the", "2900", "seat",
                                                      "Cheaply", "Priced", "Hall"]


def test_a_split_suffix_is_no_pattern_and_realises_its_value():
    """Read as a word of its own, "-ly" (beside moderate in 12 of 13 texts) was mined as a pattern of moderate: "cheap
    -ly priced" then said a second price (5 of SF restaurant's 15 invented facts with a lexicon mined from its
    training texts)."""
    lex = mine(_priced_pairs(), min_count=3)
    assert not any("ly" in g.split() or "s" in g.split() for g in lex.slots["pricerange"].patterns)
    m = Matcher(lex)
    al = m.align("inform(name='hall 3';pricerange='cheap')", "hall 3 is cheap -ly priced")
    assert al.hallucinated == [] and [v.status for v in al.verdicts if v.slot == "pricerange"] == ["realised"]
    al = m.align("inform(name='spot 3';pricerange='moderate')", "spot 3 is moderate -ly priced")
    assert al.hallucinated == [] and [v.status for v in al.verdicts if v.slot == "pricerange"] == ["realised"]
    al = m.align("inform(name='hall 4')", "hall 4 is moderate -ly priced")  # still said when the MR lacks it
    assert [(h["slot"], h["value"]) for h in al.hallucinated] == [("pricerange", "moderate")]


def test_a_pattern_does_not_end_on_an_auxiliary():
    """"food and does" (of "serves basque food and does not allow kids") was mined for kidsallowed[no]; matched, the
    "not" after it turned it into kidsallowed[yes] (4 of SF restaurant's 15 invented facts with a lexicon mined from
    its training texts). An auxiliary at a pattern's edge is a function word there, as "is" is."""
    from qe.content.lexicon import _out_of_slot

    own, names, values = {"kids", "allowed", "yes", "no"}, {"kidsallowed": {"kids", "allowed"}}, {}
    assert _out_of_slot("food and does".split(), "kidsallowed", own, names, values) == "function_word_edge"
    assert _out_of_slot("kids and is".split(), "kidsallowed", own, names, values) == "function_word_edge"
    assert _out_of_slot("allow kids".split(), "kidsallowed", own, names, values) is None
    pairs = _kids_pairs() + _repeat(40, ("inform(name='cafe {i}';food='thai';kidsallowed='no')",
                                         "cafe {i} serves thai food and does not allow kids"))
    lex = mine(pairs, min_count=3)
    sl = lex.slots["kidsallowed"]
    assert not [g for g in list(sl.patterns) + sl.triggers if len(g.split()) > 1 and g.split()[-1] in AUXILIARIES]
    al = Matcher(lex).align("inform(name='cafe 99';food='thai';kidsallowed='no')",
                            "cafe 99 serves thai food and does not allow kids")
    assert al.hallucinated == [] and {v.slot: v.status for v in al.verdicts}["kidsallowed"] == "realised"


def test_a_slot_name_written_as_one_word_is_split_into_the_texts_words():
    from qe.content.lexicon import name_text, split_name

    vocab = {"price", "range", "accepts", "credit", "cards", "good", "for", "meal", "kids", "allowed", "is"}
    assert split_name("pricerange", vocab) == ["price", "range"]
    assert split_name("acceptscreditcards", vocab) == ["accepts", "credit", "cards"]
    assert split_name("goodformeal", vocab) == ["good", "for", "meal"]
    assert split_name("price", vocab) is None and split_name("batteryrating", vocab) is None
    assert name_text("kidsallowed", vocab) == "kids allowed" and name_text("priceRange", vocab) == "price range"
    assert name_text("pricerange") == "pricerange"  # no texts, no split
    # texts that also write the name as one word (BAGEL's references: "pricerange" 6 times, "price" 46)
    assert split_name("pricerange", vocab | {"pricerange"}) == ["price", "range"]
    assert name_text("pricerange", vocab | {"pricerange"}) == "price range"


def test_a_slots_name_is_no_value_word_where_texts_also_write_it_as_one_word():
    """The BAGEL way: "priced" stands beside moderate, and two texts write the slot's name as one word; "priced" is
    still the name's inflection, no pattern of moderate."""
    pairs = _priced_pairs() + [("inform(name='den 1';pricerange='cheap')", "den 1 has a cheap pricerange"),
                               ("inform(name='den 2';pricerange='cheap')", "den 2 has a cheap pricerange")]
    pats = mine(pairs, min_count=3).slots["pricerange"].patterns
    assert not {"priced", "is priced", "ly priced"} & set(pats)


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


def test_a_lone_word_in_the_one_sentence_that_states_a_triple_is_its_relation():
    """A lone property word standing in the only sentence that names a triple's object is that triple's relation
    said another way ("who works for General Motors" for employer); a relation noun in a second sentence about an
    object already stated is a relation of its own ("the chairman of"; a verb there relates the MR's entities: the
    rule of the lone verb), and a birth or death word always is."""
    m = Matcher(shipped.load("webnlg"))
    mr = _triples(("AMC_Matador", "designer", "Richard_A._Teague"), ("Richard_A._Teague", "employer", "General_Motors"))

    def words(text):
        return [h["said"] for h in m.align(mr, text).hallucinated if h.get("kind") == "words"]

    assert words("Richard A. Teague, who works for General Motors, designed the AMC Matador.") == []
    assert words("Richard A. Teague designed the AMC Matador. He is employed by General Motors. "
                 "Richard A. Teague is the chairman of General Motors.") == ["chairman"]
    assert words("Richard A. Teague designed the AMC Matador. He is employed by General Motors. "
                 "Richard A. Teague works for General Motors.") == []
    # a birth word is a relation of its own even where the property's texts use it ("born" is attested for club)
    club = _triples(("Aaron_Hunt", "club", "Goslarer_SC_08"))
    assert "born" in m.lexicon.attested["club"]
    assert [h["said"] for h in m.align(club, "Aaron Hunt was born at Goslarer SC 08.").hallucinated
            if h.get("kind") == "words"] == ["born"]
    # a number with a decimal point before a full stop ends its sentence (no abbreviation): two sentences
    one = _triples(("Aarhus_Airport", "runwayLength", "2702.0"))
    text = "Aarhus Airport has a runway length of 2702.0. The 2702.0 is managed."  # no verb between two entities
    assert "managed" in m.lexicon.attested["runwaylength"]  # a rarer wording: explained in a sentence stating it alone
    assert [h["said"] for h in m.align(one, text).hallucinated if h.get("kind") == "words"] == ["managed"]


def test_a_lone_adverb_is_no_invented_fact():
    """A lone word the dependency parse makes an adverbial modifier ("originally drafted", "approximately $556
    million") says how or when, not a fact no triple holds; a lone noun in the same place still counts."""
    m = Matcher(shipped.load("webnlg"))

    def words(mr, text):
        return [h["said"] for h in m.align(mr, text).hallucinated if h.get("kind") == "words"]

    drafted = _triples(("Adam_McQuaid", "draftTeam", "Columbus_Blue_Jackets"))
    assert words(drafted, "Adam McQuaid was originally drafted by the Columbus Blue Jackets.") == []
    assert words(drafted, "Adam McQuaid was drafted by the Columbus Blue Jackets in addition.") == ["addition"]
    income = _triples(("Trane", "netIncome", "556300000"))
    assert words(income, "Trane has a net income of approximately $556,300,000.") == []


@pytest.mark.parametrize("triple, text", [
    (("HIV", "genus", "Lentivirus"), "HIV genus is categorised as Lentivirus."),
    (("Baku_Turkish_Martyrs'_Memorial", "material", '"Red granite and white marble"'),
     "The Baku Turkish Martyrs' Memorial was constructed using red granite and white marble."),
    (("A_Glastonbury_Romance", "isbnNumber", '"0-7156-3648-0"'), "A Glastonbury Romance is identified by ISBN "
                                                                 "0-7156-3648-0."),
    (("Olive_oil", "ingredient", "Arrabbiata_sauce"), "Olive oil is used to create Arrabbiata sauce."),
])
def test_a_lone_verb_between_the_mrs_entities_is_no_invented_fact(triple, text):
    """A verb no training text of the property used, relating two of the MR's entities, says the MR's relation
    another way (20 of WebNLG dev's 59 hand-labelled false alarms); a new entity or a new clause still counts."""
    m = Matcher(shipped.load("webnlg"))

    def words(mr, t):
        return [h["said"] for h in m.align(mr, t).hallucinated if h.get("kind") == "words"]

    mr = _triples(triple)
    assert words(mr, text) == []
    assert words(mr, text[:-1] + " and was discovered in Paris.") == ["discovered in paris"]


@pytest.mark.parametrize("text, expected", [
    ("Its last flight was on Sept. 27, 2003.", "Its last flight was on September 27, 2003."),
    ("an epoch of Dec 31, 2006.", "an epoch of December 31, 2006."),
    ("on 5 Jan. 2004", "on 5 January 2004"),
    ("LCCN No. 83646315 and ISSN no. 1588-2632", "LCCN number 83646315 and ISSN number 1588-2632"),
    ("there are no 5 star places", "there are no 5 star places"),  # "no" without its full stop is the word no
    ("He said No. That is all. Janet 5", "He said No. That is all. Janet 5"),  # no number after them
])
def test_abbreviations_before_a_number_are_written_out(text, expected):
    from qe.content.align import expand_abbreviations

    assert expand_abbreviations(text) == expected


def test_an_abbreviated_month_or_number_states_its_triple_and_invents_nothing():
    """"Sept. 27, 2003" states ``2003-09-27`` (written short, the month's full stop also ended the sentence and
    "sept" was a word no triple explains); "LCCN No. 83646315" invents no "no"; a wrong year in an abbreviated date
    is one wrong verdict."""
    m = Matcher(shipped.load("webnlg"))
    flight = _triples(("Ariane_5", "finalFlight", "2003-09-27"))
    for text in ("The Ariane 5's last flight was on Sept. 27, 2003.",
                 "The Ariane 5's last flight was on 27 Sept 2003."):
        al = m.align(flight, text)
        assert [v.status for v in al.verdicts] == ["realised"] and al.hallucinated == [], text
    numbers = _triples(("Acta_Mathematica_Hungarica", "LCCN_number", "83646315"),
                       ("Acta_Mathematica_Hungarica", "issnNumber", '"1588-2632"'))
    al = m.align(numbers, "Acta Mathematica Hungarica has LCCN No. 83646315 and ISSN No. 1588-2632.")
    assert [v.status for v in al.verdicts] == ["realised", "realised"] and al.hallucinated == []
    epoch = _triples(("1097_Vicia", "epoch", "2006-12-31"))
    al = m.align(epoch, "1097 Vicia has an epoch date of Dec. 31, 2016.")
    assert [(v.status, v.said) for v in al.verdicts] == [("wrong", "2016")] and al.hallucinated == []


def test_shorthands_of_the_mrs_entities():
    from qe.content.align import shorthands

    words, numbers = shorthands(["order of the british empire", "member of parliament for gravesham", "la crosse",
                                 "3arena", "world war ii", "malcolm x"])
    assert {"obe", "mp", "lacrosse", "arena", "wwii"} <= words
    assert numbers == {"3", "2"}  # "x" of Malcolm X is a letter, not ten


def test_a_shorthand_of_an_mr_entity_invents_nothing():
    """Initials ("OBE", "MP"), a Roman numeral written as a number ("world war 2") and a name split at its digits
    ("3 Arena") are the MR's own entities written short; a word or number the MR does not hold still counts."""
    m = Matcher(shipped.load("webnlg"))

    def said(mr, text):
        return [h["said"] for h in m.align(mr, text).hallucinated]

    neave = _triples(("Airey_Neave", "award", "Order_of_the_British_Empire"), ("Airey_Neave", "battle", "World_War_II"))
    assert said(neave, "Airey Neave OBE fought in world war 2.") == []
    arena = _triples(("3Arena", "owner", "Live_Nation_Entertainment"))
    assert said(arena, "3 Arena is owned by Live Nation Entertainment.") == []
    assert said(arena, "3 Arena is owned by Live Nation Entertainment, which has 7 Oscars.") == ["7", "oscars"]
    office = _triples(("Adam_Holloway", "office", "Member_of_Parliament_for_Gravesham"))
    assert said(office, "Adam Holloway was a MP for Gravesham.") == []


@pytest.mark.parametrize("word, trigger, same", [
    ("children", "child", True), ("families", "family", True), ("welcoming", "welcome", True),
    ("allows", "allowed", True), ("location", "located", True),
    ("familiar", "family", False), ("friends", "friendly", False), ("interest", "internet", False),
    ("childless", "child", False),
])
def test_a_trigger_is_read_in_its_inflections_not_in_words_that_share_its_beginning(word, trigger, same):
    from qe.content.lexicon import _word_form

    assert _word_form(word, trigger) is same


def test_a_word_sharing_a_triggers_beginning_invents_nothing():
    """"a familiar place" says nothing of families (E2E), "may interest you" nothing of the internet (SF); a form
    of the trigger still does."""
    e2e, sf = Matcher(shipped.load("e2e")), Matcher(shipped.load("sf"))
    mr = "name[The Punter], eatType[coffee shop], near[Café Sicilia]"
    assert e2e.align(mr, "The Punter is a coffee shop near Café Sicilia and a familiar place.").hallucinated == []
    got = e2e.align(mr, "The Punter is a coffee shop near Café Sicilia, welcoming families.").hallucinated
    assert [(h["slot"], h["value"]) for h in got] == [("familyFriendly", "yes")]
    assert sf.align("inform(name='piperade',food='spanish')",
                    "there is a spanish restaurant called piperade that may interest you").hallucinated == []


def _triples(*triples):
    import json

    return json.dumps([list(t) for t in triples])


@pytest.mark.parametrize("triples, text", [
    ([("Elliot_See", "deathPlace", "St._Louis")], "Elliot See died in St Louis."),
    ([("Spain", "leader", "Felipe_VI_of_Spain")], "The leader of Spain is Felipe VI."),
    ([("Romania", "leaderTitle", "Prime_Minister_of_Romania")], "Romania is led by its Prime Minister."),
    ([("Amarillo", "country", "United_States"), ("United_States", "ethnicGroup",
                                                 "Native_Americans_in_the_United_States")],
     "Amarillo is in the U.S., where Native Americans are an ethnic group."),
    ([("Alan_B._Miller_Hall", "owner", "College_of_William_&_Mary")],
     "Alan B. Miller Hall is owned by the College of William and Mary."),
    ([("Buzz_Aldrin", "almaMater", '"Massachusetts Institute of Technology, Sc.D. 1963"')],
     "Buzz Aldrin graduated from MIT."),
    ([("Alan_B._Miller_Hall", "buildingStartDate", '"30 March 2007"')],
     "Building of Alan B. Miller Hall began on 30th March 2007."),
    ([("Montevideo", "leader", "Daniel_Martínez_(politician)")], "Daniel Martinez leads Montevideo."),
    ([("Elliot_See", "status", '"Deceased"')], "Elliot See has died."),
    ([("Albany,_Oregon", "country", "United_States")], "Albany, Oregon is in the USA."),
])
def test_other_written_forms_of_an_entity_realise_it(triples, text):
    from qe.content import Matcher as M

    assert [v.status for v in M().align(_triples(*triples), text).verdicts] == ["realised"] * len(triples), text


@pytest.mark.parametrize("triples, text", [
    ([("Buzz_Aldrin", "almaMater", "Massachusetts_Institute_of_Technology")],
     "Buzz Aldrin studied at an institute in Massachusetts."),
    ([("Ukraine", "leader", "Felipe_VI_of_Spain")], "The leader of Ukraine is Felipe VI."),  # Spain not in the MR
])
def test_forms_that_do_not_state_the_entity(triples, text):
    from qe.content import Matcher as M

    assert [v.status for v in M().align(_triples(*triples), text).verdicts] != ["realised"], text


def test_a_kind_of_venue_is_stated_by_any_word_of_that_kind():
    """BAGEL's ``type=placetoeat`` is written "a restaurant", "a pub", "a place to eat": each realises it, also when
    the same word realises the ``eattype`` fact; a text that names no venue still omits it."""
    mr = 'inform(name="Ali Baba",type=placetoeat,eattype=restaurant,area=riverside)'
    al = Matcher().align(mr, "Ali Baba is a riverside restaurant.")
    assert {v.slot: v.status for v in al.verdicts} == {"name": "realised", "type": "realised",
                                                       "eattype": "realised", "area": "realised"}
    al = Matcher().align('inform(name="Ali Baba",type=placetoeat,area=riverside)', "Ali Baba is by the riverside.")
    assert {v.slot: v.status for v in al.verdicts}["type"] == "omitted"


def test_a_short_word_is_no_other_form_of_a_trigger():
    from qe.content.lexicon import _word_form

    assert not _word_form("all", "allow")  # "an all new low" says nothing of children
    assert _word_form("allows", "allow") and _word_form("kids", "kid") and _word_form("children", "child")
    assert not _word_form("unfriendly", "friendly")


def _chance_pairs():
    """familyFriendly in 60 % of 100 MRs; "kids" says it; "budget" is in 5 texts that all hold it (by chance: 0.6 ** 5
    = 0.08); "location" in 8 texts that all hold it (0.6 ** 8 = 0.017 alone), while "located", its other form, is in
    40 texts, 8 of them with the slot."""
    rows = []
    ff_seen = located_ff = 0
    for i in range(100):
        ff = i % 5 < 3
        text = f"place {i} is a pub"
        if ff:
            ff_seen += 1
            if ff_seen % 2 == 0:
                text += " where kids are welcome" if ff_seen % 4 == 0 else " where kids are not allowed"
            if 1 <= ff_seen <= 5:
                text += " on a budget"
            if 6 <= ff_seen <= 13:
                text += " in a location"
            if 20 <= ff_seen <= 27:
                text += " located by the river"
        elif i >= 30:
            text += " located by the river"
        mr = f"name[place {i}]" + (f", familyFriendly[{'yes' if ff_seen % 4 == 0 else 'no'}]" if ff else "")
        rows.append((mr, text))
    return rows


def test_a_trigger_must_beat_chance_in_every_form_the_matcher_reads():
    lex = mine(_chance_pairs(), min_count=5)
    trig = lex.slots["familyfriendly"].triggers
    assert "kids" in trig
    assert "budget" not in trig and "location" not in trig
    al = Matcher(lex).align("name[place 70]", "place 70 is a pub located by the river")
    assert al.hallucinated == []


@pytest.mark.parametrize("mr, text", [
    ("inform(name='chenery park',area='hayes valley or glen park')", "chenery park is in the hayes valley and glen "
                                                                      "park area"),
    ("inform(name='la mediterranee',goodformeal='lunch or dinner')", "la mediterranee is good for lunch and dinner"),
])
def test_a_value_of_alternatives_is_realised_by_them_and_they_invent_nothing(sf, mr, text):
    al = sf.align(mr, text)
    assert {v.status for v in al.verdicts} == {"realised"} and al.hallucinated == []


def test_an_alternative_the_mr_does_not_offer_is_still_invented(sf):
    al = sf.align("inform(name='chenery park',area='hayes valley')", "chenery park is in the hayes valley and glen "
                                                                     "park area")
    assert [(h["slot"], h["value"]) for h in al.hallucinated] == [("area", "glen park")]


@pytest.mark.parametrize("mr, text", [
    ('inform(name="Nanna Mexico",type=placetoeat,area=citycentre)', "Nanna Mexico is a restaurant in the centre of town."),
    ("name[Cotto], area[riverside]", "Cotto is on the side of the river."),
    # the river or the centre after any word of place, on E2E and BAGEL (references, and LOLS on EMNLP17's BAGEL)
    ("name[Cotto], area[riverside]", "Cotto is a coffee shop close to the river."),
    ("name[The Eagle], area[riverside]", "The Eagle, just off the river by Café Brazil, is a poor choice."),
    ("inform(name='Nanna Mexico',area=riverside)", "Nanna Mexico is a restaurant down by river."),
    ("inform(name='Nanna Mexico',area=citycentre)", "Nanna Mexico is a restaurant in the city center."),
    ("inform(name='Nanna Mexico',area=citycentre)", "Nanna Mexico is a restaurant located in the city's centre."),
    ("name[Giraffe], area[city centre]", "Giraffe is a pub near the centre."),
])
def test_the_usual_wordings_of_an_area_realise_it(mr, text):
    assert {v.status for v in Matcher().align(mr, text).verdicts} == {"realised"}


def test_an_area_wording_is_no_value_the_mr_lacks():
    al = Matcher().align("name[Aromi], eatType[coffee shop]", "Aromi is a coffee shop near the waterfront.")
    assert al.hallucinated == []


def test_an_area_wording_does_not_hide_another_area_said_outright():
    # the wordings only turn an omission into a realisation: "the river" beside "city centre" leaves it wrong
    from qe.content import shipped

    al = Matcher(shipped.load("e2e")).align("name[Cotto], area[riverside]", "Cotto is in the city centre, far from "
                                                                             "the river.")
    assert [(v.slot, v.status) for v in al.verdicts] == [("name", "realised"), ("area", "wrong")]


@pytest.mark.parametrize("mr, text", [
    ("inform(name='inn on castro',area='castro')", "the inn on castro is in the castro area"),
    ("inform(name='inn on castro',area='the castro')", "the inn on castro is in castro"),
])
def test_a_value_with_or_without_the_before_it_is_one_value(sf, mr, text):
    """SF hotel's MRs write one place both ways (area='castro', area='the castro'), so the lexicon holds both: the
    longer match "the castro" said a second, wrong value of the MR's area."""
    al = sf.align(mr, text)
    assert [(v.slot, v.status) for v in al.verdicts] == [("name", "realised"), ("area", "realised")]
    assert al.hallucinated == []
    al = sf.align("inform(name='inn on castro',area='nob hill')", "the inn on castro is in the castro area")
    assert [(v.slot, v.status) for v in al.verdicts] == [("name", "realised"), ("area", "wrong")]


@pytest.mark.parametrize("text", ["I am sorry, there are no hotels in Cow Hollow that allow dogs.",
                                  "there are n't any hotels in cow hollow that allow dogs"])
def test_a_negated_existential_denies_the_match_not_the_slot(sf, text):
    """inform_no_match(dogsallowed='yes'): no hotel there allows dogs. The negation above the slot's words says that
    no such hotel exists; it does not make the slot's value no (a matcher probe, mr_outputs#mr-33)."""
    al = sf.align("inform_no_match(area='cow hollow';dogsallowed='yes')", text)
    assert [(v.slot, v.status) for v in al.verdicts] == [("area", "realised"), ("dogsallowed", "realised")]


# ------------------------------------------------------------------------- a lone digit; a predicate trigger alone
@pytest.fixture(scope="module")
def e2e():
    return Matcher(shipped.load("e2e"))


def _read(al) -> tuple[list, list]:
    return [(v.slot, v.status) for v in al.verdicts if v.status != "realised"], \
        [(h["slot"], h["value"]) for h in al.hallucinated]


@pytest.mark.parametrize("mr, text", [
    ("name[The Eagle], familyFriendly[yes], customer rating[average]",
     "One child friendly place, The Eagle, has an average rating."),
    ("name[Cotto], eatType[coffee shop], food[Chinese]", "At Cotto, you get a coffee shop and Chinese food all in one."),
    ("name[Taste of Cambridge], food[Chinese]", "Taste of Cambridge is a place where one can order Chinese food."),
])
def test_a_lone_digit_states_no_rating_outside_its_slots_context(e2e, mr, text):
    """E2E's mined pattern "1" of ``customer rating[1 out of 5]`` read the number word "one" wherever it stood (7
    false invented ratings on the faithful dev references): a one-digit number is as weak alone as a single letter."""
    assert _read(e2e.align(mr, text)) == ([], [])


def test_a_lone_digit_in_its_slots_context_still_states_it(e2e):
    assert _read(e2e.align("name[The Eagle]", "The Eagle has a customer rating of 1.")) == \
        ([], [("customer rating", "1 out of 5")])
    assert _read(e2e.align("name[The Eagle], customer rating[3 out of 5]", "Customers rate The Eagle 3.")) == ([], [])
    # the predicate of a copula whose subject is the slot's word is tied to it
    assert _read(e2e.align("name[Fitzbillies], eatType[coffee shop], customer rating[3 out of 5]",
                           "Fitzbillies is a coffee shop. Customer rating is a 3.")) == ([], [])
    # the MR's own one-digit value is read as the MR writes it, context or not
    al = Matcher().align("inform(name=pavilion 11;usbports=1)", "the pavilion 11 has 1 usb port .")
    assert [(v.slot, v.status) for v in al.verdicts] == [("name", "realised"), ("usbports", "realised")]


@pytest.mark.parametrize("matcher, mr, text", [
    ("e2e", "name[The Wrestlers], customer rating[3 out of 5]", "The Wrestlers is a friendly place rated 3 out of 5."),
    ("e2e", "name[The Wrestlers], familyFriendly[no]", "Welcome to The Wrestlers, we are not family-friendly."),
    ("sf", "inform(name='pontiac hostel';hasinternet='yes')",
     "you will be able to use the internet at the pontiac hostel"),
])
def test_a_predicate_trigger_with_no_word_of_its_slot_states_nothing(e2e, sf, matcher, mr, text):
    """"friendly", "welcome" (familyFriendly) and "use" (acceptscreditcards) are adjectives and verbs: they say the
    slot only of one of its words. 10 of E2E's 46 false invented facts and SF hotel's one, on faithful references."""
    assert _read({"e2e": e2e, "sf": sf}[matcher].align(mr, text)) == ([], [])


@pytest.mark.parametrize("matcher, mr, text, said", [
    ("e2e", "name[The Eagle], familyFriendly[yes]", "The Eagle is friendly to families.", "friendly"),
    ("e2e", "name[The Eagle], familyFriendly[yes]", "The Eagle welcomes children.", "welcomes"),
    ("sf", "inform(name='red victorian';acceptscreditcards='yes')", "you can use your credit card at the red victorian",
     "use"),
    ("sf", "inform(name='chow';kidsallowed='yes')", "chow is a kid friendly restaurant", "friendly"),
])
def test_a_predicate_trigger_with_a_word_of_its_slot_still_states_it(e2e, sf, matcher, mr, text, said):
    al = {"e2e": e2e, "sf": sf}[matcher].align(mr, text)
    assert _read(al) == ([], []) and al.verdicts[-1].said == said


def test_without_a_parser_a_predicate_trigger_stands_alone(monkeypatch):
    import qe.content.align as align

    monkeypatch.setitem(align._SYNTAX, "nlp", None)
    al = Matcher(shipped.load("e2e")).align("name[The Wrestlers]", "The Wrestlers is a friendly place.")
    assert _read(al) == ([], [("familyFriendly", "yes")])


@pytest.mark.parametrize("mr, text, status", [
    # no lexicon (the rules): the first content word of a binary slot's name, in any form and order, with its
    # polarity (SF restaurant, SF hotel and E2E: rules rows, facts not realised 8.20 -> 3.89, 4.24 -> 1.08 and
    # 10.18 -> 9.86 per 100)
    ("inform(name=la mar;kidsallowed=no)", "la mar does not allow kids", "realised"),
    ("inform(name=la mar;kidsallowed=yes)", "la mar allows kids", "realised"),
    ("inform(name=la mar;kidsallowed=yes)", "kids are welcome at la mar", "realised"),
    ("inform(name=la mar;kidsallowed=yes)", "la mar does not allow kids", "wrong"),
    ("inform(name=inn a;dogsallowed=no)", "inn a does not allow dogs", "realised"),
    ("name[Zizzi], familyFriendly[yes]", "Zizzi is a family restaurant.", "realised"),
    ("name[Zizzi], familyFriendly[no]", "Zizzi is not a place for families.", "realised"),
    # the name's next word with a negating prefix says no
    ("name[Zizzi], familyFriendly[no]", "Zizzi is a family-unfriendly place.", "realised"),
    ("inform(name=la mar;kidsallowed=no)", "la mar : kids disallowed", "realised"),
    ("inform(name=la mar;kidsallowed=yes)", "la mar is a nice place", "omitted"),
])
def test_without_a_lexicon_a_binary_slot_is_read_by_the_first_word_of_its_name(mr, text, status):
    al = Matcher().align(mr, text)
    assert al.verdicts[1].status == status and al.hallucinated == []
