"""The files a RatPred run writes and reads back (strict JSON: NaN is written as null, infinities as "inf" /
"-inf", and read back as floats): ``result.json`` of a finished (seed, fold), ``stage.json`` of a finished stage,
``predictions.jsonl`` / ``dev_predictions.jsonl``."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from qe.core.jsonio import dumps


#: the numeric fields of a predictions row
PRED_FIELDS = ("pred", "raw", "gold")


def _number(v: Any) -> float:
    """A number read back from JSON this module wrote (:func:`qe.data.record.dumps`): null was NaN, "inf" / "-inf"
    were infinities."""
    return math.nan if v is None else float(v)


def _numbers(row: dict, keys) -> dict:
    """``row`` with the values under ``keys`` (where present) read back as floats (:func:`_number`)."""
    return {**row, **{k: _number(row[k]) for k in keys if k in row}}


def _read_run_info(path: Path) -> dict:
    """A finished sub-run's ``result.json``, its figures read back as floats (NaN / inf survive the strict JSON)."""
    info = json.loads(path.read_text())
    info["best_dev_corr"] = _number(info.get("best_dev_corr"))
    for kind in ("test", "test_raw"):
        if isinstance(info.get(kind), dict):
            info[kind] = _numbers(info[kind], list(info[kind]))
    return info


def _read_jsonl(path: Path) -> list[dict]:
    """Rows written by :func:`_write_jsonl` (predictions), their numbers read back as floats."""
    with open(path) as f:
        return [_numbers(json.loads(x), PRED_FIELDS) for x in f if x.strip()]


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as f:
        for row in rows:
            f.write(dumps(row) + "\n")  # strict JSON: a NaN prediction or rating -> null
    tmp.replace(path)
