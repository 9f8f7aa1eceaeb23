"""MR formats for RatPred (issue 15, point 1): dialogue acts, E2E attribute MRs and JSON parse to one internal
representation; auto-detection and the mr_format override; errors that name where, the formats tried and the
offending text; E2E delexicalisation and synthetic errors; the real E2E dev MRs; `qe score` on an E2E record file."""
import json
from pathlib import Path

import numpy as np
import pytest

import qe
from conftest import shared_data_dir
from qe.errors import RecordError
from qe.ratpred.mr import delexicalise, delexicalise_text, linearise, parse, relexicalise, value_variants
from qe.core.mr import detect, parse_acts
from qe.ratpred.synth import Dictionary, apply_error, distort

E2E_MR = "name[The Golden Fork], eatType[coffee shop], customer rating[5 out of 5], priceRange[£20-25], near[Café Rouge]"
DA_MR = "inform(name='The Golden Fork',eat_type='coffee shop',customer_rating='5 out of 5',price_range='£20-25'," \
        "near='Café Rouge')"
JSON_OBJ = json.dumps({"name": "The Golden Fork", "eatType": "coffee shop", "customer rating": "5 out of 5",
                       "priceRange": "£20-25", "near": "Café Rouge"}, ensure_ascii=False)
JSON_PAIRS = json.dumps([["name", "The Golden Fork"], ["eat_type", "coffee shop"], ["Customer_Rating", "5 out of 5"],
                         ["price range", "£20-25"], ["near", "Café Rouge"]], ensure_ascii=False)
INTERNAL = [("inform", [("name", "the golden fork"), ("eattype", "coffee shop"), ("customerrating", "5 out of 5"),
                        ("pricerange", "£20-25"), ("near", "café rouge")])]


# --------------------------------------------------------------------------------------------- parsing
@pytest.mark.parametrize("mr,fmt", [(E2E_MR, "e2e"), (DA_MR, "da"), (JSON_OBJ, "json"), (JSON_PAIRS, "json")])
def test_every_format_parses_to_the_same_internal_representation(mr, fmt):
    assert detect(mr) == fmt
    assert parse(mr) == INTERNAL
    assert parse(mr, mr_format=fmt) == INTERNAL
    # so linearisation and delexicalisation agree too
    assert linearise(mr) == linearise(E2E_MR)
    assert linearise(mr, delex=False) == linearise(E2E_MR, delex=False)
    assert linearise(E2E_MR)[:6] == ["inform", "name", "X-name", "inform", "eattype", "X-eattype"]


def test_several_dialogue_acts_and_json_details():
    acts = parse_acts("inform(name='x y';food=thai)&confirm(area=centre) | request(price)")
    assert acts == [("inform", [("name", "x y"), ("food", "thai")]), ("confirm", [("area", "centre")]),
                    ("request", [("price", None)])]
    assert linearise("inform(name=x)&reqmore()") == ["inform", "name", "X-name", "reqmore", "<null>", "<null>"]
    # several acts delexicalise against one output, values in MR order across acts
    d = delexicalise("inform(name='thai garden')&confirm(near='x')", "thai garden is near x .")
    assert d.out_tokens == ["X-name", "is", "near", "X-near", "."]
    assert relexicalise(d.out_tokens, d.values) == "thai garden is near x .".split()
    # JSON: a list value repeats the slot, null is a slot without value, booleans are yes / no, "act" names the act
    assert parse('{"act": "request", "area": null}') == [("request", [("area", None)])]
    assert parse('{"near": ["A", "B"], "familyFriendly": true, "count": 3}') == \
        [("inform", [("near", "a"), ("near", "b"), ("familyfriendly", "yes"), ("count", "3")])]
    # one act is still parsed exactly as before (a value may hold parentheses)
    assert parse("inform(name='la (new) ciccia',food=thai)") == [("inform", [("name", "la (new) ciccia"),
                                                                             ("food", "thai")])]


def test_override_forces_one_format():
    with pytest.raises(RecordError, match=r"mr_format=da.*name\[Blue Spice\]"):
        parse("name[Blue Spice], area[riverside]", where="rec-1", mr_format="da")
    with pytest.raises(RecordError, match=r"mr_format=e2e"):
        parse(DA_MR, mr_format="e2e")
    with pytest.raises(ValueError, match="mr_format='xml'"):
        parse(E2E_MR, mr_format="xml")


@pytest.mark.parametrize("mr,offending", [
    ("name[Blue Spice], eatType coffee shop, area[riverside]", "eatType coffee shop"),  # e2e: missing brackets
    ("name[Blue Spice], area[riverside", "area[riverside"),  # e2e: unclosed bracket
    ("inform(name='x' food=thai", "food=thai"),  # da: missing ')'
    ('{"name": "Blue Spice", "area": }', '"area": }'),  # json: syntax
    ('[["name", "Blue Spice"], ["area", "x", "y"]]', '["area", "x", "y"]'),  # json: not a pair
    ("broken", "broken"),
])
def test_errors_name_where_the_formats_tried_and_the_offending_text(mr, offending):
    with pytest.raises(RecordError) as ei:
        parse(mr, where="records.jsonl:7 (id='r7')")
    msg = str(ei.value)
    assert msg.startswith("records.jsonl:7 (id='r7'): cannot parse MR")
    assert "tried da, e2e, json" in msg or "tried e2e, da, json" in msg or "tried json, da, e2e" in msg
    assert offending in msg
    with pytest.raises(RecordError, match="rec-2.*missing or empty"):
        parse("  ", where="rec-2")


# ------------------------------------------------------------------------------------ delexicalisation
def test_e2e_delexicalisation_multiword_numeric_and_price_values():
    mr = "name[The Golden Fork], priceRange[£20-25], customer rating[5 out of 5], near[Café Rouge]"
    out = "The Golden Fork, near Café Rouge, has meals for £20-25 and is rated 5 out of 5 by its customers."
    d = delexicalise(mr, out)
    assert d.mr_tokens == ["inform", "name", "X-name", "inform", "pricerange", "X-pricerange",
                           "inform", "customerrating", "X-customerrating", "inform", "near", "X-near"]
    assert d.out_tokens == ["X-name", ",", "near", "X-near", ",", "has", "meals", "for", "X-pricerange", "and",
                            "is", "rated", "X-customerrating", "by", "its", "customers", "."]
    assert relexicalise(d.out_tokens, d.values) == delexicalise(mr, out, delex=False).out_tokens
    # usual surface variants of prices and ratings are found too, and relexicalise to what the output said
    out2 = "The Golden Fork is a five-star place near Café Rouge costing 20 to 25 pounds."
    d2 = delexicalise(mr, out2)
    assert d2.out_tokens.count("X-pricerange") == 1 and d2.out_tokens.count("X-customerrating") == 1
    assert relexicalise(d2.out_tokens, d2.values) == delexicalise(mr, out2, delex=False).out_tokens
    assert ["five", "-", "star"] in value_variants("5 out of 5") and value_variants("thai") == []
    # familyFriendly yes/no stays a value; the text-level mode works on E2E MRs as well
    assert linearise("name[X], familyFriendly[yes]")[-3:] == ["inform", "familyfriendly", "yes"]
    assert delexicalise_text("The Golden Fork costs £20-25.", mr) == "x-name costs x-pricerange."


def test_synthetic_errors_on_e2e_mrs_give_valid_instances():
    from qe.ratpred.data import Instance, build_training_set
    from qe.data.record import Record

    recs = [Record(id=f"e{i}", output=f"The Golden Fork near Café Rouge costs £20-25 , place {i} .", system="s",
                   dataset="E2E", mr=E2E_MR, refs=["The Golden Fork is a coffee shop near Café Rouge ."],
                   ratings={"quality": 5.0}) for i in range(6)]
    orig, extra, _ = build_training_set(recs, [], ("train_outputs", "train_refs"), max_errors=2, seed=1)
    assert orig and extra and all(isinstance(i, Instance) for i in extra)
    for inst in extra:
        d = delexicalise(inst.mr, inst.output)  # every synthetic instance parses and delexicalises again
        assert d.mr_tokens == linearise(E2E_MR) and d.out_tokens
        assert 1.0 <= inst.rating <= 6.0 and inst.n_errors <= 2
    assert any(i.n_errors > 0 for i in extra) and any(i.origin.startswith("ref") for i in extra)
    # errors act on the delexicalised tokens (a placeholder counts as one word) and relexicalise cleanly
    d = delexicalise(E2E_MR, "The Golden Fork is near Café Rouge .")
    rng = np.random.default_rng(0)
    bad, kinds = distort(d.out_tokens, 3, rng, Dictionary.from_token_lists([d.out_tokens]))
    assert len(kinds) == 3 and bad != d.out_tokens
    dup = apply_error(d.out_tokens, "duplicate", rng, Dictionary(["x"], np.array([1.0])), pos=0)
    assert relexicalise(dup, d.values)[:6] == ["the", "golden", "fork", "the", "golden", "fork"]


# ---------------------------------------------------------------------------------------- real E2E dev data
def _e2e_dir() -> Path | None:
    d = shared_data_dir()
    return d / "e2e" if d is not None and (d / "e2e").is_dir() else None


@pytest.mark.skipif(_e2e_dir() is None, reason="public data folder with e2e/ is absent")
@pytest.mark.parametrize("version", ["cleaned", "original"])
def test_real_e2e_dev_mrs_parse_and_references_delexicalise(version):
    from qe.data import load_dataset
    from qe.ratpred.mr import DELEX_SLOTS, KEEP_VALUES

    recs = load_dataset("e2e", version=version, split="dev")
    mrs = sorted({r.mr for r in recs})
    assert len(mrs) > 500
    for m in mrs:
        assert detect(m) == "e2e"
        (act, slots), = parse(m)
        assert act == "inform" and slots and all(s.isalpha() for s, _ in slots)
    n_vals = n_found = n_tok = n_ph = 0
    for m in mrs:
        refs = next(r.refs for r in recs if r.mr == m)
        want = [s for _, sl in parse(m) for s, v in sl if s in DELEX_SLOTS and v not in KEEP_VALUES]
        for t in refs:
            d = delexicalise(m, t)
            ph = [x[2:] for x in d.out_tokens if x.startswith("X-")]
            n_tok, n_ph, n_vals = n_tok + len(d.out_tokens), n_ph + len(ph), n_vals + len(want)
            n_found += sum(min(ph.count(s), want.count(s)) for s in set(want))
    share, recall = n_ph / n_tok, n_found / n_vals
    print(f"E2E {version} dev: {len(mrs)} MRs, {n_ph}/{n_tok} reference tokens delexicalised ({share:.1%}), "
          f"{n_found}/{n_vals} MR values found in their references ({recall:.1%})")
    # measured: cleaned 21.8 % of tokens / 96.8 % of values; original (MRs not fixed to the texts) ~90 % of values
    assert 0.15 < share < 0.35
    assert recall > (0.95 if version == "cleaned" else 0.85)


# --------------------------------------------------------------------------------------------- end to end
def test_qe_score_on_an_e2e_record_file(tmp_path, capsys):
    from qe.cli import EXIT_BAD_INPUT, main
    from qe.data.record import Record
    from qe.ratpred.data import SETUPS, Instance, build_training_set
    from qe.ratpred.task import train_one

    names = ["The Golden Fork", "Blue Spice", "Aromi", "Cocum", "The Wrestlers", "Alimentum"]
    recs = []
    for i in range(24):
        n = names[i % 6]
        mr = f"name[{n}], eatType[coffee shop], priceRange[£20-25], customer rating[{1 + i % 5} out of 5]"
        good = i % 2 == 0
        out = f"{n} is a coffee shop costing £20-25 rated {1 + i % 5} out of 5 ." if good else f"{n} {n} shop ."
        recs.append(Record(id=f"r{i}", output=out, system="s", dataset="E2E", mr=mr, refs=[],
                           ratings={"quality": 6.0 if good else 2.0}))
    orig, extra, _ = build_training_set(recs[:18], [], SETUPS["S2"], max_errors=1, seed=1)
    dev = [Instance(r.mr, r.output, r.ratings["quality"], "real", 0, r.id) for r in recs[18:]]
    cfg = dict(embedding_dim=8, hidden_size=8, tanh_layers=1, dropout=0.0, lr=1e-2, batch_size=8, round_to=0.5,
               clip=True)
    module, vocab, _ = train_one(orig, extra, dev, cfg, {"passes_synth": 1, "passes_orig": 1}, seed=1)
    exp = module.export(tmp_path / "exp", vocab=vocab, config={"delex": True, "setup": "S2"}, metrics={})

    # an E2E-format record file (and one JSON-format MR beside them)
    rows = [{"id": r.id, "output": r.output, "mr": r.mr} for r in recs[18:]]
    rows.append({"id": "j1", "output": "Aromi is a coffee shop .",
                 "mr": json.dumps({"name": "Aromi", "eatType": "coffee shop"})})
    inp = tmp_path / "e2e.jsonl"
    inp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "scores.jsonl"
    assert main(["score", "-m", str(exp), "-i", str(inp), "-o", str(out), "-q"]) == 0
    got = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [g["id"] for g in got] == [r["id"] for r in rows]
    assert all(1.0 <= g["score"] <= 6.0 for g in got)
    # the library gives the same numbers; mr_format=e2e as a scorer option (API and --opt)
    api = qe.load(exp, mr_format="e2e").score([r["output"] for r in rows[:-1]], mrs=[r["mr"] for r in rows[:-1]],
                                              progress=False)
    assert np.allclose(api, [g["score"] for g in got[:-1]])
    inp2 = tmp_path / "e2e_only.jsonl"
    inp2.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows[:-1]), encoding="utf-8")
    out2 = tmp_path / "scores2.jsonl"
    assert main(["score", "-m", str(exp), "-i", str(inp2), "-o", str(out2), "-q", "--opt", "mr_format=e2e"]) == 0
    assert [json.loads(x)["score"] for x in out2.read_text().splitlines()] == [g["score"] for g in got[:-1]]
    # forcing e2e on the JSON MR fails with one line naming the MR, the format and the offending text
    capsys.readouterr()
    assert main(["score", "-m", str(exp), "-i", str(inp), "-o", str(tmp_path / "x.jsonl"), "-q",
                 "--opt", "mr_format=e2e"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "cannot parse MR" in err and "mr_format=e2e" in err and '{"name": "Aromi"' in err
    # record ids reach the message when the caller passes them
    with pytest.raises(RecordError, match=r"record 'j1'.*mr_format=e2e"):
        qe.load(exp, mr_format="e2e").score(["x"], mrs=[rows[-1]["mr"]], ids=["j1"], progress=False)
    with pytest.raises(ValueError, match="mr_format"):
        qe.load(exp, mr_format="xml")


# ------------------------------------------------------------------- issue 56: ',' inside a ';'-separated act
@pytest.mark.parametrize("mr, slots", [
    # ';' separates: the ',' belongs to the value (the laptop MR)
    ("inform(name=satellite eurus 65;type=laptop;design=black finish , silver keyboard;price=499 euros;"
     "isforbusinesscomputing=false)",
     [("name", "satellite eurus 65"), ("type", "laptop"), ("design", "black finish , silver keyboard"),
      ("price", "499 euros"), ("isforbusinesscomputing", "false")]),
    # SF's quoted values keep working, with ';' and with ','
    ("inform(name='x, y';area='centre';near=z)", [("name", "x, y"), ("area", "centre"), ("near", "z")]),
    ("?confirm(pricerange='pricey')", [("pricerange", "pricey")]),
    # no ';': ',' separates, as before
    ("inform(name=x,area=y, food=thai)", [("name", "x"), ("area", "y"), ("food", "thai")]),
    # a ';' inside a quoted value of a ','-separated act stays in the value
    ("inform(name='a;b',food=thai)", [("name", "a;b"), ("food", "thai")]),
    # a mixed notation: ',' separates the items it separates
    ("inform(a=x, b=y; c=z)", [("a", "x"), ("b", "y"), ("c", "z")]),
])
def test_a_comma_inside_a_value_of_a_semicolon_separated_act_parses(mr, slots):
    from qe.core.mr import parse_mr

    assert parse_acts(mr) == [(parse_mr(mr)[0], slots)]
    assert parse_acts(mr, "da") == parse_acts(mr)


def test_a_bad_slot_name_is_still_named_in_a_semicolon_separated_act():
    with pytest.raises(RecordError, match=r"mrs\[3\].*bad slot name 'a b'"):
        parse_acts("inform(a b=x;c=y)", where="mrs[3]")
