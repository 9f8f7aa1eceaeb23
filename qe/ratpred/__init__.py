"""RatPred (Dušek, Novikova & Rieser 2017): referenceless NLG quality estimation from the MR and the output.

Modules: :mod:`~qe.ratpred.mr` (linearisation, delexicalisation), :mod:`~qe.ratpred.synth` (synthetic
errors, rating rule), :mod:`~qe.ratpred.data` (folds, setups S1-S6, C1-C3, tensors), :mod:`~qe.ratpred.module`
(network, LightningModule), :mod:`~qe.ratpred.task` (experiment runner, ``qe_gru`` export),
:mod:`~qe.ratpred.scorer` (export loader), :mod:`~qe.ratpred.baselines` (constant and word-overlap baselines).
"""
