#!/usr/bin/env python3
"""Keeps the documentation's examples true where a machine can check them:

- every ```python block of README.md and docs/*.md runs, against the sample
  directory of scripts/sample.sh: the names the examples leave to the reader
  are bound (`path` to the sample directory, `epic` to its EPIC-Kitchens-
  style twin beside it, `epochs` to 1, `dist` to a single-rank stand-in of
  torch.distributed), `s3://...` directories are replaced by the sample
  directory and the example ids by one of its ids; a block that imports
  gulp.torch runs only where torch is installed, one that imports lightning
  only where lightning is (it is reported as skipped otherwise);
- every `gulp ...` command line of their ```sh blocks parses: the
  subcommand exists and `gulp <subcommand> [kind] --help` lists every flag
  the line uses.

    python scripts/check-docs.py SAMPLE_DIR [GULP]

SAMPLE_DIR is a gulp directory (scripts/sample.sh makes sample/gulp), GULP
the command (default: `gulp` beside this interpreter). Run it with the
Python that has the gulp package. Exits 1 and names the file and block of
every failure.
"""

import glob
import os
import re
import shlex
import subprocess
import sys
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r"^```(\w*)\s*$")
EXAMPLE_IDS = ("12345", "702766")


def blocks(path):
    """(language, first line number, text) of each fenced block."""
    lang, start, lines = None, 0, []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = FENCE.match(line.rstrip("\n"))
            if m and lang is None:
                lang, start, lines = m.group(1) or "text", number + 1, []
            elif line.strip() == "```" and lang is not None:
                yield lang, start, "".join(lines)
                lang = None
            elif lang is not None:
                lines.append(line)


class _Dist:
    """A single-process stand-in for torch.distributed."""

    @staticmethod
    def get_rank():
        return 0

    @staticmethod
    def get_world_size():
        return 1


def run_python(where, code, sample, first_id):
    for marker, module in (("gulp.torch", "torch"), ("import lightning", "lightning")):
        if marker in code:
            try:
                __import__(module)
            except ImportError:
                return f"skipped ({module} is not installed)"
    code = re.sub(r'"s3://[^"]*"', repr(sample), code)
    for example in EXAMPLE_IDS:
        code = code.replace(f'"{example}"', repr(first_id))
    epic = os.path.join(os.path.dirname(sample), "epic")
    namespace = {"path": sample, "epic": epic, "epochs": 1, "dist": _Dist(),
                 "__name__": "__docs__"}
    exec(compile("import gulp\n" + code, where, "exec"), namespace)
    return "ran"


def flags_of(line):
    """The subcommand words and the --flags of a `gulp ...` command line."""
    line = line.split(" #", 1)[0].replace("[", " ").replace("]", " ")
    words = shlex.split(line, posix=True)
    at = next(i for i, w in enumerate(words) if os.path.basename(w) == "gulp")
    words = words[at + 1:]
    if not words or words[0].startswith("-"):
        return None, None
    sub = [words[0]]
    if words[0] == "ingest" and len(words) > 1 and not words[1].startswith("-"):
        # `gulp ingest ... DIR --shard auto`: the options every kind shares.
        sub.append("20bn-json" if words[1] == "..." else words[1])
    flags = sorted({w.split("=", 1)[0] for w in words if w.startswith("--")})
    return sub, flags


def check_command(gulp, sub, flags, help_cache):
    key = tuple(sub)
    if key not in help_cache:
        out = subprocess.run([gulp, *sub, "--help"], capture_output=True, text=True)
        help_cache[key] = out.stdout if out.returncode == 0 else None
    text = help_cache[key]
    if text is None:
        return f"`gulp {' '.join(sub)}` is not a command"
    missing = [f for f in flags if f != "--help" and not re.search(re.escape(f) + r"\b", text)]
    if missing:
        return f"`gulp {' '.join(sub)} --help` does not list {', '.join(missing)}"
    return None


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    sample = os.path.abspath(sys.argv[1])
    gulp_cmd = sys.argv[2] if len(sys.argv) == 3 else os.path.join(os.path.dirname(sys.executable), "gulp")
    import gulp

    first_id = sorted(gulp.GulpDirectory(sample).ids())[0]
    files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    failures, counts, help_cache = [], {"ran": 0, "skipped": 0, "commands": 0}, {}
    cwd = os.getcwd()
    for path in files:
        rel = os.path.relpath(path, ROOT)
        for lang, line, text in blocks(path):
            where = f"{rel}:{line}"
            if lang == "python":
                os.chdir(sample)  # anything an example writes goes beside the sample
                try:
                    outcome = run_python(where, text, sample, first_id)
                    counts["skipped" if outcome.startswith("skipped") else "ran"] += 1
                    if outcome != "ran":
                        print(f"check-docs: {where}: {outcome}")
                except Exception:
                    failures.append(f"{where}: the example fails:\n{traceback.format_exc()}")
                finally:
                    os.chdir(cwd)
            elif lang in ("sh", "bash", "console"):
                for offset, command in enumerate(text.splitlines()):
                    if not re.match(r"^\s*(\S*/)?gulp\s", command):
                        continue
                    sub, flags = flags_of(command)
                    if sub is None:
                        continue
                    counts["commands"] += 1
                    problem = check_command(gulp_cmd, sub, flags, help_cache)
                    if problem:
                        failures.append(f"{rel}:{line + offset}: {problem}")
    for failure in failures:
        print(f"check-docs: {failure}", file=sys.stderr)
    print(f"check-docs: {counts['ran']} Python examples ran, {counts['skipped']} skipped, "
          f"{counts['commands']} gulp command lines parse; {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
