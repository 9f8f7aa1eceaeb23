"""Configs as plain data, and the one place a hyperparameter's default is written.

:func:`to_dict` turns a config (OmegaConf node, mapping, or anything else) into plain Python data.

:func:`conf_defaults` reads the packaged Hydra configs (``qe/conf``): every training hyperparameter's default is
written once, in its YAML file, and the networks and LightningModules take their signature defaults from there
(``hidden_size: int = D["hidden_size"]``), so ``python train.py``, ``qe train`` and a Python user who builds
``LSTMLM(vocab_size)`` by hand get the same model.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

#: the packaged configs (``conf/`` in a clone is a link to it)
CONF_DIR = Path(__file__).resolve().parents[1] / "conf"
_HYDRA_KEYS = ("_target_", "_partial_", "_recursive_", "_convert_", "defaults")


def to_dict(cfg: Any, resolve: bool = True) -> Any:
    """Plain dict/list for an OmegaConf node; a mapping is copied; ``None`` gives ``{}``.

    Interpolations that can only be resolved inside a Hydra run (``${hydra:...}``) are left unresolved instead of
    failing, so a config stored in an export's manifest is always written.
    """
    if cfg is None:
        return {}
    try:
        from omegaconf import OmegaConf
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        OmegaConf = None  # type: ignore[assignment]
    if OmegaConf is not None and OmegaConf.is_config(cfg):
        if resolve:
            try:
                return OmegaConf.to_container(cfg, resolve=True)
            except Exception:  # hydra-only interpolations outside a Hydra run
                pass
        return OmegaConf.to_container(cfg, resolve=False)
    if isinstance(cfg, dict):
        return {k: to_dict(v, resolve) for k, v in cfg.items()}
    if isinstance(cfg, (list, tuple)):
        return [to_dict(v, resolve) for v in cfg]
    return cfg


@functools.lru_cache(maxsize=None)
def _read(name: str) -> dict:
    import yaml

    path = CONF_DIR / f"{name}.yaml"
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f) or {}


def conf_defaults(*layers: str) -> dict[str, Any]:
    """The values of packaged config files merged in order, later over earlier, without Hydra's own keys.

    A layer is a file under ``qe/conf`` without ``.yaml`` (``"model/hf_encoder"``) or a section of one
    (``"task/mlm:model"``), so a task that overrides its model group's values gives the values the composed config
    has: ``conf_defaults("model/hf_encoder", "task/mlm:model")``.
    """
    out: dict[str, Any] = {}
    for layer in layers:
        name, _, key = layer.partition(":")
        node = _read(name)
        if key:
            node = node.get(key) or {}
        out.update({k: v for k, v in node.items() if k not in _HYDRA_KEYS})
    return out


__all__ = ["to_dict", "conf_defaults", "CONF_DIR", "as_flag"]


_TRUE = {"true", "yes", "y", "on", "1"}
_FALSE = {"false", "no", "n", "off", "0"}


def as_flag(value: Any, name: str) -> bool:
    """An on/off option as a bool: True/False, 1/0, or the words true/false, yes/no, on/off (any case), as they come
    from ``--opt KEY=VALUE`` or a config file. Anything else is refused naming the option (``bool("no")`` would
    silently be True)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"{name}={value!r}: give true or false (yes/no, on/off, 1/0)")
