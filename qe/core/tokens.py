"""Where a Hugging Face tokenizer puts its special tokens: shared by every family that feeds a transformer encoder
(DiscoScore's contextual encoder, RatPred's sentence vectors and cross-encoder), so no family imports another for it."""
from __future__ import annotations


def sequence_frame(tokenizer, config, name: str = "model") -> tuple[list[int], list[int], int]:
    """(special ids before, special ids after one sequence, the model's maximum length in ids): the special tokens
    are found by comparing a probe encoded with and without them (BERT-, RoBERTa- and ALBERT-style tokenizers)."""
    bare = tokenizer("probe", add_special_tokens=False)["input_ids"]
    full = tokenizer("probe", add_special_tokens=True)["input_ids"]
    k = next((i for i in range(len(full) - len(bare) + 1) if full[i : i + len(bare)] == bare), None)
    if k is None:
        raise ValueError(f"{name}: cannot locate a sequence inside its special tokens")
    max_len = min(int(getattr(config, "max_position_embeddings", 512)),
                  int(tokenizer.model_max_length) if tokenizer.model_max_length < 1e6 else 10**9)
    return list(full[:k]), list(full[k + len(bare):]), max_len
