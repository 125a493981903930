//! Writes a synthetic gulp directory for benchmarks: items shaped like
//! Something-Something's, every frame the same real JPEG.
//!
//! ```text
//! cargo run --release -p gulp-io --example make_bench_dir -- <out_dir> \
//!     [--items 200000] [--chunks 200] [--frames-per-item 4] \
//!     [--meta-format json|msgpack] [--jpeg path | --varied WxH]
//! ```
//!
//! Without `--jpeg` the frames are the 176x100 photo-like JPEG the `read`
//! bench uses (`benches/data/photo-176x100.jpg`, 7 kB); with `--varied WxH`
//! every frame is a different generated picture of that size (random low
//! DCT frequencies over a random colour: `bench_dir::varied_pixels`, JPEG
//! quality 90; needs the `turbojpeg` feature, the default), for
//! `gulp lint`'s near-duplicate search at scale. `<out_dir>` must not exist;
//! it is written under `<out_dir>.partial` and renamed when complete.

use std::borrow::Cow;
use std::path::PathBuf;
use std::process::ExitCode;

use gulp_io::gulp_format::MetaFormat;
use gulp_test_support::bench_dir::{self, BoxError, Spec};

const USAGE: &str = "usage: make_bench_dir <out_dir> [--items N] [--chunks N] \
[--frames-per-item N] [--meta-format json|msgpack] [--jpeg path | --varied WxH]";

/// The output directory, the spec, the one frame, and the size of varied
/// frames instead.
type Parsed = (PathBuf, Spec, Vec<u8>, Option<(usize, usize)>);

fn parse() -> Result<Parsed, BoxError> {
    let mut out = None;
    let mut spec = Spec {
        items: 200_000,
        chunks: 200,
        frames_per_item: 4,
        format: MetaFormat::Json,
    };
    let mut jpeg = bench_dir::PHOTO_JPEG.to_vec();
    let mut varied = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--items" => spec.items = value()?.parse()?,
            "--chunks" => spec.chunks = value()?.parse()?,
            "--frames-per-item" => spec.frames_per_item = value()?.parse()?,
            "--meta-format" => spec.format = value()?.parse()?,
            "--jpeg" => {
                let path = value()?;
                jpeg = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
            }
            "--varied" => {
                let size = value()?;
                let (w, h) = size
                    .split_once('x')
                    .ok_or_else(|| format!("--varied {size}: not WxH"))?;
                varied = Some((w.parse()?, h.parse()?));
            }
            "-h" | "--help" => return Err(USAGE.into()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}\n{USAGE}").into()),
            s if out.is_none() => out = Some(PathBuf::from(s)),
            s => return Err(format!("unexpected argument {s}\n{USAGE}").into()),
        }
    }
    let out = out.ok_or(USAGE)?;
    if out.exists() {
        return Err(format!("{} exists already", out.display()).into());
    }
    Ok((out, spec, jpeg, varied))
}

fn run() -> Result<(), BoxError> {
    let (out, spec, jpeg, varied) = parse()?;
    let written = match varied {
        Some(size) => bench_dir::ensure_dir_with(&out, &spec, &mut |i, k| {
            Ok(Cow::Owned(encode(
                &bench_dir::varied_pixels(i, k, size),
                size,
            )?))
        })?,
        None => bench_dir::ensure_dir(&out, &spec, &jpeg)?,
    }
    .ok_or("directory appeared meanwhile")?;
    let frames = match varied {
        Some((w, h)) => format!("varied {w}x{h} frames"),
        None => format!("frames of {} bytes", jpeg.len()),
    };
    println!(
        "{}: {} items, {} chunks, {} {frames}, {} meta: data {:.1} MB, meta {:.1} MB, written in {:.1} s",
        out.display(),
        written.items,
        spec.chunks,
        written.frames,
        spec.format,
        written.data_bytes as f64 / 1e6,
        written.meta_bytes as f64 / 1e6,
        written.seconds
    );
    Ok(())
}

#[cfg(feature = "turbojpeg")]
fn encode(pixels: &[u8], size: (usize, usize)) -> Result<Vec<u8>, BoxError> {
    Ok(gulp_codec::encode_jpeg(
        pixels,
        size,
        3,
        90,
        gulp_codec::Subsampling::S444,
    )?)
}

#[cfg(not(feature = "turbojpeg"))]
fn encode(_: &[u8], _: (usize, usize)) -> Result<Vec<u8>, BoxError> {
    Err("--varied encodes with libjpeg-turbo: build with the turbojpeg feature".into())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("make_bench_dir: {e}");
            ExitCode::FAILURE
        }
    }
}
