"""The ffmpeg bundled by the optional ``imageio-ffmpeg`` package
(``pip install "gulp-video[ffmpeg]"``), handed to the native ingest.

Which ffmpeg runs is decided in one place, gulp_ingest's ``ffmpeg`` module:
``GULP_FFMPEG``, then ``ffmpeg`` on the PATH, then the binary registered
here, which also takes the place of an ``ffmpeg`` on the PATH older than
4.0. ``_gulp.ffmpeg_path()`` gives the one chosen, or an error naming the
three ways to get one.
"""

from __future__ import annotations

from typing import Optional

from . import _gulp


def _bundled() -> Optional[str]:
    try:
        import imageio_ffmpeg
    except ImportError:
        return None
    try:
        exe: str = imageio_ffmpeg.get_ffmpeg_exe()
    except Exception:  # no binary for this platform, nor any ffmpeg at all
        return None
    return exe


def register() -> None:
    """Registers imageio-ffmpeg's binary with the native ingest, when that
    package is installed (imported only before an ingest, not with ``gulp``)."""
    _gulp.set_bundled_ffmpeg(_bundled())


def path() -> str:
    """The ffmpeg an ingest runs; ``IngestError`` (one line naming the ways
    to get one) when there is none or it is too old."""
    register()
    return _gulp.ffmpeg_path()
