"""Human references for the EMNLP17 rated outputs, from the source NLG datasets (SF Hotel / SF Restaurant, BAGEL).

The EMNLP17 ratings file (``emnlp17/emnlp_data_medians.csv``) carries no references. The rated outputs are
system outputs for MRs of the *test* parts of SF Hotel / SF Restaurant (Wen et al. 2015, ``sfx/``) and of
BAGEL (Mairesse et al. 2010, ``bagel/``). This module parses the source files into
:class:`RefInstance` rows (MR, human reference, where it came from) and attaches to every EMNLP17 record all
human references whose MR matches the record's MR after normalisation:

``load_dataset("emnlp17_refs")`` (or :func:`attach_references`; options ``splits``, ``mode``) returns the ``emnlp17`` records with
``refs`` filled and two extra fields: ``ref_sources`` (parallel to ``refs``: ``"sfx/hotel/test.json#17"``,
``"bagel/ACL10-inform-training.txt#5"``) and ``ref_match`` (``"exact"``, ``"normalised"`` or ``"none"``).
The ``emnlp17`` dataset itself is unchanged.

MR normalisation (:func:`mr_key`), measured rules that make the two notations meet:

* the SF files write ``?confirm(...)`` / ``?request`` / ``?select`` / ``?reqmore`` and separate slots with ``;``;
  EMNLP17 drops the ``?`` and uses ``,``;
* slot names: EMNLP17 ``price_range``, ``has_internet``, ``good_for_meal`` ... vs SF ``pricerange``,
  ``hasinternet``, ``goodformeal``: underscores are removed from slot names;
* values: quotes removed, lower-cased, ``dont_care``/``dontcare``, ``'none'``/``none`` unified; addresses:
  EMNLP17 abbreviates SF Hotel street types (``post st`` vs ``post street``), both sides are abbreviated (also in names: SF writes "the street regis" for "the st regis");
* ``select``: SF lists alternatives as repeated slots (``acceptscreditcards='yes';acceptscreditcards='no'``),
  EMNLP17 as one value ``'yes or no'``: values are split on `` or `` for select acts;
* EMNLP17 writes SF ``inform_count(...)`` as ``inform(...)`` with a ``count`` slot: ``inform`` + ``count``
  -> ``inform_count``;
* slots are compared as a sorted multiset (order differs between the files).

BAGEL: the EMNLP17 BAGEL MRs are the *abstract* (delexicalised) DAs of ``ACL10-inform-training.txt``; they
match exactly after ``X1, X2, ...`` -> ``X``, ``"`` -> ``'`` and removing spaces, with slot order kept (BAGEL
has distinct DAs differing only in slot order, each with its own two references). BAGEL references are kept
delexicalised (``X``, lower-cased ``x``) because the rated BAGEL outputs are delexicalised the same way;
alignment brackets ``[slot+value]`` are stripped.

Reference text: lower-cased (the rated outputs are lower-cased); the SF files' split plural suffix
``" -s"`` is re-attached (``restaurant -s`` -> ``restaurants``) so that references look like the outputs.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from qe.data.datasets import emnlp17
from qe.data.record import Record, dumps
from qe.core.mr import parse_mr  # noqa: F401  (re-exported)
from qe.errors import RecordError
from qe.core.paths import require, resolve_data_dir

SF_DOMAINS = {"SFHOT": "hotel", "SFRES": "restaurant"}
SF_SPLITS = ("train", "valid", "test")
BAGEL_FILE = "bagel/ACL10-inform-training.txt"


@dataclass(frozen=True)
class RefInstance:
    """One human reference from a source NLG dataset."""

    dataset: str  # EMNLP17 dataset name: SFHOT / SFRES / BAGEL
    split: str  # train / valid / test for SF; "all" for BAGEL (the whole file is BAGEL's rated part)
    mr: str  # the MR as written in EMNLP17 notation (``act(slot='v',...)``)
    ref: str  # normalised reference text
    source: str  # file#index, relative to the data directory

    @property
    def key(self) -> tuple:
        return mr_key(self.mr, self.dataset)


_ADDR_ABBREV = {"street": "st", "avenue": "ave", "boulevard": "blvd", "drive": "dr", "road": "rd",
                "place": "pl", "lane": "ln"}


def _norm_value(v: str | None, slot: str = "") -> str | None:
    if v is None:
        return None
    v = v.strip().lower()
    if v in ("dont_care", "dontcare", "don't care"):
        return "dontcare"
    # EMNLP17 '1625 post st' vs SF Hotel '1625 post street'; SF even writes 'the street regis' in names
    if slot in ("address", "name"):
        v = " ".join(_ADDR_ABBREV.get(w, w) for w in v.split())
    return v


def mr_key(mr: str, dataset: str | None = None, where: str = "<mr>") -> tuple:
    """Normalised, order-free key of an MR (see the module docstring for the rules)."""
    act, slots = parse_mr(mr, where)
    pairs = []
    for s, v in slots:
        s = s.lower().replace("_", "")
        v = _norm_value(v, s)
        if act == "select" and v is not None and " or " in v:
            pairs.extend((s, p.strip()) for p in v.split(" or "))
        else:
            pairs.append((s, v))
    if act == "inform" and any(s == "count" for s, _ in pairs):
        act = "informcount"
    act = act.replace("_", "")
    if dataset == "BAGEL":
        pairs = [(s, "x" if v is not None and re.fullmatch(r"x\d*", v) else v) for s, v in pairs]
    return (act, tuple(sorted(pairs, key=lambda p: (p[0], p[1] or ""))))


def bagel_exact_key(mr: str) -> str:
    """BAGEL exact key: ``X1, X2..`` -> ``X``, ``"`` -> ``'``, spaces removed (slot order kept)."""
    s = re.sub(r"X\d+", "X", mr.replace('"', "'"))
    return re.sub(r"\s+", "", s)


# ---------------------------------------------------------------------------------------------- reference text
def normalise_sf_ref(text: str) -> str:
    """Lower-case, re-attach the split plural suffix (``restaurant -s`` -> ``restaurants``), squeeze spaces."""
    t = text.strip().lower()
    t = re.sub(r"\s+-s\b", "s", t)
    return re.sub(r"\s+", " ", t)


def normalise_bagel_ref(text: str) -> str:
    """Strip ``[slot+value]`` alignments, lower-case (placeholders become ``x``), squeeze spaces."""
    t = re.sub(r"\[[^\]]*\]", "", text)
    return re.sub(r"\s+", " ", t).strip().lower()


# ------------------------------------------------------------------------------------------------- source files
def _read_sf(path: Path) -> list:
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    body = "".join(ln for ln in lines if not ln.lstrip().startswith("#"))
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{path}: not valid JSON after the '#' header lines ({exc.msg}, line {exc.lineno})") from None
    for i, item in enumerate(data):
        if not (isinstance(item, list) and len(item) == 3 and all(isinstance(x, str) for x in item)):
            raise RecordError(f"{path}: item {i} is not [MR, human reference, HDC baseline output]")
    return data


def sf_references(dataset: str, split: str, data_dir=None) -> list[RefInstance]:
    """Human references (2nd element of each row; the 3rd is a template baseline and is ignored)."""
    if dataset not in SF_DOMAINS:
        raise KeyError(f"unknown SF dataset {dataset!r}; expected one of {sorted(SF_DOMAINS)}")
    if split not in SF_SPLITS:
        raise KeyError(f"unknown split {split!r}; expected one of {SF_SPLITS}")
    rel = f"sfx/{SF_DOMAINS[dataset]}/{split}.json"
    path = require(resolve_data_dir(data_dir) / rel, f"SF {dataset} {split} split")
    out = []
    for i, (mr, ref, _hdc) in enumerate(_read_sf(path)):
        mr_e = _sf_mr_to_emnlp(mr)
        out.append(RefInstance(dataset, split, mr_e, normalise_sf_ref(ref), f"{rel}#{i}"))
    return out


def _sf_mr_to_emnlp(mr: str) -> str:
    """Rewrite an SF DA in EMNLP17 notation (drop ``?``, ``,`` between slots); slot names kept."""
    act, slots = parse_mr(mr)
    parts = [s if v is None else f"{s}='{v}'" for s, v in slots]
    return f"{act}({','.join(parts)})"


def bagel_references(data_dir=None) -> list[RefInstance]:
    """BAGEL instances: abstract DA (EMNLP17 notation, ``X`` placeholders) + delexicalised reference."""
    path = require(resolve_data_dir(data_dir) / BAGEL_FILE, "BAGEL ACL10-inform-training.txt")
    out = []
    abstract = None
    idx = 0
    with open(path, encoding="utf-8") as f:
        for ln, line in enumerate(f, 1):
            line = line.strip()
            if line.startswith("ABSTRACT_DA"):
                abstract = line.split("=", 1)[1].strip()
            elif line.startswith("->"):
                if abstract is None:
                    raise RecordError(f"{path}:{ln}: reference line without a preceding ABSTRACT_DA")
                m = re.match(r'->\s*"(.*)";\s*$', line)
                if not m:
                    raise RecordError(f"{path}:{ln}: cannot parse reference line {line[:60]!r}")
                mr = re.sub(r"X\d+", "X", abstract.replace('"', "'")).replace(" ", "")
                out.append(RefInstance("BAGEL", "all", mr, normalise_bagel_ref(m.group(1)), f"{BAGEL_FILE}#{idx}"))
                idx += 1
                abstract = None
    return out


def all_reference_instances(data_dir=None, splits=SF_SPLITS) -> list[RefInstance]:
    """Every human reference of SFHOT / SFRES (the given splits) and BAGEL."""
    out: list[RefInstance] = []
    for ds in SF_DOMAINS:
        for sp in splits:
            out.extend(sf_references(ds, sp, data_dir))
    out.extend(bagel_references(data_dir))
    return out


# ------------------------------------------------------------------------------------------------------ matching
REF_SPLITS = ("test", "valid", "train")


def attach_references(records: list[Record], data_dir=None, splits=REF_SPLITS,
                      mode: str = "first") -> tuple[list[Record], dict]:
    """Fill ``refs`` / ``ref_sources`` / ``ref_match`` of EMNLP17 records; return (records, coverage report).

    SF MRs are looked up in ``splits``, in that order of preference. ``mode="first"`` (default) takes the
    references of the first split that has the MR: the rated outputs are for the source *test* MRs (RatPred
    §3.1, fn. 12), so test references are used wherever they exist (2,458 of 2,460 records) and valid/train
    only fill the gap (2 SFRES records). ``mode="all"`` merges the references of all given splits.
    Duplicate reference texts are kept once. BAGEL MRs are matched exactly (slot order kept), then by the
    order-free key; BAGEL has no splits (its whole file is the rated set).
    """
    if mode not in ("first", "all"):
        raise ValueError(f"mode must be 'first' or 'all', got {mode!r}")
    inst = all_reference_instances(data_dir, splits)
    by_key: dict[tuple, list[RefInstance]] = defaultdict(list)
    bagel_exact: dict[str, list[RefInstance]] = defaultdict(list)
    for r in inst:
        by_key[(r.dataset, r.key)].append(r)
        if r.dataset == "BAGEL":
            bagel_exact[bagel_exact_key(r.mr)].append(r)
    report = {"records": 0, "matched": 0, "by_dataset": {}, "by_split": defaultdict(int), "unmatched_mrs": []}
    out = []
    for rec in records:
        ds = rec.dataset
        if rec.mr is None:
            raise RecordError(f"record {rec.id!r}: field 'mr' is missing; cannot look up references")
        hits: list[RefInstance] = []
        how = "none"
        if ds == "BAGEL":
            hits = bagel_exact.get(bagel_exact_key(rec.mr), [])
            how = "exact" if hits else "none"
        if not hits and ds in ("BAGEL", *SF_DOMAINS):
            hits = by_key.get((ds, mr_key(rec.mr, ds, f"record {rec.id!r} field 'mr'")), [])
            how = "normalised" if hits else "none"
            if hits and ds in SF_DOMAINS:
                order = {sp: i for i, sp in enumerate(splits)}
                hits = sorted(hits, key=lambda h: order[h.split])
                if mode == "first":
                    hits = [h for h in hits if h.split == hits[0].split]
        refs, srcs = [], []
        for h in hits:
            if h.ref not in refs:
                refs.append(h.ref)
                srcs.append(h.source)
        new = Record(id=rec.id, output=rec.output, system=rec.system, dataset=rec.dataset, mr=rec.mr,
                     source=rec.source, refs=refs, ratings=dict(rec.ratings), metrics=dict(rec.metrics),
                     extra={**rec.extra, "ref_sources": srcs, "ref_match": how})
        out.append(new)
        st = report["by_dataset"].setdefault(ds, {"records": 0, "matched": 0, "mrs": set(), "mrs_matched": set(),
                                                   "refs": 0})
        st["records"] += 1
        st["mrs"].add(rec.mr)
        report["records"] += 1
        if refs:
            report["matched"] += 1
            st["matched"] += 1
            st["mrs_matched"].add(rec.mr)
            st["refs"] += len(refs)
            for s in srcs:
                report["by_split"][s.split("#")[0]] += 1
        elif rec.mr not in report["unmatched_mrs"]:
            report["unmatched_mrs"].append(rec.mr)
    for st in report["by_dataset"].values():
        st["distinct_mrs"] = len(st.pop("mrs"))
        st["distinct_mrs_matched"] = len(st.pop("mrs_matched"))
    report["by_split"] = dict(report["by_split"])
    return out, report


def coverage_table(report: dict) -> str:
    """Markdown table of a coverage report."""
    lines = ["| dataset | records | with refs | distinct MRs | MRs with refs | refs/record |", "|---|---|---|---|---|---|"]
    for ds, st in sorted(report["by_dataset"].items()):
        per = st["refs"] / st["matched"] if st["matched"] else 0.0
        lines.append(f"| {ds} | {st['records']} | {st['matched']} | {st['distinct_mrs']} | "
                     f"{st['distinct_mrs_matched']} | {per:.2f} |")
    lines.append(f"| total | {report['records']} | {report['matched']} | | | |")
    return "\n".join(lines)


def emnlp17_refs(data_dir=None, datasets: list[str] | None = None, splits=REF_SPLITS,
                 mode: str = "first") -> list[Record]:
    """``emnlp17`` records with human references attached (see :func:`attach_references`).

    Extra fields: ``ref_sources`` (file#row per reference) and ``ref_match`` (exact / normalised / none).
    """
    recs, _ = attach_references(emnlp17(data_dir=data_dir, datasets=datasets), data_dir, tuple(splits), mode)
    return recs


if __name__ == "__main__":  # coverage report: PYTHONPATH=. python -m qe.data.references
    _, rep = attach_references(emnlp17())
    print("default (test split first, valid/train only where test lacks the MR):")
    print(coverage_table(rep))
    print("references by source file:", dumps(rep["by_split"], indent=1))
    print(f"unmatched MRs ({len(rep['unmatched_mrs'])}):", *rep["unmatched_mrs"][:40], sep="\n  ")
