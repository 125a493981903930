//! The bar `gulp bench` is measured against: a bare libjpeg-turbo loop (the
//! same library build gulp links) over every frame of a gulp directory, held
//! in memory. One TurboJPEG handle, fast DCT and fast upsampling (gulpio2's
//! decoding settings), RGB or gray as stored, into one reused buffer: no
//! reading, no allocation, no checks beyond the library's own.
//!
//! ```text
//! cargo run --release -p gulp-io --example bare_turbo -- <dir> [--scale 1/2] [--passes 5] [--json]
//! ```
//!
//! Prints the best pass in frames/s (and with `--json` one JSON object).
#![allow(unsafe_code)] // a loop straight on the C API is the point
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]

use std::ffi::c_int;
use std::process::ExitCode;
use std::time::Instant;

use gulp_io::{GulpDirectory, ReadMode};
use turbojpeg_sys as tj;

type BoxError = Box<dyn std::error::Error>;

struct Args {
    dir: String,
    num: c_int,
    denom: c_int,
    passes: usize,
    json: bool,
}

fn parse() -> Result<Args, BoxError> {
    let mut args = Args {
        dir: String::new(),
        num: 1,
        denom: 1,
        passes: 5,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--scale" => {
                let v = it.next().ok_or("--scale needs N/D")?;
                let (n, d) = v.split_once('/').ok_or("--scale needs N/D")?;
                (args.num, args.denom) = (n.parse()?, d.parse()?);
            }
            "--passes" => args.passes = it.next().ok_or("--passes needs N")?.parse()?,
            "--json" => args.json = true,
            _ if args.dir.is_empty() => args.dir = arg,
            _ => return Err(format!("unexpected argument {arg}").into()),
        }
    }
    if args.dir.is_empty() {
        return Err("usage: bare_turbo <dir> [--scale N/D] [--passes N] [--json]".into());
    }
    Ok(args)
}

/// Every frame of the directory, in chunk and item order.
fn frames(dir: &str) -> Result<Vec<Vec<u8>>, BoxError> {
    let gulp = GulpDirectory::open_with(dir, ReadMode::Mmap)?;
    let mut out = Vec::new();
    for index in 0..gulp.chunks().len() {
        let reader = gulp.reader(index)?;
        for (id, item) in reader.meta().iter() {
            for (k, fi) in item.frame_info.iter().enumerate() {
                out.push(reader.read(id, k, fi)?.into_owned());
            }
        }
    }
    Ok(out)
}

/// Fails with the handle's message unless `status` is 0.
fn check(handle: tj::tjhandle, status: c_int) -> Result<(), BoxError> {
    if status == 0 {
        return Ok(());
    }
    // SAFETY: the handle is valid; the library returns a NUL-terminated
    // string it owns.
    let message = unsafe { std::ffi::CStr::from_ptr(tj::tj3GetErrorStr(handle)) };
    Err(message.to_string_lossy().into_owned().into())
}

/// One pass over `frames`; the pixels decoded.
fn pass(
    handle: tj::tjhandle,
    frames: &[Vec<u8>],
    factor: tj::tjscalingfactor,
    buf: &mut Vec<u8>,
) -> Result<u64, BoxError> {
    let mut pixels = 0u64;
    for jpeg in frames {
        // SAFETY (all calls below): the handle is a valid decompressor, the
        // JPEG slice is readable for its length, and `buf` is grown to
        // `pitch * height` bytes before decompressing into it.
        unsafe {
            check(
                handle,
                tj::tj3DecompressHeader(handle, jpeg.as_ptr(), jpeg.len() as _),
            )?;
            let width = tj::tj3Get(handle, tj::TJPARAM_TJPARAM_JPEGWIDTH as c_int);
            let height = tj::tj3Get(handle, tj::TJPARAM_TJPARAM_JPEGHEIGHT as c_int);
            let gray = tj::tj3Get(handle, tj::TJPARAM_TJPARAM_COLORSPACE as c_int)
                == tj::TJCS_TJCS_GRAY as c_int;
            check(handle, tj::tj3SetScalingFactor(handle, factor))?;
            let (w, h) = (
                (width * factor.num + factor.denom - 1) / factor.denom,
                (height * factor.num + factor.denom - 1) / factor.denom,
            );
            let (format, channels) = if gray {
                (tj::TJPF_TJPF_GRAY, 1)
            } else {
                (tj::TJPF_TJPF_RGB, 3)
            };
            let len = (w * h * channels) as usize;
            if buf.len() < len {
                buf.resize(len, 0);
            }
            check(
                handle,
                tj::tj3Decompress8(
                    handle,
                    jpeg.as_ptr(),
                    jpeg.len() as _,
                    buf.as_mut_ptr(),
                    w * channels,
                    format as c_int,
                ),
            )?;
            pixels += (w * h) as u64;
        }
    }
    Ok(pixels)
}

fn run() -> Result<(), BoxError> {
    let args = parse()?;
    let frames = frames(&args.dir)?;
    let bytes: usize = frames.iter().map(Vec::len).sum();
    // SAFETY: tj3Init takes a plain integer; the handle is checked for null
    // and destroyed at the end.
    let handle = unsafe { tj::tj3Init(tj::TJINIT_TJINIT_DECOMPRESS as c_int) };
    if handle.is_null() {
        return Err("tj3Init failed".into());
    }
    // SAFETY: a valid handle and known parameters.
    unsafe {
        check(
            handle,
            tj::tj3Set(handle, tj::TJPARAM_TJPARAM_FASTDCT as c_int, 1),
        )?;
        check(
            handle,
            tj::tj3Set(handle, tj::TJPARAM_TJPARAM_FASTUPSAMPLE as c_int, 1),
        )?;
    }
    let factor = tj::tjscalingfactor {
        num: args.num,
        denom: args.denom,
    };
    let mut buf = Vec::new();
    let mut best = f64::INFINITY;
    let mut pixels = 0;
    pass(handle, &frames, factor, &mut buf)?; // warm-up
    for _ in 0..args.passes {
        let start = Instant::now();
        pixels = pass(handle, &frames, factor, &mut buf)?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    // SAFETY: the handle is valid and not used after this.
    unsafe { tj::tj3Destroy(handle) };
    let n = frames.len() as f64;
    let rate = n / best;
    if args.json {
        println!(
            "{{\"frames\": {}, \"bytes\": {bytes}, \"scale\": \"{}/{}\", \"passes\": {}, \
             \"best_s\": {best}, \"frames_per_s\": {rate}, \"megapixels_per_s\": {}}}",
            frames.len(),
            args.num,
            args.denom,
            args.passes,
            pixels as f64 / best / 1e6
        );
    } else {
        println!(
            "{} frames, scale {}/{}: {rate:.1} frames/s, {:.1} MP/s (best of {} passes)",
            frames.len(),
            args.num,
            args.denom,
            pixels as f64 / best / 1e6,
            args.passes
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bare_turbo: {e}");
            ExitCode::FAILURE
        }
    }
}
