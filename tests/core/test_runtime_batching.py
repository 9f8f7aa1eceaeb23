"""The token-budget batching contract of DESIGN.md (``qe.core.runtime``): inputs are sorted by length and grouped
so that rows x padded length stays within the budget, an input longer than the budget runs alone (never dropped,
never truncated), and the results come back in input order."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qe.core.runtime import length_sorted_batches, run_length_batched, token_budget_batches

lengths_st = st.lists(st.integers(min_value=0, max_value=300), min_size=0, max_size=120)


def _padded(lengths, batch):
    return len(batch) * max(lengths[i] for i in batch)


@settings(max_examples=200, deadline=None)
@given(lengths=lengths_st, budget=st.integers(min_value=1, max_value=2_000),
       max_batch=st.one_of(st.none(), st.integers(min_value=1, max_value=16)))
def test_every_input_once_budget_held_order_restored(lengths, budget, max_batch):
    batches = length_sorted_batches(lengths, budget, max_batch)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))  # each input exactly once
    for b in batches:
        assert b, "no empty batch"
        if len(b) > 1:  # a batch of several never exceeds the budget
            assert _padded(lengths, b) <= budget
        if max_batch:
            assert len(b) <= max_batch
    # longest first: similar lengths share a batch, so little padding
    seen = [lengths[i] for i in flat]
    assert seen == sorted(seen, reverse=True)
    calls = []

    def fn(idx):
        calls.append(list(idx))
        return [f"result-{i}" for i in idx]

    out = run_length_batched(lengths, fn, max_tokens=budget, max_batch=max_batch, progress=False)
    assert out == [f"result-{i}" for i in range(len(lengths))]  # input order
    assert calls == batches


def test_an_input_longer_than_the_budget_runs_alone():
    lengths = [5, 500, 7, 6]
    batches = length_sorted_batches(lengths, max_tokens=20)
    assert batches[0] == [1]  # alone, first (longest), not cut, not dropped
    assert sorted(i for b in batches for i in b) == [0, 1, 2, 3]
    assert all(_padded(lengths, b) <= 20 for b in batches[1:])
    out = run_length_batched(lengths, lambda idx: [lengths[i] for i in idx], max_tokens=20, progress=False)
    assert out == lengths


def test_the_budget_counts_padding():
    # three of length 10 fit 30 tokens; a fourth row would pad to 40
    assert list(token_budget_batches([10, 10, 10, 10], 30)) == [[0, 1, 2], [3]]
    # one long row makes the whole batch pay its length: 12 + 12 > 20
    assert list(token_budget_batches([12, 2, 2], 20)) == [[0], [1, 2]]


def test_ties_keep_input_order_and_empty_inputs_get_the_fill():
    lengths = [3, 0, 3, 3, 0]
    batches = length_sorted_batches(lengths, max_tokens=100, skip_empty=True)
    assert batches == [[0, 2, 3]]  # stable sort; empty inputs left out
    out = run_length_batched(lengths, lambda idx: [float(i) for i in idx], max_tokens=100, skip_empty=True,
                             fill=-1.0, progress=False)
    assert out == [0.0, -1.0, 2.0, 3.0, -1.0]


def test_a_batch_function_that_loses_results_is_a_bug_not_a_score():
    with pytest.raises(RuntimeError, match="returned 1 results for 2 items"):
        run_length_batched([4, 4], lambda idx: [0.0], max_tokens=100, progress=False)


def test_a_real_scorer_gives_the_same_scores_in_input_order_under_any_budget(tiny_lm_export):
    """SLOR over an LSTM LM: a budget small enough to split every batch, and shuffled input, change nothing but
    the number of forward passes."""
    import qe

    sents = ["the cat sat on the mat .", "a dog .", "the cat sat .", "dog cat the mat a sat on the .",
             "the mat .", "a cat sat on a dog on the mat ."]
    big = qe.load(tiny_lm_export, max_tokens=10_000).score(sents, progress=False)
    small = qe.load(tiny_lm_export, max_tokens=8).score(sents, progress=False)
    assert small == pytest.approx(big, rel=1e-5, abs=1e-6)
    perm = [3, 0, 5, 1, 4, 2]
    shuffled = qe.load(tiny_lm_export, max_tokens=8).score([sents[i] for i in perm], progress=False)
    assert shuffled == pytest.approx([big[i] for i in perm], rel=1e-5, abs=1e-6)
