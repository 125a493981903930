//! JPEG decoding with zune-jpeg, one frame or a batch on several threads.

use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

use crate::error::{ErrorKind, Result};

/// The largest image [`decode_jpeg`] decodes, in pixels (8192 × 8192; 192
/// MiB as RGB).
///
/// A JPEG header declares the image size in two 16-bit numbers, and the
/// decoder allocates the output for that size before it reads the scan data:
/// without a limit, a frame of a few hundred bytes claiming 16000 × 16000
/// pixels makes the decoder allocate 768 MB (and spend seconds filling it).
/// Larger frames are refused with a [`Decode`](crate::ErrorKind::Decode)
/// error; video frames for training are far smaller.
pub const MAX_DECODE_PIXELS: usize = 1 << 26;

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

/// A JPEG decoder; implement it to replace the built-in one, as gulpio2's
/// `jpeg_decoder` argument does.
pub trait FrameDecoder: Send + Sync {
    /// Decodes one frame.
    fn decode(&self, jpeg: &[u8]) -> Result<Image>;
}

/// The built-in decoder (zune-jpeg) with a colour mode.
#[derive(Debug, Clone, Copy, Default)]
pub struct ZuneDecoder {
    /// The colour type to produce.
    pub mode: ColorMode,
}

impl FrameDecoder for ZuneDecoder {
    fn decode(&self, jpeg: &[u8]) -> Result<Image> {
        decode_jpeg(jpeg, self.mode)
    }
}

/// Decodes one JPEG.
pub fn decode_jpeg(jpeg: &[u8], mode: ColorMode) -> Result<Image> {
    let fail = |reason: String| ErrorKind::Decode {
        at: String::new(),
        reason,
    };
    let mut probe = JpegDecoder::new(ZCursor::new(jpeg));
    probe.decode_headers().map_err(|e| fail(format!("{e:?}")))?;
    if let Some((w, h)) = probe.dimensions() {
        let pixels = w.saturating_mul(h);
        if pixels > MAX_DECODE_PIXELS {
            return Err(fail(format!(
                "image of {w}x{h} pixels exceeds the limit of {MAX_DECODE_PIXELS} pixels"
            ))
            .into());
        }
    }
    let gray_input = matches!(probe.input_colorspace(), Some(ColorSpace::Luma));
    let (out, channels) = match mode {
        ColorMode::Gray => (ColorSpace::Luma, 1),
        ColorMode::Auto if gray_input => (ColorSpace::Luma, 1),
        _ => (ColorSpace::RGB, 3),
    };
    let options = DecoderOptions::default().jpeg_set_out_colorspace(out);
    let mut decoder = JpegDecoder::new_with_options(ZCursor::new(jpeg), options);
    let pixels = decoder.decode().map_err(|e| fail(format!("{e:?}")))?;
    let info = decoder
        .info()
        .ok_or_else(|| fail("no image header".into()))?;
    let (height, width) = (usize::from(info.height), usize::from(info.width));
    if pixels.len() != height * width * channels {
        return Err(fail(format!(
            "decoder returned {} bytes for {width}x{height}x{channels}",
            pixels.len()
        ))
        .into());
    }
    Ok(Image {
        height,
        width,
        channels,
        pixels,
    })
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

impl crate::reader::ChunkReader {
    /// Decodes frame `index` of `id` with `decoder`. Unlike [`decode_jpeg`],
    /// a decoding error says where the frame is: the id, the frame, the data
    /// file and the record's byte offset.
    pub fn decode_frame(
        &self,
        id: &str,
        index: usize,
        decoder: &dyn FrameDecoder,
    ) -> Result<Image> {
        let jpeg = self.frame(id, index)?;
        decoder.decode(&jpeg).map_err(|e| match e.kind() {
            ErrorKind::Decode { at, reason } if at.is_empty() => {
                let loc = self
                    .item(id)
                    .ok()
                    .and_then(|item| item.frame_info.get(index))
                    .map_or(0, |fi| fi.loc);
                ErrorKind::Decode {
                    at: format!(
                        " in {}: id {id:?} frame {index} (record at byte {loc})",
                        self.data_path().display()
                    ),
                    reason: reason.clone(),
                }
                .into()
            }
            _ => e,
        })
    }
}
