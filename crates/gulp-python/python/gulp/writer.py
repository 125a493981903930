"""``gulp.Writer``: items a program holds (numpy frames or JPEG bytes)
written into a gulp directory, as webdataset's ``ShardWriter`` and
MosaicML's ``MDSWriter`` write samples. docs/writing.md maps their calls
to this one."""

from __future__ import annotations

import numbers
import os
import warnings
from types import TracebackType
from typing import TYPE_CHECKING, Any, Optional, Sequence, Type, Union

import numpy as np
import numpy.typing as npt

from . import _gulp
from .errors import GulpTypeError

if TYPE_CHECKING:
    from ._gulp import _Path

__all__ = ["Writer"]

#: What ``Writer.add`` takes as an item's frames.
Frames = Union[
    npt.NDArray[np.uint8],
    Sequence[npt.NDArray[np.uint8]],
    Sequence[Union[bytes, bytearray, memoryview]],
]


class Writer:
    """Writes items into the gulp directory ``path`` (created if missing;
    an existing one gets new chunks after its own), a chunk every
    ``items_per_chunk`` items::

        with gulp.Writer("out", items_per_chunk=100) as w:
            w.add("clip-1", frames, {"label": "dog", "caption": "..."})

    ``frames`` is a ``uint8`` array ``[T, H, W, 3]`` (RGB) or ``[T, H, W]``
    (gray), a sequence of ``[H, W, 3]`` / ``[H, W]`` arrays (which may
    differ in size), or a sequence of JPEG files' bytes, stored byte for
    byte. Arrays are encoded to JPEG by gulp's encoder (libjpeg-turbo, the
    encoder of ``gulp ingest``) on ``threads`` threads (default: one per
    core) at ``quality`` (1-100) with ``subsampling`` (``"auto"``: 4:4:4,
    gulpio2's; ``"444"`` or ``"420"``), while the program prepares the next
    items; ``add`` waits only when ``2 × threads + 2`` items are in flight.

    ``meta_format``: ``"json"`` (gulpio2 reads it) or ``"msgpack"``.
    ``on_exists``: what ``add`` does with an id already in the directory,
    ``"error"`` (``DuplicateIdError``) or ``"skip"`` (returns ``False``, so
    that a program run again after an interruption finishes the job). An
    id given twice to one writer is a ``DuplicateIdError`` either way.

    ``labels``: an item whose meta has a ``"label"`` string gets ``"idx"``,
    the label's number in the directory's ``label2idx.json`` (existing
    numbers kept, new labels numbered after them in the order met); the
    file is written before each chunk commit, so that every committed
    ``idx`` is in it. ``labels=False`` stores metas as given.

    Each chunk is committed atomically (temporary names, fsync, rename) as
    soon as its last item is encoded; the directory is locked for the
    writer's life, as ``gulp ingest`` locks it. ``close()`` (or the end of
    the ``with`` block, even through an exception, as webdataset and
    MosaicML close their shards) commits what was added and returns the
    report; ``abort()`` discards the chunk being filled instead. A process
    killed while writing leaves the chunks committed so far, which
    ``gulp recover`` and ``gulp check`` accept. See docs/writing.md.
    """

    def __init__(self, path: _Path, items_per_chunk: int = 100, *, quality: int = 90,
                 subsampling: str = "auto", meta_format: str = "json",
                 on_exists: str = "error", labels: bool = True,
                 threads: Optional[int] = None, fsync: bool = True) -> None:
        self.path = os.fspath(path)
        #: The report of ``close()`` (``None`` until then).
        self.report: Optional[dict[str, Any]] = None
        self._native = _gulp.DirectoryWriter(
            self.path, items_per_chunk, quality=quality, subsampling=subsampling,
            meta_format=meta_format, on_exists=on_exists, labels=labels, threads=threads,
            fsync=fsync,
        )

    @property
    def closed(self) -> bool:
        """Whether ``close()`` or ``abort()`` was called."""
        return not self._native.is_open

    @property
    def recovered(self) -> list[str]:
        """What was cleaned up at opening from an interrupted earlier write."""
        return self._native.recovered()

    def add(self, id_: Union[str, int], frames: Frames, meta: Any = None) -> bool:
        """Adds an item: ``frames`` (see the class) and ``meta``, its
        ``meta_data`` entry (a dict by default empty, or any value
        ``json.dump`` takes; numpy values become their Python ones). An
        ``int`` id is stored as its decimal string.

        The item is checked before anything of it is queued: an id already
        there (``DuplicateIdError``, or ``False`` with
        ``on_exists="skip"``), no frames, frames that are not ``uint8``,
        not 1 or 3 channels, or bytes that are not a JPEG raise a
        ``ValueError`` (``InvalidInputError``) naming the directory, the
        id and the frame, and nothing of the item is written. Returns
        ``True`` when the item was queued, ``False`` when it was skipped.
        An error of the writer itself (writing a chunk) is raised by the
        call after it, as ``IngestError``."""
        if isinstance(id_, bool) or not isinstance(id_, (str, numbers.Integral)):
            raise GulpTypeError(f"ids are str or int, not {type(id_).__name__}")
        if not isinstance(frames, (np.ndarray, list, tuple)) and hasattr(frames, "__array__"):
            frames = np.asarray(frames)  # a torch tensor, a PIL image, ...
        return self._native.add(str(id_), frames, {} if meta is None else meta)

    def end_chunk(self) -> None:
        """Ends the chunk being filled: it is committed once its items are
        encoded, and the next item starts a new chunk (how
        ``GulpIngestor`` makes a chunk of each slice of its adapter)."""
        self._native.end_chunk()

    def close(self) -> dict[str, Any]:
        """Commits what was added, brings the directory's index up to date,
        releases the lock and returns the report: ``items``, ``frames``,
        ``bytes``, ``chunks`` (the numbers committed), ``already_present``
        (ids skipped), ``recovered``, ``label_file``, ``seconds``. A second
        call returns the same report."""
        if self.report is not None:
            return self.report
        self.report = self._native.finish()
        return self.report

    def abort(self) -> None:
        """Closes without committing the chunk being filled: the chunks
        completed before (full, or ended by ``end_chunk``) are written and
        committed, the items after them discarded."""
        self._native.abort()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]],
                 exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        if self.closed:
            return
        if exc_type is not None and self._native.stopped:
            # The error raised is the one that stopped the writer: nothing
            # more can be committed.
            self.abort()
            return
        self.close()

    def __del__(self) -> None:
        native = getattr(self, "_native", None)
        if native is not None and native.is_open:
            warnings.warn(f"{self!r} was not closed: the chunk being filled was discarded",
                          ResourceWarning, stacklevel=2)
            native.abort()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"gulp.Writer({self.path!r}, {state})"
