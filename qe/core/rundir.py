"""Run folders that two runs never share, and a run folder that cannot be written said in one line.

``${qe.new_dir:PATH}`` (an OmegaConf resolver, registered when this module is imported) creates ``PATH`` with an
atomic ``mkdir`` and returns it; when ``PATH`` exists already (another run started in the same second), it creates
``PATH-2``, ``PATH-3``, ... instead, so every run gets a folder of its own. ``conf/evaluate.yaml`` uses it for its
default ``hydra.run.dir``; naming a folder yourself (``hydra.run.dir=...``) uses that folder as it is (a rerun into
it resumes). The resolver is registered with ``use_cache=True``: resolving the same config twice gives the same
folder.

:func:`check_writable_dir` checks that a folder (``output_dir``) can be created and written before a run writes
anything; when it cannot (a read-only folder, a path under a regular file) it raises :class:`RunDirError`, one line
naming the folder and exit status 2.
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path

from qe.errors import QEError

RESOLVER = "qe.new_dir"
#: most suffixes tried before giving up (a folder with 10,000 runs started in one second is not a run folder)
MAX_SUFFIX = 10_000


class RunDirError(QEError):
    """A run folder that cannot be created or written (exit status 2, one line naming the folder)."""


def claim_new_dir(path: str) -> str:
    """Create a folder of its own for one run: ``path``, else ``path-2``, ``path-3``, ... (each ``mkdir`` atomic,
    so two processes never get the same one). Returns the folder. If the parent cannot be created, ``path`` is
    returned as it is: Hydra's own ``mkdir`` then fails, and ``qe evaluate`` reports that as one line naming the
    folder (:func:`qe.app.describe`; an error raised here would come wrapped in OmegaConf's resolver error)."""
    p = Path(str(path)).expanduser()
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return str(path)
    for i in range(1, MAX_SUFFIX + 1):
        cand = p if i == 1 else p.with_name(f"{p.name}-{i}")
        try:
            cand.mkdir()
        except FileExistsError:
            continue
        except OSError:
            return str(cand)
        return str(cand)
    raise RunDirError(f"{p}: {MAX_SUFFIX} run folders of this name exist already; name one with hydra.run.dir=...")


def check_writable_dir(path: str | Path, what: str) -> Path:
    """Create ``path`` (and its parents) if needed and check that a file can be written in it; :class:`RunDirError`
    naming ``what`` and the folder otherwise."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / f".qe-write-check-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        with open(probe, "x", encoding="utf-8"):
            pass
        probe.unlink()
    except OSError as exc:
        if isinstance(exc, NotADirectoryError):
            reason = "a part of that path is a file, not a folder"
        elif isinstance(exc, FileExistsError) or (p.exists() and not p.is_dir()):
            reason = "it is a file, not a folder"
        else:
            reason = exc.strerror or type(exc).__name__
        raise RunDirError(f"{what}={p}: cannot write the run there ({reason}); choose a folder you can write") from None
    return p


def register_resolvers() -> None:
    from omegaconf import OmegaConf

    OmegaConf.register_new_resolver(RESOLVER, claim_new_dir, use_cache=True, replace=True)


register_resolvers()

__all__ = ["RESOLVER", "RunDirError", "check_writable_dir", "claim_new_dir", "register_resolvers"]
