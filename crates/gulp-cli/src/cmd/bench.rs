//! `gulp bench`: read (and decode) every frame and report the speed.

use std::borrow::Cow;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Result, bail};
use gulp_io::{Codec, Crop, Dct, DecodeOptions, JpegFrame, Scale};
use serde::Serialize;

use crate::Outcome;
use crate::cli::{BenchArgs, CodecArg, DctArg};

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

pub fn run(args: &BenchArgs) -> Result<Outcome> {
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

/// Object data received from stores so far by this process.
fn bytes_received() -> u64 {
    #[cfg(feature = "s3")]
    return gulp_io::remote::bytes_received();
    #[cfg(not(feature = "s3"))]
    0
}

/// Object-store requests sent so far by this process.
fn requests() -> u64 {
    #[cfg(feature = "s3")]
    return gulp_io::remote::requests();
    #[cfg(not(feature = "s3"))]
    0
}

/// `gulp bench --loader`: batches of clips, as a training loop takes them.
/// The clip loader's options of `gulp bench --loader` (no I/O).
fn loader_options(args: &BenchArgs, how: &Decode) -> Result<gulp_loader::LoaderOptions> {
    use gulp_loader::{CropMode, LoaderOptions, Order, Sampling, Spatial};
    let c = &args.clips;
    let sampling = Sampling::parse(&c.sampling).ok_or_else(|| {
        anyhow::anyhow!(
            "--sampling must be window, segments, uniform or dense, not {:?}",
            c.sampling
        )
    })?;
    let crop = CropMode::parse(&c.crop_mode).ok_or_else(|| {
        anyhow::anyhow!(
            "--crop-mode must be random, center, random_resized, three or none, not {:?}",
            c.crop_mode
        )
    })?;
    let (w, h) = c.size;
    Ok(LoaderOptions {
        frames: c.frames,
        sampling,
        step: c.step,
        spatial: Spatial {
            resize: (c.resize > 0).then_some(c.resize),
            size: Some((h, w)),
            crop,
            flip: !c.no_flip,
        },
        batch_size: c.batch_size,
        order: Order {
            seed: c.seed,
            chunk_window: c
                .shuffle_chunks
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            ..Order::default()
        },
        open: super::directory_options(),
        threads: args.threads.map_or(0, usize::from),
        on_error: gulp_loader::OnError::Skip,
        decode: how.options,
        ..LoaderOptions::default()
    })
}

fn run_loader(args: &BenchArgs) -> Result<Outcome> {
    let c = &args.clips;
    let how = Decode::from_args(args)?;
    let options = loader_options(args, &how)?;
    let (sampling, (w, h)) = (options.sampling, c.size);
    let mut loader = gulp_loader::Loader::open(&args.dir, options)?;
    let threads = loader.threads();
    let bar = super::progress("batches");
    let (mut batches, mut clips, mut skipped) = (0u64, 0u64, 0u64);
    let requests_before = requests();
    let start = Instant::now();
    let (mut epoch_seconds, mut epoch_bytes) = (Vec::new(), Vec::new());
    for epoch in 0..c.epochs {
        let (began, bytes) = (Instant::now(), bytes_received());
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
        epoch_bytes.push(bytes_received() - bytes);
    }
    let seconds = start.elapsed().as_secs_f64();
    let sent = requests() - requests_before;
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
        resize: (c.resize > 0).then_some(c.resize),
        size: format!("{w}x{h}"),
        crop: c.crop_mode.clone(),
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
            Some(CodecArg::Turbo) if !cfg!(feature = "turbojpeg") => {
                bail!("this build of gulp has no libjpeg-turbo (cargo feature `turbojpeg`)")
            }
            Some(CodecArg::Turbo) => Codec::LibjpegTurbo,
            Some(CodecArg::Zune) => Codec::Zune,
        };
        let scale = args.scale.unwrap_or_default();
        if codec == Codec::Zune && !matches!(scale, Scale::Full | Scale::Eighths(8)) {
            bail!("--scale needs libjpeg-turbo (zune-jpeg decodes at full size)");
        }
        Ok(Decode {
            options: DecodeOptions {
                codec,
                scale,
                dct: match args.dct {
                    DctArg::Fast => Dct::Fast,
                    DctArg::Accurate => Dct::Accurate,
                },
                ..DecodeOptions::default()
            },
            crop: args.crop,
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
            "160x112",
            "--crop-mode",
            "three",
            "--resize",
            "0",
            "--sampling",
            "uniform",
            "--threads",
            "3",
        ]);
        let how = Decode::from_args(&args).expect("decode options");
        let o = loader_options(&args, &how).expect("options");
        // --size is WxH; the loader's size is (H, W).
        assert_eq!(o.spatial.size, Some((112, 160)));
        assert_eq!(o.spatial.resize, None);
        assert_eq!(o.spatial.crop, gulp_loader::CropMode::Three);
        assert_eq!(o.sampling, gulp_loader::Sampling::Uniform);
        assert_eq!((o.threads, o.on_error), (3, gulp_loader::OnError::Skip));
        let bad = bench_args(&["gulp", "bench", "d", "--loader", "--crop-mode", "diagonal"]);
        let err = loader_options(&bad, &how).expect_err("unknown crop");
        assert!(err.to_string().contains("--crop-mode"), "{err}");
    }
}
