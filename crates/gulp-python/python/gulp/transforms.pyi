"""GulpIO v1's ``gulpio.transforms``: augmentations of numpy frames."""

from typing import Any, Callable, Optional, Sequence, Tuple, TypeVar, Union

import numpy as np
import numpy.typing as npt

_Array = npt.NDArray[Any]
_Frames = TypeVar("_Frames", list[_Array], _Array)
_Size = Union[int, Tuple[int, int], Sequence[int]]
_Padding = Union[int, Sequence[int]]
_Interpolation = Union[int, str]

INTER_NEAREST: int
INTER_LINEAR: int
INTER_CUBIC: int
INTER_AREA: int
INTER_LANCZOS4: int
BORDER_CONSTANT: int
BORDER_REPLICATE: int
BORDER_REFLECT: int
BORDER_WRAP: int
BORDER_REFLECT_101: int

class Compose:
    transforms: Sequence[Callable[[Any], Any]]
    def __init__(self, transforms: Sequence[Callable[[Any], Any]]) -> None: ...
    def __call__(self, img: Any) -> Any: ...

class ComposeVideo:
    img_transforms: Sequence[Callable[[Any], Any]]
    video_transforms: Sequence[Callable[[Any], Any]]
    def __init__(
        self,
        img_transforms: Optional[Sequence[Callable[[Any], Any]]] = None,
        video_transforms: Optional[Sequence[Callable[[Any], Any]]] = None,
    ) -> None: ...
    def __call__(self, imgs: Any) -> Any: ...

class RandHorFlipVideo:
    p: float
    def __init__(self, p: float = 0.5) -> None: ...
    def __call__(self, imgs: _Frames) -> _Frames: ...

class RandVerFlipVideo:
    p: float
    def __init__(self, p: float = 0.5) -> None: ...
    def __call__(self, imgs: _Frames) -> _Frames: ...

class Normalize:
    mean: npt.NDArray[Any]
    std: npt.NDArray[Any]
    def __init__(self, mean: Sequence[float], std: Sequence[float]) -> None: ...
    def __call__(self, tensor: _Array) -> npt.NDArray[np.floating[Any]]: ...

class UnitNorm:
    def __call__(self, tensor: _Array) -> npt.NDArray[np.floating[Any]]: ...

class CenterCrop:
    size: Tuple[int, int]
    interpolation: int
    scale: Scale
    def __init__(self, size: _Size, interpolation: _Interpolation = ...) -> None: ...
    def __call__(self, img: _Array) -> _Array: ...

class RandomCrop:
    size: Tuple[int, int]
    padding: _Padding
    pad_method: Union[int, str]
    def __init__(
        self, size: _Size, padding: _Padding = 0, pad_method: Union[int, str] = ...
    ) -> None: ...
    def __call__(self, img: _Array) -> _Array: ...

class RandomCropVideo(RandomCrop):
    def __call__(self, imgs: _Frames) -> _Frames: ...  # type: ignore[override]

class JitterCrop:
    padding: _Padding
    sample_sizes: list[int]
    def __init__(self, sample_sizes: Sequence[int] = ..., padding: _Padding = 0) -> None: ...
    def __call__(self, img: _Array) -> _Array: ...

class JitterCropVideo(JitterCrop):
    def __call__(self, imgs: _Frames) -> _Frames: ...  # type: ignore[override]

class Scale:
    size: _Size
    interpolation: int
    def __init__(self, size: _Size, interpolation: _Interpolation = ...) -> None: ...
    def __call__(self, img: _Array) -> _Array: ...
