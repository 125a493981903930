"""The package as users get it: `pip install ./crates/gulp-python` into a
fresh venv gives `import gulp` and the `gulp` command."""

import os
import subprocess
import sys
import venv

import gulp

CRATE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def test_pip_install_into_a_fresh_venv(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = str(env_dir / "bin" / "python")
    out = run(py, "-m", "pip", "install", "--disable-pip-version-check", "-q", CRATE,
              timeout=1800)
    assert out.returncode == 0, out.stdout + out.stderr
    out = run(py, "-c", "import gulp, numpy; print(gulp.__version__, gulp.CODEC)",
              cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [gulp.__version__, "libjpeg-turbo"]
    out = run(str(env_dir / "bin" / "gulp"), "--help")
    assert out.returncode == 0 and "Usage" in out.stdout
    # numpy is the only dependency.
    out = run(py, "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check")
    names = {line.split("==")[0].lower() for line in out.stdout.split()}
    assert names - {"pip", "setuptools", "wheel"} == {"gulp", "numpy"}
