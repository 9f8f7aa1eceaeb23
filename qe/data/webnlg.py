"""WebNLG+ 2020 (English RDF-to-text): the challenge's human evaluation and the training / dev data.

Files (``qe/resources/datasets/webnlg2020.yaml`` gives sources, checksums and the licence, CC BY-NC-SA 4.0; they
live in ``<data_dir>/webnlg2020``):

* ``human_en.jsonl`` - one record per rated (system, test input) pair: 3,025 records, 16 systems and the human
  reference, 178 test inputs; five criteria rated 0-100 by 1-3 crowd workers each.
* ``train.tar.xz`` / ``dev.tar.xz`` - the original WebNLG XML (``train/<n>triples/<Category>.xml``), read from the
  archive in place (nothing is extracted): 13,211 / 1,667 entries, 35,426 / 4,464 references (``<lex>``).

**Rated records** (:func:`webnlg2020`, ``load_dataset("webnlg2020")``, ``dataset=webnlg2020``):

* ``mr``: the input triples as JSON text ``[["s", "p", "o"], ...]`` (the *modified* triples the systems were
  given, underscores kept), readable by :func:`parse_triples`;
* ``ratings``: the five criteria (``correctness``, ``data_coverage``, ``fluency``, ``relevance``,
  ``text_structure``; the mean over the record's annotators of raw 0-100 slider ratings) and every single judgement
  as ``<criterion>@<worker>`` (e.g. ``fluency@en_worker_24``), which the evaluation reads as per-annotator ratings
  (Krippendorff's alpha, the agreement ceiling). Each mean is checked against its judgements on reading.
* extra fields: ``ratings_z`` (the organisers' per-worker z-scores, averaged), ``category``, ``size``, ``domain``,
  ``sample_id`` (the test input: the item key, so per-item analyses compare the 16/17 outputs for one input),
  ``test_eid``, ``n_annotators``, ``output_source``, ``annotator_feedback`` (worker -> free-text comment, where
  one was given) and, for the reference records, the source's ``note``. The source field ``annotator_ratings`` is
  not kept as such: its numbers are the ``@`` ratings, its comments ``annotator_feedback``.

The **reference "system"** ``WebNLG-2020-reference`` (178 records) was rated, but which of the references the
annotators saw is not public, so it has no text. It is left out by default: a metric must never score it. With
``include_reference=True`` its records come back with ``output = ""`` (the record format needs a string; no
reference is picked in its place, which would invent a text nobody rated). Use that only for tables that read
human ratings alone - the README's "``output`` may be empty for a per-system table, then no scorer and no
confound": the evaluation scores every record's ``output``, so running a scorer on these records would score empty
strings. Note that one genuine system output is empty too (``Baseline-FORGE2017``, sample 533, rated 0): it stays,
as the system produced it.

**Training / dev data** (never the ratings): :func:`webnlg_entries` (parsed XML entries), :func:`webnlg_texts`
(every reference text: the LM corpus sources ``{name: webnlg, split: train|dev}``, alias ``webnlg-train`` /
``webnlg-dev``), :func:`webnlg_references` (MR -> references, like :func:`qe.data.e2e.e2e_references`) and
:func:`webnlg` (``load_dataset("webnlg", split=...)``: one record per reference, ``system = "human"``, ``refs`` =
every reference of its triple set, as :func:`qe.data.e2e.e2e`; what RatPred's ``protocol.target_data`` reads for
the ``target_refs`` synthetic source). Parsing the training archive takes about a second, so nothing is cached
on disk; parsed entries are kept in memory per archive (path, size and modification time).

The WebNLG ratings are an **evaluation set**: report on them, never train, select or tune on them. Nothing in
this module but :func:`webnlg2020` reads ``human_en.jsonl``.
"""
from __future__ import annotations

import functools
import json
import math
import re
import tarfile
import xml.etree.ElementTree as ET
import xml.parsers.expat
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qe.core.mr import Triple, _pipe_triple, _snippet, parse_triples  # noqa: F401  (re-exported)
from qe.data.record import Record, _check_unique, jsonl_objects, read_text, record_from_dict
from qe.errors import RecordError
from qe.core.paths import require, resolve_data_dir

DIR = "webnlg2020"
HUMAN_FILE = f"{DIR}/human_en.jsonl"
SPLIT_FILES = {"train": f"{DIR}/train.tar.xz", "dev": f"{DIR}/dev.tar.xz"}
CRITERIA = ("correctness", "data_coverage", "fluency", "relevance", "text_structure")
REFERENCE_SYSTEM = "WebNLG-2020-reference"
DATASET = "WebNLG2020"


def triples_mr(triples) -> str:
    """The MR string of a triple list: JSON ``[["s", "p", "o"], ...]`` (non-ASCII kept), as the records hold it."""
    return json.dumps([list(t) for t in triples], ensure_ascii=False)


# ------------------------------------------------------------------------------------------ rated records
def _human_path(data_dir=None) -> Path:
    return require(resolve_data_dir(data_dir) / HUMAN_FILE, f"WebNLG 2020 human evaluation ({HUMAN_FILE})")


def _number(v: Any, where: str, fld: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(float(v)):
        raise RecordError(f"{where}: field {fld!r} must be a number, got {v!r:.60}")
    return float(v)


def _convert(d: dict, where: str, include_reference: bool) -> dict | None:
    """One line of human_en.jsonl -> a record dict (None for a reference record left out)."""
    for fld in ("system", "mr", "ratings", "annotator_ratings", "sample_id", "category", "size"):
        if d.get(fld) in (None, "", [], {}):
            raise RecordError(f"{where}: field {fld!r} is missing or empty")
    system = d["system"]
    if system == REFERENCE_SYSTEM:
        if not include_reference:
            return None
        if d.get("output") not in (None, ""):
            raise RecordError(f"{where}: field 'output': the {REFERENCE_SYSTEM} records have no text in this file, "
                              f"found {d['output']!r:.60}")
        output = ""
    else:
        output = d.get("output")
        if not isinstance(output, str):
            raise RecordError(f"{where}: field 'output' must be a string (the system text), got "
                              f"{type(output).__name__}")
    raw_mr = d["mr"]
    if not isinstance(raw_mr, (list, str)):
        raise RecordError(f"{where}: field 'mr' must be a list of triples, got {type(raw_mr).__name__}")
    mr_text = raw_mr if isinstance(raw_mr, str) else json.dumps(raw_mr, ensure_ascii=False)
    triples = parse_triples(mr_text, f"{where}: field 'mr'")
    if isinstance(d["size"], bool) or not isinstance(d["size"], int) or d["size"] != len(triples):
        raise RecordError(f"{where}: field 'size' is {d['size']!r} but 'mr' holds {len(triples)} triples")
    if isinstance(d["sample_id"], bool) or not isinstance(d["sample_id"], int):
        raise RecordError(f"{where}: field 'sample_id' must be an integer, got {d['sample_id']!r:.60}")
    means = d["ratings"]
    if not isinstance(means, dict):
        raise RecordError(f"{where}: field 'ratings' must be an object, got {type(means).__name__}")
    ratings: dict[str, float] = {}
    for c in CRITERIA:
        if c not in means:
            raise RecordError(f"{where}: field 'ratings.{c}' is missing")
        ratings[c] = _number(means[c], where, f"ratings.{c}")
    anns = d["annotator_ratings"]
    if not isinstance(anns, list):
        raise RecordError(f"{where}: field 'annotator_ratings' must be a list, got {type(anns).__name__}")
    feedback: dict[str, str] = {}
    per: dict[str, list[float]] = {c: [] for c in CRITERIA}
    for j, a in enumerate(anns):
        fj = f"annotator_ratings[{j}]"
        if not isinstance(a, dict):
            raise RecordError(f"{where}: field {fj!r} must be an object, got {type(a).__name__}")
        w = a.get("worker")
        if not isinstance(w, str) or not w.strip() or "@" in w:
            raise RecordError(f"{where}: field '{fj}.worker' must be a non-empty name without '@', got {w!r:.60}")
        if f"{CRITERIA[0]}@{w}" in ratings:
            raise RecordError(f"{where}: field '{fj}.worker': worker {w!r} rates this record twice")
        for c in CRITERIA:
            if c not in a:
                raise RecordError(f"{where}: field '{fj}.{c}' is missing")
            v = _number(a[c], where, f"{fj}.{c}")
            ratings[f"{c}@{w}"] = v
            per[c].append(v)
        if a.get("feedback"):
            feedback[w] = str(a["feedback"])
    if d.get("n_annotators") is not None and d["n_annotators"] != len(anns):
        raise RecordError(f"{where}: field 'n_annotators' is {d['n_annotators']!r} but 'annotator_ratings' holds "
                          f"{len(anns)} judgements")
    for c in CRITERIA:
        m = sum(per[c]) / len(per[c])
        if abs(m - ratings[c]) > 1e-6 * max(1.0, abs(m)):
            raise RecordError(f"{where}: field 'ratings.{c}' is {ratings[c]!r} but its annotators' mean is {m!r}")
    out = {"id": d.get("id"), "system": system, "dataset": d.get("dataset") or DATASET, "mr": triples_mr(triples),
           "refs": d.get("refs") or [], "output": output, "ratings": ratings}
    skip = {"id", "system", "dataset", "mr", "refs", "output", "ratings", "metrics", "source", "annotator_ratings"}
    out.update({k: v for k, v in d.items() if k not in skip})
    if feedback:
        out["annotator_feedback"] = feedback
    return out


def webnlg2020(data_dir=None, include_reference: bool = False) -> list[Record]:
    """The WebNLG+ 2020 English human evaluation as rated records (see the module docstring): 2,847 system outputs
    of 16 systems, or 3,025 records with ``include_reference=True`` (the reference's 178 with ``output = ""``: for
    human-only tables, never for a scorer). Every line is validated; errors name ``file:line``, id and field."""
    path = _human_path(data_dir)
    out: list[Record] = []
    for ln, d in jsonl_objects(read_text(path), str(path)):
        where = f"{path}:{ln}" + (f" (id={d['id']!r})" if d.get("id") is not None else "")
        rec = _convert(d, where, bool(include_reference))
        if rec is not None:
            out.append(record_from_dict(rec, where))
    if not out:
        raise RecordError(f"{path}: no records")
    _check_unique(out, str(path))
    return out


# ------------------------------------------------------------------------------------------ WebNLG XML
@dataclass(frozen=True)
class Lex:
    """One reference text (``<lex>``)."""

    lid: str
    text: str
    comment: str  # the corpus' quality flag: "good" (nearly all), "toFix", "bad"


@dataclass(frozen=True)
class WebNLGEntry:
    """One WebNLG entry: a triple set with its references."""

    split: str
    member: str  # file inside the archive, e.g. "train/2triples/Airport.xml"
    line: int  # line of the <entry> element in that file
    eid: str
    category: str
    size: int
    shape: str | None
    shape_type: str | None
    triples: tuple[Triple, ...]  # the modified triples (what systems are given)
    original_triples: tuple[tuple[Triple, ...], ...]  # every original (DBpedia) triple set
    lexes: tuple[Lex, ...]

    @property
    def mr(self) -> str:
        """The triples as the records' MR string (:func:`triples_mr`)."""
        return triples_mr(self.triples)

    @property
    def refs(self) -> list[str]:
        return [x.text for x in self.lexes]

    @property
    def source(self) -> str:
        """Where the entry is: ``webnlg2020/<split>.tar.xz/<member>#<eid>``."""
        return f"{SPLIT_FILES[self.split]}/{self.member}#{self.eid}"


def _archive(split: str, data_dir=None) -> Path:
    if split not in SPLIT_FILES:
        raise ValueError(f"webnlg: split={split!r}; use train or dev (the test references travel with the rated "
                         f"records in {HUMAN_FILE} and are for evaluation only)")
    return require(resolve_data_dir(data_dir) / SPLIT_FILES[split], f"WebNLG 2020 {split} ({SPLIT_FILES[split]})")


def _parse_xml(raw: bytes, name: str) -> tuple[ET.Element, dict[ET.Element, int]]:
    """An ElementTree built from expat events, with the line where each element starts (for error messages)."""
    builder = ET.TreeBuilder()
    lines: dict[ET.Element, int] = {}
    p = xml.parsers.expat.ParserCreate()
    p.buffer_text = True

    def start(tag, attrs):
        lines[builder.start(tag, attrs)] = p.CurrentLineNumber

    p.StartElementHandler = start
    p.EndElementHandler = builder.end
    p.CharacterDataHandler = builder.data
    try:
        p.Parse(raw, True)
    except xml.parsers.expat.ExpatError as exc:
        raise RecordError(f"{name}:{exc.lineno}: not well-formed XML ({xml.parsers.expat.ErrorString(exc.code)} "
                          f"at column {exc.offset + 1})") from None
    return builder.close(), lines


def _xml_triple(el: ET.Element, where: str) -> Triple:
    """One ``<mtriple>`` / ``<otriple>``: exactly one ``subject | property | object``."""
    t = _pipe_triple(el.text or "")
    if t is None:
        raise RecordError(f"{where}: field {el.tag!r}: expected 'subject | property | object' (three non-empty "
                          f"parts), found {_snippet((el.text or '').strip())}")
    return t


_ENTRY_TAG = re.compile(rb"<entry[\s>/]")


def _entries_of_file(raw: bytes, split: str, member: str, name: str) -> list[WebNLGEntry]:
    """The entries of one XML file. Parsed with ElementTree's C parser; a file with a problem is parsed again with
    :func:`_parse_xml` so that the error names the line of the offending element."""
    try:
        root = ET.fromstring(raw)
    except ET.ParseError:
        _parse_xml(raw, name)  # raises the error with its line and column
        raise  # pragma: no cover - expat and ElementTree agree on well-formedness
    # the line of each <entry> start tag, in document order (its text cannot hold "<entry": markup is escaped)
    starts, line, pos = [], 1, 0
    for m in _ENTRY_TAG.finditer(raw):
        line += raw.count(b"\n", pos, m.start())
        pos = m.start()
        starts.append(line)
    try:
        return _entries(root, {}, starts, split, member, name)
    except RecordError:
        root, lines = _parse_xml(raw, name)
        return _entries(root, lines, starts, split, member, name)


def _entries(root: ET.Element, lines: dict[ET.Element, int], starts: list[int], split: str, member: str,
             name: str) -> list[WebNLGEntry]:
    out = []
    seen: dict[str, int] = {}
    for k, e in enumerate(root.iter("entry")):
        ln = lines.get(e) or (starts[k] if k < len(starts) else 0)
        eid = e.get("eid")
        where = f"{name}:{ln}" + (f" (entry eid={eid!r})" if eid else "")
        for attr in ("eid", "category", "size"):
            if not (e.get(attr) or "").strip():
                raise RecordError(f"{where}: field {attr!r} (an <entry> attribute) is missing or empty")
        if eid in seen:
            raise RecordError(f"{where}: field 'eid': {eid!r} repeats the entry on line {seen[eid]}")
        seen[eid] = ln
        try:
            size = int(e.get("size"))
        except ValueError:
            raise RecordError(f"{where}: field 'size' must be an integer, got {e.get('size')!r:.60}") from None
        msets = e.findall("modifiedtripleset")
        if len(msets) != 1:
            raise RecordError(f"{where}: field 'modifiedtripleset': expected one, found {len(msets)}")
        triples = [_xml_triple(t, f"{name}:{lines.get(t, ln)} (entry eid={eid!r})")
                   for t in msets[0].findall("mtriple")]
        if len(triples) != size:
            raise RecordError(f"{where}: field 'size' is {size} but the entry has {len(triples)} modified triples")
        originals = []
        for ots in e.findall("originaltripleset"):
            originals.append(tuple(_xml_triple(t, f"{name}:{lines.get(t, ln)} (entry eid={eid!r})")
                                   for t in ots.findall("otriple")))
        lexes = []
        for x in e.findall("lex"):
            text = " ".join((x.text or "").split())
            if not text:
                raise RecordError(f"{name}:{lines.get(x, ln)} (entry eid={eid!r}): field 'lex' "
                                  f"(lid={x.get('lid')!r}) is empty")
            lexes.append(Lex(x.get("lid") or f"#{len(lexes) + 1}", text, x.get("comment") or ""))
        if not lexes:
            raise RecordError(f"{where}: field 'lex': the entry has no reference text")
        out.append(WebNLGEntry(split, member, ln, eid, e.get("category"), size, e.get("shape"), e.get("shape_type"),
                               tuple(triples), tuple(originals), tuple(lexes)))
    return out


@functools.lru_cache(maxsize=4)
def _read_archive(path: str, split: str, _size: int, _mtime: float) -> tuple[WebNLGEntry, ...]:
    out: list[WebNLGEntry] = []
    try:
        tf = tarfile.open(path, "r|*")
    except (tarfile.TarError, OSError) as exc:
        raise RecordError(f"{path}: cannot open the archive ({exc})") from None
    files: dict[str, bytes] = {}
    with tf:  # read in archive order (seeking backwards in an .xz stream decompresses it again from the start)
        try:
            for m in tf:
                if m.isfile() and m.name.endswith(".xml"):
                    f = tf.extractfile(m)
                    if f is None:
                        raise RecordError(f"{path}/{m.name}: cannot read the archive member")
                    files[m.name] = f.read()
        except (tarfile.TarError, EOFError, OSError) as exc:  # a truncated or corrupt archive
            raise RecordError(f"{path}: cannot read the archive ({exc})") from None
    if not files:
        raise RecordError(f"{path}: no .xml files in the archive")
    for name in sorted(files):
        out.extend(_entries_of_file(files[name], split, name, f"{path}/{name}"))
    if not out:
        raise RecordError(f"{path}: no <entry> elements in its XML files")
    return tuple(out)


def webnlg_entries(split: str = "train", data_dir=None) -> list[WebNLGEntry]:
    """Every entry of a split (``train`` or ``dev``), in the order of the archive's files (sorted by name) and of
    the entries in each file. Read from the ``.tar.xz`` in place; parsed once per archive and process."""
    path = _archive(split, data_dir)
    st = path.stat()
    return list(_read_archive(str(path), split, st.st_size, st.st_mtime))


def webnlg_texts(split: str = "train", data_dir=None) -> list[str]:
    """Every reference text of a split, one per ``<lex>`` (an LM corpus; whitespace squeezed)."""
    return [x.text for e in webnlg_entries(split, data_dir) for x in e.lexes]


def webnlg_references(split: str = "train", data_dir=None) -> dict[str, list[str]]:
    """MR string (:func:`triples_mr` of the modified triples, order kept) -> its references, in file order; entries
    with the same triples (59 in train, 2 in dev) pool their references, a text repeated among them is kept once."""
    refs: OrderedDict[str, list[str]] = OrderedDict()
    for e in webnlg_entries(split, data_dir):
        have = refs.setdefault(e.mr, [])
        have.extend(t for t in e.refs if t not in have)
    return dict(refs)


def webnlg(data_dir=None, split: str = "train") -> list[Record]:
    """One record per reference text (``<lex>``) of a split: ``output`` = that text, ``refs`` = every reference of
    its triple set (:func:`webnlg_references`), ``mr`` = the triples (JSON), ``system`` = ``human``, dataset
    ``WebNLG``; extra fields ``category``, ``size``, ``eid``, ``lid``, ``comment``, ``mr_group`` (index of the
    triple set in order of appearance) and ``ref_sources`` (where each of ``refs`` comes from). Ids
    ``webnlg-<split>-<n>``. No ratings: for references (RatPred ``protocol.target_data``) and corpora only."""
    entries = webnlg_entries(split, data_dir)
    by_mr: OrderedDict[str, list[tuple[str, str]]] = OrderedDict()
    for e in entries:
        have = by_mr.setdefault(e.mr, [])
        for x in e.lexes:
            if all(x.text != t for t, _ in have):
                have.append((x.text, f"{e.source}/{x.lid}"))
    group = {mr: i for i, mr in enumerate(by_mr)}
    out = []
    n = 0
    for e in entries:
        pairs = by_mr[e.mr]
        for x in e.lexes:
            n += 1
            d = {"id": f"webnlg-{split}-{n:05d}", "system": "human", "dataset": "WebNLG", "mr": e.mr,
                 "output": x.text, "refs": [t for t, _ in pairs], "ref_sources": [s for _, s in pairs],
                 "category": e.category, "size": e.size, "eid": e.eid, "lid": x.lid, "comment": x.comment,
                 "mr_group": group[e.mr]}
            out.append(record_from_dict(d, f"{SPLIT_FILES[split]}/{e.member}:{e.line}"))
    _check_unique(out, SPLIT_FILES[split])
    return out


__all__ = ["CRITERIA", "REFERENCE_SYSTEM", "Lex", "WebNLGEntry", "parse_triples", "triples_mr", "webnlg",
           "webnlg2020", "webnlg_entries", "webnlg_references", "webnlg_texts"]
