"""The rated-data record (DESIGN.md) and its JSONL / CSV / plain-text readers.

JSONL: one object per line with the fields below. CSV: the same column names; ``refs`` may hold a JSON list or
one plain reference; ratings come either from a ``ratings`` column holding a JSON object or from columns named
``ratings.<aspect>``; precomputed metric scores likewise from ``metrics`` / ``metrics.<name>``.
Plain text (.txt): one output per line, ids ``<stem>-<line number>``.

Every problem raises :class:`qe.errors.RecordError` naming the file, the record (line and id) and the field.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from qe.errors import RecordError

KNOWN_FIELDS = ("id", "system", "dataset", "mr", "source", "refs", "output", "ratings", "metrics")


@dataclass
class Record:
    id: str
    output: str
    system: str | None = None
    dataset: str | None = None
    mr: str | None = None
    source: str | None = None
    refs: list[str] = field(default_factory=list)
    ratings: dict[str, float] = field(default_factory=dict)
    #: precomputed metric scores shipped with a dataset (e.g. EMNLP17's BLEU columns)
    metrics: dict[str, float] = field(default_factory=dict)
    #: any other fields, kept verbatim
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        extra = d.pop("extra")
        d = {k: v for k, v in d.items() if v not in (None, [], {})}
        d.update(extra)
        return d


def _where(path: str | Path | None, line: int | None, rid: Any = None) -> str:
    loc = str(path) if path else "<records>"
    if line is not None:
        loc += f":{line}"
    if rid is not None:
        loc += f" (id={rid!r})"
    return loc


def _to_float(v: Any, where: str, fld: str) -> float:
    if v is None or (isinstance(v, str) and v.strip().lower() in ("", "na", "nan", "null", "none")):
        return math.nan
    if isinstance(v, bool):
        raise RecordError(f"{where}: field {fld!r} must be a number, got {v!r}")
    try:
        return float(v)
    except (TypeError, ValueError):
        raise RecordError(f"{where}: field {fld!r} must be a number, got {v!r:.60}") from None


def record_from_dict(d: dict[str, Any], where: str = "<record>", default_id: str | None = None) -> Record:
    """Validate one mapping and build a :class:`Record`."""
    if not isinstance(d, dict):
        raise RecordError(f"{where}: expected a JSON object, got {type(d).__name__}")
    rid = d.get("id", default_id)
    if rid is None or (isinstance(rid, str) and not rid.strip()):
        raise RecordError(f"{where}: field 'id' is missing or empty")
    rid = str(rid)
    where = f"{where} (id={rid!r})" if "id=" not in where else where
    if "output" not in d:
        raise RecordError(f"{where}: field 'output' is missing")
    out = d["output"]
    if not isinstance(out, str):
        raise RecordError(f"{where}: field 'output' must be a string, got {type(out).__name__}")
    for fld in ("system", "dataset", "mr", "source"):
        v = d.get(fld)
        if v is not None and not isinstance(v, str):
            if isinstance(v, (int, float)) and fld == "system":
                d[fld] = str(v)
            else:
                raise RecordError(f"{where}: field {fld!r} must be a string, got {type(v).__name__}")
    refs = d.get("refs", [])
    if refs is None:
        refs = []
    if isinstance(refs, str):
        refs = [refs]
    if not isinstance(refs, list):
        raise RecordError(f"{where}: field 'refs' must be a list of strings, got {type(refs).__name__}")
    for j, r in enumerate(refs):
        if not isinstance(r, str):
            raise RecordError(f"{where}: field 'refs[{j}]' must be a string, got {type(r).__name__}")
    blocks: dict[str, dict[str, float]] = {}
    for blk in ("ratings", "metrics"):
        raw = d.get(blk) or {}
        if not isinstance(raw, dict):
            raise RecordError(f"{where}: field {blk!r} must be an object of name -> number, got {type(raw).__name__}")
        blocks[blk] = {str(k): _to_float(v, where, f"{blk}.{k}") for k, v in raw.items()}
    extra = {k: v for k, v in d.items() if k not in KNOWN_FIELDS}
    return Record(
        id=rid,
        output=out,
        system=d.get("system"),
        dataset=d.get("dataset"),
        mr=d.get("mr"),
        source=d.get("source"),
        refs=list(refs),
        ratings=blocks["ratings"],
        metrics=blocks["metrics"],
        extra=extra,
    )


def records_from_dicts(rows: Iterable[dict[str, Any]], name: str = "<records>") -> list[Record]:
    out = [record_from_dict(dict(r), _where(name, i + 1), default_id=f"{name}-{i + 1}") for i, r in enumerate(rows)]
    _check_unique(out, name)
    return out


def _check_unique(records: list[Record], name: str) -> None:
    seen: dict[str, int] = {}
    for i, r in enumerate(records):
        if r.id in seen:
            raise RecordError(f"{name}: duplicate id {r.id!r} (records {seen[r.id] + 1} and {i + 1})")
        seen[r.id] = i


def _read_jsonl(path: Path) -> list[Record]:
    out = []
    with open(path, encoding="utf-8") as f:
        for ln, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RecordError(f"{path}:{ln}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            out.append(record_from_dict(d, _where(path, ln, d.get("id") if isinstance(d, dict) else None),
                                        default_id=f"{path.stem}-{ln}"))
    return out


def _read_csv(path: Path) -> list[Record]:
    out = []
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None or "output" not in reader.fieldnames:
            raise RecordError(f"{path}: CSV header must have an 'output' column (found {reader.fieldnames})")
        for ln, row in enumerate(reader, 2):
            where = _where(path, ln, row.get("id"))
            d: dict[str, Any] = {}
            for k, v in row.items():
                if k is None:
                    raise RecordError(f"{where}: more values than header columns")
                if k.startswith("ratings."):
                    d.setdefault("ratings", {})[k[8:]] = v
                elif k.startswith("metrics."):
                    d.setdefault("metrics", {})[k[8:]] = v
                elif k in ("ratings", "metrics", "refs") and v and v.strip()[:1] in "[{":
                    try:
                        d[k] = json.loads(v)
                    except json.JSONDecodeError as exc:
                        raise RecordError(f"{where}: field {k!r} holds invalid JSON ({exc.msg})") from None
                elif k == "refs":
                    d[k] = [v] if v else []
                else:
                    d[k] = v if v != "" or k == "output" else None
            out.append(record_from_dict(d, where, default_id=f"{path.stem}-{ln}"))
    return out


def _read_txt(path: Path) -> list[Record]:
    with open(path, encoding="utf-8") as f:
        return [Record(id=f"{path.stem}-{i}", output=line.rstrip("\n")) for i, line in enumerate(f, 1)]


def _first_bad_utf8_line(path: Path) -> tuple[int, int, bytes]:
    """(line number, byte column, the offending bytes) of the first line that is not valid UTF-8."""
    with open(path, "rb") as f:
        for ln, raw in enumerate(f, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return ln, exc.start + 1, raw[exc.start:exc.end]
    return 0, 0, b""


def load_records(path: str | Path) -> list[Record]:
    """Read records from ``.jsonl`` / ``.json`` (a list) / ``.csv`` / ``.txt``; validate every field.

    Files must be UTF-8: a file that is not raises :class:`RecordError` naming the first bad line and column.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such file")
    try:
        return _load_records(p)
    except UnicodeDecodeError:
        ln, col, bad = _first_bad_utf8_line(p)
        raise RecordError(f"{p}:{ln}: not valid UTF-8 (byte {bad!r} at column {col}); re-encode the file as UTF-8, "
                          f"e.g. iconv -f latin1 -t utf-8") from None


def _load_records(p: Path) -> list[Record]:
    suf = p.suffix.lower()
    if suf in (".jsonl", ".ndjson"):
        recs = _read_jsonl(p)
    elif suf == ".json":
        data = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise RecordError(f"{p}: a .json file must hold a list of records (use .jsonl for one per line)")
        recs = [record_from_dict(d, _where(p, i + 1), default_id=f"{p.stem}-{i + 1}") for i, d in enumerate(data)]
    elif suf == ".csv":
        recs = _read_csv(p)
    elif suf in (".txt", ".text", ""):
        recs = _read_txt(p)
    else:
        raise ValueError(f"{p}: unknown format {suf!r}; use .jsonl, .json, .csv or .txt")
    _check_unique(recs, str(p))
    return recs


def save_records(records: Iterable[Record], path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r.to_dict(), ensure_ascii=False) + "\n")
    tmp.replace(p)
    return p
