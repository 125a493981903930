//! Times the phases of opening a directory, each alone on one thread, and
//! the whole `GulpDirectory::open`: the figures behind the open section of
//! `docs/benchmarks.md`.
//!
//! ```sh
//! cargo run --release -p gulp-io --example open_phases -- target/bench-dirs/open-200k-msgpack
//! ```
//!
//! Each figure is the minimum over `--runs` runs (default 10), which is the
//! least disturbed by other work on a shared machine. The phases:
//! `read` reads every meta file into one reused buffer; `crc` is CRC-32 over
//! all meta bytes (already in memory); `read_index` runs
//! `gulp_format::read_index` over all meta bytes (in memory, one thread);
//! `read_meta` the full parse; `open` is `GulpDirectory::open` (all cores,
//! files read from the page cache).

use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().ok_or("usage: open_phases DIR [--runs N]")?);
    let runs: usize = match (args.next().as_deref(), args.next()) {
        (Some("--runs"), Some(n)) => n.parse()?,
        _ => 10,
    };
    let mut metas: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "gmeta"))
        .collect();
    metas.sort();
    let bytes: Vec<Vec<u8>> = metas.iter().map(std::fs::read).collect::<Result<_, _>>()?;
    let total: usize = bytes.iter().map(Vec::len).sum();
    println!(
        "{}: {} meta files, {:.1} MB; min of {runs} runs",
        dir.display(),
        metas.len(),
        total as f64 / 1e6
    );

    let time = |name: &str, f: &mut dyn FnMut() -> Result<(), Box<dyn std::error::Error>>| {
        let mut best = Duration::MAX;
        for _ in 0..runs {
            let start = Instant::now();
            f()?;
            best = best.min(start.elapsed());
        }
        println!("{name:>12}: {:8.2} ms", best.as_secs_f64() * 1e3);
        Ok::<(), Box<dyn std::error::Error>>(())
    };
    let mut buf = Vec::new();
    time("read", &mut || {
        for path in &metas {
            buf.clear();
            std::fs::File::open(path)?.read_to_end(&mut buf)?;
        }
        Ok(())
    })?;
    time("crc", &mut || {
        let crc = bytes.iter().fold(0, |acc, b| acc ^ crc32fast::hash(b));
        std::hint::black_box(crc);
        Ok(())
    })?;
    time("read_index", &mut || {
        for b in &bytes {
            std::hint::black_box(gulp_io::gulp_format::read_index(b)?);
        }
        Ok(())
    })?;
    time("read_meta", &mut || {
        for b in &bytes {
            std::hint::black_box(gulp_io::gulp_format::read_meta(b)?);
        }
        Ok(())
    })?;
    time("open", &mut || {
        let gulp = gulp_io::GulpDirectory::open(&dir)?;
        std::hint::black_box(gulp.len());
        Ok(())
    })?;
    Ok(())
}
