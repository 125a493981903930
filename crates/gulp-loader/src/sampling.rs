//! Which frames of an item make a clip.
//!
//! Every mode returns exactly `frames` indices into an item of `n` frames
//! (`n >= 1`), in increasing order. When training, the clip's position is
//! drawn at random; otherwise clip `k` of `clips` is placed deterministically
//! (evenly over the item, the centre for one clip).

use crate::error::{Error, Result};
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

impl gulp_format::Choice for Sampling {
    const OPTION: &'static str = "sampling";
    const NAMES: &'static [&'static str] = &["segments", "window", "uniform", "dense", "frame:K"];

    /// `segments` (also `tsn`), `window`, `uniform`, `dense` or `frame:K`.
    fn from_name(text: &str) -> Option<Sampling> {
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

    fn name(&self) -> &'static str {
        match self {
            Sampling::Window => "window",
            Sampling::Segments => "segments",
            Sampling::Uniform => "uniform",
            Sampling::Dense => "dense",
            Sampling::Frame(_) => "frame:K",
        }
    }
}

gulp_format::choice_from_str!(Sampling);

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
            let span = span(t, step);
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

/// GulpIO v1's window over one item (`gulp.dataset.GulpVideoDataset`): the
/// frames a clip reads, `start..stop` by `step`, and how many copies of the
/// last one complete it.
///
/// It is [`Sampling::Window`] but for where it starts and how it pads: the
/// first frame is given (v1 draws it with numpy, among
/// [`starts`](Self::starts); evaluation starts at frame 0, not centred), and
/// an item shorter than the window repeats the last frame *read*, where
/// `Sampling::Window` repeats the item's last frame (not the same frame
/// when `step > 1`).
///
/// ```
/// use gulp_loader::V1Window;
///
/// // 4 frames 2 apart from frame 0 of an item of 5: 0, 2, 4, then 4 again.
/// let w = V1Window::new(Some(4), 2, 5, 0)?;
/// assert_eq!((w.start, w.stop, w.step, w.pad), (0, 5, 2, 1));
/// assert_eq!(w.indices(), [0, 2, 4, 4]);
/// assert_eq!(V1Window::starts(Some(4), 2, 12), 6); // starts 0..=5
/// # Ok::<(), gulp_loader::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V1Window {
    /// The first frame read.
    pub start: usize,
    /// The end of the frames read (exclusive).
    pub stop: usize,
    /// The distance between the frames read.
    pub step: usize,
    /// Copies of the last frame read that follow them.
    pub pad: usize,
}

impl V1Window {
    /// How many first frames a window of `frames` frames `step` apart can
    /// have in an item of `n` frames: `n - span + 1` for a span of
    /// `(frames - 1) * step + 1`, and 1 (frame 0) when the item is no
    /// longer than that or `frames` is `None` (every frame).
    pub fn starts(frames: Option<usize>, step: usize, n: usize) -> usize {
        frames.map_or(1, |t| n.saturating_sub(span(t, step)) + 1)
    }

    /// The window of `frames` frames `step` apart from frame `start` of an
    /// item of `n` frames; `frames = None` reads every `step`-th frame of
    /// the item and pads nothing.
    ///
    /// # Errors
    ///
    /// [`Error::Window`] when `frames` or `step` is 0, `start` is not one of
    /// the window's [`starts`](Self::starts), or the item has no frame to
    /// read.
    pub fn new(frames: Option<usize>, step: usize, n: usize, start: usize) -> Result<V1Window> {
        let fail = |reason: String| Error::Window { start, n, reason };
        if step == 0 || frames == Some(0) {
            return Err(fail("frames and step must be at least 1".into()));
        }
        let starts = V1Window::starts(frames, step, n);
        if start >= starts {
            return Err(fail(format!(
                "the window starts at frame {} at most",
                starts - 1
            )));
        }
        let Some(t) = frames else {
            return Ok(V1Window {
                start,
                stop: n,
                step,
                pad: 0,
            });
        };
        if n == 0 {
            return Err(fail("the item has no frame to read".into()));
        }
        let stop = start.saturating_add(span(t, step)).min(n);
        let read = (stop - start).div_ceil(step);
        Ok(V1Window {
            start,
            stop,
            step,
            pad: t - read,
        })
    }

    /// The clip's frame indices, the padding included.
    pub fn indices(&self) -> Vec<usize> {
        let read: Vec<usize> = (self.start..self.stop).step_by(self.step).collect();
        let last = read.last().copied();
        read.into_iter()
            .chain(
                last.into_iter()
                    .flat_map(|f| std::iter::repeat_n(f, self.pad)),
            )
            .collect()
    }
}

/// The frames a window of `frames` frames `step` apart spans (saturated:
/// no item is that long).
fn span(frames: usize, step: usize) -> usize {
    (frames.max(1) - 1).saturating_mul(step).saturating_add(1)
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
        assert_eq!("frame:3".parse::<Sampling>(), Ok(Sampling::Frame(3)));
        assert!("frame:x".parse::<Sampling>().is_err());
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

    #[test]
    fn v1_window_pads_with_the_last_frame_read() {
        let w = V1Window::new(Some(8), 3, 5, 0).unwrap();
        assert_eq!((w.start, w.stop, w.step, w.pad), (0, 5, 3, 6));
        assert_eq!(w.indices(), [0, 3, 3, 3, 3, 3, 3, 3]);
        // Sampling::Window repeats the item's last frame instead.
        assert_eq!(fixed(Sampling::Window, 8, 3, 5), [0, 3, 4, 4, 4, 4, 4, 4]);
        // Long enough: no padding, anywhere the span fits.
        assert_eq!(V1Window::starts(Some(4), 3, 32), 23);
        let w = V1Window::new(Some(4), 3, 32, 22).unwrap();
        assert_eq!(w.indices(), [22, 25, 28, 31]);
        assert_eq!(V1Window::starts(Some(4), 3, 10), 1);
        assert_eq!(V1Window::starts(Some(4), 3, 3), 1);
        // Every frame: one start, no padding.
        let w = V1Window::new(None, 3, 32, 0).unwrap();
        assert_eq!((w.start, w.stop, w.step, w.pad), (0, 32, 3, 0));
        assert_eq!(w.indices(), (0..32).step_by(3).collect::<Vec<_>>());
        assert_eq!(
            V1Window::new(None, 2, 0, 0).unwrap().indices(),
            [0_usize; 0]
        );
    }

    #[test]
    fn v1_window_errors_name_the_start_and_the_item() {
        let err = V1Window::new(Some(4), 1, 10, 7).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot take a window from frame 7 of an item of 10 frames: \
             the window starts at frame 6 at most"
        );
        assert!(V1Window::new(Some(4), 0, 10, 0).is_err());
        assert!(V1Window::new(Some(0), 1, 10, 0).is_err());
        let err = V1Window::new(Some(4), 1, 0, 0).unwrap_err();
        assert!(
            err.to_string().ends_with("the item has no frame to read"),
            "{err}"
        );
    }

    proptest! {
        #[test]
        fn v1_windows_read_every_step_and_pad_to_the_clip(
            t in 1usize..12, step in 1usize..5, n in 1usize..80, pick: usize,
        ) {
            let starts = V1Window::starts(Some(t), step, n);
            let start = pick % starts;
            let w = V1Window::new(Some(t), step, n, start).unwrap();
            let idx = w.indices();
            prop_assert_eq!(idx.len(), t);
            prop_assert!(idx.iter().all(|&i| i < n));
            let read = &idx[..t - w.pad];
            prop_assert!(read.windows(2).all(|p| p[1] - p[0] == step));
            prop_assert!(idx[t - w.pad..].iter().all(|&i| i == read[read.len() - 1]));
            // The last start puts the window's end on the item's last frame.
            if starts > 1 {
                let last = V1Window::new(Some(t), step, n, starts - 1).unwrap();
                prop_assert_eq!(last.indices()[t - 1], n - 1);
                prop_assert_eq!(last.pad, 0);
            }
        }

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
