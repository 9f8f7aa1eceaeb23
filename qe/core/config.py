"""A config (OmegaConf node, mapping, or anything else) as plain Python data."""
from __future__ import annotations

from typing import Any


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


__all__ = ["to_dict"]
