#!/usr/bin/env python3
"""Cutting K clips from one long video: `gulp ingest manifest` against the
loop users write (one `ffmpeg -ss S -to E -i SRC -vf fps=R,scale=... ` per
clip writing JPEG files) and against one decode of the span the clips
cover (`gulp ingest manifest` of one row from the first clip's start to the
last one's end), in one run, on two shapes of source: 640x360 for 120 s
and 1280x720 for 45 s, both H.264 at 30 fps. Prints wall times, ffmpeg
processes started (through a counting wrapper on GULP_FFMPEG) and ratios.

    .venv/bin/python scripts/bench/bench_manifest.py [--gulp GULP] [--clips K] [--runs N]

The clips: K spans of 6 to 12 s at random places (seeded), so that some
overlap, covering most of the video.
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

RATE = 8
SHORT_EDGE = 128


def sh(cmd, **kw):
    subprocess.run(cmd, check=True, **kw)


def make_source(path, size, seconds):
    sh(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
        f"testsrc2=size={size}:rate=30:duration={seconds}", "-vf", "noise=alls=6:allf=t",
        "-c:v", "libx264", "-preset", "veryfast", "-g", "60", "-pix_fmt", "yuv420p", path])


def clips_of(seconds, k, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(k):
        length = rng.uniform(6, 12)
        start = round(rng.uniform(0, seconds - length - 0.5), 2)
        out.append((start, round(start + length, 2)))
    return sorted(out)


def counting_wrapper(work):
    log = os.path.join(work, "ffmpeg.log")
    script = os.path.join(work, "ffmpeg")
    real = shutil.which("ffmpeg")
    with open(script, "w") as f:
        f.write(f"#!/bin/sh\necho \"$*\" >> '{log}'\nexec '{real}' \"$@\"\n")
    os.chmod(script, 0o755)
    return script, log


def decodes(log):
    if not os.path.exists(log):
        return 0
    with open(log) as f:
        return sum(1 for line in f if " -i " in line)


def run_gulp(gulp, manifest, out, env, log):
    shutil.rmtree(out, ignore_errors=True)
    if os.path.exists(log):
        os.remove(log)
    t0 = time.perf_counter()
    sh([gulp, "ingest", "manifest", manifest, out, "--frame-rate", str(RATE), "--frame-size",
        str(SHORT_EDGE), "--quiet"], env=env)
    return time.perf_counter() - t0, decodes(log)


def run_loop(src, clips, out, env, log):
    """What users write: a process per clip, JPEG files out."""
    shutil.rmtree(out, ignore_errors=True)
    if os.path.exists(log):
        os.remove(log)
    t0 = time.perf_counter()
    for k, (start, end) in enumerate(clips):
        d = os.path.join(out, f"clip{k:03d}")
        os.makedirs(d)
        sh([env["GULP_FFMPEG"], "-nostdin", "-loglevel", "error", "-ss", str(start), "-to",
            str(end), "-i", src, "-vf", f"fps={RATE},scale=-2:{SHORT_EDGE}", "-q:v", "3",
            os.path.join(d, "%05d.jpg")])
    return time.perf_counter() - t0, decodes(log)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gulp", default=os.path.join(os.path.dirname(sys.executable), "gulp"))
    ap.add_argument("--clips", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3, help="the best of N runs of each")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="gulp-bench-manifest.")
    try:
        wrapper, log = counting_wrapper(work)
        env = dict(os.environ, GULP_FFMPEG=wrapper)
        print(f"| source | K clips (frames) | covered | gulp ingest manifest | ffmpeg loop | one decode of the span | loop ÷ gulp | gulp ÷ span | ffmpeg runs (gulp, loop) |")
        print("|---|---|---|---|---|---|---|---|---|")
        for size, seconds in (("640x360", 120), ("1280x720", 45)):
            src = os.path.join(work, f"src-{size}.mp4")
            make_source(src, size, seconds)
            clips = clips_of(seconds, args.clips, seed=7)
            manifest = os.path.join(work, f"clips-{size}.csv")
            with open(manifest, "w") as f:
                f.write("path,start,end\n")
                f.writelines(f"{src},{s},{e}\n" for s, e in clips)
            span = os.path.join(work, f"span-{size}.csv")
            lo, hi = clips[0][0], max(e for _, e in clips)
            with open(span, "w") as f:
                f.write(f"path,start,end\n{src},{lo},{hi}\n")
            best = {"gulp": (1e9, 0), "loop": (1e9, 0), "span": (1e9, 0)}
            for _ in range(args.runs):
                for name, run in (
                    ("gulp", lambda: run_gulp(args.gulp, manifest, os.path.join(work, "g"), env, log)),
                    ("loop", lambda: run_loop(src, clips, os.path.join(work, "l"), env, log)),
                    ("span", lambda: run_gulp(args.gulp, span, os.path.join(work, "s"), env, log)),
                ):
                    t, n = run()
                    if t < best[name][0]:
                        best[name] = (t, n)
            frames = sum(len(files) for _, _, files in os.walk(os.path.join(work, "l")))
            g, l, s = best["gulp"][0], best["loop"][0], best["span"][0]
            print(f"| {size}, {seconds} s | {len(clips)} ({frames}) | {lo:.1f}-{hi:.1f} s | {g:.2f} s "
                  f"| {l:.2f} s | {s:.2f} s | **{l / g:.2f}** | **{g / s:.2f}** "
                  f"| {best['gulp'][1]}, {best['loop'][1]} |")
            sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
