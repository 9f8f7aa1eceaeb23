"""GRUEN exports: the kinds, their files, and how they are written and read (no Lightning, Hydra or omegaconf).

=================  ==========================================================  ==================================
kind               written by                                                  files (besides ``qe_export.json``)
=================  ==========================================================  ==================================
``acceptability``  ``task=cola``: encoder + 2-way head (acceptable = 1)        ``hf/`` (``save_pretrained``)
``mlm``            ``task=mlm``: encoder + masked-LM head                      ``hf/``
``sop``            ``task=sop``: encoder + order head (0 = original order)     ``hf/`` (+ ``pair_head.*`` for the
                                                                               segment-mean head)
``gruen``          ``task=gruen_tune``: the combination's parameters           ``README.txt``; the component
                                                                               models are referenced, not copied
=================  ==========================================================  ==================================

Every HF model is given by a Hub name (``bert-base-cased``), a local directory, an offline alias (``minilm``,
resolved by :func:`qe.core.offline.encoder_path`) or an export directory of one of the first three kinds
(:func:`resolve_model`). Loading never downloads when ``HF_HUB_OFFLINE=1``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from qe.core.export import MANIFEST, export_writer, read_manifest, verify_checksum
from qe.core.offline import encoder_path
from qe.registry import EXPORT_FILES

ACCEPTABILITY, MLM, SOP, GRUEN = "acceptability", "mlm", "sop", "gruen"
#: the kinds of this family (keys of :data:`qe.registry.EXPORT_KINDS`)
KINDS = (ACCEPTABILITY, MLM, SOP, GRUEN)
#: sub-folder of an HF export holding ``save_pretrained`` output (safetensors weights + tokenizer)
HF_SUBDIR = EXPORT_FILES[MLM]["hf"]
README = EXPORT_FILES[GRUEN]["readme"]
#: SOP labels (ALBERT's convention, also used by ``task=sop``)
LABEL_ORIGINAL, LABEL_SWAPPED = 0, 1


def resolve_model(name_or_path: str | Path, expected_kind: str | None = None, verify: bool = True) -> tuple[str, dict | None]:
    """(what to pass to ``from_pretrained``, the qe manifest or None) for a name, folder or qe export."""
    p = Path(str(name_or_path)).expanduser()
    if p.is_dir() and (p / MANIFEST).is_file():
        manifest = read_manifest(p, expected_kind=expected_kind)
        if verify:
            verify_checksum(p, manifest)
        return str(p / HF_SUBDIR), manifest
    return encoder_path(str(name_or_path)), None


def model_id(name_or_path: str | Path, manifest: dict | None) -> str:
    """Short identifier for signatures: the export checksum or the model name."""
    if manifest is not None:
        return f"{Path(str(name_or_path)).name}@{manifest.get('checksum', '')[:12]}"
    return str(name_or_path)


#: parameters whose absence from a checkpoint is harmless (buffers that are rebuilt, not learned)
_HARMLESS_MISSING = ("position_ids", "token_type_ids")


def load_pretrained(auto_cls: Any, path: str, *, name: str, part: str, allow_untrained_head: bool = False):
    """``auto_cls.from_pretrained(path)``, refusing a model whose weights are partly freshly initialised.

    A plain encoder (e.g. ``minilm``) loaded as a sequence classifier or a masked LM gets a *random* head: its
    scores would look like numbers and mean nothing. That is an error unless ``allow_untrained_head=True``
    (tests, timing runs).
    """
    model, info = auto_cls.from_pretrained(path, output_loading_info=True)
    missing = sorted(k for k in info.get("missing_keys", ()) if not k.endswith(_HARMLESS_MISSING))
    if missing and not allow_untrained_head:
        shown = ", ".join(missing[:4]) + (f" (+{len(missing) - 4} more)" if len(missing) > 4 else "")
        raise ValueError(
            f"{part} model {name!r} has no trained weights for {shown}: {auto_cls.__name__} would score with a randomly "
            f"initialised head. Give a trained model (a `task={_TRAINING_TASK.get(part, part)}` export or an HF model "
            f"fine-tuned for it), or pass allow_untrained_head=True to score with the random head anyway.")
    return model


_TRAINING_TASK = {"acceptability": "cola", "mlm": "mlm", "sop": "sop"}


def save_hf_export(dest: str | Path, model, tokenizer, kind: str, config: dict, data: dict, metrics: dict,
                   extra: dict | None = None) -> Path:
    """Write an export: ``<dest>/hf`` holds ``save_pretrained`` output (safetensors weights + tokenizer).

    ``config`` holds the plain options the scorer needs (encoder, labels, window) and, under ``train``, the
    resolved training config."""
    if kind not in (ACCEPTABILITY, MLM, SOP):
        raise ValueError(f"save_hf_export: kind {kind!r} is not an HF kind of this family")
    model = model.float().cpu().eval()
    with export_writer(dest, kind=kind, config=config, data=data, metrics=metrics, extra=extra) as tmp:
        model.save_pretrained(tmp / HF_SUBDIR, safe_serialization=True)
        tokenizer.save_pretrained(tmp / HF_SUBDIR)
    return Path(dest).resolve()


def save_gruen_export(dest: str | Path, *, models: dict[str, str | None], params: dict[str, Any], preset: str,
                      splitter: str, data: dict, metrics: dict) -> Path:
    """A ``gruen`` export: component model references (as given: names, or export paths) and parameters."""
    with export_writer(dest, kind=GRUEN, config={"models": models, "params": params, "preset": preset,
                                                 "splitter": splitter}, data=data, metrics=metrics) as tmp:
        (tmp / README).write_text("GRUEN parameters; component models are referenced, not copied.\n")
    return Path(dest).resolve()


def gruen_options(export_dir: str | Path, manifest: dict) -> dict[str, Any]:
    """The :class:`~qe.gruen.scorer.GruenScorer` keyword arguments a ``gruen`` export stands for."""
    cfg = dict(manifest.get("config", {}))
    kw = {**cfg.get("models", {}), **cfg.get("params", {}), "preset": cfg.get("preset", "paper"),
          "splitter": cfg.get("splitter", "pysbd")}
    if kw.get("sop") is None:
        kw["sop"] = "none"  # the export says: no coherence model (do not fall back to a default export)
    kw = {k: v for k, v in kw.items() if v is not None}
    for part in (ACCEPTABILITY, MLM, SOP):
        kw[part] = component_path(export_dir, kw.get(part))
    return kw


def component_path(export_dir: str | Path, spec: str | None) -> str | None:
    """Resolve a component export named by a relative path: as written (relative to the working directory, as
    task=gruen_tune stores it), else a sibling of the gruen export with the same folder name, so an exports folder
    can be moved or used from another directory. Hub names and absolute paths come back unchanged."""
    if spec is None or spec == "none" or Path(spec).is_absolute():
        return spec
    for cand in (Path(spec), Path(export_dir).parent / Path(spec).name):
        if (cand / MANIFEST).is_file():
            return str(cand)
    return spec


def default_export(name: str) -> str | None:
    """``$QE_EXPORT_DIR/<name>`` (default ``exports/<name>``) when that export exists."""
    root = Path(os.environ.get("QE_EXPORT_DIR", "exports"))
    return str(root / name) if (root / name / MANIFEST).is_file() else None


__all__ = ["ACCEPTABILITY", "MLM", "SOP", "GRUEN", "KINDS", "HF_SUBDIR", "LABEL_ORIGINAL", "LABEL_SWAPPED",
           "resolve_model", "model_id", "load_pretrained", "save_hf_export", "save_gruen_export", "gruen_options",
           "component_path", "default_export"]
