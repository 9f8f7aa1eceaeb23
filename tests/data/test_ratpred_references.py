"""Human references for EMNLP17 records (qe.data.references): MR normalisation, source parsing, coverage."""
import json

import pytest

from conftest import needs_data
from qe.data import load_dataset
from qe.data.references import attach_references, bagel_references, mr_key, parse_mr, sf_references
from qe.errors import RecordError

SF_HEADER = "#\n#\n# Copyright\n#\n#\n"


@pytest.fixture
def data_dir(tmp_path):
    """A tiny data directory in the real file formats (sfx JSON with '#' header, BAGEL, EMNLP17 CSV)."""
    hot = tmp_path / "sfx" / "hotel"
    res = tmp_path / "sfx" / "restaurant"
    hot.mkdir(parents=True)
    res.mkdir(parents=True)
    hotel_test = [
        ["inform(name='hotel kabuki';address='1625 post street')", "hotel kabuki is at 1625 post street", "HDC a"],
        ["inform(name='hotel kabuki';address='1625 post street')", "the address of hotel kabuki is 1625 post street",
         "HDC a"],
        ["?select(hasinternet='yes';hasinternet='no')", "do you want internet or not", "HDC b"],
        ["inform_count(type='hotel';count='182';area=dont_care)", "there are 182 hotel -s if area does not matter",
         "HDC c"],
    ]
    (hot / "test.json").write_text(SF_HEADER + json.dumps(hotel_test))
    (hot / "train.json").write_text(SF_HEADER + json.dumps(
        [["inform(name='hotel kabuki';address='1625 post street')", "train ref for kabuki", "HDC a"]]))
    (hot / "valid.json").write_text(SF_HEADER + "[]")
    for sp in ("train", "valid", "test"):
        rows = [["?confirm(pricerange=dont_care)", f"you do not care about price ? ({sp})", "HDC d"]] if sp == "valid" \
            else []
        (res / f"{sp}.json").write_text(SF_HEADER + json.dumps(rows))
    (tmp_path / "bagel").mkdir()
    (tmp_path / "bagel" / "ACL10-inform-training.txt").write_text(
        'FULL_DA = inform(name="Green Man",eattype=restaurant)\n'
        'ABSTRACT_DA = inform(name="X1",eattype=restaurant) \n'
        '-> "[name+X]X []is a [eattype+restaurant]restaurant.";\n\n'
        'FULL_DA = inform(name="Avalon",near="The Bakers")\n'
        'ABSTRACT_DA = inform(name="X1",near="X2")\n'
        '-> "[name+X]X []is near [near+X]X";\n\n')
    (tmp_path / "emnlp17").mkdir()
    hdr = ("dataset,system,mr_type,mr,sys_ref,TER,Bleu_1,Bleu_2,Bleu_3,Bleu_4,ROUGE_L,NIST,LEPOR,CIDEr,METEOR,"
           "sim.mr.sys,lev.dist,informativeness,naturalness,quality,domain\n")
    rows = [
        ("SFHOT", "WEN", "inform", "inform(name='hotel kabuki',address='1625 post st')", "kabuki is on post st."),
        ("SFHOT", "LOLS", "select", "select(has_internet='yes or no')", "internet?"),
        ("SFHOT", "LOLS", "inform", "inform(type='hotel',count='182',area=dont_care)", "182 hotels."),
        ("SFRES", "WEN", "confirm", "confirm(price_range=dont_care)", "any price?"),
        ("BAGEL", "LOLS", "inform", "inform(name='X',eattype=restaurant)", "x is a restaurant."),
        ("BAGEL", "LOLS", "inform", "inform(name='X',near='X')", "x is near x."),
        ("SFRES", "WEN", "inform", "inform(name='nowhere')", "no refs for me."),
    ]
    with open(tmp_path / "emnlp17" / "emnlp_data_medians.csv", "w") as f:
        f.write(hdr)
        for r in rows:
            f.write(",".join(f'"{x}"' for x in r) + "," + ",".join(["0"] * 12) + ",5,4,3,X\n")
    return tmp_path


def test_parse_mr_both_notations():
    assert parse_mr("?select(goodformeal=dont_care;goodformeal=dinner')") == \
        ("select", [("goodformeal", "dont_care"), ("goodformeal", "dinner")])
    assert parse_mr("request(area)") == ("request", [("area", None)])
    assert parse_mr("reqmore()") == ("reqmore", [])
    with pytest.raises(RecordError, match="rec-7.*cannot parse MR"):
        parse_mr("inform name=x", "rec-7")


def test_mr_key_normalisation_rules():
    # underscores in slot names, quotes, order, ';' vs ',', '?' prefix
    assert mr_key("inform(price_range='cheap',name='x')") == mr_key("inform(name=x;pricerange=cheap)")
    assert mr_key("confirm(area=dont_care)") == mr_key("?confirm(area=dontcare)")
    # select alternatives: one value 'a or b' == repeated slot
    assert mr_key("select(has_internet='yes or no')") == mr_key("?select(hasinternet='yes';hasinternet='no')")
    # inform with a count slot is SF's inform_count
    assert mr_key("inform(type='hotel',count='3')") == mr_key("inform_count(type='hotel';count='3')")
    # street abbreviations in addresses
    assert mr_key("inform(address='1 post st')") == mr_key("inform(address='1 post street')")
    # but different values stay different
    assert mr_key("inform(name='a')") != mr_key("inform(name='b')")


def test_sources_parse_and_hdc_column_ignored(data_dir):
    refs = sf_references("SFHOT", "test", data_dir)
    assert [r.ref for r in refs][3] == "there are 182 hotels if area does not matter"  # " -s" re-attached
    assert all("HDC" not in r.ref for r in refs)  # third element (template output) never used
    assert refs[0].source == "sfx/hotel/test.json#0"
    bag = bagel_references(data_dir)
    assert [r.ref for r in bag] == ["x is a restaurant.", "x is near x"]
    assert bag[0].mr == "inform(name='X',eattype=restaurant)"


def test_attach_references_coverage_and_sources(data_dir):
    from qe.data.datasets import emnlp17

    recs, rep = attach_references(emnlp17(data_dir=data_dir), data_dir)
    by = {r.mr: r for r in recs}
    kab = by["inform(name='hotel kabuki',address='1625 post st')"]
    # test split preferred: the train-split reference is not mixed in by default
    assert kab.refs == ["hotel kabuki is at 1625 post street", "the address of hotel kabuki is 1625 post street"]
    assert kab.extra["ref_sources"] == ["sfx/hotel/test.json#0", "sfx/hotel/test.json#1"]
    assert by["select(has_internet='yes or no')"].refs == ["do you want internet or not"]
    # SFRES MR only in the valid split: fallback
    assert by["confirm(price_range=dont_care)"].extra["ref_sources"] == ["sfx/restaurant/valid.json#0"]
    assert by["inform(name='X',near='X')"].refs == ["x is near x"]
    assert by["inform(name='X',near='X')"].extra["ref_match"] == "exact"
    none = by["inform(name='nowhere')"]
    assert none.refs == [] and none.extra["ref_match"] == "none"
    assert rep["records"] == 7 and rep["matched"] == 6 and rep["unmatched_mrs"] == ["inform(name='nowhere')"]
    # mode="all" merges splits
    recs_all, _ = attach_references(emnlp17(data_dir=data_dir), data_dir, mode="all")
    assert "train ref for kabuki" in {r.mr: r for r in recs_all}[kab.mr].refs
    # the plain emnlp17 dataset stays reference-free (backward compatible)
    assert all(r.refs == [] for r in load_dataset("emnlp17", data_dir=data_dir))
    assert len(load_dataset("emnlp17_refs", data_dir=data_dir)) == 7


@needs_data
def test_real_emnlp17_full_coverage():
    recs = load_dataset("emnlp17_refs")
    assert len(recs) == 2460
    assert all(r.refs for r in recs), [r.mr for r in recs if not r.refs][:5]
    srcs = {s.split("#")[0] for r in recs for s in r.extra["ref_sources"]}
    assert "sfx/hotel/test.json" in srcs and "bagel/ACL10-inform-training.txt" in srcs
    # SF references are human-authored, never the template (HDC) column
    sfh = [r for r in recs if r.dataset == "SFHOT"]
    assert sum(len(r.refs) for r in sfh) / len(sfh) > 2


@needs_data
def test_baselines_cli_writes_rows_into_a_new_directory(tmp_path):
    """The metric-row CLI creates its output directory and reproduces the paper's BLEU row from the authors' column."""
    import json

    from experiments import ratpred

    out = tmp_path / "new" / "ratpred_baselines.json"
    ratpred.main(["baselines", "--out", str(out)])
    rows = json.loads(out.read_text())["rows"]
    bleu = rows["BLEU* (authors' column)"]
    assert (round(bleu["pearson"], 3), round(bleu["spearman"], 3), round(bleu["mae"], 3)) == (0.074, 0.061, 2.264)
    assert round(rows["Constant"]["mae"], 3) == 1.013
