//! `gulp_ingest::Writer` on real directories: round trips of pixels and
//! JPEG bytes, chunking, determinism across worker counts, ids already
//! there, bad items (each error asserted whole), labels, the directory
//! lock, recovery at open, and what a dropped writer leaves.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use gulp_format::{MetaFormat, Value};
use gulp_ingest::frames::{encode_jpeg, encode_jpeg_with};
use gulp_ingest::{Error, Frames, OnExists, Pixels, SubsamplingChoice, Writer, WriterBuilder};
use gulp_io::{GulpDirectory, Recovery, Selection};
use gulp_test_support::media;

/// A `width`×`height` frame of `channels` with a gradient that depends on
/// `seed`, so that every frame differs.
fn frame(width: u32, height: u32, channels: u8, seed: u8) -> Pixels {
    let data = (0..width * height * u32::from(channels))
        .map(|i| (i.to_le_bytes()[0]).wrapping_mul(7).wrapping_add(seed))
        .collect();
    Pixels {
        width,
        height,
        channels,
        data,
    }
}

fn noise_jpeg() -> Vec<u8> {
    fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../gulp-io/tests/data/noise-24x16.jpg"
    ))
    .unwrap()
}

fn meta(pairs: &[(&str, Value)]) -> Value {
    pairs.iter().cloned().collect()
}

fn builder(per_chunk: usize, workers: usize) -> WriterBuilder {
    let mut b = Writer::builder();
    b.items_per_chunk(per_chunk).workers(workers).fsync(false);
    b
}

/// The ids of each chunk of `dir`, in chunk order.
fn chunks(dir: &Path) -> Vec<(u64, Vec<String>)> {
    let gulp = GulpDirectory::open(dir).unwrap();
    gulp.chunks()
        .iter()
        .map(|c| (c.chunk, c.ids().map(str::to_owned).collect()))
        .collect()
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// Waits until `path` exists (a commit on the writer's thread).
fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn pixels_and_jpeg_bytes_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let rgb = vec![frame(32, 24, 3, 0), frame(32, 24, 3, 1)];
    // The frames of one item may differ in size.
    let gray = vec![frame(16, 16, 1, 2), frame(20, 12, 1, 3)];
    let jpegs = vec![noise_jpeg(), encode_jpeg(&frame(8, 8, 3, 4), 75).unwrap()];
    let mut writer = builder(2, 2).open(&out).unwrap();
    assert!(
        writer
            .add(
                "rgb",
                meta(&[("caption", "two frames".into())]),
                Frames::Pixels(rgb.clone())
            )
            .unwrap()
    );
    assert!(
        writer
            .add("gray", Value::Null, Frames::Pixels(gray.clone()))
            .unwrap()
    );
    assert!(
        writer
            .add("jpeg", meta(&[]), Frames::Jpeg(jpegs.clone()))
            .unwrap()
    );
    let report = writer.finish().unwrap();
    assert_eq!(
        (report.items, report.frames, report.chunks.clone()),
        (3, 6, vec![0, 1])
    );
    assert_eq!(report.already_present, 0);
    assert_eq!(report.label_file, None);
    assert_eq!(
        chunks(&out),
        [(0, ids(&["rgb", "gray"])), (1, ids(&["jpeg"]))]
    );

    let gulp = GulpDirectory::open(&out).unwrap();
    // Pixels: the pipeline's encoder at quality 90, 4:4:4 ("auto").
    let stored = gulp.frames("rgb", &Selection::All).unwrap();
    for (jpeg, px) in stored.iter().zip(&rgb) {
        assert_eq!(jpeg.as_ref(), encode_jpeg(px, 90).unwrap());
    }
    let stored = gulp.frames("gray", &Selection::All).unwrap();
    for (jpeg, px) in stored.iter().zip(&gray) {
        assert_eq!(jpeg.as_ref(), encode_jpeg(px, 90).unwrap());
    }
    // JPEG bytes: as given, byte for byte.
    let stored = gulp.frames("jpeg", &Selection::All).unwrap();
    assert_eq!(stored.iter().map(|f| f.to_vec()).collect::<Vec<_>>(), jpegs);
    assert_eq!(
        gulp.meta_data("rgb").unwrap(),
        &meta(&[("caption", "two frames".into())])
    );
    assert_eq!(gulp.meta_data("gray").unwrap(), &Value::Null);
    // Nothing else in the directory: no temporary file, no label file.
    assert_eq!(
        media::names(&out),
        ["data_0.gulp", "data_1.gulp", "meta_0.gmeta", "meta_1.gmeta"]
    );
}

#[test]
fn quality_subsampling_and_msgpack_are_the_ingest_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let px = frame(32, 16, 3, 9);
    let mut b = builder(10, 1);
    b.quality(60)
        .subsampling(SubsamplingChoice::S420)
        .meta_format(MetaFormat::Msgpack);
    let mut writer = b.open(tmp.path()).unwrap();
    writer
        .add("a", meta(&[]), Frames::Pixels(vec![px.clone()]))
        .unwrap();
    writer.finish().unwrap();
    let gulp = GulpDirectory::open(tmp.path()).unwrap();
    assert_eq!(gulp.chunks()[0].format(), MetaFormat::Msgpack);
    assert_eq!(
        gulp.frames("a", &Selection::All).unwrap()[0].as_ref(),
        encode_jpeg_with(&px, 60, false).unwrap()
    );
}

/// Many items of several shapes through 1 and 4 workers: the same bytes.
#[test]
fn output_is_identical_for_any_number_of_workers() {
    let tmp = tempfile::tempdir().unwrap();
    let mut contents = Vec::new();
    for workers in [1, 4] {
        let out = tmp.path().join(format!("w{workers}"));
        let mut writer = builder(7, workers).open(&out).unwrap();
        for k in 0..40u8 {
            let frames = match k % 3 {
                0 => Frames::Jpeg(vec![noise_jpeg()]),
                1 => Frames::Pixels((0..3).map(|s| frame(40, 30, 3, k + s)).collect()),
                _ => Frames::Pixels(vec![frame(24, 48, 1, k)]),
            };
            let label = ["b", "a", "c"][usize::from(k % 3)];
            writer
                .add(
                    &format!("item-{k}"),
                    meta(&[("label", label.into())]),
                    frames,
                )
                .unwrap();
            if k == 17 {
                writer.end_chunk().unwrap();
            }
        }
        let report = writer.finish().unwrap();
        assert_eq!(report.chunks, [0, 1, 2, 3, 4, 5, 6]);
        contents.push(media::dir_contents(&out));
    }
    assert_eq!(contents[0].len(), 15); // 7 chunk pairs + label2idx.json
    assert!(
        contents[0] == contents[1],
        "1 and 4 workers wrote different bytes"
    );
}

#[test]
fn end_chunk_closes_a_short_chunk() {
    let tmp = tempfile::tempdir().unwrap();
    let mut writer = builder(3, 2).open(tmp.path()).unwrap();
    let one = || Frames::Pixels(vec![frame(8, 8, 1, 0)]);
    writer.end_chunk().unwrap(); // nothing to end yet
    for id in ["a", "b"] {
        writer.add(id, Value::Null, one()).unwrap();
    }
    writer.end_chunk().unwrap();
    writer.end_chunk().unwrap(); // the chunk is empty again: nothing
    for id in ["c", "d", "e", "f"] {
        writer.add(id, Value::Null, one()).unwrap();
    }
    assert_eq!(writer.finish().unwrap().chunks, [0, 1, 2]);
    assert_eq!(
        chunks(tmp.path()),
        [
            (0, ids(&["a", "b"])),
            (1, ids(&["c", "d", "e"])),
            (2, ids(&["f"]))
        ]
    );
}

#[test]
fn an_existing_directory_gets_new_chunks_and_its_ids_are_refused_or_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let one = || Frames::Pixels(vec![frame(8, 8, 3, 0)]);
    let mut writer = builder(2, 2).open(dir).unwrap();
    for id in ["a", "b", "c"] {
        writer.add(id, Value::Null, one()).unwrap();
    }
    writer.finish().unwrap();

    // Refused: nothing of the item is written, the writer goes on.
    let mut writer = builder(2, 2).open(dir).unwrap();
    let err = writer.add("b", Value::Null, one()).unwrap_err();
    assert!(matches!(err, Error::IdExists { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "{}: id \"b\" is already in the directory (on_exists \"skip\" skips such ids)",
            dir.display()
        )
    );
    writer.add("d", Value::Null, one()).unwrap();
    let report = writer.finish().unwrap();
    assert_eq!((report.items, report.chunks), (1, vec![2]));

    // Skipped and counted.
    let mut b = builder(2, 2);
    b.on_exists(OnExists::Skip);
    let mut writer = b.open(dir).unwrap();
    assert!(!writer.add("a", Value::Null, one()).unwrap());
    assert!(writer.add("e", Value::Null, one()).unwrap());
    assert!(!writer.add("d", Value::Null, one()).unwrap());
    let report = writer.finish().unwrap();
    assert_eq!((report.items, report.already_present), (1, 2));
    assert_eq!(
        chunks(dir),
        [
            (0, ids(&["a", "b"])),
            (1, ids(&["c"])),
            (2, ids(&["d"])),
            (3, ids(&["e"]))
        ]
    );
}

#[test]
fn new_chunks_are_numbered_after_the_highest() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut writer = builder(1, 1).open(dir).unwrap();
    writer
        .add("a", Value::Null, Frames::Jpeg(vec![noise_jpeg()]))
        .unwrap();
    writer.finish().unwrap();
    for (from, to) in [
        ("data_0.gulp", "data_7.gulp"),
        ("meta_0.gmeta", "meta_7.gmeta"),
    ] {
        fs::rename(dir.join(from), dir.join(to)).unwrap();
    }
    let mut writer = builder(1, 1).open(dir).unwrap();
    writer
        .add("b", Value::Null, Frames::Jpeg(vec![noise_jpeg()]))
        .unwrap();
    assert_eq!(writer.finish().unwrap().chunks, [8]);
}

#[test]
fn an_id_given_twice_is_refused_whatever_on_exists_says() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = builder(5, 2);
    b.on_exists(OnExists::Skip);
    let mut writer = b.open(tmp.path()).unwrap();
    let one = || Frames::Jpeg(vec![noise_jpeg()]);
    writer.add("x", Value::Null, one()).unwrap();
    let err = writer.add("x", Value::Null, one()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}: id \"x\" was given twice", tmp.path().display())
    );
    let report = writer.finish().unwrap();
    assert_eq!(report.items, 1);
    assert_eq!(chunks(tmp.path()), [(0, ids(&["x"]))]);
}

#[test]
fn bad_items_are_refused_whole_and_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let d = dir.display();
    let good = noise_jpeg();
    let mut not_rgb = frame(4, 4, 3, 0);
    not_rgb.channels = 4;
    let mut short = frame(4, 4, 3, 0);
    short.data.pop();
    let cases: Vec<(&str, Value, Frames, String)> = vec![
        (
            "empty",
            Value::Null,
            Frames::Pixels(vec![]),
            format!("{d}: id \"empty\": no frames"),
        ),
        (
            "empty-jpeg",
            Value::Null,
            Frames::Jpeg(vec![]),
            format!("{d}: id \"empty-jpeg\": no frames"),
        ),
        (
            "not-jpeg",
            Value::Null,
            Frames::Jpeg(vec![good.clone(), b"\x89PNG\r\n".to_vec()]),
            format!(
                "{d}: id \"not-jpeg\" frame 1: not a JPEG stream (no start-of-image marker at byte 0)"
            ),
        ),
        (
            "cut-jpeg",
            Value::Null,
            Frames::Jpeg(vec![good[..good.len() - 10].to_vec()]),
            format!(
                "{d}: id \"cut-jpeg\" frame 0: truncated JPEG: no end-of-image marker at the end ({} bytes)",
                good.len() - 10
            ),
        ),
        (
            "rgba",
            Value::Null,
            Frames::Pixels(vec![frame(4, 4, 3, 0), frame(4, 4, 3, 1), not_rgb]),
            format!("{d}: id \"rgba\" frame 2: 4 channels; frames must have 1 (gray) or 3 (RGB)"),
        ),
        (
            "short",
            Value::Null,
            Frames::Pixels(vec![short]),
            format!("{d}: id \"short\" frame 0: 4x4x3 frame with 47 bytes of pixels"),
        ),
        (
            "wide",
            Value::Null,
            Frames::Pixels(vec![frame(70_000, 1, 1, 0)]),
            format!("{d}: id \"wide\" frame 0: 70000 pixels wide: JPEG allows 65535"),
        ),
        (
            "idx",
            meta(&[("label", "dog".into()), ("idx", 3i64.into())]),
            Frames::Jpeg(vec![good.clone()]),
            format!(
                "{d}: id \"idx\": its meta has \"idx\": 3, but label \"dog\" is 0 in label2idx.json (turn label numbering off to keep your own numbers)"
            ),
        ),
    ];
    let mut writer = builder(2, 2).open(dir).unwrap();
    for (id, meta, frames, want) in cases {
        let err = writer.add(id, meta, frames).unwrap_err();
        assert!(matches!(err, Error::Rejected { .. }), "{id}: {err:?}");
        assert_eq!(err.to_string(), want);
        // The id was not taken: a good item of the same id goes in.
        writer
            .add(id, Value::Null, Frames::Jpeg(vec![good.clone()]))
            .unwrap();
    }
    let report = writer.finish().unwrap();
    assert_eq!((report.items, report.frames), (8, 8));
    // No label was numbered for the refused item.
    assert_eq!(report.label_file, None);
    assert!(!dir.join("label2idx.json").exists());
    let gulp = GulpDirectory::open(dir).unwrap();
    for id in ["empty", "not-jpeg", "rgba", "idx"] {
        assert_eq!(gulp.frames(id, &Selection::All).unwrap().len(), 1, "{id}");
        assert_eq!(gulp.meta_data(id).unwrap(), &Value::Null);
    }
}

#[test]
fn labels_are_numbered_after_those_of_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fs::write(dir.join("label2idx.json"), r#"{"cat": 0, "zebra": 4}"#).unwrap();
    let one = || Frames::Jpeg(vec![noise_jpeg()]);
    let mut writer = builder(2, 2).open(dir).unwrap();
    let items = [
        ("1", meta(&[("label", "dog".into()), ("n", 1i64.into())])),
        ("2", meta(&[("label", "cat".into())])),
        ("3", meta(&[("label", "ant".into()), ("idx", 6i64.into())])),
        ("4", meta(&[("label", "dog".into())])),
        ("5", meta(&[("caption", "no label".into())])),
        ("6", meta(&[("label", 12i64.into())])),
        ("7", Value::from(vec![Value::from("not a dict")])),
    ];
    for (id, m) in &items {
        writer.add(id, m.clone(), one()).unwrap();
    }
    let report = writer.finish().unwrap();
    assert_eq!(report.label_file, Some(dir.join("label2idx.json")));
    assert_eq!(
        fs::read_to_string(dir.join("label2idx.json")).unwrap(),
        r#"{"cat": 0, "zebra": 4, "dog": 5, "ant": 6}"#
    );
    let gulp = GulpDirectory::open(dir).unwrap();
    let with_idx = |mut m: Value, idx: i64| {
        if let Value::Object(map) = &mut m {
            map.insert("idx".into(), idx.into());
        }
        m
    };
    let want = [
        with_idx(items[0].1.clone(), 5),
        with_idx(items[1].1.clone(), 0),
        items[2].1.clone(),
        with_idx(items[3].1.clone(), 5),
        items[4].1.clone(),
        items[5].1.clone(),
        items[6].1.clone(),
    ];
    for ((id, _), want) in items.iter().zip(&want) {
        assert_eq!(gulp.meta_data(id).unwrap(), want, "{id}");
    }

    // Labels left alone when numbering is off.
    let other = tmp.path().join("off");
    let mut b = builder(2, 1);
    b.number_labels(false);
    let mut writer = b.open(&other).unwrap();
    writer.add("1", items[0].1.clone(), one()).unwrap();
    assert_eq!(writer.finish().unwrap().label_file, None);
    assert!(!other.join("label2idx.json").exists());
    let gulp = GulpDirectory::open(&other).unwrap();
    assert_eq!(gulp.meta_data("1").unwrap(), &items[0].1);
}

/// The label file is written before the chunk that needs it is committed:
/// whenever a chunk's meta is there, its labels are in the file.
#[test]
fn labels_are_written_before_each_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut writer = builder(1, 2).open(dir).unwrap();
    for (k, label) in ["walk", "run", "walk", "jump"].iter().enumerate() {
        writer
            .add(
                &k.to_string(),
                meta(&[("label", (*label).into())]),
                Frames::Jpeg(vec![noise_jpeg()]),
            )
            .unwrap();
        wait_for(&dir.join(format!("meta_{k}.gmeta")));
        let labels = gulp_io::LabelIndex::read(dir).unwrap().unwrap();
        assert_eq!(labels.index(label), Some([0, 1, 0, 2][k]), "{label}");
    }
    writer.finish().unwrap();
}

#[test]
fn the_directory_is_locked_while_a_writer_is_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let writer = builder(2, 1).open(dir).unwrap();
    let locked = format!(
        "{}: another ingest or writer is writing into this directory",
        dir.display()
    );
    let err = builder(2, 1).open(dir).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }));
    assert_eq!(err.to_string(), locked);
    // gulp ingest takes the same lock.
    let input = tmp.path().join("images");
    media::jpeg_folder(&input.join("cat"), "16x16", 1);
    let adapter = gulp_ingest::adapters::Dataset::image_folder(&input, dir).unwrap();
    let err = gulp_ingest::ingest(
        &adapter,
        dir,
        &gulp_ingest::IngestOptions::default(),
        &mut |_| {},
    )
    .unwrap_err();
    assert_eq!(err.to_string(), locked);
    writer.finish().unwrap();
    builder(2, 1).open(dir).unwrap().finish().unwrap();
}

#[test]
fn leftovers_of_an_interrupted_write_are_recovered_at_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let temp = dir.join(".gulp-tmp.data_3.gulp");
    fs::write(&temp, b"half a chunk").unwrap();
    let writer = builder(2, 1).open(dir).unwrap();
    assert_eq!(writer.recovered(), [Recovery::RemovedTemp(temp.clone())]);
    let report = writer.finish().unwrap();
    assert_eq!(report.recovered, [Recovery::RemovedTemp(temp)]);
    assert!(media::names(dir).is_empty());
}

/// A writer dropped without `finish` commits the chunks completed before
/// (full, or ended) and discards the one being filled, temporary files
/// included.
#[test]
fn a_dropped_writer_commits_completed_chunks_only() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut writer = builder(2, 2).open(dir).unwrap();
    for id in ["a", "b", "c"] {
        writer
            .add(id, Value::Null, Frames::Pixels(vec![frame(64, 64, 3, 0)]))
            .unwrap();
    }
    writer.end_chunk().unwrap();
    writer
        .add("d", Value::Null, Frames::Pixels(vec![frame(64, 64, 3, 0)]))
        .unwrap();
    drop(writer);
    assert_eq!(
        media::names(dir),
        ["data_0.gulp", "data_1.gulp", "meta_0.gmeta", "meta_1.gmeta"]
    );
    assert_eq!(chunks(dir), [(0, ids(&["a", "b"])), (1, ids(&["c"]))]);
    // The lock went with it.
    builder(2, 1).open(dir).unwrap().finish().unwrap();
}

#[test]
fn options_that_would_write_nothing_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let err = |b: &WriterBuilder, dir: &Path| b.open(dir).unwrap_err().to_string();
    assert_eq!(
        err(&builder(0, 1), tmp.path()),
        "invalid options: items per chunk must be at least 1, not 0"
    );
    assert_eq!(
        err(&builder(1, 0), tmp.path()),
        "invalid options: workers must be at least 1, not 0"
    );
    assert!(matches!(
        builder(1, 0).open(tmp.path()).unwrap_err(),
        gulp_ingest::Error::InvalidOption {
            option: "workers",
            expected: "at least 1",
            ..
        }
    ));
    let mut b = builder(1, 1);
    b.quality(0);
    assert_eq!(
        err(&b, tmp.path()),
        "invalid options: quality must be 1 to 100, not 0"
    );
    assert_eq!(
        err(&builder(1, 1), Path::new("s3://bucket/prefix")),
        "invalid options: s3://bucket/prefix: the writer writes local directories (write locally, then copy, or use `gulp ingest` into a bucket)"
    );
    assert!(media::names(tmp.path()).is_empty());
}
