"""Export directories: what training writes and scorers read (DESIGN.md, "Export directory").

An export is written into a temporary sibling directory and renamed into place, so a crash never leaves a
half-written export under the final name. Loading checks ``kind`` and ``format_version`` and says what was
found and what was expected.

Every export gets a model card, ``README.md`` (:mod:`qe.zoo.card`: what it scores, inputs, training data and licence,
rebuild command, figures, limits, signature), and a functional fingerprint in its manifest (:mod:`qe.zoo.fingerprint`:
the scores of a shipped probe set), both made from the finished export before it is renamed into place. The export
checksum covers the files the scorer reads: the manifest and the card (``README.md``, at any depth, so the copied
members of an ensemble too) describe them and are left out, so recording a fingerprint or rewriting a card never
changes a model's checksum.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

from qe.core.jsonio import dumps
from qe.errors import ExportError
from qe.version import __version__

MANIFEST = "qe_export.json"
#: the model card (qe.zoo.card); like the manifest, outside the export checksum
CARD = "README.md"
FORMAT_VERSION = 1
#: files that describe an export rather than make it up: not covered by :func:`export_checksum`
DESCRIPTIVE = (MANIFEST, CARD)


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def sha256_files(paths: list[Path]) -> str:
    """One checksum over several files (names and contents, in the given order)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode())
        h.update(bytes.fromhex(sha256_file(p)))
    return h.hexdigest()


def export_checksum(export_dir: str | Path) -> str:
    """sha256 over every file of the export except the manifest and the model card (stable under renames of the
    directory)."""
    d = Path(export_dir)
    files = sorted(p for p in d.rglob("*") if p.is_file() and p.name not in DESCRIPTIVE)
    return sha256_files(files)


def file_checksums(export_dir: str | Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every file of the export except the manifest and the model card."""
    d = Path(export_dir)
    return {p.relative_to(d).as_posix(): sha256_file(p)
            for p in sorted(d.rglob("*")) if p.is_file() and p.name not in DESCRIPTIVE}


#: what writes the model card and the functional fingerprint into a finished export. Resolved when an export is
#: written (never at import): the card scores a probe set through the registry, which sits above the core.
CARD_WRITER = "qe.zoo.card:finish_export"


def _card_writer():
    import importlib

    module, attr = CARD_WRITER.split(":")
    return getattr(importlib.import_module(module), attr)


@contextlib.contextmanager
def export_writer(
    dest: str | Path,
    kind: str,
    config: dict[str, Any] | None = None,
    data: dict[str, Any] | None = None,
    metrics: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
    overwrite: bool = True,
    card: bool = True,
) -> Iterator[Path]:
    """Yield a temporary directory to write files into; on success write the manifest, the fingerprint and the model
    card (``card=False``: neither; the export then has no README.md) and rename it to ``dest``.

    >>> with export_writer("exports/lm", kind="slor", config=cfg) as tmp:
    ...     save_file(tensors, tmp / "model.safetensors")
    """
    dest = Path(dest).resolve()
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists() and not overwrite:
        raise ExportError(f"{dest} already exists (pass overwrite=True to replace it)")
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
    try:
        manifest_extra: dict[str, Any] = {}
        yield tmp
        if extra:
            manifest_extra.update(extra)
        manifest = {
            "kind": kind,
            "format_version": FORMAT_VERSION,
            "qe_version": __version__,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "config": config or {},
            "data": data or {},
            "metrics": metrics or {},
            **manifest_extra,
        }
        manifest["checksum"] = export_checksum(tmp)
        manifest["files"] = file_checksums(tmp)
        with open(tmp / MANIFEST, "w", encoding="utf-8") as f:
            f.write(dumps(manifest, indent=2, default=_json_default) + "\n")  # strict JSON: NaN metrics -> null
        if card:
            _card_writer()(tmp, final=dest)
        apply_umask(tmp)
        if dest.exists():
            old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
            os.replace(dest, old)
            os.replace(tmp, dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def apply_umask(root: Path) -> None:
    """Give ``root`` and everything below it the permissions a plain ``mkdir`` / ``open`` would have under the
    current umask (``tempfile.mkdtemp`` creates 0700: an export must not end up owner-only when the run
    directory beside it is not)."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(root, 0o777 & ~mask)
    for p in root.rglob("*"):
        os.chmod(p, (0o777 if p.is_dir() else 0o666) & ~mask)


def _json_default(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
    except ImportError:  # pragma: no cover
        pass
    return str(o)


def read_manifest(
    export_dir: str | Path,
    expected_kind: str | tuple[str, ...] | None = None,
    expected_format: int = FORMAT_VERSION,
) -> dict[str, Any]:
    """Read and check ``qe_export.json``; raise :class:`ExportError` saying what was found vs expected."""
    d = Path(export_dir)
    mf = d / MANIFEST
    if not d.is_dir():
        raise ExportError(f"{d}: not a directory; an export is a directory containing {MANIFEST}")
    if not mf.is_file():
        raise ExportError(f"{d}: no {MANIFEST} found; this is not a qe export (or it was not written completely)")
    try:
        manifest = json.loads(mf.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ExportError(f"{mf}: not valid JSON ({exc})") from None
    for key in ("kind", "format_version"):
        if key not in manifest:
            raise ExportError(f"{mf}: field {key!r} is missing")
    if manifest["format_version"] != expected_format:
        raise ExportError(
            f"{d}: export format_version {manifest['format_version']!r} found, {expected_format} expected "
            f"(written by qe {manifest.get('qe_version', '?')}, this is qe {__version__}); re-export it with this version"
        )
    if expected_kind is not None:
        kinds = (expected_kind,) if isinstance(expected_kind, str) else tuple(expected_kind)
        if manifest["kind"] not in kinds:
            raise ExportError(f"{d}: export kind {manifest['kind']!r} found, {' or '.join(map(repr, kinds))} expected")
    return manifest


def check_weights(export_dir: str | Path, manifest: dict[str, Any] | None = None) -> None:
    """Raise :class:`ExportError` naming the first ``*.safetensors`` file of the export that is not a valid
    safetensors file: its header is parsed and checked against the file's length (no tensor is read, so this costs
    milliseconds for any model). Run by :func:`qe.load` before a kind's loader, so a damaged or truncated weights
    file is one line naming it (``qe score``: exit 3), not the loader's traceback.

    A file that does not parse is first compared with the checksums the manifest records (``manifest``, else read
    from the export): when they disagree the file was changed after the export was written, and the error is
    :func:`verify_checksum`'s ("changed: FILE"), saying tampering before damage; the header problem follows it.
    Only when every checksum agrees (an export written that way) is it "not a valid safetensors file" alone. The
    checksums are computed on this failure path only, so a sound export costs no more than the header reads."""
    files = sorted(p for p in Path(export_dir).rglob("*.safetensors") if p.is_file())
    if not files:
        return
    try:
        from safetensors import safe_open
    except ImportError:  # pragma: no cover - a dependency; the loader will say
        return
    for p in files:
        try:
            with safe_open(str(p), framework="numpy") as f:
                f.keys()
        except Exception as exc:  # noqa: BLE001 - SafetensorError, OSError: the file does not load
            why = f"{p.name}: not a valid safetensors file ({' '.join(str(exc).split())})"
            if manifest is None:
                manifest = read_manifest(export_dir)
            try:
                verify_checksum(export_dir, manifest)
            except ExportError as changed:
                raise ExportError(f"{changed}; {why}") from None
            raise ExportError(f"{p}: not a valid safetensors file ({' '.join(str(exc).split())}); the export is "
                              f"damaged: re-export or reinstall it") from None


def verify_checksum(export_dir: str | Path, manifest: dict[str, Any]) -> None:
    """Raise :class:`ExportError` when the export's files differ from those the manifest lists, naming each
    stray, missing or changed file (manifests older than the per-file list: the overall checksum only)."""
    want = manifest.get("checksum")
    files = manifest.get("files")
    if isinstance(files, dict):
        got_files = file_checksums(export_dir)
        stray = sorted(set(got_files) - set(files))
        missing = sorted(set(files) - set(got_files))
        changed = sorted(f for f in set(files) & set(got_files) if files[f] != got_files[f])
        if stray or missing or changed:
            parts = [f"{what}: {', '.join(names)}" for what, names in
                     (("stray file(s) not written by the export", stray), ("missing", missing), ("changed", changed))
                     if names]
            raise ExportError(f"{export_dir}: files differ from the manifest ({'; '.join(parts)}); remove stray "
                              f"files, or re-export")
        return
    if want is None:
        return
    got = export_checksum(export_dir)
    if got != want:
        raise ExportError(f"{export_dir}: files changed since export (checksum {got[:12]} != manifest {want[:12]})")
