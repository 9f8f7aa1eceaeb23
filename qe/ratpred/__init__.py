"""RatPred (Dušek, Novikova & Rieser 2017): referenceless NLG quality estimation from the MR and the output.

Rooms: :mod:`~qe.ratpred.model` (network, vocabulary and batches, prediction rule, correlations),
:mod:`~qe.ratpred.data` (folds, setups S1-S6, C1-C3 splits, training sets, loaders), :mod:`~qe.ratpred.task`
(LightningModule, two-stage training, the ``task=ratpred`` runner), :mod:`~qe.ratpred.format` (the ``qe_gru``
export), :mod:`~qe.ratpred.scorer` (``qe.load(export)``). Family helpers: :mod:`~qe.ratpred.mr` (MR
linearisation, (de)lexicalisation), :mod:`~qe.ratpred.synth` (synthetic errors, rating rule). The paper's tables:
``experiments/ratpred.py``.
"""
