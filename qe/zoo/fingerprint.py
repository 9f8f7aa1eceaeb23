"""Functional fingerprints: a model's identity beyond its bytes.

A rebuild of a named model on another machine or software stack (another BLAS, another thread count, another
PyTorch) gives other bytes, so the file checksum (:func:`qe.core.export.export_checksum`) only says "this exact build".
The fingerprint says what the model *does*: the scores it gives a fixed probe set shipped in the package
(``qe/resources/probes/``: sentences, multi-sentence texts, MR/output pairs, RDF-triple MR/output pairs, outputs with
references; chosen by the export kind, :data:`PROBE_SETS`, and for a model that reads MRs by the MR format of the data
it was trained for, :func:`probe_set_for`: a WebNLG model is probed with triple MRs) plus its validation figures from
the manifest. A fingerprint records its probe set (name and sha256): fingerprints over different sets are compared by
scoring the other set with whichever side's export is at hand, and are refused in one line when neither is. It is computed when the export is
written (:mod:`qe.zoo.card`, called by :func:`qe.core.export.export_writer`) and stored in the manifest under
``fingerprint``; the manifest is outside the checksum, so recording it never changes the bits.

:func:`compare` decides between two models, in this order:

1. the same export checksum: **bit-identical**;
2. the same kind, max |Δ score| over the probe set within the kind's tolerance (:data:`TOLERANCES`) and every
   validation figure both record within its tolerance: **equivalent**;
3. otherwise **different**, with the largest differences (probe id, text, both scores; validation figures).
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qe.errors import ExportError

FINGERPRINT_VERSION = 1

#: export kind -> probe set (file ``qe/resources/probes/<set>.jsonl``). Kinds not listed (ensembles, user kinds) get
#: the set their scorer's inputs call for (:func:`probe_set_for`).
PROBE_SETS: dict[str, str] = {
    "slor": "sentences",
    "acceptability": "sentences",
    "mlm": "sentences",
    "sop": "texts",  # sentence order needs two or more sentences
    "gruen": "texts",  # its redundancy, focus and structure components need several sentences
    "qe_gru": "mr_outputs",
    "svr": "references",
    # the coverage scorer: E2E attribute lists and dialogue acts (an aligner trained on WebNLG: triples, below)
    "content_aligner": "mr_outputs",
}

#: MR-reading exports (``qe_gru``, kinds whose scorer requires MRs) trained for data whose MRs are not dialogue acts or
#: E2E attribute lists are probed in their own MR format: MR format -> probe set (the default: ``mr_outputs``)
MR_PROBE_SETS: dict[str, str] = {"triples": "mr_triples"}
#: dataset name (its start: ``webnlg``, ``webnlg2020``) -> the MR format of its records
DATASET_MR_FORMATS: dict[str, str] = {"webnlg": "triples"}

#: options a kind is loaded with for its fingerprint: RatPred (and ensembles of it) round predictions to 0.5 by
#: default, which would turn a 1e-6 difference next to a rounding boundary into 0.5; the raw values are compared
LOAD_OPTIONS: dict[str, dict[str, Any]] = {
    "qe_gru": {"rounded": False},
    "ensemble": {"rounded": False},
}


@dataclass(frozen=True)
class Tolerance:
    """When two builds are "the same model": max |Δ score| over the probe set, and for validation figures an absolute
    difference (figures within [-1, 1]: correlations, accuracies, probabilities) or a relative one (the others:
    perplexities, losses, mean squared errors)."""

    score: float
    val_abs: float = 0.01
    val_rel: float = 0.01
    why: str = ""


# Why these values. A rebuild on another machine of the same kind moved an LM's validation perplexity by 0.1% (5.775 vs 5.77: the
# same model) and a RatPred model's validation correlation by 0.019 (0.460 vs 0.479: not the same model). Validation
# tolerances sit between those: 0.01 absolute for figures in [-1, 1], 1% relative for the others. Score tolerances
# are set on each kind's scale, well below what a different seed moves (tests/zoo/test_zoo_archive.py: another seed of a
# tiny LM moves probe SLOR by tenths) and well above float reordering (a different BLAS / thread count changes
# summation order: about 1e-6 relative per forward pass, amplified by training to the 1e-3 level measured as the
# "same model to three digits" above).
TOLERANCES: dict[str, Tolerance] = {
    # SLOR is in nats per token: 0.05 is a 5% change of the per-token probability ratio; the probe SLORs of one LM
    # spread over several nats, another seed moves single sentences by 0.1-1
    "slor": Tolerance(0.05, why="nats per token; 5% per-token probability ratio"),
    # raw RatPred regression values on the 1-6 rating scale: 0.05 is a tenth of the 0.5 rating step the rounded
    # predictions use, so at most a probe lying within 0.05 of a rounding boundary can round differently
    "qe_gru": Tolerance(0.05, why="rating points; a tenth of the 0.5 rounding step"),
    # P(acceptable) in [0, 1]: 0.02 is two points of probability, far below the gap between a fluent and a
    # scrambled probe (tenths)
    "acceptability": Tolerance(0.02, why="probability points"),
    # mean masked log-probability per word piece (nats), as SLOR
    "mlm": Tolerance(0.05, why="nats per word piece"),
    # -SOP loss (nats per split point)
    "sop": Tolerance(0.05, why="nats per split point"),
    # the GRUEN score mixes its components into roughly [0, 1]: 0.02 as for probabilities
    "gruen": Tolerance(0.02, why="GRUEN score points (about [0, 1])"),
    # predicted ratings from reference-metric features, as RatPred
    "svr": Tolerance(0.05, why="rating points"),
    # the raw weighted mean of member ratings, as RatPred
    "ensemble": Tolerance(0.05, why="rating points (raw mean of members)"),
    # a learned combiner predicts the rating it was fitted to (EMNLP17: 1-6), as the SVR does
    "combiner": Tolerance(0.05, why="points of the rating it was fitted to"),
    # coverage in [0, 1] moves in steps: one changed verdict moves a probe by at least 1/N (N <= 8 checkable facts in
    # the probe MRs; a repetition costs half a fact: 1/16), so 0.05 says "every verdict on the probes the same", which
    # float reordering keeps unless a P(realised) lies within about 1e-6 of its threshold; validation figures (F1,
    # MCC) take the usual 0.01
    "content_aligner": Tolerance(0.05, why="coverage points; a changed verdict moves a probe by >= 1/16"),
}
#: kinds registered by users: scores assumed on a rating-like scale
DEFAULT_TOLERANCE = Tolerance(0.05, why="default for kinds without their own tolerance")

#: manifest metric keys that are not figures of the model (they vary run to run or say where a file is)
_NOT_FIGURES = re.compile(r"(time|seconds|second|per_s|/s$|throughput|tokens_per|elapsed|path|epoch$|step$|lr$)")
#: a key naming a validation (dev) split: val/..., valid..., dev/..., cv/1/dev/...
_VALIDATION = re.compile(r"(^|[/_.])(val|valid|validation|dev)([/_.]|$)")

#: how many differences a "different" verdict lists
SHOW = 5


class FingerprintError(ExportError):
    """Two fingerprints cannot be compared (different probe sets and no export to rescore), or a probe set is
    missing or broken."""


def tolerance(kind: str) -> Tolerance:
    return TOLERANCES.get(kind, DEFAULT_TOLERANCE)


# ------------------------------------------------------------------------------------------------------ probe sets
def probes_dir() -> Path:
    from qe.core.paths import resources_dir

    return resources_dir() / "probes"


@dataclass(frozen=True)
class ProbeSet:
    name: str
    sha256: str
    rows: tuple[dict[str, Any], ...]

    @property
    def outputs(self) -> list[str]:
        return [r["output"] for r in self.rows]

    def column(self, key: str) -> list[Any] | None:
        return [r[key] for r in self.rows] if all(key in r for r in self.rows) else None


def load_probes(name: str) -> ProbeSet:
    """The shipped probe set ``name`` (``qe/resources/probes/<name>.jsonl``) and the sha256 of its file."""
    path = probes_dir() / f"{name}.jsonl"
    try:
        raw = path.read_bytes()
    except OSError:
        known = sorted(p.stem for p in probes_dir().glob("*.jsonl"))
        raise FingerprintError(f"{path}: probe set {name!r} not found (shipped: {', '.join(known)})") from None
    rows = []
    for i, line in enumerate(raw.decode("utf-8").splitlines(), 1):
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise FingerprintError(f"{path}:{i}: not valid JSON ({exc})") from None
            if not isinstance(row.get("output"), str) or "id" not in row:
                raise FingerprintError(f"{path}:{i}: a probe needs 'id' and a string 'output'")
            rows.append(row)
    return ProbeSet(name, hashlib.sha256(raw).hexdigest(), tuple(rows))


def _dataset_format(name: Any) -> str | None:
    name = str(name or "").lower()
    return next((f for d, f in DATASET_MR_FORMATS.items() if name.startswith(d)), None)


def trained_mr_format(manifest: dict[str, Any] | None, export_dir: str | Path | None = None) -> str | None:
    """The MR format of the data an export was trained for, from its manifest: the transfer target
    (``config.train.protocol.target_data.name``: RatPred's WebNLG recipes train on EMNLP17 dialogue acts *for*
    WebNLG triples), else the training dataset (``data.name``, ``config.train.data.dataset``); for an export made of
    members (``members/*/qe_export.json``: ensembles), the members' format when they all agree. None: not known
    (dialogue acts or E2E attribute lists, the default)."""
    if not isinstance(manifest, dict):
        return None
    train = ((manifest.get("config") or {}).get("train") or {}) if isinstance(manifest.get("config"), dict) else {}
    target = ((train.get("protocol") or {}).get("target_data") or {}) if isinstance(train, dict) else {}
    if isinstance(target, dict) and target.get("name"):
        return _dataset_format(target["name"])
    for name in ((manifest.get("data") or {}).get("name") if isinstance(manifest.get("data"), dict) else None,
                 ((train.get("data") or {}).get("dataset") if isinstance(train, dict) else None)):
        if name:
            return _dataset_format(name)
    if export_dir is not None and (Path(export_dir) / "members").is_dir():
        from qe.core.export import MANIFEST

        found = set()
        for m in sorted((Path(export_dir) / "members").glob(f"*/{MANIFEST}")):
            try:
                member = json.loads(m.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                return None
            found.add(trained_mr_format(member, m.parent))
        return found.pop() if len(found) == 1 else None
    return None


def probe_set_for(kind: str, scorer: Any = None, manifest: dict[str, Any] | None = None,
                  export_dir: str | Path | None = None) -> str:
    """The probe set of ``kind``; for kinds without one, by what the scorer needs (MRs, references, outputs only).
    A set of MR/output pairs is swapped for the one in the MR format the export was trained for
    (:func:`trained_mr_format`, :data:`MR_PROBE_SETS`): ratpred-webnlg is probed with RDF triples."""
    if kind in PROBE_SETS:
        name = PROBE_SETS[kind]
    elif getattr(scorer, "requires_mrs", False):
        name = "mr_outputs"
    elif getattr(scorer, "requires_refs", False):
        name = "references"
    else:
        name = "sentences"
    if name == "mr_outputs":
        name = MR_PROBE_SETS.get(trained_mr_format(manifest, export_dir) or "", name)
    return name


def ships(probe_set: Any, sha256: Any) -> bool:
    """Whether this qe ships the probe set ``probe_set`` with that very content (``sha256``)."""
    try:
        return bool(probe_set) and load_probes(str(probe_set)).sha256 == sha256
    except FingerprintError:
        return False


def score_probes(scorer: Any, probes: ProbeSet) -> list[float]:
    """The scorer's scores of the probe set (MRs and references passed when the set has them and the scorer uses
    them)."""
    kw: dict[str, Any] = {}
    mrs, refs = probes.column("mr"), probes.column("refs")
    if mrs is not None and getattr(scorer, "requires_mrs", False):
        kw["mrs"] = mrs
    if refs is not None and getattr(scorer, "requires_refs", False):
        kw["refs"] = refs
    return [float(s) for s in scorer.score(probes.outputs, progress=False, **kw)]


# ---------------------------------------------------------------------------------------------- validation figures
def validation_figures(manifest: dict[str, Any]) -> dict[str, float]:
    """The manifest's validation (dev) figures: finite numbers under ``metrics`` whose key names a val/dev split;
    when none does, every numeric metric (an export whose task reports only test figures). Times, paths, steps and
    learning rates are not figures of the model."""
    metrics = manifest.get("metrics") or {}
    numeric = {k: float(v) for k, v in metrics.items()
               if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))
               and not _NOT_FIGURES.search(k.lower())}
    val = {k: v for k, v in numeric.items() if _VALIDATION.search(k.lower())}
    return dict(sorted((val or numeric).items()))


# ---------------------------------------------------------------------------------------------------- computing
def _device_name() -> str:
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:  # pragma: no cover - torch is a dependency
        return "cpu"


def cpu_identity() -> dict[str, str]:
    """The CPU a fingerprint's scores were computed on: architecture, the SIMD level PyTorch's kernels dispatch to, and
    the processor's model name. A trained model's bits and probabilities are only expected to repeat on the same
    identity (other SIMD paths sum floats in another order); :func:`same_cpu` compares two."""
    import platform

    capability = ""
    try:
        import torch

        capability = str(torch.backends.cpu.get_cpu_capability())
    except Exception:  # noqa: BLE001 - torch without the query: the model name still tells CPUs apart
        pass
    model = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"machine": platform.machine(), "capability": capability, "model": model}


def same_cpu(fp: dict[str, Any] | None) -> bool:
    """Whether the fingerprint ``fp`` was computed on a CPU of this machine's :func:`cpu_identity` (False when it
    does not say)."""
    return bool(fp) and fp.get("cpu") == cpu_identity()


def compute(export_dir: str | Path, manifest: dict[str, Any] | None = None, *, scorer: Any = None,
            probe_set: str | None = None) -> dict[str, Any]:
    """Score the export's probe set (:func:`probe_set_for`; ``probe_set``: that shipped set instead, e.g. the set of a
    fingerprint to compare with) with the export (loaded with :data:`LOAD_OPTIONS`) and return the fingerprint:
    ``{"version", "probe_set", "probe_sha256", "n", "options", "scores", "validation", "device", "cpu", "versions"}``
    (a NaN score, e.g. an LM's score of an empty output, is stored as null)."""
    from qe.core.export import read_manifest
    from qe.version import __version__

    export_dir = Path(export_dir)
    manifest = manifest or read_manifest(export_dir)
    kind = manifest["kind"]
    options = dict(LOAD_OPTIONS.get(kind, {}))
    if scorer is None:
        from qe.kinds import load_export  # not qe.registry, which imports the zoo (archives)

        scorer = load_export(export_dir, **options)
    probes = load_probes(probe_set or probe_set_for(kind, scorer, manifest, export_dir))
    scores = score_probes(scorer, probes)
    versions = {"qe": __version__}
    try:
        import torch

        versions["torch"] = torch.__version__
    except ImportError:  # pragma: no cover
        pass
    return {"version": FINGERPRINT_VERSION, "probe_set": probes.name, "probe_sha256": probes.sha256,
            "n": len(scores), "options": options,
            "scores": [None if math.isnan(s) else s for s in scores],
            "validation": validation_figures(manifest), "device": _device_name(),
            "cpu": cpu_identity(), "versions": versions}


def has_scores(fp: Any) -> bool:
    return isinstance(fp, dict) and isinstance(fp.get("scores"), list) and "probe_sha256" in fp


# --------------------------------------------------------------------------------------------------- identities
@dataclass
class Identity:
    """What two models are compared by: kind, file checksum, fingerprint; ``export_dir`` when the export itself is
    at hand (then a missing or stale fingerprint is computed from it)."""

    source: str
    kind: str
    checksum: str | None
    fingerprint: dict[str, Any] | None = None
    export_dir: Path | None = None
    #: True once ``fingerprint`` was computed in this process from ``export_dir``
    live: bool = False

    def ensure_fingerprint(self, probe_sha256: str | None = None, probe_set: str | None = None) -> dict[str, Any]:
        """The fingerprint, computed from the export when missing or over another probe set than ``probe_sha256``
        (then over ``probe_set`` when this qe ships that set with that sha256, else over the export's own set)."""
        fp = self.fingerprint
        if has_scores(fp) and (probe_sha256 is None or fp["probe_sha256"] == probe_sha256):
            return fp
        if self.export_dir is None:
            have = "none recorded" if not has_scores(fp) else f"one over probe set {fp.get('probe_set')!r} " \
                                                             f"({str(fp.get('probe_sha256'))[:12]})"
            raise FingerprintError(f"{self.source}: no fingerprint to compare with ({have}) and no export to "
                                   f"compute one from")
        self.fingerprint = compute(self.export_dir, probe_set=probe_set if ships(probe_set, probe_sha256) else None)
        self.live = True
        return self.fingerprint

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "kind": self.kind, "checksum": self.checksum, "fingerprint": self.fingerprint}


def identity_of_export(export_dir: str | Path, *, live: bool = False, source: str | None = None) -> Identity:
    """The identity of an export directory (its files are checked against its manifest first)."""
    from qe.core.export import export_checksum, read_manifest, verify_checksum

    d = Path(export_dir)
    manifest = read_manifest(d)
    verify_checksum(d, manifest)
    ident = Identity(source or str(d), manifest["kind"], export_checksum(d),
                     None if live else manifest.get("fingerprint"), d)
    if live:
        ident.ensure_fingerprint()
    return ident


def identity_of_json(path: str | Path) -> Identity:
    """An identity written by ``qe zoo fingerprint -o FILE`` (or a zoo build record ``.zoo/<name>.json``)."""
    p = Path(path)
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise FingerprintError(f"{p}: cannot read a fingerprint file ({exc})") from None
    if not isinstance(d, dict) or not ("checksum" in d or "fingerprint" in d):
        raise FingerprintError(f"{p}: not a fingerprint file (no 'checksum' or 'fingerprint')")
    kind = d.get("kind") or ((d.get("recipe") or {}).get("kind")) or ""
    return Identity(str(p), kind, d.get("checksum"), d.get("fingerprint"))


# ---------------------------------------------------------------------------------------------------- comparing
@dataclass
class Verdict:
    status: str  #: bit-identical | equivalent | different
    summary: str  #: one line
    details: list[str] = field(default_factory=list)  #: the largest differences (different only)
    max_delta: float | None = None

    @property
    def same(self) -> bool:
        return self.status in ("bit-identical", "equivalent")

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "summary": self.summary, "details": self.details, "max_delta": self.max_delta}


def _set_name(fp: dict[str, Any]) -> str:
    return f"{fp.get('probe_set')!r} {str(fp.get('probe_sha256'))[:12]}"


def _delta(a: float | None, b: float | None) -> float:
    if a is None and b is None:  # both NaN: the same (undefined) score
        return 0.0
    if a is None or b is None:
        return math.inf
    return abs(float(a) - float(b))


def _clip(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _fmt(v: float | None) -> str:
    return "NaN" if v is None else f"{v:.6g}"


def _val_within(a: float, b: float, tol: Tolerance) -> tuple[bool, float, str]:
    if abs(a) <= 1 and abs(b) <= 1:
        d = abs(a - b)
        return d <= tol.val_abs, d, f"|Δ| {d:.4g} (tolerance {tol.val_abs:g})"
    d = abs(a - b) / max(abs(a), abs(b))
    return d <= tol.val_rel, d, f"relative Δ {d:.3%} (tolerance {tol.val_rel:.0%})"


def compare(a: Identity, b: Identity, tol: Tolerance | None = None, *, rescore_same_bits: bool = False) -> Verdict:
    """bit-identical / equivalent / different (see the module docstring); fingerprints are computed from the exports
    at hand where one side lacks one or has one over another probe set.

    ``rescore_same_bits``: compare the probe scores even when the checksums match (``b`` scored now when its export is
    at hand): the same bits can score differently when the code around them changed (the coverage scorer's matcher
    decides most facts an aligner export is asked about). Same bits and scores within tolerance stay bit-identical;
    other scores are **different**, saying so."""
    same_bits = bool(a.checksum) and a.checksum == b.checksum
    if same_bits and not rescore_same_bits:
        return Verdict("bit-identical", f"bit-identical (checksum {a.checksum[:12]})", max_delta=0.0)
    if a.kind and b.kind and a.kind != b.kind:
        return Verdict("different", f"different: kind {a.kind!r} vs {b.kind!r}")
    kind = a.kind or b.kind
    tol = tol or tolerance(kind)
    fa = a.ensure_fingerprint()
    fb = b.fingerprint if has_scores(b.fingerprint) and b.export_dir is None else \
        b.ensure_fingerprint(fa["probe_sha256"], fa["probe_set"])
    if fb["probe_sha256"] != fa["probe_sha256"] and a.export_dir is not None:  # rescore a on b's set
        fa = a.ensure_fingerprint(fb["probe_sha256"], fb["probe_set"])
    if fb["probe_sha256"] != fa["probe_sha256"]:
        raise FingerprintError(
            f"{a.source} vs {b.source}: fingerprints over different probe sets ({_set_name(fa)} vs {_set_name(fb)}) "
            f"and no export at hand to score the other set; compare an export with a fingerprint instead")
    sa, sb = fa["scores"], fb["scores"]
    if len(sa) != len(sb):
        raise FingerprintError(f"{a.source} vs {b.source}: fingerprints of {len(sa)} and {len(sb)} probes")
    probes = None
    try:
        got = load_probes(fa["probe_set"])
        probes = got if got.sha256 == fa["probe_sha256"] else None
    except FingerprintError:
        pass
    deltas = [_delta(x, y) for x, y in zip(sa, sb)]
    worst = max(deltas) if deltas else 0.0
    order = sorted(range(len(deltas)), key=lambda i: -deltas[i])
    va, vb = fa.get("validation") or {}, fb.get("validation") or {}
    val_rows = []
    for k in sorted(set(va) & set(vb)):
        ok, d, text = _val_within(float(va[k]), float(vb[k]), tol)
        val_rows.append((ok, d, f"validation {k}: {va[k]:.6g} vs {vb[k]:.6g}, {text}"))
    val_bad = [r for r in val_rows if not r[0]]
    checks = f"checksum {str(a.checksum)[:12]} vs {str(b.checksum)[:12]}"
    scores_text = f"max |Δscore| {worst:.4g} {'<=' if worst <= tol.score else '>'} {tol.score:g} over {len(deltas)} " \
                  f"probes ({fa['probe_set']})"
    val_text = (f"{len(val_rows) - len(val_bad)}/{len(val_rows)} validation figures within tolerance" if val_rows
                else "no validation figure recorded by both")
    if same_bits and worst <= tol.score:
        return Verdict("bit-identical", f"bit-identical: checksum {a.checksum[:12]}, scored now: {scores_text}",
                       max_delta=worst)
    if worst <= tol.score and not val_bad:
        return Verdict("equivalent", f"equivalent: {checks}; {scores_text}; {val_text}", max_delta=worst)
    details = []
    for i in order[:SHOW]:
        if deltas[i] == 0:
            break
        pid = probes.rows[i]["id"] if probes else f"#{i}"
        text = f" {_clip(probes.rows[i]['output'])!r}" if probes else ""
        details.append(f"probe {pid}{text}: {_fmt(sa[i])} vs {_fmt(sb[i])} (Δ {deltas[i]:.4g})")
    details += [r[2] for r in sorted(val_bad, key=lambda r: -r[1])[:SHOW]]
    if same_bits:  # the files are the same model: the code that scores with them is not the same
        return Verdict("different", f"different: the same bits ({checks}) score otherwise now, the code around the "
                       f"model changed; {scores_text}", details, worst)
    return Verdict("different", f"different: {checks}; {scores_text}; {val_text}", details, worst)


__all__ = ["PROBE_SETS", "MR_PROBE_SETS", "DATASET_MR_FORMATS", "LOAD_OPTIONS", "TOLERANCES", "DEFAULT_TOLERANCE",
           "Tolerance", "FingerprintError", "ProbeSet", "load_probes", "probe_set_for", "trained_mr_format", "ships",
           "score_probes", "validation_figures", "cpu_identity", "same_cpu", "compute", "Identity", "identity_of_export", "identity_of_json",
           "Verdict", "compare", "tolerance"]
