#!/usr/bin/env python3
"""Makes the gulp vs gulpio2 table of scripts/compare.sh from the files its
steps wrote into one results directory:

  ingest-default.jsonl   bench_gulpio2_ingest.py, gulpio2 and gulp's default
                         build (libjpeg-turbo built in)
  ingest-pure.jsonl      the same tasks, gulp's pure-Rust build only
                         (--no-default-features: jpeg-encoder); optional
  real-gulp-*.json       `gulp bench --json` on the gulpio2-made directory of
                         real frames (1 and 2 threads, --scale 1/2, --crop,
                         --codec zune; several runs each, the best is taken)
  real-bare.json, real-bare-half.json
                         the bare_turbo example (a bare libjpeg-turbo loop)
  real-gulpio2.json      bench_gulpio2_io.py bench-real --json (last line)
  gulp-raw.json, gulp-decode-1.json, gulp-decode-all.json
                         `gulp bench --json` (several runs each, one JSON
                         object per run; the best is taken)
  open-json.txt, open-msgpack.txt
                         the open_phases example's output ("open: X ms")
  gulpio2-io.json        bench_gulpio2_io.py bench --json (last line)
  meta.json              date, machine, load averages, runtimes (compare.sh)

    compare_report.py RESULTS_DIR OUT.md

Prints the table and writes it, with the machine and the runtime, as markdown.
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gulpio2_ingest import best_runs  # noqa: E402


def read_json_objects(path):
    """Every JSON object in a file of concatenated (pretty-printed) objects."""
    text = open(path).read()
    dec = json.JSONDecoder()
    objs, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return objs
        obj, i = dec.raw_decode(text, i)
        objs.append(obj)


def best_ingest(path):
    """{(task, impl): run} of an ingest JSON-lines file: the speed of the
    fastest timed run, the memory of the sampled run with the highest peak
    (see bench_gulpio2_ingest.best_runs)."""
    if not os.path.exists(path):
        return {}
    runs = []
    for line in open(path):
        if line.startswith("{"):
            r = json.loads(line)
            if r.get("record") == "run":
                runs.append(r)
    return best_runs(runs)


def open_ms(path):
    m = re.search(r"^\s*open:\s*([0-9.]+) ms", open(path).read(), re.M)
    return float(m.group(1)) if m else None


def cpu(r):
    return r["cpu_user_s"] + r["cpu_sys_s"]


def fmt_rate(v):
    return "-" if v is None else f"{v:,.0f} frames/s"


def real_rows(res, ratio_row, gulp_best, last_json):
    """Decoding rows on the gulpio2-made directory of real frames."""
    if not os.path.exists(os.path.join(res, "real-gulpio2.json")):
        return
    g2 = last_json("real-gulpio2.json")
    bare, bare_half = last_json("real-bare.json"), last_json("real-bare-half.json")
    one, half, crop, zune, two, two_half = (
        gulp_best(f"real-gulp-{n}.json") for n in ("1", "1-half", "1-crop", "1-zune", "2", "2-half"))
    what = (f"{g2['items']} items, {g2['frames']:,} frames, mean {g2['mean_megapixels']:.2f} MP, "
            f"{g2['mean_frame_bytes'] / 1e3:.0f} kB")
    g2_rd = g2["read_decode_1_frames_per_s"]

    def rate(r):
        return f"{r['frames_per_s']:,.0f} frames/s, {r['megapixels_per_s']:,.0f} MP/s"

    ratio_row(f"Real frames ({what}): read + decode, 1 thread",
              rate(one), f"{g2_rd:,.0f} frames/s (GulpDirectory[id])",
              one["frames_per_s"] / g2_rd, "≥ 1.2×", 1.2)
    ratio_row("Real frames: gulp read + decode, 1 thread ÷ bare libjpeg-turbo loop "
              "(fast DCT, frames in memory)",
              rate(one), f"bare loop: {bare['frames_per_s']:,.0f} frames/s",
              one["frames_per_s"] / bare["frames_per_s"], "≥ 0.95×", 0.95)
    ratio_row("Real frames: read + decode at 1/2 scale, 1 thread (gulpio2: full size)",
              rate(half), f"{g2_rd:,.0f} frames/s",
              half["frames_per_s"] / g2_rd, "≥ 1.8×", 1.8)
    ratio_row("Real frames: gulp at 1/2 scale ÷ bare libjpeg-turbo loop at 1/2",
              rate(half), f"bare loop: {bare_half['frames_per_s']:,.0f} frames/s",
              half["frames_per_s"] / bare_half["frames_per_s"])
    ratio_row("Real frames: 2 threads ÷ 1 thread, full size (gulp alone)",
              rate(two), rate(one) + " (gulp, 1 thread)",
              two["frames_per_s"] / one["frames_per_s"], "≥ 1.8×", 1.8)
    ratio_row("Real frames: 2 threads ÷ 1 thread, 1/2 scale (gulp alone)",
              rate(two_half), rate(half) + " (gulp, 1 thread)",
              two_half["frames_per_s"] / half["frames_per_s"])
    ratio_row("Real frames: centred 224×224 crop, 1 thread (gulpio2: full size)",
              rate(crop), f"{g2_rd:,.0f} frames/s", crop["frames_per_s"] / g2_rd)
    ratio_row("Real frames: zune-jpeg (the pure-Rust codec), 1 thread",
              rate(zune), f"{g2_rd:,.0f} frames/s", zune["frames_per_s"] / g2_rd)
    ratio_row("Real frames: gulpio2's decoder alone on the frames in memory, 1 process",
              "-", f"{g2['decode_1_frames_per_s']:,.0f} frames/s (jpeg_bytes_to_img)", None)


def main():
    res, out_md = sys.argv[1], sys.argv[2]
    meta = json.load(open(os.path.join(res, "meta.json")))
    turbo = best_ingest(os.path.join(res, "ingest-default.jsonl"))
    default = best_ingest(os.path.join(res, "ingest-pure.jsonl"))
    rows = []  # task, gulp, gulpio2, ratio, target, met

    def ratio_row(task, gulp, gulpio2, ratio, target=None, need=None, higher_is_better=True):
        if ratio is None:
            met = "n/a" if target else ""
        elif need is None:
            met = ""
        else:
            ok = ratio >= need if higher_is_better else ratio <= need
            met = "met" if ok else "**not met**"
        shown = "-" if ratio is None else f"{ratio:.2f}×" if ratio < 10 else f"{ratio:.1f}×"
        rows.append((task, gulp, gulpio2, shown,
                     target or "-", met))

    ingest_tasks = [
        ("csv-jpeg", "Ingest JPEG folders, no resize", "≥ 20×", 20),
        ("json-8fps", "Ingest videos at 8 fps", "≥ 3×", 3),
        ("json-8fps-256", "Ingest videos at 8 fps, short edge 256", "≥ 3×", 3),
        ("image-folder", "Ingest image folder", None, None),
    ]
    for builds, label in ((turbo, "default build"), (default, "pure-Rust build")):
        for task, name, target, need in ingest_tasks:
            g = builds.get((task, "gulp"))
            p = turbo.get((task, "gulpio2"))
            if g is None and (p is None or builds is default):
                continue
            gr = g and g["frames"] / g["wall_s"]
            pr = p and p["frames"] / p["wall_s"]
            ratio_row(f"{name} ({label})",
                      "-" if g is None else f"{gr:,.0f} frames/s ({g['wall_s']:.1f} s, {cpu(g):.1f} CPU s)",
                      "-" if p is None else f"{pr:,.0f} frames/s ({p['wall_s']:.1f} s, {cpu(p):.1f} CPU s)",
                      gr / pr if g and p else None, target, need)
    # Peak memory: the largest peak tree PSS over the ingest tasks (turbo run).
    for builds, label in ((turbo, "default build"), (default, "pure-Rust build")):
        g = [r for (t, i), r in builds.items() if i == "gulp" and r["peak_tree_pss_mb"]]
        p = [r for (t, i), r in turbo.items() if i == "gulpio2" and r["peak_tree_pss_mb"]]
        if not g:
            continue
        gm = max(g, key=lambda r: r["peak_tree_pss_mb"])
        pm = max(p, key=lambda r: r["peak_tree_pss_mb"]) if p else None
        rows.append((
            f"Peak ingest memory, tree PSS, max over tasks ({label})",
            f"{gm['peak_tree_pss_mb']:,.0f} MB ({gm['task']})",
            "-" if pm is None else f"{pm['peak_tree_pss_mb']:,.0f} MB ({pm['task']})",
            "-" if pm is None else f"{pm['peak_tree_pss_mb'] / gm['peak_tree_pss_mb']:.1f}× less",
            "gulp ≤ 300 MB",
            "met" if gm["peak_tree_pss_mb"] <= 300 else "**not met**"))

    def last_json(name):
        return json.loads(open(os.path.join(res, name)).read().strip().splitlines()[-1])

    def gulp_best(name):
        runs = read_json_objects(os.path.join(res, name))
        return max(runs, key=lambda r: r["frames_per_s"])

    real_rows(res, ratio_row, gulp_best, last_json)
    io = last_json("gulpio2-io.json")

    raw, dec1, decn = (gulp_best(f"gulp-{n}.json") for n in ("raw", "decode-1", "decode-all"))
    ratio_row("Raw reads, all frames (gulp: all threads; gulpio2: read_frames, 1 process)",
              f"{raw['frames_per_s']:,.0f} frames/s, {raw['mb_per_s']:,.0f} MB/s ({raw['threads']} threads)",
              f"{io['raw_read_frames_per_s']:,.0f} frames/s, "
              f"{io['raw_read_frames_per_s'] * io['mean_frame_bytes'] / 1e6:,.0f} MB/s",
              raw["frames_per_s"] / io["raw_read_frames_per_s"])
    ratio_row("Read + decode, 1 thread",
              f"{dec1['frames_per_s']:,.0f} frames/s, {dec1['megapixels_per_s']:,.0f} MP/s",
              fmt_rate(io["read_decode_1_frames_per_s"]),
              dec1["frames_per_s"] / io["read_decode_1_frames_per_s"])
    ratio_row(f"Read + decode, all threads ({decn['threads']}; gulpio2: 1 process, it has no threads)",
              f"{decn['frames_per_s']:,.0f} frames/s, {decn['megapixels_per_s']:,.0f} MP/s",
              fmt_rate(io["read_decode_1_frames_per_s"]),
              decn["frames_per_s"] / io["read_decode_1_frames_per_s"])
    pj = io["open_json_min_s"] * 1e3
    for fmt, need, target in (("json", 20, "≥ 20×"), ("msgpack", 100, "≥ 100×")):
        ms = open_ms(os.path.join(res, f"open-{fmt}.txt"))
        ratio_row(f"Open 200,000 items, {fmt} meta" + (" (gulpio2: its JSON figure)" if fmt == "msgpack" else ""),
                  "-" if ms is None else f"{ms:,.1f} ms",
                  f"{pj:,.0f} ms", None if ms is None else pj / ms, target, need)

    py_json = os.path.join(res, "python.json")
    if os.path.exists(py_json):
        for task, g, p2, ratio, target, need in last_json("python.json")["rows"]:
            ratio_row("Python: " + task.strip(), g, p2, ratio, target, need)

    table = ["| task | gulp | gulpio2 | ratio | target | met? |", "|---|---|---|---|---|---|"]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    table = "\n".join(table)

    head = [
        f"# gulp vs gulpio2 ({meta['date']})",
        "",
        f"- Machine: nproc {meta['nproc']}, {meta['cpu']}, {meta['mem_gib']} GiB RAM, "
        f"{meta['kernel']}; gulpio2 {io.get('gulpio2', meta.get('gulpio2', '?'))}.",
        f"- Load average (uptime): {meta['load_start']} at the start, {meta['load_end']} at the end.",
        f"- Command: `scripts/compare.sh` (commit `{meta['commit']}`); {meta['workers']} workers "
        f"for every ingest; ingest figures are the fastest of "
        f"{meta.get('ingest_repeat', 1)} run(s) per side ("
        f"{meta.get('short_repeat', meta.get('ingest_repeat', 1))} for the JPEG-folder and "
        "image-folder tasks; frames/s = frames ÷ wall; CPU s = user + sys "
        "of the process tree).",
        f"- Runtime: {meta['total_s'] / 60:.1f} min in all ("
        + ", ".join(f"{k} {v:.0f} s" for k, v in meta["phases"].items()) + ").",
        "- Ratios: gulp ÷ gulpio2 for rates, gulpio2 ÷ gulp for times and memory.",
        "",
    ]
    text = "\n".join(head) + "\n" + table + "\n"
    # The tables of the Python package's mixed-shapes run and of the clip
    # loader, as the scripts printed them.
    for name in ("python.json", "loader.md", "loader-mixed.md"):
        path = os.path.join(res, name)
        if os.path.exists(path):
            body = open(path).read()
            if name == "python.json":  # its tables, then the figures as JSON on the last line
                body = "\n".join(body.strip().splitlines()[:-1])
                start = body.find("`gd[id]` read + decode on one thread, the mixed")
            else:
                start = body.find("\n\n") + 1
            if start > 0:
                text += "\n" + body[start:].strip() + "\n"
    with open(out_md, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
