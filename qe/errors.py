"""Exceptions with messages that name what was wrong and where."""


class QEError(Exception):
    """Base class for errors raised by qe."""


class RecordError(QEError, ValueError):
    """A data record is malformed; the message names the record and the field."""


class ExportError(QEError):
    """An export directory is missing, incomplete, of the wrong kind or of the wrong format version."""


class MissingInputError(QEError, ValueError):
    """A scorer needs an input (MRs, references, sources) that was not given."""


class MissingDependencyError(QEError, OSError):
    """An optional package, pretrained pipeline or plugin is not installed; the message names what to install."""


class ModelNotBuiltError(ExportError, KeyError):
    """A named model of the zoo that is not built in ``$QE_MODELS``; the message says how to build it (``qe zoo build
    NAME``). Also a :class:`KeyError` (what :func:`qe.load` raised before) whose text is the message itself,
    unquoted, and an :class:`ExportError` (what :func:`qe.kinds.export_dir_of` raised: ``qe score`` exits 3)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""
