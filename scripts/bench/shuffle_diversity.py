#!/usr/bin/env python3
"""What a shuffle by chunks costs in batch diversity: distinct labels per
batch with shuffle="chunks" (windows of 1 to 16 chunks) against the full
shuffle, on a directory ingested in class order (the worst case: each chunk
holds one or two classes) and on one ingested with `gulp ingest --shuffle`.

    .venv/bin/python scripts/bench/shuffle_diversity.py [--images DIR] [--batch-size 16]

Images: bench-corpus/images (scripts/bench/bench-corpus.sh makes it: 386 real
photographs in 36 class folders), gulped with `gulp ingest image-folder`,
50 images per chunk, as they are and shuffled. The figures are read from
the loader's batches (labels per batch, over 5 epochs), decoding at 32 px.
Prints a markdown table (docs/loader.md, "Shuffling by chunks").
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def distinct(path: str, batch_size: int, **order: object) -> tuple[float, float]:
    """Mean distinct labels per batch over 5 epochs, and the share of the
    batches that hold a single label."""
    import gulp

    loader = gulp.ImageLoader(path, size=32, resize=None, crop="center", flip=False,
                              batch_size=batch_size, threads=2, train=False, **order)
    counts = []
    for epoch in range(5):
        loader.set_epoch(epoch)
        counts.extend(len(set(b.labels.tolist())) for b in loader)
    return statistics.mean(counts), sum(c == 1 for c in counts) / len(counts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=Path, default=ROOT / "bench-corpus" / "images")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--gulp", default=str(ROOT / ".venv" / "bin" / "gulp"))
    args = parser.parse_args()
    if not args.images.is_dir():
        subprocess.run([str(ROOT / "scripts" / "bench" / "bench-corpus.sh")], check=True)
    work = Path(tempfile.mkdtemp(prefix="gulp-diversity."))
    try:
        dirs = {}
        for name, extra in (("class order", []), ("gulp ingest --shuffle", ["--shuffle"])):
            out = work / name.replace(" ", "-")
            subprocess.run([args.gulp, "ingest", "image-folder", str(args.images), str(out),
                            "--videos-per-chunk", "50", "--quiet", *extra], check=True,
                           capture_output=True)
            dirs[name] = str(out)
        import gulp

        n = len(gulp.GulpDirectory(dirs["class order"]))
        classes = len(set(p.parent.name for p in args.images.rglob("*") if p.is_file()))
        b = args.batch_size
        print(f"{n} images, {classes} classes, {-(-n // 50)} chunks of 50; batches of {b}; "
              "distinct labels per batch (mean over 5 epochs), and the share of batches of a "
              "single label\n")
        print("| shuffle | " + " | ".join(dirs) + " |")
        print("|---|" + "---|" * len(dirs))
        rows = [("full (shuffle=True)", {})]
        rows += [(f"by chunks, windows of {w}", {"shuffle": "chunks", "chunk_window": w})
                 for w in (1, 2, 4, 8)]
        for title, order in rows:
            cells = []
            for path in dirs.values():
                mean, single = distinct(path, b, **order)
                cells.append(f"{mean:.1f} ({single:.0%})")
            print(f"| {title} | " + " | ".join(cells) + " |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
