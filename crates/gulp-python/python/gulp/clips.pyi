from os import PathLike
from typing import Any, Iterator, Mapping, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

_Path = Union[str, PathLike[str]]

class Batch:
    frames: npt.NDArray[np.uint8]
    labels: npt.NDArray[np.int64]
    ids: list[str]
    indices: npt.NDArray[np.int64]
    views: npt.NDArray[np.int64]
    skipped: list[tuple[str, str]]
    index: int
    epoch: int
    def __init__(
        self,
        frames: npt.NDArray[np.uint8],
        labels: npt.NDArray[np.int64],
        ids: list[str],
        indices: npt.NDArray[np.int64],
        views: npt.NDArray[np.int64],
        skipped: list[tuple[str, str]],
        index: int,
        epoch: int,
    ) -> None: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[npt.NDArray[Any]]: ...

class ClipLoader:
    path: str
    skipped: int
    def __init__(
        self,
        path: _Path,
        frames: int = 8,
        sampling: str = "segments",
        step: int = 1,
        resize: Optional[int] = 128,
        size: Union[None, int, Tuple[int, int]] = 112,
        crop: Optional[str] = "random",
        flip: bool = True,
        batch_size: int = 8,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = True,
        rank: int = 0,
        world_size: int = 1,
        threads: Optional[int] = None,
        prefetch: int = 2,
        *,
        clips: int = 1,
        train: Optional[bool] = None,
        scale: Tuple[float, float] = (0.08, 1.0),
        ratio: Tuple[float, float] = (3 / 4, 4 / 3),
        on_error: str = "raise",
        label_key: str = "label",
        labels: Optional[Mapping[str, int]] = None,
        dct: str = "fast",
        codec: Optional[str] = None,
        strict: bool = True,
    ) -> None: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Batch]: ...
    @property
    def epoch(self) -> int: ...
    @property
    def samples(self) -> int: ...
    @property
    def items(self) -> int: ...
    @property
    def threads(self) -> int: ...
    def set_epoch(self, epoch: int) -> None: ...
    def state_dict(self) -> dict[str, int]: ...
    def load_state_dict(self, state: Mapping[str, int]) -> None: ...
