//! Long items with annotated segments (ActivityNet, EPIC-Kitchens): one
//! sample per segment, its clip drawn inside the segment.

use gulp_format::{FrameTimes, Value};

use crate::targets::Problem;

/// Where an item's segments are in its meta, and what their bounds mean.
///
/// The item's meta (`meta_data[0]`) holds a list of objects under `key`;
/// each object is one sample, bounded by `bounds` in `unit`. In frames the
/// bounds are the item's frame indices, `start` included and `end`
/// excluded; in seconds, `[floor(start × fps), ceil(end × fps))`, at least
/// one frame. An `end` past the item's last frame is cut to it; a segment
/// that starts past it, or ends before it starts, is a problem of that
/// segment ([`crate::OnMissing`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Segments {
    /// The meta key holding the list of segments.
    pub key: String,
    /// Where each segment's bounds are.
    pub bounds: Bounds,
    /// Frames or seconds.
    pub unit: Unit,
    /// The frame rate of bounds in seconds for an item whose meta has no
    /// `fps`; without either, an item's `duration` (seconds, as ActivityNet
    /// entries have it) gives its rate as `frames / duration`.
    pub fps: Option<f64>,
}

/// The keys of a segment's bounds.
#[derive(Debug, Clone, PartialEq)]
pub enum Bounds {
    /// Two keys, start and end.
    Keys {
        /// The key of the first frame (or second).
        start: String,
        /// The key of the end (excluded).
        end: String,
    },
    /// One key holding `[start, end]` (ActivityNet's `segment`).
    Pair(String),
}

/// The unit of segment bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Frame indices of the stored item.
    Frames,
    /// Seconds, converted with the item's frame rate.
    Seconds,
}

gulp_format::choice!(Unit, "unit", { Unit::Frames => "frames", Unit::Seconds => "seconds" });

/// The meta key of an item's frame rate.
pub const FPS_KEY: &str = "fps";
/// The meta key of an item's duration in seconds.
pub const DURATION_KEY: &str = "duration";

impl Segments {
    /// Segments under `key` with `start` and `end` in frames (what
    /// `gulp ingest epic-kitchens` writes under `segments`).
    pub fn new(key: impl Into<String>) -> Segments {
        Segments {
            key: key.into(),
            bounds: Bounds::Keys {
                start: "start".into(),
                end: "end".into(),
            },
            unit: Unit::Frames,
            fps: None,
        }
    }

    /// ActivityNet's annotations, as `gulp ingest activitynet` keeps them:
    /// `annotations: [{"segment": [t0, t1], "label": ...}]` in seconds
    /// (the rate from the entry's `duration`).
    pub fn activitynet() -> Segments {
        Segments {
            key: "annotations".into(),
            bounds: Bounds::Pair("segment".into()),
            unit: Unit::Seconds,
            fps: None,
        }
    }

    /// The rows of a video as `gulp ingest manifest --segments` keeps them:
    /// `segments: [{"start", "end", ...}]` in seconds (the frames found by
    /// the item's frame times).
    pub fn manifest() -> Segments {
        Segments {
            unit: Unit::Seconds,
            ..Segments::new("segments")
        }
    }

    /// Checks the spec itself.
    pub(crate) fn check(&self) -> Result<(), String> {
        if let Some(fps) = self.fps
            && !(fps.is_finite() && fps > 0.0)
        {
            return Err(format!("segment fps must be a positive number, not {fps}"));
        }
        Ok(())
    }

    /// The item's list of segments.
    pub(crate) fn list<'m>(&self, meta: &'m Value) -> Result<&'m [Value], Problem> {
        match meta.get(&self.key) {
            None | Some(Value::Null) => Err(Problem::skippable(&self.key, "missing")),
            Some(Value::Array(list)) => Ok(list),
            Some(_) => Err(Problem::skippable(&self.key, "not a list of segments")),
        }
    }

    /// How bounds in seconds become frames for an item of `frames` frames
    /// with frame times `times` (docs/format.md §8): by its times when it
    /// has them, else by its rate ([`Segments::rate`]).
    pub(crate) fn clock<'t>(
        &self,
        meta: &Value,
        frames: usize,
        times: Option<&'t FrameTimes>,
    ) -> Result<Clock<'t>, Problem> {
        Ok(match (self.unit, times) {
            (Unit::Frames, _) => Clock::Frames,
            (Unit::Seconds, Some(times)) => Clock::Times(times),
            (Unit::Seconds, None) => match self.rate(meta, frames)? {
                Some(fps) => Clock::Rate(fps),
                None => Clock::Frames,
            },
        })
    }

    /// The frame rate bounds in seconds are converted with, for an item of
    /// `frames` frames (`None` for bounds in frames).
    pub(crate) fn rate(&self, meta: &Value, frames: usize) -> Result<Option<f64>, Problem> {
        if self.unit == Unit::Frames {
            return Ok(None);
        }
        let positive = |key: &str| -> Result<Option<f64>, Problem> {
            match meta.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => match v.as_f64() {
                    Some(x) if x.is_finite() && x > 0.0 => Ok(Some(x)),
                    _ => Err(Problem::skippable(key, "not a positive number")),
                },
            }
        };
        if let Some(fps) = positive(FPS_KEY)?.or(self.fps) {
            return Ok(Some(fps));
        }
        #[allow(clippy::cast_precision_loss)]
        match positive(DURATION_KEY)? {
            Some(seconds) => Ok(Some(frames as f64 / seconds)),
            None => Err(Problem::skippable(
                FPS_KEY,
                format!(
                    "segment bounds in seconds need the item's frame rate: an {FPS_KEY:?} or a \
                     {DURATION_KEY:?} (seconds) in its meta, or the loader's fps"
                ),
            )),
        }
    }

    /// Segment `k`'s frames `[start, end)` of an item of `frames` frames
    /// (`clock` from [`Segments::clock`]).
    pub(crate) fn span(
        &self,
        k: usize,
        segment: &Value,
        clock: Clock<'_>,
        frames: usize,
    ) -> Result<(usize, usize), Problem> {
        let key = |name: &str| format!("{}[{k}].{name}", self.key);
        let (start, end) = match &self.bounds {
            Bounds::Keys { start, end } => (
                number(segment.get(start), &key(start))?,
                number(segment.get(end), &key(end))?,
            ),
            Bounds::Pair(name) => match segment.get(name) {
                None | Some(Value::Null) => return Err(Problem::skippable(key(name), "missing")),
                Some(pair) => match pair.as_array() {
                    Some([a, b]) => (number(Some(a), &key(name))?, number(Some(b), &key(name))?),
                    _ => return Err(Problem::skippable(key(name), "not a [start, end] pair")),
                },
            },
        };
        let bounds_key = match &self.bounds {
            Bounds::Keys { start, .. } => key(start),
            Bounds::Pair(name) => key(name),
        };
        let (first, last) = match clock {
            // The frames whose times fall in [start, end) (at least one).
            Clock::Times(times) => {
                let first = first_at_or_after(times, frames, start);
                let last = first_at_or_after(times, frames, end).max(first + 1);
                #[allow(clippy::cast_precision_loss)] // frame counts < 2^32
                (first as f64, last as f64)
            }
            Clock::Frames => {
                if start.fract() != 0.0 || end.fract() != 0.0 {
                    return Err(Problem::skippable(
                        bounds_key,
                        format!("[{start}, {end}) are not frame indices"),
                    ));
                }
                (start, end)
            }
            // A bound within a billionth of a frame of a whole frame is on
            // it (2.4 s × 25 fps is 59.999999999999993 in doubles).
            Clock::Rate(fps) => {
                let first = (start * fps + 1e-9).floor();
                (first, ((end * fps - 1e-9).ceil()).max(first + 1.0))
            }
        };
        #[allow(clippy::cast_precision_loss)]
        let n = frames as f64;
        if first >= n {
            return Err(Problem::skippable(
                bounds_key,
                format!("the segment starts at frame {first}, past the item's {frames} frames"),
            ));
        }
        if last <= first {
            return Err(Problem::skippable(
                bounds_key,
                format!("the segment [{start}, {end}) is empty"),
            ));
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Ok((first as usize, last.min(n) as usize))
    }
}

/// How an item's segment bounds become frames.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Clock<'t> {
    /// The bounds are frame indices.
    Frames,
    /// Seconds, at this many frames a second from 0.
    Rate(f64),
    /// Seconds, by the item's frame times.
    Times(&'t FrameTimes),
}

/// The first of `n` frames whose time is at or after `t` (`n` if none), a
/// microsecond earlier counting as at.
fn first_at_or_after(times: &FrameTimes, n: usize, t: f64) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if times.at(mid).is_some_and(|x| x < t - 1e-6) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

fn number(value: Option<&Value>, key: &str) -> Result<f64, Problem> {
    match value {
        None | Some(Value::Null) => Err(Problem::skippable(key, "missing")),
        Some(v) => match v.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 => Ok(x),
            _ => Err(Problem::skippable(key, "not a number of at least 0")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gulp_format::JsonSerializer;

    fn json(text: &str) -> Value {
        JsonSerializer::parse_value(text.as_bytes()).unwrap()
    }

    #[test]
    fn frame_bounds_are_end_excluded_and_cut_to_the_item() {
        let s = Segments::new("segments");
        let meta = json(
            r#"{"segments": [{"start": 2, "end": 5}, {"start": 8, "end": 40}, {"start": 9, "end": 9}, {"start": 30, "end": 31}, {"start": 1.5, "end": 3}, {"end": 2}]}"#,
        );
        let list = s.list(&meta).unwrap();
        let spans: Vec<_> = list
            .iter()
            .enumerate()
            .map(|(k, seg)| s.span(k, seg, Clock::Frames, 20))
            .collect();
        assert_eq!(spans[0], Ok((2, 5)));
        assert_eq!(spans[1], Ok((8, 20)));
        assert!(spans[2].as_ref().unwrap_err().reason.contains("empty"));
        assert!(spans[3].as_ref().unwrap_err().reason.contains("past"));
        assert!(
            spans[4]
                .as_ref()
                .unwrap_err()
                .reason
                .contains("frame indices")
        );
        assert_eq!(spans[5].as_ref().unwrap_err().key, "segments[5].start");
        assert!(s.list(&json("{}")).is_err());
    }

    #[test]
    fn seconds_use_the_items_rate() {
        let s = Segments::activitynet();
        // 100 frames over 10 s: 10 fps.
        let meta = json(
            r#"{"duration": 10.0, "annotations": [{"segment": [2.4, 3.01], "label": "x"}, {"segment": [5, 5]}]}"#,
        );
        let rate = s.rate(&meta, 100).unwrap();
        assert_eq!(rate, Some(10.0));
        let list = s.list(&meta).unwrap();
        let clock = Clock::Rate(10.0);
        assert_eq!(s.span(0, &list[0], clock, 100), Ok((24, 31)));
        assert_eq!(s.span(1, &list[1], clock, 100), Ok((50, 51)));
        // Frame times win over any rate: a variable rate, 0.1 s apart and
        // then 0.5 s apart.
        let times = FrameTimes::List(vec![0.0, 0.1, 0.2, 0.7, 1.2, 1.7]);
        let clock = s.clock(&meta, 6, Some(&times)).unwrap();
        let pair = |a: f64, b: f64| json(&format!(r#"{{"segment": [{a}, {b}]}}"#));
        assert_eq!(s.span(0, &pair(0.15, 1.2), clock, 6), Ok((2, 4)));
        assert_eq!(s.span(0, &pair(0.7, 0.7), clock, 6), Ok((3, 4)));
        assert_eq!(s.span(0, &pair(1.0, 9.0), clock, 6), Ok((4, 6)));
        let grid = FrameTimes::Grid {
            start: 10.0,
            step: 0.25,
        };
        let clock = s.clock(&meta, 8, Some(&grid)).unwrap();
        assert_eq!(s.span(0, &pair(10.5, 11.0), clock, 8), Ok((2, 4)));
        // An fps in the meta wins over the duration; the loader's fps over
        // the duration too.
        let with_fps = json(r#"{"fps": 25, "duration": 10.0}"#);
        assert_eq!(s.rate(&with_fps, 100).unwrap(), Some(25.0));
        let given = Segments {
            fps: Some(8.0),
            ..Segments::activitynet()
        };
        assert_eq!(given.rate(&meta, 100).unwrap(), Some(8.0));
        let p = s.rate(&json("{}"), 100).unwrap_err();
        assert!(p.reason.contains("frame rate"), "{p:?}");
        assert_eq!(Segments::new("x").rate(&json("{}"), 5).unwrap(), None);
    }
}
