"""Named models (the model zoo): which names ``qe.load`` resolves to a locally built export, and where they live.

This module is deliberately tiny (no torch, no Hydra): :func:`qe.load` and ``qe list`` read it. The build recipes
(Hydra overrides of ``qe train``, CPU and GPU schedules) and the builder are in :mod:`qe.zoo.build`:

    qe zoo build slor-word-brown-wt2      # -> $QE_MODELS/slor-word-brown-wt2
    qe zoo list

Models are built into ``$QE_MODELS`` (default ``~/.cache/qe/models``), one export directory per name. They travel as
verified archives (:mod:`qe.zoo.archive`: ``qe zoo pack`` / ``install`` / ``push``, ``qe.load(URL)``); each export
carries a model card (:mod:`qe.zoo.card`) and a functional fingerprint (:mod:`qe.zoo.fingerprint`: ``qe zoo verify``
/ ``compare`` say bit-identical, equivalent or different).
"""
from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "QE_MODELS"
DEFAULT_DIR = "~/.cache/qe/models"

#: zoo name -> one line saying what it is (recipes: qe/zoo/build.py; names starting with "_" are test-only)
NAMES: dict[str, str] = {
    "slor-word-brown-wt2": "word LSTM LM (2x256) on Brown + WikiText-2 valid, for SLOR / NCE (kind slor)",
    "slor-sp-brown-wt2": "SentencePiece (16k) LSTM LM (2x256) on Brown + WikiText-2 valid, for WPSLOR (kind slor)",
    "ratpred-emnlp17-s6": "RatPred GRU regressor, EMNLP17 setup S6, reduced protocol, seed 1 fold 0 (kind qe_gru)",
    "ratpred-emnlp17-s6-seed2": "ratpred-emnlp17-s6 with seed 2 (kind qe_gru)",
    "ratpred-emnlp17-s6-minilm": "RatPred on frozen MiniLM sentence vectors of MR and output, EMNLP17 S6, seed 1 fold 0 (kind qe_gru)",
    "ratpred-emnlp17-s6-minilm-seed2": "ratpred-emnlp17-s6-minilm with seed 2 (kind qe_gru)",
    "ratpred-emnlp17-s6-plus": "paper-plus RatPred: mean of the GRU and MiniLM models, seeds 1 and 2, rounded (kind ensemble)",
    "slor-word-domain": "word LSTM LM (2x256) on SF train + E2E dev references, for SLOR on restaurant/hotel NLG (kind slor)",
    "slor-sp-domain": "SentencePiece (2k) LSTM LM (2x256) on SF train + E2E dev references, for WPSLOR (kind slor)",
    "slor-sp-webnlg": "SentencePiece (4k) LSTM LM (2x256) on the WebNLG 2020 train references, for WPSLOR on "
                      "RDF-to-text outputs (kind slor)",
    "slor-word-mixed": "word LSTM LM (2x256, adaptive softmax) on Brown + WikiText-2 + SF train / E2E dev references (kind slor)",
    "slor-sp-mixed": "SentencePiece (16k) LSTM LM (2x256, adaptive softmax) on the slor-word-mixed corpus, for WPSLOR (kind slor)",
    "ratpred-e2e": "RatPred for E2E: E2E dev refs + synthetic errors + EMNLP17 ratings, no E2E ratings (kind qe_gru)",
    "ratpred-e2e-vectors": "ratpred-e2e with spaCy 300-d word vectors for its embeddings (kind qe_gru)",
    "ratpred-webnlg": "RatPred for WebNLG triples: WebNLG train refs + synthetic errors + EMNLP17 ratings, no WebNLG "
                      "ratings (kind qe_gru)",
    "ratpred-webnlg-cross": "RatPred cross-encoder for WebNLG: MiniLM fine-tuned over (MR, output) pairs on ratpred-webnlg's "
                            "data, no WebNLG ratings (kind qe_gru)",
    "cola-minilm": "MiniLM CoLA acceptability classifier, GRUEN grammaticality part (kind acceptability)",
    "mlm-minilm": "MiniLM masked-LM head, GRUEN pseudo-log-likelihood part (kind mlm)",
    "sop-minilm": "MiniLM sentence-order head, GRUEN structure/coherence part (kind sop)",
    "gruen-minilm": "GRUEN over cola-/mlm-/sop-minilm, paper-mode parameters, EMNLP17 dev/test report (kind gruen)",
}


def models_dir(override: str | os.PathLike | None = None) -> Path:
    """Where zoo models are built: ``override``, else ``$QE_MODELS``, else ``~/.cache/qe/models``."""
    return Path(override or os.environ.get(ENV_VAR) or DEFAULT_DIR).expanduser()


def model_path(name: str, root: str | os.PathLike | None = None) -> Path:
    return models_dir(root) / name


def is_built(name: str, root: str | os.PathLike | None = None) -> bool:
    from qe.core.export import MANIFEST

    return (model_path(name, root) / MANIFEST).is_file()


def build_command(name: str) -> str:
    return f"qe zoo build {name}"


def not_built_message(name: str) -> str:
    where = model_path(name)
    return (f"{name!r} is a named model of the zoo ({NAMES.get(name, 'test-only recipe')}), but it is not built in "
            f"{where.parent} (${ENV_VAR}). Build it with: {build_command(name)} "
            f"(or set ${ENV_VAR} to the folder that holds it)")


def describe() -> str:
    """One line per zoo name, saying whether it is built in :func:`models_dir`."""
    root = models_dir()
    rows, width = [], max(map(len, NAMES))
    for name, doc in NAMES.items():
        state = "built" if is_built(name, root) else "not built"
        rows.append(f"{name:{width}s} [{state:9s}] {doc}")
    return "\n".join(rows)


__all__ = ["ENV_VAR", "NAMES", "models_dir", "model_path", "is_built", "build_command", "not_built_message",
           "describe"]
