"""RatPred (Dušek, Novikova & Rieser 2017): referenceless NLG quality estimation from the MR and the output.

Rooms: :mod:`~qe.ratpred.model` (network, vocabulary and batches), :mod:`~qe.ratpred.data` (folds, setups S1-S6,
C1-C3 splits, training sets, loaders), training split by job - :mod:`~qe.ratpred.protocol` (which records train,
select and test each fold), :mod:`~qe.ratpred.module` (the LightningModule and its best-on-dev callback),
:mod:`~qe.ratpred.fitting` (one (seed, fold): two-stage training, prediction), :mod:`~qe.ratpred.task` (the
``task=ratpred`` runner: sub-runs, pooled figures, export), :mod:`~qe.ratpred.runfiles` (the files a run writes) -
:mod:`~qe.ratpred.format` (the ``qe_gru`` export), :mod:`~qe.ratpred.scorer` (``qe.load(export)``). Family helpers:
:mod:`~qe.ratpred.mr` (MR linearisation, (de)lexicalisation), :mod:`~qe.ratpred.synth` (synthetic errors, rating
rule), :mod:`~qe.ratpred.cross` and :mod:`~qe.ratpred.sentvec` (pretrained encoders). The paper's tables:
``experiments/ratpred.py``.
"""
