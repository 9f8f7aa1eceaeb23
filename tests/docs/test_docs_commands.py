"""Every shell command in the documentation still runs as written (the fast part: it parses, it composes).

Running the commands of docs/ takes hours; what rots in between is cheap to catch. Every ```bash / ```sh /
```console / ```shell block of docs/**/*.md (docs/results/reports/ excepted: generated reports) is read as a shell
would read it: backslash-continued lines and multi-line quotes joined, ``# comments`` dropped, heredoc bodies
skipped, chains split at ``&&`` / ``||`` / ``;`` / ``|``, leading ``VAR=value`` assignments dropped, ``srun ...``
style wrappers peeled off. Variables set in the same block (``R="..."``, ``export M=~/m``, ``for s in 1 2; do``:
each value in turn) are expanded; so are the project's own environment variables (``$QE_MODELS``, ``$QE_DATA_DIR``),
which have documented defaults. Then, per command, without running it:

* ``qe score|compare|list|data ...`` / ``python -m qe ...``: parsed by the real parser of :mod:`qe.cli`
  (``qe.cli._parser()``); ``qe zoo ...`` / ``python -m experiments.zoo ...`` / ``python -m qe.zoo.build ...``: parsed
  by the parser :func:`qe.zoo.build.main` builds (its ``parse_args`` stops the program right after parsing).
  ``--help`` / ``--version`` (argparse exits 0) are fine. A ``-m NAME`` (not a path) is a registered scorer or a
  named model of the zoo; ``qe zoo build|command|spread NAME`` name a recipe; ``--against published`` a model with a
  published fingerprint.
* ``qe train|evaluate ...`` / ``python train.py|evaluate.py ...``: the command line is read by Hydra's own argument
  parser (``-m``, ``--cfg job``, ``--help`` ...), then the config (qe/conf: ``train`` / ``evaluate``) is composed
  with the overrides through Hydra's compose API (unknown keys, group options and malformed overrides fail there).
  With ``-m`` every value of a sweep override is composed (the others at their first value). An override that needs
  a Hydra plugin that is not installed (``hparams_search=lm_optuna``, ``hydra/launcher=slurm``, and the
  ``hydra.sweeper.*`` / ``hydra.launcher.*`` keys that belong to it) is left out, after checking that its config
  file exists. ``+a.b=v`` must add under a section ``a`` the config has; ``qe evaluate``'s ``models`` and
  ``scorers.*.model`` names are registered scorers or zoo names.
* ``python -m experiments.X ...`` / ``python benchmarks/X.py ...`` (any ``python path.py``) / ``python -m qe.X``: the
  module or file exists; for an argparse program, every ``--flag`` of the command is a string in its source, and so
  is a bare first word (a subcommand) where the program has subcommands or choices.
* anything else (pip, git, mkdocs, cat, python -c, heredoc scripts ...): not checked.

Commands with placeholders (``<run>``, ``...``, ``NAME``, ``USER/REPO``, ``[--json]``, a ``$VAR`` with no value)
are skipped with the reason (``pytest -rs`` lists them). ``test_enough_commands_checked`` keeps the test honest:
a floor on the number of commands actually checked.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import importlib.util
import io
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import REPO

DOCS = REPO / "docs"
CONF = REPO / "qe" / "conf"
SHELL_LANGS = {"bash", "sh", "console", "shell", "shell-session", "zsh"}
#: the project's documented environment variables (they have defaults: not placeholders)
KNOWN_ENV = {"QE_MODELS": "/tmp/qe-docs-check/models", "QE_DATA_DIR": "/tmp/qe-docs-check/data",
             "HOME": "/tmp/qe-docs-check/home"}
#: programs that run the command that follows them
WRAPPERS = {"srun", "time", "nohup", "env", "exec", "command", "xargs", "mpirun", "torchrun"}
PYTHONS = {"python", "python3"}
CHECKED_KINDS = ("qe", "zoo", "content", "hydra", "module", "script")
#: a floor under the number of commands checked (171 when it was written); far fewer means the extraction broke
MIN_CHECKED = 150


@dataclass
class Command:
    page: str                       # relative to docs/
    line: int                       # first line of the command in the page
    text: str                       # the command as extracted (one line)
    argv: list[str] = field(default_factory=list)
    kind: str = "other"             # qe | zoo | content | hydra | module | script | other
    target: str = ""                # hydra: train/evaluate; module/script: the module name / path
    skip: str | None = None         # why it is not checked (a placeholder)
    variants: list[list[str]] = field(default_factory=list)  # argv with the other values of its loop variables
    error: str | None = None        # the shell text could not be read
    n: int = 1                      # the n-th command on its line (a chain: page:line#2 ...)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


# ------------------------------------------------------------------------------------------------ extraction
def _code_blocks(path: Path):
    """(language, [(line number, text)]) of every fenced block of a markdown page."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)", lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = len(m.group(1)), m.group(2), m.group(3).lower()
        body = []
        i += 1
        while i < len(lines) and not re.match(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[i]):
            body.append((i + 1, lines[i][indent:] if lines[i][:indent].isspace() else lines[i].lstrip()))
            i += 1
        i += 1
        yield lang, body


def _scan(text: str) -> tuple[str, str | None, bool]:
    """Shell text -> (text without comments and backslash-newlines, the quote left open, ends in a continuation)."""
    out: list[str] = []
    quote = None
    cont = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        cont = False
        if quote == "'":
            out.append(c)
            quote = None if c == "'" else quote
            i += 1
        elif quote == '"':
            if c == "\\" and i + 1 < n:
                if text[i + 1] == "\n":  # a continuation inside double quotes
                    cont = i + 2 >= n
                else:
                    out.append(text[i:i + 2])
                i += 2
                continue
            out.append(c)
            quote = None if c == '"' else quote
            i += 1
        elif c == "\\" and i + 1 < n:
            if text[i + 1] == "\n":
                cont = i + 2 >= n
            else:
                out.append(text[i:i + 2])
            i += 2
        elif c in "'\"":
            quote = c
            out.append(c)
            i += 1
        elif c == "#" and (not out or out[-1][-1] in " \t\n;|&()"):
            while i < n and text[i] != "\n":  # a comment: up to the newline (a backslash in it continues nothing)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out), quote, cont


def _logical_lines(body: list[tuple[int, str]]):
    """(first line number, one shell line with its continuations and multi-line quotes joined); heredoc bodies
    are skipped."""
    buf, start, heredoc = "", 0, None
    for lineno, line in body:
        if heredoc is not None:
            if line.strip() == heredoc:
                heredoc = None
            continue
        if not buf:
            if line.startswith("$ "):  # console prompt
                line = line[2:]
            start = lineno
        buf += line + "\n"
        text, quote, cont = _scan(buf)
        if quote or cont:
            continue
        buf = ""
        m = re.search(r"(?<!<)<<-?(?!<)\s*(['\"]?)(\w+)\1", text)
        if m:
            heredoc = m.group(2)
        if text.strip():
            yield start, text.strip()
    if buf.strip():
        yield start, _scan(buf)[0].strip()


def _split_chain(text: str) -> list[str]:
    """Split at unquoted ``&&`` ``||`` ``;`` ``|`` ``&`` and newlines."""
    parts, cur, quote, i = [], [], None, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"' and i + 1 < len(text):
                cur.append(text[i:i + 2])
                i += 2
                continue
            quote = None if c == quote else quote
            cur.append(c)
        elif c == "\\" and i + 1 < len(text):
            cur.append(text[i:i + 2])
            i += 2
            continue
        elif c in "'\"":
            quote = c
            cur.append(c)
        elif c in ";|&\n" and not (c == "&" and cur and cur[-1] in "<>") and not (
                c == "&" and i + 1 < len(text) and text[i + 1] == ">"):
            if text[i:i + 2] in ("&&", "||"):
                i += 1
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+)|(\())")


def _expand(text: str, env: dict[str, str]) -> tuple[str, list[str]]:
    """``$VAR`` / ``${VAR}`` outside single quotes replaced from ``env``; returns (text, names with no value)."""
    out, missing, quote, i = [], [], None, 0
    while i < len(text):
        c = text[i]
        if quote == "'":
            quote = None if c == "'" else quote
            out.append(c)
            i += 1
            continue
        if c == "\\" and i + 1 < len(text):
            out.append(text[i:i + 2])
            i += 2
            continue
        if c in "'\"" and quote is None:
            quote = c
        elif c == '"' and quote == '"':
            quote = None
        if c == "~" and quote is None and text[i + 1:i + 2] in ("/", "", " ", "\t", "\n"):
            word = re.split(r"\s", "".join(out))[-1]  # the word so far ("" at a word start)
            if word == "" or re.fullmatch(r"[A-Za-z_]\w*=", word):  # tilde expansion (word start, assignment)
                out.append(env.get("HOME", KNOWN_ENV["HOME"]))
                i += 1
                continue
        if c == "$":
            m = _VAR.match(text, i)
            if m:
                name = m.group(1) or m.group(2)
                if name is None:  # $( ... ): a command substitution
                    missing.append("$(...)")
                    out.append(c)
                    i += 1
                    continue
                if name in env:
                    out.append(env[name])
                elif name in KNOWN_ENV:
                    out.append(KNOWN_ENV[name])
                else:
                    missing.append("$" + name)
                    out.append(m.group(0))
                i = m.end()
                continue
        out.append(c)
        i += 1
    return "".join(out), missing


_ASSIGN = re.compile(r"^[A-Za-z_]\w*=")
_ANGLE = re.compile(r"<[A-Za-z][^<>\n]*>")
_UPPER = re.compile(r"^[A-Z][A-Z0-9_]*(/[A-Z][A-Z0-9_]*)*$")


def _drop_redirections(tokens: list[str]) -> list[str]:
    out, skip_next = [], False
    for t in tokens:
        if skip_next:
            skip_next = False
            continue
        if t in (">", ">>", "<", "2>", "2>>", "&>", "1>", "<<<"):
            skip_next = True
            continue
        if re.match(r"^(\d?>>?|&>|<)\S", t) or re.match(r"^\d>&\d$", t):
            continue
        out.append(t)
    return out


def _program(tokens: list[str]) -> list[str]:
    """The command's own tokens: leading VAR=value assignments, redirections and wrappers (srun ...) taken off."""
    j = 0
    while j < len(tokens) and _ASSIGN.match(tokens[j]):
        j += 1
    tokens = _drop_redirections(tokens[j:])
    if tokens and tokens[0] in WRAPPERS:
        k = next((k for k, t in enumerate(tokens) if t == "qe" or t in PYTHONS), None)
        tokens = tokens[k:] if k is not None else []
    return tokens


def _placeholder(tokens: list[str]) -> str | None:
    for t in tokens:
        if "..." in t or "\u2026" in t:
            return f"placeholder {t!r}"
        if t.startswith("[") and len(t) > 1:
            return f"optional-argument synopsis {t!r}"
        if _UPPER.match(t):
            return f"placeholder {t!r}"
    return None


def _qe(cmd: Command, argv: list[str]) -> None:
    """``qe ARGS``: qe train / evaluate are Hydra applications, qe zoo has its own parser, the rest is qe.cli's."""
    if argv and argv[0] in ("train", "evaluate"):
        cmd.kind, cmd.target, cmd.argv = "hydra", argv[0], argv[1:]
    elif argv and argv[0] == "zoo":
        cmd.kind, cmd.argv = "zoo", argv[1:]
    elif argv and argv[0] == "content":  # qe content mine ...: qe.content.mining's own parser
        cmd.kind, cmd.argv = "content", argv[1:]
    else:
        cmd.kind, cmd.argv = "qe", argv


def _classify(cmd: Command, tokens: list[str]) -> None:
    """Sets kind / target / argv of ``cmd`` from its tokens (wrappers and environment assignments already gone)."""
    if not tokens:
        return
    prog = tokens[0]
    if prog == "qe":
        _qe(cmd, tokens[1:])
        return
    if prog not in PYTHONS and not re.match(r"^python3(\.\d+)?$", prog):
        return
    i = 1
    while i < len(tokens):
        t = tokens[i]
        if t in ("-m", "-c", "-"):
            break
        if t in ("-X", "-W"):
            i += 2
            continue
        if t.startswith("-"):
            i += 1
            continue
        break
    if i >= len(tokens):
        return
    t = tokens[i]
    if t == "-m" and i + 1 < len(tokens):
        mod, rest = tokens[i + 1], tokens[i + 2:]
        if mod in ("qe", "qe.cli"):
            _qe(cmd, rest)
        elif mod in ("qe.zoo.build", "experiments.zoo"):  # the same program as `qe zoo`
            cmd.kind, cmd.argv = "zoo", rest
        elif mod.split(".")[0] in ("qe", "experiments", "benchmarks"):
            cmd.kind, cmd.target, cmd.argv = "module", mod, rest
        return
    if t in ("-c", "-") or t.startswith("-"):
        return
    name = Path(t).name
    if name in ("train.py", "evaluate.py") and Path(t).parent in (Path("."), Path("")):
        cmd.kind, cmd.target, cmd.argv = "hydra", name[:-3], tokens[i + 1:]
    elif t.endswith(".py"):
        cmd.kind, cmd.target, cmd.argv = "script", t, tokens[i + 1:]


def extract(path: Path, root: Path = DOCS) -> list[Command]:
    """The commands of one page (``root``: the docs folder the page name is relative to)."""
    page = path.relative_to(root).as_posix()
    out: list[Command] = []
    for lang, body in _code_blocks(path):
        if lang not in SHELL_LANGS:
            continue
        env: dict[str, str] = {}
        loops: dict[str, list[str]] = {}
        for lineno, logical in _logical_lines(body):
            for segment in _split_chain(logical):
                head = segment.split(None, 1)
                word = head[0] if head else ""
                if word in ("done", "fi", "esac", "}", ")"):
                    continue
                if word in ("do", "then", "else", "{", "("):
                    segment = head[1] if len(head) > 1 else ""
                    if not segment:
                        continue
                m = re.match(r"^for\s+(\w+)\s+in\s+(.*)$", segment)
                if m:  # the loop body is checked with every value (the others at their first)
                    words = shlex.split(_expand(m.group(2), env)[0])
                    if words:
                        env[m.group(1)], loops[m.group(1)] = words[0], words
                    continue
                text, missing = _expand(segment, env)
                cmd = Command(page, lineno, " ".join(segment.split()))
                try:
                    tokens = shlex.split(text)
                except ValueError as exc:
                    cmd.error = f"the shell text cannot be read: {exc}"
                    tokens = segment.split()
                if tokens and tokens[0] == "export":
                    tokens = tokens[1:]
                    for t in tokens:
                        if _ASSIGN.match(t):
                            k, v = t.split("=", 1)
                            env[k] = v
                    continue
                j = 0
                while j < len(tokens) and _ASSIGN.match(tokens[j]):
                    j += 1
                if j == len(tokens):  # only assignments: variables of the block
                    for t in tokens:
                        k, v = t.split("=", 1)
                        env[k] = v
                    continue
                tokens = _program(tokens[j:])
                if not tokens:
                    continue
                _classify(cmd, tokens)
                if cmd.kind == "other":
                    out.append(cmd)
                    continue
                for name, values in loops.items():
                    if re.search(rf"\$\{{?{name}\b", segment):
                        for value in values[1:]:
                            other = Command(page, lineno, cmd.text)
                            try:
                                _classify(other, _program(shlex.split(_expand(segment, {**env, name: value})[0])))
                            except ValueError:
                                continue
                            if (other.kind, other.target) == (cmd.kind, cmd.target):
                                cmd.variants.append(other.argv)
                if cmd.kind in ("module", "script"):  # the module / file is checked whatever its arguments are
                    if _ANGLE.search(cmd.target) or "$" in cmd.target:
                        cmd.skip = f"placeholder in {cmd.target!r}"
                elif missing:
                    cmd.skip = f"{', '.join(sorted(set(missing)))} has no value in its block"
                elif _ANGLE.search(text):
                    cmd.skip = f"placeholder {_ANGLE.search(text).group(0)!r}"
                else:
                    ph = _placeholder(cmd.argv)
                    if ph and cmd.kind in ("qe", "zoo", "content", "hydra"):
                        cmd.skip = ph
                out.append(cmd)
    return out


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).parts[:2] != ("results", "reports"))


@functools.lru_cache(maxsize=None)
def all_commands() -> tuple[Command, ...]:
    cmds: list[Command] = []
    for p in _pages():
        cmds.extend(extract(p))
    # the same page:line twice (a chain on one line): page:line#2 ...
    seen: dict[str, int] = {}
    for c in cmds:
        seen[c.id] = c.n = seen.get(c.id, 0) + 1
    return tuple(cmds)


def _test_id(c: Command) -> str:
    return c.id if c.n == 1 else f"{c.id}#{c.n}"


CASES = [c for c in all_commands() if c.kind in CHECKED_KINDS]


# ---------------------------------------------------------------------------------------------------- checks
class _Parsed(Exception):
    def __init__(self, namespace):
        super().__init__()
        self.namespace = namespace


def _argparse(parse, argv: list[str]):
    """(None, namespace) when ``parse(argv)`` parses (namespace None after --help / --version: argparse exits 0),
    else (argparse's error line, None)."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            return None, parse(argv)
    except _Parsed as done:
        return None, done.namespace
    except SystemExit as exc:
        if exc.code in (0, None):
            return None, None
        lines = err.getvalue().strip().splitlines()
        return (lines[-1] if lines else f"exit status {exc.code}"), None


def _parse_qe(argv: list[str]):
    from qe import cli

    return cli._parser().parse_args(argv)


def _parse_zoo(argv: list[str]):
    """The parser qe.zoo.build builds in _main, stopped right after parsing (nothing runs)."""
    from unittest import mock

    from qe.zoo import build

    original = argparse.ArgumentParser.parse_args

    def parse_only(self, args=None, namespace=None):
        raise _Parsed(original(self, args, namespace))

    with mock.patch.object(argparse.ArgumentParser, "parse_args", parse_only):
        build._main([a for a in argv if a != "--debug"])  # `qe zoo` drops --debug before the zoo's parser


def _parse_content(argv: list[str]):
    """The parser of ``qe content`` (qe.content.mining.main), stopped right after parsing (nothing runs)."""
    from unittest import mock

    from qe.content import mining

    original = argparse.ArgumentParser.parse_args

    def parse_only(self, args=None, namespace=None):
        raise _Parsed(original(self, args, namespace))

    with mock.patch.object(argparse.ArgumentParser, "parse_args", parse_only):
        mining.main(argv)


def _is_name(model: str) -> bool:
    """A scorer / zoo name rather than a path, an archive or a URL."""
    return bool(model) and not re.search(r"[/\\:]|\.qe\.tar\.gz$|\.tgz$|\.tar\.gz$|\$\{", model)


def _check_model_names(models: list[tuple[str, str]]) -> None:
    """(where, model) pairs: a name (not a path) is a registered scorer or a named model of the zoo."""
    from qe import zoo
    from qe.registry import SCORERS

    bad = [f"{where}={m}" for where, m in models if _is_name(m) and m.lower() not in SCORERS and m not in zoo.NAMES]
    assert not bad, (f"not a registered scorer nor a named model of the zoo: {', '.join(bad)} "
                     "(qe list shows both)")


def _check_zoo_names(ns) -> None:
    from qe.zoo import build

    if ns is None:
        return
    names = {"build": getattr(ns, "names", None) or [], "spread": [getattr(ns, "name", "")],
             "command": [getattr(ns, "name", "")]}.get(ns.cmd, [])
    bad = [n for n in names if n not in build.RECIPES]
    assert not bad, f"qe zoo {ns.cmd}: no recipe {', '.join(bad)}; recipes: {', '.join(build.RECIPES)}"
    if ns.cmd == "verify" and ns.against == "published":
        missing = [n for n in ns.names or [] if build.published_fingerprint(n) is None]
        assert not missing, f"qe zoo verify --against published: no published fingerprint for {', '.join(missing)}"


def _plugin_of(group: str, option: str) -> str | None:
    """The Hydra plugin config (``hydra/sweeper/optuna``) a group option needs, or None."""
    from qe.app import PLUGINS

    key = f"{group}/{option}"
    if key in PLUGINS:
        return key
    path = CONF / group / f"{option}.yaml"
    if not path.is_file():
        return None
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\s*-\s*(?:override\s+)?/?(hydra/(?:sweeper|launcher))\s*:\s*(\w+)", line)
        if m and f"{m.group(1)}/{m.group(2)}" in PLUGINS:
            return f"{m.group(1)}/{m.group(2)}"
        m = re.match(r"^\s*-\s*(\w+)\s*$", line)  # hydra/launcher/slurm.yaml: defaults: [submitit_slurm]
        if m and group.startswith("hydra/") and f"{group}/{m.group(1)}" in PLUGINS:
            return f"{group}/{m.group(1)}"
    return None


def _plugin_installed(key: str) -> bool:
    """The plugin's module (hydra_plugins.<its distribution>) can be imported."""
    from qe.app import PLUGINS

    module = "hydra_plugins." + PLUGINS[key][1].replace("-", "_")
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _hydra_command_line(argv: list[str]) -> tuple[str | None, list[str], bool]:
    """(--config-name, overrides, multirun) of a Hydra command line, read by Hydra's own parser."""
    from hydra._internal.utils import get_args_parser

    argv = [a for a in argv if a != "--debug"]  # qe.app.run_hydra takes it out before Hydra sees the arguments
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            args = get_args_parser().parse_args(argv)
    except SystemExit:
        lines = err.getvalue().strip().splitlines()
        raise AssertionError(f"Hydra's command line parser refuses it: {lines[-1] if lines else ''}") from None
    modes = [args.multirun, args.run, bool(args.cfg), bool(args.info), args.shell_completion]
    assert sum(map(bool, modes)) <= 1, "Hydra: only one of --run, --multirun, --cfg, --info and --shell-completion"
    return args.config_name, list(args.overrides), bool(args.multirun)


def _without_plugins(overrides: list[str], notes: list[str]) -> list[str]:
    """The overrides less those that need a Hydra plugin that is not installed (and the hydra.sweeper.* /
    hydra.launcher.* keys that belong to it); the config file of such an option must exist all the same."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(overrides)
    missing_groups: set[str] = set()
    keep: list[str] = []
    for text, o in zip(overrides, parsed):
        group = o.key_or_group
        if (group.startswith("hydra/") or (CONF / group).is_dir()) and not o.is_sweep_override() \
                and isinstance(o.value(), str):
            option = o.value()
            key = _plugin_of(group, option)
            if key and not _plugin_installed(key):
                if key != f"{group}/{option}":  # a config of ours that selects the plugin
                    assert (CONF / group / f"{option}.yaml").is_file(), f"{text}: no config {group}/{option}.yaml"
                missing_groups.add(key.split("/")[1])  # sweeper | launcher
                notes.append(f"{text} left out ({key} is not installed)")
                continue
        keep.append(text)
    out = []
    for text in keep:
        part = text.lstrip("+~").split("=", 1)[0].split(".")
        if len(part) > 1 and part[0] == "hydra" and part[1] in missing_groups:
            notes.append(f"{text} left out (its plugin is not installed)")
            continue
        out.append(text)
    return out


def _sweep_variants(overrides: list[str]) -> list[list[str]]:
    """With -m: the overrides with every sweep at its first value, plus one list per other value of each sweep."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep, RangeSweep

    parsed = OverridesParser.create().parse_overrides(overrides)
    values: list[list[str]] = []
    for text, o in zip(overrides, parsed):
        if o.is_sweep_override() and isinstance(o.value(), (ChoiceSweep, RangeSweep)):
            values.append([f"{o.get_key_element()}={v}" for v in list(o.sweep_string_iterator())[:20]])
        elif not o.is_sweep_override():
            values.append([text])
        # interval / glob sweeps belong to sweeper plugins: nothing to compose
    variants = [[v[0] for v in values]]
    for k, v in enumerate(values):
        for alt in v[1:]:
            variants.append([alt if j == k else w[0] for j, w in enumerate(values)])
    return variants


def _compose(config: str, overrides: list[str]):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            return compose(config, overrides=overrides)
    finally:
        GlobalHydra.instance().clear()


def _evaluate_models(cfg) -> list[tuple[str, str]]:
    from omegaconf import OmegaConf

    models, scorers = cfg.get("models"), cfg.get("scorers")
    models = OmegaConf.to_container(models, resolve=False) if models is not None else []
    scorers = OmegaConf.to_container(scorers, resolve=False) if scorers is not None else {}
    out = [("models", str(m)) for m in models]
    for label, spec in scorers.items():
        model = spec.get("model") if isinstance(spec, dict) else spec
        if isinstance(model, str):
            out.append((f"scorers.{label}.model", model))
    return out


def check_hydra(config: str, argv: list[str]) -> list[str]:
    """Compose qe/conf/<config> with the command line's overrides; returns notes (overrides left out)."""
    from qe.app import describe

    notes: list[str] = []
    config_name, overrides, multirun = _hydra_command_line(argv)
    config = config_name or config
    overrides = _without_plugins(overrides, notes)
    for ov in (_sweep_variants(overrides) if multirun else [overrides]):
        try:
            cfg = _compose(config, ov)
        except Exception as exc:  # noqa: BLE001 - reported the way qe train / qe evaluate report it
            d = describe(exc)
            msg = d[1] if d else f"{type(exc).__name__}: {' '.join(str(exc).split())}"
            raise AssertionError(f"config {config!r} does not compose with {ov}: {msg}") from None
        if config == "evaluate":
            _check_model_names(_evaluate_models(cfg))
    # +a.b=v adds a key under a section the config has: a section it lacks is one nothing reads (renamed)
    added = [o for o in overrides if o.startswith("+") and not o.startswith("++") and "." in o.split("=", 1)[0]
             and not o.startswith("+hydra.")]
    if added:
        base = _compose(config, [o for o in _sweep_variants(overrides)[0] if not o.startswith("+")])
        for o in added:
            top = o[1:].split("=", 1)[0].split(".")[0]
            assert top in base, f"{o}: config {config!r} has no section {top!r} (nothing would read the key)"
    return notes


@functools.lru_cache(maxsize=None)
def _source_strings(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return frozenset(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))


def _module_path(mod: str) -> Path | None:
    parts = mod.split(".")
    for p in (REPO.joinpath(*parts).with_suffix(".py"), REPO.joinpath(*parts, "__init__.py")):
        if p.is_file():
            return p
    return None


def check_program(argv: list[str], path: Path) -> None:
    """An argparse (or sys.argv) program: every --flag given is a string of its source; so is a first bare word
    where the program has subcommands or choices."""
    source = path.read_text(encoding="utf-8")
    if "argparse" not in source and "sys.argv" not in source:
        return
    strings = _source_strings(path)
    flags = [a.split("=", 1)[0] for a in argv if a.startswith("--") and len(a) > 2]
    unknown = [f for f in flags if not any(s == f or s.startswith(f + "=") for s in strings)]
    assert not unknown, f"{path.relative_to(REPO)} has no option {', '.join(unknown)}"
    if (argv and re.fullmatch(r"[a-z][a-z0-9_-]*", argv[0])
            and ("add_subparsers" in source or "choices=" in source)):
        assert argv[0] in strings, f"{path.relative_to(REPO)} has no command {argv[0]!r}"


def check(cmd: Command) -> list[str]:
    """Checks one command (AssertionError naming what is wrong); returns notes."""
    kind, argv, target = cmd.kind, list(cmd.argv), cmd.target
    if kind == "qe":
        err, ns = _argparse(_parse_qe, argv)
        assert err is None, err
        if ns is not None and getattr(ns, "model", None):
            models = ns.model if isinstance(ns.model, list) else [ns.model]  # qe score: -m may repeat
            _check_model_names([("-m", m) for m in models])
    elif kind == "zoo":
        err, ns = _argparse(_parse_zoo, argv)
        assert err is None, err
        _check_zoo_names(ns)
    elif kind == "content":
        err, _ = _argparse(_parse_content, argv)
        assert err is None, err
    elif kind == "hydra":
        if target == "train":  # qe.app.train takes -v / --verbose out before Hydra sees the arguments
            from qe.app import VERBOSE_FLAGS

            argv = [a for a in argv if a not in VERBOSE_FLAGS]
        return check_hydra(target, argv)
    elif kind == "module":
        path = _module_path(target)
        if path is None and target.split(".")[0] == "qe":
            spec = importlib.util.find_spec(target)
            path = Path(spec.origin) if spec is not None and spec.origin else None
        assert path is not None, f"no module {target} (no {target.replace('.', '/')}.py)"
        check_program(argv, path)
    elif kind == "script":
        path = REPO / target
        assert path.is_file(), f"no file {target}"
        check_program(argv, path)
    return []


@pytest.mark.parametrize("cmd", CASES, ids=[_test_id(c) for c in CASES])
def test_docs_command(cmd: Command):
    if cmd.error:
        pytest.fail(f"docs/{cmd.id}: {cmd.error}\n    {cmd.text}")
    if cmd.skip:
        pytest.skip(f"{cmd.skip}: {cmd.text}")
    notes = []
    for argv in [cmd.argv, *cmd.variants]:
        try:
            notes += check(Command(cmd.page, cmd.line, cmd.text, argv, cmd.kind, cmd.target))
        except AssertionError as exc:
            loop = f" (with the loop's values: {' '.join(argv)})" if argv is not cmd.argv else ""
            raise AssertionError(f"docs/{cmd.id}: {cmd.text}{loop}\n    {exc}") from None
    for note in notes:
        print(f"docs/{cmd.id}: {note}")


def test_enough_commands_checked():
    """The extraction still finds the commands (a floor measured on the docs), and says what it skipped."""
    cmds = all_commands()
    checked = [c for c in CASES if not c.skip and not c.error]
    skipped = [c for c in CASES if c.skip]
    by_kind = {k: sum(c.kind == k for c in checked) for k in CHECKED_KINDS}
    print(f"\ndocs commands: {len(cmds)} found, {len(checked)} checked {by_kind}, {len(skipped)} skipped "
          f"(placeholders), {sum(c.kind == 'other' for c in cmds)} other programs (pip, git, cat, python -c ...)")
    assert len(checked) >= MIN_CHECKED, f"only {len(checked)} docs commands checked (floor {MIN_CHECKED})"
    for kind in CHECKED_KINDS:
        assert by_kind[kind] > 0, f"no {kind} command found in the docs: the extraction is broken"


# ------------------------------------------------------------------------------------- the checker itself
PAGE = r"""
Some text with `qe score -m nope` inline (not read).

```bash
# a comment
R="protocol.seeds=[1] \
   model.hidden_size=64"
export M=~/models  # where
for s in 6 1; do
  OMP_NUM_THREADS=1 python train.py experiment=ratpred_s$s $R \
    hydra.run.dir=runs/s$s   # trailing comment
done
cat hyp.txt | qe score -m bleu -i - -r ref.txt && qe list; qe zoo install https://h/x.qe.tar.gz#sha256=ab
python - <<'PY'
qe score --no-such-flag
PY
qe zoo verify NAME --against <F.json>
python -c "
print(1)"
srun --nodes 2 qe score -m $M/lm -i big.jsonl \
  --devices 2
python -m experiments.ratpred report --ensemble runs/*/results.json
python benchmarks/startup.py --repeat 5
qe train -m seed=1,2 tokenizer=word,sp
```

```python
qe score --no-such-flag
```
"""


def _page(tmp_path: Path, text: str) -> list[Command]:
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text, encoding="utf-8")
    return extract(page, tmp_path / "docs")


def test_extraction_reads_shell(tmp_path):
    cmds = [c for c in _page(tmp_path, PAGE) if c.kind != "other"]
    got = [(c.line, c.kind, c.target, c.argv, c.skip) for c in cmds]
    home = KNOWN_ENV["HOME"]
    assert got == [
        (10, "hydra", "train", ["experiment=ratpred_s6", "protocol.seeds=[1]", "model.hidden_size=64",
                               "hydra.run.dir=runs/s6"], None),
        (13, "qe", "", ["score", "-m", "bleu", "-i", "-", "-r", "ref.txt"], None),
        (13, "qe", "", ["list"], None),
        (13, "zoo", "", ["install", "https://h/x.qe.tar.gz#sha256=ab"], None),
        (17, "zoo", "", ["verify", "NAME", "--against"], "placeholder '<F.json>'"),
        (20, "qe", "", ["score", "-m", f"{home}/models/lm", "-i", "big.jsonl", "--devices", "2"], None),
        (22, "module", "experiments.ratpred", ["report", "--ensemble", "runs/*/results.json"], None),
        (23, "script", "benchmarks/startup.py", ["--repeat", "5"], None),
        (24, "hydra", "train", ["-m", "seed=1,2", "tokenizer=word,sp"], None),
    ]
    assert cmds[0].variants == [["experiment=ratpred_s1", "protocol.seeds=[1]", "model.hidden_size=64",
                                 "hydra.run.dir=runs/s1"]]
    for c in cmds:
        if not c.skip:
            for argv in [c.argv, *c.variants]:
                check(Command(c.page, c.line, c.text, argv, c.kind, c.target))
    assert _sweep_variants(["seed=1,2", "tokenizer=word,sp", "trainer=cpu"]) == [
        ["seed=1", "tokenizer=word", "trainer=cpu"], ["seed=2", "tokenizer=word", "trainer=cpu"],
        ["seed=1", "tokenizer=sp", "trainer=cpu"]]


@pytest.mark.parametrize("line,message", [
    ("qe score -m bleu -i hyp.txt --refs-file ref.txt", "unrecognized arguments: --refs-file"),
    ("qe score -m blue -i hyp.txt", "not a registered scorer nor a named model of the zoo: -m=blue"),
    ("qe compare -m bleu base.txt new.txt --paired-boot", "unrecognized arguments: --paired-boot"),
    ("qe zoo build slor-wp-domain", "no recipe slor-wp-domain"),
    ("qe zoo verify slor-word-brown-wt2 --against published", "no published fingerprint for slor-word-brown-wt2"),
    ("qe zoo --model-dir /tmp build", "qe zoo: error"),
    ("qe content mine -i pairs.csv -o lex.json --min-cout 3", "unrecognized arguments: --min-cout"),
    ("qe content mnie -i pairs.csv -o lex.json", "invalid choice: 'mnie'"),
    ("qe train -v model.hidden_sizes=64", "Could not override 'model.hidden_sizes'"),
    ("qe train model.hidden_sizes=64", "Could not override 'model.hidden_sizes'"),
    ("python train.py tokenizer=wordpiece", "Could not find config 'tokenizer/wordpiece'"),
    ("qe train seed=1,2", "Ambiguous value for argument 'seed=1,2'"),
    ("qe train -m seed=1,2 model=lstm_lm,nope", "Could not find config 'model/nope'"),
    ("qe train -m hparams_search=lm_optuma", "hparams_search/lm_optuma"),
    ("python evaluate.py dataset=emnlp17 'models=[blue-4]'", "models=blue-4"),
    ("qe evaluate +scorers.mine.model=slor-wp-domain", "scorers.mine.model=slor-wp-domain"),
    ("qe evaluate --cfg jobs", "Hydra's command line parser refuses it"),
    ("qe evaluate +scorer.mine.model=bleu", "config 'evaluate' has no section 'scorer'"),
    ("python -m experiments.ratpred raport x.json", "has no command 'raport'"),
    ("python -m experiments.kann2018 --lm-export x", "has no option --lm-export"),
    ("python -m experiments.nope", "no module experiments.nope"),
    ("python benchmarks/startup.py --repeats 5", "has no option --repeats"),
    ("python benchmarks/nope.py", "no file benchmarks/nope.py"),
])
def test_checker_catches_rot(tmp_path, line, message):
    (cmd,) = [c for c in _page(tmp_path, f"```bash\n{line}\n```\n") if c.kind != "other"]
    with pytest.raises(AssertionError, match=re.escape(message)):
        check(cmd)


def test_missing_plugin_is_left_out():
    if _plugin_installed("hydra/sweeper/optuna") or _plugin_installed("hydra/launcher/submitit_slurm"):
        pytest.skip("the plugins are installed here: they compose for real")
    notes = check_hydra("train", ["-m", "hydra/launcher=slurm", "hparams_search=lm_optuna",
                                  "hydra.launcher.partition=gpu", "hydra.sweeper.n_trials=5", "seed=1,2"])
    assert len(notes) == 4, notes
