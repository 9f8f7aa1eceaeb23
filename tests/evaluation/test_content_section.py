"""The "Content errors" section of `qe evaluate` (issue 35, item 4): per system, the pooled slot error rate, the
attributes most often omitted / hallucinated and the first example outputs, from the records' MRs; records without
an MR, or with an MR that does not parse, are counted and never stop the report; no MR at all -> no section."""
from __future__ import annotations

import csv
import json

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from qe.content.lexicon import LEXICON_FORMAT
from qe.data import records_from_dicts
from qe.evaluation.runner import evaluate_records, run_evaluation
from qe.evaluation.scoring import EvaluationConfigError
from tests.conftest import REPO

FAST_STATS = {"bootstrap": {"n": 20}, "permutation": {"n": 20}, "confounds": {"enabled": False}}

MR1 = "name[The Eagle], eatType[coffee shop], food[French], priceRange[cheap], familyFriendly[yes]"  # 5 facts
MR2 = "name[The Mill], eatType[pub], priceRange[cheap]"  # 3
MR3 = "name[Alimentum], food[Italian], familyFriendly[no]"  # 3
MR4 = "name[Zizzi], eatType[pub], priceRange[high], familyFriendly[yes]"  # 4
#: system -> (MR, output, errors by hand under the rules-only matcher)
OUTPUTS = {
    "good": [(MR1, "The Eagle is a cheap French coffee shop that is family friendly.", 0),
             (MR2, "The Mill is a cheap pub.", 0),
             (MR3, "Alimentum serves Italian food.", 1),  # familyFriendly omitted
             (MR4, "Zizzi is a family friendly pub with high prices.", 0)],
    "bad": [(MR1, "The Eagle is a coffee shop.", 3),  # food, priceRange, familyFriendly omitted
            (MR2, "The Mill is a pub in the city centre.", 1),  # priceRange omitted (+ area with a lexicon)
            (MR3, "Alimentum is a family friendly place.", 2),  # food omitted, familyFriendly wrong (yes)
            (MR4, "Zizzi is a pub by the riverside.", 2)],  # priceRange, familyFriendly omitted (+ area)
}
FACTS = 5 + 3 + 3 + 4


def _rows(*, extra=True, with_mr=True):
    rows = []
    for system, outs in OUTPUTS.items():
        for i, (mr, out, _) in enumerate(outs):
            r = {"id": f"{system}{i}", "system": system, "output": out, "ratings": {"quality": 6.0 - len(out) % 5}}
            if with_mr:
                r["mr"] = mr
            rows.append(r)
    if extra:  # one record without an MR, one whose MR parses in no format
        rows.append({"id": "nomr", "system": "good", "output": "A place.", "ratings": {"quality": 3.0}})
        rows.append({"id": "broken", "system": "bad", "output": "A place.", "mr": "name[Broken",
                     "ratings": {"quality": 2.0}})
    return rows


def _run(tmp_path, rows, name="out", **kw):
    return evaluate_records(records_from_dicts(rows), tmp_path / name, scorers={"length": "length"},
                            stats=FAST_STATS, plots=False, progress=False, **kw)


def _section(report: str) -> str:
    assert report.count("## Content errors") == 1, report
    return report.split("## Content errors", 1)[1].split("\n## ", 1)[0]


def test_section_numbers_top_attributes_and_examples(tmp_path):
    res = _run(tmp_path, _rows())
    table = {r["system"]: r for r in csv.DictReader(open(tmp_path / "out" / "content_errors.csv", encoding="utf-8"))}
    assert sorted(table) == ["bad", "good"]
    for system, outs in OUTPUTS.items():
        errors = sum(e for *_, e in outs)
        row = table[system]
        assert int(row["outputs"]) == 4 and int(row["facts"]) == FACTS
        assert int(row["errors"]) == errors
        assert float(row["ser"]) == pytest.approx(errors / FACTS)  # pooled: errors / facts
    assert float(table["good"]["ser"]) == pytest.approx(1 / 15) and float(table["bad"]["ser"]) == pytest.approx(8 / 15)
    bad = table["bad"]
    assert (int(bad["omitted"]), int(bad["wrong"]), int(bad["hallucinated"]), int(bad["repeated"])) == (7, 1, 0, 0)
    # priceRange omitted by bad0, bad1, bad3; then the ties (2 each) by name
    assert bad["top_omitted"] == "priceRange (3); familyFriendly (2); food (2)"
    assert table["good"]["top_omitted"] == "familyFriendly (1)"
    assert bad["top_hallucinated"] == "" and int(bad["unparsed_mrs"]) == 1

    report = res["report"].read_text(encoding="utf-8")
    sec = _section(report)
    assert "| bad | 4 | 15 | 0.533 | 7 | 1 | 0 | 0 | priceRange (3); familyFriendly (2); food (2) | — |" in sec
    assert "| good | 4 | 15 | 0.067 | 1 | 0 | 0 | 0 | familyFriendly (1) | — |" in sec
    # left out, counted, and the unreadable MR named - the report is written all the same
    assert "1 record without an MR" in sec and "1 whose MR does not parse (first: record 'broken'" in sec
    assert "rules only" in sec
    # examples: the first three outputs of each system in record order that omit something, with the MR
    examples = sec.split("**bad, omitted**", 1)[1].split("**", 1)[0]
    assert [line.split(" | ")[0].lstrip("| ") for line in examples.strip().splitlines()[2:]] == ["bad0", "bad1", "bad2"]
    assert "| bad0 | food, priceRange, familyFriendly | The Eagle is a coffee shop. | " + MR1 + " |" in examples
    assert "**good, omitted**" in sec and "| good2 | familyFriendly | Alimentum serves Italian food." in sec
    assert "hallucinated**" not in sec  # the rules alone find no value outside the MR here


def test_lexicon_from_the_config_finds_hallucinations_and_examples_are_cut(tmp_path):
    lex = tmp_path / "lex.json"
    lex.write_text(json.dumps({"format": LEXICON_FORMAT, "source": "tiny", "slots": {
        "area": {"kind": "category", "values": {"riverside": "riverside", "city centre": "city centre"}}}}))
    rows = _rows(extra=False)
    rows[4]["output"] += " " + "It is a very nice place to visit, really. " * 8  # bad0: long output, cut
    data = tmp_path / "rated.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
            cfg = compose("evaluate", overrides=[
                f"output_dir={tmp_path / 'run'}", "dataset=file", f"dataset.name={data}", "progress=false",
                "plots.enabled=false", "stats.bootstrap.n=20", "stats.permutation.n=20", "stats.methods=[pearson]",
                f"content.lexicon={lex}"])
        res = run_evaluation(cfg)
    finally:
        GlobalHydra.instance().clear()
    bad = res["content"].table.set_index("system").loc["bad"]
    assert (bad.hallucinated, bad.errors, bad.top_hallucinated) == (2, 10, "area (2)")
    assert bad.ser == pytest.approx(10 / 15)
    sec = _section(res["report"].read_text(encoding="utf-8"))
    assert f"lexicon `{lex}`" in sec
    halluc = sec.split("**bad, hallucinated**", 1)[1]
    assert "| bad1 | area: city centre | The Mill is a pub in the city centre." in halluc
    assert "| bad3 | area: riverside |" in halluc
    cut = next(line for line in sec.splitlines() if line.startswith("| bad0 |"))
    out_cell = cut.split(" | ")[2]
    assert len(out_cell) == 160 and out_cell.endswith("…")


def test_no_mr_no_section_and_bad_lexicon_is_a_config_error(tmp_path):
    res = _run(tmp_path, _rows(extra=False, with_mr=False))
    assert "Content errors" not in res["report"].read_text(encoding="utf-8")
    assert not (tmp_path / "out" / "content_errors.csv").exists() and res["content"] is None
    # disabled: no section although the records have MRs
    res = _run(tmp_path, _rows(extra=False), name="off", content={"enabled": False})
    assert "Content errors" not in res["report"].read_text(encoding="utf-8")
    with pytest.raises(EvaluationConfigError, match=r"content\.lexicon=.*no_such\.json"):
        _run(tmp_path, _rows(extra=False), name="bad", content={"lexicon": str(tmp_path / "no_such.json")})
    with pytest.raises(EvaluationConfigError, match=r"content\.lexikon: unknown key"):
        _run(tmp_path, _rows(extra=False), name="bad2", content={"lexikon": "e2e"})


def test_triples_with_triple_words_label_numbers_and_words_apart(tmp_path):
    """RDF triples: a hallucinated number is counted under "(number)", a stretch of words no triple explains (a
    lexicon with triple words, qe.content.lexicon.mine_triples) under "(words)"."""
    from qe.content.lexicon import mine_triples
    from qe.data.webnlg import triples_mr

    mr = triples_mr([("Alan_Bean", "birthPlace", "Wheeler,_Texas")])
    lex = mine_triples([(mr, "Alan Bean was born in Wheeler, Texas."),
                        (triples_mr([("Elliot_See", "birthPlace", "Dallas")]), "Elliot See was born in Dallas.")])
    path = tmp_path / "words.json"
    lex.save(path)
    rows = [{"id": "a", "system": "s", "output": "Alan Bean was born in Wheeler, Texas.", "mr": mr,
             "ratings": {"quality": 5.0}},
            {"id": "b", "system": "s", "mr": mr, "ratings": {"quality": 2.0},
             "output": "Alan Bean was born in Wheeler, Texas, and walked on the Moon in 1969."},
            {"id": "c", "system": "s", "output": "Alan Bean was born in Wheeler, Texas in 1932.", "mr": mr,
             "ratings": {"quality": 4.0}}]
    res = _run(tmp_path, rows, content={"enabled": True, "lexicon": str(path)})
    row = res["content"].table.set_index("system").loc["s"]
    assert (row.hallucinated, row.top_hallucinated) == (3, "(number) (2); (words) (1)")
    sec = _section(res["report"].read_text(encoding="utf-8"))
    assert "| b | (number): 1969, (words): walked on the moon |" in sec
