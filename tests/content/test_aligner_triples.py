"""The learned aligner on RDF triples (qe.content.aligner_triples): its query format, its generated labels and their
vetoes, the threshold chosen on them, and AlignedMatcher deciding the triples the matcher calls omitted (a stub in
place of the cross-encoder: the tiny-model training path is the one tests/content/test_aligner.py runs)."""
from __future__ import annotations

import json

import numpy as np
from conftest import needs_data

from qe.content import Matcher
from qe.content.aligner import MODES, AlignedMatcher, Aligner
from qe.content.aligner_data import LABELS, OMITTED, REALISED, WRONG, Inventory
from qe.content.aligner_triples import (TripleInventory, _drop_triple, _other, _prop_triple, calibrate_triples,
                                        engine_figures, make_triple_examples, rows_from_entries, triple_query,
                                        verdict_query)

ROWS = [
    {"triples": [("Alan_Bean", "nationality", "United_States"), ("Alan_Bean", "birthPlace", "Wheeler,_Texas")],
     "ref": "Alan Bean, a citizen of the States, was born in Wheeler, Texas."},
    {"triples": [("Alan_Bean", "occupation", "Test_pilot")], "ref": "Alan Bean served as a test pilot."},
    {"triples": [("Elliot_See", "birthPlace", "Dallas"), ("Elliot_See", "occupation", "Test_pilot")],
     "ref": "Elliot See, born in Dallas, was a test pilot."},
    {"triples": [("Aarhus_Airport", "cityServed", "Aarhus")], "ref": "Aarhus Airport serves the city of Aarhus."},
]


def test_query_names_the_three_parts_as_words():
    assert triple_query("birthPlace", "Alan_Bean", "Wheeler,_Texas") == "alan bean | birth place | wheeler, texas"
    assert triple_query("runtime", '"Mermaid"', '"52.0"(minutes)') == "mermaid | runtime | 52.0 (minutes)"
    # a matcher verdict holds the property as slot and "subject | object" as value
    assert verdict_query("birthPlace", "Alan_Bean | Wheeler,_Texas") == "alan bean | birth place | wheeler, texas"


def test_labels_of_hand_written_rows_every_kind_and_the_vetoes():
    inv = TripleInventory.from_rows(ROWS)
    assert inv.objects["birthPlace"] == ["Dallas", "Wheeler,_Texas"]
    got = make_triple_examples(ROWS, Matcher(), inv, np.random.default_rng(0), p_found=1.0)
    by = {}
    for e in got:
        by.setdefault(e.kind, []).append((LABELS[e.label], e.query, e.text))
    assert set(by) == {"fact", "other", "drop", "swap", "swap_text"}
    # every triple is realised with its own text, the paraphrase the matcher misses too
    assert ("realised", "alan bean | nationality | united states",
            "alan bean , a citizen of the states , was born in wheeler , texas .") in by["fact"]
    assert next(e for e in got if e.query == "alan bean | nationality | united states").matcher == "omitted"
    assert len(by["fact"]) == 6
    # the clause of a dropped object goes with it when no other object is in it
    assert ("omitted", "elliot see | occupation | test pilot", "elliot see , born in dallas .") in by["drop"]
    assert ("omitted", "alan bean | birth place | wheeler, texas", "alan bean , a citizen of the states .") in by["drop"]
    assert ("wrong", "alan bean | birth place | wheeler, texas",
            "alan bean , a citizen of the states , was born in dallas .") in by["swap_text"]
    assert ("wrong", "elliot see | birth place | wheeler, texas",
            "elliot see , born in dallas , was a test pilot .") in by["swap"]
    assert all(lab == "omitted" for lab, _, _ in by["other"])
    # "aarhus" of the subject's name is not the object (issue 50): deleting the other one leaves the triple omitted
    assert ("omitted", "aarhus airport | city served | aarhus", "aarhus airport serves the city .") in by["drop"]


def test_a_triple_of_another_entry_whose_object_the_text_names_is_vetoed():
    ref = ROWS[0]["ref"]
    triples = ROWS[0]["triples"]
    named = TripleInventory({}, {"alan bean": [("Alan_Bean", "residence", "Wheeler,_Texas")]}, {})
    assert _other(triples, ref, "", Matcher(), named, np.random.default_rng(0)) == []
    unnamed = TripleInventory({}, {"alan bean": [("Alan_Bean", "occupation", "Test_pilot")]}, {})
    (e,) = _other(triples, ref, "t", Matcher(), unnamed, np.random.default_rng(0))
    assert (e.label, e.kind, e.query) == (OMITTED, "other", "alan bean | occupation | test pilot")


def test_a_drop_that_leaves_the_object_only_inside_the_subjects_name_is_kept():
    from qe.content.lexicon import norm_tokens

    triples = [("Aarhus_Airport", "cityServed", "Aarhus")]
    toks = norm_tokens(ROWS[3]["ref"])
    vs = Matcher().align(json.dumps([list(t) for t in triples]), ROWS[3]["ref"]).verdicts
    assert vs[0].status == "realised"
    # "aarhus" left in "aarhus airport" does not state the city served (issue 50): the drop is an omitted example
    (e,) = _drop_triple(triples, vs, toks, Matcher(), np.random.default_rng(0))
    assert (e.label, e.text, e.matcher) == (OMITTED, "aarhus airport serves the city .", "omitted")


# a death place shares Dallas with the birth places: the two properties' object type fits
DIED = {"triples": [("John_Doe", "deathPlace", "Dallas")], "ref": "John Doe died in Dallas."}


def test_prop_negatives_ask_another_property_of_the_same_entities_and_leave_the_other_kinds_as_they_were():
    rows = ROWS + [DIED]
    inv = TripleInventory.from_rows(rows)
    without = make_triple_examples(rows, Matcher(), inv, np.random.default_rng(0), p_found=1.0)
    got = make_triple_examples(rows, Matcher(), inv, np.random.default_rng(0), p_found=1.0,
                               prop_rng=np.random.default_rng(1))
    assert [e for e in got if e.kind != "prop"] == without and not [e for e in without if e.kind == "prop"]
    prop = [(LABELS[e.label], e.query, e.text, e.matcher) for e in got if e.kind == "prop"]
    # the text unchanged, its entities named; the matcher reads "born" / "died" by the object: a contradicting
    # property, wrong (issue 50)
    assert prop == [("wrong", "alan bean | death place | wheeler, texas",
                     "alan bean , a citizen of the states , was born in wheeler , texas .", "wrong"),
                    ("wrong", "elliot see | death place | dallas", "elliot see , born in dallas , was a test pilot .",
                     "wrong"),
                    ("wrong", "john doe | birth place | dallas", "john doe died in dallas .", "wrong")]


def test_prop_negatives_are_vetoed_when_the_text_may_realise_the_new_triple():
    triples = ROWS[2]["triples"]  # Elliot See: birth place Dallas, occupation test pilot
    ref = ROWS[2]["ref"]
    rng = np.random.default_rng(0)
    (e,) = _prop_triple(triples, ref, "t", Matcher(), TripleInventory.from_rows(ROWS + [DIED]), rng)
    assert e.query == "elliot see | death place | dallas"
    # a training entry states that Elliot See died in Dallas too: the text may say so - no negative
    died_there = {"triples": [("Elliot_See", "deathPlace", "Dallas")], "ref": "Elliot See died in Dallas."}
    assert _prop_triple(triples, ref, "t", Matcher(), TripleInventory.from_rows(ROWS + [died_there]), rng) == []
    # the entry's own triple is never a negative
    own = triples + [("Elliot_See", "deathPlace", "Dallas")]
    assert _prop_triple(own, ref, "t", Matcher(), TripleInventory.from_rows(ROWS + [DIED]), rng) == []
    # close properties are not asked for one another
    places = [{"triples": [("Abilene,_Texas", "isPartOf", "Texas")], "ref": "Abilene is part of Texas."},
              {"triples": [("Austin,_Texas", "state", "Texas")], "ref": "Austin is in Texas."}]
    inv = TripleInventory.from_rows(places)
    assert inv.fitting_properties("isPartOf", "Texas") == ["state"] and inv.close("isPartOf", "state")
    assert _prop_triple(places[0]["triples"], places[0]["ref"], "t", Matcher(), inv, rng) == []
    assert inv.close("operator", "operatingOrganisation") and not inv.close("birthPlace", "deathPlace")
    clubs = [{"triples": [("A_B", "club", "FC_X"), ("A_B", "youthclub", "FC_X")], "ref": "A B played for FC X."}]
    assert TripleInventory.from_rows(clubs).close("club", "youthclub")


def test_the_prop_negatives_switch_of_the_training_data(monkeypatch):
    """data.prop_negatives of task=content_aligner data.source=webnlg (the entries and the tokenizer stubbed)."""
    from omegaconf import OmegaConf

    import qe.content.task as task
    import qe.data.webnlg as webnlg

    class Entry:
        def __init__(self, r):
            self.triples, self.mr = r["triples"], json.dumps([list(t) for t in r["triples"]])
            self.lexes = [type("Lex", (), {"text": r["ref"], "comment": "good"})()]

    monkeypatch.setattr(webnlg, "webnlg_entries", lambda split, data_dir=None: [Entry(r) for r in ROWS + [DIED]] * 3)
    monkeypatch.setattr(task, "_tokenizer", lambda name: None)
    monkeypatch.setattr(task, "instantiate_model", lambda *a, **k: None)
    monkeypatch.setattr("qe.hf.data.TextClassificationDataModule", lambda *a, **k: type("DM", (), {})())
    base = OmegaConf.load(task.__file__.replace("task.py", "../conf/data/content_aligner.yaml"))
    for on in (False, True):
        cfg = OmegaConf.create({"seed": 0, "paths": {"data_dir": None}, "model": {"encoder": "x"},
                                "data": {**OmegaConf.to_container(base), "source": "webnlg", "val_fraction": 0.0,
                                         "prop_negatives": on}})
        info = task.build_triples(cfg).datamodule.data_info
        assert info["prop_negatives"] is on and bool(info.get("pairs_prop_wrong")) is on


# ---------------------------------------------------------------------------------------------- the engine
class StubAligner:
    """Aligner's interface with fixed answers: P(realised) per query, ``omitted`` otherwise."""

    def __init__(self, p_realised: dict[str, float], on_triples: bool = True, threshold: float = 0.5):
        self.p, self.on_triples, self.t = p_realised, on_triples, threshold
        self.additions, self.inventory, self.asked = {}, Inventory({}), []
        self.status = Aligner.status

    def threshold_for(self, mode):
        return self.t

    def probs(self, pairs):
        self.asked += [q for q, _ in pairs]
        out = np.zeros((len(pairs), 3))
        for i, (q, _) in enumerate(pairs):
            p = self.p.get(q, 0.0)
            out[i] = [p, (1 - p) * 0.7, (1 - p) * 0.3]
        return out


MR = json.dumps([["Alan_Bean", "nationality", "United_States"], ["Alan_Bean", "birthPlace", "Wheeler,_Texas"],
                 ["Alan_Bean", "occupation", "Test_pilot"]])
TEXT = "Alan Bean, a citizen of the States, was born in Wheeler, Texas."


def test_aligned_matcher_decides_the_triples_the_matcher_calls_omitted():
    stub = StubAligner({"alan bean | nationality | united states": 0.9, "alan bean | occupation | test pilot": 0.1,
                        "alan bean | birth place | wheeler, texas": 0.0})
    al = AlignedMatcher(Matcher(), stub).align(MR, TEXT)
    got = [(v.slot, v.status, v.engine) for v in al.verdicts]
    # combined: the matcher's realised triple stays (the aligner, which would say omitted, is not asked)
    assert got == [("nationality", "realised", "aligner"), ("birthPlace", "realised", "matcher"),
                   ("occupation", "omitted", "aligner")]
    assert "alan bean | birth place | wheeler, texas" not in stub.asked
    assert al.verdicts[0].confidence == 0.9 and al.hallucinated == []
    # aligner mode: every triple is the aligner's
    al = AlignedMatcher(Matcher(), stub, "aligner").align(MR, TEXT)
    assert [(v.status, v.engine) for v in al.verdicts] == [("realised", "aligner"), ("omitted", "aligner"),
                                                           ("omitted", "aligner")]


def test_override_on_triples_asks_about_the_matcher_realised_ones_and_only_a_wrong_label_overrules_it():
    class Wrong(StubAligner):
        def probs(self, pairs):
            out = super().probs(pairs)
            for i, (q, _) in enumerate(pairs):
                if q in self.wrong:
                    out[i] = self.wrong[q]
            return out

    stub = Wrong({"alan bean | nationality | united states": 0.9, "alan bean | occupation | test pilot": 0.1})
    stub.wrong = {"alan bean | birth place | wheeler, texas": [0.2, 0.3, 0.5]}
    al = AlignedMatcher(Matcher(), stub, "override").align(MR, TEXT)
    assert "alan bean | birth place | wheeler, texas" in stub.asked
    assert [(v.slot, v.status, v.engine) for v in al.verdicts] == [("nationality", "realised", "aligner"),
                                                                   ("birthPlace", "wrong", "aligner"),
                                                                   ("occupation", "omitted", "aligner")]
    # below the threshold but omitted more likely than wrong: the matcher's realised verdict stays
    stub.wrong = {"alan bean | birth place | wheeler, texas": [0.2, 0.5, 0.3]}
    al = AlignedMatcher(Matcher(), stub, "override").align(MR, TEXT)
    assert (al.verdicts[1].status, al.verdicts[1].engine) == ("realised", "matcher")
    # the generated-label figures of the same engine: a realised pair the matcher finds, overruled, is an error
    from qe.content.aligner_triples import TripleExample

    ex = [TripleExample("a", "t", WRONG, "prop", "p", matcher="realised"),
          TripleExample("b", "t", REALISED, "fact", "p", matcher="realised")]
    assert engine_figures(ex, np.array([0.2, 0.2]), 0.5)["error_recall"] == 0.0
    m = engine_figures(ex, np.array([0.2, 0.2]), 0.5, overrule=np.array([True, False]))
    assert (m["error_recall"], m["realised_recall"]) == (1.0, 1.0)


def test_exports_leave_the_other_kind_of_mr_to_the_matcher():
    slots_mr = "name[The Eagle], priceRange[cheap]"
    on_triples = StubAligner({}, on_triples=True)
    al = AlignedMatcher(Matcher(), on_triples).align(slots_mr, "The Eagle is not pricey.")
    assert on_triples.asked == [] and {v.engine for v in al.verdicts} == {"matcher"}
    on_slots = StubAligner({"alan bean | nationality | united states": 1.0}, on_triples=False)
    al = AlignedMatcher(Matcher(), on_slots).align(MR, TEXT)
    assert on_slots.asked == [] and {v.engine for v in al.verdicts} == {"matcher"}
    assert al.verdicts[0].status == "omitted"


def test_threshold_is_chosen_on_generated_labels():
    from qe.content.aligner_triples import TripleExample

    ex = [TripleExample("a", "t", REALISED, "fact", "p", matcher="omitted"),
          TripleExample("b", "t", REALISED, "fact", "p", matcher="realised"),
          TripleExample("c", "t", OMITTED, "other", "p", matcher="omitted"),
          TripleExample("d", "t", WRONG, "swap", "p", matcher="omitted")]
    stub = StubAligner({"a": 0.62, "b": 0.2, "c": 0.3, "d": 0.58})
    m = engine_figures(ex, np.zeros(4), None)
    assert (m["realised_recall"], m["error_recall"], m["error_precision"]) == (0.5, 1.0, 2 / 3)
    cal = calibrate_triples(stub, ex)
    # combined: only 0.60 separates a (0.62) from d (0.58); the aligner alone also loses b (0.2) below it
    assert cal["thresholds"]["combined"] == 0.6 and cal["metrics"]["val/triples_mcc_combined"] == 1.0
    assert set(cal["thresholds"]) == set(MODES) and not any(cal["additions"].values())
    assert cal["metrics"]["val/triples_realised_recall_aligner"] == 0.5


@needs_data
def test_rows_from_webnlg_entries():
    from qe.data.webnlg import webnlg_entries

    entries = webnlg_entries("dev")[:40]  # the smaller archive: quicker to read
    rows = rows_from_entries(entries, np.random.default_rng(0), lexes_per_entry=2)
    assert rows and all(r["triples"] and r["ref"] for r in rows) and len(rows) <= 80
    ex = make_triple_examples(rows, Matcher(), TripleInventory.from_rows(rows), np.random.default_rng(0))
    assert {e.kind for e in ex} >= {"fact", "other", "drop"}
    assert all(e.query.count(" | ") == 2 for e in ex)
