"""``ensemble`` exports: the member exports copied into ``members/<name>/`` and ``ensemble.json``.

``ensemble.json``::

    {"members": [{"name": "gru", "path": "members/gru", "kind": "qe_gru", "checksum": "...", "weight": 0.5,
                  "options": {"rounded": false}}, ...],
     "predict": {"round_to": 0.5, "clip_lo": 1.0, "clip_hi": 6.0}}      # or null: the plain weighted mean

A member row may carry ``"scale": [lo, hi]``: its scores are mapped to ``(s - lo) / (hi - lo)`` before the weighted
mean, so members on different scales (the coverage score in [0, 1], a RatPred rating in [1, 6]) are averaged on one.

Members are copied (their own manifests included), so an ensemble export is self-contained and can be moved; each
member is verified against its own manifest when the ensemble loads, and its checksum is also kept in
``ensemble.json`` (so the ensemble's checksum changes when a member's files do). Only safetensors / JSON files are
read, as for every export.
"""
from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

from qe.core.jsonio import dumps
from qe.errors import ExportError
from qe.core.export import export_writer, read_manifest
from qe.registry import EXPORT_FILES

KIND = "ensemble"
SPEC = EXPORT_FILES[KIND]["spec"]
MEMBERS_DIR = "members"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def check_weights(names: list[str], weights: dict[str, float] | None) -> dict[str, float]:
    """``{name: weight}`` normalised to sum 1 (None: equal weights); a missing, unknown, negative or non-finite
    weight, or an all-zero set, is refused naming it."""
    if not weights:
        return {n: 1.0 / len(names) for n in names}
    unknown = sorted(set(weights) - set(names))
    missing = [n for n in names if n not in weights]
    if unknown or missing:
        raise ValueError(f"ensemble weights: {'unknown member(s) ' + ', '.join(unknown) if unknown else ''}"
                         f"{'; ' if unknown and missing else ''}{'no weight for ' + ', '.join(missing) if missing else ''}"
                         f" (members: {', '.join(names)})")
    w = {}
    for n in names:
        try:
            v = float(weights[n])
        except (TypeError, ValueError):
            raise ValueError(f"ensemble weights: {n}={weights[n]!r} is not a number") from None
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"ensemble weights: {n}={v} (a weight is a finite number >= 0)")
        w[n] = v
    total = sum(w.values())
    if total <= 0:
        raise ValueError("ensemble weights: they sum to 0")
    return {n: v / total for n, v in w.items()}


def check_scale(name: str, scale: Any) -> list[float]:
    """``[lo, hi]`` of a member's scale, checked: two finite numbers with ``lo < hi``, else refused naming it."""
    try:
        lo, hi = (float(x) for x in scale)
    except (TypeError, ValueError):
        raise ValueError(f"ensemble scale of {name}: {scale!r} is not [lo, hi] (two numbers)") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"ensemble scale of {name}: [{lo}, {hi}] (needs finite lo < hi)")
    return [lo, hi]


def check_scales(names: list[str], scales: dict[str, Any], what: str = "ensemble scales") -> dict[str, list[float]]:
    """``{name: [lo, hi]}`` for every member of ``names``, each checked by :func:`check_scale`; refused naming the
    members when ``scales`` does not name exactly them (every member has a scale, or none has)."""
    if set(scales) != set(names):
        raise ValueError(f"{what} name {sorted(scales)}, the members are {sorted(names)} (every member needs one, or "
                         "none does)")
    return {n: check_scale(n, scales[n]) for n in names}


def output_range(predict: dict[str, Any] | None, scaled: bool) -> list[float] | None:
    """The manifest's ``score_range`` of an ensemble export: its prediction rule's clip range when the rule clips on
    both sides, else [0, 1] when the members are scaled (a weighted mean, weights summing to 1, of scores mapped to
    [0, 1]), else None (the members' own scales: the export declares none)."""
    lo, hi = (predict or {}).get("clip_lo"), (predict or {}).get("clip_hi")
    if lo is not None and hi is not None:
        return [float(lo), float(hi)]
    return [0.0, 1.0] if scaled else None


def save_ensemble_export(dest: str | Path, members: dict[str, str | Path], *, weights: dict[str, float] | None = None,
                         predict: dict[str, Any] | None = None, options: dict[str, dict[str, Any]] | None = None,
                         scales: dict[str, Any] | None = None, config: dict[str, Any] | None = None,
                         data: dict[str, Any] | None = None, metrics: dict[str, Any] | None = None) -> Path:
    """Write an ``ensemble`` export of ``members`` ({name: export dir}) to ``dest`` (atomically); ``scales``
    ({name: [lo, hi]}, every member or none) maps each member's scores to ``(s - lo) / (hi - lo)`` first."""
    if len(members) < 2:
        raise ValueError(f"an ensemble needs two or more members, got {len(members)}")
    names = list(members)
    for n in names:
        if not _NAME.match(n):
            raise ValueError(f"ensemble member name {n!r}: use letters, digits, '_', '.', '-'")
    w = check_weights(names, weights)
    if scales:
        scales = check_scales(names, scales)
    rows = []
    manifests = {n: read_manifest(Path(p)) for n, p in members.items()}
    rng = output_range(predict, bool(scales))
    with export_writer(dest, kind=KIND, config=config or {}, data=data, metrics=metrics,
                       extra={"score_range": rng} if rng else None) as tmp:
        for n in names:
            src = Path(members[n])
            shutil.copytree(src, tmp / MEMBERS_DIR / n, ignore=shutil.ignore_patterns(".*"))
            m = manifests[n]
            rows.append({"name": n, "path": f"{MEMBERS_DIR}/{n}", "kind": m["kind"], "checksum": m.get("checksum"),
                         "weight": w[n], "options": dict((options or {}).get(n, {})),
                         **({"scale": scales[n]} if scales else {})})
        (tmp / SPEC).write_text(dumps({"members": rows, "predict": predict}, indent=2) + "\n", encoding="utf-8")
    return Path(dest).resolve()


def read_spec(export_dir: str | Path) -> dict[str, Any]:
    """``ensemble.json`` of an export, checked: every member folder is there with the kind and checksum recorded."""
    d = Path(export_dir)
    try:
        spec = json.loads((d / SPEC).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ExportError(f"{d / SPEC}: cannot read the ensemble spec ({exc})") from None
    rows = spec.get("members")
    if not isinstance(rows, list) or len(rows) < 2:
        raise ExportError(f"{d / SPEC}: 'members' must list two or more members")
    for i, r in enumerate(rows):
        for key in ("name", "path", "kind", "weight"):
            if key not in r:
                raise ExportError(f"{d / SPEC}: members[{i}] has no {key!r}")
        p = (d / r["path"]).resolve()
        if d.resolve() not in p.parents:
            raise ExportError(f"{d / SPEC}: members[{i}] path {r['path']!r} points outside the export")
        m = read_manifest(p, expected_kind=r["kind"])
        if r.get("checksum") and m.get("checksum") != r["checksum"]:
            raise ExportError(f"{p}: member {r['name']!r} has checksum {str(m.get('checksum'))[:12]}, the ensemble "
                              f"was built with {str(r['checksum'])[:12]} (was a member replaced?)")
    check_weights([r["name"] for r in rows], {r["name"]: r["weight"] for r in rows})
    scaled = [r["name"] for r in rows if "scale" in r]
    if scaled and len(scaled) != len(rows):
        raise ExportError(f"{d / SPEC}: only {', '.join(scaled)} of the members have a 'scale' (all or none)")
    for r in rows:
        if "scale" in r:
            try:
                check_scale(r["name"], r["scale"])
            except ValueError as exc:
                raise ExportError(f"{d / SPEC}: {exc}") from None
    return spec
