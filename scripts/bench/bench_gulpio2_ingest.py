#!/usr/bin/env python3
"""Ingest benchmark: gulpio2's own ingest scripts (and, when given, gulp) on the
corpus of scripts/bench/bench-corpus.sh, same files, same number of workers.

    scripts/bench/bench-corpus.sh
    .venv/bin/python scripts/bench/bench_gulpio2_ingest.py                  # gulpio2 only
    .venv/bin/python scripts/bench/bench_gulpio2_ingest.py --gulp-bin target/release/gulp

Tasks (--tasks, comma-separated; default: the first four):

  csv-jpeg       gulp2_20bn_csv_jpeg   frames.csv frames/ OUT             (no resize)
                 gulp ingest 20bn-csv-jpeg frames.csv frames OUT
  json-8fps      gulp2_20bn_json_videos videos.json videos/ OUT --frame_rate 8
                 gulp ingest 20bn-json videos.json videos OUT --frame-rate 8
  json-8fps-256  the same with --frame_size 256 / --frame-size 256 (short edge)
  image-folder   gulp2_image_folder images/ OUT   (the trailing slash is needed:
                 gulpio2 globs folder + "**/*.jpg")
                 gulp ingest image-folder images OUT
  video-folder   gulp2_video_folder video-folder/ OUT (gulpio2 only: native
                 frame rate, .webm only)

Every command gets the number of workers (--num-workers, default 2) and
gulpio2 gets --videos_per_chunk/--images_per_chunk so that each task has
several chunks (gulpio2 parallelises over chunks: with its default of 100 per
chunk the 51 videos would be one chunk on one worker). --gulp-chunk-option
passes the same number to gulp under the option name given.

Each task runs --repeat timed runs per side, then --memory-runs runs with the
memory sampler on. Timing and sampling are kept apart because the sampler
disturbs what it watches: reading smaps_rollup walks the page tables of every
process of the tree under its memory-map lock, which on a 2-core machine takes
CPU from the run and stalls its threads' page faults and mmap calls (about 6 %
of gulp's wall time on the 8 fps task, 2 % of gulpio2's). Speed comes from the
fastest timed run, memory from the highest peak of the sampled runs.

Measured per run, the command being a subprocess of this script:

  wall        time from start to exit (time.perf_counter);
  frames      counted from the produced directory: gulpio2.GulpDirectory is
              opened on it and the lengths of every item's frame_info added
              (also checks that the directory is readable); frames/s = frames
              / wall;
  tree RSS    peak of the sum of VmRSS over the process tree (the command and
              all its descendants: pool workers, ffmpeg), sampled from /proc
              every --sample-ms (default 50) ms in memory runs; counts shared
              pages once per
              process, so it over-states forked pools;
  tree PSS    peak of the sum of Pss (/proc/PID/smaps_rollup) over the tree,
              same samples: shared pages split between sharers, the fairer sum;
  maxrss      ru_maxrss from os.wait4() on the command: the largest single
              process of the tree (the kernel keeps the max of a process and
              its reaped descendants), not a sum;
  shm         peak growth of the used space of the burst directory's file
              system (/dev/shm, gulpio2's default), i.e. bursted JPEGs held in
              memory by tmpfs but not in any RSS.

Before each run the input files are read once (warm page cache for both
sides) and the output directory is removed; outputs are deleted after the
check unless --keep. Results: one JSON object per run on stdout (lines
starting with '{'), then a table; with --json-out also appended to a file.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time

from timing import log, ratio

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.sysconf("SC_PAGE_SIZE")

# Tasks whose gulp run takes well under a second (see --repeat-short).
SHORT_TASKS = ("csv-jpeg", "image-folder")

TASKS = {
    # name: (gulpio2 script, gulp subcommand, per-chunk option, per-chunk default)
    "csv-jpeg": ("gulp2_20bn_csv_jpeg", "20bn-csv-jpeg", "--videos_per_chunk", 4),
    "json-8fps": ("gulp2_20bn_json_videos", "20bn-json", "--videos_per_chunk", 8),
    "json-8fps-256": ("gulp2_20bn_json_videos", "20bn-json", "--videos_per_chunk", 8),
    "image-folder": ("gulp2_image_folder", "image-folder", "--images_per_chunk", 50),
    "video-folder": ("gulp2_video_folder", None, "--videos_per_chunk", 8),
}
DEFAULT_TASKS = "csv-jpeg,json-8fps,json-8fps-256,image-folder"


# ----------------------------------------------------------------- the commands


def task_inputs(task, corpus):
    """(positional inputs, files to pre-read) for a task."""
    c = lambda *p: os.path.join(corpus, *p)  # noqa: E731
    if task == "csv-jpeg":
        return [c("frames.csv"), c("frames")], [c("frames")]
    if task.startswith("json-"):
        return [c("videos.json"), c("videos")], [c("videos")]
    if task == "image-folder":
        return [c("images")], [c("images")]
    if task == "video-folder":
        return [c("video-folder")], [c("video-folder")]
    raise ValueError(task)


def gulpio2_command(task, corpus, out, workers, per_chunk):
    script, _, chunk_opt, _ = TASKS[task]
    inputs, _ = task_inputs(task, corpus)
    if task in ("image-folder", "video-folder"):
        inputs = [inputs[0].rstrip("/") + "/"]  # gulpio2 needs the trailing slash
    else:
        inputs = [inputs[0], inputs[1].rstrip("/") + "/"]
    bindir = os.path.dirname(sys.executable)
    cmd = [sys.executable, os.path.join(bindir, script), *inputs, out,
           "--num_workers", str(workers), chunk_opt, str(per_chunk)]
    if task.startswith("json-"):
        cmd += ["--frame_rate", "8"]
    if task == "json-8fps-256":
        cmd += ["--frame_size", "256"]
    return cmd


def gulp_command(task, corpus, out, workers, per_chunk, args):
    sub = TASKS[task][1]
    if sub is None:
        return None
    inputs, _ = task_inputs(task, corpus)
    cmd = [args.gulp_bin, "ingest", sub, *inputs, out, "--num-workers", str(workers)]
    if task.startswith("json-"):
        cmd += ["--frame-rate", "8"]
    if task == "json-8fps-256":
        cmd += ["--frame-size", "256"]
    if args.gulp_chunk_option:
        cmd += [args.gulp_chunk_option, str(per_chunk)]
    cmd += args.gulp_arg
    return cmd


# ----------------------------------------------------------------- measuring


def children_of(pid):
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    kids.extend(int(k) for k in f.read().split())
            except OSError:
                pass
    except OSError:
        pass
    return kids


def tree_of(root):
    seen, todo = [], [root]
    while todo:
        pid = todo.pop()
        seen.append(pid)
        todo.extend(children_of(pid))
    return seen


def rss_pss(pid):
    """(rss, pss) in bytes of one process, 0 when it is gone."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/statm") as f:
            rss = int(f.read().split()[1]) * PAGE
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return rss, pss


def fs_used(path):
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


class Sampler(threading.Thread):
    def __init__(self, pid, interval, shm_dir):
        super().__init__(daemon=True)
        self.pid, self.interval, self.shm_dir = pid, interval, shm_dir
        self.stop = threading.Event()
        self.peak_rss = self.peak_pss = self.peak_procs = self.samples = 0
        self.shm_base = fs_used(shm_dir)
        self.peak_shm = 0

    def run(self):
        while not self.stop.is_set():
            pids = tree_of(self.pid)
            rss = pss = 0
            for p in pids:
                r, s = rss_pss(p)
                rss += r
                pss += s
            self.peak_rss = max(self.peak_rss, rss)
            self.peak_pss = max(self.peak_pss, pss)
            self.peak_procs = max(self.peak_procs, len(pids))
            self.peak_shm = max(self.peak_shm, fs_used(self.shm_dir) - self.shm_base)
            self.samples += 1
            self.stop.wait(self.interval)


def warm(paths):
    n = 0
    for path in paths:
        for d, _, files in os.walk(path):
            for f in files:
                with open(os.path.join(d, f), "rb") as fp:
                    while fp.read(1 << 20):
                        n += 1
    return n


def timed_run(cmd, log_path, interval, shm_dir):
    """Runs `cmd`; samples the memory of its process tree every `interval`
    seconds, or not at all when `interval` is None (a timed run)."""
    with open(log_path, "w") as logf:
        logf.write(" ".join(cmd) + "\n")
        logf.flush()
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        sampler = None
        if interval is not None:
            sampler = Sampler(proc.pid, interval, shm_dir)
            sampler.start()
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if sampler is not None:
            sampler.stop.set()
            sampler.join()
    rec = {
        "wall_s": wall,
        "exit": proc.returncode,
        "sampled": sampler is not None,
        "maxrss_single_mb": ru.ru_maxrss * 1024 / 1e6,
        "cpu_user_s": ru.ru_utime,
        "cpu_sys_s": ru.ru_stime,
    }
    if sampler is not None:
        rec.update({
            "peak_tree_rss_mb": sampler.peak_rss / 1e6,
            "peak_tree_pss_mb": sampler.peak_pss / 1e6,
            "peak_shm_mb": max(0, sampler.peak_shm) / 1e6,
            "peak_procs": sampler.peak_procs,
            "samples": sampler.samples,
        })
    return rec


def expected_counts(task, corpus):
    """(items, frames) the output must hold, None where not known in advance."""
    if task == "csv-jpeg":
        rows = [l for l in open(os.path.join(corpus, "frames.csv")) if l.strip()]
        frames = sum(
            sum(f.endswith(".jpg") for f in os.listdir(os.path.join(corpus, "frames", r.split(";")[0])))
            for r in rows)
        return len(rows), frames
    if task.startswith("json-"):
        return len(json.load(open(os.path.join(corpus, "videos.json")))), None
    if task == "image-folder":
        n = sum(f.endswith((".jpg", ".png")) for _, _, fs in os.walk(os.path.join(corpus, "images"))
                for f in fs)
        return n, n
    if task == "video-folder":
        return sum(f.endswith(".webm") for _, _, fs in os.walk(os.path.join(corpus, "video-folder"))
                   for f in fs), None
    return None, None


def count_output(out):
    """(items, frames, chunks, note) of a gulp directory, read with gulpio2."""
    try:
        from gulpio2 import GulpDirectory

        gd = GulpDirectory(out)
        items = frames = 0
        for chunk in gd.chunks():
            for meta in chunk.meta_dict.values():
                items += 1
                frames += len(meta["frame_info"])
        return items, frames, gd.num_chunks, ""
    except Exception as e:  # a gulp directory with msgpack meta, or a failure
        return None, None, None, f"gulpio2 cannot open it: {e!r}"


# ----------------------------------------------------------------- reporting


def loadavg():
    return [round(x, 2) for x in os.getloadavg()]


def environment(args):
    def version(mod):
        try:
            return __import__(mod).__version__
        except Exception:
            return None

    from importlib.metadata import version as dist_version

    ffmpeg = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "record": "environment",
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "host_nproc": os.cpu_count(),
        "cpu": cpu,
        "mem_gib": round(os.sysconf("SC_PHYS_PAGES") * PAGE / 2**30, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "gulpio2": dist_version("gulpio2"),
        "numpy": version("numpy"),
        "simplejpeg": version("simplejpeg"),
        "Pillow": dist_version("Pillow"),
        "ffmpeg": ffmpeg.splitlines()[0] if ffmpeg else None,
        "num_workers": args.num_workers,
        "corpus": os.path.abspath(args.corpus),
        "gulp_bin": args.gulp_bin,
        "loadavg": loadavg(),
    }


def fmt_mb(v):
    return "-" if v is None else f"{v:,.0f}"


def best_runs(results):
    """{(task, impl): run} with the speed of the fastest timed run and the
    memory of the sampled run with the highest peak tree PSS. Records of
    runs that were both timed and sampled (before timing and sampling were
    separated) count as both."""
    fastest, peak = {}, {}
    for r in results:
        if not r.get("ok"):
            continue
        key = (r["task"], r["impl"])
        if not r.get("sampled"):
            if key not in fastest or r["wall_s"] < fastest[key]["wall_s"]:
                fastest[key] = r
        if r.get("peak_tree_pss_mb") is not None:
            if key not in peak or r["peak_tree_pss_mb"] > peak[key]["peak_tree_pss_mb"]:
                peak[key] = r
    best = {}
    for key, r in fastest.items():
        r = dict(r)
        m = peak.get(key)
        for k in MEMORY_KEYS:
            r[k] = m.get(k) if m else None
        best[key] = r
    return best


MEMORY_KEYS = ("peak_tree_rss_mb", "peak_tree_pss_mb", "peak_shm_mb", "samples")


def table(results, tasks):
    best = best_runs(results)
    lines = []
    head = ("| task | impl | items | frames | wall s | frames/s | CPU s | tree RSS MB | tree PSS MB "
            "| max 1 proc MB | /dev/shm MB | load avg before |")
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    for t in tasks:
        for impl in ("gulpio2", "gulp"):
            r = best.get((t, impl))
            if r is None:
                continue
            lines.append(
                f"| {t} | {impl} | {r['items']:,} | {r['frames']:,} | {r['wall_s']:.1f} | "
                f"{r['frames'] / r['wall_s']:,.0f} | {r['cpu_user_s'] + r['cpu_sys_s']:.1f} | "
                f"{fmt_mb(r['peak_tree_rss_mb'])} | "
                f"{fmt_mb(r['peak_tree_pss_mb'])} | {fmt_mb(r['maxrss_single_mb'])} | "
                f"{fmt_mb(r['peak_shm_mb'])} | {' '.join(str(x) for x in r['loadavg_before'])} |")
    ratios = []
    for t in tasks:
        a, b = best.get((t, "gulpio2")), best.get((t, "gulp"))
        if a and b:
            same = "same" if a["frames"] == b["frames"] else f"{b['frames']} vs {a['frames']}"
            ratios.append(
                f"| {t} | {ratio(b['frames'] / b['wall_s'], a['frames'] / a['wall_s']):.2f}x | "
                f"{fmt_mb(b['peak_tree_pss_mb'])} vs {fmt_mb(a['peak_tree_pss_mb'])} MB | "
                f"{same} |")
    if ratios:
        lines += ["", "| task | gulp ÷ gulpio2 frames/s | peak tree PSS gulp vs gulpio2 | frames |",
                  "|---|---|---|---|", *ratios]
    for r in results:
        if not r["ok"] or r["note"]:
            lines.append(f"{'NOTE' if r['ok'] else 'FAILED'}: {r['impl']} {r['task']} run {r['rep']}: "
                         f"exit {r['exit']}, {r['note']} (log: {r['log']})")
    return "\n".join(lines)


# ----------------------------------------------------------------- main


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n", 2)[2])
    p.add_argument("--corpus", default=os.path.join(REPO, "bench-corpus"))
    p.add_argument("--work-dir", default=None,
                   help="where outputs and logs go (default CORPUS/out)")
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--tasks", default=DEFAULT_TASKS,
                   help=f"comma-separated, of {', '.join(TASKS)} (default {DEFAULT_TASKS})")
    p.add_argument("--repeat", type=int, default=1,
                   help="timed runs per task and side (no memory sampling); the table shows "
                        "the fastest")
    p.add_argument("--memory-runs", type=int, default=1,
                   help="runs per task and side with the memory sampler on, after the timed "
                        "ones; the table shows their highest peak (default 1; 0: no memory "
                        "figures)")
    p.add_argument("--repeat-short", type=int, default=None,
                   help="runs per side for csv-jpeg and image-folder, whose gulp runs take "
                        "well under a second and move most with the load (default: --repeat)")
    p.add_argument("--per-chunk", type=int, default=None,
                   help="items per chunk for every task (default: csv-jpeg 4, json-* and "
                        "video-folder 8, image-folder 50)")
    p.add_argument("--gulp-bin", default=None, help="the gulp binary; when given, gulp runs too")
    p.add_argument("--gulp-chunk-option", default=None,
                   help="gulp's option for items per chunk, given the same number as gulpio2 "
                        "(write --gulp-chunk-option=--name)")
    p.add_argument("--gulp-arg", action="append", default=[],
                   help="extra argument for every gulp command (repeatable; write "
                        "--gulp-arg=--opt for one that starts with -)")
    p.add_argument("--skip-gulpio2", action="store_true")
    p.add_argument("--shm-dir", default="/dev/shm", help="watched for burst files (gulpio2's default)")
    p.add_argument("--sample-ms", type=float, default=50)
    p.add_argument("--json-out", default=None, help="also append the JSON lines to this file")
    p.add_argument("--keep", action="store_true", help="keep the output directories")
    args = p.parse_args()

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    for t in tasks:
        if t not in TASKS:
            p.error(f"unknown task {t!r}")
    corpus = os.path.abspath(args.corpus)
    for f in ("videos.json", "frames.csv", "images", "videos", "frames"):
        if not os.path.exists(os.path.join(corpus, f)):
            sys.exit(f"{corpus}/{f} is missing: run scripts/bench/bench-corpus.sh first")
    if args.gulp_bin:
        args.gulp_bin = os.path.abspath(args.gulp_bin) if os.path.exists(args.gulp_bin) else args.gulp_bin
        if not shutil.which(args.gulp_bin):
            sys.exit(f"--gulp-bin {args.gulp_bin}: not an executable")
    work = os.path.abspath(args.work_dir or os.path.join(corpus, "out"))
    os.makedirs(work, exist_ok=True)
    jout = open(args.json_out, "a") if args.json_out else None

    def emit(rec):
        line = json.dumps(rec)
        print(line, flush=True)
        if jout:
            jout.write(line + "\n")
            jout.flush()

    env = environment(args)
    emit(env)
    results = []
    impls = ([] if args.skip_gulpio2 else ["gulpio2"]) + (["gulp"] if args.gulp_bin else [])
    expected = {t: expected_counts(t, corpus) for t in tasks}
    for task in tasks:
        per_chunk = args.per_chunk or TASKS[task][3]
        _, to_warm = task_inputs(task, corpus)
        repeat = args.repeat
        if task in SHORT_TASKS and args.repeat_short is not None:
            repeat = args.repeat_short
        for rep in range(repeat + args.memory_runs):
            sampled = rep >= repeat
            for impl in impls:
                out = os.path.join(work, f"{impl}-{task}")
                shutil.rmtree(out, ignore_errors=True)
                if impl == "gulpio2":
                    cmd = gulpio2_command(task, corpus, out, args.num_workers, per_chunk)
                else:
                    cmd = gulp_command(task, corpus, out, args.num_workers, per_chunk, args)
                    if cmd is None:
                        continue
                warm(to_warm)
                rec = {"record": "run", "impl": impl, "task": task, "rep": rep,
                       "num_workers": args.num_workers, "per_chunk": per_chunk,
                       "cmd": cmd, "loadavg_before": loadavg(),
                       "log": os.path.join(work, f"{impl}-{task}-{rep}.log")}
                what = (f"memory run {rep - repeat + 1}/{args.memory_runs}" if sampled
                        else f"timed run {rep + 1}/{repeat}")
                log(f"{impl} {task} ({what}): {' '.join(cmd)}")
                rec.update(timed_run(cmd, rec["log"], args.sample_ms / 1000 if sampled else None,
                                     args.shm_dir))
                rec["loadavg_after"] = loadavg()
                items, frames, chunks, note = count_output(out)
                want_items, want_frames = expected[task]
                if frames is None and impl == "gulp" and rec["exit"] == 0:
                    # e.g. msgpack meta, which gulpio2 cannot read: take the
                    # frame count of gulpio2's run of the same task.
                    prev = [r for r in results if r["task"] == task and r["impl"] == "gulpio2"
                            and r.get("frames")]
                    if prev:
                        items, frames = prev[-1]["items"], prev[-1]["frames"]
                        note += "; counts NOT verified, taken from gulpio2's run"
                ok = rec["exit"] == 0 and bool(frames)
                if items is not None and want_items is not None and items != want_items:
                    note += f"; {items} items, expected {want_items}"
                    ok = False
                if frames is not None and want_frames is not None and frames != want_frames:
                    note += f"; {frames} frames, expected {want_frames}"
                    ok = False
                rec.update(items=items, frames=frames, chunks=chunks, ok=ok, note=note.lstrip("; "))
                if frames:
                    rec["frames_per_s"] = frames / rec["wall_s"]
                pss = (f", tree PSS {rec['peak_tree_pss_mb']:.0f} MB" if rec["sampled"] else "")
                log(f"  exit {rec['exit']}, {rec['wall_s']:.1f} s, {items} items, {frames} frames"
                    f"{pss} {note}")
                emit(rec)
                results.append(rec)
                if not args.keep:
                    shutil.rmtree(out, ignore_errors=True)
    print()
    print(f"{env['date']}, nproc {env['host_nproc']}, {env['cpu']}, gulpio2 {env['gulpio2']}, "
          f"{args.num_workers} workers, load average at start {' '.join(map(str, env['loadavg']))}")
    print(table(results, tasks))
    if not all(r["ok"] for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
