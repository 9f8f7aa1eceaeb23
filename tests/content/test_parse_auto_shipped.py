"""Issue 56, items 4 and 5: a `,` inside a `;`-separated act parses, binary values in any spelling, `lexicon=auto`
by the MR's slots, and lexicons that ship with the package (checked against their checksums; equal to a fresh mine).

The two laptop sentences are the issue's own ("Not done until"); no laptop or TV dataset is read."""
from __future__ import annotations

import logging
import shutil

import pytest

from conftest import shared_data_dir
from qe.content import shipped
from qe.content.scorer import CoverageScorer, dataset_lexicon

EAGLE = "name[The Eagle], priceRange[cheap]"
LAPTOPS = [
    ("inform(name=satellite eurus 65;type=laptop;design=black finish , silver keyboard;price=499 euros;"
     "isforbusinesscomputing=false)",
     "the satellite eurus 65 is a laptop with a black finish , silver keyboard design for 499 euros . it is not for "
     "business computing ."),
    ("inform(name=pavilion 11;type=laptop;batteryrating=good;drive=500 gb;isforbusinesscomputing=true)",
     "the pavilion 11 laptop has a good battery rating and a 500 gb drive , and it is used for business computing ."),
]


@pytest.fixture
def no_data(tmp_path, monkeypatch):
    """An empty data directory and an empty models folder (no mined-lexicon cache)."""
    monkeypatch.setenv("QE_DATA_DIR", str(tmp_path / "empty-data"))
    (tmp_path / "empty-data").mkdir()
    monkeypatch.setenv("QE_MODELS", str(tmp_path / "models"))
    dataset_lexicon.cache_clear()
    yield tmp_path / "empty-data"
    dataset_lexicon.cache_clear()


@pytest.fixture(params=["no-data", "data"])
def data_dir_or_not(request, tmp_path, monkeypatch):
    """Both ways the issue asks about: an empty data directory, and the data folder present."""
    if request.param == "data":
        d = shared_data_dir()
        if d is None:
            pytest.skip("the data folder is absent")
    else:
        d = tmp_path / "empty-data"
        d.mkdir()
    monkeypatch.setenv("QE_DATA_DIR", str(d))
    monkeypatch.setenv("QE_MODELS", str(tmp_path / "models"))
    dataset_lexicon.cache_clear()
    yield d
    dataset_lexicon.cache_clear()


def _status(row, slot):
    return next(v["status"] for v in row["verdicts"] if v["slot"] == slot)


# ------------------------------------------------------------------------------ no data folder: the same check
def test_an_empty_data_folder_still_reads_a_wrong_value_and_an_invented_fact(no_data):
    import qe

    s = qe.load("coverage")
    wrong, invented = s.details(["The Eagle is an expensive pub.", "The Eagle is a cheap pub serving Chinese food."],
                                mrs=[EAGLE, EAGLE])
    assert _status(wrong, "priceRange") == "wrong"
    assert [v["status"] for v in invented["verdicts"]] == ["realised", "realised"]
    assert ("food", "Chinese") in [(h["slot"], h["value"]) for h in invented["hallucinated"]]
    assert f"auto[e2e:{shipped.load('e2e').checksum}]" in s.signature
    # named, the dataset lexicon is the shipped one too; mining it needs the data, and says which file is missing
    assert CoverageScorer(lexicon="sf").matcher.lexicon.checksum == shipped.load("sf").checksum
    with pytest.raises(FileNotFoundError, match=r"devel-fixed\.no-ol\.csv"):
        CoverageScorer(lexicon="e2e@data")


# ---------------------------------------------------------------------------------------- the laptop examples
@pytest.mark.parametrize("lexicon", ["auto", "none"])
def test_the_issue_laptop_examples_parse_realise_everything_and_invent_nothing(data_dir_or_not, lexicon):
    s = CoverageScorer(lexicon=lexicon)
    rows = s.details([t for _, t in LAPTOPS], mrs=[m for m, _ in LAPTOPS])
    for row in rows:
        assert [v["status"] for v in row["verdicts"]] == ["realised"] * 5, row["verdicts"]
        assert row["hallucinated"] == [] and row["repeated"] == []
    binary = [next(v for v in r["verdicts"] if v["slot"] == "isforbusinesscomputing") for r in rows]
    assert [b["value"] for b in binary] == ["false", "true"]  # the MR's own spelling is kept
    assert [b["said"] for b in binary] == ["not for business computing", "business computing"]


def test_auto_on_a_laptop_mr_uses_no_restaurant_or_hotel_slot(no_data, caplog):
    s = CoverageScorer()
    with caplog.at_level(logging.WARNING, logger="qe"):
        rows = s.details([t for _, t in LAPTOPS], mrs=[m for m, _ in LAPTOPS])
    assert all(r["hallucinated"] == [] for r in rows)  # "used" is not acceptscreditcards, "range" no name
    assert s.matcher.choose(LAPTOPS[0][0]) is None and s.matcher.choose(LAPTOPS[1][0]) is None
    assert s.signature_fields()["lexicon"] == "auto[rules]"
    warns = [r.getMessage() for r in caplog.records if "lexicon=auto" in r.getMessage()]
    assert len(warns) == 1  # once, for both MRs
    assert "design, isforbusinesscomputing" in warns[0] and "mrs[0]" in warns[0]
    # the SF lexicon, forced on the same text, is said not to fit; its trigger "use" of acceptscreditcards no longer
    # reads "it is used for business computing" as a hotel slot either: a verb trigger with no word of its slot
    # (credit, card) tied to it says nothing of the slot (Matcher._untied_predicates)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="qe"):
        forced = CoverageScorer(lexicon="sf").details([LAPTOPS[1][1]], mrs=[LAPTOPS[1][0]])[0]
    assert any("lexicon sf does not fit" in r.getMessage() for r in caplog.records)
    assert forced["hallucinated"] == []


# ------------------------------------------------------------------------------------ binary values, any spelling
@pytest.mark.parametrize("value", ["yes", "Yes", "true", "True", "TRUE", "1"])
@pytest.mark.parametrize("lexicon", ["auto", "none"])
def test_a_positive_binary_value_in_any_spelling(no_data, value, lexicon):
    s = CoverageScorer(lexicon=lexicon)
    mr = f"inform(name=pavilion 11;isforbusinesscomputing={value})"
    ok, neg = s.details(["the pavilion 11 is used for business computing .",
                         "the pavilion 11 is not for business computing ."], mrs=[mr, mr])
    assert _status(ok, "isforbusinesscomputing") == "realised"
    bad = next(v for v in neg["verdicts"] if v["slot"] == "isforbusinesscomputing")
    assert bad["status"] == "wrong" and bad["value"] == value  # a real contradiction is still caught


@pytest.mark.parametrize("value", ["no", "No", "false", "False", "0"])
def test_a_negative_binary_value_in_any_spelling(no_data, value):
    s = CoverageScorer()
    mr = f"inform(name=pavilion 11;isforbusinesscomputing={value})"
    ok, pos = s.details(["the pavilion 11 is not for business computing .",
                         "the pavilion 11 is used for business computing ."], mrs=[mr, mr])
    assert _status(ok, "isforbusinesscomputing") == "realised"
    assert _status(pos, "isforbusinesscomputing") == "wrong"


@pytest.mark.parametrize("value", ["yes", "true", "1"])
def test_a_known_binary_slot_reads_every_spelling_with_its_lexicon(no_data, value):
    """familyFriendly is binary in the E2E lexicon: true and 1 are yes there, so its mined triggers decide."""
    s = CoverageScorer()
    mr = f"name[The Eagle], familyFriendly[{value}]"
    yes, no = s.details(["The Eagle is family friendly.", "The Eagle is not family friendly."], mrs=[mr, mr])
    assert _status(yes, "familyFriendly") == "realised" and _status(no, "familyFriendly") == "wrong"
    assert "auto[e2e:" in s.signature


def test_one_and_zero_stay_numbers_on_a_slot_that_asks_no_yes_no_question(no_data):
    s = CoverageScorer(lexicon="none")
    row = s.details(["the pavilion 11 has 1 usb port ."], mrs=["inform(name=pavilion 11;usbports=1)"])[0]
    v = next(v for v in row["verdicts"] if v["slot"] == "usbports")
    assert v["status"] == "realised" and v["said"] == "1"


# -------------------------------------------------------------------------------- auto by slots, fit warnings
def test_auto_reports_invented_facts_only_of_the_chosen_lexicons_slots(no_data):
    from qe.core.surface import norm_slot

    s = CoverageScorer()
    mr = "name[The Eagle], eatType[pub]"
    row = s.details(["The Eagle is a pub that accepts credit cards and allows dogs, serving Chinese food."],
                    mrs=[mr])[0]
    e2e = shipped.load("e2e")
    assert s.matcher.choose(mr) == "e2e"
    assert row["hallucinated"] and {norm_slot(h["slot"]) for h in row["hallucinated"]} <= set(e2e.slots)
    assert not {"acceptscreditcards", "dogsallowed"} & {norm_slot(h["slot"]) for h in row["hallucinated"]}


def test_auto_reads_each_lexicons_checksum_once(no_data, monkeypatch):
    """The signature's checksum serialises the whole lexicon: read once per lexicon, not once per output (it was
    half of the time of a WebNLG run)."""
    from qe.content.lexicon import Lexicon

    calls = []
    real = Lexicon.checksum.fget
    monkeypatch.setattr(Lexicon, "checksum", property(lambda self: calls.append(1) or real(self)))
    s = CoverageScorer()
    mrs = ["name[The Eagle], eatType[pub]", "name[Zizzi], eatType[pub]", "name[Zizzi], food[Thai]"]
    s.details(["The Eagle is a pub.", "Zizzi is a pub.", "Zizzi serves Thai food."], mrs=mrs)
    assert len(calls) == 1
    assert s.signature_fields()["lexicon"] == f"auto[e2e:{shipped.load('e2e').checksum}]"


def test_an_explicit_lexicon_that_does_not_fit_is_used_with_one_warning(no_data, caplog):
    mrs = ["name[The Eagle], priceRange[cheap]", "name[Zizzi], food[Thai]"]
    outs = ["The Eagle is cheap.", "Zizzi serves Thai food."]
    with caplog.at_level(logging.WARNING, logger="qe"):
        CoverageScorer(lexicon="e2e").score(outs, mrs=mrs)  # fits: no warning
        assert not caplog.records
        s = CoverageScorer(lexicon="webnlg")
        s.score(outs, mrs=mrs)
        s.score(outs, mrs=mrs)
    warns = [r.getMessage() for r in caplog.records]
    assert len(warns) == 1 and "lexicon webnlg does not fit" in warns[0] and "mrs[0]" in warns[0]
    assert "RDF triple words only" in warns[0]
    assert s.signature_fields()["lexicon"] == f"webnlg:{shipped.load('webnlg').checksum}"


# ---------------------------------------------------------------------------------------- the shipped files
def test_the_shipped_files_match_their_checksums_and_readme():
    folder = shipped.lexicons_dir()
    sums = shipped.read_sums()
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert sorted(sums) == sorted(f"{n}.json" for n in shipped.NAMES)
    for name in shipped.NAMES:
        got = shipped.sha256(shipped.path(name).read_bytes())
        assert sums[f"{name}.json"] == got, name
        assert f"sha256 of {name}.json: `{got}`" in readme, name
        assert shipped.PROVENANCE[name]["licence"] in readme
        for rel, _, want in shipped.source_files(name):
            assert want and f"`{rel}`: `{want}`" in readme
    assert readme.strip() == shipped.readme(folder).strip()  # the README is what the generator writes
    for lic in ("CC BY-SA 4.0", "Apache-2.0", "CC BY-NC-SA 4.0"):
        assert lic in readme


def test_a_changed_shipped_file_is_a_clear_error_naming_it(tmp_path):
    folder = tmp_path / "lexicons"
    shutil.copytree(shipped.lexicons_dir(), folder)
    assert shipped.load("e2e", str(folder)).checksum == shipped.load("e2e").checksum
    p = folder / "sf.json"
    p.write_bytes(p.read_bytes().replace(b'"kind"', b'"kind" ', 1))
    with pytest.raises(shipped.ShippedLexiconError, match=r"sf\.json: sha256 .* does not match SHA256SUMS"):
        shipped.load("sf", str(folder))
    (folder / "webnlg.json").unlink()
    with pytest.raises(shipped.ShippedLexiconError, match=r"webnlg\.json: the shipped webnlg lexicon is missing"):
        shipped.load("webnlg", str(folder))
    (folder / shipped.SUMS).write_text("not a checksum line\n", encoding="utf-8")
    with pytest.raises(shipped.ShippedLexiconError, match=r"SHA256SUMS:1: expected"):
        shipped.load("e2e", str(folder) + "/")


def test_the_generator_refuses_data_that_is_not_the_published_files(tmp_path, capsys):
    data = tmp_path / "data"
    (data / "e2e").mkdir(parents=True)
    (data / "e2e" / "devel-fixed.no-ol.csv").write_text("mr,ref\nname[A],A .\n", encoding="utf-8")
    out = tmp_path / "out"
    assert shipped.main(["--data-dir", str(data), "--only", "e2e", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "devel-fixed.no-ol.csv: sha256" in err and "is not its recipe's" in err
    assert not out.exists()  # nothing half-written
    assert shipped.main(["--data-dir", str(tmp_path / "nowhere"), "--only", "sf", "--out", str(out)]) == 2
    assert "qe data download sfx" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("name", shipped.NAMES)
def test_the_shipped_lexicons_equal_a_fresh_mine(name):
    """A miner change without `python -m qe.content.shipped --data-dir ../shared/data` fails here (about 10-40 s per
    lexicon on one 2-core CPU thread)."""
    from qe.content.scorer import mine_dataset_lexicon

    d = shared_data_dir()
    if d is None or any(not p.is_file() for _, p, _ in shipped.source_files(name, d)):
        pytest.skip(f"the data the {name} lexicon is mined from is absent")
    fresh = shipped.render(mine_dataset_lexicon(name, str(d)))
    assert fresh == shipped.path(name).read_bytes(), (
        f"qe/resources/lexicons/{name}.json is not what the miner makes now: regenerate it with "
        f"`{shipped.COMMAND} --only {name}`")


def test_an_address_with_its_street_word_abbreviated_is_realised():
    """SF hotel references write the MR's "242 powell street" as "242 powell st" (22 of the 37 facts the check
    called not realised on the faithful SF hotel test references); the matcher reads the usual abbreviations, and
    nothing else moves (RatPred's value variants are not touched)."""
    from qe.content import Matcher
    from qe.core.surface import value_variants

    for mr, text in [("inform(name='hotel stratford';address='242 powell street')",
                      "hotel stratford is at 242 powell st"),
                     ("inform(name='the fairmont';address='10 van ness avenue')",
                      "the fairmont is at 10 van ness ave .")]:
        status = {v.slot: v.status for v in Matcher(None).align(mr, text).verdicts}
        assert status == {"name": "realised", "address": "realised"}, (text, status)
    al = Matcher(None).align("inform(name='the fairmont';address='10 van ness avenue')",
                             "the fairmont is at 12 van ness ave .")
    assert {v.slot: v.status for v in al.verdicts}["address"] != "realised"  # another number is not the address
    assert value_variants("242 powell street") == []
