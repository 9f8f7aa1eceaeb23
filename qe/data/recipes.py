"""Dataset recipes (``data/<name>.yaml``): where each public dataset lives, its checksums and license.

``qe data verify [NAME]`` checks the files under the data directory against the recorded sha256;
``qe data download NAME`` fetches missing files from their upstream URLs (online users), verifies them and only
then moves them into place.
"""
from __future__ import annotations

import os
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from qe.errors import QEError
from qe.core.export import sha256_file
from qe.core.paths import resolve_data_dir


class DatasetError(QEError, LookupError):
    """An unknown dataset name, a recipe without a URL, a download that failed or did not match its checksum
    (``qe data`` reports it as one line, exit status 2)."""


def recipes_dir() -> Path:
    env = os.environ.get("QE_RECIPES_DIR")
    if env:
        return Path(env)
    from qe.core.paths import resources_dir

    return resources_dir() / "datasets"


def load_recipes() -> dict[str, dict[str, Any]]:
    d = recipes_dir()
    out = {}
    for f in sorted(d.glob("*.yaml")):
        r = yaml.safe_load(f.read_text(encoding="utf-8"))
        if isinstance(r, dict) and "name" in r:
            out[r["name"]] = r
    return out


def _get(name: str) -> dict[str, Any]:
    rs = load_recipes()
    if name not in rs:
        raise DatasetError(f"unknown dataset {name!r}; recipes: {', '.join(rs) or '(none found in ' + str(recipes_dir()) + ')'}")
    return rs[name]


def verify(name: str, data_dir: str | Path | None = None) -> list[tuple[str, str]]:
    """[(path, status)] with status ok / missing / checksum mismatch."""
    root = resolve_data_dir(data_dir)
    out = []
    for f in _get(name).get("files", []):
        p = root / f["path"]
        if not p.is_file():
            out.append((str(p), "missing"))
        elif f.get("sha256") and sha256_file(p) != f["sha256"]:
            out.append((str(p), "checksum mismatch"))
        else:
            out.append((str(p), "ok"))
    return out


def download(name: str, data_dir: str | Path | None = None) -> list[Path]:
    root = resolve_data_dir(data_dir)
    got = []
    for f in _get(name).get("files", []):
        dest = root / f["path"]
        if dest.is_file() and (not f.get("sha256") or sha256_file(dest) == f["sha256"]):
            got.append(dest)
            continue
        if not f.get("url"):
            raise DatasetError(f"{name}: no URL recorded for {f['path']}; place the file there by hand")
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
        os.close(fd)
        try:
            try:
                urllib.request.urlretrieve(f["url"], tmp)
            except OSError as exc:  # URLError, HTTPError, a refused connection, a full disk
                raise DatasetError(f"{f['url']}: download failed ({exc}); nothing written to {dest}") from exc
            if f.get("sha256") and sha256_file(tmp) != f["sha256"]:
                raise DatasetError(f"{f['url']}: checksum mismatch, file discarded")
            os.replace(tmp, dest)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        got.append(dest)
    return got


def cmd_list() -> int:
    rs = load_recipes()
    root = resolve_data_dir(None)
    print(f"data directory: {root}")
    for n, r in rs.items():
        status = "ok" if all(s == "ok" for _, s in verify(n)) else "incomplete"
        print(f"  {n:12s} {status:10s} {r.get('license', '')[:50]:50s} {r.get('description', '')[:60]}")
    return 0


def cmd_verify(name: str | None) -> int:
    bad = 0
    for n in [name] if name else list(load_recipes()):
        for p, s in verify(n):
            print(f"{s:18s} {p}")
            bad += s != "ok"
    return 1 if bad else 0


def cmd_download(name: str) -> int:
    for p in download(name):
        print(f"ok  {p}")
    return 0
