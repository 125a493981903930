"""The native half of the `gulp` package (Rust, PyO3). Use the Python modules
(`gulp`, `gulp.fileio`, `gulp.utils`) rather than this one."""

from os import PathLike
from typing import Any, Callable, Mapping, Optional, Protocol, Sequence, Tuple, TypeVar, Union, final

import numpy as np
import numpy.typing as npt

from .columns import Column, Predicate, WeightColumn

__all__ = [
    "__version__",
    "CODEC",
    "INDEX_FILE",
    "Directory",
    "Writer",
    "DirectoryWriter",
    "Loader",
    "BatchIter",
    "encode_jpeg",
    "decode_jpeg",
    "jpeg_header",
    "resize",
    "decode_image",
    "resample",
    "nearest_indices",
    "window_starts",
    "window",
    "ingest",
    "check",
    "recover",
    "status",
    "merge",
    "copy",
    "is_remote",
    "lint",
    "read_labels",
    "read_ids",
    "loader_defaults",
    "option_names",
    "launcher_env",
    "set_bundled_ffmpeg",
    "ffmpeg_path",
    "cli_main",
]

__version__: str
CODEC: str
INDEX_FILE: str

_Path = Union[str, PathLike[str]]
_Selection = Union[None, slice, Sequence[int], npt.NDArray[np.integer[Any]]]
_Scale = Union[str, int, Tuple[int, int]]
_Crop = Tuple[int, int, int, int]
_Sample = TypeVar("_Sample", np.uint8, np.float64)

# The classes are PyO3's: built by __new__, not subclassable.
@final
class Directory:
    def __new__(cls, path: _Path, mmap: bool = True,
                cache_dir: Union[None, bool, _Path] = None,
                cache_limit: Union[None, int, str] = None,
                cache_fetch: Optional[str] = None) -> Directory: ...
    @property
    def path(self) -> str: ...
    def __len__(self) -> int: ...
    def __contains__(self, id: str, /) -> bool: ...
    def n_frames(self) -> int: ...
    def chunk_files(self) -> list[tuple[int, str, str]]: ...
    def next_chunk_number(self) -> int: ...
    def warnings(self) -> list[str]: ...
    def ids(self) -> list[str]: ...
    def chunk_ids(self, index: int) -> list[str]: ...
    def chunk_of(self, id: str) -> Optional[int]: ...
    def frame_count(self, id: str) -> int: ...
    def meta(self, id: str) -> Any: ...
    def item(self, id: str) -> dict[str, list[Any]]: ...
    def chunk_meta(self, index: int) -> dict[str, dict[str, list[Any]]]: ...
    def read(
        self,
        id: str,
        sel: _Selection = None,
        *,
        color: Optional[str] = None,
        dct_scale: Optional[_Scale] = None,
        min_size: Optional[Tuple[int, int]] = None,
        region: Optional[_Crop] = None,
        dct: Optional[str] = None,
        upsampling: Optional[str] = None,
        strict: bool = True,
        codec: Optional[str] = None,
    ) -> list[npt.NDArray[np.uint8]]: ...
    def raw(self, id: str, sel: _Selection = None) -> list[Union[memoryview, bytes]]: ...
    def raw_bytes(self, id: str, sel: _Selection = None) -> list[bytes]: ...
    def shapes(self, id: str, sel: _Selection = None) -> list[tuple[int, int, int]]: ...

@final
class Writer:
    def __new__(
        cls,
        dir: _Path,
        chunk: int,
        mode: str = "wb",
        meta_format: str = "json",
        fsync: bool = True,
    ) -> Writer: ...
    @property
    def chunk(self) -> int: ...
    @property
    def is_open(self) -> bool: ...
    def __len__(self) -> int: ...
    def append(self, id: str, meta: Any, frames: Sequence[npt.NDArray[np.uint8]], quality: int = 90) -> int: ...
    def append_jpegs(self, id: str, meta: Any, frames: Sequence[bytes]) -> int: ...
    def commit(self, reopen: bool = False) -> dict[str, Any]: ...
    def abort(self) -> None: ...

@final
class DirectoryWriter:
    def __new__(
        cls,
        path: _Path,
        items_per_chunk: int = 100,
        *,
        quality: int = 90,
        subsampling: str = "auto",
        meta_format: str = "json",
        on_exists: str = "error",
        labels: bool = True,
        threads: Optional[int] = None,
        fsync: bool = True,
    ) -> DirectoryWriter: ...
    @property
    def is_open(self) -> bool: ...
    @property
    def stopped(self) -> bool: ...
    def recovered(self) -> list[str]: ...
    def add(
        self,
        id: str,
        frames: Union[npt.NDArray[np.uint8], Sequence[Union[npt.NDArray[np.uint8], bytes, bytearray, memoryview]]],
        meta: Any,
    ) -> bool: ...
    def end_chunk(self) -> None: ...
    def finish(self) -> dict[str, Any]: ...
    def abort(self) -> None: ...

_BatchParts = Tuple[
    npt.NDArray[np.uint8],  # frames [B, T, H, W, 3]
    npt.NDArray[Any],  # targets [B, ...], int64 or float32
    list[str],  # ids
    npt.NDArray[np.int64],  # indices [B, T]
    npt.NDArray[np.int64],  # views [B]
    list[tuple[str, str]],  # skipped (id, reason)
    int,  # index
    int,  # epoch
    npt.NDArray[np.int64],  # positions [B]
    npt.NDArray[np.int64],  # sources [B]
    npt.NDArray[np.int64],  # segments [B, 2]
    npt.NDArray[np.bool_],  # padding [B]
    Optional[npt.NDArray[np.float64]],  # times [B, T]
    Optional[npt.NDArray[np.float32]],  # audio [B, C, S]
    Optional[npt.NDArray[np.bool_]],  # has_audio [B]
    Optional[list[str]],  # texts
]

class _Source(Protocol):
    """What the native loader reads of a `gulp.Source`."""

    @property
    def path(self) -> str: ...
    @property
    def weight(self) -> Optional[float]: ...
    @property
    def repeat(self) -> Optional[float]: ...
    @property
    def choose(self) -> Optional[int]: ...
    @property
    def ids(self) -> Optional[list[str]]: ...
    @property
    def where(self) -> Union[None, Predicate, Callable[[Any], Any]]: ...
    @property
    def weights(
        self,
    ) -> Union[None, Column, WeightColumn, Mapping[str, float], Callable[[Any], float]]: ...
    @property
    def labels(self) -> Optional[list[tuple[str, int]]]: ...

class _Segments(Protocol):
    """What the native loader reads of a `gulp.Segments`."""

    @property
    def key(self) -> str: ...
    @property
    def start(self) -> str: ...
    @property
    def end(self) -> str: ...
    @property
    def pair(self) -> Optional[str]: ...
    @property
    def unit(self) -> str: ...
    @property
    def fps(self) -> Optional[float]: ...
@final
class Loader:
    def __new__(
        cls,
        sources: Sequence[_Source],
        *,
        frames: int,
        sampling: str,
        step: int,
        clips: int,
        resize: Optional[int],
        size: Union[None, int, Tuple[int, int]],
        crop: Optional[str],
        scale: Tuple[float, float],
        ratio: Tuple[float, float],
        flip: bool,
        batch_size: int,
        shuffle: Union[bool, str],
        chunk_window: Optional[int],
        seed: int,
        drop_last: bool,
        rank: Optional[int],
        world_size: Optional[int],
        local_world_size: Optional[int],
        torch_ranks: Optional[Tuple[int, int]],
        train: Optional[bool],
        threads: Optional[int],
        prefetch: int,
        on_error: str,
        label_key: str,
        labels: Optional[Sequence[Tuple[str, int]]],
        dct: str,
        codec: Optional[str],
        strict: bool,
        sampler: str,
        samples_per_epoch: Optional[int],
        target: Union[None, str, Sequence[str], Callable[[Any], Any]],
        target_type: Optional[str],
        num_classes: Optional[int],
        on_missing: str,
        segments: Optional[_Segments],
        shared_labels: bool,
        cache_dir: Union[None, bool, _Path],
        cache_limit: Union[None, int, str],
        cache_fetch: Optional[str],
        media: tuple[Optional[float], float, bool, int, int, Optional[str]],
    ) -> Loader: ...
    @property
    def ranks(self) -> tuple[int, int, int, str, str]: ...
    def __len__(self) -> int: ...
    @property
    def samples(self) -> int: ...
    @property
    def items(self) -> int: ...
    @property
    def epoch_samples(self) -> int: ...
    @property
    def missing(self) -> int: ...
    @property
    def paths(self) -> list[str]: ...
    @property
    def threads(self) -> int: ...
    @property
    def epoch(self) -> int: ...
    def set_epoch(self, epoch: int) -> None: ...
    def state_dict(self) -> dict[str, int]: ...
    def load_state_dict(self, state: dict[str, int]) -> None: ...
    def iter(self) -> BatchIter: ...

@final
class BatchIter:
    def __iter__(self) -> BatchIter: ...
    def __next__(self) -> _BatchParts: ...
    def close(self) -> None: ...

def encode_jpeg(img: npt.NDArray[np.uint8], quality: int = 90) -> bytes: ...
def decode_jpeg(
    data: bytes,
    *,
    color: Optional[str] = None,
    dct_scale: Optional[_Scale] = None,
    min_size: Optional[Tuple[int, int]] = None,
    region: Optional[_Crop] = None,
    dct: Optional[str] = None,
    upsampling: Optional[str] = None,
    strict: bool = True,
    codec: Optional[str] = None,
) -> npt.NDArray[np.uint8]: ...
def jpeg_header(data: bytes) -> tuple[int, int, int]: ...
def resize(img: npt.NDArray[np.uint8], size: int) -> npt.NDArray[np.uint8]: ...
def decode_image(data: bytes) -> npt.NDArray[np.uint8]: ...
def resample(
    img: npt.NDArray[_Sample], height: int, width: int, filter: str
) -> npt.NDArray[_Sample]: ...
def nearest_indices(in_size: int, out_size: int) -> npt.NDArray[np.uintp]: ...
def window_starts(frames: Optional[int], step: int, n: int) -> int: ...
def window(frames: Optional[int], step: int, n: int, start: int) -> tuple[slice, int]: ...
def ingest(
    kind: str,
    inputs: Sequence[_Path],
    output: _Path,
    *,
    videos_per_chunk: int = 100,
    num_workers: Optional[int] = None,
    frame_size: Optional[int] = None,
    max_size: Optional[int] = None,
    frame_rate: Optional[float] = None,
    quality: int = 90,
    subsampling: str = "auto",
    meta_format: str = "json",
    shuffle_seed: Optional[int] = None,
    strict: bool = False,
    label_name: str = "template",
    phase: str = "training",
    fsync: bool = True,
    shard: Optional[str] = None,
    shard_count: Optional[int] = None,
    root: Optional[_Path] = None,
    segments: bool = False,
    columns: Optional[Mapping[str, str]] = None,
    clip_length: Optional[float] = None,
    audio: bool = False,
    audio_rate: int = 16000,
    audio_channels: int = 1,
) -> dict[str, Any]: ...
def check(path: _Path, decode: bool = False, threads: Optional[int] = None) -> str: ...
def recover(path: _Path) -> list[str]: ...
def status(path: _Path, shards: Optional[int] = None) -> str: ...
def merge(out: _Path, dirs: Sequence[_Path]) -> str: ...
def copy(src: _Path, dst: _Path, progress: bool = False) -> dict[str, Any]: ...
def is_remote(path: _Path) -> bool: ...
def lint(
    paths: Sequence[_Path],
    checks: Optional[Sequence[str]] = None,
    thresholds: Optional[Mapping[str, float]] = None,
    ids_out: Optional[Sequence[_Path]] = None,
    drop: Optional[Sequence[str]] = None,
    threads: Optional[int] = None,
    label_key: Optional[str] = None,
) -> str: ...
def read_labels(path: _Path) -> Optional[list[tuple[str, int]]]: ...
def read_ids(path: _Path) -> list[str]: ...
def loader_defaults(kind: str) -> dict[str, Any]: ...
def option_names() -> dict[str, list[str]]: ...
def launcher_env() -> tuple[Optional[int], Optional[int], Optional[str], Optional[int], Optional[str], Optional[int]]: ...
def set_bundled_ffmpeg(path: Optional[_Path]) -> None: ...
def ffmpeg_path() -> str: ...
def cli_main(argv: Sequence[str]) -> int: ...
