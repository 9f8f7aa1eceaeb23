"""The first day on the docs site and the README (issue 36, items 17 and 20): pages link to the previous / next page,
code blocks wrap their long lines (the trailing comments carry the explanations), the install line is the same
everywhere, every export the examples load is made by a command the reader is shown, and the README says how long
the test suite takes."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from conftest import REPO

DOCS = REPO / "docs"
README = REPO / "README.md"
#: pages a new reader starts from: what they load, they create on the same page
FIRST_DAY = (DOCS / "index.md", DOCS / "getting-started.md")


def _mkdocs() -> dict:
    return yaml.safe_load((REPO / "mkdocs.yml").read_text())


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "reports" not in p.relative_to(DOCS).parts)


def _code_blocks(path: Path) -> list[tuple[str, str]]:
    """(language, body) of every fenced block of a Markdown file."""
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r"^ *```([\w-]*)[^\n]*\n(.*?)^ *```", path.read_text(), re.M | re.S)]


def test_pages_have_a_previous_next_footer():
    assert "navigation.footer" in _mkdocs()["theme"]["features"]


def test_code_blocks_wrap_long_lines():
    sheets = _mkdocs().get("extra_css") or []
    assert sheets, "mkdocs.yml names no extra_css"
    css = ""
    for s in sheets:
        assert (DOCS / s).is_file(), f"extra_css {s} is not under docs/"
        css += re.sub(r"/\*.*?\*/", "", (DOCS / s).read_text(), flags=re.S)
    rules = {re.sub(r"\s+", "", sel): body for sel, body in re.findall(r"([^{}]+)\{([^}]*)\}", css)}
    body = next((b for sel, b in rules.items() if any(s.endswith("pre>code") for s in sel.split(","))), None)
    assert body is not None, "no rule for `pre > code` in the extra CSS"
    assert re.search(r"white-space\s*:\s*(pre-wrap|break-spaces)", body), body


def _pip_installs(path: Path) -> list[str]:
    """The `pip install ...` commands of the first shell block of a page that installs torch, in order."""
    for lang, body in _code_blocks(path):
        if lang in ("bash", "sh", "") and re.search(r"^\s*pip install torch", body, re.M):
            cmds = []
            for line in body.splitlines():
                line = re.sub(r"\s+#.*$", "", line).strip()
                cmds += [" ".join(shlex.split(c)) for c in line.split("&&") if c.strip().startswith("pip install")]
            return cmds
    pytest.fail(f"{path.relative_to(REPO)}: no shell block installs torch")


def test_the_install_line_is_the_same_everywhere():
    readme = _pip_installs(README)
    assert any("torch" in c for c in readme) and len(readme) >= 2, readme
    for page in FIRST_DAY:
        assert _pip_installs(page) == readme, f"{page.relative_to(REPO)} installs differently from README.md"


#: an export loaded: qe.load("exports/X" ...), qe score -m/--model exports/X, qe evaluate 'models=[... exports/X]'
LOADS = (r"""qe\.load\([^)]*?["']exports/([\w.-]+)""",
         r"""qe score\b[^\n#]*?(?:-m|--model)[ =]exports/([\w.-]+)""",
         r"""models=\[[^\]]*?\bexports/([\w.-]+)""")
#: an export made: export_dir=exports/X (qe train / train.py), --dest exports/X (python -m qe.training)
MAKES = r"(?:export_dir=|--dest )exports/([\w.-]+)"


def _loaded(text: str) -> set[str]:
    return {m for pat in LOADS for m in re.findall(pat, text)}


def _made(text: str) -> set[str]:
    return set(re.findall(MAKES, text))


def test_the_readme_makes_every_export_it_loads():
    # the patterns are not vacuous: they find what the examples load and make
    sample = ('scorer = qe.load("exports/a")\nqe.load("rouge-lm", lm="exports/b")\n'
              "qe score -m exports/c -i x.txt\nqe evaluate 'models=[bleu-4,exports/d]'\n"
              "qe train tokenizer=sp export_dir=exports/a\npython -m qe.training RUN --dest exports/e\n")
    assert _loaded(sample) == {"a", "b", "c", "d"} and _made(sample) == {"a", "e"}
    text = README.read_text()
    assert "wp_lm" in _loaded(text)
    missing = _loaded(text) - _made(text)
    assert not missing, f"README.md loads exports/{sorted(missing)} but no command in it makes them"


def test_every_export_the_docs_load_is_made_by_a_command_the_reader_is_shown():
    """First-day pages make what they load on the same page; any other page's export is made somewhere in docs/."""
    pages = _pages()
    assert _loaded("".join(p.read_text() for p in pages)) >= {"wp_lm", "ratpred_s4", "cola_minilm"}
    made = set().union(*(_made(p.read_text()) for p in pages))
    for page in pages:
        text = page.read_text()
        missing = _loaded(text) - (_made(text) if page in FIRST_DAY else made)
        assert not missing, (f"{page.relative_to(REPO)} loads exports/{sorted(missing)}, which no command "
                             f"{'on it' if page in FIRST_DAY else 'in docs/'} makes "
                             "(export_dir=exports/NAME or --dest exports/NAME)")


def test_the_readme_says_how_long_the_test_suite_takes():
    text = README.read_text()
    assert re.search(r"^python -m pytest -q$", text, re.M), "the README's test command changed"
    after = text.split("python -m pytest -q\n", 1)[1][:1500]
    assert re.search(r"\b\d+\s*(?:–|-|to)\s*\d+\s*minutes\b|\babout \d+ minutes\b", after), \
        "the README does not say how long `python -m pytest -q` takes"
