"""experiments.e2e_natural_errors: gold errors of a reference against the MR it was written for, their kinds, and the
pairwise accuracy over clean references of the same MR (ties half, NaN out)."""
from __future__ import annotations

import numpy as np
import pytest

from experiments.e2e_natural_errors import gold_errors, kind_of, pairwise, spearman_neg_ser

ORIG = "name[The Eagle], eatType[coffee shop], priceRange[cheap], familyFriendly[yes]"


def test_gold_errors_tell_omitted_added_and_wrong_facts_apart():
    assert gold_errors(ORIG, ORIG) == {"omitted": 0, "added": 0, "wrong": 0, "facts": 4}
    assert kind_of(gold_errors(ORIG, ORIG)) is None
    omitted = gold_errors(ORIG, "name[The Eagle], eatType[coffee shop], familyFriendly[yes]")
    assert omitted == {"omitted": 1, "added": 0, "wrong": 0, "facts": 4} and kind_of(omitted) == "omission"
    added = gold_errors(ORIG, ORIG + ", area[riverside]")
    assert added == {"omitted": 0, "added": 1, "wrong": 0, "facts": 4} and kind_of(added) == "addition"
    wrong = gold_errors(ORIG, "name[The Eagle], eatType[coffee shop], priceRange[high], familyFriendly[yes]")
    assert wrong == {"omitted": 0, "added": 0, "wrong": 1, "facts": 4} and kind_of(wrong) == "mixed"
    both = gold_errors(ORIG, "name[The Eagle], eatType[coffee shop], priceRange[cheap], area[riverside]")
    assert both["omitted"] == 1 and both["added"] == 1 and kind_of(both) == "mixed"


def test_pairwise_averages_each_erroneous_reference_over_its_groups_clean_ones():
    groups = ["a", "a", "a", "a", "b", "b"]
    kinds = [None, None, "omission", "addition", "omission", None]
    scores = np.array([1.0, 0.5, 0.5, 2.0, 0.1, np.nan])
    acc = pairwise(groups, kinds, scores)
    # omission in a: above it 1.0 (1), tie 0.5 (half) -> 0.75; addition in a: 0; b's clean one is NaN -> no pair
    assert acc["omission"] == (pytest.approx(0.75), 1) and acc["addition"] == (0.0, 1)
    assert acc["all"] == (pytest.approx(0.375), 2) and "mixed" not in acc


def test_rho_with_minus_ser_leaves_nan_scores_out():
    rho = spearman_neg_ser(np.array([3.0, 2.0, 1.0, np.nan]), np.array([0.0, 0.25, 0.5, 1.0]))
    assert rho == pytest.approx(1.0)  # the NaN score's row is dropped: the other three are perfectly ordered
