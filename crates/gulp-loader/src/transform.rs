//! Spatial transforms, drawn once per clip and applied while decoding.
//!
//! A clip's crop is drawn on the frame as resized by its short edge (the
//! "resized frame"); every frame of the clip then decodes only what that
//! crop needs: libjpeg-turbo scales in the DCT domain to the smallest `n/8`
//! that still has at least the output's resolution over the crop, decodes
//! only the rows and iMCU columns around the crop, and a bilinear filter
//! (Pillow's, antialiased) resamples the crop to the output size. When the
//! scaled crop already has the output size (no resize, or a resize that a
//! DCT scale gives exactly), the crop is decoded straight into the batch.

use fast_image_resize::images::{Image as FirImage, ImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use gulp_codec::{Codec, ColorMode, Crop, DecodeOptions, JpegFrame, Scale};

use crate::rng::Rng;

/// How a clip is cropped from the resized frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CropMode {
    /// No crop: the whole resized frame (resampled to `size` if given).
    None,
    /// The centre `size` of the resized frame.
    Center,
    /// A `size` crop at a random place (training); the centre otherwise.
    Random,
    /// torchvision's `RandomResizedCrop`: a random area (fraction `scale` of
    /// the frame) and aspect ratio (`ratio`, drawn log-uniformly),
    /// resampled to `size` (training); the centre crop otherwise.
    RandomResized {
        /// Range of the crop's area as a fraction of the frame's.
        scale: (f64, f64),
        /// Range of the crop's width / height.
        ratio: (f64, f64),
    },
    /// Three `size` crops along the long side (start, centre, end), as
    /// video models are evaluated: three views of each clip.
    Three,
}

/// torchvision's `RandomResizedCrop` defaults: the crop's area as a
/// fraction of the frame's, and its aspect ratio.
pub const RANDOM_RESIZED_SCALE: (f64, f64) = (0.08, 1.0);
/// See [`RANDOM_RESIZED_SCALE`].
pub const RANDOM_RESIZED_RATIO: (f64, f64) = (3.0 / 4.0, 4.0 / 3.0);

impl gulp_format::Choice for CropMode {
    const OPTION: &'static str = "crop";
    const NAMES: &'static [&'static str] = &["random", "center", "random_resized", "three", "none"];

    /// A name of [`NAMES`](gulp_format::Choice::NAMES) (also `centre`);
    /// `random_resized` with torchvision's scale and ratio.
    fn from_name(text: &str) -> Option<CropMode> {
        match text {
            "none" => Some(CropMode::None),
            "center" | "centre" => Some(CropMode::Center),
            "random" => Some(CropMode::Random),
            "random_resized" => Some(CropMode::RandomResized {
                scale: RANDOM_RESIZED_SCALE,
                ratio: RANDOM_RESIZED_RATIO,
            }),
            "three" => Some(CropMode::Three),
            _ => None,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            CropMode::None => "none",
            CropMode::Center => "center",
            CropMode::Random => "random",
            CropMode::RandomResized { .. } => "random_resized",
            CropMode::Three => "three",
        }
    }
}

gulp_format::choice_from_str!(CropMode);

impl CropMode {
    /// Views of each clip this mode makes (3 for [`CropMode::Three`]).
    pub fn views(&self) -> usize {
        if matches!(self, CropMode::Three) {
            3
        } else {
            1
        }
    }
}

/// The spatial transform of a loader.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spatial {
    /// Resize so that the short edge has this many pixels (aspect kept);
    /// `None` keeps the stored size.
    pub resize: Option<usize>,
    /// Output `(height, width)`; `None` for the whole resized frame (only
    /// with [`CropMode::None`]).
    pub size: Option<(usize, usize)>,
    /// The crop.
    pub crop: CropMode,
    /// Flip each clip horizontally with probability 1/2 (training only).
    pub flip: bool,
}

/// One clip's draw: a rectangle as fractions of the frame, the output size
/// and the flip, the same for every frame of the clip.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Geometry {
    /// `(x, y, width, height)` as fractions of the frame's width and height.
    pub rect: [f64; 4],
    /// Output `(height, width)`.
    pub out: (usize, usize),
    /// Whether the output is mirrored left to right.
    pub flip: bool,
}

/// The short-edge resize of a `width`×`height` frame: the short edge
/// becomes `edge`, the long one keeps the aspect, rounded (as
/// torchvision's `Resize`; ingest stores truncated sizes, gulpio2's rule:
/// `gulp_ingest::stored_size`).
pub fn short_edge_rounded(width: usize, height: usize, edge: usize) -> (usize, usize) {
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let long =
        |l: usize, s: usize| ((l as f64) * (edge as f64) / (s as f64)).round().max(1.0) as usize;
    if width <= height {
        (edge, long(height, width))
    } else {
        (long(width, height), edge)
    }
}

/// An output size as the command line and `gulp serve` spell it:
/// `H,W`, or `N` for a square, in the order Python's `(H, W)` gives them;
/// also ffmpeg's `WxH`, which says its own order (the form is returned, so
/// that a caller can warn that it is deprecated). `None` when `text` is
/// neither, or a number is not a positive integer.
///
/// ```
/// use gulp_loader::{SizeForm, parse_size};
/// assert_eq!(parse_size("112,144"), Some(((112, 144), SizeForm::HeightWidth)));
/// assert_eq!(parse_size("160x120"), Some(((120, 160), SizeForm::WidthXHeight)));
/// assert_eq!(parse_size("96"), Some(((96, 96), SizeForm::HeightWidth)));
/// assert_eq!(parse_size("0,4"), None);
/// ```
pub fn parse_size(text: &str) -> Option<((usize, usize), SizeForm)> {
    let number = |t: &str| t.trim().parse::<usize>().ok().filter(|n| *n > 0);
    if let Some((w, h)) = text.split_once(['x', 'X']) {
        return Some(((number(h)?, number(w)?), SizeForm::WidthXHeight));
    }
    let size = match text.split_once(',') {
        Some((h, w)) => (number(h)?, number(w)?),
        None => (number(text)?, number(text)?),
    };
    Some((size, SizeForm::HeightWidth))
}

/// How a size given to [`parse_size`] was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeForm {
    /// `H,W` or `N`.
    HeightWidth,
    /// ffmpeg's `WxH` (deprecated on the command line).
    WidthXHeight,
}

impl Spatial {
    /// Draws the geometry of a clip whose first frame is `width`×`height`;
    /// `rng` is `None` outside training (centred crops, no flip), `view` is
    /// the crop index for [`CropMode::Three`].
    pub fn draw(
        &self,
        width: usize,
        height: usize,
        rng: Option<&mut Rng>,
        view: usize,
    ) -> std::result::Result<Geometry, String> {
        let (rw, rh) = match self.resize {
            Some(edge) => short_edge_rounded(width, height, edge),
            None => (width, height),
        };
        let (oh, ow) = self.size.unwrap_or((rh, rw));
        let fits = || {
            if ow > rw || oh > rh {
                Err(format!(
                    "a {ow}x{oh} crop does not fit the {rw}x{rh} frame{}",
                    if self.resize.is_some() {
                        format!(" ({width}x{height} resized)")
                    } else {
                        String::new()
                    }
                ))
            } else {
                Ok(())
            }
        };
        let centre = |len: usize, of: usize| (of - len) / 2;
        let mut rng = rng;
        let (x, y, w, h): (f64, f64, f64, f64) = match self.crop {
            CropMode::None => (0.0, 0.0, rw as f64, rh as f64),
            CropMode::Center => {
                fits()?;
                (
                    centre(ow, rw) as f64,
                    centre(oh, rh) as f64,
                    ow as f64,
                    oh as f64,
                )
            }
            CropMode::Random => {
                fits()?;
                let (x, y) = match rng.as_deref_mut() {
                    Some(rng) => (rng.range(0, rw - ow), rng.range(0, rh - oh)),
                    None => (centre(ow, rw), centre(oh, rh)),
                };
                (x as f64, y as f64, ow as f64, oh as f64)
            }
            CropMode::Three => {
                fits()?;
                let at = |room: usize| match view {
                    0 => 0,
                    1 => room / 2,
                    _ => room,
                };
                let (x, y) = if rw >= rh {
                    (at(rw - ow), centre(oh, rh))
                } else {
                    (centre(ow, rw), at(rh - oh))
                };
                (x as f64, y as f64, ow as f64, oh as f64)
            }
            CropMode::RandomResized { scale, ratio } => match rng.as_deref_mut() {
                Some(rng) => random_resized(rng, rw, rh, scale, ratio),
                None => {
                    // Evaluation: the centre crop of the output's aspect
                    // inside the frame (as large as fits).
                    let aspect = ow as f64 / oh as f64;
                    let (w, h) = if rw as f64 / rh as f64 > aspect {
                        (rh as f64 * aspect, rh as f64)
                    } else {
                        (rw as f64, rw as f64 / aspect)
                    };
                    ((rw as f64 - w) / 2.0, (rh as f64 - h) / 2.0, w, h)
                }
            },
        };
        let flip = self.flip && rng.is_some_and(|rng| rng.coin());
        Ok(Geometry {
            rect: [x / rw as f64, y / rh as f64, w / rw as f64, h / rh as f64],
            out: (oh, ow),
            flip,
        })
    }
}

/// torchvision's `RandomResizedCrop.get_params` on a `w`×`h` frame: ten
/// tries at a random area and log-uniform aspect ratio, then the centre
/// crop with the ratio clamped to the range.
fn random_resized(
    rng: &mut Rng,
    w: usize,
    h: usize,
    scale: (f64, f64),
    ratio: (f64, f64),
) -> (f64, f64, f64, f64) {
    let (wf, hf) = (w as f64, h as f64);
    let area = wf * hf;
    let (lr0, lr1) = (ratio.0.ln(), ratio.1.ln());
    for _ in 0..10 {
        let target = area * (scale.0 + (scale.1 - scale.0) * rng.unit());
        let aspect = (lr0 + (lr1 - lr0) * rng.unit()).exp();
        let cw = (target * aspect).sqrt().round();
        let ch = (target / aspect).sqrt().round();
        if cw > 0.0 && ch > 0.0 && cw <= wf && ch <= hf {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let (cwu, chu) = (cw as usize, ch as usize);
            let x = rng.range(0, w - cwu);
            let y = rng.range(0, h - chu);
            return (x as f64, y as f64, cw, ch);
        }
    }
    let in_ratio = wf / hf;
    let (cw, ch) = if in_ratio < ratio.0 {
        (wf, (wf / ratio.0).round())
    } else if in_ratio > ratio.1 {
        ((hf * ratio.1).round(), hf)
    } else {
        (wf, hf)
    };
    (((wf - cw) / 2.0).floor(), ((hf - ch) / 2.0).floor(), cw, ch)
}

/// Per-thread state of frame rendering: the resampler and a buffer for the
/// decoded region.
#[derive(Default)]
pub struct Renderer {
    resizer: Resizer,
    region: Vec<u8>,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer").finish_non_exhaustive()
    }
}

/// Whether `v` is an integer (within float noise).
fn integral(v: f64) -> bool {
    (v - v.round()).abs() < 1e-6
}

/// The span `[start, start + len)` of a side, kept inside `[0, limit]`
/// so that the sum the resampler checks, `start + len`, is at most `limit`
/// in floating point too (`start` and `len` are products of fractions, a
/// rounding step off the pixel grid).
fn inside(start: f64, len: f64, limit: usize) -> (f64, f64) {
    let limit = limit as f64;
    let start = start.clamp(0.0, limit);
    let mut len = len.clamp(0.0, limit - start);
    while start + len > limit {
        len = len.next_down();
    }
    (start, len)
}

#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn to_usize(v: f64) -> usize {
    v.round().max(0.0) as usize
}

impl Renderer {
    /// Decodes `frame` with `geometry` into `out` (`height * width * 3`
    /// bytes of the output). `base` holds the codec, DCT and strictness.
    pub fn render(
        &mut self,
        frame: &mut JpegFrame<'_>,
        geometry: &Geometry,
        base: &DecodeOptions,
        out: &mut [u8],
    ) -> gulp_io::Result<()> {
        let header = *frame.header();
        let (w, h) = (header.width as f64, header.height as f64);
        let [rx, ry, rw, rh] = geometry.rect;
        let (oh, ow) = geometry.out;
        // The crop in stored pixels.
        let (sx, sy, sw, sh) = (rx * w, ry * h, rw * w, rh * h);
        let eighths = dct_eighths(base.codec, (sw, sh), (ow, oh));
        let mut options = DecodeOptions {
            color: ColorMode::Rgb,
            scale: Scale::Eighths(eighths),
            crop: None,
            ..*base
        };
        let (scw, sch) = header.scaled_size(&options);
        // The crop on the scaled frame. libjpeg-turbo scales by exactly
        // n/8 (a side that is not a multiple of 8/n ends in a partial
        // pixel, rounded up), so the factor is n/8, not the ratio of the
        // sides. The crop is kept inside the scaled frame: one that ends on
        // the last column or row ends there exactly, not a rounding step
        // past it.
        let k = f64::from(eighths) / 8.0;
        let (qx, qw) = inside(sx * k, sw * k, scw);
        let (qy, qh) = inside(sy * k, sh * k, sch);
        let out = &mut out[..oh * ow * 3];
        let exact =
            [qx, qy, qw, qh].into_iter().all(integral) && to_usize(qw) == ow && to_usize(qh) == oh;
        if exact {
            // The scaled crop is the output: decoded straight into it.
            options.crop = Some(Crop {
                x: to_usize(qx),
                y: to_usize(qy),
                width: ow,
                height: oh,
            })
            .filter(|c| (c.x, c.y, c.width, c.height) != (0, 0, scw, sch));
            frame.decode_into(&options, out)?;
        } else {
            self.render_resampled(frame, options, [qx, qy, qw, qh], (scw, sch), (ow, oh), out)?;
        }
        if geometry.flip {
            mirror(out, ow);
        }
        Ok(())
    }

    /// Decodes the crop `[qx, qy, qw, qh]` of the frame scaled to `(scw,
    /// sch)` with a margin for the filter's support, then resamples the
    /// exact (fractional) crop to the output size `(ow, oh)`.
    fn render_resampled(
        &mut self,
        frame: &mut JpegFrame<'_>,
        mut options: DecodeOptions,
        [qx, qy, qw, qh]: [f64; 4],
        (scw, sch): (usize, usize),
        (ow, oh): (usize, usize),
        out: &mut [u8],
    ) -> gulp_io::Result<()> {
        let margin = (qw / ow as f64).max(qh / oh as f64).ceil() + 1.0;
        // From the iMCU column the region decode starts at anyway:
        // decoded straight into the region buffer, not via a copy.
        let x0 = frame.region_start(&options, to_usize((qx - margin).floor().max(0.0)));
        let y0 = to_usize((qy - margin).floor().max(0.0));
        let x1 = to_usize((qx + qw + margin).ceil()).min(scw);
        let y1 = to_usize((qy + qh + margin).ceil()).min(sch);
        let region = Crop {
            x: x0,
            y: y0,
            width: x1 - x0,
            height: y1 - y0,
        };
        options.crop = Some(region).filter(|c| (c.x, c.y, c.width, c.height) != (0, 0, scw, sch));
        let len = region.width * region.height * 3;
        if self.region.len() < len {
            self.region.resize(len, 0);
        }
        frame.decode_into(&options, &mut self.region[..len])?;
        // The same crop relative to the region (which contains it).
        let (cx, cw) = inside(qx - x0 as f64, qw, region.width);
        let (cy, ch) = inside(qy - y0 as f64, qh, region.height);
        resample(
            &mut self.resizer,
            &self.region[..len],
            (region.width, region.height),
            (cx, cy, cw, ch),
            (ow, oh),
            out,
        )
        .map_err(|reason| {
            gulp_io::Error::from(gulp_io::ErrorKind::Decode {
                at: String::new(),
                reason,
            })
        })
    }
}

/// The least DCT scale n/8 with the output's resolution `(ow, oh)` over the
/// crop `(sw, sh)` (in stored pixels), of 1, 2, 3, 4 and 8 eighths:
/// libjpeg-turbo's inverse DCTs for 5/8, 6/8 and 7/8 are plain C and slower
/// than its SIMD 8/8 (RandomResizedCrop 224 of 500-px photographs: 1,947
/// images/s on one thread with these five, 1,665 with all eight). zune-jpeg
/// decodes at full size only.
fn dct_eighths(codec: Codec, (sw, sh): (f64, f64), (ow, oh): (usize, usize)) -> u8 {
    match codec {
        Codec::LibjpegTurbo => {
            let need = 8.0 * (ow as f64 / sw).max(oh as f64 / sh);
            FAST_EIGHTHS
                .into_iter()
                .find(|&n| f64::from(n) >= need - 1e-9)
                .unwrap_or(8)
        }
        Codec::Zune => 8,
    }
}

fn resample(
    resizer: &mut Resizer,
    src: &[u8],
    (sw, sh): (usize, usize),
    (cx, cy, cw, ch): (f64, f64, f64, f64),
    (ow, oh): (usize, usize),
    out: &mut [u8],
) -> std::result::Result<(), String> {
    let dim = |v: usize| u32::try_from(v).map_err(|_| format!("image side {v} too large"));
    let src = ImageRef::new(dim(sw)?, dim(sh)?, src, PixelType::U8x3).map_err(|e| e.to_string())?;
    let mut dst = FirImage::from_slice_u8(dim(ow)?, dim(oh)?, out, PixelType::U8x3)
        .map_err(|e| e.to_string())?;
    let options = ResizeOptions::new()
        .resize_alg(ResizeAlg::Convolution(FilterType::Bilinear))
        .crop(cx, cy, cw, ch);
    resizer
        .resize(&src, &mut dst, &options)
        .map_err(|e| format!("resampling to {ow}x{oh}: {e}"))
}

/// The DCT scales (in eighths) the loader decodes at: those with a fast
/// inverse DCT in libjpeg-turbo (SIMD at 1/4, 1/2 and 8/8, trivial at 1/8;
/// 3/8's C code measured as fast as 1/2 on 640x480 frames).
const FAST_EIGHTHS: [u8; 5] = [1, 2, 3, 4, 8];

/// Mirrors each row of an RGB image `width` pixels wide: pixels swapped
/// from both ends in 3-byte copies.
fn mirror(pixels: &mut [u8], width: usize) {
    for row in pixels.chunks_exact_mut(width * 3) {
        let (left, right) = row.split_at_mut(width / 2 * 3);
        let right = &mut right[(width % 2) * 3..];
        for (a, b) in left
            .chunks_exact_mut(3)
            .zip(right.chunks_exact_mut(3).rev())
        {
            let t = [a[0], a[1], a[2]];
            a.copy_from_slice(b);
            b.copy_from_slice(&t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_edge_resize_keeps_the_aspect() {
        assert_eq!(short_edge_rounded(1280, 720, 128), (228, 128));
        assert_eq!(short_edge_rounded(240, 320, 128), (128, 171));
        assert_eq!(short_edge_rounded(100, 100, 64), (64, 64));
    }

    #[test]
    fn centre_and_three_crops_are_where_they_should_be() {
        let s = Spatial {
            resize: Some(128),
            size: Some((112, 112)),
            crop: CropMode::Center,
            flip: true,
        };
        let g = s.draw(1280, 720, None, 0).expect("fits");
        assert_eq!(g.out, (112, 112));
        assert!(!g.flip);
        let [x, y, w, h] = g.rect;
        assert!((x * 228.0 - 58.0).abs() < 1e-9 && (y * 128.0 - 8.0).abs() < 1e-9);
        assert!((w * 228.0 - 112.0).abs() < 1e-9 && (h * 128.0 - 112.0).abs() < 1e-9);
        let three = Spatial {
            crop: CropMode::Three,
            ..s
        };
        let xs: Vec<f64> = (0..3)
            .map(|v| three.draw(1280, 720, None, v).expect("fits").rect[0] * 228.0)
            .collect();
        assert!((xs[0] - 0.0).abs() < 1e-9 && (xs[1] - 58.0).abs() < 1e-9);
        assert!((xs[2] - 116.0).abs() < 1e-9);
    }

    #[test]
    fn random_crops_stay_inside_and_flip_half_the_time() {
        let s = Spatial {
            resize: None,
            size: Some((50, 60)),
            crop: CropMode::Random,
            flip: true,
        };
        let mut rng = Rng::new(&[9]);
        let mut flips = 0;
        for _ in 0..400 {
            let g = s.draw(100, 80, Some(&mut rng), 0).expect("fits");
            let [x, y, w, h] = g.rect;
            assert!(x >= 0.0 && y >= 0.0 && x + w <= 1.0 + 1e-12 && y + h <= 1.0 + 1e-12);
            assert!(integral(x * 100.0) && integral(y * 80.0));
            flips += usize::from(g.flip);
        }
        assert!((150..250).contains(&flips), "{flips}");
        let big = Spatial {
            size: Some((90, 90)),
            ..s
        };
        let err = big.draw(100, 80, None, 0).expect_err("too big");
        assert!(err.contains("90x90") && err.contains("100x80"), "{err}");
    }

    #[test]
    fn random_resized_crops_follow_torchvision_bounds() {
        let s = Spatial {
            resize: None,
            size: Some((32, 32)),
            crop: "random_resized".parse::<CropMode>().expect("mode"),
            flip: false,
        };
        let mut rng = Rng::new(&[11]);
        for _ in 0..500 {
            let g = s.draw(200, 100, Some(&mut rng), 0).expect("draw");
            let [x, y, w, h] = g.rect;
            let area = w * h;
            assert!(area > 0.0 && area <= 1.0 + 1e-9);
            assert!(x + w <= 1.0 + 1e-9 && y + h <= 1.0 + 1e-9);
            let ratio = (w * 200.0) / (h * 100.0);
            assert!(
                (0.7..1.4).contains(&ratio) || area > 0.99 || ratio > 1.3,
                "{ratio}"
            );
        }
    }

    #[test]
    fn mirror_reverses_pixels() {
        let mut px = vec![
            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
        ];
        mirror(&mut px, 3);
        assert_eq!(
            px,
            [
                7, 8, 9, 4, 5, 6, 1, 2, 3, 16, 17, 18, 13, 14, 15, 10, 11, 12
            ]
        );
    }

    #[test]
    fn mirror_matches_a_reversal_of_the_pixels_at_every_width() {
        for width in 1..=9 {
            let rows = 3;
            let px: Vec<u8> = (0..=u8::MAX).cycle().take(width * rows * 3).collect();
            let mut got = px.clone();
            mirror(&mut got, width);
            let want: Vec<u8> = px
                .chunks_exact(width * 3)
                .flat_map(|row| row.chunks_exact(3).rev().flatten().copied())
                .collect();
            assert_eq!(got, want, "width {width}");
        }
    }
}
