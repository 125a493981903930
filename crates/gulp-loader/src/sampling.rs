//! Which frames of an item make a clip.
//!
//! Every mode returns exactly `frames` indices into an item of `n` frames
//! (`n >= 1`), in increasing order. When training, the clip's position is
//! drawn at random; otherwise clip `k` of `clips` is placed deterministically
//! (evenly over the item, the centre for one clip).

use crate::rng::Rng;

/// How a clip's frames are chosen from an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampling {
    /// GulpIO's window: `frames` consecutive frames `step` apart. Training:
    /// at a random offset; evaluation: centred (clip `k` of `K` at offset
    /// `round(k * (n - span) / (K - 1))`). An item shorter than the window
    /// repeats its last frame (GulpIO v1 pads with the last frame too, but
    /// to the wrong length when `step > 1`).
    Window,
    /// TSN's segments: the item is cut into `frames` equal segments and one
    /// frame is taken from each. Training: at a random place in the
    /// segment; evaluation: its centre (clip `k` of `K` at `(k + 0.5) / K`
    /// of it). Segment `i` covers `[i * n / T, (i + 1) * n / T)`, so an item
    /// shorter than the clip repeats frames evenly.
    Segments,
    /// `frames` evenly spaced frames from the first to the last:
    /// `round(i * (n - 1) / (T - 1))`, the same when training. Clip `k` of
    /// `K > 1` takes the frames at `(i + (k + 0.5) / K) * n / T`.
    Uniform,
    /// A dense window (SlowFast, X3D): `frames` frames `step` apart at a
    /// random offset (evaluation: `K` windows evenly spaced from the first
    /// to the last frame). An item shorter than the window gets the largest
    /// step that fits it, and repeats its last frame only if even step 1
    /// does not fit.
    Dense,
    /// Frame `k` of every item (its last frame if the item is shorter),
    /// repeated `frames` times: one chosen frame per item, as the image
    /// loader takes from a video directory.
    Frame(usize),
}

impl Sampling {
    /// Parses `window`, `segments`, `uniform`, `dense` or `frame:K`.
    pub fn parse(text: &str) -> Option<Sampling> {
        match text {
            "window" => Some(Sampling::Window),
            "segments" | "tsn" => Some(Sampling::Segments),
            "uniform" => Some(Sampling::Uniform),
            "dense" => Some(Sampling::Dense),
            _ => text
                .strip_prefix("frame:")
                .and_then(|k| k.parse().ok())
                .map(Sampling::Frame),
        }
    }

    /// The name [`parse`](Self::parse) reads.
    pub fn name(&self) -> &'static str {
        match self {
            Sampling::Window => "window",
            Sampling::Segments => "segments",
            Sampling::Uniform => "uniform",
            Sampling::Dense => "dense",
            Sampling::Frame(_) => "frame",
        }
    }
}

/// Where a clip is taken: at random (training) or as clip `index` of
/// `count` placed evenly (evaluation).
#[derive(Debug)]
pub enum Placement<'a> {
    /// Training: draws from this generator.
    Random(&'a mut Rng),
    /// Evaluation: clip `index` of `count` (`index < count`).
    Fixed {
        /// Which clip.
        index: usize,
        /// How many clips are taken from the item.
        count: usize,
    },
}

/// The frame indices of one clip of `frames` frames (`frames >= 1`, `step
/// >= 1`) from an item of `n >= 1` frames.
pub fn clip_indices(
    sampling: Sampling,
    frames: usize,
    step: usize,
    n: usize,
    placement: Placement<'_>,
) -> Vec<usize> {
    let (t, step, n) = (frames.max(1), step.max(1), n.max(1));
    match sampling {
        Sampling::Window => {
            let span = (t - 1) * step + 1;
            let start = start_of(span, n, placement);
            (0..t).map(|i| (start + i * step).min(n - 1)).collect()
        }
        Sampling::Dense => {
            // The largest step <= `step` whose window fits the item.
            let step = if t > 1 && (t - 1) * step + 1 > n {
                ((n - 1) / (t - 1)).max(1)
            } else {
                step
            };
            let span = (t - 1) * step + 1;
            let start = match placement {
                Placement::Fixed { index, count } if count > 1 => spread(index, count, n, span),
                other => start_of(span, n, other),
            };
            (0..t).map(|i| (start + i * step).min(n - 1)).collect()
        }
        Sampling::Segments => {
            // Frames of segment i: i*n/T ..= ceil((i+1)*n/T) - 1 (at least one).
            let bounds = |i: usize| {
                let lo = i * n / t;
                (lo, ((i + 1) * n).div_ceil(t).max(lo + 1) - 1)
            };
            let seg = |i: usize, frac: f64| -> usize {
                #[allow(clippy::cast_precision_loss)]
                let pos = (i as f64 + frac) * n as f64 / t as f64;
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let idx = pos.floor() as usize;
                let (lo, hi) = bounds(i);
                idx.clamp(lo, hi).min(n - 1)
            };
            match placement {
                Placement::Random(rng) => (0..t)
                    .map(|i| {
                        let (lo, hi) = bounds(i);
                        rng.range(lo, hi.min(n - 1))
                    })
                    .collect(),
                Placement::Fixed { index, count } => {
                    #[allow(clippy::cast_precision_loss)]
                    let frac = (index as f64 + 0.5) / count.max(1) as f64;
                    (0..t).map(|i| seg(i, frac)).collect()
                }
            }
        }
        Sampling::Frame(k) => vec![k.min(n - 1); t],
        Sampling::Uniform => match placement {
            Placement::Fixed { index, count } if count > 1 => {
                #[allow(clippy::cast_precision_loss)]
                let frac = (index as f64 + 0.5) / count as f64;
                (0..t)
                    .map(|i| {
                        #[allow(clippy::cast_precision_loss)]
                        let pos = (i as f64 + frac) * n as f64 / t as f64;
                        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                        let idx = pos.floor() as usize;
                        idx.min(n - 1)
                    })
                    .collect()
            }
            _ if t == 1 => vec![(n - 1) / 2],
            // round(i * (n - 1) / (T - 1)) in integers: half rounds up.
            _ => (0..t)
                .map(|i| (2 * i * (n - 1) + (t - 1)) / (2 * (t - 1)))
                .collect(),
        },
    }
}

/// The first frame of a window of `span` frames: random, centred, or clip
/// `k` of `K` evenly spaced.
fn start_of(span: usize, n: usize, placement: Placement<'_>) -> usize {
    if span >= n {
        return 0;
    }
    match placement {
        Placement::Random(rng) => rng.range(0, n - span),
        Placement::Fixed { index, count } if count > 1 => spread(index, count, n, span),
        Placement::Fixed { .. } => (n - span) / 2,
    }
}

/// Start of window `k` of `K > 1` spread from the first to the last frame:
/// `round(k * (n - span) / (K - 1))`.
fn spread(k: usize, count: usize, n: usize, span: usize) -> usize {
    let room = n.saturating_sub(span);
    (2 * k.min(count - 1) * room + (count - 1)) / (2 * (count - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use proptest::prelude::*;

    fn fixed(s: Sampling, t: usize, step: usize, n: usize) -> Vec<usize> {
        clip_indices(s, t, step, n, Placement::Fixed { index: 0, count: 1 })
    }

    #[test]
    fn frame_k_is_one_frame_of_every_item() {
        assert_eq!(Sampling::parse("frame:3"), Some(Sampling::Frame(3)));
        assert_eq!(Sampling::parse("frame:x"), None);
        assert_eq!(fixed(Sampling::Frame(3), 1, 1, 10), [3]);
        assert_eq!(fixed(Sampling::Frame(3), 2, 1, 2), [1, 1]); // the last of a short item
        let mut rng = Rng::new(&[1]);
        let drawn = clip_indices(Sampling::Frame(0), 1, 1, 10, Placement::Random(&mut rng));
        assert_eq!(drawn, [0]);
    }

    #[test]
    fn window_is_centred_in_evaluation_and_pads_with_the_last_frame() {
        assert_eq!(fixed(Sampling::Window, 4, 1, 10), [3, 4, 5, 6]);
        assert_eq!(fixed(Sampling::Window, 4, 2, 10), [1, 3, 5, 7]);
        // Shorter than the window: from 0, the last frame repeated, exactly
        // T frames whatever the step.
        assert_eq!(fixed(Sampling::Window, 5, 2, 6), [0, 2, 4, 5, 5]);
        assert_eq!(fixed(Sampling::Window, 4, 1, 1), [0, 0, 0, 0]);
        let spread: Vec<Vec<usize>> = (0..3)
            .map(|k| {
                clip_indices(
                    Sampling::Window,
                    2,
                    1,
                    10,
                    Placement::Fixed { index: k, count: 3 },
                )
            })
            .collect();
        assert_eq!(spread, [vec![0, 1], vec![4, 5], vec![8, 9]]);
    }

    #[test]
    fn segments_take_segment_centres_in_evaluation() {
        // n = 16, T = 4: segments of 4 frames, centres at 2, 6, 10, 14.
        assert_eq!(fixed(Sampling::Segments, 4, 1, 16), [2, 6, 10, 14]);
        // n = 10, T = 4: segments [0, 2.5), [2.5, 5), ...: floor of centres.
        assert_eq!(fixed(Sampling::Segments, 4, 1, 10), [1, 3, 6, 8]);
        // Shorter than the clip: frames repeat evenly.
        assert_eq!(fixed(Sampling::Segments, 8, 1, 3), [0, 0, 0, 1, 1, 2, 2, 2]);
        let two: Vec<Vec<usize>> = (0..2)
            .map(|k| {
                clip_indices(
                    Sampling::Segments,
                    2,
                    1,
                    8,
                    Placement::Fixed { index: k, count: 2 },
                )
            })
            .collect();
        assert_eq!(two, [vec![1, 5], vec![3, 7]]);
    }

    #[test]
    fn uniform_spans_first_to_last() {
        assert_eq!(fixed(Sampling::Uniform, 4, 1, 10), [0, 3, 6, 9]);
        assert_eq!(fixed(Sampling::Uniform, 5, 1, 9), [0, 2, 4, 6, 8]);
        assert_eq!(fixed(Sampling::Uniform, 1, 1, 9), [4]);
        assert_eq!(fixed(Sampling::Uniform, 4, 1, 2), [0, 0, 1, 1]);
        let mut rng = Rng::new(&[1]);
        assert_eq!(
            clip_indices(Sampling::Uniform, 4, 1, 10, Placement::Random(&mut rng)),
            [0, 3, 6, 9]
        );
    }

    #[test]
    fn dense_shrinks_its_step_to_fit() {
        assert_eq!(fixed(Sampling::Dense, 4, 2, 20), [6, 8, 10, 12]);
        // 4 frames at step 4 need 13 frames; 7 frames fit step 2.
        assert_eq!(fixed(Sampling::Dense, 4, 4, 7), [0, 2, 4, 6]);
        assert_eq!(fixed(Sampling::Dense, 4, 4, 3), [0, 1, 2, 2]);
        let ends: Vec<Vec<usize>> = (0..2)
            .map(|k| {
                clip_indices(
                    Sampling::Dense,
                    2,
                    3,
                    10,
                    Placement::Fixed { index: k, count: 2 },
                )
            })
            .collect();
        assert_eq!(ends, [vec![0, 3], vec![6, 9]]);
    }

    proptest! {
        #[test]
        fn random_clips_are_valid(
            mode in 0usize..4, t in 1usize..12, step in 1usize..5, n in 1usize..80, seed: u64,
        ) {
            let s = [Sampling::Window, Sampling::Segments, Sampling::Uniform, Sampling::Dense][mode];
            let mut rng = Rng::new(&[seed]);
            let idx = clip_indices(s, t, step, n, Placement::Random(&mut rng));
            prop_assert_eq!(idx.len(), t);
            prop_assert!(idx.iter().all(|&i| i < n));
            prop_assert!(idx.windows(2).all(|w| w[0] <= w[1]));
            match s {
                Sampling::Window if (t - 1) * step < n => {
                    prop_assert!(idx.windows(2).all(|w| w[1] - w[0] == step));
                }
                Sampling::Segments => {
                    for (i, &f) in idx.iter().enumerate() {
                        // Frame f overlaps segment i: [i*n/T, (i+1)*n/T).
                        prop_assert!(f >= i * n / t);
                        prop_assert!(f < ((i + 1) * n).div_ceil(t).max(i * n / t + 1));
                    }
                }
                _ => {}
            }
            for count in 1..4 {
                for index in 0..count {
                    let idx = clip_indices(s, t, step, n, Placement::Fixed { index, count });
                    prop_assert_eq!(idx.len(), t);
                    prop_assert!(idx.iter().all(|&i| i < n));
                }
            }
        }
    }

    #[test]
    fn random_segments_cover_each_segment() {
        // n = 16, T = 4: frame i of the clip is uniform over 4i..4i+3.
        let mut seen = [[false; 4]; 4];
        let mut rng = Rng::new(&[5]);
        for _ in 0..200 {
            let idx = clip_indices(Sampling::Segments, 4, 1, 16, Placement::Random(&mut rng));
            for (i, f) in idx.into_iter().enumerate() {
                assert_eq!(f / 4, i);
                seen[i][f % 4] = true;
            }
        }
        assert!(seen.iter().flatten().all(|&s| s));
        // And the window's offset takes every value.
        let mut starts = [false; 7];
        for _ in 0..200 {
            let idx = clip_indices(Sampling::Window, 4, 1, 10, Placement::Random(&mut rng));
            starts[idx[0]] = true;
        }
        assert!(starts.iter().all(|&s| s));
    }
}
