//! `gulp bench`: read (and decode) every frame and report the speed.

use std::borrow::Cow;
use std::io::Write;
use std::time::Instant;

use anyhow::Result;
use gulp_io::{ColorMode, decode_jpeg};
use serde::Serialize;

use crate::Outcome;
use crate::cli::BenchArgs;

/// Frames handed to the threads at a time.
const FRAMES_PER_THREAD: usize = 64;
/// The raw pass touches one byte per page, which makes the kernel read the
/// page in without spending time on the bytes themselves.
const PAGE: usize = 4096;

#[derive(Debug, Default, Serialize)]
struct Figures {
    threads: usize,
    decode: bool,
    frames: u64,
    /// JPEG bytes read.
    bytes: u64,
    /// Decoded pixels (0 with `--raw`).
    pixels: u64,
    /// Frames the decoder rejected.
    failed: u64,
    seconds: f64,
    frames_per_s: f64,
    mb_per_s: f64,
    megapixels_per_s: f64,
}

#[derive(Default)]
struct Tally {
    frames: u64,
    bytes: u64,
    pixels: u64,
    failed: u64,
    touched: u64,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.frames += other.frames;
        self.bytes += other.bytes;
        self.pixels += other.pixels;
        self.failed += other.failed;
        self.touched = self.touched.wrapping_add(other.touched);
    }
}

pub fn run(args: &BenchArgs) -> Result<Outcome> {
    let threads = super::threads(args.threads);
    let decode = !args.raw;
    let gulp = super::open_dir(&args.dir)?;
    let bar = super::progress("frames");
    let start = Instant::now();
    let mut total = Tally::default();
    for index in 0..gulp.chunks().len() {
        let reader = gulp.reader(index)?;
        let mut frames: Vec<Cow<'_, [u8]>> = Vec::with_capacity(reader.meta().n_frames());
        for (id, item) in reader.meta().iter() {
            for (k, fi) in item.frame_info.iter().enumerate() {
                frames.push(reader.read(id, k, fi)?);
            }
        }
        for batch in frames.chunks(threads * FRAMES_PER_THREAD) {
            let tally = process(batch, threads, decode);
            bar.inc(tally.frames);
            total.add(&tally);
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    std::hint::black_box(total.touched);

    #[allow(clippy::cast_precision_loss)] // rates for display
    let rate = |n: u64| {
        if seconds > 0.0 {
            n as f64 / seconds
        } else {
            0.0
        }
    };
    let figures = Figures {
        threads,
        decode,
        frames: total.frames,
        bytes: total.bytes,
        pixels: total.pixels,
        failed: total.failed,
        seconds,
        frames_per_s: rate(total.frames),
        mb_per_s: rate(total.bytes) / 1e6,
        megapixels_per_s: rate(total.pixels) / 1e6,
    };
    if figures.failed > 0 {
        eprintln!(
            "gulp: warning: {} frames failed to decode (run `gulp check --decode`)",
            figures.failed
        );
    }
    let mut out = super::stdout();
    if args.json {
        super::write_json(&mut out, &figures)?;
        return Ok(Outcome::Success);
    }
    let what = if decode { "read and decoded" } else { "read" };
    writeln!(
        out,
        "{} frames {what} in {:.3} s on {threads} threads",
        figures.frames, figures.seconds
    )?;
    writeln!(out, "frames/s  {:.1}", figures.frames_per_s)?;
    if decode {
        writeln!(out, "MP/s      {:.1}", figures.megapixels_per_s)?;
    }
    writeln!(out, "MB/s      {:.1}  (JPEG bytes)", figures.mb_per_s)?;
    out.flush()?;
    Ok(Outcome::Success)
}

/// Reads (and decodes) a batch of frames on `threads` threads.
fn process(batch: &[Cow<'_, [u8]>], threads: usize, decode: bool) -> Tally {
    let one = |frames: &[Cow<'_, [u8]>]| {
        let mut tally = Tally::default();
        for jpeg in frames {
            tally.frames += 1;
            tally.bytes += jpeg.len() as u64;
            if decode {
                match decode_jpeg(jpeg, ColorMode::Auto) {
                    Ok(image) => tally.pixels += (image.width * image.height) as u64,
                    Err(_) => tally.failed += 1,
                }
            } else {
                let sum = jpeg
                    .iter()
                    .step_by(PAGE)
                    .map(|&b| u64::from(b))
                    .sum::<u64>();
                tally.touched = tally.touched.wrapping_add(sum);
            }
        }
        tally
    };
    let per = batch.len().div_ceil(threads.max(1)).max(1);
    if threads <= 1 || batch.len() <= per {
        return one(batch);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = batch
            .chunks(per)
            .map(|part| scope.spawn(move || one(part)))
            .collect();
        let mut total = Tally::default();
        for handle in handles {
            // A decode never panics; if it did, re-raise it here.
            let tally = handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            total.add(&tally);
        }
        total
    })
}
