"""GulpIO v1's ``gulpio.dataset``: video and image datasets over a gulp directory.

``GulpVideoDataset`` and ``GulpImageDataset`` take GulpIO v1's arguments and
return what v1 returns, ``(frames, label index)``, so a v1 training script
runs after ``s/gulpio/gulp/``; they work with ``gulp.loader.DataLoader`` and
with PyTorch's ``DataLoader``. The directory needs a ``label2idx.json``
mapping each item's ``meta['label']`` to its index.

What differs from v1, where v1 was wrong:

* a video shorter than the window repeats its last sampled frame until the
  clip has exactly ``num_frames`` frames, whatever the ``step_size`` (v1
  returned too many frames when ``step_size > 1``);
* the window spans ``(num_frames - 1) * step_size + 1`` frames and its
  random start is drawn among all the starts that fit, the last one
  included (v1 required ``step_size - 1`` frames more than it reads and
  never drew the last ``step_size`` starts);
* a dataset pickles, and small (the directory reopens by its path, items
  are held as a numpy array of ids; v1's ``classes`` were dict keys, which
  do not pickle), so DataLoader workers started by ``spawn`` or
  ``forkserver`` work, and forked workers do not copy per-item Python
  objects as they touch them;
* the padded frames are copies, so in-place transforms change one frame;
* ``GulpImageDataset`` applies its ``target_transform`` (v1 ignored it);
* nothing is printed, and errors name the directory, the item and the label.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Tuple

import numpy as np
import numpy.typing as npt

from . import _gulp
from .errors import GulpFileNotFoundError, InvalidInputError, UnknownLabelError
from .fileio import GulpDirectory

if TYPE_CHECKING:
    from ._gulp import _Path

#: v1's item: ``(id, {'frame_info': ..., 'meta_data': ...})``.
_Item = Tuple[str, dict[str, list[Any]]]

__all__ = ["GulpIOEmptyFolder", "GulpVideoDataset", "GulpImageDataset"]


class GulpIOEmptyFolder(GulpFileNotFoundError):  # noqa: N818 (v1's name)
    """The directory has no chunks (no ``data_N.gulp`` file)."""


class _GulpDataset:
    """What both datasets share: the directory, its ids and ``label2idx``."""

    def __init__(self, data_path: _Path) -> None:
        self.data_path = data_path
        self.gd = GulpDirectory(data_path)
        self.num_chunks = self.gd.num_chunks
        if self.num_chunks == 0:
            raise GulpIOEmptyFolder(f"found no chunks (data_N.gulp files) in {data_path}")
        # The one reader of label2idx.json (gulp_io::LabelIndex), local or s3://.
        labels = _gulp.read_labels(data_path)
        if labels is None:
            raise GulpFileNotFoundError(
                f"{os.path.join(data_path, 'label2idx.json')}: no such file (GulpIO v1's datasets "
                "need the label index an ingest writes)"
            )
        self.label2idx: dict[str, Any] = dict(labels)
        self.classes = list(self.label2idx)
        self._ids: npt.NDArray[np.str_] = np.array(self.gd.ids(), dtype=str)
        self._items: Optional[list[_Item]] = None

    @property
    def items(self) -> list[_Item]:
        """v1's ``[(id, {'frame_info': ..., 'meta_data': ...}), ...]``, in
        directory order. Assigning a list of such pairs (a subset, a new
        order) changes the items the dataset serves."""
        if self._items is None:
            meta = self.gd.merged_meta_dict
            self._items = [(str(id_), meta[str(id_)]) for id_ in self._ids]
        return self._items

    @items.setter
    def items(self, items: Iterable[_Item]) -> None:
        items = list(items)
        self._ids = np.array([str(id_) for id_, _ in items], dtype=str)
        self._items = items

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_items"] = None
        return state

    def __len__(self) -> int:
        """The number of items."""
        return len(self._ids)

    def _id(self, index: int) -> str:
        return str(self._ids[index])

    def _label_index(self, item_id: str, meta: Any) -> Any:
        try:
            label = meta["label"]
        except (KeyError, TypeError):
            raise InvalidInputError(
                f"item {item_id!r} of {self.data_path} has no 'label' in its meta"
            ) from None
        for key in (label, str(label)):
            try:
                return self.label2idx[key]
            except (KeyError, TypeError):
                pass
        raise UnknownLabelError(
            f"label {label!r} of item {item_id!r} is not in "
            f"{os.path.join(self.data_path, 'label2idx.json')}"
        )


class GulpVideoDataset(_GulpDataset):
    r"""Clips of a gulp directory's videos, with their label indices.

    ``dataset[i]`` is ``(frames, label)``: ``num_frames`` frames ``step_size``
    apart (``np.stack``-ed to ``num_frames × H × W × 3`` ``uint8`` if
    ``stack``), and ``label2idx[meta['label']]``.

    Args:
        data_path (str): the gulp directory (with ``label2idx.json``).
        num_frames (int): frames per clip; -1 takes every frame (``step_size``
            apart) and pads nothing.
        step_size (int): the distance between the clip's frames (1: consecutive).
        is_val (bool): validation: clips start at the first frame. In training
            (``False``) they start at a random frame where the item is long
            enough.
        transform (callable): applied to the list of frames, e.g. a
            ``gulp.transforms.ComposeVideo``. Default: none.
        target_transform (callable): applied to the label index. Default: none.
        stack (bool): stack the frames into one array. Default: True.
        random_offset (bool): draw the start of training clips at random
            (``False``: always the first frame). Default: True.

    Items shorter than a clip repeat their last sampled frame up to
    ``num_frames``. Random starts use numpy's global random state.
    """

    def __init__(self, data_path: _Path, num_frames: int, step_size: int, is_val: bool,
                 transform: Optional[Callable[[list[npt.NDArray[np.uint8]]], Any]] = None,
                 target_transform: Optional[Callable[[Any], Any]] = None, stack: bool = True,
                 random_offset: bool = True) -> None:
        if int(num_frames) == 0 or int(num_frames) < -1:
            raise InvalidInputError(
                f"num_frames is positive or -1 (every frame), not {num_frames}")
        if int(step_size) < 1:
            raise InvalidInputError(f"step_size is 1 or more, not {step_size}")
        super().__init__(data_path)
        self.transform_video = transform
        self.target_transform = target_transform
        self.num_frames = int(num_frames)
        self.step_size = int(step_size)
        self.is_val = is_val
        self.stack = stack
        self.random_offset = random_offset

    def _window(self, item_id: str, length: int) -> tuple[slice, int]:
        """The frames to read (a slice) and how many to add by padding:
        gulp-loader's ``V1Window``, from a start drawn with numpy as v1 does."""
        frames = self.num_frames if self.num_frames > 0 else None
        offset = 0
        if self.random_offset and not self.is_val:
            starts = _gulp.window_starts(frames, self.step_size, length)
            if starts > 1:
                offset = int(np.random.randint(0, starts))
        try:
            return _gulp.window(frames, self.step_size, length, offset)
        except InvalidInputError as e:
            raise InvalidInputError(f"item {item_id!r} of {self.data_path}: {e}") from None

    def __getitem__(self, index: int) -> Tuple[Any, Any]:
        """``(frames, label index)`` of item ``index``."""
        item_id = self._id(index)
        window, missing = self._window(item_id, self.gd.frame_count(item_id))
        frames: Any
        frames, meta = self.gd[item_id, window]
        if missing > 0:
            last = frames[-1]
            frames.extend(last.copy() for _ in range(missing))
        target = self._label_index(item_id, meta)
        if self.transform_video is not None:
            frames = self.transform_video(frames)
        if self.target_transform is not None:
            target = self.target_transform(target)
        if self.stack:
            frames = np.stack(frames)
        return frames, target

    def __repr__(self) -> str:
        return (
            f"GulpVideoDataset({self.data_path!r}: {len(self)} items, num_frames="
            f"{self.num_frames}, step_size={self.step_size}, is_val={self.is_val})"
        )


class GulpImageDataset(_GulpDataset):
    r"""The images of a gulp directory (one frame per item), with their label indices.

    ``dataset[i]`` is ``(image, label)``: an ``H × W × 3`` ``uint8`` array
    (``H × W`` for gray) and ``label2idx[meta['label']]``.

    Args:
        data_path (str): the gulp directory (with ``label2idx.json``).
        is_val (bool): kept for v1's signature (images are read the same way).
        transform (callable): applied to the image, e.g. a
            ``gulp.transforms.Compose``. Default: none.
        target_transform (callable): applied to the label index. Default: none.
    """

    def __init__(self, data_path: _Path, is_val: bool = False,
                 transform: Optional[Callable[[npt.NDArray[np.uint8]], Any]] = None,
                 target_transform: Optional[Callable[[Any], Any]] = None) -> None:
        super().__init__(data_path)
        self.transform = transform
        self.target_transform = target_transform
        self.is_val = is_val

    def __getitem__(self, index: int) -> Tuple[Any, Any]:
        """``(image, label index)`` of item ``index``."""
        item_id = self._id(index)
        count = self.gd.frame_count(item_id)
        if count != 1:
            raise InvalidInputError(
                f"item {item_id!r} of {self.data_path} has {count} frames; "
                "GulpImageDataset reads items of one frame"
            )
        frames, meta = self.gd[item_id]
        img = frames[0]
        target = self._label_index(item_id, meta)
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __repr__(self) -> str:
        return f"GulpImageDataset({self.data_path!r}: {len(self)} items)"
