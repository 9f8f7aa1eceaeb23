"""Input checks shared by the scorer API, the CLI and the meta-evaluation runner.

* :func:`check_texts` / :func:`normalise_refs` — what ``Scorer.score`` accepts, with errors that name the item;
* :func:`scorer_inputs` — the ``mrs`` / ``refs`` / ``sources`` a scorer needs, taken from records, or an error
  naming the first record that lacks the field;
* :func:`input_file_problem` / :func:`output_place_problem` — what is wrong with a path given as an input file or as
  an output to write (a folder, a missing file, a parent that is a file), in words, before anything is read or
  written (they used to say "no such file" for a folder, "[Errno 17] File exists" for ``-o file.txt/out.json``).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qe.errors import MissingInputError

#: scorer attribute -> (record field, keyword argument of ``score``, what it is called in messages)
NEEDS = (
    ("requires_mrs", "mr", "mrs", "an MR"),
    ("requires_refs", "refs", "refs", "references"),
    ("requires_sources", "source", "sources", "source documents"),
)


def check_texts(texts: Any, field: str = "outputs") -> list[str]:
    """Return ``texts`` as a list of str, or raise naming the first offending item."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{field}: expected a sequence of strings, got a single {type(texts).__name__}; wrap it in a list")
    try:
        items = list(texts)
    except TypeError:
        raise TypeError(f"{field}: expected a sequence of strings, got {type(texts).__name__}") from None
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise TypeError(f"{field}[{i}]: expected str, got {type(t).__name__} ({t!r:.60})")
    return items


def normalise_refs(refs: Any, n: int, field: str = "refs") -> list[list[str]]:
    """Accept one reference (str) or several (sequence of str) per output; return a list of lists."""
    if refs is None:
        raise MissingInputError(f"{field} are required by this scorer")
    if isinstance(refs, (str, bytes)):
        raise TypeError(f"{field}: expected one entry per output, got a single string")
    refs = list(refs)
    if len(refs) != n:
        raise ValueError(f"{field}: got {len(refs)} entries for {n} outputs")
    out: list[list[str]] = []
    for i, r in enumerate(refs):
        if isinstance(r, str):
            out.append([r])
        elif isinstance(r, Sequence):
            rr = list(r)
            for j, x in enumerate(rr):
                if not isinstance(x, str):
                    raise TypeError(f"{field}[{i}][{j}]: expected str, got {type(x).__name__}")
            out.append(rr)
        else:
            raise TypeError(f"{field}[{i}]: expected str or list of str, got {type(r).__name__}")
    return out


def scorer_inputs(scorer: Any, records: Sequence[Any], where: str = "input") -> dict[str, list[Any]]:
    """Keyword arguments (``mrs``, ``refs``, ``sources``) that ``scorer`` needs, taken from ``records``.

    Raises :class:`MissingInputError` naming ``where``, the first record (id) without the field, and the scorer.
    """
    kw: dict[str, list[Any]] = {}
    name = getattr(scorer, "name", type(scorer).__name__)
    for attr, fld, arg, what in NEEDS:
        values = [getattr(r, fld, None) for r in records]
        missing = next((i for i, v in enumerate(values) if not v), None)
        if getattr(scorer, attr, False):
            if missing is not None:
                rid = getattr(records[missing], "id", missing)
                raise MissingInputError(f"{where}: record {rid!r} has no {fld!r}, but {name} needs {what}")
            kw[arg] = values
    return kw


def input_file_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be read as an input file (``"/data/run1 is a folder, not a file: ..."``), or None. A named
    pipe or ``/dev/fd/N`` (process substitution) is a file here."""
    p = Path(path)
    if p.is_dir():
        return f"{p} is a folder, not a file: give a file in it"
    if not p.exists():
        return f"{p}: no such file"
    return None


def output_place_problem(path: str | os.PathLike) -> str | None:
    """Why no file can be written at ``path`` because of the folders above it (one of them is a regular file, so
    the folder cannot be made there), or None. Other problems (permissions, a full disk) are left to the write,
    whose error names the file."""
    p = Path(path)
    for parent in reversed(p.parents):  # the shortest first: the first one that is not a folder is the culprit
        if parent.exists() and not parent.is_dir():
            return (f"{p}: cannot make a folder there, {parent} is a file, not a folder; give a path that is not "
                    f"inside {parent}")
    return None


__all__ = ["check_texts", "normalise_refs", "scorer_inputs", "input_file_problem", "output_place_problem", "NEEDS"]
