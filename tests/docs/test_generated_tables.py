"""The headline tables are generated from the result files, never typed (issue 57, items 6 and 8).

``docs/gen_tables.py`` renders every at-a-glance table of the content pages, the results overview, "Which metric
should I use?", the README's recommendations and the per-family pages (SLOR, reference metrics, GRUEN, RatPred,
the model zoo, performance) from ``docs/results/data/*.csv``, where each figure sits beside the
command that produced it and the machine. These tests fail when a page is edited by hand (or a CSV without
re-running the script), when a result file loses a row's command or machine, when a generated cell grows long or
carries dated history, and when the README's first screen stops answering "which metric for my data-to-text
outputs?". They also parse every command of the result files the way test_docs_commands parses the pages' commands.
"""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

SCRIPT = REPO / "docs" / "gen_tables.py"
DATA = REPO / "docs" / "results" / "data"


def _load():
    spec = importlib.util.spec_from_file_location("gen_tables", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_tables"] = module
    spec.loader.exec_module(module)
    return module


gen = _load()


def _copy(tmp_path: Path) -> Path:
    """A copy of the pages the script writes and of the result files, to edit without touching the checkout."""
    for page in {t.page for t in gen.TABLES}:
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / page, tmp_path / page)
    shutil.copytree(DATA, tmp_path / "docs" / "results" / "data")
    return tmp_path


def _blocks(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in
            re.finditer(r"<!-- table:([\w-]+) begin -->(.*?)<!-- table:\1 end -->", text, re.S)}


def _cells(block: str) -> list[str]:
    rows = [ln for ln in block.splitlines() if ln.startswith("|") and not re.match(r"^\|(-+\|)+$", ln)]
    return [c.strip() for ln in rows for c in re.split(r"(?<!\\)\|", ln.strip("|"))]


def test_pages_agree_with_their_sources():
    problems = gen.run(REPO, check=True)
    assert not problems, "\n".join(problems)


def test_check_command_passes_on_the_checkout():
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr


def _matcher_omission_f1(root) -> str:
    """The E2E slot gold's matcher omission F1 as its CSV writes it (one figure the tests move around)."""
    import csv

    with open(root / "docs" / "results" / "data" / "e2e_slot_gold.csv", newline="", encoding="utf-8") as f:
        return next(r["omission_f1"] for r in csv.DictReader(f) if r["id"] == "matcher")


def test_hand_edit_of_a_page_is_caught(tmp_path):
    root = _copy(tmp_path)
    page = root / "docs" / "results" / "content.md"
    text = page.read_text()
    block = _blocks(text)["content-e2e-slot-gold"]
    f1 = _matcher_omission_f1(root)
    assert f1 in block  # the matcher's omission F1 (e2e_slot_gold.csv)
    page.write_text(text.replace(block, block.replace(f1, "0.001", 1)))
    done = subprocess.run([sys.executable, str(SCRIPT), "--check", "--root", str(root)], capture_output=True,
                          text=True)
    assert done.returncode == 1
    assert "docs/results/content.md" in done.stderr and "content-e2e-slot-gold" in done.stderr, done.stderr
    # the script restores the table from its source
    assert gen.run(root) and not gen.run(root, check=True)
    assert "0.001" not in _blocks(page.read_text())["content-e2e-slot-gold"]


def test_edited_source_reaches_every_page(tmp_path):
    """One figure, kept once: the README, which-metric and the content page all change with its CSV."""
    root = _copy(tmp_path)
    csv_path = root / "docs" / "results" / "data" / "e2e_slot_gold.csv"
    text = csv_path.read_text()
    f1 = _matcher_omission_f1(root)
    assert text.count(f",{f1},") == 1
    csv_path.write_text(text.replace(f",{f1},", ",0.999,"))
    problems = gen.run(root, check=True)
    for page, table in (("README.md", "readme-recommendations"), ("docs/how-to/which-metric.md", "which-metric-e2e"),
                        ("docs/results/content.md", "content-e2e-slot-gold"),
                        ("docs/results/index.md", "results-index")):
        assert any(p.startswith(f"{page}: table {table!r}") for p in problems), (page, table, problems)
    gen.run(root)
    assert "0.999" in (root / "README.md").read_text()
    assert not gen.run(root, check=True)


def test_missing_markers_are_named(tmp_path):
    root = _copy(tmp_path)
    page = root / "docs" / "results" / "content-triples.md"
    page.write_text(page.read_text().replace("<!-- table:triples-at-a-glance end -->", ""))
    with pytest.raises(gen.SourceError, match=r"content-triples\.md: table 'triples-at-a-glance'"):
        gen.run(root, check=True)


def test_precision_table_from_its_file_or_a_line_saying_it_is_missing(tmp_path):
    root = _copy(tmp_path)
    precision = root / "docs" / "results" / "data" / "content_precision.csv"
    precision.unlink(missing_ok=True)
    gen.run(root)
    block = _blocks((root / "docs" / "results" / "content.md").read_text())["content-precision"]
    assert "content_precision.csv" in block and "not in the repository yet" in block
    assert not gen.run(root, check=True)
    # the layout experiments.content_precision writes: (setting, domain) rows, no id, a command and machine per row
    cmd = "python -m experiments.content_precision --data-dir ../shared/data --lodo"
    precision.write_text(
        "setting,domain,references,facts,invented_per_100_refs,not_realised_per_100_facts,swaps_found_pct,"
        "triple_gold_wrong_f1,mine_command,command,machine\n"
        f"default,e2e,4299,20000,1.5,2.5,81.0,,,{cmd},2-core CPU\n"
        f"default,webnlg,4463,13231,3.0,7.0,95.0,,,{cmd},2-core CPU\n"
        f"lodo,e2e,4299,20000,2.0,3.5,80.0,,qe content mine -i x.csv -o y.json,{cmd},2-core CPU\n")
    assert gen.run(root, check=True) == [
        "docs/results/content.md: table 'content-precision' differs from its source (run `python docs/gen_tables.py`)"]
    gen.run(root)
    text = (root / "docs" / "results" / "content.md").read_text()
    block = _blocks(text)["content-precision"]
    assert "| default | e2e | 4299 | 20000 | 1.5 | 2.5 | 81.0 |" in block, block
    assert "| lodo | e2e | 4299 | 20000 | 2.0 | 3.5 | 80.0 |" in block and "recall: swapped values found" in block
    assert "wrong` F1" not in block and "qe content mine" not in block  # an empty column, a command: not shown
    # the page opens with it: the first table under "At a glance"
    assert text.index("table:content-precision begin") < min(text.index(f"table:{n} begin") for n in _blocks(text)
                                                                 if n != "content-precision")


def test_rows_need_a_command_and_a_machine(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,figure,command,machine\nok,0.5,python -m x,2-core CPU\nnope,0.6,,2-core CPU\n")
    with pytest.raises(gen.SourceError, match=r"bad\.csv: line 3 \(id 'nope'\): field 'command' is empty"):
        gen.load_source(bad)
    bad.write_text("id,figure,command,machine\na,0.5,python -m x,cpu\na,0.6,python -m y,cpu\n")
    with pytest.raises(gen.SourceError, match="id 'a' appears twice"):
        gen.load_source(bad)
    # a command and a machine for the whole file, in leading comment lines
    good = tmp_path / "good.csv"
    good.write_text("# command: python -m experiments.x --seed 1\n# machine: 2-core CPU, one thread\n"
                    "id,figure\na,0.5\nb,0.6\n")
    src = gen.load_source(good)
    assert src("b", "figure") == "0.6" and src.row("a")["command"] == "python -m experiments.x --seed 1"
    with pytest.raises(gen.SourceError, match="no row with id 'c'"):
        src("c", "figure")


@pytest.mark.parametrize("path", sorted(DATA.glob("*.csv")), ids=lambda p: p.name)
def test_every_result_file_is_traceable(path):
    source = gen.load_source(path)
    assert source.rows, f"{path}: no rows"
    for row_id, row in source.rows.items():
        assert row["command"].strip() and row["machine"].strip(), (path.name, row_id)
        if "section" in row and row["section"]:
            target = REPO / "docs" / row["section"].partition("#")[0]
            assert target.is_file(), f"{path.name}, row {row_id}: section {row['section']!r} names no page"


def test_generated_cells_are_short_and_undated():
    for page in sorted({t.page for t in gen.TABLES}):
        for name, block in _blocks((REPO / page).read_text()).items():
            for c in _cells(block):
                assert len(c) <= 200, f"{page}, table {name}: a cell of {len(c)} characters: {c[:80]}..."
                visible = re.sub(r"\]\([^)]*\)", "]", c)  # link targets may hold a section's date
                assert not re.search(r"\b20\d\d-\d\d-\d\d\b", visible), f"{page}, table {name}: dated cell {c!r}"


def test_readme_first_screen_answers_which_metric():
    lines = (REPO / "README.md").read_text().splitlines()
    first = "\n".join(lines[:40])
    assert "data-to-text" in first
    block = _blocks(first).get("readme-recommendations")
    assert block, "the README's recommendations are not on its first screen (first 40 lines)"
    rows = [ln for ln in block.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    kinds = ["E2E-style slot MRs", "RDF triples", "free text, with references", "free text, without references"]
    assert len(rows) == len(kinds)
    for row, kind in zip(rows, kinds):
        assert kind in row
        metric, figure, more = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip("|"))][1:4]
        assert metric.startswith("`"), row
        assert re.search(r"\d\.\d{3}|\d{2}\.\d{2}", figure), row
        assert re.search(r"\]\(docs/[^)]+\.md#[\w-]+\)", more), row


def test_result_file_commands_parse(tmp_path):
    """Each result file's commands are checked like the commands of the pages (test_docs_commands)."""
    import test_docs_commands as tdc

    page = tmp_path / "docs" / "results.md"
    page.parent.mkdir()
    lines = []
    for path in sorted(DATA.glob("*.csv")):
        for row_id, row in gen.load_source(path).rows.items():
            lines += [f"# {path.name}: {row_id}", row["command"], ""]
    page.write_text("```bash\n" + "\n".join(lines) + "\n```\n")
    cmds = tdc.extract(page, tmp_path / "docs")
    checked = 0
    for cmd in cmds:
        assert not cmd.error, f"{cmd.text}: {cmd.error}"
        if cmd.skip or cmd.kind == "other":
            continue
        try:
            tdc.check(cmd)
        except AssertionError as exc:
            raise AssertionError(f"{cmd.text}\n    {exc}") from None
        checked += 1
    assert checked >= 10, f"only {checked} result-file commands checked"


# --- the per-family pages: SLOR, reference metrics, GRUEN, RatPred, the zoo, performance (issue 57, item 6) ---------

FAMILY_TABLES = {"docs/results/slor.md": "slor-at-a-glance", "docs/results/refmetrics.md": "refmetrics-at-a-glance",
                 "docs/results/gruen.md": "gruen-at-a-glance", "docs/results/ratpred.md": "ratpred-at-a-glance",
                 "docs/results/zoo.md": "zoo-at-a-glance", "docs/results/performance.md": "performance-at-a-glance"}


@pytest.mark.parametrize("page", sorted((REPO / "docs" / "results").glob("*.md")), ids=lambda p: p.name)
def test_every_at_a_glance_table_is_generated(page):
    """No page of docs/results/ keeps a hand-typed table in its "At a glance" section."""
    text = page.read_text()
    if "## At a glance" not in text:
        return
    section = text.split("## At a glance", 1)[1].split("\n## ", 1)[0]
    assert _blocks(section), f"{page.name}: its at-a-glance section has no generated table"
    for block in _blocks(section).values():
        section = section.replace(block, "")
    assert not re.search(r"^\|(-+\|)+$", section, re.M), f"{page.name}: a hand-typed table in 'At a glance'"


def test_family_tables_are_registered():
    registered = {(t.page, t.name) for t in gen.TABLES}
    assert set(FAMILY_TABLES.items()) <= registered


@pytest.mark.parametrize("page, name, figure", [
    ("docs/results/slor.md", "slor-at-a-glance", "0.257"),
    ("docs/results/refmetrics.md", "refmetrics-at-a-glance", "0.859"),
    ("docs/results/gruen.md", "gruen-at-a-glance", "0.361 / 0.242"),
    ("docs/results/ratpred.md", "ratpred-at-a-glance", "0.378 (0.315)"),
    ("docs/results/zoo.md", "zoo-at-a-glance", "5,687 s"),
    ("docs/results/performance.md", "performance-at-a-glance", "581 sentences/s"),
])
def test_hand_edit_of_a_family_table_is_caught(tmp_path, page, name, figure):
    root = _copy(tmp_path)
    path = root / page
    text = path.read_text()
    block = _blocks(text)[name]
    assert figure in block
    path.write_text(text.replace(block, block.replace(figure, figure.replace("5", "9").replace("1", "7"), 1)))
    problems = gen.run(root, check=True)
    assert f"{page}: table {name!r} differs from its source (run `python docs/gen_tables.py`)" in problems
    gen.run(root)
    assert figure in _blocks(path.read_text())[name]


@pytest.mark.parametrize("csv_name, old, new, tables", [
    ("slor_lms", ",0.257,", ",0.299,", ["slor-at-a-glance"]),
    ("refmetrics_emnlp17", ",0.517,", ",0.555,", ["refmetrics-at-a-glance"]),
    ("gruen_parts", ",0.361 / 0.242,", ",0.371 / 0.242,", ["gruen-at-a-glance"]),
    ("ner18_gruen", "0.223 (0.302)", "0.233 (0.302)", ["gruen-at-a-glance", "readme-recommendations"]),
    ("ratpred_glance", ",0.242,", ",0.252,", ["ratpred-at-a-glance"]),
    ("ratpred_emnlp17", ",0.300,", ",0.301,", ["ratpred-at-a-glance", "which-metric-e2e"]),
    ("zoo_builds", ",691 s,", ",701 s,", ["zoo-at-a-glance", "results-index"]),
    ("performance_glance", "0.17 s (before", "0.18 s (before", ["performance-at-a-glance", "results-index"]),
])
def test_a_family_figure_is_kept_once(tmp_path, csv_name, old, new, tables):
    """Each figure sits in one result file: editing it there changes every table that shows it, and only there."""
    root = _copy(tmp_path)
    path = root / "docs" / "results" / "data" / f"{csv_name}.csv"
    text = path.read_text()
    assert text.count(old) == 1, (csv_name, old)
    path.write_text(text.replace(old, new))
    changed = {p.split("table ")[1].split("'")[1] for p in gen.run(root, check=True)}
    changed.discard("content-precision")  # the content page's own table follows its own file (not ours)
    assert set(tables) <= changed, (tables, changed)
    gen.run(root)
    assert not [p for p in gen.run(root, check=True) if "content-precision" not in p]


def test_family_figures_agree_across_result_files():
    """The zoo's validation figures are the ones the family pages report for the same builds."""
    d = gen.Data()
    zoo, slor, parts, rp, glance = d["zoo_builds"], d["slor_lms"], d["gruen_parts"], d["ratpred_emnlp17"], \
        d["ratpred_glance"]
    brown = zoo("slor-brown-wt2", "figure")
    for lm in ("slor-word-brown-wt2", "slor-sp-brown-wt2"):
        assert f"{slor(lm, 'val_ppl')} / {slor(lm, 'test_ppl')}" in brown
    assert slor("slor-word-domain", "val_ppl") in zoo("slor-domain", "figure")
    assert slor("slor-sp-domain", "val_ppl") in zoo("slor-domain", "figure")
    assert f"{slor('slor-sp-mixed', 'val_ppl')} / {slor('slor-sp-mixed', 'test_ppl')}" in zoo("slor-mixed", "figure")
    mcc_in, mcc_out = parts("cola-minilm", "figure").split(" / ")
    assert f"{mcc_in} in-domain / {mcc_out} out-of-domain" in zoo("cola-minilm", "figure")
    assert f"PPL {parts('mlm-minilm', 'figure')}" in zoo("mlm-minilm", "figure")
    assert zoo("sop-gruen", "figure").startswith(f"validation accuracy {parts('sop-minilm', 'figure').split(';')[0]}")
    assert zoo("ratpred-emnlp17-s6", "figure").startswith(f"pooled Pearson {glance('s6', 'pearson')};")
    assert zoo("ratpred-emnlp17-s6-minilm", "figure").startswith(f"pooled Pearson {glance('s6-minilm', 'pearson')};")
    assert f"Pearson {rp('s6-plus', 'pearson')} / Spearman {rp('s6-plus', 'spearman')}" in \
        zoo("ratpred-emnlp17-s6-plus", "figure")


def test_links_field_errors_name_file_row_and_field(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,figure,links,command,machine\na,0.5,Setup results/slor.md,python -m x,2-core CPU\n")
    src = gen.load_source(bad)
    with pytest.raises(gen.SourceError, match=r"bad\.csv: row 'a': field 'links': 'Setup results/slor\.md'"):
        gen.links(gen.Ctx(gen.Data(tmp_path), Path("docs/results/slor.md")), src, "a")


def test_family_result_files_link_to_existing_sections():
    """Every ``links`` target of the new result files names a page, and a heading of it when it has an anchor."""
    from markdown.extensions.toc import slugify

    for name in ("slor_lms", "refmetrics_emnlp17", "gruen_parts", "ratpred_glance", "zoo_builds",
                 "performance_glance"):
        src = gen.load_source(DATA / f"{name}.csv")
        for row_id, row in src.rows.items():
            for target in [p.partition(">")[2].strip() for p in row.get("links", "").split(";") if p.strip()] + \
                    [row.get("section", "")]:
                if not target:
                    continue
                page, _, anchor = target.partition("#")
                path = REPO / "docs" / page
                assert path.is_file(), (name, row_id, target)
                if anchor:  # the anchors mkdocs' toc extension makes
                    slugs = {slugify(h.lstrip("#").strip(), "-") for h in path.read_text().splitlines()
                             if re.match(r"^#{1,6} ", h)}
                    assert anchor in slugs, (name, row_id, target)


def test_family_extra_commands_parse(tmp_path):
    """The build, Pearson, GPU and further commands kept beside a row's own command parse like the pages' commands."""
    import test_docs_commands as tdc

    page = tmp_path / "docs" / "results.md"
    page.parent.mkdir()
    lines = []
    for name in ("slor_lms", "zoo_builds", "performance_glance"):
        for row_id, row in gen.load_source(DATA / f"{name}.csv").rows.items():
            for column in ("build_command", "pearson_command", "gpu_command", "more_commands"):
                if row.get(column):
                    lines += [f"# {name}.csv: {row_id}, {column}", row[column], ""]
    page.write_text("```bash\n" + "\n".join(lines) + "\n```\n")
    checked = 0
    for cmd in tdc.extract(page, tmp_path / "docs"):
        assert not cmd.error, f"{cmd.text}: {cmd.error}"
        if cmd.skip or cmd.kind == "other":
            continue
        tdc.check(cmd)
        checked += 1
    assert checked >= 8, f"only {checked} extra commands checked"
