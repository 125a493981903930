"""The measured figures that more than one page of the documentation quotes, each
with its one value, and every quote of it. `scripts/ci/check_docs.py` fails when a
page quotes a figure otherwise, or no longer has a quote listed here.

FIGURES: name -> the value, as docs/benchmarks.md (or the run in docs/runs/ it
comes from) prints it: "0.97–1.00", "1,471", "86.5".

QUOTES: (page, quote): the words of the page around the figures, with each figure
as `{name}` (its value as it is), `{name:.1f}` (rounded, as Python's format()
writes it) or `{name/1000:.1f}` (in a unit a thousand times larger: MB as GB,
ms as s). Line breaks and runs of spaces count as one space; nothing else is
loose. A quote that is no longer on its page fails too: when a page is reworded,
its quote here is reworded with it.

To change a figure (a new run): change its value here, then every page the
check names. To quote a figure on another page: add the quote here.
"""

FIGURES = {
    # The comparison with gulpio2 (docs/benchmarks.md, run of 2026-11-24).
    "open_json_ms": "39.0",  # open 200,000 items of 4 frames, JSON meta, ms
    "open_msgpack_ms": "17.3",  # the same, msgpack meta
    "open_json_x": "86.5",  # open 200,000 items of 4 frames, JSON meta, ÷ gulpio2's
    "open_msgpack_x": "195.2",  # the same, msgpack meta
    "ingest_video_x": "3.62",  # ingest videos at 8 fps, default build
    "ingest_jpeg_x": "28.3",  # ingest JPEG folders, no resize, default build
    "decode_1t": "725",  # real frames, read + decode, 1 thread, frames/s
    "decode_1t_mp": "208",  # the same, MP/s
    "decode_half_1t": "852",  # the same at 1/2 scale, frames/s
    "zune_1t": "532",  # the same with zune-jpeg, frames/s
    # The Python package (docs/benchmarks.md, run of 2026-11-25).
    "gd_decode_x": "1.25",  # gd[id], 1 thread, real frames, ÷ gulpio2's
    "gulp_open_py_ms": "102.2",  # GulpDirectory(path) + one meta, 200,000 items × 30 frames
    "gulpio2_open_30_ms": "9,999",  # gulpio2's, the same
    "gulpio2_open_4_ms": "3,378",  # gulpio2's open, 200,000 items of 4 frames
    "first_call_x": "1.29",  # first gd[id] pass on long items ÷ gulpio2's (first round)
    "first_call_before_x": "1.05",  # the same before the mapping was populated at once
    # The clip loader (docs/benchmarks.md, run of 2026-11-26).
    "loader_clips": "220.5",  # gulp.ClipLoader(threads=2), clips/s
    # Ten million items (docs/benchmarks.md, scripts/bench/million.py).
    "tenm_open": "0.37",  # GulpDirectory open, 10⁷ × 1 frame, msgpack, index file, s
    "tenm_loader": "0.98",  # ClipLoader(), one rank, the same, s
    "tenm_noindex_s": "15.8",  # ClipLoader() without the index, s
    "tenm_noindex_mb": "1,471",  # its memory, MB
    "m30_index_s": "0.11",  # ClipLoader(), one rank, 10⁶ × 30 frames, msgpack, s
    "m30_index_mb": "31",  # its memory, MB
    "m30_noindex_s": "1.45",  # the same without the index, s
    "m30_noindex_mb": "497",  # its memory, MB
    "m30_json_s": "2.85",  # without the index, JSON meta, s
    "m30_json_mb": "503",  # its memory, MB
    # What a loader holds per frame and item without an index file (the code's sizes).
    "frame_bytes": "12",
    "record_bytes": "24",
    "class_bytes": "8",
    "item_bytes": "32",  # the record and a class target
    # The clip loader over a bucket (docs/benchmarks.md, "Object storage"; docs/runs,
    # 2026-11-29: 48- and 160-frame items, five runs).
    "s3_cold_direct": "1.00–1.24",  # cold epoch through the cache ÷ no cache
    "s3_tenth_direct": "1.00–1.32",  # cache of a tenth ÷ no cache
    "s3_full_bytes": "1.00–1.02",  # bytes fetched over 5 or 6 epochs ÷ the data, cache that holds it
    "s3_warm": "0.93–1.01",  # epochs once the chunks are whole ÷ local
    "s3_shared": "0.17–0.31",  # cold epoch ÷ local, Garage on the same 2 cores
    "s3_own_core": "0.24–0.40",  # the same, Garage on a core of its own, 128 KiB blocks
    "s3_tenth_bytes": "5.3–9.7",  # bytes fetched ÷ the frames decoded, cold or a tenth
    # gulp lint on images (docs/benchmarks.md, 2026-11-27).
    "lint_vs_cleanvision": "24",
    "lint_vs_fastdup": "32",
}

QUOTES = [
    # The comparison with gulpio2.
    ("docs/benchmarks.md", "| Open 200,000 items of 4 frames, json meta | {open_json_ms} ms | {gulpio2_open_4_ms} ms | "
                           "{open_json_x}× |"),
    ("docs/benchmarks.md", "| Open 200,000 items of 4 frames, msgpack meta (gulpio2: its JSON figure) | {open_msgpack_ms} ms | "
                           "{gulpio2_open_4_ms} ms | {open_msgpack_x}× |"),
    ("docs/benchmarks.md", "| Ingest JPEG folders, no resize (default build) | 14,534 frames/s (0.2 s, 0.2 CPU s) "
                           "| 514 frames/s (6.4 s, 12.4 CPU s) | {ingest_jpeg_x}× |"),
    ("docs/benchmarks.md", "| Ingest videos at 8 fps (default build) | 478 frames/s (5.2 s, 10.2 CPU s) | "
                           "132 frames/s (18.7 s, 35.6 CPU s) | {ingest_video_x}× |"),
    ("docs/guide.md", "opening 200,000 items without an index file took {open_msgpack_ms} against "
                      "{open_json_ms} ms, a loader of a million items of 30 frames without one {m30_noindex_s} "
                      "against {m30_json_s} s"),
    ("README.md", "opens a directory {open_json_x:.0f}–{open_msgpack_x:.0f}× faster, ingests "
                  "{ingest_video_x:.1f}–{ingest_jpeg_x:.0f}× faster and decodes {gd_decode_x}× faster per core"),
    ("docs/benchmarks.md", "read + decode, 1 thread | {decode_1t} frames/s, {decode_1t_mp} MP/s | 560 frames/s"),
    ("docs/benchmarks.md", "| Real frames: read + decode at 1/2 scale, 1 thread (gulpio2: full size) | "
                           "{decode_half_1t} frames/s, 61 MP/s |"),
    ("docs/benchmarks.md", "| Real frames: zune-jpeg (the pure-Rust codec), 1 thread | {zune_1t} frames/s,"),
    ("docs/benchmarks.md", "decodes with zune-jpeg ({zune_1t} against {decode_1t} frames/s on one thread)"),
    ("docs/faq.md", "Decoding costs about the stored pixels ({decode_1t_mp} MP/s on one core"),
    ("docs/faq.md", "at 1/2 scale, {decode_half_1t} against {decode_1t} frames/s at full size on one thread"),
    ("docs/architecture.md", "({zune_1t} against {decode_1t} frames/s on one core, docs/benchmarks.md)"),
    ("docs/benchmarks.md", "(gulpio2 parses every `frame_info` when it opens: {gulpio2_open_4_ms/1000:.1f} s here, "
                           "{gulpio2_open_30_ms/1000:.1f} s at 30 frames an item)"),
    # The Python package.
    ("docs/benchmarks.md", "| `GulpDirectory(path)` + one item's meta, 200,000 items × 30 frames | "
                           "{gulp_open_py_ms} ms | {gulpio2_open_30_ms} ms |"),
    ("docs/benchmarks.md", "| `gd[id]` read + decode, 1 thread, real frames | 719 frames/s | 575 frames/s | "
                           "{gd_decode_x}× |"),
    ("docs/python.md", "parses every meta file ({gulpio2_open_30_ms/1000:.1f} s for 200,000 items × 30 frames, "
                       "{gulpio2_open_4_ms/1000:.1f} s with 4 frames an item: docs/benchmarks.md) | lists chunks "
                       "and reads ids ({gulp_open_py_ms/1000:.2f} s)"),
    ("docs/scale-out.md", "reads only the meta files' ids when it opens (about {gulp_open_py_ms/1000:.1f} s for "
                          "200,000 items)"),
    ("docs/benchmarks.md", "| first pass, page by page (before) | 669, 653 frames/s | 638, 625 | "
                           "{first_call_before_x}×, 1.04× |"),
    ("docs/benchmarks.md", "| first pass, the item mapping populated in one go | 811, 828 frames/s | 629, 647 | "
                           "**{first_call_x}×, 1.28×** |"),
    ("docs/python.md", "process runs at {first_call_x}× gulpio2, {first_call_before_x}× before"),
    # The clip loader.
    ("docs/benchmarks.md", "| `gulp.ClipLoader(threads=2)` | {loader_clips} | – |"),
    ("docs/faq.md", "gave {loader_clips} clips/s on 2 threads"),
    # Ten million items, a million of 30 frames, and what a loader holds.
    ("docs/benchmarks.md", "| `GulpDirectory` open | {tenm_open} s |"),
    ("docs/benchmarks.md", "| `ClipLoader()`, one rank | {tenm_loader} s, +318 MB | 1.30 s, +318 MB | "
                           "{m30_index_s} s, +{m30_index_mb} MB |"),
    ("docs/benchmarks.md", "| `ClipLoader()` without the index | {tenm_noindex_s} s, +{tenm_noindex_mb} MB | "
                           "20.0 s, +1,469 MB | {m30_noindex_s} s, +{m30_noindex_mb} MB | "
                           "{m30_json_s} s, +{m30_json_mb} MB |"),
    ("docs/concepts.md", "ten million items then opens in {tenm_open:.1f} s and a loader is made in "
                         "{tenm_loader:.1f} s, against {tenm_noindex_s:.0f} s and {tenm_noindex_mb/1000:.1f} GB "
                         "a rank without it"),
    ("CHANGELOG.md", "ten million items open in {tenm_open:.1f} s and a loader is made in {tenm_loader:.1f} s"),
    ("docs/scale-out.md", "a rank's loader is made in {m30_index_s} s and holds +{m30_index_mb} MB with the index "
                          "file; without it, in {m30_noindex_s} s with +{m30_noindex_mb} MB in each rank "
                          "(JSON meta: {m30_json_s} s, +{m30_json_mb} MB)"),
    ("docs/faq.md", "(1,000,000 items of 30 frames: about {m30_noindex_mb/1000:.1f} GB)"),
    ("docs/benchmarks.md", "Without it a rank holds {frame_bytes} B a frame and {item_bytes} B an item with a "
                           "class label"),
    ("docs/scale-out.md", "keeps only what it needs: {frame_bytes} bytes a frame, a {record_bytes}-byte record an "
                          "item and its target ({class_bytes} bytes for a class index), so {item_bytes} bytes an "
                          "item with class labels besides its frames' {frame_bytes} bytes each"),
    ("docs/concepts.md", "{frame_bytes} bytes a frame and {item_bytes} bytes an item with a class label"),
    ("docs/faq.md", "read from the meta files, {frame_bytes} bytes a frame and {item_bytes} an item with a class "
                    "label"),
    ("docs/loader.md", "nothing per item): {frame_bytes} bytes a frame, {record_bytes} an item, a sample's target "
                       "({class_bytes} bytes for a class;"),
    # The clip loader over a bucket.
    ("docs/benchmarks.md", "the cold epoch ran at {s3_cold_direct}× no cache and a\ncache of 10 % of the data at "
                           "{s3_tenth_direct}×"),
    ("docs/benchmarks.md", "both fetching {s3_tenth_bytes}× the bytes they decode on TSN\nclips"),
    ("docs/benchmarks.md", "{s3_full_bytes}× the data over 5 or 6 epochs, every epoch after the cold one\nfaster"),
    ("docs/benchmarks.md", "whole at {s3_warm}× local"),
    ("docs/benchmarks.md", "the cold epoch at {s3_shared}× local with\nGarage on the same 2 cores, {s3_own_core}× on a "
                           "core of its own"),
    ("docs/loader.md", "the cold epoch at\n{s3_cold_direct} × the speed of the same bucket read without a cache, a "
                       "cache of a tenth of the data\nwith the full shuffle at {s3_tenth_direct} ×"),
    ("docs/loader.md", "{s3_full_bytes} × the data\nfetched over 5 or 6 epochs"),
    ("docs/loader.md", "the chunks were whole at {s3_warm} × the local directory's speed"),
    ("docs/loader.md", "the cold epoch ran at {s3_shared} × local with\nGarage on the same 2 cores"),
    ("docs/faq.md", "epochs ran at {s3_warm}× the local directory's speed"),
    ("docs/faq.md", "(the cold epoch at\n  {s3_shared}× local with the server on the same 2 cores)"),
    ("docs/object-storage.md", "the cold epoch ran at {s3_shared} × local with the server on the loader's 2 cores, "
                               "and at\n  {s3_own_core} × with Garage on a core of its own"),
    ("docs/object-storage.md", "ran at {s3_cold_direct} × that speed cold and {s3_tenth_direct} × with a\n  cache "
                               "of a tenth"),
    ("docs/object-storage.md", "{s3_tenth_bytes} × the bytes it decodes on TSN clips"),
    ("docs/object-storage.md", "Over five or\n  six epochs each byte of the data objects is fetched {s3_full_bytes} times."),
    # gulp lint.
    ("docs/benchmarks.md", "gulp is **{lint_vs_cleanvision}× CleanVision, {lint_vs_fastdup}× fastdup**"),
    ("CHANGELOG.md", "On images, {lint_vs_cleanvision}× CleanVision's and {lint_vs_fastdup}× fastdup's speed"),
]
