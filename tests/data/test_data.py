"""Rated-data records, converters, corpora, tokenisers."""
import json

import pytest

from conftest import needs_data
from qe.data import load_dataset, load_records
from qe.data.corpora import load_source, split_holdout
from qe.errors import RecordError
from qe.core.tokenization import SentencePieceTokenizer, WordTokenizer, load_tokenizer, word_tokenize


def test_jsonl_and_csv_records(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text(json.dumps({"id": "a1", "system": "s", "dataset": "D", "mr": "inform(name='x')", "refs": ["r1", "r2"],
                             "output": "out one", "ratings": {"quality": 5, "naturalness": "4.5"}}) + "\n\n"
                 + json.dumps({"id": "a2", "output": "out two", "ratings": {"quality": None}}) + "\n")
    recs = load_records(p)
    assert [r.id for r in recs] == ["a1", "a2"]
    assert recs[0].ratings == {"quality": 5.0, "naturalness": 4.5} and recs[0].refs == ["r1", "r2"]
    assert recs[1].ratings["quality"] != recs[1].ratings["quality"]  # null -> NaN
    c = tmp_path / "r.csv"
    c.write_text('id,system,output,refs,ratings.quality,metrics.bleu\nx1,s,"hello, world","[""a"",""b""]",3.5,0.2\n'
                 "x2,s,bye,single ref,,\n")
    recs = load_records(c)
    assert recs[0].output == "hello, world" and recs[0].refs == ["a", "b"] and recs[0].metrics == {"bleu": 0.2}
    assert recs[1].refs == ["single ref"]
    t = tmp_path / "outs.txt"
    t.write_text("first\n\nthird\n")
    assert [r.output for r in load_records(t)] == ["first", "", "third"]


@pytest.mark.parametrize("line, msg", [
    ('{"id": "z", "ratings": {}}', r"r.jsonl:1 \(id='z'\): field 'output' is missing"),
    ('{"id": "z", "output": 3}', r"id='z'\): field 'output' must be a string, got int"),
    ('{"id": "z", "output": "o", "ratings": {"quality": "good"}}', r"field 'ratings.quality' must be a number"),
    ('{"id": "z", "output": "o", "refs": [1]}', r"field 'refs\[0\]' must be a string"),
    ('{"id": "z", "output": "o"', r"r.jsonl:1: not valid JSON"),
    ('["not", "an", "object"]', r"expected a JSON object"),
])
def test_bad_records_name_record_and_field(tmp_path, line, msg):
    p = tmp_path / "r.jsonl"
    p.write_text(line + "\n")
    with pytest.raises(RecordError, match=msg):
        load_records(p)


def test_duplicate_ids_rejected(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"id": "a", "output": "x"}\n{"id": "a", "output": "y"}\n')
    with pytest.raises(RecordError, match="duplicate id 'a'"):
        load_records(p)


def test_embedded_sample_is_valid():
    recs = load_dataset("sample")
    assert len(recs) == 120 and {r.dataset for r in recs} == {"SAMPLE-REST", "SAMPLE-HOTEL"}
    assert all(r.mr and r.refs and set(r.ratings) == {"naturalness", "quality", "informativeness"} for r in recs)
    assert len(load_source("sample")) > 500


@needs_data
@pytest.mark.data
def test_emnlp17_converter():
    recs = load_dataset("emnlp17")
    assert len(recs) == 2460
    by = {}
    for r in recs:
        by[r.dataset] = by.get(r.dataset, 0) + 1
    assert by == {"BAGEL": 404, "SFHOT": 875, "SFRES": 1181}
    assert {r.system for r in recs} == {"Dusek", "LOLS", "WEN"}
    r = recs[0]
    assert r.output == "there is sorry no information matching constraints near x."
    assert r.ratings == {"informativeness": 6.0, "naturalness": 4.0, "quality": 5.0}
    assert r.metrics["ROUGE_L"] == pytest.approx(0.251028807)


@needs_data
@pytest.mark.data
def test_public_corpora():
    brown = load_source("brown")
    assert len(brown) == 57340 and brown[0].startswith("The Fulton County Grand Jury said")
    wt = load_source({"name": "wikitext2", "split": "test"})
    assert len(wt) > 4000 and not any(s.startswith("=") for s in wt)
    assert " @-@ " not in " ".join(wt[:500])


def test_holdout_split_is_deterministic_and_disjoint():
    sents = [f"sentence {i}" for i in range(1000)]
    a, b = split_holdout(sents, 0.1, seed=3)
    a2, b2 = split_holdout(sents, 0.1, seed=3)
    assert (a, b) == (a2, b2) and not set(a) & set(b) and 50 < len(b) < 150


def test_word_tokenize_rules():
    assert word_tokenize("Don't stop: Atlanta's 3.5-mile <unk> road.") == [
        "do", "n't", "stop", ":", "atlanta", "'s", "3.5", "-", "mile", "<unk>", "road", "."]
    assert word_tokenize("Keep Case", lowercase=False) == ["Keep", "Case"]


def test_tokenizer_round_trip(tmp_path, tiny_corpus):
    w = WordTokenizer.train(tiny_corpus, max_size=30, min_freq=1)
    assert w.vocab_size == 30 and w.itos[:4] == ["<pad>", "<unk>", "<s>", "</s>"]
    (tmp_path / "w").mkdir()
    w.save(tmp_path / "w")
    w2 = load_tokenizer(tmp_path / "w")
    s = "The cat sat on the zebra ."
    assert w2.encode(s) == w.encode(s) and w.unk_id in w.encode(s)
    assert w.decode(w.encode("the cat sat .")) == "the cat sat ."
    sp = SentencePieceTokenizer.train(tiny_corpus, vocab_size=60)
    (tmp_path / "sp").mkdir()
    sp.save(tmp_path / "sp")
    sp2 = load_tokenizer(tmp_path / "sp")
    assert sp2.encode(s) == sp.encode(s)
    assert sp.decode(sp.encode("the cat sat on the mat .")) == "the cat sat on the mat ."
    assert sp.encode_batch(["a dog", "the cat"]) == [sp.encode("a dog"), sp.encode("the cat")]


def test_e2e_converter_groups_references_by_mr(tmp_path):
    from qe.data import load_dataset
    from qe.data.corpora import load_corpus
    from qe.data.e2e import e2e_references
    from qe.errors import RecordError

    d = tmp_path / "e2e" / "original"
    d.mkdir(parents=True)
    (d / "devset.csv").write_text(
        'mr,ref\r\n"name[A], area[city centre]","A is central."\r\n"name[B], priceRange[£20-25]","B costs £20-25."\r\n'
        '"name[A], area[city centre]","In the centre: A."\r\n', encoding="utf-8")
    recs = load_dataset("e2e", data_dir=tmp_path, version="original", split="dev")
    assert [r.id for r in recs] == ["e2e-original-dev-00001", "e2e-original-dev-00002", "e2e-original-dev-00003"]
    assert recs[0].refs == ["A is central.", "In the centre: A."] == recs[2].refs
    assert recs[1].mr == "name[B], priceRange[£20-25]" and recs[1].refs == ["B costs £20-25."]
    assert recs[0].extra["mr_group"] == recs[2].extra["mr_group"] != recs[1].extra["mr_group"]
    assert e2e_references("original", "dev", tmp_path) == {"name[A], area[city centre]": ["A is central.", "In the centre: A."],
                                                            "name[B], priceRange[£20-25]": ["B costs £20-25."]}
    assert load_corpus([{"name": "e2e", "version": "original", "split": "dev"}], tmp_path)[1] == "B costs £20-25."
    (d / "devset.csv").write_text('mr,ref\n"name[A]",""\n', encoding="utf-8")
    with pytest.raises(RecordError, match=r"devset.csv:2: field 'ref' is empty"):
        load_dataset("e2e", data_dir=tmp_path, version="original", split="dev")


@needs_data
def test_e2e_counts_match_the_data_readme():
    from qe.data import load_dataset

    want = {("cleaned", "dev"): (4299, 1484), ("cleaned", "test"): (4693, 1847), ("original", "dev"): (4672, 547),
            ("original", "test"): (4693, 630)}
    for (v, sp), (rows, mrs) in want.items():
        recs = load_dataset("e2e", version=v, split=sp)
        assert (len(recs), len({r.mr for r in recs})) == (rows, mrs), (v, sp)


@needs_data
def test_domain_corpus_sources():
    """The domain-LM corpus (conf/data/lm_domain.yaml): SF train references per domain, BAGEL, E2E dev; a bad
    domain is named."""
    hotel = load_source({"name": "sfx", "domain": "hotel", "split": "train"})
    rest = load_source({"name": "sfx", "domain": "restaurant", "split": "train"})
    assert len(hotel) == 3223 and len(rest) == 3114 and all(isinstance(s, str) and s for s in hotel + rest)
    assert len(load_source({"name": "bagel"})) == 404
    assert len(load_source({"name": "e2e", "version": "cleaned", "split": "dev"})) == 4299
    with pytest.raises(ValueError, match="domain='bar'"):
        load_source({"name": "sfx", "domain": "bar"})


@needs_data
def test_mixed_lm_corpus_is_general_plus_domain_text():
    """conf/data/lm_mixed.yaml (the slor-*-mixed zoo LMs): exactly the Brown + WikiText-2 training text followed by the
    domain text of conf/data/lm_domain.yaml; the test split stays WikiText-2 test; no rated EMNLP17 / E2E test text."""
    from pathlib import Path

    from omegaconf import OmegaConf

    from qe.data.corpora import load_corpus

    conf = Path(__file__).resolve().parents[2] / "conf" / "data"
    mixed, general, domain = (OmegaConf.to_container(OmegaConf.load(conf / f"{n}.yaml"))
                              for n in ("lm_mixed", "lm_brown_wt2", "lm_domain"))
    assert mixed["train"] == general["train"] + domain["train"] and mixed["test"] == general["test"]
    assert not any(s.get("split") == "test" or s["name"] == "bagel" for s in mixed["train"])
    n_general, n_domain = len(load_corpus(general["train"])), len(load_corpus(domain["train"]))
    assert len(load_corpus(mixed["train"])) == n_general + n_domain and 0.1 < n_domain / n_general < 0.2
