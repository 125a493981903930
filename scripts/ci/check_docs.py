#!/usr/bin/env python3
"""Keeps the documentation's examples true where a machine can check them:

- every ```python block of README.md, CONTRIBUTING.md and docs/**/*.md runs, against the sample
  directory of scripts/sample.sh: the names the examples leave to the reader
  are bound (`path` to the sample directory, `epic` to its EPIC-Kitchens-
  style twin beside it, `epochs` to 1, `dist` to a single-rank stand-in of
  torch.distributed), `s3://...` directories are replaced by the sample
  directory and the example ids by one of its ids; a block that imports
  gulp.torch runs only where torch is installed, one that imports lightning
  only where lightning is (it is reported as skipped otherwise);
- every `gulp ...` command line of their ```sh blocks parses: the
  subcommand exists and `gulp <subcommand> [kind] --help` lists every flag
  the line uses; no line names an `s3://` URL with a `*` (no shell and no
  gulp command expands it), runs `gulp recover` on a bucket, or runs
  `target/release/gulp` in a block that does not build it first (the test
  and sample commands give `.venv/bin/gulp`);
- a ```python block with a `title="gulp/..."` (a file of the package, as
  docs/guide.md shows gulp/examples/train_ddp.py) is that file, byte for
  byte: the page and the module cannot drift apart;
- every relative link of README.md and CONTRIBUTING.md (outside the site,
  which `mkdocs build --strict` checks) names a file that exists;
- every measured figure that several pages quote is quoted as
  scripts/ci/figures.py gives it, on each page that it lists (the check first
  shows on an example of its own that it fails two pages that disagree);
- a section named in the text (`docs/loader.md, "Pixels"`, `format.md §8.2`)
  is a heading of the page named;
- the walk-throughs (WALKTHROUGHS: docs/guide.md, docs/manifests.md) run
  from top to bottom as written, each in a temporary directory: their shell
  blocks (but `pip install`, `gulp serve` and `torchrun` lines, and blocks
  for a Slurm cluster) and their Python blocks (those of gulp.torch where
  torch is);
- the README's quick start (the ```sh and ```python blocks under "## Quick
  start") runs as written, in a temporary directory where a folder
  `videos/<class>/<video>.mp4` of short clips has been made with ffmpeg;
  where torch is missing, the lines that use torch, or a name assigned from
  torch, are left out (and said so).

    python scripts/ci/check_docs.py SAMPLE_DIR [GULP]
    python3 scripts/ci/check_docs.py --figures     # the figures and section names alone (no gulp needed)

SAMPLE_DIR is a gulp directory (scripts/sample.sh makes sample/gulp), GULP
the command (default: `gulp` beside this interpreter). Run it with the
Python that has the gulp package. Exits 1 and names the file and block of
every failure.
"""

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ```lang, ```lang,attributes or ```lang title="..." (mkdocs): the language.
FENCE = re.compile(r"^```([\w+-]*)[^`]*$")
EXAMPLE_IDS = ("12345", "702766")


def blocks(path):
    """(language, first line number, text) of each fenced block of a file."""
    with open(path, encoding="utf-8") as f:
        yield from blocks_of(f)


def blocks_of(lines_in):
    """(language, first line number, text) of each fenced block of lines."""
    lang, start, lines = None, 0, []
    for number, line in enumerate(lines_in, 1):
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


SNIPPET = re.compile(r'^\s*-+8<-+\s+"([^"]+)"\s*$', re.M)


def with_snippets(code):
    """A block with its mkdocs snippet lines (`--8<-- "scripts/x.py"`)
    replaced by the files they include, as the site shows it."""
    return SNIPPET.sub(lambda m: open(os.path.join(ROOT, m.group(1)), encoding="utf-8").read(), code)


def run_python(where, code, sample, first_id):
    code = with_snippets(code)
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


# ```python title="gulp/examples/train_ddp.py": a block that shows a file.
TITLED = re.compile(r'^```[\w+-]*\s+title="([^"]+)"\s*$')
PACKAGE = os.path.join(ROOT, "crates", "gulp-python", "python")


def titled_problems(path):
    """The blocks of a page titled with a file of the package (or of the
    repository) that are not that file, as it is."""
    problems, title, start, lines, inside = [], None, 0, [], False
    rel = os.path.relpath(path, ROOT)
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = TITLED.match(line.rstrip("\n")) if not inside else None
            if m:
                title, start, lines, inside = m.group(1), number, [], True
            elif not inside and FENCE.match(line.rstrip("\n")):
                inside, title = True, None
            elif inside and line.strip() == "```":
                inside = False
                if title is None:
                    continue
                target = next((os.path.join(base, title) for base in (PACKAGE, ROOT)
                               if os.path.isfile(os.path.join(base, title))), None)
                if target is None:
                    problems.append(f"{rel}:{start}: the block titled {title} names no file")
                elif open(target, encoding="utf-8").read() != "".join(lines):
                    problems.append(f"{rel}:{start}: the block titled {title} is not "
                                    f"{os.path.relpath(target, ROOT)} as it is: copy the file into it")
            elif inside:
                lines.append(line)
    return problems


def quick_start(readme):
    """The README's quick start: its ```sh block and its ```python block."""
    text = open(readme, encoding="utf-8").read()
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    start = text.count("\n", 0, text.index("\n## Quick start\n")) + 2
    found = {}
    for lang, line, code in blocks_of(section.splitlines(keepends=True)):
        found.setdefault(lang, (start + line, code))
    if set(found) != {"sh", "python"}:
        raise ValueError(f"README.md's quick start has blocks {sorted(found)}, not one sh and one python")
    return found["sh"], found["python"]


def without_torch(lines):
    """The lines that neither use torch nor a name a torch line assigned
    (`model = torch...`, then `optimizer = ...(model...)`, ...)."""
    tainted = {"torch"}
    for line in lines:
        if any(re.search(rf"\b{re.escape(name)}\b", line) for name in tainted):
            tainted.update(re.findall(r"^\s*(\w+)\s*=", line))
            continue
        yield line


# Lines of the guide's shell blocks that a check does not run: installing,
# a server that runs until stopped, and training (torchrun needs torch; the
# script is checked by scripts/ddp-check.sh).
GUIDE_SKIP = re.compile(r"^\s*(pip install|gulp serve|torchrun)\b")


# The pages that run from top to bottom as written, on what they make.
WALKTHROUGHS = ("docs/guide.md", "docs/manifests.md")


def run_walkthrough(guide, gulp_cmd):
    """Runs a walk-through page from top to bottom in a fresh directory: each
    ```sh block as one bash script (but the lines of GUIDE_SKIP), each
    ```python block in one namespace (those that use gulp.torch only where
    torch is installed). Returns what was left out; raises with the block
    that failed."""
    page = os.path.relpath(guide, ROOT)
    work = tempfile.mkdtemp(prefix="gulp-walkthrough.")
    env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(gulp_cmd)) + os.pathsep + os.environ["PATH"])
    namespace = {"__name__": "__docs__"}
    skipped, cwd = [], os.getcwd()
    try:
        for lang, line, code in blocks(guide):
            where = f"{page}:{line}"
            if lang in ("sh", "bash") and re.search(r"\bsrun\b|\$SLURM_|\$\{SLURM_", code):
                skipped.append(f"{where} (a Slurm cluster's)")
            elif lang in ("sh", "bash"):
                kept = [c for c in code.splitlines() if not GUIDE_SKIP.match(c)]
                skipped += [f"{where}+{i}" for i, c in enumerate(code.splitlines()) if GUIDE_SKIP.match(c)]
                done = subprocess.run(["bash", "-euo", "pipefail", "-c", "\n".join(kept)], cwd=work,
                                      env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    raise RuntimeError(f"{where}: the block exited {done.returncode}:\n{done.stdout}{done.stderr}")
            elif lang == "python":
                code = with_snippets(code)
                if "gulp.torch" in code:
                    try:
                        __import__("torch")
                    except ImportError:
                        skipped.append(f"{where} (torch is not installed)")
                        continue
                os.chdir(work)
                try:
                    exec(compile("import gulp\n" + code, where, "exec"), namespace)
                finally:
                    os.chdir(cwd)
    finally:
        shutil.rmtree(work)
    return skipped


def run_quick_start(readme, gulp_cmd):
    """Runs the quick start in a fresh directory with a folder of videos;
    returns what was left out, or raises with the failing line."""
    (sh_line, sh), (py_line, py) = quick_start(readme)
    work = tempfile.mkdtemp(prefix="gulp-quick-start.")
    cwd = os.getcwd()
    try:
        for c, source in enumerate(("testsrc2", "mandelbrot", "smptebars")):
            os.makedirs(os.path.join(work, "videos", f"class{c}"))
            for i in range(4):
                subprocess.run(
                    ["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i",
                     f"{source}=size=160x120:rate=25,hue=h={i * 40}", "-t", "2", "-pix_fmt",
                     "yuv420p", os.path.join(work, "videos", f"class{c}", f"v{i}.mp4")], check=True)
        env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(gulp_cmd)) + os.pathsep + os.environ["PATH"])
        for offset, command in enumerate(sh.splitlines()):
            if not command.strip() or command.lstrip().startswith("#"):
                continue
            done = subprocess.run(command, shell=True, cwd=work, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"README.md:{sh_line + offset}: `{command}` exited {done.returncode}:\n"
                                   f"{done.stdout}{done.stderr}")
        left_out = ""
        try:
            __import__("torch")
        except ImportError:
            lines = py.splitlines(keepends=True)
            py = "".join(without_torch(lines))
            left_out = f"{len(lines) - len(py.splitlines())} torch lines left out (torch is not installed)"
        os.chdir(work)
        exec(compile(py, f"README.md:{py_line} (quick start)", "exec"), {"__name__": "__docs__"})
    finally:
        os.chdir(cwd)
        shutil.rmtree(work)
    return left_out


def line_problem(block, offset, command):
    """What is wrong with a `gulp` command line beyond its flags, or None."""
    words = command.split(" #", 1)[0].split()
    if any(w.startswith("s3://") and "*" in w for w in words):
        return "an s3:// URL with `*`: neither the shell nor gulp expands it; name each prefix"
    at = next((i for i, w in enumerate(words) if os.path.basename(w) == "gulp"), None)
    if at is not None and words[at + 1:at + 2] == ["recover"] and any(w.startswith("s3://") for w in words):
        return "`gulp recover` works on local directories only"
    if at is not None and words[at].endswith("target/release/gulp"):
        before = "\n".join(block.splitlines()[:offset])
        if not re.search(r"cargo (build|install)\b.*--release", before):
            return ("runs target/release/gulp, which no command of this block builds "
                    "(the test and sample commands give .venv/bin/gulp)")
    return None


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


# A figure in a quote of scripts/ci/figures.py: {name}, {name:.1f}, {name/1000:.1f}.
FIGURE = re.compile(r"\{(\w+)(?:/(\d+))?(?::([^}]*))?\}")
# What a page may have in a figure's place: 1,471 or 0.97 or 0.97–1.00.
NUMBER = r"([0-9][0-9,.]*(?:–[0-9][0-9,.]*)?)"


def flat(text):
    """Text with every run of whitespace (line breaks too) as one space."""
    return " ".join(text.split())


def figure_text(figures, name, divisor, spec):
    """A figure as a quote writes it: its value, or the number formatted."""
    value = figures[name]
    if divisor is None and spec is None:
        return value
    try:
        number = float(value.replace(",", ""))
    except ValueError:
        raise ValueError(f"scripts/ci/figures.py: {name} = {value!r} is not one number: "
                         "a quote can round or divide only a number") from None
    return format(number / int(divisor or 1), spec or "g")


def check_figures(figures, quotes, read):
    """The problems of the figures' quotes: a quote whose page (`read(page)`,
    its text) gives another value than `figures`, a quote not on its page, a
    name without a value, a figure quoted on fewer than two pages."""
    problems, texts, pages = [], {}, {}
    for page, quote in quotes:
        if page not in texts:
            texts[page] = flat(read(page))
        quote = flat(quote)
        names = [m.group(1) for m in FIGURE.finditer(quote)]
        for name in names:
            pages.setdefault(name, set()).add(page)
        unknown = [name for name in names if name not in figures]
        if unknown:
            problems.append(f"{page}: the quote «{quote}» names {', '.join(unknown)}, which FIGURES has not")
            continue
        if FIGURE.sub(lambda m: figure_text(figures, *m.groups()), quote) in texts[page]:
            continue
        pattern, at = "", 0
        for m in FIGURE.finditer(quote):
            pattern += re.escape(quote[at:m.start()]) + NUMBER
            at = m.end()
        found = re.search(pattern + re.escape(quote[at:]), texts[page])
        if found is None:
            problems.append(f"{page}: the quote «{quote}» is not on the page: reworded, or the figure moved? "
                            "(scripts/ci/figures.py)")
            continue
        for m, quoted in zip(FIGURE.finditer(quote), found.groups()):
            expected = figure_text(figures, *m.groups())
            if quoted != expected:
                value = figures[m.group(1)]
                written = "" if expected == value else f", written {expected} here"
                problems.append(f"{page}: quotes {m.group(1)} as {quoted}, where scripts/ci/figures.py gives "
                                f"{value}{written}: «{found.group(0)}»")
    for name in figures:
        if len(pages.get(name, ())) < 2:
            problems.append(f"scripts/ci/figures.py: {name} is quoted on {len(pages.get(name, ()))} page(s); "
                            "a figure there is one that several pages quote")
    return problems


def figures_self_test():
    """Shows that check_figures fails where it should (two pages that quote
    one figure differently, a rounding or a unit that is not the figure's, a
    quote that left its page, a figure no page quotes) and only there;
    raises AssertionError otherwise."""
    figures = {"bytes": "0.97–1.00", "open": "0.37", "memory": "1,471"}
    quotes = [("a.md", "fetched {bytes}× their bytes; opens in {open} s, +{memory} MB"),
              ("b.md", "each epoch\nfetched {bytes} × the bytes"),
              ("c.md", "opens in {open:.1f} s with {memory/1000:.1f} GB")]
    agree = {"a.md": "... fetched 0.97–1.00× their bytes; opens in 0.37 s, +1,471 MB ...",
             "b.md": "and each epoch\n  fetched 0.97–1.00 × the bytes of",
             "c.md": "It opens in 0.4 s with 1.5 GB."}

    def expect(pages, start, figures=figures):
        problems = check_figures(figures, quotes, pages.get)
        if [p[:len(start)] for p in problems] != ([start] if start else []):
            raise AssertionError(f"the figure check's self-test: {problems}, not one problem starting {start!r}")

    expect(agree, None)
    expect(dict(agree, **{"b.md": "and each epoch fetched 0.98–1.00 × the bytes of"}),
           "b.md: quotes bytes as 0.98–1.00")  # two pages that disagree
    expect(dict(agree, **{"c.md": "It opens in 0.3 s with 1.5 GB."}), "c.md: quotes open as 0.3,")
    expect(dict(agree, **{"c.md": "It opens in 0.4 s with 1.4 GB."}), "c.md: quotes memory as 1.4,")
    expect(dict(agree, **{"a.md": "fetched their bytes once; opens in 0.37 s, +1,471 MB"}),
           "a.md: the quote «fetched {bytes}× their bytes; opens in {open} s, +{memory} MB» is not on the page")
    expect(agree, "scripts/ci/figures.py: lost is quoted on 0 page(s)", dict(figures, lost="1"))


def page_text(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return f.read()


def figure_problems():
    """The problems of scripts/ci/figures.py's quotes against the pages, after
    the check has shown on its own example that it catches two that disagree."""
    figures_self_test()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import figures
    return check_figures(figures.FIGURES, figures.QUOTES, page_text)


# `page.md, "Section"` or `page.md §8.2`: a section named in the text.
SECTION_REF = re.compile(r"([\w./-]+\.md)\)?,? (?:\"([^\"]+)\"|§([0-9.]*[0-9]))")


def section_problems(pages):
    """Sections named by their title (`docs/loader.md, "Pixels"`) or number
    (`format.md §8.2`) that the page named has no heading for (a heading
    that starts with the title or the number)."""
    problems = []
    for page in pages:
        text = flat(page_text(page))
        for m in SECTION_REF.finditer(text):
            name, title, number = m.groups()
            target = next((os.path.normpath(os.path.join(base, name))
                           for base in (os.path.dirname(page), "docs", ".")
                           if os.path.isfile(os.path.join(ROOT, base, name))), None)
            if target is None:
                continue  # not a page of this repository; links are checked elsewhere
            headings = [h.lstrip("#").strip().strip("`") for h in page_text(target).splitlines()
                        if re.match(r"#{1,6} ", h)]
            if title is not None and not any(h.lower().startswith(title.lower()) for h in headings):
                problems.append(f"{page}: names the section \"{title}\" of {target}, which has none")
            if number is not None and not any(re.match(re.escape(number) + r"[. ]", h) for h in headings):
                problems.append(f"{page}: names §{number} of {target}, which has none")
    return problems


def text_problems():
    """What the checks of the pages' text find: figures and section names."""
    pages = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"] + sorted(
        os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    return figure_problems() + section_problems(pages)


def main():
    if sys.argv[1:] == ["--figures"]:
        problems = text_problems()
        for problem in problems:
            print(f"check-docs: {problem}", file=sys.stderr)
        print(f"check-docs: the figures and section names of the pages; {len(problems)} problems")
        return 1 if problems else 0
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    sample = os.path.abspath(sys.argv[1])
    gulp_cmd = sys.argv[2] if len(sys.argv) == 3 else os.path.join(os.path.dirname(sys.executable), "gulp")
    import gulp

    first_id = sorted(gulp.GulpDirectory(sample).ids())[0]
    readme = os.path.join(ROOT, "README.md")
    files = [readme, os.path.join(ROOT, "CONTRIBUTING.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    quick = {line for (line, _) in quick_start(readme)}
    walkthroughs = [os.path.join(ROOT, page) for page in WALKTHROUGHS]
    failures, counts, help_cache = [], {"ran": 0, "skipped": 0, "commands": 0}, {}
    cwd = os.getcwd()
    for path in files:
        rel = os.path.relpath(path, ROOT)
        for lang, line, text in blocks(path):
            where = f"{rel}:{line}"
            if (path == readme and line in quick) or (path in walkthroughs and lang == "python"):
                continue  # run below, as written, on its own folder of videos
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
                    problem = line_problem(text, offset, command) or check_command(
                        gulp_cmd, sub, flags, help_cache)
                    if problem:
                        failures.append(f"{rel}:{line + offset}: {problem}")
    # README.md and CONTRIBUTING.md are outside the site, so `mkdocs build
    # --strict` does not see their links: every relative one must exist.
    for path in files[:2]:
        text = open(path, encoding="utf-8").read()
        for target in re.findall(r"\]\(([^)#\s]+)", text):
            if "://" not in target and not os.path.exists(os.path.join(ROOT, target)):
                failures.append(f"{os.path.relpath(path, ROOT)}: a link to {target}, which does not exist")
    titled = [p for path in files for p in titled_problems(path)]
    print(f"check-docs: the blocks that show a file of the package: {len(titled)} problems")
    failures += titled
    problems = text_problems()
    print(f"check-docs: the figures of scripts/ci/figures.py and the sections named, on every page: "
          f"{len(problems)} problems (the figure check fails pages that disagree: self-test passed)")
    failures += problems
    for page, path in zip(WALKTHROUGHS, walkthroughs):
        try:
            skipped = run_walkthrough(path, gulp_cmd)
            print(f"check-docs: {page} ran as written (left out: {', '.join(skipped) or 'nothing'})")
        except Exception:
            failures.append(f"{page}: the walk-through fails:\n{traceback.format_exc()}")
    try:
        left_out = run_quick_start(readme, gulp_cmd)
        print("check-docs: README.md's quick start ran as written"
              + (f" ({left_out})" if left_out else ""))
    except Exception:
        failures.append(f"README.md: the quick start fails:\n{traceback.format_exc()}")
    for failure in failures:
        print(f"check-docs: {failure}", file=sys.stderr)
    print(f"check-docs: {counts['ran']} Python examples ran, {counts['skipped']} skipped, "
          f"{counts['commands']} gulp command lines parse; {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
