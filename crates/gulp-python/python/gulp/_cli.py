"""The ``gulp`` console script: the Rust command line, run in this process."""

from __future__ import annotations

import signal
import sys
from typing import NoReturn

from . import _ffmpeg, _gulp


def main() -> NoReturn:
    # Ctrl-C ends the command as it ends the native binary (ingest commits
    # are atomic, so nothing half-written is left visible).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if "ingest" in sys.argv[1:]:
        _ffmpeg.register()
    sys.exit(_gulp.cli_main(["gulp"] + sys.argv[1:]))


if __name__ == "__main__":
    main()
