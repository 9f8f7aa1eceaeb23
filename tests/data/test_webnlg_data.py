"""WebNLG 2020 data (qe.data.webnlg): RDF triple MRs, the rated records with per-annotator ratings, the train/dev XML
read from .tar.xz archives, and the registrations (load_dataset, corpus sources, dataset config, recipe)."""
import io
import json
import math
import tarfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from qe.data import load_dataset
from qe.data.corpora import load_source
from qe.data.webnlg import (CRITERIA, REFERENCE_SYSTEM, parse_triples, triples_mr, webnlg2020, webnlg_entries,
                            webnlg_references, webnlg_texts)
from qe.errors import RecordError
from qe.core.paths import resolve_data_dir

REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------------------------ triples
def test_parse_triples_json_and_pipe_notations():
    want = [("Aarhus_Airport", "cityServed", "Aarhus"), ("Aarhus", "leader", "Jacob_Bundsgaard")]
    js = '[["Aarhus_Airport", "cityServed", "Aarhus"], ["Aarhus", "leader", "Jacob_Bundsgaard"]]'
    assert parse_triples(js) == want
    assert parse_triples("Aarhus_Airport | cityServed | Aarhus\n  Aarhus | leader | Jacob_Bundsgaard\n\n") == want
    assert parse_triples("Aarhus_Airport | cityServed | Aarhus; Aarhus | leader | Jacob_Bundsgaard") == want
    # a ';' that does not separate triples stays in the value; quotes and language tags are kept as written
    assert parse_triples('Ab | motto | "Work; pray"@en') == [("Ab", "motto", '"Work; pray"@en')]
    assert parse_triples(triples_mr(want)) == want  # the records' MR string reads back
    assert triples_mr([("Zürich", "p", "o")]) == '[["Zürich", "p", "o"]]'


@pytest.mark.parametrize("text, msg", [
    ('[["a", "b", "c"], ["d", "e"]]',
     r"^f\.jsonl:7 \(id='r1'\): field 'mr': triple 2 is .*expected \[subject, property, object\]"),
    ('[["a", "b", "c"]', r"field 'mr': not valid JSON triples"),
    ('[["a", "", "c"]]', r"triple 1: property must be a non-empty string"),
    ("[]", r"non-empty JSON list"),
    ("a | b | c\nd | e", r"field 'mr': triple 2: expected 'subject \| property \| object'.*found 'd \| e'"),
    ("a | b | c; d | e", r"triple 1: expected .* found 'd \| e'"),
    ("   ", r"no triples"),
])
def test_parse_triples_errors_name_where(text, msg):
    with pytest.raises(RecordError, match=msg):
        parse_triples(text, "f.jsonl:7 (id='r1'): field 'mr'")


# ------------------------------------------------------------------------------------------ tiny fixtures
def _ann(worker, c, d, f, r, t, **kw):
    return {"worker": worker, "correctness": c, "data_coverage": d, "fluency": f, "relevance": r,
            "text_structure": t, **kw}


def _rated(i, system, output, anns, sample_id=3, mr=None, **kw):
    mr = mr or [["MotorSport_Vision", "city", "Fawkham"]]
    means = {c: sum(a[c] for a in anns) / len(anns) for c in CRITERIA}
    d = {"id": f"webnlg20-{i}", "dataset": "WebNLG2020", "system": system, "mr": mr,
         "refs": ["MotorSport Vision is located in Fawkham."], "output": output, "ratings": means,
         "category": "Airport", "size": len(mr), "sample_id": sample_id, "test_eid": f"Id{sample_id}",
         "domain": "type3", "n_annotators": len(anns), "ratings_z": {c: 0.1 for c in CRITERIA},
         "annotator_ratings": anns, "output_source": None if output is None else f"submissions/{system}:{sample_id}"}
    d.update(kw)
    return d


def _human_lines():
    return [
        _rated(1, "sysA", "MotorSport Vision is in Fawkham.",
               [_ann("w1", 98, 98, 96, 96, 96), _ann("w2", 99, 100, 93, 100, 100)]),
        _rated(2, REFERENCE_SYSTEM, None, [_ann("w3", 100, 100, 100, 79, 100, feedback="not sure about UK")],
               note="which reference annotators saw is not public"),
        _rated(3, "sysB", "Fawkham.", [_ann("w1", 40, 30, 80, 70, 60), _ann("w3", 50, 20, 70, 60, 50),
                                       _ann("w4", 45, 25, 75, 65, 55)],
               mr=[["Aarhus_Airport", "cityServed", "Aarhus"], ["Aarhus", "leader", "Jacob_Bundsgaard"]],
               sample_id=5),
    ]


def _write_human(root: Path, lines) -> Path:
    p = root / "webnlg2020" / "human_en.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    return p


AIRPORT = """<?xml version='1.0' encoding='utf-8'?>
<benchmark>
  <entries>
    <entry category="Airport" eid="Id1" shape="(X (X (X)))" shape_type="chain" size="2">
      <originaltripleset>
        <otriple>Aarhus | leaderName | Jacob_Bundsgaard</otriple>
        <otriple>Aarhus_Airport | city | Aarhus</otriple>
      </originaltripleset>
      <modifiedtripleset>
        <mtriple>Aarhus | leader | Jacob_Bundsgaard</mtriple>
        <mtriple>Aarhus_Airport | cityServed | Aarhus</mtriple>
      </modifiedtripleset>
      <lex comment="good" lid="Id1">Aarhus airport serves the city of Aarhus whose leader is Jacob Bundsgaard.</lex>
      <lex comment="good" lid="Id2">Aarhus airport serves the city of Aarhus where
        Jacob Bundsgaard is a leader.</lex>
    </entry>
    <entry category="Airport" eid="Id2" shape="(X (X))" shape_type="NA" size="1">
      <originaltripleset>
        <otriple>Aarhus_Airport | operator | "Aarhus Lufthavn A/S"@en</otriple>
      </originaltripleset>
      <modifiedtripleset>
        <mtriple>Aarhus_Airport | operator | "Aarhus Lufthavn A/S"</mtriple>
      </modifiedtripleset>
      <lex comment="good" lid="Id1">Aarhus Airport is operated by Aarhus Lufthavn A/S.</lex>
    </entry>
  </entries>
</benchmark>
"""

ASTRONAUT = """<?xml version='1.0' encoding='utf-8'?>
<benchmark>
  <entries>
    <entry category="Astronaut" eid="Id1" shape="(X (X))" shape_type="NA" size="1">
      <originaltripleset>
        <otriple>Aarhus_Airport | operator | "Aarhus Lufthavn A/S"@en</otriple>
      </originaltripleset>
      <modifiedtripleset>
        <mtriple>Aarhus_Airport | operator | "Aarhus Lufthavn A/S"</mtriple>
      </modifiedtripleset>
      <lex comment="toFix" lid="Id1">Aarhus Lufthavn A/S runs Aarhus Airport.</lex>
      <lex comment="good" lid="Id2">Aarhus Airport is operated by Aarhus Lufthavn A/S.</lex>
    </entry>
  </entries>
</benchmark>
"""


def _write_archive(root: Path, split: str, files: dict[str, str]) -> Path:
    p = root / "webnlg2020" / f"{split}.tar.xz"
    p.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(p, "w:xz") as tf:
        for name, text in files.items():
            raw = text.encode("utf-8")
            info = tarfile.TarInfo(f"{split}/{name}")
            info.size = len(raw)
            tf.addfile(info, io.BytesIO(raw))
    return p


@pytest.fixture
def data_dir(tmp_path):
    _write_human(tmp_path, _human_lines())
    # archive order differs from name order on purpose: entries come back sorted by file name
    _write_archive(tmp_path, "train", {"2triples/Astronaut.xml": ASTRONAUT, "1triples/Airport.xml": AIRPORT})
    _write_archive(tmp_path, "dev", {"1triples/Airport.xml": AIRPORT})
    return tmp_path


# ------------------------------------------------------------------------------------------ rated records
def test_rated_records_per_annotator_ratings_and_reference_left_out(data_dir):
    recs = webnlg2020(data_dir)
    assert [r.id for r in recs] == ["webnlg20-1", "webnlg20-3"]  # the reference system is left out by default
    a, b = recs
    assert a.system == "sysA" and a.dataset == "WebNLG2020" and a.output == "MotorSport Vision is in Fawkham."
    assert parse_triples(a.mr) == [("MotorSport_Vision", "city", "Fawkham")] and json.loads(a.mr)
    assert a.ratings["fluency"] == pytest.approx(94.5)
    assert a.ratings["fluency@w1"] == 96 and a.ratings["fluency@w2"] == 93
    assert sorted(k for k in a.ratings if "@" in k) == sorted(f"{c}@{w}" for c in CRITERIA for w in ("w1", "w2"))
    assert len([k for k in b.ratings if "@" in k]) == 15
    for fld in ("ratings_z", "category", "size", "domain", "sample_id", "test_eid", "n_annotators"):
        assert fld in a.extra, fld
    assert a.extra["sample_id"] == 3 and b.extra["size"] == 2 and "annotator_ratings" not in a.extra
    assert a.refs == ["MotorSport Vision is located in Fawkham."]
    # through the registry, and with the reference for human-only tables: output "" (never a reference text)
    assert [r.id for r in load_dataset("webnlg2020", data_dir=data_dir)] == ["webnlg20-1", "webnlg20-3"]
    full = load_dataset("webnlg2020", data_dir=data_dir, include_reference=True)
    ref = next(r for r in full if r.system == REFERENCE_SYSTEM)
    assert len(full) == 3 and ref.output == "" and ref.ratings["relevance@w3"] == 79
    assert ref.extra["annotator_feedback"] == {"w3": "not sure about UK"} and "note" in ref.extra


def test_per_annotator_ratings_reach_the_evaluation(data_dir):
    """The evaluation's reader (build_eval_data) sees the '@' keys as annotators and items by sample_id."""
    from qe.evaluation.analysis import build_eval_data

    recs = webnlg2020(data_dir, include_reference=True)
    d = build_eval_data(recs, {"m": np.arange(len(recs), dtype=float)}, {}, item_key="sample_id", confounds=False)
    ann = d.annotations["fluency"]
    assert ann.shape == (3, 4)  # 3 records x workers w1..w4
    assert np.isnan(ann).sum() == 3 * 4 - 6  # 2 + 1 + 3 judgements
    assert list(d.item) == ["WebNLG2020\x1f3", "WebNLG2020\x1f3", "WebNLG2020\x1f5"]
    assert d.ratings["fluency"][2] == pytest.approx(75.0)


@pytest.mark.parametrize("edit, msg", [
    (lambda d: d.update(mr=[["a", "b"]]), r"human_en\.jsonl:2 \(id='webnlg20-3'\): field 'mr': triple 1 is"),
    (lambda d: d["ratings"].update(fluency=10.0), r":2 \(id='webnlg20-3'\): field 'ratings.fluency' is 10.0 but its "
                                                  r"annotators' mean is 75"),
    (lambda d: d.update(output=None), r":2 \(id='webnlg20-3'\): field 'output' must be a string"),
    (lambda d: d["annotator_ratings"][1].pop("relevance"), r"field 'annotator_ratings\[1\].relevance' is missing"),
    (lambda d: d["annotator_ratings"][1].update(worker="w1"), r"worker 'w1' rates this record twice"),
    (lambda d: d.update(size=3), r"field 'size' is 3 but 'mr' holds 2 triples"),
    (lambda d: d.pop("sample_id"), r"field 'sample_id' is missing"),
])
def test_rated_record_errors_name_file_line_record_and_field(tmp_path, edit, msg):
    lines = _human_lines()
    bad = lines[2]
    edit(bad)
    _write_human(tmp_path, [lines[0], bad])
    with pytest.raises(RecordError, match=msg):
        webnlg2020(tmp_path)


def test_rated_file_not_json_and_missing(tmp_path):
    p = _write_human(tmp_path, _human_lines()[:1])
    p.write_text(p.read_text() + '{"id": "x", \n')
    with pytest.raises(RecordError, match=r"human_en\.jsonl:2: not valid JSON"):
        webnlg2020(tmp_path)
    with pytest.raises(FileNotFoundError, match="human_en.jsonl"):
        webnlg2020(tmp_path / "nowhere")


# ------------------------------------------------------------------------------------------ XML archives
def test_xml_entries_texts_and_references(data_dir):
    (data_dir / "webnlg2020" / "human_en.jsonl").unlink()  # train/dev never read the rated file
    es = webnlg_entries("train", data_dir)
    assert [(e.member, e.eid, e.category, e.size) for e in es] == [
        ("train/1triples/Airport.xml", "Id1", "Airport", 2), ("train/1triples/Airport.xml", "Id2", "Airport", 1),
        ("train/2triples/Astronaut.xml", "Id1", "Astronaut", 1)]
    e = es[0]
    assert e.triples == (("Aarhus", "leader", "Jacob_Bundsgaard"), ("Aarhus_Airport", "cityServed", "Aarhus"))
    assert e.original_triples[0][0] == ("Aarhus", "leaderName", "Jacob_Bundsgaard")
    assert e.refs[1] == "Aarhus airport serves the city of Aarhus where Jacob Bundsgaard is a leader."  # squeezed
    assert e.line == 4 and es[1].line == 17 and e.shape_type == "chain"
    assert es[2].lexes[0].comment == "toFix"
    assert e.source == "webnlg2020/train.tar.xz/train/1triples/Airport.xml#Id1"
    assert len(webnlg_texts("train", data_dir)) == 5 and len(webnlg_texts("dev", data_dir)) == 3
    refs = webnlg_references("train", data_dir)
    op = triples_mr([("Aarhus_Airport", "operator", '"Aarhus Lufthavn A/S"')])
    assert list(refs) == [e.mr, op]
    # two entries with the same triples pool their references; a repeated text is kept once
    assert refs[op] == ["Aarhus Airport is operated by Aarhus Lufthavn A/S.",
                        "Aarhus Lufthavn A/S runs Aarhus Airport."]


def test_reference_records_and_corpus_sources(data_dir):
    (data_dir / "webnlg2020" / "human_en.jsonl").unlink()
    recs = load_dataset("webnlg", data_dir=data_dir, split="train")
    assert len(recs) == 5 and all(r.system == "human" and not r.ratings for r in recs)
    r = recs[3]  # Astronaut Id1, lex Id1: its triple set is shared with Airport Id2
    assert r.output == "Aarhus Lufthavn A/S runs Aarhus Airport." and r.output in r.refs and len(r.refs) == 2
    assert r.extra["ref_sources"] == ["webnlg2020/train.tar.xz/train/1triples/Airport.xml#Id2/Id1",
                                      "webnlg2020/train.tar.xz/train/2triples/Astronaut.xml#Id1/Id1"]
    assert r.extra["mr_group"] == recs[2].extra["mr_group"] == 1 and r.extra["comment"] == "toFix"
    assert parse_triples(r.mr) == [("Aarhus_Airport", "operator", '"Aarhus Lufthavn A/S"')]
    # RatPred reads the references through protocol.target_data -> load_dataset(name, **options)
    assert len(load_dataset("webnlg", data_dir=data_dir, split="dev")) == 3
    assert load_source({"name": "webnlg", "split": "dev"}, data_dir) == webnlg_texts("dev", data_dir)
    assert load_source("webnlg-train", data_dir) == webnlg_texts("train", data_dir)
    assert load_source({"name": "webnlg-dev"}, data_dir) == webnlg_texts("dev", data_dir)
    with pytest.raises(ValueError, match="contradicts"):
        load_source({"name": "webnlg-dev", "split": "train"}, data_dir)
    with pytest.raises(ValueError, match="split='test'"):
        webnlg_texts("test", data_dir)


@pytest.mark.parametrize("edit, msg", [
    (lambda s: s.replace("<mtriple>Aarhus | leader | Jacob_Bundsgaard</mtriple>", "<mtriple>Aarhus | leader</mtriple>"),
     r"dev\.tar\.xz/dev/1triples/Airport\.xml:10 \(entry eid='Id1'\): field 'mtriple': expected 'subject \| "
     r"property \| object'"),
    (lambda s: s.replace("</lex>\n    </entry>\n    <entry", "</lex>\n    </entri>\n    <entry", 1),
     r"Airport\.xml:16: not well-formed XML \(mismatched tag"),
    (lambda s: s.replace('size="1"', 'size="2"'), r"Airport\.xml:17 \(entry eid='Id2'\): field 'size' is 2 but"),
    (lambda s: s.replace('lid="Id1">Aarhus Airport is operated by Aarhus Lufthavn A/S.</lex>', 'lid="Id1"> </lex>'),
     r"Airport\.xml:24 \(entry eid='Id2'\): field 'lex' \(lid='Id1'\) is empty"),
    (lambda s: s.replace('eid="Id2"', 'eid="Id1"'), r"Airport\.xml:17 \(entry eid='Id1'\): field 'eid': 'Id1' "
                                                    r"repeats the entry on line 4"),
])
def test_xml_errors_name_member_line_and_field(tmp_path, edit, msg):
    _write_archive(tmp_path, "dev", {"1triples/Airport.xml": edit(AIRPORT)})
    with pytest.raises(RecordError, match=msg):
        webnlg_entries("dev", tmp_path)


def test_corrupt_archive_is_one_error(tmp_path):
    p = _write_archive(tmp_path, "dev", {"1triples/Airport.xml": AIRPORT})
    p.write_bytes(p.read_bytes()[:60])
    with pytest.raises(RecordError, match=r"dev\.tar\.xz: cannot"):
        webnlg_entries("dev", tmp_path)


# ------------------------------------------------------------------------------------------ configs and recipe
def test_dataset_config_and_recipe():
    cfg = yaml.safe_load((REPO / "qe" / "conf" / "dataset" / "webnlg2020.yaml").read_text())
    assert cfg["name"] == "webnlg2020" and cfg["item_key"] == "sample_id"
    assert cfg["human_systems"] == [REFERENCE_SYSTEM] and cfg["rating_range"] == [0, 100]
    assert cfg["options"] == {"include_reference": False}
    from qe.data.recipes import load_recipes

    r = load_recipes()["webnlg2020"]
    assert "CC BY-NC-SA 4.0" in r["license"] and r["converter"] == "webnlg2020"
    assert {f["path"] for f in r["files"]} == {"webnlg2020/train.tar.xz", "webnlg2020/dev.tar.xz",
                                                "webnlg2020/human_en.jsonl"}
    assert all(len(f["sha256"]) == 64 for f in r["files"])


# ------------------------------------------------------------------------------------------ the shared data
_REAL = resolve_data_dir(None) / "webnlg2020"
needs_webnlg = pytest.mark.skipif(not (_REAL / "human_en.jsonl").is_file(),
                                  reason=f"WebNLG 2020 data absent ({_REAL}; set QE_DATA_DIR to a folder holding "
                                         "webnlg2020/)")


@needs_webnlg
def test_shared_webnlg2020_counts_match_its_readme():
    from qe.data.recipes import verify

    assert [s for _, s in verify("webnlg2020")] == ["ok"] * 3  # sha256 of the three files
    full = webnlg2020(include_reference=True)
    assert len(full) == 3025
    ref = [r for r in full if r.system == REFERENCE_SYSTEM]
    assert len(ref) == 178 and all(r.output == "" for r in ref)
    recs = webnlg2020()
    systems = {r.system for r in recs}
    assert len(recs) == 2847 and len(systems) == 16 and REFERENCE_SYSTEM not in systems
    assert len({r.extra["sample_id"] for r in full}) == 178
    judgements = [(r.id, k.split("@", 1)[1]) for r in full for k in r.ratings if k.startswith("fluency@")]
    assert len(judgements) == 8453 and len({w for _, w in judgements}) == 88
    assert sum(r.system == "Baseline-FORGE2020" for r in recs) == 177
    assert [r.extra["sample_id"] for r in recs if r.output == ""] == [533]  # FORGE2017's one empty output
    assert all(not math.isnan(r.ratings[c]) for r in full for c in CRITERIA)
    tr, dv = webnlg_entries("train"), webnlg_entries("dev")
    assert (len(tr), sum(len(e.lexes) for e in tr)) == (13211, 35426)
    assert (len(dv), sum(len(e.lexes) for e in dv)) == (1667, 4464)
    assert len({e.category for e in tr}) == 16
    assert len(load_source("webnlg-train")) == 35426 and len(load_source({"name": "webnlg", "split": "dev"})) == 4464
    assert len(load_dataset("webnlg", split="dev")) == 4464
    assert len(webnlg_references("train")) == 13123 and len(webnlg_references("dev")) == 1665
