"""E2E NLG Challenge data (Novikova, Dušek & Rieser 2017) and its cleaned re-annotation (Dušek et al. 2019).

Files (``data/e2e.yaml`` gives their upstream commits and checksums; they live in ``<data_dir>/e2e``):

* cleaned: ``devel-fixed.no-ol.csv`` (dev) and ``test-fixed.csv`` (test), columns ``mr, ref, fixed, orig_mr``;
* original: ``original/devset.csv`` (dev) and ``original/testset_w_refs.csv`` (test), columns ``mr, ref``.

Every row is one human reference for one attribute-value MR (``name[Blue Spice], eatType[coffee shop], ...``);
several rows share an MR. :func:`e2e` returns one record per row, with ``output`` = that reference and ``refs`` =
every reference of its MR (itself included), grouped by the exact MR string; ``system`` is ``human``.
:func:`e2e_references` maps each MR to its references (to attach references to a system's outputs by MR), and
:func:`e2e_texts` gives the reference texts as a corpus (the LM corpus source ``{name: e2e}``).

Use E2E **dev** for training and tuning; E2E **test** is for final evaluation only.
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

from qe.data.record import Record, _check_unique, read_csv_rows, read_text, record_from_dict
from qe.errors import RecordError
from qe.core.paths import require, resolve_data_dir

FILES = {
    ("cleaned", "dev"): "e2e/devel-fixed.no-ol.csv",
    ("cleaned", "test"): "e2e/test-fixed.csv",
    ("original", "dev"): "e2e/original/devset.csv",
    ("original", "test"): "e2e/original/testset_w_refs.csv",
}


def _path(version: str, split: str, data_dir=None) -> Path:
    key = (str(version), str(split))
    if key not in FILES:
        raise ValueError(f"e2e: version={version!r} split={split!r}; use version cleaned|original, split dev|test")
    return require(resolve_data_dir(data_dir) / FILES[key], f"E2E {version} {split} ({FILES[key]})")


def _rows(version: str, split: str, data_dir=None) -> list[tuple[int, dict[str, str]]]:
    path = _path(version, split, data_dir)
    out = []
    _, rows = read_csv_rows(read_text(path), str(path), required=("mr", "ref"))
    for ln, row in rows:
        if not (row.get("mr") or "").strip() or not (row.get("ref") or "").strip():
            raise RecordError(f"{path}:{ln}: field {'mr' if not (row.get('mr') or '').strip() else 'ref'!r} is empty")
        out.append((ln, row))
    return out


def e2e_references(version: str = "cleaned", split: str = "dev", data_dir=None) -> dict[str, list[str]]:
    """MR string -> its references, in file order (MRs in order of first appearance)."""
    refs: OrderedDict[str, list[str]] = OrderedDict()
    for _, row in _rows(version, split, data_dir):
        refs.setdefault(row["mr"].strip(), []).append(row["ref"].strip())
    return dict(refs)


def e2e(data_dir=None, version: str = "cleaned", split: str = "dev") -> list[Record]:
    """One record per (MR, reference) row: ``output`` = the reference, ``refs`` = all references of the MR.

    Extra fields: ``mr_group`` (index of the MR in order of appearance) and, for the cleaned data, ``orig_mr`` and
    ``fixed``. Ids: ``e2e-<version>-<split>-<row number>``.
    """
    rows = _rows(version, split, data_dir)
    path = _path(version, split, data_dir)
    by_mr = e2e_references(version, split, data_dir)
    group = {mr: i for i, mr in enumerate(by_mr)}
    out = []
    for n, (ln, row) in enumerate(rows, 1):
        mr = row["mr"].strip()
        d = {"id": f"e2e-{version}-{split}-{n:05d}", "system": "human", "dataset": "E2E", "mr": mr,
             "output": row["ref"].strip(), "refs": by_mr[mr], "mr_group": group[mr]}
        if "orig_mr" in row:
            d["orig_mr"] = row["orig_mr"].strip()
            d["fixed"] = row.get("fixed") == "1"
        out.append(record_from_dict(d, f"{path}:{ln}"))
    _check_unique(out, str(path))
    return out


def e2e_texts(version: str = "cleaned", split: str = "dev", data_dir=None) -> list[str]:
    """The reference texts of a split, one per row (an LM corpus)."""
    return [row["ref"].strip() for _, row in _rows(version, split, data_dir)]


__all__ = ["e2e", "e2e_references", "e2e_texts", "FILES"]


def e2e_slot_gold(split: str = "dev", data_dir=None) -> list[dict[str, str]]:
    """The cleaned E2E data as gold for content alignment: per row ``orig_mr`` (the MR the reference was written
    for), ``mr`` (the MR the reference actually realises, re-annotated by Dušek, Howcroft & Rieser 2019), ``ref`` and
    ``line``. The slots of ``orig_mr`` missing from ``mr`` are omissions, those of ``mr`` missing from ``orig_mr``
    additions. Only the cleaned version has both columns."""
    path = _path("cleaned", split, data_dir)
    _, rows = read_csv_rows(read_text(path), str(path), required=("mr", "ref", "orig_mr"))
    return [{"line": str(ln), "orig_mr": row["orig_mr"].strip(), "mr": row["mr"].strip(), "ref": row["ref"].strip()}
            for ln, row in rows]
