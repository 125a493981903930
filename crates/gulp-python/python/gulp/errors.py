"""The exceptions gulp raises.

Every one is a :class:`GulpError`, and also the built-in exception a gulpio2
user already catches: ``KeyError`` for an unknown id, ``IndexError`` for a
frame index out of range, ``ValueError`` for bad input or damaged files,
``OSError`` for I/O. Messages name the file, the id and the byte offset.
"""

from __future__ import annotations

__all__ = [
    "GulpError",
    "GulpIOError",
    "GulpFileNotFoundError",
    "FormatError",
    "DuplicateIdError",
    "UnknownIdError",
    "SelectionError",
    "InvalidSelectionError",
    "SelectionTypeError",
    "DecodeError",
    "EncodeError",
    "ChunkExistsError",
    "InvalidInputError",
    "IngestError",
    "UnknownLabelError",
    "GulpTypeError",
    "GulpNotImplementedError",
    "GulpRuntimeError",
]


class GulpError(Exception):
    """Base class of every error gulp raises."""


class GulpIOError(GulpError, OSError):
    """A file could not be read, written, listed or renamed."""


class GulpFileNotFoundError(GulpIOError, FileNotFoundError):
    """A file or directory does not exist."""


class FormatError(GulpError, ValueError):
    """A meta or data file is damaged (the message has the byte offset)."""


class DuplicateIdError(FormatError):
    """The same id is in two chunks of a directory."""


class UnknownIdError(GulpError, KeyError):
    """No item has this id."""

    def __str__(self) -> str:
        # KeyError shows repr(message); keep gulp's message readable.
        return str(self.args[0]) if self.args else ""


class SelectionError(GulpError, IndexError):
    """A frame index is out of range for the item."""


class InvalidSelectionError(GulpError, ValueError):
    """A frame selection or decoding option is malformed."""


class SelectionTypeError(GulpError, TypeError):
    """Frames are selected by something else than a slice or a list of ints."""


class DecodeError(GulpError, ValueError):
    """A frame is not a JPEG that can be decoded."""


class EncodeError(GulpError, ValueError):
    """Pixels could not be encoded as a JPEG."""


class ChunkExistsError(GulpError, FileExistsError):
    """A chunk to be created exists already."""


class InvalidInputError(GulpError, ValueError):
    """Something given to gulp cannot be stored or used (meta, frames, options)."""


class IngestError(GulpError, RuntimeError):
    """An ingest run stopped (an item failed in strict mode, another run holds the lock)."""


class UnknownLabelError(GulpError, KeyError):
    """An item's label is not in the directory's ``label2idx.json``."""

    __str__ = UnknownIdError.__str__  # the message, not its repr


class GulpTypeError(GulpError, TypeError):
    """An argument or a sample is of a type gulp cannot use."""


class GulpNotImplementedError(GulpError, NotImplementedError):
    """What gulpio2 does not implement either (a chunk opened with an unknown flag)."""


class GulpRuntimeError(GulpError, RuntimeError):
    """gulp is used in a way it cannot run (a ``gulp.torch.ClipDataset`` in worker processes)."""
