#!/usr/bin/env python3
"""Checks that module imports form a DAG: inside each crate of the workspace
(between the top-level modules of its src/, tests left out) and inside the
Python package `gulp` (every import, also the ones inside functions, but
not those under `if TYPE_CHECKING:`). Prints each cycle and exits 1 if there
is one; prints the module counts and exits 0 otherwise.

Also fails when a `pub struct` or `pub enum` name is defined in two crates
(one public type per concept: the others re-export it), and when a non-test
function in crates/*/src is over 100 lines (gulp-test-support left out).

    python3 scripts/ci/check_imports.py
"""

import ast
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cycles(graph):
    """The cycles of a directed graph (one per strongly connected component
    of more than one node, or a node with an edge to itself)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def strip_tests(text):
    """Rust source without its `#[cfg(test)]` module (the rest of the file
    from that attribute on: test modules come last in this workspace) and
    without comments (a doc link is no dependency)."""
    at = text.find("#[cfg(test)]")
    text = text if at < 0 else text[:at]
    return re.sub(r"//[^\n]*", "", text)


USE_GROUP = re.compile(r"use\s+crate::\{([^;]*)\};", re.S)
CRATE_PATH = re.compile(r"\bcrate::(\w+)")


def rust_graph(src):
    """Edges between the top-level modules of one crate's src/ folder."""
    lib = os.path.join(src, "lib.rs")
    if not os.path.exists(lib):
        lib = os.path.join(src, "main.rs")
    modules = set()
    reexports = {}  # name re-exported at the root -> its module
    lib_text = strip_tests(open(lib).read())
    for m in re.finditer(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", lib_text, re.M):
        modules.add(m.group(1))
    for m in re.finditer(r"pub(?:\([^)]*\))?\s+use\s+crate::(\w+)::(\{[^;]*\}|\w+)\s*;", lib_text, re.S):
        module, names = m.group(1), m.group(2)
        for name in re.findall(r"\w+", names):
            reexports.setdefault(name, module)
    graph = {m: set() for m in modules}
    edges = {}
    for module in modules:
        files = []
        single = os.path.join(src, module + ".rs")
        if os.path.exists(single):
            files.append(single)
        folder = os.path.join(src, module)
        for dirpath, _, names in os.walk(folder):
            files += [os.path.join(dirpath, n) for n in names if n.endswith(".rs")]
        for path in files:
            text = strip_tests(open(path).read())
            targets = set(CRATE_PATH.findall(text))
            for group in USE_GROUP.findall(text):
                targets |= {item.strip().split("::")[0] for item in group.split(",") if item.strip()}
            for target in targets:
                target = target if target in modules else reexports.get(target)
                if target and target != module:
                    graph[module].add(target)
    return graph


def python_graph(package_dir, package):
    """Edges between the modules of a Python package (one level)."""
    modules = {name[:-3] for name in os.listdir(package_dir) if name.endswith(".py")}
    graph = {m: set() for m in modules}

    def type_checking(node):
        test = node.test
        return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")

    for module in modules:
        tree = ast.parse(open(os.path.join(package_dir, module + ".py")).read())
        skip = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and type_checking(node):
                skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            names = []
            if isinstance(node, ast.ImportFrom):
                if node.level == 1:
                    base = node.module or ""
                    names = [base.split(".")[0]] if base else [a.name for a in node.names]
                elif node.level == 0 and node.module and node.module.split(".")[0] == package:
                    parts = node.module.split(".")
                    names = [parts[1]] if len(parts) > 1 else [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] == package and len(parts) > 1:
                        names.append(parts[1])
            for name in names:
                if name in modules and name != module:
                    graph[module].add(name)
    return graph


# Each crate's own: its `Error` and `ErrorKind` (one per library crate), and
# the `Options`/`Report` of a module, used under its crate's or module's name.
PER_CRATE_TYPES = {"Error", "ErrorKind", "Options", "Report"}
PUB_TYPE = re.compile(r"^\s*pub\s+(?:struct|enum)\s+(\w+)", re.M)


def duplicate_types(crates):
    """`pub struct`/`pub enum` names defined in more than one crate's src/
    (test modules left out), each with the files that define it."""
    found = {}
    for crate in sorted(os.listdir(crates)):
        src = os.path.join(crates, crate, "src")
        for dirpath, _, names in os.walk(src):
            for name in sorted(names):
                if name.endswith(".rs"):
                    path = os.path.join(dirpath, name)
                    for m in PUB_TYPE.finditer(strip_tests(open(path).read())):
                        found.setdefault(m.group(1), {}).setdefault(crate, os.path.relpath(path, ROOT))
    return {name: places for name, places in sorted(found.items())
            if len(places) > 1 and name not in PER_CRATE_TYPES}


MAX_FUNCTION_LINES = 100
# Functions over the limit that are still to be split into named steps, with
# their length today: each fails the check if it grows; remove its entry once
# it is split.
# Empty since every one was split: keep it so.
NOT_YET_SPLIT: dict[tuple[str, str], int] = {}
FN_START = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:const|async|unsafe|extern\s+\"C\")\s+)*fn\s+(\w+)")


def code_only(text):
    """Rust source with comments, strings and char literals blanked (newlines
    kept), so that braces can be counted."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j, depth = i + 2, 1
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
        elif (m := re.match(r'b?r(#*)"', text[i:i + 260])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
        elif c == "'" and (m := re.match(r"'(?:\\.[^']*|[^\\'])'", text[i:i + 12])):
            j = i + m.end()
        else:
            out.append(c)
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        i = j
    return "".join(out)


def long_functions(crates):
    """(path, line, name, lines) of each function over MAX_FUNCTION_LINES
    lines in crates/*/src, test modules and gulp-test-support left out."""
    found = []
    for crate in sorted(os.listdir(crates)):
        src = os.path.join(crates, crate, "src")
        if crate == "gulp-test-support" or not os.path.isdir(src):
            continue
        for dirpath, _, names in sorted(os.walk(src)):
            for name in sorted(names):
                if not name.endswith(".rs"):
                    continue
                path = os.path.join(dirpath, name)
                text = open(path).read()
                at = text.find("#[cfg(test)]")
                code = code_only(text if at < 0 else text[:at]).split("\n")
                for start, line in enumerate(code):
                    m = FN_START.match(line)
                    if not m:
                        continue
                    depth, opened = 0, False
                    for end in range(start, len(code)):
                        for ch in code[end]:
                            if ch == "{":
                                depth, opened = depth + 1, True
                            elif ch == "}":
                                depth -= 1
                            elif ch == ";" and not opened and depth == 0:
                                break  # a declaration without a body
                        else:
                            if opened and depth == 0:
                                break
                            continue
                        break
                    if not opened:
                        continue
                    lines = end - start + 1
                    if lines > MAX_FUNCTION_LINES:
                        found.append((os.path.relpath(path, ROOT), start + 1, m.group(1), lines))
    return found


def main():
    failed = False
    summary = []
    crates = os.path.join(ROOT, "crates")
    for name, places in duplicate_types(crates).items():
        failed = True
        print(f"check-imports: pub type {name} defined in {len(places)} crates: {', '.join(places.values())}")
    long = long_functions(crates)
    for path, line, name, lines in long:
        if lines <= NOT_YET_SPLIT.get((path, name), 0):
            continue
        failed = True
        print(f"check-imports: {path}:{line}: fn {name} is {lines} lines (at most {MAX_FUNCTION_LINES})")
    # The list only shrinks: a function split since is taken off it.
    for path, name in sorted(set(NOT_YET_SPLIT) - {(p, n) for p, _, n, _ in long}):
        failed = True
        print(f"check-imports: {path}: fn {name} is no longer over {MAX_FUNCTION_LINES} lines: "
              "take it off NOT_YET_SPLIT")
    for crate in sorted(os.listdir(crates)):
        src = os.path.join(crates, crate, "src")
        if not os.path.isdir(src):
            continue
        graph = rust_graph(src)
        for cycle in cycles(graph):
            failed = True
            print(f"check-imports: import cycle in {crate}: {' <-> '.join(cycle)}")
        summary.append(f"{crate} {len(graph)}")
    package = os.path.join(crates, "gulp-python", "python", "gulp")
    graph = python_graph(package, "gulp")
    for cycle in cycles(graph):
        failed = True
        print(f"check-imports: import cycle in the Python package gulp: {' <-> '.join(cycle)}")
    summary.append(f"python gulp {len(graph)}")
    if failed:
        return 1
    print(f"check-imports: no import cycle (modules: {', '.join(summary)}), no public type in two crates, "
          f"no function over {MAX_FUNCTION_LINES} lines but the {len(NOT_YET_SPLIT)} not yet split")
    return 0


if __name__ == "__main__":
    sys.exit(main())
