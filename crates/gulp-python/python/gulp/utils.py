"""gulpio2's ``utils``: JPEG conversion, resizing, video bursting, helpers.

JPEG encoding and decoding use libjpeg-turbo with simplejpeg's settings, so
``img_to_jpeg_bytes`` gives gulpio2's exact bytes; resizing is Pillow's
bilinear (as gulpio2), computed in Rust. Nothing here needs OpenCV, Pillow
or the ``sh`` package.
"""

import os
import random
import shutil
import subprocess
from contextlib import contextmanager
from glob import glob

import numpy as np

from . import _gulp

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


class FFMPEGNotFound(Exception):
    """ffmpeg is not on the PATH."""

    def __init__(self, message="ffmpeg not found"):
        super().__init__(message)


class ImageNotFound(Exception):
    """An image file could not be read."""


class DuplicateIdException(Exception):
    """Every entry to add is already in the directory."""


def check_ffmpeg_exists():
    """Whether ``ffmpeg`` can be run."""
    return shutil.which("ffmpeg") is not None


@contextmanager
def temp_dir_for_bursting(shm_dir_path="/dev/shm"):
    """A fresh temporary directory under ``shm_dir_path``, removed afterwards
    (also when the block raises)."""
    hash_str = str(random.getrandbits(128))
    temp_dir = os.path.join(shm_dir_path, hash_str)
    os.makedirs(temp_dir)
    try:
        yield temp_dir
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)


def img_to_jpeg_bytes(img):
    """A ``uint8`` array (``H×W×3`` RGB or ``H×W`` gray, C-contiguous) as
    JPEG bytes, at ``_JPEG_WRITE_QUALITY``, 4:4:4: gulpio2's bytes."""
    return _gulp.encode_jpeg(img, quality=_JPEG_WRITE_QUALITY)


def jpeg_bytes_to_img(jpeg_bytes):
    """JPEG bytes to a ``uint8`` array: ``H×W×3`` RGB, or ``H×W`` for a gray
    JPEG (fast DCT and upsampling, as gulpio2)."""
    if not isinstance(jpeg_bytes, bytes):
        jpeg_bytes = bytes(jpeg_bytes)
    return _gulp.decode_jpeg(jpeg_bytes)


def burst_frames_to_shm(vid_path, temp_burst_dir, frame_rate=None):
    """Extracts a video's frames as ``%010d.jpg`` files with ffmpeg (``-q:v 1``,
    ``-r frame_rate`` when given), as gulpio2 does. Failures are printed."""
    target_mask = os.path.join(temp_burst_dir, "%010d.jpg")
    if not check_ffmpeg_exists():
        raise FFMPEGNotFound()
    args = ["ffmpeg", "-i", vid_path]
    if frame_rate:
        args += ["-r", str(frame_rate)]
    args += ["-q:v", "1", "-f", "image2", target_mask]
    try:
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except Exception as e:  # as gulpio2: report and go on with no frames
        print(repr(e))


def burst_video_into_frames(vid_path, temp_burst_dir, frame_rate=None):
    """The sorted paths of a video's frames, extracted by ``burst_frames_to_shm``."""
    burst_frames_to_shm(vid_path, temp_burst_dir, frame_rate=frame_rate)
    return find_images_in_folder(temp_burst_dir, formats=["jpg"])


def _read_image(path):
    with open(path, "rb") as f:
        data = f.read()
    return _gulp.decode_image(data)


def resize_images(imgs, img_size=-1):
    """Yields each image file of ``imgs`` as an array, resized to short edge
    ``img_size`` when it is positive."""
    for img in imgs:
        array = _read_image(img)
        if img_size > 0:
            array = resize_by_short_edge(array, img_size)
        yield array


def resize_by_short_edge(img, size):
    """Resizes so that the short edge is ``size`` (Pillow's bilinear; squares
    by width; sizes truncated), or returns the array as is if ``size < 1``.
    ``img`` is a path, a PIL image or an array."""
    if isinstance(img, (str, os.PathLike)):
        img = _read_image(img)
    img = np.asarray(img)
    if size < 1:
        return img
    if img.dtype != np.uint8:
        img = img.astype(np.uint8)
    return _gulp.resize(np.ascontiguousarray(img), int(size))


def remove_entries_with_duplicate_ids(output_directory, meta_dict):
    """Drops entries of ``meta_dict`` (a list of dicts with ``'id'``) whose id
    repeats an earlier entry or is already in ``output_directory``; raises
    ``DuplicateIdException`` if nothing is left."""
    from .fileio import GulpDirectory

    meta_dict = _remove_duplicates_in_metadict(meta_dict)
    existing = set()
    if os.path.isdir(output_directory):
        existing = set(GulpDirectory(output_directory).ids())
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


def _remove_duplicates_in_metadict(meta_dict):
    seen = set()
    kept = []
    for entry in meta_dict:
        if entry["id"] in seen:
            print("Id {} more than once in json file, I skip it!".format(entry["id"]))
        else:
            seen.add(entry["id"])
            kept.append(entry)
    return kept


def find_images_in_folder(folder, formats=["jpg"]):
    """The sorted ``folder/*.<fmt>`` files (case-sensitive, not recursive)."""
    images = []
    for format_ in formats:
        images.extend(glob(os.path.join(folder, "*." + format_)))
    return sorted(images)


def get_single_video_path(folder_name, format_="mp4"):
    """The only ``folder_name/*.<format_>`` file (an ``AssertionError`` if
    there is not exactly one)."""
    video_filenames = glob(os.path.join(folder_name, "*." + format_))
    assert len(video_filenames) == 1
    return video_filenames[0]


def __getattr__(name):
    # fileio's helpers, also reachable from utils (imported lazily: fileio
    # imports this module).
    if name in ("calculate_chunk_slices", "extract_input_for_getitem", "json_serializer"):
        from . import fileio

        return getattr(fileio, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
