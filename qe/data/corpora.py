"""Plain-text corpora for language-model training: sentences as strings.

Sources (each a mapping, as in ``conf/data/*.yaml``):

* ``{name: sample}`` — the embedded default corpus written for this project (``qe/resources``);
* ``{name: brown}`` — the Brown corpus from an NLTK data folder (``<data_dir>/nltk_data``), read with NLTK's reader;
* ``{name: webtext}`` — NLTK webtext, one line per text line;
* ``{name: wikitext2, split: valid|test|train}`` — WikiText-2 tokenised files (``<data_dir>/wikitext-2``);
  headings dropped, paragraphs split into sentences, ``@-@``-style separators undone, ``<unk>`` kept;
* ``{name: e2e, version: cleaned|original, split: dev}`` — E2E human references (``qe.data.e2e``; train on dev,
  never on test);
* ``{name: sfx, domain: hotel|restaurant, split: train|valid|test}`` — SF Hotel / Restaurant human references
  (``qe.data.references``; the EMNLP17 outputs are for the *test* MRs, so a domain LM takes ``train``);
* ``{name: bagel}`` — the BAGEL references (every BAGEL MR is rated in EMNLP17: not for LMs scored on it);
* ``{name: webnlg, split: train|dev}`` (or ``webnlg-train`` / ``webnlg-dev``) — WebNLG 2020 English reference texts,
  one per ``<lex>`` (``qe.data.webnlg``; 35,426 / 4,464 texts). Nothing of the rated WebNLG 2020 test set is read.
* ``{name: txt, path: FILE_OR_DIR}`` — any .txt file or folder of .txt files, one sentence per line
  (``split_sentences: true`` splits lines with pysbd instead).

Sentences come back as raw strings; the tokenizer (``qe.core.tokenization``) normalises and tokenises them.
"""
from __future__ import annotations

import hashlib
import re
import zipfile
from pathlib import Path
from typing import Any, Iterable

from qe.core.paths import require, resolve_data_dir, resources_dir

# A literal WikiText unknown-word marker; the tokenizer maps it to the vocabulary's unknown symbol.
WIKITEXT_UNK = "<unk>"

_WT_SEPARATORS = [(" @-@ ", "-"), (" @,@ ", ","), (" @.@ ", ".")]
_WT_SENT_SPLIT = re.compile(r"(?<=\s[.!?])\s+(?=[A-Z\"'(\[])")


def wikitext_paragraphs(path: Path) -> list[list[str]]:
    """WikiText paragraphs (one per non-heading line) as lists of sentences, separators undone, ``<unk>`` kept."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("= "):
                continue
            for a, b in _WT_SEPARATORS:
                line = line.replace(a, b)
            sents = [s.strip() for s in _WT_SENT_SPLIT.split(" " + line) if s.strip()]
            if sents:
                out.append(sents)
    return out


def _wikitext(path: Path) -> list[str]:
    return [s for para in wikitext_paragraphs(path) for s in para]


def _brown(nltk_dir: Path) -> list[str]:
    """Brown sentences (one per line of each ``brown/cXNN`` file, ``word/tag`` tokens), read from the zip in place.

    The format is trivial, so it is parsed here rather than through NLTK's reader, whose path-security layer
    (NLTK >= 3.9) refuses zip files outside its own search path.
    """
    zpath = require(nltk_dir / "corpora" / "brown.zip", "NLTK Brown corpus (corpora/brown.zip)")
    return [_join_tokens(s) for s in _brown_plain(zpath)]


def _brown_plain(zpath: Path) -> list[list[str]]:
    out = []
    with zipfile.ZipFile(zpath) as z:
        for name in sorted(n for n in z.namelist() if re.fullmatch(r"brown/c[a-z]\d\d", n)):
            for line in z.read(name).decode("ascii").splitlines():
                toks = [t.rsplit("/", 1)[0] for t in line.split()]
                if toks:
                    out.append(toks)
    return out


def _join_tokens(tokens: Iterable[str]) -> str:
    s = " ".join(tokens)
    return s.replace("``", '"').replace("''", '"')


def _webtext(nltk_dir: Path) -> list[str]:
    zpath = require(nltk_dir / "corpora" / "webtext.zip", "NLTK webtext (corpora/webtext.zip)")
    out = []
    with zipfile.ZipFile(zpath) as z:
        for name in sorted(n for n in z.namelist() if n.endswith(".txt")):
            for line in z.read(name).decode("utf-8", errors="replace").splitlines():
                if line.strip():
                    out.append(line.strip())
    return out


def _txt(path: Path, split_sentences: bool = False) -> list[str]:
    files = sorted(path.rglob("*.txt")) if path.is_dir() else [path]
    if not files:
        raise FileNotFoundError(f"{path}: no .txt files found")
    segmenter = None
    if split_sentences:
        import pysbd

        segmenter = pysbd.Segmenter(language="en", clean=False)
    out = []
    for fp in files:
        with open(fp, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                if segmenter is not None:
                    out.extend(s.strip() for s in segmenter.segment(line) if s.strip())
                else:
                    out.append(line)
    return out


def load_source(spec: dict[str, Any] | str, data_dir: str | Path | None = None) -> list[str]:
    """Sentences of one corpus source (see module docstring)."""
    if isinstance(spec, str):
        spec = {"name": spec}
    spec = dict(spec)
    name = spec.get("name")
    root = resolve_data_dir(data_dir)
    if name == "sample":
        return _txt(resources_dir() / "sample_corpus.txt")
    if name == "brown":
        return _brown(root / "nltk_data")
    if name == "webtext":
        return _webtext(root / "nltk_data")
    if name in ("wikitext2", "wikitext-2"):
        split = spec.get("split", "valid")
        return _wikitext(require(root / "wikitext-2" / f"{split}.txt", f"WikiText-2 {split} split"))
    if name == "e2e":
        from qe.data.e2e import e2e_texts

        return e2e_texts(spec.get("version", "cleaned"), spec.get("split", "dev"), data_dir)
    if name == "sfx":
        from qe.data.references import sf_references

        domain = str(spec.get("domain", "restaurant"))
        ds = {"hotel": "SFHOT", "restaurant": "SFRES"}.get(domain)
        if ds is None:
            raise ValueError(f"corpus source sfx: domain={domain!r}; use hotel or restaurant")
        return [r.ref for r in sf_references(ds, str(spec.get("split", "train")), data_dir)]
    if name == "bagel":
        from qe.data.references import bagel_references

        return [r.ref for r in bagel_references(data_dir)]
    if name in ("webnlg", "webnlg-train", "webnlg-dev"):
        from qe.data.webnlg import webnlg_texts

        split = str(spec.get("split", "train")) if name == "webnlg" else name.split("-", 1)[1]
        if name != "webnlg" and spec.get("split") not in (None, split):
            raise ValueError(f"corpus source {name}: split={spec['split']!r} contradicts the name")
        return webnlg_texts(split, data_dir)
    if name == "txt":
        if not spec.get("path"):
            raise ValueError("corpus source 'txt' needs a path")
        p = Path(str(spec["path"])).expanduser()
        if not p.is_absolute() and not p.exists():
            p = root / p
        return _txt(require(p, "text corpus"), bool(spec.get("split_sentences", False)))
    raise ValueError(f"unknown corpus source {name!r}; use sample, brown, webtext, wikitext2, e2e, sfx, bagel, webnlg "
                     "(webnlg-train, webnlg-dev) or txt")


def load_corpus(specs: Iterable[dict[str, Any] | str], data_dir: str | Path | None = None) -> list[str]:
    out: list[str] = []
    for s in specs or []:
        out.extend(load_source(s, data_dir))
    return out


def split_seed(cfg) -> int:
    """The seed of the held-out split (``data.val_fraction``): ``data.split_seed`` when set, else the run's ``seed``.
    A seed spread (``qe zoo spread``) pins ``data.split_seed`` to the recipe's seed, so every seed is validated on the
    same sentences and only the training randomness varies."""
    d = cfg.get("data") or {}
    s = d.get("split_seed") if hasattr(d, "get") else None
    return int(cfg.seed if s is None else s)


def split_holdout(sentences: list[str], fraction: float, seed: int = 0) -> tuple[list[str], list[str]]:
    """Deterministic hold-out by hashing each sentence (stable across processes and runs)."""
    if fraction <= 0:
        return sentences, []
    keep, held = [], []
    thresh = int(fraction * 10_000)
    for s in sentences:
        h = int(hashlib.md5(f"{seed}:{s}".encode()).hexdigest()[:8], 16) % 10_000
        (held if h < thresh else keep).append(s)
    return keep, held


def corpus_fingerprint(sentences: list[str]) -> str:
    h = hashlib.sha256()
    for s in sentences:
        h.update(s.encode())
        h.update(b"\n")
    return h.hexdigest()
