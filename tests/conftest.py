import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path | None:
    from qe.paths import resolve_data_dir

    d = resolve_data_dir(None)
    return d if (d / "emnlp17").is_dir() else None


needs_data = pytest.mark.skipif(shared_data_dir() is None,
                                reason="public data folder (../shared/data or $QE_DATA_DIR) is absent")


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
