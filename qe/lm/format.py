"""The ``slor`` export: what LM training writes and :mod:`qe.lm.scorer` reads.

Files (besides the manifest ``qe_export.json``):

* ``model.safetensors`` — the :class:`~qe.lm.model.LSTMLM` weights;
* ``unigram.safetensors`` — ``logprob``: add-one smoothed unigram log-probabilities over the LM's training tokens,
  in the LM's own units (:func:`unigram_logprobs`);
* ``tokenizer.json`` (+ the SentencePiece model for ``type: sp``) — :mod:`qe.core.tokenization`.

Manifest: ``config.model`` holds the plain ``LSTMLM`` keyword arguments (with ``output_layer`` and
``adaptive_cutoffs`` for an adaptive-softmax LM, whose frequency order ``output_rank`` is a buffer in the weights;
exports without them have a full softmax), ``config.tokenizer`` the tokenizer
settings with its real ``vocab_size`` (and ``vocab_size_requested`` when a SentencePiece model got fewer pieces than
``tokenizer.vocab_size`` asked for; ``config.train.tokenizer.vocab_size`` is what was asked), ``config.unigram`` how
the unigram table was counted and ``config.train`` the resolved training config.
Format version 1 (exports written before the family was split into rooms read the same). :func:`model_kwargs` also
accepts the model arguments at the manifest's top level (``manifest["model"]``) and ignores keys that are not
``LSTMLM`` arguments (``_target_``, ``lr``, ...), so an export whose ``config.model`` is a Hydra model config loads.

This module never imports Lightning, Hydra or omegaconf.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from qe.core.export import export_writer, read_manifest, verify_checksum
from qe.registry import EXPORT_FILES
from qe.lm.model import LSTMLM
from qe.core.tokenization import Tokenizer, load_tokenizer

EXPORT_KIND = "slor"
MODEL_FILE = EXPORT_FILES[EXPORT_KIND]["model"]
UNIGRAM_FILE = EXPORT_FILES[EXPORT_KIND]["unigram"]

#: the keyword arguments of :class:`LSTMLM` (what ``config.model`` must hold)
MODEL_ARGS = tuple(p for p in inspect.signature(LSTMLM.__init__).parameters if p != "self")


def unigram_logprobs(ids: list[np.ndarray], vocab_size: int, specials: tuple[int, ...] = (0, 2, 3)) -> tuple[np.ndarray, dict]:
    """Add-one smoothed unigram log-probabilities over the training tokens (same units as the LM).

    p(t) = (c(t) + 1) / (N + |V'|), where N counts training tokens (``<unk>`` included, boundary symbols not) and
    V' is the vocabulary without pad/bos/eos. Boundary and pad symbols get -inf (they never occur inside S).
    """
    counts = np.bincount(np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64), minlength=vocab_size)
    counts = counts.astype(np.float64)
    mask = np.ones(vocab_size, dtype=bool)
    mask[list(specials)] = False
    counts[~mask] = 0.0
    n, v = counts.sum(), mask.sum()
    logp = np.full(vocab_size, -np.inf)
    logp[mask] = np.log(counts[mask] + 1.0) - math.log(n + v)
    return logp, {"tokens": int(n), "types_seen": int((counts > 0).sum()), "smoothing": "add-one"}


def save(dest: str | Path, model: torch.nn.Module, tokenizer: Tokenizer, unigram_logp: np.ndarray,
         model_config: dict, extra_config: dict | None = None, data: dict | None = None,
         metrics: dict | None = None) -> Path:
    """Write an export of kind ``slor``: weights, tokenizer and unigram log-probabilities (atomically).

    ``model_config``: the plain ``LSTMLM`` keyword arguments (stored as ``config.model``); ``extra_config`` adds
    sections to the manifest's ``config`` (the LM task adds ``unigram`` and ``train``).
    """
    from safetensors.torch import save_file, save_model

    model_config = {k: v for k, v in dict(model_config).items() if k in MODEL_ARGS}
    if len(unigram_logp) != tokenizer.vocab_size or model_config["vocab_size"] != tokenizer.vocab_size:
        raise ValueError("model, tokenizer and unigram table must share one vocabulary")
    model = model.float().cpu().eval()
    # config.tokenizer: the settings plus the real vocabulary size (a SentencePiece model trained on a small corpus
    # can have fewer pieces than tokenizer.vocab_size asked for; then vocab_size_requested says how many were asked)
    config = {"model": model_config, "tokenizer": {**tokenizer.settings(), "vocab_size": tokenizer.vocab_size},
              **(extra_config or {})}
    dest = Path(dest)
    with export_writer(dest, kind=EXPORT_KIND, config=config, data=data, metrics=metrics) as tmp:
        save_model(model, str(tmp / MODEL_FILE))
        save_file({"logprob": torch.as_tensor(np.asarray(unigram_logp), dtype=torch.float32)}, str(tmp / UNIGRAM_FILE))
        tokenizer.save(tmp)
    return dest.resolve()


def model_kwargs(manifest: dict[str, Any]) -> dict[str, Any]:
    """The ``LSTMLM`` keyword arguments of an export: ``manifest["model"]`` when present, else ``config.model``;
    keys that are not ``LSTMLM`` arguments are dropped."""
    node = manifest.get("model")
    if not isinstance(node, dict):
        node = (manifest.get("config") or {}).get("model") or {}
    kw = {k: v for k, v in node.items() if k in MODEL_ARGS}
    if "vocab_size" not in kw:
        raise ValueError("slor export: the manifest has no model vocab_size (config.model)")
    return kw


@dataclass
class LMExport:
    """An ``slor`` export in memory: the manifest, the tokenizer, the LM (eval mode) and the unigram table."""

    manifest: dict[str, Any]
    tokenizer: Tokenizer
    model: LSTMLM
    unigram: np.ndarray  #: float64 log-probabilities, one per vocabulary id
    model_kwargs: dict[str, Any]


def load(export_dir: str | Path, manifest: dict[str, Any] | None = None, *, verify: bool = True,
         device: Any = "cpu") -> LMExport:
    """Read an ``slor`` export (checking kind, format version and, with ``verify``, the checksum)."""
    from safetensors.torch import load_file, load_model

    export_dir = Path(export_dir)
    manifest = manifest or read_manifest(export_dir, expected_kind=EXPORT_KIND)
    if verify:
        verify_checksum(export_dir, manifest)
    tokenizer = load_tokenizer(export_dir)
    kw = model_kwargs(manifest)
    if kw["vocab_size"] != tokenizer.vocab_size:
        raise ValueError(f"{export_dir}: model vocabulary {kw['vocab_size']} != tokenizer {tokenizer.vocab_size}")
    model = LSTMLM(**kw)
    load_model(model, str(export_dir / MODEL_FILE), device="cpu")
    model.to(device).eval()
    unigram = load_file(str(export_dir / UNIGRAM_FILE))["logprob"].double().numpy()
    return LMExport(manifest, tokenizer, model, unigram, kw)


__all__ = ["EXPORT_KIND", "MODEL_FILE", "UNIGRAM_FILE", "MODEL_ARGS", "unigram_logprobs", "save", "model_kwargs",
           "load", "LMExport"]
