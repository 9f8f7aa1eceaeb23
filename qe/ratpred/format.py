"""The ``qe_gru`` export (RatPred): file names, writing and reading. No Lightning, Hydra or omegaconf.

    <export>/qe_export.json     kind "qe_gru"; config: {"model": RatPredNet kwargs, "predict": {round_to,
                                clip_lo, clip_hi}, "delex": bool, "vocab_sha256": ..., ...}
    <export>/model.safetensors  RatPredNet weights
    <export>/vocab.json         the vocabulary (``Vocab.itos``: <pad>, <unk>, then the tokens)
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from torch import nn

from qe.export import export_writer, read_manifest, verify_checksum
from qe.ratpred.model import RatPredNet, Vocab

EXPORT_KIND = "qe_gru"
MODEL_FILE = "model.safetensors"
VOCAB_FILE = "vocab.json"


def save_export(dest: str | Path, net: nn.Module, vocab: Vocab, model: dict[str, Any], predict: dict[str, Any],
                config: dict[str, Any] | None = None, data: dict | None = None, metrics: dict | None = None) -> Path:
    """Write a ``qe_gru`` export: ``net``'s weights, the vocabulary, ``model`` (the :class:`RatPredNet` kwargs),
    ``predict`` (round_to, clip_lo, clip_hi) and any further ``config`` (delex, setup, the training config)."""
    from safetensors.torch import save_model

    if len(vocab) != model["vocab_size"]:
        raise ValueError(f"vocabulary has {len(vocab)} entries, model expects {model['vocab_size']}")
    net = net.float().cpu().eval()
    full = {"model": dict(model), "predict": dict(predict), "vocab_sha256": vocab.fingerprint(), **(config or {})}
    dest = Path(dest)
    with export_writer(dest, kind=EXPORT_KIND, config=full, data=data, metrics=metrics) as tmp:
        save_model(net, str(tmp / MODEL_FILE))
        (tmp / VOCAB_FILE).write_text(json.dumps(vocab.itos, ensure_ascii=False))
    return dest.resolve()


def load_export(export_dir: str | Path, manifest: dict | None = None,
                verify: bool = True) -> tuple[dict[str, Any], RatPredNet, Vocab]:
    """(manifest, network on CPU in eval mode, vocabulary) of a ``qe_gru`` export; refuses another kind."""
    from safetensors.torch import load_model

    export_dir = Path(export_dir)
    manifest = manifest or read_manifest(export_dir, expected_kind=EXPORT_KIND)
    if verify:
        verify_checksum(export_dir, manifest)
    cfg = manifest["config"]
    vocab = Vocab(json.loads((export_dir / VOCAB_FILE).read_text(encoding="utf-8"))[2:])
    if len(vocab) != cfg["model"]["vocab_size"]:
        raise ValueError(f"{export_dir}: vocabulary has {len(vocab)} entries, model expects "
                         f"{cfg['model']['vocab_size']}")
    net = RatPredNet(**cfg["model"])
    load_model(net, str(export_dir / MODEL_FILE), device="cpu")
    return manifest, net.eval(), vocab
