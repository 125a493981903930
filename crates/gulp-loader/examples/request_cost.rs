//! The loader's own CPU for each request it sends to an object store,
//! measured apart from any server: the directory copied into a store held in
//! memory (`memory://`, the code paths of a bucket without a network), read
//! through a fresh node cache by ranges (the cold epoch, and a cache of a
//! tenth of the data), against the same directory on disk in the same run.
//!
//! ```sh
//! cargo run --release -p gulp-loader --example request_cost -- DIR [--rounds N] [--cache-root DIR]
//! ```
//!
//! The pipeline is `scripts/bench/bench_s3.py`'s (TSN 8 frames, short edge
//! 128, random 112 crop, flip, batches of 8, 2 threads). CPU is the
//! process's (user + system, from `/proc/self/stat`); "per request" is the
//! CPU above the local epoch's, divided by the requests the epoch sent.
#![allow(clippy::unwrap_used, clippy::cast_precision_loss)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use gulp_loader::{CropMode, Loader, LoaderOptions, Order, Sampling, Shuffle, Spatial};
use gulp_store::{CacheFetch, CacheOptions};

/// CPU seconds this process has used (user + system).
fn cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The fields after the command's closing parenthesis; utime and stime
    // are the 14th and 15th of the line, the 12th and 13th after it.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

fn options(open: gulp_io::DirectoryOptions) -> LoaderOptions {
    LoaderOptions {
        frames: 8,
        sampling: Sampling::Segments,
        spatial: Spatial {
            resize: Some(128),
            size: Some((112, 112)),
            crop: CropMode::Random,
            flip: true,
        },
        batch_size: 8,
        order: Order {
            shuffle: Shuffle::Items,
            seed: 0,
            ..Order::default()
        },
        threads: Some(2),
        open,
        ..LoaderOptions::default()
    }
}

/// One epoch: (wall seconds, CPU seconds, requests sent, clips).
fn epoch(loader: &mut Loader, number: u64) -> (f64, f64, u64, usize) {
    loader.set_epoch(number);
    let (t0, c0, r0) = (Instant::now(), cpu(), gulp_store::requests());
    let mut clips = 0;
    for batch in loader.iter() {
        clips += batch.unwrap().ids.len();
    }
    (
        t0.elapsed().as_secs_f64(),
        cpu() - c0,
        gulp_store::requests() - r0,
        clips,
    )
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(
        args.first()
            .expect("usage: request_cost DIR [--rounds N] [--cache-root DIR]"),
    );
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let rounds: usize = flag("--rounds").map_or(3, |r| r.parse().unwrap());
    let cache_root = flag("--cache-root").map_or_else(std::env::temp_dir, PathBuf::from);
    let data: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("data_"))
        .map(|e| e.metadata().unwrap().len())
        .sum();

    let mut local = Loader::open(&dir, options(gulp_io::GulpDirectory::options())).unwrap();
    epoch(&mut local, 0); // the page cache warm
    let runs: Vec<_> = (0..rounds)
        .map(|r| epoch(&mut local, r as u64 + 1))
        .collect();
    let local_cpu = runs.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    let local_wall = runs.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
    let clips = runs[0].3;

    let url = Path::new("memory://request-cost/dir");
    gulp_io::copy_dir(&dir, url, &mut |_| {}).unwrap();
    println!(
        "{} ({:.0} MB of data, {clips} clips an epoch); local epoch: {local_wall:.2} s, {local_cpu:.2} CPU s (best of {rounds})",
        dir.display(),
        data as f64 / 1e6
    );
    println!("| run | s | CPU s | requests | CPU above local per request |");
    println!("|---|---|---|---|---|");
    for (name, limit) in [
        ("cold, cache holding the data", None),
        ("cache of a tenth, epoch 2", Some(data / 10)),
    ] {
        for _ in 0..rounds {
            let cache = tempfile::Builder::new()
                .prefix("gulp-request-cost.")
                .tempdir_in(&cache_root)
                .unwrap();
            let open = gulp_io::GulpDirectory::options().cache(Some(CacheOptions {
                limit,
                fetch: CacheFetch::Ranges,
                ..CacheOptions::new(cache.path())
            }));
            let mut loader = Loader::open(url, options(open)).unwrap();
            let first = epoch(&mut loader, 0);
            let (wall, cpu_s, requests, _) = match limit {
                None => first,
                Some(_) => epoch(&mut loader, 1),
            };
            println!(
                "| {name} | {wall:.2} | {cpu_s:.2} | {requests} | {:.0} µs |",
                (cpu_s - local_cpu) / requests.max(1) as f64 * 1e6
            );
        }
    }
}
