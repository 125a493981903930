//! The checks, their thresholds and the options of a run: each defined
//! once here, with its name and default; the CLI and Python only convert.

use std::fmt;
use std::str::FromStr;

use gulp_io::DirectoryOptions;
use serde::Serialize;

/// One kind of finding. The snake_case names are those of `--checks`, of
/// the JSON report and of Python's `checks=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// Items (or frames of different items) whose stored bytes are the same.
    ExactDuplicate,
    /// Items whose pictures are the same up to re-encoding, resizing or a
    /// small crop (perceptual hash of the 1/8-scale decode).
    NearDuplicate,
    /// A duplicate (exact or near) across two directories given together,
    /// as a validation item that is also in training.
    Leak,
    /// Frames whose bright end is dark: the 99th percentile of luma at most
    /// [`Thresholds::dark`].
    Dark,
    /// Frames whose dark end is light: the 5th percentile of luma at least
    /// [`Thresholds::light`].
    Light,
    /// Uniform frames: luma standard deviation at most [`Thresholds::blank`].
    Blank,
    /// Frames whose luma histogram has at most
    /// [`Thresholds::low_information`] bits of entropy.
    LowInformation,
    /// Frames whose blur score is at most [`Thresholds::blurry`]
    /// (judged on up to 3 frames per item).
    Blurry,
    /// Runs of at least [`Thresholds::frozen_frames`] consecutive frames that
    /// differ by at most [`Thresholds::frozen_diff`].
    Frozen,
    /// Items of fewer than [`Thresholds::min_frames`] frames, in a directory
    /// of videos.
    Short,
    /// Items whose frame size is [`Thresholds::odd_size`] times off the
    /// directory's median (either way).
    OddSize,
    /// Items whose aspect ratio is [`Thresholds::odd_aspect`] times off the
    /// directory's median (either way).
    OddAspect,
    /// Items whose sound is silent: the RMS level of the whole track is at
    /// most [`Thresholds::silent_audio`] dBFS (an all-zero track too).
    /// Items without sound are not judged.
    SilentAudio,
    /// Items whose sound is clipped: at least [`Thresholds::clipped_audio`]
    /// of its samples are at full scale (-32768 or 32767).
    ClippedAudio,
    /// Classes with fewer than [`Thresholds::min_class_items`] items, labels
    /// missing from `label2idx.json`, items without the label key.
    Label,
}

impl Check {
    /// Every check, in report order.
    pub const ALL: [Check; 15] = [
        Check::ExactDuplicate,
        Check::NearDuplicate,
        Check::Leak,
        Check::Dark,
        Check::Light,
        Check::Blank,
        Check::LowInformation,
        Check::Blurry,
        Check::Frozen,
        Check::Short,
        Check::OddSize,
        Check::OddAspect,
        Check::SilentAudio,
        Check::ClippedAudio,
        Check::Label,
    ];

    /// The name in `--checks` and in the JSON report.
    pub fn name(self) -> &'static str {
        match self {
            Check::ExactDuplicate => "exact_duplicate",
            Check::NearDuplicate => "near_duplicate",
            Check::Leak => "leak",
            Check::Dark => "dark",
            Check::Light => "light",
            Check::Blank => "blank",
            Check::LowInformation => "low_information",
            Check::Blurry => "blurry",
            Check::Frozen => "frozen",
            Check::Short => "short",
            Check::OddSize => "odd_size",
            Check::OddAspect => "odd_aspect",
            Check::SilentAudio => "silent_audio",
            Check::ClippedAudio => "clipped_audio",
            Check::Label => "label",
        }
    }

    /// Whether a finding of this check is a group of copies, of which
    /// `--ids-out` keeps one.
    pub fn is_duplicate(self) -> bool {
        matches!(
            self,
            Check::ExactDuplicate | Check::NearDuplicate | Check::Leak
        )
    }

    /// Parses a comma-separated list of names (`dark,blurry`).
    pub fn parse_list(text: &str) -> Result<Vec<Check>, String> {
        let mut checks = Vec::new();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let check = name.parse()?;
            if !checks.contains(&check) {
                checks.push(check);
            }
        }
        Ok(checks)
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Check {
    type Err = String;

    fn from_str(text: &str) -> Result<Check, String> {
        Check::ALL
            .into_iter()
            .find(|c| c.name() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = Check::ALL.iter().map(|c| c.name()).collect();
                format!("unknown check {text:?} (known: {})", names.join(", "))
            })
    }
}

/// Near duplicates: at most this many of the 64 bits of the perceptual
/// hash differ (re-encoded and resized copies differ by 0-6, crops of 6 %
/// a side by 0-10 (the centre hash of the source against the whole of the
/// crop), unrelated photographs by about 32, but unrelated pictures of one
/// layout, as retina scans, from 9 on).
pub const NEAR_DISTANCE: u32 = 8;
/// Dark: the 99th percentile of luma (0-255) is at most this: even the
/// brightest part of the frame is dark.
pub const DARK: f64 = 60.0;
/// Light: the 5th percentile of luma is at least this: even the darkest
/// part of the frame is light.
pub const LIGHT: f64 = 200.0;
/// Blank: the standard deviation of luma (0-255) is at most this (a JPEG
/// of one colour has 0; a dark photograph still has 3 or more).
pub const BLANK: f64 = 1.5;
/// Low information: the entropy of the luma histogram is at most this many
/// bits (of 8).
pub const LOW_INFORMATION: f64 = 3.0;
/// Blurry: the blur score is at most this (docs/lint.md: the larger of the
/// whole frame's fine detail and 0.45 x its sharpest edges' steepness, at
/// the decoding whose short edge is at least 112 pixels; windows of in-focus
/// photographs score 0.40 and up (smooth retina scans the lowest), a
/// Gaussian blur of radius 4 on a 256-pixel image 0.20 to 0.27).
pub const BLURRY: f64 = 0.28;
/// Frozen: consecutive frames whose 32x32 thumbnails differ by at most this
/// mean absolute luma difference (0-255) are the same picture.
pub const FROZEN_DIFF: f64 = 1.0;
/// Frozen: a run of at least this many such frames is a finding.
pub const FROZEN_FRAMES: usize = 8;
/// Short: items of fewer frames than this (the clip loader's default clip
/// length), in directories whose median item has more than one frame.
pub const MIN_FRAMES: usize = 8;
/// Odd size: an item whose frame side (square root of the area) is this
/// many times smaller or larger than the directory's median.
pub const ODD_SIZE: f64 = 4.0;
/// Odd aspect: an item whose width/height is this many times narrower or
/// wider than the directory's median.
pub const ODD_ASPECT: f64 = 2.0;
/// Silent audio: the RMS level of a track, in dBFS (0 for a full-scale
/// square wave, -3 for a full-scale sine, -120 for digital silence), is at
/// most this (docs/lint.md has the levels measured on real encodes).
pub const SILENT_AUDIO: f64 = -60.0;
/// Clipped audio: at least this fraction of a track's samples are at full
/// scale.
pub const CLIPPED_AUDIO: f64 = 0.01;
/// Label: classes with fewer items than this.
pub const MIN_CLASS_ITEMS: usize = 5;
/// The key of an item's meta_data that holds its label.
pub const LABEL_KEY: &str = "label";

/// The threshold of every check (the constants of this module by default).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Thresholds {
    /// [`NEAR_DISTANCE`].
    pub near_distance: u32,
    /// [`DARK`].
    pub dark: f64,
    /// [`LIGHT`].
    pub light: f64,
    /// [`BLANK`].
    pub blank: f64,
    /// [`LOW_INFORMATION`].
    pub low_information: f64,
    /// [`BLURRY`].
    pub blurry: f64,
    /// [`FROZEN_DIFF`].
    pub frozen_diff: f64,
    /// [`FROZEN_FRAMES`].
    pub frozen_frames: usize,
    /// [`MIN_FRAMES`].
    pub min_frames: usize,
    /// [`ODD_SIZE`].
    pub odd_size: f64,
    /// [`ODD_ASPECT`].
    pub odd_aspect: f64,
    /// [`SILENT_AUDIO`].
    pub silent_audio: f64,
    /// [`CLIPPED_AUDIO`].
    pub clipped_audio: f64,
    /// [`MIN_CLASS_ITEMS`].
    pub min_class_items: usize,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            near_distance: NEAR_DISTANCE,
            dark: DARK,
            light: LIGHT,
            blank: BLANK,
            low_information: LOW_INFORMATION,
            blurry: BLURRY,
            frozen_diff: FROZEN_DIFF,
            frozen_frames: FROZEN_FRAMES,
            min_frames: MIN_FRAMES,
            odd_size: ODD_SIZE,
            odd_aspect: ODD_ASPECT,
            silent_audio: SILENT_AUDIO,
            clipped_audio: CLIPPED_AUDIO,
            min_class_items: MIN_CLASS_ITEMS,
        }
    }
}

impl Thresholds {
    /// The names of the thresholds, as [`set`](Self::set) takes them (the
    /// CLI's flags without `--`, with `_` for `-`).
    pub const NAMES: [&'static str; 14] = [
        "near_distance",
        "dark",
        "light",
        "blank",
        "low_information",
        "blurry",
        "frozen_diff",
        "frozen_frames",
        "min_frames",
        "odd_size",
        "odd_aspect",
        "silent_audio",
        "clipped_audio",
        "min_class_items",
    ];

    /// Sets the threshold `name` to `value` (counts must be whole and not
    /// negative; every value finite).
    pub fn set(&mut self, name: &str, value: f64) -> Result<(), String> {
        if !value.is_finite() {
            return Err(format!("threshold {name} = {value}: not a finite number"));
        }
        let count = || {
            if value >= 0.0 && value.fract() == 0.0 && value <= u32::MAX as f64 {
                // Checked whole and in range just above.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                Ok(value as u32)
            } else {
                Err(format!(
                    "threshold {name} = {value}: a whole number of 0 or more"
                ))
            }
        };
        match name {
            "near_distance" => self.near_distance = count()?,
            "dark" => self.dark = value,
            "light" => self.light = value,
            "blank" => self.blank = value,
            "low_information" => self.low_information = value,
            "blurry" => self.blurry = value,
            "frozen_diff" => self.frozen_diff = value,
            "frozen_frames" => self.frozen_frames = count()? as usize,
            "min_frames" => self.min_frames = count()? as usize,
            "odd_size" => self.odd_size = value,
            "odd_aspect" => self.odd_aspect = value,
            "silent_audio" => self.silent_audio = value,
            "clipped_audio" => self.clipped_audio = value,
            "min_class_items" => self.min_class_items = count()? as usize,
            _ => {
                return Err(format!(
                    "unknown threshold {name:?} (known: {})",
                    Thresholds::NAMES.join(", ")
                ));
            }
        }
        Ok(())
    }
}

/// How to lint ([`crate::lint`]).
#[derive(Debug, Clone)]
pub struct Options {
    /// The checks to run (all by default).
    pub checks: Vec<Check>,
    /// Their thresholds.
    pub thresholds: Thresholds,
    /// Decoding threads (0: one per core).
    pub threads: usize,
    /// The meta_data key of the label ([`LABEL_KEY`]).
    pub label_key: String,
    /// How directories are opened (node cache of `s3://` ones).
    pub open: DirectoryOptions,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            checks: Check::ALL.to_vec(),
            thresholds: Thresholds::default(),
            threads: 0,
            label_key: LABEL_KEY.to_owned(),
            open: DirectoryOptions::default(),
        }
    }
}

impl Options {
    /// Whether `check` runs.
    pub fn runs(&self, check: Check) -> bool {
        self.checks.contains(&check)
    }

    /// The thread count: as asked, or one per core.
    pub(crate) fn thread_count(&self) -> usize {
        if self.threads > 0 {
            self.threads
        } else {
            std::thread::available_parallelism().map_or(1, usize::from)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_lists_parse() {
        for check in Check::ALL {
            assert_eq!(check.name().parse::<Check>(), Ok(check));
            assert_eq!(
                serde_json::to_string(&check).ok(),
                Some(format!("\"{}\"", check.name()))
            );
        }
        assert_eq!(
            Check::parse_list("dark, blurry,dark"),
            Ok(vec![Check::Dark, Check::Blurry])
        );
        let mut t = Thresholds::default();
        for name in Thresholds::NAMES {
            assert_eq!(t.set(name, 3.0), Ok(()), "{name}");
        }
        assert_eq!((t.near_distance, t.dark, t.min_class_items), (3, 3.0, 3));
        assert!(t.set("frozen_frames", 2.5).unwrap_err().contains("whole"));
        assert!(t.set("fuzz", 1.0).unwrap_err().contains("blurry"));
        let err = Check::parse_list("dark,fuzzy").unwrap_err();
        assert!(
            err.contains("\"fuzzy\"") && err.contains("low_information"),
            "{err}"
        );
    }
}
