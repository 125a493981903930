//! Video frames as ffmpeg's decoders produce them: 8-bit YUV 4:2:0 planes.
//!
//! Videos are nearly always stored as YUV 4:2:0, and a baseline JPEG is
//! YCbCr too, so a frame goes from ffmpeg to the JPEG encoder without ever
//! being RGB: the only per-pixel work is mapping video ("limited", 16–235)
//! range to JPEG's full range, and, when asked, resizing each plane. The
//! colour matrix is left as it is, as in gulpio2's path (ffmpeg's MJPEG
//! encoder also takes the decoder's YUV planes and only changes the range).

use fast_image_resize::{PixelType, Resizer};

use crate::raster::{jpeg_size, resize_plane, stored_size};

/// One frame: the Y plane (`width` × `height`) then the Cb and Cr planes
/// (each `width.div_ceil(2)` × `height.div_ceil(2)`), rows without padding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Yuv420 {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The three planes, one after the other.
    pub data: Vec<u8>,
    /// Full range (JPEG's, 0–255) rather than video range (16–235/240).
    pub full_range: bool,
}

impl Yuv420 {
    /// The size of each chroma plane for a frame of `width` × `height`.
    pub fn chroma_size(width: u32, height: u32) -> (u32, u32) {
        (width.div_ceil(2), height.div_ceil(2))
    }

    /// The bytes of a frame of `width` × `height`, if addressable.
    pub fn byte_len(width: u32, height: u32) -> Option<usize> {
        let (cw, ch) = Self::chroma_size(width, height);
        let luma = u64::from(width).checked_mul(u64::from(height))?;
        let chroma = u64::from(cw).checked_mul(u64::from(ch))?.checked_mul(2)?;
        usize::try_from(luma.checked_add(chroma)?).ok()
    }

    /// The Y, Cb and Cr planes.
    pub fn planes(&self) -> (&[u8], &[u8], &[u8]) {
        let luma = self.width as usize * self.height as usize;
        let (cw, ch) = Self::chroma_size(self.width, self.height);
        let chroma = cw as usize * ch as usize;
        let (y, rest) = self.data.split_at(luma.min(self.data.len()));
        let (u, v) = rest.split_at(chroma.min(rest.len()));
        (y, u, v)
    }

    /// Checks that the size is non-zero and matches the data.
    pub fn check(&self) -> Result<(), String> {
        if self.width == 0 || self.height == 0 {
            return Err(format!("empty frame ({}x{})", self.width, self.height));
        }
        match Self::byte_len(self.width, self.height) {
            Some(n) if n == self.data.len() => Ok(()),
            _ => Err(format!(
                "{}x{} YUV 4:2:0 frame needs {:?} bytes, has {}",
                self.width,
                self.height,
                Self::byte_len(self.width, self.height),
                self.data.len()
            )),
        }
    }

    /// Maps video range (Y 16–235, Cb/Cr 16–240) to full range (0–255), in
    /// place (nothing to do when the frame is full range already), rounding to the nearest level and clamping what lies outside.
    pub fn expand_range(&mut self) {
        if self.full_range {
            return;
        }
        self.full_range = true;
        let luma = (self.width as usize * self.height as usize).min(self.data.len());
        let (y, c) = self.data.split_at_mut(luma);
        // Plain arithmetic on whole slices, which the compiler vectorises
        // (a 256-entry table lookup per byte does not).
        for s in y {
            *s = luma_to_full(*s);
        }
        for s in c {
            *s = chroma_to_full(*s);
        }
    }
}

/// `(v − 16) × 255 / 219`, rounded, clamped to 0–255 (15-bit fixed point).
#[inline]
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // clamped first
fn luma_to_full(v: u8) -> u8 {
    const SCALE: i32 = (255 << 15) / 219 + 1; // 38156
    (((i32::from(v) - 16) * SCALE + (1 << 14)) >> 15).clamp(0, 255) as u8
}

/// `(v − 128) × 255 / 224 + 128`, rounded, clamped to 0–255.
#[inline]
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // clamped first
fn chroma_to_full(v: u8) -> u8 {
    const SCALE: i32 = (255 << 15) / 224 + 1; // 37303
    ((((i32::from(v) - 128) * SCALE + (1 << 14)) >> 15) + 128).clamp(0, 255) as u8
}

/// Resizes each plane with the same filter as the RGB path (Pillow's
/// BILINEAR) so that the shorter edge becomes `short_edge`; `None` when the
/// size does not change.
pub fn resize_short_edge(
    frame: &Yuv420,
    resize: impl Into<crate::raster::Resize>,
    resizer: &mut Resizer,
) -> Result<Option<Yuv420>, String> {
    let Some((nw, nh)) = stored_size(frame.width, frame.height, resize) else {
        return Ok(None);
    };
    frame.check()?;
    let len = Yuv420::byte_len(nw, nh).ok_or_else(|| format!("resize to {nw}x{nh}: too large"))?;
    let mut data = Vec::with_capacity(len);
    let (y, u, v) = frame.planes();
    let (cw, ch) = Yuv420::chroma_size(frame.width, frame.height);
    let (ncw, nch) = Yuv420::chroma_size(nw, nh);
    for (plane, size, target) in [
        (y, (frame.width, frame.height), (nw, nh)),
        (u, (cw, ch), (ncw, nch)),
        (v, (cw, ch), (ncw, nch)),
    ] {
        data.extend(resize_plane(plane, size, target, PixelType::U8, resizer)?);
    }
    Ok(Some(Yuv420 {
        width: nw,
        height: nh,
        data,
        full_range: frame.full_range,
    }))
}

/// Encodes a frame as a baseline JPEG, 4:2:0 (the planes as they are) or
/// 4:4:4 (each chroma sample repeated over its 2×2 block, gulpio2's
/// layout), with gulpio2's DCT. A video-range frame is mapped to full range on a
/// copy first; [`Yuv420::expand_range`] does it in place.
pub fn encode_jpeg(frame: &Yuv420, quality: u8, full_chroma: bool) -> Result<Vec<u8>, String> {
    frame.check()?;
    if !frame.full_range {
        let mut full = frame.clone();
        full.expand_range();
        return encode_jpeg(&full, quality, full_chroma);
    }
    let (w, h) = jpeg_size(frame.width, frame.height)?;
    encode_with(frame, w, h, quality.clamp(1, 100), full_chroma)
}

#[cfg(not(feature = "turbojpeg"))]
fn encode_with(
    frame: &Yuv420,
    w: u16,
    h: u16,
    quality: u8,
    full_chroma: bool,
) -> Result<Vec<u8>, String> {
    use jpeg_encoder::{ImageBuffer, JpegColorType};

    /// Rows of Y, Cb and Cr at full resolution, the chroma repeated; with
    /// 2×2 sampling the encoder averages each block back to the plane's
    /// sample exactly.
    struct Rows<'a> {
        planes: (&'a [u8], &'a [u8], &'a [u8]),
        width: u16,
        height: u16,
    }

    impl ImageBuffer for Rows<'_> {
        fn get_jpeg_color_type(&self) -> JpegColorType {
            JpegColorType::Ycbcr
        }
        fn width(&self) -> u16 {
            self.width
        }
        fn height(&self) -> u16 {
            self.height
        }
        fn fill_buffers(&self, row: u16, buffers: &mut [Vec<u8>; 4]) {
            let (y, u, v) = self.planes;
            let w = usize::from(self.width);
            let cw = w.div_ceil(2);
            let start = usize::from(row) * w;
            buffers[0].extend_from_slice(&y[start..start + w]);
            let cstart = usize::from(row / 2) * cw;
            for (plane, buffer) in [(u, 1), (v, 2)] {
                let crow = &plane[cstart..cstart + cw];
                let out = &mut buffers[buffer];
                let at = out.len();
                // Sized first, then filled in pairs (which vectorises; a
                // push per sample does not).
                out.resize(at + cw * 2, 0);
                for (pair, &s) in out[at..].chunks_exact_mut(2).zip(crow) {
                    pair[0] = s;
                    pair[1] = s;
                }
                // An odd width: the last chroma sample covers one pixel.
                out.truncate(at + w);
            }
        }
    }

    let mut out = Vec::with_capacity(frame.data.len() / 8 + 1024);
    crate::raster::rust_encoder(&mut out, quality, full_chroma)
        .encode_image(Rows {
            planes: frame.planes(),
            width: w,
            height: h,
        })
        .map_err(|e| format!("JPEG encoding: {e}"))?;
    Ok(out)
}

#[cfg(feature = "turbojpeg")]
fn encode_with(
    frame: &Yuv420,
    w: u16,
    h: u16,
    quality: u8,
    full_chroma: bool,
) -> Result<Vec<u8>, String> {
    let (y, u, v) = frame.planes();
    let size = (usize::from(w), usize::from(h));
    let subsampling = crate::raster::subsampling(full_chroma);
    let jpeg = if full_chroma {
        let (upsampled_u, upsampled_v) = (upsample(u, w, h), upsample(v, w, h));
        gulp_codec::encode_yuv_planes(
            [y, &upsampled_u, &upsampled_v],
            [size.0; 3],
            size,
            quality,
            subsampling,
        )
    } else {
        let (cw, _) = Yuv420::chroma_size(u32::from(w), u32::from(h));
        let cw = cw as usize;
        gulp_codec::encode_yuv_planes([y, u, v], [size.0, cw, cw], size, quality, subsampling)
    };
    jpeg.map_err(|e| e.to_string())
}

/// A chroma plane at full resolution, each sample repeated over its block.
#[cfg(feature = "turbojpeg")]
fn upsample(plane: &[u8], w: u16, h: u16) -> Vec<u8> {
    let (w, h) = (usize::from(w), usize::from(h));
    let cw = w.div_ceil(2);
    let mut out = Vec::with_capacity(w * h);
    for row in 0..h {
        let start = (row / 2) * cw;
        for &s in &plane[start..start + cw] {
            out.push(s);
            out.push(s);
        }
        out.truncate((row + 1) * w);
    }
    out
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    fn gradient(width: u32, height: u32) -> Yuv420 {
        let len = Yuv420::byte_len(width, height).unwrap();
        let data = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        Yuv420 {
            width,
            height,
            data,
            full_range: true,
        }
    }

    #[test]
    fn range_expansion() {
        let luma = |v| luma_to_full(v);
        let chroma = |v| chroma_to_full(v);
        assert_eq!((luma(0), luma(16), luma(235), luma(255)), (0, 0, 255, 255));
        assert_eq!(luma(126), 128); // 110 × 255 / 219 = 128.08
        assert_eq!((chroma(16), chroma(128), chroma(240)), (0, 128, 255));
        for v in 0..=255u8 {
            // Within half a level of the exact mapping (clamped).
            let exact = |f: f64| f.round().clamp(0.0, 255.0);
            let l = exact((f64::from(v) - 16.0) * 255.0 / 219.0);
            let c = exact((f64::from(v) - 128.0) * 255.0 / 224.0 + 128.0);
            assert!((f64::from(luma(v)) - l).abs() <= 1.0, "luma {v}");
            assert!((f64::from(chroma(v)) - c).abs() <= 1.0, "chroma {v}");
            if v > 0 {
                assert!(luma(v) >= luma(v - 1) && chroma(v) >= chroma(v - 1));
            }
        }
        let mut frame = Yuv420 {
            width: 2,
            height: 2,
            data: vec![16, 235, 16, 235, 128, 240],
            full_range: false,
        };
        frame.expand_range();
        assert_eq!(frame.data, [0, 255, 0, 255, 128, 255]);
        assert!(frame.full_range);
        frame.expand_range();
        assert_eq!(frame.data, [0, 255, 0, 255, 128, 255]);
    }

    #[test]
    fn odd_sizes_encode_and_decode() {
        for (w, h) in [(1, 1), (9, 5), (16, 16), (33, 17)] {
            for full_chroma in [false, true] {
                let frame = gradient(w, h);
                let jpeg = encode_jpeg(&frame, 90, full_chroma).unwrap();
                let image = gulp_codec::decode_jpeg(&jpeg, gulp_codec::ColorMode::Auto).unwrap();
                assert_eq!((image.width, image.height), (w as usize, h as usize));
                assert_eq!(image.channels, 3);
            }
        }
    }

    #[test]
    fn flat_colour_survives() {
        // Y, Cb, Cr of a flat full-range colour come back as that colour.
        let (w, h) = (24, 16);
        let (cw, ch) = Yuv420::chroma_size(w, h);
        let mut data = vec![100u8; (w * h) as usize];
        data.extend(std::iter::repeat_n(90u8, (cw * ch) as usize));
        data.extend(std::iter::repeat_n(170u8, (cw * ch) as usize));
        let frame = Yuv420 {
            width: w,
            height: h,
            data,
            full_range: true,
        };
        // BT.601 full range: R = Y + 1.402 (Cr−128), G = Y − 0.344136 (Cb−128)
        // − 0.714136 (Cr−128), B = Y + 1.772 (Cb−128).
        let want = [159.0f64, 83.1, 32.7];
        for full_chroma in [false, true] {
            let jpeg = encode_jpeg(&frame, 95, full_chroma).unwrap();
            let image = gulp_codec::decode_jpeg(&jpeg, gulp_codec::ColorMode::Auto).unwrap();
            for px in image.pixels.chunks_exact(3) {
                for (c, &want) in px.iter().zip(&want) {
                    assert!((f64::from(*c) - want).abs() <= 3.0, "{px:?} vs {want:?}");
                }
            }
        }
    }

    #[test]
    fn resize_planes() {
        let frame = gradient(641, 361);
        let mut resizer = Resizer::new();
        let small = resize_short_edge(&frame, Some(256), &mut resizer)
            .unwrap()
            .unwrap();
        assert_eq!((small.width, small.height), (454, 256));
        small.check().unwrap();
        assert!(
            resize_short_edge(&small, Some(256), &mut resizer)
                .unwrap()
                .is_none()
        );
        assert!(
            resize_short_edge(&frame, None, &mut resizer)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn bad_sizes_are_errors() {
        let mut frame = gradient(8, 8);
        frame.data.pop();
        assert!(
            encode_jpeg(&frame, 90, false)
                .unwrap_err()
                .contains("needs")
        );
        let empty = Yuv420 {
            width: 0,
            height: 4,
            data: vec![],
            full_range: true,
        };
        assert!(
            encode_jpeg(&empty, 90, false)
                .unwrap_err()
                .contains("empty")
        );
    }
}
