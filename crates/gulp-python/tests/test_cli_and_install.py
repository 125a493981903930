"""The package as users get it: the wheel installed gives `import gulp`, the
`gulp` command and the distribution's metadata."""

import os
import shutil
import subprocess
import sys

import pytest

import gulp
from gulp import _gulp


def run(*args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


def test_gulp_command_from_this_environment(any_dir):
    bin_dir = os.path.dirname(sys.executable)
    gulp_cmd = os.path.join(bin_dir, "gulp")
    out = run(gulp_cmd, "--help")
    assert out.returncode == 0 and "ingest" in out.stdout and "check" in out.stdout
    out = run(gulp_cmd, "check", any_dir)
    assert out.returncode == 0, out.stderr
    out = run(gulp_cmd, "info", any_dir)
    assert out.returncode == 0 and "7" in out.stdout
    out = run(gulp_cmd, "dump-meta", any_dir, "--id", "nope")
    assert out.returncode == 2 and "nope" in out.stderr
    out = run(sys.executable, "-m", "gulp", "--version")
    assert out.returncode == 0 and gulp.__version__ in out.stdout


def test_the_installed_distribution_is_gulp_video():
    """Installed as the distribution `gulp-video` (`gulp` on the package
    registry is another project), with its metadata, the type stubs, the
    console script, and numpy as the only dependency. A fresh venv with
    the wheel alone, without build tools, is scripts/ci/wheel-test.sh."""
    from importlib import metadata

    dist = metadata.distribution("gulp-video")
    meta = dist.metadata
    assert meta["Name"] == "gulp-video" and meta["Version"] == gulp.__version__
    assert meta["Requires-Python"] == ">=3.9"  # the abi3 floor of the extension
    assert "MIT" in meta["License"] and "Apache-2.0" in meta["License"]
    assert "GulpIO" in meta["Summary"]
    assert "Typing :: Typed" in meta.get_all("Classifier")
    # No project URLs until the project has a public home (none rather than
    # placeholders).
    assert meta.get_all("Project-URL") is None
    assert "drop-in replacement for gulpio2" in meta.get_payload()  # the README
    assert [r for r in dist.requires if "extra ==" not in r] == ["numpy>=1.21"]
    assert sorted(meta.get_all("Provides-Extra")) == ["ffmpeg", "torch"]
    files = {str(f) for f in dist.files}
    assert {"gulp/py.typed", "gulp/_gulp.pyi"} <= files
    # Both licences, named in the metadata and shipped in the wheel.
    assert sorted(meta.get_all("License-File")) == ["LICENSE-APACHE", "LICENSE-MIT"]
    for name in ("LICENSE-MIT", "LICENSE-APACHE"):
        (shipped,) = [f for f in dist.files if f.name == name]
        assert "Permission is hereby granted" in shipped.read_text() or \
            "Apache License" in shipped.read_text()
    scripts = [(e.name, e.value) for e in dist.entry_points if e.group == "console_scripts"]
    assert scripts == [("gulp", "gulp._cli:main")]


def test_the_bundled_ffmpeg_takes_the_place_of_an_old_one_on_the_path(tmp_path, monkeypatch):
    """An ffmpeg on the PATH older than 4.0 gives way to the bundled one
    (the [ffmpeg] extra's), when there is one; GULP_FFMPEG never does."""
    real = shutil.which("ffmpeg")
    if real is None:
        pytest.skip("no ffmpeg to stand for the bundled one")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    old = bin_dir / "ffmpeg"
    old.write_text(
        "#!/bin/sh\n"
        "echo 'ffmpeg version 3.4.8-0ubuntu0.2 Copyright (c) 2000-2020 the FFmpeg developers'\n"
        "echo 'libavformat    57. 83.100 / 57. 83.100'\n"
    )
    old.chmod(0o755)
    monkeypatch.delenv("GULP_FFMPEG", raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    try:
        _gulp.set_bundled_ffmpeg(None)
        with pytest.raises(gulp.IngestError, match="is ffmpeg 3.4.8"):
            _gulp.ffmpeg_path()
        _gulp.set_bundled_ffmpeg(real)
        assert os.fsdecode(_gulp.ffmpeg_path()) == real
        monkeypatch.setenv("GULP_FFMPEG", str(old))
        with pytest.raises(gulp.IngestError, match="is ffmpeg 3.4.8"):
            _gulp.ffmpeg_path()
    finally:
        _gulp.set_bundled_ffmpeg(None)


def test_an_ffmpeg_older_than_4_0_is_refused(tmp_path, monkeypatch):
    """The ffmpeg an ingest would run (here GULP_FFMPEG) is checked to be
    4.0 or later: an older one is one line naming it, its version and the
    ways to get another, from gulp.ingest and gulpio2's utils alike."""
    old = tmp_path / "ffmpeg-3.4"
    old.write_text(
        "#!/bin/sh\n"
        "echo 'ffmpeg version 3.4.8-0ubuntu0.2 Copyright (c) 2000-2020 the FFmpeg developers'\n"
        "echo 'libavformat    57. 83.100 / 57. 83.100'\n"
    )
    old.chmod(0o755)
    (tmp_path / "videos" / "cls").mkdir(parents=True)
    (tmp_path / "videos" / "cls" / "a.mp4").write_bytes(b"not read")
    monkeypatch.setenv("GULP_FFMPEG", str(old))
    want = (f"{old} is ffmpeg 3.4.8-0ubuntu0.2 (libavformat 57); gulp needs ffmpeg 4.0 or later: "
            "set GULP_FFMPEG to an ffmpeg binary, put `ffmpeg` on the PATH (e.g. `apt-get install "
            'ffmpeg`), or `pip install "gulp-video[ffmpeg]"` for a static build')
    try:
        gulp.ingest("video-folder", tmp_path / "videos", output=tmp_path / "out")
    except gulp.IngestError as e:
        # The item it stopped at, then the reason.
        assert str(e) == f'item "cls-a.mp4" (input #0): {want}', str(e)
    else:
        raise AssertionError("an ffmpeg 3.4 was run")
    assert not gulp.utils.check_ffmpeg_exists()
    try:
        gulp.utils.burst_frames_to_shm(str(tmp_path / "videos" / "cls" / "a.mp4"), str(tmp_path))
    except gulp.utils.FFMPEGNotFound as e:
        assert str(e) == want, str(e)
    else:
        raise AssertionError("an ffmpeg 3.4 was run")
