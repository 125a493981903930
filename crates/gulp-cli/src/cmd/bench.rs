//! `gulp bench`: read (and decode) every frame and report the speed.

use std::borrow::Cow;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Result, bail};
use gulp_codec::{Codec, Crop, DecodeOptions, JpegFrame, Scale};
use gulp_format::Choice;
use serde::Serialize;

use crate::Outcome;
use crate::cli::BenchArgs;

/// Frames a thread takes at a time.
const FRAMES_PER_TAKE: usize = 4;
/// The raw pass touches one byte per page, which makes the kernel read the
/// page in without spending time on the bytes themselves.
const PAGE: usize = 4096;

#[derive(Debug, Default, Serialize)]
struct Figures {
    threads: usize,
    decode: bool,
    /// The codec ("libjpeg-turbo", "zune-jpeg"), the scale ("1/2") and
    /// the crop ("112x112") of the decode.
    codec: &'static str,
    scale: String,
    crop: Option<String>,
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

pub(super) fn run(args: &BenchArgs) -> Result<Outcome> {
    if args.loader {
        return run_loader(args);
    }
    let threads = super::threads(args.threads);
    let decode = !args.raw;
    let how = Decode::from_args(args)?;
    let gulp = super::open_dir(&args.dir)?;
    let bar = super::progress("frames");
    let start = Instant::now();
    let mut total = Tally::default();
    // One output buffer per thread for the whole run, reused frame after
    // frame, as a training loop decodes into its batch.
    let mut buffers = vec![Vec::new(); threads.max(1)];
    for index in 0..gulp.chunks().len() {
        let reader = gulp.reader(index)?;
        let mut frames: Vec<Cow<'_, [u8]>> = Vec::with_capacity(reader.meta().n_frames());
        for (id, item) in reader.meta().iter() {
            if reader.is_mapped() {
                for (k, fi) in item.frame_info.iter().enumerate() {
                    frames.push(reader.read(id, k, fi)?);
                }
            } else {
                // Read (or fetched) an item at a time: from an object
                // store, one range request per item.
                let all: Vec<usize> = (0..item.frame_info.len()).collect();
                frames.extend(reader.frames_at(id, &all)?);
            }
        }
        let tally = process(&frames, &mut buffers, decode.then_some(&how), &bar);
        total.add(&tally);
    }
    let seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    std::hint::black_box(total.touched);

    let rate = |n: u64| per_second(n, seconds);
    let figures = Figures {
        threads,
        decode,
        codec: match how.options.codec {
            Codec::LibjpegTurbo => "libjpeg-turbo",
            Codec::Zune => "zune-jpeg",
        },
        scale: match how.options.scale {
            Scale::Eighths(n) if n != 8 => format!("{n}/8"),
            _ => "1".into(),
        },
        crop: how.crop.map(|(w, h)| format!("{w}x{h}")),
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
    let what = if decode {
        let crop = figures
            .crop
            .as_ref()
            .map_or(String::new(), |c| format!(", crop {c}"));
        format!(
            "read and decoded ({}, scale {}{crop})",
            figures.codec, figures.scale
        )
    } else {
        "read".into()
    };
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

#[derive(Debug, Serialize)]
struct LoaderFigures {
    threads: usize,
    codec: &'static str,
    frames: usize,
    sampling: String,
    resize: Option<usize>,
    size: String,
    crop: String,
    batch_size: usize,
    epochs: u64,
    batches: u64,
    clips: u64,
    skipped: u64,
    seconds: f64,
    clips_per_s: f64,
    frames_per_s: f64,
    /// Object-store requests (0 for a local directory) and per clip.
    requests: u64,
    requests_per_clip: f64,
    /// Per epoch: its seconds, and the object data received (bytes).
    epoch_seconds: Vec<f64>,
    epoch_bytes: Vec<u64>,
}

/// The clip loader's options of `gulp bench --loader` (no I/O): the
/// command line's values, which default to `LoaderOptions::default()`'s,
/// and the ranks from the launcher, as `gulp.ClipLoader(DIR)` takes them.
fn loader_options(args: &BenchArgs, how: &Decode) -> gulp_loader::LoaderOptions {
    use gulp_loader::{LoaderOptions, Order, Ranks, Shuffle, Spatial};
    let c = &args.clips;
    let mut crop = c.crop;
    if let Some(mode) = c.crop_mode {
        super::deprecated("--crop-mode MODE", "--crop MODE");
        crop = mode;
    }
    let mut flip = c.flip;
    if c.no_flip {
        super::deprecated("--no-flip", "--flip false");
        flip = false;
    }
    let mut shuffle = c.shuffle;
    if let Some(n) = c.shuffle_chunks {
        super::deprecated("--shuffle-chunks N", "--shuffle chunks --chunk-window N");
        shuffle = Shuffle::Chunks { window: n.get() };
    }
    if let (Shuffle::Chunks { window }, Some(n)) = (&mut shuffle, c.chunk_window) {
        *window = n.get();
    }
    let defaults = LoaderOptions::default();
    LoaderOptions {
        frames: c.frames,
        sampling: c.sampling,
        step: c.step,
        spatial: Spatial {
            resize: c.resize,
            size: Some(c.size),
            crop,
            flip,
        },
        batch_size: c.batch_size,
        order: Order {
            seed: c.seed,
            shuffle,
            drop_last: c.drop_last,
            ..defaults.order
        },
        open: super::directory_options(),
        threads: args.threads.map(usize::from),
        decode: how.options,
        ..defaults
    }
    .with_ranks(&Ranks::from_env())
}

fn run_loader(args: &BenchArgs) -> Result<Outcome> {
    let c = &args.clips;
    let how = Decode::from_args(args)?;
    let options = loader_options(args, &how);
    let (sampling, (h, w)) = (options.sampling, c.size);
    let options_crop = options.spatial.crop.name();
    let mut loader = gulp_loader::Loader::open(&args.dir, options)?;
    let threads = loader.threads();
    let bar = super::progress("batches");
    let (mut batches, mut clips, mut skipped) = (0u64, 0u64, 0u64);
    let requests_before = gulp_store::requests();
    let start = Instant::now();
    let (mut epoch_seconds, mut epoch_bytes) = (Vec::new(), Vec::new());
    for epoch in 0..c.epochs {
        let (began, bytes) = (Instant::now(), gulp_store::bytes_received());
        loader.set_epoch(epoch);
        for batch in loader.iter() {
            let batch = batch?;
            std::hint::black_box(&batch.frames);
            batches += 1;
            clips += batch.ids.len() as u64;
            skipped += batch.skipped.len() as u64;
            bar.inc(1);
        }
        epoch_seconds.push(began.elapsed().as_secs_f64());
        epoch_bytes.push(gulp_store::bytes_received() - bytes);
    }
    let seconds = start.elapsed().as_secs_f64();
    let sent = gulp_store::requests() - requests_before;
    bar.finish_and_clear();
    if skipped > 0 {
        eprintln!(
            "gulp: warning: {skipped} clips failed to decode and were left out (run `gulp check --decode`)"
        );
    }
    let rate = |n: u64| per_second(n, seconds);
    let figures = LoaderFigures {
        threads,
        codec: match how.options.codec {
            Codec::LibjpegTurbo => "libjpeg-turbo",
            Codec::Zune => "zune-jpeg",
        },
        frames: c.frames,
        sampling: sampling.name().into(),
        resize: c.resize,
        size: format!("{h},{w}"),
        crop: options_crop.into(),
        batch_size: c.batch_size,
        epochs: c.epochs,
        batches,
        clips,
        skipped,
        seconds,
        clips_per_s: rate(clips),
        frames_per_s: rate(clips * c.frames as u64),
        requests: sent,
        #[allow(clippy::cast_precision_loss)]
        requests_per_clip: if clips > 0 {
            sent as f64 / clips as f64
        } else {
            0.0
        },
        epoch_seconds,
        epoch_bytes,
    };
    let mut out = super::stdout();
    if args.json {
        super::write_json(&mut out, &figures)?;
        return Ok(Outcome::Success);
    }
    writeln!(
        out,
        "{} clips of {} frames ({} sampling, resize {}, {} crop {}) in {} batches of {} in {:.3} s on {threads} threads",
        figures.clips,
        c.frames,
        figures.sampling,
        figures.resize.map_or("none".into(), |r| r.to_string()),
        figures.crop,
        figures.size,
        figures.batches,
        c.batch_size,
        seconds
    )?;
    writeln!(out, "clips/s   {:.1}", figures.clips_per_s)?;
    writeln!(out, "frames/s  {:.1}", figures.frames_per_s)?;
    if sent > 0 {
        writeln!(
            out,
            "requests  {sent} to the object store ({:.2} per clip)",
            figures.requests_per_clip
        )?;
    }
    out.flush()?;
    Ok(Outcome::Success)
}

/// `n` per second over `seconds` (0 for no time), for display.
#[allow(clippy::cast_precision_loss)]
fn per_second(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

/// How `gulp bench` decodes.
struct Decode {
    options: DecodeOptions,
    /// A centred crop of each scaled frame.
    crop: Option<(usize, usize)>,
}

impl Decode {
    fn from_args(args: &BenchArgs) -> Result<Decode> {
        let codec = match args.codec {
            None => Codec::default(),
            Some(Codec::LibjpegTurbo) if !cfg!(feature = "turbojpeg") => {
                bail!("this build of gulp has no libjpeg-turbo (cargo feature `turbojpeg`)")
            }
            Some(codec) => codec,
        };
        if args.scale.is_some() {
            super::deprecated("--scale N/D", "--dct-scale N/D");
        }
        let scale = args.dct_scale.or(args.scale).unwrap_or_default();
        if codec == Codec::Zune && !matches!(scale, Scale::Full | Scale::Eighths(8)) {
            bail!("--dct-scale needs libjpeg-turbo (zune-jpeg decodes at full size)");
        }
        Ok(Decode {
            options: DecodeOptions {
                codec,
                scale,
                dct: args.dct,
                ..DecodeOptions::default()
            },
            crop: args.region,
        })
    }

    /// Decodes one frame into `buf` (grown, never shrunk); the pixels.
    fn frame(&self, jpeg: &[u8], buf: &mut Vec<u8>) -> gulp_io::Result<u64> {
        let mut options = self.options;
        // The header is read once; libjpeg-turbo decodes on the same handle.
        let mut frame = JpegFrame::new(jpeg, options.codec)?;
        let header = *frame.header();
        if let Some((w, h)) = self.crop {
            let (sw, sh) = header.scaled_size(&options);
            let (w, h) = (w.min(sw), h.min(sh));
            options.crop = Some(Crop {
                x: (sw - w) / 2,
                y: (sh - h) / 2,
                width: w,
                height: h,
            });
        }
        let len = header.output_shape(&options).len();
        if buf.len() < len {
            buf.resize(len, 0);
        }
        let shape = frame.decode_into(&options, buf)?;
        Ok((shape.width * shape.height) as u64)
    }
}

/// Reads (and decodes, when `decode` says how) `frames` on one thread per
/// buffer of `buffers`: each thread takes the next few frames until none
/// are left, and decodes into its own buffer.
fn process(
    frames: &[Cow<'_, [u8]>],
    buffers: &mut [Vec<u8>],
    decode: Option<&Decode>,
    bar: &indicatif::ProgressBar,
) -> Tally {
    let next = AtomicUsize::new(0);
    let work = |buf: &mut Vec<u8>| {
        let mut tally = Tally::default();
        loop {
            let first = next.fetch_add(FRAMES_PER_TAKE, Ordering::Relaxed);
            let Some(part) = frames.get(first..(first + FRAMES_PER_TAKE).min(frames.len())) else {
                break;
            };
            for jpeg in part {
                tally.frames += 1;
                tally.bytes += jpeg.len() as u64;
                if let Some(how) = decode {
                    match how.frame(jpeg, buf) {
                        Ok(pixels) => tally.pixels += pixels,
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
            bar.inc(part.len() as u64);
        }
        tally
    };
    if let [buf] = buffers {
        return work(buf);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = buffers
            .iter_mut()
            .map(|buf| scope.spawn(|| work(buf)))
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn bench_args(line: &[&str]) -> BenchArgs {
        match Cli::try_parse_from(line).expect("parses").command {
            Command::Bench(args) => args,
            other => panic!("not bench: {other:?}"),
        }
    }

    #[test]
    fn loader_options_follow_the_command_line() {
        let args = bench_args(&[
            "gulp",
            "bench",
            "d",
            "--loader",
            "--size",
            "112,160",
            "--crop",
            "three",
            "--resize",
            "none",
            "--sampling",
            "uniform",
            "--threads",
            "3",
            "--shuffle",
            "chunks",
            "--chunk-window",
            "6",
        ]);
        let how = Decode::from_args(&args).expect("decode options");
        let o = loader_options(&args, &how);
        // --size is H,W, as the loader's size and Python's size=(H, W).
        assert_eq!(o.spatial.size, Some((112, 160)));
        assert_eq!(o.spatial.resize, None);
        assert_eq!(o.spatial.crop, gulp_loader::CropMode::Three);
        assert_eq!(o.sampling, gulp_loader::Sampling::Uniform);
        assert_eq!(o.threads, Some(3));
        assert_eq!(o.order.shuffle, gulp_loader::Shuffle::Chunks { window: 6 });
        let err = Cli::try_parse_from(["gulp", "bench", "d", "--loader", "--crop", "diagonal"])
            .expect_err("unknown crop");
        // The names come from the loader's one list.
        for name in <gulp_loader::CropMode as gulp_format::Choice>::NAMES {
            assert!(err.to_string().contains(&format!("'{name}'")), "{err}");
        }
    }

    #[test]
    fn no_options_are_the_loaders_defaults() {
        let args = bench_args(&["gulp", "bench", "d", "--loader"]);
        let how = Decode::from_args(&args).expect("decode options");
        let ranks = gulp_loader::Ranks::from_env();
        let expected = gulp_loader::LoaderOptions {
            open: crate::cmd::directory_options(),
            ..gulp_loader::LoaderOptions::default()
        }
        .with_ranks(&ranks);
        assert_eq!(loader_options(&args, &how), expected);
    }

    #[test]
    fn old_spellings_still_work() {
        let args = bench_args(&[
            "gulp",
            "bench",
            "d",
            "--loader",
            "--crop-mode",
            "center",
            "--no-flip",
            "--shuffle-chunks",
            "3",
            "--resize",
            "0",
            "--size",
            "160x112",
        ]);
        let how = Decode::from_args(&args).expect("decode options");
        let o = loader_options(&args, &how);
        assert_eq!(o.spatial.resize, None);
        assert_eq!(
            o.spatial.size,
            Some((112, 160)),
            "WxH read in its own order"
        );
        assert_eq!(o.spatial.crop, gulp_loader::CropMode::Center);
        assert!(!o.spatial.flip);
        assert_eq!(o.order.shuffle, gulp_loader::Shuffle::Chunks { window: 3 });
    }
}
