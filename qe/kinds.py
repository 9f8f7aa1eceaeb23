"""Export kinds: the ``kind`` of an export's manifest -> its loader and the files its export always has, and
:func:`load_export`, which turns an export directory into a scorer.

The layer between the core (:mod:`qe.core.export`: writing, reading and checking manifests) and everything that
loads exports: :func:`qe.load` (:mod:`qe.registry`, which also resolves scorer names, zoo names and archives) and
the zoo's fingerprints, archives and model cards (:mod:`qe.zoo`), which load the export directories they check.
Nothing here imports a model family or the zoo's builder, archives or fingerprints: loaders are ``"module:attr"``
strings imported on first use, so the zoo can load an export without importing :mod:`qe.registry`, and
:mod:`qe.registry` can fetch an archive through the zoo without an import circle (tests/core/test_import_graph.py).
:func:`export_dir_of` reads the zoo's names from the package module :mod:`qe.zoo` alone (recipes and the models
folder; it imports nothing of this layer), so a family whose option names an export (``coverage``'s ``aligner=``)
accepts a zoo name without importing the front end.

:mod:`qe.registry` re-exports every public name here (``qe.registry.EXPORT_KINDS`` is this table).
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Callable

from qe.core.tokenization import TOKENIZER_FILE


def resolve_target(target: str | Callable[..., Any]) -> Callable[..., Any]:
    """``"pkg.module:attr.sub"`` -> the object; a callable is returned as it is."""
    if not isinstance(target, str):
        return target
    mod, _, attr = target.partition(":")
    obj: Any = importlib.import_module(mod)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


#: export kind -> loader(export_dir, manifest, **options)
EXPORT_KINDS: dict[str, str | Callable[..., Any]] = {
    "slor": "qe.lm.scorer:from_export",
    "qe_gru": "qe.ratpred.scorer:from_export",
    "acceptability": "qe.gruen.scorer:acceptability_from_export",
    "mlm": "qe.gruen.scorer:mlm_from_export",
    "sop": "qe.gruen.scorer:sop_from_export",
    "gruen": "qe.gruen.scorer:gruen_from_export",
    "svr": "qe.refmetrics.svr:from_export",
    "ensemble": "qe.ensemble.scorer:from_export",
    "combiner": "qe.ensemble.combiner:from_export",
    # the coverage scorer with this learned aligner (and, by default, the lexicon of the data it was trained on)
    "content_aligner": "qe.content.scorer:from_export",
}


#: export kind -> ``{role: relative path}`` of the files its export always has. The one declaration of those names:
#: each kind's ``format`` module writes by them (``qe.lm.format.MODEL_FILE = EXPORT_FILES["slor"]["model"]``), and
#: loading checks them before the loader runs, so a manifest whose ``kind`` disagrees with the files fails with a
#: message naming the missing file and the kind the files look like.
_HF = {"hf": "hf", "hf_config": "hf/config.json"}
EXPORT_FILES: dict[str, dict[str, str]] = {
    "slor": {"model": "model.safetensors", "unigram": "unigram.safetensors", "tokenizer": TOKENIZER_FILE},
    "qe_gru": {"model": "model.safetensors", "vocab": "vocab.json"},
    "acceptability": dict(_HF),
    "mlm": dict(_HF),
    "sop": dict(_HF),
    "gruen": {"readme": "README.txt"},
    "svr": {"weights": "svr.safetensors"},
    "ensemble": {"spec": "ensemble.json"},
    "combiner": {"spec": "combiner.json", "weights": "combiner.safetensors"},
    # qe.content.aligner writes by these names (HF_SUBDIR, CONFIG_FILE: thresholds, slot inventory)
    "content_aligner": {**_HF, "config": "aligner.json"},
}


def required_files(kind: str) -> tuple[str, ...]:
    """The files (not folders) an export of ``kind`` always has, as :func:`check_export_files` checks them."""
    return tuple(f for role, f in EXPORT_FILES.get(kind, {}).items() if role != "hf")


def check_export_files(path: Path, kind: str) -> None:
    """Raise :class:`qe.errors.ExportError` when ``path`` lacks a file that exports of ``kind`` always have."""
    from qe.errors import ExportError

    own = required_files(kind)
    missing = [f for f in own if not (path / f).is_file()]
    matches = {k: len(required_files(k)) for k in EXPORT_FILES
               if k != kind and required_files(k) and all((path / f).is_file() for f in required_files(k))}
    looks = sorted(k for k, n in matches.items() if n == max(matches.values())) if matches else []
    if not missing:
        # every file of the claimed kind is there, but the files of a more specific kind are too
        looks = [k for k in looks if len(required_files(k)) > len(own) and set(own) < set(required_files(k)) | set(own)]
        if not looks:
            return
        raise ExportError(f"{path}: the manifest says kind {kind!r}, but the files are those of a "
                          f"{' or '.join(map(repr, looks))} export (was qe_export.json edited or copied?)")
    hint = f"; its files look like a {' or '.join(map(repr, looks))} export" if looks else ""
    raise ExportError(f"{path}: the manifest says kind {kind!r}, but {', '.join(missing)} is missing{hint} "
                      f"(was qe_export.json edited or copied from another export?)")


def register_into(table: dict[str, Any], key: str, what: str):
    """Decorator adding ``table[key] = obj`` (an object or a ``"module:attr"`` string); a taken key is refused."""

    def deco(obj):
        if key in table and table[key] is not obj and table[key] != obj:
            raise ValueError(f"{what} {key!r} is already registered to {table[key]!r}")
        table[key] = obj
        return obj

    return deco


def register_export_kind(kind: str):
    """Decorator (or call with a ``"module:attr"`` string): ``loader(export_dir, manifest, **options) -> Scorer``."""
    return register_into(EXPORT_KINDS, kind, "export kind")


def export_kinds() -> list[str]:
    return sorted(EXPORT_KINDS)


def export_dir_of(spec: str | Path) -> Path:
    """``spec`` as an export directory: a path that exists, else the name of a model of the zoo built into
    ``$QE_MODELS`` (as :func:`qe.load` resolves names). A zoo name that is not built raises
    :class:`qe.errors.ModelNotBuiltError` (an ExportError) with its build command (one line; ``qe score`` exits 3);
    anything else comes back as a path, for the loader to say what is wrong with it."""
    from qe.core.export import MANIFEST

    path = Path(str(spec)).expanduser()
    key = str(spec).strip().lower()
    if path.exists() or not key or "/" in key or "\\" in key:
        return path
    from qe import zoo  # the package module only: recipe names and the models folder

    built = zoo.model_path(key)
    if (built / MANIFEST).is_file():
        return built
    if key in zoo.NAMES:
        from qe.errors import ModelNotBuiltError

        raise ModelNotBuiltError(zoo.not_built_message(key))
    return path


def load_export(path: str | Path, **options: Any):
    """A scorer for the export directory ``path``: its manifest read, its kind's files and ``*.safetensors``
    headers checked (:func:`check_export_files`, :func:`qe.core.export.check_weights`: a damaged file raises
    :class:`qe.errors.ExportError` naming it), then the kind's loader called with ``options``."""
    from qe.core.export import check_weights, read_manifest

    path = Path(path)
    manifest = read_manifest(path)
    kind = manifest["kind"]
    if kind not in EXPORT_KINDS:
        raise KeyError(f"{path}: export kind {kind!r} has no registered loader; known kinds: {export_kinds()}")
    check_export_files(path, kind)
    check_weights(path)
    loader = resolve_target(EXPORT_KINDS[kind])
    try:
        return loader(path, manifest, **options)
    except Exception as exc:
        # weights that parse but do not fit the network (a state_dict mismatch), or that safetensors refuses
        # later: the export cannot be loaded (ExportError; qe score exits 3), in one line naming it
        if type(exc).__name__ == "SafetensorError" or (
                isinstance(exc, RuntimeError) and "state_dict" in str(exc)):
            from qe.errors import ExportError

            why = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            raise ExportError(f"{path}: its weights do not load ({why})") from None
        raise


__all__ = ["EXPORT_KINDS", "EXPORT_FILES", "resolve_target", "required_files", "check_export_files",
           "register_into", "register_export_kind", "export_kinds", "export_dir_of", "load_export"]
