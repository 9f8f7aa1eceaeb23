"""One verdict per RDF triple (issue 50): realised, omitted or wrong - an object inside another name does not count, an
object tied to a contradicting property is wrong, another object of the same type is wrong, and one invented clause
or one wrong object is one error (qe.content.align, module docstring's triples paragraph)."""
from __future__ import annotations

import json

import pytest
from conftest import needs_data

from qe.content import Matcher
from qe.content.lexicon import mine_triples

# the issue's three failures, in qe's triple notation ("s | p | o; s | p | o", as `qe score --mrs` reads it)
ISSUE = [
    ("Abel_Caballero | nationality | Spain; Abel_Caballero | office | \"Minister of Transport\"",
     "Abel Caballero, who served as Minister of Transport, is from Italy.", "nationality", "wrong", "italy"),
    ("Adolfo_Suárez_Madrid–Barajas_Airport | location | Madrid; "
     "Adolfo_Suárez_Madrid–Barajas_Airport | runwayLength | 4100.0",
     "Adolfo Suárez Madrid–Barajas Airport is in Barcelona and its runway is 4,100 metres long.", "location",
     "wrong", "barcelona"),
    ("Elliot_See | deathPlace | St._Louis; Elliot_See | occupation | Test_pilot",
     "Elliot See, a test pilot, was born in St. Louis.", "deathPlace", "wrong", "born in st . louis"),
]


def _st(al, prop=None):
    return [v.status for v in al.verdicts if prop is None or v.slot == prop]


def _mr(*triples):
    return "; ".join(" | ".join(t) for t in triples)


# a tiny lexicon of triple words: birthPlace texts say "born", the others their own words
PAIRS = [
    (_mr(("Alan_Bean", "birthPlace", "Wheeler,_Texas")), "Alan Bean was born in Wheeler, Texas."),
    (_mr(("Elliot_See", "birthPlace", "Dallas")), "Elliot See was born in Dallas."),
    (_mr(("Alan_Bean", "occupation", "Test_pilot")), "Alan Bean worked as a test pilot."),
    (_mr(("Elliot_See", "occupation", "Test_pilot")), "Elliot See worked as a test pilot."),
    (_mr(("Ahmet_Ertegun", "genre", "Rhythm_and_blues")), "Ahmet Ertegun performs rhythm and blues music."),
    (_mr(("Aaron_Turner", "genre", "Black_metal")), "Aaron Turner performs black metal music."),
    (_mr(("Abel_Caballero", "office", '"Minister of Transport"')), "Abel Caballero served as Minister of Transport."),
    (_mr(("Ab_Klink", "office", '"Minister of Health"')), "Ab Klink served as Minister of Health."),
    (_mr(("Aarhus_Airport", "runwayLength", "2702.0")), "The runway of Aarhus Airport is 2702 metres long."),
    (_mr(("Agra_Airport", "runwayLength", "2743.0")), "Agra Airport's runway is 2743 metres long."),
]
TINY = mine_triples(PAIRS, min_count=2, min_property_share=0.5, min_common_share=0.9)


@pytest.mark.parametrize("mr, text, prop, status, said", ISSUE)
@pytest.mark.parametrize("lexicon", [None, TINY])
def test_the_issue_examples_are_one_error_each(mr, text, prop, status, said, lexicon):
    al = Matcher(lexicon).align(mr, text)
    v = next(v for v in al.verdicts if v.slot == prop)
    assert (v.status, v.said) == (status, said)
    assert al.errors() == 1 and al.hallucinated == []  # the wrong object is not also a hallucination
    assert _st(al).count("realised") == 1


def test_the_issue_examples_from_the_command_line(tmp_path):
    from qe.cli import main

    (tmp_path / "mrs.txt").write_text("".join(m + "\n" for m, *_ in ISSUE), encoding="utf-8")
    (tmp_path / "out.txt").write_text("".join(t + "\n" for _, t, *_ in ISSUE), encoding="utf-8")
    out = tmp_path / "s.jsonl"
    assert main(["score", "-m", "coverage", "--opt", "lexicon=none", "-i", str(tmp_path / "out.txt"),
                 "--mrs", str(tmp_path / "mrs.txt"), "-o", str(out), "-q"]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    for row, (_, _, prop, status, _) in zip(rows, ISSUE):
        got = {v["slot"]: v["status"] for v in row["details"]["verdicts"]}
        assert got[prop] == status and "realised" != got[prop]
        c = row["details"]["counts"]
        assert c["omitted"] + c["wrong"] + c["hallucinated"] == 1


@needs_data
@pytest.mark.slow
def test_the_issue_examples_with_the_webnlg_lexicon():
    from conftest import shared_data_dir

    from qe.content.scorer import dataset_lexicon

    if not (shared_data_dir() / "webnlg2020" / "train.tar.xz").is_file():
        pytest.skip("webnlg2020/train.tar.xz is absent from the data folder")
    m = Matcher(dataset_lexicon("webnlg", str(shared_data_dir())))
    for mr, text, prop, status, _ in ISSUE:
        al = m.align(mr, text)
        assert _st(al, prop) == [status] and al.errors() == 1, text


# ---------------------------------------------------------------------------------- an object inside another name
def test_an_object_inside_the_subjects_name_is_not_stated():
    mr = _mr(("Aarhus_Airport", "cityServed", "Aarhus"))
    assert _st(Matcher().align(mr, "Aarhus Airport serves the city.")) == ["omitted"]
    assert _st(Matcher().align(mr, "Aarhus Airport serves the city of Aarhus.")) == ["realised"]
    # nor inside another entity's name ("Indian" is India only near-verbatim, and inside the operator's name)
    mr = _mr(("Agra_Airport", "location", "India"), ("Agra_Airport", "operatingOrganisation", "Indian_Air_Force"))
    assert _st(Matcher().align(mr, "Agra Airport is operated by the Indian Air Force.")) == ["omitted", "realised"]
    assert _st(Matcher().align(mr, "Agra Airport in India is run by the Indian Air Force.")) == ["realised"] * 2
    # a subject named only inside another name is not named either
    mr = _mr(("Athens_International_Airport", "cityServed", "Athens"), ("Athens", "country", "Greece"))
    assert _st(Matcher().align(mr, "Athens International Airport is in Greece.")) == ["omitted", "omitted"]


def test_a_qualifier_after_a_comma_and_a_literal_value_state_what_they_hold():
    mr = _mr(("Atlantic_City_International_Airport", "location", "Egg_Harbor_Township,_New_Jersey"),
             ("Egg_Harbor_Township,_New_Jersey", "isPartOf", "New_Jersey"))
    assert _st(Matcher().align(mr, "Atlantic City International Airport is in Egg Harbor Township, New Jersey.")) \
        == ["realised", "realised"]
    mr = '[["Arem-arem", "ingredient", "Banana_leaf"], ["Arem-arem", "mainIngredient", ' \
         '"\\"compressed rice cooked in banana leaf\\""]]'
    assert _st(Matcher().align(mr, "Arem-arem is compressed rice cooked in banana leaf.")) == ["realised"] * 2


# ------------------------------------------------------------------------------------- a contradicting property
def test_an_object_tied_to_a_contradicting_property_is_wrong():
    mr = _mr(("Elliot_See", "deathPlace", "St._Louis"))
    al = Matcher().align(mr, "Elliot See was born in St. Louis.")
    assert _st(al) == ["wrong"] and al.verdicts[0].said == "born in st . louis"
    assert _st(Matcher().align(mr, "Elliot See died in St. Louis.")) == ["realised"]
    assert _st(Matcher().align(mr, "Elliot See was born in Dallas and died in St. Louis.")) == ["realised"]
    assert _st(Matcher().align(mr, "St. Louis is where Elliot See died.")) == ["realised"]
    # the clause goes to the triple of the property it states when the MR has one: one error, not two
    mr = _mr(("Alfred_Garth_Jones", "deathPlace", "London"), ("Alfred_Garth_Jones", "birthPlace", "Manchester"))
    al = Matcher().align(mr, "Alfred Garth Jones was born in London.")
    assert _st(al) == ["omitted", "wrong"] and al.verdicts[1].said_value == "london"
    # swapped: each clause is one wrong triple
    mr = _mr(("Aaron_S._Daggett", "deathPlace", "West_Roxbury"), ("Aaron_S._Daggett", "birthPlace", "Maine"))
    assert _st(Matcher().align(mr, "Aaron S. Daggett was born in West Roxbury and died in Maine.")) == ["wrong"] * 2
    assert _st(Matcher().align(mr, "Aaron S. Daggett was born in Maine and died in West Roxbury.")) == ["realised"] * 2
    # succession: "preceded by" for a successor
    mr = _mr(("Alberto_Teisaire", "successor", "Isaac_Rojas"))
    assert _st(Matcher().align(mr, "Alberto Teisaire was preceded by Isaac Rojas.")) == ["wrong"]
    assert _st(Matcher().align(mr, "Alberto Teisaire was succeeded by Isaac Rojas.")) == ["realised"]
    # a cue of another clause does not reach the object
    mr = _mr(("Abraham_A._Ribicoff", "birthPlace", "Connecticut"))
    assert _st(Matcher().align(mr, "Abraham A. Ribicoff died in 1998, and worked in Connecticut.")) == ["realised"]


# --------------------------------------------------------------------------------- another object of the same type
@pytest.mark.parametrize("triple, text, said", [
    (("3Arena", "completionDate", '"December 2008"'), "The 3Arena was completed in December 2010.", "december 2010"),
    (("Antwerp_International_Airport", "runwayLength", "600.0"), "Its runway is 1,200 metres long.", "1200"),
    (("Singapore", "leader", "Halimah_Yacob"), "The leader of Singapore is Lee Hsien Loong.", "lee hsien loong"),
    (("Apollo_12", "commander", "David_Scott"), "Apollo 12 was commanded by Pete Conrad.", "pete conrad"),
    (("Walter_Baade", "nationality", "Germany"), "Walter Baade was an Austrian astronomer.", "austrian"),
    (("Agustín_Barboza", "recordLabel", "Philips_Records"), "Agustín Barboza is signed to Sony Records.",
     "sony records"),
    (("Amdavad_ni_Gufa", "country", "India"), "Amdavad ni Gufa is located in Pakistan.", "pakistan"),
])
def test_another_object_of_the_same_type_is_wrong(triple, text, said):
    al = Matcher().align(_mr(triple), text)
    assert _st(al) == ["wrong"] and al.verdicts[0].said == said and al.hallucinated == []


def test_values_of_another_type_or_near_another_property_are_not_wrong():
    # a number for a name, a name for a number
    assert _st(Matcher().align(_mr(("Alan_Bean", "occupation", "Test_pilot")), "Alan Bean flew 3 missions.")) == \
        ["omitted"]
    assert _st(Matcher().align(_mr(("Aarhus", "populationTotal", "250000")), "Aarhus is led by Jacob Bundsgaard.")) \
        == ["omitted"]
    # "from MIT" follows another verb; "born in" ties the place to a birth, not to a nationality
    mr = _mr(("Buzz_Aldrin", "nationality", "United_States"))
    assert _st(Matcher().align(mr, "Buzz Aldrin graduated from MIT.")) == ["omitted"]
    assert _st(Matcher().align(mr, "Buzz Aldrin was born in Glen Ridge.")) == ["omitted"]
    # a demonym or short name of the object realises it (never another value): "an American", "a US national"
    assert _st(Matcher().align(mr, "Buzz Aldrin is an American.")) == ["realised"]
    assert _st(Matcher().align(mr, "Buzz Aldrin is a US national.")) == ["realised"]
    assert _st(Matcher().align(mr, "Buzz Aldrin told us so.")) == ["omitted"]  # the pronoun "us" is no name
    assert _st(Matcher().align(_mr(("Buzz_Aldrin", "birthPlace", "United_States")),
                               "Buzz Aldrin is an American.")) == ["omitted"]  # a demonym states no birth place
    # the name is nearer the other property's words
    mr = _mr(("Alan_Bean", "birthPlace", "Wheeler,_Texas"), ("Alan_Bean", "almaMater", "UT_Austin"))
    al = Matcher().align(mr, "Alan Bean was born in Wheeler, Texas and has an alma mater called Rice University.")
    assert _st(al) == ["realised", "wrong"] and al.verdicts[1].said == "rice university"


def test_one_number_left_in_a_sentence_about_the_subject_is_the_one_numeric_triple_left():
    """Rule 4: no cue word ties "1,500" to the elevation, but the sentence is about the airport (named, or "It" after
    a sentence that named it), one triple with a number is unanswered and one number is foreign: one wrong value, not
    an omission plus a hallucinated number."""
    mr = _mr(("Aarhus_Airport", "elevationAboveTheSeaLevel", "25.0"), ("Aarhus_Airport", "operatingOrganisation",
                                                                     "Aktieselskab"))
    for text in ["Aarhus Airport, operated by Aktieselskab, stands at 1,500.",
                 "Aarhus Airport is operated by Aktieselskab. It stands at 1,500."]:
        al = Matcher().align(mr, text)
        assert _st(al) == ["wrong", "realised"] and al.verdicts[0].said == "1500" and al.hallucinated == [], text
        assert al.verdicts[0].said_value == "1500"
    # two numeric triples unanswered: which one the number is stays open - both omitted, the number hallucinated
    mr2 = _mr(("Aarhus_Airport", "elevationAboveTheSeaLevel", "25.0"), ("Aarhus_Airport", "runwayLength", "2702.0"))
    al = Matcher().align(mr2, "Aarhus Airport stands at 1,500.")
    assert _st(al) == ["omitted", "omitted"] and [h["value"] for h in al.hallucinated] == ["1500"]
    # a sentence about another entity: no pairing
    mr3 = _mr(("Aarhus_Airport", "elevationAboveTheSeaLevel", "25.0"), ("Aarhus_Airport", "cityServed", "Aarhus"))
    al = Matcher().align(mr3, "Aarhus Airport serves Aarhus. Copenhagen has 1,500 taxis.")
    assert _st(al) == ["omitted", "realised"] and len(al.hallucinated) == 1
    # a name is never paired so (no type to match by)
    mr4 = _mr(("Aarhus_Airport", "operatingOrganisation", "Aktieselskab"), ("Aarhus_Airport", "cityServed", "Aarhus"))
    al = Matcher().align(mr4, "Aarhus Airport serves Aarhus. It hosts Scandinavian Airlines.")
    assert _st(al) == ["omitted", "realised"]


def test_the_object_written_another_way_is_realised():
    for triple, text in [(("Serie_A", "champions", "Juventus_F.C."), "Serie A's champions are Juventus FC."),
                         (("Los_Angeles_Rams", "city", "Los_Angeles"), "The Los Angeles Rams are based in LA."),
                         (("Abner_W._Sibal", "battle", "World_War_II"), "Abner W. Sibal fought in WWII."),
                         (("Elliot_See", "deathDate", '"1966-02-28"'), "Elliot See died on 28 February 1966."),
                         (("Adam_Koc", "nationality", "Poland"), "Adam Koc is a Polish national."),
                         (("Denmark", "leader", "Lars_Løkke_Rasmussen"), "Denmark's leader is Lars Lokke Rasmussen.")]:
        assert _st(Matcher().align(_mr(triple), text)) == ["realised"], text
    # but not a name that differs in a short token
    al = Matcher().align(_mr(("ASA", "league", "Campeonato_Brasileiro_Série_C")),
                         "ASA plays in the Campeonato Brasileiro Série B league.")
    assert _st(al) == ["wrong"]


# ------------------------------------------------------------------------------------ hallucinations and clean text
def test_one_invented_clause_is_one_hallucination_and_a_wrong_object_none():
    m = Matcher(TINY)
    mr = _mr(("Ahmet_Ertegun", "genre", "Rhythm_and_blues"), ("Ahmet_Ertegun", "occupation", "Test_pilot"))
    clean = m.align(mr, "Ahmet Ertegun performs rhythm and blues music and worked as a test pilot.")
    assert _st(clean) == ["realised"] * 2 and clean.hallucinated == []
    # another genre: wrong, its words not also hallucinated
    al = m.align(mr, "Ahmet Ertegun performs jazz music and worked as a test pilot.")
    assert _st(al) == ["wrong", "realised"] and al.verdicts[0].said == "jazz" and al.hallucinated == []
    # an invented clause: one stretch
    al = m.align(mr, "Ahmet Ertegun performs rhythm and blues music, worked as a test pilot and founded Atlantic "
                     "Records.")
    assert _st(al) == ["realised"] * 2 and [h["kind"] for h in al.hallucinated] == ["words"]
    # without triple words the rules alone: a wrong number is not also a hallucinated number
    al = Matcher().align(_mr(("Aarhus", "populationTotal", "250000")), "Aarhus has a population of 300,000.")
    assert _st(al) == ["wrong"] and al.hallucinated == []


def test_clean_texts_keep_their_verdicts():
    mr = _mr(("Alan_Bean", "birthPlace", "Wheeler,_Texas"), ("Alan_Bean", "birthDate", "1932-03-15"),
             ("Alan_Bean", "occupation", "Test_pilot"), ("Alan_Bean", "nationality", "United_States"))
    for text in ["Alan Bean, born in Wheeler, Texas on 15 March 1932, is a test pilot from the United States.",
                 "Born on March 15, 1932 in Wheeler, Texas, the United States national Alan Bean was a test pilot.",
                 "Alan Bean (born in Wheeler, Texas) is a United States test pilot born on 15 March 1932."]:
        for lex in (None, TINY):
            al = Matcher(lex).align(mr, text)
            assert _st(al) == ["realised"] * 4 and al.hallucinated == [], text
    # attribute-value MRs are untouched: a name after "from" is no wrong value there
    al = Matcher().align("name[The Eagle], food[Italian]", "The Eagle serves Italian food from Spain.")
    assert _st(al) == ["realised", "realised"]


# ----------------------------------------------------------------------------------------------------- the gold
def test_the_fact_gold_file_and_its_figures():
    from types import SimpleNamespace as NS

    from experiments.triple_fact_gold import GOLD, VERDICTS, evaluate, load_gold, prf, report

    gold = load_gold(GOLD)
    ids = [g["id"] for g in gold]
    assert len(ids) == len(set(ids)) and all(i.startswith("dev/") and "#Id" in i for i in ids)
    labels = [x for g in gold for x in g["labels"]]
    assert len(labels) >= 300 and {x: labels.count(x) for x in VERDICTS} == {"realised": 292, "omitted": 74,
                                                                             "wrong": 105}
    assert prf(1, 1, 0) == (0.5, 1.0, pytest.approx(2 / 3)) and prf(0, 0, 0) == (0.0, 0.0, 0.0)
    # the figures on a stub entry
    entries = {"dev/x#Id1": NS(mr=_mr(("Elliot_See", "deathPlace", "St._Louis"), ("Elliot_See", "occupation",
                                                                                  "Test_pilot")),
                               triples=(1, 2))}
    rows = [{"id": "dev/x#Id1", "output": "Elliot See was born in St. Louis. He won 3 prizes.",
             "labels": ["wrong", "omitted"], "hallucinated": 1}]
    res = evaluate(Matcher(), rows, entries)
    assert res["verdicts"]["wrong"]["f1"] == 1.0 and res["verdicts"]["omitted"]["f1"] == 1.0
    assert res["hallucinated"]["exact"] == 1.0 and "wrong" in report(res, "none")
    with pytest.raises(ValueError, match="no such development entry"):
        evaluate(Matcher(), [dict(rows[0], id="dev/y#Id9")], entries)


@needs_data
def test_the_fact_gold_on_the_development_entries():
    from experiments.triple_fact_gold import entry_index, evaluate, load_gold

    res = evaluate(Matcher(), load_gold(), entry_index())
    assert res["facts"] == 471
    # docs/results/content-triples.md (rules only): wrong F1 0.80 or more, as the issue asks
    assert res["verdicts"]["wrong"]["f1"] >= 0.8 and res["verdicts"]["realised"]["f1"] >= 0.95


# --------------------------------------------------------------------- the shipped triple sample (zoo test recipe)
def test_the_shipped_triple_rows_read_and_every_fact_is_realised_by_the_rules():
    """``data.source=sample-triples``: the 30 rows the zoo's triple rebuild check trains on are well formed, and the
    rules realise every fact of each (the references are complete), so the aligner's positives are all positives."""
    from qe.content.task import read_triple_rows

    rows = read_triple_rows()
    assert len(rows) == 30
    m = Matcher()
    for r in rows:
        al = m.align(r["mr"], r["ref"])
        assert [v.status for v in al.verdicts] == ["realised"] * len(r["triples"]), r["ref"]


def test_a_bad_triple_row_names_its_file_and_line(tmp_path):
    from qe.content.task import read_triple_rows
    from qe.errors import RecordError

    p = tmp_path / "rows.jsonl"
    p.write_text('{"triples": [["A", "b", "C"]], "ref": "A b C."}\n\n{"triples": [["A", "b"]], "ref": "x"}\n',
                 encoding="utf-8")
    with pytest.raises(RecordError, match=r"rows\.jsonl:3: a row needs 'triples'"):
        read_triple_rows(p)


# ------------------------------------------------- rule 3: the words of a property already answered claim nothing
@pytest.mark.parametrize("triples, output, prop, said", [
    ([["4471_Velmora", "discoverer", "Ansgar_Thiel"], ["Ansgar_Thiel", "nationality", "Germany"]],
     "4471 Velmora was discovered by the Austrian astronomer Ansgar Thiel.", "nationality", "austrian"),
    ([["Kerrow_Hall", "location", "Dunmere"], ["Kerrow_Hall", "country", "India"]],
     "Kerrow Hall is located in Dunmere, in Pakistan.", "country", "pakistan"),
])
def test_a_value_by_an_answered_propertys_words_is_the_open_triples_other_object(triples, output, prop, said):
    """"Discovered by the Austrian astronomer": the discoverer is found (Ansgar Thiel), so "discovered" no longer
    claims "Austrian" for itself; the nationality is wrong, said Austrian - one error, not an omission plus a
    hallucinated word. Likewise "located in Dunmere, in Pakistan" once the location is found."""
    al = Matcher().align(json.dumps(triples), output)
    v = next(v for v in al.verdicts if v.slot == prop)
    assert (v.status, v.said) == ("wrong", said)
    assert [x.status for x in al.verdicts if x.slot != prop] == ["realised"]
    assert al.hallucinated == []
