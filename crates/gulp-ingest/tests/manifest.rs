//! `manifest` ingest of real encoded videos: CSV, JSONL and Parquet give the
//! same items; each clip's frames are those its span shows, by the
//! videos' own timestamps; bad rows are reported with the rest ingested;
//! one ffmpeg decodes each video.
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss
)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gulp_format::{Audio, FrameTimes, ItemMeta, Value};
use gulp_ingest::manifest::ManifestOptions;
use gulp_ingest::video::AudioRequest;
use gulp_ingest::{AdapterKind, IngestReport, IngestRequest, ingest};
use gulp_io::GulpDirectory;
use gulp_test_support::media::{Container, FlashBeep, frame_times};

/// The videos of these tests, made once per test in `dir/v`.
struct Videos {
    dir: PathBuf,
}

impl Videos {
    /// `long.mp4` (6 s, 25 fps, H.264/AAC), `other.webm` (4 s, 30 fps,
    /// VP9/Opus), `vfr.mp4` (4 s, 30 fps with one frame in three kept
    /// between 1 s and 2 s; no sound).
    fn make(dir: &Path) -> Videos {
        let v = dir.join("v");
        fs::create_dir_all(&v).unwrap();
        FlashBeep::mp4(6.0, &[1.0, 4.0]).write(&v.join("long.mp4"));
        FlashBeep {
            container: Container::Webm,
            fps: 30,
            ..FlashBeep::mp4(4.0, &[2.0])
        }
        .write(&v.join("other.webm"));
        FlashBeep {
            fps: 30,
            vfr: true,
            sound: false,
            ..FlashBeep::mp4(4.0, &[])
        }
        .write(&v.join("vfr.mp4"));
        Videos {
            dir: dir.to_owned(),
        }
    }
}

/// The rows of the manifests: (id, path, start, end, caption, score,
/// label, views); an empty id is made from the path and span.
type Row = (
    &'static str,
    &'static str,
    f64,
    f64,
    &'static str,
    f64,
    &'static str,
    i64,
);

const ROWS: &[Row] = &[
    (
        "",
        "v/long.mp4",
        0.5,
        2.0,
        "a flash, then a pattern",
        0.9,
        "flash",
        12,
    ),
    (
        "",
        "v/other.webm",
        1.0,
        3.0,
        "webm with opus",
        0.4,
        "pattern",
        3,
    ),
    (
        "overlap",
        "v/long.mp4",
        1.5,
        3.25,
        "overlaps the first",
        0.8,
        "pattern",
        7,
    ),
    (
        "",
        "v/vfr.mp4",
        0.8,
        2.5,
        "across the variable rate",
        0.1,
        "pattern",
        0,
    ),
    (
        "late",
        "v/long.mp4",
        3.9,
        5.9,
        "the second flash",
        0.7,
        "flash",
        99,
    ),
];

fn write_csv(path: &Path) {
    let mut text = String::from("id,path,start,end,caption,score,label,views\n");
    for (id, p, s, e, c, sc, l, v) in ROWS {
        text.push_str(&format!("{id},{p},{s},{e},\"{c}\",{sc},{l},{v}\n"));
    }
    fs::write(path, text).unwrap();
}

fn write_jsonl(path: &Path) {
    let mut text = String::new();
    for (id, p, s, e, c, sc, l, v) in ROWS {
        let id = if id.is_empty() {
            "null".to_owned()
        } else {
            format!("{id:?}")
        };
        text.push_str(&format!(
            "{{\"id\": {id}, \"path\": {p:?}, \"start\": {s:?}, \"end\": {e:?}, \"caption\": {c:?}, \"score\": {sc:?}, \"label\": {l:?}, \"views\": {v}}}\n"
        ));
    }
    fs::write(path, text).unwrap();
}

fn write_parquet(path: &Path) {
    use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    let schema = parse_message_type(
        "message clips { OPTIONAL BYTE_ARRAY id (UTF8); REQUIRED BYTE_ARRAY path (UTF8); \
         REQUIRED DOUBLE start; REQUIRED DOUBLE end; REQUIRED BYTE_ARRAY caption (UTF8); \
         REQUIRED DOUBLE score; REQUIRED BYTE_ARRAY label (UTF8); REQUIRED INT64 views; }",
    )
    .unwrap();
    let file = fs::File::create(path).unwrap();
    let props = Arc::new(WriterProperties::builder().build());
    let mut writer = SerializedFileWriter::new(file, Arc::new(schema), props).unwrap();
    let mut group = writer.next_row_group().unwrap();
    let text = |f: fn(&Row) -> &'static str| -> Vec<ByteArray> {
        ROWS.iter().map(|r| ByteArray::from(f(r))).collect()
    };
    let number = |f: fn(&Row) -> f64| -> Vec<f64> { ROWS.iter().map(f).collect() };
    let mut k = 0;
    while let Some(mut column) = group.next_column().unwrap() {
        match k {
            0 => {
                let ids: Vec<ByteArray> = ROWS
                    .iter()
                    .filter(|r| !r.0.is_empty())
                    .map(|r| ByteArray::from(r.0))
                    .collect();
                let defined: Vec<i16> = ROWS.iter().map(|r| i16::from(!r.0.is_empty())).collect();
                column
                    .typed::<ByteArrayType>()
                    .write_batch(&ids, Some(&defined), None)
                    .unwrap();
            }
            1 => {
                _ = column
                    .typed::<ByteArrayType>()
                    .write_batch(&text(|r| r.1), None, None)
                    .unwrap()
            }
            2 => {
                _ = column
                    .typed::<DoubleType>()
                    .write_batch(&number(|r| r.2), None, None)
                    .unwrap()
            }
            3 => {
                _ = column
                    .typed::<DoubleType>()
                    .write_batch(&number(|r| r.3), None, None)
                    .unwrap()
            }
            4 => {
                _ = column
                    .typed::<ByteArrayType>()
                    .write_batch(&text(|r| r.4), None, None)
                    .unwrap()
            }
            5 => {
                _ = column
                    .typed::<DoubleType>()
                    .write_batch(&number(|r| r.5), None, None)
                    .unwrap()
            }
            6 => {
                _ = column
                    .typed::<ByteArrayType>()
                    .write_batch(&text(|r| r.6), None, None)
                    .unwrap()
            }
            7 => {
                let views: Vec<i64> = ROWS.iter().map(|r| r.7).collect();
                column
                    .typed::<Int64Type>()
                    .write_batch(&views, None, None)
                    .unwrap();
            }
            _ => unreachable!(),
        }
        column.close().unwrap();
        k += 1;
    }
    group.close().unwrap();
    writer.close().unwrap();
}

/// Ingests `manifest` into `out` with `opts` (workers and frame rate set
/// by the caller through `request`).
fn run(manifest: &Path, out: &Path, edit: impl FnOnce(&mut IngestRequest)) -> IngestReport {
    let mut request = IngestRequest::new(
        AdapterKind::Manifest,
        vec![manifest.to_owned()],
        out.to_owned(),
    );
    request.options.fsync = false;
    request.options.items_per_chunk = 2;
    edit(&mut request);
    let dataset = request.dataset().unwrap();
    ingest(&dataset, out, &request.options, &mut |_| {}).unwrap()
}

/// Every item of a directory: id, meta, frame bytes.
fn items(dir: &Path) -> Vec<(String, ItemMeta, Vec<Vec<u8>>)> {
    let gulp = GulpDirectory::open(dir).unwrap();
    let mut out = Vec::new();
    for chunk in gulp.chunks() {
        let reader = chunk.data_reader(gulp_io::ReadMode::Mmap).unwrap();
        for (id, item) in chunk.meta().unwrap().iter() {
            let frames = item
                .frame_info
                .iter()
                .enumerate()
                .map(|(k, fi)| reader.read(id, k, fi).unwrap().into_owned())
                .collect();
            out.push((id.to_owned(), item.clone(), frames));
        }
    }
    out
}

#[test]
fn csv_jsonl_and_parquet_give_the_same_clips() {
    let tmp = tempfile::tempdir().unwrap();
    let videos = Videos::make(tmp.path());
    let mut got = Vec::new();
    for (name, write) in [
        ("clips.csv", write_csv as fn(&Path)),
        ("clips.jsonl", write_jsonl),
        ("clips.parquet", write_parquet),
    ] {
        let manifest = videos.dir.join(name);
        write(&manifest);
        let out = tmp.path().join(format!("out-{name}"));
        let report = run(&manifest, &out, |r| r.options.frames.frame_rate = Some(4.0));
        assert_eq!(
            (report.items, report.skipped.len()),
            (5, 0),
            "{name}: {report:?}"
        );
        got.push(items(&out));
        let labels = fs::read_to_string(out.join("label2idx.json")).unwrap();
        assert_eq!(labels, r#"{"flash": 0, "pattern": 1}"#);
    }
    // The same items, ids, meta and frames, whatever the manifest's format.
    assert_eq!(got[0], got[1], "CSV and JSONL differ");
    assert_eq!(got[0], got[2], "CSV and Parquet differ");
    let items = &got[0];
    // The clips of one video together, in the order of its first row.
    let ids: Vec<&str> = items.iter().map(|(id, ..)| id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "v/long.mp4@0.5-2",
            "overlap",
            "late",
            "v/other.webm@1-3",
            "v/vfr.mp4@0.8-2.5"
        ]
    );
    for ((_, item, frames), row) in items
        .iter()
        .zip([ROWS[0], ROWS[2], ROWS[4], ROWS[1], ROWS[3]])
    {
        let (_, path, start, end, caption, score, label, views) = row;
        // 4 frames a second of the span, from its start.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let n = ((end - start) * 4.0 - 1e-9).ceil() as usize;
        assert_eq!(frames.len(), n, "{path} [{start}, {end})");
        assert_eq!(
            item.frame_times,
            Some(FrameTimes::Grid { start, step: 0.25 })
        );
        let meta = item.first_meta_data().unwrap();
        assert_eq!(meta.get("path"), Some(&Value::from(path)));
        assert_eq!(meta.get("start"), Some(&Value::Float(start)));
        assert_eq!(meta.get("end"), Some(&Value::Float(end)));
        assert_eq!(meta.get("caption"), Some(&Value::from(caption)));
        assert_eq!(meta.get("score"), Some(&Value::Float(score)));
        assert_eq!(meta.get("views"), Some(&Value::Int(views)));
        assert_eq!(meta.get("label"), Some(&Value::from(label)));
        let idx = i64::from(label == "pattern");
        assert_eq!(meta.get("idx"), Some(&Value::Int(idx)));
        assert!(item.audio.is_none(), "no sound was asked for");
    }
    // The overlapping clips share the frames they both show: [1.5, 2.0) of
    // the first is [0, 0.5) of the second, the same source frames.
    let (first, second) = (&items[0].2, &items[1].2);
    assert_eq!(first[4..6], second[0..2]);
    // The flash at 1.0-1.1 s: a white frame at 1.0 s (the first clip's
    // frame 2), none at 1.25 s.
    let white = |jpeg: &[u8]| {
        let image = gulp_codec::decode_jpeg(jpeg, gulp_codec::ColorMode::Gray).unwrap();
        image.pixels.iter().map(|&p| f64::from(p)).sum::<f64>() / image.pixels.len() as f64 > 240.0
    };
    assert!(white(&first[2]) && !white(&first[3]) && !white(&first[1]));
}

/// Without a frame rate, a clip keeps the frames whose presentation times
/// fall in its span, with those times: across a variable frame rate too.
#[test]
fn at_the_source_rate_the_frames_and_times_are_the_sources() {
    let tmp = tempfile::tempdir().unwrap();
    let videos = Videos::make(tmp.path());
    let manifest = videos.dir.join("vfr.csv");
    fs::write(
        &manifest,
        "path,start,end\nv/vfr.mp4,0.8,2.5\nv/vfr.mp4,,\n",
    )
    .unwrap();
    let out = tmp.path().join("out");
    let report = run(&manifest, &out, |_| {});
    assert_eq!(report.items, 2, "{report:?}");
    let source = frame_times(&videos.dir.join("v/vfr.mp4"));
    let got = items(&out);
    for (id, want) in [
        (
            "v/vfr.mp4@0.8-2.5",
            source
                .iter()
                .copied()
                .filter(|t| (0.8 - 1e-6..2.5 - 1e-6).contains(t))
                .collect::<Vec<_>>(),
        ),
        ("v/vfr.mp4", source.clone()),
    ] {
        let (_, item, frames) = got.iter().find(|(i, ..)| i == id).unwrap();
        let Some(FrameTimes::List(times)) = &item.frame_times else {
            panic!("{id}: {:?}", item.frame_times);
        };
        assert_eq!(frames.len(), want.len(), "{id}");
        for (t, w) in times.iter().zip(&want) {
            assert!((t - w).abs() < 1e-4, "{id}: {times:?} against {want:?}");
        }
    }
    // 30 fps, then one frame in three from 1 s to 2 s: 0.1 s apart there.
    assert!(source.windows(2).any(|w| w[1] - w[0] > 0.09));
    let check = gulp_io::check::check_directory(
        &out,
        gulp_io::check::Options {
            decode: true,
            threads: 1,
        },
        &|_| {},
    )
    .unwrap();
    assert!(check.is_clean(), "{:?}", check.problems);
}

#[test]
fn bad_rows_are_reported_with_their_row_and_the_rest_ingested() {
    let tmp = tempfile::tempdir().unwrap();
    let videos = Videos::make(tmp.path());
    fs::write(videos.dir.join("v/broken.mp4"), b"not a video at all").unwrap();
    let manifest = videos.dir.join("bad.csv");
    fs::write(
        &manifest,
        "id,path,start,end\n\
         good,v/long.mp4,0,1\n\
         gone,v/missing.mp4,0,1\n\
         backwards,v/long.mp4,2,1\n\
         after,v/long.mp4,5.5,7.5\n\
         broken,v/broken.mp4,0,1\n\
         good,v/long.mp4,1,2\n\
         nopath,,0,1\n\
         also-good,v/other.webm,0,1\n",
    )
    .unwrap();
    let out = tmp.path().join("out");
    let report = run(&manifest, &out, |r| r.options.frames.frame_rate = Some(8.0));
    let mut ids: Vec<String> = items(&out).into_iter().map(|(id, ..)| id).collect();
    ids.sort();
    assert_eq!(ids, ["also-good", "good"]);
    let mut skipped: Vec<String> = report.skipped.iter().map(ToString::to_string).collect();
    skipped.sort();
    let expect = [
        (
            "after",
            "row 5: ",
            "span [5.5, 7.5) s ends 1.500 s after the video, which ends at 6.000 s",
        ),
        ("backwards", "row 4: ", "end 1 is not after start 2"),
        ("broken", "row 6: ", "broken.mp4: ffmpeg failed"),
        ("gone", "row 3: ", "missing.mp4: cannot open video"),
        (
            "good",
            "row 7: ",
            "id repeated in the input (first at row 2)",
        ),
        ("nopath", "row 8: ", "row has no \"path\""),
    ];
    assert_eq!(skipped.len(), expect.len(), "{skipped:#?}");
    for (line, (id, row, why)) in skipped.iter().zip(expect) {
        assert!(
            line.starts_with(&format!("id {id:?}: {row}")) && line.contains(why),
            "{line}"
        );
    }
    // --strict stops at the first bad row, leaving what was committed.
    let strict = tmp.path().join("strict");
    let mut request = IngestRequest::new(
        AdapterKind::Manifest,
        vec![manifest.clone()],
        strict.clone(),
    );
    request.options.strict = true;
    request.options.fsync = false;
    let err = ingest(
        &request.dataset().unwrap(),
        &strict,
        &request.options,
        &mut |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("row 7: id repeated in the input"), "{err}");
}

#[test]
fn malformed_manifests_are_one_line_errors_naming_the_row() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let cases: [(&str, &[u8], &str); 5] = [
        (
            "quote.csv",
            b"path,start\n\"v/a.mp4,1\nv/b.mp4,2\n",
            "line 2: 1 fields where the header has 2, column \"start\" missing",
        ),
        (
            "fields.csv",
            b"path,start\nv/a.mp4,1,extra\n",
            "line 2: 3 fields where the header has 2",
        ),
        (
            "nopath.csv",
            b"video,start\nv/a.mp4,1\n",
            "line 1: no \"path\" column in the header (video, start)",
        ),
        (
            "list.jsonl",
            b"{\"path\": \"a.mp4\"}\n[1, 2]\n",
            "line 2: not a JSON object",
        ),
        (
            "clips.txt",
            b"path\na.mp4\n",
            "not a manifest: the name must end in .csv",
        ),
    ];
    for (name, bytes, want) in cases {
        let manifest = tmp.path().join(name);
        fs::write(&manifest, bytes).unwrap();
        let request =
            IngestRequest::new(AdapterKind::Manifest, vec![manifest.clone()], out.clone());
        let err = request.dataset().map(|_| ()).unwrap_err().to_string();
        assert!(err.contains(want) && !err.contains('\n'), "{name}: {err}");
    }
    // Parquet without a path column.
    let manifest = tmp.path().join("nopath.parquet");
    {
        use parquet::data_type::DoubleType;
        use parquet::file::writer::SerializedFileWriter;
        let schema =
            parquet::schema::parser::parse_message_type("message m { REQUIRED DOUBLE start; }")
                .unwrap();
        let mut w = SerializedFileWriter::new(
            fs::File::create(&manifest).unwrap(),
            Arc::new(schema),
            Arc::default(),
        )
        .unwrap();
        let mut g = w.next_row_group().unwrap();
        let mut c = g.next_column().unwrap().unwrap();
        c.typed::<DoubleType>()
            .write_batch(&[1.0], None, None)
            .unwrap();
        c.close().unwrap();
        g.close().unwrap();
        w.close().unwrap();
    }
    let request = IngestRequest::new(AdapterKind::Manifest, vec![manifest], out);
    let err = request.dataset().map(|_| ()).unwrap_err().to_string();
    assert!(
        err.contains("no \"path\" column (the columns are start)"),
        "{err}"
    );
}

/// Each clip gets the sound of its span, and a run again over the same
/// directory ingests nothing twice. (That one ffmpeg decodes each video,
/// whatever its number of clips, is counted by gulp-cli's `manifest`
/// test, through `GULP_FFMPEG`.)
#[test]
fn each_clip_gets_the_sound_of_its_span_and_a_second_run_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let videos = Videos::make(tmp.path());
    let manifest = videos.dir.join("many.csv");
    let mut text = String::from("path,start,end\n");
    for k in 0..12 {
        let start = f64::from(k) * 0.4;
        // 12 clips of 1.2 s, each overlapping the next two.
        text.push_str(&format!("v/long.mp4,{start},{}\n", start + 1.2));
    }
    text.push_str("v/other.webm,0,1\nv/other.webm,0.5,2\nv/vfr.mp4,0,1\n");
    fs::write(&manifest, text).unwrap();
    let out = tmp.path().join("out");
    let report = run(&manifest, &out, |r| {
        r.options.frames.frame_rate = Some(5.0);
        r.options.workers = 2;
        r.options.frames.audio = Some(AudioRequest {
            sample_rate: 16000,
            channels: 1,
        });
    });
    assert_eq!(report.items, 15, "{report:?}");
    // A video without sound is not a warning.
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    for (id, item, _) in items(&out) {
        let meta = item.first_meta_data().unwrap();
        let start = meta.get("start").unwrap().as_f64().unwrap();
        let end = meta.get("end").unwrap().as_f64().unwrap();
        if id.starts_with("v/vfr.mp4") {
            assert_eq!(item.audio, Some(Audio::NoTrack), "{id}");
            continue;
        }
        let Some(Audio::Track(track)) = &item.audio else {
            panic!("{id}: {:?}", item.audio);
        };
        #[allow(clippy::cast_precision_loss)]
        let seconds = track.samples as f64 / 16000.0;
        assert!(
            (seconds - (end - start)).abs() < 1e-3,
            "{id}: {seconds} s of sound"
        );
        assert_eq!(
            (track.sample_rate, track.channels, track.start),
            (16000, 1, start)
        );
    }
    let again = run(&manifest, &out, |r| r.options.frames.frame_rate = Some(5.0));
    assert_eq!((again.items, again.already_present), (0, 15));
}

#[test]
fn segments_keep_the_rows_of_each_video_in_one_item() {
    let tmp = tempfile::tempdir().unwrap();
    let videos = Videos::make(tmp.path());
    let manifest = videos.dir.join("clips.jsonl");
    write_jsonl(&manifest);
    let out = tmp.path().join("out");
    let report = run(&manifest, &out, |r| {
        r.options.frames.frame_rate = Some(4.0);
        r.adapter.manifest = ManifestOptions {
            segments: true,
            ..ManifestOptions::default()
        };
    });
    assert_eq!(report.items, 3, "{report:?}");
    let got = items(&out);
    let (id, item, frames) = &got[0];
    assert_eq!(id, "v/long.mp4");
    // From the start of the video to the end of its last row, at 4 fps.
    assert_eq!(frames.len(), 24);
    assert_eq!(
        item.frame_times,
        Some(FrameTimes::Grid {
            start: 0.0,
            step: 0.25
        })
    );
    let meta = item.first_meta_data().unwrap();
    assert_eq!(meta.get("fps"), Some(&Value::Float(4.0)));
    let segments = meta.get("segments").unwrap().as_array().unwrap();
    let captions: Vec<&str> = segments
        .iter()
        .map(|s| s.get("caption").unwrap().as_str().unwrap())
        .collect();
    assert_eq!(
        captions,
        [
            "a flash, then a pattern",
            "overlaps the first",
            "the second flash"
        ]
    );
    assert_eq!(segments[1].get("start"), Some(&Value::Float(1.5)));
    assert_eq!(segments[1].get("idx"), Some(&Value::Int(1)));
}
