"""The ``content_aligner`` export kind (qe.kinds): ``qe.load(<aligner export>)`` is the coverage scorer with that
aligner and the lexicon its training data names; the zoo fingerprints it on the dialogue-act / E2E probe set; and
``aligner=`` takes a zoo name as well as a directory (not built: one line with the build command, exit 3). Reuses
the tiny aligner export of test_aligner.py (a random tiny BERT trained for two steps on the hand-written pairs)."""
from __future__ import annotations

import math
import shutil

import pytest

import qe
from qe.content.scorer import CoverageScorer, trained_lexicon
from qe.errors import ExportError
from tests.content.test_aligner import tiny_export  # noqa: F401 - the module-scoped fixture

MR, TEXT = "name[The Eagle], priceRange[cheap]", "The Eagle is not pricey."
ZOO_NAME = "content-aligner-e2e"


@pytest.mark.parametrize("train, lexicon", [
    ({"data": {"source": "e2e"}}, "e2e"),  # the recipe's export: the E2E lexicon it was trained beside
    ({"data": {"source": "sf"}}, "sf"),
    ({"data": {"source": "webnlg"}}, "webnlg"),  # content-aligner-webnlg: the triple words of its training data
    ({"data": {"source": "/data/pairs.csv"}}, None),  # a CSV of pairs: the scorer's default
    ({"data": {"source": "e2e"}, "lexicon": "my_lexicon.json"}, "my_lexicon.json"),  # recorded: it wins
    ({"data": {"source": "e2e", "lexicon": "none"}}, "none"),
    ({}, None),
])
def test_the_default_lexicon_is_the_one_the_training_config_names(train, lexicon):
    assert trained_lexicon({"config": {"train": train}}) == lexicon
    assert trained_lexicon({}) is None


def test_loading_an_aligner_export_gives_the_coverage_scorer_with_it(tiny_export):  # noqa: F811
    from qe.kinds import EXPORT_FILES, EXPORT_KINDS, load_export

    assert "content_aligner" in EXPORT_KINDS and EXPORT_FILES["content_aligner"]["config"] == "aligner.json"
    scorer = qe.load(str(tiny_export))
    assert isinstance(scorer, CoverageScorer) and scorer.lexicon_name == "none"  # trained on a CSV of pairs
    same = qe.load("coverage", aligner=str(tiny_export))
    assert scorer.signature == same.signature and "matcher+aligner" in scorer.signature
    assert scorer.score([TEXT], mrs=[MR]) == same.score([TEXT], mrs=[MR])
    # options reach the scorer; another aligner is refused
    assert "aligner-override" in load_export(tiny_export, aligner_mode="override").signature
    with pytest.raises(ValueError, match="another aligner"):
        load_export(tiny_export, aligner="elsewhere")


def test_an_aligner_export_without_its_config_file_is_refused(tiny_export, tmp_path):  # noqa: F811
    broken = tmp_path / "broken"
    shutil.copytree(tiny_export, broken)
    (broken / "aligner.json").unlink()
    with pytest.raises(ExportError, match="aligner.json is missing"):
        qe.load(str(broken))


def test_it_is_fingerprinted_on_mr_probes_with_a_coverage_tolerance(tiny_export):  # noqa: F811
    from qe.zoo import fingerprint as fpm

    assert fpm.probe_set_for("content_aligner") == "mr_outputs"
    assert fpm.probe_set_for("content_aligner", manifest={"data": {"name": "webnlg2020-train"}}) == "mr_triples"
    tol = fpm.tolerance("content_aligner")
    assert tol is fpm.TOLERANCES["content_aligner"] and tol.score == 0.05 and "coverage" in tol.why
    fp = fpm.compute(tiny_export)
    assert fp["probe_set"] == "mr_outputs" and fp["n"] == len(fpm.load_probes("mr_outputs").rows)
    scores = [s for s in fp["scores"] if s is not None]
    assert scores and all(0.0 <= s <= 1.0 for s in scores)
    assert "val/omission_f1_matcher" in fp["validation"]
    # a rebuild with every verdict the same is equivalent; one changed verdict (>= 1/16 of a probe) is different
    ref = fpm.Identity("ref", "content_aligner", "a" * 12, fp)
    k = next(i for i, s in enumerate(fp["scores"]) if s is not None)
    for delta, status in ((0.0, "equivalent"), (1 / 16, "different")):
        moved = dict(fp, scores=list(fp["scores"]))
        moved["scores"][k] = abs(moved["scores"][k] - delta)
        assert fpm.compare(ref, fpm.Identity("new", "content_aligner", "b" * 12, moved)).status == status


def test_aligner_takes_a_zoo_name(tiny_export, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("QE_MODELS", str(tmp_path / "models"))
    shutil.copytree(tiny_export, tmp_path / "models" / ZOO_NAME)
    by_name = qe.load("coverage", aligner=ZOO_NAME)
    by_path = qe.load("coverage", aligner=str(tmp_path / "models" / ZOO_NAME))
    assert by_name.signature == by_path.signature
    assert by_name.details([TEXT], mrs=[MR]) == by_path.details([TEXT], mrs=[MR])
    assert isinstance(qe.load(ZOO_NAME), CoverageScorer)  # the zoo name through qe.load: the kind's loader


def test_a_zoo_aligner_that_is_not_built_names_its_build_command(tmp_path, monkeypatch, capsys):
    from qe.cli import EXIT_BAD_MODEL, main

    monkeypatch.setenv("QE_MODELS", str(tmp_path / "empty"))
    with pytest.raises(ExportError, match=f"Build it with: qe zoo build {ZOO_NAME}"):
        CoverageScorer(aligner=ZOO_NAME)
    (tmp_path / "out.txt").write_text(TEXT + "\n")
    (tmp_path / "mrs.txt").write_text(MR + "\n")
    rc = main(["score", "-m", "coverage", "--opt", f"aligner={ZOO_NAME}", "-i", str(tmp_path / "out.txt"),
               "--mrs", str(tmp_path / "mrs.txt"), "-o", str(tmp_path / "s.jsonl")])
    stderr = capsys.readouterr().err
    err = [line for line in stderr.splitlines() if line.startswith("qe score:")]
    assert rc == EXIT_BAD_MODEL and len(err) == 1 and "Traceback" not in stderr  # one line
    assert f"'{ZOO_NAME}' is a named model of the zoo" in err[0] and f"qe zoo build {ZOO_NAME}" in err[0]
    # a name that is neither a path nor a zoo name stays a path: the loader says what is wrong with it
    with pytest.raises(ExportError):
        CoverageScorer(aligner="no-such-aligner")


def test_coverage_of_unknown_facts_is_nan_not_an_error(tiny_export):  # noqa: F811
    """A probe MR without checkable facts (``goodbye()``) is NaN, which fingerprints store as null."""
    assert math.isnan(qe.load(str(tiny_export)).score(["Goodbye."], mrs=["goodbye()"])[0])


def test_the_zoo_recipe_trains_on_every_e2e_dev_row_and_gets_the_e2e_lexicon(tmp_path):
    """content-aligner-e2e: no fold held out, and the training config it records names the E2E lexicon."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from qe.training import plain_config
    from qe.zoo import build as zoo
    from tests.content.test_aligner import REPO

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=zoo.recipe_overrides(zoo.RECIPES[ZOO_NAME], tmp_path))
    GlobalHydra.instance().clear()
    assert list(cfg.data.held_out) == [] and cfg.task.name == "content_aligner"
    # one full pass, validated at each quarter of it (the last validation at the pass's final step)
    assert cfg.trainer.max_steps == -1 and cfg.trainer.max_epochs == 1
    assert cfg.trainer.val_check_interval == 0.25 and cfg.trainer.check_val_every_n_epoch == 1
    assert trained_lexicon({"config": {"train": plain_config(cfg)}}) == "e2e"


def test_its_model_card_says_what_it_scores_and_passes_mrs():
    from qe.zoo import card

    text = card.render({"kind": "content_aligner", "format_version": 1, "rebuild": {"zoo_name": ZOO_NAME}},
                       signature=None, fingerprint=None)
    assert text.startswith(f"# {ZOO_NAME}: Learned content aligner for the coverage scorer")
    assert f'qe.load("{ZOO_NAME}")' in text and "scorer.score(outputs, mrs=mrs)" in text


def test_a_default_lexicon_ships_and_only_mining_it_again_needs_the_data(tiny_export, tmp_path,  # noqa: F811
                                                                         monkeypatch):
    """Issue 56, item 5: the export's default lexicon is the shipped one, so no data folder is needed; mining it from
    the data (``webnlg@data``) without the data says which file is missing and how to score without it."""
    from qe.content import shipped
    from qe.content.scorer import dataset_lexicon, from_export

    monkeypatch.setenv("QE_DATA_DIR", str(tmp_path / "no-data"))
    dataset_lexicon.cache_clear()
    manifest = {"config": {"train": {"data": {"source": "webnlg"}}}}  # as content-aligner-webnlg's
    scorer = from_export(tiny_export, manifest)
    assert scorer.matcher.lexicon.checksum == shipped.load("webnlg").checksum
    assert from_export(tiny_export, manifest, lexicon="none").matcher.lexicon.source == "rules"
    # asked for by name, mining from the missing data is the plain error naming the file
    with pytest.raises(FileNotFoundError, match=r"webnlg2020/train\.tar\.xz") as err:
        from_export(tiny_export, manifest, lexicon="webnlg@data")
    assert "default lexicon" not in str(err.value)
    dataset_lexicon.cache_clear()
