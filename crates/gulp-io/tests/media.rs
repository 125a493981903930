//! Frame times and sound in a chunk (docs/format.md §8): written by
//! `ChunkWriter::append_with` in both meta formats, read back, and checked
//! by `gulp check` like the frames.
#![allow(clippy::unwrap_used)]

use gulp_format::{Audio, FrameTimes, MetaFormat, Value};
use gulp_io::check::{Options, ProblemKind, check_directory};
use gulp_io::{AudioInput, ChunkReader, ChunkWriter, GulpDirectory, ItemMedia, Pcm, ReadMode};

const JPEG: &[u8] = include_bytes!("data/noise-24x16.jpg");

/// 0.25 s of a ramp at 8 kHz, stereo.
fn samples() -> Vec<u8> {
    (0..2000u16)
        .flat_map(|i| [i.to_le_bytes(), (!i).to_le_bytes()].concat())
        .collect()
}

fn write(dir: &std::path::Path, format: MetaFormat) {
    let pcm = samples();
    let mut w = ChunkWriter::builder()
        .meta_format(format)
        .fsync(false)
        .create(dir, 0)
        .unwrap();
    w.append_with(
        "clip",
        Value::from("with sound"),
        [JPEG, JPEG, JPEG],
        ItemMedia {
            frame_times: Some(FrameTimes::List(vec![1.0, 1.04, 1.2])),
            audio: Some(AudioInput::Pcm(Pcm {
                samples: &pcm,
                sample_rate: 8000,
                channels: 2,
                start: 1.0,
            })),
        },
    )
    .unwrap();
    w.append_with(
        "silent",
        Value::from("no sound"),
        [JPEG],
        ItemMedia {
            frame_times: Some(FrameTimes::Grid {
                start: 0.0,
                step: 0.125,
            }),
            audio: Some(AudioInput::NoTrack),
        },
    )
    .unwrap();
    w.append("plain", Value::from("as gulpio2's"), [JPEG])
        .unwrap();
    w.finish().unwrap();
}

#[test]
fn times_and_sound_read_back_in_both_formats_and_check_clean() {
    for format in [MetaFormat::Json, MetaFormat::Msgpack] {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), format);
        let reader = ChunkReader::open(tmp.path(), 0, ReadMode::Mmap).unwrap();
        let clip = reader.item("clip").unwrap();
        assert_eq!(
            clip.frame_times,
            Some(FrameTimes::List(vec![1.0, 1.04, 1.2]))
        );
        let track = clip.audio_track().unwrap();
        assert_eq!(
            (
                track.sample_rate,
                track.channels,
                track.samples,
                track.start
            ),
            (8000, 2, 2000, 1.0)
        );
        // The record precedes the frames, and holds the samples as given.
        assert!(track.record.loc < clip.frame_info[0].loc);
        let bytes = reader.read("clip", 0, &track.record).unwrap();
        assert_eq!(&*bytes, &samples()[..]);
        let silent = reader.item("silent").unwrap();
        assert_eq!(silent.audio, Some(Audio::NoTrack));
        assert_eq!(silent.frame_times.as_ref().unwrap().at(3), Some(0.375));
        let plain = reader.item("plain").unwrap();
        assert_eq!((&plain.frame_times, &plain.audio), (&None, &None));
        // The last frame still ends the file (gulpio2's sanity check).
        assert_eq!(reader.meta().last_record_end(), Some(reader.data_len()));
        let gulp = GulpDirectory::open(tmp.path()).unwrap();
        assert_eq!(gulp.len(), 3);
        let options = Options {
            decode: true,
            threads: 1,
        };
        let report = check_directory(tmp.path(), options, &|_| {}).unwrap();
        assert!(report.is_clean(), "{format:?}: {:?}", report.problems);
    }
}

#[test]
fn damaged_sound_and_times_outside_a_clip_are_problems() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), MetaFormat::Json);
    let reader = ChunkReader::open(tmp.path(), 0, ReadMode::Mmap).unwrap();
    let record = reader.item("clip").unwrap().audio_track().unwrap().record;
    drop(reader);
    let data = tmp.path().join("data_0.gulp");
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[usize::try_from(record.loc).unwrap() + 10] ^= 0xff;
    std::fs::write(&data, bytes).unwrap();
    let options = Options {
        decode: false,
        threads: 1,
    };
    let report = check_directory(tmp.path(), options, &|_| {}).unwrap();
    let p = &report.problems[0];
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(
        (p.kind, p.id.as_deref(), p.frame, p.offset),
        (ProblemKind::Checksum, Some("clip"), None, Some(record.loc))
    );
    assert!(p.to_string().contains("CRC-32 of the audio"), "{p}");

    // A clip's meta says where it was cut from: a time outside is named.
    let tmp = tempfile::tempdir().unwrap();
    let mut w = ChunkWriter::builder()
        .fsync(false)
        .create(tmp.path(), 0)
        .unwrap();
    let meta: Value = [("start", Value::Float(2.0)), ("end", Value::Float(3.0))]
        .into_iter()
        .collect();
    let media = ItemMedia {
        frame_times: Some(FrameTimes::List(vec![2.0, 2.5, 3.0])),
        audio: None,
    };
    w.append_with("cut", meta, [JPEG, JPEG, JPEG], media)
        .unwrap();
    w.finish().unwrap();
    let report = check_directory(tmp.path(), options, &|_| {}).unwrap();
    let p = &report.problems[0];
    assert_eq!((p.kind, p.frame), (ProblemKind::FrameTimes, Some(2)));
    assert!(
        p.message
            .contains("frame time 3 s is outside the item's span [2, 3) s"),
        "{p}"
    );
}

#[test]
fn an_item_with_times_or_sound_is_appended_once() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = ChunkWriter::builder()
        .fsync(false)
        .create(tmp.path(), 0)
        .unwrap();
    let times = || ItemMedia {
        frame_times: Some(FrameTimes::Grid {
            start: 0.0,
            step: 0.5,
        }),
        audio: None,
    };
    w.append_with("a", Value::Null, [JPEG], times()).unwrap();
    let err = w
        .append_with("a", Value::Null, [JPEG], times())
        .unwrap_err();
    assert!(err.to_string().contains("appended once"), "{err}");
    let err = w.append("a", Value::Null, [JPEG]).unwrap_err();
    assert!(err.to_string().contains("appended once"), "{err}");
    // Times that are not one per frame are refused, and the item's records
    // taken back: the chunk stays whole.
    let wrong = ItemMedia {
        frame_times: Some(FrameTimes::List(vec![0.0])),
        audio: None,
    };
    let err = w
        .append_with("b", Value::Null, [JPEG, JPEG], wrong)
        .unwrap_err();
    assert!(
        err.to_string().contains("1 frame times for 2 frames"),
        "{err}"
    );
    w.append("c", Value::Null, [JPEG]).unwrap();
    w.finish().unwrap();
    let report = check_directory(
        tmp.path(),
        Options {
            decode: true,
            threads: 1,
        },
        &|_| {},
    )
    .unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.items, 2);
}
