"""RatPred for RDF triples (issue 27, part 3): the triple MR format (JSON and ``s | p | o``), entity
delexicalisation, the data-to-text synthetic errors and their rating penalties, and the ``ratpred-webnlg`` transfer
recipe - built end to end on tiny fixtures without ever opening the WebNLG ratings (human_en.jsonl)."""
import builtins
import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from qe.data.record import Record
from qe.errors import RecordError
from qe.ratpred.mr import (delexicalise, delexicalise_text, entity_text, entity_variants, linearise, parse,
                           property_words, relexicalise)
from qe.core.mr import TRIPLE_ACT, detect, parse_acts
from qe.ratpred.synth import (ALL_ERROR_TYPES, ERROR_TYPES, Dictionary, EntityPool, applies, apply_error,
                              check_error_types, distort, error_penalties, lowered_rating, penalised_rating)

REPO = Path(__file__).resolve().parents[2]
BEAN = [["Alan_Bean", "birthPlace", "Wheeler,_Texas"], ["Alan_Bean", "birthDate", "1932-03-15"],
        ["Alan_Bean", "occupation", "Test_pilot"]]
BEAN_JSON = json.dumps(BEAN)
BEAN_PIPE = "Alan_Bean | birthPlace | Wheeler,_Texas\nAlan_Bean | birthDate | 1932-03-15; " \
            "Alan_Bean | occupation | Test_pilot"
BEAN_TEXT = "Alan Bean was born in Wheeler, Texas on March 15, 1932. Alan Bean was a test pilot."
AARHUS = '[["Aarhus_Airport", "cityServed", "Aarhus"], ["Aarhus", "leader", "Jacob_Bundsgaard"]]'
AARHUS_TEXT = "Aarhus airport serves the city of Aarhus whose leader is Jacob Bundsgaard."


def rng(s=0):
    return np.random.default_rng(s)


# ------------------------------------------------------------------------------------------------ parsing
def test_triple_mrs_detect_and_parse_in_both_notations():
    assert detect(BEAN_JSON) == "triples" and detect(BEAN_PIPE) == "triples"
    want = [(TRIPLE_ACT, [("subject", "alan bean"), ("property", "birth place"), ("object", "wheeler, texas")]),
            (TRIPLE_ACT, [("subject", "alan bean"), ("property", "birth date"), ("object", "1932-03-15")]),
            (TRIPLE_ACT, [("subject", "alan bean"), ("property", "occupation"), ("object", "test pilot")])]
    assert parse(BEAN_JSON) == parse(BEAN_PIPE) == parse(BEAN_JSON, mr_format="triples") == want
    # the raw acts keep the values as written
    assert parse_acts(BEAN_PIPE)[0] == (TRIPLE_ACT, [("subject", "Alan_Bean"), ("property", "birthPlace"),
                                                     ("object", "Wheeler,_Texas")])
    # JSON pairs stay the json format; dialogue acts joined by "|" stay dialogue acts
    assert detect('[["name", "Blue Spice"]]') == "json"
    assert parse("inform(name=x) | request(area)") == [("inform", [("name", "x")]), ("request", [("area", None)])]
    # a subject that looks like the start of a dialogue act ("Bananaman_(") falls back to triples
    assert parse("Bananaman_(TV_series) | starring | Bill_Oddie") == \
        [(TRIPLE_ACT, [("subject", "bananaman (tv series)"), ("property", "starring"), ("object", "bill oddie")])]
    assert property_words("elevationAboveTheSeaLevel_(in_metres)") == "elevation above the sea level (in metres)"
    assert property_words("ISBN_number") == "isbn number" and property_words("LCCN_number") == "lccn number"
    assert entity_text('"Aarhus Lufthavn A/S"') == "aarhus lufthavn a/s"
    assert entity_text('"52.0"(minutes)') == "52.0 (minutes)"


@pytest.mark.parametrize("mr, pattern", [
    ('[["Alan_Bean", "birthPlace", "Wheeler"], ["Alan_Bean", "occupation"]]', r"triple 2 is .*\[subject, property"),
    ('[["Alan_Bean", "birthPlace", "Wheeler"]', r"not valid JSON triples"),
    ('[["Alan_Bean", "", "Wheeler"]]', r"triple 1: property must be a non-empty string"),
    ("Alan_Bean | birthPlace | Wheeler\nAlan_Bean | occupation", r"triple 2: expected 'subject \| property \| object'"),
])
def test_bad_triple_mrs_name_file_line_record_and_the_triple(mr, pattern):
    with pytest.raises(RecordError) as ei:
        parse(mr, where="webnlg.jsonl:3 (id='w3') field 'mr'")
    msg = str(ei.value)
    assert msg.startswith("webnlg.jsonl:3 (id='w3') field 'mr': cannot parse MR") and "\n" not in msg
    assert "as triples (" in msg
    import re

    assert re.search(pattern, msg), msg
    with pytest.raises(RecordError, match=r"^w9: cannot parse MR .*mr_format=triples"):
        parse("inform(name=x)", where="w9", mr_format="triples")


# ----------------------------------------------------------------------------------------- delexicalisation
def test_entities_delexicalise_like_slot_values_and_round_trip():
    d = delexicalise(BEAN_JSON, BEAN_TEXT)
    assert d.mr_tokens == ["<triple>", "X-e1", "birth", "place", "X-e2", "<triple>", "X-e1", "birth", "date", "X-e3",
                           "<triple>", "X-e1", "occupation", "X-e4"]
    # every mention of an entity; underscores as spaces, case-insensitive; the date in its written-out form
    assert d.out_tokens == ["X-e1", "was", "born", "in", "X-e2", "on", "X-e3", ".", "X-e1", "was", "a", "X-e4", "."]
    assert d.triples == [("X-e1", "birth place", "X-e2"), ("X-e1", "birth date", "X-e3"),
                         ("X-e1", "occupation", "X-e4")]
    assert d.values["e3"] == [["march", "15", ",", "1932"]]  # relexicalised as the text wrote it
    assert relexicalise(d.out_tokens, d.values) == delexicalise(BEAN_JSON, BEAN_TEXT, delex=False).out_tokens
    assert linearise(BEAN_PIPE) == d.mr_tokens
    # a shared entity (object of one triple, subject of the next) keeps one placeholder; longest entity first
    a = delexicalise(AARHUS, AARHUS_TEXT)
    assert a.mr_tokens == ["<triple>", "X-e1", "city", "served", "X-e2", "<triple>", "X-e2", "leader", "X-e3"]
    assert a.out_tokens == ["X-e1", "serves", "the", "city", "of", "X-e2", "whose", "leader", "is", "X-e3", "."]
    # quotes stripped; a disambiguating parenthesis left out when the text does; not found -> stays lexical
    q = delexicalise('[["Aarhus_Airport", "operator", "\\"Aarhus Lufthavn A/S\\""], '
                     '["Isis_(band)", "genre", "United_States"]]',
                     "Aarhus Lufthavn A/S runs Aarhus Airport; Isis is an American band.")
    assert q.out_tokens[:3] == ["X-e2", "runs", "X-e1"] and "X-e3" in q.out_tokens
    assert "american" in q.out_tokens and "X-e4" not in q.out_tokens and "X-e4" in q.mr_tokens
    assert " ".join(relexicalise(q.out_tokens, q.values)).endswith("; isis is an american band .")
    assert ["185"] in entity_variants("185.0 (centimetres)") and ["wheeler"] in entity_variants("wheeler, texas")
    assert ["15th", "of", "march", "1932"] in entity_variants("1932-03-15")
    assert delexicalise_text("Alan Bean was born in Wheeler, Texas.", BEAN_PIPE) == "x-e1 was born in x-e2."


# ------------------------------------------------------------------------------------- data-to-text errors
POOL = EntityPool.from_mrs([BEAN_JSON, AARHUS, json.dumps([["Elliot_See", "birthPlace", "Dallas"],
                                                           ["Elliot_See", "occupation", "Test_pilot"]]),
                            "inform(name=x)"])  # a dialogue-act MR is skipped
DICT = Dictionary(["zebra"], np.array([1.0]), POOL)


def _bean():
    return delexicalise(BEAN_JSON, "Alan Bean was born in Wheeler, Texas. He was a test pilot.")


def test_drop_repeat_swap_wrong_value_on_fixed_triples():
    d = _bean()
    toks, tr = d.out_tokens, d.triples
    assert toks == ["X-e1", "was", "born", "in", "X-e2", ".", "he", "was", "a", "X-e4", "."]
    # drop: the triple's own entities go (the shared subject stays); a triple whose entities are absent never applies
    assert apply_error(toks, "drop_triple", rng(), DICT, pos=0, triples=tr) == \
        ["X-e1", "was", "born", "in", ".", "he", "was", "a", "X-e4", "."]
    with pytest.raises(ValueError, match="does not apply to triple 1"):
        apply_error(toks, "drop_triple", rng(), DICT, pos=1, triples=tr)  # the birth date is not mentioned
    # repeat: the phrase ending in the object, again, joined by "and"
    assert apply_error(toks, "repeat_triple", rng(), DICT, pos=0, triples=tr) == \
        ["X-e1", "was", "born", "in", "X-e2", "and", "was", "born", "in", "X-e2", ".", "he", "was", "a", "X-e4", "."]
    # swap: subject and object change places
    assert apply_error(toks, "swap_entities", rng(), DICT, pos=0, triples=tr)[:5] == \
        ["X-e2", "was", "born", "in", "X-e1"]
    # wrong value: another birth place of the corpus (Dallas), never this MR's own entities; stays lexical
    avoid = frozenset(" ".join(v) for vs in d.values.values() for v in vs)
    for s in range(8):
        bad = apply_error(toks, "wrong_value", rng(s), DICT, pos=0, triples=tr, avoid=avoid)
        assert bad in (["X-e1", "was", "born", "in", "dallas", ".", "he", "was", "a", "X-e4", "."],
                       ["elliot", "see", "was", "born", "in", "X-e2", ".", "he", "was", "a", "X-e4", "."]), bad
        text = " ".join(relexicalise(bad, d.values))
        assert "X-" not in " ".join(delexicalise(BEAN_JSON, text).out_tokens).replace("X-e", "")
    # drawn without pos: a seeded draw is reproducible; the wrong value is re-delexicalised as lexical text
    a = apply_error(toks, "wrong_value", rng(3), DICT, triples=tr, avoid=avoid)
    assert a == apply_error(toks, "wrong_value", rng(3), DICT, triples=tr, avoid=avoid)
    # nothing left to drop -> not applicable; no entity pool -> no wrong value
    assert not applies("drop_triple", ["X-e2"], DICT, [("X-e1", "p", "X-e2")])
    assert not applies("wrong_value", toks, Dictionary(["zebra"], np.array([1.0])), tr)
    assert not any(applies(k, toks, DICT, ()) for k in ALL_ERROR_TYPES[5:])  # no triples: paper's errors only


def test_distort_draws_applicable_types_and_leaves_dialogue_acts_as_the_paper():
    d = _bean()
    avoid = frozenset(" ".join(v) for vs in d.values.values() for v in vs)
    seen = set()
    for s in range(40):
        toks, kinds = distort(d.out_tokens, 3, rng(s), DICT, ALL_ERROR_TYPES, triples=d.triples, avoid=avoid)
        assert len(kinds) == 3 and set(kinds) <= set(ALL_ERROR_TYPES)
        seen.update(kinds)
    assert set(ALL_ERROR_TYPES) <= seen  # every type is drawn on a triple output
    # a dialogue-act output: the data-to-text types never apply, and the draw is exactly the paper's
    da = delexicalise("inform(name='la ciccia',food=thai)", "la ciccia serves thai food .")
    dct = Dictionary.from_token_lists([da.out_tokens])
    for s in range(10):
        assert distort(da.out_tokens, 4, rng(s), dct, ALL_ERROR_TYPES) == distort(da.out_tokens, 4, rng(s), dct)
    # only data-to-text types chosen but none applies: the paper's five stand in
    _, kinds = distort(da.out_tokens, 2, rng(), dct, ("swap_entities",))
    assert set(kinds) <= set(ERROR_TYPES)


def test_rating_penalties_per_error_type():
    # every penalty 1: the paper's rule, exactly
    for r in (6.0, 5.5, 4.5, 2.0):
        for n in range(5):
            assert penalised_rating(r, ["remove"] * n) == lowered_rating(r, n)
            assert penalised_rating(r, ["drop_triple", "repeat_triple", "replace"][:n]) == lowered_rating(r, min(n, 3))
    # a factual error costs 2: a reference (6) drops to 3 at the first, 4.5 to 2.5; never below 1
    assert penalised_rating(6.0, ["swap_entities"]) == 3.0
    assert penalised_rating(6.0, ["remove", "wrong_value"]) == 2.0
    assert penalised_rating(4.5, ["wrong_value"]) == 2.5
    assert penalised_rating(6.0, ["wrong_value"] * 3) == 1.0
    assert penalised_rating(6.0, ["swap_entities"], error_penalties({"swap_entities": 1})) == 4.0
    with pytest.raises(ValueError, match="unknown error type 'swap'"):
        error_penalties({"swap": 1.0})
    with pytest.raises(ValueError, match="> 0"):
        error_penalties({"wrong_value": 0})
    with pytest.raises(ValueError, match=r"\['typo'\].*drop_triple"):
        check_error_types(["remove", "typo"])


# ------------------------------------------------------------------------------------------ training data
def _emnlp_records(n=30):
    return [Record(id=f"r{i}", output=f"place {i // 2} serves thai food number {i}", system="A", dataset="SFRES",
                   mr=f"inform(name='place {i // 2}',food=thai)", refs=[f"place {i // 2} has thai food"],
                   ratings={"quality": float(1 + i % 6)}) for i in range(n)]


def _webnlg_records():
    sets = [(BEAN, ["Alan Bean was born in Wheeler, Texas on March 15, 1932 and was a test pilot.",
                    "Test pilot Alan Bean was born on 15 March 1932 in Wheeler, Texas."]),
            ([["Elliot_See", "birthPlace", "Dallas"], ["Elliot_See", "occupation", "Test_pilot"]],
             ["Elliot See, born in Dallas, was a test pilot."]),
            (json.loads(AARHUS), [AARHUS_TEXT])]
    out = []
    for k, (triples, refs) in enumerate(sets):
        for j, t in enumerate(refs):
            out.append(Record(id=f"w{k}-{j}", output=t, system="human", dataset="WebNLG", mr=json.dumps(triples),
                              refs=refs, extra={"ref_sources": [f"train.xml#Id{k}/Id{x}" for x in range(len(refs))]}))
    return out


def test_training_set_with_webnlg_references_and_data_to_text_errors():
    from qe.ratpred.data import build_training_set, limit_refs_per_mr

    target = _webnlg_records()
    _, extra, counts = build_training_set(_emnlp_records(), [], ["train_outputs", "target_refs"], max_errors=4,
                                          seed=3, target_data=target, error_types=ALL_ERROR_TYPES)
    assert counts["ref:target_refs"] == 4 and counts["synth:target_refs"] == 16
    web = [i for i in extra if i.origin == "synth:target_refs"]
    assert {i.src for i in web} >= {"train.xml#Id0/Id0", "train.xml#Id0/Id1"}
    for i in web:  # every synthetic instance parses and delexicalises again, rating within 1..6, below the ref's 6
        d = delexicalise(i.mr, i.output)
        assert d.mr_tokens[0] == "<triple>" and d.out_tokens and 1.0 <= i.rating < 6.0
    # the EMNLP17 outputs got exactly what the paper's five give them with the same seed
    _, extra5, _ = build_training_set(_emnlp_records(), [], ["train_outputs"], max_errors=4, seed=3)
    assert [i.output for i in extra if i.origin == "synth:train_outputs"] == [i.output for i in extra5]
    # the first k references of each triple set
    lim = limit_refs_per_mr(target, 1)
    assert [len(r.refs) for r in lim] == [1, 1, 1] and lim[0].extra["ref_sources"] == ["train.xml#Id0/Id0"]
    with pytest.raises(ValueError, match="delex=true"):
        build_training_set(_emnlp_records(), [], ["target_refs"], target_data=target, delex=False,
                           error_types=ALL_ERROR_TYPES)


# --------------------------------------------------------------------------------------- the zoo recipe
def test_recipe_is_the_transfer_setup_on_webnlg_train():
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from qe.zoo import build as zoo

    r = zoo.RECIPES["ratpred-webnlg"]
    assert r.status == "final" and "measured" in r.cpu_budget and r.gpu_overrides
    for gpu in (False, True):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
            cfg = compose("train", overrides=zoo.recipe_overrides(r, Path("/m"), gpu=gpu))
        p = cfg.protocol
        assert p.mode == "transfer" and "target_refs" in p.sources and cfg.data.dataset == "emnlp17_refs"
        assert dict(p.target_data) == {"name": "webnlg", "split": "train"}
        assert set(p.error_types) == set(ALL_ERROR_TYPES)


# ---------------------------------------------------------------- the recipe's pipeline on tiny fixtures
SF_HEADER = "#\n#\n# Copyright\n#\n#\n"

WEBNLG_XML = """<?xml version='1.0' encoding='utf-8'?>
<benchmark>
  <entries>
    <entry category="Astronaut" eid="Id1" shape="" shape_type="" size="3">
      <modifiedtripleset>
        <mtriple>Alan_Bean | birthPlace | Wheeler,_Texas</mtriple>
        <mtriple>Alan_Bean | birthDate | 1932-03-15</mtriple>
        <mtriple>Alan_Bean | occupation | Test_pilot</mtriple>
      </modifiedtripleset>
      <lex comment="good" lid="Id1">Alan Bean was born in Wheeler, Texas on March 15, 1932 and was a test pilot.</lex>
      <lex comment="good" lid="Id2">Test pilot Alan Bean was born on 15 March 1932 in Wheeler, Texas.</lex>
    </entry>
    <entry category="Astronaut" eid="Id2" shape="" shape_type="" size="2">
      <modifiedtripleset>
        <mtriple>Elliot_See | birthPlace | Dallas</mtriple>
        <mtriple>Elliot_See | occupation | Test_pilot</mtriple>
      </modifiedtripleset>
      <lex comment="good" lid="Id1">Elliot See, born in Dallas, was a test pilot.</lex>
    </entry>
    <entry category="Airport" eid="Id3" shape="" shape_type="" size="2">
      <modifiedtripleset>
        <mtriple>Aarhus_Airport | cityServed | Aarhus</mtriple>
        <mtriple>Aarhus | leader | Jacob_Bundsgaard</mtriple>
      </modifiedtripleset>
      <lex comment="good" lid="Id1">Aarhus airport serves the city of Aarhus whose leader is Jacob Bundsgaard.</lex>
    </entry>
  </entries>
</benchmark>
"""


def _archive(path: Path, split: str, text: str) -> None:
    import tarfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:xz") as tf:
        raw = text.encode("utf-8")
        info = tarfile.TarInfo(f"{split}/2triples/Astronaut.xml")
        info.size = len(raw)
        tf.addfile(info, io.BytesIO(raw))


@pytest.fixture
def recipe_data(tmp_path):
    """EMNLP17 ratings (CSV), the SF / BAGEL references and WebNLG train / dev archives, in the real formats; beside
    them a WebNLG human_en.jsonl that must never be opened."""
    root = tmp_path / "data"
    for dom in ("hotel", "restaurant"):
        (root / "sfx" / dom).mkdir(parents=True)
        for sp in ("train", "valid", "test"):
            rows = [[f"inform(name='place {i}';food='thai')", f"place {i} serves thai food ({sp})", "HDC"]
                    for i in range(3)]
            (root / "sfx" / dom / f"{sp}.json").write_text(SF_HEADER + json.dumps(rows))
    (root / "bagel").mkdir()
    (root / "bagel" / "ACL10-inform-training.txt").write_text(
        'FULL_DA = inform(name="Green Man",eattype=restaurant)\nABSTRACT_DA = inform(name="X1",eattype=restaurant)\n'
        '-> "[name+X]X []is a [eattype+restaurant]restaurant.";\n\n')
    (root / "emnlp17").mkdir()
    cols = ["dataset", "system", "mr_type", "mr", "sys_ref", "TER", "Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L",
            "NIST", "LEPOR", "CIDEr", "METEOR", "sim.mr.sys", "lev.dist", "informativeness", "naturalness", "quality",
            "domain"]
    with open(root / "emnlp17" / "emnlp_data_medians.csv", "w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        w.writerow(cols)
        for i in range(40):
            ds = ("SFHOT", "SFRES")[i % 2]
            out = f"place {i % 3} serves thai food" if i % 4 else f"place {i % 3} place thai thai"
            w.writerow([ds, "WEN", "inform", f"inform(name='place {i % 3}',food='thai')", out] + ["0"] * 12
                       + [str(1 + i % 6), str(1 + (i * 5) % 6), str(1 + (i * 7) % 6), "X"])
    _archive(root / "webnlg2020" / "train.tar.xz", "train", WEBNLG_XML)
    _archive(root / "webnlg2020" / "dev.tar.xz", "dev", WEBNLG_XML)
    (root / "webnlg2020" / "human_en.jsonl").write_text("POISON: the WebNLG ratings must never be read\n")
    return root


def _never_read_ratings(monkeypatch):
    """Every way to the WebNLG ratings raises: the loader, its path helper, and opening human_en.jsonl at all."""
    import qe.data.webnlg as webnlg

    def refuse(*a, **k):
        raise AssertionError("the WebNLG ratings (webnlg2020 / human_en.jsonl) were read")

    monkeypatch.setattr(webnlg, "webnlg2020", refuse)
    monkeypatch.setattr(webnlg, "_human_path", refuse)
    real_open = builtins.open

    def guarded_open(file, *a, **k):
        if "human_en" in str(file):
            refuse()
        return real_open(file, *a, **k)

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(io, "open", guarded_open)


def test_recipe_pipeline_builds_and_trains_without_reading_webnlg_ratings(recipe_data, tmp_path, monkeypatch):
    """The ratpred-webnlg recipe's own overrides, made tiny (passes, sizes), run end to end on the fixtures: EMNLP17
    ratings + WebNLG train references with data-to-text errors; human_en.jsonl is never opened; the export scores a
    triple MR."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import open_dict

    import qe
    from qe.training import run_training
    from qe.zoo import build as zoo

    _never_read_ratings(monkeypatch)
    with pytest.raises(AssertionError, match="never|were read"):  # the guard itself works
        open(recipe_data / "webnlg2020" / "human_en.jsonl")
    tiny = {"protocol.passes_synth": "1", "protocol.passes_orig": "1", "protocol.max_errors": "2",
            "model.embedding_dim": "8", "model.hidden_size": "8", "model.batch_size": "16",
            "paths.data_dir": str(recipe_data), "trainer": "cpu", "trainer.enable_progress_bar": "false"}
    ov = [o for o in zoo.recipe_overrides(zoo.RECIPES["ratpred-webnlg"], tmp_path) if o.split("=")[0] not in tiny]
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=ov + [f"{k}={v}" for k, v in tiny.items()])
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp_path / "run")
        cfg.export_dir = str(tmp_path / "export")
    run_training(cfg)
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    assert res["mode"] == "transfer" and "summary" not in res  # no rated test part: nothing WebNLG is scored
    counts = res["runs"][0]["counts"]
    assert counts["ref:target_refs"] == 4 and counts["synth:target_refs"] == 8
    assert counts["synth:train_outputs"] > 0 and counts["ref:source_all"] > 0
    s = qe.load(str(tmp_path / "export"))
    got = s.score(["Alan Bean was born in Dallas.", "Alan Bean was born in Wheeler, Texas."],
                  mrs=[json.dumps(BEAN[:1]), "Alan_Bean | birthPlace | Wheeler,_Texas"], progress=False)
    assert len(got) == 2 and all(1.0 <= g <= 6.0 for g in got)
    with pytest.raises(RecordError, match=r"mrs\[0\] \(record 'x1'\): cannot parse MR"):
        s.score(["x"], mrs=['[["a", "b", "c"], ["d"]]'], ids=["x1"], progress=False)
