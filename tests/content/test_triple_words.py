"""Hallucinated words for RDF triples: the words texts use for each property, mined from (triples, text) pairs
(qe.content.lexicon.mine_triples), and the matcher listing the stretches of an output that no triple explains."""
from __future__ import annotations

import json

import pytest
from conftest import needs_data

from qe.content import Matcher
from qe.content.lexicon import (Lexicon, WordForms, count_triple_words, mine_triples, triple_words_lexicon,
                                unexplained_spans)
from qe.data.webnlg import triples_mr


def _mr(*triples):
    return triples_mr(triples)


PAIRS = [
    (_mr(("Alan_Bean", "birthPlace", "Wheeler,_Texas")), "Alan Bean was born in Wheeler, Texas."),
    (_mr(("Elliot_See", "birthPlace", "Dallas")), "Elliot See was born in Dallas."),
    (_mr(("Elliot_See", "birthPlace", "Dallas"), ("Elliot_See", "occupation", "Test_pilot")),
     "Elliot See, born in Dallas, worked as a test pilot."),
    (_mr(("Alan_Bean", "occupation", "Test_pilot")), "Alan Bean worked as a test pilot."),
    (_mr(("Aarhus_Airport", "cityServed", "Aarhus")), "Aarhus Airport serves the city of Aarhus."),
    (_mr(("Aarhus_Airport", "cityServed", "Aarhus")), "The city of Aarhus is served by Aarhus Airport."),
]


def test_mining_keeps_the_words_of_each_property_not_the_names():
    lex = mine_triples(PAIRS, source="tiny", min_count=2, min_property_share=0.5, min_common_share=0.6)
    assert lex.properties["birthplace"] == ["born"]  # "wheeler", "texas", "dallas" are entity words
    assert lex.properties["occupation"] == ["worked"]  # "born" is in 1 of its 2 texts: below min_count
    assert lex.properties["cityserved"] == ["city"]  # "serves" / "served" are one word only as forms, not as counts
    assert lex.common == [] and lex.has_triple_words  # "born", the most common, is in half of the texts
    assert lex.settings["texts"] == 6
    # lower shares: a word of one text in three is kept for the property, and common words appear (without lifts)
    lex = mine_triples(PAIRS, min_count=1, min_property_share=0.3, min_common_share=0.3, common_lift=None)
    assert "city" in lex.properties["cityserved"] and "served" in lex.properties["cityserved"]
    assert lex.common == ["born", "city", "worked"]


def test_words_that_a_few_properties_own_are_not_common_and_explain_only_those():
    kw = dict(min_count=1, min_property_share=0.3, min_common_share=0.3)
    plain = mine_triples(PAIRS, common_lift=None, property_lift=None, **kw)
    lifted = mine_triples(PAIRS, **kw)  # the defaults: common_lift 1.5, property_lift 1
    # "born" is in every birthPlace text and in none without birthPlace: its property's, not common
    assert plain.common == ["born", "city", "worked"] and lifted.common == []
    assert lifted.settings["common_lift"] == 1.5 and "common_lift" not in plain.settings
    assert "born" in lifted.properties["birthplace"]
    # occupation texts hold "born" as often as texts do (1 in 2 against 3 in 6): kept at lift 1, not at 1.5
    assert "born" in lifted.properties["occupation"]
    assert "born" not in mine_triples(PAIRS, property_lift=1.5, **kw).properties["occupation"]
    # a relation the triples do not hold, said with an owned word: listed with the lifts, explained without
    mr, text = _mr(("Aarhus_Airport", "cityServed", "Aarhus")), "Aarhus Airport serves Aarhus, where its founder was born."
    words = [h["said"] for h in Matcher(lifted).align(mr, text).hallucinated if h.get("kind") == "words"]
    assert words and "born" in words[0]
    assert not [h for h in Matcher(plain).align(mr, text).hallucinated if h.get("kind") == "words"]


def test_a_lone_word_counts_only_as_another_propertys_word_or_a_name():
    """One unexplained word that no property's texts use ("hails") is a paraphrase or a typo, not a fact; a lone
    word of another property ("worked" of occupation), a name said alone, or two words or more still count."""
    lex = mine_triples(PAIRS, min_count=2, min_property_share=0.5, min_common_share=0.5)
    m = Matcher(lex)
    mr = _mr(("Alan_Bean", "birthPlace", "Wheeler,_Texas"))

    def words(text):
        return [h["said"] for h in m.align(mr, text).hallucinated if h.get("kind") == "words"]

    assert words("Alan Bean hails from Wheeler, Texas.") == []
    assert words("Alan Bean was born in Wheeler, Texas. He worked.") == ["worked"]
    # a birthPlace text uses "worked" (the one that also states an occupation): in the one sentence that states the
    # birthPlace triple it is that triple's wording (Lexicon.attested); in another sentence it still counts
    assert lex.attested == {"birthplace": ["worked"], "occupation": ["born"]}
    assert words("Alan Bean was born in Wheeler, Texas, where he worked.") == []
    assert words("Alan Bean was born in Wheeler, Texas and walked on the Moon.") == ["walked on the moon"]
    assert words("Alan Bean was born in Wheeler, Texas, with Truly.") == ["truly"]  # a name alone counts
    assert words("Alan Bean was born in Wheeler, Texas. Truly.") == []  # a capital opening a sentence is no name


def test_mining_refuses_pairs_without_triples():
    with pytest.raises(ValueError, match=r"pairs\[1\]: field 'mr' holds no RDF triples"):
        mine_triples([PAIRS[0], ("name[The Eagle]", "The Eagle.")], where="pairs")
    with pytest.raises(ValueError, match="no pairs"):
        mine_triples([])


def test_counts_give_the_same_lexicon_as_mining():
    counts = count_triple_words(PAIRS)
    a = triple_words_lexicon(counts, min_count=1, min_property_share=0.3, min_common_share=0.3)  # same defaults
    b = mine_triples(PAIRS, min_count=1, min_property_share=0.3, min_common_share=0.3)
    assert a.to_dict() == b.to_dict() and a.checksum == b.checksum


def test_word_forms():
    f = WordForms(["collaborated", "america", "argentina", "usa", "born", "england"])
    for t in ("collaborated", "collaborates", "american", "argentinian", "usa", "born", "borne", "english"):
        assert t in f, t
    for t in ("bornholm", "us", "colleague", "arg", "amelia"):
        assert t not in f, t


def test_unexplained_spans_group_words_of_one_clause():
    toks = "alan bean flew to the moon on apollo , and he liked painting".split()
    known = {"alan", "bean"}
    spans = unexplained_spans(toks, lambda t: t in known)
    assert [[toks[i] for i in s] for s in spans] == [["flew", "moon", "apollo"], ["liked", "painting"]]
    assert unexplained_spans(toks, lambda t: True) == []


def test_matcher_lists_unexplained_stretches_as_hallucinated():
    lex = mine_triples(PAIRS, min_count=2, min_property_share=0.5, min_common_share=0.5)
    m = Matcher(lex)
    mr = _mr(("Alan_Bean", "birthPlace", "Wheeler,_Texas"), ("Alan_Bean", "occupation", "Test_pilot"))
    clean = m.align(mr, "Alan Bean was born in Wheeler, Texas and worked as a test pilot.")
    assert clean.hallucinated == [] and clean.counts()["realised"] == 2
    more = m.align(mr, "Alan Bean, born in Wheeler, Texas, worked as a test pilot and walked on the Moon in 1969.")
    assert more.hallucinated == [{"slot": None, "value": "1969", "said": "1969"},
                                 {"slot": None, "value": "walked moon", "said": "walked on the moon", "kind": "words"}]
    # the words of a property's name explain themselves; diacritics are folded; forms of entity words are explained
    m2 = m.align(_mr(("Andrew_Rayel", "birthPlace", "Chișinău")), "Andrew Rayel's birth place is Chisinau.")
    assert m2.hallucinated == [] and m2.counts()["realised"] == 1  # and the object is found without its diacritics
    m3 = m.align(_mr(("Alan_Bean", "nationality", "United_States_of_America")), "Alan Bean is an American.")
    assert m3.hallucinated == []
    # without triple words (the rules lexicon) only numbers are listed, as before
    assert Matcher().align(mr, "Alan Bean walked on the Moon in 1969.").hallucinated == \
        [{"slot": None, "value": "1969", "said": "1969"}]
    # attribute-value MRs are untouched by a triples lexicon
    assert Matcher(lex).align("name[The Eagle]", "The Eagle serves sushi.").hallucinated == []


def test_lexicon_json_round_trip_and_checksums(tmp_path):
    lex = mine_triples(PAIRS, source="tiny", min_count=1, min_property_share=0.3, min_common_share=0.3)
    p = tmp_path / "lex.json"
    lex.save(p)
    back = Lexicon.load(p)
    assert back.properties == lex.properties and back.common == lex.common and back.checksum == lex.checksum
    # a slot lexicon's checksum is that of its slots alone, as before triple words existed
    import hashlib

    plain = Lexicon(source="x")
    assert plain.checksum == hashlib.sha256(b"{}").hexdigest()[:12] and "properties" not in plain.to_dict()
    assert Lexicon(properties={"birthplace": ["born"]}).checksum != plain.checksum
    bad = json.loads(p.read_text())
    bad["properties"] = {"birthplace": "born"}
    p.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="'properties' must map property names to word lists"):
        Lexicon.load(p)


def test_the_aligner_alone_keeps_the_matcher_hallucinations_on_triples():
    from test_aligner_triples import MR, TEXT, StubAligner

    from qe.content.aligner import AlignedMatcher

    stub = StubAligner({"alan bean | nationality | united states": 0.9, "alan bean | occupation | test pilot": 0.1,
                        "alan bean | birth place | wheeler, texas": 0.9})
    text = TEXT + " He flew in 1969."
    assert Matcher().align(MR, text).hallucinated == [{"slot": None, "value": "1969", "said": "1969"}]
    for mode in ("combined", "aligner"):
        al = AlignedMatcher(Matcher(), stub, mode).align(MR, text)
        assert al.hallucinated == [{"slot": None, "value": "1969", "said": "1969"}], mode


@needs_data
def test_the_webnlg_lexicon_from_the_training_references():
    from conftest import shared_data_dir

    from qe.content.scorer import CoverageScorer, dataset_lexicon

    d = shared_data_dir()
    if not (d / "webnlg2020" / "train.tar.xz").is_file():
        pytest.skip("webnlg2020/train.tar.xz is absent from the data folder")
    lex = dataset_lexicon("webnlg", str(d))
    assert lex.source == "webnlg-train" and lex.settings["texts"] > 30000
    assert "born" in lex.properties["birthplace"] and lex.common == []  # no word is common by common_lift
    # a word a property's texts use less often than texts do is not that property's (property_lift)
    assert "born" not in lex.properties["capital"] and "born" not in lex.properties["league"]
    sc = CoverageScorer(lexicon="webnlg", data_dir=str(d))
    mr = _mr(("Alan_Bean", "birthPlace", "Wheeler,_Texas"))
    rows = sc.details(["Alan Bean was born in Wheeler, Texas.", "Alan Bean was born in Wheeler, Texas, to a "
                       "family of sheep farmers."], mrs=[mr, mr])
    assert rows[0]["hallucinated"] == []
    assert [h["kind"] for h in rows[1]["hallucinated"]] == ["words"]
    assert sc.signature_fields()["lexicon"] == f"webnlg:{lex.checksum}"


@pytest.mark.parametrize("triples, text, numbers", [
    ([("Arabic", "language", "Philippines")], "One of the languages of the Philippines is Arabic.", []),
    ([("Ace_Wilder", "birthDate", "1982-07-23")], "Ace Wilder's date of birth is 1982-07-23.", []),
    ([("Bananaman", "firstAired", '"1983-10-03"')], "Bananaman was first aired on 10/03/1983.", []),
    ([("A_C_Lumezzane", "league", "2014–15_Lega_Pro")], "A C Lumezzane played the 2014-2015 season in Lega Pro.", []),
    # a month's number away from its year is a number the triples do not hold; so is a digit that is no date's
    ([("Alan_Bean", "birthDate", "1932-03-15")], "Alan Bean, born on 15 March 1932, flew 3 missions.", ["3"]),
    ([("Arabic", "language", "Philippines")], "Arabic is 1 of 2 languages of the Philippines.", ["1", "2"]),
])
def test_hallucinated_numbers_of_triples(triples, text, numbers):
    """Found on WebNLG development references: 5.8 % of them had a number called hallucinated, 0.9 % after these."""
    assert [h["value"] for h in Matcher().align(_mr(*triples), text).hallucinated] == numbers


def test_the_dev_sets_and_figures_of_the_triple_words_experiment():
    from types import SimpleNamespace as NS

    from experiments.triple_words import dev_sets, measure, number_alarms

    def entry(triples, *texts):
        return NS(triples=tuple(triples), mr=_mr(*triples), lexes=tuple(NS(text=t, comment="good") for t in texts))

    train = [entry([("Alan_Bean", "birthPlace", "Wheeler,_Texas")], "Alan Bean was born in Wheeler, Texas."),
             entry([("Elliot_See", "birthPlace", "Dallas")], "Elliot See was born in Dallas.")]
    dev = [entry([("Buzz_Aldrin", "birthPlace", "Glen_Ridge")], "Buzz Aldrin was born in Glen Ridge."),
           entry([("Aarhus_Airport", "cityServed", "Aarhus")], "Aarhus Airport serves the city of Aarhus.")]
    sets = dev_sets(train, dev, seed=0)
    assert [len(sets[k]) for k in ("clean", "added", "swapped")] == [2, 2, 1]
    assert sets["added"][0][1] == "Buzz Aldrin was born in Glen Ridge. Aarhus Airport serves the city of Aarhus."
    mr, swapped, base = sets["swapped"][0]  # Glen Ridge replaced by a training object of birthPlace
    assert base == "Buzz Aldrin was born in Glen Ridge." and swapped in ("Buzz Aldrin was born in wheeler, texas.",
                                                                      "Buzz Aldrin was born in dallas.")
    # a relation the entry does not hold, between its own entities: a birthPlace sentence for the airport; none for
    # Buzz Aldrin, whose entry holds the only training property
    assert sets["relation"] == [(dev[1].mr, "Aarhus Airport serves the city of Aarhus. Aarhus Airport was born in "
                                 "Aarhus.", "Aarhus Airport serves the city of Aarhus.")]
    lex = mine_triples([(e.mr, x.text) for e in train for x in e.lexes], min_count=1, min_property_share=0.5,
                       min_common_share=0.5, common_lift=None)
    got = measure(lex, sets)
    assert got["relation_detected"] == 0.0  # "born" is a common word here: the relation passes unseen
    assert got["J3"] == pytest.approx((1.0 + 1.0 + 0.0) / 3 - 0.0)
    strict = mine_triples([(e.mr, x.text) for e in train for x in e.lexes], min_count=1, min_property_share=0.5,
                          min_common_share=1.1)
    assert measure(strict, sets)["relation_detected"] == 1.0  # "born" only explains birthPlace
    # the clean texts' words are explained ("serves the city": the words of cityServed's name), the added sentences'
    # names and the swapped objects are not
    assert (got["clean_flagged"], got["added_detected"], got["swapped_detected"], got["J"]) == (0.0, 1.0, 1.0, 1.0)
    # a lexicon that kept no word (min_count above every count) knows nothing of triples: no words are checked
    none = mine_triples([(e.mr, x.text) for e in train for x in e.lexes], min_count=3)
    assert not none.has_triple_words and measure(none, sets)["added_detected"] == 0.0
    # references with a number the matcher calls hallucinated: "in 1969" is one, "one of" is not
    refs = [entry([("Buzz_Aldrin", "birthPlace", "Glen_Ridge")], "Buzz Aldrin was born in Glen Ridge in 1930.",
                  "Buzz Aldrin, one of the astronauts, was born in Glen Ridge.")]
    assert number_alarms(refs) == (1, 2)


def test_the_lift_grid_of_the_triple_words_experiment(tmp_path, monkeypatch, capsys):
    from types import SimpleNamespace as NS

    import experiments.triple_words as tw

    def entry(triples, *texts):
        return NS(triples=tuple(triples), mr=_mr(*triples), lexes=tuple(NS(text=t, comment="good") for t in texts))

    train = [entry([("Alan_Bean", "birthPlace", "Wheeler,_Texas")], "Alan Bean was born in Wheeler, Texas."),
             entry([("Aarhus_Airport", "cityServed", "Aarhus")], "Aarhus Airport serves the city of Aarhus."),
             entry([("Elliot_See", "birthPlace", "Dallas")], "Elliot See was born in Dallas.")]
    dev = [entry([("Buzz_Aldrin", "birthPlace", "Glen_Ridge")], "Buzz Aldrin was born in Glen Ridge."),
           entry([("Aalborg_Airport", "cityServed", "Aalborg")], "Aalborg Airport serves the city of Aalborg.")]
    counts = count_triple_words([(e.mr, x.text) for e in train for x in e.lexes])
    sets = tw.dev_sets(train, dev, seed=0)
    monkeypatch.setattr(tw, "LIFTS", [(None, None), (1.5, 1.0)])
    out = tmp_path / "lifts.json"
    assert tw.lift_grid(counts, sets, str(out), 0.0) == 0
    rows = json.loads(out.read_text())["rows"]
    # with min_count 2 only "born" is kept (birthPlace's); common without lifts (2 texts of 3), not with them, so
    # the airport's birthPlace sentence ("Aalborg Airport was born in Aalborg.") is found only with them
    assert [(r["common_words"], r["property_words"], r["relation_detected"]) for r in rows] == [(1, 1, 0.0),
                                                                                              (0, 1, 1.0)]
    assert [r["J3"] for r in rows] == [pytest.approx(2 / 3), 1.0]
    best = json.loads(out.read_text())["best"]
    assert (best["common_lift"], best["property_lift"]) == (1.5, 1.0)
    assert best["false_alarms"] == []  # the clean texts' words are all explained
    # a lexicon that never saw birthPlace texts, where "born" is a word of another property (cityServed): "born" in
    # Buzz Aldrin's clean reference is a false alarm (a lone word no property's texts use would not be listed)
    airports = mine_triples([(train[1].mr, "Aarhus Airport serves the city of Aarhus, where it was born.")] * 2
                            + [(_mr(("Elliot_See", "occupation", "Test_pilot")), "Elliot See worked as a test pilot.")] * 2)
    assert tw.false_alarms(airports, sets) == [("born", 1)]
    assert "highest J3" in capsys.readouterr().out


def test_attested_words_round_trip_and_leave_older_lexicons_alone(tmp_path):
    """A triple lexicon's attested words are saved and read back; one without them keeps the checksum it had
    (written before they existed), and a bad entry names its field and property."""
    lex = mine_triples(PAIRS, min_count=2, min_property_share=0.5, min_common_share=0.5)
    assert lex.attested
    lex.save(tmp_path / "lex.json")
    back = Lexicon.load(tmp_path / "lex.json")
    assert back.attested == lex.attested and back.checksum == lex.checksum
    older = Lexicon.from_dict({k: v for k, v in lex.to_dict().items() if k != "attested"})
    assert older.attested == {} and older.checksum != lex.checksum
    assert older.checksum == Lexicon(source="x", properties=lex.properties, common=lex.common).checksum
    bad = {**lex.to_dict(), "attested": {"birthplace": [None]}}
    with pytest.raises(ValueError, match="'attested', property 'birthplace'"):
        Lexicon.from_dict(bad, "lex.json")
