"""gulp: read and write GulpIO / gulpio2 video datasets, fast.

A drop-in replacement for gulpio2: replace ``import gulpio2`` by
``import gulp`` and the same code reads the same directories, with frames
decoded by libjpeg-turbo in Rust while the GIL is released (``gd[id]`` about
1.25x gulpio2's speed per core, opening a directory and reading raw frames
several times faster, decoding on several threads with ``read`` and the
clip loader; docs/benchmarks.md has the figures)::

    import gulp
    gd = gulp.GulpDirectory("/data/something-something")
    frames, meta = gd["12345"]            # list of H×W×3 uint8 arrays, dict
    frames, meta = gd["12345", ::2]       # gulpio2's selectors
    small = gd.read("12345", dct_scale="1/2")  # DCT-domain downscaling
    jpegs = gd.raw("12345")               # zero-copy memoryviews of the map (bytes on s3://)

``gulp.fileio``, ``gulp.utils`` and ``gulp.adapters`` carry gulpio2's names;
``gulp.Writer`` writes items a program holds (numpy frames or JPEG bytes),
``gulp.ingest`` runs the built-in adapters of the ``gulp`` command,
``gulp.check`` checks a directory, ``gulp.lint`` finds what is wrong with
the data (duplicates, leaks, dark or frozen frames, ...), ``gulp.ClipLoader`` (and ``gulp.ImageLoader``,
its image face) gives training
batches of clips (``gulp.torch`` wraps it for PyTorch, ``gulp.dataset`` and
``gulp.transforms`` carry GulpIO v1's), and every error is a
``gulp.GulpError``.
"""

from __future__ import annotations

import json as _json
import os
from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

from . import _ffmpeg, _gulp
from . import adapters, errors, fileio, utils
from .clips import Batch, ClipLoader, ImageLoader, Segments, Source
from .columns import col
from .errors import *  # noqa: F401,F403 (the exception classes, re-exported)
from .fileio import ChunkWriter, GulpChunk, GulpDirectory, GulpIngestor
from .requeue import Requeue
from .writer import Writer

if TYPE_CHECKING:
    from ._gulp import _Path

__version__ = _gulp.__version__
#: The JPEG codec this build decodes with.
CODEC = _gulp.CODEC
#: The name of a directory's index file (see ``gulp index --help``): written
#: when a directory of 100,000 items or more is first opened, and mapped by
#: every process of the node that opens it after.
INDEX_FILE = _gulp.INDEX_FILE

__all__ = [
    "GulpDirectory",
    "GulpChunk",
    "ChunkWriter",
    "GulpIngestor",
    "Writer",
    "ClipLoader",
    "ImageLoader",
    "Batch",
    "Source",
    "Segments",
    "col",
    "Requeue",
    "CheckReport",
    "check",
    "LintReport",
    "lint",
    "ingest",
    "recover",
    "status",
    "merge",
    "copy",
    "adapters",
    "errors",
    "fileio",
    "utils",
    "__version__",
    "CODEC",
    "INDEX_FILE",
]
__all__ += errors.__all__  # (+= so that type checkers see the names)


class CheckReport:
    """What ``gulp.check`` found: counts, ``problems`` (damage: each a dict
    with ``kind``, ``path``, ``id``, ``frame``, ``offset``, ``message``
    where known) and ``notes`` (leftovers of an interrupted write, cleared
    by ``gulp.recover``)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        self.chunks: int = data["chunks"]
        self.items: int = data["items"]
        self.frames: int = data["frames"]
        self.bytes: int = data["bytes"]
        self.decoded: int = data["decoded"]
        self.problems: list[dict[str, Any]] = data["problems"]
        self.notes: list[dict[str, Any]] = data["notes"]

    @property
    def is_clean(self) -> bool:
        """Whether no problem was found (notes do not count)."""
        return not self.problems

    def __bool__(self) -> bool:
        return self.is_clean

    def to_dict(self) -> dict[str, Any]:
        """The report as a dict (the JSON of ``gulp check --json``)."""
        return dict(self._data)

    def __repr__(self) -> str:
        state = "clean" if self.is_clean else f"{len(self.problems)} problems"
        return (
            f"CheckReport({state}: {self.chunks} chunks, {self.items} items, "
            f"{self.frames} frames, {len(self.notes)} notes)"
        )


def check(path: _Path, decode: bool = False, threads: Optional[int] = None) -> CheckReport:
    """Checks a gulp directory for every kind of damage (``gulp check``);
    ``decode=True`` also decodes every frame. Returns a :class:`CheckReport`."""
    return CheckReport(_json.loads(_gulp.check(path, decode, threads)))


class LintReport:
    """What ``gulp.lint`` found: ``items`` (items read), ``findings`` (each
    a dict ``{"check", "items": [{"dir", "id", "frames"}], "score",
    "detail"}``), ``classes`` (each directory's label histogram) and
    ``undecodable`` frames; the JSON of ``gulp lint --json``."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        self.items: int = data["items"]
        self.findings: list[dict[str, Any]] = data["findings"]
        self.classes: list[dict[str, int]] = data["classes"]
        self.undecodable: list[dict[str, Any]] = data["undecodable"]

    def by_check(self, check: str) -> list[dict[str, Any]]:
        """The findings of one check (``"near_duplicate"``, ``"dark"``, ...)."""
        return [f for f in self.findings if f["check"] == check]

    def __bool__(self) -> bool:
        """Whether nothing was found."""
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        """The report as a dict (the JSON of ``gulp lint --json``)."""
        return dict(self._data)

    def __repr__(self) -> str:
        return f"LintReport({self.items} items, {len(self.findings)} findings)"


def lint(paths: Union[_Path, Sequence[_Path]], checks: Optional[Sequence[str]] = None, *,
         ids_out: Union[None, _Path, Sequence[_Path]] = None,
         drop: Optional[Sequence[str]] = None, threads: Optional[int] = None,
         label_key: Optional[str] = None, near_distance: Optional[int] = None,
         dark: Optional[float] = None, light: Optional[float] = None,
         blank: Optional[float] = None, low_information: Optional[float] = None,
         blurry: Optional[float] = None, frozen_diff: Optional[float] = None,
         frozen_frames: Optional[int] = None, min_frames: Optional[int] = None,
         odd_size: Optional[float] = None, odd_aspect: Optional[float] = None,
         silent_audio: Optional[float] = None, clipped_audio: Optional[float] = None,
         min_class_items: Optional[int] = None) -> LintReport:
    """Finds what is wrong with gulp directories before training on them
    (``gulp lint``; docs/lint.md): duplicates, leaks across ``paths``,
    dark, light, blank, low-information, blurry and frozen frames, short
    items, odd sizes and aspect ratios, silent or clipped sound, label
    problems.

    ``checks``: the names to run (default: all). ``ids_out``: a file per
    directory (in the order of ``paths``) that gets the ids to keep, one
    per line: one item per group of copies, none with a finding of the
    checks in ``drop``; ``ClipLoader(ids=...)`` takes it as it is. The
    threshold keywords override the defaults of docs/lint.md (``None``
    keeps a default). Returns a :class:`LintReport`."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if isinstance(ids_out, (str, os.PathLike)):
        ids_out = [ids_out]
    given = {
        "near_distance": near_distance, "dark": dark, "light": light, "blank": blank,
        "low_information": low_information, "blurry": blurry, "frozen_diff": frozen_diff,
        "frozen_frames": frozen_frames, "min_frames": min_frames, "odd_size": odd_size,
        "odd_aspect": odd_aspect, "silent_audio": silent_audio,
        "clipped_audio": clipped_audio, "min_class_items": min_class_items,
    }
    thresholds = {name: float(v) for name, v in given.items() if v is not None}
    text = _gulp.lint(list(paths), None if checks is None else list(checks), thresholds,
                      None if ids_out is None else list(ids_out),
                      None if drop is None else list(drop), threads, label_key)
    return LintReport(_json.loads(text))


def status(path: _Path, shards: Optional[int] = None) -> dict[str, Any]:
    """Where a sharded ingest into ``path`` is (``gulp status --json``;
    docs/scale-out.md): ``shards``, ``running`` (its plan is in the
    directory), ``chunks_total``, ``chunks_committed``, ``complete``,
    ``tasks`` (each ``{"task", "state", "chunks", "committed", "missing"}``,
    ``state`` one of ``"done"``, ``"running"``, ``"stopped"``, ``"not
    started"``) and ``resubmit`` (the tasks to run again). ``shards``: the
    number of tasks, needed only when no run is under way (the plan says
    it otherwise). Raises ``InvalidInputError`` when neither says it."""
    return dict(_json.loads(_gulp.status(path, shards)))


def merge(out: _Path, dirs: Sequence[_Path]) -> dict[str, int]:
    """Moves the chunks of the shard directories ``dirs`` into ``out`` (``gulp
    merge``; docs/scale-out.md). Everything is checked before anything
    moves: a chunk or an id in two directories, labels numbered
    differently, an unfinished write raise ``IngestError`` and leave every
    directory as it was. Returns ``{"moved", "sources", "labels"}``: the
    chunks moved, the source directories, the labels of ``out``'s
    ``label2idx.json``."""
    return dict(_json.loads(_gulp.merge(out, list(dirs))))


def copy(src: _Path, dst: _Path, progress: bool = False) -> dict[str, Any]:
    """Copies the gulp directory ``src`` to ``dst`` (``gulp copy``): local
    paths or ``s3://bucket/prefix``, either way. Each chunk's data before its
    meta, ``label2idx.json`` and the index file last, temporary and lock files
    left out; each file checked against its source's MD5; a file already at
    ``dst`` with the same size and checksum skipped, so a copy that was
    stopped is finished by running it again. ``progress``: one line per file
    on stderr. Returns ``{"copied", "copied_bytes", "skipped", "unverified",
    "left_out"}``; raises ``InvalidInputError`` when ``dst`` holds chunks
    ``src`` has not."""
    return dict(_gulp.copy(src, dst, progress))


def recover(path: _Path) -> list[str]:
    """Clears what an interrupted write left in ``path`` (``gulp recover``);
    returns one message per file handled."""
    return _gulp.recover(path)


def ingest(kind: str, *inputs: _Path, output: _Path, videos_per_chunk: int = 100,
           num_workers: Optional[int] = None, frame_size: Optional[int] = None,
           max_size: Optional[int] = None, frame_rate: Optional[float] = None,
           quality: int = 90, subsampling: str = "auto",
           meta_format: str = "json", shuffle_seed: Optional[int] = None, strict: bool = False,
           label_name: str = "template", phase: str = "training", fsync: bool = True,
           shard: Union[None, str, tuple[int, int]] = None,
           shard_count: Optional[int] = None, root: Optional[_Path] = None,
           segments: bool = False, columns: Optional[dict[str, str]] = None,
           clip_length: Optional[float] = None, audio: bool = False,
           audio_rate: int = 16000, audio_channels: int = 1) -> dict[str, Any]:
    """Ingests a dataset with a built-in adapter of ``gulp ingest``, on every
    core, and returns the run's report (a dict).

    ``kind`` and its ``inputs``: '20bn-json' (input_json, videos_dir),
    '20bn-csv-webm' (input_csv, videos_dir), '20bn-csv-jpeg' (input_csv,
    jpeg_dir), 'video-folder' (videos_dir), 'image-folder' (images_dir),
    'image-list' (list_file, root_dir), 'kinetics' (input_csv, videos_dir),
    'activitynet' (input_json, videos_dir), 'epic-kitchens' (input_csv,
    videos_dir), 'manifest' (a .csv, .jsonl or .parquet table of clips:
    docs/manifests.md). Ids already in ``output`` are skipped, so running it
    again after an interruption completes the run.

    For a manifest: ``root`` (the folder of relative paths, default the
    manifest's), ``segments=True`` (one item per video, its rows as its
    ``segments``), ``columns`` (``{"path": "video", "start": "t0"}``: the
    column of each role that is not the role's name), ``clip_length``
    (seconds, for rows with a start and no end). ``audio=True`` keeps each
    video's sound (16-bit PCM at ``audio_rate`` Hz, ``audio_channels``).

    ``frame_size`` resizes frames by their short edge; ``max_size`` then
    brings a long edge over ``max_size`` pixels down to it (FFCV's
    ``max_resolution``); JPEGs that keep their size are stored as they are.

    ``shard=(i, n)`` (or ``"i/n"``, or ``"auto"`` for the scheduler's
    environment, with ``shard_count`` on Kubernetes) writes only task ``i``'s
    chunks of ``n``: ``n`` tasks into one shared directory give what one run
    gives (docs/scale-out.md).
    """
    _ffmpeg.register()
    if isinstance(shard, tuple):
        shard = f"{shard[0]}/{shard[1]}"
    return _gulp.ingest(
        kind, [str(i) for i in inputs], str(output),
        videos_per_chunk=videos_per_chunk, num_workers=num_workers,
        frame_size=frame_size, max_size=max_size, frame_rate=frame_rate, quality=quality,
        subsampling=subsampling, meta_format=meta_format, shuffle_seed=shuffle_seed,
        strict=strict, label_name=label_name, phase=phase, fsync=fsync, shard=shard,
        shard_count=shard_count, root=None if root is None else str(root), segments=segments,
        columns=columns, clip_length=clip_length, audio=audio, audio_rate=audio_rate,
        audio_channels=audio_channels,
    )
