"""GulpIO v1's ``gulpio.transforms``: augmentations of numpy frames.

The classes, arguments and random draws are GulpIO v1's, so a v1 training
script runs after ``s/gulpio/gulp/``. Images are ``H×W×C`` or ``H×W`` numpy
arrays; a video is a list of them (an ``N×H×W×C`` array works too). Random
choices come from Python's ``random`` module, as in v1, so ``random.seed``
makes them reproducible.

Only numpy is needed: there is no OpenCV dependency. ``Scale`` resizes with
Pillow when it is installed (``uint8`` gray or RGB frames) and otherwise with
numpy, by Pillow's resampling algorithm: the same pixels for nearest
neighbour, the same or one level apart for the filters. The
``INTER_*`` and ``BORDER_*`` constants have OpenCV's values, so arguments
written as ``cv2.INTER_AREA`` or ``cv2.BORDER_REFLECT`` keep their meaning.

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

import math
import numbers
import random
from collections.abc import Iterable

import numpy as np

try:  # optional: a faster resize for uint8 gray and RGB frames
    from PIL import Image as _PILImage
except ImportError:  # pragma: no cover - depends on the environment
    _PILImage = None

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

_PAD_MODES = {
    BORDER_CONSTANT: "constant",
    BORDER_REPLICATE: "edge",
    BORDER_REFLECT: "symmetric",
    BORDER_WRAP: "wrap",
    BORDER_REFLECT_101: "reflect",
}


# Resizing -----------------------------------------------------------------
#
# Pillow's separable resampling (Resample.c): each output pixel is a
# normalized kernel-weighted sum of input pixels, the kernel widened by the
# shrink factor (antialiasing); a horizontal pass, then a vertical one.
# For uint8 images the weights are 22-bit fixed point and each pass
# rounds to uint8, as in Pillow. Nearest-neighbour positions are Pillow's
# exactly; the filtered pixels are Pillow's, or differ by a rounding (one
# level) on natural images where a Pillow build runs the passes in the
# other order, and from Pillow-SIMD's (gulpio2's declared dependency), whose
# vector code rounds the weights otherwise.

def _box_kernel(x):
    return ((x > -0.5) & (x <= 0.5)).astype(np.float64)


def _triangle_kernel(x):
    x = np.abs(x)
    return np.where(x < 1.0, 1.0 - x, 0.0)


def _bicubic_kernel(x):
    a = -0.5
    x = np.abs(x)
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def _sinc(x):
    y = x * math.pi
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x == 0.0, 1.0, np.sin(y) / y)


def _lanczos_kernel(x):
    return np.where((x >= -3.0) & (x < 3.0), _sinc(x) * _sinc(x / 3), 0.0)


# interpolation -> (kernel, support, Pillow's filter name)
_FILTERS = {
    INTER_LINEAR: (_triangle_kernel, 1.0, "BILINEAR"),
    INTER_CUBIC: (_bicubic_kernel, 2.0, "BICUBIC"),
    INTER_AREA: (_box_kernel, 0.5, "BOX"),
    INTER_LANCZOS4: (_lanczos_kernel, 3.0, "LANCZOS"),
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
_PRECISION_BITS = 22


def _interpolation(value):
    if isinstance(value, str):
        key = value.lower()
        if key in _INTERPOLATION_NAMES:
            return _INTERPOLATION_NAMES[key]
    elif isinstance(value, numbers.Integral) and (value == INTER_NEAREST or value in _FILTERS):
        return int(value)
    raise ValueError(
        f"unknown interpolation {value!r}: use INTER_NEAREST, INTER_LINEAR, INTER_CUBIC, "
        f"INTER_AREA, INTER_LANCZOS4 or one of {sorted(_INTERPOLATION_NAMES)}"
    )


def _coefficients(in_size, out_size, kernel, support):
    """``(first input index, weights[out_size, taps])`` of one axis."""
    scale = in_size / out_size
    filterscale = max(scale, 1.0)
    support = support * filterscale
    taps = int(math.ceil(support)) * 2 + 1
    center = (np.arange(out_size) + 0.5) * scale
    first = np.maximum((center - support + 0.5).astype(np.int64), 0)
    count = np.minimum((center + support + 0.5).astype(np.int64), in_size) - first
    tap = np.arange(taps)
    position = (first[:, None] + tap[None, :]).astype(np.float64)
    weights = kernel((position - center[:, None] + 0.5) * (1.0 / filterscale))
    weights = np.where(tap[None, :] < count[:, None], weights, 0.0)
    total = np.zeros(out_size)
    for t in range(taps):  # in order, as Pillow sums them
        total = total + weights[:, t]
    safe = np.where(total != 0.0, total, 1.0)
    return first, weights / safe[:, None]


def _resample_axis(img, axis, out_size, kernel, support):
    in_size = img.shape[axis]
    first, weights = _coefficients(in_size, out_size, kernel, support)
    shape = [1] * img.ndim
    shape[axis] = out_size
    out_shape = list(img.shape)
    out_shape[axis] = out_size
    fixed = img.dtype == np.uint8
    if fixed:
        # int32 as in Pillow: |sum| < 255 * 1.3 * 2**22 < 2**31 for these kernels
        scaled = weights * (1 << _PRECISION_BITS)
        weights = np.trunc(np.where(scaled < 0, scaled - 0.5, scaled + 0.5)).astype(np.int32)
        acc = np.full(out_shape, 1 << (_PRECISION_BITS - 1), np.int32)
    else:
        acc = np.zeros(out_shape, np.float64)
    for t in range(weights.shape[1]):
        index = np.minimum(first + t, in_size - 1)
        acc += np.take(img, index, axis=axis) * weights[:, t].reshape(shape)
    if fixed:
        return np.clip(acc >> _PRECISION_BITS, 0, 255).astype(np.uint8)
    return acc


def _nearest_indices(in_size, out_size):
    # Pillow's nearest resize (ImagingScaleAffine): positions are
    # accumulated step by step from the first pixel's center.
    step = in_size / out_size
    steps = np.full(out_size, step)
    steps[0] = step * 0.5
    position = np.add.accumulate(steps)
    return np.minimum(position.astype(np.int64), in_size - 1)


def _resize_numpy(img, width, height, interpolation):
    h, w = img.shape[:2]
    if interpolation == INTER_NEAREST:
        rows = _nearest_indices(h, height)
        cols = _nearest_indices(w, width)
        return img[rows][:, cols]
    kernel, support, _ = _FILTERS[interpolation]
    dtype = img.dtype
    out = img if dtype == np.uint8 else img.astype(np.float64)
    if width != w:
        out = _resample_axis(out, 1, width, kernel, support)
    if height != h:
        out = _resample_axis(out, 0, height, kernel, support)
    if dtype == np.uint8:
        return out
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(dtype)
    if dtype == np.bool_:
        return out >= 0.5
    return out.astype(dtype, copy=False)


def _resize_pillow(img, width, height, interpolation):
    single = img.ndim == 3 and img.shape[2] == 1
    source = np.ascontiguousarray(img[:, :, 0] if single else img)
    filters = getattr(_PILImage, "Resampling", _PILImage)  # Pillow < 9.1: module constants
    name = "NEAREST" if interpolation == INTER_NEAREST else _FILTERS[interpolation][2]
    resample = getattr(filters, name)
    out = np.array(_PILImage.fromarray(source).resize((width, height), resample=resample))
    return out[:, :, None] if single else out


def _resize(img, width, height, interpolation=INTER_LINEAR):
    """``img`` resized to ``width × height`` (same dtype and channels)."""
    img = np.asarray(img)
    width, height = int(width), int(height)
    if width < 1 or height < 1:
        raise ValueError(f"cannot resize to {width}x{height}")
    if img.ndim not in (2, 3) or img.shape[0] < 1 or img.shape[1] < 1:
        raise ValueError(f"expected an HxW or HxWxC image, got shape {img.shape}")
    if img.shape[:2] == (height, width):
        return img.copy()
    if (_PILImage is not None and img.dtype == np.uint8
            and (img.ndim == 2 or img.shape[2] in (1, 3))):
        return _resize_pillow(img, width, height, interpolation)
    return _resize_numpy(img, width, height, interpolation)


# Helpers --------------------------------------------------------------------

def _pair(size):
    """An int ``n`` -> ``(n, n)``; a pair -> ``(int, int)``."""
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    first, second = size
    return int(first), int(second)


def _padding(padding):
    """``(left, top, right, bottom)`` of an int or a sequence of 2 or 4."""
    if isinstance(padding, numbers.Number):
        p = int(padding)
        return p, p, p, p
    padding = [int(p) for p in padding]
    if len(padding) == 2:
        return padding[0], padding[1], padding[0], padding[1]
    if len(padding) == 4:
        return tuple(padding)
    raise ValueError(f"padding is an int or a sequence of 2 or 4 ints, not {padding!r}")


def _pad_mode(pad_method):
    if isinstance(pad_method, str):
        return pad_method
    try:
        return _PAD_MODES[pad_method]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown pad_method {pad_method!r}: use a BORDER_* constant or a numpy.pad mode"
        ) from None


def _pad(img, padding, mode):
    left, top, right, bottom = padding
    if not (left or top or right or bottom):
        return img
    width = [(top, bottom), (left, right)] + [(0, 0)] * (img.ndim - 2)
    if mode == "constant":
        return np.pad(img, width, mode="constant", constant_values=0)
    return np.pad(img, width, mode=mode)


def _padded_shape(shape, padding):
    left, top, right, bottom = padding
    return shape[0] + top + bottom, shape[1] + left + right


def _crop_origin(h, w, th, tw, what):
    """v1's draw of a crop position: ``x`` first, then ``y``."""
    if th > h or tw > w:
        raise ValueError(f"{what}: a {th}x{tw} crop does not fit in a {h}x{w} image")
    x1 = random.randint(0, w - tw)
    y1 = random.randint(0, h - th)
    return y1, x1


def _frames(imgs, function):
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

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
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

    def __init__(self, img_transforms=None, video_transforms=None):
        self.img_transforms = [] if img_transforms is None else img_transforms
        self.video_transforms = [] if video_transforms is None else video_transforms

    def __call__(self, imgs):
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

    def __init__(self, p=0.5):
        self.p = p

    @staticmethod
    def _flip(img):
        raise NotImplementedError

    def __call__(self, imgs):
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
    def _flip(img):
        return np.ascontiguousarray(img[:, ::-1])


class RandVerFlipVideo(_RandFlipVideo):
    r"""Flips every frame of a video upside down, with probability ``p`` (0.5 in v1).

    Args:
        p (float): the probability of flipping. Default: 0.5.
    """

    @staticmethod
    def _flip(img):
        return np.ascontiguousarray(img[::-1])


# Normalization -----------------------------------------------------------

class Normalize:
    """Normalizes an ``H×W×C`` image channel by channel:
    ``(img - mean) / (std + 1e-8)`` (numpy broadcasting over the last axis).

    Args:
        mean (sequence): the mean of each channel.
        std (sequence): the standard deviation of each channel.
    """

    def __init__(self, mean, std):
        self.mean = np.array(mean)
        self.std = np.array(std)

    def __call__(self, tensor):
        """The normalized image (floating point)."""
        return (tensor - self.mean) / (self.std + 1e-8)


class UnitNorm:
    """Normalizes each image to zero mean and unit standard deviation:
    ``(img - img.mean()) / (img.std() + 1e-8)``."""

    def __call__(self, tensor):
        """The normalized image (floating point)."""
        return (tensor - tensor.mean()) / (tensor.std() + 1e-8)


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

    def __init__(self, size, interpolation=INTER_LINEAR):
        self.size = _pair(size)
        self.interpolation = _interpolation(interpolation)
        self.scale = Scale(self.size[0], self.interpolation)

    def __call__(self, img):
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

    def __init__(self, size, padding=0, pad_method=BORDER_CONSTANT):
        self.size = _pair(size)
        self.padding = padding
        self.pad_method = pad_method
        _padding(padding), _pad_mode(pad_method)  # checked now, read at each call

    def _window(self, shape):
        th, tw = self.size
        padding = _padding(self.padding)
        h, w = _padded_shape(shape, padding)
        y1, x1 = _crop_origin(h, w, th, tw, type(self).__name__)
        mode = _pad_mode(self.pad_method)
        return lambda img: _pad(img, padding, mode)[y1:y1 + th, x1:x1 + tw]

    def __call__(self, img):
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

    def __call__(self, imgs):
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

    def __init__(self, sample_sizes=(256, 224, 192, 168), padding=0):
        self.padding = padding
        self.sample_sizes = list(sample_sizes)
        _padding(padding)  # checked now, read at each call

    def _window(self, shape):
        sample_w = int(random.choice(self.sample_sizes))
        sample_h = int(random.choice(self.sample_sizes))
        padding = _padding(self.padding)
        h, w = _padded_shape(shape, padding)
        y1, x1 = _crop_origin(h, w, sample_h, sample_w, type(self).__name__)
        return lambda img: _pad(img, padding, "constant")[y1:y1 + sample_h, x1:x1 + sample_w]

    def __call__(self, img):
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

    def __call__(self, imgs):
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

    def __init__(self, size, interpolation=INTER_LINEAR):
        if not (isinstance(size, numbers.Integral)
                or (isinstance(size, Iterable) and len(size) == 2)):
            raise TypeError(f"size is an int or a (width, height) pair, not {size!r}")
        self.size = size
        self.interpolation = _interpolation(interpolation)

    def __call__(self, img):
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
