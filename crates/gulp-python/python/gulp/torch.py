"""PyTorch face of :class:`gulp.ClipLoader`: batches as tensors.

Importable only where ``torch`` is installed (gulp itself does not depend on
it)::

    import gulp.torch
    data = gulp.torch.ClipDataset("/data/ssv2-gulp", frames=8, resize=128, size=112,
                                  batch_size=8, seed=0)
    for epoch in range(epochs):
        data.set_epoch(epoch)
        for frames, labels in data:     # uint8 [B, T, H, W, 3], int64 [B]
            x = frames.cuda(non_blocking=True).permute(0, 4, 1, 2, 3).float() / 255

The tensors share memory with the loader's numpy arrays (``torch.from_dlpack``;
no copy). The loader decodes on threads of its own: give ``ClipDataset`` to
``torch.utils.data.DataLoader`` only with ``batch_size=None`` and
``num_workers=0`` (worker processes would each run the whole epoch), or
iterate over it directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping, Tuple

import torch as _torch
import torch.utils.data as _data

from .clips import Batch, ClipLoader, ImageLoader
from .errors import GulpRuntimeError

if TYPE_CHECKING:
    from ._gulp import _Path

#: ``(frames, labels)``: ``uint8 [B, T, H, W, 3]`` and the batch's targets
#: (``int64 [B]`` labels by default; see ``ClipLoader``'s ``target=``).
_Tensors = Tuple[_torch.Tensor, _torch.Tensor]

__all__ = ["ClipDataset", "ImageDataset", "to_tensors", "tensors"]


def to_tensors(batch: Batch, pin_memory: bool = False) -> _Tensors:
    """``(frames, labels)`` of a :class:`gulp.Batch` as tensors, without a
    copy (``pin_memory=True`` copies into page-locked memory for
    asynchronous transfers to a GPU)."""
    frames = _torch.from_dlpack(batch.frames)
    labels = _torch.from_numpy(batch.labels)
    if pin_memory:
        frames, labels = frames.pin_memory(), labels.pin_memory()
    return frames, labels


def tensors(loader: ClipLoader, pin_memory: bool = False) -> Iterator[_Tensors]:
    """Iterates over a :class:`gulp.ClipLoader` yielding ``(frames, labels)``
    tensors."""
    for batch in loader:
        yield to_tensors(batch, pin_memory)


class ClipDataset(_data.IterableDataset[_Tensors]):
    """A :class:`gulp.ClipLoader` as a PyTorch ``IterableDataset`` of
    ``(frames, labels)`` batches; the arguments are ``ClipLoader``'s, plus
    ``pin_memory``. ``len()`` is the number of batches of an epoch;
    ``set_epoch``, ``state_dict`` and ``load_state_dict`` are the
    loader's."""

    def __init__(self, path: _Path, pin_memory: bool = False, **options: Any) -> None:
        super().__init__()
        self.loader = ClipLoader(path, **options)
        self.pin_memory = pin_memory

    def __iter__(self) -> Iterator[_Tensors]:
        info = _data.get_worker_info()
        if info is not None and info.num_workers > 1:
            raise GulpRuntimeError(
                "gulp.torch.ClipDataset decodes on threads of its own: use it with "
                "DataLoader(num_workers=0, batch_size=None), or iterate over it directly")
        return tensors(self.loader, self.pin_memory)

    def __len__(self) -> int:
        return len(self.loader)

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch (shuffle and random draws) of the next pass."""
        self.loader.set_epoch(epoch)

    def state_dict(self) -> dict[str, int]:
        """The loader's position, to save with a checkpoint."""
        return self.loader.state_dict()

    def load_state_dict(self, state: Mapping[str, int]) -> None:
        """Resumes the loader from ``state_dict()``."""
        self.loader.load_state_dict(state)


class ImageDataset(ClipDataset):
    """A :class:`gulp.ImageLoader` as a PyTorch ``IterableDataset`` of
    ``(images, labels)`` batches, ``uint8 [B, H, W, 3]`` and ``int64 [B]``;
    the arguments are ``ImageLoader``'s, plus ``pin_memory``."""

    def __init__(self, path: _Path, pin_memory: bool = False, **options: Any) -> None:
        _data.IterableDataset.__init__(self)
        self.loader = ImageLoader(path, **options)
        self.pin_memory = pin_memory
