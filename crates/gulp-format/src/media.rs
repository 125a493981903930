//! Time and sound: each frame's presentation time and an item's audio
//! track, gulp's two additions to an item (`docs/format.md` §8).
//!
//! Both live where GulpIO readers do not look: in a JSON meta, as the item
//! keys `frame_times` and `audio` beside `frame_info` and `meta_data`
//! (gulpio2 reads only those two); in a msgpack meta, as the item's
//! metalayers of the same names, with the same values. The audio's bytes
//! are a record of the data file, padded as a frame's, that no
//! `frame_info` points at, written just before the item's frames so that
//! the last frame of a chunk still ends the file (gulpio2's sanity check).

use crate::layout::FrameInfo;
use crate::value::{Map, Value};

/// The item key (JSON) and metalayer name (msgpack) of the frame times.
pub const FRAME_TIMES_KEY: &str = "frame_times";
/// The item key (JSON) and metalayer name (msgpack) of the audio track.
pub const AUDIO_KEY: &str = "audio";

/// The presentation time of each frame of an item, in seconds of its
/// source (0 is the source's start, as ffmpeg's `-ss` counts).
#[derive(Debug, Clone, PartialEq)]
pub enum FrameTimes {
    /// Evenly spaced: frame `i` at `start + i × step` (`step > 0`), what a
    /// frame rate gives (`{"start": s, "step": d}`).
    Grid {
        /// The time of frame 0.
        start: f64,
        /// Seconds between frames, positive.
        step: f64,
    },
    /// One time per frame, strictly increasing (`[t0, t1, ...]`): a source's
    /// own timestamps, for a variable frame rate.
    List(Vec<f64>),
}

impl FrameTimes {
    /// How far (in seconds) a time may be from a grid's and the times still
    /// be stored as that grid: far below any frame interval, far above the
    /// rounding of times read from a source's time base.
    pub const GRID_TOLERANCE: f64 = 1e-6;

    /// The times of a source's frames, stored as compactly as they allow: a
    /// [`FrameTimes::Grid`] when two or more times are evenly spaced (each
    /// within [`FrameTimes::GRID_TOLERANCE`] of the grid from the first to
    /// the last), the list otherwise. A constant-rate source's clip is then
    /// two numbers in its meta, not one per frame.
    pub fn from_times(times: Vec<f64>) -> FrameTimes {
        if let [first, .., last] = times[..] {
            #[allow(clippy::cast_precision_loss)] // frame counts are far below 2^53
            let step = (last - first) / (times.len() - 1) as f64;
            let grid = FrameTimes::Grid { start: first, step };
            let on_grid = step > 0.0
                && times.iter().enumerate().all(|(i, &t)| {
                    grid.at(i)
                        .is_some_and(|g| (t - g).abs() <= Self::GRID_TOLERANCE)
                });
            if on_grid {
                return grid;
            }
        }
        FrameTimes::List(times)
    }

    /// The time of frame `i`; `None` past the end of a list.
    pub fn at(&self, i: usize) -> Option<f64> {
        match self {
            #[allow(clippy::cast_precision_loss)] // frame counts are far below 2^53
            FrameTimes::Grid { start, step } => Some(start + i as f64 * step),
            FrameTimes::List(times) => times.get(i).copied(),
        }
    }

    /// The times of the first `n` frames, as a list.
    pub fn to_list(&self, n: usize) -> Vec<f64> {
        match self {
            FrameTimes::List(times) => times.iter().copied().take(n).collect(),
            FrameTimes::Grid { .. } => (0..n).filter_map(|i| self.at(i)).collect(),
        }
    }

    /// The value stored: `{"start", "step"}` or the list of times.
    pub fn to_value(&self) -> Value {
        match self {
            FrameTimes::Grid { start, step } => {
                let mut map = Map::default();
                map.insert("start".into(), Value::Float(*start));
                map.insert("step".into(), Value::Float(*step));
                Value::Object(map)
            }
            FrameTimes::List(times) => {
                Value::Array(times.iter().map(|&t| Value::Float(t)).collect())
            }
        }
    }

    /// Reads a stored value for an item of `n_frames` frames, checking the
    /// rules of `docs/format.md` §8.1: finite numbers, a positive step, one
    /// time per frame, strictly increasing.
    pub fn from_value(value: &Value, n_frames: usize) -> Result<FrameTimes, String> {
        match value {
            Value::Object(map) => {
                let mut start = None;
                let mut step = None;
                for (key, v) in map {
                    let slot = match key.as_str() {
                        "start" => &mut start,
                        "step" => &mut step,
                        other => {
                            return Err(format!(
                                "frame_times has an unknown key {other:?} (a grid has start and step)"
                            ));
                        }
                    };
                    *slot = Some(finite(v, key)?);
                }
                let start = start.ok_or("frame_times grid has no start")?;
                let step = step.ok_or("frame_times grid has no step")?;
                if step <= 0.0 {
                    return Err(format!("frame_times step {step} is not positive"));
                }
                Ok(FrameTimes::Grid { start, step })
            }
            Value::Array(list) => {
                if list.len() != n_frames {
                    return Err(format!("{} frame_times for {n_frames} frames", list.len()));
                }
                let mut times = Vec::with_capacity(list.len());
                for (i, v) in list.iter().enumerate() {
                    let t = finite(v, "frame_times").map_err(|e| format!("frame {i}: {e}"))?;
                    if let Some(&before) = times.last()
                        && t <= before
                    {
                        return Err(format!(
                            "frame {i}: time {t} is not after frame {}'s {before}",
                            i - 1
                        ));
                    }
                    times.push(t);
                }
                Ok(FrameTimes::List(times))
            }
            _ => Err("frame_times is neither a list of times nor a {start, step} grid".into()),
        }
    }
}

fn finite(v: &Value, what: &str) -> Result<f64, String> {
    match v {
        Value::Int(_) | Value::Float(_) => v
            .as_f64()
            .filter(|t| t.is_finite())
            .ok_or_else(|| format!("{what} is not a finite number")),
        _ => Err(format!("{what} is not a number")),
    }
}

/// How an audio record's samples are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioCodec {
    /// Interleaved signed 16-bit little-endian samples: no decoding, and a
    /// span of samples is a slice of the record (`docs/benchmarks.md`, "The
    /// audio codec", has the measurement behind the choice).
    PcmS16le,
}

impl AudioCodec {
    /// The codec's name in the meta (ffmpeg's name for it).
    pub fn name(self) -> &'static str {
        match self {
            AudioCodec::PcmS16le => "pcm_s16le",
        }
    }

    /// Bytes of one sample of one channel.
    pub fn sample_bytes(self) -> u64 {
        match self {
            AudioCodec::PcmS16le => 2,
        }
    }

    fn from_name(name: &str) -> Option<AudioCodec> {
        (name == "pcm_s16le").then_some(AudioCodec::PcmS16le)
    }
}

/// The highest sample rate and channel count a track may declare.
pub const MAX_SAMPLE_RATE: u32 = 768_000;
/// See [`MAX_SAMPLE_RATE`].
pub const MAX_CHANNELS: u16 = 64;

/// An item's audio track: where its record is and how to read it.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioTrack {
    /// The record in the data file, as a frame's `[loc, pad, length]`.
    pub record: FrameInfo,
    /// How the samples are stored.
    pub codec: AudioCodec,
    /// Samples per second (of each channel).
    pub sample_rate: u32,
    /// Interleaved channels.
    pub channels: u16,
    /// Samples of each channel.
    pub samples: u64,
    /// The source time of sample 0, in the seconds of the frame times.
    pub start: f64,
    /// CRC-32 (zlib's) of the record's bytes without its pad.
    pub checksum: u32,
}

impl AudioTrack {
    /// Bytes of the samples (the record without its pad), from the count.
    pub fn byte_len(&self) -> Option<u64> {
        self.samples
            .checked_mul(u64::from(self.channels))?
            .checked_mul(self.codec.sample_bytes())
    }

    /// The track's length in seconds.
    pub fn duration(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)] // sample counts are far below 2^53
        let samples = self.samples as f64;
        samples / f64::from(self.sample_rate)
    }
}

/// An item's sound, when its ingest kept sound.
#[derive(Debug, Clone, PartialEq)]
pub enum Audio {
    /// The source had no sound that could be decoded (`"audio": null`).
    NoTrack,
    /// The track.
    Track(AudioTrack),
}

impl Audio {
    /// The track, if there is one.
    pub fn track(&self) -> Option<&AudioTrack> {
        match self {
            Audio::Track(t) => Some(t),
            Audio::NoTrack => None,
        }
    }

    /// The value stored: `null` or the track's object, keys in this order.
    pub fn to_value(&self) -> Value {
        let Audio::Track(t) = self else {
            return Value::Null;
        };
        let mut map = Map::default();
        let r = t.record;
        map.insert(
            "record".into(),
            Value::Array(vec![r.loc.into(), r.pad.into(), r.length.into()]),
        );
        map.insert("codec".into(), Value::from(t.codec.name()));
        map.insert("sample_rate".into(), Value::from(u64::from(t.sample_rate)));
        map.insert("channels".into(), Value::from(u64::from(t.channels)));
        map.insert("samples".into(), Value::from(t.samples));
        map.insert("start".into(), Value::Float(t.start));
        map.insert("crc32".into(), Value::from(u64::from(t.checksum)));
        Value::Object(map)
    }

    /// Reads a stored value, checking the rules of `docs/format.md` §8.2.
    pub fn from_value(value: &Value) -> Result<Audio, String> {
        let map = match value {
            Value::Null => return Ok(Audio::NoTrack),
            Value::Object(map) => map,
            _ => return Err("audio is neither null nor an object".into()),
        };
        const KEYS: [&str; 7] = [
            "record",
            "codec",
            "sample_rate",
            "channels",
            "samples",
            "start",
            "crc32",
        ];
        if let Some(other) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(format!("audio has an unknown key {other:?}"));
        }
        let get = |key: &str| map.get(key).ok_or_else(|| format!("audio has no {key}"));
        let uint = |key: &str| -> Result<u64, String> {
            match get(key)? {
                Value::Int(i) => u64::try_from(*i).ok(),
                Value::BigInt(b) => b.to_u64(),
                _ => None,
            }
            .ok_or_else(|| format!("audio {key} is not a non-negative integer"))
        };
        let record = match get("record")?.as_array() {
            Some([loc, pad, length]) => {
                let n = |v: &Value| match v {
                    Value::Int(i) => u64::try_from(*i).ok(),
                    Value::BigInt(b) => b.to_u64(),
                    _ => None,
                };
                match (n(loc), n(pad), n(length)) {
                    (Some(loc), Some(pad), Some(length)) => FrameInfo { loc, pad, length },
                    _ => return Err("audio record is not [loc, pad, length]".into()),
                }
            }
            _ => return Err("audio record is not [loc, pad, length]".into()),
        };
        if let Some(problem) = record.problem() {
            return Err(format!("audio record: {problem}"));
        }
        let codec = get("codec")?
            .as_str()
            .and_then(AudioCodec::from_name)
            .ok_or("audio codec is not \"pcm_s16le\" (the one codec of this version)")?;
        let sample_rate = u32::try_from(uint("sample_rate")?)
            .ok()
            .filter(|r| (1..=MAX_SAMPLE_RATE).contains(r))
            .ok_or_else(|| format!("audio sample_rate is not 1 to {MAX_SAMPLE_RATE}"))?;
        let channels = u16::try_from(uint("channels")?)
            .ok()
            .filter(|c| (1..=MAX_CHANNELS).contains(c))
            .ok_or_else(|| format!("audio channels is not 1 to {MAX_CHANNELS}"))?;
        let samples = uint("samples")?;
        let start = finite(get("start")?, "audio start")?;
        let checksum = u32::try_from(uint("crc32")?)
            .map_err(|_| "audio crc32 is larger than 32 bits".to_string())?;
        let track = AudioTrack {
            record,
            codec,
            sample_rate,
            channels,
            samples,
            start,
            checksum,
        };
        if track.byte_len() != record.jpeg_len() {
            return Err(format!(
                "audio record holds {} bytes, not the {} of {samples} samples × {channels} channels",
                record.length - record.pad,
                track
                    .byte_len()
                    .map_or_else(|| "overflowing number".into(), |b| b.to_string()),
            ));
        }
        Ok(Audio::Track(track))
    }
}

/// Moves the frame times and audio out of an item's extra entries (JSON
/// item keys, msgpack metalayers) into their types, for an item of
/// `n_frames` frames.
pub(crate) fn take_media(
    extra: &mut Map,
    n_frames: usize,
) -> Result<(Option<FrameTimes>, Option<Audio>), String> {
    let times = extra
        .shift_remove(FRAME_TIMES_KEY)
        .map(|v| FrameTimes::from_value(&v, n_frames))
        .transpose()?;
    let audio = extra
        .shift_remove(AUDIO_KEY)
        .map(|v| Audio::from_value(&v))
        .transpose()?;
    Ok((times, audio))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_and_lists_round_trip_and_are_checked() {
        let grid = FrameTimes::Grid {
            start: 1.5,
            step: 0.125,
        };
        assert_eq!(
            FrameTimes::from_value(&grid.to_value(), 7),
            Ok(grid.clone())
        );
        assert_eq!(grid.at(2), Some(1.75));
        assert_eq!(grid.to_list(3), [1.5, 1.625, 1.75]);
        let list = FrameTimes::List(vec![0.0, 0.04, 0.1]);
        assert_eq!(
            FrameTimes::from_times(vec![0.0, 0.04, 0.1]),
            list,
            "uneven times stay a list"
        );
        match FrameTimes::from_times(vec![1.0, 1.04, 1.08, 1.12, 1.1600004]) {
            FrameTimes::Grid { start, step } => {
                assert_eq!(start, 1.0);
                assert!((step - 0.0400001).abs() < 1e-12, "{step}");
            }
            list => panic!("even times (within 1e-6 s) stored as {list:?}"),
        }
        assert_eq!(
            FrameTimes::from_times(vec![2.0]),
            FrameTimes::List(vec![2.0])
        );
        assert_eq!(FrameTimes::from_times(vec![]), FrameTimes::List(vec![]));
        assert_eq!(
            FrameTimes::from_value(&list.to_value(), 3),
            Ok(list.clone())
        );
        assert_eq!(list.at(3), None);
        let bad = |v: Value, n| FrameTimes::from_value(&v, n).unwrap_err();
        assert!(bad(list.to_value(), 2).contains("3 frame_times for 2 frames"));
        let back = Value::Array(vec![Value::Float(0.5), Value::Float(0.5)]);
        assert!(bad(back, 2).contains("frame 1: time 0.5 is not after"));
        let nan = Value::Array(vec![Value::Float(f64::NAN)]);
        assert!(bad(nan, 1).contains("not a finite number"));
        let mut zero = Map::default();
        zero.insert("start".into(), Value::Int(0));
        zero.insert("step".into(), Value::Float(0.0));
        assert!(bad(Value::Object(zero), 1).contains("not positive"));
        assert!(bad(Value::from("x"), 1).contains("neither"));
    }

    #[test]
    fn audio_round_trips_and_its_length_must_match() {
        let track = AudioTrack {
            record: FrameInfo::for_jpeg(0, 3200),
            codec: AudioCodec::PcmS16le,
            sample_rate: 16000,
            channels: 1,
            samples: 1600,
            start: -0.25,
            checksum: 0xdead_beef,
        };
        let audio = Audio::Track(track.clone());
        assert_eq!(Audio::from_value(&audio.to_value()), Ok(audio));
        assert_eq!(Audio::from_value(&Value::Null), Ok(Audio::NoTrack));
        assert!((track.duration() - 0.1).abs() < 1e-12);
        let mut short = track;
        short.samples = 1601;
        let err = Audio::from_value(&Audio::Track(short).to_value()).unwrap_err();
        assert!(err.contains("not the 3202"), "{err}");
        let mut extra = Map::default();
        extra.insert("codec".into(), Value::from("opus"));
        let err = Audio::from_value(&Value::Object(extra)).unwrap_err();
        assert!(err.contains("no record"), "{err}");
    }
}
