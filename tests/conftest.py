import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]


class _CurrentStderr:
    """A stream that writes to whatever ``sys.stderr`` is now (pytest swaps it per test and closes the old one)."""

    def write(self, s):
        import sys

        return sys.stderr.write(s)

    def flush(self):
        import sys

        sys.stderr.flush()

    def close(self):  # never close the real stream on behalf of a handler
        pass

    def isatty(self):
        return False


# absl (imported by rouge-score) creates a stderr handler bound to the sys.stderr of the moment it is imported:
# under pytest a captured stream that is closed later. An in-process Hydra run (qe evaluate) reconfigures logging,
# which flushes every handler ever made, and the closed stream then kills the session ("lost sys.stderr").
try:
    import absl.logging as _absl_logging

    _absl_logging.get_absl_handler().python_handler.stream = _CurrentStderr()
except ImportError:  # pragma: no cover - rouge-score is a dependency
    pass



def shared_data_dir() -> Path | None:
    from qe.core.paths import resolve_data_dir

    d = resolve_data_dir(None)
    return d if (d / "emnlp17").is_dir() else None


needs_data = pytest.mark.skipif(shared_data_dir() is None,
                                reason="public data folder (../shared/data or $QE_DATA_DIR) is absent")

#: the reason every ``@pytest.mark.gpu`` test gives on a machine without CUDA
NO_CUDA = "needs a CUDA device: torch.cuda.is_available() is false on this machine (GPU tier: tests/gpu)"


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` skip, with :data:`NO_CUDA` as the reason, where torch sees no CUDA device."""
    gpu_items = [it for it in items if it.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason=NO_CUDA)
    for it in gpu_items:
        it.add_marker(skip)


@pytest.fixture
def compose_cfg(tmp_path):
    """compose(*overrides) -> DictConfig of conf/train.yaml (the packaged qe/conf) with every path inside tmp_path."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    conf = Path(__file__).resolve().parents[1] / "qe" / "conf"

    def _compose(*overrides: str):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
            return compose("train", overrides=[f"paths.output_dir={tmp_path}/run", f"paths.root_dir={tmp_path}",
                                               f"export_dir={tmp_path}/export", *overrides])

    return _compose


@pytest.fixture
def tiny_corpus() -> list[str]:
    return [
        "the cat sat on the mat .",
        "the dog sat on the log .",
        "a cat and a dog are friends .",
        "the restaurant serves cheap food in the centre .",
        "the hotel has free internet and allows dogs .",
        "a dog is not a cat .",
        "we ate italian food near the river .",
        "the food is cheap and the hotel is near .",
    ] * 4


def make_lm_export(dest: Path, corpus: list[str], size: int = 8, layers: int = 1, seed: int = 0):
    """A word-LM export with random weights over ``corpus`` (offline, instant): returns (export dir, model, tokenizer)."""
    import numpy as np
    import torch

    from qe.lm.format import save, unigram_logprobs
    from qe.lm.model import LSTMLM
    from qe.core.tokenization import WordTokenizer

    tok = WordTokenizer.train(corpus, max_size=100)
    torch.manual_seed(seed)
    cfg = dict(vocab_size=tok.vocab_size, embedding_dim=size, hidden_size=size, num_layers=layers, dropout=0.0,
               tie_weights=True, pad_id=0)
    model = LSTMLM(**cfg)
    logp, _ = unigram_logprobs([np.array(tok.encode(s)) for s in corpus], tok.vocab_size)
    return save(dest, model, tok, logp, cfg), model, tok


@pytest.fixture
def tiny_lm_export(tmp_path, tiny_corpus) -> Path:
    """Export directory of a tiny random word LM over ``tiny_corpus``."""
    return make_lm_export(tmp_path / "lm", tiny_corpus)[0]


@pytest.fixture(autouse=True)
def _restore_logging():
    """In-process Hydra runs (``qe evaluate``, ``train.py`` through ``run_training``) reconfigure the root logger with
    handlers bound to the test's captured stderr; left in place, the next test's log lines hit a closed file."""
    import logging

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    for h in root.handlers[:]:
        if h not in handlers:
            root.removeHandler(h)
    root.setLevel(level)
