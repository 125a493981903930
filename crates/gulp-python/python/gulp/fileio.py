"""gulpio2's ``fileio`` API: ``GulpDirectory``, ``GulpChunk``, ``GulpIngestor``.

The names, arguments and return values are gulpio2 0.0.4's; reading,
decoding, encoding and writing are done by gulp's Rust core, with the GIL
released. Where gulpio2 can lose data or crash, gulp does not:

* a chunk opened with ``'wb'``/``'ab'`` becomes visible only when its ``with``
  block ends normally (data and meta together, synced); an exception inside
  the block leaves the directory as it was;
* ``open('wb')`` on an existing chunk replaces it instead of keeping stale
  meta entries that point into the new data;
* reads need no ``open('rb')``, are re-entrant and thread-safe (frames come
  from a memory map), and a directory opened before ``fork`` works in the
  child;
* ``GulpDirectory(path)`` is lazy: ``merged_meta_dict`` and friends are built
  on first use.
"""

from __future__ import annotations

import os
import re
import warnings
from collections import OrderedDict
from contextlib import contextmanager
from typing import (TYPE_CHECKING, Any, Callable, Generator, Iterable, Iterator, NamedTuple,
                    Optional, Sequence, Tuple, TypeVar, Union)

import numpy as np
import numpy.typing as npt

from . import _gulp
from . import utils as _utils
from ._serializers import (AbstractSerializer, JSONSerializer, PickleSerializer,
                           json_serializer, pickle_serializer)
from .errors import GulpNotImplementedError, InvalidInputError, UnknownIdError
from .utils import calculate_chunk_slices, extract_input_for_getitem, jpeg_bytes_to_img
from .writer import Writer

if TYPE_CHECKING:
    from ._gulp import _Path, _Scale, _Selection
    from .adapters import AbstractDatasetAdapter

__all__ = [
    "ImgInfo",
    "AbstractSerializer",
    "PickleSerializer",
    "JSONSerializer",
    "MsgpackSerializer",
    "pickle_serializer",
    "json_serializer",
    "msgpack_serializer",
    "extract_input_for_getitem",
    "calculate_chunk_slices",
    "GulpDirectory",
    "GulpChunk",
    "ChunkWriter",
    "GulpIngestor",
]

#: A frame decoder: JPEG bytes to anything (``jpeg_bytes_to_img`` gives arrays).
_Decoder = Callable[[bytes], Any]
#: An item as read: its frames and its first meta dict.
_Item = Tuple[list[Any], Any]
_T = TypeVar("_T")


class ImgInfo(NamedTuple):
    loc: int
    pad: int
    length: int


class MsgpackSerializer(AbstractSerializer):
    """gulp's msgpack meta: chunks written with it are smaller and faster to
    open, carry a CRC-32 per frame, and are read by gulp only (not gulpio2).
    Pass it as ``serializer=`` to a ``GulpChunk`` to write msgpack meta."""

    format = "msgpack"

    def load(self, file_name: _Path) -> Any:
        directory, number = _chunk_location(file_name, meta=True)
        native = _gulp.Directory(directory)
        return native.chunk_meta(_chunk_index(native, number))

    def dump(self, thing: Any, file_name: _Path) -> None:
        raise InvalidInputError(
            "msgpack meta is written by GulpChunk.open('wb'/'ab'), not dumped"
        )


msgpack_serializer = MsgpackSerializer()


# The names a writer produces, as gulp-format's `parse_chunk_file_name`
# accepts them: an ASCII decimal number without sign or leading zeros (`0`
# itself is fine) that fits in 64 bits. `\Z`, not `$`, so that a trailing
# newline is not accepted either.
_DATA_RE = re.compile(r"data_(0|[1-9][0-9]*)\.gulp\Z", re.ASCII)
_META_RE = re.compile(r"meta_(0|[1-9][0-9]*)\.gmeta\Z", re.ASCII)
_MAX_CHUNK = 2**64 - 1


def _chunk_location(path: _Path, meta: bool = False) -> tuple[str, int]:
    """``(directory, chunk number)`` of a ``data_N.gulp`` / ``meta_N.gmeta`` path."""
    path = os.fspath(path)
    directory, name = os.path.split(path)
    match = (_META_RE if meta else _DATA_RE).match(name)
    if match is None or int(match.group(1)) > _MAX_CHUNK:
        kind = "meta_N.gmeta" if meta else "data_N.gulp"
        raise InvalidInputError(f"{path}: chunk files are named {kind}")
    return directory or ".", int(match.group(1))


def _is_remote(path: str) -> bool:
    """Whether ``path`` is a URL (``s3://bucket/prefix``, ``https://host/path``):
    the Rust side's one rule."""
    return _gulp.is_remote(path)


def _absolute(path: str) -> str:
    """A local path made absolute; a URL as it is."""
    return path.rstrip("/") if _is_remote(path) else os.path.abspath(path)


def _chunk_index(native: _gulp.Directory, number: int) -> int:
    for index, (n, _, _) in enumerate(native.chunk_files()):
        if n == number:
            return index
    raise InvalidInputError(f"no chunk {number} in {native.path}")


def _read_frames(native: _gulp.Directory, decoder: Optional[_Decoder], id_: str,
                 slice_: _Selection) -> list[Any]:
    """Frames decoded in Rust, or by ``decoder`` if it is another one."""
    if decoder is None or decoder is jpeg_bytes_to_img:
        return native.read(id_, slice_)
    return [decoder(b) for b in native.raw_bytes(id_, slice_)]


class GulpDirectory:
    """A gulp directory: chunks of frames, read by id.

    ``gd[id]``, ``gd[id, 1:10:2]`` and ``gd[id, [1, 5, 6]]`` return
    ``(frames, meta)``: a list of ``uint8`` numpy arrays (``H×W×3`` RGB,
    ``H×W`` gray) and the item's first meta dict. ``jpeg_decoder`` replaces
    the built-in libjpeg-turbo decoder (it gets each frame's JPEG bytes).
    ``mmap=False`` reads through file handles instead of memory maps.

    An ``s3://`` directory is read through a node cache when ``cache_dir``
    is given (or ``GULP_CACHE_DIR`` is set): what is read of each object is
    fetched once per node, shared by every process on it, and evicted least
    recently used beyond ``cache_limit`` (bytes, or a size such as
    ``"50G"``; ``GULP_CACHE_LIMIT``). ``cache_fetch`` (``GULP_CACHE_FETCH``)
    is what is fetched of data objects: ``"ranges"`` (the frames read),
    ``"chunks"`` (whole) or ``"auto"`` (the default: ranges, and whole
    chunks read again when the cache holds the directory).
    ``cache_dir=False`` reads the store every time. See
    ``docs/object-storage.md``.
    """

    def __init__(self, output_dir: _Path, jpeg_decoder: Optional[_Decoder] = jpeg_bytes_to_img, *,
                 mmap: bool = True, cache_dir: Union[None, bool, _Path] = None,
                 cache_limit: Union[None, int, str] = None,
                 cache_fetch: Optional[str] = None) -> None:
        self.output_dir = output_dir
        self.jpeg_decoder = jpeg_decoder
        self._mmap = mmap
        self._cache_args = (cache_dir, cache_limit, cache_fetch)
        self._native = _gulp.Directory(output_dir, mmap=mmap, cache_dir=cache_dir,
                                       cache_limit=cache_limit, cache_fetch=cache_fetch)
        self._cache: dict[str, Any] = {}

    # Pickling (spawned DataLoader workers): reopen by path.
    def __reduce__(self) -> tuple[Callable[..., GulpDirectory], tuple[Any, ...]]:
        return (_reopen_directory,
                (self.output_dir, self.jpeg_decoder, self._mmap, *self._cache_args))

    def _lazy(self, name: str, build: Callable[[], _T]) -> _T:
        value = self._cache.get(name)
        if value is None:
            value = self._cache[name] = build()
        return value

    @property
    def num_chunks(self) -> int:
        """The number of chunks."""
        return len(self._native.chunk_files())

    @property
    def chunk_objs_lookup(self) -> OrderedDict[int, GulpChunk]:
        """Chunk number (int) to ``GulpChunk``, in chunk order."""

        def build() -> OrderedDict[int, GulpChunk]:
            return OrderedDict(
                (number, GulpChunk._of_directory(self, index, number, data, meta))
                for index, (number, data, meta) in enumerate(self._native.chunk_files())
            )

        return self._lazy("chunk_objs_lookup", build)

    @property
    def all_meta_dicts(self) -> list[dict[str, dict[str, list[Any]]]]:
        """Every chunk's meta dict (id to ``{'frame_info', 'meta_data'}``)."""

        def build() -> list[dict[str, dict[str, list[Any]]]]:
            return [self._native.chunk_meta(i) for i in range(self.num_chunks)]

        return self._lazy("all_meta_dicts", build)

    @property
    def merged_meta_dict(self) -> dict[str, dict[str, list[Any]]]:
        """All items' meta dicts in one dict (id to ``{'frame_info', 'meta_data'}``)."""

        def build() -> dict[str, dict[str, list[Any]]]:
            merged: dict[str, dict[str, list[Any]]] = {}
            for meta in self.all_meta_dicts:
                merged.update(meta)
            return merged

        return self._lazy("merged_meta_dict", build)

    @property
    def chunk_lookup(self) -> dict[str, int]:
        """Id (str) to the number (int) of the chunk holding it."""

        def build() -> dict[str, int]:
            lookup: dict[str, int] = {}
            for index, (number, _, _) in enumerate(self._native.chunk_files()):
                for id_ in self._native.chunk_ids(index):
                    lookup[id_] = number
            return lookup

        return self._lazy("chunk_lookup", build)

    def chunks(self) -> Iterator[GulpChunk]:
        """The chunks, in chunk order."""
        return iter(self.chunk_objs_lookup.values())

    def __iter__(self) -> Iterator[GulpChunk]:
        return self.chunks()

    def __len__(self) -> int:
        return len(self._native)

    def __contains__(self, id_: object) -> bool:
        return str(id_) in self._native

    def ids(self) -> list[str]:
        """Every id, chunk by chunk, in meta order."""
        return self._native.ids()

    def new_chunks(self, total_new_chunks: int) -> Generator[GulpChunk, None, None]:
        """``GulpChunk``s for the next ``total_new_chunks`` chunk numbers."""
        first = self._native.next_chunk_number()
        paths = [
            (
                os.path.join(self.output_dir, f"data_{n}.gulp"),
                os.path.join(self.output_dir, f"meta_{n}.gmeta"),
            )
            for n in range(first, first + total_new_chunks)
        ]
        return (GulpChunk(data, meta, jpeg_decoder=self.jpeg_decoder) for data, meta in paths)

    def __getitem__(self, element: Union[int, str, Tuple[Any, _Selection]]) -> _Item:
        id_, slice_ = extract_input_for_getitem(element)
        return self.read_frames(id_, slice_)

    def read_frames(self, id_: object, slice_: _Selection = None) -> _Item:
        """``(frames, meta)`` of ``id_``, as ``gd[id_, slice_]``."""
        id_ = str(id_)
        frames = _read_frames(self._native, self.jpeg_decoder, id_, slice_)
        return frames, self._native.meta(id_)

    # What gulpio2 lacks.

    def read(self, id_: object, frames: _Selection = None, *, color: Optional[str] = None,
             dct_scale: Optional[_Scale] = None,
             region: Optional[Tuple[int, int, int, int]] = None,
             dct: Optional[str] = None, upsampling: Optional[str] = None, strict: bool = True,
             codec: Optional[str] = None, min_size: Optional[Tuple[int, int]] = None,
             scale: Optional[_Scale] = None,
             crop: Optional[Tuple[int, int, int, int]] = None) -> list[npt.NDArray[np.uint8]]:
        """Frames of ``id_`` decoded with options, GIL released.

        ``frames``: ``None`` (all), a slice or a list of indices. ``color``:
        'auto' (as stored), 'rgb' or 'gray'. ``dct_scale``: DCT-domain
        scaling, a fraction '1/2' (n/8) or an int (the least short edge).
        ``min_size``: ``(height, width)``, the least size to scale to (the
        ``(H, W)`` order of every size in gulp's Python API, as numpy shapes
        and ``ClipLoader(size=...)``). ``region``: ``(x, y, width, height)``
        of the scaled frame, a box as Pillow gives one; only the rows and
        columns it needs are decoded. ``dct``: 'fast' (gulpio2's) or
        'accurate'. ``upsampling``: 'fast' or 'smooth'. ``strict=False``
        returns the decoder's best image of a damaged frame instead of
        raising ``DecodeError``.

        ``scale=`` and ``crop=`` are the old names of ``dct_scale=`` and
        ``region=`` (deprecated: in ``ClipLoader`` ``scale`` is
        RandomResizedCrop's area range and ``crop`` the crop mode).
        """
        if scale is not None:
            if dct_scale is not None:
                raise InvalidInputError("give dct_scale, not scale too")
            warnings.warn("read(scale=...) is deprecated: give dct_scale= (or min_size=(H, W))",
                          DeprecationWarning, stacklevel=2)
            if isinstance(scale, tuple):
                if min_size is not None:
                    raise InvalidInputError("give dct_scale or min_size, not both")
                width, height = scale
                min_size = (int(height), int(width))
            else:
                dct_scale = scale
        if crop is not None:
            if region is not None:
                raise InvalidInputError("give region, not crop too")
            warnings.warn("read(crop=...) is deprecated: give region=(x, y, width, height)",
                          DeprecationWarning, stacklevel=2)
            region = crop
        if min_size is not None:
            if dct_scale is not None:
                raise InvalidInputError("give dct_scale or min_size, not both")
        return self._native.read(
            str(id_), frames, color=color, dct_scale=dct_scale, min_size=min_size,
            region=region, dct=dct, upsampling=upsampling, strict=strict, codec=codec,
        )

    def raw(self, id_: object, frames: _Selection = None) -> list[Union[memoryview, bytes]]:
        """The JPEG bytes of frames of ``id_`` as read-only ``memoryview``s of
        the memory map (no copy; ``bytes`` when opened with ``mmap=False`` or
        from an ``s3://`` directory)."""
        return self._native.raw(str(id_), frames)

    def meta(self, id_: object) -> Any:
        """The first meta dict of ``id_`` (what ``gd[id_][1]`` gives)."""
        return self._native.meta(str(id_))

    def item(self, id_: object) -> dict[str, list[Any]]:
        """``{'frame_info': [[loc, pad, length], ...], 'meta_data': [...]}`` of ``id_``."""
        return self._native.item(str(id_))

    def frame_count(self, id_: object) -> int:
        """The number of frames of ``id_``."""
        return self._native.frame_count(str(id_))

    def shapes(self, id_: object, frames: _Selection = None) -> list[tuple[int, int, int]]:
        """``(height, width, channels)`` of frames of ``id_``, from their headers."""
        return self._native.shapes(str(id_), frames)

    @property
    def warnings(self) -> list[str]:
        """Leftovers noticed on opening (orphan or temporary files)."""
        return self._native.warnings()

    def __repr__(self) -> str:
        return (
            f"GulpDirectory({self.output_dir!r}: {len(self)} items, "
            f"{self._native.n_frames()} frames, {self.num_chunks} chunks)"
        )


def _reopen_directory(output_dir: _Path, jpeg_decoder: Optional[_Decoder], mmap: bool,
                      cache_dir: Union[None, bool, _Path] = None,
                      cache_limit: Union[None, int, str] = None,
                      cache_fetch: Optional[str] = None) -> GulpDirectory:
    return GulpDirectory(output_dir, jpeg_decoder, mmap=mmap, cache_dir=cache_dir,
                         cache_limit=cache_limit, cache_fetch=cache_fetch)


class GulpChunk:
    """One chunk: a data file of JPEG records and its meta file.

    Reading (``read_frames``, ``chunk[id]``, ``iter_all``, iteration) needs
    no ``open('rb')``. Writing happens inside ``with chunk.open('wb')`` or
    ``open('ab')``: ``append(id, meta, frames)`` encodes numpy frames at
    ``gulp.utils._JPEG_WRITE_QUALITY``; the chunk is committed when the
    block ends, and an exception inside it discards what was written.
    """

    def __init__(self, data_file_path: _Path, meta_file_path: _Path,
                 serializer: AbstractSerializer = json_serializer,
                 jpeg_decoder: Optional[_Decoder] = jpeg_bytes_to_img) -> None:
        self.data_file_path = os.fspath(data_file_path)
        self.meta_file_path = os.fspath(meta_file_path)
        self.serializer = serializer
        self.jpeg_decoder = jpeg_decoder
        self._dir, self._number = _chunk_location(self.data_file_path)
        meta_dir, meta_number = _chunk_location(self.meta_file_path, meta=True)
        if (_absolute(meta_dir), meta_number) != (_absolute(self._dir), self._number):
            raise InvalidInputError(
                f"{self.meta_file_path} is not the meta file of {self.data_file_path}"
            )
        self._native: Optional[_gulp.Directory] = None
        self._index: Optional[int] = None
        self._writer: Optional[_gulp.Writer] = None
        self.fp = None

    @classmethod
    def _of_directory(cls, directory: GulpDirectory, index: int, number: int, data: str,
                      meta: str) -> GulpChunk:
        chunk = cls(data, meta, jpeg_decoder=directory.jpeg_decoder)
        chunk._native = directory._native
        chunk._index = index
        return chunk

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_native"] = None
        state["_index"] = None
        state["_writer"] = None
        return state

    def _reader(self) -> tuple[_gulp.Directory, int]:
        """The directory and this chunk's index in it."""
        if self._native is None or self._index is None:
            native = _gulp.Directory(self._dir)
            self._index = _chunk_index(native, self._number)
            self._native = native
        return self._native, self._index

    def _exists(self) -> bool:
        """Whether the chunk is committed (its meta file is there): a file
        test locally; in a bucket, whether the directory's listing has it."""
        if not _is_remote(self.meta_file_path):
            return os.path.exists(self.meta_file_path)
        if self._native is not None and self._index is not None:
            return True
        native = _gulp.Directory(self._dir)
        if not any(n == self._number for n, _, _ in native.chunk_files()):
            return False
        self._index = _chunk_index(native, self._number)
        self._native = native
        return True

    @property
    def meta_dict(self) -> dict[str, dict[str, list[Any]]]:
        """Id to ``{'frame_info': [...], 'meta_data': [...]}``, in meta order
        (empty if the chunk does not exist yet)."""
        if not self._exists():
            return OrderedDict()
        native, index = self._reader()
        return native.chunk_meta(index)

    def __contains__(self, id_: object) -> bool:
        if not self._exists():
            return False
        native, _ = self._reader()
        return native.chunk_of(str(id_)) == self._number

    def __getitem__(self, element: Union[int, str, Tuple[Any, _Selection]]) -> _Item:
        id_, slice_ = extract_input_for_getitem(element)
        return self.read_frames(id_, slice_)

    def __iter__(self) -> Iterator[_Item]:
        return self.iter_all()

    def __len__(self) -> int:
        if not self._exists():
            return 0
        return len(self._ids())

    def _ids(self) -> list[str]:
        native, index = self._reader()
        return native.chunk_ids(index)

    def read_frames(self, id_: object, slice_: _Selection = None) -> _Item:
        """``(frames, meta)`` of ``id_``: frames selected by ``slice_`` (None,
        a slice, or a list of indices), and the item's first meta dict."""
        id_ = str(id_)
        native, _ = self._reader()
        if native.chunk_of(id_) != self._number:
            raise UnknownIdError(f"no item with id {id_!r} in {self.meta_file_path}")
        frames = _read_frames(native, self.jpeg_decoder, id_, slice_)
        return frames, native.meta(id_)

    def iter_all(self, accepted_ids: Optional[Iterable[object]] = None,
                 shuffle: bool = False) -> Iterator[_Item]:
        """Yields ``(frames, meta)`` per item in meta order; only ids in
        ``accepted_ids`` if given; shuffled with numpy's global RNG if
        ``shuffle``."""
        ids = list(self._ids())
        if accepted_ids is not None:
            accepted = {str(i) for i in accepted_ids}
            ids = [i for i in ids if i in accepted]
        if shuffle:
            np.random.shuffle(ids)
        for id_ in ids:
            yield self.read_frames(id_)

    @contextmanager
    def open(self, flag: str = "rb") -> Iterator[None]:
        """``'rb'`` (reading), ``'wb'`` (write the chunk afresh) or ``'ab'``
        (append to it). Writes are committed when the block ends normally."""
        if flag == "rb":
            self._reader()
            yield
            return
        if flag not in ("wb", "ab", "xb"):
            raise GulpNotImplementedError(f"Unknown flag {flag!r}")
        writer = self._writer = _gulp.Writer(
            self._dir, self._number, flag,
            meta_format=getattr(self.serializer, "format", "json"),
        )
        try:
            yield
        except BaseException:
            writer.abort()
            raise
        else:
            writer.commit()
        finally:
            self._writer = None
            self._native = None

    def flush(self) -> None:
        """Commits what was appended so far and goes on appending."""
        if self._writer is not None:
            self._writer.commit(reopen=True)
            self._native = None

    def append(self, id_: object, meta_data: Any, frames: Sequence[npt.NDArray[np.uint8]]) -> None:
        """Appends an item: ``meta_data`` (a dict) and ``frames`` (numpy
        ``uint8`` arrays, ``H×W×3`` or ``H×W``), encoded to JPEG."""
        if self._writer is None:
            raise InvalidInputError(
                f"{self.data_file_path} is not open for writing: use "
                "`with chunk.open('wb'):` or `open('ab')`"
            )
        self._writer.append(str(id_), meta_data, frames, quality=_utils._JPEG_WRITE_QUALITY)

    def append_jpegs(self, id_: object, meta_data: Any,
                     jpegs: Iterable[Union[bytes, bytearray, memoryview]]) -> None:
        """Appends an item whose frames are JPEG bytes, stored as they are."""
        if self._writer is None:
            raise InvalidInputError(f"{self.data_file_path} is not open for writing")
        self._writer.append_jpegs(str(id_), meta_data, [bytes(j) for j in jpegs])

    def __repr__(self) -> str:
        return f"GulpChunk({self.data_file_path!r}, {self.meta_file_path!r})"


class ChunkWriter:
    """Writes one adapter slice into one chunk (gulpio2's ``ChunkWriter``)."""

    def __init__(self, adapter: AbstractDatasetAdapter) -> None:
        self.adapter = adapter

    def write_chunk(self, output_chunk: GulpChunk, input_slice: slice) -> None:
        with output_chunk.open("wb"):
            for video in self.adapter.iter_data(input_slice):
                id_ = video["id"]
                meta_data = video["meta"]
                frames = video["frames"]
                if len(frames) > 0:
                    output_chunk.append(id_, meta_data, frames)
                else:
                    print("Failed to write video with id: {}; no frames".format(id_))


class GulpIngestor:
    """Ingests an adapter's items into new chunks of ``output_folder``.

    ``adapter`` is a ``gulp.adapters.AbstractDatasetAdapter``; every
    ``videos_per_chunk`` items of it make a chunk (the slices of
    ``calculate_chunk_slices``, as in gulpio2: an item without frames is
    left out and leaves its chunk shorter). The adapter is read in the
    calling process, and the items go through a ``gulp.Writer``: frames
    are encoded by libjpeg-turbo on ``num_workers`` threads (gulpio2's
    bytes, at ``gulp.utils._JPEG_WRITE_QUALITY``), each chunk is committed
    atomically, and an id already in the directory, or given twice,
    raises ``DuplicateIdError`` before anything of it is written. An
    exception discards the chunk being filled; the chunks before it stay.
    """

    def __init__(self, adapter: AbstractDatasetAdapter, output_folder: _Path,
                 videos_per_chunk: int, num_workers: int) -> None:
        assert int(num_workers) > 0
        self.adapter = adapter
        self.output_folder = output_folder
        self.videos_per_chunk = int(videos_per_chunk)
        self.num_workers = int(num_workers)

    def __call__(self) -> None:
        chunk_slices = calculate_chunk_slices(self.videos_per_chunk, len(self.adapter))
        # 4:4:4, no label numbering: what gulpio2 writes.
        writer = Writer(self.output_folder, self.videos_per_chunk,
                        quality=_utils._JPEG_WRITE_QUALITY, subsampling="444", labels=False,
                        threads=self.num_workers)
        try:
            for chunk_slice in chunk_slices:
                for video in self.adapter.iter_data(chunk_slice):
                    frames = video["frames"]
                    if len(frames) > 0:
                        writer.add(video["id"], frames, video["meta"])
                    else:
                        print("Failed to write video with id: {}; no frames".format(video["id"]))
                writer.end_chunk()
        except BaseException:
            # As a chunk written with open('xb'): the chunk being filled is
            # discarded, the chunks before it stay.
            writer.abort()
            raise
        writer.close()
