"""Device choice and length-batched execution shared by every scorer.

:func:`run_length_batched` is the one place where inputs are sorted by length, grouped under a token budget
(padded tokens per forward pass), run, and put back into input order (COMET's ``length_batching``): a scorer
supplies the lengths and a function that scores a list of input indices.
"""
from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any, Callable, Iterator, Sequence

log = logging.getLogger("qe")

#: padded tokens per forward pass when the scorer sets no budget of its own
DEFAULT_BUDGET = {"cuda": 65_536, "cpu": 4_096}


def pick_device(device: Any = None):
    """``None`` / ``"auto"``: the first CUDA device when one is present, else CPU; anything else as given."""
    import torch

    if isinstance(device, torch.device):
        return device
    if device in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(str(device))


def default_budget(device, gpu: int | None = None, cpu: int | None = None) -> int:
    """Token budget for ``device`` (a ``torch.device`` or a type string)."""
    kind = getattr(device, "type", str(device))
    if kind == "cuda":
        return int(gpu or DEFAULT_BUDGET["cuda"])
    return int(cpu or DEFAULT_BUDGET["cpu"])


def token_budget_batches(lengths: Sequence[int], max_tokens: int, max_batch: int | None = None) -> Iterator[list[int]]:
    """Positions of ``lengths`` grouped so that ``len(batch) * max(length in batch) <= max_tokens``.

    The caller passes lengths already sorted (descending) so that batches hold similar lengths; an item longer
    than the budget on its own forms a batch of one; ``max_batch`` caps the number of items per batch.
    """
    batch: list[int] = []
    longest = 0
    for i, n in enumerate(lengths):
        n = int(n)
        new_longest = max(longest, n)
        if batch and (new_longest * (len(batch) + 1) > max_tokens or (max_batch and len(batch) >= max_batch)):
            yield batch
            batch, new_longest = [], n
        batch.append(i)
        longest = new_longest
    if batch:
        yield batch


def length_sorted_batches(lengths: Sequence[int], max_tokens: int, max_batch: int | None = None,
                          skip_empty: bool = False) -> list[list[int]]:
    """Input indices sorted longest first (stable) and grouped under the token budget.

    ``skip_empty`` leaves out items of length 0 (the caller gives them its documented score).
    """
    order = sorted(range(len(lengths)), key=lambda i: -int(lengths[i]))
    if skip_empty:
        order = [i for i in order if int(lengths[i]) > 0]
    sorted_lengths = [int(lengths[i]) for i in order]
    return [[order[j] for j in b] for b in token_budget_batches(sorted_lengths, max_tokens, max_batch)]


#: ``QE_VERBOSE=1`` (``qe train -v`` sets it): the console of a ``qe train`` run shows every library's INFO lines
#: (Lightning's banners, its model summary table), as the run's ``train.log`` does (:func:`qe.app.quiet_train_console`)
VERBOSE_ENV = "QE_VERBOSE"


def verbose() -> bool:
    """Whether ``$QE_VERBOSE`` asks for every library's INFO lines on the console."""
    return os.environ.get(VERBOSE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def stderr_is_terminal() -> bool:
    """Standard error is a terminal: a progress bar redraws there; in a log file or a pipe it leaves fragments and
    escape codes (``qe score``, ``qe evaluate`` and :class:`Progress` draw bars only then)."""
    try:
        return bool(sys.stderr is not None and sys.stderr.isatty())
    except (AttributeError, ValueError):
        return False


class Progress:
    """A tqdm bar when ``enabled`` and standard error is a terminal (:func:`stderr_is_terminal`); otherwise (and
    also with the bar) a log line at most every ``every`` seconds, so a run with the bar off still says which
    scorer is working and how far it got."""

    def __init__(self, total: int, desc: str, enabled: bool = True, unit: str = "item", every: float = 30.0):
        self.total, self.desc, self.every, self.done = int(total), desc, float(every), 0
        self._t0 = self._last = time.monotonic()
        self._bar = None
        if enabled and stderr_is_terminal():
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit, leave=False)

    def update(self, n: int) -> None:
        self.done += int(n)
        if self._bar is not None:
            self._bar.update(n)
        now = time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            rate = self.done / max(now - self._t0, 1e-9)
            log.info("%s: %d/%d (%.1f/s)", self.desc, self.done, self.total, rate)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        if self.total and time.monotonic() - self._t0 >= self.every:
            log.info("%s: done, %d items in %.0f s", self.desc, self.done, time.monotonic() - self._t0)

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_length_batched(
    lengths: Sequence[int],
    fn: Callable[[list[int]], Sequence[Any]],
    *,
    max_tokens: int,
    max_batch: int | None = None,
    fill: Any = float("nan"),
    skip_empty: bool = False,
    progress: bool = True,
    desc: str = "scoring",
    unit: str = "item",
) -> list[Any]:
    """Sort by length, batch under ``max_tokens``, call ``fn(indices) -> results`` per batch, restore order.

    Returns one result per input, in input order; items left out by ``skip_empty`` get ``fill``.
    ``fn`` receives input indices (longest first) and returns one result per index, in the same order.
    """
    out: list[Any] = [fill] * len(lengths)
    batches = length_sorted_batches(lengths, max_tokens, max_batch, skip_empty=skip_empty)
    with Progress(sum(len(b) for b in batches), desc, enabled=progress, unit=unit) as bar:
        for b in batches:
            res = list(fn(b))
            if len(res) != len(b):  # a bug in the caller, never the user's fault
                raise RuntimeError(f"{desc}: batch function returned {len(res)} results for {len(b)} items")
            for i, r in zip(b, res):
                out[i] = r
            bar.update(len(b))
    return out


__all__ = ["pick_device", "default_budget", "token_budget_batches", "length_sorted_batches", "run_length_batched",
           "Progress", "DEFAULT_BUDGET"]

