//! The bar `gulp bench` is measured against: a bare libjpeg-turbo loop (the
//! same library build gulp links) over every frame of a gulp directory, held
//! in memory. One TurboJPEG handle per thread, fast DCT and fast upsampling
//! (gulpio2's decoding settings), RGB or gray as stored, into one reused
//! buffer per thread: no reading, no allocation, no checks beyond the
//! library's own.
//!
//! ```text
//! cargo run --release -p gulp-io --example bare_turbo -- <dir> [--scale 1/2 | --short-edge 128]
//!     [--threads 2] [--passes 5] [--per-item 8] [--resample 128:112] [--resample-crop] [--json]
//! ```
//!
//! `--scale N/D` decodes every frame at that DCT scaling factor. The other
//! modes pick a factor per frame as the clip loader does, the least n/8 of
//! 1/8, 2/8, 3/8, 4/8 and 8/8 that keeps what it needs (libjpeg-turbo's
//! 5/8-7/8 inverse DCTs are plain C, slower than its SIMD 8/8):
//! `--random-resized-crop C` decodes a crop drawn as torchvision's
//! `RandomResizedCrop` draws it (area 8-100 %, aspect ratio 3/4-4/3, 10 tries
//! then the centre; seeded by the frame's index, so the same crops on every
//! pass and thread count), and `--center-crop S:C` the centred square of side
//! C/S of the short edge (resize to S, centre crop C), each at least C pixels
//! on both sides, only the crop's rows and iMCU columns (TurboJPEG's cropping
//! region; no resample): the decoding a loader with those transforms does, at
//! most; `--short-edge S` decodes whole frames with a short edge of at least
//! S (full size when no factor gives it): the decoding a loader that resizes
//! to a
//! short edge of S does. `--threads N` decodes with N threads taking frames
//! from a shared counter (default 1). `--per-item N` decodes N frames of each
//! item (the centres of N equal segments, as a TSN clip in evaluation takes
//! them) instead of every frame: the frames a clip loader decodes, weighted
//! as it weights them (by item, not by frame). `--resample S:C` adds, after
//! each decode, the resampling a loader with `resize=S, size=C` does: the
//! centred square crop of side C·(short edge)/S of the decoded frame to C×C,
//! with the loader's filter (fast_image_resize's bilinear convolution, one
//! reused resizer). `--resample-crop`, with `--random-resized-crop` or
//! `--center-crop`, adds the resample an image loader does after the region
//! decode: the crop (inside the decoded region) to C×C with the same filter.
//! Prints the best pass in frames/s (and with `--json` one JSON object).
#![allow(unsafe_code)] // a loop straight on the C API is the point
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]

use std::ffi::c_int;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use fast_image_resize::images::{Image as FirImage, ImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use gulp_io::{GulpDirectory, ReadMode};
use turbojpeg_sys as tj;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How each frame's scaling factor is chosen.
#[derive(Clone, Copy)]
enum Scaling {
    /// The same factor for every frame.
    Fixed(tj::tjscalingfactor),
    /// The smallest n/8 whose scaled short edge is at least this many pixels.
    ShortEdge(c_int),
    /// A `RandomResizedCrop` to this size, decoded as a region.
    RandomResizedCrop(c_int),
    /// Resize the short edge to `.0`, centre crop `.1`, decoded as a region.
    CenterCrop(c_int, c_int),
}

struct Args {
    dir: String,
    scaling: Scaling,
    threads: usize,
    passes: usize,
    per_item: Option<usize>,
    resample: Option<(usize, usize)>,
    resample_crop: bool,
    json: bool,
}

fn parse() -> Result<Args, BoxError> {
    let mut args = Args {
        dir: String::new(),
        scaling: Scaling::Fixed(tj::tjscalingfactor { num: 1, denom: 1 }),
        threads: 1,
        passes: 5,
        per_item: None,
        resample: None,
        resample_crop: false,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--scale" => {
                let v = it.next().ok_or("--scale needs N/D")?;
                let (n, d) = v.split_once('/').ok_or("--scale needs N/D")?;
                args.scaling = Scaling::Fixed(tj::tjscalingfactor {
                    num: n.parse()?,
                    denom: d.parse()?,
                });
            }
            "--short-edge" => {
                let s: c_int = it.next().ok_or("--short-edge needs N")?.parse()?;
                if s < 1 {
                    return Err("--short-edge needs N >= 1".into());
                }
                args.scaling = Scaling::ShortEdge(s);
            }
            "--random-resized-crop" => {
                let c: c_int = it.next().ok_or("--random-resized-crop needs C")?.parse()?;
                if c < 1 {
                    return Err("--random-resized-crop needs C >= 1".into());
                }
                args.scaling = Scaling::RandomResizedCrop(c);
            }
            "--center-crop" => {
                let v = it.next().ok_or("--center-crop needs S:C")?;
                let (s, c) = v.split_once(':').ok_or("--center-crop needs S:C")?;
                let (s, c): (c_int, c_int) = (s.parse()?, c.parse()?);
                if c < 1 || c > s {
                    return Err("--center-crop S:C needs 1 <= C <= S".into());
                }
                args.scaling = Scaling::CenterCrop(s, c);
            }
            "--threads" => {
                args.threads = it.next().ok_or("--threads needs N")?.parse()?;
                if args.threads == 0 {
                    return Err("--threads needs N >= 1".into());
                }
            }
            "--passes" => args.passes = it.next().ok_or("--passes needs N")?.parse()?,
            "--per-item" => {
                let n: usize = it.next().ok_or("--per-item needs N")?.parse()?;
                if n == 0 {
                    return Err("--per-item needs N >= 1".into());
                }
                args.per_item = Some(n);
            }
            "--resample" => {
                let v = it.next().ok_or("--resample needs S:C")?;
                let (s, c) = v.split_once(':').ok_or("--resample needs S:C")?;
                let (s, c): (usize, usize) = (s.parse()?, c.parse()?);
                if c == 0 || c > s {
                    return Err("--resample S:C needs 1 <= C <= S".into());
                }
                args.resample = Some((s, c));
            }
            "--resample-crop" => args.resample_crop = true,
            "--json" => args.json = true,
            _ if args.dir.is_empty() => args.dir = arg,
            _ => return Err(format!("unexpected argument {arg}").into()),
        }
    }
    if args.dir.is_empty() {
        return Err(
            "usage: bare_turbo <dir> [--scale N/D | --short-edge S | --random-resized-crop C \
                    | --center-crop S:C] [--threads N] \
                    [--passes N] [--per-item N] [--resample S:C] [--resample-crop] [--json]"
                .into(),
        );
    }
    Ok(args)
}

/// The frames of the directory, in chunk and item order: every frame, or
/// `per_item` of each item (segment centres; all of a shorter item).
fn frames(dir: &str, per_item: Option<usize>) -> Result<Vec<Vec<u8>>, BoxError> {
    let gulp = GulpDirectory::open_with(dir, ReadMode::Mmap)?;
    let mut out = Vec::new();
    for index in 0..gulp.chunks().len() {
        let reader = gulp.reader(index)?;
        for (id, item) in reader.meta().iter() {
            let n = item.frame_info.len();
            let picked: Vec<usize> = match per_item {
                Some(k) if k < n => (0..k).map(|i| (2 * i + 1) * n / (2 * k)).collect(),
                _ => (0..n).collect(),
            };
            for k in picked {
                out.push(reader.read(id, k, &item.frame_info[k])?.into_owned());
            }
        }
    }
    Ok(out)
}

/// Resamples the centred crop that `resize = S, size = C` takes of a
/// `w` x `h` RGB frame to C x C.
fn resample(
    resizer: &mut Resizer,
    rgb: &[u8],
    (w, h): (usize, usize),
    (s, c): (usize, usize),
    out: &mut Vec<u8>,
) -> Result<(), BoxError> {
    let side = (c as f64 * w.min(h) as f64 / s as f64).min(w.min(h) as f64);
    let (cx, cy) = ((w as f64 - side) / 2.0, (h as f64 - side) / 2.0);
    resample_box(resizer, rgb, (w, h), (cx, cy, side, side), c, out)
}

/// Resamples the box `(x, y, w, h)` of the `rw` x `rh` RGB region to
/// `c` x `c` with the loader's filter (an image loader's last step).
fn resample_box(
    resizer: &mut Resizer,
    rgb: &[u8],
    (rw, rh): (usize, usize),
    (x, y, w, h): (f64, f64, f64, f64),
    c: usize,
    out: &mut Vec<u8>,
) -> Result<(), BoxError> {
    out.resize(c * c * 3, 0);
    let src = ImageRef::new(rw as u32, rh as u32, &rgb[..rw * rh * 3], PixelType::U8x3)?;
    let mut dst = FirImage::from_slice_u8(c as u32, c as u32, out, PixelType::U8x3)?;
    let options = ResizeOptions::new()
        .resize_alg(ResizeAlg::Convolution(FilterType::Bilinear))
        .crop(x, y, w.min(rw as f64 - x), h.min(rh as f64 - y));
    resizer.resize(&src, &mut dst, &options)?;
    Ok(())
}

/// `dim` scaled by `f`, rounded up (libjpeg-turbo's `TJSCALED`).
fn scaled(dim: c_int, f: tj::tjscalingfactor) -> c_int {
    (dim * f.num + f.denom - 1) / f.denom
}

/// The DCT scales (in eighths) the clip loader decodes at: libjpeg-turbo's
/// fast inverse DCTs (its 5/8, 6/8 and 7/8 ones are plain C, slower than
/// 8/8; see gulp-loader's transform.rs). The loops here choose as it does.
const FAST_EIGHTHS: [c_int; 5] = [1, 2, 3, 4, 8];

/// n/8 reduced, as libjpeg-turbo lists its factors.
fn eighths(n: c_int) -> tj::tjscalingfactor {
    let g = gcd(n, 8);
    tj::tjscalingfactor {
        num: n / g,
        denom: 8 / g,
    }
}

/// The smallest of [`FAST_EIGHTHS`] that keeps the short edge of `width` x
/// `height` at least `short`; 1/1 when none does.
fn short_edge_factor(width: c_int, height: c_int, short: c_int) -> tj::tjscalingfactor {
    FAST_EIGHTHS
        .into_iter()
        .map(eighths)
        .find(|&f| scaled(width, f).min(scaled(height, f)) >= short)
        .unwrap_or(tj::tjscalingfactor { num: 1, denom: 1 })
}

fn gcd(a: c_int, b: c_int) -> c_int {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Uniform in [lo, hi): the crops' random numbers, seeded per frame.
fn uniform(state: &mut u64, lo: f64, hi: f64) -> f64 {
    let x = gulp_test_support::splitmix64(state);
    lo + (hi - lo) * ((x >> 11) as f64 / (1u64 << 53) as f64)
}

/// A crop (x, y, width, height) of a `w` x `h` image as torchvision's
/// `RandomResizedCrop(scale=(0.08, 1), ratio=(3/4, 4/3))` draws it.
fn random_resized_crop(w: c_int, h: c_int, state: &mut u64) -> (c_int, c_int, c_int, c_int) {
    let area = f64::from(w) * f64::from(h);
    let (r0, r1) = (3.0f64 / 4.0, 4.0f64 / 3.0);
    for _ in 0..10 {
        let target = area * uniform(state, 0.08, 1.0);
        let ratio = uniform(state, r0.ln(), r1.ln()).exp();
        let cw = (target * ratio).sqrt().round() as c_int;
        let ch = (target / ratio).sqrt().round() as c_int;
        if 0 < cw && cw <= w && 0 < ch && ch <= h {
            let x = (uniform(state, 0.0, f64::from(w - cw + 1)) as c_int).min(w - cw);
            let y = (uniform(state, 0.0, f64::from(h - ch + 1)) as c_int).min(h - ch);
            return (x, y, cw, ch);
        }
    }
    let in_ratio = f64::from(w) / f64::from(h);
    let (cw, ch) = if in_ratio < r0 {
        (w, (f64::from(w) / r0).round() as c_int)
    } else if in_ratio > r1 {
        ((f64::from(h) * r1).round() as c_int, h)
    } else {
        (w, h)
    };
    ((w - cw) / 2, (h - ch) / 2, cw, ch)
}

/// The iMCU width of a TurboJPEG subsampling, in stored pixels.
fn mcu_width(subsamp: c_int) -> c_int {
    match subsamp {
        1 | 2 => 16, // 4:2:2, 4:2:0
        5 => 32,     // 4:1:1
        _ => 8,      // 4:4:4, gray, 4:4:0, 4:4:1
    }
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

/// A TurboJPEG decompressor with gulpio2's settings, destroyed on drop.
struct Decoder(tj::tjhandle);

impl Decoder {
    fn new() -> Result<Self, BoxError> {
        // SAFETY: tj3Init takes a plain integer; the handle is checked for
        // null and destroyed on drop.
        let handle = unsafe { tj::tj3Init(tj::TJINIT_TJINIT_DECOMPRESS as c_int) };
        if handle.is_null() {
            return Err("tj3Init failed".into());
        }
        let decoder = Self(handle);
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
        Ok(decoder)
    }

    /// Decodes one frame into `buf` (grown when needed); its width, height
    /// and channels.
    fn decode(
        &self,
        jpeg: &[u8],
        index: usize,
        scaling: Scaling,
        buf: &mut Vec<u8>,
    ) -> Result<Decoded, BoxError> {
        let handle = self.0;
        // SAFETY: for every call below, the handle is a valid decompressor, the
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
            let crop = match scaling {
                Scaling::RandomResizedCrop(out) => {
                    let mut state = index as u64;
                    Some((random_resized_crop(width, height, &mut state), out))
                }
                Scaling::CenterCrop(size, out) => {
                    let side =
                        (i64::from(out) * i64::from(width.min(height)) / i64::from(size)) as c_int;
                    Some((((width - side) / 2, (height - side) / 2, side, side), out))
                }
                _ => None,
            };
            let factor = match (scaling, crop) {
                (Scaling::Fixed(f), _) => f,
                (Scaling::ShortEdge(s), _) => short_edge_factor(width, height, s),
                (_, Some(((_, _, cw, ch), out))) => eighths(
                    FAST_EIGHTHS
                        .into_iter()
                        .find(|n| cw * n >= out * 8 && ch * n >= out * 8)
                        .unwrap_or(8),
                ),
                _ => tj::tjscalingfactor { num: 1, denom: 1 },
            };
            check(handle, tj::tj3SetScalingFactor(handle, factor))?;
            let (mut w, mut h) = (scaled(width, factor), scaled(height, factor));
            let region = match crop {
                Some(((x, y, cw, ch), _)) => {
                    // The crop on the scaled image, its left edge moved to
                    // the iMCU column at or left of it.
                    let (sx0, sy0) = (x * factor.num / factor.denom, y * factor.num / factor.denom);
                    let sx1 = scaled(x + cw, factor).min(w);
                    let sy1 = scaled(y + ch, factor).min(h);
                    let m = scaled(
                        mcu_width(tj::tj3Get(handle, tj::TJPARAM_TJPARAM_SUBSAMP as c_int)),
                        factor,
                    );
                    let ax0 = sx0 - sx0 % m;
                    tj::tjregion {
                        x: ax0,
                        y: sy0,
                        w: sx1 - ax0,
                        h: sy1 - sy0,
                    }
                }
                None => tj::tjregion {
                    x: 0,
                    y: 0,
                    w: 0,
                    h: 0,
                },
            };
            check(handle, tj::tj3SetCroppingRegion(handle, region))?;
            // The crop inside the decoded region, in scaled pixels.
            let inner = crop.map(|((x, y, cw, ch), out)| {
                let f = f64::from(factor.num) / f64::from(factor.denom);
                let bx = (f64::from(x) * f - f64::from(region.x)).max(0.0);
                let by = (f64::from(y) * f - f64::from(region.y)).max(0.0);
                ((bx, by, f64::from(cw) * f, f64::from(ch) * f), out as usize)
            });
            if crop.is_some() {
                (w, h) = (region.w, region.h);
            }
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
            Ok(Decoded {
                width: w as usize,
                height: h as usize,
                channels: channels as usize,
                inner,
            })
        }
    }
}

impl Drop for Decoder {
    fn drop(&mut self) {
        // SAFETY: the handle is valid and not used after this.
        unsafe { tj::tj3Destroy(self.0) };
    }
}

/// What one decode gave: the decoded size and, for a crop, the crop's box
/// inside it and the output side.
struct Decoded {
    width: usize,
    height: usize,
    channels: usize,
    inner: Option<((f64, f64, f64, f64), usize)>,
}

/// Per thread: its decoder, resizer and buffers, kept across passes.
struct Worker {
    resample_crop: bool,
    decoder: Decoder,
    buf: Vec<u8>,
    resizer: Resizer,
    out: Vec<u8>,
}

impl Worker {
    /// Decodes (and resamples) one frame; the pixels decoded.
    fn frame(
        &mut self,
        jpeg: &[u8],
        index: usize,
        scaling: Scaling,
        resample_to: Option<(usize, usize)>,
    ) -> Result<u64, BoxError> {
        let d = self.decoder.decode(jpeg, index, scaling, &mut self.buf)?;
        let (w, h) = (d.width, d.height);
        if let (Some(sc), 3) = (resample_to, d.channels) {
            resample(&mut self.resizer, &self.buf, (w, h), sc, &mut self.out)?;
        }
        if let (true, Some((bx, c)), 3) = (self.resample_crop, d.inner, d.channels) {
            resample_box(&mut self.resizer, &self.buf, (w, h), bx, c, &mut self.out)?;
        }
        Ok((w * h) as u64)
    }
}

// SAFETY: a TurboJPEG handle has no thread affinity; each is used by one
// thread at a time (moved into a scoped thread for a pass, then back).
#[allow(clippy::non_send_fields_in_send_ty)]
unsafe impl Send for Worker {}

/// One pass over `frames` with one thread per worker, each taking the next
/// frame from a shared counter; the pixels decoded.
fn pass(
    workers: &mut [Worker],
    frames: &[Vec<u8>],
    scaling: Scaling,
    resample_to: Option<(usize, usize)>,
) -> Result<u64, BoxError> {
    if let [one] = workers {
        let mut pixels = 0;
        for (i, jpeg) in frames.iter().enumerate() {
            pixels += one.frame(jpeg, i, scaling, resample_to)?;
        }
        return Ok(pixels);
    }
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .iter_mut()
            .map(|w| {
                let next = &next;
                s.spawn(move || -> Result<u64, BoxError> {
                    let mut pixels = 0;
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(jpeg) = frames.get(i) else {
                            return Ok(pixels);
                        };
                        pixels += w.frame(jpeg, i, scaling, resample_to)?;
                    }
                })
            })
            .collect();
        let mut pixels = 0;
        for h in handles {
            pixels += h.join().map_err(|_| "a decoding thread panicked")??;
        }
        Ok(pixels)
    })
}

fn run() -> Result<(), BoxError> {
    let args = parse()?;
    let frames = frames(&args.dir, args.per_item)?;
    let bytes: usize = frames.iter().map(Vec::len).sum();
    let mut workers = (0..args.threads)
        .map(|_| {
            Ok(Worker {
                resample_crop: args.resample_crop,
                decoder: Decoder::new()?,
                buf: Vec::new(),
                resizer: Resizer::new(),
                out: Vec::new(),
            })
        })
        .collect::<Result<Vec<_>, BoxError>>()?;
    let mut best = f64::INFINITY;
    let mut pixels = 0;
    pass(&mut workers, &frames, args.scaling, args.resample)?; // warm-up
    for _ in 0..args.passes {
        let start = Instant::now();
        pixels = pass(&mut workers, &frames, args.scaling, args.resample)?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    let n = frames.len() as f64;
    let rate = n / best;
    let scale = match args.scaling {
        Scaling::Fixed(f) => format!("{}/{}", f.num, f.denom),
        Scaling::ShortEdge(s) => format!("short-edge>={s}"),
        Scaling::RandomResizedCrop(c) => format!("random-resized-crop {c}"),
        Scaling::CenterCrop(s, c) => format!("center-crop {s}:{c}"),
    };
    let per_item = args.per_item.map_or("null".to_owned(), |n| n.to_string());
    let resample_to = match (args.resample, args.resample_crop) {
        (Some((s, c)), _) => format!("\"{s}:{c}\""),
        (None, true) => "\"crop\"".to_owned(),
        (None, false) => "null".to_owned(),
    };
    if args.json {
        println!(
            "{{\"frames\": {}, \"bytes\": {bytes}, \"scale\": \"{scale}\", \"threads\": {}, \
             \"passes\": {}, \"per_item\": {per_item}, \"resample\": {resample_to}, \
             \"best_s\": {best}, \"frames_per_s\": {rate}, \"megapixels_per_s\": {}}}",
            frames.len(),
            args.threads,
            args.passes,
            pixels as f64 / best / 1e6
        );
    } else {
        println!(
            "{} frames, scale {scale}, per item {per_item}, resample {resample_to}, {} thread(s): \
             {rate:.1} frames/s, {:.1} MP/s (best of {} passes)",
            frames.len(),
            args.threads,
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
