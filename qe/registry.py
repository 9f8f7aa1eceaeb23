"""Name -> scorer factories, and export kind -> loader.

Scorers register themselves with :func:`register_scorer`; trainable model families register a loader for
their export ``kind`` with :func:`register_export_kind`. :func:`load` accepts either an export directory or
a registered name. Built-in modules are imported lazily on the first lookup so that ``import qe`` stays
cheap and an optional dependency missing for one family does not break the others.
"""
from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Any, Callable

log = logging.getLogger(__name__)

# Modules that register scorers or export kinds. Add a line when a new family lands.
BUILTIN_MODULES: list[str] = [
    "qe.lm.scorer",
    "qe.discourse.scorers",
    "qe.evaluation.baselines",
    "qe.ratpred.scorer",
    "qe.refmetrics.register",
    "qe.gruen.scorer",
]

_SCORERS: dict[str, Callable[..., Any]] = {}
_EXPORT_KINDS: dict[str, Callable[..., Any]] = {}
_IMPORT_ERRORS: dict[str, str] = {}
_loaded = False


def register_scorer(name: str, *aliases: str):
    """Decorator: register a scorer factory (a class or function taking keyword options)."""

    def deco(factory):
        for n in (name, *aliases):
            key = n.lower()
            if key in _SCORERS and _SCORERS[key] is not factory:
                raise ValueError(f"scorer name {n!r} is already registered to {_SCORERS[key]!r}")
            _SCORERS[key] = factory
        return factory

    return deco


def register_export_kind(kind: str):
    """Decorator: register ``loader(export_dir: Path, manifest: dict, **options) -> Scorer`` for a kind."""

    def deco(loader):
        if kind in _EXPORT_KINDS and _EXPORT_KINDS[kind] is not loader:
            raise ValueError(f"export kind {kind!r} is already registered")
        _EXPORT_KINDS[kind] = loader
        return loader

    return deco


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in BUILTIN_MODULES:
        try:
            importlib.import_module(mod)
        except ImportError as exc:  # optional dependency missing: report on lookup, do not fail import
            _IMPORT_ERRORS[mod] = f"{type(exc).__name__}: {exc}"
            log.debug("could not import %s: %s", mod, exc)


def available_scorers() -> list[str]:
    """Registered scorer names (aliases included), sorted."""
    _load_builtins()
    return sorted(_SCORERS)


def export_kinds() -> list[str]:
    _load_builtins()
    return sorted(_EXPORT_KINDS)


def load(name_or_path: str | Path, **options):
    """Return a scorer for an export directory or a registered scorer name.

    ``options`` are passed to the scorer (e.g. ``device="cpu"``, ``score="nce"`` for an LM export).
    """
    from qe.export import MANIFEST, read_manifest

    _load_builtins()
    path = Path(str(name_or_path)).expanduser()
    if path.is_dir():
        manifest = read_manifest(path)
        kind = manifest["kind"]
        if kind not in _EXPORT_KINDS:
            extra = f" (import errors: {_IMPORT_ERRORS})" if _IMPORT_ERRORS else ""
            raise KeyError(
                f"{path}: export kind {kind!r} has no registered loader; known kinds: {sorted(_EXPORT_KINDS)}{extra}"
            )
        return _EXPORT_KINDS[kind](path, manifest, **options)
    key = str(name_or_path).lower()
    if key in _SCORERS:
        return _SCORERS[key](**options)
    if path.exists() and not path.is_dir():
        raise FileNotFoundError(f"{path} is a file; an export is a directory containing {MANIFEST}")
    hint = f"; modules that failed to import: {_IMPORT_ERRORS}" if _IMPORT_ERRORS else ""
    raise KeyError(
        f"{name_or_path!r} is neither an export directory nor a registered scorer. "
        f"Registered scorers: {', '.join(sorted(_SCORERS)) or '(none)'}{hint}"
    )
