"""Models that travel: one archive per model, verified before use.

    qe zoo pack slor-word-domain -o dist/              # -> dist/slor-word-domain.qe.tar.gz (+ .sha256)
    qe zoo install dist/slor-word-domain.qe.tar.gz     # -> $QE_MODELS/slor-word-domain
    qe zoo install https://host/models/slor-word-domain.qe.tar.gz#sha256=<hex>
    qe.load("https://host/models/slor-word-domain.qe.tar.gz")   # or file://, s3://, gs://, hf://USER/REPO/FILE
    qe zoo push slor-word-domain USER/REPO             # the Hugging Face Hub (needs huggingface_hub and a token)

An archive (``<name>.qe.tar.gz``) is a gzip-compressed tar holding ``qe_archive.json`` (first member) and the export
directory ``<name>/`` (manifest, model card, weights, tokenizer). ``qe_archive.json`` records the name, kind, export
checksum, functional fingerprint and the SHA-256 and size of **every** file of the export, manifest and card
included (archives packed before sizes were recorded have no ``sizes``). Packing
is reproducible: members sorted, owners and modes normalised, time stamps set from the manifest's ``created``, gzip
header without a time stamp, so packing one export twice gives one archive checksum (written beside it as
``<archive>.sha256`` in ``sha256sum`` format).

Reading an archive (:func:`fetch_export`, :func:`install`) never trusts it before it is checked: the archive's own
SHA-256 against the one given (``sha256=``, ``--sha256`` or a ``#sha256=<hex>`` URL fragment) when given; every member
must be a plain file or folder inside ``<name>/`` (no links, devices, absolute paths or ``..``; extraction uses
tarfile's ``data`` filter besides); every extracted file against ``qe_archive.json`` (a stray, missing or changed file
is refused; a member larger than the size ``qe_archive.json`` declares, or past the extraction cap, is refused before
its bytes are written: :func:`extract_verified`); the export against its own manifest and the recorded export
checksum; for :func:`install`, the model loads and scores its probe set as the fingerprint it carries says
(:func:`load_check`). Only then is it moved into place. A truncated, tampered or foreign archive is refused with one
line naming it (:class:`ArchiveError`). Nothing is unpickled: exports hold safetensors weights and JSON/text files
only.

Remote sources are read through fsspec (``http(s)://``, ``s3://``, ``gs://`` ... with the user's own fsspec back-ends)
and ``hf://`` through huggingface_hub's fsspec file system when it is installed; qe has no downloader of its own; a
silent server is given up after ``timeout`` seconds (``$QE_HTTP_TIMEOUT``, default 60). Downloads land in
``<models>/.cache/archives/<sha256>.qe.tar.gz`` (keyed by the archive's checksum) and a verified extraction in
``<models>/.cache/exports/<sha256>/<name>/``; ``urls.json`` there remembers which URL gave which archive, so a second
``qe.load(URL)`` reuses the cache when the server's ETag / Last-Modified / size (or the Hub's LFS sha256) still match,
or when the checksum is given.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import tarfile
import tempfile
import zlib
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from qe.core.jsonio import dumps
from qe.errors import ExportError, MissingDependencyError, QEError

ARCHIVE_SUFFIX = ".qe.tar.gz"
ARCHIVE_SUFFIXES = (ARCHIVE_SUFFIX, ".tar.gz", ".tgz")
ARCHIVE_MANIFEST = "qe_archive.json"
ARCHIVE_FORMAT = "qe-archive"
ARCHIVE_VERSION = 1
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_HEX = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]*$")
_CHUNK = 1 << 20

#: how long to wait for a server's answer (connecting, or the next bytes of a download), in seconds
DEFAULT_TIMEOUT = 60.0
TIMEOUT_ENV = "QE_HTTP_TIMEOUT"
#: the most bytes one archive may unpack to (and one download may hold); ``$QE_ARCHIVE_MAX_BYTES`` changes it
DEFAULT_MAX_BYTES = 16 << 30
MAX_BYTES_ENV = "QE_ARCHIVE_MAX_BYTES"
#: an archive packed before member sizes were recorded unpacks to at most this many times its own size (and at
#: least _OLD_FLOOR bytes), within the cap
_OLD_RATIO = 50
_OLD_FLOOR = 256 << 20
#: ``qe_archive.json`` is small (a checksum and a size per file); a larger one is not read
_META_MAX = 8 << 20


class ArchiveError(ExportError):
    """An archive that cannot be used: truncated, tampered, not a qe archive, or not reachable. One line."""


class SettingError(QEError):
    """A local setting that cannot work: a models folder that cannot be written, a timeout or cap that is not a
    number. Bad input (``qe`` exits with status 2), not a broken model; one line naming the setting to change."""


# ------------------------------------------------------------------------------------------------------- helpers
def is_url(source: str | os.PathLike) -> bool:
    return bool(_URL.match(str(source)))


def is_archive(source: str | os.PathLike) -> bool:
    """A URL, or a local file whose name ends like an archive."""
    s = str(source)
    return is_url(s) or (s.lower().endswith(ARCHIVE_SUFFIXES) and Path(s).expanduser().is_file())


def split_fragment(url: str) -> tuple[str, str | None]:
    """``("https://h/x.qe.tar.gz", "<hex>")`` for ``https://h/x.qe.tar.gz#sha256=<hex>``."""
    if "#" not in url:
        return url, None
    base, frag = url.split("#", 1)
    m = re.fullmatch(r"sha256=([0-9A-Fa-f]{64})", frag)
    if not m:
        raise ArchiveError(f"{url}: URL fragment {frag!r} is not sha256=<64 hex digits>")
    return base, m.group(1).lower()


def _check_sha(sha256: str | None, what: str) -> str | None:
    if sha256 is None:
        return None
    s = str(sha256).strip().lower()
    if not _HEX.match(s):
        raise ArchiveError(f"{what}: sha256 {sha256!r} is not 64 hex digits")
    return s


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def cache_dir(models_dir: str | os.PathLike | None = None) -> Path:
    """``<models>/.cache`` (the zoo's cache folder; RatPred's sentence vectors live beside)."""
    from qe import zoo

    return zoo.models_dir(models_dir) / ".cache"


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


def _positive(value: Any, what: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if not (v > 0 and v != float("inf")):
        raise SettingError(f"{what}: expected a number > 0")
    return v


def http_timeout(timeout: float | str | None = None) -> float:
    """Seconds to wait for a server's answer: ``timeout``, else ``$QE_HTTP_TIMEOUT``, else 60."""
    if timeout is not None:
        return _positive(timeout, f"timeout {timeout!r} (--timeout)")
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    return _positive(raw, f"${TIMEOUT_ENV}={raw!r}") if raw else DEFAULT_TIMEOUT


def archive_cap(limit: int | str | None = None) -> tuple[int, bool]:
    """(the most bytes one archive may unpack to, whether it was set): ``limit``, else ``$QE_ARCHIVE_MAX_BYTES``,
    else 16 GiB."""
    if limit is not None:
        return int(_positive(limit, f"max_bytes {limit!r}")), True
    raw = os.environ.get(MAX_BYTES_ENV, "").strip().replace("_", "")
    return (int(_positive(raw, f"${MAX_BYTES_ENV}={raw!r}")), True) if raw else (DEFAULT_MAX_BYTES, False)


def _seconds(t: float) -> str:
    return f"{t:g} s"


def _writable(folder: Path) -> Path:
    """``folder``, created if needed and checked writable; else one line naming it and ``$QE_MODELS``."""
    from qe import zoo

    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise SettingError(f"{folder}: cannot write to the models folder ({exc.strerror or _one_line(exc)}); set "
                           f"${zoo.ENV_VAR} (qe zoo: --models-dir) to a folder you can write") from None
    return folder


# ----------------------------------------------------------------------------------------------------------- pack
def resolve_export(source: str | os.PathLike, models_dir: str | os.PathLike | None = None) -> tuple[Path, str]:
    """(export dir, name) for a zoo name built in the models directory or an export directory."""
    from qe import zoo
    from qe.core.export import MANIFEST

    p = Path(str(source)).expanduser()
    if (p / MANIFEST).is_file():
        return p.resolve(), p.resolve().name
    built = zoo.model_path(str(source), models_dir)
    if (built / MANIFEST).is_file():
        return built.resolve(), str(source)
    if str(source) in zoo.NAMES:
        raise ExportError(zoo.not_built_message(str(source)))
    raise ExportError(f"{source}: neither an export directory nor a zoo name built in {zoo.models_dir(models_dir)}")


def _mtime(manifest: dict[str, Any]) -> int:
    try:
        return int(_dt.datetime.fromisoformat(str(manifest.get("created"))).timestamp())
    except (TypeError, ValueError):
        return 0


def pack(source: str | os.PathLike, out_dir: str | os.PathLike, *, name: str | None = None,
         models_dir: str | os.PathLike | None = None) -> Path:
    """Write ``<out_dir>/<name>.qe.tar.gz`` (and ``.sha256``) for a zoo name or an export directory.

    The export is checked against its manifest first. Its recorded fingerprint travels in ``qe_archive.json``;
    an export written before fingerprints existed is scored on its probe set now (the manifest is not changed).
    """
    from qe.core.export import export_checksum, read_manifest, verify_checksum
    from qe.zoo import fingerprint as fpm

    export, default_name = resolve_export(source, models_dir)
    name = name or default_name
    if not _NAME.match(name):
        raise ArchiveError(f"{name!r}: an archive name uses letters, digits and _ . @ + - only")
    manifest = read_manifest(export)
    verify_checksum(export, manifest)
    fp = manifest.get("fingerprint")
    if not fpm.has_scores(fp):
        fp = fpm.compute(export, manifest)
    files = sorted(p for p in export.rglob("*") if p.is_file())
    meta = {"format": ARCHIVE_FORMAT, "archive_version": ARCHIVE_VERSION, "name": name, "kind": manifest["kind"],
            "export_checksum": export_checksum(export), "qe_version": manifest.get("qe_version"),
            "fingerprint": fp,
            "files": {f"{name}/{p.relative_to(export).as_posix()}": sha256_of(p) for p in files},
            # extraction refuses a member whose tar header says more bytes than this, before writing it
            "sizes": {f"{name}/{p.relative_to(export).as_posix()}": p.stat().st_size for p in files}}
    out = Path(out_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    dest = out / f"{name}{ARCHIVE_SUFFIX}"
    tmp = out / f".{dest.name}.tmp-{os.getpid()}"
    mtime = _mtime(manifest)

    def info(arcname: str, size: int = 0, folder: bool = False) -> tarfile.TarInfo:
        ti = tarfile.TarInfo(arcname)
        ti.size, ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = size, mtime, 0, 0, "", ""
        ti.type, ti.mode = (tarfile.DIRTYPE, 0o755) if folder else (tarfile.REGTYPE, 0o644)
        return ti

    try:
        with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
                tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            # strict JSON; ensure_ascii as before, so that an archive's bytes (and sha256) do not change
            blob = (dumps(meta, indent=2, sort_keys=True, ensure_ascii=True) + "\n").encode("utf-8")
            tar.addfile(info(ARCHIVE_MANIFEST, len(blob)), io.BytesIO(blob))
            dirs = sorted({p.parent for p in files if p.parent != export} | {export})
            for d in dirs:
                rel = name if d == export else f"{name}/{d.relative_to(export).as_posix()}"
                tar.addfile(info(rel, folder=True))
            for p in files:
                with open(p, "rb") as f:
                    tar.addfile(info(f"{name}/{p.relative_to(export).as_posix()}", p.stat().st_size), f)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    digest = sha256_of(dest)
    (out / f"{dest.name}.sha256").write_text(f"{digest}  {dest.name}\n", encoding="utf-8")
    return dest


# ---------------------------------------------------------------------------------------------------------- fetch
def _fsspec(url: str, timeout: float):
    try:
        import fsspec
    except ImportError:
        raise MissingDependencyError(f"{url}: reading a URL needs fsspec: pip install fsspec") from None
    options: dict[str, Any] = {}
    if urlsplit(url).scheme.lower() in ("http", "https"):
        # fsspec's HTTP back-end (aiohttp) waits forever by default: bound connecting and each read (not the whole
        # download, which may be long); fs.info gets an overall limit too (it tries HEAD, then GET)
        try:
            import aiohttp

            options["client_kwargs"] = {"timeout": aiohttp.ClientTimeout(total=None, connect=timeout,
                                                                         sock_connect=timeout, sock_read=timeout)}
        except ImportError:
            pass  # fsspec says what to install below
    try:
        return fsspec.core.url_to_fs(url, **options)
    except ImportError as exc:  # the protocol's back-end is missing (hf:// without huggingface_hub, s3fs, gcsfs)
        hint = "pip install huggingface_hub" if url.startswith("hf://") else str(exc).splitlines()[0]
        raise MissingDependencyError(f"{url}: no fsspec back-end for this protocol ({hint})") from None
    except ValueError as exc:
        raise ArchiveError(f"{url}: {_one_line(exc)}") from None


def _causes(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _network_error(exc: BaseException, url: str, timeout: float) -> tuple[str, ArchiveError] | None:
    """(reason, one line) for what went wrong on the network: ``timeout`` (no answer in time), ``refused``
    (connection refused), ``404`` or ``http`` (another HTTP error status); None when ``exc`` is none of these."""
    import errno

    where = urlsplit(url).netloc or url
    for e in _causes(exc):
        if isinstance(e, TimeoutError) or type(e).__name__ in ("ServerTimeoutError", "FSTimeoutError",
                                                               "ReadTimeout", "ConnectTimeout"):
            return "timeout", ArchiveError(f"{url}: timed out after {_seconds(timeout)} (the server sent nothing; "
                                           f"--timeout or ${TIMEOUT_ENV} waits longer)")
        if isinstance(e, ConnectionRefusedError) or getattr(e, "errno", None) == errno.ECONNREFUSED or \
                isinstance(getattr(e, "os_error", None), ConnectionRefusedError):
            return "refused", ArchiveError(f"{url}: connection refused by {where} (no server listening there)")
        status = getattr(e, "status", None) or getattr(getattr(e, "response", None), "status_code", None)
        if isinstance(status, int) and status >= 400:
            if status == 404:
                return "404", ArchiveError(f"{url}: not found (HTTP 404)")
            msg = getattr(e, "message", "") or ""
            return "http", ArchiveError(f"{url}: HTTP {status}{' ' + str(msg) if msg else ''}")
    return None


def _remote_tag(fs: Any, path: str, url: str, timeout: float) -> tuple[dict[str, Any] | None, int | None]:
    """(what identifies the remote file's current version without downloading it, or None when nothing reliable;
    its size when known). No answer in time, or a refused connection, is an error at once."""
    try:
        from fsspec.asyn import AsyncFileSystem

        # an async back-end's sync wrapper takes an overall limit (fs.info may try HEAD, then GET)
        info = fs.info(path, timeout=timeout) if isinstance(fs, AsyncFileSystem) else fs.info(path)
    except Exception as exc:  # noqa: BLE001 - no HEAD / offline: no tag, unless the server is unreachable
        err = _network_error(exc, url, timeout)
        if err is not None and err[0] in ("timeout", "refused", "404"):
            raise err[1] from None
        return None, None
    size = info.get("size") if isinstance(info.get("size"), int) else None
    lfs = info.get("lfs") if isinstance(info.get("lfs"), dict) else None
    if lfs and lfs.get("sha256"):
        return {"sha256": str(lfs["sha256"]).lower()}, size
    tag = {k: str(info[k]) for k in ("ETag", "etag", "Content-MD5", "Digest", "Last-Modified", "last_commit",
                                     "blob_id") if info.get(k)}
    if not tag:
        return None, size
    tag["size"] = info.get("size")
    return tag, size


def fetch(source: str | os.PathLike, *, sha256: str | None = None, models_dir: str | os.PathLike | None = None,
          timeout: float | None = None, max_bytes: int | None = None) -> tuple[Path, str]:
    """(local archive file, its sha256) for a local path, ``file://`` URL or remote URL (through fsspec), checked
    against ``sha256`` (or a ``#sha256=`` fragment) when given. Remote archives are cached by checksum.

    ``timeout``: seconds to wait for the server (connecting, and each read of the download); default
    ``$QE_HTTP_TIMEOUT``, else 60. A download larger than the archive cap (``max_bytes``, ``$QE_ARCHIVE_MAX_BYTES``,
    16 GiB) is refused."""
    src = str(source)
    if is_url(src):
        src, frag = split_fragment(src)
        sha256 = sha256 or frag
    want = _check_sha(sha256, src)
    if src.startswith("file://"):
        src = unquote(urlsplit(src).path)
    if not is_url(src):
        path = Path(src).expanduser()
        if not path.is_file():
            raise ArchiveError(f"{path}: no such archive file")
        got = sha256_of(path)
        if want and got != want:
            raise ArchiveError(f"{path}: archive sha256 {got[:12]} != expected {want[:12]} (tampered, truncated or "
                               f"another file); refusing it")
        return path, got
    wait = http_timeout(timeout)
    cap, _ = archive_cap(max_bytes)
    cache = cache_dir(models_dir) / "archives"
    if want and (cache / f"{want}{ARCHIVE_SUFFIX}").is_file():
        return cache / f"{want}{ARCHIVE_SUFFIX}", want
    _writable(cache)
    fs, path = _fsspec(src, wait)
    index_path = cache / "urls.json"
    try:
        index = json.loads(index_path.read_text(encoding="utf-8")) if index_path.is_file() else {}
    except (OSError, json.JSONDecodeError):
        index = {}
    tag, size = _remote_tag(fs, path, src, wait)
    known = index.get(src)
    hit = None
    if tag and tag.get("sha256"):
        hit = tag["sha256"]
    elif tag and known and known.get("tag") == tag:
        hit = known.get("sha256")
    if hit and (cache / f"{hit}{ARCHIVE_SUFFIX}").is_file() and (want is None or hit == want):
        return cache / f"{hit}{ARCHIVE_SUFFIX}", hit
    if size is not None and size > cap:
        raise ArchiveError(f"{src}: {size:,} bytes, over the archive cap of {cap:,} (${MAX_BYTES_ENV} raises it)")
    tmp = cache / f".download-{os.getpid()}-{os.urandom(4).hex()}"
    h = hashlib.sha256()
    got_bytes = 0
    try:
        known = {"size": size} if size and urlsplit(src).scheme.lower() in ("http", "https") else {}
        with fs.open(path, "rb", **known) as fin, open(tmp, "wb") as fout:
            for block in iter(lambda: fin.read(_CHUNK), b""):
                got_bytes += len(block)
                if got_bytes > cap:
                    raise ArchiveError(f"{src}: more than {cap:,} bytes, over the archive cap (${MAX_BYTES_ENV} "
                                       f"raises it); refusing it")
                h.update(block)
                fout.write(block)
    except ArchiveError:
        tmp.unlink(missing_ok=True)
        raise
    except Exception as exc:  # noqa: BLE001 - any back-end's network error: one line naming the URL
        tmp.unlink(missing_ok=True)
        reason = _network_error(exc, src, wait)
        if reason is not None:
            raise reason[1] from None
        if isinstance(exc, FileNotFoundError):
            raise ArchiveError(f"{src}: not found") from None
        raise ArchiveError(f"{src}: download failed ({_one_line(exc)})") from None
    got = h.hexdigest()
    if want and got != want:
        tmp.unlink(missing_ok=True)
        raise ArchiveError(f"{src}: archive sha256 {got[:12]} != expected {want[:12]} (tampered, truncated or another "
                           f"file); refusing it")
    final = cache / f"{got}{ARCHIVE_SUFFIX}"
    os.replace(tmp, final)
    if tag:
        index[src] = {"sha256": got, "tag": tag}
        itmp = index_path.with_name(f".urls.json.tmp-{os.getpid()}")
        itmp.write_text(dumps(index, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(itmp, index_path)
    return final, got


# -------------------------------------------------------------------------------------------------------- extract
def _check_member(m: tarfile.TarInfo, label: str) -> None:
    name = m.name
    parts = Path(name).parts
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or ".." in parts or "\\" in name:
        raise ArchiveError(f"{label}: member {name!r} points outside the archive folder; refusing it")
    if not (m.isreg() or m.isdir()):
        raise ArchiveError(f"{label}: member {name!r} is not a plain file or folder (links and devices are refused)")


def read_meta(archive: Path, label: str | None = None) -> dict[str, Any]:
    """``qe_archive.json`` of an archive (the first member), checked for format and version; no extraction."""
    label = label or str(archive)
    try:
        with tarfile.open(archive, "r:gz") as tar:
            first = tar.next()
            if first is None or first.name != ARCHIVE_MANIFEST or not first.isreg():
                raise ArchiveError(f"{label}: not a qe archive (its first member is not {ARCHIVE_MANIFEST})")
            if first.size > _META_MAX:
                raise ArchiveError(f"{label}: {ARCHIVE_MANIFEST} is {first.size:,} bytes (at most {_META_MAX:,} are "
                                   f"read); not a qe archive, refusing it")
            meta = json.loads(tar.extractfile(first).read().decode("utf-8"))
    except ArchiveError:
        raise
    except (tarfile.TarError, EOFError, zlib.error, OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArchiveError(f"{label}: truncated or corrupt archive ({_one_line(exc)}); refusing it") from None
    if not isinstance(meta, dict) or meta.get("format") != ARCHIVE_FORMAT:
        raise ArchiveError(f"{label}: {ARCHIVE_MANIFEST} is not a qe archive manifest")
    if meta.get("archive_version") != ARCHIVE_VERSION:
        raise ArchiveError(f"{label}: archive version {meta.get('archive_version')!r} found, {ARCHIVE_VERSION} "
                           f"expected; repack it with this qe")
    if not _NAME.match(str(meta.get("name", ""))) or not isinstance(meta.get("files"), dict):
        raise ArchiveError(f"{label}: {ARCHIVE_MANIFEST} has no valid 'name' and 'files'")
    sizes = meta.get("sizes")  # absent in archives packed before sizes were recorded
    if sizes is not None and not (isinstance(sizes, dict) and set(sizes) == set(meta["files"]) and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in sizes.values())):
        raise ArchiveError(f"{label}: {ARCHIVE_MANIFEST} has 'sizes' that do not give one byte count per file of "
                           f"'files'; refusing it")
    return meta


def _size_limit(archive: Path, meta: dict[str, Any], label: str, limit: int | None) -> tuple[int, str]:
    """(the most bytes the archive may unpack to, what to change for more); refuses an archive whose declared sizes
    pass the cap."""
    cap, chosen = archive_cap(limit)
    sizes = meta.get("sizes")
    if sizes is None:  # packed before sizes were recorded: a multiple of its own size, unless a cap is set
        ratio = min(cap, max(_OLD_FLOOR, _OLD_RATIO * archive.stat().st_size))
        if not chosen and ratio < cap:
            return ratio, (f"an archive without recorded member sizes unpacks to at most {_OLD_RATIO}x its own size; "
                           f"set ${MAX_BYTES_ENV} to allow more")
        return cap, f"${MAX_BYTES_ENV} raises it"
    total = sum(sizes.values())
    if total > cap:
        raise ArchiveError(f"{label}: unpacks to {total:,} bytes, over the cap of {cap:,} (${MAX_BYTES_ENV} raises "
                           f"it); refusing it")
    return total, f"${MAX_BYTES_ENV} raises it"


def extract_verified(archive: Path, dest_parent: Path, *, label: str | None = None,
                     max_bytes: int | None = None) -> tuple[Path, dict[str, Any]]:
    """Extract into a new temporary folder under ``dest_parent`` and verify every file; return (export folder inside
    it, archive meta). The caller moves the export into place and removes the temporary folder.

    Members are read one tar header at a time and each is checked before its bytes are written: a plain file or
    folder inside the model's folder; listed in ``qe_archive.json`` with the size its header gives (archives that
    record ``sizes``); and the running total within the cap (``max_bytes``, ``$QE_ARCHIVE_MAX_BYTES``, 16 GiB; an
    archive without ``sizes``: at most 50 times its own size, at least 256 MiB). tarfile writes exactly the header's
    size, so nothing larger than declared reaches the disk."""
    from qe.core.export import export_checksum, read_manifest, verify_checksum

    label = label or str(archive)
    meta = read_meta(archive, label)
    name = meta["name"]
    sizes = meta.get("sizes")
    limit, why = _size_limit(archive, meta, label, max_bytes)
    _writable(dest_parent)
    if sizes is not None:
        free = shutil.disk_usage(dest_parent).free
        if limit > free:
            raise ArchiveError(f"{label}: unpacks to {limit:,} bytes, but {dest_parent} has {free:,} free; "
                               f"refusing it")
    tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=dest_parent))
    try:
        try:
            with tarfile.open(archive, "r:gz") as tar:
                total = 0
                for m in tar:  # one header at a time: a member is refused before its data is read or written
                    _check_member(m, label)
                    if m.name != ARCHIVE_MANIFEST and m.name != name and not m.name.startswith(f"{name}/"):
                        raise ArchiveError(f"{label}: member {m.name!r} is outside the model folder {name!r}")
                    if m.isreg() and m.name != ARCHIVE_MANIFEST:
                        if m.issparse():
                            raise ArchiveError(f"{label}: member {m.name!r} is a sparse file (qe zoo pack writes "
                                               f"none); refusing it")
                        if sizes is not None and m.name not in sizes:
                            raise ArchiveError(f"{label}: stray member {m.name!r}, not in {ARCHIVE_MANIFEST}; "
                                               f"tampered, refusing it")
                        if sizes is not None and m.size != sizes[m.name]:
                            raise ArchiveError(f"{label}: member {m.name!r} is {m.size:,} bytes, {ARCHIVE_MANIFEST} "
                                               f"declares {sizes[m.name]:,}; tampered, refusing it")
                        total += m.size
                        if total > limit:
                            raise ArchiveError(f"{label}: unpacks to more than {limit:,} bytes ({why}); refusing it")
                    if hasattr(tarfile, "data_filter"):
                        tar.extract(m, tmp, filter="data")
                    else:  # Python without extraction filters: the member was checked above
                        tar.extract(m, tmp)
        except ArchiveError:
            raise
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            raise ArchiveError(f"{label}: truncated or corrupt archive ({_one_line(exc)}); refusing it") from None
        export = tmp / name
        got = {p.relative_to(tmp).as_posix(): p for p in tmp.rglob("*") if p.is_file()}
        got.pop(ARCHIVE_MANIFEST, None)
        listed = meta["files"]
        stray = sorted(set(got) - set(listed))
        missing = sorted(set(listed) - set(got))
        if stray or missing:
            what = f"stray {', '.join(stray[:3])}" if stray else f"missing {', '.join(missing[:3])}"
            raise ArchiveError(f"{label}: files differ from {ARCHIVE_MANIFEST} ({what}); tampered or incomplete, "
                               f"refusing it")
        for rel in sorted(listed):
            if sha256_of(got[rel]) != str(listed[rel]).lower():
                raise ArchiveError(f"{label}: {rel} does not match its checksum in {ARCHIVE_MANIFEST} (tampered or "
                                   f"corrupted); refusing it")
        try:
            manifest = read_manifest(export)
            verify_checksum(export, manifest)
        except ExportError as exc:
            raise ArchiveError(f"{label}: the export inside does not match its own manifest ({_one_line(exc)})") \
                from None
        if export_checksum(export) != meta.get("export_checksum") or manifest.get("kind") != meta.get("kind"):
            raise ArchiveError(f"{label}: export checksum or kind differs from {ARCHIVE_MANIFEST}; refusing it")
        return export, meta
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def fetch_export(source: str | os.PathLike, *, sha256: str | None = None,
                 models_dir: str | os.PathLike | None = None, timeout: float | None = None) -> Path:
    """A verified export folder for an archive (path or URL), extracted once per archive checksum into
    ``<models>/.cache/exports/<sha256>/<name>`` (what :func:`qe.load` uses for a URL). ``timeout``: as
    :func:`fetch`. A cache folder that cannot be written is :class:`SettingError` (one that already holds the
    extraction is only read)."""
    from qe.core.export import MANIFEST

    archive, digest = fetch(source, sha256=sha256, models_dir=models_dir, timeout=timeout)
    root = cache_dir(models_dir) / "exports"
    done = root / digest
    if done.is_dir():
        found = [p for p in done.iterdir() if (p / MANIFEST).is_file()]
        if len(found) == 1:
            return found[0]
        shutil.rmtree(done, ignore_errors=True)  # an inconsistent cache entry: extract again
    export, meta = extract_verified(archive, root, label=str(source))
    tmp = export.parent
    try:
        os.replace(tmp, done)
    except OSError:  # another process extracted the same archive meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
    (done / ARCHIVE_MANIFEST).unlink(missing_ok=True)
    return done / meta["name"]


# -------------------------------------------------------------------------------------------------------- install
def load_check(export: Path, meta: dict[str, Any], label: str) -> str:
    """Load an extracted export as :func:`qe.load` would and, when the archive carries a fingerprint over the probe
    set this qe ships, score the probes and compare with it within the kind's tolerance
    (:mod:`qe.zoo.fingerprint`). Returns one line saying what was checked; raises :class:`ArchiveError` when the
    model does not load or scores differently. A missing optional package is raised as it is (it names what to
    install)."""
    from qe.core.export import read_manifest
    from qe.kinds import load_export  # not qe.registry, which imports this module (qe.load of an archive)
    from qe.zoo import fingerprint as fpm

    manifest = read_manifest(export)
    kind = manifest["kind"]
    try:
        scorer = load_export(export, **fpm.LOAD_OPTIONS.get(kind, {}))
    except MissingDependencyError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the kind's loader raises: the model does not load
        why = " ".join(str(exc).split()) if isinstance(exc, ExportError) else _one_line(exc)
        raise ArchiveError(f"{label}: the model inside cannot be loaded ({why}); refusing it") from None
    fp = meta.get("fingerprint")
    if not fpm.has_scores(fp):
        return "loads; the archive carries no fingerprint to compare with"
    if not fpm.ships(fp.get("probe_set"), fp["probe_sha256"]):
        return f"loads; its fingerprint is over a probe set this qe does not ship ({fp.get('probe_set')!r})"
    try:  # over the archive's probe set, which may be an older choice than this qe's for the kind
        mine = fpm.compute(export, manifest, scorer=scorer, probe_set=fp["probe_set"])
    except MissingDependencyError:
        raise
    except Exception as exc:  # noqa: BLE001 - as above
        raise ArchiveError(f"{label}: the model inside loads but cannot score its probe set ({_one_line(exc)}); "
                           f"refusing it") from None
    v = fpm.compare(fpm.Identity("the archive's fingerprint", kind, None, fp),
                    fpm.Identity(str(export), kind, None, mine))
    how = v.summary.split("; ", 1)[-1]  # without "checksum None vs None"
    if not v.same:
        raise ArchiveError(f"{label}: loads, but its probe-set scores are different from the fingerprint it carries "
                           f"({how}); refusing it (--no-check installs it anyway)")
    return f"loads; probe scores equivalent to its fingerprint ({how})"


def install(source: str | os.PathLike, models_dir: str | os.PathLike | None = None, *, name: str | None = None,
            force: bool = False, sha256: str | None = None, timeout: float | None = None,
            check: bool = True) -> tuple[Path, dict[str, Any], bool]:
    """Install an archive (path or URL) as ``<models>/<name>`` after verifying it; return (path, archive meta,
    whether anything was installed). The zoo record ``<models>/.zoo/<name>.json`` gets the checksum and fingerprint
    so ``qe zoo verify NAME`` compares later rebuilds or copies with it.

    ``check`` (default): before it is moved into place, the model is loaded and its probe set scored against the
    fingerprint the archive carries (:func:`load_check`; what was checked is ``meta["checked"]``); a model that
    does not load or scores differently is refused and nothing is installed. ``timeout``: as :func:`fetch`. A
    models folder that cannot be written is :class:`SettingError`."""
    from qe import zoo
    from qe.core.export import MANIFEST, read_manifest

    models = zoo.models_dir(models_dir).expanduser()
    _writable(models)
    archive, digest = fetch(source, sha256=sha256, models_dir=models, timeout=timeout)
    meta = read_meta(archive, str(source))
    name = name or meta["name"]
    if not _NAME.match(name):
        raise ArchiveError(f"{name!r}: a model name uses letters, digits and _ . @ + - only")
    final = models / name
    if (final / MANIFEST).is_file() and not force:
        have = read_manifest(final).get("checksum")
        if have == meta.get("export_checksum"):
            _write_record(models, name, meta, source, digest)
            return final, meta, False
        raise ArchiveError(f"{final} already holds another model (checksum {str(have)[:12]}, the archive's "
                           f"{str(meta.get('export_checksum'))[:12]}); pass --force to replace it")
    export, _ = extract_verified(archive, models / ".install", label=str(source))
    tmp = export.parent
    try:
        if check:
            meta["checked"] = load_check(export, meta, str(source))
        if final.exists():
            old = models / ".install" / f".{name}.old-{os.getpid()}"
            os.replace(final, old)
            os.replace(export, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(export, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        with contextlib.suppress(OSError):
            (models / ".install").rmdir()  # only when empty (another install may be running)
    _write_record(models, name, meta, source, digest)
    return final, meta, True


def _write_record(models: Path, name: str, meta: dict[str, Any], source: Any, digest: str) -> None:
    rec_path = models / ".zoo" / f"{name}.json"
    rec_path.parent.mkdir(parents=True, exist_ok=True)
    old = {}
    if rec_path.is_file():
        try:
            old = json.loads(rec_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            old = {}
    rec = {**old, "name": name, "kind": meta.get("kind"), "checksum": meta.get("export_checksum"),
           "fingerprint": meta.get("fingerprint"), "installed_from": str(source), "archive_sha256": digest}
    rec_path.write_text(dumps(rec, indent=2, default=str) + "\n", encoding="utf-8")


# ----------------------------------------------------------------------------------------------------------- push
def hub_card(card: str, meta: dict[str, Any], archive_name: str, repo: str) -> str:
    """The Hub repository's README: front matter for the Hub, how to load the archive, then the export's card."""
    head = ["---", "library_name: qe-nlg", "tags:", "- qe", f"- {meta['kind']}", "- nlg-evaluation", "---", "",
            f"Load it with qe (`pip install qe-nlg`): `qe.load(\"hf://{repo}/{archive_name}\")`, or install it as a "
            f"named model: `qe zoo install hf://{repo}/{archive_name}`. The archive's sha256 is in "
            f"`{archive_name}.sha256`; every file inside is checked against `{ARCHIVE_MANIFEST}` before use.", ""]
    return "\n".join(head) + "\n" + card


def push(source: str | os.PathLike, repo: str, *, models_dir: str | os.PathLike | None = None,
         private: bool = False, revision: str | None = None, token: str | None = None, api: Any = None) -> str:
    """Publish a model to the Hugging Face Hub repository ``repo`` (``user/name``) and return the ``hf://`` URL
    that :func:`qe.load` and ``qe zoo install`` accept.

    Uploads one folder: ``<name>.qe.tar.gz``, its ``.sha256`` and ``README.md`` (the model card with Hub front
    matter), through ``huggingface_hub.HfApi.create_repo`` and ``upload_folder``; the token is huggingface_hub's own
    (``huggingface-cli login`` or ``HF_TOKEN``). Not tested against the Hub: this project's machines have no
    network access, so tests check only what would be uploaded (``api=`` takes a stand-in for ``HfApi``).
    """
    if api is None:
        try:
            from huggingface_hub import HfApi
        except ImportError:
            raise MissingDependencyError("qe zoo push needs huggingface_hub: pip install huggingface_hub") from None
        api = HfApi(token=token)
    from qe.core.export import CARD

    export, default_name = resolve_export(source, models_dir)
    with tempfile.TemporaryDirectory(prefix="qe-push-") as tmp:
        folder = Path(tmp)
        archive = pack(export, folder, name=default_name, models_dir=models_dir)
        meta = read_meta(archive)
        card = (export / CARD).read_text(encoding="utf-8") if (export / CARD).is_file() else ""
        (folder / "README.md").write_text(hub_card(card, meta, archive.name, repo), encoding="utf-8")
        api.create_repo(repo_id=repo, repo_type="model", private=private, exist_ok=True)
        api.upload_folder(folder_path=str(folder), repo_id=repo, repo_type="model", revision=revision,
                          commit_message=f"qe zoo push {meta['name']} (checksum {meta['export_checksum'][:12]})")
    return f"hf://{repo}/{archive.name}"


__all__ = ["ArchiveError", "SettingError", "ARCHIVE_SUFFIX", "ARCHIVE_MANIFEST", "is_url", "is_archive", "pack",
           "fetch", "read_meta", "extract_verified", "fetch_export", "install", "load_check", "push", "cache_dir",
           "resolve_export", "http_timeout", "archive_cap"]
