"""Ensembles of exports: one export (kind ``ensemble``) that scores with the weighted mean of its members' scores.

    python train.py task=ensemble +ensemble.members.gru=exports/rp_gru +ensemble.members.minilm=exports/rp_minilm \\
        export_dir=exports/rp_plus
    qe score --model exports/rp_plus --input records.jsonl          # one score per record: the ensemble's
    qe score --model exports/rp_plus --input records.jsonl --components   # + every member's score

Rooms as in every family: :mod:`~qe.ensemble.format` (the export: members copied in, ``ensemble.json``),
:mod:`~qe.ensemble.scorer` (what ``qe.load`` returns), :mod:`~qe.ensemble.task` (``task=ensemble``, which also
scores the members' cross-validated predictions when given their run directories, so the export carries the
figure of the combination it stands for).

The rule: ``score = sum_i w_i * s_i / sum_i w_i`` over the members' scores ``s_i`` of one output (NaN when any
member gives NaN), then the ensemble's prediction rule. For RatPred members (kind ``qe_gru``) that share one
rounding rule the members are read raw and the mean is rounded and clipped once, with their rule - the
"equal-weight mean of raw outputs, rounded to 0.5 and clipped" that ``python -m experiments.ratpred combine``
selects on dev. Members must be on one scale (the mean of a SLOR and a ROUGE score means little): the task refuses
members of different kinds unless ``ensemble.allow_mixed_kinds=true``.
"""
