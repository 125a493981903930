//! JPEG encoding with libjpeg-turbo, as gulpio2 encodes (through
//! simplejpeg): baseline, fast integer DCT (what simplejpeg's defaults
//! give), Huffman tables not optimised, so the same pixels and settings give
//! the same bytes.

use std::cell::RefCell;

use super::ffi::{self as tj, Handle, PixelFormat};
use crate::error::{Error, Result};

/// Chroma subsampling of an encoded colour JPEG (gray images have none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Subsampling {
    /// Full chroma resolution: gulpio2's setting.
    #[default]
    S444,
    /// Chroma halved in both directions, as most videos store it.
    S420,
}

impl Subsampling {
    fn raw(self) -> std::ffi::c_int {
        match self {
            Subsampling::S444 => tj::SAMP_444,
            Subsampling::S420 => tj::SAMP_420,
        }
    }
}

thread_local! {
    static COMPRESSOR: RefCell<Option<Handle>> = const { RefCell::new(None) };
}

fn with_compressor<T>(
    f: impl FnOnce(&mut Handle) -> std::result::Result<T, tj::Failure>,
) -> Result<T> {
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let handle = match slot.as_mut() {
            Some(h) => h,
            None => slot.insert(Handle::compressor().map_err(encode_error)?),
        };
        let result = f(handle);
        if result.is_err() {
            // A handle that failed mid-stream is not reused.
            *slot = None;
        }
        result.map_err(encode_error)
    })
}

fn encode_error(e: tj::Failure) -> Error {
    Error::Encode { reason: e.message }
}

/// Encodes `height` rows of `width` pixels of `channels` (1: gray, 3: RGB)
/// interleaved bytes at `quality` (1 to 100). A gray image becomes a
/// one-component JPEG, whatever `subsampling`.
pub fn encode_jpeg(
    pixels: &[u8],
    (width, height): (usize, usize),
    channels: usize,
    quality: u8,
    subsampling: Subsampling,
) -> Result<Vec<u8>> {
    let format = match channels {
        1 => PixelFormat::Gray,
        3 => PixelFormat::Rgb,
        n => {
            return Err(Error::Encode {
                reason: format!("{n} channels (1 or 3 are encoded)"),
            });
        }
    };
    with_compressor(|h| h.compress(pixels, format, (width, height), quality, subsampling.raw()))
}

/// Encodes a frame given as Y, Cb and Cr planes (rows `strides` bytes
/// apart; the chroma planes halved in both directions for
/// [`Subsampling::S420`]), without a round trip through RGB.
pub fn encode_yuv_planes(
    planes: [&[u8]; 3],
    strides: [usize; 3],
    (width, height): (usize, usize),
    quality: u8,
    subsampling: Subsampling,
) -> Result<Vec<u8>> {
    with_compressor(|h| {
        h.compress_planes(planes, strides, (width, height), quality, subsampling.raw())
    })
}
