"""The faithful-text precision harness (experiments/content_precision.py) on a tiny hand-written fixture: the naive
check, the swaps and deletions, the counting, BAGEL's relexicalisation - no data folder needed."""
from __future__ import annotations

import pytest

from experiments import content_precision as cp

E2E_1 = ("name[The Eagle], eatType[pub], area[riverside], familyFriendly[yes]",
         "The Eagle is a family-friendly pub by the riverside.")
E2E_2 = ("name[Zizzi], food[Chinese], priceRange[cheap]", "Zizzi serves cheap Chinese food.")
DA = ("inform(name='red door cafe',area='cathedral hill',pricerange='dont_care')", "red door cafe is in cathedral hill")
TRIPLES = ('[["Aarhus", "leader", "Jacob_Bundsgaard"]]', "The leader of Aarhus is Jacob Bundsgaard.")
ITEMS = [cp.Item(mr, ref, f"fixture:{i}", mr) for i, (mr, ref) in enumerate((E2E_1, E2E_2, DA, TRIPLES))]


def test_naive_check_judges_values_only():
    assert [s for _, _, s in cp.naive_verdicts(*E2E_1)] == ["realised", "realised", "realised", "unjudged"]
    assert [s for _, _, s in cp.naive_verdicts(*DA)] == ["realised", "realised", "unchecked"]
    assert [s for _, _, s in cp.naive_verdicts(*TRIPLES)] == ["realised"]  # the object, underscores as spaces
    # case-insensitive, white space squeezed, on word boundaries only
    assert cp.naive_found("City  Centre", "in the city centre.")
    assert not cp.naive_found("pub", "a public house")
    assert [s for _, _, s in cp.naive_verdicts("name[The Eagle], area[city centre]",
                                               "The Eagle is in the centre of the city.")] == ["realised", "omitted"]


def test_edits_swap_within_the_slot_and_delete_every_occurrence():
    values = {"name": ["Zizzi"], "priceRange": ["cheap", "high", "less than £20"]}
    edits = cp.make_edits([cp.Item("name[Zizzi], priceRange[cheap]", "Zizzi is cheap. Cheap and good.", "x")],
                          values, seed=3)
    swap = next(e for e in edits if e.kind == "swap")
    # the name has no other value and "less than £20" means cheap: the one swap left is cheap -> high
    assert (swap.slot, swap.old, swap.new) == ("priceRange", "cheap", "high")
    assert swap.text == "Zizzi is high. high and good."
    dele = next(e for e in edits if e.kind == "deletion")
    assert dele.old.lower() not in dele.text.lower() and len(edits) == 2
    # the same seed draws the same edits
    assert [(e.slot, e.text) for e in edits] == [(e.slot, e.text) for e in cp.make_edits(
        [cp.Item("name[Zizzi], priceRange[cheap]", "Zizzi is cheap. Cheap and good.", "x")], values, seed=3)]


def test_editable_leaves_out_binary_unchecked_paraphrased_and_overlapping_values():
    got = cp.editable("name[Blue Spice], food[Spice], area[riverside], familyFriendly[yes], near[dontcare]",
                      "Blue Spice is a family friendly Spice place by the riverside.")
    assert [(slot, words) for _, slot, _, words in got] == [("area", "riverside")]
    assert cp.editable("name[The Eagle], area[city centre]", "The Eagle is in the centre of the city.") == \
        [(0, "name", "The Eagle", "The Eagle")]


class _Stub:
    """A scorer whose verdicts are written by hand: every fact realised, except what ``plan`` says."""

    def __init__(self, plan):
        self.plan = plan

    def details(self, outputs, mrs=None):
        out = []
        for text, mr in zip(outputs, mrs):
            verdicts, hall = [], []
            for slot, value, words in cp.facts_of(mr):
                kind = cp.fact_kind(value, words)
                status = "unchecked" if kind == "unchecked" else self.plan.get((mr, text, slot), "realised")
                verdicts.append({"slot": slot, "value": value, "status": status, "said": None})
            if (mr, text, "+") in self.plan:
                hall.append({"slot": "near", "value": "Café Rouge", "said": "rouge"})
            c = {k: sum(v["status"] == k for v in verdicts) for k in ("realised", "omitted", "wrong")}
            out.append({"verdicts": verdicts, "hallucinated": hall, "repeated": [],
                        "counts": {"facts": sum(c.values()), **c, "hallucinated": len(hall), "repeated": 0}})
        return out


def test_counts_of_faithful_references_and_edits():
    values = cp.slot_values(ITEMS)
    edits = cp.make_edits(ITEMS, values, seed=20261207)
    plan = {(E2E_1[0], E2E_1[1], "familyFriendly"): "wrong", (DA[0], DA[1], "area"): "omitted",
            (E2E_2[0], E2E_2[1], "+"): "invented"}
    # every edit found but the first one, which the stub calls realised
    plan[(edits[0].mr, edits[0].text, edits[0].slot)] = "realised"
    for e in edits[1:]:
        plan[(e.mr, e.text, e.slot)] = "omitted"
    t = cp.measure(_Stub(plan), ITEMS, edits, cp.domain_values(ITEMS))
    f = t.figures()
    assert (f["references"], f["facts"], f["invented"]) == (4, 10, 1)  # 4 + 3 + 2 + 1 facts, dontcare left out
    assert f["invented_per_100_refs"] == 25.0
    assert (f["not_realised_per_100_facts"], f["omitted_per_100_facts"], f["wrong_per_100_facts"]) == (20.0, 10.0, 10.0)
    assert f["refs_without_error_pct"] == 25.0  # only the triples' reference has no error
    assert (f["binary_facts"], f["naive_facts"], f["naive_not_realised_per_100_facts"]) == (1, 9, 0.0)
    assert f["not_realised_nonbinary_per_100_facts"] == round(100 / 9, 2)  # the omitted area
    swaps, dels = sum(e.kind == "swap" for e in edits), sum(e.kind == "deletion" for e in edits)
    assert (f["swaps"], f["deletions"]) == (swaps, dels) and dels == 4
    assert edits[0].kind == "swap" and f["swaps_found_pct"] == round(100 * (swaps - 1) / swaps, 2)
    assert f["deletions_found_pct"] == 100.0 and f["naive_swaps_found_pct"] == 100.0
    assert t.invented_causes and t.not_realised_causes["binary value yes: wrong"] == 1


def test_hand_labels_give_false_alarms_only_where_every_invented_fact_has_one(monkeypatch):
    plan = {(E2E_2[0], E2E_2[1], "+"): "invented"}
    monkeypatch.setattr(cp, "invented_labels", lambda: {("fixture:1", "rouge"): "false_alarm"})
    f = cp.measure(_Stub(plan), ITEMS, [], cp.domain_values(ITEMS)).figures()
    assert (f["invented"], f["invented_hand_labelled"], f["false_alarms_per_100_refs_hand"]) == (1, 1, 25.0)
    monkeypatch.setattr(cp, "invented_labels", lambda: {("fixture:1", "rouge"): "stated"})
    f = cp.measure(_Stub(plan), ITEMS, [], cp.domain_values(ITEMS)).figures()
    assert (f["invented_hand_labelled"], f["false_alarms_per_100_refs_hand"]) == (1, 0.0)
    monkeypatch.setattr(cp, "invented_labels", lambda: {})
    f = cp.measure(_Stub(plan), ITEMS, [], cp.domain_values(ITEMS)).figures()
    assert (f["invented_hand_labelled"], f["false_alarms_per_100_refs_hand"]) == (0, "")  # not all read: no figure


def test_the_hand_label_files_hold_labels_and_no_corpus_text():
    import json

    assert len(cp.LABEL_FILES) >= 3
    for path in cp.LABEL_FILES:
        for line in path.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            assert set(r) <= {"where", "slot", "value", "said", "label", "note"}, path
            assert r["label"] in ("stated", "reference_error", "false_alarm") and r["where"] and r["said"], path
    labels = cp.invented_labels()
    assert labels and set(labels.values()) <= {"stated", "reference_error", "false_alarm"}


def test_a_label_file_that_gives_one_fact_two_labels_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "x_invented_labels.jsonl"
    bad.write_text('{"where": "w#1", "said": "using", "label": "false_alarm"}\n'
                   '{"where": "w#1", "said": "using", "label": "stated"}\n', encoding="utf-8")
    monkeypatch.setattr(cp, "LABEL_FILES", (bad,))
    cp.invented_labels.cache_clear()
    try:
        with pytest.raises(ValueError, match="labelled both false_alarm and stated"):
            cp.invented_labels()
    finally:
        cp.invented_labels.cache_clear()


def test_rules_scorer_on_the_fixture():
    qe = pytest.importorskip("qe")
    scorer = qe.load("coverage", lexicon="none")
    edits = cp.make_edits(ITEMS, cp.slot_values(ITEMS), seed=20261207)
    f = cp.measure(scorer, ITEMS, edits, cp.domain_values(ITEMS)).figures()
    assert f["references"] == 4 and f["facts"] == 10 and f["invented"] == 0
    # every fact of these faithful references realised ("family-friendly" is the binary slot's own words; "cheap"
    # before "Chinese food" stays the price's - a working copy of 2026-12-07 lost it for a while)
    assert f["not_realised_per_100_facts"] == 0.0
    assert f["deletions_found_pct"] == 100.0


def test_bagel_relexicalisation():
    mr, text = cp.relexicalise_bagel(
        'inform(name="Ali Baba",eattype=restaurant,near="The Bakers",near="Avalon")',
        'inform(name="X1",eattype=restaurant,near="X2",near="X3")',
        "[near]Close to [near]both the [near+X]X [near]and [near+X]X []you will find the "
        "[eattype+restaurant]restaurant, []the [name+X]X; [name+X]X []is cheap", "fixture")
    assert mr.startswith('inform(name="Ali Baba"')
    assert text == "Close to both The Bakers and Avalon you will find the restaurant, the Ali Baba; Ali Baba is cheap"
    with pytest.raises(ValueError, match="fixture"):
        cp.relexicalise_bagel('inform(name="A")', 'inform(name="X1")', "[near+X]X", "fixture")


def test_examples_kept_in_the_repository_hold_no_corpus_text():
    ex = {"default/e2e": {"invented": [{"where": "e2e/dev:2", "mr": "name[A]", "reference": "A is.", "said": "is"}],
                          "first_5_per_cause": {"x": [{"mr": "m", "reference": "r", "slot": "s"}]}, "n": 3}}
    assert cp.without_text(ex) == {"default/e2e": {"invented": [{"where": "e2e/dev:2", "said": "is"}],
                                                   "first_5_per_cause": {"x": [{"slot": "s"}]}, "n": 3}}
