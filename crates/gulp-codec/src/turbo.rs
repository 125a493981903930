//! Decoding with libjpeg-turbo (`Codec::Turbo`), through [`ffi`](super::ffi).

use super::ffi::{self as tj, Handle, Params, PixelFormat};
use super::*;

/// Runs `f` on a new decompressor. A handle is never reused from one
/// frame to the next, as simplejpeg (gulpio2) does not: libjpeg keeps
/// Huffman and quantisation tables across the images of one handle (for
/// abbreviated datastreams), so a damaged frame without its own tables
/// would decode with the previous frame's, and a handle that failed is
/// left mid-stream. A handle costs a few microseconds, nothing next to a
/// frame's decoding.
fn with_handle<T>(f: impl FnOnce(&mut Handle) -> Result<T>) -> Result<T> {
    let mut handle = Handle::decompressor().map_err(|e| fail(e.message))?;
    f(&mut handle)
}

fn is_cmyk(raw: &tj::RawHeader) -> bool {
    raw.colorspace == tj::CS_CMYK || raw.colorspace == tj::CS_YCCK
}

fn read(handle: &mut Handle, jpeg: &[u8], strict: bool) -> Result<tj::RawHeader> {
    // libjpeg-turbo reports success on a stream without a frame header
    // (tables only, or cut before it) and leaves the previous frame's
    // size in the handle: such a stream is refused first.
    if !has_frame_header(jpeg) {
        return Err(fail(
            "no complete frame header (SOF marker) before the first scan",
        ));
    }
    let raw = handle.header(jpeg, strict).map_err(|e| fail(e.message))?;
    check_size(raw.width, raw.height)?;
    Ok(raw)
}

pub(super) fn header(jpeg: &[u8]) -> Result<JpegHeader> {
    with_handle(|handle| {
        let raw = read(handle, jpeg, false)?;
        Ok(JpegHeader {
            width: raw.width,
            height: raw.height,
            gray: raw.colorspace == tj::CS_GRAY,
        })
    })
}

pub(super) fn decode_into(jpeg: &[u8], options: &DecodeOptions, out: &mut [u8]) -> Result<Shape> {
    with_handle(|handle| {
        let raw = read(handle, jpeg, options.strict)?;
        decode_read(handle, &raw, jpeg, options, out)
    })
}

/// A frame on its own handle, its header read once: what
/// [`JpegFrame`](super::JpegFrame) keeps.
pub(super) struct Opened {
    handle: Handle,
    raw: tj::RawHeader,
}

pub(super) fn open(jpeg: &[u8]) -> Result<(Opened, JpegHeader)> {
    let mut handle = Handle::decompressor().map_err(|e| fail(e.message))?;
    let raw = read(&mut handle, jpeg, false)?;
    let header = JpegHeader {
        width: raw.width,
        height: raw.height,
        gray: raw.colorspace == tj::CS_GRAY,
    };
    Ok((Opened { handle, raw }, header))
}

/// See [`JpegFrame::region_start`]: the same rule as `decode_read`'s.
pub(super) fn region_start(opened: &Opened, options: &DecodeOptions, x: usize) -> usize {
    let raw = &opened.raw;
    if raw.lossless || is_cmyk(raw) {
        return x;
    }
    let exact = options.upsampling == Upsampling::Fast
        || raw.subsamp == tj::SAMP_444
        || raw.subsamp == tj::SAMP_GRAY;
    let eighths = options.scale.eighths(raw.width, raw.height);
    match tj::mcu_width(raw.subsamp).filter(|_| exact) {
        Some(w) => {
            let m = (w * usize::from(eighths)).div_ceil(8);
            x - x % m
        }
        None => x,
    }
}

pub(super) fn decode_opened(
    opened: &mut Opened,
    jpeg: &[u8],
    options: &DecodeOptions,
    out: &mut [u8],
) -> Result<Shape> {
    decode_read(&mut opened.handle, &opened.raw, jpeg, options, out)
}

/// Decodes `jpeg`, whose header `raw` was read last on `handle`.
fn decode_read(
    handle: &mut Handle,
    raw: &tj::RawHeader,
    jpeg: &[u8],
    options: &DecodeOptions,
    out: &mut [u8],
) -> Result<Shape> {
    {
        let raw = *raw;
        if is_cmyk(&raw) && matches!(options.scale, Scale::Full | Scale::Eighths(8)) {
            // libjpeg-turbo decodes CMYK only to CMYK; zune-jpeg converts.
            return zune::decode_into(jpeg, options, out);
        }
        let head = JpegHeader {
            width: raw.width,
            height: raw.height,
            gray: raw.colorspace == tj::CS_GRAY,
        };
        let shape = head.output_shape(options);
        check_out(out, &shape)?;
        let eighths = if raw.lossless {
            8
        } else {
            options.scale.eighths(raw.width, raw.height)
        };
        let (sw, sh) = scaled(raw.width, raw.height, eighths);
        let format = if shape.channels == 1 {
            PixelFormat::Gray
        } else {
            PixelFormat::Rgb
        };
        let mut params = Params {
            fast_dct: options.dct == Dct::Fast,
            fast_upsample: options.upsampling == Upsampling::Fast,
            stop_on_warning: options.strict,
            scale_eighths: eighths,
            region: None,
        };
        let run = |handle: &mut Handle, params: &Params, size: (usize, usize), dst: &mut [u8]| {
            if !params.stop_on_warning {
                // A damaged frame may leave part of the output unwritten:
                // it is then black, not what the buffer held before.
                let len = (size.0 * size.1 * shape.channels).min(dst.len());
                dst[..len].fill(0);
            }
            match handle.decompress(jpeg, params, format, size, dst) {
                Ok(()) => Ok(()),
                // Not strict: the image is decoded, with a problem noted.
                Err(e) if e.warning && !params.stop_on_warning => Ok(()),
                Err(e) => Err(fail(e.message)),
            }
        };
        let Some(crop) = options.crop else {
            run(handle, &params, (sw, sh), out)?;
            return Ok(shape);
        };
        check_crop(&crop, (sw, sh))?;
        // The region starts on the iMCU column at or left of the crop;
        // libjpeg-turbo decodes only its rows and columns. Smooth
        // upsampling of subsampled chroma takes its neighbours from the
        // region only, and at reduced scales not even a margin makes
        // the edges exact: such a crop is cut from the whole frame.
        let exact =
            params.fast_upsample || raw.subsamp == tj::SAMP_444 || raw.subsamp == tj::SAMP_GRAY;
        let mcu = tj::mcu_width(raw.subsamp)
            .filter(|_| !raw.lossless && exact)
            .map(|w| (w * usize::from(eighths)).div_ceil(8));
        let x0 = mcu.map_or(0, |m| crop.x - crop.x % m);
        let region_width = crop.x + crop.width - x0;
        let whole = (x0, crop.y, region_width, crop.height) == (0, 0, sw, sh);
        params.region = if mcu.is_none() || whole {
            None
        } else {
            Some((x0, crop.y, region_width, crop.height))
        };
        let (rw, rh, ry) = match params.region {
            Some(_) => (region_width, crop.height, 0),
            None => (sw, sh, crop.y),
        };
        if whole && (crop.x, crop.width) == (0, sw) {
            run(handle, &params, (sw, sh), out)?;
        } else if params.region.is_some() && x0 == crop.x && region_width == crop.width {
            run(handle, &params, (rw, rh), out)?;
        } else {
            let cut = Crop {
                x: crop.x - if params.region.is_some() { x0 } else { 0 },
                y: ry,
                ..crop
            };
            with_scratch(rw * rh * shape.channels, |scratch| -> Result<()> {
                run(handle, &params, (rw, rh), scratch)?;
                copy_crop(scratch, rw, shape.channels, &cut, out);
                Ok(())
            })?;
        }
        Ok(shape)
    }
}

/// Whether `jpeg` starts with SOI and reaches a whole frame header (SOFn
/// segment) before a scan or the end, walking the marker segments as
/// libjpeg reads them (bytes between segments are skipped, as libjpeg does
/// with a warning).
fn has_frame_header(jpeg: &[u8]) -> bool {
    if !jpeg.starts_with(&[0xff, 0xd8]) {
        return false;
    }
    let mut i = 2;
    loop {
        while jpeg.get(i).is_some_and(|&b| b != 0xff) {
            i += 1;
        }
        while jpeg.get(i) == Some(&0xff) {
            i += 1;
        }
        let Some(&marker) = jpeg.get(i) else {
            return false;
        };
        i += 1;
        match marker {
            // A stuffed zero, a restart or TEM marker: no segment.
            0x00 | 0x01 | 0xd0..=0xd7 => continue,
            // SOI again, EOI, SOS: no frame header before them.
            0xd8..=0xda => return false,
            _ => {}
        }
        let Some(len) = jpeg.get(i..i + 2) else {
            return false;
        };
        let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        if len < 2 || i + len > jpeg.len() {
            return false;
        }
        if matches!(marker, 0xc0..=0xc3 | 0xc5..=0xc7 | 0xc9..=0xcb | 0xcd..=0xcf) {
            return true;
        }
        i += len;
    }
}
