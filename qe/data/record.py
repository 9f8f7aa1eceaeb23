"""The rated-data record (DESIGN.md) and its JSONL / CSV / plain-text readers.

JSONL: one object per line with the fields below. CSV: the same column names; ``refs`` may hold a JSON list or
one plain reference; ratings come either from a ``ratings`` column holding a JSON object or from columns named
``ratings.<aspect>``; precomputed metric scores likewise from ``metrics`` / ``metrics.<name>``.
Plain text (.txt): one output per line, ids ``<stem>-<line number>``.

``id`` is optional in every format: a record without one gets ``<file stem>-<line number>`` (the line number error
messages use, blank lines counted; in a CSV the header is line 1), ``<stem>-<record number>`` in a ``.json`` list,
``stdin-<line number>`` on standard input. A present but empty id (``""``, ``null``, an empty CSV cell) is an error,
and ids must be unique (docs/concepts/records.md).

Every problem raises :class:`qe.errors.RecordError` naming the file, the record (line and id) and the field.
"""
from __future__ import annotations

import csv
import json
import logging
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from qe.core.jsonio import NEG_INF, POS_INF, dumps, json_safe  # noqa: F401  (re-exported)
from qe.errors import RecordError

log = logging.getLogger("qe.data")

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
    if "id" in d and (rid is None or (isinstance(rid, str) and not rid.strip())):
        raise RecordError(f"{where}: field 'id' is empty; give a unique id or leave the field out (the default is "
                          "<file stem>-<line number>)")
    if rid is None:
        raise RecordError(f"{where}: field 'id' is missing")
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


# --------------------------------------------------------------------------------------------------- reading
BOM = "\ufeff"
FORMATS = ("jsonl", "json", "csv", "txt")
_SUFFIX_FORMAT = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv", ".txt": "txt",
                  ".text": "txt", "": "txt"}


def strip_bom(text: str) -> str:
    """``text`` without a leading UTF-8 byte-order mark (spreadsheets' "CSV UTF-8" writes one)."""
    return text[1:] if text.startswith(BOM) else text


def _physical_lines(text: str) -> list[str]:
    """The file's lines as the csv module counts them (``\n``, ``\r\n`` or ``\r`` end a line), ends kept."""
    import io

    return io.StringIO(text, newline="").readlines()


def _open_quote(line: str, delimiter: str = ",", quote: str = '"') -> int | None:
    """Column (0-based) of the quote that opens a field left open at the end of ``line``; None if all close."""
    in_quotes, at_field_start, opened = False, True, None
    i = 0
    while i < len(line):
        c = line[i]
        if in_quotes:
            if c == quote:
                if i + 1 < len(line) and line[i + 1] == quote:
                    i += 1
                else:
                    in_quotes = False
        elif c == quote and at_field_start:
            in_quotes, opened = True, i
        at_field_start = (not in_quotes) and c == delimiter
        i += 1
    return opened if in_quotes else None


def _field_start(lines: list[str], ln: int) -> str:
    """The first line of the field that line ``ln`` (1-based) leaves open, for an error message."""
    line = lines[ln - 1].rstrip("\r\n") if 0 < ln <= len(lines) else ""
    col = _open_quote(line)
    snippet = line[col:] if col is not None else line
    return snippet if len(snippet) <= 60 else snippet[:57] + "..."


def read_csv_rows(text: str, name: str, required: Iterable[str] = ()) -> tuple[list[str], list[tuple[int, dict]]]:
    """Strict CSV: (header, [(line of the record's first line, {column: value})]).

    Quoting is RFC 4180 with the csv module's ``strict`` mode: a quote left open to the end of the file, or text
    after a closing quote (``"a"b``), is an error naming ``name:line`` of the record and the first line of the
    offending field, so a missing quote can never swallow the rows after it. A quote inside an unquoted field
    (``5'11"``) is kept as text, as spreadsheets read it. A field spans lines only inside closed quotes. Every
    row must have as many fields as the header. Blank lines are skipped. A leading byte-order mark is dropped, so
    header names are compared without it. After reading, the record count is checked against the file's
    structure (data lines = records + the extra lines of multi-line fields + blank lines) and logged on the
    ``qe.data`` logger as "N records read from NAME".
    """
    text = strip_bom(text)
    lines = _physical_lines(text)
    import io

    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[tuple[int, list[str]]] = []
    blank = 0
    spanning: list[tuple[int, int]] = []
    while True:
        first = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            msg = str(exc)
            if "unexpected end of data" in msg or "EOF" in msg:
                raise RecordError(
                    f"{name}:{first}: a quoted field opened on this line is never closed "
                    f"(it starts {_field_start(lines, first)!r}; it would swallow every following line); "
                    f"close the quote or double it (\"\") inside the field") from None
            last = reader.line_num
            span = f" (the row runs from line {first} to line {last}: a quote opened on line {first} " \
                   f"({_field_start(lines, first)!r}) closes only there)" if last > first else ""
            raise RecordError(f"{name}:{last}: malformed CSV: {msg}{span}; a field with quotes must be quoted "
                              f"as a whole, with inner quotes doubled (\"\")") from None
        last = reader.line_num
        if not row:
            blank += last - first + 1
            continue
        if last > first:
            spanning.append((first, last))
        rows.append((first, row))
    if not rows:
        raise RecordError(f"{name}: empty CSV file (no header)")
    header_line, header = rows[0]
    header = [h.strip() for h in header]
    missing = [c for c in required if c not in header]
    if missing:
        raise RecordError(f"{name}: CSV header must have {' and '.join(repr(c) for c in missing)} "
                          f"column{'s' if len(missing) > 1 else ''} (found {header})")
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise RecordError(f"{name}:{header_line}: CSV header repeats column(s) {dup}")
    out = []
    for ln, row in rows[1:]:
        if len(row) != len(header):
            more = "more" if len(row) > len(header) else "fewer"
            raise RecordError(f"{name}:{ln}: {len(row)} fields, {more} than the header's {len(header)} columns"
                              + (" (the row spans several lines: check its quotes)" if any(a == ln for a, _ in
                                                                                          spanning) else ""))
        out.append((ln, dict(zip(header, row))))
    extra_lines = sum(b - a for a, b in spanning)
    expected = len(lines) - blank - extra_lines - 1  # every physical line is a header/record line, a continuation or blank
    if expected != len(out):  # the csv module and the line count disagree: never go on silently
        raise RecordError(f"{name}: read {len(out)} records, but its {len(lines)} lines imply {expected}")
    log.info("%d record%s read from %s%s", len(out), "" if len(out) == 1 else "s", name,
             f" ({len(spanning)} with fields over several lines)" if spanning else "")
    return header, out


def jsonl_objects(text: str, name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank line of a JSON-lines text; a line that is not valid JSON or not an
    object raises :class:`RecordError` naming ``name:line``."""
    for ln, line in enumerate(strip_bom(text).split("\n"), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RecordError(f"{name}:{ln}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(d, dict):
            raise RecordError(f"{name}:{ln}: expected a JSON object, found {type(d).__name__}")
        yield ln, d


def _jsonl_records(text: str, name: str, stem: str) -> list[Record]:
    out = []
    for ln, line in enumerate(strip_bom(text).split("\n"), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RecordError(f"{name}:{ln}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        out.append(record_from_dict(d, _where(name, ln, d.get("id") if isinstance(d, dict) else None),
                                    default_id=f"{stem}-{ln}"))
    return out


def _json_records(text: str, name: str, stem: str) -> list[Record]:
    try:
        data = json.loads(strip_bom(text))
    except json.JSONDecodeError as exc:
        raise RecordError(f"{name}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, list):
        raise RecordError(f"{name}: a .json file must hold a list of records (use .jsonl for one per line)")
    return [record_from_dict(d, _where(name, None, d.get("id") if isinstance(d, dict) else None) +
                             f" record {i + 1}", default_id=f"{stem}-{i + 1}") for i, d in enumerate(data)]


def _csv_records(text: str, name: str, stem: str) -> list[Record]:
    _, rows = read_csv_rows(text, name, required=("output",))
    out = []
    for ln, row in rows:
        where = _where(name, ln, row.get("id") or None)
        d: dict[str, Any] = {}
        for k, v in row.items():
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
        out.append(record_from_dict(d, where, default_id=f"{stem}-{ln}"))
    return out


def _txt_records(text: str, name: str, stem: str) -> list[Record]:
    lines = strip_bom(text).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [Record(id=f"{stem}-{i}", output=line[:-1] if line.endswith("\r") else line)
            for i, line in enumerate(lines, 1)]


_READERS = {"jsonl": _jsonl_records, "json": _json_records, "csv": _csv_records, "txt": _txt_records}


def parse_records(text: str, fmt: str, name: str, stem: str | None = None) -> list[Record]:
    """Records from the text of a file in ``fmt`` (jsonl / json / csv / txt); ``name`` is used in messages,
    ``stem`` in generated ids (``<stem>-<line>``). Ids must be unique."""
    if fmt not in _READERS:
        raise RecordError(f"{name}: unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    stem = stem if stem is not None else Path(name).stem
    recs = _READERS[fmt](text, name, stem)
    _check_unique(recs, name)
    if fmt != "csv":
        log.info("%d record%s read from %s", len(recs), "" if len(recs) == 1 else "s", name)
    return recs


def read_records(stream: Any, fmt: str, name: str) -> list[Record]:
    """Records from an open text stream (standard input, a pipe) in ``fmt``; see :func:`parse_records`."""
    try:
        text = stream.read()
    except UnicodeDecodeError as exc:
        raise RecordError(f"{name}: not valid UTF-8 (byte {exc.object[exc.start:exc.end]!r}); re-encode it as "
                          "UTF-8") from None
    if isinstance(text, bytes):
        text = _decode(text, name)
    return parse_records(text, fmt, name, stem="stdin" if name == "<stdin>" else None)


def _decode(raw: bytes, name: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        ln = raw[:exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise RecordError(f"{name}:{ln}: not valid UTF-8 (byte {raw[exc.start:exc.end]!r} at column {col}); "
                          f"re-encode the file as UTF-8, e.g. iconv -f latin1 -t utf-8") from None


def read_text(path: str | Path) -> str:
    """A UTF-8 file's text (a leading byte-order mark dropped); one line naming file:line:column if it is not
    UTF-8, ``FileNotFoundError`` if it does not exist."""
    p = Path(path)
    if not p.exists() or p.is_dir():  # a named pipe or /dev/fd/N (process substitution) is read too
        raise FileNotFoundError(f"{p}: no such file")
    return strip_bom(_decode(p.read_bytes(), str(p)))


def load_records(path: str | Path, fmt: str | None = None) -> list[Record]:
    """Read records from ``.jsonl`` / ``.json`` (a list) / ``.csv`` / ``.txt`` (or the format ``fmt``); validate
    every field. A leading UTF-8 byte-order mark is dropped.

    Files must be UTF-8: a file that is not raises :class:`RecordError` naming the first bad line and column.
    """
    p = Path(path)
    if fmt is None:
        suf = p.suffix.lower()
        if suf not in _SUFFIX_FORMAT:
            raise ValueError(f"{p}: unknown format {suf!r}; use .jsonl, .json, .csv or .txt")
        fmt = _SUFFIX_FORMAT[suf]
    return parse_records(read_text(p), fmt, str(p), stem=p.stem)


def save_records(records: Iterable[Record], path: str | Path) -> Path:
    """Write records as strict JSONL (NaN ratings and metrics, also in passed-through fields, become null)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in records:
            f.write(dumps(r.to_dict()) + "\n")
    tmp.replace(p)
    return p
