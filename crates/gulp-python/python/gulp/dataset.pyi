"""GulpIO v1's ``gulpio.dataset``: video and image datasets over a gulp directory."""

from os import PathLike
from typing import Any, Callable, Iterable, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

from .errors import GulpFileNotFoundError
from .fileio import GulpDirectory

_Path = Union[str, PathLike[str]]
_Item = Tuple[str, dict[str, list[Any]]]

class GulpIOEmptyFolder(GulpFileNotFoundError): ...

class _GulpDataset:
    data_path: _Path
    gd: GulpDirectory
    num_chunks: int
    label2idx: dict[str, Any]
    classes: list[str]
    def __init__(self, data_path: _Path) -> None: ...
    @property
    def items(self) -> list[_Item]: ...
    @items.setter
    def items(self, items: Iterable[_Item]) -> None: ...
    def __len__(self) -> int: ...

class GulpVideoDataset(_GulpDataset):
    transform_video: Optional[Callable[[list[npt.NDArray[np.uint8]]], Any]]
    target_transform: Optional[Callable[[Any], Any]]
    num_frames: int
    step_size: int
    is_val: bool
    stack: bool
    random_offset: bool
    def __init__(
        self,
        data_path: _Path,
        num_frames: int,
        step_size: int,
        is_val: bool,
        transform: Optional[Callable[[list[npt.NDArray[np.uint8]]], Any]] = None,
        target_transform: Optional[Callable[[Any], Any]] = None,
        stack: bool = True,
        random_offset: bool = True,
    ) -> None: ...
    def __getitem__(self, index: int) -> Tuple[Any, Any]: ...

class GulpImageDataset(_GulpDataset):
    transform: Optional[Callable[[npt.NDArray[np.uint8]], Any]]
    target_transform: Optional[Callable[[Any], Any]]
    is_val: bool
    def __init__(
        self,
        data_path: _Path,
        is_val: bool = False,
        transform: Optional[Callable[[npt.NDArray[np.uint8]], Any]] = None,
        target_transform: Optional[Callable[[Any], Any]] = None,
    ) -> None: ...
    def __getitem__(self, index: int) -> Tuple[Any, Any]: ...
