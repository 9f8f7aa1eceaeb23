"""Fitting one (seed, fold): the module for a vocabulary and rating range (:func:`build_module`), embeddings from
pretrained word vectors (:func:`init_embeddings`), the paper's two stages - synthetic + all data, then the original
data, each keeping its best dev parameters - (:func:`train_one`) and predictions (:func:`predict`)."""
from __future__ import annotations

import json
import logging
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from qe.core.jsonio import dumps
from qe.core.predictions import round_clip
from qe.ratpred.data import Instance, make_loader
from qe.ratpred.model import Vocab
from qe.ratpred.mr import delexicalise
from qe.ratpred.module import KeepBest, RatPredModule
from qe.ratpred.runfiles import _number
from qe.training import fit, instantiate_model

log = logging.getLogger(__name__)


#: stage name (as in results.json) -> its directory name under the (seed, fold) sub-run
STAGE_DIRS = {"synth+all": "synth_all", "original": "original"}


def build_module(model_cfg: Any, vocab: Vocab, ratings: list[float], proto: dict) -> RatPredModule:
    """The module from ``cfg.model`` (``_target_`` + ``_partial_``) or from plain kwargs, completed with what only
    the task knows: vocabulary size, training ratings' range and mean, the dev-selection rule; embeddings from
    pretrained vectors when ``model.vectors`` is set."""
    supplied = dict(vocab_size=len(vocab), clip_lo=min(ratings), clip_hi=max(ratings),
                    init_bias=float(np.mean(ratings)), select_rounded=bool(proto.get("select_rounded", False)))
    encoder = str(model_cfg.get("encoder", "gru"))
    if encoder == "cross":
        from qe.ratpred.cross import PairTokens

        supplied["sent_dim"] = PairTokens.shared(str(model_cfg.get("sentence_model", "minilm")),
                                                 model_cfg.get("pair_max_len")).dim
    elif encoder != "gru":
        from qe.ratpred.sentvec import SentenceTokens, SentenceVectors

        name = str(model_cfg.get("sentence_model", "minilm"))
        supplied["sent_dim"] = (SentenceTokens.shared(name) if model_cfg.get("finetune_sentence") else
                                SentenceVectors.shared(name, cache_dir=proto.get("sentence_cache"))).dim
    if "_target_" in model_cfg:
        module = instantiate_model(model_cfg, **supplied)
    else:
        module = RatPredModule(**{**dict(model_cfg), **supplied})
    module.sentence_cache = proto.get("sentence_cache") or None
    if module.hparams.get("vectors"):
        init_embeddings(module, vocab, str(module.hparams.vectors), bool(module.hparams.get("freeze_vectors")))
    return module


_VECTOR_CACHE: dict[str, Any] = {}


def _vector_table(name: str):
    """``spacy:<pipeline>`` -> that pipeline's vocab (vectors), loaded once per process (offline wheels first)."""
    kind, _, pipe = name.partition(":")
    if kind != "spacy" or not pipe:
        raise ValueError(f"model.vectors={name!r}: use spacy:<pipeline with vectors>, e.g. spacy:en_core_web_md")
    if name not in _VECTOR_CACHE:
        from qe.core.offline import load_spacy

        vocab = load_spacy(pipe).vocab
        if vocab.vectors.shape[0] == 0:
            raise ValueError(f"model.vectors={name!r}: the pipeline has no word vectors (en_core_web_md has)")
        _VECTOR_CACHE[name] = vocab
    return _VECTOR_CACHE[name]


def init_embeddings(module: RatPredModule, vocab: Vocab, name: str, freeze: bool = False) -> dict[str, int]:
    """Fill both embedding tables of ``module`` from pretrained vectors for every vocabulary token that has one;
    the other rows are redrawn at the vectors' scale (N(0, std of the vector components)); padding stays 0."""
    table = _vector_table(name)
    width = int(table.vectors.shape[1])
    net = module.net
    if not net.use_gru:
        raise ValueError(f"model.vectors={name!r} fills the GRU encoders' embedding tables; model.encoder="
                         f"{net.encoder!r} has none (use encoder=gru or both)")
    if net.emb_mr.embedding_dim != width:
        raise ValueError(f"model.vectors={name!r} has {width}-d vectors: set model.embedding_dim={width} "
                         f"(it is {net.emb_mr.embedding_dim})")
    hits = [(i, t) for i, t in enumerate(vocab.itos) if i > 1 and table.has_vector(t)]
    vec = torch.tensor(np.stack([table.get_vector(t) for _, t in hits]), dtype=torch.float32) if hits else None
    std = float(vec.std()) if vec is not None else 1.0
    gen = torch.Generator().manual_seed(len(vocab))
    with torch.no_grad():
        for emb in (net.emb_mr, net.emb_out):
            emb.weight.copy_(torch.randn(emb.weight.shape, generator=gen) * std)
            emb.weight[0].zero_()
            if vec is not None:
                emb.weight[[i for i, _ in hits]] = vec
            emb.weight.requires_grad_(not freeze)
    log.info("embeddings from %s: %d of %d vocabulary tokens have a vector%s", name, len(hits), len(vocab) - 2,
             " (frozen)" if freeze else "")
    return {"with_vector": len(hits), "vocab": len(vocab) - 2}


def _standalone_cfg(run_dir: Path) -> DictConfig:
    """Trainer settings for :func:`train_one` without a composed config (tests, benchmarks): no logger, no
    checkpoints, one device."""
    return OmegaConf.create({"trainer": {"_target_": "lightning.pytorch.Trainer", "accelerator": "auto", "devices": 1,
                                         "enable_progress_bar": False},
                             "logger": None, "callbacks": None, "paths": {"output_dir": str(run_dir)}})


def is_cross(model_cfg: Any) -> bool:
    """Whether ``cfg.model`` is the cross-encoder (``model.encoder=cross``)."""
    return str(model_cfg.get("encoder", "gru")) == "cross"


def input_delex(model_cfg: Any, proto: dict) -> bool:
    """Whether the network reads delexicalised MRs and outputs: ``model.cross_delex`` for the cross-encoder (default
    false: it reads the entities), else ``protocol.delex``. The synthetic data always follows ``protocol.delex``."""
    if is_cross(model_cfg):
        return bool(model_cfg.get("cross_delex", False))
    return bool(proto.get("delex", True))


def train_one(orig: list[Instance], extra: list[Instance], dev: list[Instance], model_cfg: Any, proto: dict,
              seed: int, cfg: DictConfig | None = None, run_dir: str | Path | None = None,
              resume: bool = True) -> tuple[RatPredModule, Vocab, dict]:
    """Two-stage training on one fold; returns the module with the best dev weights, its vocab and a log.

    With ``run_dir``, stage ``k`` runs in ``run_dir/<stage>`` (loggers, checkpoints); with ``resume`` a finished
    stage (``stage.json`` + ``best.safetensors``) is loaded instead of retrained and an interrupted one resumes
    from its ``last.ckpt``."""
    from safetensors.torch import load_file, save_file

    pl.seed_everything(seed, workers=True)
    delex = input_delex(model_cfg, proto)
    train_all = orig + extra
    if is_cross(model_cfg):  # the cross-encoder reads sub-words only: an empty vocabulary (<pad>, <unk>)
        vocab = Vocab([])
    else:
        vocab = Vocab.build(d.mr_tokens + d.out_tokens
                            for d in (delexicalise(i.mr, i.output, delex=delex, where=i.src) for i in train_all))
    module = build_module(model_cfg, vocab, [i.rating for i in orig], proto)
    bs = int(module.hparams.batch_size)
    if cfg is not None and OmegaConf.select(cfg, "paths.data_dir", default=None):
        module.content_data_dir = str(cfg.paths.data_dir)
    sent = module.sentence_vectors()
    content = module.content_vectors()
    dev_loader = make_loader(dev, vocab, delex, 256, False, sent=sent, content=content)
    patience = proto.get("patience")
    min_passes = int(proto.get("min_passes") or 0)
    info: dict[str, Any] = {"vocab": len(vocab), "train_original": len(orig), "train_total": len(train_all)}
    t0 = time.perf_counter()
    stages = []
    if extra and int(proto["passes_synth"]) > 0:
        stages.append(("synth+all", train_all, int(proto["passes_synth"])))
    stages.append(("original", orig, int(proto["passes_orig"])))
    tmp = None
    if run_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="ratpred-")
        run_dir, resume = Path(tmp.name), False
    run_dir = Path(run_dir)
    cfg = cfg if cfg is not None else _standalone_cfg(run_dir)
    best = -math.inf
    try:
        for name, data, passes in stages:
            # each stage keeps its own best (paper: 20 passes "keeping the best parameters", then the passes over
            # the original data): the final model always comes from the original-data stage, so its output scale
            # is that of real ratings (a stage-1 model selected on correlation alone can be badly miscalibrated)
            sdir = run_dir / STAGE_DIRS[name]
            done, weights = sdir / "stage.json", sdir / "best.safetensors"
            if resume and done.is_file() and weights.is_file():
                stage_info = json.loads(done.read_text())
                stage_info["best_dev_corr"] = _number(stage_info.get("best_dev_corr"))
                module.load_state_dict(load_file(str(weights)))
                log.info("%s: finished earlier, best weights loaded", sdir)
            else:
                keep = KeepBest(patience=patience, min_passes=min_passes)
                tr, _ = fit(cfg, module, run_dir=sdir, extra_callbacks=[keep],
                            train_dataloaders=make_loader(data, vocab, delex, bs, True, seed, sent=sent,
                                                              content=content),
                            val_dataloaders=dev_loader, ckpt_path="last" if resume else None,
                            max_epochs=passes, num_sanity_val_steps=0, enable_model_summary=False,
                            gradient_clip_val=proto.get("gradient_clip_val"))
                stage_info = {"stage": name, "instances": len(data), "epochs_run": tr.current_epoch,
                              "best_dev_corr": keep.best, "best_epoch": keep.best_epoch, "history": keep.history}
                if keep.state is not None:
                    module.load_state_dict(keep.state)
                if tmp is None:
                    sdir.mkdir(parents=True, exist_ok=True)
                    save_file({k: v.detach().cpu().contiguous() for k, v in module.state_dict().items()}, str(weights))
                    done.write_text(dumps(stage_info, indent=1))
            info.setdefault("stages", []).append(stage_info)
            best = stage_info["best_dev_corr"]
    finally:
        if tmp is not None:
            tmp.cleanup()
    info["seconds"] = time.perf_counter() - t0
    info["best_dev_corr"] = best
    return module, vocab, info


@torch.no_grad()
def predict(module: RatPredModule, vocab: Vocab, insts: list[Instance], delex: bool = True,
            batch_size: int = 256, rounded: bool = True) -> np.ndarray:
    module.eval()
    dev = next(module.parameters()).device
    out = []
    loader = make_loader(insts, vocab, delex, batch_size, False, sent=module.sentence_vectors(),
                         content=module.content_vectors())
    for b in loader:
        b = {k: v.to(dev) for k, v in b.items()}
        out.append(module(b).float().cpu())
    p = torch.cat(out).numpy() if out else np.zeros(0)
    order = getattr(loader, "order", None)
    if order is not None:  # length-sorted batches (cross-encoder): back to the instances' order
        back = np.empty_like(p)
        back[np.asarray(order, dtype=np.int64)] = p
        p = back
    if rounded:
        c = module.predict_config()
        p = round_clip(p, c["round_to"], c["clip_lo"], c["clip_hi"])
    return p


