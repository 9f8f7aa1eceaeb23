"""The model zoo (issue 15, point 5): named models resolve through qe.load, a missing one names its build command,
every recipe is step-based, and a build is deterministic — twice, and after an interruption — on one machine."""
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from qe.zoo import build as zoo
from qe import zoo as names

REPO = Path(__file__).resolve().parents[2]


def test_recipes_match_names_and_are_step_based():
    public = {n for n, r in zoo.RECIPES.items() if r.status != "test"}
    assert public == set(names.NAMES)
    for name, r in zoo.RECIPES.items():
        assert r.status in ("final", "pending", "test"), name
        if r.status == "pending":
            assert r.notes and not r.overrides, name  # nothing invented: no recipe until it is settled
            continue
        every = " ".join(r.overrides + r.gpu_overrides)
        assert "max_time" not in every, name
        if "task=ensemble" in r.overrides:  # trains nothing: combines zoo models built first
            assert len(r.needs) >= 2 and all(f"{{models}}/{n}" in every for n in r.needs), name
            continue
        assert "seed=" in every or "protocol.seeds=" in every, name
        assert any(k in every for k in ("max_steps=", "max_epochs=", "passes_", "experiment=", "task=gruen_tune")), name
        assert r.status == "test" or r.gpu_overrides, f"{name}: document the GPU schedule"


@pytest.mark.parametrize("name", [n for n, r in zoo.RECIPES.items() if r.buildable])
def test_recipe_overrides_compose(name, tmp_path):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    for gpu in (False, True):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
            cfg = compose("train", overrides=zoo.recipe_overrides(zoo.RECIPES[name], tmp_path, gpu=gpu))
        assert cfg.task.name


def test_pending_recipe_refuses_to_build(tmp_path, monkeypatch):
    monkeypatch.setitem(zoo.RECIPES, "_pending", zoo.Recipe("_pending", (), status="pending", notes="not settled"))
    with pytest.raises(zoo.ZooError, match="pending"):
        zoo.build("_pending", tmp_path)


def test_missing_named_model_gives_build_command(tmp_path, monkeypatch):
    import qe

    monkeypatch.setenv("QE_MODELS", str(tmp_path))
    with pytest.raises(KeyError, match="qe zoo build slor-word-brown-wt2"):
        qe.load("slor-word-brown-wt2")
    with pytest.raises(KeyError, match="neither an export directory nor a registered scorer"):
        qe.load("no-such-model")


def test_named_model_loads_from_models_dir(tmp_path, monkeypatch, tiny_corpus, capsys):
    import qe
    from conftest import make_lm_export
    from qe.cli import main as qe_main

    make_lm_export(tmp_path / "slor-word-brown-wt2", tiny_corpus)
    monkeypatch.setenv("QE_MODELS", str(tmp_path))
    scorer = qe.load("slor-word-brown-wt2")
    assert len(scorer.score(["the cat sat on the mat ."])) == 1
    qe_main(["list"])
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.split() and line.split()[0] in names.NAMES}
    assert "[built    ]" in rows["slor-word-brown-wt2"] and "[not built]" in rows["gruen-minilm"]
    assert len({r.index("[") for r in rows.values()}) == 1  # one column, however long the names


def test_build_is_deterministic_twice_and_after_an_interruption(tmp_path):
    """Two fresh builds, and a build stopped after epoch 1 of 2 then resumed by the same command, give one
    checksum (the tiny test recipe; each build is a real `qe train` subprocess)."""
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    with ThreadPoolExecutor(3) as ex:
        fa = ex.submit(zoo.build, "_tiny-slor", a, quiet=True)
        fb = ex.submit(zoo.build, "_tiny-slor", b, quiet=True)
        # "interrupted" at the end of epoch 1: the build folder keeps its last.ckpt, nothing is installed
        fc = ex.submit(zoo.build, "_tiny-slor", c, extra=("trainer.max_epochs=1",), install=False, quiet=True)
        sa, sb, half = fa.result(), fb.result(), fc.result()
    assert (c / ".build" / "_tiny-slor" / "run" / "checkpoints" / "last.ckpt").is_file()
    assert not (c / "_tiny-slor").exists()
    sc = zoo.build("_tiny-slor", c, quiet=True)  # the rerun resumes from last.ckpt
    assert sa == sb, "two builds of one recipe on one machine differ"
    assert half != sa, "the interrupted build should not already be the finished model"
    assert sc == sa, "an interrupted and resumed build differs from an uninterrupted one"
    for d in (a, b, c):
        assert (d / "_tiny-slor" / "qe_export.json").is_file() and not (d / ".build" / "_tiny-slor").exists()
        assert names.is_built("_tiny-slor", d)
        assert (d / ".zoo" / "_tiny-slor" / "train.log").is_file()  # the run's log outlives the build directory
    assert zoo.verify(["_tiny-slor"], a) == 0
    assert zoo.build("_tiny-slor", a, quiet=True) == sa  # already built: no rebuild, same checksum
