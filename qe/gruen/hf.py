"""Hugging Face helpers shared by the GRUEN parts: name resolution, device, token-budget batching, exports.

Every model is given by a Hub name (``bert-base-cased``), a local directory, an offline alias (``minilm``,
resolved by :func:`qe.offline.encoder_path`) or a qe export directory of kind ``acceptability`` / ``mlm`` /
``sop`` (an HF ``save_pretrained`` folder inside). Loading never downloads when ``HF_HUB_OFFLINE=1``.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Iterator, Sequence

import torch

from qe.export import MANIFEST, export_checksum, read_manifest, verify_checksum
from qe.offline import encoder_path

log = logging.getLogger(__name__)

HF_SUBDIR = "hf"


def pick_device(device: str | None = None) -> torch.device:
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0") == "1" or os.environ.get("TRANSFORMERS_OFFLINE", "0") == "1"


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


def save_hf_export(dest: Path, model, tokenizer, kind: str, config: dict, data: dict, metrics: dict,
                   extra: dict | None = None) -> Path:
    """Write an export: ``<dest>/hf`` holds ``save_pretrained`` output (safetensors weights + tokenizer)."""
    from qe.export import export_writer

    model = model.float().cpu().eval()
    with export_writer(dest, kind=kind, config=config, data=data, metrics=metrics, extra=extra) as tmp:
        model.save_pretrained(tmp / HF_SUBDIR, safe_serialization=True)
        tokenizer.save_pretrained(tmp / HF_SUBDIR)
    return Path(dest).resolve()


def token_budget_batches(lengths: Sequence[int], max_tokens: int, max_batch: int | None = None) -> Iterator[list[int]]:
    """Indices grouped so that ``len(batch) * max(length in batch) <= max_tokens`` (padded tokens per pass).

    ``lengths`` should already be sorted (descending) by the caller so that batches hold similar lengths;
    an item longer than the budget on its own forms a batch of one.
    """
    batch: list[int] = []
    longest = 0
    for i, n in enumerate(lengths):
        new_longest = max(longest, int(n))
        if batch and (new_longest * (len(batch) + 1) > max_tokens or (max_batch and len(batch) >= max_batch)):
            yield batch
            batch, new_longest = [], int(n)
        batch.append(i)
        longest = new_longest
    if batch:
        yield batch


def default_budget(device: torch.device, gpu: int = 65_536, cpu: int = 4_096) -> int:
    return gpu if device.type == "cuda" else cpu


def versions() -> str:
    import transformers

    from qe.version import __version__

    return f"qe:{__version__}|torch:{torch.__version__}|transformers:{transformers.__version__}"


__all__ = ["pick_device", "resolve_model", "model_id", "save_hf_export", "token_budget_batches", "export_checksum",
           "HF_SUBDIR", "versions", "default_budget", "offline", "keep_boundary", "SpecialTokens",
           "pad_pairs"]


def keep_boundary(a: Sequence[int], b: Sequence[int], room: int) -> tuple[list[int], list[int], bool]:
    """Cut a segment pair to ``room`` tokens keeping the tokens next to the boundary: the *end* of ``a`` and the
    *start* of ``b``, each at most half the room (a shorter side lends its unused half to the other).
    Returns ``(a, b, cut)``. Used alike when the SOP head is trained and when it scores."""
    a, b = list(a), list(b)
    if len(a) + len(b) <= room:
        return a, b, False
    half = room // 2
    ka = min(len(a), max(half, room - len(b)))
    kb = min(len(b), room - ka)
    return a[len(a) - ka :], b[:kb], True


def pad_pairs(rows: Sequence[tuple[Sequence[int], Sequence[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad ``(input_ids, token_type_ids)`` rows into ``input_ids`` / ``attention_mask`` / ``token_type_ids``."""
    L = max(len(ids) for ids, _ in rows)
    out = {"input_ids": torch.full((len(rows), L), pad_id, dtype=torch.long),
           "attention_mask": torch.zeros((len(rows), L), dtype=torch.long),
           "token_type_ids": torch.zeros((len(rows), L), dtype=torch.long)}
    for r, (ids, tt) in enumerate(rows):
        out["input_ids"][r, : len(ids)] = torch.as_tensor(ids)
        out["token_type_ids"][r, : len(ids)] = torch.as_tensor(tt)
        out["attention_mask"][r, : len(ids)] = 1
    return out


class SpecialTokens:
    """Add a tokenizer's special tokens around id sequences (single or pair) without re-tokenising text.

    transformers 5 removed ``build_inputs_with_special_tokens`` from some tokenizers, so the template is read
    off the tokenizer itself: it encodes two probe words with and without special tokens and records what
    surrounds them (prefix / middle / suffix ids and their token types).
    """

    def __init__(self, tokenizer):
        a = tokenizer("hello", add_special_tokens=False)["input_ids"]
        b = tokenizer("world", add_special_tokens=False)["input_ids"]
        one = tokenizer("hello", add_special_tokens=True)
        two = tokenizer("hello", "world", add_special_tokens=True)
        ids1, ids2 = list(one["input_ids"]), list(two["input_ids"])
        i = _find(ids1, a)
        self.s_pre, self.s_suf = ids1[:i], ids1[i + len(a):]
        i = _find(ids2, a)
        j = _find(ids2, b, i + len(a))
        self.p_pre, self.p_mid, self.p_suf = ids2[:i], ids2[i + len(a) : j], ids2[j + len(b):]
        tt = list(two.get("token_type_ids") or [0] * len(ids2))
        self.tt_a = tt[0] if tt else 0
        self.tt_b = tt[j] if tt else 0
        self.n_single = len(self.s_pre) + len(self.s_suf)
        self.n_pair = len(self.p_pre) + len(self.p_mid) + len(self.p_suf)

    def single(self, ids: list[int]) -> list[int]:
        return self.s_pre + list(ids) + self.s_suf

    def pair(self, a: list[int], b: list[int]) -> tuple[list[int], list[int]]:
        ids = self.p_pre + list(a) + self.p_mid + list(b) + self.p_suf
        na = len(self.p_pre) + len(a) + len(self.p_mid)
        return ids, [self.tt_a] * na + [self.tt_b] * (len(ids) - na)


def _find(seq: list[int], sub: list[int], start: int = 0) -> int:
    for i in range(start, len(seq) - len(sub) + 1):
        if seq[i : i + len(sub)] == sub:
            return i
    raise ValueError("could not locate probe tokens in the tokenizer's output (unsupported tokenizer template)")
