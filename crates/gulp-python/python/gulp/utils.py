"""gulpio2's ``utils``: JPEG conversion, resizing, video bursting, helpers.

JPEG encoding and decoding use libjpeg-turbo with simplejpeg's settings, so
``img_to_jpeg_bytes`` gives gulpio2's exact bytes; resizing is Pillow's
bilinear (as gulpio2), computed in Rust. Nothing here needs OpenCV, Pillow
or the ``sh`` package.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from contextlib import contextmanager
from glob import glob
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

from . import _ffmpeg, _gulp
from ._serializers import json_serializer as json_serializer
from .errors import GulpError, SelectionTypeError

if TYPE_CHECKING:
    from ._gulp import _Path, _Selection

__all__ = [
    "_JPEG_WRITE_QUALITY",
    "FFMPEGNotFound",
    "ImageNotFound",
    "DuplicateIdException",
    "check_ffmpeg_exists",
    "temp_dir_for_bursting",
    "img_to_jpeg_bytes",
    "jpeg_bytes_to_img",
    "burst_frames_to_shm",
    "burst_video_into_frames",
    "resize_images",
    "resize_by_short_edge",
    "remove_entries_with_duplicate_ids",
    "find_images_in_folder",
    "get_single_video_path",
    "calculate_chunk_slices",
    "extract_input_for_getitem",
    "json_serializer",
]

#: The JPEG quality of frames written by ``GulpChunk.append`` and
#: ``img_to_jpeg_bytes``; read at every call, so setting it takes effect.
_JPEG_WRITE_QUALITY = 90


class FFMPEGNotFound(GulpError):
    """No ffmpeg to run (nor ``GULP_FFMPEG``, ``ffmpeg`` on the PATH or the
    ``[ffmpeg]`` extra's), or one too old."""

    def __init__(self, message: str = "ffmpeg not found") -> None:
        super().__init__(message)


class ImageNotFound(GulpError):
    """An image file could not be read."""


class DuplicateIdException(GulpError):
    """Every entry to add is already in the directory."""


def check_ffmpeg_exists() -> bool:
    """Whether an ffmpeg can be run: the one ``gulp.ingest`` would run
    (``GULP_FFMPEG``, ``ffmpeg`` on the PATH, the ``[ffmpeg]`` extra's)."""
    try:
        _ffmpeg.path()
    except GulpError:
        return False
    return True


@contextmanager
def temp_dir_for_bursting(shm_dir_path: str = "/dev/shm") -> Iterator[str]:
    """A fresh temporary directory under ``shm_dir_path``, removed afterwards
    (also when the block raises)."""
    hash_str = str(random.getrandbits(128))
    temp_dir = os.path.join(shm_dir_path, hash_str)
    os.makedirs(temp_dir)
    try:
        yield temp_dir
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)


def img_to_jpeg_bytes(img: npt.NDArray[np.uint8]) -> bytes:
    """A ``uint8`` array (``H×W×3`` RGB or ``H×W`` gray, C-contiguous) as
    JPEG bytes, at ``_JPEG_WRITE_QUALITY``, 4:4:4: gulpio2's bytes."""
    return _gulp.encode_jpeg(img, quality=_JPEG_WRITE_QUALITY)


def jpeg_bytes_to_img(jpeg_bytes: Union[bytes, bytearray, memoryview]) -> npt.NDArray[np.uint8]:
    """JPEG bytes to a ``uint8`` array: ``H×W×3`` RGB, or ``H×W`` for a gray
    JPEG (fast DCT and upsampling, as gulpio2)."""
    if not isinstance(jpeg_bytes, bytes):
        jpeg_bytes = bytes(jpeg_bytes)
    return _gulp.decode_jpeg(jpeg_bytes)


def burst_frames_to_shm(vid_path: str, temp_burst_dir: str,
                        frame_rate: Optional[float] = None) -> None:
    """Extracts a video's frames as ``%010d.jpg`` files with ffmpeg (``-q:v 1``,
    ``-r frame_rate`` when given), as gulpio2 does. Failures are printed."""
    target_mask = os.path.join(temp_burst_dir, "%010d.jpg")
    try:
        ffmpeg = _ffmpeg.path()
    except GulpError as e:
        raise FFMPEGNotFound(str(e)) from None
    args = [ffmpeg, "-i", vid_path]
    if frame_rate:
        args += ["-r", str(frame_rate)]
    args += ["-q:v", "1", "-f", "image2", target_mask]
    try:
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except Exception as e:  # as gulpio2: report and go on with no frames
        print(repr(e))


def burst_video_into_frames(vid_path: str, temp_burst_dir: str,
                            frame_rate: Optional[float] = None) -> list[str]:
    """The sorted paths of a video's frames, extracted by ``burst_frames_to_shm``."""
    burst_frames_to_shm(vid_path, temp_burst_dir, frame_rate=frame_rate)
    return find_images_in_folder(temp_burst_dir, formats=["jpg"])


def _read_image(path: _Path) -> npt.NDArray[np.uint8]:
    with open(path, "rb") as f:
        data = f.read()
    return _gulp.decode_image(data)


def resize_images(imgs: Iterable[_Path], img_size: int = -1) -> Iterator[npt.NDArray[np.uint8]]:
    """Yields each image file of ``imgs`` as an array, resized to short edge
    ``img_size`` when it is positive."""
    for img in imgs:
        array = _read_image(img)
        if img_size > 0:
            array = resize_by_short_edge(array, img_size)
        yield array


def resize_by_short_edge(img: Any, size: int) -> npt.NDArray[np.uint8]:
    """Resizes so that the short edge is ``size`` (Pillow's bilinear; squares
    by width; sizes truncated), or returns the array as is if ``size < 1``.
    ``img`` is a path, a PIL image or an array."""
    if isinstance(img, (str, os.PathLike)):
        img = _read_image(img)
    array: npt.NDArray[Any] = np.asarray(img)
    if size < 1:
        return array
    if array.dtype != np.uint8:
        array = array.astype(np.uint8)
    return _gulp.resize(np.ascontiguousarray(array), int(size))


def remove_entries_with_duplicate_ids(output_directory: _Path,
                                      meta_dict: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drops entries of ``meta_dict`` (a list of dicts with ``'id'``) whose id
    repeats an earlier entry or is already in ``output_directory``; raises
    ``DuplicateIdException`` if nothing is left."""
    meta_dict = _remove_duplicates_in_metadict(meta_dict)
    existing: set[str] = set()
    if os.path.isdir(output_directory):
        existing = set(_gulp.Directory(output_directory).ids())
    kept = []
    for entry in meta_dict:
        if str(entry["id"]) in existing:
            print("Id {} already in GulpDirectory, I skip it!".format(entry["id"]))
        else:
            kept.append(entry)
    if len(kept) == 0:
        print("no items to add... Abort")
        raise DuplicateIdException
    return kept


def _remove_duplicates_in_metadict(meta_dict: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen = set()
    kept = []
    for entry in meta_dict:
        if entry["id"] in seen:
            print("Id {} more than once in json file, I skip it!".format(entry["id"]))
        else:
            seen.add(entry["id"])
            kept.append(entry)
    return kept


def find_images_in_folder(folder: str, formats: list[str] = ["jpg"]) -> list[str]:
    """The sorted ``folder/*.<fmt>`` files (case-sensitive, not recursive)."""
    images: list[str] = []
    for format_ in formats:
        images.extend(glob(os.path.join(folder, "*." + format_)))
    return sorted(images)


def get_single_video_path(folder_name: str, format_: str = "mp4") -> str:
    """The only ``folder_name/*.<format_>`` file (an ``AssertionError`` if
    there is not exactly one)."""
    video_filenames = glob(os.path.join(folder_name, "*." + format_))
    assert len(video_filenames) == 1
    return video_filenames[0]


def extract_input_for_getitem(
        element: Union[int, str, Tuple[Any, _Selection]]) -> Tuple[str, _Selection]:
    """``id`` or ``(id, slice_or_indices)`` to ``(str(id), slice_or_None)``."""
    if isinstance(element, tuple) and len(element) == 2:
        id_, slice_ = element
    elif isinstance(element, (int, str)):
        id_, slice_ = element, None
    else:
        raise SelectionTypeError("Undefined input type! id or (id, slice) expected")
    id_ = str(id_)
    return id_, slice_


def calculate_chunk_slices(items_per_chunk: int, num_items: int) -> list[slice]:
    """``[slice(i, min(i + k, n)) for i in range(0, n, k)]``; ``k`` and ``n`` > 0."""
    assert items_per_chunk > 0
    assert num_items > 0
    return [
        slice(i, min(i + items_per_chunk, num_items))
        for i in range(0, num_items, items_per_chunk)
    ]
