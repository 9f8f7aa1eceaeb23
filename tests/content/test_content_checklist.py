"""experiments.content_checklist: pairwise accuracy (ties half, NaN pairs out), the omitted set, members put on
[0, 1] as ensemble.scales=auto does, and one run on a few WebNLG development entries."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import needs_data, shared_data_dir

from experiments.content_checklist import _unit, main, omitted_set, pair_accuracy


def test_pair_accuracy_counts_ties_half_and_leaves_nan_pairs_out():
    acc, n = pair_accuracy(np.array([1.0, 0.5, 0.2, np.nan]), np.array([0.0, 0.5, 0.9, 0.1]))
    assert n == 3 and acc == pytest.approx((1 + 0.5 + 0) / 3)
    acc, n = pair_accuracy(np.array([np.nan]), np.array([1.0]))
    assert n == 0 and math.isnan(acc)


def test_omitted_set_drops_the_last_sentence_of_texts_with_two_or_more():
    clean = [("mr1", "Alan Bean was born in Texas. He flew on Apollo 12.", ""), ("mr2", "One sentence only.", "")]
    assert omitted_set(clean) == [("mr1", "Alan Bean was born in Texas.", "Alan Bean was born in Texas. He flew on Apollo 12.")]


def test_members_go_to_unit_scale_as_scales_auto_does():
    class RatPredLike:
        manifest = {"kind": "qe_gru", "config": {"predict": {"round_to": 0.5, "clip_lo": 1.0, "clip_hi": 6.0}}}

    class Plain:
        pass

    np.testing.assert_allclose(_unit(RatPredLike(), np.array([1.0, 3.5, 6.0])), [0.0, 0.5, 1.0])
    np.testing.assert_allclose(_unit(Plain(), np.array([0.3])), [0.3])


@needs_data
def test_a_run_on_a_few_development_entries(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["--data-dir", str(shared_data_dir()), "--limit", "60", "length=length", "len2=length",
                 "--ensemble", "both=length+len2", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["sets"]["clean"] == 60 and set(res["table"]) == {"length", "len2", "both"}
    row = res["table"]["length"]
    assert row["added"] == 0.0 and row["relation"] == 0.0  # appending always lengthens
    assert res["table"]["both"]["added"] == row["added"]
    assert "scorer" in capsys.readouterr().out
