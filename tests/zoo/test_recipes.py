"""Zoo recipes are data: one YAML file per named model in qe/zoo/recipes/, read by the light qe.zoo (no torch, no
Hydra). The files give exactly the overrides the Python recipes of qe/zoo/build.py gave before they moved (the literal
lists below were printed from that code); a malformed file is one line naming the file and the field; a missing
named model names its build command with the CPU and the GPU time."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from qe import zoo as names
from qe.zoo import build as zoo

# name -> (CPU overrides, GPU overrides), space-joined, as qe/zoo/build.py's Recipe tuples produced them
OLD = {
    "slor-word-brown-wt2": (
        "tokenizer=word data=lm_brown_wt2 trainer=cpu model.hidden_size=256 model.embedding_dim=256 "
        "data.num_workers=0 trainer.max_steps=1000 trainer.max_epochs=10 trainer.val_check_interval=250 "
        "seed=42 trainer.enable_progress_bar=false",
        "trainer=gpu model.hidden_size=512 model.embedding_dim=512 trainer.max_steps=20000 "
        "trainer.max_epochs=40 trainer.val_check_interval=1.0 data.num_workers=4 "
        "trainer.deterministic=true"),
    "slor-sp-brown-wt2": (
        "tokenizer=sp data=lm_brown_wt2 trainer=cpu model.hidden_size=256 model.embedding_dim=256 "
        "data.num_workers=0 trainer.max_steps=1000 trainer.max_epochs=10 trainer.val_check_interval=250 "
        "seed=42 trainer.enable_progress_bar=false",
        "trainer=gpu model.hidden_size=512 model.embedding_dim=512 trainer.max_steps=20000 "
        "trainer.max_epochs=40 trainer.val_check_interval=1.0 data.num_workers=4 "
        "trainer.deterministic=true"),
    "ratpred-emnlp17-s6": (
        "experiment=ratpred_s6 protocol.seeds=[1] model.embedding_dim=64 model.hidden_size=64 "
        "model.lr=2e-3 model.batch_size=50 protocol.passes_synth=20 protocol.passes_orig=120 "
        "protocol.patience=null protocol.threads=1 logger=none protocol.folds=[0,1,2,3,4]",
        "trainer=gpu trainer.precision=32-true model.embedding_dim=300 model.hidden_size=300 "
        "model.lr=1e-4 model.batch_size=20 protocol.passes_orig=500 trainer.deterministic=true"),
    "ratpred-emnlp17-s6-seed2": (
        "experiment=ratpred_s6 protocol.seeds=[2] model.embedding_dim=64 model.hidden_size=64 "
        "model.lr=2e-3 model.batch_size=50 protocol.passes_synth=20 protocol.passes_orig=120 "
        "protocol.patience=null protocol.threads=1 logger=none protocol.folds=[0,1,2,3,4]",
        "trainer=gpu trainer.precision=32-true model.embedding_dim=300 model.hidden_size=300 "
        "model.lr=1e-4 model.batch_size=20 protocol.passes_orig=500 trainer.deterministic=true"),
    "ratpred-emnlp17-s6-minilm": (
        "experiment=ratpred_s6 protocol.seeds=[1] model.embedding_dim=64 model.hidden_size=64 "
        "model.lr=2e-3 model.batch_size=50 protocol.passes_synth=20 protocol.passes_orig=120 "
        "protocol.patience=null protocol.threads=1 logger=none protocol.folds=[0,1,2,3,4] "
        "model.encoder=sentence protocol.sentence_cache={models}/.cache/sentence_vectors",
        "trainer=gpu trainer.precision=32-true model.lr=1e-4 model.batch_size=20 protocol.passes_orig=500 "
        "trainer.deterministic=true"),
    "ratpred-emnlp17-s6-minilm-seed2": (
        "experiment=ratpred_s6 protocol.seeds=[2] model.embedding_dim=64 model.hidden_size=64 "
        "model.lr=2e-3 model.batch_size=50 protocol.passes_synth=20 protocol.passes_orig=120 "
        "protocol.patience=null protocol.threads=1 logger=none protocol.folds=[0,1,2,3,4] "
        "model.encoder=sentence protocol.sentence_cache={models}/.cache/sentence_vectors",
        "trainer=gpu trainer.precision=32-true model.lr=1e-4 model.batch_size=20 protocol.passes_orig=500 "
        "trainer.deterministic=true"),
    "ratpred-emnlp17-s6-plus": (
        "task=ensemble +ensemble.members.gru1={models}/ratpred-emnlp17-s6 "
        "+ensemble.members.gru2={models}/ratpred-emnlp17-s6-seed2 "
        "+ensemble.members.minilm1={models}/ratpred-emnlp17-s6-minilm "
        "+ensemble.members.minilm2={models}/ratpred-emnlp17-s6-minilm-seed2 "
        "+ensemble.cv_runs.gru1={models}/.zoo/ratpred-emnlp17-s6 "
        "+ensemble.cv_runs.gru2={models}/.zoo/ratpred-emnlp17-s6-seed2 "
        "+ensemble.cv_runs.minilm1={models}/.zoo/ratpred-emnlp17-s6-minilm "
        "+ensemble.cv_runs.minilm2={models}/.zoo/ratpred-emnlp17-s6-minilm-seed2",
        ""),
    "ratpred-e2e": (
        "experiment=ratpred_e2e protocol.seeds=[1] model.embedding_dim=64 model.hidden_size=64 "
        "model.lr=2e-3 model.batch_size=50 protocol.passes_synth=20 protocol.passes_orig=120 "
        "protocol.patience=null protocol.threads=1 logger=none",
        "trainer=gpu trainer.precision=32-true model.embedding_dim=300 model.hidden_size=300 "
        "model.lr=1e-4 model.batch_size=20 protocol.passes_orig=500 trainer.deterministic=true"),
    "ratpred-e2e-vectors": (
        "experiment=ratpred_e2e protocol.seeds=[1] model.vectors=spacy:en_core_web_md "
        "model.embedding_dim=300 model.hidden_size=64 model.lr=2e-3 model.batch_size=50 "
        "protocol.passes_synth=20 protocol.passes_orig=120 protocol.patience=null protocol.threads=1 "
        "logger=none",
        "trainer=gpu trainer.precision=32-true model.hidden_size=300 model.lr=1e-4 model.batch_size=20 "
        "protocol.passes_orig=500 trainer.deterministic=true"),
    "ratpred-webnlg": (
        "experiment=ratpred_webnlg protocol.seeds=[1] model.embedding_dim=64 model.hidden_size=64 "
        "model.lr=2e-3 model.batch_size=50 protocol.passes_synth=4 protocol.passes_orig=120 "
        "protocol.patience=null protocol.threads=1 logger=none",
        "trainer=gpu trainer.precision=32-true model.embedding_dim=300 model.hidden_size=300 "
        "model.lr=1e-4 model.batch_size=20 protocol.passes_synth=20 protocol.passes_orig=500 "
        "trainer.deterministic=true"),
    "ratpred-webnlg-cross": (
        "experiment=ratpred_webnlg_cross protocol.seeds=[1] trainer=cpu model.batch_size=32 "
        "protocol.passes_synth=8 +trainer.limit_train_batches=500 protocol.passes_orig=2 "
        "protocol.patience=null protocol.threads=1 logger=none trainer.enable_progress_bar=false",
        "trainer=gpu trainer.precision=bf16-mixed trainer.limit_train_batches=1.0 model.batch_size=64 "
        "model.warmup_steps=500 protocol.passes_synth=3 protocol.passes_orig=3"),
    "slor-word-domain": (
        "tokenizer=word data=lm_domain trainer=cpu model.hidden_size=256 model.embedding_dim=256 "
        "model.dropout=0.3 trainer.max_steps=3200 trainer.max_epochs=100 seed=42 test=false "
        "trainer.enable_progress_bar=false",
        "trainer=gpu model.hidden_size=512 model.embedding_dim=512 trainer.deterministic=true"),
    "slor-sp-domain": (
        "tokenizer=sp tokenizer.vocab_size=2000 data=lm_domain trainer=cpu model.hidden_size=256 "
        "model.embedding_dim=256 model.dropout=0.3 trainer.max_steps=3200 trainer.max_epochs=100 seed=42 "
        "test=false trainer.enable_progress_bar=false",
        "trainer=gpu model.hidden_size=512 model.embedding_dim=512 trainer.deterministic=true"),
    "slor-sp-webnlg": (
        "tokenizer=sp tokenizer.vocab_size=4000 data=lm_webnlg trainer=cpu model.hidden_size=256 "
        "model.embedding_dim=256 model.dropout=0.3 trainer.max_steps=3200 trainer.max_epochs=100 seed=42 "
        "test=false trainer.enable_progress_bar=false",
        "trainer=gpu model.hidden_size=512 model.embedding_dim=512 trainer.deterministic=true"),
    "slor-word-mixed": (
        "tokenizer=word data=lm_mixed model=lstm_lm_adaptive trainer=cpu model.hidden_size=256 "
        "model.embedding_dim=256 data.num_workers=0 trainer.max_steps=3000 trainer.max_epochs=10 "
        "trainer.val_check_interval=500 seed=42 trainer.enable_progress_bar=false "
        "model.adaptive_cutoffs=[2000,10000]",
        "trainer=gpu model.hidden_size=512 model.embedding_dim=512 trainer.max_steps=20000 "
        "trainer.max_epochs=40 trainer.val_check_interval=1.0 data.num_workers=4 "
        "trainer.deterministic=true"),
    "slor-sp-mixed": (
        "tokenizer=sp data=lm_mixed model=lstm_lm_adaptive trainer=cpu model.hidden_size=256 "
        "model.embedding_dim=256 data.num_workers=0 trainer.max_steps=3000 trainer.max_epochs=10 "
        "trainer.val_check_interval=500 seed=42 trainer.enable_progress_bar=false "
        "model.adaptive_cutoffs=[2000,8000]",
        "trainer=gpu model.hidden_size=512 model.embedding_dim=512 trainer.max_steps=20000 "
        "trainer.max_epochs=40 trainer.val_check_interval=1.0 data.num_workers=4 "
        "trainer.deterministic=true"),
    "cola-minilm": (
        "experiment=cola_minilm trainer.max_epochs=3 seed=42 trainer.enable_progress_bar=false",
        "trainer=gpu trainer.precision=32-true trainer.deterministic=true"),
    "mlm-minilm": (
        "experiment=mlm_minilm seed=42 trainer.enable_progress_bar=false",
        "trainer=gpu trainer.precision=32-true model.train_layers=2 trainer.max_steps=5000 "
        "trainer.val_check_interval=1000 trainer.deterministic=true"),
    "sop-minilm": (
        "experiment=sop_minilm seed=42 trainer.enable_progress_bar=false",
        "trainer=gpu trainer.precision=32-true trainer.max_steps=6000 trainer.max_epochs=10 "
        "trainer.val_check_interval=1000 trainer.deterministic=true"),
    "gruen-minilm": (
        "task=gruen_tune gruen.models.acceptability={models}/cola-minilm "
        "gruen.models.mlm={models}/mlm-minilm gruen.models.sop={models}/sop-minilm gruen.progress=false "
        "seed=42",
        "gruen.device=cuda"),
    # added as a recipe file (no Python recipe before it): the literal lists guard it all the same
    "content-aligner-e2e": (
        "task=content_aligner data.held_out=[] trainer.max_steps=-1 trainer.max_epochs=1 "
        "trainer.val_check_interval=0.25 trainer.check_val_every_n_epoch=1 seed=42 trainer.enable_progress_bar=false",
        "trainer=gpu trainer.precision=32-true trainer.deterministic=true"),
    "content-aligner-webnlg": (
        "task=content_aligner data.source=webnlg data.max_length=128 data.val_fraction=0.05 trainer.max_steps=-1 "
        "trainer.max_epochs=1 trainer.val_check_interval=500 seed=42 trainer.enable_progress_bar=false",
        "trainer=gpu trainer.precision=32-true trainer.deterministic=true"),
    "content-ratpred-e2e": (
        "task=ensemble +ensemble.members.content={models}/content-aligner-e2e "
        "+ensemble.members.ratpred={models}/ratpred-e2e-vectors ensemble.scales=auto",
        ""),
    "content-ratpred-webnlg": (
        "task=ensemble +ensemble.members.content={models}/content-aligner-webnlg "
        "+ensemble.members.ratpred={models}/ratpred-webnlg-cross ensemble.scales=auto",
        ""),
    "_tiny-slor": (
        "data=lm_sample model=lstm_lm_small model.hidden_size=32 model.embedding_dim=32 model.dropout=0.3 "
        "trainer=cpu trainer.max_epochs=2 +trainer.limit_train_batches=4 +trainer.limit_val_batches=2 "
        "logger=none demo_sentences=[] test=false seed=42 trainer.enable_progress_bar=false",
        ""),
    # added after the move (the content aligner's rebuild check), not printed from the old code
    "_tiny-content-aligner": (
        "task=content_aligner model.encoder=tiny-random-bert model.lr=1e-3 data.source=sample data.batch_size=8 "
        "data.val_fraction=0.25 trainer=cpu trainer.max_steps=40 trainer.val_check_interval=20 logger=none "
        "demo_sentences=[] seed=42 trainer.enable_progress_bar=false",
        ""),
    "_tiny-content-aligner-triples": (
        "task=content_aligner model.encoder=tiny-random-bert model.lr=1e-3 data.source=sample-triples "
        "data.batch_size=8 data.val_fraction=0.25 trainer=cpu trainer.max_steps=40 trainer.val_check_interval=20 "
        "logger=none demo_sentences=[] seed=42 trainer.enable_progress_bar=false",
        ""),
}
OLD_NEEDS = {
    "ratpred-emnlp17-s6-plus": ("ratpred-emnlp17-s6", "ratpred-emnlp17-s6-seed2", "ratpred-emnlp17-s6-minilm",
                                "ratpred-emnlp17-s6-minilm-seed2"),
    "gruen-minilm": ("cola-minilm", "mlm-minilm", "sop-minilm"),
    "content-ratpred-e2e": ("content-aligner-e2e", "ratpred-e2e-vectors"),
    "content-ratpred-webnlg": ("content-aligner-webnlg", "ratpred-webnlg-cross"),
}


def test_recipe_files_give_the_old_overrides():
    assert list(zoo.RECIPES) == sorted(OLD, key=lambda n: (n.startswith("_"), n))
    for name, (cpu, gpu) in OLD.items():
        r = zoo.RECIPES[name]
        assert r.overrides == tuple(cpu.split()), name
        assert r.gpu_overrides == tuple(gpu.split()), name
        assert r.needs == OLD_NEEDS.get(name, ()), name
        assert r.threads == 1 and r.status == ("test" if name.startswith("_") else "final"), name
        assert r.cpu_budget and r.cpu_time and r.description, name
    # {models} is filled in, the GPU schedule goes on top, a seed replaces the recipe's
    r = zoo.get_recipe("ratpred-emnlp17-s6-plus")
    assert zoo.recipe_overrides(r, Path("/m"))[1] == "+ensemble.members.gru1=/m/ratpred-emnlp17-s6"
    r = zoo.get_recipe("slor-word-domain")
    ov = zoo.recipe_overrides(r, Path("/m"), gpu=True, seed=7)
    assert ov[-4:] == ["trainer=gpu", "model.hidden_size=512", "model.embedding_dim=512", "trainer.deterministic=true"]
    assert "seed=7" in ov and "++data.split_seed=42" in ov
    with pytest.raises(zoo.ZooError, match="unknown zoo name 'nope'; known: cola-minilm, "):
        zoo.get_recipe("nope")


def test_names_come_from_the_recipe_files_and_qe_zoo_stays_light():
    files = {p.stem for p in names.RECIPES_DIR.glob("*.yaml")}
    assert set(names.RECIPES) == files and names.RECIPES is zoo.RECIPES
    assert names.NAMES == {n: r.description for n, r in names.RECIPES.items() if not n.startswith("_")}
    code = ("import sys, qe.zoo as z; assert 'RECIPES' not in vars(z); n = z.NAMES; "
            "heavy = {'torch', 'hydra', 'lightning', 'omegaconf'} & set(sys.modules); "
            "assert not heavy, heavy; print(len(n))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == str(len(names.NAMES)), out.stderr[-2000:]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / f"{name}.yaml"
    p.write_text(text)
    return p


GOOD = "name: x\ndescription: a model\noverrides: [seed=1, trainer.max_steps=10]\n"


@pytest.mark.parametrize("text, field", [
    (GOOD + "gpu_overides: [trainer=gpu]\n", "unknown field 'gpu_overides'"),
    ("name: x\ndescription: a model\n", "missing field 'overrides'"),
    ("name: x\noverrides: [seed=1]\n", "missing field 'description'"),
    ("name: y\ndescription: a model\noverrides: [seed=1]\n", "field 'name' is 'y'"),
    ("name: x\ndescription: a model\noverrides: seed=1\n", "field 'overrides' must be a list"),
    ("name: x\ndescription: a model\noverrides: []\n", "field 'overrides' is empty"),
    (GOOD + "threads: two\n", "field 'threads'"),
    (GOOD + "status: done\n", "field 'status'"),
    (GOOD + "cpu_time: 15\n", "field 'cpu_time' must be a string"),
    (GOOD + "notes: [a\n", "not valid YAML at line"),
    ("- a\n- b\n", "a recipe is a mapping"),
])
def test_a_malformed_recipe_is_one_line_naming_file_and_field(tmp_path, text, field):
    p = _write(tmp_path, "x", text)
    with pytest.raises(names.RecipeError) as err:
        names.read_recipe(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}: ") and field in msg and "\n" not in msg, msg


def test_a_good_recipe_file_reads_with_defaults(tmp_path):
    r = names.read_recipe(_write(tmp_path, "x", GOOD + "# a comment saying why\n"))
    assert r == names.Recipe("x", ("seed=1", "trainer.max_steps=10"), description="a model")
    assert r.buildable and r.gpu_time_text == "no GPU schedule"
    r = names.read_recipe(_write(tmp_path, "x", GOOD + "gpu_overrides: [trainer=gpu]\n"))
    assert r.gpu_time_text == "GPU time not measured"
    assert names.read_recipes(tmp_path) == {"x": r}


def test_gpu_time_is_measured_only_where_a_gpu_build_ran():
    measured = {n: r.gpu_time for n, r in names.RECIPES.items() if r.gpu_time}
    assert measured == {"slor-word-domain": "47 s measured on one NVIDIA H200 with 16 CPU cores, torch 2.11 and CUDA 13",
                        "content-aligner-webnlg": "224-240 s measured on one NVIDIA H200 with 16 CPU cores, torch 2.11 "
                                                  "and CUDA 13 (seeds 1 and 42; 3,472 steps 142-152 s)"}
    assert "GPU time not measured" in names.build_times("ratpred-e2e")
    assert "GPU" not in names.build_times("ratpred-emnlp17-s6-plus")  # trains nothing: no GPU schedule


def test_missing_named_model_names_both_build_times(tmp_path, monkeypatch, capsys):
    """`qe score -m NAME` with an empty $QE_MODELS: one line with the build command, the CPU time and the GPU
    command and time; exit 3 (a model that cannot be loaded, docs/reference/cli.md)."""
    import qe
    from qe.cli import main as qe_main

    monkeypatch.setenv("QE_MODELS", str(tmp_path / "models"))
    inp = tmp_path / "x.txt"
    inp.write_text("the hotel is near the river .\n")
    assert qe_main(["score", "-m", "slor-word-domain", "-i", str(inp), "-o", str(tmp_path / "o.jsonl")]) == 3
    err = [ln for ln in capsys.readouterr().err.splitlines() if "error:" in ln]
    assert len(err) == 1, err
    msg = err[0]
    assert "Build it with: qe zoo build slor-word-domain (2-core CPU: about 15-20 min; " in msg
    assert "GPU: qe zoo build slor-word-domain --gpu, 47 s measured on one NVIDIA H200" in msg
    assert str(tmp_path / "models") in msg and "$QE_MODELS" in msg
    with pytest.raises(KeyError, match=r"qe zoo build ratpred-e2e \(2-core CPU: about 25-35 min; GPU: qe zoo build "
                                       r"ratpred-e2e --gpu, GPU time not measured\)"):
        qe.load("ratpred-e2e")


def test_zoo_list_verbose_shows_cpu_and_gpu_times(capsys):
    assert zoo.main(["--models-dir", "/nonexistent", "list", "-v"]) == 0
    out = capsys.readouterr().out
    block = out[out.index("slor-word-domain "):]
    block = block[:block.index("\n", block.index("GPU:"))]
    assert "CPU: about 15-20 min (1,087 s measured" in block and "GPU: 47 s measured on one NVIDIA H200" in block
    assert "GPU: not measured (--gpu)" in out and "GPU: no GPU schedule" in out
    assert zoo.main(["--models-dir", "/nonexistent", "list"]) == 0
    assert "GPU:" not in capsys.readouterr().out  # the short list keeps one CPU line per model


def test_a_ratpred_build_resumes_its_interrupted_stage():
    """RatPred's default resume retrains a stopped (seed, fold) sub-run from its start; ratpred-webnlg-cross is one
    sub-run of about two CPU hours, so "rerun the same command to resume" started it over. The zoo's command asks
    for the stage resume; the schedule stamp (the recipe's overrides) is unchanged, and other kinds get nothing."""
    cmd = zoo.train_command(zoo.get_recipe("ratpred-webnlg-cross"), Path("/m"), Path("/m/.build/x"))
    assert cmd.count("protocol.resume=stage") == 1 and cmd[-1] == "export=true"
    assert "protocol.resume=stage" not in zoo.recipe_overrides(zoo.get_recipe("ratpred-webnlg-cross"), Path("/m"))
    assert "protocol.resume=stage" in zoo.train_command(zoo.get_recipe("ratpred-e2e"), Path("/m"), Path("/b"))
    for name in ("slor-sp-webnlg", "content-aligner-webnlg", "cola-minilm"):
        assert not [o for o in zoo.train_command(zoo.get_recipe(name), Path("/m"), Path("/b"))
                    if o.startswith("protocol.resume")], name
    # a recipe that sets its own resume keeps it
    r = zoo.get_recipe("ratpred-e2e")
    ov = zoo.recipe_overrides(r, Path("/m"), extra=("protocol.resume=subrun",))
    assert zoo._resume_overrides(ov) == []
