//! What RGB frames (`frames.rs`) and video planes (`yuv.rs`) share: the
//! resized size (gulpio2's rounding), the resizer (Pillow's bilinear), the
//! JPEG size limits and the encoder settings. Both modules build on this
//! one; it depends on neither.

use fast_image_resize::images::Image as FirImage;
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
#[cfg(not(feature = "turbojpeg"))]
use jpeg_encoder::{Encoder, SamplingFactor};

/// How a frame's size changes at ingest: its short edge set to
/// `short_edge` (gulpio2's `frame_size`/`img_size`), then its long edge
/// brought down to `max_size` if it is longer (FFCV's `max_resolution`;
/// never up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Resize {
    /// The short edge after resizing.
    pub short_edge: Option<u32>,
    /// The longest the long edge may be.
    pub max_size: Option<u32>,
}

impl From<Option<u32>> for Resize {
    /// A resize by the short edge only.
    fn from(short_edge: Option<u32>) -> Resize {
        Resize {
            short_edge,
            max_size: None,
        }
    }
}

/// The size a `width` × `height` frame is stored at, or `None` when it
/// keeps its size: the scaled edges truncated, as gulpio2 stores them
/// ([`short_edge_size`], [`long_edge_size`]). The loader's resize rounds
/// instead (`gulp_loader::short_edge_rounded`).
pub fn stored_size(width: u32, height: u32, resize: impl Into<Resize>) -> Option<(u32, u32)> {
    let resize = resize.into();
    let (w, h) = resize
        .short_edge
        .map_or((width, height), |s| short_edge_size(width, height, s));
    let (w, h) = match resize.max_size {
        Some(m) if w.max(h) > m => long_edge_size(w, h, m),
        _ => (w, h),
    };
    Some((w, h)).filter(|&t| t != (width, height))
}

/// The size with the long edge at `size`, the other scaled and truncated
/// (at least 1): as `short_edge_size`, by the other edge.
pub fn long_edge_size(width: u32, height: u32, size: u32) -> (u32, u32) {
    let scaled = |a: u32, b: u32| {
        // a < b here, so the result is below `size`: it fits in u32.
        let v = u64::from(size) * u64::from(a) / u64::from(b);
        u32::try_from(v).unwrap_or(size).max(1)
    };
    if width >= height {
        (size, scaled(height, width))
    } else {
        (scaled(width, height), size)
    }
}

/// gulpio2's `resize_by_short_edge` size: the shorter edge becomes `size`,
/// the other is scaled and truncated; a square counts as "width is shorter".
pub fn short_edge_size(width: u32, height: u32, size: u32) -> (u32, u32) {
    let (w, h, s) = (f64::from(width), f64::from(height), f64::from(size));
    // Python: int(size * w / h); the product is exact, the division rounds
    // once, int() truncates. The same in f64.
    let scaled = |a: f64, b: f64| {
        let v = (s * a / b).trunc();
        if v >= f64::from(u32::MAX) {
            u32::MAX
        } else if v < 1.0 {
            1
        } else {
            // In range and integral: the conversion is exact.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let v = v as u32;
            v
        }
    };
    if height < width {
        (scaled(w, h), size)
    } else {
        (size, scaled(h, w))
    }
}

/// Resizes one image or plane of `size` to `target` with Pillow's BILINEAR.
pub(crate) fn resize_plane(
    data: &[u8],
    size: (u32, u32),
    target: (u32, u32),
    pixel_type: PixelType,
    resizer: &mut Resizer,
) -> Result<Vec<u8>, String> {
    let src = fast_image_resize::images::ImageRef::new(size.0, size.1, data, pixel_type)
        .map_err(|e| format!("resize: {e}"))?;
    let mut dst = FirImage::new(target.0, target.1, pixel_type);
    let options = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Bilinear));
    resizer
        .resize(&src, &mut dst, &options)
        .map_err(|e| format!("resize to {}x{}: {e}", target.0, target.1))?;
    Ok(dst.into_vec())
}

/// A frame size as JPEG stores it (16 bits per side).
pub(crate) fn jpeg_size(width: u32, height: u32) -> Result<(u16, u16), String> {
    Ok((
        u16::try_from(width).map_err(|_| format!("{width} pixels wide: JPEG allows 65535"))?,
        u16::try_from(height).map_err(|_| format!("{height} pixels high: JPEG allows 65535"))?,
    ))
}

/// The pure-Rust encoder writing to `out`, with 4:4:4 or 4:2:0 chroma.
#[cfg(not(feature = "turbojpeg"))]
pub(crate) fn rust_encoder(
    out: &mut Vec<u8>,
    quality: u8,
    full_chroma: bool,
) -> Encoder<&mut Vec<u8>> {
    let mut encoder = Encoder::new(out, quality);
    encoder.set_sampling_factor(if full_chroma {
        SamplingFactor::F_1_1
    } else {
        SamplingFactor::F_2_2
    });
    encoder
}

/// gulp-io's name for 4:4:4 (`full_chroma`) or 4:2:0.
#[cfg(feature = "turbojpeg")]
pub(crate) fn subsampling(full_chroma: bool) -> gulp_codec::Subsampling {
    if full_chroma {
        gulp_codec::Subsampling::S444
    } else {
        gulp_codec::Subsampling::S420
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_size_caps_the_long_edge_after_the_short_edge() {
        let max = |m| Resize {
            short_edge: None,
            max_size: Some(m),
        };
        assert_eq!(stored_size(500, 375, max(256)), Some((256, 192)));
        assert_eq!(stored_size(375, 500, max(256)), Some((192, 256)));
        assert_eq!(stored_size(200, 100, max(256)), None, "never up");
        assert_eq!(stored_size(256, 100, max(256)), None);
        assert_eq!(stored_size(4000, 1, max(100)), Some((100, 1)), "at least 1");
        let both = Resize {
            short_edge: Some(100),
            max_size: Some(128),
        };
        // 200x120 -> 166x100 by the short edge, then 128x77.
        assert_eq!(stored_size(200, 120, both), Some((128, 77)));
        assert_eq!(stored_size(200, 120, Some(100)), Some((166, 100)));
        assert_eq!(stored_size(200, 120, None), None);
    }
}
