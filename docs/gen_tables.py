"""Render the headline tables of the docs from the result files in ``docs/results/data/``.

Why this exists: the headline figures were typed by hand into several pages (the results overview, the content page
and its log, the triples page, "Which metric should I use?", the README) and drifted apart. Now each
figure is kept once, in a CSV beside the command that produced it and the machine it ran on, and this script writes
every at-a-glance table between two markers in its page::

    <!-- table:NAME begin -->
    ... generated: edit the CSV, then run this script ...
    <!-- table:NAME end -->

Usage (from the repository root or anywhere)::

    python docs/gen_tables.py            # rewrite every table from its CSV
    python docs/gen_tables.py --check    # exit 1, naming page and table, where a page disagrees with its source

A result file is a CSV with a header. Every row needs an ``id`` (the first column when there is no ``id``), a
``command`` and a ``machine``; a file may give them once for all its rows in leading comment lines
(``# command: ...``, ``# machine: ...``). ``section`` is the page (relative to ``docs/``) that logs the measurement.
History (what a figure was before) belongs in ``docs/changelog.md`` and the log pages, not in these files.

A row may keep further commands beside its own (``build_command``, ``pearson_command``, ``gpu_command``,
``more_commands``: what built the model it scores, or the run behind a second figure of the same cell), and its
links as ``links`` (``text>target; text>target``, targets relative to ``docs/``).

A table whose source is optional (``content_precision.csv``, written by another measurement) says that its file is
missing instead, and the check accepts that until the file is there.
"""
from __future__ import annotations

import argparse
import csv
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
DATA = DOCS / "results" / "data"
#: fields every row must carry (from the row, or from the file's leading ``# field: value`` lines)
REQUIRED = ("command", "machine")
#: columns of a result file that are about where a figure comes from, not figures
META = {"id", "command", "machine", "section", "date", "commit", "notes", "seeds_command", "mine_command", "seconds",
        "build_command", "pearson_command", "gpu_command", "more_commands", "links", "link_text", "show_command"}
#: goals set for the E2E slot gold and the triple fact gold (targets, not measurements)
GOALS = {"omission_f1": "≥ 0.90", "addition_f1": "≥ 0.80", "wrong_f1": "≥ 0.80", "omitted_f1": "≥ 0.90"}
BEGIN = "<!-- table:{} begin -->"
END = "<!-- table:{} end -->"


class SourceError(ValueError):
    """A result file that cannot be rendered: the message names the file, the row and the field."""


@dataclass
class Source:
    """One result file: rows by id, in file order."""

    name: str
    path: Path
    columns: list[str]
    rows: dict[str, dict[str, str]]

    def row(self, row_id: str) -> dict[str, str]:
        try:
            return self.rows[row_id]
        except KeyError:
            raise SourceError(f"{self.path}: no row with id {row_id!r} (ids: {', '.join(self.rows)})") from None

    def __call__(self, row_id: str, column: str) -> str:
        """The figure in ``column`` of row ``row_id``; an empty cell reads as an en dash."""
        row = self.row(row_id)
        if column not in row:
            raise SourceError(f"{self.path}: no column {column!r} (columns: {', '.join(self.columns)})")
        return row[column].strip() or "–"


def load_source(path: Path) -> Source:
    """Read and check one result file (every row has its command and machine, ids are unique)."""
    text = path.read_text(encoding="utf-8")
    defaults: dict[str, str] = {}
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        key, _, value = lines.pop(0)[1:].partition(":")
        if value.strip():
            defaults[key.strip()] = value.strip()
    reader = csv.DictReader(lines)
    if not reader.fieldnames:
        raise SourceError(f"{path}: no header line")
    columns = [c.strip() for c in reader.fieldnames]
    key = "id" if "id" in columns else ""  # without ids, rows are known by their line
    rows: dict[str, dict[str, str]] = {}
    for n, raw in enumerate(reader, start=2 + len(defaults)):
        if None in raw:
            raise SourceError(f"{path}: line {n} has more fields than the header ({len(columns)})")
        row = {k.strip(): (v or "").strip() for k, v in raw.items()}
        for field in REQUIRED:
            if not row.get(field) and not defaults.get(field):
                name = row.get(key) if key else f"line {n}"
                raise SourceError(f"{path}: line {n} (id {name!r}): field {field!r} is empty, and the file gives "
                                  f"no '# {field}: ...' line")
            row.setdefault(field, defaults.get(field, ""))
            if not row[field]:
                row[field] = defaults[field]
        row_id = row.get(key, "") if key else f"line {n}"
        if not row_id:
            raise SourceError(f"{path}: line {n}: field {key!r} (the row's id) is empty")
        if row_id in rows:
            raise SourceError(f"{path}: line {n}: id {row_id!r} appears twice")
        rows[row_id] = row
    return Source(path.stem, path, columns, rows)


class Data:
    """The result files, read once each; a missing optional file reads as ``None``."""

    def __init__(self, root: Path = DATA):
        self.root = root
        self._cache: dict[str, Source | None] = {}

    def get(self, name: str, optional: bool = False) -> Source | None:
        if name not in self._cache:
            path = self.root / f"{name}.csv"
            if not path.is_file():
                if not optional:
                    raise SourceError(f"{path}: the result file is missing")
                self._cache[name] = None
            else:
                self._cache[name] = load_source(path)
        return self._cache[name]

    def __getitem__(self, name: str) -> Source:
        source = self.get(name)
        assert source is not None
        return source


# --- Markdown helpers ---------------------------------------------------------------------------------------------

def cell(text: str) -> str:
    """A table cell: pipes escaped, an empty value an en dash."""
    text = (text or "").strip()
    return text.replace("|", "\\|") if text else "–"


def table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def code(name: str) -> str:
    return f"`{name}`"


def rho(figure: str) -> str:
    """The first number of a figure written "ρ (r)" or "mean ± sd (r)": the ρ alone."""
    return figure.split(" (")[0]


@dataclass
class Ctx:
    """What a renderer needs: the data, and the page it writes into (links are made relative to it)."""

    data: Data
    page: Path  # relative to the repository root

    def href(self, target: str) -> str:
        """``target`` is relative to ``docs/`` (``results/content-log.md#x``); the link is relative to the page."""
        path, _, anchor = target.partition("#")
        if not (REPO / "docs" / path).is_file() and (REPO / "docs" / "results" / path).is_file():
            path = f"results/{path}"  # a section written relative to the results pages
        if anchor and (REPO / "docs" / path).resolve() == (REPO / self.page).resolve():
            return f"#{anchor}"
        rel = os.path.relpath(REPO / "docs" / path, (REPO / self.page).parent).replace(os.sep, "/")
        return rel + (f"#{anchor}" if anchor else "")

    def link(self, text: str, target: str) -> str:
        return f"[{text}]({self.href(target)})"

    def source_link(self, source: Source, row_id: str, text: str = "log") -> str:
        return self.link(text, source.row(row_id)["section"])

    def note(self, *names: str) -> str:
        files = ", ".join(self.link(f"`{n}.csv`", f"results/data/{n}.csv") for n in names)
        return f"*Generated from {files}: each row's command and machine are there.*"


# --- the tables ---------------------------------------------------------------------------------------------------

#: the columns of content_precision.csv (experiments.content_precision) the table shows, in this order, with headers;
#: a column of the file not named here is shown only when its name says it is a recall
PRECISION_HEADERS = {
    "setting": "setting", "domain": "domain", "references": "faithful references", "facts": "facts",
    "invented_per_100_refs": "invented facts per 100 references",
    "false_alarms_per_100_refs_hand": "of them false alarms per 100 references (every one read by hand; – where not)",
    "not_realised_per_100_facts": "facts not realised per 100",
    "refs_without_error_pct": "references with no error (%)",
    "naive_not_realised_per_100_facts": "naive string check: not realised per 100 of its facts",
    "naive_refs_without_error_pct": "naive string check: references with no error (%)",
    "swaps_found_pct": "recall: swapped values found (%)", "deletions_found_pct": "recall: deleted values found (%)",
    "slot_gold_omission_f1": "E2E slot gold: omission F1", "slot_gold_addition_f1": "E2E slot gold: addition F1",
    "triple_gold_wrong_f1": "triple fact gold: `wrong` F1",
}


def render_content_precision(ctx: Ctx) -> str:
    src = ctx.data.get("content_precision", optional=True)
    if src is None:
        return ("This table is generated from `docs/results/data/content_precision.csv` (per-domain precision of the "
                "content check on faithful references), which is not in the repository yet: "
                "`python docs/gen_tables.py` writes the table here once the file is there.")
    shown = [c for c in PRECISION_HEADERS if c in src.columns]
    shown += [c for c in src.columns if c not in PRECISION_HEADERS and c not in META and "recall" in c]
    if "setting" in shown and len({row["setting"] for row in src.rows.values()}) < 2:
        shown.remove("setting")
    shown = [c for c in shown if any(row[c] for row in src.rows.values())]  # a column no row fills says nothing
    header = [PRECISION_HEADERS.get(c, c.replace("_", " ")) for c in shown]
    rows = [[row[c] for c in shown] for row in src.rows.values()]
    if "section" in src.columns:
        header.append("log")
        rows = [r + [ctx.source_link(src, rid)] for r, rid in zip(rows, src.rows)]
    return table(header, rows) + "\n\n" + ctx.note("content_precision")


def goal(key: str, figures: list[str]) -> str:
    """The goal of ``key``, said to be reached or not by the best of ``figures`` (a figure's last number is its F1)."""
    threshold = float(GOALS[key].split()[-1])
    best = max(float(re.findall(r"\d+\.\d+", f)[-1]) for f in figures)
    return f"{GOALS[key]}: {'reached' if best >= threshold else 'not reached'}"


def _prf(src: Source, rid: str, stem: str) -> str:
    return f"{src(rid, stem + '_p')} / {src(rid, stem + '_r')} / {src(rid, stem + '_f1')}"


def render_e2e_slot_gold(ctx: Ctx) -> str:
    src = ctx.data["e2e_slot_gold"]
    rows = [[code(src(r, "metric")), src(r, "engine"), _prf(src, r, "omission"), _prf(src, r, "addition"),
             src(r, "mr_exact"), src(r, "seeds"), ctx.source_link(src, r)] for r in src.rows]
    rows.append(["goal (F1)", "", goal("omission_f1", [src(r, "omission_f1").split(" ±")[0] for r in src.rows]),
                 goal("addition_f1", [src(r, "addition_f1").split(" ±")[0] for r in src.rows]), "", "", ""])
    header = ["metric (`qe score -m`)", "engine", "omissions P / R / F1", "additions P / R / F1", "MR exactly right",
              "seeds", "log"]
    return table(header, rows) + "\n\n" + ctx.note("e2e_slot_gold")


def render_e2e_natural(ctx: Ctx) -> str:
    src = ctx.data["e2e_natural_errors"]
    rows = [[code(src(r, "metric")), src(r, "engine"), src(r, "pairwise"), src(r, "rho_minus_ser"), src(r, "seeds"),
             ctx.source_link(src, r)] for r in src.rows]
    header = ["metric (`qe score -m`)", "engine", "clean above erroneous (1,614 pairs; chance 0.5)",
              "ρ with −SER (4,299)", "seeds", "log"]
    return table(header, rows) + "\n\n" + ctx.note("e2e_natural_errors")


def render_content_webnlg(ctx: Ctx) -> str:
    src, ref = ctx.data["webnlg2020_content"], ctx.data["webnlg2020"]
    rows = [[code(src(r, "metric")), src(r, "what"), src(r, "references"), src(r, "out_of_fold"),
             src(r, "correctness"), src(r, "data_coverage"), src(r, "fluency"), ctx.source_link(src, r)]
            for r in src.rows]
    rows += [[code(ref(r, "metric")), "reference metric", "yes", "", ref(r, "correctness"), ref(r, "data_coverage"),
              ref(r, "fluency"), ctx.source_link(ref, r)] for r in ("chrf", "bertscore")]
    header = ["metric", "what", "references?", "out of fold?", "correctness ρ (r)", "data coverage ρ (r)",
              "fluency ρ (r)", "log"]
    return table(header, rows) + "\n\n" + ctx.note("webnlg2020_content", "webnlg2020")


def render_content_triples_short(ctx: Ctx) -> str:
    src = ctx.data["triple_fact_gold"]
    rows = [[code(src(r, "metric")), src(r, "lexicon"), src(r, "wrong_f1"), src(r, "omitted_f1"),
             src(r, "clean_called_wrong"), ctx.source_link(src, r)] for r in src.rows]
    rows.append(["goal", "", goal("wrong_f1", [src(r, "wrong_f1") for r in src.rows]),
                 goal("omitted_f1", [src(r, "omitted_f1") for r in src.rows]), "low", ""])
    header = ["metric", "lexicon", "`wrong` F1 (105 gold facts)", "`omitted` F1 (74)",
              "clean references: triples called `wrong` (13,231)", "log"]
    return table(header, rows) + "\n\n" + ctx.note("triple_fact_gold")


def render_content_emnlp17(ctx: Ctx) -> str:
    src, fam = ctx.data["emnlp17_content"], ctx.data["emnlp17"]
    rows = [[code(src(r, "metric")), src(r, "what"), src(r, "outputs"), src(r, "informativeness"),
             src(r, "naturalness"), src(r, "quality"), ctx.source_link(src, r)] for r in src.rows]
    rows += [[code(fam(r, "metric")) if r != "meteor" else fam(r, "metric"), fam(r, "what"), "2,460",
              fam(r, "informativeness"), fam(r, "naturalness"), fam(r, "quality"), ctx.source_link(fam, r)]
             for r in ("meteor", "chrf")]
    header = ["metric", "what", "outputs", "informativeness ρ", "naturalness ρ", "quality ρ", "log"]
    return table(header, rows) + "\n\n" + ctx.note("emnlp17_content", "emnlp17")


def render_content_emnlp17_hand(ctx: Ctx) -> str:
    src = ctx.data["emnlp17_verdict_labels"]
    rows = []
    for r in src.rows:
        errors, false = int(src(r, "errors")), int(src(r, "errors_false"))
        unread = int(src(r, "errors_unread")) + int(src(r, "invented_unread"))
        share = f"{100 * (errors - false) / errors:.0f} %" if errors else "–"
        rows.append([code(f"lexicon={src(r, 'lexicon')}"), src(r, "dataset"), f"{int(src(r, 'facts')):,}",
                     src(r, "errors"), src(r, "errors_false"), share, src(r, "invented"), src(r, "invented_false"),
                     str(unread), ctx.source_link(src, r)])
    header = ["`coverage`", "outputs of", "facts checked", "errors (`omitted`, `wrong`)", "of them false (hand)",
              "errors right", "invented facts", "of them false (hand)", "not read by hand", "log"]
    return table(header, rows) + "\n\n" + ctx.note("emnlp17_verdict_labels")


def render_triples_at_a_glance(ctx: Ctx) -> str:
    src = ctx.data["triple_fact_gold"]
    ids = list(src.rows)
    measures = [("`wrong` P / R / F1 (105 gold facts)", lambda r: _prf(src, r, "wrong"),
                 "F1 " + goal("wrong_f1", [src(r, "wrong_f1") for r in ids])),
                ("`omitted` P / R / F1 (74 gold facts)", lambda r: _prf(src, r, "omitted"),
                 "F1 " + goal("omitted_f1", [src(r, "omitted_f1") for r in ids])),
                ("`realised` F1 (292 gold facts)", lambda r: src(r, "realised_f1"), "–"),
                ("hallucinated-clause count exactly right (135 outputs)",
                 lambda r: src(r, "hallucinated_exact"), "–"),
                ("clean dev references: triples called `wrong` (13,231)", lambda r: src(r, "clean_called_wrong"),
                 "low"),
                ("clean dev references: triples called `omitted`", lambda r: src(r, "clean_called_omitted"), "–")]
    header = ["what is measured"] + [f"{src(r, 'lexicon')}, {code(src(r, 'metric'))}" for r in ids] + ["goal"]
    rows = [[label] + [f(r) for r in ids] + [goal] for label, f, goal in measures]
    cmds = "; ".join(f"`{src(r, 'command')}`" for r in ids)
    return (table(header, rows) + "\n\n" + f"Commands: {cmds} ({src(ids[0], 'machine')}). "
            + ctx.note("triple_fact_gold"))


def _number(figure: str) -> float | None:
    m = re.match(r"[-−]?\d+\.\d+", figure)
    return float(m.group(0).replace("−", "-")) if m else None


def bold_best(columns: list[list[str]], skip: set[int]) -> list[list[str]]:
    """Bold the highest leading figure of each column (rows in ``skip``, such as ceilings, take no part)."""
    out = []
    for col in columns:
        nums = [_number(v) if i not in skip else None for i, v in enumerate(col)]
        best = max((n for n in nums if n is not None), default=None)
        out.append([f"**{v}**" if best is not None and n == best else v for v, n in zip(col, nums)])
    return out


def render_validity(ctx: Ctx) -> str:
    src = ctx.data["emnlp17"]
    ids = list(src.rows)
    crit = ["naturalness", "quality", "informativeness"]
    cols = bold_best([[src(r, c) for r in ids] for c in crit], skip=set())
    rows = [[src(r, "label"), src(r, "references")] + [cols[k][i] for k in range(len(crit))]
            + [ctx.source_link(src, r, "every family, with confounds")] for i, r in enumerate(ids)]
    return table(["metric", "references?"] + crit + ["command"], rows) + "\n\n" + ctx.note("emnlp17")


def render_webnlg(ctx: Ctx) -> str:
    src = ctx.data["webnlg2020"]
    ids = list(src.rows)
    crit = ["correctness", "data_coverage", "fluency"]
    skip = {i for i, r in enumerate(ids) if src(r, "references") == "–"}
    cols = bold_best([[src(r, c) for r in ids] for c in crit], skip)
    rows = []
    for i, r in enumerate(ids):
        cells = [cols[k][i] + (f"; {src(r, c + '_seeds')}" if src(r, c + "_seeds") != "–" else "")
                 for k, c in enumerate(crit)]
        links = ctx.source_link(src, r, "commands")
        if src(r, "seeds_command") != "–":
            links += ", " + ctx.link("seed spread", "results/webnlg.md#seed-spread-of-ratpred-webnlg")
        rows.append([src(r, "label"), src(r, "references")] + cells + [links])
    header = ["metric (`qe score -m`)", "references?", "correctness", "data coverage", "fluency", "command"]
    return table(header, rows) + "\n\n" + ctx.note("webnlg2020")


def render_discourse(ctx: Ctx) -> str:
    src = ctx.data["ner18_discourse"]
    ids = list(src.rows)
    cols = bold_best([[src(r, "average") for r in ids], [src(r, "summary_average") for r in ids]], skip=set())
    rows = []
    for i, r in enumerate(ids):
        sys_avg, sum_avg = cols[0][i], cols[1][i]
        if src(r, "paper_average") != "–":
            sys_avg += f" (paper {src(r, 'paper_average')})"
        if src(r, "paper_summary_average") != "–":
            sum_avg += f" (paper {src(r, 'paper_summary_average')})"
        rows.append([src(r, "label"), src(r, "references"), sys_avg, sum_avg, ctx.source_link(src, r, "Setup")])
    header = ["metric (`qe score -m`)", "references?", "system level, average", "summary level, average", "command"]
    return table(header, rows) + "\n\n" + ctx.note("ner18_discourse")


# --- the per-family pages (slor, refmetrics, gruen, ratpred, zoo, performance) -------------------------------------

def links(ctx: Ctx, src: Source, row_id: str) -> str:
    """The row's ``links`` cell (``text>target; text>target``, targets relative to ``docs/``) as Markdown links."""
    spec = src.row(row_id).get("links", "")
    out = []
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        text, sep, target = part.partition(">")
        if not sep or not text.strip() or not target.strip():
            raise SourceError(f"{src.path}: row {row_id!r}: field 'links': {part!r} is not 'text>target'")
        out.append(ctx.link(text.strip(), target.strip()))
    return ", ".join(out)


def shown_command(src: Source, row_id: str, strip_env: bool = False) -> str:
    """The row's command in backticks when ``show_command`` says the table shows it (without its ``VAR=value``
    prefix where the page gives the environment once for all commands); otherwise nothing."""
    row = src.row(row_id)
    if row.get("show_command", "") != "yes":
        return ""
    command = row["command"]
    if strip_env:
        command = re.sub(r"^(?:[A-Z_]+=\S+ )+", "", command)
    return f"`{command.split(';')[0].split('  #')[0].strip()}`"


def command_cell(ctx: Ctx, src: Source, row_id: str, strip_env: bool = False) -> str:
    return ", ".join(filter(None, [shown_command(src, row_id, strip_env), links(ctx, src, row_id)]))


def render_slor(ctx: Ctx) -> str:
    src = ctx.data["slor_lms"]
    ids = list(src.rows)
    crit = ["naturalness", "quality", "informativeness"]
    cols = bold_best([[src(r, c) for r in ids] for c in crit], skip=set())
    rows = []
    for i, r in enumerate(ids):
        ppl = f"val {src(r, 'val_ppl')}"
        if src(r, "val_step") != "–":
            ppl += f" at step {src(r, 'val_step')}"
        if src(r, "test_ppl") != "–":
            ppl += f", WikiText-2 test {src(r, 'test_ppl')}"
        if src(r, "per_piece") == "yes":
            ppl += " (per piece)"
        rho_ = " / ".join(cols[k][i] for k in range(len(crit)))
        if src(r, "pearson_naturalness") != "–":
            rho_ += (f" (Pearson r: naturalness {src(r, 'pearson_naturalness')}, "
                     f"quality {src(r, 'pearson_quality')})")
        rows.append([code(src(r, "metric")), src(r, "score"), ppl, rho_, links(ctx, src, r)])
    header = ["LM (`qe score -m`)", "score", "perplexity",
              "EMNLP17 Spearman ρ: naturalness / quality / informativeness", "command"]
    return table(header, rows) + "\n\n" + ctx.note("slor_lms")


def render_refmetrics(ctx: Ctx) -> str:
    src = ctx.data["refmetrics_emnlp17"]
    rows = []
    for r in src.rows:
        if src(r, "kann_r") != "–":
            agreement = f"Kann et al.: {src(r, 'kann_r')}"
        elif src(r, "agreement") != "–":
            notes = []
            if src(r, "coco_agreement") != "–":
                notes.append(f"with `tokenize=13a-nopunct,smooth_method=none,effective_order=False`: "
                             f"{src(r, 'coco_agreement')}, {src(r, 'coco_identical')} identical")
            if src(r, "bagel_identical") != "–":
                notes.append(f"on BAGEL {src(r, 'bagel_identical')} values identical")
            remark = f"; {src(r, 'remark')}" if src(r, "remark") != "–" else ""
            agreement = f"{src(r, 'agreement')} ({src(r, 'authors_column')}{remark})"
            agreement += "".join(f"; {n}" for n in notes)
        else:
            agreement = f"– ({src(r, 'remark')})"
        rows.append([src(r, "metric"), src(r, "r_naturalness"), src(r, "r_quality"), agreement,
                     links(ctx, src, r)])
    header = ["metric (`qe score -m`)", "r naturalness", "r quality",
              "agreement r with the authors' column (variant C), or Kann et al.'s r", "command"]
    return table(header, rows) + "\n\n" + ctx.note("refmetrics_emnlp17")


def render_gruen(ctx: Ctx) -> str:
    src, ner = ctx.data["gruen_parts"], ctx.data["ner18_gruen"]

    def label(metric: str, what: str) -> str:
        return f"{code(metric)} ({what})"

    rows = []
    for r in [r for r in src.rows if src(r, "bagel") != "–"]:
        ours = ", ".join(src(r, d) for d in ("bagel", "sfhot", "sfrest"))
        paper = ", ".join(src(r, f"paper_{d}") for d in ("bagel", "sfhot", "sfrest"))
        rows.append([label(src(r, "metric"), src(r, "what")), src(r, "data"), f"{ours} (paper: {paper})",
                     links(ctx, src, r)])
    ner_ids = ["gruen", "gruen-G"]
    slash = {r: {c: ner(r, c).replace(" (", " / ").rstrip(")") for c in ("coherence", "fluency")}
             for r in ner_ids}
    best = max(ner_ids, key=lambda r: _number(ner(r, "fluency")) or float("-inf"))
    for r in ner_ids:
        fluency = f"**{slash[r]['fluency']}**" if r == best else slash[r]["fluency"]
        data = "NeR18, 420 summaries, ρ / r: coherence / fluency" if r == ner_ids[0] else \
            "NeR18, ρ / r: coherence / fluency"
        rows.append([label(ner(r, "metric"), ner(r, "what")), data, f"{slash[r]['coherence']}, {fluency}",
                     ctx.source_link(ner, r, "ablation")])
    for r in [r for r in src.rows if src(r, "bagel") == "–"]:
        rows.append([label(src(r, "metric"), src(r, "what")), src(r, "data"), src(r, "figure"),
                     command_cell(ctx, src, r, strip_env=True)])
    return table(["model or part (`qe score -m`)", "data", "figure", "command"], rows) + "\n\n" + ctx.note(
        "gruen_parts", "ner18_gruen")


def render_ratpred(ctx: Ctx) -> str:
    src, rp = ctx.data["ratpred_glance"], ctx.data["ratpred_emnlp17"]

    def pair(pearson: str, spearman: str) -> str:
        ps, ss = pearson.split(" / "), spearman.split(" / ")
        if len(ps) != len(ss):
            raise SourceError(f"{src.path}: pearson {pearson!r} and spearman {spearman!r} differ in length")
        return " / ".join(f"{p} ({s})" for p, s in zip(ps, ss))

    lodo = pair(rp("lodo-vectors", "pearson"), rp("lodo-vectors", "spearman"))
    rows = []
    for r in src.rows:
        if r == "lodo-vectors":
            plain, indomain = src(r, "pearson").split(" / "), src(r, "spearman").split(" / ")
            figure = (f"**{rp('lodo-vectors', 'pearson')}** ({rp('lodo-vectors', 'spearman')}); plain 64-d: "
                      f"{plain[0]} ({indomain[0]}); in-domain CV: {plain[1]} ({indomain[1]})")
        elif src(r, "figure") != "–":
            figure = src(r, "figure")
        else:
            compare = src.row(r)["compare"]
            if r == "content-variants":  # the baseline's figure is the leave-one-domain-out row's
                compare = f"against {lodo}: {compare}"
            figure = pair(src(r, "pearson"), src(r, "spearman"))
            if compare:
                figure += compare if compare.startswith(";") else f" {compare}"
        link = ctx.source_link(src, r, src(r, "link_text")) if src(r, "link_text") != "–" else \
            f"`{src.row(r)['command']}`"
        rows.append([src(r, "label"), src(r, "data"), figure, link])
        if r == "s6-minilm":  # the paper-plus model, kept in ratpred_emnlp17.csv with the other headline figures
            rows.append([f"{code(rp('s6-plus', 'metric'))} (GRU + MiniLM, seeds 1 and 2)", "the same",
                         f"**{rp('s6-plus', 'pearson')}** ({rp('s6-plus', 'spearman')})",
                         ctx.source_link(rp, "s6-plus", "the paper-plus model")])
    return table(["model or setup", "data", "figure", "command"], rows) + "\n\n" + ctx.note(
        "ratpred_glance", "ratpred_emnlp17")


def render_zoo(ctx: Ctx) -> str:
    src = ctx.data["zoo_builds"]
    rows = []
    for r in src.rows:
        models = ", ".join(code(m) for m in src(r, "models").split())
        figure = src(r, "figure").replace("content)", f"{ctx.link('content', 'results/content.md#at-a-glance')})")
        build = src(r, "build_time")
        if src(r, "gpu_time") != "–":
            build += f" (`--gpu`: {src(r, 'gpu_time')})"
        rows.append([models, figure, build, f"`{src.row(r)['command']}`"])
    header = ["model (`qe score -m` / `qe.load`)", "validation figure of the named build (seeds 1–3: mean ± sd)",
              "CPU build time", "command"]
    return table(header, rows) + "\n\n" + ctx.note("zoo_builds")


def render_performance(ctx: Ctx) -> str:
    src = ctx.data["performance_glance"]
    rows = [[src(r, "what"), src(r, "figure"), src(r, "machine"), command_cell(ctx, src, r)] for r in src.rows]
    return table(["what", "figure", "machine", "command"], rows) + "\n\n" + ctx.note("performance_glance")


def render_results_index(ctx: Ctx) -> str:
    d = ctx.data
    fam, ner, gru, rp = d["emnlp17"], d["ner18_discourse"], d["ner18_gruen"], d["ratpred_emnlp17"]
    e2e, web, cont, tri = d["e2e_slot_gold"], d["webnlg2020"], d["webnlg2020_content"], d["triple_fact_gold"]
    zoo, perf = d["zoo_builds"], d["performance_glance"]
    rows = [
        [ctx.link("SLOR / WPSLOR", "results/slor.md"), "the six zoo LMs behind SLOR; EMNLP17",
         f"domain WordSLOR: EMNLP17 informativeness ρ {fam('wordslor', 'informativeness')}, "
         f"naturalness {fam('wordslor', 'naturalness')}"],
        [ctx.link("Reference-based metrics", "results/refmetrics.md"),
         "our BLEU / ROUGE / METEOR / CIDEr-D / TER / NIST against the EMNLP17 columns; Kann et al.'s Table 7",
         f"EMNLP17 naturalness ρ: METEOR {fam('meteor', 'naturalness')}, `chrf` {fam('chrf', 'naturalness')}"],
        [ctx.link("GRUEN", "results/gruen.md"), "GRUEN on MiniLM parts: EMNLP17, NeR18, tuning, ablation",
         f"EMNLP17 naturalness ρ {fam('gruen', 'naturalness')}; NeR18 fluency, grammaticality only: "
         f"{gru('gruen-G', 'fluency')}"],
        [ctx.link("RatPred", "results/ratpred.md"), "the paper's Tables 3 and 4, leave one domain out, the E2E and "
         "MiniLM models", f"`ratpred-emnlp17-s6-plus` EMNLP17 quality r {rp('s6-plus', 'pearson')} cross-validated; "
         f"a domain without ratings {rp('lodo-vectors', 'pearson')}"],
        [ctx.link("Content", "results/content.md") + ", with its " + ctx.link("experiment log",
                                                                               "results/content-log.md"),
         "the `coverage` scorer and the models built on it: E2E slot gold, natural slot errors, WebNLG 2020, EMNLP17",
         f"E2E omission F1 {e2e('matcher', 'omission_f1')} (`coverage`); WebNLG 2020 data coverage ρ "
         f"{cont('aligner-webnlg', 'data_coverage')} (`content-aligner-webnlg`)"],
        [ctx.link("Content check on triples", "results/content-triples.md"),
         "one verdict per RDF triple against a hand-labelled fact gold (471 facts on WebNLG dev entries)",
         f"`wrong` F1 {tri('rules', 'wrong_f1')} / {tri('webnlg', 'wrong_f1')}, omission F1 "
         f"{tri('rules', 'omitted_f1')} / {tri('webnlg', 'omitted_f1')} (rules / `lexicon=webnlg`)"],
        [ctx.link("DiscoScore", "results/discourse.md"), "DiscoScore and its discourse baselines on NeR18",
         f"system level τ×100: `ds-sent-u-nn` {ner('ds-sent-u-nn', 'average')}, `rc` / `lc` {ner('rc', 'average')}"],
        [ctx.link("Meta-evaluation", "results/validity.md"),
         "EMNLP17 at every level, with error measures, tests and confounds, for every family",
         f"cross-validated RatPred best on quality (ρ {fam('ratpred-cv', 'quality')}); GRUEN "
         f"{fam('gruen', 'quality')} without EMNLP17 ratings"],
        [ctx.link("WebNLG 2020", "results/webnlg.md"),
         "every family against the WebNLG 2020 ratings, with the annotator ceiling",
         f"`bertscore` correctness ρ {web('bertscore', 'correctness')}; one more annotator "
         f"{web('annotator', 'correctness')}"],
        [ctx.link("Model zoo", "results/zoo.md"), "recipes, validation figures, checksums, build times, seed spread",
         f"`cola-minilm` builds in {zoo('cola-minilm', 'build_time')} to val MCC "
         f"{zoo('cola-minilm', 'figure').split('MCC ')[1].split(' ')[0]}; each model builds with `qe zoo build NAME`"],
        [ctx.link("Performance", "results/performance.md"),
         "start-up, `qe score` over processes, every family's speed, the GPU check",
         f"`qe list` starts in {perf('startup', 'figure').split(' ')[0]} s; `qe evaluate` on 10^6 rated outputs: "
         f"{perf('evaluate-scale', 'figure').split(' (goal')[0]}"],
    ]
    return table(["page", "what it holds", "one figure from it"], rows) + "\n\n" + ctx.note(
        "emnlp17", "ner18_gruen", "ratpred_emnlp17", "e2e_slot_gold", "webnlg2020_content", "triple_fact_gold",
        "ner18_discourse", "webnlg2020", "zoo_builds", "performance_glance")


HOW = ["what you want to measure", "references?", "use (`qe score -m`)", "measured", "behind it"]


def render_which_e2e(ctx: Ctx) -> str:
    d = ctx.data
    e2e, nat, emc, fam, rp = d["e2e_slot_gold"], d["e2e_natural_errors"], d["emnlp17_content"], d["emnlp17"], \
        d["ratpred_emnlp17"]
    rows = [
        ["content: omitted and wrong facts, E2E slots", "no",
         "`coverage` (nothing to build: `lexicon=auto` picks the E2E lexicon)",
         f"E2E dev slot gold: omission F1 {e2e('matcher', 'omission_f1')}, addition F1 "
         f"{e2e('matcher', 'addition_f1')}, the best engine measured; natural slot errors: clean above erroneous "
         f"{nat('matcher', 'pairwise')}, ρ {nat('matcher', 'rho_minus_ser')} with −SER",
         ctx.link("Content", "results/content.md#at-a-glance")],
        ["content, where a false alarm costs more than a miss, E2E slots", "no", "`content-aligner-e2e`",
         f"omission precision {e2e('aligner-e2e', 'omission_p')} (`coverage`: {e2e('matcher', 'omission_p')}), "
         f"F1 {e2e('aligner-e2e', 'omission_f1')}", ctx.source_link(e2e, "aligner-e2e", "Content log")],
        ["content, SF / BAGEL dialogue acts", "no", "`mr-bertscore`",
         f"EMNLP17 informativeness ρ {emc('mr-bertscore', 'informativeness')} (recall "
         f"{emc('mr-bertscore-recall', 'informativeness')}); `coverage`: {emc('coverage-sf', 'informativeness')}",
         ctx.source_link(emc, "mr-bertscore", "MR-BERTScore")],
        ["content", "yes", "`chrf`", f"EMNLP17 informativeness ρ {fam('chrf', 'informativeness')}",
         ctx.source_link(fam, "chrf", "Meta-evaluation")],
        ["content and fluency in one score, E2E", "no", "`content-ratpred-e2e`",
         f"natural slot errors {nat('content-ratpred-e2e', 'pairwise')}, "
         f"ρ {nat('content-ratpred-e2e', 'rho_minus_ser')} "
         "with −SER; quality ratings: **not measured**",
         ctx.source_link(nat, "content-ratpred-e2e", "Content log")],
        ["quality, SF / BAGEL outputs (the EMNLP17 domains)", "no", "`ratpred-emnlp17-s6-plus`",
         f"EMNLP17 quality r {rp('s6-plus', 'pearson')} (ρ {rp('s6-plus', 'spearman')}), cross-validated: "
         "it learned from these ratings", ctx.source_link(rp, "s6-plus", "RatPred")],
        ["quality, a new domain without ratings (E2E)", "no", "`ratpred-e2e-vectors`",
         f"its variant, each EMNLP17 dataset held out: r {rp('lodo-vectors', 'pearson')} "
         f"(ρ {rp('lodo-vectors', 'spearman')})", ctx.source_link(rp, "lodo-vectors", "RatPred")],
        ["fluency (naturalness)", "no", "`gruen-minilm`",
         f"EMNLP17 naturalness ρ {fam('gruen', 'naturalness')}, quality {fam('gruen', 'quality')}",
         ctx.source_link(fam, "gruen", "Meta-evaluation")],
        ["fluency (naturalness)", "yes", "`chrf`",
         f"EMNLP17 naturalness ρ {fam('chrf', 'naturalness')}, below `gruen-minilm`",
         ctx.source_link(fam, "chrf", "Meta-evaluation")],
    ]
    return table(HOW, rows) + "\n\n" + ctx.note("e2e_slot_gold", "e2e_natural_errors", "emnlp17_content",
                                                "emnlp17", "ratpred_emnlp17")


def render_which_triples(ctx: Ctx) -> str:
    d = ctx.data
    cont, web = d["webnlg2020_content"], d["webnlg2020"]
    rows = [
        ["content: data coverage", "no", "`content-aligner-webnlg` (`qe zoo build` it first)",
         f"data coverage {cont('aligner-webnlg', 'data_coverage')}, correctness "
         f"{cont('aligner-webnlg', 'correctness')}; previous build, 3 seeds: "
         f"{rho(cont('aligner-webnlg-seeds', 'data_coverage'))}, not significantly above `bertscore` with "
         f"references ({rho(web('bertscore', 'data_coverage'))})",
         ctx.source_link(cont, "aligner-webnlg", "Content log")],
        ["content, no model to build", "no", "`coverage` (`lexicon=auto` picks the WebNLG lexicon)",
         f"correctness {cont('coverage', 'correctness')}, data coverage {cont('coverage', 'data_coverage')}",
         ctx.link("Content", "results/content.md#at-a-glance")],
        ["content: correctness, with fluency", "no", "`content-ratpred-webnlg`",
         f"correctness {cont('content-ratpred-webnlg', 'correctness')}, fluency "
         f"{cont('content-ratpred-webnlg', 'fluency')}", ctx.source_link(cont, "content-ratpred-webnlg",
                                                                          "Content log")],
        ["content", "yes", "`bertscore`",
         f"correctness {web('bertscore', 'correctness')}, data coverage {web('bertscore', 'data_coverage')}: "
         "the strongest metric on these ratings", ctx.link("WebNLG 2020", "results/webnlg.md#at-a-glance")],
        ["fluency", "no", "`content-ratpred-webnlg`",
         f"fluency {cont('content-ratpred-webnlg', 'fluency')}; `ratpred-webnlg-cross` alone "
         f"{web('ratpred-webnlg-cross', 'fluency')}", ctx.link("WebNLG 2020", "results/webnlg.md#at-a-glance")],
        ["fluency", "yes", "`bertscore`",
         f"fluency {web('bertscore', 'fluency')}; `ds-sent-u-nn` {web('ds-sent-u-nn', 'fluency')}, `meteor` "
         f"{web('meteor', 'fluency')}", ctx.link("WebNLG 2020", "results/webnlg.md#at-a-glance")],
        ["(for scale) one more annotator against the mean rating", "–", "–",
         f"correctness {web('annotator', 'correctness')}, data coverage {web('annotator', 'data_coverage')}, "
         f"fluency {web('annotator', 'fluency')}", ctx.link("WebNLG 2020", "results/webnlg.md#at-a-glance")],
    ]
    return table(HOW, rows) + "\n\n" + ctx.note("webnlg2020_content", "webnlg2020")


def render_which_free_text(ctx: Ctx) -> str:
    ner, gru = ctx.data["ner18_discourse"], ctx.data["ner18_gruen"]
    disc = ctx.link("DiscoScore", "results/discourse.md#at-a-glance")
    rows = [
        ["content (informativeness, relevance)", "no",
         "**not measured** as adequacy; nearest: the cohesion baselines `rc` and `lc`",
         f"system level, informativeness {ner('rc', 'informativeness')}, relevance {ner('rc', 'relevance')}", disc],
        ["content (informativeness, relevance)", "yes",
         "**not measured** as adequacy; nearest: `ds-sent-u-nn` (coherence)",
         f"system level, informativeness {ner('ds-sent-u-nn', 'informativeness')}, relevance "
         f"{ner('ds-sent-u-nn', 'relevance')}", disc],
        ["fluency and coherence", "no", "`gruen --opt modules=G` (grammaticality only)",
         f"420 summaries, fluency ρ (r) {gru('gruen-G', 'fluency')}, coherence {gru('gruen-G', 'coherence')}; "
         f"all four modules: fluency {gru('gruen', 'fluency')}", ctx.source_link(gru, "gruen-G", "GRUEN")],
        ["fluency and coherence", "yes", "`ds-sent-u-nn`",
         f"system level, coherence {ner('ds-sent-u-nn', 'coherence')}, fluency {ner('ds-sent-u-nn', 'fluency')} "
         f"(`rc`, `lc` without references: {ner('rc', 'coherence')})", disc],
    ]
    return table(HOW, rows) + "\n\n" + ctx.note("ner18_discourse", "ner18_gruen")


def render_readme(ctx: Ctx) -> str:
    d = ctx.data
    e2e, cont, web, ner, gru = d["e2e_slot_gold"], d["webnlg2020_content"], d["webnlg2020"], d["ner18_discourse"], \
        d["ner18_gruen"]
    how = "how-to/which-metric.md"
    rows = [
        ["E2E-style slot MRs (`name[The Eagle], food[French]`)", "`coverage` (no references, nothing to build)",
         f"finds omitted facts at F1 {e2e('matcher', 'omission_f1')} and added ones at "
         f"{e2e('matcher', 'addition_f1')} on the E2E dev slot gold, the best engine measured",
         ctx.link("dialogue acts", how + "#dialogue-acts-and-e2e-style-mrs")],
        ["RDF triples (`Alan_Bean | birthPlace | Wheeler,_Texas`)", "`content-aligner-webnlg` (no references)",
         f"WebNLG 2020 data coverage ρ {rho(cont('aligner-webnlg', 'data_coverage'))}, against "
         f"{rho(web('bertscore', 'data_coverage'))} for `bertscore` with references; with references `bertscore` "
         f"leads on correctness ({rho(web('bertscore', 'correctness'))})",
         ctx.link("RDF triples", how + "#rdf-triples-webnlg-style")],
        ["free text, with references", "`ds-sent-u-nn` (DiscoScore)",
         f"NeR18 summaries, 7 systems: coherence τ×100 {ner('ds-sent-u-nn', 'coherence')} (`rc`, no references: "
         f"{ner('rc', 'coherence')}); content: not measured", ctx.link("free text", how + "#free-text-documents-and-"
                                                                        "summaries")],
        ["free text, without references", "`gruen --opt modules=G`",
         f"NeR18 fluency ρ {rho(gru('gruen-G', 'fluency'))} over 420 summaries (all GRUEN modules: "
         f"{rho(gru('gruen', 'fluency'))})", ctx.link("free text", how + "#free-text-documents-and-summaries")],
    ]
    return table(["your input", "use (`qe score -m`)", "the figure behind the choice", "more"], rows) + "\n\n" + \
        ctx.note("e2e_slot_gold", "webnlg2020_content", "webnlg2020", "ner18_discourse", "ner18_gruen")


@dataclass(frozen=True)
class Table:
    name: str
    page: str  # relative to the repository root
    render: Callable[[Ctx], str]


TABLES = (
    Table("readme-recommendations", "README.md", render_readme),
    Table("results-index", "docs/results/index.md", render_results_index),
    Table("content-precision", "docs/results/content.md", render_content_precision),
    Table("content-e2e-slot-gold", "docs/results/content.md", render_e2e_slot_gold),
    Table("content-e2e-natural-errors", "docs/results/content.md", render_e2e_natural),
    Table("content-webnlg2020", "docs/results/content.md", render_content_webnlg),
    Table("content-triple-gold", "docs/results/content.md", render_content_triples_short),
    Table("content-emnlp17", "docs/results/content.md", render_content_emnlp17),
    Table("content-emnlp17-hand", "docs/results/content.md", render_content_emnlp17_hand),
    Table("triples-at-a-glance", "docs/results/content-triples.md", render_triples_at_a_glance),
    Table("validity-at-a-glance", "docs/results/validity.md", render_validity),
    Table("webnlg-at-a-glance", "docs/results/webnlg.md", render_webnlg),
    Table("discourse-at-a-glance", "docs/results/discourse.md", render_discourse),
    Table("slor-at-a-glance", "docs/results/slor.md", render_slor),
    Table("refmetrics-at-a-glance", "docs/results/refmetrics.md", render_refmetrics),
    Table("gruen-at-a-glance", "docs/results/gruen.md", render_gruen),
    Table("ratpred-at-a-glance", "docs/results/ratpred.md", render_ratpred),
    Table("zoo-at-a-glance", "docs/results/zoo.md", render_zoo),
    Table("performance-at-a-glance", "docs/results/performance.md", render_performance),
    Table("which-metric-e2e", "docs/how-to/which-metric.md", render_which_e2e),
    Table("which-metric-triples", "docs/how-to/which-metric.md", render_which_triples),
    Table("which-metric-free-text", "docs/how-to/which-metric.md", render_which_free_text),
)


def block(name: str, body: str) -> str:
    """The text between (and including) a table's markers."""
    note = ("<!-- generated by docs/gen_tables.py from docs/results/data/: edit the CSV there and run "
            "`python docs/gen_tables.py`; a hand edit here fails tests/docs/test_generated_tables.py -->")
    return f"{BEGIN.format(name)}\n{note}\n\n{body.strip()}\n\n{END.format(name)}"


def _span(text: str, name: str, page: str) -> tuple[int, int]:
    begin, end = BEGIN.format(name), END.format(name)
    if text.count(begin) != 1 or text.count(end) != 1:
        raise SourceError(f"{page}: table {name!r} needs exactly one {begin!r} and one {end!r} "
                          f"(found {text.count(begin)} and {text.count(end)})")
    start, stop = text.index(begin), text.index(end) + len(end)
    if stop < start:
        raise SourceError(f"{page}: table {name!r}: the end marker comes before the begin marker")
    return start, stop


def run(root: Path = REPO, data: Path | None = None, check: bool = False) -> list[str]:
    """Render every table into its page under ``root``; with ``check``, change nothing and return the mismatches."""
    source = Data(data if data is not None else root / "docs" / "results" / "data")
    pages: dict[str, str] = {}
    problems: list[str] = []
    for t in TABLES:
        if t.page not in pages:
            pages[t.page] = (root / t.page).read_text(encoding="utf-8")
        text = pages[t.page]
        start, stop = _span(text, t.name, t.page)
        want = block(t.name, t.render(Ctx(source, Path(t.page))))
        if text[start:stop] != want:
            problems.append(f"{t.page}: table {t.name!r} differs from its source (run `python docs/gen_tables.py`)")
            pages[t.page] = text[:start] + want + text[stop:]
    if not check:
        for page, text in pages.items():
            path = root / page
            if path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 and name each page and table that disagrees with its source")
    parser.add_argument("--root", type=Path, default=REPO, help="the repository root (default: this checkout)")
    args = parser.parse_args(argv)
    try:
        problems = run(args.root, check=args.check)
    except SourceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.check:
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    for p in problems:
        print("rewrote " + p.split(" differs")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
