"""LSTM language models over words or SentencePiece units, and the SLOR / NCE / PPL scores (Kann et al. 2018).

Rooms: :mod:`~qe.lm.model` (the ``LSTMLM`` nn.Module), :mod:`~qe.lm.data` (corpora -> bucketed batches),
:mod:`~qe.lm.task` (training: LightningModule, ``task=lm`` builder), :mod:`~qe.lm.format` (the ``slor`` export:
file names, save / load), :mod:`~qe.lm.scorer` (``LMScorer``; imports only format, model, tokenization and the core).
"""
