"""GulpIO v1's ``gulpio.transforms``: augmentations of numpy frames.

The classes, arguments and random draws are GulpIO v1's, so a v1 training
script runs after ``s/gulpio/gulp/``. Images are ``H×W×C`` or ``H×W`` numpy
arrays; a video is a list of them (an ``N×H×W×C`` array works too). Random
choices come from Python's ``random`` module, as in v1, so ``random.seed``
makes them reproducible.

Only numpy is needed: there is no OpenCV or Pillow dependency. ``Scale``
and ``CenterCrop`` resize in Rust (gulp-loader's ``resample``, the GIL
released) by Pillow 13's algorithm: a ``uint8`` frame of any number of
channels gets Pillow's pixels exactly, each channel resampled as an ``L``
image (Pillow premultiplies the alpha of ``LA`` and ``RGBA`` images first;
an array of channels has no alpha). Other dtypes are resampled in
``float64`` with the same weights and converted back (integers rounded and
clipped, booleans thresholded at 0.5); nearest neighbour takes Pillow's
positions in any dtype. The ``INTER_*`` and ``BORDER_*`` constants have
OpenCV's values, so arguments written as ``cv2.INTER_AREA`` or
``cv2.BORDER_REFLECT`` keep their meaning.

What differs from v1, where v1 was wrong:

* ``CenterCrop`` of an image smaller than the crop scales it up first (v1
  mixed up width and height there and crashed on numpy arrays);
* ``Scale`` uses its ``interpolation`` (v1 ignored it);
* ``RandomCrop``, ``RandomCropVideo``, ``JitterCrop`` and ``JitterCropVideo``
  pad first and then draw the crop's position in the padded image (v1 drew
  it in the unpadded one, so the right and bottom padding was never used);
  ``padding`` may be an int or a ``(left, top, right, bottom)`` sequence, as
  v1 documented;
* a crop larger than the image raises a ``ValueError`` that says so;
* transforms return new lists and never modify the list they are given.
"""

from __future__ import annotations

import numbers
import random
from collections.abc import Iterable
from typing import Any, Callable, Literal, Optional, Sequence, SupportsInt, TypeVar, Union, cast

import numpy as np
import numpy.typing as npt

from . import _gulp
from .errors import GulpTypeError, InvalidInputError

__all__ = [
    "Compose",
    "ComposeVideo",
    "RandHorFlipVideo",
    "RandVerFlipVideo",
    "Normalize",
    "UnitNorm",
    "CenterCrop",
    "RandomCrop",
    "RandomCropVideo",
    "JitterCrop",
    "JitterCropVideo",
    "Scale",
    "INTER_NEAREST",
    "INTER_LINEAR",
    "INTER_CUBIC",
    "INTER_AREA",
    "INTER_LANCZOS4",
    "BORDER_CONSTANT",
    "BORDER_REPLICATE",
    "BORDER_REFLECT",
    "BORDER_WRAP",
    "BORDER_REFLECT_101",
]

#: Nearest neighbour (OpenCV's value of ``cv2.INTER_NEAREST``).
INTER_NEAREST = 0
#: Bilinear (``cv2.INTER_LINEAR``); antialiased when shrinking.
INTER_LINEAR = 1
#: Bicubic (``cv2.INTER_CUBIC``); antialiased when shrinking.
INTER_CUBIC = 2
#: Pixel area averaging (``cv2.INTER_AREA``): a box filter.
INTER_AREA = 3
#: Lanczos (``cv2.INTER_LANCZOS4``), here with Pillow's 3-lobe kernel.
INTER_LANCZOS4 = 4

#: Pad with zeros (``cv2.BORDER_CONSTANT``).
BORDER_CONSTANT = 0
#: Repeat the edge pixel, ``aaa|abc|ccc`` (``cv2.BORDER_REPLICATE``).
BORDER_REPLICATE = 1
#: Mirror including the edge, ``cba|abc|cba`` (``cv2.BORDER_REFLECT``).
BORDER_REFLECT = 2
#: Wrap around, ``abc|abc|abc`` (``cv2.BORDER_WRAP``).
BORDER_WRAP = 3
#: Mirror without the edge, ``dcb|abcd|cba`` (``cv2.BORDER_REFLECT_101``).
BORDER_REFLECT_101 = 4

_Array = npt.NDArray[Any]
#: A video: a list of frames, or an ``N×H×W×C`` array.
_Frames = TypeVar("_Frames", list[npt.NDArray[Any]], npt.NDArray[Any])
#: An int for a square, or a pair.
_Size = Union[int, Sequence[int]]
#: An int for every border, or ``(left, top, right, bottom)`` (or a pair).
_Padding = Union[int, Sequence[int]]
#: An ``INTER_*`` constant or a name ('bilinear', ...).
_Interpolation = Union[int, str]
#: A ``numpy.pad`` mode.
_PadMode = Literal["constant", "edge", "linear_ramp", "maximum", "mean", "median", "minimum",
                   "reflect", "symmetric", "wrap", "empty"]
#: A ``BORDER_*`` constant or a ``numpy.pad`` mode.
_PadMethod = Union[int, _PadMode]
_Transform = Callable[[Any], Any]

_PAD_MODES: dict[int, _PadMode] = {
    BORDER_CONSTANT: "constant",
    BORDER_REPLICATE: "edge",
    BORDER_REFLECT: "symmetric",
    BORDER_WRAP: "wrap",
    BORDER_REFLECT_101: "reflect",
}


# Resizing -----------------------------------------------------------------

# interpolation -> the filter of gulp-loader's resample (Pillow's)
_FILTERS = {
    INTER_LINEAR: "bilinear",
    INTER_CUBIC: "bicubic",
    INTER_AREA: "box",
    INTER_LANCZOS4: "lanczos",
}
_INTERPOLATION_NAMES = {
    "nearest": INTER_NEAREST,
    "linear": INTER_LINEAR,
    "bilinear": INTER_LINEAR,
    "cubic": INTER_CUBIC,
    "bicubic": INTER_CUBIC,
    "area": INTER_AREA,
    "box": INTER_AREA,
    "lanczos": INTER_LANCZOS4,
}


def _interpolation(value: _Interpolation) -> int:
    if isinstance(value, str):
        key = value.lower()
        if key in _INTERPOLATION_NAMES:
            return _INTERPOLATION_NAMES[key]
    elif isinstance(value, numbers.Integral) and (value == INTER_NEAREST or value in _FILTERS):
        return int(value)
    raise InvalidInputError(
        f"unknown interpolation {value!r}: use INTER_NEAREST, INTER_LINEAR, INTER_CUBIC, "
        f"INTER_AREA, INTER_LANCZOS4 or one of {sorted(_INTERPOLATION_NAMES)}"
    )


def _resize(img: _Array, width: int, height: int, interpolation: int = INTER_LINEAR) -> _Array:
    """``img`` resized to ``width × height`` (same dtype and channels)."""
    img = np.asarray(img)
    width, height = int(width), int(height)
    if width < 1 or height < 1:
        raise InvalidInputError(f"cannot resize to {width}x{height}")
    if img.ndim not in (2, 3) or img.shape[0] < 1 or img.shape[1] < 1:
        raise InvalidInputError(f"expected an HxW or HxWxC image, got shape {img.shape}")
    if img.shape[:2] == (height, width):
        same: _Array = img.copy()
        return same
    if interpolation == INTER_NEAREST:
        # Pillow's positions; picking pixels keeps any dtype exactly.
        rows = _gulp.nearest_indices(img.shape[0], height)
        cols = _gulp.nearest_indices(img.shape[1], width)
        picked: _Array = img[rows][:, cols]
        return picked
    name = _FILTERS[interpolation]
    if img.dtype == np.uint8:
        return _gulp.resample(img, height, width, name)
    out = _gulp.resample(img.astype(np.float64), height, width, name)
    if np.issubdtype(img.dtype, np.integer):
        info = np.iinfo(img.dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(img.dtype)
    if img.dtype == np.bool_:
        return out >= 0.5
    return out.astype(img.dtype, copy=False)


# Helpers --------------------------------------------------------------------

# (mypy does not know int as a numbers.Number, hence the casts)

def _pair(size: _Size) -> tuple[int, int]:
    """An int ``n`` -> ``(n, n)``; a pair -> ``(int, int)``."""
    if isinstance(size, numbers.Number):
        return int(cast(SupportsInt, size)), int(cast(SupportsInt, size))
    first, second = cast(Sequence[int], size)
    return int(first), int(second)


def _padding(padding: _Padding) -> tuple[int, int, int, int]:
    """``(left, top, right, bottom)`` of an int or a sequence of 2 or 4."""
    if isinstance(padding, numbers.Number):
        p = int(cast(SupportsInt, padding))
        return p, p, p, p
    padding = [int(p) for p in cast(Sequence[int], padding)]
    if len(padding) == 2:
        return padding[0], padding[1], padding[0], padding[1]
    if len(padding) == 4:
        return padding[0], padding[1], padding[2], padding[3]
    raise InvalidInputError(f"padding is an int or a sequence of 2 or 4 ints, not {padding!r}")


def _pad_mode(pad_method: _PadMethod) -> _PadMode:
    if isinstance(pad_method, str):
        return pad_method
    try:
        return _PAD_MODES[pad_method]
    except (KeyError, TypeError):
        raise InvalidInputError(
            f"unknown pad_method {pad_method!r}: use a BORDER_* constant or a numpy.pad mode"
        ) from None


def _pad(img: _Array, padding: tuple[int, int, int, int], mode: _PadMode) -> _Array:
    left, top, right, bottom = padding
    if not (left or top or right or bottom):
        return img
    width = [(top, bottom), (left, right)] + [(0, 0)] * (img.ndim - 2)
    if mode == "constant":
        return np.pad(img, width, mode="constant", constant_values=0)
    return np.pad(img, width, mode=mode)


def _padded_shape(shape: tuple[int, ...],
                  padding: tuple[int, int, int, int]) -> tuple[int, int]:
    left, top, right, bottom = padding
    return shape[0] + top + bottom, shape[1] + left + right


def _crop_origin(h: int, w: int, th: int, tw: int, what: str) -> tuple[int, int]:
    """v1's draw of a crop position: ``x`` first, then ``y``."""
    if th > h or tw > w:
        raise InvalidInputError(f"{what}: a {th}x{tw} crop does not fit in a {h}x{w} image")
    x1 = random.randint(0, w - tw)
    y1 = random.randint(0, h - th)
    return y1, x1


def _frames(imgs: _Frames, function: Callable[[_Array], _Array]) -> _Frames:
    """``function`` on every frame: a list for a sequence, an array for an array."""
    if isinstance(imgs, np.ndarray):
        return np.stack([function(img) for img in imgs]) if len(imgs) else imgs.copy()
    return [function(img) for img in imgs]


# Composition ---------------------------------------------------------------

class Compose:
    r"""Composes image transforms: ``Compose([t1, t2])(img)`` is ``t2(t1(img))``.

    Args:
        transforms (list): the transforms, applied in order.

    Example:
        >>> Compose([Scale(128), CenterCrop(112), UnitNorm()])
    """

    def __init__(self, transforms: Sequence[_Transform]) -> None:
        self.transforms = transforms

    def __call__(self, img: Any) -> Any:
        """``img`` through every transform."""
        for t in self.transforms:
            img = t(img)
        return img


class ComposeVideo:
    r"""Composes video transforms from image and video transforms.

    Each image transform is applied to every frame (the first transform to
    all frames, then the second, as in v1), then each video transform to the
    whole list with one set of random parameters for all its frames.

    Args:
        img_transforms (list): per-frame transforms. Default: none.
        video_transforms (list): whole-video transforms. Default: none.

    Example:
        >>> ComposeVideo([Scale(128)], [RandomCropVideo(112), RandHorFlipVideo()])
    """

    def __init__(self, img_transforms: Optional[Sequence[_Transform]] = None,
                 video_transforms: Optional[Sequence[_Transform]] = None) -> None:
        self.img_transforms: Sequence[_Transform] = (
            [] if img_transforms is None else img_transforms)
        self.video_transforms: Sequence[_Transform] = (
            [] if video_transforms is None else video_transforms)

    def __call__(self, imgs: Any) -> Any:
        """The transformed frames (a new list; ``imgs`` is not modified)."""
        for t in self.img_transforms:
            imgs = _frames(imgs, t)
        for t in self.video_transforms:
            imgs = t(imgs)
        return imgs


# Flips -----------------------------------------------------------------------

class _RandFlipVideo:
    """Flips every frame of a video with probability ``p``: all frames of a
    call or none, so a clip stays one motion."""

    def __init__(self, p: float = 0.5) -> None:
        self.p = p

    @staticmethod
    def _flip(img: _Array) -> _Array:
        raise NotImplementedError

    def __call__(self, imgs: _Frames) -> _Frames:
        """The frames, all flipped or all unchanged."""
        if random.random() < self.p:
            return _frames(imgs, self._flip)
        return imgs


class RandHorFlipVideo(_RandFlipVideo):
    r"""Flips every frame of a video left-right, with probability ``p`` (0.5 in v1).

    Args:
        p (float): the probability of flipping. Default: 0.5.
    """

    @staticmethod
    def _flip(img: _Array) -> _Array:
        return np.ascontiguousarray(img[:, ::-1])


class RandVerFlipVideo(_RandFlipVideo):
    r"""Flips every frame of a video upside down, with probability ``p`` (0.5 in v1).

    Args:
        p (float): the probability of flipping. Default: 0.5.
    """

    @staticmethod
    def _flip(img: _Array) -> _Array:
        return np.ascontiguousarray(img[::-1])


# Normalization -----------------------------------------------------------

class Normalize:
    """Normalizes an ``H×W×C`` image channel by channel:
    ``(img - mean) / (std + 1e-8)`` (numpy broadcasting over the last axis).

    Args:
        mean (sequence): the mean of each channel.
        std (sequence): the standard deviation of each channel.
    """

    def __init__(self, mean: Sequence[float], std: Sequence[float]) -> None:
        self.mean: _Array = np.array(mean)
        self.std: _Array = np.array(std)

    def __call__(self, tensor: _Array) -> npt.NDArray[np.floating[Any]]:
        """The normalized image (floating point)."""
        return (tensor - self.mean) / (self.std + 1e-8)


class UnitNorm:
    """Normalizes each image to zero mean and unit standard deviation:
    ``(img - img.mean()) / (img.std() + 1e-8)``."""

    def __call__(self, tensor: _Array) -> npt.NDArray[np.floating[Any]]:
        """The normalized image (floating point)."""
        normalized: npt.NDArray[np.floating[Any]] = (tensor - tensor.mean()) / (tensor.std() + 1e-8)
        return normalized


# Crops -----------------------------------------------------------------------

class CenterCrop:
    r"""Crops the center of an image.

    An image smaller than the crop is first scaled up, keeping its aspect
    ratio, just enough to cover it (by its short edge for a square crop, as
    ``Scale(size)``).

    Args:
        size (int or sequence): the crop's ``(height, width)``; an int gives
            a square crop.
        interpolation: how to scale up a small image. Default: ``INTER_LINEAR``.
    """

    def __init__(self, size: _Size, interpolation: _Interpolation = INTER_LINEAR) -> None:
        self.size = _pair(size)
        self.interpolation = _interpolation(interpolation)
        self.scale = Scale(self.size[0], self.interpolation)

    def __call__(self, img: _Array) -> _Array:
        """The ``height × width`` center of ``img``."""
        th, tw = self.size
        h, w = img.shape[:2]
        if th > h or tw > w:
            if th == tw:
                img = self.scale(img)
            else:
                ratio = max(th / h, tw / w)
                img = _resize(img, max(tw, int(w * ratio)), max(th, int(h * ratio)),
                              self.interpolation)
            h, w = img.shape[:2]
        x1 = int(round((w - tw) / 2.0))
        y1 = int(round((h - th) / 2.0))
        return img[y1:y1 + th, x1:x1 + tw]


class RandomCrop:
    """Crops an image at a random position.

    Args:
        size (int or sequence): the crop's ``(height, width)``; an int gives
            a square crop.
        padding (int or sequence): padding added before cropping: an int for
            every border, or ``(left, top, right, bottom)``. Default: 0.
        pad_method: how to fill the padding: a ``BORDER_*`` constant (OpenCV's
            values) or a ``numpy.pad`` mode. Default: ``BORDER_CONSTANT`` (zeros).
    """

    def __init__(self, size: _Size, padding: _Padding = 0,
                 pad_method: _PadMethod = BORDER_CONSTANT) -> None:
        self.size = _pair(size)
        self.padding = padding
        self.pad_method = pad_method
        _padding(padding), _pad_mode(pad_method)  # checked now, read at each call

    def _window(self, shape: tuple[int, ...]) -> Callable[[_Array], _Array]:
        th, tw = self.size
        padding = _padding(self.padding)
        h, w = _padded_shape(shape, padding)
        y1, x1 = _crop_origin(h, w, th, tw, type(self).__name__)
        mode = _pad_mode(self.pad_method)
        return lambda img: _pad(img, padding, mode)[y1:y1 + th, x1:x1 + tw]

    def __call__(self, img: _Array) -> _Array:
        """A ``height × width`` crop of the padded image."""
        return self._window(img.shape)(img)


class RandomCropVideo(RandomCrop):
    """Crops every frame of a video at the same random position.

    Args:
        size (int or sequence): the crop's ``(height, width)``; an int gives
            a square crop.
        padding (int or sequence): padding added before cropping: an int for
            every border, or ``(left, top, right, bottom)``. Default: 0.
        pad_method: how to fill the padding: a ``BORDER_*`` constant (OpenCV's
            values) or a ``numpy.pad`` mode. Default: ``BORDER_CONSTANT`` (zeros).
    """

    def __call__(self, imgs: _Frames) -> _Frames:
        """The frames, cropped alike (frames must share the first one's size)."""
        return _frames(imgs, self._window(imgs[0].shape))


class JitterCrop:
    """Crops an image at a random position with a random size: the width and
    the height are each drawn from ``sample_sizes``.

    Args:
        sample_sizes (sequence): the sizes to draw from. Default:
            ``[256, 224, 192, 168]``.
        padding (int or sequence): zero padding added before cropping: an int
            for every border, or ``(left, top, right, bottom)``. Default: 0.
    """

    def __init__(self, sample_sizes: Sequence[int] = (256, 224, 192, 168),
                 padding: _Padding = 0) -> None:
        self.padding = padding
        self.sample_sizes = list(sample_sizes)
        _padding(padding)  # checked now, read at each call

    def _window(self, shape: tuple[int, ...]) -> Callable[[_Array], _Array]:
        sample_w = int(random.choice(self.sample_sizes))
        sample_h = int(random.choice(self.sample_sizes))
        padding = _padding(self.padding)
        h, w = _padded_shape(shape, padding)
        y1, x1 = _crop_origin(h, w, sample_h, sample_w, type(self).__name__)
        return lambda img: _pad(img, padding, "constant")[y1:y1 + sample_h, x1:x1 + sample_w]

    def __call__(self, img: _Array) -> _Array:
        """A crop of the padded image, of a size drawn from ``sample_sizes``."""
        return self._window(img.shape)(img)


class JitterCropVideo(JitterCrop):
    """Crops every frame of a video alike, at a random position with a random
    size: the width and the height are each drawn from ``sample_sizes``.

    Args:
        sample_sizes (sequence): the sizes to draw from. Default:
            ``[256, 224, 192, 168]``.
        padding (int or sequence): zero padding added before cropping: an int
            for every border, or ``(left, top, right, bottom)``. Default: 0.
    """

    def __call__(self, imgs: _Frames) -> _Frames:
        """The frames, cropped alike (frames must share the first one's size)."""
        return _frames(imgs, self._window(imgs[0].shape))


# Scaling ---------------------------------------------------------------------

class Scale:
    """Resizes an image.

    Args:
        size (int or sequence): an int scales the short edge to ``size``,
            keeping the aspect ratio (the long edge is rounded down; an image
            whose short edge is ``size`` already is returned as it is); a
            ``(width, height)`` pair gives that size exactly.
        interpolation: ``INTER_LINEAR`` (default), ``INTER_NEAREST``,
            ``INTER_CUBIC``, ``INTER_AREA`` or ``INTER_LANCZOS4`` (OpenCV's
            values), or 'nearest', 'bilinear', 'bicubic', 'area', 'lanczos'.
            Linear, cubic and Lanczos are antialiased when shrinking.
    """

    def __init__(self, size: _Size, interpolation: _Interpolation = INTER_LINEAR) -> None:
        if not (isinstance(size, numbers.Integral)
                or (isinstance(size, Iterable) and len(size) == 2)):
            raise GulpTypeError(f"size is an int or a (width, height) pair, not {size!r}")
        self.size = size
        self.interpolation = _interpolation(interpolation)

    def __call__(self, img: _Array) -> _Array:
        """The resized image (same dtype and channels)."""
        h, w = img.shape[:2]
        if isinstance(self.size, numbers.Integral):
            size = int(self.size)
            if (w <= h and w == size) or (h <= w and h == size):
                return img
            if w < h:
                ow, oh = size, int(size * h / w)
            else:
                oh, ow = size, int(size * w / h)
        else:
            ow, oh = (int(s) for s in self.size)
        return _resize(img, ow, oh, self.interpolation)
