"""DiscoScore (Zhao, Strube & Eger 2023) and the discourse metrics it is compared with.

* :mod:`qe.discourse.foci` - sentence splitting, spaCy nouns (NOUN/PROPN lemmas), semantic entities;
* :mod:`qe.core.encoder` - contextual sub-word embeddings from any HF encoder, sliding windows;
* :mod:`qe.discourse.engine` - shared parsing/encoding with caches;
* :mod:`qe.discourse.metrics` - the equations (adjacency, DS-Focus, DS-Sent, RC/LC, graphs, chains,
  discourse features, discriminativeness D);
* :mod:`qe.discourse.scorer` - registered scorers (``ds-focus-nn``, ``ds-sent-u-entity``, ``rc``, ...);
* :mod:`qe.discourse.features` - Sec. 5 discourse features and D over a data set;
* ``python -m experiments.discoscore`` - the NeR18 meta-evaluation (system- and summary-level Kendall).
"""
