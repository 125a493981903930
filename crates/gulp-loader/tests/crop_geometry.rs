//! The renderer's geometry at every frame size, layout, crop mode, scale,
//! position and flip: the region it decodes always contains the crop it
//! resamples, and its output equals decoding the whole frame, resampling
//! the same crop with the same filter and flipping, within the tolerance
//! docs/loader.md states ("Pixels").
//!
//! `PROPTEST_CASES=2000 cargo test --release -p gulp-loader --test
//! crop_geometry` is the longer run; failing cases proptest finds are kept
//! in `proptest-regressions/` and replayed first, and the ones found so far
//! are also named tests below.

use fast_image_resize::images::{Image as FirImage, ImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use gulp_codec::{ColorMode, DecodeOptions, JpegFrame, decode_jpeg_with};
use gulp_loader::{CropMode, Geometry, Renderer, Rng, Spatial, short_edge_rounded};
use jpeg_encoder::{ColorType, Encoder, SamplingFactor};
use proptest::prelude::*;

/// How a test frame is stored.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Layout {
    S444,
    S420,
    Gray,
}

/// A `w`×`h` JPEG (q90) of smooth gradients with hard edges: the
/// kind of content for which "the same image at another scale" has a
/// meaning (pure noise has none once it is scaled).
fn frame(w: usize, h: usize, layout: Layout, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(&[seed]);
    // Periods of 16 pixels or more, as in photographs and video frames:
    // content finer than that is what every scaling filter removes, each
    // in its own way.
    let fx = (0.5 + rng.unit() * 4.0).min(w as f64 / 16.0);
    let fy = (0.5 + rng.unit() * 4.0).min(h as f64 / 16.0);
    let col: Vec<f64> = (0..w)
        .map(|x| (x as f64 / w as f64 * fx * std::f64::consts::TAU).sin() * 60.0)
        .collect();
    let row: Vec<f64> = (0..h)
        .map(|y| (y as f64 / h as f64 * fy * std::f64::consts::TAU).cos() * 50.0)
        .collect();
    // A bright rectangle somewhere: edges the crop may cut through.
    let (bx, by) = (rng.range(0, w - 1), rng.range(0, h - 1));
    let (bw, bh) = (rng.range(1, w - bx), rng.range(1, h - by));
    let channels = if layout == Layout::Gray { 1 } else { 3 };
    let mut pixels = Vec::with_capacity(w * h * channels);
    for (y, r) in row.iter().enumerate() {
        for (x, c) in col.iter().enumerate() {
            let boxed = (bx..bx + bw).contains(&x) && (by..by + bh).contains(&y);
            let base = 128.0 + c + r + if boxed { 40.0 } else { 0.0 };
            for k in 0..channels {
                let v = base + (k as f64 - 1.0) * 20.0;
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                pixels.push(v.clamp(0.0, 255.0) as u8);
            }
        }
    }
    let mut jpeg = Vec::new();
    let mut encoder = Encoder::new(&mut jpeg, 90);
    let color = match layout {
        Layout::S444 => {
            encoder.set_sampling_factor(SamplingFactor::F_1_1);
            ColorType::Rgb
        }
        Layout::S420 => {
            encoder.set_sampling_factor(SamplingFactor::F_2_2);
            ColorType::Rgb
        }
        Layout::Gray => ColorType::Luma,
    };
    let side = |v: usize| u16::try_from(v).expect("test frames are small");
    encoder
        .encode(&pixels, side(w), side(h), color)
        .expect("encode");
    jpeg
}

/// One case: a frame, a spatial transform, and where the crop goes.
#[derive(Debug, Clone)]
struct Case {
    width: usize,
    height: usize,
    layout: Layout,
    resize: Option<usize>,
    crop: CropMode,
    /// Output size as fractions of the resized frame (at least one pixel).
    size: (f64, f64),
    /// Position of a `Random` crop: 0 the first row/column, 1 the last,
    /// else a fraction of the room.
    at: (f64, f64),
    /// Seed of the draws of `RandomResized` and of the frame's content.
    seed: u64,
    /// The view of `Three`.
    view: usize,
    flip: bool,
}

fn scale_side(room: usize, fraction: f64) -> usize {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let v = (room as f64 * fraction).round() as usize;
    v.min(room)
}

impl Case {
    /// The clip's geometry, as the loader draws it (the `Random` position
    /// chosen by the case so that the edges are always among the cases).
    fn geometry(&self) -> Result<Geometry, String> {
        let (rw, rh) = match self.resize {
            Some(edge) => short_edge_rounded(self.width, self.height, edge),
            None => (self.width, self.height),
        };
        let size = (
            scale_side(rh - 1, self.size.0) + 1,
            scale_side(rw - 1, self.size.1) + 1,
        );
        let spatial = Spatial {
            resize: self.resize,
            size: Some(size),
            crop: self.crop,
            flip: self.flip,
        };
        let mut rng = Rng::new(&[self.seed, 1]);
        let mut g = spatial.draw(self.width, self.height, Some(&mut rng), self.view)?;
        g.flip = self.flip;
        if self.crop == CropMode::Random {
            let (oh, ow) = size;
            let x = scale_side(rw - ow, self.at.0) as f64;
            let y = scale_side(rh - oh, self.at.1) as f64;
            g.rect = [
                x / rw as f64,
                y / rh as f64,
                ow as f64 / rw as f64,
                oh as f64 / rh as f64,
            ];
        }
        Ok(g)
    }
}

/// The reference: the whole frame decoded, the crop resampled from it by
/// the same filter, mirrored if flipped.
fn reference(jpeg: &[u8], g: &Geometry, base: &DecodeOptions) -> Vec<u8> {
    let full = decode_jpeg_with(
        jpeg,
        &DecodeOptions {
            color: ColorMode::Rgb,
            ..*base
        },
    )
    .expect("full decode");
    let (w, h) = (full.width as f64, full.height as f64);
    let [rx, ry, rw, rh] = g.rect;
    let (x, y) = (rx * w, ry * h);
    // The crop's far edges, kept on the frame (what the loader must do).
    let (cw, ch) = (((rx + rw) * w).min(w) - x, ((ry + rh) * h).min(h) - y);
    let (oh, ow) = g.out;
    let dim = |v: usize| u32::try_from(v).expect("small");
    let src = ImageRef::new(
        dim(full.width),
        dim(full.height),
        &full.pixels,
        PixelType::U8x3,
    )
    .expect("src");
    let mut dst = FirImage::new(dim(ow), dim(oh), PixelType::U8x3);
    let mut width = cw;
    while x + width > w {
        width = width.next_down();
    }
    let mut height = ch;
    while y + height > h {
        height = height.next_down();
    }
    let options = ResizeOptions::new()
        .resize_alg(ResizeAlg::Convolution(FilterType::Bilinear))
        .crop(x, y, width, height);
    Resizer::new()
        .resize(&src, &mut dst, &options)
        .expect("reference resample");
    let mut out = dst.into_vec();
    if g.flip {
        for row in out.chunks_exact_mut(ow * 3) {
            let pixels: Vec<[u8; 3]> = row
                .chunks_exact(3)
                .rev()
                .map(|p| [p[0], p[1], p[2]])
                .collect();
            row.copy_from_slice(pixels.as_flattened());
        }
    }
    out
}

/// How far the renderer's output is from the reference: the mean and the
/// largest absolute difference of a channel value.
fn distance(a: &[u8], b: &[u8]) -> (f64, u8) {
    assert_eq!(a.len(), b.len());
    let mut sum = 0u64;
    let mut max = 0u8;
    for (x, y) in a.iter().zip(b) {
        let d = x.abs_diff(*y);
        sum += u64::from(d);
        max = max.max(d);
    }
    (sum as f64 / a.len() as f64, max)
}

/// Renders `case` and checks it against the reference. `Err` only for a
/// crop that cannot fit (the loader's error for it, which must name the
/// sizes).
fn check(case: &Case) -> Result<(), TestCaseError> {
    let g = match case.geometry() {
        Ok(g) => g,
        Err(message) => {
            prop_assert!(message.contains("does not fit"), "{message}");
            return Ok(());
        }
    };
    let jpeg = frame(case.width, case.height, case.layout, case.seed);
    let base = DecodeOptions::default();
    let mut decoded = JpegFrame::new(&jpeg, base.codec).expect("header");
    let (oh, ow) = g.out;
    let mut out = vec![0u8; oh * ow * 3];
    let rendered = Renderer::default().render(&mut decoded, &g, &base, &mut out);
    prop_assert!(rendered.is_ok(), "{case:?} {g:?}: {:?}", rendered.err());
    let (mean, max) = distance(&out, &reference(&jpeg, &g, &base));
    // A crop of the output's size on the stored pixel grid is decoded at
    // 8/8 straight into the output: the same pixels as the reference.
    let [rx, ry, rw, rh] = g.rect;
    let (w, h) = (case.width as f64, case.height as f64);
    let on_grid = |v: f64| (v - v.round()).abs() < 1e-6;
    if [rx * w, ry * h, rw * w, rh * h].into_iter().all(on_grid)
        && (rw * w).round() == ow as f64
        && (rh * h).round() == oh as f64
    {
        prop_assert_eq!(max, 0, "{:?} {:?}: an unscaled crop differs", case, g);
    }
    // docs/loader.md, "Pixels": DCT scaling is another low-pass than the
    // resampler's, so the two agree closely on average and within a bound
    // at every value. In a small output (a few pixels, or one row along
    // the frame's edge) the hard edges where the two filters differ most
    // are a large share of the pixels: it is held to the bound only.
    prop_assert!(
        max <= 16 && (mean <= 2.0 || oh.min(ow) < 16),
        "{case:?} {g:?}: mean abs difference {mean:.3}, largest {max}"
    );
    Ok(())
}

fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![Just(Layout::S444), Just(Layout::S420), Just(Layout::Gray)]
}

fn crop_mode() -> impl Strategy<Value = CropMode> {
    prop_oneof![
        Just(CropMode::None),
        Just(CropMode::Center),
        Just(CropMode::Random),
        Just("random_resized".parse::<CropMode>().expect("mode")),
        Just(CropMode::Three),
    ]
}

/// A fraction with the ends (0 and 1) as likely as the inside.
fn edge_biased() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), Just(1.0), 0.0..=1.0]
}

prop_compose! {
    fn case()(
        width in 16usize..=2000,
        height in 16usize..=2000,
        layout in layout(),
        resize in prop_oneof![Just(None), (32usize..=512).prop_map(Some)],
        crop in crop_mode(),
        size in (edge_biased(), edge_biased()),
        at in (edge_biased(), edge_biased()),
        seed in any::<u64>(),
        view in 0usize..3,
        flip in any::<bool>(),
    ) -> Case {
        Case { width, height, layout, resize, crop, size, at, seed, view, flip }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_crop_decodes_and_matches_the_reference(case in case()) {
        check(&case)?;
    }
}

fn run(case: Case) {
    if let Err(e) = check(&case) {
        panic!("{e}");
    }
}

/// The report: frames 500 pixels wide, short edge 256, a 224 crop at the
/// last column. Before the fix, at these heights (among 200 to 400) the
/// crop's right edge landed a rounding step past the scaled frame and the
/// resampler refused it ("Size of the crop box is out of the image
/// boundaries").
#[test]
fn a_random_crop_on_the_last_column_of_a_scaled_frame() {
    for height in [205usize, 207, 218, 224, 240, 375] {
        let (rw, _) = short_edge_rounded(500, height, 256);
        for layout in [Layout::S444, Layout::S420, Layout::Gray] {
            for at in [(1.0, 1.0), (1.0, 0.0), (0.0, 1.0)] {
                run(Case {
                    width: 500,
                    height,
                    layout,
                    resize: Some(256),
                    crop: CropMode::Random,
                    size: (223.0 / 255.0, 223.0 / (rw - 1) as f64),
                    at,
                    seed: 7,
                    view: 0,
                    flip: true,
                });
            }
        }
    }
}

/// Small frames of every size from 1 pixel, crops of their whole size and
/// of one pixel.
#[test]
fn tiny_and_odd_frames() {
    for side in [1usize, 2, 3, 7, 8, 9, 15, 17] {
        for (w, h) in [(side, side), (side, 16), (33, side)] {
            for crop in [CropMode::None, CropMode::Center, CropMode::Random] {
                for size in [(0.0, 0.0), (1.0, 1.0), (0.5, 1.0)] {
                    run(Case {
                        width: w,
                        height: h,
                        layout: Layout::S420,
                        resize: None,
                        crop,
                        size,
                        at: (1.0, 1.0),
                        seed: 3,
                        view: 0,
                        flip: false,
                    });
                }
            }
        }
    }
}
