#!/usr/bin/env python3
"""Makes the gulp vs gulpio2 table of scripts/compare.sh from the files its
steps wrote into one results directory:

  ingest-turbo.jsonl     bench_gulpio2_ingest.py, gulpio2 and gulp built with
                         --features turbojpeg (libjpeg-turbo encoder)
  ingest-default.jsonl   the same tasks, gulp's default build only (pure-Rust
                         encoder); optional
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


def main():
    res, out_md = sys.argv[1], sys.argv[2]
    meta = json.load(open(os.path.join(res, "meta.json")))
    turbo = best_ingest(os.path.join(res, "ingest-turbo.jsonl"))
    default = best_ingest(os.path.join(res, "ingest-default.jsonl"))
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
    for builds, label in ((turbo, "libjpeg-turbo encoder"), (default, "pure-Rust encoder")):
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
    for builds, label in ((turbo, "libjpeg-turbo encoder"), (default, "pure-Rust encoder")):
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

    io = json.loads(open(os.path.join(res, "gulpio2-io.json")).read().strip().splitlines()[-1])

    def gulp_best(name):
        runs = read_json_objects(os.path.join(res, name))
        return max(runs, key=lambda r: r["frames_per_s"])

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
    with open(out_md, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
