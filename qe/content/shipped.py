"""The lexicons that ship with ``qe``: the mined E2E, SF and WebNLG lexicons, so the content check needs no data folder.

``lexicon=auto`` and ``lexicon=e2e|sf|webnlg`` read ``qe/resources/lexicons/<name>.json`` (:func:`load`); a fresh
install gives what a clone with the data gives. Each file is what :func:`mine_dataset_lexicon` mines from its
dataset's files, written canonically (:func:`render`: keys sorted, so the bytes do not depend on the
process's hash seed), and listed with its sha256 in ``SHA256SUMS`` (``sha256sum -c`` format); loading checks it, and
a file that does not match is an error naming the file (:class:`ShippedLexiconError`). The folder's ``README.md``
names, per lexicon, its source dataset and files (with their sha256), the licence of the data it derives from (a
derived file carries its dataset's licence: CC BY-SA 4.0 for E2E, Apache 2.0 for SF, CC BY-NC-SA 4.0 for WebNLG), the
command that regenerates it and its own sha256.

One command mines all three again from the data directory and rewrites the files, ``SHA256SUMS`` and the README::

    python -m qe.content.shipped --data-dir ../shared/data            # all three (30 s to 2 min, one CPU thread)
    python -m qe.content.shipped --data-dir ../shared/data --only e2e  # one

It refuses data files whose sha256 is not their recipe's (``qe/resources/datasets/*.yaml``), so what ships is mined
from the published files. A change of the miner without this command fails the slow test
``tests/content/test_parse_auto_shipped.py::test_the_shipped_lexicons_equal_a_fresh_mine``.
The mined-lexicon cache (:mod:`qe.content.cache`, ``lexicon=e2e@data``) stays for mining from your data folder.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

from qe.content.lexicon import Lexicon
from qe.errors import QEError

#: the lexicons that ship, in the order the README lists them
NAMES = ("e2e", "sf", "webnlg")
#: the checksum file beside them (``sha256sum -c SHA256SUMS`` checks it)
SUMS = "SHA256SUMS"
#: the command that regenerates them (from the repository root, the data in ../shared/data)
COMMAND = "python -m qe.content.shipped --data-dir ../shared/data"
#: per lexicon: the dataset recipe (qe/resources/datasets/<recipe>.yaml), what it is, where it comes from, and the
#: licence of the data it derives from (as the data folder's README states it)
PROVENANCE: dict[str, dict[str, str]] = {
    "e2e": {"recipe": "e2e", "dataset": "E2E NLG, cleaned version (Dušek, Howcroft, Rieser 2019) of the E2E NLG "
                                        "challenge data (Novikova, Dušek, Rieser 2017)",
            "upstream": "github.com/tuetschek/e2e-cleaning @ 164acdf986146d76f18893b3de9488725deda4c2, "
                        "cleaned-data/devel-fixed.no-ol.csv",
            "reads": "every (MR, reference) row of the cleaned development set (columns mr, ref)",
            "licence": "CC BY-SA 4.0 (the E2E data's licence; the cleaned re-annotation states none of its own)"},
    "sf": {"recipe": "sfx", "dataset": "SF Hotel and SF Restaurant (Wen et al. 2015)",
           "upstream": "github.com/shawnwun/RNNLG @ 61ac6fd1304c9dcf29ea894452e685652718f6f8, "
                       "data/original/{hotel,restaurant}/train.json",
           "reads": "every (dialogue act, human reference) pair of the two training sets",
           "licence": "Apache-2.0 (RNNLG's LICENSE; \"Copyright 2016 Cambridge University Engineering Department "
                      "Dialogue Systems Group\")"},
    "webnlg": {"recipe": "webnlg2020", "dataset": "WebNLG+ 2020 English RDF-to-text (Castro Ferreira et al. 2020)",
               "upstream": "github.com/WebNLG/challenge-2020 @ f48f34ccba00b6d8e546f322031734cc9288b33f, data/en/train "
                           "(packed as train.tar.xz)",
               "reads": "every reference marked good of each training entry (the words texts use for each "
                        "property, and the rarer ones some of its texts use: `attested`)",
               "licence": "CC BY-NC-SA 4.0 (the WebNLG corpus: non-commercial, share-alike)"},
}


#: lexicons mined from a dataset on demand: name -> (what it reads, how)
DATASET_LEXICONS = {"e2e": "the cleaned E2E development references (e2e/devel-fixed.no-ol.csv: column mr, ref)",
                    "sf": "the SF Hotel and SF Restaurant training references (sfx/*/train.json; dialogue acts)",
                    "webnlg": "the WebNLG 2020 training references (webnlg2020/train.tar.xz; RDF triples: the words "
                              "texts use for each property, qe.content.lexicon.mine_triples)"}


def mine_dataset_lexicon(name: str, data_dir: str | None = None) -> Lexicon:
    """Mine the lexicon of a known dataset (:data:`DATASET_LEXICONS`) from the data directory (no cache)."""
    from qe.content.mining import mine

    if name == "e2e":
        from qe.data.e2e import e2e_slot_gold

        rows = e2e_slot_gold("dev", data_dir)
        return mine([(r["mr"], r["ref"]) for r in rows], source="e2e-dev-cleaned", min_count=10)
    if name == "sf":
        from qe.data.references import SF_DOMAINS, sf_references

        refs = [r for d in SF_DOMAINS for r in sf_references(d, "train", data_dir)]
        return mine([(r.mr, r.ref) for r in refs], source="sf-train", min_count=10)
    if name == "webnlg":
        from qe.content.lexicon import mine_triples
        from qe.data.webnlg import webnlg_entries

        return mine_triples(triple_pairs(webnlg_entries("train", data_dir)), source="webnlg-train",
                            where="webnlg2020/train")
    raise ValueError(f"lexicon={name!r}: choose none, a lexicon JSON file, or one of {', '.join(DATASET_LEXICONS)}")


def triple_pairs(entries) -> list[tuple[str, str]]:
    """The ``(mr, text)`` pairs the ``webnlg`` lexicon is mined from: every reference of each WebNLG entry that the
    corpus marks ``good``."""
    return [(e.mr, x.text) for e in entries for x in e.lexes if x.comment == "good"]



class ShippedLexiconError(QEError, ValueError):
    """A shipped lexicon that is missing, unlisted or does not match its checksum; the message names the file."""


def lexicons_dir() -> Path:
    """``qe/resources/lexicons`` of the installed package."""
    from qe.core.paths import resources_dir

    return resources_dir() / "lexicons"


def path(name: str, folder: str | os.PathLike | None = None) -> Path:
    if name not in NAMES:
        raise ValueError(f"no shipped lexicon {name!r}; the shipped ones: {', '.join(NAMES)}")
    return Path(folder or lexicons_dir()) / f"{name}.json"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_sums(folder: str | os.PathLike | None = None) -> dict[str, str]:
    """``SHA256SUMS`` as {file name: sha256}; a malformed line is an error naming the file and line."""
    p = Path(folder or lexicons_dir()) / SUMS
    if not p.is_file():
        raise ShippedLexiconError(f"{p}: missing; regenerate the shipped lexicons with `{COMMAND}`")
    out = {}
    for k, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2 or len(parts[0]) != 64 or any(c not in "0123456789abcdef" for c in parts[0]):
            raise ShippedLexiconError(f"{p}:{k}: expected '<sha256>  <file>', found {line[:80]!r}")
        out[parts[1].lstrip("*")] = parts[0]
    return out


@lru_cache(maxsize=None)
def load(name: str, folder: str | None = None) -> Lexicon:
    """The shipped ``name`` lexicon, after checking its bytes against ``SHA256SUMS``."""
    p = path(name, folder)
    if not p.is_file():
        raise ShippedLexiconError(f"{p}: the shipped {name} lexicon is missing (a broken install?); regenerate it "
                                  f"with `{COMMAND} --only {name}`, or mine it from your data with lexicon={name}@data")
    data = p.read_bytes()
    want = read_sums(p.parent).get(p.name)
    if want is None:
        raise ShippedLexiconError(f"{p}: not listed in {p.parent / SUMS}; regenerate with `{COMMAND}`")
    got = sha256(data)
    if got != want:
        raise ShippedLexiconError(f"{p}: sha256 {got[:12]}... does not match {SUMS} ({want[:12]}...): the file was "
                                  f"changed or damaged; reinstall qe, or regenerate it with `{COMMAND} --only {name}`")
    try:
        return Lexicon.from_dict(json.loads(data.decode("utf-8")), str(p))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ShippedLexiconError(f"{p}: not UTF-8 JSON ({exc})") from None


def render(lex: Lexicon) -> bytes:
    """A lexicon's shipped bytes: its JSON with keys sorted (the miner's dict order can follow the hash seed)."""
    from qe.core.jsonio import dumps

    return (dumps(lex.to_dict(), indent=1, sort_keys=True) + "\n").encode("utf-8")


def source_files(name: str, data_dir: str | os.PathLike | None = None) -> list[tuple[str, Path, str | None]]:
    """``(relative path, path in the data directory, the recipe's sha256)`` of each file ``name`` is mined from."""
    from qe.content.cache import sources, SOURCES
    from qe.data.recipes import load_recipes

    recipe = load_recipes().get(PROVENANCE[name]["recipe"], {})
    want = {f["path"]: f.get("sha256") for f in recipe.get("files", [])}
    return [(rel, p, want.get(rel)) for rel, p in zip(SOURCES[name], sources(name, data_dir))]


def _file_sha(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_sources(name: str, data_dir: str | os.PathLike | None = None) -> None:
    """Every file ``name`` is mined from is in the data directory and hashes to its recipe's sha256."""
    for rel, p, want in source_files(name, data_dir):
        if not p.is_file():
            from qe.content.cache import DATASETS

            raise FileNotFoundError(f"{p}: needed to mine the {name} lexicon; get it with `qe data download "
                                    f"{DATASETS[name]}` or point --data-dir / QE_DATA_DIR at the folder holding {rel}")
        got = _file_sha(p)
        if want and got != want:
            raise ShippedLexiconError(f"{p}: sha256 {got[:12]}... is not its recipe's ({want[:12]}...): the shipped "
                                      "lexicons are mined from the published files only")


def _write(p: Path, data: bytes) -> None:
    from qe.core.paths import write_atomically

    write_atomically(p, lambda tmp: tmp.write_bytes(data))


def readme(folder: str | os.PathLike | None = None) -> str:
    """The folder's README: per shipped lexicon its source, licence, regeneration command and sha256."""
    folder = Path(folder or lexicons_dir())
    sums = read_sums(folder) if (folder / SUMS).is_file() else {}
    out = ["# Shipped content lexicons", "",
           "Written by `" + COMMAND + "` (qe/content/shipped.py); do not edit by hand. `lexicon=auto` and "
           "`lexicon=e2e|sf|webnlg` read these files, so the content check needs no data folder; "
           "`lexicon=<name>@data` mines the lexicon from your data folder instead (cached, qe/content/cache.py).", "",
           "**Licence.** Each file is derived from a public dataset (it holds the dataset's slot values and the words "
           "its references use) and carries that dataset's licence, not qe's MIT licence: see each entry. The WebNLG "
           "lexicon is CC BY-NC-SA 4.0: non-commercial use only, share-alike.", "",
           f"Loading checks each file against `{SUMS}` (`sha256sum -c {SUMS}` does the same by hand).", ""]
    for name in NAMES:
        p = path(name, folder)
        if not p.is_file():
            continue
        prov = PROVENANCE[name]
        out += [f"## {p.name}", "",
                f"- source dataset: {prov['dataset']}; upstream {prov['upstream']}",
                f"- what it reads: {prov['reads']}"]
        files = source_files(name, None)
        out.append("- source files (in the data directory; sha256 as in their recipe, "
                   f"qe/resources/datasets/{prov['recipe']}.yaml, and the data folder's README):")
        out += [f"  - `{rel}`: `{want}`" for rel, _, want in files]
        out += [f"- licence of the data it derives from: {prov['licence']}",
                f"- regenerate: `{COMMAND} --only {name}`",
                f"- sha256 of {p.name}: `{sums.get(p.name, sha256(p.read_bytes()))}`", ""]
    return "\n".join(out)


def generate(data_dir: str | os.PathLike | None = None, names: Sequence[str] = NAMES,
             folder: str | os.PathLike | None = None, say: Callable[[str], None] = print) -> dict[str, str]:
    """Mine ``names`` from the data directory, write them, ``SHA256SUMS`` and ``README.md`` into ``folder`` (the
    package's by default); returns {file name: sha256}. The other lexicons' files and entries are kept."""
    import time

    folder = Path(folder or lexicons_dir())
    for name in names:
        check_sources(name, data_dir)  # every source first: no half-regenerated folder for a missing file
    folder.mkdir(parents=True, exist_ok=True)
    sums = read_sums(folder) if (folder / SUMS).is_file() else {}
    for name in names:
        t = time.perf_counter()
        data = render(mine_dataset_lexicon(name, None if data_dir is None else str(data_dir)))
        p = path(name, folder)
        _write(p, data)
        sums[p.name] = sha256(data)
        say(f"{p}: mined in {time.perf_counter() - t:.0f} s, sha256 {sums[p.name]}")
    order = {f"{n}.json": k for k, n in enumerate(NAMES)}
    _write(folder / SUMS, "".join(f"{sums[f]}  {f}\n" for f in sorted(sums, key=lambda f: order.get(f, 99)))
           .encode("utf-8"))
    _write(folder / "README.md", (readme(folder) + "\n").replace("\n\n\n", "\n\n").encode("utf-8"))
    load.cache_clear()
    return sums


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m qe.content.shipped",
                                 description="Mine the shipped content lexicons again from the data directory.")
    ap.add_argument("--data-dir", default=None, help="the data directory (default: QE_DATA_DIR, else ../shared/data)")
    ap.add_argument("--only", nargs="+", choices=NAMES, default=list(NAMES), help="which lexicons (default: all)")
    ap.add_argument("--out", default=None, help="where to write them (default: the package's qe/resources/lexicons)")
    a = ap.parse_args(argv)
    try:
        generate(a.data_dir, a.only, a.out)
    except (FileNotFoundError, ShippedLexiconError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


__all__ = ["DATASET_LEXICONS", "mine_dataset_lexicon", "triple_pairs", "NAMES", "SUMS", "COMMAND", "PROVENANCE",
           "ShippedLexiconError", "lexicons_dir", "path", "read_sums", "load", "render", "source_files",
           "check_sources", "readme", "generate", "main"]

if __name__ == "__main__":
    sys.exit(main())
