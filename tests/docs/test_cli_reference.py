"""The command-line reference (docs/reference/cli.md) pastes each command's ``--help``; it must be the help the
installed ``qe`` prints now (whitespace aside: argparse wraps to the terminal's width)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "cli.md"
#: Hydra applications: their --help lists config groups and the whole config, shown in part on the page
HYDRA = {"qe train", "qe evaluate"}


def pasted_helps() -> list[tuple[str, str]]:
    """``[(command, first text block after its heading), ...]`` for every ``## qe ...`` / ``### qe ...`` heading."""
    text = PAGE.read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r"(?m)^#{2,3} (qe(?: [a-z]+)*)\s*$", text):
        cmd = m.group(1)
        block = re.search(r"```text\n(.*?)```", text[m.end():], re.S)
        nxt = re.search(r"(?m)^#{2,3} ", text[m.end():])
        if block and (nxt is None or block.start() < nxt.start()) and cmd not in HYDRA:
            out.append((cmd, block.group(1)))
    return out


def _norm(s: str) -> str:
    return " ".join(s.split())


def test_the_page_pastes_the_commands():
    cmds = [c for c, _ in pasted_helps()]
    assert "qe" in cmds and "qe score" in cmds and "qe compare" in cmds and "qe zoo build" in cmds, cmds
    assert len(cmds) >= 12, cmds


@pytest.mark.parametrize("cmd, pasted", pasted_helps(), ids=[c for c, _ in pasted_helps()])
def test_pasted_help_is_the_current_help(cmd, pasted):
    args = [sys.executable, "-m", "qe", *cmd.split()[1:], "--help"]
    env = dict(os.environ, COLUMNS="80")
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    live = r.stdout.replace("python -m qe", "qe").replace("__main__.py", "qe")
    assert _norm(pasted) == _norm(live), f"docs/reference/cli.md: the help of `{cmd}` changed; paste:\n{live}"
