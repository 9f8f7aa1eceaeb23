"""Mined lexicons kept between runs: ``lexicon=e2e@data`` (``sf@data``, ``webnlg@data``) mines a dataset's lexicon
from the data directory once, then reads it back.

The ``e2e``, ``sf`` and ``webnlg`` lexicons ship with ``qe`` (``qe/resources/lexicons``, :mod:`qe.content.shipped`):
``lexicon=auto`` and ``lexicon=e2e|sf|webnlg`` read those and need no data folder. This cache serves the other way,
mining from the data folder (:func:`qe.content.scorer.mined_lexicon`): to check that the shipped files are what the
miner makes of the published data, or to use a miner changed since they were written.

Mining a dataset's lexicon takes 10-50 s; reading its JSON takes a few milliseconds. Each mined lexicon is written to
``<models>/.cache/lexicons/<name>-<data>-<miner>.json`` (``<models>``: ``$QE_MODELS``, else ``~/.cache/qe/models``,
the zoo's folder), keyed by

* ``<data>``: the sha256 (12 hex digits) of the files it is mined from (:data:`SOURCES`), so a changed or
  re-downloaded dataset is mined again, and
* ``<miner>``: the sha256 of the source code that mines it (:data:`MINER_MODULES`), so a new ``qe`` whose miner or
  readers changed mines again instead of reading a lexicon an older miner made.

A cache entry that cannot be read is mined again (and rewritten); a cache folder that cannot be written is reported
once and the lexicon is mined in every process. ``QE_LEXICON_CACHE=0`` turns the cache off.

Licences: a mined lexicon holds its dataset's values (the E2E lexicon every restaurant name of the cleaned
development set) and the words its references use, so it is a derived file that carries its dataset's licence - CC
BY-SA 4.0 for E2E, Apache 2.0 for SF, CC BY-NC-SA 4.0 (non-commercial, share-alike) for WebNLG - not qe's MIT
licence. The shipped files say so in ``qe/resources/lexicons/README.md`` (source files, their sha256, the licence, the
command that regenerates each); the cached ones carry the same licences.
"""
from __future__ import annotations

import hashlib
import inspect
import logging
import os
from functools import lru_cache
from pathlib import Path
from typing import Callable

from qe.content.lexicon import Lexicon
from qe.core.paths import write_atomically

log = logging.getLogger("qe.content")

#: lexicon name -> the files (relative to the data directory) it is mined from
SOURCES: dict[str, tuple[str, ...]] = {
    "e2e": ("e2e/devel-fixed.no-ol.csv",),
    "sf": ("sfx/hotel/train.json", "sfx/restaurant/train.json"),
    "webnlg": ("webnlg2020/train.tar.xz",),
}
#: lexicon name -> the dataset `qe data download NAME` fetches it with
DATASETS: dict[str, str] = {"e2e": "e2e", "sf": "sfx", "webnlg": "webnlg2020"}
#: the modules whose code decides what a mined lexicon holds (the miner, the MR and text readers, the dataset readers)
MINER_MODULES = ("qe.content.lexicon", "qe.content.mining", "qe.content.align", "qe.core.surface", "qe.core.mr", "qe.data.e2e", "qe.data.references",
                 "qe.data.webnlg")
_warned: set[str] = set()


def sources(name: str, data_dir: str | os.PathLike | None = None) -> list[Path]:
    """The files the ``name`` lexicon is mined from, in the data directory (they may not exist)."""
    from qe.core.paths import resolve_data_dir

    root = resolve_data_dir(data_dir)
    return [root / rel for rel in SOURCES[name]]


def missing(name: str, data_dir: str | os.PathLike | None = None) -> list[Path]:
    """The files of :func:`sources` that are not there."""
    return [p for p in sources(name, data_dir) if not p.is_file()]


def _sha(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode())
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:12]


@lru_cache(maxsize=1)
def miner_version() -> str:
    """sha256 (12 hex digits) of the source code of :data:`MINER_MODULES`."""
    import importlib

    h = hashlib.sha256()
    for name in MINER_MODULES:
        h.update(inspect.getsource(importlib.import_module(name)).encode("utf-8"))
    return h.hexdigest()[:12]


def cache_dir() -> Path:
    from qe import zoo

    return zoo.models_dir() / ".cache" / "lexicons"


def cache_path(name: str, data_dir: str | os.PathLike | None = None) -> Path:
    """Where the ``name`` lexicon mined from the data directory's files is kept."""
    return cache_dir() / f"{name}-{_sha(sources(name, data_dir))}-{miner_version()}.json"


def enabled() -> bool:
    return os.environ.get("QE_LEXICON_CACHE", "1").strip().lower() not in ("0", "no", "false", "off")


def cached(name: str, data_dir: str | os.PathLike | None, mine: Callable[[], Lexicon]) -> Lexicon:
    """The ``name`` lexicon: read from the cache when an entry for these data files and this miner exists, else
    ``mine()`` d and written there (atomically: a reader never sees half a file)."""
    if not enabled() or missing(name, data_dir):
        return mine()  # missing data: mine() raises the error that names the file
    path = cache_path(name, data_dir)
    if path.is_file():
        try:
            lex = Lexicon.load(path)
            log.debug("lexicon %s read from %s", name, path)
            return lex
        except ValueError as exc:
            log.warning("%s: unreadable lexicon cache (%s); mining it again", path, exc)
    lex = mine()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, lex.save)
        log.info("lexicon %s mined and kept in %s", name, path)
    except OSError as exc:
        if str(path.parent) not in _warned:
            _warned.add(str(path.parent))
            log.warning("cannot keep mined lexicons in %s (%s): each run mines them again (set QE_MODELS to a "
                        "writable folder)", path.parent, exc.strerror or exc)
    return lex


__all__ = ["SOURCES", "DATASETS", "MINER_MODULES", "sources", "missing", "miner_version", "cache_dir", "cache_path",
           "cached", "enabled"]
