#!/usr/bin/env python3
"""The mixed-shapes benchmark directories, from gulpio2's ingest of
bench-corpus/mixed with one item per chunk (scripts/compare.sh makes it).

    python3 scripts/bench/mixed_dirs.py SRC OUT --classes bench-corpus/mixed [--min-items 160]

SRC is a gulp directory whose chunks hold one item each. For each of
`all` and the classes of --classes (`small.json`, `medium.json`,
`large.json`: the ids of each frame-size class), writes

  OUT/<name>     the class's items once: for `gd[id]` and the bare decoding
                 loop, which take every frame of every item;
  OUT/<name>-x   the same items repeated (copy k of item `id` is `id_xk`)
                 until there are at least --min-items: for the loaders, whose
                 epochs then hold 20 or more batches of 8, as a real dataset's
                 do (a 10-item epoch is one batch, and its start and end, where
                 threads wait, would be most of what is measured).

Chunks are hard links to SRC's data files, byte for byte what gulpio2 wrote;
only the meta files are new (SRC's JSON with the ids renamed). Nothing is
copied, so the directories cost no disk space. Each directory is built under
a temporary name and renamed into place.
"""

import argparse
import json
import math
import os
import shutil
import sys


def chunks_of(src):
    """{id: (chunk number, that chunk's meta of the item)}; every chunk must
    hold exactly one item."""
    out = {}
    for name in os.listdir(src):
        if not (name.startswith("meta_") and name.endswith(".gmeta")):
            continue
        n = int(name[len("meta_"):-len(".gmeta")])
        with open(os.path.join(src, name)) as f:
            meta = json.load(f)
        if len(meta) != 1:
            sys.exit(f"mixed_dirs.py: {src}/{name} holds {len(meta)} items, not 1 "
                     "(ingest with one video per chunk)")
        ((id_, m),) = meta.items()
        out[id_] = (n, m)
    return out


def build(src, out, ids, copies, chunks):
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    shutil.copy(os.path.join(src, "label2idx.json"), tmp)
    k = 0
    for copy in range(copies):
        for id_ in ids:
            n, meta = chunks[id_]
            os.link(os.path.join(src, f"data_{n}.gulp"), os.path.join(tmp, f"data_{k}.gulp"))
            name = id_ if copy == 0 else f"{id_}_x{copy}"
            with open(os.path.join(tmp, f"meta_{k}.gmeta"), "w") as f:
                json.dump({name: meta}, f)
            k += 1
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    return k


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("src", help="gulpio2's ingest of the mixed set, one item per chunk")
    p.add_argument("out", help="where to write the directories")
    p.add_argument("--classes", required=True, help="the folder of small.json, medium.json, large.json")
    p.add_argument("--min-items", type=int, default=160, help="items of each -x directory (at least)")
    a = p.parse_args()
    chunks = chunks_of(a.src)
    sets = {"all": sorted(chunks)}
    for cls in ("small", "medium", "large"):
        with open(os.path.join(a.classes, cls + ".json")) as f:
            sets[cls] = [e["id"] for e in json.load(f)]
        if missing := [i for i in sets[cls] if i not in chunks]:
            sys.exit(f"mixed_dirs.py: {a.src} lacks {missing}")
    os.makedirs(a.out, exist_ok=True)
    for name, ids in sets.items():
        build(a.src, os.path.join(a.out, name), ids, 1, chunks)
        n = build(a.src, os.path.join(a.out, name + "-x"), ids,
                  math.ceil(a.min_items / len(ids)), chunks)
        print(f"{a.out}/{name}: {len(ids)} items; {name}-x: {n}")


if __name__ == "__main__":
    main()
