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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Tuple, Union, cast

import numpy as np
import numpy.typing as npt

from . import _gulp
from .errors import InvalidInputError

if TYPE_CHECKING:
    from ._gulp import _Path

__all__ = ["ClipLoader", "ImageLoader", "Batch"]

_CROPS = ("random", "center", "centre", "random_resized", "three", "none")


class Batch:
    """One batch of clips.

    Attributes:
        frames: ``uint8`` array ``[B, T, H, W, 3]`` (C-contiguous; supports
            ``__dlpack__`` and the buffer protocol).
        labels: ``int64`` array ``[B]``: class indices (-1 for an item
            without a label).
        ids: the item id of each clip.
        indices: ``int64`` array ``[B, T]``: the frame indices of each clip.
        views: ``int64`` array ``[B]``: ``clip * crops + crop`` of each clip
            (several clips per item or ``crop="three"``), else 0.
        skipped: ``(id, reason)`` of clips left out (``on_error="skip"``).
        index: the batch's number in the epoch.
        epoch: the epoch.
        positions: ``int64`` array ``[B]``: the position of each clip's item
            in the epoch's global order (before the split between ranks);
            over all ranks, each position of an epoch is served once.

    ``x, y = batch`` unpacks to ``(frames, labels)``.
    """

    __slots__ = ("frames", "labels", "ids", "indices", "views", "skipped", "index", "epoch",
                 "positions")

    frames: npt.NDArray[np.uint8]
    labels: npt.NDArray[np.int64]
    ids: list[str]
    indices: npt.NDArray[np.int64]
    views: npt.NDArray[np.int64]
    skipped: list[tuple[str, str]]
    index: int
    epoch: int
    positions: npt.NDArray[np.int64]

    def __init__(self, frames: npt.NDArray[np.uint8], labels: npt.NDArray[np.int64],
                 ids: list[str], indices: npt.NDArray[np.int64], views: npt.NDArray[np.int64],
                 skipped: list[tuple[str, str]], index: int, epoch: int,
                 positions: npt.NDArray[np.int64]) -> None:
        self.frames = frames
        self.labels = labels
        self.ids = ids
        self.indices = indices
        self.views = views
        self.skipped = skipped
        self.index = index
        self.epoch = epoch
        self.positions = positions

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[npt.NDArray[Any]]:
        return iter((self.frames, self.labels))

    def __repr__(self) -> str:
        shape = "x".join(str(s) for s in self.frames.shape)
        return f"Batch(epoch={self.epoch}, index={self.index}, frames={shape}, ids={len(self.ids)})"


def _size(size: Union[None, int, Tuple[int, int]]) -> Optional[Tuple[int, int]]:
    if size is None:
        return None
    if isinstance(size, int):
        return (size, size)
    h, w = size
    return (int(h), int(w))


class ClipLoader:
    """Batches of clips from the gulp directory ``path``.

    Sampling (the frames of a clip, from an item of ``n`` frames):
        ``frames``: frames per clip (``T``; 1 for images).
        ``sampling``: ``"window"`` (GulpIO's: ``frames`` frames ``step`` apart
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
        ``crop``: ``"random"``, ``"center"``, ``"random_resized"``
        (torchvision's, with ``scale`` and ``ratio``), ``"three"`` (three
        crops along the long side: three samples per clip) or ``"none"`` (the
        whole frame, resampled to ``size`` if given). ``flip``: mirror half
        of the clips (training only).

    Order:
        ``shuffle`` and ``seed``: a new permutation per epoch, fixed by
        ``(seed, epoch)``; every random draw is fixed by the seed, the epoch
        and the clip's place, so the thread count changes nothing.
        ``rank`` / ``world_size``: this process's share, split as PyTorch's
        ``DistributedSampler`` splits it. ``drop_last``: drop the tail that
        does not divide among the ranks and the last incomplete batch.
        ``train``: random placement, crops and flips (default: ``shuffle``).

    Running:
        ``threads``: decoding threads (``None``: the cores divided among the
        ranks of this node: ``local_world_size``, else torchrun's
        ``LOCAL_WORLD_SIZE`` or srun's ``SLURM_NTASKS_PER_NODE``, else 1; so
        8 ranks on a 64-core node decode on 8 threads each).
        ``prefetch``: batches decoded ahead per thread (memory stays at
        ``threads * prefetch`` batches). ``on_error``: ``"raise"`` (a
        ``gulp.DecodeError`` naming the id, frame and byte offset) or
        ``"skip"`` (the clip is left out of its batch and counted in
        ``skipped``).

    Labels: ``meta_data[0][label_key]`` of each item, numbered by the
    directory's ``label2idx.json`` (or by ``labels``, a dict); integer
    labels are used as they are; -1 where an item has none.
    """

    def __init__(self, path: _Path, frames: int = 8, sampling: str = "segments", step: int = 1,
                 resize: Optional[int] = 128, size: Union[None, int, Tuple[int, int]] = 112,
                 crop: Optional[str] = "random", flip: bool = True, batch_size: int = 8,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = True, rank: int = 0,
                 world_size: int = 1, threads: Optional[int] = None, prefetch: int = 2, *,
                 clips: int = 1, train: Optional[bool] = None,
                 scale: Tuple[float, float] = (0.08, 1.0),
                 ratio: Tuple[float, float] = (3 / 4, 4 / 3), on_error: str = "raise",
                 label_key: str = "label", labels: Optional[Mapping[str, int]] = None,
                 dct: str = "fast", codec: Optional[str] = None, strict: bool = True,
                 local_world_size: Optional[int] = None) -> None:
        if crop is None:
            crop = "none"
        if crop not in _CROPS:
            raise InvalidInputError(
                f"crop must be one of {', '.join(map(repr, _CROPS))}, not {crop!r}")
        if threads is not None and threads < 1:
            raise InvalidInputError(
                f"threads must be at least 1 (or None for the node's cores per rank), not {threads}")
        if local_world_size is not None and local_world_size < 1:
            raise InvalidInputError(f"local_world_size must be at least 1, not {local_world_size}")
        self.path = str(path)
        self.skipped = 0
        self._native = _gulp.Loader(
            self.path, frames=frames, sampling=sampling, step=step, clips=clips,
            resize=resize, size=_size(size), crop=crop,
            # tuple(): a list is accepted too.
            scale=cast("Tuple[float, float]", tuple(scale)),
            ratio=cast("Tuple[float, float]", tuple(ratio)),
            flip=bool(flip), batch_size=batch_size, shuffle=bool(shuffle), seed=seed,
            drop_last=bool(drop_last), rank=rank, world_size=world_size,
            train=bool(shuffle) if train is None else bool(train),
            threads=0 if threads is None else threads, prefetch=prefetch,
            on_error=on_error, label_key=label_key,
            label_index=None if labels is None else [(str(k), int(v)) for k, v in labels.items()],
            dct=dct, codec=codec, strict=strict,
            local_world_size=0 if local_world_size is None else local_world_size,
        )

    def __len__(self) -> int:
        """Batches per epoch of this rank."""
        return len(self._native)

    def __iter__(self) -> Iterator[Batch]:
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
        """Items in the directory."""
        return self._native.items

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
        with another seed, data or options, naming what differs."""
        self._native.load_state_dict(dict(state))

    def __repr__(self) -> str:
        return (f"ClipLoader({self.path!r}, {self.items} items, {len(self)} batches, "
                f"epoch {self.epoch}, {self.threads} threads)")


_FRAMES = {"middle": "uniform", "random": "segments"}


class ImageLoader(ClipLoader):
    """Training batches of images: ``uint8`` arrays ``[B, H, W, 3]`` and
    their labels, decoded on Rust threads with DCT scaling and region
    decoding, as :class:`ClipLoader` decodes clips (it is that loader with
    clips of one frame: the same order, ranks, resume, ``on_error`` and
    determinism).

    Training (the defaults): torchvision's ``RandomResizedCrop`` (``scale``,
    ``ratio``, 10 tries then the centre) to ``size``, and a horizontal flip
    of half the images. Evaluation, the usual 256/224: ``ImageLoader(path,
    resize=256, size=224, crop="center", shuffle=False, flip=False)``
    (short edge to 256, then the centre 224 × 224). ``size`` is ``S`` or
    ``(H, W)``.

    ``frame``: which frame of an item (for a directory of videos; an image
    has one): ``"middle"``, ``"random"`` (a uniform frame when training,
    the middle otherwise) or an index (the last frame of a shorter item).
    ``batch.indices`` is then ``[B]``: the frame each image came from.
    The other arguments are :class:`ClipLoader`'s.
    """

    def __init__(self, path: _Path, size: Union[int, Tuple[int, int]] = 224,
                 resize: Optional[int] = None, crop: Optional[str] = "random_resized",
                 flip: bool = True, batch_size: int = 64, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = True, rank: int = 0, world_size: int = 1,
                 threads: Optional[int] = None, prefetch: int = 2, *,
                 frame: Union[str, int] = "middle", train: Optional[bool] = None,
                 scale: Tuple[float, float] = (0.08, 1.0),
                 ratio: Tuple[float, float] = (3 / 4, 4 / 3), on_error: str = "raise",
                 label_key: str = "label", labels: Optional[Mapping[str, int]] = None,
                 dct: str = "fast", codec: Optional[str] = None, strict: bool = True,
                 local_world_size: Optional[int] = None) -> None:
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
            dct=dct, codec=codec, strict=strict, local_world_size=local_world_size)

    def __iter__(self) -> Iterator[Batch]:
        """The batches of the current epoch; ``batch.frames`` is ``[B, H, W,
        3]`` (the clip loader's ``[B, 1, H, W, 3]`` without a copy)."""
        for batch in super().__iter__():
            b, _, h, w, c = batch.frames.shape
            batch.frames = batch.frames.reshape(b, h, w, c)
            batch.indices = batch.indices.reshape(b)
            yield batch

    def __repr__(self) -> str:
        return (f"ImageLoader({self.path!r}, {self.items} items, {len(self)} batches, "
                f"epoch {self.epoch}, {self.threads} threads)")
