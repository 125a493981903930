//! What is measured on one decoded frame (luma at the decoding scale):
//! brightness percentiles, contrast, entropy, sharpness, a 32x32 thumbnail
//! and its perceptual hash; and on an item's sound, its level and clipping.

use std::sync::OnceLock;

/// The side of the thumbnail the perceptual hash and the frozen-frame
/// comparison are computed on.
pub(crate) const THUMB: usize = 32;
/// The low frequencies kept by the hash: an 8x8 block of the thumbnail's
/// DCT, one bit each.
const HASH_SIDE: usize = 8;

/// The statistics of one frame's luma.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stats {
    /// 5th percentile of luma (0-255).
    pub p5: f64,
    /// 99th percentile of luma.
    pub p99: f64,
    /// Standard deviation of luma.
    pub std: f64,
    /// Entropy of the 256-bin histogram, in bits.
    pub entropy: f64,
}

/// Measures a `width`x`height` luma image.
pub(crate) fn stats(luma: &[u8]) -> Stats {
    let mut hist = [0u64; 256];
    for &v in luma {
        hist[usize::from(v)] += 1;
    }
    let n = luma.len().max(1) as f64;
    let (mut sum, mut sum2) = (0.0, 0.0);
    for (v, &c) in hist.iter().enumerate() {
        let (v, c) = (v as f64, c as f64);
        sum += v * c;
        sum2 += v * v * c;
    }
    let mean = sum / n;
    let std = (sum2 / n - mean * mean).max(0.0).sqrt();
    let entropy: f64 = hist
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum();
    Stats {
        p5: percentile(&hist, n, 0.05),
        p99: percentile(&hist, n, 0.99),
        std,
        // A one-value histogram sums to -0.0.
        entropy: entropy.max(0.0) + 0.0,
    }
}

/// The least value with at least `q` of the pixels at or below it.
fn percentile(hist: &[u64; 256], n: f64, q: f64) -> f64 {
    let target = q * n;
    let mut seen = 0.0;
    for (v, &c) in hist.iter().enumerate() {
        seen += c as f64;
        if seen >= target {
            return v as f64;
        }
    }
    255.0
}

/// How sharp a frame is, from two measures of its finest detail, both 1
/// or more for a sharp photograph and lower the more it is blurred: the
/// standard deviation of the 4-neighbour Laplacian divided by that of luma
/// (detail for the contrast), and that Laplacian's deviation divided by the
/// one of the image halved (fine detail for coarse detail: a blur removes
/// the first and keeps the second, a smooth but sharp subject lowers
/// both). The score is `ratio * relative^(1/4)`; 0 for a uniform frame.
pub(crate) fn sharpness(luma: &[u8], width: usize, height: usize, std: f64) -> f64 {
    let fine = laplacian_std(luma, width, height);
    let (half, hw, hh) = halve(luma, width, height);
    let coarse = laplacian_std(&half, hw, hh);
    if fine <= 0.0 || coarse <= 0.0 {
        return 0.0;
    }
    (fine / coarse) * (fine / std.max(1.0)).powf(0.25)
}

/// The weight of the edges' steepness in [`blur_score`]: the steepness
/// that scores as [`crate::options::BLURRY`] over it.
const EDGE_WEIGHT: f64 = 0.45;

/// The blurry check's score of a frame, lower the blurrier: the larger of
/// its [`sharpness`] (the whole frame's fine detail) and its sharpest
/// edges' [`edge_steepness`] times [`EDGE_WEIGHT`]. A frame is blurry when
/// both say so: no fine detail over the frame, and no steep edge anywhere.
pub(crate) fn blur_score(luma: &[u8], width: usize, height: usize, std: f64) -> f64 {
    let whole = sharpness(luma, width, height, std);
    match edge_steepness(luma, width, height) {
        Some(steep) => whole.max(steep * EDGE_WEIGHT),
        None => whole,
    }
}

/// Tiles per side of the grid whose edges [`edge_steepness`] judges.
const EDGE_TILES: usize = 3;
/// The span, in pixels, over which an edge's contrast is measured.
const EDGE_SPAN: usize = 4;
/// The least change of luma (0-255) across [`EDGE_SPAN`] pixels that is an
/// edge: above what smooth shading and JPEG noise make.
const EDGE_CONTRAST: u8 = 24;
/// The least number of edge positions a tile is judged on.
const EDGE_LEAST: u32 = 30;
/// The steepness histogram's bins: 0 to 2 in steps of 1/100 (a ramp is
/// 1/[`EDGE_SPAN`], a step edge 1, texture above).
const STEEP_BINS: usize = 200;

/// How steep the sharpest edges of a frame are, where it has edges: at
/// every pixel where luma changes by at least [`EDGE_CONTRAST`] over the
/// next [`EDGE_SPAN`] pixels (across or down), the largest one-pixel step
/// within the span over that change: near 1 where an edge is sharp, lower
/// the wider a blur has spread it. A tile of a 3x3 grid scores the 95th
/// percentile of its edges; the frame, its best tile. So a sharp subject
/// before a defocused background scores as sharp, which the whole frame's
/// Laplacian does not tell; flat areas and JPEG noise have no edges and
/// count for nothing. `None` when no tile has [`EDGE_LEAST`] edges.
pub(crate) fn edge_steepness(luma: &[u8], width: usize, height: usize) -> Option<f64> {
    let mut best: Option<f64> = None;
    for ty in 0..EDGE_TILES {
        for tx in 0..EDGE_TILES {
            let (y0, y1) = (ty * height / EDGE_TILES, (ty + 1) * height / EDGE_TILES);
            let (x0, x1) = (tx * width / EDGE_TILES, (tx + 1) * width / EDGE_TILES);
            let mut hist = [0u32; STEEP_BINS];
            // Across: along rows; down: along columns.
            for y in y0..y1 {
                let row = &luma[y * width + x0..y * width + x1];
                steepness_along(row.len(), |i| row[i], &mut hist);
            }
            for x in x0..x1 {
                steepness_along(y1 - y0, |i| luma[(y0 + i) * width + x], &mut hist);
            }
            if let Some(p95) = hist_percentile(&hist, 0.95, EDGE_LEAST) {
                best = Some(best.map_or(p95, |b: f64| b.max(p95)));
            }
        }
    }
    best
}

/// Adds to `hist` the steepness of each edge along a line of `len` pixels
/// (`at(i)` the luma of pixel `i`).
fn steepness_along(len: usize, at: impl Fn(usize) -> u8, hist: &mut [u32; STEEP_BINS]) {
    if len <= EDGE_SPAN {
        return;
    }
    let step = |i: usize| at(i).abs_diff(at(i + 1));
    for i in 0..len - EDGE_SPAN {
        let change = at(i).abs_diff(at(i + EDGE_SPAN));
        if change < EDGE_CONTRAST {
            continue;
        }
        let steepest = (i..i + EDGE_SPAN).map(step).max().unwrap_or(0);
        let bin = usize::from(steepest) * 100 / usize::from(change);
        hist[bin.min(STEEP_BINS - 1)] += 1;
    }
}

/// The `q` quantile of a histogram of [`STEEP_BINS`] bins of 1/100 (the
/// middle of its bin), if it counts at least `least`.
fn hist_percentile(hist: &[u32; STEEP_BINS], q: f64, least: u32) -> Option<f64> {
    let n: u32 = hist.iter().sum();
    if n < least {
        return None;
    }
    let target = q * f64::from(n);
    let mut seen = 0u32;
    for (b, &c) in hist.iter().enumerate() {
        seen += c;
        if f64::from(seen) >= target {
            return Some((b as f64 + 0.5) / 100.0);
        }
    }
    Some(STEEP_BINS as f64 / 100.0)
}

/// The image at half size, each pixel the mean of 2x2.
fn halve(luma: &[u8], width: usize, height: usize) -> (Vec<u8>, usize, usize) {
    let (hw, hh) = (width / 2, height / 2);
    let mut out = Vec::with_capacity(hw * hh);
    for y in 0..hh {
        let (r0, r1) = (&luma[2 * y * width..], &luma[(2 * y + 1) * width..]);
        for x in 0..hw {
            let sum = u16::from(r0[2 * x])
                + u16::from(r0[2 * x + 1])
                + u16::from(r1[2 * x])
                + u16::from(r1[2 * x + 1]);
            out.push(u8::try_from((sum + 2) / 4).unwrap_or(u8::MAX));
        }
    }
    (out, hw, hh)
}

fn laplacian_std(luma: &[u8], width: usize, height: usize) -> f64 {
    if width < 3 || height < 3 {
        return 0.0;
    }
    let (mut sum, mut sum2, mut n) = (0.0f64, 0.0f64, 0.0f64);
    for y in 1..height - 1 {
        let row = &luma[y * width..(y + 1) * width];
        let up = &luma[(y - 1) * width..y * width];
        let down = &luma[(y + 1) * width..(y + 2) * width];
        for x in 1..width - 1 {
            let l = 4 * i32::from(row[x])
                - i32::from(row[x - 1])
                - i32::from(row[x + 1])
                - i32::from(up[x])
                - i32::from(down[x]);
            let l = f64::from(l);
            sum += l;
            sum2 += l * l;
            n += 1.0;
        }
    }
    let mean = sum / n;
    (sum2 / n - mean * mean).max(0.0).sqrt()
}

/// The `THUMB`x`THUMB` area-averaged thumbnail of a luma image: each output
/// pixel the mean of the source area it covers, partial pixels weighted by
/// their overlap (so that any source size samples the picture evenly).
pub(crate) fn thumbnail(luma: &[u8], width: usize, height: usize) -> [f32; THUMB * THUMB] {
    thumbnail_of(luma, width, (0, 0, width, height))
}

/// The thumbnail of the central part of a luma image, [`CENTRE`] of each
/// side: what is left of a picture cropped by a few percent, so that its
/// hash matches the crop's.
pub(crate) fn centre_thumbnail(luma: &[u8], width: usize, height: usize) -> [f32; THUMB * THUMB] {
    let (cw, ch) = (width * CENTRE.0 / CENTRE.1, height * CENTRE.0 / CENTRE.1);
    if cw == 0 || ch == 0 {
        return thumbnail(luma, width, height);
    }
    thumbnail_of(luma, width, ((width - cw) / 2, (height - ch) / 2, cw, ch))
}

/// The part of each side the centre thumbnail keeps: 7/8 (a crop of 6 %
/// off each edge).
const CENTRE: (usize, usize) = (7, 8);

/// The thumbnail of the `(x, y, width, height)` rectangle of a luma image
/// whose rows are `stride` pixels.
fn thumbnail_of(
    luma: &[u8],
    stride: usize,
    (x0, y0, width, height): (usize, usize, usize, usize),
) -> [f32; THUMB * THUMB] {
    let cols = area_weights(width);
    let rows = area_weights(height);
    // Rows of the source to THUMB columns each, then THUMB rows of those.
    let mut narrow = vec![0f32; height * THUMB];
    for y in 0..height {
        let line = &luma[(y0 + y) * stride + x0..(y0 + y) * stride + x0 + width];
        for (tx, weights) in cols.iter().enumerate() {
            narrow[y * THUMB + tx] = weights.iter().map(|&(x, w)| w * f32::from(line[x])).sum();
        }
    }
    let mut out = [0f32; THUMB * THUMB];
    for (ty, weights) in rows.iter().enumerate() {
        for tx in 0..THUMB {
            out[ty * THUMB + tx] = weights
                .iter()
                .map(|&(y, w)| w * narrow[y * THUMB + tx])
                .sum();
        }
    }
    out
}

/// For each of the THUMB output positions along a side of `len` pixels, the
/// source pixels it covers and their weights (summing to 1).
// Positions are at most `len`, a frame side: no truncation.
#[allow(clippy::cast_possible_truncation)]
fn area_weights(len: usize) -> Vec<Vec<(usize, f32)>> {
    let scale = len as f64 / THUMB as f64;
    (0..THUMB)
        .map(|i| {
            let (start, end) = (i as f64 * scale, (i + 1) as f64 * scale);
            let first = start.floor() as usize;
            let last = (end.ceil() as usize).min(len).max(first + 1);
            (first..last)
                .map(|p| {
                    let overlap = (end.min(p as f64 + 1.0) - start.max(p as f64)).max(0.0);
                    let w = (overlap / scale) as f32;
                    (p, w)
                })
                .collect()
        })
        .collect()
}

/// The mean absolute difference of two thumbnails (luma levels).
pub(crate) fn thumb_diff(a: &[f32; THUMB * THUMB], b: &[f32; THUMB * THUMB]) -> f64 {
    let sum: f32 = a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum();
    f64::from(sum) / (THUMB * THUMB) as f64
}

/// The DCT-II basis rows of the low frequencies: `HASH_SIDE` x `THUMB`.
fn basis() -> &'static [[f32; THUMB]; HASH_SIDE] {
    static BASIS: OnceLock<[[f32; THUMB]; HASH_SIDE]> = OnceLock::new();
    BASIS.get_or_init(|| {
        let mut b = [[0f32; THUMB]; HASH_SIDE];
        for (u, row) in b.iter_mut().enumerate() {
            for (x, v) in row.iter_mut().enumerate() {
                let angle =
                    std::f64::consts::PI * (2 * x + 1) as f64 * u as f64 / (2 * THUMB) as f64;
                // The basis is exact enough in f32, where the products are summed.
                #[allow(clippy::cast_possible_truncation)]
                let c = angle.cos() as f32;
                *v = c;
            }
        }
        b
    })
}

/// The perceptual hash of a thumbnail (pHash): the 8x8 lowest frequencies
/// of its 2-D DCT, one bit each for "above their median". Re-encoding,
/// resizing and brightness changes keep it; a crop of a few percent moves
/// a few bits.
pub(crate) fn phash(thumb: &[f32; THUMB * THUMB]) -> u64 {
    let basis = basis();
    // Rows first: each thumbnail row to its 8 low frequencies.
    let mut rows = [[0f32; HASH_SIDE]; THUMB];
    for (y, out) in rows.iter_mut().enumerate() {
        let line = &thumb[y * THUMB..(y + 1) * THUMB];
        for (v, o) in out.iter_mut().enumerate() {
            *o = line.iter().zip(&basis[v]).map(|(p, c)| p * c).sum();
        }
    }
    let mut coeffs = [0f32; HASH_SIDE * HASH_SIDE];
    for u in 0..HASH_SIDE {
        for v in 0..HASH_SIDE {
            coeffs[u * HASH_SIDE + v] = (0..THUMB).map(|y| basis[u][y] * rows[y][v]).sum();
        }
    }
    let mut sorted = coeffs;
    sorted.sort_unstable_by(f32::total_cmp);
    let median = (sorted[31] + sorted[32]) / 2.0;
    coeffs
        .iter()
        .enumerate()
        .fold(0u64, |h, (i, &c)| if c > median { h | 1 << i } else { h })
}

/// The RMS level of an all-zero (or empty) track, in dBFS, and the least
/// level [`level`] gives.
pub(crate) const SILENCE_DBFS: f64 = -120.0;

/// The level of a track of interleaved signed 16-bit little-endian samples
/// (`docs/format.md` §8.2), every channel alike.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Level {
    /// RMS relative to full scale (32768), in dB: 0 for a full-scale square
    /// wave, -3.01 for a full-scale sine; at least [`SILENCE_DBFS`].
    pub rms_dbfs: f64,
    /// The fraction of samples at full scale (-32768 or 32767); 0 for an
    /// empty track.
    pub full_scale: f64,
}

/// Measures the samples `pcm`.
pub(crate) fn level(pcm: &[u8]) -> Level {
    let mut squares: u128 = 0;
    let mut at_rail: u64 = 0;
    let mut n: u64 = 0;
    for pair in pcm.chunks_exact(2) {
        let v = i16::from_le_bytes([pair[0], pair[1]]);
        squares += u128::from(i32::from(v).unsigned_abs().pow(2));
        at_rail += u64::from(v == i16::MAX || v == i16::MIN);
        n += 1;
    }
    if n == 0 {
        return Level {
            rms_dbfs: SILENCE_DBFS,
            full_scale: 0.0,
        };
    }
    let rms = (squares as f64 / n as f64).sqrt() / 32768.0;
    let rms_dbfs = if rms > 0.0 {
        (20.0 * rms.log10()).max(SILENCE_DBFS)
    } else {
        SILENCE_DBFS
    };
    Level {
        rms_dbfs,
        full_scale: at_rail as f64 / n as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_of_silence_sines_and_clipping() {
        let pcm = |values: &mut dyn Iterator<Item = i16>| -> Vec<u8> {
            values.flat_map(i16::to_le_bytes).collect()
        };
        assert_eq!(level(&[]).rms_dbfs, SILENCE_DBFS);
        let zeros = level(&pcm(&mut std::iter::repeat_n(0, 100)));
        assert_eq!((zeros.rms_dbfs, zeros.full_scale), (SILENCE_DBFS, 0.0));
        // A sine of amplitude a is 20 log10(a / sqrt 2) dBFS.
        let sine = |a: f64| {
            pcm(&mut (0..48_000).map(move |i| {
                let x = a * 32767.0 * (f64::from(i) * std::f64::consts::TAU / 48.0).sin();
                #[allow(clippy::cast_possible_truncation)] // within i16
                let v = x.round() as i16;
                v
            }))
        };
        assert!((level(&sine(1.0)).rms_dbfs + 3.01).abs() < 0.01);
        assert!((level(&sine(0.001)).rms_dbfs + 63.0).abs() < 0.1);
        // A square wave at the rails is 0 dBFS, every sample at full scale.
        let square = level(&pcm(
            &mut (0..100).map(|i| if i % 2 == 0 { i16::MAX } else { i16::MIN })
        ));
        assert!(square.rms_dbfs.abs() < 0.01 && square.full_scale == 1.0);
        let some = level(&pcm(
            &mut (0..100).map(|i| if i < 5 { i16::MIN } else { 100 })
        ));
        assert_eq!(some.full_scale, 0.05);
    }

    /// A picture with a natural-looking spectrum: waves of 1 to 8 cycles
    /// across it, amplitude falling with frequency, in coordinates relative
    /// to the size (so that two sizes are the same picture).
    fn picture(width: usize, height: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(width * height);
        for y in 0..height {
            for x in 0..width {
                let (u, w) = (x as f64 / width as f64, y as f64 / height as f64);
                let mut p = 128.0;
                for k in 1..=12 {
                    let k = f64::from(k);
                    let (fx, fy) = ((k * 1.7) % 8.0, (k * 2.9) % 8.0);
                    p += 60.0 / k.sqrt() * (std::f64::consts::TAU * (fx * u + fy * w) + k).sin();
                }
                #[allow(clippy::cast_possible_truncation)] // clamped to 0-255
                v.push(p.clamp(0.0, 255.0) as u8);
            }
        }
        v
    }

    #[test]
    fn uniform_frame_statistics() {
        let s = stats(&[17; 40 * 30]);
        assert_eq!((s.p5, s.p99, s.std, s.entropy), (17.0, 17.0, 0.0, 0.0));
        assert_eq!(sharpness(&[17; 40 * 30], 40, 30, 0.0), 0.0);
        let p = picture(64, 48);
        let s = stats(&p);
        assert!(s.std > 20.0 && s.entropy > 5.0 && s.p5 < s.p99, "{s:?}");
    }

    /// Vertical stripes 16 pixels wide, 40 and 200, their edges ramps of
    /// `ramp` pixels (1: a step), in the columns `from..` only (flat 40
    /// before).
    fn stripes(width: usize, height: usize, ramp: usize, from: usize) -> Vec<u8> {
        let level = |x: usize| -> f64 {
            if x < from {
                return 40.0;
            }
            let phase = (x - from) % 32;
            let rise = |p: usize| ((p + 1) as f64 / ramp as f64).min(1.0);
            if phase < 16 {
                40.0 + 160.0 * rise(phase)
            } else {
                200.0 - 160.0 * rise(phase - 16)
            }
        };
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // 40-200
        (0..height)
            .flat_map(|_| (0..width).map(move |x| level(x) as u8))
            .collect()
    }

    #[test]
    fn steep_edges_anywhere_make_a_frame_sharp() {
        let (w, h) = (96, 96);
        let sharp = edge_steepness(&stripes(w, h, 1, 0), w, h).unwrap();
        let blurred = edge_steepness(&stripes(w, h, 8, 0), w, h).unwrap();
        assert!(sharp > 0.9, "{sharp}");
        assert!(blurred < 0.6, "{blurred}");
        // Sharp stripes in the right third only (one column of tiles):
        // the frame's best tile decides.
        let part = edge_steepness(&stripes(w, h, 1, 2 * w / 3), w, h).unwrap();
        assert!(part > 0.9, "{part}");
        assert_eq!(edge_steepness(&[90; 96 * 96], w, h), None);
        let std = |v: &[u8]| stats(v).std;
        let (a, b) = (stripes(w, h, 1, 0), stripes(w, h, 8, 0));
        assert!(blur_score(&a, w, h, std(&a)) > blur_score(&b, w, h, std(&b)));
    }

    #[test]
    fn hash_survives_resizing_and_brightness_but_not_another_picture() {
        let a = phash(&thumbnail(&picture(64, 48), 64, 48));
        let b = phash(&thumbnail(&picture(40, 30), 40, 30));
        let brighter: Vec<u8> = picture(64, 48)
            .iter()
            .map(|&v| v.saturating_add(20))
            .collect();
        let c = phash(&thumbnail(&brighter, 64, 48));
        assert!((a ^ b).count_ones() <= 4, "{}", (a ^ b).count_ones());
        assert!((a ^ c).count_ones() <= 4, "{}", (a ^ c).count_ones());
        let mut flipped = picture(64, 48);
        flipped.reverse();
        let d = phash(&thumbnail(&flipped, 64, 48));
        assert!((a ^ d).count_ones() > 16, "{}", (a ^ d).count_ones());
    }

    #[test]
    fn thumbnail_of_a_small_image_repeats_pixels() {
        let t = thumbnail(&[0, 255, 0, 255], 2, 2);
        assert!(
            area_weights(50)
                .iter()
                .all(|w| (w.iter().map(|p| p.1).sum::<f32>() - 1.0).abs() < 1e-5)
        );
        assert_eq!(
            (t[0], t[THUMB - 1], t[THUMB * THUMB - 1]),
            (0.0, 255.0, 255.0)
        );
        assert_eq!(thumb_diff(&t, &t), 0.0);
    }
}
