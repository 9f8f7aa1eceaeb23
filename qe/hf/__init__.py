"""Fine-tuning a Hugging Face encoder as a sequence classifier: the one room GRUEN's classifiers (``task=cola``,
``task=sop``) and the content aligner (``task=content_aligner``) both train through, so that neither family imports
the other. It sits above the core and below the families: it imports only :mod:`qe.core`, :mod:`qe.errors`,
:mod:`qe.version` and :mod:`qe.training` (``tests/core/test_import_graph.py``).

Rooms: :mod:`classifier` (the LightningModule :class:`~qe.hf.classifier.SequenceClassifierModule`, its AdamW with
linear warm-up, :func:`~qe.hf.classifier.tokenizer_for`, :func:`~qe.hf.classifier.float_metrics`), :mod:`data` (the
Lightning data module :class:`~qe.hf.data.TextClassificationDataModule`), :mod:`model` (the networks, plain
``torch.nn``: :func:`~qe.hf.model.build_classifier`, the segment-mean pair head) and :mod:`tokens` (special-token
templates, pair padding, the segment-pair cut rule). ``model`` and ``tokens`` load no Lightning and are what scorers
may import; ``classifier`` and ``data`` are training code. This package module imports none of them.
"""
