"""gulp: read and write GulpIO / gulpio2 video datasets, fast.

A drop-in replacement for gulpio2: replace ``import gulpio2`` by
``import gulp`` and the same code reads the same directories, several times
faster, with frames decoded by libjpeg-turbo in Rust while the GIL is
released::

    import gulp
    gd = gulp.GulpDirectory("/data/something-something")
    frames, meta = gd["12345"]            # list of H×W×3 uint8 arrays, dict
    frames, meta = gd["12345", ::2]       # gulpio2's selectors
    small = gd.read("12345", scale="1/2")  # DCT-domain downscaling
    jpegs = gd.raw("12345")               # zero-copy memoryviews of the map

``gulp.fileio``, ``gulp.utils`` and ``gulp.adapters`` carry gulpio2's names;
``gulp.ingest`` runs the built-in adapters of the ``gulp`` command,
``gulp.check`` checks a directory, ``gulp.ClipLoader`` gives training
batches of clips (``gulp.torch`` wraps it for PyTorch, ``gulp.dataset`` and
``gulp.transforms`` carry GulpIO v1's), and every error is a
``gulp.GulpError``.
"""

import json as _json

from . import _gulp
from . import adapters, errors, fileio, utils
from .clips import Batch, ClipLoader
from .errors import *  # noqa: F401,F403 (the exception classes, re-exported)
from .fileio import ChunkWriter, GulpChunk, GulpDirectory, GulpIngestor

__version__ = _gulp.__version__
#: The JPEG codec this build decodes with.
CODEC = _gulp.CODEC

__all__ = [
    "GulpDirectory",
    "GulpChunk",
    "ChunkWriter",
    "GulpIngestor",
    "ClipLoader",
    "Batch",
    "CheckReport",
    "check",
    "ingest",
    "recover",
    "adapters",
    "errors",
    "fileio",
    "utils",
    "__version__",
] + errors.__all__


class CheckReport:
    """What ``gulp.check`` found: counts, ``problems`` (damage: each a dict
    with ``kind``, ``path``, ``id``, ``frame``, ``offset``, ``message``
    where known) and ``notes`` (leftovers of an interrupted write, cleared
    by ``gulp.recover``)."""

    def __init__(self, data):
        self._data = data
        self.chunks = data["chunks"]
        self.items = data["items"]
        self.frames = data["frames"]
        self.bytes = data["bytes"]
        self.decoded = data["decoded"]
        self.problems = data["problems"]
        self.notes = data["notes"]

    @property
    def is_clean(self):
        """Whether no problem was found (notes do not count)."""
        return not self.problems

    def __bool__(self):
        return self.is_clean

    def to_dict(self):
        """The report as a dict (the JSON of ``gulp check --json``)."""
        return dict(self._data)

    def __repr__(self):
        state = "clean" if self.is_clean else f"{len(self.problems)} problems"
        return (
            f"CheckReport({state}: {self.chunks} chunks, {self.items} items, "
            f"{self.frames} frames, {len(self.notes)} notes)"
        )


def check(path, decode=False, threads=None):
    """Checks a gulp directory for every kind of damage (``gulp check``);
    ``decode=True`` also decodes every frame. Returns a :class:`CheckReport`."""
    return CheckReport(_json.loads(_gulp.check(path, decode, threads)))


def recover(path):
    """Clears what an interrupted write left in ``path`` (``gulp recover``);
    returns one message per file handled."""
    return _gulp.recover(path)


def ingest(kind, *inputs, output, videos_per_chunk=100, num_workers=None, frame_size=None,
           frame_rate=None, quality=90, subsampling="auto", meta_format="json",
           shuffle_seed=None, strict=False, label_name="template", phase="training",
           fsync=True, shard=None, shard_count=None):
    """Ingests a dataset with a built-in adapter of ``gulp ingest``, on every
    core, and returns the run's report (a dict).

    ``kind`` and its ``inputs``: '20bn-json' (input_json, videos_dir),
    '20bn-csv-webm' (input_csv, videos_dir), '20bn-csv-jpeg' (input_csv,
    jpeg_dir), 'video-folder' (videos_dir), 'image-folder' (images_dir),
    'image-list' (list_file, root_dir), 'kinetics' (input_csv, videos_dir),
    'activitynet' (input_json, videos_dir). Ids already in ``output`` are
    skipped, so running it again after an interruption completes the run.

    ``shard=(i, n)`` (or ``"i/n"``, or ``"auto"`` for the scheduler's
    environment, with ``shard_count`` on Kubernetes) writes only task ``i``'s
    chunks of ``n``: ``n`` tasks into one shared directory give what one run
    gives (docs/scale-out.md).
    """
    if isinstance(shard, tuple):
        shard = f"{shard[0]}/{shard[1]}"
    return _gulp.ingest(
        kind, [str(i) for i in inputs], str(output),
        videos_per_chunk=videos_per_chunk, num_workers=num_workers,
        frame_size=frame_size, frame_rate=frame_rate, quality=quality,
        subsampling=subsampling, meta_format=meta_format, shuffle_seed=shuffle_seed,
        strict=strict, label_name=label_name, phase=phase, fsync=fsync, shard=shard,
        shard_count=shard_count,
    )
