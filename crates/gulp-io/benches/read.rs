//! Reading benches: raw frame reads, JPEG decoding on one and on all
//! threads, and opening a directory of 200,000 items in 200 chunks.
//!
//! `cargo bench -p gulp-io --bench read` builds its directories once under
//! `$GULP_BENCH_DIR` (default `<workspace>/target/bench-dirs`) and reuses
//! them: `read-2000x8` (2,000 items of 8 frames of a 176x100 JPEG, JSON meta)
//! and `open-200k-json` / `open-200k-msgpack` (200,000 items of 4 frames of a
//! 24x16 JPEG in 200 chunks). In criterion's test mode (`cargo test
//! --benches`, no `--bench` argument) small directories in a temporary
//! directory stand in for them, so that run takes seconds.
// criterion's macros and closures generate undocumented items.
#![allow(missing_docs)]

use std::borrow::Cow;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput};
use gulp_codec::{ZuneDecoder, decode_batch};
use gulp_io::gulp_format::MetaFormat;
use gulp_io::{GulpDirectory, Selection};
use gulp_test_support::bench_dir::{self, Spec};

/// Frames decoded per iteration of the decode benches.
const DECODE_BATCH: usize = 512;

/// Whether criterion runs for real (`cargo bench`) rather than in test mode.
fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// Where the reusable bench directories live.
fn bench_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("GULP_BENCH_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("bench-dirs");
    }
    // crates/gulp-io -> the workspace root.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .unwrap_or(manifest)
        .join("target/bench-dirs")
}

/// The directory `name` with `spec`: made once under the bench root in bench
/// mode, or made small in `scratch` in test mode.
fn directory(name: &str, spec: Spec, small: Spec, jpeg: &[u8], scratch: &Path) -> PathBuf {
    let (dir, spec) = if bench_mode() {
        (bench_root().join(name), spec)
    } else {
        (scratch.join(name), small)
    };
    match bench_dir::ensure_dir(&dir, &spec, jpeg) {
        Ok(Some(w)) => eprintln!(
            "made {}: {} items, {} frames, {:.1} MB data, {:.1} MB meta in {:.1} s",
            dir.display(),
            w.items,
            w.frames,
            w.data_bytes as f64 / 1e6,
            w.meta_bytes as f64 / 1e6,
            w.seconds
        ),
        Ok(None) => {}
        Err(e) => panic!("cannot make {}: {e}", dir.display()),
    }
    dir
}

fn reads_and_decode(c: &mut Criterion, scratch: &Path) {
    let spec = Spec {
        items: 2_000,
        chunks: 4,
        frames_per_item: 8,
        format: MetaFormat::Json,
    };
    let small = Spec { items: 50, ..spec };
    let dir = directory("read-2000x8", spec, small, bench_dir::PHOTO_JPEG, scratch);
    let gulp = GulpDirectory::open(&dir).expect("open the read directory");
    let ids: Vec<String> = gulp.ids().map(str::to_owned).collect();
    let n_frames = gulp.n_frames() as u64;
    let n_bytes: u64 = ids
        .iter()
        .flat_map(|id| gulp.frames(id, &Selection::All).expect("read frames"))
        .map(|f| f.len() as u64)
        .sum();

    // Every frame of every item, in directory order, as JPEG bytes borrowed
    // from the map (what `frames` returns) or copied into owned buffers (what
    // gulpio2's `read_frames` returns, as Python bytes).
    let borrow = || {
        let mut total = 0usize;
        for id in &ids {
            for frame in gulp.frames(id, &Selection::All).expect("read frames") {
                total += black_box(frame).len();
            }
        }
        total
    };
    let copy = || {
        let mut total = 0usize;
        for id in &ids {
            for frame in gulp.frames(id, &Selection::All).expect("read frames") {
                total += black_box(frame.into_owned()).len();
            }
        }
        total
    };
    for (group_name, throughput) in [
        ("raw_reads", Throughput::Elements(n_frames)),
        ("raw_reads_bytes", Throughput::Bytes(n_bytes)),
    ] {
        let mut group = c.benchmark_group(group_name);
        group
            .throughput(throughput)
            .sample_size(50)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
        group.bench_function("borrow", |b| b.iter(borrow));
        group.bench_function("copy", |b| b.iter(copy));
        group.finish();
    }

    let frames: Vec<Cow<'_, [u8]>> = ids
        .iter()
        .flat_map(|id| gulp.frames(id, &Selection::All).expect("read frames"))
        .take(DECODE_BATCH)
        .collect();
    let decoder = ZuneDecoder::default();
    for image in decode_batch(&frames, &decoder, 1) {
        let image = image.expect("decode a bench frame");
        assert_eq!((image.width, image.height), bench_dir::PHOTO_SIZE);
    }
    let all = std::thread::available_parallelism().map_or(1, usize::from);
    let mut group = c.benchmark_group("decode");
    group
        .throughput(Throughput::Elements(frames.len() as u64))
        .sample_size(30)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    group.bench_function("1_thread", |b| {
        b.iter(|| decode_batch(black_box(&frames), &decoder, 1))
    });
    group.bench_function(format!("all_threads_{all}"), |b| {
        b.iter(|| decode_batch(black_box(&frames), &decoder, all))
    });
    group.finish();
}

fn open(c: &mut Criterion, scratch: &Path) {
    let mut group = c.benchmark_group("open_200k");
    // One open takes a large fraction of a second: few, flat samples.
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for format in [MetaFormat::Json, MetaFormat::Msgpack] {
        let spec = Spec {
            items: 200_000,
            chunks: 200,
            frames_per_item: 4,
            format,
        };
        let small = Spec {
            items: 2_000,
            chunks: 2,
            ..spec
        };
        let name = format!("open-200k-{format}");
        let dir = directory(&name, spec, small, bench_dir::TINY_JPEG, scratch);
        let gulp = GulpDirectory::open(&dir).expect("open the directory");
        assert_eq!(
            gulp.len(),
            if bench_mode() {
                spec.items
            } else {
                small.items
            }
        );
        drop(gulp);
        // Dropping 200,000 entries is not part of opening (gulpio2's figure
        // does not include freeing its dicts either).
        group.bench_function(format.name(), |b| {
            b.iter_with_large_drop(|| GulpDirectory::open(&dir).expect("open the directory"))
        });
    }
    group.finish();
}

fn main() {
    let scratch = tempfile::tempdir().expect("make a temporary directory");
    let mut c = Criterion::default().configure_from_args();
    reads_and_decode(&mut c, scratch.path());
    open(&mut c, scratch.path());
    c.final_summary();
}
