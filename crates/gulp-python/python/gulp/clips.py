"""The clip loader: training batches straight from a gulp directory.

Clips are sampled, decoded, cropped, resized and flipped by Rust threads
(libjpeg-turbo decodes only the pixels a crop needs, scaled in the DCT
domain), into ``uint8`` arrays ``[B, T, H, W, 3]`` handed to Python without
a copy::

    import gulp
    loader = gulp.ClipLoader("/data/ssv2-gulp", frames=8, sampling="segments",
                             resize=128, size=112, crop="random", flip=True,
                             batch_size=8, shuffle=True, seed=0)
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for batch in loader:
            x = torch.from_dlpack(batch.frames)   # [8, 8, 112, 112, 3] uint8
            y = torch.from_numpy(batch.labels)    # [8] int64

Use one loader per process; it decodes on ``threads`` threads of its own, so
PyTorch ``DataLoader`` worker processes are not needed (``gulp.torch`` wraps
it for code that wants a ``Dataset``).

Training sets as they are built: several directories in one epoch
(:class:`Source` with ``weight``, ``repeat`` or ``choose``), subsets by id or
by a predicate on the meta (``ids=``, ``where=``), balanced or weighted
sampling, targets of several forms (``target=``) and the segments of long
items (``segments=``); see docs/loader.md.
"""

from __future__ import annotations

import copy
import os
import sys
from typing import (TYPE_CHECKING, Any, Callable, Generator, Iterable, Iterator, Mapping, Optional,
                    Sequence, Tuple, Union, cast)

import numpy as np
import numpy.typing as npt

from . import _gulp
from .columns import Column, Predicate, WeightColumn
from .errors import InvalidInputError

if TYPE_CHECKING:
    from ._gulp import _Path

__all__ = ["ClipLoader", "ImageLoader", "Batch", "Source", "Segments", "Rank"]

#: Which items to keep, for ``where=``: a :class:`gulp.columns.Predicate`
#: on meta keys (``gulp.col("label") == "x"``, evaluated in Rust), or a
#: function of an item's meta (``meta_data[0]``, a dict).
Where = Union[Predicate, Callable[[Any], Any]]
#: Per-item weights: a meta key (``gulp.col("w")``, or a
#: :class:`gulp.columns.WeightColumn`), ``{id: weight}``, or a function of
#: an item's meta.
Weights = Union[Column, WeightColumn, Mapping[str, float], Callable[[Any], float]]
#: Ids: a sequence of ids, or the path of a file of ids (one per line).
Ids = Union[str, "os.PathLike[str]", Iterable[Union[str, int]]]


def _ids(ids: Optional[Ids]) -> Optional[list[str]]:
    if ids is None:
        return None
    if isinstance(ids, (str, os.PathLike)):
        return _gulp.read_ids(ids)
    return [str(i) for i in ids]


class Source:
    """One directory of a loader, with its share of an epoch and a subset
    of its items (MosaicML Streaming's ``Stream``)::

        gulp.ClipLoader([gulp.Source("/data/ssv2-gulp", weight=0.7),
                         gulp.Source("/data/kinetics-gulp", weight=0.3)],
                        samples_per_epoch=100_000)

    At most one of:
        ``weight``: a share of the epoch, relative to the other sources'
        (every source then has one); the epoch holds ``samples_per_epoch``
        samples, or as many as all sources together.
        ``repeat``: every sample ``repeat`` times (a fraction of a pass is a
        random subset, another each epoch).
        ``choose``: this many samples (a random subset each epoch; more than
        the source has repeats it whole first).
    Without any, every sample once. Counts are exact for every epoch.

    ``ids``: keep only these ids (a sequence, or the path of a file of ids,
    one per line, ``#`` comments allowed); each must be in the directory.
    ``where``: keep only the items it holds for: an expression on meta
    keys (``gulp.col("label").is_in([...]) & (gulp.col("duration") > 2)``,
    see :mod:`gulp.columns`), evaluated in Rust, or a function of the meta
    (``meta_data[0]``, a dict) called once per item when the loader is
    made. ``weights``: per-item sampling weights, a meta key
    (``gulp.col("w")``, ``gulp.col("label").replace({"rare": 5.0},
    default=1.0)``), ``{id: weight}`` or a function of the meta (called
    once per item). On a directory with an index file, expressions on the
    label key alone are evaluated once per label value. ``labels``: this source's label →
    class index (default: the loader's ``labels``, else its
    ``label2idx.json``).
    """

    __slots__ = ("path", "weight", "repeat", "choose", "ids", "where", "weights", "labels")

    path: str
    weight: Optional[float]
    repeat: Optional[float]
    choose: Optional[int]
    ids: Optional[list[str]]
    where: Optional[Where]
    weights: Optional[Weights]
    labels: Optional[list[tuple[str, int]]]

    def __init__(self, path: _Path, *, weight: Optional[float] = None,
                 repeat: Optional[float] = None, choose: Optional[int] = None,
                 ids: Optional[Ids] = None, where: Optional[Where] = None,
                 weights: Optional[Weights] = None,
                 labels: Optional[Mapping[str, int]] = None) -> None:
        if sum(x is not None for x in (weight, repeat, choose)) > 1:
            raise InvalidInputError(
                f"{path}: give a source at most one of weight, repeat and choose")
        if isinstance(where, Column):
            raise InvalidInputError(
                f"where={where!r} is a key, not a predicate: compare it ({where!r} == ...)")
        if where is not None and not (isinstance(where, Predicate) or callable(where)):
            raise InvalidInputError(
                f"where must be a gulp.col predicate or a function of an item's meta, "
                f"not {where!r}")
        if weights is not None and not (isinstance(weights, (Column, WeightColumn, Mapping))
                                        or callable(weights)):
            raise InvalidInputError(
                f"weights must be a gulp.col key, a dict id -> weight or a function of the "
                f"meta, not {weights!r}")
        self.path = os.fspath(path)
        self.weight = None if weight is None else float(weight)
        self.repeat = None if repeat is None else float(repeat)
        self.choose = None if choose is None else int(choose)
        self.ids = _ids(ids)
        self.where = where
        self.weights = ({str(k): float(v) for k, v in weights.items()}
                        if isinstance(weights, Mapping) else weights)
        self.labels = (None if labels is None
                       else [(str(k), int(v)) for k, v in labels.items()])

    def __repr__(self) -> str:
        share = next((f", {k}={getattr(self, k)!r}" for k in ("weight", "repeat", "choose")
                      if getattr(self, k) is not None), "")
        return f"Source({self.path!r}{share})"


class Segments:
    """Where the segments of long items are in their meta (ActivityNet,
    EPIC-Kitchens): one sample per segment, its clips drawn inside it.

    ``key``: the meta key (of ``meta_data[0]``) holding the list of
    segments, each an object. Bounds: ``start`` and ``end`` keys (``end``
    excluded), or ``pair``, one key holding ``[start, end]``. ``unit``:
    ``"frames"`` (the item's frame indices) or ``"seconds"``: the frames
    whose times fall in ``[start, end)`` (at least one), by the item's frame
    times when its ingest recorded them, else ``[floor(start * fps),
    ceil(end * fps))`` with the rate from the item's meta ``fps``, else
    ``fps`` given here, else the meta's ``duration`` in seconds
    (``frames / duration``). Ends past the item are cut to it.

    ``Segments("segments")`` reads what ``gulp ingest epic-kitchens``
    writes; ``Segments.activitynet()`` what ``gulp ingest activitynet``
    keeps (``annotations``, ``segment: [t0, t1]`` in seconds, ``duration``).
    """

    __slots__ = ("key", "start", "end", "pair", "unit", "fps")

    key: str
    start: str
    end: str
    pair: Optional[str]
    unit: str
    fps: Optional[float]

    def __init__(self, key: str = "segments", *, start: str = "start", end: str = "end",
                 pair: Optional[str] = None, unit: str = "frames",
                 fps: Optional[float] = None) -> None:
        self.key, self.start, self.end, self.pair = str(key), str(start), str(end), pair
        self.unit = unit
        self.fps = None if fps is None else float(fps)

    @classmethod
    def activitynet(cls) -> "Segments":
        """ActivityNet's annotations as ``gulp ingest activitynet`` keeps
        them."""
        return cls("annotations", pair="segment", unit="seconds")

    @classmethod
    def manifest(cls) -> "Segments":
        """A manifest's rows as ``gulp ingest manifest --segments`` keeps
        them: ``segments`` with ``start`` and ``end`` in seconds, each row's
        frames found by the item's frame times."""
        return cls("segments", unit="seconds")

    def __repr__(self) -> str:
        bounds = f"pair={self.pair!r}" if self.pair else f"start={self.start!r}, end={self.end!r}"
        return f"Segments({self.key!r}, {bounds}, unit={self.unit!r})"


def _torch_ranks() -> Optional[Tuple[int, int]]:
    """``(rank, world_size)`` of an initialised ``torch.distributed`` process
    group, if torch is already imported (gulp never imports it itself)."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return int(dist.get_rank()), int(dist.get_world_size())


class Rank(int):
    """A rank or world size (an ``int``) that says where it came from:
    ``given``, ``from torch.distributed``, ``from RANK/WORLD_SIZE``
    (torchrun, Lightning, accelerate), ``from SLURM_PROCID/SLURM_NTASKS``
    (srun), or the default of a process without a launcher."""

    source: str

    def __new__(cls, value: int, source: str) -> "Rank":
        rank = super().__new__(cls, value)
        rank.source = source
        return rank

    def __repr__(self) -> str:
        return f"{int(self)} ({self.source})"


class Batch:
    """One batch of clips.

    Attributes:
        frames: ``uint8`` array ``[B, T, H, W, 3]`` (C-contiguous; supports
            ``__dlpack__`` and the buffer protocol).
        targets: the target of each clip (``target=``): ``int64 [B]`` for
            the default label or one key, ``int64 [B, K]`` for K keys,
            ``float32 [B]`` / ``[B, K]`` for float keys, ``float32 [B,
            num_classes]`` for a multi-hot target, ``int64`` or ``float32
            [B, ...]`` as a target function returns it.
        labels: the same array as ``targets``; for the default target,
            ``int64 [B]`` class indices (-1 for an item without a label).
        ids: the item id of each clip.
        sources: ``int64`` array ``[B]``: the source (its index in the
            loader's sources) each clip came from.
        segments: ``int64`` array ``[B, 2]``: the frames ``[start, end)`` of
            each clip's sample, its segment or the whole item.
        indices: ``int64`` array ``[B, T]``: the frame indices of each clip
            (of its item, inside its segment).
        views: ``int64`` array ``[B]``: ``clip * crops + crop`` of each clip
            (several clips per item or ``crop="three"``), else 0.
        skipped: ``(id, reason)`` of clips left out (``on_error="skip"``).
        index: the batch's number in the epoch.
        epoch: the epoch.
        positions: ``int64`` array ``[B]``: the position of each clip's item
            in the epoch's global order (before the split between ranks);
            over all ranks, each position of an epoch is served once.
        padding: ``bool`` array ``[B]``: the clips that repeat a sample to
            give every rank the same number (``drop_last=False`` only, in
            the last batches of an epoch): leave them out of evaluation
            metrics, e.g. ``correct[~batch.padding].sum()``.
        times: ``float64`` array ``[B, T]``: the source time (seconds) of
            each frame (with ``fps`` or ``audio``; else ``None``).
        audio: ``float32`` array ``[B, C, S]``: each clip's sound (with
            ``audio=True``; else ``None``).
        has_audio: ``bool`` array ``[B]``: whether each clip's item has
            sound (silence otherwise; with ``audio=True``, else ``None``).
        texts: ``list[str]``: each clip's text (with ``texts``; else
            ``None``).

    ``x, y = batch`` unpacks to ``(frames, targets)``.
    """

    __slots__ = ("frames", "labels", "ids", "indices", "views", "skipped", "index", "epoch",
                 "positions", "targets", "sources", "segments", "padding", "times", "audio",
                 "has_audio", "texts")

    frames: npt.NDArray[np.uint8]
    labels: npt.NDArray[Any]
    targets: npt.NDArray[Any]
    ids: list[str]
    sources: npt.NDArray[np.int64]
    segments: npt.NDArray[np.int64]
    indices: npt.NDArray[np.int64]
    views: npt.NDArray[np.int64]
    skipped: list[tuple[str, str]]
    index: int
    epoch: int
    positions: npt.NDArray[np.int64]
    padding: npt.NDArray[np.bool_]
    times: Optional[npt.NDArray[np.float64]]
    audio: Optional[npt.NDArray[np.float32]]
    has_audio: Optional[npt.NDArray[np.bool_]]
    texts: Optional[list[str]]

    def __init__(self, frames: npt.NDArray[np.uint8], targets: npt.NDArray[Any],
                 ids: list[str], indices: npt.NDArray[np.int64], views: npt.NDArray[np.int64],
                 skipped: list[tuple[str, str]], index: int, epoch: int,
                 positions: npt.NDArray[np.int64], sources: npt.NDArray[np.int64],
                 segments: npt.NDArray[np.int64], padding: npt.NDArray[np.bool_],
                 times: Optional[npt.NDArray[np.float64]] = None,
                 audio: Optional[npt.NDArray[np.float32]] = None,
                 has_audio: Optional[npt.NDArray[np.bool_]] = None,
                 texts: Optional[list[str]] = None) -> None:
        self.frames = frames
        self.targets = targets
        self.labels = targets
        self.ids = ids
        self.sources = sources
        self.segments = segments
        self.indices = indices
        self.views = views
        self.skipped = skipped
        self.index = index
        self.epoch = epoch
        self.positions = positions
        self.padding = padding
        self.times = times
        self.audio = audio
        self.has_audio = has_audio
        self.texts = texts

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[npt.NDArray[Any]]:
        return iter((self.frames, self.labels))

    def __repr__(self) -> str:
        shape = "x".join(str(s) for s in self.frames.shape)
        return f"Batch(epoch={self.epoch}, index={self.index}, frames={shape}, ids={len(self.ids)})"


class ClipLoader:
    """Batches of clips from the gulp directory ``path`` (or from several:
    a list of paths and :class:`Source` objects).

    Every option with named values lists its names below, from the one
    list gulp's Rust core keeps (``gulp bench --loader --help`` shows the
    same); the defaults are those of ``LoaderOptions::default()``.

    Sampling (the frames of a clip, from an item of ``n`` frames):
        ``frames``: frames per clip (``T``; 1 for images).
        ``sampling`` (one of {sampling}): ``"window"`` (GulpIO's: ``frames`` frames ``step`` apart
        at a random offset when training, centred otherwise), ``"segments"``
        (TSN: one frame per equal segment, random within it when training,
        its centre otherwise), ``"uniform"`` (evenly spaced from the first
        to the last frame), ``"dense"`` (a random window with stride
        ``step``, the stride shrunk to fit short items). Items shorter than
        a window repeat their last frame. See ``docs/loader.md``.
        ``clips``: clips per item (evaluation: evenly placed; each is a
        sample of its own, ``batch.views`` says which).

    Spatial transforms, one draw per clip:
        ``resize``: the short edge after resizing (``None`` keeps the stored
        size). ``size``: the output, ``int`` (square) or ``(h, w)``.
        ``crop`` (one of {crop}): ``"random"``, ``"center"``, ``"random_resized"``
        (torchvision's, with ``scale`` and ``ratio``), ``"three"`` (three
        crops along the long side: three samples per clip) or ``"none"`` (the
        whole frame, resampled to ``size`` if given). ``flip``: mirror half
        of the clips (training only).

    Order:
        ``shuffle`` (``True``, ``False`` or one of {shuffle}; ``True`` is
        ``"items"``, ``False`` ``"none"``) and ``seed``: a new permutation per epoch, fixed by
        ``(seed, epoch)``; every random draw is fixed by the seed, the epoch
        and the clip's place, so the thread count changes nothing.
        ``shuffle="chunks"``: a block shuffle for data read from a bucket
        through a small node cache: the chunks in a random order, the
        samples of each window of ``chunk_window`` chunks (default 4)
        shuffled together, each rank reading its own chunks, so each chunk
        is fetched about once per epoch (batches then mix fewer classes;
        see docs/loader.md, "Shuffling by chunks").
        ``rank`` / ``world_size``: this process's share, split as PyTorch's
        ``DistributedSampler`` splits it. By default (``None``) they come
        from the launcher: an initialised ``torch.distributed``, else
        ``RANK``/``WORLD_SIZE`` (torchrun, Lightning, accelerate), else the
        ``SLURM_PROCID``/``SLURM_NTASKS`` of a task started by ``srun``,
        else 0 of 1; a value given that contradicts the launcher is kept,
        with a warning that names both. ``loader.rank`` and
        ``loader.world_size`` say what was chosen and from where.
        ``drop_last``: drop the tail that does not divide among the ranks
        and the last incomplete batch; with ``drop_last=False`` the ranks'
        shares are padded with repeated samples, marked in
        ``batch.padding`` (an exact evaluation leaves them out). The
        default, ``True``, is for training; an evaluation that counts every
        sample once (summed over the ranks) is ``ClipLoader(path,
        shuffle=False, crop="center", flip=False, drop_last=False)`` with
        each batch's metrics taken over ``keep = ~batch.padding``.
        ``train``: random placement, crops and flips (default: ``shuffle``).

    Running:
        ``cache_dir``, ``cache_limit``, ``cache_fetch``: the node cache of
        ``s3://`` directories (default: ``GULP_CACHE_DIR``,
        ``GULP_CACHE_LIMIT``, ``GULP_CACHE_FETCH``; ``cache_dir=False``:
        none): what the next batches decode is fetched once per node, ahead
        of them — the byte ranges of their frames, or whole chunks
        (``cache_fetch``: ``"auto"``, ``"ranges"``, ``"chunks"``) — and
        released after its last use. With ``"auto"`` and a cache that holds
        the directory, the chunks read before are made whole behind the
        epochs, by threads of the loader, never waited for; see
        docs/object-storage.md.
        ``threads``: decoding threads (``None``: the cores divided among the
        ranks of this node: ``local_world_size``, by default from the
        launcher as the ranks are: torchrun's ``LOCAL_WORLD_SIZE`` or
        srun's ``SLURM_NTASKS_PER_NODE``, else 1; so 8 ranks on a 64-core
        node decode on 8 threads each).
        ``prefetch``: batches decoded ahead per thread (memory stays at
        ``threads * prefetch`` batches). ``on_error`` (one of {on_error}): ``"raise"`` (a
        ``gulp.DecodeError`` naming the id, frame and byte offset) or
        ``"skip"`` (the clip is left out of its batch and counted in
        ``skipped``).

    Labels: ``meta_data[0][label_key]`` of each item, numbered by the
    directory's ``label2idx.json`` (or by ``labels``, a dict); integer
    labels are used as they are; -1 where an item has none. With several
    sources each numbers its own labels, unless ``shared_labels=True`` (the
    first source's index, then the others' new labels numbered after).

    Data (keyword-only; evaluated once when the loader is made, never per
    batch; see docs/loader.md):
        ``ids``, ``where``, ``weights``: a :class:`Source`'s, for every
        source that does not set its own (``ids`` with one source only).
        ``sampler`` (one of {sampler}): ``"uniform"`` or ``"balanced"`` (each class equally
        often per epoch, ±1; small classes repeated). ``samples_per_epoch``:
        the epoch's size, whatever the data's.
        ``target``: a key (``int64 [B]``), several keys (``int64 [B, K]``),
        a key holding a list of classes with ``num_classes`` (multi-hot
        ``float32 [B, num_classes]``), a key with ``target_type="float"``
        (``target_type``: one of {target_type})
        (``float32 [B]``; several: ``[B, K]``), or a function of the meta
        returning a number or an array (``int64`` or ``float32 [B, ...]``;
        ``None`` when missing). ``on_missing`` (one of {on_missing}): ``"raise"`` (an error naming
        the directory, the item and the key) or ``"skip"`` (the sample is
        left out and counted in ``missing``).
        ``segments``: a meta key (or a :class:`Segments`): its list of
        segments makes one sample per segment, clips drawn inside it;
        keys of a segment's object win over the item's for its target.

    Time, sound and text (docs/loader.md, "Time, sound and text"):
        ``fps``: sample clips in seconds: ``frames`` frames ``1 / fps``
        seconds apart, each the frame on screen then, by the item's frame
        times (stored by ``gulp ingest``; else its meta's ``fps``, or its
        frames over its ``duration``, else ``default_fps``): right across
        a variable frame rate and any stored rate. ``"window"`` draws a
        start in the item (or segment), ``"segments"`` one time in each
        equal span of it. ``batch.times``: ``float64 [B, T]``, the source
        time of each frame given (each frame's own without ``fps``).
        ``audio=True``: ``batch.audio``, ``float32 [B, channels, S]`` at
        ``sample_rate``: the sound of ``[times[:, 0], times[:, 0] + T /
        fps)`` (without ``fps``: to the end of the last frame, ``S`` the
        batch's longest), ``S = round(span * sample_rate)``;
        ``batch.has_audio``: ``bool [B]`` (silence where an item has no
        sound). ``texts``: a meta key: ``batch.texts``, ``list[str]``, the
        segment's value (with ``segments``) else the item's.
    """

    def __init__(self, path: Union[_Path, Source, Sequence[Union[_Path, Source]]],
                 frames: int = 8, sampling: str = "segments", step: int = 1,
                 resize: Optional[int] = 128, size: Union[None, int, Tuple[int, int]] = 112,
                 crop: Optional[str] = "random", flip: bool = True, batch_size: int = 8,
                 shuffle: Union[bool, str] = True, seed: int = 0, drop_last: bool = True,
                 rank: Optional[int] = None, world_size: Optional[int] = None,
                 threads: Optional[int] = None, prefetch: int = 2, *,
                 clips: int = 1, train: Optional[bool] = None,
                 scale: Tuple[float, float] = (0.08, 1.0),
                 ratio: Tuple[float, float] = (3 / 4, 4 / 3), on_error: str = "raise",
                 label_key: str = "label", labels: Optional[Mapping[str, int]] = None,
                 dct: str = "fast", codec: Optional[str] = None, strict: bool = True,
                 local_world_size: Optional[int] = None, ids: Optional[Ids] = None,
                 where: Optional[Where] = None, weights: Optional[Weights] = None,
                 sampler: str = "uniform", samples_per_epoch: Optional[int] = None,
                 target: Union[None, str, Sequence[str], Callable[[Any], Any]] = None,
                 target_type: Optional[str] = None, num_classes: Optional[int] = None,
                 on_missing: str = "raise", segments: Union[None, str, Segments] = None,
                 shared_labels: bool = False, chunk_window: Optional[int] = None,
                 cache_dir: Union[None, bool, _Path] = None,
                 cache_limit: Union[None, int, str] = None,
                 cache_fetch: Optional[str] = None, fps: Optional[float] = None,
                 default_fps: float = 8.0, audio: bool = False, sample_rate: int = 16000,
                 channels: int = 1, texts: Optional[str] = None) -> None:
        sources = _sources(path, ids, where, weights)
        if isinstance(segments, str):
            segments = Segments(segments)
        self.path = sources[0].path
        self.skipped = 0
        self._native = _gulp.Loader(
            sources, frames=frames, sampling=sampling, step=step, clips=clips,
            resize=resize, size=size, crop=crop,
            # tuple(): a list is accepted too.
            scale=cast("Tuple[float, float]", tuple(scale)),
            ratio=cast("Tuple[float, float]", tuple(ratio)),
            flip=bool(flip), batch_size=batch_size, shuffle=shuffle, chunk_window=chunk_window,
            seed=seed, drop_last=bool(drop_last), rank=rank, world_size=world_size,
            local_world_size=local_world_size, torch_ranks=_torch_ranks(), train=train,
            threads=threads, prefetch=prefetch, on_error=on_error, label_key=label_key,
            labels=None if labels is None else [(str(k), int(v)) for k, v in labels.items()],
            dct=dct, codec=codec, strict=strict, sampler=sampler,
            samples_per_epoch=samples_per_epoch, target=target, target_type=target_type,
            num_classes=num_classes, on_missing=on_missing, segments=segments,
            shared_labels=bool(shared_labels), cache_dir=cache_dir, cache_limit=cache_limit,
            cache_fetch=cache_fetch,
            media=(None if fps is None else float(fps), float(default_fps), bool(audio),
                   int(sample_rate), int(channels), texts),
        )
        rank_, world, local, source, local_source = self._native.ranks
        self.rank = Rank(rank_, source)
        self.world_size = Rank(world, source)
        self.local_world_size = Rank(local, local_source)

    def __len__(self) -> int:
        """Batches per epoch of this rank."""
        return len(self._native)

    def __iter__(self) -> Generator[Batch, None, None]:
        """The batches of the current epoch from the current position (the
        start, or where a previous pass stopped or ``load_state_dict`` put
        it). A completed pass moves to the next epoch."""
        it = self._native.iter()
        try:
            for parts in it:
                batch = Batch(*parts)
                self.skipped += len(batch.skipped)
                yield batch
        finally:
            it.close()

    @property
    def epoch(self) -> int:
        """The epoch of the next pass."""
        return self._native.epoch

    @property
    def samples(self) -> int:
        """Clips per epoch of this rank."""
        return self._native.samples

    @property
    def items(self) -> int:
        """Items kept (all sources)."""
        return self._native.items

    @property
    def samples_per_epoch(self) -> int:
        """Samples of an epoch before the split between ranks: the sources'
        shares added up."""
        return self._native.epoch_samples

    @property
    def missing(self) -> int:
        """Samples left out when the loader was made (``on_missing="skip"``)."""
        return self._native.missing

    @property
    def sources(self) -> list[str]:
        """Every source's directory, in the order of ``batch.sources``."""
        return [os.fspath(p) for p in self._native.paths]

    @property
    def threads(self) -> int:
        """Decoding threads."""
        return self._native.threads

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch (its shuffle and random draws). Another epoch
        starts from its first batch; the current one keeps its position, so
        calling it after ``load_state_dict`` resumes where the state was."""
        self._native.set_epoch(int(epoch))

    def state_dict(self) -> dict[str, int]:
        """Where the next pass starts, as a dict to save with a checkpoint."""
        return self._native.state_dict()

    def load_state_dict(self, state: Mapping[str, int]) -> None:
        """Resumes from ``state_dict()``: the next pass yields exactly what
        followed it. On the rank and world size that saved it, the same
        batches; on another rank or world size (a job restarted on more or
        fewer GPUs), this rank's share of the rest of the epoch from the
        global position the state reached, so that over the epoch every
        position is served once (ranks must resume from the same global
        step, as synchronous data-parallel training does). Raises
        ``InvalidInputError`` (a ``ValueError``) for a state of a loader
        with another seed, data, options, sources, subset (``ids``,
        ``where``), weights or targets, naming what differs."""
        self._native.load_state_dict(dict(state))

    def __repr__(self) -> str:
        return (f"ClipLoader({self.path!r}, {self.items} items, {len(self)} batches, "
                f"epoch {self.epoch}, rank {self.rank!r} of {self.world_size!r}, "
                f"{self.threads} threads)")


def _sources(path: Union[_Path, Source, Sequence[Union[_Path, Source]]], ids: Optional[Ids],
             where: Optional[Where], weights: Optional[Weights]) -> list[Source]:
    """The loader's sources, the loader-wide ``ids``, ``where`` and
    ``weights`` given to those that do not set their own."""
    given = ([path] if isinstance(path, (str, os.PathLike, Source)) else list(path))
    if not given:
        raise InvalidInputError("a loader needs at least one directory")
    if ids is not None and len(given) > 1:
        raise InvalidInputError("ids= with several sources: give each gulp.Source its ids")
    defaults = Source(".", ids=ids, where=where, weights=weights)
    sources = []
    for s in given:
        source = copy.copy(s) if isinstance(s, Source) else Source(s)
        for name in ("ids", "where", "weights"):
            if getattr(source, name) is None:
                setattr(source, name, getattr(defaults, name))
        sources.append(source)
    return sources


_FRAMES = {"middle": "uniform", "random": "segments"}


class ImageLoader(ClipLoader):
    """Training batches of images: ``uint8`` arrays ``[B, H, W, 3]`` and
    their labels, decoded on Rust threads with DCT scaling and region
    decoding, as :class:`ClipLoader` decodes clips (it is that loader with
    clips of one frame: the same order, ranks, resume, ``on_error`` and
    determinism).

    Training (the defaults): torchvision's ``RandomResizedCrop`` (``scale``,
    ``ratio``, 10 tries then the centre) to ``size``, and a horizontal flip
    of half the images. Evaluation, the usual 256/224, counting every image
    once: ``ImageLoader(path, resize=256, size=224, crop="center",
    shuffle=False, flip=False, drop_last=False)``, with the metrics of
    each batch taken over ``~batch.padding`` (short edge to 256, then the
    centre 224 × 224). ``size`` is ``S`` or
    ``(H, W)``.

    ``frame``: which frame of an item (for a directory of videos; an image
    has one): ``"middle"``, ``"random"`` (a uniform frame when training,
    the middle otherwise) or an index (the last frame of a shorter item).
    ``batch.indices`` is then ``[B]``: the frame each image came from.
    The other arguments are :class:`ClipLoader`'s, and so are the data
    options given as keywords (sources, ``ids``, ``where``, ``weights``,
    ``sampler``, ``samples_per_epoch``, ``target``, ``segments``, ...).
    """

    def __init__(self, path: Union[_Path, Source, Sequence[Union[_Path, Source]]],
                 size: Union[int, Tuple[int, int]] = 224,
                 resize: Optional[int] = None, crop: Optional[str] = "random_resized",
                 flip: bool = True, batch_size: int = 64, shuffle: Union[bool, str] = True,
                 seed: int = 0,
                 drop_last: bool = True, rank: Optional[int] = None,
                 world_size: Optional[int] = None,
                 threads: Optional[int] = None, prefetch: int = 2, *,
                 frame: Union[str, int] = "middle", train: Optional[bool] = None,
                 scale: Tuple[float, float] = (0.08, 1.0),
                 ratio: Tuple[float, float] = (3 / 4, 4 / 3), on_error: str = "raise",
                 label_key: str = "label", labels: Optional[Mapping[str, int]] = None,
                 dct: str = "fast", codec: Optional[str] = None, strict: bool = True,
                 local_world_size: Optional[int] = None, **data: Any) -> None:
        if isinstance(frame, str):
            if frame not in _FRAMES:
                raise InvalidInputError(
                    f"frame must be 'middle', 'random' or a frame index, not {frame!r}")
            sampling = _FRAMES[frame]
        elif int(frame) < 0:
            raise InvalidInputError(f"frame index must be 0 or more, not {frame}")
        else:
            sampling = f"frame:{int(frame)}"
        super().__init__(
            path, frames=1, sampling=sampling, resize=resize, size=size, crop=crop, flip=flip,
            batch_size=batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last, rank=rank,
            world_size=world_size, threads=threads, prefetch=prefetch, train=train,
            scale=scale, ratio=ratio, on_error=on_error, label_key=label_key, labels=labels,
            dct=dct, codec=codec, strict=strict, local_world_size=local_world_size, **data)

    def __iter__(self) -> Generator[Batch, None, None]:
        """The batches of the current epoch; ``batch.frames`` is ``[B, H, W,
        3]`` (the clip loader's ``[B, 1, H, W, 3]`` without a copy)."""
        for batch in super().__iter__():
            b, _, h, w, c = batch.frames.shape
            batch.frames = batch.frames.reshape(b, h, w, c)
            batch.indices = batch.indices.reshape(b)
            yield batch

    def __repr__(self) -> str:
        return (f"ImageLoader({self.path!r}, {self.items} items, {len(self)} batches, "
                f"epoch {self.epoch}, rank {self.rank!r} of {self.world_size!r}, "
                f"{self.threads} threads)")


def _with_names(doc: Optional[str]) -> Optional[str]:
    """``doc`` with each ``{option}`` replaced by the names of its values,
    from the Rust core's one list of each."""
    if doc is None:
        return None
    for option, names in _gulp.option_names().items():
        doc = doc.replace("{%s}" % option, ", ".join(repr(n) for n in names))
    return doc


ClipLoader.__doc__ = _with_names(ClipLoader.__doc__)
