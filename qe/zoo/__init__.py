"""Named models (the model zoo): which names ``qe.load`` resolves to a locally built export, and where they live.

This module is deliberately light (no torch, no Hydra; PyYAML only): :func:`qe.load` and ``qe list`` read it. Each
named model is one recipe file, ``qe/zoo/recipes/<name>.yaml`` (shipped in the wheel): what the model is, the Hydra
overrides of ``qe train`` for its CPU and GPU schedules, the CPU and GPU times, what it needs first. They are read
into :data:`RECIPES` (name -> :class:`Recipe`) and :data:`NAMES` (public name -> one-line description) on first
use. The builder is :mod:`qe.zoo.build`:

    qe zoo build slor-word-brown-wt2      # -> $QE_MODELS/slor-word-brown-wt2
    qe zoo list -v

Models are built into ``$QE_MODELS`` (default ``~/.cache/qe/models``), one export directory per name. They travel as
verified archives (:mod:`qe.zoo.archive`: ``qe zoo pack`` / ``install`` / ``push``, ``qe.load(URL)``); each export
carries a model card (:mod:`qe.zoo.card`) and a functional fingerprint (:mod:`qe.zoo.fingerprint`: ``qe zoo verify``
/ ``compare`` say bit-identical, equivalent or different).

A recipe file holds these fields (unknown ones are refused, so a typo cannot silently drop a setting)::

    name: slor-word-domain          # = the file name without .yaml; "_name": test-only (hidden from lists)
    description: one line saying what the model is (what `qe list` prints)
    status: final                   # final | pending (not settled: build refuses) | test (hidden, test-only)
    overrides: [...]                # qe train overrides of the CPU schedule (seed, steps/epochs/passes)
    gpu_overrides: [...]            # added on top for `--gpu`
    cpu_time: about 15-20 min       # the headline CPU time on the project's 2-core machine
    cpu_budget: ...                 # the same with where the figure comes from (measured runs)
    gpu_time: 47 s measured on ...  # absent: GPU time not measured
    needs: [...]                    # zoo models built first; {models}/<name> in overrides becomes their path
    threads: 1                      # OMP / MKL threads of the build (the checksum depends on it)
    notes: ...                      # what it needs installed, what it never reads

Why a schedule is what it is goes in the file's ``#`` comments.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from qe.errors import QEError

ENV_VAR = "QE_MODELS"
DEFAULT_DIR = "~/.cache/qe/models"
#: the recipe files shipped in the package
RECIPES_DIR = Path(__file__).resolve().parent / "recipes"
#: what a recipe's missing ``gpu_time`` means
GPU_NOT_MEASURED = "GPU time not measured"
STATUSES = ("final", "pending", "test")


class RecipeError(QEError):
    """A recipe file that cannot be read (YAML syntax, an unknown or missing field, a value of the wrong type): one
    line naming the file and the field."""


@dataclass(frozen=True)
class Recipe:
    """One named model's recipe (a file of :data:`RECIPES_DIR`; the fields are described in the module docstring)."""

    name: str
    #: qe train overrides of the CPU schedule (seed, steps/epochs/passes; never trainer.max_time)
    overrides: tuple[str, ...]
    #: added on top of ``overrides`` for the GPU schedule
    gpu_overrides: tuple[str, ...] = ()
    #: expected CPU build time on the project's 2-core machine, and where the figure comes from
    cpu_budget: str = ""
    #: final | pending (recipe not settled: build refuses) | test (hidden, test-only)
    status: str = "final"
    #: zoo models that must be built first; ``{models}/<name>`` in overrides is replaced by their path
    needs: tuple[str, ...] = ()
    threads: int = 1
    notes: str = ""
    #: one line saying what the model is (``qe list``, ``qe zoo list``, the "not built" message)
    description: str = ""
    #: the headline of ``cpu_budget`` (one-line messages); empty: ``cpu_budget``
    cpu_time: str = ""
    #: the GPU schedule's build time and where it was measured; empty: not measured
    gpu_time: str = ""

    @property
    def buildable(self) -> bool:
        return self.status in ("final", "test")

    @property
    def gpu_time_text(self) -> str:
        """``gpu_time``, or "GPU time not measured"; "no GPU schedule" for a recipe without one."""
        if not self.gpu_overrides:
            return "no GPU schedule"
        return self.gpu_time or GPU_NOT_MEASURED


_LISTS = ("overrides", "gpu_overrides", "needs")
_FIELDS = tuple(f.name for f in fields(Recipe))


def read_recipe(path: str | os.PathLike) -> Recipe:
    """The recipe in ``path``; :class:`RecipeError` (one line naming the file and the field) when it is malformed."""
    import yaml

    p = Path(path)
    try:
        raw = yaml.load(p.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except OSError as exc:
        raise RecipeError(f"{p}: cannot read the recipe ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        raise RecipeError(f"{p}: not valid YAML{at} ({getattr(exc, 'problem', None) or exc})") from None
    if not isinstance(raw, dict):
        raise RecipeError(f"{p}: a recipe is a mapping of fields ({', '.join(_FIELDS)}), got {type(raw).__name__}")
    unknown = [k for k in raw if k not in _FIELDS]
    if unknown:
        raise RecipeError(f"{p}: unknown field {unknown[0]!r} (fields: {', '.join(_FIELDS)})")
    for key in ("name", "description", "overrides"):
        if key not in raw:
            raise RecipeError(f"{p}: missing field {key!r}")
    kw: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _LISTS:
            value = [] if value is None else value
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise RecipeError(f"{p}: field {key!r} must be a list of non-empty strings")
            value = tuple(value)
        elif key == "threads":
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise RecipeError(f"{p}: field 'threads' must be a whole number >= 1, got {value!r}")
        elif not isinstance(value, str):
            raise RecipeError(f"{p}: field {key!r} must be a string, got {value!r}")
        kw[key] = value
    if kw["name"] != p.stem:
        raise RecipeError(f"{p}: field 'name' is {kw['name']!r}, but the file is named {p.name} (they must agree)")
    if kw.get("status", "final") not in STATUSES:
        raise RecipeError(f"{p}: field 'status' must be one of {', '.join(STATUSES)}, got {kw['status']!r}")
    if kw.get("status", "final") != "pending" and not kw["overrides"]:
        raise RecipeError(f"{p}: field 'overrides' is empty (only a pending recipe has none)")
    return Recipe(**kw)


def read_recipes(folder: str | os.PathLike = RECIPES_DIR) -> dict[str, Recipe]:
    """Every ``*.yaml`` recipe of ``folder``: name -> :class:`Recipe`, public names sorted, test-only ones last."""
    recipes = [read_recipe(p) for p in Path(folder).glob("*.yaml")]
    return {r.name: r for r in sorted(recipes, key=lambda r: (r.status == "test", r.name))}


def recipes() -> dict[str, Recipe]:
    """:data:`RECIPES`, read from the recipe files on first use (``import qe.zoo`` reads no file)."""
    g = globals()
    if "RECIPES" not in g:
        found = read_recipes()
        g["RECIPES"] = found
        #: zoo name -> one line saying what it is (test-only recipes left out)
        g["NAMES"] = {n: r.description for n, r in found.items() if r.status != "test"}
    return g["RECIPES"]


def __getattr__(name: str) -> Any:
    if name in ("RECIPES", "NAMES"):
        recipes()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def models_dir(override: str | os.PathLike | None = None) -> Path:
    """Where zoo models are built: ``override``, else ``$QE_MODELS``, else ``~/.cache/qe/models``."""
    return Path(override or os.environ.get(ENV_VAR) or DEFAULT_DIR).expanduser()


def model_path(name: str, root: str | os.PathLike | None = None) -> Path:
    return models_dir(root) / name


def is_built(name: str, root: str | os.PathLike | None = None) -> bool:
    from qe.core.export import MANIFEST

    return (model_path(name, root) / MANIFEST).is_file()


def build_command(name: str) -> str:
    return f"qe zoo build {name}"


def build_times(name: str) -> str:
    """``2-core CPU: about 15-20 min; GPU: qe zoo build NAME --gpu, 47 s measured on one H200 ...`` (the GPU part
    says "GPU time not measured" when no one measured it, and is left out for a recipe without a GPU schedule)."""
    r = recipes().get(name)
    if r is None:
        return ""
    cpu = f"2-core CPU: {r.cpu_time or r.cpu_budget or 'not measured'}"
    if not r.gpu_overrides:
        return cpu
    return f"{cpu}; GPU: {build_command(name)} --gpu, {r.gpu_time_text}"


def not_built_message(name: str) -> str:
    """One line: what ``name`` is, where it was looked for, and how to build it on a CPU and on a GPU (with both
    build times)."""
    where = model_path(name)
    r = recipes().get(name)
    what = (r.description if r and r.status != "test" else "") or "test-only recipe"
    times = build_times(name)
    return (f"{name!r} is a named model of the zoo ({what}), but it is not built in {where.parent} (${ENV_VAR}). "
            f"Build it with: {build_command(name)}" + (f" ({times})" if times else "")
            + f", or set ${ENV_VAR} to the folder that holds it")


def describe() -> str:
    """One line per zoo name, saying whether it is built in :func:`models_dir`."""
    root = models_dir()
    recipes()
    names = globals()["NAMES"]
    rows, width = [], max(map(len, names))
    for name, doc in names.items():
        state = "built" if is_built(name, root) else "not built"
        rows.append(f"{name:{width}s} [{state:9s}] {doc}")
    return "\n".join(rows)


__all__ = ["ENV_VAR", "NAMES", "RECIPES", "RECIPES_DIR", "Recipe", "RecipeError", "read_recipe", "read_recipes", "recipes",
           "models_dir", "model_path", "is_built", "build_command", "build_times", "not_built_message", "describe"]
