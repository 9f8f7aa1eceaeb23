"""The ``qe_gru`` export (RatPred): file names, writing and reading. No Lightning, Hydra or omegaconf.

    <export>/qe_export.json     kind "qe_gru"; config: {"model": RatPredNet kwargs, "predict": {round_to,
                                clip_lo, clip_hi}, "delex": bool, "vocab_sha256": ..., ...}
    <export>/model.safetensors  RatPredNet weights
    <export>/vocab.json         the vocabulary (``Vocab.itos``: <pad>, <unk>, then the tokens)
    <export>/sentence_model/    only for a fine-tuned sentence encoder (``model.finetune_sentence``) or the
                                cross-encoder (``model.encoder=cross``): its Hugging Face ``config.json`` and
                                tokenizer files; its weights are ``sent_model.*`` in model.safetensors, so the
                                export rebuilds the encoder offline
    <export>/content_lexicon.json  only for a model with content features (``model.content_features``) whose matcher
                                used a lexicon: that lexicon (:mod:`qe.ratpred.content_features`; the manifest's
                                ``config.content_features`` names the features and the lexicon's checksum)
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from torch import nn

from qe.core.jsonio import dumps
from qe.core.export import export_writer, read_manifest, verify_checksum
from qe.registry import EXPORT_FILES
from qe.ratpred.model import RatPredNet, Vocab

EXPORT_KIND = "qe_gru"
MODEL_FILE = EXPORT_FILES[EXPORT_KIND]["model"]
VOCAB_FILE = EXPORT_FILES[EXPORT_KIND]["vocab"]
SENTENCE_DIR = "sentence_model"


def save_export(dest: str | Path, net: nn.Module, vocab: Vocab, model: dict[str, Any], predict: dict[str, Any],
                config: dict[str, Any] | None = None, data: dict | None = None, metrics: dict | None = None,
                sentence_tokens: Any = None, content: Any = None) -> Path:
    """Write a ``qe_gru`` export: ``net``'s weights, the vocabulary, ``model`` (the :class:`RatPredNet` kwargs),
    ``predict`` (round_to, clip_lo, clip_hi) and any further ``config`` (delex, setup, the training config).
    A network with a fine-tuned sentence encoder also needs ``sentence_tokens`` (its
    :class:`qe.ratpred.sentvec.SentenceTokens`): the encoder's config and tokenizer go to ``sentence_model/``.
    A network with content features needs ``content`` (its :class:`qe.ratpred.content_features.ContentFeatures`):
    ``config.content_features`` records them and their lexicon is written beside the weights."""
    from safetensors.torch import save_model

    if len(vocab) != model["vocab_size"]:
        raise ValueError(f"vocabulary has {len(vocab)} entries, model expects {model['vocab_size']}")
    sent_model = getattr(net, "sent_model", None)
    if sent_model is not None and sentence_tokens is None:
        raise ValueError("save_export: a network with a fine-tuned sentence encoder needs sentence_tokens= (its "
                         "tokenizer is written into the export)")
    if getattr(net, "content_dim", 0) and content is None:
        raise ValueError("save_export: a network with content features needs content= (its ContentFeatures: the "
                         "manifest and the lexicon the scorer needs)")
    net = net.float().cpu().eval()
    if content is not None:
        config = {**(config or {}), "content_features": content.manifest()}
    full = {"model": dict(model), "predict": dict(predict), "vocab_sha256": vocab.fingerprint(), **(config or {})}
    dest = Path(dest)
    rng = clip_range(predict)
    with export_writer(dest, kind=EXPORT_KIND, config=full, data=data, metrics=metrics,
                       extra={"score_range": rng} if rng else None) as tmp:
        save_model(net, str(tmp / MODEL_FILE))
        (tmp / VOCAB_FILE).write_text(dumps(vocab.itos, ensure_ascii=False))
        if sent_model is not None:
            sent_model.config.save_pretrained(str(tmp / SENTENCE_DIR))
            sentence_tokens.save(tmp / SENTENCE_DIR)
        if content is not None:
            content.save(tmp)
    return dest.resolve()


def clip_range(predict: dict[str, Any] | None) -> list[float] | None:
    """The manifest's ``score_range`` of a RatPred export: its prediction rule's clip range ``[clip_lo, clip_hi]``,
    the rating scale it predicts (rounded scores lie in it; raw ones, ``rounded=False``, may stray a little outside),
    or None when the rule does not clip on both sides."""
    lo, hi = (predict or {}).get("clip_lo"), (predict or {}).get("clip_hi")
    if lo is None or hi is None:
        return None
    lo, hi = float(lo), float(hi)
    return [lo, hi] if math.isfinite(lo) and math.isfinite(hi) and lo < hi else None


def export_content(export_dir: str | Path, manifest: dict):
    """The :class:`qe.ratpred.content_features.ContentFeatures` of an export with content features (None without)."""
    entry = manifest["config"].get("content_features")
    if not entry:
        return None
    from qe.ratpred.content_features import ContentFeatures

    return ContentFeatures.from_export(export_dir, entry)


def export_tokens(export_dir: str | Path, net: RatPredNet):
    """The tokenizer object of an export's own encoder (``sentence_model/``), for writing the export again; None for
    a network without one."""
    if getattr(net, "sent_model", None) is None:
        return None
    if net.cross:
        from qe.ratpred.cross import PairTokens

        return PairTokens(Path(export_dir) / SENTENCE_DIR, net.pair_max_len)
    from qe.ratpred.sentvec import SentenceTokens

    return SentenceTokens(Path(export_dir) / SENTENCE_DIR)


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
    if net.finetune_sentence:
        import torch
        from transformers import AutoConfig, AutoModel

        conf = AutoConfig.from_pretrained(str(export_dir / SENTENCE_DIR))
        with torch.random.fork_rng(devices=[]):  # its random init (overwritten below) stays out of the caller's RNG
            net.set_sentence_model(AutoModel.from_config(conf))
    load_model(net, str(export_dir / MODEL_FILE), device="cpu")
    return manifest, net.eval(), vocab
