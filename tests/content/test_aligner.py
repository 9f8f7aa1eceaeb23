"""The learned aligner (qe.content.aligner): its generated labels, and a tiny random BERT trained through
``task=content_aligner``, exported and used by the coverage scorer."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from qe.content import Matcher
from qe.content.aligner_data import LABELS, Inventory, drop_spans, fold_of, make_examples

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PAIRS = HERE / "aligner_pairs.csv"

ROWS = [
    {"mr": "name[The Eagle], priceRange[cheap], familyFriendly[yes]",
     "ref": "The Eagle is a cheap place for families, kid friendly.",
     "orig_mr": "name[The Eagle], priceRange[cheap], familyFriendly[yes], area[riverside]"},
    {"mr": "name[Aromi], area[riverside], priceRange[high]", "ref": "Aromi is a high priced place by the riverside."},
    {"mr": "name[Zizzi], area[city centre]", "ref": "Zizzi is in the city centre.",
     "orig_mr": "name[Zizzi], area[riverside], familyFriendly[no]"},
]


def test_labels_of_three_hand_written_rows():
    inv = Inventory.from_rows(ROWS)
    got = [(e.kind, LABELS[e.label], e.query, e.text)
           for e in make_examples(ROWS, Matcher(), inv, np.random.default_rng(0), p_entity=0.0)]
    eagle = "the eagle is a cheap place for families , kid friendly ."
    aromi = "aromi is a high priced place by the riverside ."
    zizzi = "zizzi is in the city centre ."
    assert got == [
        # every fact of the MR the text realises (name kept too: three names are no entity slot)
        ("fact", "realised", "name : The Eagle", eagle),
        ("fact", "realised", "price range : cheap", eagle),
        ("fact", "realised", "family friendly : yes", eagle),
        # the rules read familyFriendly from "families" (the first word of its name), so it can be dropped; what is
        # left, "kid friendly", the rules do not read (a lexicon does)
        ("drop", "omitted", "family friendly : yes", "the eagle is a cheap place , kid friendly ."),
        ("swap", "wrong", "price range : cheap", "the eagle is a high place for families , kid friendly ."),
        ("add", "omitted", "area : riverside", eagle),  # a slot the MR does not hold
        ("slot", "realised", "name", eagle),
        ("slot_absent", "omitted", "area", eagle),
        ("real", "omitted", "area : riverside", eagle),  # orig_mr's fact the cleaned MR dropped
        ("fact", "realised", "name : Aromi", aromi),
        ("fact", "realised", "area : riverside", aromi),
        ("fact", "realised", "price range : high", aromi),
        ("drop", "omitted", "name : Aromi", "is a high priced place by the riverside ."),
        ("swap", "wrong", "name : The Eagle", aromi),  # the MR asks for another value of a slot the text states
        ("add", "omitted", "family friendly : yes", aromi),
        ("slot", "realised", "price range", aromi),
        ("slot_absent", "omitted", "family friendly", aromi),
        ("fact", "realised", "name : Zizzi", zizzi),
        ("fact", "realised", "area : city centre", zizzi),
        ("drop", "omitted", "area : city centre", "zizzi is ."),
        ("swap", "wrong", "area : riverside", zizzi),
        ("add", "omitted", "price range : high", zizzi),
        ("slot", "realised", "area", zizzi),
        ("slot_absent", "omitted", "price range", zizzi),
        ("real", "wrong", "area : riverside", zizzi),  # the cleaned MR holds area with another value
        ("real", "omitted", "family friendly : no", zizzi),
    ]


def test_swaps_the_matcher_reads_as_compatible_are_skipped_and_drops_take_their_lead_words():
    from qe.content import mine

    # the lexicon learns that "cheap" is written for both values: asking "less than £20" of a cheap text is no error
    rows = [{"mr": f"name[X{i}], priceRange[{v}]", "ref": f"X{i} is {w}."}
            for i in range(12) for v, w in (("cheap", "cheap"), ("less than £20", "cheap"), ("high", "high"),
                                            ("high", "expensive"))]
    rows += [{"mr": f"name[Y{i}], area[riverside]", "ref": f"Y{i} is by the riverside."} for i in range(24)]
    m = Matcher(mine([(r["mr"], r["ref"]) for r in rows], min_count=5))
    assert m.align("name[X0], priceRange[less than £20]", "X0 is cheap.").verdicts[1].status == "realised"
    inv = Inventory({"pricerange": {"name": "priceRange", "kind": "category", "values": ["cheap", "less than £20"]}})
    swaps = [e for seed in range(8) for e in make_examples(rows[:1], m, inv, np.random.default_rng(seed),
                                                          slot_queries=False, p_entity=0.0) if e.kind == "swap"]
    # only the text-side swap is left: the text states "less than £20" where the MR asks for "cheap"
    assert swaps and {(e.query, e.text) for e in swaps} == {("price range : cheap", "x0 is less than £ 20 .")}
    assert drop_spans("it is in the city centre .".split(), [(4, 6)]) == ["it", "is", "."]


def test_folds_are_the_experiments_split():
    keys = [f"mr{i}" for i in range(20)]
    rng = np.random.default_rng(1)
    assert fold_of(keys * 2, 5, 1) == dict(zip(sorted(keys), (rng.permutation(20) % 5).tolist()))


# ------------------------------------------------------------------------------------------------ tiny training
@pytest.fixture(scope="module")
def tiny_export(tmp_path_factory):
    """task=content_aligner for two steps on the hand-written pairs, with a tiny random BERT."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    sys.path.insert(0, str(REPO / "tests"))
    from tiny_models import make_tiny

    from qe.training import run_training

    tmp = tmp_path_factory.mktemp("aligner")
    tiny = make_tiny(tmp / "tiny")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[
            "task=content_aligner", f"paths.output_dir={tmp}/run", f"paths.root_dir={tmp}", f"export_dir={tmp}/export",
            f"model.encoder={tiny['mlm_dir']}", f"data.source={PAIRS}", "data.batch_size=8", "data.val_fraction=0.2",
            "trainer=cpu", "trainer.max_steps=2", "trainer.val_check_interval=1", "logger=none", "ckpt_path=null",
            "trainer.enable_progress_bar=false", "demo_sentences=[]"])
    GlobalHydra.instance().clear()
    metrics = run_training(cfg)
    return Path(metrics["export_path"])


def test_tiny_aligner_trains_exports_and_decides_what_the_matcher_cannot(tiny_export):
    import qe
    from qe.core.export import read_manifest

    man = read_manifest(tiny_export, expected_kind="content_aligner")
    assert man["data"]["train_pairs"] > 0 and man["data"]["held_out"] == []
    # a threshold and an additions setting per mode, chosen on the held-out rows
    assert set(man["config"]["thresholds"]) == set(man["config"]["additions"]) == {"combined", "override", "aligner"}
    assert all(0.0 < t < 1.0 for t in man["config"]["thresholds"].values())
    assert "val/omission_f1_matcher" in man["metrics"]
    scorer = qe.load("coverage", aligner=str(tiny_export))
    assert "aligner" in scorer.signature and "matcher+aligner" in scorer.signature
    mr, text = "name[The Eagle], priceRange[cheap]", "The Eagle is not pricey."
    assert Matcher().align(mr, text).verdicts[1].status == "omitted"  # no word of the rules says "cheap"
    d = scorer.details([text], mrs=[mr])[0]
    name, price = d["verdicts"]
    assert (name["engine"], name["status"]) == ("matcher", "realised")  # the matcher's realised verdicts stay
    assert price["engine"] == "aligner" and price["status"] in LABELS and 0 < price["confidence"] <= 1
    # the aligner alone decides every fact
    alone = qe.load("coverage", aligner=str(tiny_export), aligner_mode="aligner").details([text], mrs=[mr])[0]
    assert [v["engine"] for v in alone["verdicts"]] == ["aligner", "aligner"]
    # the matcher's wrong verdicts stay, unless the aligner overrides them
    mr2, text2 = "name[The Eagle], familyFriendly[yes]", "The Eagle is not family friendly."
    assert scorer.details([text2], mrs=[mr2])[0]["verdicts"][1] == {
        "slot": "familyFriendly", "value": "yes", "status": "wrong", "said": "not family friendly", "engine": "matcher",
        "said_value": "no"}
    over = qe.load("coverage", aligner=str(tiny_export), aligner_mode="override", aligner_threshold=1.0,
                   aligner_additions=True)
    v = over.details([text2], mrs=[mr2])[0]["verdicts"][1]
    assert v["engine"] == "aligner" and v["status"] in ("omitted", "wrong")  # nothing reaches P(realised) >= 1
    assert "engine:matcher+aligner-override|" in over.signature and "@t1|" in over.signature
    assert np.isfinite(scorer.score([text], mrs=[mr])[0])


def test_bad_aligner_options_and_exports(tiny_export, tmp_path):
    from qe.content.scorer import CoverageScorer
    from qe.errors import ExportError

    with pytest.raises(ValueError, match="aligner_mode"):
        CoverageScorer(aligner=str(tiny_export), aligner_mode="both")
    with pytest.raises(ValueError, match="aligner_threshold"):
        CoverageScorer(aligner=str(tiny_export), aligner_threshold=2)
    with pytest.raises(ExportError):
        CoverageScorer(aligner=str(tmp_path))  # not an export


def test_cli_passes_the_aligner_option(tiny_export, tmp_path):
    import json

    from qe.cli import main

    (tmp_path / "out.txt").write_text("The Eagle is not pricey.\n")
    (tmp_path / "mrs.txt").write_text("name[The Eagle], priceRange[cheap]\n")
    rc = main(["score", "-m", "coverage", "--opt", f"aligner={tiny_export}", "-i", str(tmp_path / "out.txt"),
               "--mrs", str(tmp_path / "mrs.txt"), "-o", str(tmp_path / "s.jsonl")])
    assert rc == 0
    row = json.loads((tmp_path / "s.jsonl").read_text().splitlines()[0])
    text = json.dumps(row)
    assert '"engine": "aligner"' in text
