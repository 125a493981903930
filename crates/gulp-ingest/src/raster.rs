//! What RGB frames (`frames.rs`) and video planes (`yuv.rs`) share: the
//! resized size (gulpio2's rounding), the resizer (Pillow's bilinear), the
//! JPEG size limits and the encoder settings. Both modules build on this
//! one; it depends on neither.

use fast_image_resize::images::Image as FirImage;
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
#[cfg(not(feature = "turbojpeg"))]
use jpeg_encoder::{Encoder, SamplingFactor};

/// The size a `width` × `height` frame is resized to for `short_edge`, or
/// `None` when it keeps its size.
pub fn resized_size(width: u32, height: u32, short_edge: Option<u32>) -> Option<(u32, u32)> {
    short_edge
        .map(|s| short_edge_size(width, height, s))
        .filter(|&t| t != (width, height))
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
pub(crate) fn subsampling(full_chroma: bool) -> gulp_io::Subsampling {
    if full_chroma {
        gulp_io::Subsampling::S444
    } else {
        gulp_io::Subsampling::S420
    }
}
