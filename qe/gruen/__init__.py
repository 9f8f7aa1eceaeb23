"""GRUEN (Zhu & Bhat 2020): reference-less linguistic quality from Grammaticality, non-Redundancy, focUs,
structure and coherENce — with every learned part trainable here (``task=cola``, ``task=mlm``, ``task=sop``).

Rooms: :mod:`model` (the networks: the segment-mean SOP head, MLM head access), :mod:`data` (CoLA, corpora,
documents, datamodules), :mod:`task` (training: LightningModules, builders, the ``task=gruen_tune`` runner),
:mod:`format` (export kinds ``acceptability`` / ``mlm`` / ``sop`` / ``gruen``: save and load), :mod:`scorer` (the
combination ``gruen`` and one scorer per export kind). The scorer's parts: :mod:`preprocess` (sentence splitting,
one-word sentences dropped), :mod:`pll` (masked-LM pseudo-log-likelihood; the reference code's unmasked variant),
:mod:`acceptability` (CoLA classifier), :mod:`redundancy`, :mod:`focus` (WMD over spaCy vectors with POT),
:mod:`coherence` (SOP loss), :mod:`hf` (their shared Hugging Face set-up). Nothing the scorer imports pulls in
Lightning, Hydra or omegaconf. The paper's tables: ``python -m experiments.gruen``.
"""
