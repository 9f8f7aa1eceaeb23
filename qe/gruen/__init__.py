"""GRUEN (Zhu & Bhat 2020): reference-less linguistic quality from Grammaticality, non-Redundancy, focUs,
structure and coherENce — with every learned part trainable here (``task=cola``, ``task=mlm``, ``task=sop``).

Modules: :mod:`preprocess` (sentence splitting, one-word sentences dropped), :mod:`pll` (masked-LM
pseudo-log-likelihood, batched under a token budget; the reference code's unmasked variant),
:mod:`acceptability` (CoLA classifier), :mod:`redundancy`, :mod:`focus` (WMD over spaCy vectors with POT),
:mod:`coherence` (SOP loss), :mod:`scorer` (the combination, registered as ``gruen``), :mod:`tasks`
(Lightning training tasks and their exports) and :mod:`tune` (Optuna-tunable weights on a dev split).
"""
