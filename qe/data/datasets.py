"""Named rated datasets -> lists of :class:`~qe.data.record.Record`.

``load_dataset(name_or_path)``: a registered name (``sample``, ``emnlp17``, ...) or a path to a .jsonl / .csv /
.txt file. Converters for public datasets read the original files from the data directory
(:mod:`qe.core.paths`); ``data/<name>.yaml`` names each file's source, checksum and license.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from qe.data.record import Record, _check_unique, load_records, read_csv_rows, read_text, record_from_dict
from qe.errors import RecordError
from qe.core.paths import require, resolve_data_dir, resources_dir

#: dataset name -> converter ``fn(data_dir=None, **options) -> list[Record]``, as "module:attr" (imported on use):
#: one explicit table, no registration by import side effects
_CONVERTERS: dict[str, str | Callable[..., list[Record]]] = {
    "sample": "qe.data.datasets:sample",
    "emnlp17": "qe.data.datasets:emnlp17",
    "emnlp17_refs": "qe.data.references:emnlp17_refs",
    "ner18": "qe.data.datasets:ner18",
    "e2e": "qe.data.e2e:e2e",                  # options: version=cleaned|original, split=dev|test
    "webnlg2020": "qe.data.webnlg:webnlg2020",  # WebNLG+ 2020 human evaluation; option include_reference=false
    "webnlg": "qe.data.webnlg:webnlg",          # WebNLG 2020 references (no ratings); option split=train|dev
}


def register_dataset(name: str):
    """Decorator for a user's own converter (refuses a name that is taken)."""
    from qe.registry import register_into

    return register_into(_CONVERTERS, name, "dataset")


def available_datasets() -> list[str]:
    return sorted(_CONVERTERS)


def load_dataset(name_or_path: str | Path, data_dir: str | Path | None = None, **options) -> list[Record]:
    key = str(name_or_path)
    if key in _CONVERTERS:
        from qe.registry import resolve_target

        return resolve_target(_CONVERTERS[key])(data_dir=data_dir, **options)
    p = Path(key).expanduser()
    if p.exists():
        return load_records(p)
    raise KeyError(f"{key!r} is neither a known dataset ({', '.join(available_datasets())}) nor an existing file")


def sample(data_dir=None) -> list[Record]:
    """The small rated sample written for this project (embedded; works offline)."""
    return load_records(resources_dir() / "sample_rated.jsonl")


EMNLP17_FILE = "emnlp17/emnlp_data_medians.csv"
EMNLP17_RATINGS = ("informativeness", "naturalness", "quality")
#: automatic-metric columns the dataset's authors shipped (computed against their references)
EMNLP17_METRICS = ("TER", "Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L", "NIST", "LEPOR", "CIDEr", "METEOR",
                   "sim.mr.sys", "lev.dist")
EMNLP17_SYSTEMS = {"Dusek": "TGen", "LOLS": "LOLS", "WEN": "RNNLG"}  # system column -> system name in the paper


def emnlp17(data_dir=None, datasets: list[str] | None = None) -> list[Record]:
    """Novikova et al. 2017 median ratings (BAGEL / SFHOT / SFRES; 2,460 outputs of 3 systems).

    ``output`` is the ``sys_ref`` column (the system output, lower-cased). Ratings: informativeness,
    naturalness, quality (medians, 1-6). The authors' metric columns go to ``metrics``; ``mr_type`` and
    ``domain`` to extra fields. No human references are in this file (see ``qe.data.references``).
    """
    path = require(resolve_data_dir(data_dir) / EMNLP17_FILE, "EMNLP17 ratings (emnlp_data_medians.csv)")
    out: list[Record] = []
    counters: dict[str, int] = {}
    _, rows = read_csv_rows(read_text(path), str(path), required=("dataset", "system", "mr", "sys_ref"))
    for ln, row in rows:
        ds = row["dataset"]
        if datasets and ds not in datasets:
            continue
        counters[ds] = counters.get(ds, 0) + 1
        d = {
            "id": f"{ds.lower()}-{counters[ds]:05d}",
            "system": row["system"],
            "dataset": ds,
            "mr": row["mr"],
            "output": row["sys_ref"],
            "ratings": {k: row[k] for k in EMNLP17_RATINGS},
            "metrics": {k: row[k] for k in EMNLP17_METRICS},
            "mr_type": row["mr_type"],
            "domain": row["domain"],
        }
        try:
            out.append(record_from_dict(d, f"{path}:{ln}"))
        except RecordError as exc:
            raise RecordError(f"emnlp17 converter: {exc}") from None
    _check_unique(out, str(path))
    return out


NER18_FILE = "newsroom/ner18.jsonl"
NER18_RATINGS = ("coherence", "fluency", "informativeness", "relevance")


def ner18(data_dir=None) -> list[Record]:
    """NeR18: Newsroom human evaluation (Grusky et al. 2018) as packaged by DiscoScore; 7 systems x 60 documents.

    The file is already in the record format (``source`` article, ``refs`` = [the reference summary], ``output``
    the system summary, ratings coherence / fluency / informativeness / relevance, means of 3 ratings on 1-5);
    the document id is kept in the extra field ``group``. Every record is validated on reading.
    """
    path = require(resolve_data_dir(data_dir) / NER18_FILE, "NeR18 (newsroom/ner18.jsonl)")
    recs = load_records(path)
    for r in recs:
        missing = [k for k in NER18_RATINGS if k not in r.ratings]
        if not r.refs or r.source is None or missing or "group" not in r.extra:
            what = "refs" if not r.refs else "source" if r.source is None else \
                f"ratings.{missing[0]}" if missing else "group"
            raise RecordError(f"{path} (id={r.id!r}): field {what!r} is missing or empty")
    return recs
