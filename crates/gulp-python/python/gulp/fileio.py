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

import json
import os
import pickle
import re
from abc import ABC, abstractmethod
from collections import OrderedDict, namedtuple
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

import numpy as np

from . import _gulp
from . import utils as _utils
from .errors import InvalidInputError, SelectionTypeError
from .utils import jpeg_bytes_to_img

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

ImgInfo = namedtuple("ImgInfo", ["loc", "pad", "length"])


class AbstractSerializer(ABC):  # pragma: no cover - interface
    """Loads and dumps a chunk's meta dict."""

    @abstractmethod
    def load(self, file_name):
        pass

    @abstractmethod
    def dump(self, thing, file_name):
        pass


class PickleSerializer(AbstractSerializer):
    """gulpio2's pickle serializer (kept for API compatibility; nothing writes it)."""

    def load(self, file_name):
        with open(file_name, "rb") as file_pointer:
            return pickle.load(file_pointer)

    def dump(self, thing, file_name):
        with open(file_name, "wb") as file_pointer:
            pickle.dump(thing, file_pointer)


class JSONSerializer(AbstractSerializer):
    """GulpIO's JSON meta (what gulpio2 reads and writes)."""

    def load(self, file_name):
        with open(file_name, "r") as file_pointer:
            return json.load(file_pointer, object_pairs_hook=OrderedDict)

    def dump(self, thing, file_name):
        with open(file_name, "w") as file_pointer:
            json.dump(thing, file_pointer)


class MsgpackSerializer(AbstractSerializer):
    """gulp's msgpack meta: chunks written with it are smaller and faster to
    open, carry a CRC-32 per frame, and are read by gulp only (not gulpio2).
    Pass it as ``serializer=`` to a ``GulpChunk`` to write msgpack meta."""

    format = "msgpack"

    def load(self, file_name):
        directory, number = _chunk_location(file_name, meta=True)
        native = _gulp.Directory(directory)
        return native.chunk_meta(_chunk_index(native, number))

    def dump(self, thing, file_name):
        raise InvalidInputError(
            "msgpack meta is written by GulpChunk.open('wb'/'ab'), not dumped"
        )


pickle_serializer = PickleSerializer()
json_serializer = JSONSerializer()
msgpack_serializer = MsgpackSerializer()


def extract_input_for_getitem(element):
    """``id`` or ``(id, slice_or_indices)`` to ``(str(id), slice_or_None)``."""
    if isinstance(element, tuple) and len(element) == 2:
        id_, slice_ = element
    elif isinstance(element, (int, str)):
        id_, slice_ = element, None
    else:
        raise SelectionTypeError("Undefined input type! id or (id, slice) expected")
    id_ = str(id_)
    return id_, slice_


def calculate_chunk_slices(items_per_chunk, num_items):
    """``[slice(i, min(i + k, n)) for i in range(0, n, k)]``; ``k`` and ``n`` > 0."""
    assert items_per_chunk > 0
    assert num_items > 0
    return [
        slice(i, min(i + items_per_chunk, num_items))
        for i in range(0, num_items, items_per_chunk)
    ]


_DATA_RE = re.compile(r"^data_(\d+)\.gulp$")
_META_RE = re.compile(r"^meta_(\d+)\.gmeta$")


def _chunk_location(path, meta=False):
    """``(directory, chunk number)`` of a ``data_N.gulp`` / ``meta_N.gmeta`` path."""
    path = os.fspath(path)
    directory, name = os.path.split(path)
    match = (_META_RE if meta else _DATA_RE).match(name)
    if match is None:
        kind = "meta_N.gmeta" if meta else "data_N.gulp"
        raise InvalidInputError(f"{path}: chunk files are named {kind}")
    return directory or ".", int(match.group(1))


def _chunk_index(native, number):
    for index, (n, _, _) in enumerate(native.chunk_files()):
        if n == number:
            return index
    raise InvalidInputError(f"no chunk {number} in {native.path}")


def _is_builtin_decoder(decoder):
    return decoder is None or decoder is jpeg_bytes_to_img


class GulpDirectory:
    """A gulp directory: chunks of frames, read by id.

    ``gd[id]``, ``gd[id, 1:10:2]`` and ``gd[id, [1, 5, 6]]`` return
    ``(frames, meta)``: a list of ``uint8`` numpy arrays (``H×W×3`` RGB,
    ``H×W`` gray) and the item's first meta dict. ``jpeg_decoder`` replaces
    the built-in libjpeg-turbo decoder (it gets each frame's JPEG bytes).
    ``mmap=False`` reads through file handles instead of memory maps.
    """

    def __init__(self, output_dir, jpeg_decoder=jpeg_bytes_to_img, *, mmap=True):
        self.output_dir = output_dir
        self.jpeg_decoder = jpeg_decoder
        self._mmap = mmap
        self._native = _gulp.Directory(output_dir, mmap=mmap)
        self._cache = {}

    # Pickling (spawned DataLoader workers): reopen by path.
    def __reduce__(self):
        return (_reopen_directory, (self.output_dir, self.jpeg_decoder, self._mmap))

    def _lazy(self, name, build):
        value = self._cache.get(name)
        if value is None:
            value = self._cache[name] = build()
        return value

    @property
    def num_chunks(self):
        """The number of chunks."""
        return len(self._native.chunk_files())

    @property
    def chunk_objs_lookup(self):
        """Chunk number (int) to ``GulpChunk``, in chunk order."""

        def build():
            return OrderedDict(
                (number, GulpChunk._of_directory(self, index, number, data, meta))
                for index, (number, data, meta) in enumerate(self._native.chunk_files())
            )

        return self._lazy("chunk_objs_lookup", build)

    @property
    def all_meta_dicts(self):
        """Every chunk's meta dict (id to ``{'frame_info', 'meta_data'}``)."""

        def build():
            return [self._native.chunk_meta(i) for i in range(self.num_chunks)]

        return self._lazy("all_meta_dicts", build)

    @property
    def merged_meta_dict(self):
        """All items' meta dicts in one dict (id to ``{'frame_info', 'meta_data'}``)."""

        def build():
            merged = {}
            for meta in self.all_meta_dicts:
                merged.update(meta)
            return merged

        return self._lazy("merged_meta_dict", build)

    @property
    def chunk_lookup(self):
        """Id (str) to the number (int) of the chunk holding it."""

        def build():
            lookup = {}
            for index, (number, _, _) in enumerate(self._native.chunk_files()):
                for id_ in self._native.chunk_ids(index):
                    lookup[id_] = number
            return lookup

        return self._lazy("chunk_lookup", build)

    def chunks(self):
        """The chunks, in chunk order."""
        return iter(self.chunk_objs_lookup.values())

    def __iter__(self):
        return self.chunks()

    def __len__(self):
        return len(self._native)

    def __contains__(self, id_):
        return str(id_) in self._native

    def ids(self):
        """Every id, chunk by chunk, in meta order."""
        return self._native.ids()

    def new_chunks(self, total_new_chunks):
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

    def __getitem__(self, element):
        id_, slice_ = extract_input_for_getitem(element)
        return self.read_frames(id_, slice_)

    def read_frames(self, id_, slice_=None):
        """``(frames, meta)`` of ``id_``, as ``gd[id_, slice_]``."""
        id_ = str(id_)
        if _is_builtin_decoder(self.jpeg_decoder):
            frames = self._native.read(id_, slice_)
        else:
            frames = [self.jpeg_decoder(b) for b in self._native.raw_bytes(id_, slice_)]
        return frames, self._native.meta(id_)

    # What gulpio2 lacks.

    def read(self, id_, frames=None, *, color=None, scale=None, crop=None, dct=None,
             upsampling=None, strict=True, codec=None):
        """Frames of ``id_`` decoded with options, GIL released.

        ``frames``: ``None`` (all), a slice or a list of indices. ``color``:
        'auto' (as stored), 'rgb' or 'gray'. ``scale``: DCT-domain scaling,
        a fraction '1/2' (n/8), an int (the least short edge) or a
        ``(width, height)`` least size. ``crop``: ``(x, y, width, height)`` of
        the scaled frame; only the rows and columns it needs are decoded.
        ``dct``: 'fast' (gulpio2's) or 'accurate'. ``upsampling``: 'fast' or
        'smooth'. ``strict=False`` returns the decoder's best image of a
        damaged frame instead of raising ``DecodeError``.
        """
        return self._native.read(
            str(id_), frames, color=color, scale=scale, crop=crop, dct=dct,
            upsampling=upsampling, strict=strict, codec=codec,
        )

    def raw(self, id_, frames=None):
        """The JPEG bytes of frames of ``id_`` as read-only ``memoryview``s of
        the memory map (no copy; ``bytes`` when opened with ``mmap=False``)."""
        return self._native.raw(str(id_), frames)

    def meta(self, id_):
        """The first meta dict of ``id_`` (what ``gd[id_][1]`` gives)."""
        return self._native.meta(str(id_))

    def item(self, id_):
        """``{'frame_info': [[loc, pad, length], ...], 'meta_data': [...]}`` of ``id_``."""
        return self._native.item(str(id_))

    def frame_count(self, id_):
        """The number of frames of ``id_``."""
        return self._native.frame_count(str(id_))

    def shapes(self, id_, frames=None):
        """``(height, width, channels)`` of frames of ``id_``, from their headers."""
        return self._native.shapes(str(id_), frames)

    @property
    def warnings(self):
        """Leftovers noticed on opening (orphan or temporary files)."""
        return self._native.warnings()

    def __repr__(self):
        return (
            f"GulpDirectory({self.output_dir!r}: {len(self)} items, "
            f"{self._native.n_frames()} frames, {self.num_chunks} chunks)"
        )


def _reopen_directory(output_dir, jpeg_decoder, mmap):
    return GulpDirectory(output_dir, jpeg_decoder, mmap=mmap)


class GulpChunk:
    """One chunk: a data file of JPEG records and its meta file.

    Reading (``read_frames``, ``chunk[id]``, ``iter_all``, iteration) needs
    no ``open('rb')``. Writing happens inside ``with chunk.open('wb')`` or
    ``open('ab')``: ``append(id, meta, frames)`` encodes numpy frames at
    ``gulp.utils._JPEG_WRITE_QUALITY``; the chunk is committed when the
    block ends, and an exception inside it discards what was written.
    """

    def __init__(self, data_file_path, meta_file_path, serializer=json_serializer,
                 jpeg_decoder=jpeg_bytes_to_img):
        self.data_file_path = os.fspath(data_file_path)
        self.meta_file_path = os.fspath(meta_file_path)
        self.serializer = serializer
        self.jpeg_decoder = jpeg_decoder
        self._dir, self._number = _chunk_location(self.data_file_path)
        meta_dir, meta_number = _chunk_location(self.meta_file_path, meta=True)
        if (os.path.abspath(meta_dir), meta_number) != (os.path.abspath(self._dir), self._number):
            raise InvalidInputError(
                f"{self.meta_file_path} is not the meta file of {self.data_file_path}"
            )
        self._native = None
        self._index = None
        self._writer = None
        self.fp = None

    @classmethod
    def _of_directory(cls, directory, index, number, data, meta):
        chunk = cls(data, meta, jpeg_decoder=directory.jpeg_decoder)
        chunk._native = directory._native
        chunk._index = index
        return chunk

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_native"] = None
        state["_index"] = None
        state["_writer"] = None
        return state

    def _reader(self):
        if self._native is None:
            native = _gulp.Directory(self._dir)
            self._index = _chunk_index(native, self._number)
            self._native = native
        return self._native

    @property
    def meta_dict(self):
        """Id to ``{'frame_info': [...], 'meta_data': [...]}``, in meta order
        (empty if the chunk does not exist yet)."""
        if not os.path.exists(self.meta_file_path):
            return OrderedDict()
        native = self._reader()
        return native.chunk_meta(self._index)

    def __contains__(self, id_):
        if not os.path.exists(self.meta_file_path):
            return False
        return self._reader().chunk_of(str(id_)) == self._number

    def __getitem__(self, element):
        id_, slice_ = extract_input_for_getitem(element)
        return self.read_frames(id_, slice_)

    def __iter__(self):
        return self.iter_all()

    def __len__(self):
        if not os.path.exists(self.meta_file_path):
            return 0
        return len(self._reader().chunk_ids(self._index))

    def _ids(self):
        return self._reader().chunk_ids(self._index)

    def read_frames(self, id_, slice_=None):
        """``(frames, meta)`` of ``id_``: frames selected by ``slice_`` (None,
        a slice, or a list of indices), and the item's first meta dict."""
        id_ = str(id_)
        native = self._reader()
        if native.chunk_of(id_) != self._number:
            from .errors import UnknownIdError

            raise UnknownIdError(f"no item with id {id_!r} in {self.meta_file_path}")
        if _is_builtin_decoder(self.jpeg_decoder):
            frames = native.read(id_, slice_)
        else:
            frames = [self.jpeg_decoder(b) for b in native.raw_bytes(id_, slice_)]
        return frames, native.meta(id_)

    def iter_all(self, accepted_ids=None, shuffle=False):
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
    def open(self, flag="rb"):
        """``'rb'`` (reading), ``'wb'`` (write the chunk afresh) or ``'ab'``
        (append to it). Writes are committed when the block ends normally."""
        if flag == "rb":
            self._reader()
            yield
            return
        if flag not in ("wb", "ab", "xb"):
            raise NotImplementedError(f"Unknown flag {flag!r}")
        self._writer = _gulp.Writer(
            self._dir, self._number, flag,
            meta_format=getattr(self.serializer, "format", "json"),
        )
        try:
            yield
        except BaseException:
            self._writer.abort()
            raise
        else:
            self._writer.commit()
        finally:
            self._writer = None
            self._native = None

    def flush(self):
        """Commits what was appended so far and goes on appending."""
        if self._writer is not None:
            self._writer.commit(reopen=True)
            self._native = None

    def append(self, id_, meta_data, frames):
        """Appends an item: ``meta_data`` (a dict) and ``frames`` (numpy
        ``uint8`` arrays, ``H×W×3`` or ``H×W``), encoded to JPEG."""
        if self._writer is None:
            raise InvalidInputError(
                f"{self.data_file_path} is not open for writing: use "
                "`with chunk.open('wb'):` or `open('ab')`"
            )
        self._writer.append(str(id_), meta_data, frames, quality=_utils._JPEG_WRITE_QUALITY)

    def append_jpegs(self, id_, meta_data, jpegs):
        """Appends an item whose frames are JPEG bytes, stored as they are."""
        if self._writer is None:
            raise InvalidInputError(f"{self.data_file_path} is not open for writing")
        self._writer.append_jpegs(str(id_), meta_data, [bytes(j) for j in jpegs])

    def __repr__(self):
        return f"GulpChunk({self.data_file_path!r}, {self.meta_file_path!r})"


class ChunkWriter:
    """Writes one adapter slice into one chunk (gulpio2's ``ChunkWriter``)."""

    def __init__(self, adapter):
        self.adapter = adapter

    def write_chunk(self, output_chunk, input_slice):
        with output_chunk.open("wb"):
            for video in self.adapter.iter_data(input_slice):
                id_ = video["id"]
                meta_data = video["meta"]
                frames = video["frames"]
                if len(frames) > 0:
                    output_chunk.append(id_, meta_data, frames)
                else:
                    print("Failed to write video with id: {}; no frames".format(id_))


def _write_new_chunk(adapter, output_chunk, input_slice):
    # Like ChunkWriter.write_chunk, but never replaces a chunk that appeared
    # meanwhile ('xb').
    with output_chunk.open("xb"):
        for video in adapter.iter_data(input_slice):
            frames = video["frames"]
            if len(frames) > 0:
                output_chunk.append(video["id"], video["meta"], frames)
            else:
                print("Failed to write video with id: {}; no frames".format(video["id"]))
    return output_chunk.data_file_path


class GulpIngestor:
    """Ingests an adapter's items into new chunks of ``output_folder``.

    ``adapter`` is a ``gulp.adapters.AbstractDatasetAdapter``; every
    ``videos_per_chunk`` items make a chunk, written by ``num_workers``
    processes (in this process when 1). Frames are encoded by libjpeg-turbo
    on every core of the worker, and each chunk is committed atomically.
    """

    def __init__(self, adapter, output_folder, videos_per_chunk, num_workers):
        assert int(num_workers) > 0
        self.adapter = adapter
        self.output_folder = output_folder
        self.videos_per_chunk = int(videos_per_chunk)
        self.num_workers = int(num_workers)

    def __call__(self):
        os.makedirs(self.output_folder, exist_ok=True)
        chunk_slices = calculate_chunk_slices(self.videos_per_chunk, len(self.adapter))
        gulp_directory = GulpDirectory(self.output_folder)
        new_chunks = list(gulp_directory.new_chunks(len(chunk_slices)))
        if self.num_workers == 1:
            for chunk, chunk_slice in zip(new_chunks, chunk_slices):
                _write_new_chunk(self.adapter, chunk, chunk_slice)
            return
        with ProcessPoolExecutor(max_workers=self.num_workers) as executor:
            results = executor.map(
                _write_new_chunk,
                [self.adapter] * len(new_chunks),
                new_chunks,
                chunk_slices,
            )
            for _ in results:
                pass
