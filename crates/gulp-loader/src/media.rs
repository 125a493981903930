//! Time and sound: each item's clock (when each of its frames is shown),
//! clips sampled in seconds, each clip's source times and its sound
//! (`docs/format.md` §8; docs/loader.md, "Time, sound and text").

use gulp_format::{AudioTrack, FrameTimes, ItemMeta, Value};

use crate::sampling::{Placement, Sampling};
use crate::segments::{DURATION_KEY, FPS_KEY};

/// The sound a loader gives with each clip: `[channels, samples]` floats
/// at `sample_rate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AudioOptions {
    /// Samples per second.
    pub sample_rate: u32,
    /// Channels: 1 mixes a track down to mono; more than a mono track has
    /// repeats it.
    pub channels: u16,
}

impl Default for AudioOptions {
    fn default() -> AudioOptions {
        AudioOptions {
            sample_rate: 16000,
            channels: 1,
        }
    }
}

/// The rate of an item without frame times, `fps` or `duration` in its
/// meta: gulpio2's 20BN scripts' rate (`docs/format.md` §8.3).
pub const DEFAULT_FPS: f64 = 8.0;

/// When an item's frames are shown, in seconds of its source.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Clock {
    /// Frame `i` at `start + i × step`.
    Grid { start: f64, step: f64 },
    /// Frame `i` at `times[i]`, increasing.
    List(Vec<f64>),
}

impl Clock {
    /// The clock of `item` (`n` frames): its frame times, else frame `i`
    /// at `i / fps` with the rate of its meta's `fps`, or of its frames
    /// over its `duration`, or `default_fps`.
    pub(crate) fn of(item: &ItemMeta, n: usize, default_fps: f64) -> Clock {
        match &item.frame_times {
            Some(FrameTimes::Grid { start, step }) => Clock::Grid {
                start: *start,
                step: *step,
            },
            Some(FrameTimes::List(times)) if times.len() == n => Clock::List(times.clone()),
            _ => {
                let meta = item.first_meta_data();
                let positive = |key: &str| {
                    meta.and_then(|m| m.get(key))
                        .and_then(Value::as_f64)
                        .filter(|x| x.is_finite() && *x > 0.0)
                };
                #[allow(clippy::cast_precision_loss)] // frame counts < 2^32
                let fps = positive(FPS_KEY)
                    .or_else(|| positive(DURATION_KEY).map(|d| n as f64 / d))
                    .unwrap_or(default_fps);
                Clock::Grid {
                    start: 0.0,
                    step: 1.0 / fps,
                }
            }
        }
    }

    /// The time of frame `k`.
    pub(crate) fn at(&self, k: usize) -> f64 {
        match self {
            #[allow(clippy::cast_precision_loss)]
            Clock::Grid { start, step } => start + k as f64 * step,
            Clock::List(times) => times.get(k).or(times.last()).copied().unwrap_or(0.0),
        }
    }

    /// How long frame `k` of `n` is shown: until the next one; the last
    /// one as long as the one before it (a grid's step).
    pub(crate) fn duration(&self, k: usize, n: usize) -> f64 {
        match self {
            Clock::Grid { step, .. } => *step,
            Clock::List(times) => {
                let at = |i: usize| times.get(i).copied();
                match (at(k), at(k + 1)) {
                    (Some(a), Some(b)) if k + 1 < n => b - a,
                    _ if k > 0 => match (at(k - 1), at(k)) {
                        (Some(a), Some(b)) => b - a,
                        _ => 1.0 / DEFAULT_FPS,
                    },
                    _ => 1.0 / DEFAULT_FPS,
                }
            }
        }
    }

    /// The frame of `first..end` on screen at `t`: the last one shown at
    /// or before it (a microsecond earlier counting as at), `first` before
    /// them all.
    pub(crate) fn on_screen(&self, t: f64, first: usize, end: usize) -> usize {
        let (mut lo, mut hi) = (first, end);
        // The first frame of the range shown after t.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.at(mid) <= t + 1e-6 {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.saturating_sub(1).max(first).min(end.saturating_sub(1))
    }
}

/// The frames and source times of one clip of `frames` frames, `1 / fps`
/// seconds apart, from an item's frames `first..end` shown at `clock`.
///
/// The span of time is from the first frame's time to the last one's end.
/// `Window` and `Dense` take the times `s + i / fps` from a start `s`
/// drawn in the span (training) or placed evenly, clip `k` of `K` (the
/// centre for one clip); `Segments` cuts the span into `frames` equal
/// parts and takes one time in each (at random, or the part's centre);
/// `Uniform` takes `frames` times evenly from the span's start. Each time
/// gives the frame on screen then: a clip follows a variable frame rate,
/// and an item stored at any rate.
pub(crate) fn time_clip(
    sampling: Sampling,
    frames: usize,
    fps: f64,
    clock: &Clock,
    (first, end): (usize, usize),
    placement: Placement<'_>,
) -> (Vec<usize>, Vec<f64>) {
    let t = frames.max(1);
    let end = end.max(first + 1);
    let a = clock.at(first);
    let b = clock.at(end - 1) + clock.duration(end - 1, end);
    let length = (b - a).max(0.0);
    #[allow(clippy::cast_precision_loss)]
    let tf = t as f64;
    let clip = tf / fps;
    let times: Vec<f64> = match sampling {
        Sampling::Segments => {
            let part = length / tf;
            match placement {
                Placement::Random(rng) => (0..t)
                    .map(|i| {
                        #[allow(clippy::cast_precision_loss)]
                        let lo = a + i as f64 * part;
                        lo + rng.unit() * part
                    })
                    .collect(),
                Placement::Fixed { index, count } => {
                    #[allow(clippy::cast_precision_loss)]
                    let frac = (index as f64 + 0.5) / count.max(1) as f64;
                    #[allow(clippy::cast_precision_loss)]
                    (0..t).map(|i| a + (i as f64 + frac) * part).collect()
                }
            }
        }
        Sampling::Uniform => (0..t)
            .map(|i| {
                #[allow(clippy::cast_precision_loss)]
                let at = a + i as f64 * length / tf;
                at
            })
            .collect(),
        Sampling::Window | Sampling::Dense | Sampling::Frame(_) => {
            let room = (length - clip).max(0.0);
            let start = match placement {
                Placement::Random(rng) => a + rng.unit() * room,
                Placement::Fixed { index, count } if count > 1 => {
                    #[allow(clippy::cast_precision_loss)]
                    let at = a + room * index as f64 / (count - 1) as f64;
                    at
                }
                Placement::Fixed { .. } => a + room / 2.0,
            };
            #[allow(clippy::cast_precision_loss)]
            (0..t).map(|i| start + i as f64 / fps).collect()
        }
    };
    let indices = times
        .iter()
        .map(|&time| clock.on_screen(time, first, end))
        .collect();
    (indices, times)
}

/// The seconds of sound that go with a clip: from its first time, `frames
/// / fps` at a rate, else to the end of its last frame.
pub(crate) fn sound_span(
    fps: Option<f64>,
    clock: &Clock,
    indices: &[usize],
    times: &[f64],
    n: usize,
) -> (f64, f64) {
    let start = times.first().copied().unwrap_or(0.0);
    #[allow(clippy::cast_precision_loss)]
    let length = match fps {
        Some(fps) => times.len() as f64 / fps,
        None => match indices.last() {
            Some(&k) => clock.at(k) + clock.duration(k, n) - start,
            None => 0.0,
        },
    };
    (start, length.max(0.0))
}

/// The item's audio track, if it has one.
pub(crate) fn track(item: &ItemMeta) -> Option<AudioTrack> {
    item.audio_track().cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn clocks_come_from_times_then_the_meta_then_the_default() {
        let mut item = ItemMeta {
            frame_times: Some(FrameTimes::List(vec![0.0, 0.1, 0.5])),
            ..ItemMeta::default()
        };
        assert_eq!(Clock::of(&item, 3, 8.0), Clock::List(vec![0.0, 0.1, 0.5]));
        item.frame_times = None;
        item.meta_data
            .push([("fps", Value::Int(25))].into_iter().collect());
        assert_eq!(
            Clock::of(&item, 3, 8.0),
            Clock::Grid {
                start: 0.0,
                step: 0.04
            }
        );
        let mut item = ItemMeta::default();
        item.meta_data
            .push([("duration", Value::Float(2.0))].into_iter().collect());
        assert_eq!(
            Clock::of(&item, 10, 8.0),
            Clock::Grid {
                start: 0.0,
                step: 0.2
            }
        );
        assert_eq!(
            Clock::of(&ItemMeta::default(), 10, 8.0),
            Clock::Grid {
                start: 0.0,
                step: 0.125
            }
        );
    }

    /// 10 fps, a gap of 0.5 s, then 10 fps again: at 4 fps a window
    /// takes the frame on screen at each quarter second.
    #[test]
    fn clips_in_seconds_follow_a_variable_rate() {
        let clock = Clock::List(vec![0.0, 0.1, 0.2, 0.3, 0.8, 0.9, 1.0, 1.1]);
        let (idx, times) = time_clip(
            Sampling::Window,
            4,
            4.0,
            &clock,
            (0, 8),
            Placement::Fixed { index: 0, count: 2 },
        );
        assert_eq!(times, [0.0, 0.25, 0.5, 0.75]);
        assert_eq!(idx, [0, 2, 3, 3]);
        // The second of two evaluation clips ends at the span's end (1.2 s).
        let (idx, times) = time_clip(
            Sampling::Window,
            4,
            4.0,
            &clock,
            (0, 8),
            Placement::Fixed { index: 1, count: 2 },
        );
        assert!((times[0] - 0.2).abs() < 1e-12, "{times:?}");
        assert_eq!(idx, [2, 3, 3, 5]);
        // Segments: 4 parts of 0.3 s, their centres .15 .45 .75 1.05.
        let (idx, _) = time_clip(
            Sampling::Segments,
            4,
            4.0,
            &clock,
            (0, 8),
            Placement::Fixed { index: 0, count: 1 },
        );
        assert_eq!(idx, [1, 3, 3, 6]);
        // At random, inside the span, the same for the same seed.
        let draw = |seed| {
            let mut rng = Rng::new(&[seed]);
            time_clip(
                Sampling::Window,
                4,
                4.0,
                &clock,
                (0, 8),
                Placement::Random(&mut rng),
            )
        };
        assert_eq!(draw(3), draw(3));
        let (_, times) = draw(5);
        assert!(times[0] >= 0.0 && times[3] < 1.2);
    }

    #[test]
    fn sound_spans_follow_the_clip() {
        let clock = Clock::Grid {
            start: 10.0,
            step: 0.5,
        };
        assert_eq!(
            sound_span(Some(4.0), &clock, &[0, 1], &[10.0, 10.25], 8),
            (10.0, 0.5)
        );
        // Index-based: to the end of the last frame.
        assert_eq!(
            sound_span(None, &clock, &[2, 4], &[11.0, 12.0], 8),
            (11.0, 1.5)
        );
    }
}
