"""The content check as a product: lexicon=auto by default, mined lexicons cached, `qe content mine`."""
from __future__ import annotations

import csv
import json
import logging
import time

import pytest

from conftest import needs_data, shared_data_dir
from qe.content import cache
from qe.content.lexicon import Lexicon, mine
from qe.content.scorer import CoverageScorer, dataset_lexicon

PAIRS = []
for i in range(12):
    PAIRS += [
        (f"name[Place{i}], priceRange[cheap], familyFriendly[yes]", f"Place{i} is cheap and kid friendly ."),
        (f"name[Place{i}], priceRange[high]", f"Place{i} is expensive ."),
        (f"name[Place{i}], priceRange[moderate]", f"Place{i} has moderate prices ."),
        (f"name[Place{i}], familyFriendly[no]", f"Place{i} is adults only ."),
        (f"name[Place{i}], food[Thai]", f"Place{i} serves Thai food ."),
        (f"name[Place{i}]", f"Place{i} is a place ."),
    ]
EAGLE_MR = "name[The Eagle], priceRange[cheap], eatType[pub]"


@pytest.fixture
def fake_source(tmp_path, monkeypatch):
    """A data directory holding the file the (pretend) ``e2e`` lexicon is mined from, and an empty models folder."""
    data = tmp_path / "data"
    (data / "e2e").mkdir(parents=True)
    (data / "e2e" / "pairs.csv").write_text("mr,ref\n", encoding="utf-8")
    monkeypatch.setitem(cache.SOURCES, "e2e", ("e2e/pairs.csv",))
    monkeypatch.setenv("QE_MODELS", str(tmp_path / "models"))
    monkeypatch.delenv("QE_LEXICON_CACHE", raising=False)
    return data


# ------------------------------------------------------------------------------------------------ the cache
def test_a_mined_lexicon_is_kept_and_read_back_with_the_same_checksum(fake_source):
    calls = []

    def mine_it():
        calls.append(1)
        return mine(PAIRS, source="e2e-test", min_count=5)

    first = cache.cached("e2e", fake_source, mine_it)
    second = cache.cached("e2e", fake_source, mine_it)
    assert len(calls) == 1  # the second use reads the cache
    assert second.checksum == first.checksum and second.to_dict() == first.to_dict()
    path = cache.cache_path("e2e", fake_source)
    assert path.is_file() and path.parent == cache.cache_dir()
    assert path.name == f"e2e-{path.name.split('-')[1]}-{cache.miner_version()}.json"
    # other data (a re-downloaded file) is another key: mined again
    (fake_source / "e2e" / "pairs.csv").write_text("mr,ref\nname[A],A .\n", encoding="utf-8")
    assert cache.cache_path("e2e", fake_source) != path
    cache.cached("e2e", fake_source, mine_it)
    assert len(calls) == 2


def test_an_unreadable_cache_entry_is_mined_again_and_the_cache_can_be_turned_off(fake_source, monkeypatch):
    calls = []

    def mine_it():
        calls.append(1)
        return mine(PAIRS, min_count=5)

    path = cache.cache_path("e2e", fake_source)
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    lex = cache.cached("e2e", fake_source, mine_it)
    assert calls == [1] and Lexicon.load(path).checksum == lex.checksum  # rewritten
    monkeypatch.setenv("QE_LEXICON_CACHE", "0")
    cache.cached("e2e", fake_source, mine_it)
    assert calls == [1, 1]


def test_a_cache_folder_that_cannot_be_written_is_reported_once(fake_source, tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "models"
    blocker.write_text("a file where the models folder should be", encoding="utf-8")  # mkdir fails, even as root
    monkeypatch.setattr(cache, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="qe"):
        for _ in range(2):
            lex = cache.cached("e2e", fake_source, lambda: mine(PAIRS, min_count=5))
    assert lex.slots  # scoring goes on with the mined lexicon
    warns = [r for r in caplog.records if "cannot keep mined lexicons" in r.getMessage()]
    assert len(warns) == 1 and "QE_MODELS" in warns[0].getMessage()


# ------------------------------------------------------------------------------------------- lexicon=auto
def test_auto_without_the_data_uses_the_shipped_lexicons_quietly(tmp_path, monkeypatch, caplog):
    """Issue 56, item 5: the lexicons ship, so an empty data directory changes nothing (it used to mean the rules)."""
    from qe.content import shipped

    monkeypatch.setenv("QE_DATA_DIR", str(tmp_path / "empty"))
    dataset_lexicon.cache_clear()
    s = CoverageScorer()
    assert "lexicon:auto|" in s.signature  # nothing met yet
    with caplog.at_level(logging.WARNING, logger="qe"):
        got = s.score(["The Eagle is an expensive pub .", "The Eagle is a cheap pub ."], mrs=[EAGLE_MR] * 2)
    assert not [r for r in caplog.records if "lexicon" in r.getMessage()]
    assert f"lexicon:auto[e2e:{shipped.load('e2e').checksum}]" in s.signature
    assert got == CoverageScorer(lexicon="e2e").score(["The Eagle is an expensive pub .", "The Eagle is a cheap pub ."],
                                                      mrs=[EAGLE_MR] * 2)
    assert got[0] < 1.0 and got[1] == 1.0  # "expensive" is read by the lexicon, not missed


def test_auto_picks_the_lexicon_by_mr_slots(tmp_path, monkeypatch):
    from qe.content.scorer import AUTO_LEXICONS, AutoMatcher

    monkeypatch.setenv("QE_DATA_DIR", str(tmp_path / "empty"))
    am = AutoMatcher()
    assert AUTO_LEXICONS == ("e2e", "sf", "webnlg")
    assert am.choose("name[A], food[Thai]") == "e2e"
    assert am.choose("inform(name=A,eatType=pub)") == "e2e"  # E2E slots in a dialogue act: by the slots
    assert am.choose("inform(name=A,food=thai)") == "sf"  # both fit: the format's lexicon
    assert am.choose("inform(name=A;acceptscreditcards=yes)") == "sf"
    assert am.choose('{"name": "A", "familyFriendly": "yes"}') == "e2e"
    assert am.choose("A | country | B") == "webnlg"
    assert am.choose("inform(name=A;type=laptop;design=slim)") is None  # a slot no lexicon has: the rules
    assert am.choose("goodbye()") is None  # no slot: nothing to check, no domain to speak for
    assert am.matcher_for("name[B], food[Thai]") is am.matcher_for("name[A]")  # one matcher per lexicon
    with pytest.raises(ValueError, match="mr_format='xml'"):
        AutoMatcher(mr_format="xml")


def test_a_lexicon_file_wins_over_auto_and_auto_is_not_a_lexicon(tmp_path):
    from qe.content.scorer import resolve_lexicon

    path = tmp_path / "lex.json"
    mine(PAIRS, min_count=5).save(path)
    s = CoverageScorer(lexicon=str(path))
    assert s.score(["Place1 is expensive ."], mrs=["name[Place1], priceRange[cheap]"]) == [0.0]  # wrong: 1 - 1
    assert f"lexicon:{path}:" in s.signature
    with pytest.raises(ValueError, match="picks a lexicon per MR"):
        resolve_lexicon("auto")


@needs_data
def test_the_default_reads_wrong_values_and_invented_facts_on_e2e(tmp_path, monkeypatch):
    """The issue's check: with the data directory present and no option, an expensive pub is `wrong` for
    priceRange[cheap], and an invented food is flagged."""
    monkeypatch.setenv("QE_DATA_DIR", str(shared_data_dir()))
    monkeypatch.setenv("QE_MODELS", str(tmp_path / "models"))
    dataset_lexicon.cache_clear()
    try:
        import qe

        s = qe.load("coverage")
        d = s.details(["The Eagle is an expensive pub.", "The Eagle is a cheap pub serving Italian food."],
                      mrs=[EAGLE_MR] * 2)
        price = next(v for v in d[0]["verdicts"] if v["slot"] == "priceRange")
        assert price["status"] == "wrong" and price["said"] == "expensive" and price["said_value"] == "high"
        assert [(h["slot"], h["value"]) for h in d[1]["hallucinated"]] == [("food", "Italian")]
        assert "lexicon:auto[e2e:" in s.signature and "rules" not in s.signature
        # the shipped lexicon is read, not mined: nothing is written to the cache, and a second scorer is as quick
        assert not list((tmp_path / "models" / ".cache" / "lexicons").glob("e2e-*.json"))
        dataset_lexicon.cache_clear()
        t = time.perf_counter()
        again = qe.load("coverage")
        again.score(["x"], mrs=[EAGLE_MR])
        assert time.perf_counter() - t < 2.0
        assert again.signature == s.signature
        # lexicon=e2e@data mines it from the data directory and keeps it in the cache
        mined = CoverageScorer(lexicon="e2e@data")
        assert list((tmp_path / "models" / ".cache" / "lexicons").glob("e2e-*.json"))
        assert mined.signature_fields()["lexicon"] == f"e2e@data:{mined.matcher.lexicon.checksum}"
    finally:
        dataset_lexicon.cache_clear()


# -------------------------------------------------------------------------------------------- qe content mine
def _write_csv(path, pairs, text_col="ref"):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["mr", text_col])
        w.writerows(pairs)


def test_qe_content_mine_writes_a_lexicon_that_coverage_uses(tmp_path, capsys):
    from qe.cli import main

    _write_csv(tmp_path / "pairs.csv", PAIRS)
    out = tmp_path / "my_lexicon.json"
    assert main(["content", "mine", "-i", str(tmp_path / "pairs.csv"), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "lexicon from 72 texts" in printed and "priceRange" in printed and f"lexicon={out}" in printed
    lex = Lexicon.load(out)
    assert set(lex.slots["pricerange"].patterns["expensive"]) == {"high"}
    assert lex.slots["pricerange"].name == "priceRange"
    (tmp_path / "o.txt").write_text("Place3 is expensive .\n", encoding="utf-8")
    (tmp_path / "m.txt").write_text("name[Place3], priceRange[cheap]\n", encoding="utf-8")
    assert main(["score", "-m", "coverage", "--opt", f"lexicon={out}", "-i", str(tmp_path / "o.txt"),
                 "--mrs", str(tmp_path / "m.txt"), "-o", str(tmp_path / "s.jsonl"), "-q"]) == 0
    row = json.loads((tmp_path / "s.jsonl").read_text(encoding="utf-8"))
    assert [v["status"] for v in row["details"]["verdicts"]] == ["realised", "wrong"]
    # an existing file is not overwritten without --force
    assert main(["content", "mine", "-i", str(tmp_path / "pairs.csv"), "-o", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["content", "mine", "-i", str(tmp_path / "pairs.csv"), "-o", str(out), "--force", "-q"]) == 0


def test_qe_content_mine_reads_jsonl_refs_lists_mr_formats_and_triples(tmp_path, capsys):
    from qe.cli import main

    with open(tmp_path / "p.jsonl", "w", encoding="utf-8") as f:
        for mr, text in PAIRS:
            f.write(json.dumps({"mr": mr, "refs": [text, text]}) + "\n")
    assert main(["content", "mine", "-i", str(tmp_path / "p.jsonl"), "-o", str(tmp_path / "a.json"), "-q"]) == 0
    assert Lexicon.load(tmp_path / "a.json").settings["texts"] == 2 * len(PAIRS)
    # a value holding '|' reads as a triple unless the format is named
    _write_csv(tmp_path / "bar.csv", [(f"name[Bar | Grill {i}], food[Thai]", f"Bar | Grill {i} serves Thai food .")
                                      for i in range(6)])
    assert main(["content", "mine", "-i", str(tmp_path / "bar.csv"), "-o", str(tmp_path / "b.json"),
                 "--mr-format", "e2e", "-q"]) == 0
    assert "food" in Lexicon.load(tmp_path / "b.json").slots
    triples = [("Ana | birthPlace | Lima", "Ana was born in Lima ."), ("Bo | birthPlace | Oslo", "Bo was born in Oslo ."),
               ("Cy | birthPlace | Rome", "Cy , born in Rome , sings .")]
    _write_csv(tmp_path / "t.csv", triples, text_col="text")
    assert main(["content", "mine", "-i", str(tmp_path / "t.csv"), "-o", str(tmp_path / "t.json")]) == 0
    assert "triples lexicon from 3 texts" in capsys.readouterr().out
    assert "born" in Lexicon.load(tmp_path / "t.json").properties["birthplace"]


@pytest.mark.parametrize("content, suffix, message", [
    ("mr,ref\n,Zed is cheap .\n", ".csv", "p.csv:2: field 'mr' is missing or empty"),
    ("mr,comment\nname[Zed],x\n", ".csv", "p.csv:2: no text"),
    ('{"mr": "name[Zed]", "ref": "Zed ."}\n[1]\n', ".jsonl", "p.jsonl:2: expected a JSON object"),
    ('{"mr": "name[Zed", "ref": "Zed ."}\n', ".jsonl", "p.jsonl:1"),
    ("mr,ref\nname[Zed],Zed .\nA | country | B,A is in B .\n", ".csv", "mixes RDF-triple MRs with slot MRs"),
    ("mr\tref\n", ".tsv", "cannot tell its format"),
])
def test_qe_content_mine_bad_input_is_one_line_naming_file_line_and_field(tmp_path, capsys, content, suffix,
                                                                         message):
    from qe.cli import main

    path = tmp_path / f"p{suffix}"
    path.write_text(content, encoding="utf-8")
    assert main(["content", "mine", "-i", str(path), "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "x.json").exists()
