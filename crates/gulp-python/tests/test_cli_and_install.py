"""The package as users get it: the wheel installed gives `import gulp`, the
`gulp` command and the distribution's metadata."""

import os
import subprocess
import sys

import gulp


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
    the wheel alone, without build tools, is scripts/wheel-test.sh."""
    from importlib import metadata

    dist = metadata.distribution("gulp-video")
    meta = dist.metadata
    assert meta["Name"] == "gulp-video" and meta["Version"] == gulp.__version__
    assert meta["Requires-Python"] == ">=3.9"  # the abi3 floor of the extension
    assert "MIT" in meta["License"] and "Apache-2.0" in meta["License"]
    assert "GulpIO" in meta["Summary"]
    assert "Typing :: Typed" in meta.get_all("Classifier")
    urls = {u.split(",")[0] for u in meta.get_all("Project-URL")}
    assert {"Repository", "Documentation"} <= urls
    assert "drop-in replacement for gulpio2" in meta.get_payload()  # the README
    assert [r for r in dist.requires if "extra ==" not in r] == ["numpy>=1.21"]
    files = {str(f) for f in dist.files}
    assert {"gulp/py.typed", "gulp/_gulp.pyi"} <= files
    scripts = [(e.name, e.value) for e in dist.entry_points if e.group == "console_scripts"]
    assert scripts == [("gulp", "gulp._cli:main")]
