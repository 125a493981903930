#!/usr/bin/env python3
"""Sound: what the audio codec costs, what sound adds to the clip loader,
and the loader against torchcodec on the same clips, in one run.

    .venv/bin/python scripts/bench/bench_sound.py            # codec table, loader with and without sound
    .venv-torch/bin/python scripts/bench/bench_sound.py      # also torchcodec (scripts/env/torch-env.sh, plus torchcodec)

1. The codec: 60 s of a test signal (a swept tone over pink noise, as
   speech and music have energy at many frequencies) at 16 kHz mono and
   48 kHz stereo, stored as 16-bit PCM, FLAC and Opus (64 kb/s): bytes per
   second of sound, and CPU seconds per second of sound to decode it
   (ffmpeg's own `-benchmark` user time, the process's start subtracted;
   for PCM, gulp's conversion of a clip's span to floats, timed in
   process).
2. The loader: a VGGSound-like set (48 clips of 10 s, 320x240 at 30 fps
   with AAC sound, gulped at 128 pixels on the short edge with its sound
   at 16 kHz mono); `ClipLoader(frames=8, fps=4, sampling="window")` with
   and without `audio=True`: clips/s, the cost of sound per clip.
3. torchcodec (when importable): the same clips, `VideoDecoder(path)
   .get_frames_played_at(times)` and `AudioDecoder(path, sample_rate=16000,
   num_channels=1).get_samples_played_in_range(t0, t0 + T / fps)` as its
   docs show, one decoder pair per clip; clips/s, and how far its sound
   and gulp's differ on the same spans.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import best_rate  # noqa: E402

import gulp  # noqa: E402

FFMPEG = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"]
TIMED = ["ffmpeg", "-nostdin", "-hide_banner", "-y"]


def sh(cmd):
    subprocess.run(cmd, check=True)


def utime(cmd):
    """User CPU seconds ffmpeg's -benchmark reports for a run (printed at
    the info log level, so `cmd` comes without `-loglevel error`)."""
    out = subprocess.run(cmd + ["-benchmark"], capture_output=True, text=True, check=True)
    m = re.search(r"utime=([\d.]+)s", out.stdout + out.stderr)
    return float(m.group(1)) if m else float("nan")


def codec_table(work):
    print("| sound | codec | bytes/s | CPU s to decode 1 s |")
    print("|---|---|---|---|")
    seconds = 60
    for rate, channels in ((16000, 1), (48000, 2)):
        src = os.path.join(work, f"src-{rate}.wav")
        sh(FFMPEG + ["-f", "lavfi", "-i",
                     f"aevalsrc='0.3*sin(2*PI*(200+40*t)*t)':s={rate}:d={seconds}",
                     "-f", "lavfi", "-i", f"anoisesrc=c=pink:a=0.05:r={rate}:d={seconds}",
                     "-filter_complex", "amix=inputs=2:normalize=0", "-ac", str(channels),
                     "-c:a", "pcm_s16le", src])
        empty = utime(TIMED + ["-f", "lavfi", "-i", "anullsrc=d=0.01", "-f", "null", "-"])
        # PCM as gulp stores it: the samples, no header.
        for codec, ext, args in (("PCM 16-bit", "s16le", ["-c:a", "pcm_s16le", "-f", "s16le"]),
                                 ("FLAC", "flac", ["-c:a", "flac"]),
                                 ("Opus 64 kb/s", "opus", ["-c:a", "libopus", "-b:a", "64k"])):
            out = os.path.join(work, f"a-{rate}.{ext}")
            sh(FFMPEG + ["-i", src] + args + [out])
            size = os.path.getsize(out)
            if ext == "s16le":
                cpu = pcm_cost(out, rate, channels)
                how = "(int16 to float32 in process)"
            else:
                cpu = (min(utime(TIMED + ["-i", out, "-f", "null", "-"]) for _ in range(3)) - empty)
                how = ""
            print(f"| {rate // 1000} kHz, {channels} ch | {codec} | {size / seconds:,.0f} | "
                  f"{max(cpu, 0) / seconds:.6f} {how}|")


def pcm_cost(path, rate, channels):
    """CPU seconds for gulp to turn a whole WAV's samples into floats (the
    loader's work for PCM), measured on 2 s spans."""
    data = open(path, "rb").read()
    pcm = np.frombuffer(data, dtype="<i2").reshape(-1, channels)
    span = 2 * rate
    t0 = time.process_time()
    for start in range(0, len(pcm) - span, span):
        # What gulp_io::audio::span_f32 does per clip: a slice, to float.
        x = pcm[start:start + span].astype(np.float32) / 32768.0
        x.mean(axis=1)
    return time.process_time() - t0


def make_set(work, n=48):
    videos = os.path.join(work, "videos", "clips")
    os.makedirs(videos)
    for k in range(n):
        sh(FFMPEG + ["-f", "lavfi", "-i", f"testsrc2=size=320x240:rate=30:duration=10,hue=h={k * 7}",
                     "-f", "lavfi", "-i", f"sine=frequency={300 + 10 * k}:duration=10",
                     "-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "veryfast", "-g", "60",
                     "-c:a", "aac", os.path.join(videos, f"v{k:02d}.mp4")])
    out = os.path.join(work, "gulped")
    gulp.ingest("video-folder", os.path.join(work, "videos"), output=out, frame_size=128,
                audio=True, audio_rate=16000)
    return os.path.join(work, "videos"), out


def loader_rates(out):
    rows = {}
    for audio in (False, True):
        def epoch():
            loader = gulp.ClipLoader(out, frames=8, fps=4, sampling="window", resize=128,
                                     size=112, batch_size=8, shuffle=True, audio=audio,
                                     sample_rate=16000)
            n = 0
            for batch in loader:
                n += len(batch.ids)
            return n
        clips = epoch()
        rows[audio] = best_rate(epoch, clips, passes=5, warmup=1)
    print(f"| gulp ClipLoader, frames only | {rows[False]:.1f} clips/s |")
    print(f"| gulp ClipLoader, frames and 16 kHz mono sound | {rows[True]:.1f} clips/s |")
    print(f"| sound's cost per clip | {(rows[False] / rows[True] - 1) * 100:+.1f} % |")
    return rows[True]


def torchcodec_rate(videos, out, gulp_rate):
    try:
        from torchcodec.decoders import AudioDecoder, VideoDecoder
    except ImportError:
        print("(torchcodec not importable here: run with .venv-torch/bin/python for part 3)")
        return
    loader = gulp.ClipLoader(out, frames=8, fps=4, sampling="window", resize=128, size=112,
                             batch_size=8, shuffle=True, audio=True, sample_rate=16000)
    meta = json.loads(subprocess.run([sys.executable, "-m", "gulp", "dump-meta", out],
                                     capture_output=True, text=True, check=True).stdout)
    clips, ours, shown = [], [], []
    for batch in loader:
        for k, id_ in enumerate(batch.ids):
            clips.append((os.path.join(videos, *id_.split("-", 1)), batch.times[k].copy()))
            ours.append(batch.audio[k, 0].copy())
            # The stored frames gulp gave, by their own times (a grid: the
            # set is gulped at the sources' constant rate).
            grid = meta[id_]["frame_times"]
            shown.append(grid["start"] + np.asarray(batch.indices[k]) * grid["step"])

    def run():
        for path, times in clips:
            VideoDecoder(path).get_frames_played_at(times.tolist())
            AudioDecoder(path, sample_rate=16000, num_channels=1).get_samples_played_in_range(
                float(times[0]), float(times[0] + 8 / 4))
        return len(clips)
    rate = best_rate(run, len(clips), passes=2)
    diffs, shifts = [], []
    for (path, times), mine, frames in zip(clips, ours, shown):
        # The frames: torchcodec's frame played at each time of the clip is
        # the one gulp gave (the same presentation time).
        pts = VideoDecoder(path).get_frames_played_at(times.tolist()).pts_seconds.numpy()
        shifts.append(np.abs(pts - frames).max())
        theirs = AudioDecoder(path, sample_rate=16000, num_channels=1).get_samples_played_in_range(
            float(times[0]), float(times[0] + 2.0)).data.numpy()[0]
        n = min(len(theirs), len(mine))
        diffs.append(np.abs(theirs[:n] - mine[:n]).max())
    print(f"| torchcodec, decoders per clip | {rate:.1f} clips/s |")
    print(f"| gulp ÷ torchcodec | **{gulp_rate / rate:.1f}** |")
    print(f"| largest sample difference, gulp against torchcodec | {max(diffs):.4f} |")
    print(f"| largest frame-time difference, gulp against torchcodec | {max(shifts) * 1e3:.3f} ms |")


def sound_bytes(out):
    """Bytes on disk per second of sound in the gulped set, from its meta
    (each item's audio record and sample count), against its frames'."""
    meta = json.loads(subprocess.run([sys.executable, "-m", "gulp", "dump-meta", out], capture_output=True,
                                     text=True, check=True).stdout)
    sound = sum(item["audio"]["record"][2] for item in meta.values())
    seconds = sum(item["audio"]["samples"] / item["audio"]["sample_rate"] for item in meta.values())
    frames = sum(length for item in meta.values() for _, _, length in item["frame_info"])
    print(f"\n{len(meta)} items, {seconds:.1f} s of sound: {sound / seconds:,.0f} B of sound a "
          f"second on disk, {frames / seconds:,.0f} B of frames a second (30 fps, 128 px short edge)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keep", help="work here and keep it")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="gulp-bench-sound.")
    os.makedirs(work, exist_ok=True)
    try:
        codec_table(work)
        print()
        videos, out = make_set(work)
        print("| run | figure |")
        print("|---|---|")
        rate = loader_rates(out)
        torchcodec_rate(videos, out, rate)
        sound_bytes(out)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
