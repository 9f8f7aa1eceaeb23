"""Where data lives. One rule, used by configs and code alike:

1. ``QE_DATA_DIR`` (environment) when set;
2. otherwise the first ``shared/data`` folder found next to the current directory or any of its parents,
   or next to the qe checkout (this workspace keeps public datasets in ``../shared/data``);
3. otherwise ``~/.cache/qe/data`` (where ``qe data download`` puts files for online users).
"""
from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "QE_DATA_DIR"


def _candidates() -> list[Path]:
    starts = [Path.cwd().resolve(), Path(__file__).resolve().parents[2]]
    out = []
    for start in starts:
        for d in (start, *start.parents):
            out.append(d / "shared" / "data")
            out.append(d.parent / "shared" / "data") if d.parent != d else None
    return out


def default_data_dir() -> Path:
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    for c in _candidates():
        if c.is_dir():
            return c
    return Path("~/.cache/qe/data").expanduser()


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    if data_dir is None or str(data_dir) in ("", "None", "null"):
        return default_data_dir()
    return Path(data_dir).expanduser()


def require(path: Path, what: str) -> Path:
    """Return ``path`` if it exists, else raise a FileNotFoundError that says how to get it."""
    if not path.exists():
        raise FileNotFoundError(
            f"{what} not found at {path}. Set {ENV_VAR} (or paths.data_dir=...) to the folder that holds it, "
            f"or run `qe data download` when online (see data/README.md)."
        )
    return path


def resources_dir() -> Path:
    """Files shipped inside the package (embedded default corpus and rated sample)."""
    return Path(__file__).resolve().parents[1] / "resources"


def write_atomically(path: str | os.PathLike, write, fsync: bool = False) -> None:
    """Write ``path`` through a temporary file beside it (``write(tmp)`` writes that file), then rename it into place
    (:func:`os.replace`): a reader never sees half a file, and a write that fails (a full disk) leaves ``path`` as
    it was. ``fsync``: flush the temporary file to disk before the rename. The temporary file never stays."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        if fsync:
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
