//! Pillow's resampling, pixel for pixel: what `Image.resize` computes in
//! Pillow 13.0 (`src/libImaging/Resample.c`, and `Geometry.c` for nearest
//! neighbour), for images of any number of channels.
//!
//! Each axis is a convolution: output pixel `i` is centred at `(i + 0.5) *
//! in / out` of the input and weighs the input pixels under the filter's
//! kernel, widened by the shrink factor when shrinking (antialiasing), with
//! weights that sum to 1. For `u8` samples the weights are rounded to 22-bit
//! fixed point and each pass rounds and clips its output to `u8`, as
//! Pillow's 8-bit images do, so the order of the two passes matters: it is
//! Pillow 13.0's, the horizontal pass first unless the height shrinks by
//! more than twice as many pixels as the width does. (Pillow 12 and earlier
//! order the passes otherwise, so their pixels can be a level apart where
//! the order differs.) For `f64` samples the same weights are kept in
//! floating point and nothing is rounded (Pillow's `F` images, without
//! their `f32` storage). Nearest neighbour copies the pixels at Pillow's
//! positions ([`nearest_indices`]).
//!
//! Channels are resampled each on its own, as the bands of Pillow's `L` and
//! `RGB` images; Pillow premultiplies the alpha of `LA` and `RGBA` images
//! first, which a plain array of channels does not ask for.
//!
//! The weights are computed with the operations of Pillow's C code, in its
//! order, so they are bit for bit Pillow's as long as the C compiler did not
//! fuse multiplications and additions (x86-64 builds do not; a build for a
//! CPU with fused multiply-add by default can round a weight otherwise).

use std::ops::Range;

use crate::error::{Error, Result};

/// A resampling filter, as `PIL.Image.Resampling` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// The nearest input pixel (Pillow's positions, accumulated step by
    /// step from the first pixel's centre).
    Nearest,
    /// A box (pixel-area average): support 1/2.
    Box,
    /// A triangle (linear interpolation): support 1.
    Bilinear,
    /// Keys' cubic convolution with `a = -0.5`: support 2.
    Bicubic,
    /// A sinc windowed by a 3-lobe sinc: support 3.
    Lanczos,
}

impl Filter {
    /// Parses `nearest`, `box`, `bilinear`, `bicubic` or `lanczos`.
    pub fn parse(text: &str) -> Option<Filter> {
        match text {
            "nearest" => Some(Filter::Nearest),
            "box" => Some(Filter::Box),
            "bilinear" => Some(Filter::Bilinear),
            "bicubic" => Some(Filter::Bicubic),
            "lanczos" => Some(Filter::Lanczos),
            _ => None,
        }
    }

    /// The name [`parse`](Self::parse) reads.
    pub fn name(&self) -> &'static str {
        match self {
            Filter::Nearest => "nearest",
            Filter::Box => "box",
            Filter::Bilinear => "bilinear",
            Filter::Bicubic => "bicubic",
            Filter::Lanczos => "lanczos",
        }
    }

    /// The kernel and its support (`None` for nearest neighbour).
    fn kernel(self) -> Option<Kernel> {
        let (f, support): (fn(f64) -> f64, f64) = match self {
            Filter::Nearest => return None,
            Filter::Box => (box_kernel, 0.5),
            Filter::Bilinear => (triangle_kernel, 1.0),
            Filter::Bicubic => (bicubic_kernel, 2.0),
            Filter::Lanczos => (lanczos_kernel, 3.0),
        };
        Some(Kernel { f, support })
    }
}

/// The shape of an image: `height` rows of `width` pixels of `channels`
/// interleaved samples (a C-ordered `H×W×C` array); the decoder's, so a
/// decoded frame's shape is the resampler's input as it is.
pub use gulp_codec::Shape;

/// The samples [`resample`] works on: `u8` (Pillow's 8-bit arithmetic) and
/// `f64` (its floating-point arithmetic, unrounded).
pub trait Sample: sealed::Arithmetic {}

impl Sample for u8 {}
impl Sample for f64 {}

mod sealed {
    /// How a pass sums `sample × weight` over the taps of one output sample.
    pub trait Arithmetic: Copy + Send + Sync + 'static {
        /// A weight (a normalized `f64` weight converted once per axis).
        type Weight: Copy;
        /// A running sum.
        type Acc: Copy;
        fn weight(w: f64) -> Self::Weight;
        fn start() -> Self::Acc;
        fn add(acc: Self::Acc, sample: Self, weight: Self::Weight) -> Self::Acc;
        fn finish(acc: Self::Acc) -> Self;
    }

    /// Pillow's `PRECISION_BITS`: 32 - 8 bits of result - 2 bits of headroom
    /// for kernels with negative lobes.
    const PRECISION_BITS: u32 = 22;

    impl Arithmetic for u8 {
        type Weight = i32;
        type Acc = i32;

        /// `normalize_coeffs_8bpc`: rounded half away from zero.
        #[allow(clippy::cast_possible_truncation)] // |w| < 2, as in Pillow's (int) cast
        fn weight(w: f64) -> i32 {
            let scaled = w * f64::from(1_u32 << PRECISION_BITS);
            if w < 0.0 {
                (-0.5 + scaled) as i32
            } else {
                (0.5 + scaled) as i32
            }
        }

        fn start() -> i32 {
            1 << (PRECISION_BITS - 1)
        }

        // The weights of one output sample sum to 1 and their magnitudes to
        // less than 2, so the sum stays within i32 as it does in Pillow;
        // wrapping rather than checked keeps even a weight of a degenerate
        // kernel from panicking.
        fn add(acc: i32, sample: u8, weight: i32) -> i32 {
            acc.wrapping_add(i32::from(sample).wrapping_mul(weight))
        }

        /// `clip8`: the integer part, clipped to 0..=255.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // clamped
        fn finish(acc: i32) -> u8 {
            (acc >> PRECISION_BITS).clamp(0, 255) as u8
        }
    }

    impl Arithmetic for f64 {
        type Weight = f64;
        type Acc = f64;

        fn weight(w: f64) -> f64 {
            w
        }

        fn start() -> f64 {
            0.0
        }

        fn add(acc: f64, sample: f64, weight: f64) -> f64 {
            acc + sample * weight
        }

        fn finish(acc: f64) -> f64 {
            acc
        }
    }
}

use sealed::Arithmetic;

/// `src`, an image of `shape`, resampled to `height × width` with `filter`
/// as Pillow 13.0's `Image.resize` does: for `u8`, the same pixels.
///
/// An image already `height × width` is returned as a copy, as Pillow does.
///
/// ```
/// use gulp_loader::{Filter, Shape, resample};
///
/// // A 2x4 gray image, shrunk to 1x2 with the box filter: block means.
/// let img: Vec<u8> = vec![10, 20, 30, 40, 50, 60, 70, 80];
/// let shape = Shape { height: 2, width: 4, channels: 1 };
/// let out = resample(&img, shape, 1, 2, Filter::Box)?;
/// assert_eq!(out, [35, 55]);
/// # Ok::<(), gulp_loader::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::Resample`] when `src` does not hold `shape`'s samples, a size is
/// zero, or the output does not fit in memory.
pub fn resample<T: Sample>(
    src: &[T],
    shape: Shape,
    height: usize,
    width: usize,
    filter: Filter,
) -> Result<Vec<T>> {
    let fail = |reason: String| Error::Resample {
        from: (shape.height, shape.width, shape.channels),
        height,
        width,
        reason,
    };
    let Shape {
        height: h,
        width: w,
        channels: c,
    } = shape;
    if h == 0 || w == 0 || c == 0 || height == 0 || width == 0 {
        return Err(fail("sizes must be at least 1".into()));
    }
    let samples = |rows: usize, cols: usize| {
        rows.checked_mul(cols)
            .and_then(|n| n.checked_mul(c))
            .ok_or_else(|| fail("the size overflows".into()))
    };
    let expected = samples(h, w)?;
    if src.len() != expected {
        return Err(fail(format!(
            "{} samples given for the {expected} of the shape",
            src.len()
        )));
    }
    let mut out = buffer(samples(height, width)?).map_err(&fail)?;
    let Some(kernel) = filter.kernel() else {
        nearest(src, shape, height, width, &mut out);
        return Ok(out);
    };
    let coefficients = |needed: bool, from: usize, to: usize| {
        needed
            .then(|| Coefficients::new(from, to, kernel))
            .transpose()
            .map_err(&fail)
    };
    let across = coefficients(width != w, w, width)?;
    let down = coefficients(height != h, h, height)?;
    // Pillow 13.0's order: vertical first when the height loses more than
    // twice the pixels the width loses (`ImagingResampleInner`).
    let (dh, dw) = (h as i128 - height as i128, w as i128 - width as i128);
    let horizontal_first = !(dh > 0 && dh > dw * 2);
    match (across, down) {
        (None, None) => out.extend_from_slice(src),
        (Some(across), None) => horizontal_pass(src, w, c, 0..h, &across, &mut out),
        (None, Some(down)) => vertical_pass(src, w * c, 0, &down, &mut out),
        (Some(across), Some(down)) if horizontal_first => {
            // Only the rows the vertical pass reads.
            let rows = down.input_range();
            let mut tmp = buffer(samples(rows.len(), width)?).map_err(&fail)?;
            horizontal_pass(src, w, c, rows.clone(), &across, &mut tmp);
            vertical_pass(&tmp, width * c, rows.start, &down, &mut out);
        }
        (Some(across), Some(down)) => {
            let mut tmp = buffer(samples(height, w)?).map_err(&fail)?;
            vertical_pass(src, w * c, 0, &down, &mut tmp);
            horizontal_pass(&tmp, w, c, 0..height, &across, &mut out);
        }
    }
    Ok(out)
}

/// The input index of each of `out_size` output pixels under nearest
/// neighbour, as Pillow computes them (`ImagingScaleAffine`): a running sum
/// of `in_size / out_size` from half a step, truncated. Empty when either
/// size is 0.
pub fn nearest_indices(in_size: usize, out_size: usize) -> Vec<usize> {
    if in_size == 0 || out_size == 0 {
        return Vec::new();
    }
    // Pillow's resize box holds the input size as an f32.
    let step = f64::from(in_size as f32) / out_size as f64;
    let mut position = step * 0.5;
    (0..out_size)
        .map(|_| {
            // The running sum stays below `in_size` for any output under
            // 2^26 pixels (its rounding error stays under half a step);
            // `min` only keeps larger ones in bounds.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let index = (position as usize).min(in_size - 1);
            position += step;
            index
        })
        .collect()
}

fn nearest<T: Copy>(src: &[T], shape: Shape, height: usize, width: usize, out: &mut Vec<T>) {
    let c = shape.channels;
    let cols = nearest_indices(shape.width, width);
    for row in nearest_indices(shape.height, height) {
        let line = &src[row * shape.width * c..][..shape.width * c];
        for &col in &cols {
            out.extend_from_slice(&line[col * c..][..c]);
        }
    }
}

/// An empty vector with room for `len` samples, or why there is none.
fn buffer<T>(len: usize) -> std::result::Result<Vec<T>, String> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| format!("{len} samples do not fit in memory"))?;
    Ok(v)
}

/// A filter kernel: `f(x)` is zero outside `-support..support`.
#[derive(Clone, Copy)]
struct Kernel {
    f: fn(f64) -> f64,
    support: f64,
}

fn box_kernel(x: f64) -> f64 {
    if x > -0.5 && x <= 0.5 { 1.0 } else { 0.0 }
}

fn triangle_kernel(x: f64) -> f64 {
    let x = x.abs();
    if x < 1.0 { 1.0 - x } else { 0.0 }
}

fn bicubic_kernel(x: f64) -> f64 {
    const A: f64 = -0.5;
    let x = x.abs();
    if x < 1.0 {
        ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        (((x - 5.0) * x + 8.0) * x - 4.0) * A
    } else {
        0.0
    }
}

fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        return 1.0;
    }
    let x = x * std::f64::consts::PI;
    x.sin() / x
}

fn lanczos_kernel(x: f64) -> f64 {
    if (-3.0..3.0).contains(&x) {
        sinc(x) * sinc(x / 3.0)
    } else {
        0.0
    }
}

/// One axis's weights (`precompute_coeffs`): output pixel `i` reads `count`
/// input pixels from `first` with `weights[i * taps..][..count]`.
struct Coefficients {
    taps: usize,
    bounds: Vec<(usize, usize)>,
    weights: Vec<f64>,
}

impl Coefficients {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // Pillow's (int) casts
    fn new(
        in_size: usize,
        out_size: usize,
        kernel: Kernel,
    ) -> std::result::Result<Coefficients, String> {
        // Pillow's resize box holds the input size as an f32.
        let scale = f64::from(in_size as f32) / out_size as f64;
        let filterscale = if scale < 1.0 { 1.0 } else { scale };
        let support = kernel.support * filterscale;
        let taps = support.ceil() as usize * 2 + 1;
        let inv_filterscale = 1.0 / filterscale;
        let mut bounds = buffer(out_size)?;
        let len = out_size
            .checked_mul(taps)
            .ok_or_else(|| format!("{out_size} x {taps} weights overflow"))?;
        let mut weights = buffer(len)?;
        weights.resize(len, 0.0);
        for (i, k) in weights.chunks_exact_mut(taps).enumerate() {
            let center = (i as f64 + 0.5) * scale;
            // Truncated toward zero, then clamped, as Pillow rounds them.
            let first = (center - support + 0.5).max(0.0) as usize;
            let end = ((center + support + 0.5) as usize).min(in_size);
            // At most 2 * ceil(support) + 1 < taps; `min` only keeps a
            // slice index from panicking.
            let count = end.saturating_sub(first).min(taps);
            let mut total = 0.0;
            for (x, slot) in k[..count].iter_mut().enumerate() {
                let w = (kernel.f)(((x + first) as f64 - center + 0.5) * inv_filterscale);
                *slot = w;
                total += w;
            }
            if total != 0.0 {
                for slot in &mut k[..count] {
                    *slot /= total;
                }
            }
            bounds.push((first, count));
        }
        Ok(Coefficients {
            taps,
            bounds,
            weights,
        })
    }

    /// The input pixels some output pixel reads.
    fn input_range(&self) -> Range<usize> {
        let start = self.bounds.first().map_or(0, |&(first, _)| first);
        let end = self
            .bounds
            .last()
            .map_or(0, |&(first, count)| first + count);
        start..end
    }

    /// Output pixel `i`'s first input pixel and its weights, as `T` needs them.
    fn converted<T: Arithmetic>(&self) -> impl Iterator<Item = (usize, Vec<T::Weight>)> + '_ {
        self.bounds.iter().enumerate().map(|(i, &(first, count))| {
            let k = &self.weights[i * self.taps..][..count];
            (first, k.iter().map(|&w| T::weight(w)).collect())
        })
    }
}

/// The horizontal pass over rows `rows` of `src` (`width` pixels of
/// `channels` samples per row), appended to `out`.
fn horizontal_pass<T: Arithmetic>(
    src: &[T],
    width: usize,
    channels: usize,
    rows: Range<usize>,
    co: &Coefficients,
    out: &mut Vec<T>,
) {
    let pixels: Vec<(usize, Vec<T::Weight>)> = co.converted::<T>().collect();
    let row_len = width * channels;
    for row in rows {
        let line = &src[row * row_len..][..row_len];
        // The usual channel counts get a loop the compiler unrolls.
        match channels {
            1 => horizontal_row::<T, 1>(line, &pixels, out),
            2 => horizontal_row::<T, 2>(line, &pixels, out),
            3 => horizontal_row::<T, 3>(line, &pixels, out),
            4 => horizontal_row::<T, 4>(line, &pixels, out),
            _ => {
                for (first, k) in &pixels {
                    let taps = &line[first * channels..][..k.len() * channels];
                    for c in 0..channels {
                        let acc = taps
                            .iter()
                            .skip(c)
                            .step_by(channels)
                            .zip(k)
                            .fold(T::start(), |acc, (&s, &w)| T::add(acc, s, w));
                        out.push(T::finish(acc));
                    }
                }
            }
        }
    }
}

/// One row of the horizontal pass, for pixels of `C` samples.
fn horizontal_row<T: Arithmetic, const C: usize>(
    line: &[T],
    pixels: &[(usize, Vec<T::Weight>)],
    out: &mut Vec<T>,
) {
    for (first, k) in pixels {
        let mut acc = [T::start(); C];
        for (pixel, &w) in line[first * C..].chunks_exact(C).zip(k) {
            for (a, &s) in acc.iter_mut().zip(pixel) {
                *a = T::add(*a, s, w);
            }
        }
        out.extend(acc.map(T::finish));
    }
}

/// The vertical pass over `src`, rows of `row_len` samples whose first is
/// input row `first_row`, appended to `out`. Each output row sums whole
/// input rows, tap after tap: the same sums as Pillow's, in an order the
/// compiler vectorizes.
fn vertical_pass<T: Arithmetic>(
    src: &[T],
    row_len: usize,
    first_row: usize,
    co: &Coefficients,
    out: &mut Vec<T>,
) {
    let mut acc = vec![T::start(); row_len];
    for (first, k) in co.converted::<T>() {
        acc.fill(T::start());
        for (y, &w) in k.iter().enumerate() {
            let line = &src[(first + y - first_row) * row_len..][..row_len];
            for (a, &s) in acc.iter_mut().zip(line) {
                *a = T::add(*a, s, w);
            }
        }
        out.extend(acc.iter().map(|&a| T::finish(a)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FILTERS: [Filter; 4] = [
        Filter::Box,
        Filter::Bilinear,
        Filter::Bicubic,
        Filter::Lanczos,
    ];

    fn gray(height: usize, width: usize) -> Shape {
        Shape {
            height,
            width,
            channels: 1,
        }
    }

    #[test]
    fn filter_names_round_trip() {
        for f in [Filter::Nearest].iter().chain(&FILTERS) {
            assert_eq!(Filter::parse(f.name()), Some(*f));
        }
        assert_eq!(Filter::parse("cubic"), None);
    }

    #[test]
    fn kernels_are_pillows() {
        assert_eq!(box_kernel(-0.5), 0.0);
        assert_eq!(box_kernel(0.5), 1.0);
        assert_eq!(triangle_kernel(-0.25), 0.75);
        assert_eq!(bicubic_kernel(0.0), 1.0);
        assert_eq!(bicubic_kernel(1.0), 0.0);
        assert_eq!(bicubic_kernel(1.5), -0.0625);
        assert_eq!(lanczos_kernel(0.0), 1.0);
        assert_eq!(lanczos_kernel(3.0), 0.0);
        assert!(lanczos_kernel(-3.0).abs() < 1e-15); // inside Pillow's [-3, 3)
        assert!(lanczos_kernel(1.5) < 0.0);
    }

    #[test]
    fn weights_are_rounded_half_away_from_zero() {
        assert_eq!(<u8 as Arithmetic>::weight(1.0), 1 << 22);
        assert_eq!(<u8 as Arithmetic>::weight(0.5 / f64::from(1 << 22)), 1);
        assert_eq!(<u8 as Arithmetic>::weight(-0.5 / f64::from(1 << 22)), -1);
        assert_eq!(<u8 as Arithmetic>::weight(-0.25), -(1 << 20));
        assert_eq!(<u8 as Arithmetic>::finish(-5), 0);
        assert_eq!(<u8 as Arithmetic>::finish(300 << 22), 255);
    }

    #[test]
    fn coefficients_widen_with_the_shrink_factor() {
        // 4 -> 2 bilinear: support 2, centres at 1 and 3. Output pixel 0
        // weighs input pixels 0, 1, 2 (centres 0.5, 1.5, 2.5 away by 0.5,
        // 0.5, 1.5: 0.75, 0.75, 0.25 under the widened triangle); pixel -1
        // would be the fourth, so the three are normalized alone.
        let co = Coefficients::new(4, 2, Filter::Bilinear.kernel().unwrap()).unwrap();
        assert_eq!(co.taps, 5);
        assert_eq!(co.bounds, [(0, 3), (1, 3)]);
        assert_eq!(&co.weights[..3], [3.0 / 7.0, 3.0 / 7.0, 1.0 / 7.0]);
        assert_eq!(&co.weights[5..8], [1.0 / 7.0, 3.0 / 7.0, 3.0 / 7.0]);
        // Enlarging keeps the kernel's own support.
        let co = Coefficients::new(2, 4, Filter::Bilinear.kernel().unwrap()).unwrap();
        assert_eq!(co.taps, 3);
        assert_eq!(co.bounds[0], (0, 1));
        assert_eq!(co.input_range(), 0..2);
    }

    #[test]
    fn linear_enlarging_interpolates() {
        let out = resample(&[0_u8, 100], gray(1, 2), 1, 4, Filter::Bilinear).unwrap();
        assert_eq!(out, [0, 25, 75, 100]);
        let out = resample(&[0.0_f64, 100.0], gray(1, 2), 1, 4, Filter::Bilinear).unwrap();
        assert_eq!(out, [0.0, 25.0, 75.0, 100.0]);
    }

    #[test]
    fn nearest_takes_pillows_positions() {
        assert_eq!(nearest_indices(2, 4), [0, 0, 1, 1]);
        assert_eq!(nearest_indices(4, 2), [1, 3]);
        assert_eq!(nearest_indices(5, 3), [0, 2, 4]);
        assert_eq!(nearest_indices(3, 0), [0_usize; 0]);
        assert_eq!(nearest_indices(0, 3), [0_usize; 0]);
        let checker = [0_u8, 255, 255, 0];
        let out = resample(&checker, gray(2, 2), 4, 4, Filter::Nearest).unwrap();
        assert_eq!(
            out,
            [
                0, 0, 255, 255, 0, 0, 255, 255, 255, 255, 0, 0, 255, 255, 0, 0
            ]
        );
    }

    #[test]
    fn channels_are_resampled_each_on_its_own() {
        // 2 channels (an unrolled loop) and 5 (the general one): each a
        // ramp of its own, checked against the channel resampled alone.
        for channels in [2_usize, 5] {
            let shape = Shape {
                height: 3,
                width: 5,
                channels,
            };
            let img: Vec<u8> = (0..15)
                .flat_map(|i| (0..channels).map(move |c| u8::try_from(i * 10 + c * 20).unwrap()))
                .collect();
            for filter in FILTERS {
                let out = resample(&img, shape, 2, 7, filter).unwrap();
                for c in 0..channels {
                    let alone: Vec<u8> = img.iter().skip(c).step_by(channels).copied().collect();
                    let expected = resample(&alone, gray(3, 5), 2, 7, filter).unwrap();
                    let got: Vec<u8> = out.iter().skip(c).step_by(channels).copied().collect();
                    assert_eq!(got, expected, "{channels} channels, {filter:?}");
                }
            }
        }
    }

    #[test]
    fn pass_order_follows_pillow_13() {
        // 40 rows -> 13 (27 fewer), 20 columns -> 10 (10 fewer): vertical
        // first; 20 -> 5 (15 fewer): horizontal first. The two orders round
        // differently on noise, and each equals its one-axis passes chained.
        let mut state = 7_u32;
        let img: Vec<u8> = (0..800)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (state >> 16).to_le_bytes()[0]
            })
            .collect();
        let f = Filter::Bilinear;
        let v_then_h = {
            let v = resample(&img, gray(40, 20), 13, 20, f).unwrap();
            resample(&v, gray(13, 20), 13, 10, f).unwrap()
        };
        let h_then_v = {
            let h = resample(&img, gray(40, 20), 40, 10, f).unwrap();
            resample(&h, gray(40, 10), 13, 10, f).unwrap()
        };
        assert_ne!(v_then_h, h_then_v);
        assert_eq!(resample(&img, gray(40, 20), 13, 10, f).unwrap(), v_then_h);
        let h_then_v = {
            let h = resample(&img, gray(40, 20), 40, 5, f).unwrap();
            resample(&h, gray(40, 5), 13, 5, f).unwrap()
        };
        assert_eq!(resample(&img, gray(40, 20), 13, 5, f).unwrap(), h_then_v);
    }

    #[test]
    fn bad_shapes_are_errors_that_name_them() {
        let err = resample(&[0_u8; 5], gray(2, 3), 4, 4, Filter::Box).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot resample a 2x3x1 image to 4x4: 5 samples given for the 6 of the shape"
        );
        let err = resample(&[0_u8; 6], gray(2, 3), 0, 4, Filter::Box).unwrap_err();
        assert!(err.to_string().contains("at least 1"), "{err}");
        let zero = Shape {
            height: 2,
            width: 3,
            channels: 0,
        };
        assert!(resample::<u8>(&[], zero, 1, 1, Filter::Nearest).is_err());
        let err = resample(&[0_u8; 6], gray(2, 3), usize::MAX, 2, Filter::Box).unwrap_err();
        assert!(err.to_string().contains("overflows"), "{err}");
        let err = resample(&[0_u8; 6], gray(2, 3), 1 << 31, 1 << 30, Filter::Box).unwrap_err();
        assert!(err.to_string().contains("do not fit in memory"), "{err}");
    }

    /// An image of `shape` with pseudo-random samples.
    fn noise(shape: Shape, seed: u64) -> Vec<u8> {
        let mut rng = crate::rng::Rng::new(&[seed]);
        (0..shape.height * shape.width * shape.channels)
            .map(|_| rng.next_u64().to_le_bytes()[0])
            .collect()
    }

    fn filter_strategy() -> impl Strategy<Value = Filter> {
        prop::sample::select(vec![
            Filter::Nearest,
            Filter::Box,
            Filter::Bilinear,
            Filter::Bicubic,
            Filter::Lanczos,
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn constant_images_stay_constant(
            h in 1usize..300, w in 1usize..300, oh in 1usize..300, ow in 1usize..300,
            channels in prop::sample::select(vec![1usize, 3, 4]),
            value: u8, filter in filter_strategy(),
        ) {
            let shape = Shape { height: h, width: w, channels };
            let img = vec![value; h * w * channels];
            let out = resample(&img, shape, oh, ow, filter).unwrap();
            prop_assert_eq!(out.len(), oh * ow * channels);
            prop_assert!(out.iter().all(|&v| v == value));
            let img = vec![f64::from(value); h * w * channels];
            let out = resample(&img, shape, oh, ow, filter).unwrap();
            prop_assert!(out.iter().all(|&v| (v - f64::from(value)).abs() < 1e-9));
        }

        #[test]
        fn the_same_size_is_the_input(
            h in 1usize..300, w in 1usize..300,
            channels in prop::sample::select(vec![1usize, 3, 4]),
            seed: u64, filter in filter_strategy(),
        ) {
            let shape = Shape { height: h, width: w, channels };
            let img = noise(shape, seed);
            prop_assert_eq!(resample(&img, shape, h, w, filter).unwrap(), img);
        }

        #[test]
        fn box_shrinking_by_whole_blocks_averages_them(
            oh in 1usize..40, ow in 1usize..40, fy in 1usize..8, fx in 1usize..8,
            channels in prop::sample::select(vec![1usize, 3, 4]), seed: u64,
        ) {
            // Each output pixel is the mean of its fy x fx block, rounded
            // half up; the horizontal pass's mean of a row of the block is
            // rounded first, and Pillow's order decides which pass is first.
            let shape = Shape { height: oh * fy, width: ow * fx, channels };
            let img = noise(shape, seed);
            let out = resample(&img, shape, oh, ow, Filter::Box).unwrap();
            let round = |sum: usize, n: usize| u8::try_from((2 * sum + n) / (2 * n)).unwrap();
            let (dh, dw) = ((oh * (fy - 1)) as i128, (ow * (fx - 1)) as i128);
            let horizontal_first = !(dh > 0 && dh > 2 * dw);
            let at = |y: usize, x: usize, c: usize| usize::from(img[(y * shape.width + x) * channels + c]);
            for (i, &got) in out.iter().enumerate() {
                let (y, x, c) = (i / channels / ow, i / channels % ow, i % channels);
                let expected = if horizontal_first {
                    let rows = (0..fy).map(|r| round((0..fx).map(|q| at(y * fy + r, x * fx + q, c)).sum(), fx));
                    round(rows.map(usize::from).sum(), fy)
                } else {
                    let cols = (0..fx).map(|q| round((0..fy).map(|r| at(y * fy + r, x * fx + q, c)).sum(), fy));
                    round(cols.map(usize::from).sum(), fx)
                };
                prop_assert_eq!(got, expected, "pixel {}", i);
            }
            // Without rounding, the mean itself.
            let floats: Vec<f64> = img.iter().map(|&v| f64::from(v)).collect();
            let out = resample(&floats, shape, oh, ow, Filter::Box).unwrap();
            for (i, &got) in out.iter().enumerate() {
                let (y, x, c) = (i / channels / ow, i / channels % ow, i % channels);
                let sum: usize = (0..fy).flat_map(|r| (0..fx).map(move |q| (r, q)))
                    .map(|(r, q)| at(y * fy + r, x * fx + q, c)).sum();
                prop_assert!((got - sum as f64 / (fx * fy) as f64).abs() < 1e-9);
            }
        }

        #[test]
        fn one_axis_then_the_other_is_the_two_axis_resize(
            h in 1usize..300, w in 1usize..300, oh in 1usize..300, ow in 1usize..300,
            channels in prop::sample::select(vec![1usize, 3, 4]), seed: u64,
            filter in filter_strategy(),
        ) {
            // The passes of a two-axis resize are the one-axis resizes, in
            // Pillow's order (the two-axis code reads only the rows it needs).
            let shape = Shape { height: h, width: w, channels };
            let img = noise(shape, seed);
            let out = resample(&img, shape, oh, ow, filter).unwrap();
            let (dh, dw) = (h as i128 - oh as i128, w as i128 - ow as i128);
            let chained = if dh > 0 && dh > 2 * dw {
                let v = resample(&img, shape, oh, w, filter).unwrap();
                resample(&v, Shape { height: oh, ..shape }, oh, ow, filter).unwrap()
            } else {
                let x = resample(&img, shape, h, ow, filter).unwrap();
                resample(&x, Shape { width: ow, ..shape }, oh, ow, filter).unwrap()
            };
            prop_assert_eq!(&out, &chained);
            if filter == Filter::Nearest {
                let rows = nearest_indices(h, oh);
                let cols = nearest_indices(w, ow);
                prop_assert!(rows.windows(2).all(|p| p[0] <= p[1]) && rows.iter().all(|&r| r < h));
                prop_assert!(cols.windows(2).all(|p| p[0] <= p[1]) && cols.iter().all(|&q| q < w));
            }
        }
    }
}
