//! The pipeline on real files: determinism across worker counts, JPEG
//! pass-through, broken inputs, strict mode, memory spill.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::fs;
use std::path::Path;

use gulp_ingest::adapters::Dataset;
use gulp_ingest::{
    DatasetAdapter, Error, FrameOptions, FrameSource, IngestOptions, Item, ItemError, Pixels,
    ingest,
};
use gulp_io::{GulpDirectory, Selection};
use gulp_test_support::media;

/// A mixed 20BN-CSV-JPEG dataset: `n` folders of test-pattern JPEGs.
fn jpeg_dataset(root: &Path, n: usize) -> (std::path::PathBuf, std::path::PathBuf) {
    let frames = root.join("frames");
    let mut csv = String::new();
    for i in 0..n {
        let size = ["96x64", "64x96", "80x80", "120x90"][i % 4];
        media::jpeg_folder(&frames.join(format!("clip{i}")), size, 3 + (i % 3) as u32);
        csv.push_str(&format!("clip{i};label {}\n", i % 3));
    }
    let list = root.join("list.csv");
    fs::write(&list, csv).unwrap();
    (list, frames)
}

fn opts(workers: usize, short_edge: Option<u32>) -> IngestOptions {
    IngestOptions {
        items_per_chunk: 3,
        workers,
        frames: FrameOptions {
            short_edge,
            ..FrameOptions::default()
        },
        fsync: false,
        ..IngestOptions::default()
    }
}

#[test]
fn output_is_identical_for_any_number_of_workers() {
    let tmp = tempfile::tempdir().unwrap();
    let (list, frames) = jpeg_dataset(tmp.path(), 10);
    // A few videos too, resized, through the same pipeline.
    let videos = tmp.path().join("videos");
    let mut json = Vec::new();
    for i in 0..4 {
        let d = videos.join(format!("v{i}"));
        fs::create_dir_all(&d).unwrap();
        media::test_video(&d.join("v.mp4"), ["128x72", "72x128"][i % 2], 16, 1.5);
        json.push(format!(
            "{{\"id\": \"v{i}\", \"template\": \"t{}\"}}",
            i % 2
        ));
    }
    let json_path = tmp.path().join("videos.json");
    fs::write(&json_path, format!("[{}]", json.join(", "))).unwrap();

    let mut results = Vec::new();
    for workers in [1, 4] {
        let out = tmp.path().join(format!("out{workers}"));
        let d = Dataset::twenty_bn_csv_jpeg(&list, &frames, &out).unwrap();
        let r = ingest(&d, &out, &opts(workers, Some(48)), &mut |_| {}).unwrap();
        assert_eq!((r.items, r.chunks.len()), (10, 4));
        let d = Dataset::twenty_bn_json(&json_path, &videos, &out, "template").unwrap();
        let r = ingest(&d, &out, &opts(workers, Some(48)), &mut |_| {}).unwrap();
        assert_eq!((r.items, r.chunks), (4, vec![4, 5]));
        results.push(media::dir_contents(&out));
    }
    assert_eq!(results[0].len(), 13); // 6 chunk pairs + label2idx.json
    assert!(
        results[0] == results[1],
        "1 and 4 workers wrote different bytes"
    );
    // Resized by the short edge to 48: 96x64 -> 72x48, 64x96 -> 48x72.
    let gulp = GulpDirectory::open(tmp.path().join("out1")).unwrap();
    let shapes: Vec<Vec<usize>> = ["clip0", "clip1", "clip2", "v0", "v1"]
        .iter()
        .map(|id| {
            let f = gulp.frames(id, &Selection::parse("0").unwrap()).unwrap();
            gulp_codec::decode_jpeg(&f[0], gulp_codec::ColorMode::Auto)
                .unwrap()
                .shape()
        })
        .collect();
    assert_eq!(
        shapes,
        [
            vec![48, 72, 3],
            vec![72, 48, 3],
            vec![48, 48, 3],
            vec![48, 85, 3],
            vec![85, 48, 3]
        ]
    );
}

#[test]
fn jpeg_frames_without_resize_are_stored_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let (list, frames) = jpeg_dataset(tmp.path(), 5);
    let out = tmp.path().join("out");
    let d = Dataset::twenty_bn_csv_jpeg(&list, &frames, &out).unwrap();
    let r = ingest(&d, &out, &opts(2, None), &mut |_| {}).unwrap();
    assert_eq!(r.items, 5);
    let gulp = GulpDirectory::open(&out).unwrap();
    for i in 0..5 {
        let id = format!("clip{i}");
        let mut files: Vec<_> = fs::read_dir(frames.join(&id))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        let stored = gulp.frames(&id, &Selection::All).unwrap();
        assert_eq!(stored.len(), files.len());
        for (f, s) in files.iter().zip(&stored) {
            assert_eq!(&fs::read(f).unwrap()[..], &s[..], "{}", f.display());
        }
        // The records are padded with zeros to 4 bytes.
        for fi in &gulp.item(&id).unwrap().frame_info {
            assert_eq!(fi.length % 4, 0);
        }
    }
    // Resizing to the size a frame already has keeps its bytes too.
    let out2 = tmp.path().join("out2");
    let d = Dataset::twenty_bn_csv_jpeg(&list, &frames, &out2).unwrap();
    ingest(&d, &out2, &opts(2, Some(80)), &mut |_| {}).unwrap();
    let gulp2 = GulpDirectory::open(&out2).unwrap();
    assert_eq!(
        gulp2.frames("clip2", &Selection::All).unwrap(),
        gulp.frames("clip2", &Selection::All).unwrap()
    );
}

/// Broken inputs of every kind next to good ones.
fn broken_dataset(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let videos = root.join("videos");
    let good = root.join("good.mp4");
    media::test_video(&good, "64x48", 10, 1.0);
    let mk = |id: &str| {
        let d = videos.join(id);
        fs::create_dir_all(&d).unwrap();
        d
    };
    fs::copy(&good, mk("good1").join("a.mp4")).unwrap();
    fs::copy(&good, mk("good2").join("b.webm")).unwrap();
    let bytes = fs::read(&good).unwrap();
    fs::write(mk("truncated").join("t.mp4"), &bytes[..bytes.len() / 3]).unwrap();
    fs::write(
        mk("garbage").join("g.mp4"),
        b"this is not a video at all\n".repeat(50),
    )
    .unwrap();
    mk("empty");
    media::ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:duration=1",
        mk("audio").join("sound.mp4").to_str().unwrap(),
    ]);
    let ids = [
        "good1",
        "truncated",
        "garbage",
        "missing",
        "empty",
        "audio",
        "good2",
    ];
    let json = ids
        .iter()
        .map(|i| format!("{{\"id\": \"{i}\", \"template\": \"x\"}}"))
        .collect::<Vec<_>>();
    let list = root.join("list.json");
    fs::write(&list, format!("[{}]", json.join(", "))).unwrap();
    (list, videos)
}

fn temp_files(dir: &Path) -> Vec<String> {
    media::names(dir)
        .into_iter()
        .filter(|n| n.starts_with(".gulp-tmp"))
        .collect()
}

#[test]
fn broken_inputs_are_skipped_and_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let (list, videos) = broken_dataset(tmp.path());
    let out = tmp.path().join("out");
    let d = Dataset::twenty_bn_json(&list, &videos, &out, "template").unwrap();
    let r = ingest(&d, &out, &opts(2, None), &mut |_| {}).unwrap();
    assert_eq!(r.items, 2);
    let skipped: Vec<(&str, &str)> = r
        .skipped
        .iter()
        .map(|s| (s.id.as_str(), s.error.reason.as_str()))
        .collect();
    let ids: Vec<&str> = skipped.iter().map(|s| s.0).collect();
    assert_eq!(
        ids,
        ["truncated", "garbage", "missing", "empty", "audio"],
        "{skipped:?}"
    );
    let reason = |id: &str| skipped.iter().find(|s| s.0 == id).unwrap().1;
    assert!(
        reason("garbage").contains("ffmpeg failed"),
        "{}",
        reason("garbage")
    );
    assert!(
        reason("garbage").contains("Invalid data"),
        "{}",
        reason("garbage")
    );
    assert!(
        reason("missing").contains("cannot list video folder"),
        "{}",
        reason("missing")
    );
    assert!(
        reason("empty").contains("no video file"),
        "{}",
        reason("empty")
    );
    assert!(
        reason("audio").contains("no video stream"),
        "{}",
        reason("audio")
    );
    assert!(!reason("truncated").is_empty());
    // The path of the bad file is named.
    let garbage = r.skipped.iter().find(|s| s.id == "garbage").unwrap();
    assert!(
        garbage
            .error
            .path
            .as_ref()
            .unwrap()
            .ends_with("garbage/g.mp4")
    );
    assert!(temp_files(&out).is_empty());
    let gulp = GulpDirectory::open(&out).unwrap();
    assert_eq!(gulp.ids().collect::<Vec<_>>(), ["good1", "good2"]);
    assert!(gulp.warnings().is_empty());

    // Strict mode stops at the first failure, and leaves nothing of the
    // unfinished chunk.
    let out = tmp.path().join("strict");
    let d = Dataset::twenty_bn_json(&list, &videos, &out, "template").unwrap();
    let strict = IngestOptions {
        strict: true,
        ..opts(2, None)
    };
    let err = ingest(&d, &out, &strict, &mut |_| {}).unwrap_err();
    match &err {
        Error::Item { id, index, .. } => assert_eq!((id.as_str(), *index), ("truncated", 1)),
        other => panic!("unexpected error {other}"),
    }
    assert!(err.to_string().contains("truncated"), "{err}");
    assert!(temp_files(&out).is_empty());
    assert!(GulpDirectory::open(&out).unwrap().is_empty());
}

#[test]
fn broken_images_are_skipped_and_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let (list, frames) = jpeg_dataset(tmp.path(), 3);
    // clip1: a truncated JPEG among good ones; clip2: a garbage .jpg.
    let f = frames.join("clip1/00002.jpg");
    let bytes = fs::read(&f).unwrap();
    fs::write(&f, &bytes[..bytes.len() - 100]).unwrap();
    fs::write(frames.join("clip2/00001.jpg"), b"<html>not a jpeg</html>").unwrap();
    fs::write(
        tmp.path().join("list.csv"),
        "clip0;a\nclip1;a\nclip2;b\nnothere;b\n",
    )
    .unwrap();
    let out = tmp.path().join("out");
    let d = Dataset::twenty_bn_csv_jpeg(&list, &frames, &out).unwrap();
    let r = ingest(&d, &out, &opts(2, None), &mut |_| {}).unwrap();
    assert_eq!(r.items, 1);
    let got: Vec<String> = r.skipped.iter().map(ToString::to_string).collect();
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        got[0].contains("clip1")
            && got[0].contains("00002.jpg")
            && got[0].contains("truncated JPEG"),
        "{}",
        got[0]
    );
    assert!(
        got[1].contains("clip2") && got[1].contains("00001.jpg") && got[1].contains("not a JPEG"),
        "{}",
        got[1]
    );
    assert!(
        got[2].contains("nothere") && got[2].contains("cannot list frame folder"),
        "{}",
        got[2]
    );
    // With a resize the truncated JPEG is decoded instead: still an error.
    let out = tmp.path().join("out-resized");
    let d = Dataset::twenty_bn_csv_jpeg(&list, &frames, &out).unwrap();
    let r = ingest(&d, &out, &opts(2, Some(32)), &mut |_| {}).unwrap();
    assert_eq!(r.items, 1);
    assert_eq!(r.skipped.len(), 3);
}

#[test]
fn malformed_lists_are_errors_naming_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let p = tmp.path().join("l.csv");
    fs::write(&p, "a;x\nb;y;z\n").unwrap();
    let e = Dataset::twenty_bn_csv_jpeg(&p, tmp.path(), &out)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("l.csv") && e.contains("line 2") && e.contains("3 fields"),
        "{e}"
    );
    let p = tmp.path().join("l.json");
    fs::write(
        &p,
        "[{\"id\": 1, \"template\": \"a\"}, {\"template\": \"b\"}]",
    )
    .unwrap();
    let e = Dataset::twenty_bn_json(&p, tmp.path(), &out, "template")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("l.json") && e.contains("entry #1") && e.contains("no \"id\""),
        "{e}"
    );
    fs::write(&p, "[{\"id\": 1, \"template\": \"a\"},").unwrap();
    let e = Dataset::twenty_bn_json(&p, tmp.path(), &out, "template")
        .unwrap_err()
        .to_string();
    assert!(e.contains("l.json") && e.contains("at byte 28"), "{e}");
    let p = tmp.path().join("l.txt");
    fs::write(&p, "a.jpg,cat\nno-comma-here\n").unwrap();
    let e = Dataset::image_list(&p, tmp.path(), &out)
        .unwrap_err()
        .to_string();
    assert!(e.contains("l.txt") && e.contains("line 2"), "{e}");
    let e = Dataset::image_folder(&tmp.path().join("nope"), &out)
        .unwrap_err()
        .to_string();
    assert!(e.contains("nope") && e.contains("not a directory"), "{e}");
}

/// A custom adapter: pixels in memory, a gray item, an item that fails, a
/// panicking item.
struct Custom {
    panic_at: Option<usize>,
}

impl DatasetAdapter for Custom {
    fn len(&self) -> usize {
        6
    }
    fn id(&self, index: usize) -> String {
        format!("item{index}")
    }
    fn item(&self, index: usize) -> Result<Item, ItemError> {
        if self.panic_at == Some(index) {
            panic!("adapter bug at {index}");
        }
        if index == 3 {
            return Err(ItemError::new("the label server said no"));
        }
        let channels = if index == 2 { 1 } else { 3 };
        let frame = |v: u8| Pixels {
            width: 20,
            height: 10,
            channels,
            data: vec![v; 200 * usize::from(channels)],
        };
        Ok(Item {
            meta: [("n", gulp_format::Value::Int(index as i64))]
                .into_iter()
                .collect(),
            frames: FrameSource::Pixels(vec![frame(10), frame(200)]),
        })
    }
}

#[test]
fn custom_adapter_pixels_failures_and_panics() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let r = ingest(
        &Custom { panic_at: None },
        &out,
        &opts(3, Some(5)),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!((r.items, r.frames), (5, 10));
    assert_eq!(r.skipped.len(), 1);
    assert_eq!(r.skipped[0].id, "item3");
    let gulp = GulpDirectory::open(&out).unwrap();
    let f = gulp.frames("item2", &Selection::All).unwrap();
    let img = gulp_codec::decode_jpeg(&f[1], gulp_codec::ColorMode::Auto).unwrap();
    assert_eq!(img.shape(), vec![5, 10]); // gray, resized by the short edge
    assert!(img.pixels.iter().all(|&p| p.abs_diff(200) <= 2));
    assert!(temp_files(&out).is_empty());

    let out = tmp.path().join("panics");
    let mut last = gulp_ingest::Progress::default();
    let err = ingest(
        &Custom { panic_at: Some(4) },
        &out,
        &opts(2, None),
        &mut |p| last = *p,
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("gulp-ingest-worker-") && text.contains("adapter bug at 4"),
        "{text}"
    );
    // Items 0..2 were committed as chunk 0 before the panic; nothing else.
    let gulp = GulpDirectory::open(&out).unwrap();
    assert_eq!(gulp.ids().collect::<Vec<_>>(), ["item0", "item1", "item2"]);
    assert!(temp_files(&out).is_empty());
    assert_eq!(last.chunks, 1);
}

/// Items bigger than their share of the memory budget go through a spill
/// file and come out the same.
#[test]
fn long_items_spill_and_come_back_identical() {
    let tmp = tempfile::tempdir().unwrap();
    // 64 frames of ~100 kB each: past the per-item share with 1 worker
    // (128 MiB / 4 = 32 MiB)? No: so use raw JPEG bytes of 1.5 MB each.
    let jpeg = fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../gulp-io/benches/data/photo-176x100.jpg"
    ))
    .unwrap();
    let mut big = jpeg.clone();
    // A JPEG stays valid with data after its end marker only if we keep the
    // marker last, so repeat the whole file inside a COM segment instead.
    big.truncate(2);
    let com_len = 60_000u16;
    big.extend([0xFF, 0xFE]);
    big.extend(com_len.to_be_bytes());
    big.extend(std::iter::repeat_n(b'x', usize::from(com_len) - 2));
    big.extend(&jpeg[2..]);
    struct Big(Vec<u8>);
    impl DatasetAdapter for Big {
        fn len(&self) -> usize {
            2
        }
        fn id(&self, i: usize) -> String {
            format!("big{i}")
        }
        fn item(&self, _: usize) -> Result<Item, ItemError> {
            Ok(Item {
                meta: gulp_format::Value::Null,
                frames: FrameSource::Jpeg(vec![self.0.clone(); 700]),
            })
        }
    }
    let out = tmp.path().join("out");
    let r = ingest(&Big(big.clone()), &out, &opts(1, None), &mut |_| {}).unwrap();
    assert_eq!(r.frames, 1400);
    let gulp = GulpDirectory::open(&out).unwrap();
    let frames = gulp.frames("big1", &Selection::All).unwrap();
    assert_eq!(frames.len(), 700);
    assert!(frames.iter().all(|f| f[..] == big[..]));
    assert!(media::names(&out).iter().all(|n| !n.starts_with('.')));
}
