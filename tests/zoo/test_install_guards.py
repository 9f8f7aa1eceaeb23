"""Models that travel, guarded (issue 36, items 11, 13, 14, 16): a server that never answers times out in one line;
a refused connection and a 404 say which they are; an unwritable models folder is one line naming it and $QE_MODELS
(exit 2); weights that are not safetensors are exit 3 naming the file, and `qe zoo install` load-checks what it
installs against the fingerprint the archive carries; archive members larger than `qe_archive.json` declares (or an
archive that unpacks past the cap) are refused before their bytes are written. Tiny models, offline, local sockets."""
from __future__ import annotations

import io
import json
import shutil
import socket
import tarfile
import threading
import time
from pathlib import Path

import pytest

import qe
from qe.cli import main as qe_main
from qe.core.export import MANIFEST, export_checksum, file_checksums
from qe.zoo import archive

from test_zoo_archive import _rewrite, _Server, _trained_lm  # noqa: E402 - the sibling test module


@pytest.fixture(scope="module")
def _built(tmp_path_factory):
    """One tiny LM export for the module (training it is the slow part)."""
    return _trained_lm(tmp_path_factory.mktemp("built") / "mylm", steps=20)[0]


def _copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


@pytest.fixture
def packed(_built, tmp_path, monkeypatch):
    """A copy of the tiny LM (A/mylm) packed into dist/mylm.qe.tar.gz; $QE_MODELS is a fresh folder."""
    monkeypatch.setenv("QE_MODELS", str(tmp_path / "default_models"))
    monkeypatch.delenv("QE_HTTP_TIMEOUT", raising=False)
    monkeypatch.delenv("QE_ARCHIVE_MAX_BYTES", raising=False)
    src = _copy(_built, tmp_path / "A" / "mylm")
    return src, archive.pack(src, tmp_path / "dist", name="mylm")


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err, err
    return err


def _bounded(fn, seconds: float = 20.0):
    """Run ``fn`` in a thread; fail (instead of hanging the suite) when it has not returned after ``seconds``."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t0 = time.monotonic()
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still waiting after {seconds} s: no timeout"
    return box, time.monotonic() - t0


class _Silent:
    """A TCP server on 127.0.0.1 that accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)

    def __enter__(self):
        self.thread.start()
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def __exit__(self, *exc):
        self.sock.close()
        for c in self.conns:
            c.close()


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ------------------------------------------------------------------------------------------------ 11: timeouts
def test_a_server_that_never_answers_times_out_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("QE_MODELS", str(tmp_path / "models"))
    monkeypatch.delenv("QE_HTTP_TIMEOUT", raising=False)
    with _Silent() as base:
        url = f"{base}/mylm.qe.tar.gz"
        box, took = _bounded(lambda: qe_main(["zoo", "install", url, "--timeout", "1"]))
        assert box.get("value") == 2, box
        err = _one_line_error(capsys)
        assert url in err and "timed out after 1 s" in err, err
        assert took < 10
        # the environment sets it for qe.load(URL) and every zoo command; timeout= on the Python path
        monkeypatch.setenv("QE_HTTP_TIMEOUT", "0.5")
        box, _ = _bounded(lambda: qe.load(url))
        assert isinstance(box.get("error"), archive.ArchiveError) and "timed out after 0.5 s" in str(box["error"])
        monkeypatch.setenv("QE_HTTP_TIMEOUT", "3600")
        box, _ = _bounded(lambda: archive.fetch(url, timeout=0.7))
        assert "timed out after 0.7 s" in str(box.get("error"))
        box, _ = _bounded(lambda: qe_main(["zoo", "compare", url, url, "--timeout", "0.5"]))
        assert box.get("value") == 2 and "timed out after 0.5 s" in _one_line_error(capsys)
    assert not list((tmp_path / "models" / ".cache" / "archives").glob(".download-*"))


def test_a_bad_timeout_setting_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("QE_MODELS", str(tmp_path / "models"))
    monkeypatch.setenv("QE_HTTP_TIMEOUT", "soon")
    assert qe_main(["zoo", "install", f"http://127.0.0.1:{_closed_port()}/x.qe.tar.gz"]) == 2
    assert "QE_HTTP_TIMEOUT" in _one_line_error(capsys)
    monkeypatch.delenv("QE_HTTP_TIMEOUT")
    assert qe_main(["zoo", "install", f"http://127.0.0.1:{_closed_port()}/x.qe.tar.gz", "--timeout", "0"]) == 2
    assert "--timeout" in _one_line_error(capsys)


def test_refused_connection_and_404_are_told_apart(packed, tmp_path, capsys):
    _, arc = packed
    refused = f"http://127.0.0.1:{_closed_port()}/mylm.qe.tar.gz"
    assert qe_main(["zoo", "--models-dir", str(tmp_path / "M"), "install", refused, "--timeout", "5"]) == 2
    err = _one_line_error(capsys)
    # "HTTP 404", not "404": the random port may hold those digits (port 40435 failed a CI run that way)
    assert refused in err and "connection refused" in err and "HTTP 404" not in err and "not found" not in err, err
    with _Server(arc.parent) as base:
        missing = f"{base}/nope.qe.tar.gz"
        assert qe_main(["zoo", "--models-dir", str(tmp_path / "M"), "install", missing]) == 2
        err = _one_line_error(capsys)
        assert missing in err and "not found (HTTP 404)" in err and "refused" not in err, err
        # the server's file itself still installs through the same path
        assert qe_main(["zoo", "--models-dir", str(tmp_path / "M"), "install", f"{base}/{arc.name}"]) == 0


# ---------------------------------------------------------------------------------------- 13: unwritable models folder
def test_unwritable_models_folder_is_one_line_exit_2(packed, tmp_path, capsys, monkeypatch):
    _, arc = packed
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    models = blocker / "models"  # mkdir fails (NotADirectoryError) even as root, unlike a chmod
    monkeypatch.setenv("QE_MODELS", str(models))
    assert qe_main(["zoo", "install", str(arc)]) == 2
    err = _one_line_error(capsys)
    assert str(models) in err and "QE_MODELS" in err, err
    # `qe score -m ARCHIVE` extracts into the archive cache under $QE_MODELS: the same line, exit 2 (not 3)
    inp = tmp_path / "in.txt"
    inp.write_text("the cat sat on the mat .\n")
    assert qe_main(["score", "-m", str(arc), "-i", str(inp), "-o", str(tmp_path / "out.jsonl"), "-q"]) == 2
    err = _one_line_error(capsys)
    assert "QE_MODELS" in err and str(models) in err, err
    with pytest.raises(archive.SettingError, match="QE_MODELS"):
        qe.load(str(arc))


def test_a_read_only_cache_that_already_holds_the_archive_still_loads(packed, tmp_path, monkeypatch):
    _, arc = packed
    models = tmp_path / "default_models"
    first = qe.load(str(arc)).score(["the cat sat on the mat ."], progress=False)
    # a folder we cannot write: simulated (root ignores chmod), the extracted export is reused without writing
    real_mkstemp = archive.tempfile.mkstemp

    def refuse(*a, dir=None, **k):  # noqa: A002 - tempfile's name
        if dir is not None and str(models) in str(dir):
            raise PermissionError(13, "Permission denied", str(dir))
        return real_mkstemp(*a, dir=dir, **k)

    monkeypatch.setattr(archive.tempfile, "mkstemp", refuse)
    assert qe.load(str(arc)).score(["the cat sat on the mat ."], progress=False) == first


# ---------------------------------------------------------------------------------- 14: weights that do not load
def _rewrite_manifest(export: Path) -> None:
    """Make the manifest list the export's current files (so only loading can tell they are broken)."""
    mf = json.loads((export / MANIFEST).read_text())
    mf["checksum"], mf["files"] = export_checksum(export), file_checksums(export)
    (export / MANIFEST).write_text(json.dumps(mf, indent=2) + "\n")


def test_score_with_weights_that_are_not_safetensors_is_exit_3(packed, _built, tmp_path, capsys):
    src, _ = packed
    (src / "model.safetensors").write_bytes(b"this is not a safetensors file at all" * 10)
    _rewrite_manifest(src)  # as an installed export: every checksum agrees, only loading can tell
    inp = tmp_path / "in.txt"
    inp.write_text("the cat sat on the mat .\n")
    assert qe_main(["score", "-m", str(src), "-i", str(inp), "-o", str(tmp_path / "o.jsonl"), "-q"]) == 3
    err = _one_line_error(capsys)
    assert "model.safetensors" in err and "safetensors" in err, err
    # a truncated one too
    good = _copy(_built, tmp_path / "B" / "mylm")
    blob = (good / "model.safetensors").read_bytes()
    (good / "model.safetensors").write_bytes(blob[: len(blob) // 2])
    _rewrite_manifest(good)
    assert qe_main(["score", "-m", str(good), "-i", str(inp), "-o", str(tmp_path / "o2.jsonl"), "-q"]) == 3
    assert "model.safetensors" in _one_line_error(capsys)


def _perturbed(src: Path, dest: Path, noise: float = 0.5) -> Path:
    """A copy of ``src`` whose weights moved by ``noise`` * N(0, 1): another model under the same manifest."""
    import torch
    from safetensors.torch import load_file, save_file

    out = _copy(src, dest)
    torch.manual_seed(0)
    w = {k: v + noise * torch.randn_like(v) if v.is_floating_point() else v
         for k, v in load_file(src / "model.safetensors").items()}
    save_file(w, out / "model.safetensors")
    return out


def test_install_load_checks_and_leaves_nothing_behind(_built, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("QE_MODELS", str(tmp_path / "default_models"))
    # weights that are not safetensors, listed consistently in the manifest (every checksum agrees)
    broken = _copy(_built, tmp_path / "A" / "mylm")
    (broken / "model.safetensors").write_bytes(b"\x00" * 64)
    _rewrite_manifest(broken)
    arc = archive.pack(broken, tmp_path / "dist", name="mylm")
    models = tmp_path / "M"
    assert qe_main(["zoo", "--models-dir", str(models), "install", str(arc)]) == 2
    err = _one_line_error(capsys)
    assert str(arc) in err and "model.safetensors" in err and "cannot be loaded" in err, err
    assert not (models / "mylm").exists() and not (models / ".install").exists()
    assert not (models / ".zoo" / "mylm.json").exists()

    # loads, but scores other than the fingerprint it carries say (another model's weights under this manifest)
    swapped = _perturbed(_built, tmp_path / "S" / "mylm")
    _rewrite_manifest(swapped)  # the manifest keeps the original fingerprint
    arc2 = archive.pack(swapped, tmp_path / "dist2", name="mylm")
    assert qe_main(["zoo", "--models-dir", str(models), "install", str(arc2)]) == 2
    err = _one_line_error(capsys)
    assert "fingerprint" in err and "different" in err and "--no-check" in err, err
    assert not (models / "mylm").exists()
    assert qe_main(["zoo", "--models-dir", str(models), "install", str(arc2), "--no-check"]) == 0
    assert (models / "mylm" / MANIFEST).is_file()


def test_install_says_it_checked(packed, tmp_path, capsys):
    _, arc = packed
    assert qe_main(["zoo", "--models-dir", str(tmp_path / "M"), "install", str(arc)]) == 0
    out = capsys.readouterr().out
    assert "installed" in out and "equivalent" in out, out


# ---------------------------------------------------------------------------------------------- 16: size caps
def test_pack_records_member_sizes(packed):
    src, arc = packed
    meta = archive.read_meta(arc)
    assert set(meta["sizes"]) == set(meta["files"])
    assert meta["sizes"]["mylm/model.safetensors"] == (src / "model.safetensors").stat().st_size


def _with_meta(arc: Path, dest: Path, edit_meta, big: int | None) -> Path:
    """``arc`` rewritten: ``edit_meta(meta)`` applied to qe_archive.json; mylm/vocab.json replaced by ``big`` zero
    bytes when given (its declared size and checksum left as they were)."""

    def edit(m, data):
        if m.name == archive.ARCHIVE_MANIFEST:
            meta = json.loads(data)
            edit_meta(meta)
            data = json.dumps(meta).encode()
            m.size = len(data)
        elif m.name == "mylm/vocab.json" and big is not None:
            data = b"\x00" * big
            m.size = big
        yield m, data

    return _rewrite(arc, dest, edit)


def _spy_writes(monkeypatch) -> list[str]:
    """Names of the archive members tarfile writes to disk."""
    written: list[str] = []
    real = tarfile.TarFile.makefile

    def makefile(self, tarinfo, targetpath):
        written.append(tarinfo.name)
        return real(self, tarinfo, targetpath)

    monkeypatch.setattr(tarfile.TarFile, "makefile", makefile)
    return written


def test_a_member_larger_than_declared_is_refused_before_it_is_written(packed, tmp_path, capsys, monkeypatch):
    _, arc = packed
    meta = archive.read_meta(arc)
    declared = 10

    def small(m):
        m["sizes"] = {k: (declared if k == "mylm/vocab.json" else v) for k, v in meta["sizes"].items()}

    bomb = _with_meta(arc, tmp_path / "bomb.qe.tar.gz", small, big=5 << 20)
    written = _spy_writes(monkeypatch)
    models = tmp_path / "M"
    assert qe_main(["zoo", "--models-dir", str(models), "install", str(bomb)]) == 2
    err = _one_line_error(capsys)
    assert "mylm/vocab.json" in err and f"{5 << 20:,}" in err and "declares 10" in err, err
    assert "mylm/vocab.json" not in written
    assert not (models / "mylm").exists() and not list(models.glob(".install/*"))


def test_archives_without_sizes_get_a_total_cap(packed, tmp_path, capsys, monkeypatch):
    _, arc = packed
    old = _with_meta(arc, tmp_path / "old.qe.tar.gz", lambda m: m.pop("sizes", None), big=5 << 20)
    assert "sizes" not in archive.read_meta(old)
    written = _spy_writes(monkeypatch)
    # an archive without sizes unpacks to at most 50x its own size (at least 256 MiB) and the cap: here 1 MB
    monkeypatch.setenv("QE_ARCHIVE_MAX_BYTES", "1000000")
    models = tmp_path / "M"
    assert qe_main(["zoo", "--models-dir", str(models), "install", str(old)]) == 2
    err = _one_line_error(capsys)
    assert "QE_ARCHIVE_MAX_BYTES" in err and "1,000,000" in err, err
    assert "mylm/vocab.json" not in written and not (models / "mylm").exists()
    # a declared total over the cap is refused before anything is extracted
    written.clear()
    monkeypatch.setenv("QE_ARCHIVE_MAX_BYTES", "1000")
    assert qe_main(["zoo", "--models-dir", str(models), "install", str(arc)]) == 2
    assert "QE_ARCHIVE_MAX_BYTES" in _one_line_error(capsys) and not written
    # the old archive without the cap: its sizes are not declared, so the checksums refuse it (after extraction)
    monkeypatch.delenv("QE_ARCHIVE_MAX_BYTES")
    assert qe_main(["zoo", "--models-dir", str(models), "install", str(old)]) == 2
    assert "mylm/vocab.json" in _one_line_error(capsys)


def test_an_old_archive_without_sizes_still_installs(packed, tmp_path, capsys):
    _, arc = packed
    old = _with_meta(arc, tmp_path / "old.qe.tar.gz", lambda m: m.pop("sizes", None), big=None)
    assert qe_main(["zoo", "--models-dir", str(tmp_path / "M"), "install", str(old)]) == 0
    assert (tmp_path / "M" / "mylm" / MANIFEST).is_file()


def test_a_huge_archive_manifest_is_refused(tmp_path, capsys):
    huge = tmp_path / "huge.qe.tar.gz"
    with tarfile.open(huge, "w:gz") as tar:
        ti = tarfile.TarInfo(archive.ARCHIVE_MANIFEST)
        ti.size = 20 << 20
        tar.addfile(ti, io.BytesIO(b" " * ti.size))
    with pytest.raises(archive.ArchiveError, match="qe_archive.json"):
        archive.read_meta(huge)
