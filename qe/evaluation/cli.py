"""``qe evaluate [hydra overrides ...]``: the same job as ``python evaluate.py`` (see :mod:`qe.app`)."""
from __future__ import annotations

from qe.app import evaluate as main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
