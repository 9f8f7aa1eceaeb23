"""Strict JSON: every file and line ``qe`` writes parses with strict readers (``jq``, JavaScript, ``json.loads``
with ``parse_constant`` refusing NaN). NaN becomes ``null``, +-inf the strings ``"inf"`` / ``"-inf"``; numpy and torch
values become Python numbers.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any



#: how +-inf is written in every output (JSON has no infinity; NaN, "no value", is written as null)
POS_INF, NEG_INF = "inf", "-inf"


def json_safe(obj: Any) -> Any:
    """``obj`` with every float NaN replaced by None and +-inf by ``"inf"`` / ``"-inf"``, at any depth (dicts,
    lists, tuples; numpy scalars and arrays become Python numbers and lists), so that ``json.dumps(...,
    allow_nan=False)`` accepts it and strict parsers (``jq``, JavaScript) read the result."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, (str, int)):
        return obj
    if isinstance(obj, float):
        if math.isnan(obj):
            return None
        if math.isinf(obj):
            return POS_INF if obj > 0 else NEG_INF
        return obj
    if isinstance(obj, dict):
        return {str(k) if not isinstance(k, str) else k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    tolist = getattr(obj, "tolist", None)  # numpy scalars / arrays, torch tensors
    if callable(tolist):
        return json_safe(tolist())
    if isinstance(obj, Path):
        return str(obj)
    return obj


def dumps(obj: Any, **kwargs: Any) -> str:
    """Strict JSON text of ``obj`` (see :func:`json_safe`); non-ASCII kept as is."""
    kwargs.setdefault("ensure_ascii", False)
    return json.dumps(json_safe(obj), allow_nan=False, **kwargs)


__all__ = ["POS_INF", "NEG_INF", "json_safe", "dumps"]
