"""Meaning representations: one parser for dialogue acts, E2E attribute lists, JSON and RDF triples.

Shared by every part that reads an MR (RatPred's linearisation and synthetic errors, the EMNLP17 reference
matching in :mod:`qe.data.references`, the WebNLG converter in :mod:`qe.data.webnlg`), so no model family imports
another for it.

Every format maps to one internal representation, a list of dialogue acts ``[(act, [(slot, value), ...]), ...]``
(raw slot names and values; :func:`qe.ratpred.mr.parse` normalises them):

* ``da``   - dialogue acts as in EMNLP17 / SF / BAGEL: ``inform(name='x',food=chinese)``, ``?request(area)``,
  ``reqmore()``; several acts joined by ``&`` or ``|`` (TGen's notation) or written one after another:
  ``inform(name=x)&confirm(area=y)``. Each act is parsed by :func:`parse_mr` (the parser
  EMNLP17 has always used, so EMNLP17 MRs parse exactly as before).
* ``e2e``  - E2E attribute MRs: ``name[Blue Spice], eatType[coffee shop], customer rating[5 out of 5]``; one act
  ``inform`` holding every attribute in order.
* ``json`` - a JSON object ``{"name": "Blue Spice", "near": ["x", "y"]}`` (a list value gives the slot once per
  item, ``null`` a slot without value) or a list of pairs ``[["name", "Blue Spice"], ["food", "thai"]]``; one act
  ``inform``. An object may name the act: ``{"act": "request", "area": null}``.
* ``triples`` - RDF triples (WebNLG): JSON ``[["Alan_Bean", "birthPlace", "Wheeler,_Texas"], ...]`` or WebNLG's
  ``subject | property | object`` notation, one triple per line or several separated by ``;`` (read by
  :func:`parse_triples`, which says where ``;`` splits and where it stays in a value). Each triple
  becomes one act :data:`TRIPLE_ACT` with the slots ``subject``, ``property`` and ``object`` in that order (values as
  written: underscores, quotes); :mod:`qe.ratpred.mr` linearises and delexicalises these acts their own way
  (entities numbered ``X-e1``, ``X-e2``, ... across the triples, so a shared entity keeps one placeholder).

:func:`parse_acts` detects the format of each MR (``mr_format="auto"``: a JSON list of 3-item lists is triples, any
other JSON is ``json``; dialogue acts when it starts with ``act(``; triples when it holds ``|`` and does not start
like a dialogue act; E2E when it starts with ``slot[``) or takes the one it is told; when the detected format fails
the others are tried. Errors are :class:`~qe.errors.RecordError` naming ``where`` (file:line, record id,
``mrs[i]``), the formats tried and the offending part of the MR.
"""
from __future__ import annotations

import json
import re

from qe.errors import RecordError

MR_FORMATS = ("auto", "da", "e2e", "json", "triples")
#: what each format looks like, for error messages
FORMAT_SHAPES = {"da": "act(slot=value,...)", "e2e": "slot[value], slot[value]",
                 "json": '{"slot": "value"} or [["slot", "value"], ...]',
                 "triples": '[["subject", "property", "object"], ...] or subject | property | object lines'}
E2E_ACT = "inform"
#: the act of one RDF triple (no dialogue-act notation can produce this name), its slots in order
TRIPLE_ACT = "<triple>"
TRIPLE_SLOTS = ("subject", "property", "object")

Acts = list[tuple[str, list[tuple[str, "str | None"]]]]

_DA_START = re.compile(r"^\s*\??\s*[A-Za-z_][A-Za-z_0-9]*\s*\(")
_E2E_START = re.compile(r"^\s*[^\[\](){}=,;\"']+\[")
# one act boundary: ")" then optional & / | then the next "act(" (EMNLP17 MRs hold one act and never this)
_DA_SPLIT = re.compile(r"\)\s*[&|+]?\s*(?=\??\s*[A-Za-z_][A-Za-z_0-9]*\s*\()")
_E2E_ITEM = re.compile(r"\s*([^\[\],]+?)\s*\[([^\[\]]*)\]\s*(,|$)")


# ------------------------------------------------------------------------------------------- dialogue acts
_MR_RE = re.compile(r"^\s*\??\s*([A-Za-z_]+)\s*\((.*)\)\s*$", re.S)
#: a ``,``-separated item inside a value read with ``;`` as the separator (a mixed notation)
_MIXED = re.compile(r",\s*[A-Za-z_][A-Za-z_0-9]*\s*=")


def parse_mr(mr: str, where: str = "<mr>") -> tuple[str, list[tuple[str, str | None]]]:
    """Parse ``act(slot=value, slot='value'; slot)`` (``,`` or ``;`` separated, quotes optional).

    An act whose arguments hold a ``;`` is read as ``;``-separated (SF / RNNLG notation): a ``,`` there belongs to the
    value (``design=black finish , silver keyboard;price=499 euros``); without one, ``,`` separates, as before. A
    ``;``-separated reading that fails (a ``;`` inside a quoted value of a ``,``-separated act:
    ``name='a;b',food=thai``) falls back to the ``,`` rule. Returns ``(act, [(slot, value or None), ...])`` with
    quotes removed; raises RecordError naming ``where``. Hand-written (a 30-line scanner) because the DA notations
    here are ad-hoc and no field library parses them.
    """
    if not isinstance(mr, str):
        raise RecordError(f"{where}: MR must be a string, got {type(mr).__name__}")
    m = _MR_RE.match(mr)
    if not m:
        raise RecordError(f"{where}: cannot parse MR {mr!r} (expected 'act(slot=value,...)')")
    act, body = m.group(1).lower(), m.group(2)
    if ";" in body:
        try:
            return act, _scan_slots(body, ";", mr, where)
        except RecordError:
            pass  # a ';' inside a quoted value of a ','-separated act: the ',' rule below reads it
    return act, _scan_slots(body, ",;", mr, where)


def _scan_slots(body: str, seps: str, mr: str, where: str) -> list[tuple[str, str | None]]:
    """The ``slot=value`` items of an act's arguments, split at any character of ``seps`` outside quoted values."""
    slots: list[tuple[str, str | None]] = []
    skip = " " + seps
    i, n = 0, len(body)
    while i < n:
        while i < n and body[i] in skip:
            i += 1
        if i >= n:
            break
        j = i
        while j < n and body[j] != "=" and body[j] not in seps:
            j += 1
        name = body[i:j].strip()
        if not name or not re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", name):
            raise RecordError(f"{where}: bad slot name {name!r} in MR {mr!r}")
        value: str | None = None
        if j < n and body[j] == "=":
            j += 1
            while j < n and body[j] == " ":
                j += 1
            if j < n and body[j] in "'\"":
                q = body[j]
                k = body.find(q, j + 1)
                if k < 0:
                    raise RecordError(f"{where}: unterminated quote in MR {mr!r}")
                value = body[j + 1:k]
                j = k + 1
            else:
                k = j
                while k < n and body[k] not in seps:
                    k += 1
                # stray quotes occur in the source data (``goodformeal=dinner')``): strip them
                value = body[j:k].strip().strip("'\"")
                if seps == ";" and _MIXED.search(value):  # "x, b=y; c=z": ',' separates here too
                    raise RecordError(f"{where}: slot {name!r}: value {value!r} holds ', slot=' in MR {mr!r}")
                j = k
        slots.append((name, value))
        i = j
    return slots


# ------------------------------------------------------------------------------------------- RDF triples
Triple = tuple[str, str, str]
_SHAPE = "[[subject, property, object], ...] (JSON) or 'subject | property | object' lines (or ';'-separated)"


def _snippet(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit - 3] + "...")


def _pipe_triple(piece: str) -> Triple | None:
    parts = [p.strip() for p in piece.split("|")]
    if len(parts) != 3 or not all(parts):
        return None
    return parts[0], parts[1], parts[2]


def parse_triples(text: str, where: str = "<mr>") -> list[Triple]:
    """RDF triples from an MR string: JSON ``[["s", "p", "o"], ...]`` or WebNLG's ``s | p | o`` notation, one triple
    per line or several separated by ``;``.

    JSON is recognised by a leading ``[``; every item must be a list of three non-empty strings. In the ``|``
    notation a ``;`` separates triples only where every piece it makes is a triple, so ``a | b | x; y`` is one
    triple with the object ``x; y``; a value holding ``|`` needs the JSON form. Whitespace around each part is
    stripped; values are kept as written (underscores, quotes, ``@en`` tags). Errors are :class:`RecordError`, one
    line naming ``where`` (file:line, record id and field), the triple and what was expected.
    """
    if not isinstance(text, str):
        raise RecordError(f"{where}: triples must be a string, got {type(text).__name__}")
    s = text.strip()
    if not s:
        raise RecordError(f"{where}: no triples (empty MR); expected {_SHAPE}")
    if s.startswith("["):
        try:
            data = json.loads(s)
        except json.JSONDecodeError as exc:
            raise RecordError(f"{where}: not valid JSON triples ({exc.msg} at column {exc.colno}); "
                              f"expected {_SHAPE}") from None
        if not isinstance(data, list) or not data:
            raise RecordError(f"{where}: expected a non-empty JSON list of triples [[subject, property, object], ...]")
        out: list[Triple] = []
        for k, t in enumerate(data, 1):
            if not (isinstance(t, list) and len(t) == 3):
                raise RecordError(f"{where}: triple {k} is {_snippet(json.dumps(t, ensure_ascii=False))}, "
                                  "expected [subject, property, object]")
            for part, v in zip(("subject", "property", "object"), t):
                if not isinstance(v, str) or not v.strip():
                    raise RecordError(f"{where}: triple {k}: {part} must be a non-empty string, got {v!r:.60}")
            out.append((t[0].strip(), t[1].strip(), t[2].strip()))
        return out
    out = []
    for line in s.splitlines():
        if not line.strip():
            continue
        pieces = [p for p in line.split(";") if p.strip()]
        parsed = [_pipe_triple(p) for p in pieces]
        if len(pieces) > 1 and all(parsed):
            out.extend(parsed)  # type: ignore[arg-type]
            continue
        whole = _pipe_triple(line)
        if whole is None:
            bad = next((p for p, t in zip(pieces, parsed) if t is None), line) if len(pieces) > 1 else line
            raise RecordError(f"{where}: triple {len(out) + 1}: expected 'subject | property | object' "
                              f"(three non-empty parts), found {_snippet(bad.strip())}")
        out.append(whole)
    return out


class MRFormatError(ValueError):
    """One format's reason for rejecting an MR (collected by :func:`parse_acts` into a RecordError)."""


def _quote(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _json_triple_list(s: str) -> bool:
    """A JSON list whose first item is a list of three items (what else parses is up to :func:`parse_triples`)."""
    try:
        data = json.loads(s)
    except json.JSONDecodeError:
        return bool(re.match(r"\[\s*\[\s*\"(?:[^\"\\]|\\.)*\"\s*,\s*\"(?:[^\"\\]|\\.)*\"\s*,", s))
    return isinstance(data, list) and bool(data) and isinstance(data[0], list) and len(data[0]) == 3


def detect(mr: str) -> str | None:
    """The format an MR looks like (``da``, ``e2e``, ``json``, ``triples``) or None."""
    s = mr.lstrip()
    if s[:1] == "[":
        return "triples" if _json_triple_list(s) else "json"
    if s[:1] == "{":
        return "json"
    if _DA_START.match(s):
        return "da"
    if "|" in s:
        return "triples"
    if _E2E_START.match(s):
        return "e2e"
    return None


# ------------------------------------------------------------------------------------------ the formats
def parse_da(mr: str) -> Acts:
    s = mr.strip()
    if not _DA_START.match(s):
        raise MRFormatError(f"expected an act name and '(' at the start, found {_quote(s[:30])}")
    if not s.endswith(")"):
        raise MRFormatError(f"missing ')' at the end, found {_quote(s[-30:])}")
    pieces = _DA_SPLIT.split(s)
    pieces = [p + ")" for p in pieces[:-1]] + [pieces[-1]]
    acts: Acts = []
    for p in pieces:
        try:
            acts.append(parse_mr(p, "<act>"))
        except RecordError as exc:  # "<act>: bad slot name 'x y' in MR '...'" -> the reason alone
            raise MRFormatError(str(exc).removeprefix("<act>: ")) from None
    return acts


def parse_e2e(mr: str) -> Acts:
    s = mr.strip()
    slots: list[tuple[str, str | None]] = []
    pos = 0
    while pos < len(s):
        m = _E2E_ITEM.match(s, pos)
        if not m or (m.group(3) == "," and m.end() >= len(s)):
            rest = s[pos:].lstrip(" ,")
            raise MRFormatError(f"expected 'slot[value]' at {_quote(rest or s[pos:])} (character {pos + 1})")
        slots.append((m.group(1), m.group(2).strip()))
        pos = m.end()
    if not slots:
        raise MRFormatError("no 'slot[value]' attributes")
    return [(E2E_ACT, slots)]


def _json_value(v, slot: str) -> list[str | None]:
    if v is None:
        return [None]
    if isinstance(v, bool):
        return ["yes" if v else "no"]
    if isinstance(v, (int, float)):
        return [str(v)]
    if isinstance(v, str):
        return [v]
    if isinstance(v, list) and all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in v):
        return [str(x) for x in v]
    raise MRFormatError(f"slot {slot!r}: value must be a string, number, boolean, null or list of strings, "
                        f"got {_quote(json.dumps(v, ensure_ascii=False))}")


def parse_json(mr: str) -> Acts:
    try:
        data = json.loads(mr)
    except json.JSONDecodeError as exc:
        raise MRFormatError(f"not valid JSON ({exc.msg} at character {exc.pos + 1}: "
                            f"{_quote(mr[max(0, exc.pos - 10):exc.pos + 20])})") from None
    act = E2E_ACT
    slots: list[tuple[str, str | None]] = []
    if isinstance(data, dict):
        items = list(data.items())
        if isinstance(data.get("act"), str):
            act = data["act"]
            items = [(k, v) for k, v in items if k != "act"]
        for k, v in items:
            if not str(k).strip():
                raise MRFormatError("empty slot name")
            slots.extend((str(k), x) for x in _json_value(v, str(k)))
    elif isinstance(data, list):
        for j, item in enumerate(data):
            if not (isinstance(item, list) and len(item) in (1, 2) and isinstance(item[0], str) and item[0].strip()):
                raise MRFormatError(f"item {j} must be a [slot, value] pair, got "
                                    f"{_quote(json.dumps(item, ensure_ascii=False))}")
            v = item[1] if len(item) == 2 else None
            vals = _json_value(v, item[0])
            if len(vals) != 1:
                raise MRFormatError(f"item {j}: one value per [slot, value] pair, got {_quote(json.dumps(v))}")
            slots.append((item[0], vals[0]))
    else:
        raise MRFormatError(f"expected a JSON object or a list of [slot, value] pairs, got {type(data).__name__}")
    for k, _ in slots:
        if not re.fullmatch(r"[^\s\[\](){}=,;][^\[\](){}=,;]*", k.strip()):
            raise MRFormatError(f"bad slot name {k!r}")
    return [(act, [(k.strip(), v) for k, v in slots])]


def parse_triples_acts(mr: str) -> Acts:
    """RDF triples (:func:`parse_triples`) -> one act :data:`TRIPLE_ACT` per triple."""
    try:
        triples = parse_triples(mr, "<triples>")
    except RecordError as exc:  # "<triples>: triple 2 is ..." -> the reason alone
        raise MRFormatError(str(exc).removeprefix("<triples>: ")) from None
    return [(TRIPLE_ACT, list(zip(TRIPLE_SLOTS, t))) for t in triples]


PARSERS = {"da": parse_da, "e2e": parse_e2e, "json": parse_json, "triples": parse_triples_acts}


def parse_acts(mr, mr_format: str = "auto", where: str = "<mr>") -> Acts:
    """Parse ``mr`` (a string in any of :data:`MR_FORMATS`) into ``[(act, [(slot, value or None), ...]), ...]``.

    ``mr_format="auto"`` detects the format (the other formats are tried when the detected one fails); raises
    :class:`RecordError` naming ``where``, the formats tried and the offending text."""
    if mr_format not in MR_FORMATS:
        raise ValueError(f"mr_format={mr_format!r}: choose one of {', '.join(MR_FORMATS)}")
    if not isinstance(mr, str):
        raise RecordError(f"{where}: MR must be a string, got {type(mr).__name__}")
    if not mr.strip():
        raise RecordError(f"{where}: MR is missing or empty")
    if mr_format == "auto":
        first = detect(mr)
        order = ([first] if first else []) + [f for f in PARSERS if f != first]
    else:
        order = [mr_format]
    reasons = []
    for fmt in order:
        try:
            return PARSERS[fmt](mr)
        except MRFormatError as exc:
            reasons.append(f"as {fmt} ({FORMAT_SHAPES[fmt]}): {exc}")
    tried = "tried " + ", ".join(order) if mr_format == "auto" else f"mr_format={mr_format}"
    raise RecordError(f"{where}: cannot parse MR {_quote(mr, 200)} ({tried}) - " + "; ".join(reasons))


__all__ = ["MR_FORMATS", "TRIPLE_ACT", "TRIPLE_SLOTS", "Acts", "Triple", "detect", "parse_acts", "parse_da", "parse_e2e",
           "parse_json", "parse_mr", "parse_triples", "parse_triples_acts"]
