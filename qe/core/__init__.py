"""The shared core every family uses on the scoring side (no Lightning, Hydra or training code here).

* :mod:`qe.core.runtime` — device choice, length-sorted token-budget batching that restores input order,
  progress reporting;
* :mod:`qe.core.inputs` — input checks (texts, references, records that lack an MR or references);
* :mod:`qe.core.config` — a config (OmegaConf or plain) as plain data.

The export format lives in :mod:`qe.export`, the name/kind table in :mod:`qe.registry`, the scorer base class in
:mod:`qe.core.scorer`; the shared training loop (trainer builder, base LightningModule, export-from-checkpoint)
in :mod:`qe.training`, which scorers never import.
"""
