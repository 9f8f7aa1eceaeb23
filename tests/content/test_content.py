"""Content alignment (qe.content): verdicts per fact, lexicons mined from data, the coverage scorer and its CLI rows."""
from __future__ import annotations

import json
import math

import pytest

from conftest import needs_data
from qe.content import Lexicon, Matcher, mine
from qe.content.scorer import CoverageScorer


def _status(al, slot):
    """(status, what the output says): the canonical value a wrong verdict reads, else the output's words."""
    return next((v.status, v.said_value if v.status == "wrong" else v.said) for v in al.verdicts if v.slot == slot)


def _words(al, slot):
    return next(v.said for v in al.verdicts if v.slot == slot)


# ------------------------------------------------------------------------------------------------ rules only
def test_rules_find_values_surface_forms_and_negated_binary_slots():
    m = Matcher()
    al = m.align("name[The Eagle], area[city centre], customer rating[5 out of 5], familyFriendly[yes], food[Thai]",
                 "The Eagle, in the city center, has a five-star rating. It is not family-friendly.")
    assert _status(al, "name")[0] == "realised"
    assert _status(al, "area") == ("realised", "city center")  # a usual surface form
    assert _status(al, "customer rating")[0] == "realised"  # "five-star" for 5 out of 5
    assert _status(al, "familyFriendly") == ("wrong", "no")  # negation before the slot's words
    assert _words(al, "familyFriendly").startswith("not ")  # said: the output's words, the cue included
    assert _status(al, "food") == ("omitted", None)
    c = al.counts()
    assert (c["facts"], c["realised"], c["wrong"], c["omitted"]) == (5, 3, 1, 1)
    assert al.errors() == 2


def test_unchecked_values_and_slots_without_value():
    al = Matcher().align("inform(name='hotel stratford';area=dontcare)&request(pricerange)",
                         "hotel stratford is in any area . what price range do you want ?")
    st = {v.slot: v.status for v in al.verdicts}
    assert st == {"name": "realised", "area": "unchecked", "pricerange": "realised"}
    assert al.counts()["facts"] == 2


def test_dialogue_acts_json_and_e2e_mrs_align_alike():
    text = "Blue Spice is a coffee shop by the riverside."
    for mr in ("name[Blue Spice], eatType[coffee shop], area[riverside]",
               '{"name": "Blue Spice", "eatType": "coffee shop", "area": "riverside"}',
               "inform(name='Blue Spice';eatType='coffee shop';area=riverside)"):
        c = Matcher().align(mr, text).counts()
        assert (c["facts"], c["realised"]) == (3, 3), mr


def test_triples_objects_subjects_dates_and_hallucinated_numbers():
    mr = '[["Alan_Bean", "birthPlace", "Wheeler,_Texas"], ["Alan_Bean", "birthDate", "1932-03-15"], ' \
         '["Alan_Bean", "occupation", "Test_pilot"]]'
    al = Matcher().align(mr, "Alan Bean was born in Wheeler on 15 March 1932 and flew 3 missions.")
    assert [v.status for v in al.verdicts] == ["realised", "realised", "omitted"]
    assert [h["value"] for h in al.hallucinated] == ["3"]


def test_bad_mr_names_the_record():
    with pytest.raises(Exception, match="record 'r7'"):
        CoverageScorer(lexicon="none").score(["text"], mrs=["name[oops"], ids=["r7"])


# --------------------------------------------------------------------------------------------- mined lexicon
PAIRS = []
for i in range(12):
    PAIRS += [
        (f"name[Place{i}], priceRange[cheap], familyFriendly[yes]", f"Place{i} is cheap and kid friendly ."),
        (f"name[Place{i}], priceRange[less than £20], familyFriendly[no]",
         f"Place{i} is cheap but it is not kid friendly ."),
        (f"name[Place{i}], familyFriendly[yes]", f"children are welcome at Place{i} ."),
        (f"name[Place{i}], priceRange[high]", f"Place{i} is expensive ."),
        (f"name[Place{i}], familyFriendly[no]", f"Place{i} is adults only ."),
        (f"name[Place{i}]", f"Place{i} is a place ."),
        (f"name[Place{i}], familyFriendly[yes]", f"Place{i} is good for kids ."),
    ]


def test_mine_learns_paraphrases_shared_values_and_triggers():
    lex = mine(PAIRS, min_count=5)
    pr, ff = lex.slots["pricerange"], lex.slots["familyfriendly"]
    assert lex.slots["name"].kind == "entity" and not lex.slots["name"].patterns  # names are never mined
    assert pr.kind == "category" and ff.kind == "binary"
    assert set(pr.patterns["cheap"]) == {"cheap", "less than £ 20"}  # "cheap" fits both values
    assert set(pr.patterns["expensive"]) == {"high"}
    assert "kid" in ff.triggers or "friendly" in ff.triggers
    assert any(set(c) == {"no"} for p, c in ff.patterns.items() if "adults" in p)


def test_mined_lexicon_decides_wrong_values_and_hallucinations():
    m = Matcher(mine(PAIRS, min_count=5))
    al = m.align("name[Zed], priceRange[cheap], familyFriendly[yes]", "Zed is expensive and adults only .")
    assert _status(al, "priceRange") == ("wrong", "high")
    assert _words(al, "priceRange") == "expensive"  # the output's words; said_value the canonical value
    assert _status(al, "familyFriendly") == ("wrong", "no")
    al = m.align("name[Zed], priceRange[less than £20]", "Zed is cheap . It is kid friendly .")
    assert _status(al, "priceRange")[0] == "realised"  # cheap realises less than £20, as the data annotate it
    assert [(h["slot"], h["value"]) for h in al.hallucinated] == [("familyFriendly", "yes")]  # as the data write it


def test_lexicon_round_trip_and_bad_file(tmp_path):
    lex = mine(PAIRS, min_count=5)
    p = tmp_path / "lex.json"
    lex.save(p)
    back = Lexicon.load(p)
    assert back.to_dict() == json.loads(p.read_text()) and back.checksum == lex.checksum
    (tmp_path / "bad.json").write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="not a qe content lexicon"):
        Lexicon.load(tmp_path / "bad.json")


# ------------------------------------------------------------------------------------------------- the scorer
def test_coverage_formula_components_and_undefined():
    s = CoverageScorer(lexicon="none")
    mrs = ["name[A], food[Thai], area[riverside]", "name[B], food[dontcare]", "food[dontcare]"]
    outs = ["A serves Thai food .", "B .", "Anything ."]
    comps = s.score_components(outs, mrs=mrs)
    assert comps["coverage"][0] == pytest.approx(2 / 3) and comps["ser"][0] == pytest.approx(1 / 3)
    assert comps["coverage"][1] == 1.0 and comps["facts"][1] == 1.0
    assert math.isnan(comps["coverage"][2])  # nothing to check
    # precision / recall / f1: A is realised, Thai realised, riverside omitted; nothing wrong or hallucinated
    assert comps["precision"][0] == 1.0 and comps["recall"][0] == pytest.approx(2 / 3)
    assert comps["f1"][0] == pytest.approx(0.8)
    assert all(math.isnan(comps[k][2]) for k in ("precision", "recall", "f1"))
    assert s.score(outs, mrs=mrs)[:2] == comps["coverage"][:2]
    # a wrong value costs the fact and one penalty
    s2 = CoverageScorer(lexicon="none")
    assert s2.score(["A is not family friendly ."], mrs=["name[A], familyFriendly[yes]"]) == [0.0]
    assert s2.slot_error_rate(outs[:2], mrs[:2]) == pytest.approx(1 / 4)
    # a wrong value is stated but not right: precision 1/2, recall 1/2; a value the MR does not hold lowers precision
    # only; an output that states nothing has precision 0 (not undefined), and so f1 0
    c = CoverageScorer(lexicon=mine(PAIRS, min_count=5)).score_components(
        ["A is not kid friendly .", "A is kid friendly and cheap .", "Hello ."],
        mrs=["name[A], familyFriendly[yes]", "name[A], familyFriendly[yes]", "name[A], familyFriendly[yes]"])
    assert (c["precision"][0], c["recall"][0], c["f1"][0]) == (0.5, 0.5, 0.5)
    assert c["hallucinated"][1] == 1.0 and c["recall"][1] == 1.0 and c["precision"][1] == pytest.approx(2 / 3)
    assert (c["precision"][2], c["recall"][2], c["f1"][2]) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="wrong_penalty"):
        CoverageScorer(wrong_penalty=-1)
    assert "lexicon:none" in str(s.signature)


def test_qe_score_rows_carry_verdicts_and_system_ser(tmp_path, capsys):
    from qe.cli import main

    (tmp_path / "mrs.txt").write_text("name[A], food[Thai]\nname[B], food[Thai]\n", encoding="utf-8")
    (tmp_path / "out.txt").write_text("A serves Thai food .\nB is nice .\n", encoding="utf-8")
    out = tmp_path / "s.jsonl"
    assert main(["score", "-m", "coverage", "--opt", "lexicon=none",
                 "-i", str(tmp_path / "out.txt"), "--mrs", str(tmp_path / "mrs.txt"),
                 "-o", str(out), "-q"]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["score"] for r in rows] == [1.0, 0.5]
    assert rows[1]["details"]["verdicts"][1] == {"slot": "food", "value": "Thai", "status": "omitted",
                                                 "engine": "matcher"}
    capsys.readouterr()
    assert main(["score", "-m", "coverage", "--opt", "lexicon=none",
                 "-i", str(tmp_path / "out.txt"), "--mrs", str(tmp_path / "mrs.txt"),
                 "--system-level", "--json", "-q"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert table["systems"][0]["corpus"] == pytest.approx(1 / 4)  # pooled SER: 1 error over 4 facts


# ------------------------------------------------------------------------------------------ against the gold
@needs_data
def test_mined_matcher_beats_rules_on_e2e_dev_gold():
    from experiments.content_e2e import evaluate
    from qe.data.e2e import e2e_slot_gold

    rows = e2e_slot_gold("dev")[:1500]
    rules = evaluate(rows, "rules", folds=2)
    matcher = evaluate(rows, "matcher", folds=2, min_count=10)
    assert matcher["omissions"]["f1"] > rules["omissions"]["f1"]
    assert matcher["additions"]["f1"] > rules["additions"]["f1"] + 0.2
    assert matcher["exact_mr"] > rules["exact_mr"] + 0.1


def test_qe_compare_tests_slot_error_rates(tmp_path, capsys):
    from qe.cli import main

    (tmp_path / "mrs.txt").write_text("name[A], food[Thai], area[riverside]\n" * 6, encoding="utf-8")
    (tmp_path / "base.txt").write_text("A serves Thai food by the riverside .\n" * 6, encoding="utf-8")
    (tmp_path / "sys.txt").write_text("A is nice .\n" * 6, encoding="utf-8")
    assert main(["compare", "-m", "coverage", "--opt", "lexicon=none",
                 "--mrs", str(tmp_path / "mrs.txt"), str(tmp_path / "base.txt"),
                 str(tmp_path / "sys.txt"), "--ser", "--json", "-q"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["statistic"] == "ser" and res["higher_is_better"] is False
    assert [s["score"] for s in res["systems"]] == [0.0, pytest.approx(2 / 3)]
    assert "stat:ser" in res["signature"]


def test_numbers_with_thousands_separators_and_zero_padded_dates():
    mr = '[["U", "staff", "2900"], ["Nord", "releaseDate", "2006-09-06"], ["R", "length", "17068.8 (millimetres)"]]'
    al = Matcher().align(mr, "U has 2,900 staff. Nord was released on September 06, 2006. R is 17,068.8 mm long.")
    assert [v.status for v in al.verdicts] == ["realised"] * 3
    assert al.hallucinated == []


def test_repeated_is_the_same_words_again_not_a_paraphrase():
    m = Matcher(mine(PAIRS, min_count=5))
    mr = "name[Zed], priceRange[cheap]"
    assert m.align(mr, "Zed is cheap . Zed is cheap .").repeated == [{"slot": "priceRange", "value": "cheap",
                                                                      "extra": 1}]
    assert m.align(mr, "Zed is cheap . It costs less than £20 .").repeated == []


def test_scores_then_details_of_the_same_outputs_align_once(monkeypatch):
    s = CoverageScorer(lexicon="none")
    calls = []
    real = s.matcher.align
    monkeypatch.setattr(s.matcher, "align", lambda *a, **k: calls.append(a) or real(*a, **k))
    outs, mrs = ["A serves Thai food ."], ["name[A], food[Thai]"]
    s.score(outs, mrs=mrs)
    assert s.details(outs, mrs=mrs)[0]["counts"]["realised"] == 2
    assert len(calls) == 1
    s.score(["B ."], mrs=["name[B]"])
    assert len(calls) == 2


def test_content_e2e_spread_summarises_seeds_and_refuses_mismatched_engines(tmp_path, capsys):
    from experiments.content_e2e import main

    def run(f_om, f_add, exact):
        prf = lambda f: {"precision": f, "recall": f, "f1": f}  # noqa: E731
        return [{"engine": "matcher", "omissions": prf(0.7), "additions": prf(0.5), "exact_mr": 0.7},
                {"engine": "matcher+aligner", "omissions": prf(f_om), "additions": prf(f_add), "exact_mr": exact}]

    files = []
    for i, (a, b, c) in enumerate([(0.78, 0.55, 0.74), (0.80, 0.57, 0.76), (0.82, float("nan"), 0.78)]):
        files.append(tmp_path / f"s{i}.json")
        files[-1].write_text(json.dumps(run(a, b, c)))  # NaN: written and read as JSON's NaN
    assert main(["--spread", *map(str, files)]) == 0
    out = capsys.readouterr().out
    assert "3 runs" in out
    row = next(line for line in out.splitlines() if line.startswith("| matcher+aligner |"))
    assert "0.800 ± 0.020" in row and "0.760 ± 0.020" in row
    assert "0.560 ± 0.014" in row  # a NaN (no addition at all) is left out, not averaged
    assert next(line for line in out.splitlines() if line.startswith("| matcher |")).count("0.700") == 4
    (tmp_path / "null.json").write_text(json.dumps(run(0.8, None, 0.7)))  # a NaN written as null
    assert main(["--spread", str(files[0]), str(tmp_path / "null.json")]) == 0
    assert "0.550 |" in next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| matcher+aligner |"))
    (tmp_path / "bad.json").write_text(json.dumps(run(0.8, 0.5, 0.7)[:1]))
    with pytest.raises(SystemExit, match="engines"):
        main(["--spread", str(files[0]), str(tmp_path / "bad.json")])


# ----------------------------------------------------------------------------- defects found by review, 2026-11-28
def _hand_lexicon():
    """A small E2E-like lexicon with vague patterns (weights as the E2E dev lexicon has them)."""
    from qe.content.lexicon import LEXICON_FORMAT

    return Lexicon.from_dict({"format": LEXICON_FORMAT, "source": "hand", "settings": {}, "slots": {
        "name": {"kind": "entity", "examples": 10},
        "pricerange": {"kind": "category", "examples": 10,
                       "values": {"cheap": "cheap", "high": "high", "moderate": "moderate",
                                  "less than £ 20": "less than £20", "more than £ 30": "more than £30"},
                       "patterns": {"cheap": {"cheap": 356}, "a price": {"less than £ 20": 40, "more than £ 30": 28, "£ 20 25": 35},
                                    "range and": {"moderate": 53, "high": 40}}},
        "customerrating": {"kind": "category", "examples": 10,
                           "values": {"high": "high", "5 out of 5": "5 out of 5", "3 out of 5": "3 out of 5"},
                           "patterns": {"rating of": {"5 out of 5": 138, "3 out of 5": 152},
                                        "highly rated": {"high": 84, "5 out of 5": 33}}}}})


def test_a_vague_pattern_does_not_outweigh_a_value_stated_outright():
    m = Matcher(_hand_lexicon())
    al = m.align("name[Zed], customer rating[5 out of 5]", "Zed has a customer rating of 3 out of 5 .")
    assert _status(al, "customer rating") == ("wrong", "3 out of 5") and al.hallucinated == []
    al = m.align("name[Zed], priceRange[less than £20]", "Zed has a price range of more than £30 .")
    assert _status(al, "priceRange") == ("wrong", "more than £30") and al.hallucinated == []
    # a leftover pattern that fits the value already read as wrong is not a second, hallucinated value
    al = m.align("name[Zed], priceRange[cheap]", "Zed is in the high price range and near the river .")
    assert _status(al, "priceRange") == ("wrong", "high") and al.hallucinated == []
    # a pattern that mostly says the MR's value still realises it; the other value is then an addition
    al = m.align("name[Zed], customer rating[high]", "Zed is highly rated , 5 out of 5 .")
    assert _status(al, "customer rating")[0] == "realised"
    assert [h["value"] for h in al.hallucinated] == ["5 out of 5"]
    al = m.align("name[Zed], customer rating[5 out of 5]", "Zed has a customer rating of 5 out of 5 .")
    assert _status(al, "customer rating")[0] == "realised" and al.hallucinated == []


def test_near_verbatim_matches_keep_numbers_and_negated_forms_apart():
    from qe.core.surface import find_approx, tok_close, tok_close_strict

    assert tok_close("182", "1820") and not tok_close_strict("182", "1820")  # RatPred's fuzzy rule is unchanged
    assert not tok_close_strict("expensive", "inexpensive") and tok_close_strict("hotel", "hotels")
    assert find_approx("x hotel is inexpensive".split(), ["expensive"], [False] * 4) == (3, 4)
    assert find_approx("x hotel is inexpensive".split(), ["expensive"], [False] * 4, strict=True) == (-1, -1)
    m = Matcher()
    assert _status(m.align("inform(name='x hotel';pricerange=expensive)", "x hotel is inexpensive ."),
                   "pricerange")[0] != "realised"
    assert _status(m.align("inform(type=restaurant;count=182)", "there are 1820 restaurants ."), "count")[0] == "omitted"
    al = m.align("Aarhus | population | 250", "Aarhus has a population of 2500.")
    # another number where the population should be: one wrong value, not also a hallucinated number (issue 50)
    assert [(v.status, v.said) for v in al.verdicts] == [("wrong", "2500")] and al.hallucinated == []


def test_whole_numbers_keep_their_trailing_zeros_in_the_hallucination_check():
    m = Matcher()
    al = m.align("Alan_Bean | mission | Apollo_12", "Alan Bean flew on Apollo 120.")
    # 120 is not 12: the one numeric triple left takes it as its other object (rule 4), not realised
    assert al.counts()["realised"] == 0 and [(v.status, v.said) for v in al.verdicts] == [("wrong", "120")]
    al = m.align("Alan_Bean | mission | Apollo_12; Alan_Bean | birthYear | 1932", "Alan Bean flew on Apollo 120.")
    assert [h["value"] for h in al.hallucinated] == ["120"] and al.counts()["realised"] == 0  # two left: not paired
    assert m.align("Alan_Bean | mission | Apollo_12", "Alan Bean flew on Apollo 12.").hallucinated == []
    assert m.align('Alan_Bean | height | "1.80"', "Alan Bean was 1.8 m tall.").hallucinated == []  # decimals trim


def test_names_are_not_repetitions_without_a_lexicon_and_requests_fall_back_to_slot_words():
    sc = CoverageScorer(lexicon="none")
    mrs = ["name[The Eagle], priceRange[cheap], familyFriendly[yes]"]
    assert sc.score(["The Eagle is cheap. The Eagle is family friendly."], mrs=mrs, progress=False) == [1.0]
    assert sc.score(["The Eagle is cheap. It is cheap and family friendly."], mrs=mrs, progress=False) == [
        pytest.approx(1 - 0.5 / 3)]  # a category value said twice still counts
    lex = _hand_lexicon()  # knows pricerange, but no pattern for the slot's name
    al = Matcher(lex).align("?request(pricerange)", "what price range are you looking for ?")
    assert _status(al, "pricerange")[0] == "realised"
    al = Matcher().align("?request(area)", "what price range are you looking for ?")
    assert _status(al, "area")[0] == "omitted"  # "are" is not "area"


def test_diacritics_are_folded_when_matching_values_and_entities():
    m = Matcher()
    al = m.align("name[Café Rouge], near[Café Brazil]", "Cafe Rouge is near Cafe Brazil.")
    assert al.counts()["realised"] == 2
    al = m.align("Chisinau | leader | Dorin_Chirtoaca", "The leader of Chișinău is Dorin Chirtoacă.")
    assert al.counts()["realised"] == 1


def test_ser_comparison_leaves_undefined_resamples_out(tmp_path, capsys):
    """Items without a checkable fact (dontcare) make some bootstrap resamples' SER undefined: they are left out of
    the CI and the p-value (before, the CLI crashed or called a 0.16 difference significant at p 0.001)."""
    from qe.cli import main

    mrs = ["name[A], food[Thai], area[riverside]", "name[B], food[French]", "name[C], area[city centre]",
           "name[D], food[Thai]", "inform(food=dontcare)"]
    base = ["A serves Thai food by the riverside .", "B serves French food .", "C is in the city centre .",
            "D is a place .", "hello"]
    other = list(base)
    other[2] = "C is a pub ."
    for name, lines in (("mrs", mrs), ("base", base), ("other", other)):
        (tmp_path / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = ["compare", "-m", "coverage", "--opt", "lexicon=none",
            "--mrs", str(tmp_path / "mrs.txt"), str(tmp_path / "base.txt"),
            str(tmp_path / "other.txt"), "--ser", "-q"]
    for seed in ("12345", "1", "2"):
        assert main([*args, "--json", "--seed", seed]) == 0
        res = json.loads(capsys.readouterr().out)
        sys_row = res["systems"][1]
        assert sys_row["mean"] is not None and sys_row["ci_halfwidth"] is not None
        assert sys_row["p_value"] > 0.05  # one changed item of five is no significant difference
    assert main(args) == 0 and "nan" not in capsys.readouterr().out
    # only items without a fact: no rate to compare, one line naming the MR file, exit 2 (as without --ser; issue 49)
    (tmp_path / "m0.txt").write_text("inform(food=dontcare)\ninform(area=none)\n", encoding="utf-8")
    (tmp_path / "o0.txt").write_text("hi\nhello\n", encoding="utf-8")
    (tmp_path / "o1.txt").write_text("hey\nyo\n", encoding="utf-8")
    assert main(["compare", "-m", "coverage", "--opt", "lexicon=none",
                 "--mrs", str(tmp_path / "m0.txt"), str(tmp_path / "o0.txt"),
                 str(tmp_path / "o1.txt"), "--ser", "-q"]) == 2
    assert "no output has a checkable fact" in capsys.readouterr().err


def test_multi_metric_system_table_says_the_coverage_column_is_the_slot_error_rate(tmp_path, capsys):
    from qe.cli import main

    (tmp_path / "mrs.txt").write_text("name[A], food[Thai]\nname[B], food[French]\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text("A serves Thai food .\nB serves French food .\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("A is a pub .\nB is a pub .\n", encoding="utf-8")
    args = ["score", "-m", "coverage", "-m", "length", "-i", str(tmp_path / "a.txt"), "-i", str(tmp_path / "b.txt"),
            "--mrs", str(tmp_path / "mrs.txt"), "--system-level", "-q"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "coverage: coverage, corpus = the slot error rate" in out and "lower is better" in out
    assert main([*args, "--json"]) == 0
    meta = {m["metric"]: m for m in json.loads(capsys.readouterr().out)["metrics"]}
    assert meta["coverage"]["corpus_higher_is_better"] is False and meta["length"]["corpus_higher_is_better"] is True


def test_coverage_refuses_mismatched_or_string_inputs_and_unknown_lexicon_names():
    sc = CoverageScorer(lexicon="none")
    with pytest.raises(ValueError, match="2 outputs but 1 MRs"):
        sc.details(["a", "b"], mrs=["name[A]"])
    with pytest.raises(ValueError, match="2 outputs but 1 MRs"):
        sc.slot_error_rate(["a", "b"], ["name[A]"])
    with pytest.raises(TypeError, match="lists of strings"):
        sc.details("A is here", mrs="name[A]")
    with pytest.raises(ValueError, match="lexicon='e3e': not a known lexicon nor a file; choose none, e2e, sf"):
        CoverageScorer(lexicon="e3e")


def test_on_off_options_read_words_not_truthiness():
    from qe.core.config import as_flag

    assert [as_flag(v, "x") for v in (True, "yes", "On", "1", 1)] == [True] * 5
    assert [as_flag(v, "x") for v in (False, "no", "OFF", "false", 0)] == [False] * 5
    with pytest.raises(ValueError, match="x='maybe': give true or false"):
        as_flag("maybe", "x")


def test_mr_format_fixes_detection_and_aligner_options_need_an_aligner():
    mr = "name[Bar | Grill | Pub], food[Thai]"  # a '|' in an E2E value reads as a triple when detected
    assert CoverageScorer(mr_format="e2e").score(["Bar | Grill | Pub serves Thai food ."], mrs=[mr],
                                                 progress=False) == [1.0]
    assert "mr:e2e" in CoverageScorer(mr_format="e2e").signature
    with pytest.raises(ValueError, match="mr_format='xml'"):
        CoverageScorer(mr_format="xml")
    with pytest.raises(ValueError, match="aligner_threshold without aligner="):
        CoverageScorer(aligner_threshold=0.5)


def test_a_slot_without_value_and_an_addition_in_one_output():
    """A value-less slot (request(area)) read by its name's words beside a hallucinated value: both reported, the
    addition with the output's words (a regression: the two once shared a variable name and the row crashed)."""
    m = Matcher(mine(PAIRS, min_count=5))
    d = m.align("inform(name=Zed,priceRange=cheap)&request(area)", "Zed is cheap and kid friendly . Which area ?")
    assert [(v.slot, v.status) for v in d.verdicts] == [("name", "realised"), ("priceRange", "realised"),
                                                        ("area", "realised")]
    assert [(h["slot"], h["value"]) for h in d.hallucinated] == [("familyFriendly", "yes")]
    assert all(isinstance(h["said"], str) and h["said"] for h in d.hallucinated)


def test_the_miner_learns_a_values_other_wording_but_not_a_word_every_value_uses():
    """alias_lift: "low" is written by a quarter of the texts annotated `1 out of 5` and by none of the texts of the
    values other than `low` and `1 out of 5`, so it realises `1 out of 5` too, though most texts holding it are `low`'s;
    `5 out of 5` texts never write it. With alias_lift=0, as before: `low` only."""
    from qe.content import mine

    names = [f"Venue{i}" for i in range(60)]
    pairs = [(f"name[{n}], customer rating[low]", f"{n} has a low rating.") for n in names]
    pairs += [(f"name[{n}], customer rating[1 out of 5]",
               f"{n} has a low rating." if i % 4 == 0 else f"{n} is rated 1 out of 5.") for i, n in enumerate(names[:40])]
    pairs += [(f"name[{n}], customer rating[high]", f"{n} has a high rating.") for n in names]
    pairs += [(f"name[{n}], customer rating[5 out of 5]", f"{n} is rated 5 out of 5.") for n in names]
    pairs += [(f"name[{n}], food[Italian]", f"{n} serves Italian food.") for n in names]  # texts without a rating
    plain = mine(pairs, min_count=5, alias_lift=0).get("customer rating").patterns["low"]
    assert set(plain) == {"low"}
    compat = mine(pairs, min_count=5).get("customer rating").patterns["low"]
    assert set(compat) == {"low", "1 out of 5"} and compat["1 out of 5"] == 10
    m = Matcher(mine(pairs, min_count=5))
    mr = "name[Venue7], customer rating[1 out of 5]"
    al = m.align(mr, "Venue7 has a low rating.")
    assert [v.status for v in al.verdicts] == ["realised", "realised"] and al.hallucinated == []
    al = m.align("name[Venue7], customer rating[5 out of 5]", "Venue7 has a low rating.")
    assert [v.status for v in al.verdicts] == ["realised", "wrong"]  # not an alias of 5 out of 5


def test_a_pattern_of_the_slots_name_and_function_words_says_no_value():
    """"food in the", written by the Chinese texts only, co-occurs with Chinese by accident of the data: it holds no
    word of any value, so it is no pattern (it would read "English food in the day" as a second, Chinese food)."""
    from qe.content import mine

    names = [f"Venue{i}" for i in range(40)]
    later = ("morning", "evening", "park", "town", "summer")  # each too rare to be a pattern itself
    pairs = [(f"name[{n}], food[Chinese]", f"{n} serves Chinese food in the {later[i % 5]}.")
             for i, n in enumerate(names[:20])]
    pairs += [(f"name[{n}], food[English]", f"{n} serves English food.") for n in names[20:]]
    pairs += [(f"name[{n}], food[Italian]", f"{n} serves Italian food.") for n in names[:20]]
    pairs += [(f"name[{n}], area[riverside]", f"{n} is by the riverside.") for n in names]
    food = mine(pairs, min_count=5).get("food")
    assert not [g for g in food.patterns if g.startswith("food in")] and "chinese" in food.patterns
    al = Matcher(mine(pairs, min_count=5)).align("name[Venue3], food[English]", "Venue3 serves English food in the day.")
    assert [v.status for v in al.verdicts] == ["realised", "realised"]
    assert not [h for h in al.hallucinated if h["slot"] == "food"]


def _scale_pairs(rate_5: int = 12, noise: bool = False):
    """Texts for the scale tests: `high` and `5 out of 5` are one rating written two ways; one `5 out of 5` text in
    ``rate_5`` says "a high rating" (too few for a pattern alias: under 10 % of its texts). ``noise``: the texts of
    `low` and `average` say "a high rating" as often, so reading `high` says nothing about `5 out of 5`."""
    names = [f"Venue{i}" for i in range(72)]
    pairs = [(f"name[{n}], customer rating[high]", f"{n} has a high rating.") for n in names]
    pairs += [(f"name[{n}], customer rating[5 out of 5]",
               f"{n} has a high rating." if i % rate_5 == 0 else f"{n} is rated 5 out of 5.")
              for i, n in enumerate(names)]
    for value in ("low", "average"):
        pairs += [(f"name[{n}], customer rating[{value}]",
                   f"{n} has a high rating." if noise and i % rate_5 == 0 else f"{n} has a {value} rating.")
                  for i, n in enumerate(names)]
    pairs += [(f"name[{n}], food[Italian]", f"{n} serves Italian food.") for n in names]  # texts without a rating
    return pairs


def test_the_miner_finds_one_scale_written_two_ways():
    """scale_aliases: the mined lexicon, matched against its own texts, reads `high` for `5 out of 5` in 6 of 72 of
    that value's texts and never for the other values: the two are one value written two ways, both ways, and a usual
    form of the value ("5 stars") follows. Off (as before 2026-12-06): "a high rating" for 5 out of 5 is wrong and
    says `high`."""
    from qe.content import mine

    pairs = _scale_pairs()
    before = Matcher(mine(pairs, min_count=5, scale_aliases=False))
    al = before.align("name[Venue7], customer rating[5 out of 5]", "Venue7 has a high rating.")
    assert [v.status for v in al.verdicts] == ["realised", "wrong"] and al.verdicts[1].said_value == "high"
    lex = mine(pairs, min_count=5)
    assert lex.settings["scale_pairs"] == {"customerrating": [["5 out of 5", "high"]]}
    from qe.content.mining import summary  # qe content mine says what it took as one value
    assert "  one value written two ways (customer rating): 5 out of 5 = high" in summary(lex)
    m = Matcher(lex)
    for mr, text in [("name[Venue7], customer rating[5 out of 5]", "Venue7 has a high rating."),
                     ("name[Venue7], customer rating[high]", "Venue7 is rated 5 out of 5."),
                     ("name[Venue7], customer rating[high]", "Venue7 is rated 5 stars.")]:
        al = m.align(mr, text)
        assert [v.status for v in al.verdicts] == ["realised", "realised"] and al.hallucinated == [], (mr, text)
    al = m.align("name[Venue7], customer rating[low]", "Venue7 has a high rating.")
    assert [v.status for v in al.verdicts] == ["realised", "wrong"] and al.verdicts[1].said_value == "high"
    al = m.align("name[Venue7]", "Venue7 has a high rating.")  # an addition still says the value its words name
    assert [(h["slot"], h["value"]) for h in al.hallucinated] == [("customer rating", "high")]


def test_a_reading_every_value_shares_joins_no_scale():
    """The texts of `low` and `average` say "a high rating" as often as those of `5 out of 5`: the reading is noise
    of the data, not a second wording, and no pair is joined."""
    from qe.content import mine

    lex = mine(_scale_pairs(noise=True), min_count=5)
    assert "scale_pairs" not in lex.settings
    al = Matcher(lex).align("name[Venue7], customer rating[5 out of 5]", "Venue7 has a high rating.")
    assert [v.status for v in al.verdicts] == ["realised", "wrong"]


def test_a_form_of_the_slots_name_makes_the_ngram_that_slots():
    """"low priced" holds the rating's value word "low", and "priced" is a form of priceRange's name word "price":
    the n-gram is priceRange's (before, the rating owned it for its value word, and "a low priced pub" read a low
    rating and omitted the price)."""
    from qe.content import mine

    names = [f"Venue{i}" for i in range(40)]
    pairs = [(f"name[{n}], priceRange[cheap], customer rating[{r}]", f"{n} is a low priced pub. It has a {r} rating.")
             for n in names[:20] for r in ("high", "average")]
    pairs += [(f"name[{n}], priceRange[high]", f"{n} is a high priced pub.") for n in names]
    pairs += [(f"name[{n}], priceRange[moderate]", f"{n} is a moderately priced pub.") for n in names]
    pairs += [(f"name[{n}], customer rating[low]", f"{n} has a low rating.") for n in names]
    pairs += [(f"name[{n}], customer rating[high]", f"{n} has a high rating.") for n in names]
    pairs += [(f"name[{n}], food[Italian]", f"{n} serves Italian food.") for n in names]
    lex = mine(pairs, min_count=5)
    assert set(lex.get("priceRange").patterns.get("low priced", {})) == {"cheap"}
    al = Matcher(lex).align("name[Venue3], priceRange[cheap]", "Venue3 is a low priced pub.")
    assert [v.status for v in al.verdicts] == ["realised", "realised"] and al.hallucinated == []


def test_a_form_of_a_common_values_word_evidences_it():
    """`riverside` is most texts' area, so an n-gram is its pattern only when it holds its words; "river" is a form
    of "riverside" and counts ("by the river"; the word alone is no pattern: texts without an area use it too)."""
    from qe.content import mine

    names = [f"Venue{i}" for i in range(40)]
    pairs = [(f"name[{n}], area[riverside]", f"{n} is by the river." if i % 2 else f"{n} is in the riverside area.")
             for i, n in enumerate(names)]
    pairs += [(f"name[{n}], area[city centre]", f"{n} is in the city centre.") for n in names[:20]]
    pairs += [(f"name[{n}], food[Italian]", f"{n} serves Italian food with a river view.") for n in names]
    lex = mine(pairs, min_count=5)
    assert "river" not in lex.get("area").patterns
    river = {g: set(c) for g, c in lex.get("area").patterns.items() if "river" in g.split()}
    assert river and all(c == {"riverside"} for c in river.values()), river
    al = Matcher(lex).align("name[Venue3], area[riverside]", "Venue3 is by the river.")
    assert [v.status for v in al.verdicts] == ["realised", "realised"]


def _scale_lexicon():
    """Two slots that share the scale words "high" / "average", named as the E2E data name them, and a binary slot
    with one-word triggers."""
    from qe.content.lexicon import LEXICON_FORMAT

    return Lexicon.from_dict({"format": LEXICON_FORMAT, "source": "hand", "settings": {}, "slots": {
        "name": {"kind": "entity", "examples": 10},
        "pricerange": {"kind": "category", "examples": 10, "name": "priceRange",
                       "values": {"high": "high", "moderate": "moderate", "cheap": "cheap"},
                       "patterns": {"high": {"high": 50}, "average price": {"moderate": 12}}},
        "customerrating": {"kind": "category", "examples": 10, "name": "customer rating",
                           "values": {"high": "high", "average": "average", "low": "low"},
                           "patterns": {"high": {"high": 40}, "average": {"average": 60}}},
        "familyfriendly": {"kind": "binary", "examples": 10, "name": "familyFriendly",
                           "values": {"yes": "yes", "no": "no"}, "triggers": ["kid", "child", "friendly"]}}})


def test_a_scale_word_belongs_to_the_slot_whose_name_it_qualifies():
    m = Matcher(_scale_lexicon())
    # "high priced": the price's, not the rating's - with both slots in the MR and with the rating's alone
    al = m.align("name[Zed], priceRange[high], customer rating[high]", "Zed is high priced .")
    assert _status(al, "priceRange")[0] == "realised" and _status(al, "customer rating") == ("omitted", None)
    al = m.align("name[Zed], customer rating[high]", "Zed is a highly priced place .")
    assert _status(al, "customer rating") == ("omitted", None)
    assert [(h["slot"], h["value"]) for h in al.hallucinated] == [("priceRange", "high")]
    # before it too, in its clause: "the price range is high"
    al = m.align("name[Zed], priceRange[cheap], customer rating[high]", "At Zed the price range is high .")
    assert _status(al, "priceRange") == ("wrong", "high") and _status(al, "customer rating") == ("omitted", None)
    # its own slot's word keeps it; a word of no slot changes nothing
    al = m.align("name[Zed], customer rating[high]", "Zed has a high customer rating .")
    assert _status(al, "customer rating")[0] == "realised"
    al = m.align("name[Zed], customer rating[high]", "Zed is high on every list .")
    assert _status(al, "customer rating")[0] == "realised"
    # a pattern with a form of the slot's name word: "average priced" for "average price"; the rating's "average"
    # is not read there
    al = m.align("name[Zed], priceRange[moderate], customer rating[average]", "Zed is average priced .")
    assert _status(al, "priceRange") == ("realised", "average priced")
    assert _status(al, "customer rating") == ("omitted", None)


def test_binary_triggers_in_other_forms_and_a_negation_after_them():
    m = Matcher(_scale_lexicon())
    assert _status(m.align("name[Zed], familyFriendly[yes]", "Zed welcomes kids ."), "familyFriendly") == \
        ("realised", "kids")
    assert _status(m.align("name[Zed], familyFriendly[yes]", "Zed : children welcome ."), "familyFriendly")[0] == \
        "realised"
    al = m.align("name[Zed], familyFriendly[yes]", "At Zed , children are not allowed .")
    assert _status(al, "familyFriendly") == ("wrong", "no") and _words(al, "familyFriendly") == "children are not"
    al = m.align("name[Zed], familyFriendly[no]", "Zed : kids not welcome .")
    assert _status(al, "familyFriendly")[0] == "realised"
    # a negation after other words is not the trigger's ("kid friendly place , not far from the river")
    al = m.align("name[Zed], familyFriendly[yes]", "Zed is a kid friendly place not far from the river .")
    assert _status(al, "familyFriendly")[0] == "realised"
    # a negating prefix is no form of the word
    al = m.align("name[Zed], familyFriendly[yes]", "Zed is unfriendly .")
    assert _status(al, "familyFriendly") == ("omitted", None)


def test_content_e2e_draws_the_facts_an_engine_decides_otherwise_than_the_gold():
    from experiments.content_e2e import disagreements, evaluate

    rows = [{"line": 2, "orig_mr": "name[Zed], priceRange[cheap], familyFriendly[yes]",
             "mr": "name[Zed], priceRange[cheap]", "ref": "Zed is cheap and family friendly ."},
            {"line": 3, "orig_mr": "name[Zed], priceRange[high]", "mr": "name[Zed], priceRange[high], area[riverside]",
             "ref": "Zed is expensive ."}]
    res = evaluate(rows, "rules", folds=1)
    out = disagreements(rows, res, 5)
    # line 2: the gold says the family fact is omitted, the rules read it (a missed omission); line 3: the
    # rules do not read "expensive" as high (a false omission) and miss the area the gold adds
    assert "3 facts decided otherwise than the gold (1 add_fn, 1 omit_fn, 1 omit_fp)" in out
    assert "line 2 omit_fn familyfriendly=yes" in out and "line 3 omit_fp pricerange=high" in out
    assert "line 3 add_fn area=riverside" in out
    assert disagreements(rows, res, 1).count("] line ") == 1  # k of them drawn
