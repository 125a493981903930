//! JPEG decoding for training: one frame or a batch, into a new image or a
//! caller's buffer, with DCT-domain scaling and region decoding.
//!
//! The codec is libjpeg-turbo (cargo feature `turbojpeg`, on by default),
//! with zune-jpeg as the pure-Rust alternative ([`Codec`]).
//!
//! This crate's root is the decoding API; each codec is a module (`zune`,
//! `turbo`), `encode` encodes with libjpeg-turbo, and `ffi` is the
//! TurboJPEG binding, the codec's only `unsafe` code. Reading frames from a
//! gulp directory is `gulp_io`'s; it adds to a decoding error where the
//! frame is.
// On docs.rs, items behind a cargo feature say which (`--cfg docsrs`).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_code)]

mod error;
mod zune;

#[cfg(feature = "turbojpeg")]
mod encode;
#[cfg(feature = "turbojpeg")]
mod ffi;
#[cfg(feature = "turbojpeg")]
mod turbo;

use std::cell::RefCell;

use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder as ZuneJpeg;

pub use crate::error::{Error, Result};

#[cfg(feature = "turbojpeg")]
pub use self::encode::{Subsampling, encode_jpeg, encode_yuv_planes};

/// The largest image the decoders accept, in pixels (8192 × 8192; 192 MiB
/// as RGB).
///
/// A JPEG header declares the image size in two 16-bit numbers, and a
/// decoder allocates for that size before it reads the scan data: without a
/// limit, a frame of a few hundred bytes claiming 16000 × 16000 pixels makes
/// the decoder allocate 768 MB (and spend seconds filling it). Larger frames
/// are refused with a [`Decode`](Error::Decode) error; video
/// frames for training are far smaller.
pub const MAX_DECODE_PIXELS: usize = 1 << 26;

/// The shape of a decoded frame: `height` rows of `width` pixels of
/// `channels` bytes, row-major, channels interleaved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Height in pixels.
    pub height: usize,
    /// Width in pixels.
    pub width: usize,
    /// 1 (gray) or 3 (RGB).
    pub channels: usize,
}

impl Shape {
    /// `height * width * channels`: the bytes a buffer must hold.
    pub fn len(&self) -> usize {
        self.height * self.width * self.channels
    }

    /// Whether the shape holds no pixel.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Decoded pixels, row-major, interleaved channels (`H×W` or `H×W×3`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// Height in pixels.
    pub height: usize,
    /// Width in pixels.
    pub width: usize,
    /// 1 (gray) or 3 (RGB).
    pub channels: usize,
    /// `height * width * channels` bytes.
    pub pixels: Vec<u8>,
}

impl Image {
    /// The shape as gulpio2 returns it: `[h, w]` for gray, `[h, w, 3]` for colour.
    pub fn shape(&self) -> Vec<usize> {
        if self.channels == 1 {
            vec![self.height, self.width]
        } else {
            vec![self.height, self.width, self.channels]
        }
    }
}

/// Which colour type to decode to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorMode {
    /// As stored: gray JPEGs to `H×W`, everything else to RGB `H×W×3`
    /// (gulpio2's behaviour).
    #[default]
    Auto,
    /// Always RGB.
    Rgb,
    /// Always gray.
    Gray,
}

/// The inverse DCT's algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dct {
    /// libjpeg's fast integer DCT, as gulpio2 decodes (simplejpeg's
    /// `fastdct=True`).
    #[default]
    Fast,
    /// The accurate integer DCT: about 10 % slower, a little closer to
    /// the encoded image.
    Accurate,
}

/// How chroma subsampled at encoding (4:2:0, ...) is brought back to full
/// resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Upsampling {
    /// Sample replication, as gulpio2 decodes (simplejpeg's
    /// `fastupsample=True`).
    #[default]
    Fast,
    /// libjpeg's "fancy" (triangle filter) upsampling.
    Smooth,
}

gulp_format::choice!(ColorMode, "color", {
    ColorMode::Auto => "auto",
    ColorMode::Rgb => "rgb" | "RGB",
    ColorMode::Gray => "gray" | "grey" | "Gray" | "L",
});

gulp_format::choice!(Dct, "dct", { Dct::Fast => "fast", Dct::Accurate => "accurate" });

gulp_format::choice!(Upsampling, "upsampling", {
    Upsampling::Fast => "fast",
    Upsampling::Smooth => "smooth",
});

/// The size to decode to, by DCT-domain scaling: libjpeg-turbo decodes
/// straight to `n/8` of the stored size (`n` from 1 to 8), which skips most
/// of the work of the pixels it does not produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    /// The stored size.
    #[default]
    Full,
    /// `n/8` of the stored size, `n` from 1 to 8 (sides rounded up).
    Eighths(u8),
    /// The smallest `n/8` whose short edge is at least this many pixels
    /// (the stored size if it is smaller).
    ShortEdge(usize),
    /// The smallest `n/8` whose width and height are at least these (the
    /// stored size if it is smaller).
    AtLeast {
        /// Least width.
        width: usize,
        /// Least height.
        height: usize,
    },
}

impl Scale {
    /// Parses `1/2`, `3/8`, `1` (also `1/1`, `2/4`): a fraction equal to
    /// some `n/8` with `n` from 1 to 8.
    pub fn parse(text: &str) -> Option<Scale> {
        let (num, den) = match text.split_once('/') {
            Some((n, d)) => (n.trim().parse::<u32>().ok()?, d.trim().parse::<u32>().ok()?),
            None => (text.trim().parse::<u32>().ok()?, 1),
        };
        if den == 0 || num == 0 || (num * 8) % den != 0 {
            return None;
        }
        let eighths = u8::try_from(num * 8 / den).ok().filter(|n| *n <= 8)?;
        Some(Scale::Eighths(eighths))
    }

    /// The `n` of `n/8` that gives at least the requested size of a
    /// `width`×`height` image.
    pub fn eighths(&self, width: usize, height: usize) -> u8 {
        let fits = |n: u8, w: usize, h: usize| {
            let (sw, sh) = scaled(width, height, n);
            sw >= w && sh >= h
        };
        match *self {
            Scale::Full => 8,
            Scale::Eighths(n) => n.clamp(1, 8),
            Scale::ShortEdge(edge) => (1..=8)
                .find(|&n| {
                    let (sw, sh) = scaled(width, height, n);
                    sw.min(sh) >= edge
                })
                .unwrap_or(8),
            Scale::AtLeast {
                width: w,
                height: h,
            } => (1..=8).find(|&n| fits(n, w, h)).unwrap_or(8),
        }
    }
}

/// A `width`×`height` image scaled by `n/8`, sides rounded up as
/// libjpeg-turbo does (`TJSCALED`).
pub fn scaled(width: usize, height: usize, eighths: u8) -> (usize, usize) {
    let n = usize::from(eighths);
    ((width * n).div_ceil(8), (height * n).div_ceil(8))
}

/// A rectangle of the (scaled) image: only its rows are decoded, only the
/// iMCU columns it touches are decoded, and the output is exactly it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crop {
    /// Left column.
    pub x: usize,
    /// Top row.
    pub y: usize,
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
}

/// The JPEG codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// libjpeg-turbo 3 (cargo feature `turbojpeg`, on by default): fast,
    /// DCT-domain scaling and region decoding.
    LibjpegTurbo,
    /// zune-jpeg, pure Rust: no scaling (a crop is cut from the full
    /// image); about 0.7 of libjpeg-turbo's speed on real frames.
    Zune,
}

impl Default for Codec {
    fn default() -> Codec {
        if cfg!(feature = "turbojpeg") {
            Codec::LibjpegTurbo
        } else {
            Codec::Zune
        }
    }
}

gulp_format::choice!(Codec, "codec", {
    Codec::LibjpegTurbo => "libjpeg-turbo" | "turbo",
    Codec::Zune => "zune" | "zune-jpeg",
});

/// How to decode a frame. The default decodes as gulpio2 does (fast DCT,
/// fast upsampling, RGB or gray as stored) and is strict, as gulpio2's
/// decoder is: a warning about corrupt data is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    /// The codec.
    pub codec: Codec,
    /// The colour type of the output.
    pub color: ColorMode,
    /// The inverse DCT.
    pub dct: Dct,
    /// Chroma upsampling.
    pub upsampling: Upsampling,
    /// DCT-domain scaling.
    pub scale: Scale,
    /// Region of the scaled image to output.
    pub crop: Option<Crop>,
    /// Whether a decoder warning ("corrupt JPEG data: premature end of data
    /// segment", ...) is an error. When `false`, the decoder's best image
    /// of a damaged frame is returned.
    pub strict: bool,
}

impl Default for DecodeOptions {
    fn default() -> DecodeOptions {
        DecodeOptions {
            codec: Codec::default(),
            color: ColorMode::Auto,
            dct: Dct::Fast,
            upsampling: Upsampling::Fast,
            scale: Scale::Full,
            crop: None,
            strict: true,
        }
    }
}

/// What a JPEG's header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JpegHeader {
    /// Stored width.
    pub width: usize,
    /// Stored height.
    pub height: usize,
    /// Whether the JPEG has one (gray) component.
    pub gray: bool,
}

impl JpegHeader {
    /// The output shape of decoding this JPEG with `options` (the crop's
    /// size if there is one, else the scaled size).
    pub fn output_shape(&self, options: &DecodeOptions) -> Shape {
        let channels = channels(options.color, self.gray);
        let (width, height) = match options.crop {
            Some(c) => (c.width, c.height),
            None => self.scaled_size(options),
        };
        Shape {
            height,
            width,
            channels,
        }
    }

    /// The size after scaling with `options`, before cropping: the image a
    /// crop is taken from. Always the stored size with zune-jpeg.
    pub fn scaled_size(&self, options: &DecodeOptions) -> (usize, usize) {
        match options.codec {
            Codec::LibjpegTurbo => scaled(
                self.width,
                self.height,
                options.scale.eighths(self.width, self.height),
            ),
            Codec::Zune => (self.width, self.height),
        }
    }
}

fn channels(color: ColorMode, gray: bool) -> usize {
    match color {
        ColorMode::Gray => 1,
        ColorMode::Auto if gray => 1,
        _ => 3,
    }
}

fn fail(reason: impl Into<String>) -> Error {
    Error::Decode {
        reason: reason.into(),
    }
}

/// Refuses an image of no pixels or of more than [`MAX_DECODE_PIXELS`]:
/// checked on the header, before anything is allocated for the pixels.
pub fn check_size(width: usize, height: usize) -> Result<()> {
    if width == 0 || height == 0 {
        return Err(fail(format!("image of {width}x{height} pixels")));
    }
    if width.saturating_mul(height) > MAX_DECODE_PIXELS {
        return Err(fail(format!(
            "image of {width}x{height} pixels exceeds the limit of {MAX_DECODE_PIXELS} pixels"
        )));
    }
    Ok(())
}

fn check_crop(crop: &Crop, (width, height): (usize, usize)) -> Result<()> {
    let fits = |start: usize, len: usize, limit: usize| {
        len > 0 && start.checked_add(len).is_some_and(|end| end <= limit)
    };
    if fits(crop.x, crop.width, width) && fits(crop.y, crop.height, height) {
        Ok(())
    } else {
        Err(fail(format!(
            "crop {}x{} at ({}, {}) is not inside the {width}x{height} image",
            crop.width, crop.height, crop.x, crop.y
        )))
    }
}

/// Reads a JPEG's header with the codec of `options`.
pub fn read_header(jpeg: &[u8], codec: Codec) -> Result<JpegHeader> {
    match codec {
        Codec::LibjpegTurbo => turbo::header(jpeg),
        Codec::Zune => zune::header(jpeg),
    }
}

/// Decodes one JPEG into `out`, which must hold at least
/// [`JpegHeader::output_shape`] bytes; returns the shape written (at the
/// start of `out`). Nothing is allocated per frame by libjpeg-turbo's path
/// except for a crop whose left edge is not on an iMCU boundary (a buffer
/// kept per thread).
pub fn decode_jpeg_into(jpeg: &[u8], options: &DecodeOptions, out: &mut [u8]) -> Result<Shape> {
    match options.codec {
        Codec::LibjpegTurbo => turbo::decode_into(jpeg, options, out),
        Codec::Zune => zune::decode_into(jpeg, options, out),
    }
}

/// Decodes one JPEG with `options` into a new [`Image`].
pub fn decode_jpeg_with(jpeg: &[u8], options: &DecodeOptions) -> Result<Image> {
    // One header read: with libjpeg-turbo the frame keeps its handle for
    // the decoding (not a second handle and a second parse).
    let mut frame = JpegFrame::new(jpeg, options.codec)?;
    let header = *frame.header();
    // Refused before the allocation, whatever the frame header claims.
    check_size(header.width, header.height)?;
    let shape = header.output_shape(options);
    let mut pixels = vec![0; shape.len()];
    let shape = frame.decode_into(options, &mut pixels)?;
    pixels.truncate(shape.len());
    Ok(Image {
        height: shape.height,
        width: shape.width,
        channels: shape.channels,
        pixels,
    })
}

/// One JPEG frame whose header is read once, then decoded any number of
/// times (the usual order in a training loop: read the header, choose a
/// scale and a crop from the stored size, decode into the batch). With
/// libjpeg-turbo the frame keeps its own decompressor, so the header is
/// parsed once and the decoding costs what a bare TurboJPEG loop costs;
/// with zune-jpeg it is [`read_header`] then [`decode_jpeg_into`].
///
/// ```
/// # fn main() -> gulp_codec::Result<()> {
/// # let jpeg = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/noise-24x16.jpg")).unwrap();
/// use gulp_codec::{Crop, DecodeOptions, JpegFrame};
/// let mut frame = JpegFrame::new(&jpeg, DecodeOptions::default().codec)?;
/// let (w, h) = (frame.header().width, frame.header().height);
/// let options = DecodeOptions {
///     crop: Some(Crop { x: w / 4, y: h / 4, width: w / 2, height: h / 2 }),
///     ..DecodeOptions::default()
/// };
/// let mut batch = vec![0u8; 2 * (w / 2) * (h / 2) * 3];
/// let shape = frame.decode_into(&options, &mut batch[..])?;
/// assert_eq!((shape.width, shape.height, shape.channels), (w / 2, h / 2, 3));
/// # Ok(())
/// # }
/// ```
pub struct JpegFrame<'a> {
    jpeg: &'a [u8],
    codec: Codec,
    header: JpegHeader,
    /// libjpeg-turbo's handle with this frame's header, until a decoding
    /// fails (a failed handle is left mid-stream; later decodings of the
    /// frame get fresh ones).
    opened: Option<turbo::Opened>,
}

impl std::fmt::Debug for JpegFrame<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JpegFrame")
            .field("bytes", &self.jpeg.len())
            .field("codec", &self.codec)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

impl<'a> JpegFrame<'a> {
    /// Reads the header of `jpeg` with `codec`.
    pub fn new(jpeg: &'a [u8], codec: Codec) -> Result<JpegFrame<'a>> {
        match codec {
            Codec::LibjpegTurbo => {
                let (opened, header) = turbo::open(jpeg)?;
                Ok(JpegFrame {
                    jpeg,
                    codec,
                    header,
                    opened: Some(opened),
                })
            }
            Codec::Zune => Ok(JpegFrame {
                jpeg,
                codec,
                header: zune::header(jpeg)?,
                opened: None,
            }),
        }
    }

    /// What the header says.
    pub fn header(&self) -> &JpegHeader {
        &self.header
    }

    /// Where a region decode of a crop starting at column `x` (of the image
    /// scaled as `options` say) really starts: the iMCU column at or left
    /// of `x` when libjpeg-turbo decodes the crop as a region, else `x`. A
    /// crop that starts there is decoded straight into the output; one that
    /// starts further right is decoded from there into a scratch buffer
    /// and copied. So a caller that can use a few more columns on the left
    /// (a resampler's margin) asks for the crop from here.
    pub fn region_start(&self, options: &DecodeOptions, x: usize) -> usize {
        match (&self.opened, options.codec == self.codec) {
            (Some(opened), true) => turbo::region_start(opened, options, x),
            _ => x,
        }
    }

    /// Decodes the frame into `out` as [`decode_jpeg_into`] does (`options`
    /// with another codec than the frame's decode with that codec).
    pub fn decode_into(&mut self, options: &DecodeOptions, out: &mut [u8]) -> Result<Shape> {
        if options.codec != self.codec {
            return decode_jpeg_into(self.jpeg, options, out);
        }
        let Some(opened) = self.opened.as_mut() else {
            return decode_jpeg_into(self.jpeg, options, out);
        };
        let result = turbo::decode_opened(opened, self.jpeg, options, out);
        if result.is_err() {
            self.opened = None;
        }
        result
    }
}

/// Decodes one JPEG as gulpio2 does, to the colour type `mode`.
pub fn decode_jpeg(jpeg: &[u8], mode: ColorMode) -> Result<Image> {
    decode_jpeg_with(
        jpeg,
        &DecodeOptions {
            color: mode,
            ..DecodeOptions::default()
        },
    )
}

/// A JPEG decoder; implement it to replace the built-in one, as gulpio2's
/// `jpeg_decoder` argument does.
pub trait FrameDecoder: Send + Sync {
    /// Decodes one frame.
    fn decode(&self, jpeg: &[u8]) -> Result<Image>;
}

/// The built-in decoder with its options.
#[derive(Debug, Clone, Copy, Default)]
pub struct JpegDecoder {
    /// How to decode.
    pub options: DecodeOptions,
}

impl FrameDecoder for JpegDecoder {
    fn decode(&self, jpeg: &[u8]) -> Result<Image> {
        decode_jpeg_with(jpeg, &self.options)
    }
}

/// zune-jpeg with a colour mode (strict, full size).
#[derive(Debug, Clone, Copy, Default)]
pub struct ZuneDecoder {
    /// The colour type to produce.
    pub mode: ColorMode,
}

impl FrameDecoder for ZuneDecoder {
    fn decode(&self, jpeg: &[u8]) -> Result<Image> {
        decode_jpeg_with(
            jpeg,
            &DecodeOptions {
                codec: Codec::Zune,
                color: self.mode,
                ..DecodeOptions::default()
            },
        )
    }
}

/// Decodes frames on up to `threads` threads; results come back in input order.
pub fn decode_batch<F: AsRef<[u8]> + Sync>(
    frames: &[F],
    decoder: &dyn FrameDecoder,
    threads: usize,
) -> Vec<Result<Image>> {
    let threads = threads.clamp(1, frames.len().max(1));
    if threads == 1 {
        return frames.iter().map(|f| decoder.decode(f.as_ref())).collect();
    }
    let per = frames.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = frames
            .chunks(per)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|f| decoder.decode(f.as_ref()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// Copies the `crop` of a `width`-pixel-wide image in `src` to the start of
/// `out`.
fn copy_crop(src: &[u8], width: usize, channels: usize, crop: &Crop, out: &mut [u8]) {
    let row = crop.width * channels;
    for (r, dst) in out.chunks_exact_mut(row).take(crop.height).enumerate() {
        let start = ((crop.y + r) * width + crop.x) * channels;
        dst.copy_from_slice(&src[start..start + row]);
    }
}

fn check_out(out: &[u8], shape: &Shape) -> Result<()> {
    if out.len() < shape.len() {
        return Err(fail(format!(
            "output buffer of {} bytes is smaller than {}x{}x{}",
            out.len(),
            shape.height,
            shape.width,
            shape.channels
        )));
    }
    Ok(())
}

thread_local! {
    /// A buffer for the zune path and for crops off the iMCU grid, kept
    /// between frames.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn with_scratch<T>(len: usize, f: impl FnOnce(&mut [u8]) -> T) -> T {
    SCRATCH.with(|cell| {
        let mut scratch = cell.borrow_mut();
        if scratch.len() < len {
            scratch.resize(len, 0);
        }
        f(&mut scratch[..len])
    })
}

#[cfg(not(feature = "turbojpeg"))]
mod turbo {
    use super::*;

    const MISSING: &str = "this build of gulp has no libjpeg-turbo (cargo feature `turbojpeg`)";

    pub(super) fn header(_: &[u8]) -> Result<JpegHeader> {
        Err(fail(MISSING))
    }

    pub(super) fn decode_into(_: &[u8], _: &DecodeOptions, _: &mut [u8]) -> Result<Shape> {
        Err(fail(MISSING))
    }

    pub(super) enum Opened {}

    pub(super) fn region_start(opened: &Opened, _: &DecodeOptions, _: usize) -> usize {
        match *opened {}
    }

    pub(super) fn open(_: &[u8]) -> Result<(Opened, JpegHeader)> {
        Err(fail(MISSING))
    }

    pub(super) fn decode_opened(
        opened: &mut Opened,
        _: &[u8],
        _: &DecodeOptions,
        _: &mut [u8],
    ) -> Result<Shape> {
        match *opened {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gulp_format::Choice;

    fn round_trips<T: Choice + PartialEq + std::fmt::Debug>() {
        for name in T::NAMES {
            let value = T::from_name(name).expect("a listed name parses");
            assert_eq!(value.name(), *name);
        }
        let err = T::parse_choice("no-such-value").expect_err("unknown");
        for name in T::NAMES {
            assert!(err.to_string().contains(&format!("'{name}'")), "{err}");
        }
    }

    #[test]
    fn every_listed_name_parses_and_errors_list_them_all() {
        round_trips::<Dct>();
        round_trips::<Upsampling>();
        round_trips::<ColorMode>();
        round_trips::<Codec>();
        assert_eq!("grey".parse::<ColorMode>(), Ok(ColorMode::Gray));
    }
}
