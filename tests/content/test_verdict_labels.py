"""The hand labels of the check's verdicts on EMNLP17 system outputs (experiments/gold/emnlp17_verdict_labels.jsonl,
read by ``python -m experiments.verdict_digest --labels``): the file's form, and the tally on a tiny fixture."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from experiments import verdict_digest as vd


def test_the_label_file_holds_one_known_label_per_fact():
    labels = vd.read_labels()
    assert len(labels) >= 100
    assert set(labels.values()) <= {"error", "false_alarm", "stated"}
    for line in vd.LABELS.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        assert set(r) <= {"where", "slot", "value", "status", "said", "label", "note"}
        assert r["where"].startswith("emnlp17/") and r["status"] in ("omitted", "wrong", "invented")
        if r["label"] == "false_alarm":
            assert r["note"], r  # a false alarm says why


def test_a_fact_labelled_twice_two_ways_is_refused(tmp_path):
    p = tmp_path / "l.jsonl"
    p.write_text('{"where": "emnlp17/a/S", "slot": "food", "value": "x", "status": "omitted", "label": "error"}\n'
                 '{"where": "emnlp17/a/S", "slot": "food", "value": "x", "status": "wrong", "label": "false_alarm"}\n')
    with pytest.raises(ValueError, match="labelled both error and false_alarm"):
        vd.read_labels(p)
    p.write_text('{"where": "emnlp17/a/S", "slot": "food", "value": "x", "status": "invented", "label": "error"}\n')
    with pytest.raises(ValueError, match=r"l.jsonl:1: a invented label"):
        vd.read_labels(p)


def test_the_tally_counts_false_alarms_and_what_nobody_read():
    recs = [SimpleNamespace(id="a", system="S", dataset="D"), SimpleNamespace(id="b", system="S", dataset="D")]
    details = [
        {"verdicts": [{"slot": "food", "value": "x", "status": "wrong"}, {"slot": "area", "value": "y",
                                                                        "status": "realised"}],
         "hallucinated": [{"slot": "near", "value": "z"}]},
        {"verdicts": [{"slot": "food", "value": "x", "status": "omitted"},
                      {"slot": "kids", "value": "dont_care", "status": "unchecked"}], "hallucinated": []},
    ]
    labels = {("emnlp17/a/S", "food", "x", "error"): "false_alarm", ("emnlp17/a/S", "near", "z", "invented"): "stated"}
    c = vd.against_labels(recs, details, labels)["D"]
    assert (c["facts"], c["errors"], c["errors_false"], c["errors_true"], c["errors_unread"]) == (3, 2, 1, 0, 1)
    assert (c["invented"], c["invented_false"], c["invented_true"]) == (1, 0, 1)
