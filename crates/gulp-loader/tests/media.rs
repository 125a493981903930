//! Time, sound and text through the loader: clips in seconds across a
//! variable frame rate, each clip's times, its sound cut to the same span
//! (sample-aligned), silence for an item without sound, texts from the
//! meta and from segments, and resume with sound.
#![allow(
    clippy::unwrap_used,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation
)]

use std::path::Path;
use std::process::Command;

use gulp_format::{FrameTimes, JsonSerializer, Value};
use gulp_io::{AudioInput, ChunkWriter, ItemMedia, Pcm};
use gulp_loader::{
    AudioOptions, CropMode, Loader, LoaderOptions, OnMissing, Order, Sampling, Segments, Shuffle,
    Spatial, Unit,
};

const RATE: u32 = 1000;

/// `n` JPEG frames of a test pattern.
fn frames(n: usize) -> Vec<Vec<u8>> {
    let tmp = tempfile::tempdir().unwrap();
    let status = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=64x48:rate=10",
        ])
        .args(["-frames:v", &n.to_string(), "-q:v", "3"])
        .arg(tmp.path().join("%04d.jpg"))
        .status()
        .unwrap();
    assert!(status.success());
    (1..=n)
        .map(|i| std::fs::read(tmp.path().join(format!("{i:04}.jpg"))).unwrap())
        .collect()
}

/// The value of the sample at time `t` of a [`clock_track`]: its time in
/// milliseconds, modulo 32000.
fn tag(t: f64) -> i16 {
    ((t * 1000.0).round() as i64 % 32000) as i16
}

/// That value as the loader gives it, a float.
fn sample_at(t: f64) -> f32 {
    f32::from(tag(t)) / 32768.0
}

/// Mono samples whose value says their time ([`tag`]), from `start`.
fn clock_track(start: f64, seconds: f64) -> Vec<u8> {
    let n = (seconds * f64::from(RATE)) as usize;
    (0..n)
        .flat_map(|k| tag(start + k as f64 / f64::from(RATE)).to_le_bytes())
        .collect()
}

/// Times equal but for the rounding of doubles.
fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} against {want:?}");
    assert!(
        got.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-9),
        "{got:?} against {want:?}"
    );
}

fn meta(text: &str) -> Value {
    JsonSerializer::parse_value(text.as_bytes()).unwrap()
}

/// "vfr": 16 frames, 10 fps with a gap of 0.5 s after frame 7, sound from
/// 0.0 to 2.5 s; "plain": 10 frames without times, `fps` 5 in its meta,
/// no sound (`null`); "long": 20 frames on a grid from 100 s at 0.25 s,
/// sound from 100 s, two captioned segments.
fn fixture(dir: &Path) {
    let jpegs = frames(20);
    let mut w = ChunkWriter::builder().fsync(false).create(dir, 0).unwrap();
    let mut times: Vec<f64> = (0..8).map(|i| f64::from(i) * 0.1).collect();
    times.extend((0..8).map(|i| 1.2 + f64::from(i) * 0.1));
    let pcm = clock_track(0.0, 2.5);
    w.append_with(
        "vfr",
        meta(r#"{"label": 0, "caption": "a gap in the middle"}"#),
        &jpegs[..16],
        ItemMedia {
            frame_times: Some(FrameTimes::List(times)),
            audio: Some(AudioInput::Pcm(Pcm {
                samples: &pcm,
                sample_rate: RATE,
                channels: 1,
                start: 0.0,
            })),
        },
    )
    .unwrap();
    w.append_with(
        "plain",
        meta(r#"{"label": 1, "fps": 5, "caption": {"lang": "en"}}"#),
        &jpegs[..10],
        ItemMedia {
            frame_times: None,
            audio: Some(AudioInput::NoTrack),
        },
    )
    .unwrap();
    let pcm = clock_track(100.0, 5.0);
    w.append_with(
        "long",
        meta(
            r#"{"label": 0, "caption": "the whole", "segments": [
                {"start": 100.0, "end": 101.0, "caption": "first"},
                {"start": 102.5, "end": 104.0, "caption": "second"}]}"#,
        ),
        &jpegs[..20],
        ItemMedia {
            frame_times: Some(FrameTimes::Grid {
                start: 100.0,
                step: 0.25,
            }),
            audio: Some(AudioInput::Pcm(Pcm {
                samples: &pcm,
                sample_rate: RATE,
                channels: 1,
                start: 100.0,
            })),
        },
    )
    .unwrap();
    w.finish().unwrap();
}

fn options() -> LoaderOptions {
    LoaderOptions {
        frames: 4,
        sampling: Sampling::Window,
        spatial: Spatial {
            resize: None,
            size: Some((48, 64)),
            crop: CropMode::Center,
            flip: false,
        },
        batch_size: 3,
        order: Order {
            shuffle: Shuffle::Off,
            drop_last: false,
            ..Order::default()
        },
        threads: Some(1),
        fps: Some(4.0),
        audio: Some(AudioOptions {
            sample_rate: RATE,
            channels: 1,
        }),
        texts: Some("caption".into()),
        ..LoaderOptions::default()
    }
}

#[test]
fn clips_in_seconds_come_with_their_times_sound_and_text() {
    let tmp = tempfile::tempdir().unwrap();
    fixture(tmp.path());
    let mut loader = Loader::open(tmp.path(), options()).unwrap();
    let batch = loader.iter().next().unwrap().unwrap();
    assert_eq!(batch.ids, ["vfr", "plain", "long"]);
    let t = 4;
    // vfr spans 0 to 2.0 s (its last frame shown 0.1 s): a centred clip of
    // 1 s from 0.5 s; 0.5 and 0.75 s fall in the gap, on frame 7 (0.7 s).
    close(&batch.times[..t], &[0.5, 0.75, 1.0, 1.25]);
    assert_eq!(batch.indices[..t], [5, 7, 7, 8]);
    // plain: 5 fps from 0 (its meta), 2 s: from 0.5 s, frames 2, 3, 5, 6.
    close(&batch.times[t..2 * t], &[0.5, 0.75, 1.0, 1.25]);
    assert_eq!(batch.indices[t..2 * t], [2, 3, 5, 6]);
    // long: 100 to 105 s, a clip from 102 s.
    close(&batch.times[2 * t..], &[102.0, 102.25, 102.5, 102.75]);
    assert_eq!(batch.indices[2 * t..], [8, 9, 10, 11]);
    // Sound: 1 s (4 frames at 4 fps) at 1000 Hz, from each clip's first
    // time, sample for sample.
    assert_eq!(batch.audio_shape, [3, 1, 1000]);
    assert_eq!(batch.has_audio, [true, false, true]);
    let clip = |b: usize| &batch.audio[b * 1000..(b + 1) * 1000];
    assert_eq!(
        (clip(0)[0], clip(0)[999]),
        (sample_at(0.5), sample_at(1.499))
    );
    assert!(
        clip(1).iter().all(|&s| s == 0.0),
        "an item without sound is silence"
    );
    assert_eq!(
        (clip(2)[0], clip(2)[500]),
        (sample_at(102.0), sample_at(102.5))
    );
    // Texts: as they are, other values as JSON.
    assert_eq!(
        batch.texts,
        ["a gap in the middle", r#"{"lang": "en"}"#, "the whole"]
    );
}

#[test]
fn segments_in_seconds_give_their_own_text_and_span() {
    let tmp = tempfile::tempdir().unwrap();
    fixture(tmp.path());
    let mut segments = Segments::new("segments");
    segments.unit = Unit::Seconds;
    let options = LoaderOptions {
        segments: Some(segments),
        frames: 2,
        // The other items have no segments.
        on_missing: OnMissing::Skip,
        ..options()
    };
    let mut loader = Loader::open(tmp.path(), options).unwrap();
    let batch = loader.iter().next().unwrap().unwrap();
    // Only "long" has segments: 100-101 s is frames 0..4, 102.5-104 s
    // frames 10..16 (by its times, from 100 s at 0.25 s).
    assert_eq!(batch.ids, ["long", "long"]);
    assert_eq!(batch.segments, [[0, 4], [10, 16]]);
    assert_eq!(batch.texts, ["first", "second"]);
    // A centred clip of 0.5 s in each.
    close(&batch.times, &[100.25, 100.5, 103.0, 103.25]);
    // Half a second of sound from each clip's start.
    assert_eq!(batch.audio_shape, [2, 1, 500]);
    assert_eq!(
        (batch.audio[0], batch.audio[500]),
        (sample_at(100.25), sample_at(103.0))
    );
}

#[test]
fn a_resumed_loader_gives_the_same_sound() {
    let tmp = tempfile::tempdir().unwrap();
    fixture(tmp.path());
    let train = LoaderOptions {
        batch_size: 1,
        order: Order {
            shuffle: Shuffle::Items,
            seed: 11,
            ..Order::default()
        },
        ..options()
    };
    let mut unbroken = Loader::open(tmp.path(), train.clone()).unwrap();
    let whole: Vec<_> = unbroken.iter().map(Result::unwrap).collect();
    let mut first = Loader::open(tmp.path(), train.clone()).unwrap();
    let mut it = first.iter();
    let _ = it.next().unwrap().unwrap();
    drop(it);
    let state = first.state();
    let mut resumed = Loader::open(tmp.path(), train).unwrap();
    resumed.load_state(&state).unwrap();
    let rest: Vec<_> = resumed.iter().map(Result::unwrap).collect();
    assert_eq!(rest.len(), whole.len() - 1);
    for (a, b) in rest.iter().zip(&whole[1..]) {
        assert_eq!(
            (&a.ids, &a.times, &a.indices),
            (&b.ids, &b.times, &b.indices)
        );
        assert_eq!(a.audio, b.audio);
        assert_eq!(a.frames, b.frames);
    }
    // Random clips in seconds stay inside each item's span.
    for b in &whole {
        let end = match b.ids[0].as_str() {
            "vfr" => 2.0,
            "plain" => 2.0,
            _ => 105.0,
        };
        assert!(b.times.iter().all(|&t| t < end), "{:?}", b.times);
    }
}
