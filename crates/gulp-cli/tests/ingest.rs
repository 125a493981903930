//! `gulp ingest`: every layout through the real binary and the real ffmpeg,
//! its error paths, and a kill at random moments followed by a re-run.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::gulp;
use gulp_codec::{ColorMode, decode_jpeg};
use gulp_io::{GulpDirectory, Selection};
use gulp_test_support::media::{self, ffmpeg};

fn video(path: &Path, size: &str, seconds: f64) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        &format!("testsrc2=size={size}:rate=15:duration={seconds}"),
        "-pix_fmt",
        "yuv420p",
        path.to_str().unwrap(),
    ]);
}

fn image(path: &Path, pix_fmt: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=40x30",
        "-frames:v",
        "1",
        "-pix_fmt",
        pix_fmt,
        path.to_str().unwrap(),
    ]);
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ids(dir: &Path) -> Vec<String> {
    GulpDirectory::open(dir)
        .unwrap()
        .ids()
        .map(str::to_owned)
        .collect()
}

fn check_clean(dir: &Path) {
    gulp().args(["check", "--decode", s(dir)]).assert().code(0);
}

#[test]
fn video_layouts() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // 20BN JSON: videos/<id>/<any>.mp4
    for id in ["1", "2", "3"] {
        video(&t.join(format!("json/{id}/clip.mp4")), "64x48", 1.0);
    }
    fs::write(
        t.join("list.json"),
        r#"[{"id": 1, "template": "b"}, {"id": 2, "template": "a"}, {"id": 3, "template": "a"}]"#,
    )
    .unwrap();
    let out = t.join("g-json");
    let assert = gulp()
        .args([
            "ingest",
            "20bn-json",
            s(&t.join("list.json")),
            s(&t.join("json")),
            s(&out),
            "--videos-per-chunk",
            "2",
            "--num-workers",
            "2",
        ])
        .assert()
        .code(0);
    let summary = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    assert!(summary.contains("3 items, 30 frames"), "{summary}"); // 1 s of 15 fps at 8 fps, as ffmpeg -r gives
    assert_eq!(ids(&out), ["1", "2", "3"]);
    let gd = GulpDirectory::open(&out).unwrap();
    assert_eq!(gd.chunks().len(), 2);
    // The original id type is kept in the meta, as gulpio2 does.
    let dump = gulp()
        .args(["dump-meta", s(&out), "--id", "1", "--no-frame-info"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&dump.stdout).trim(),
        r#"{"1": {"meta_data": [{"id": 1, "label": "b", "idx": 1}]}}"#
    );
    assert_eq!(
        fs::read_to_string(out.join("label2idx.json")).unwrap(),
        r#"{"a": 0, "b": 1}"#
    );
    check_clean(&out);

    // 20BN CSV webm: videos/<id>.webm, 1-column rows labelled "dummy"; a
    // frame rate and a resize.
    video(&t.join("webm/x1.webm"), "64x48", 1.0);
    video(&t.join("webm/x2.webm"), "48x64", 1.0);
    fs::write(t.join("list.csv"), "x1;push\nx2\n").unwrap();
    let out = t.join("g-webm");
    gulp()
        .args([
            "ingest",
            "20bn-csv-webm",
            s(&t.join("list.csv")),
            s(&t.join("webm")),
            s(&out),
            "--frame-rate",
            "4",
            "--frame-size",
            "24",
            "--meta-format",
            "msgpack",
            "-q",
        ])
        .assert()
        .code(0)
        .stdout("");
    let gd = GulpDirectory::open(&out).unwrap();
    assert_eq!(gd.n_frames(), 12); // 1 s of 15 fps at 4 fps, twice
    let f = gd.frames("x2", &Selection::parse("0").unwrap()).unwrap();
    assert_eq!(
        decode_jpeg(&f[0], ColorMode::Auto).unwrap().shape(),
        vec![32, 24, 3]
    );
    assert_eq!(
        gd.meta_data("x2").unwrap().get("label").unwrap().as_str(),
        Some("dummy")
    );
    check_clean(&out);

    // Video folder: every extension (gulpio2 takes only .webm), native rate.
    video(&t.join("vf/run/a.mp4"), "32x32", 1.0);
    video(&t.join("vf/run/b.webm"), "32x32", 1.0);
    video(&t.join("vf/sit/c.mkv"), "32x32", 1.0);
    let out = t.join("g-vf");
    gulp()
        .args(["ingest", "video-folder", s(&t.join("vf")), s(&out)])
        .assert()
        .code(0);
    assert_eq!(ids(&out), ["run-a.mp4", "run-b.webm", "sit-c.mkv"]);
    assert_eq!(GulpDirectory::open(&out).unwrap().n_frames(), 45);
    check_clean(&out);

    // Kinetics CSV: videos under class folders named <ytid>_<start>_<end>.
    video(&t.join("kin/abseiling/abc_000010_000020.mp4"), "32x32", 1.0);
    video(&t.join("kin/juggling/x_y_000000_000010.mp4"), "32x32", 1.0);
    fs::write(t.join("kin.csv"), "label,youtube_id,time_start,time_end,split\nabseiling,abc,10,20,train\njuggling,x_y,0,10,train\njuggling,gone,0,10,train\n").unwrap();
    let out = t.join("g-kin");
    let a = gulp()
        .args([
            "ingest",
            "kinetics",
            s(&t.join("kin.csv")),
            s(&t.join("kin")),
            s(&out),
        ])
        .assert()
        .code(0);
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        err.contains("skipped: id \"gone\"") && err.contains("gone_000000_000010.mp4"),
        "{err}"
    );
    assert_eq!(ids(&out), ["abc", "x_y"]);
    let dump = gulp()
        .args(["dump-meta", s(&out), "--id", "abc", "--no-frame-info"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&dump.stdout).trim(),
        r#"{"abc": {"meta_data": [{"label": "abseiling", "youtube_id": "abc", "time_start": 10, "time_end": 20, "split": "train", "idx": 0}]}}"#
    );

    // ActivityNet: the chosen subset only; partial downloads ignored.
    video(&t.join("anet/v_k1.mp4"), "32x32", 1.0);
    video(&t.join("anet/k2.webm"), "32x32", 1.0);
    fs::write(t.join("anet/k3.mp4.part"), b"partial").unwrap();
    fs::write(t.join("anet.json"), r#"{"database": {"k1": {"subset": "training", "annotations": [{"label": "x"}]}, "k2": {"subset": "validation"}, "k3": {"subset": "training"}}}"#).unwrap();
    let out = t.join("g-anet");
    gulp()
        .args([
            "ingest",
            "activitynet",
            s(&t.join("anet.json")),
            s(&t.join("anet")),
            s(&out),
        ])
        .assert()
        .code(0);
    assert_eq!(ids(&out), ["k1"]);
    let out = t.join("g-anet-val");
    gulp()
        .args([
            "ingest",
            "activitynet",
            s(&t.join("anet.json")),
            s(&t.join("anet")),
            s(&out),
            "--phase",
            "validation",
        ])
        .assert()
        .code(0);
    assert_eq!(ids(&out), ["k2"]);
    // The training subset's annotation labels are numbered.
    let labels = fs::read_to_string(t.join("g-anet/label2idx.json")).unwrap();
    assert_eq!(labels, r#"{"x": 0}"#);

    // EPIC-Kitchens: one item per video (a video file, or a folder of JPEG
    // frames), its rows as segments: frames from 0, the end excluded.
    video(&t.join("epic/P01/videos/P01_01.MP4"), "32x32", 1.0);
    let frames = t.join("epic/P02/rgb_frames/P02_03");
    fs::create_dir_all(&frames).unwrap();
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=32x32:rate=10",
        "-frames:v",
        "6",
        frames.join("frame_%010d.jpg").to_str().unwrap(),
    ]);
    let csv = r#"narration_id,participant_id,video_id,narration_timestamp,start_timestamp,stop_timestamp,start_frame,stop_frame,narration,verb,verb_class,noun,noun_class,all_nouns,all_noun_classes
P01_01_0,P01,P01_01,00:00:00.100,00:00:00.067,00:00:00.600,2,9,open tap,open,3,tap,12,['tap'],[12]
P02_03_0,P02,P02_03,00:00:00.000,00:00:00.000,00:00:00.300,1,3,take cup,take,0,cup,7,"['cup', ""kid's cup""]","[7, 40]"
P01_01_1,P01,P01_01,00:00:00.500,00:00:00.533,00:00:01.000,9,15,close tap,close,4,tap,12,['tap'],[12]
"#;
    fs::write(t.join("epic.csv"), csv).unwrap();
    let out = t.join("g-epic");
    gulp()
        .args([
            "ingest",
            "epic-kitchens",
            s(&t.join("epic.csv")),
            s(&t.join("epic")),
            s(&out),
        ])
        .assert()
        .code(0);
    assert_eq!(ids(&out), ["P01_01", "P02_03"]);
    let gd = GulpDirectory::open(&out).unwrap();
    assert_eq!(gd.item("P01_01").unwrap().frame_info.len(), 15); // 1 s at 15 fps
    assert_eq!(gd.item("P02_03").unwrap().frame_info.len(), 6);
    let meta = gd.meta_data("P01_01").unwrap();
    let segments = meta.get("segments").and_then(|v| v.as_array()).unwrap();
    assert_eq!(segments.len(), 2);
    let get = |k: usize, key: &str| segments[k].get(key).cloned().unwrap();
    assert_eq!(
        [
            get(0, "start"),
            get(0, "end"),
            get(1, "start"),
            get(1, "end")
        ]
        .map(|v| v.as_i64().unwrap()),
        [1, 9, 8, 15]
    );
    assert_eq!(get(0, "verb_class").as_i64(), Some(3));
    assert_eq!(get(1, "narration").as_str(), Some("close tap"));
    assert_eq!(get(0, "start_time").as_f64(), Some(0.067));
    assert_eq!(
        meta.get("participant_id").and_then(|v| v.as_str()),
        Some("P01")
    );
    let cup = gd
        .meta_data("P02_03")
        .unwrap()
        .get("segments")
        .unwrap()
        .as_array()
        .unwrap()[0]
        .clone();
    let nouns: Vec<String> = cup
        .get("all_nouns")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(nouns, ["cup", "kid's cup"]);
    let classes: Vec<i64> = cup
        .get("all_noun_classes")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(classes, [7, 40]);
    check_clean(&out);
}

/// Mean absolute difference between a stored frame and the RGB pixels
/// ffmpeg makes of the source image.
fn mean_diff(stored: &[u8], source: &Path) -> f64 {
    let want = ffmpeg(&["-i", s(source), "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]);
    let img = decode_jpeg(stored, ColorMode::Rgb).unwrap();
    assert_eq!(img.pixels.len(), want.len());
    img.pixels
        .iter()
        .zip(&want)
        .map(|(a, b)| f64::from(a.abs_diff(*b)))
        .sum::<f64>()
        / want.len() as f64
}

#[test]
fn image_layouts_and_colour_types() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let imgs = t.join("imgs");
    image(&imgs.join("cat/rgb.jpg"), "yuvj444p");
    image(&imgs.join("cat/rgba.png"), "rgba");
    image(&imgs.join("dog/palette.png"), "pal8");
    image(&imgs.join("dog/deep.png"), "rgb48be");
    image(&imgs.join("dog/gray.png"), "gray");
    image(&imgs.join("dog/gray16.png"), "gray16be");
    image(&imgs.join("dog/pic.bmp"), "bgr24");
    fs::write(imgs.join("dog/notes.txt"), "not an image").unwrap();
    let out = t.join("g-imgs");
    gulp()
        .args([
            "ingest",
            "image-folder",
            s(&imgs),
            s(&out),
            "--images-per-chunk",
            "3",
        ])
        .assert()
        .code(0);
    let gd = GulpDirectory::open(&out).unwrap();
    assert_eq!(
        gd.ids().collect::<Vec<_>>(),
        [
            "cat-rgb.jpg",
            "cat-rgba.png",
            "dog-deep.png",
            "dog-gray.png",
            "dog-gray16.png",
            "dog-palette.png",
            "dog-pic.bmp"
        ]
    );
    // The JPEG is stored as it is; the others are converted and encoded.
    let f = |id: &str| gd.frames(id, &Selection::All).unwrap()[0].to_vec();
    assert_eq!(
        f("cat-rgb.jpg"),
        fs::read(imgs.join("cat/rgb.jpg")).unwrap()
    );
    for (id, file) in [
        ("cat-rgba.png", "cat/rgba.png"),
        ("dog-palette.png", "dog/palette.png"),
        ("dog-deep.png", "dog/deep.png"),
        ("dog-pic.bmp", "dog/pic.bmp"),
    ] {
        let d = mean_diff(&f(id), &imgs.join(file));
        assert!(d < 4.0, "{id}: mean difference {d}");
        assert_eq!(
            decode_jpeg(&f(id), ColorMode::Auto).unwrap().shape(),
            vec![30, 40, 3],
            "{id}"
        );
    }
    for id in ["dog-gray.png", "dog-gray16.png"] {
        assert_eq!(
            decode_jpeg(&f(id), ColorMode::Auto).unwrap().shape(),
            vec![30, 40],
            "{id} stays gray"
        );
    }
    let meta = gd.meta_data("cat-rgba.png").unwrap();
    assert_eq!(
        meta.get("path").unwrap().as_str(),
        Some(s(&imgs.join("cat")))
    );
    check_clean(&out);

    // Image list with a root path; ids keep the whole relative path.
    fs::write(t.join("list.txt"), "cat/rgb.jpg,cat\ndog/gray.png, dog\n\n").unwrap();
    let out = t.join("g-list");
    gulp()
        .args([
            "ingest",
            "image-list",
            s(&t.join("list.txt")),
            s(&out),
            "--root-path",
            s(&imgs),
            "--image-size",
            "15",
        ])
        .assert()
        .code(0);
    let gd = GulpDirectory::open(&out).unwrap();
    assert_eq!(
        gd.ids().collect::<Vec<_>>(),
        ["cat-cat/rgb.jpg", "dog-dog/gray.png"]
    );
    let frame = &gd.frames("cat-cat/rgb.jpg", &Selection::All).unwrap()[0];
    assert_eq!(
        decode_jpeg(frame, ColorMode::Auto).unwrap().shape(),
        vec![15, 20, 3]
    );
    check_clean(&out);
}

#[test]
fn ingest_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let out = t.join("out");
    // Missing list file.
    let a = gulp()
        .args([
            "ingest",
            "20bn-csv-jpeg",
            s(&t.join("nope.csv")),
            s(t),
            s(&out),
        ])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        err.starts_with("gulp: error: ") && err.contains("nope.csv"),
        "{err}"
    );
    // Unreadable (malformed) list.
    fs::write(t.join("bad.json"), "{\"not\": \"a list\"}").unwrap();
    let a = gulp()
        .args(["ingest", "20bn-json", s(&t.join("bad.json")), s(t), s(&out)])
        .assert()
        .code(2);
    assert!(String::from_utf8_lossy(&a.get_output().stderr).contains("expected a JSON list"));
    // Bad option values.
    gulp()
        .args(["ingest", "video-folder", s(t), s(&out), "--quality", "0"])
        .assert()
        .code(2);
    gulp()
        .args([
            "ingest",
            "video-folder",
            s(t),
            s(&out),
            "--frame-rate",
            "-3",
        ])
        .assert()
        .code(2);
    gulp()
        .args(["ingest", "video-folder", s(t), s(&out), "--seed", "3"])
        .assert()
        .code(2);
    // Strict mode: a bad frame stops the run with exit 2 and leaves nothing
    // half-written; without it the item is skipped (exit 0).
    let frames = t.join("frames");
    fs::create_dir_all(frames.join("a")).unwrap();
    fs::create_dir_all(frames.join("b")).unwrap();
    fs::write(frames.join("a/1.jpg"), common::jpeg("noise-24x16")).unwrap();
    fs::write(frames.join("b/1.jpg"), &common::jpeg("noise-24x16")[..500]).unwrap();
    fs::write(t.join("l.csv"), "a;x\nb;y\n").unwrap();
    let a = gulp()
        .args([
            "ingest",
            "20bn-csv-jpeg",
            s(&t.join("l.csv")),
            s(&frames),
            s(&out),
            "--strict",
        ])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        err.contains("item \"b\"") && err.contains("truncated JPEG") && err.contains("b/1.jpg"),
        "{err}"
    );
    assert!(GulpDirectory::open(&out).unwrap().is_empty());
    assert!(fs::read_dir(&out).unwrap().all(|e| {
        !e.unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".gulp-tmp")
    }));
    let a = gulp()
        .args([
            "ingest",
            "20bn-csv-jpeg",
            s(&t.join("l.csv")),
            s(&frames),
            s(&out),
        ])
        .assert()
        .code(0);
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        err.contains("skipped: id \"b\"") && err.contains("truncated JPEG"),
        "{err}"
    );
    assert_eq!(ids(&out), ["a"]);
    // --quiet drops the progress and the summary, never the loss: the
    // skipped item is still named on stderr, and --report lists it.
    let quiet_out = t.join("quiet");
    let report = t.join("report.json");
    let a = gulp()
        .args([
            "ingest",
            "20bn-csv-jpeg",
            s(&t.join("l.csv")),
            s(&frames),
            s(&quiet_out),
            "--quiet",
            "--report",
            s(&report),
        ])
        .assert()
        .code(0);
    let out_text = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(out_text.is_empty(), "{out_text}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("skipped: id \"b\"") && err.contains("truncated JPEG"),
        "{err}"
    );
    let json: serde_json::Value = serde_json::from_slice(&fs::read(&report).unwrap()).unwrap();
    assert_eq!(json["items"], 1);
    assert_eq!(json["frames"], 1);
    assert_eq!(json["chunks"], serde_json::json!([0]));
    let skipped = json["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{json}");
    assert_eq!(skipped[0]["id"], "b");
    assert_eq!(skipped[0]["index"], 1);
    let error = skipped[0]["error"].as_str().unwrap();
    assert!(
        error.contains("truncated JPEG") && error.contains("b/1.jpg"),
        "{error}"
    );
    assert!(!t.join(".report.json.partial").exists());
    assert_eq!(ids(&quiet_out), ["a"]);
}

/// A dataset big enough that an ingest takes a while: 24 items of 5 frames
/// resized (so every frame is decoded and encoded).
fn crash_dataset(root: &Path) -> (PathBuf, PathBuf) {
    let frames = root.join("frames");
    let mut csv = String::new();
    for i in 0..24 {
        let d = frames.join(format!("c{i:02}"));
        fs::create_dir_all(&d).unwrap();
        ffmpeg(&[
            "-f",
            "lavfi",
            "-i",
            &format!("testsrc2=size=240x180:rate=10,hue=h={}", i * 9),
            "-frames:v",
            "5",
            "-q:v",
            "3",
            s(&d.join("%03d.jpg")),
        ]);
        csv.push_str(&format!("c{i:02};l{}\n", i % 4));
    }
    fs::write(root.join("list.csv"), csv).unwrap();
    (root.join("list.csv"), frames)
}

fn ingest_cmd(list: &Path, frames: &Path, out: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gulp"));
    cmd.args([
        "ingest",
        "20bn-csv-jpeg",
        s(list),
        s(frames),
        s(out),
        "--videos-per-chunk",
        "3",
        "--frame-size",
        "150",
        "--num-workers",
        "2",
        "-q",
    ]);
    cmd
}

fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            (
                e.file_name().into_string().unwrap(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// The compatibility venv's python (`GULP_PYTHON`, set by scripts/test.sh),
/// if it exists.
fn gulpio2() -> Option<PathBuf> {
    std::env::var_os("GULP_PYTHON")
        .map(PathBuf::from)
        .filter(|p| p.exists())
}

/// gulpio2's `GulpDirectory` opens `dir` (when the venv exists).
fn gulpio2_opens(dir: &Path, trial: usize) {
    let Some(python) = gulpio2() else { return };
    let out = Command::new(python)
        .args([
            "-c",
            "import sys; from gulpio2 import GulpDirectory; GulpDirectory(sys.argv[1])",
        ])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "trial {trial}: gulpio2 cannot open {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs the uninterrupted ingest of `list` into `dir`: how long it took,
/// the time scale of the kill tests.
fn timed_reference(list: &Path, frames: &Path, dir: &Path) -> Duration {
    let started = Instant::now();
    assert!(ingest_cmd(list, frames, dir).status().unwrap().success());
    started.elapsed()
}

/// Every chunk of `gd` (what a killed run committed) is the reference's
/// chunk, data and meta, byte for byte (`want`: the reference directory's
/// [`digest`]).
fn assert_committed_chunks_match(gd: &GulpDirectory, want: &[(String, usize, u32)], trial: usize) {
    for chunk in gd.chunks() {
        for path in [&chunk.data_path, &chunk.meta_path] {
            let name = path.file_name().unwrap().to_str().unwrap();
            let bytes = fs::read(path).unwrap();
            let reference = want.iter().find(|(n, _, _)| n == name).unwrap();
            assert_eq!(
                (bytes.len(), crc32fast::hash(&bytes)),
                (reference.1, reference.2),
                "trial {trial}: {name} differs"
            );
        }
    }
}

/// Kills `gulp ingest` with SIGKILL at random moments, then checks that the
/// directory opens, that every committed chunk is byte-identical to the same
/// chunk of an uninterrupted run, that gulpio2 opens it (where the venv
/// exists; not in the window between a commit's two renames), that
/// `gulp check` exits 0 (leftovers are notes), that after `gulp recover`
/// gulpio2 opens it in every case and it has no leftovers, and that
/// re-running the ingest completes it with every id exactly once (the result
/// equals the uninterrupted run, and gulpio2 opens it).
/// `GULP_CRASH_TRIALS` sets the number of trials (default 5).
fn crash_trials(trials: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let (list, frames) = crash_dataset(tmp.path());
    let reference = tmp.path().join("reference");
    let full = timed_reference(&list, &frames, &reference);
    let want = contents(&reference);
    let want_digest = digest(&reference);
    let mut rng = fastrand::Rng::with_seed(
        std::env::var("GULP_CRASH_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(7),
    );
    let (mut killed_midway, mut committed_total, mut cut_commits) = (0, 0, 0);
    for trial in 0..trials {
        let out = tmp.path().join(format!("trial{trial}"));
        let mut child = ingest_cmd(&list, &frames, &out).spawn().unwrap();
        let delay = full.mul_f64(rng.f64() * 0.95);
        std::thread::sleep(delay);
        let was_running = child.try_wait().unwrap().is_none();
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        if !out.exists() {
            continue;
        }
        killed_midway += usize::from(was_running);
        // Opens (orphans of a cut commit are warnings), and every chunk it
        // has is the reference's chunk, byte for byte.
        let gd = GulpDirectory::open(&out)
            .unwrap_or_else(|e| panic!("trial {trial} after {delay:?}: {e}"));
        assert_committed_chunks_match(&gd, &want_digest, trial);
        committed_total += gd.chunks().len();
        // gulpio2 opens it too, except in the one window a two-file commit
        // cannot close: data renamed, meta not yet (gulpio2 then refuses
        // the whole directory until the re-run below finishes the commit).
        let cut_commit = gd
            .warnings()
            .iter()
            .any(|w| matches!(w, gulp_io::DirectoryWarning::OrphanData(_)));
        cut_commits += usize::from(cut_commit);
        if !cut_commit {
            gulpio2_opens(&out, trial);
        }
        drop(gd);
        // What the kill left is not damage: `gulp check` exits 0 (leftovers
        // are notes); `gulp recover` clears them, and then gulpio2 opens
        // the directory even after a cut commit, and it is still clean.
        let checked = gulp().args(["check", s(&out)]).assert().code(0);
        let report = String::from_utf8_lossy(&checked.get_output().stdout).into_owned();
        assert!(
            !cut_commit || report.contains("cut between its two renames"),
            "trial {trial}: {report}"
        );
        gulp().args(["recover", s(&out)]).assert().code(0);
        gulpio2_opens(&out, trial);
        let checked = gulp().args(["check", s(&out)]).assert().code(0);
        let report = String::from_utf8_lossy(&checked.get_output().stdout).into_owned();
        assert!(!report.contains("note:"), "trial {trial}: {report}");
        // Re-run: finishes with every id once, and the same bytes.
        let status = ingest_cmd(&list, &frames, &out).status().unwrap();
        assert!(status.success(), "trial {trial}: re-run failed");
        assert_eq!(
            contents(&out),
            want,
            "trial {trial}: re-run differs from an uninterrupted run"
        );
        gulp().args(["check", s(&out)]).assert().code(0);
        gulpio2_opens(&out, trial);
    }
    eprintln!(
        "{trials} trials, {killed_midway} killed mid-run, {committed_total} chunks committed before the kills, \
         {cut_commits} kills between a commit's two renames; full run {full:?}; gulpio2 checked: {}",
        gulpio2().is_some()
    );
    assert!(
        killed_midway * 2 >= trials,
        "too few kills landed mid-run: {killed_midway} of {trials}"
    );
}

#[test]
fn killed_ingest_reruns_to_the_same_result() {
    let trials = std::env::var("GULP_CRASH_TRIALS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    crash_trials(trials);
}

/// The long run: `cargo test -p gulp-cli --release --test ingest -- --ignored`.
#[test]
#[ignore = "long: 100 crash trials"]
fn killed_ingest_reruns_to_the_same_result_100_trials() {
    crash_trials(100);
}

/// An ffmpeg without the `setts` bitstream filter (before 4.4), which gulp
/// uses to decode the videos of a batch one after another: the first batch
/// fails and its videos are decoded one by one, later batches are decoded
/// interleaved, and the result is the same. The ffmpeg here has `setts`, so
/// a wrapper refuses it as ffmpeg 4.3 does.
#[test]
fn ffmpeg_without_setts_ingests_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // A batch, and 2 more videos.
    let batch = gulp_ingest::video::BATCH;
    let ids: Vec<String> = (1..=batch + 2).map(|i| i.to_string()).collect();
    for id in &ids {
        video(&t.join(format!("videos/{id}/clip.mp4")), "64x48", 1.0);
    }
    let list: Vec<String> = ids
        .iter()
        .map(|id| format!(r#"{{"id": "{id}", "template": "t"}}"#))
        .collect();
    fs::write(t.join("list.json"), format!("[{}]", list.join(", "))).unwrap();
    let log = t.join("ffmpeg.log");
    let wrapper = t.join("ffmpeg-4.3");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\ncase \"$*\" in *setts*) echo 'Unknown bitstream filter setts' >&2; exit 1;; esac\nexec ffmpeg \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let ingest = |out: &Path, ffmpeg: Option<&Path>| {
        let mut cmd = gulp();
        cmd.args([
            "ingest",
            "20bn-json",
            s(&t.join("list.json")),
            s(&t.join("videos")),
            s(out),
            "--num-workers",
            "1",
            "--videos-per-chunk",
            "3",
            "--quiet",
        ]);
        if let Some(ffmpeg) = ffmpeg {
            cmd.env("GULP_FFMPEG", ffmpeg);
        }
        cmd.assert().code(0);
    };
    let (current, old) = (t.join("current"), t.join("old"));
    ingest(&current, None);
    ingest(&old, Some(&wrapper));
    assert_eq!(media::dir_contents(&old), media::dir_contents(&current));
    let runs = fs::read_to_string(&log).unwrap();
    // The version check, once in the process.
    assert_eq!(
        runs.lines().filter(|run| *run == "-version").count(),
        1,
        "{runs}"
    );
    let inputs = |run: &str| run.matches(" -i ").count();
    // One worker: a full batch with setts, then its videos alone, then a
    // batch of the last 2 without setts.
    let runs: Vec<(usize, bool)> = runs
        .lines()
        .filter(|run| *run != "-version")
        .map(|run| (inputs(run), run.contains("setts")))
        .collect();
    let mut want = vec![(batch, true)];
    want.extend([(1, false)].repeat(batch));
    want.push((2, false));
    assert_eq!(runs, want, "{}", fs::read_to_string(&log).unwrap());
}

/// No ffmpeg to run, or one older than 4.0: the ingest stops with one line
/// that says what is wrong and names the three ways to get one, and
/// writes nothing.
#[test]
fn ffmpeg_missing_or_too_old_is_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    video(&t.join("videos/cls/a.mp4"), "64x48", 0.5);
    let old = t.join("ffmpeg-3.4");
    fs::write(
        &old,
        "#!/bin/sh\necho 'ffmpeg version 3.4.8 Copyright (c) 2000-2020 the FFmpeg developers'\n\
         echo 'libavformat    57. 83.100 / 57. 83.100'\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&old, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let empty = t.join("empty-bin");
    fs::create_dir(&empty).unwrap();
    let ways = "set GULP_FFMPEG to an ffmpeg binary, put `ffmpeg` on the PATH (e.g. `apt-get install ffmpeg`), or `pip install \"gulp-video[ffmpeg]\"` for a static build";
    let cases = [
        // Nothing on the PATH and no GULP_FFMPEG.
        (
            None,
            format!("ffmpeg not found (videos are decoded with ffmpeg): {ways}"),
        ),
        (
            Some(t.join("nowhere/ffmpeg")),
            format!(
                "GULP_FFMPEG={}: no such executable; {ways}",
                t.join("nowhere/ffmpeg").display()
            ),
        ),
        (
            Some(old.clone()),
            format!(
                "{} is ffmpeg 3.4.8 (libavformat 57); gulp needs ffmpeg 4.0 or later: {ways}",
                old.display()
            ),
        ),
    ];
    for (i, (chosen, want)) in cases.iter().enumerate() {
        let out = t.join(format!("out{i}"));
        let mut cmd = gulp();
        cmd.args([
            "ingest",
            "video-folder",
            s(&t.join("videos")),
            s(&out),
            "--quiet",
        ])
        .env("PATH", &empty)
        .env_remove("GULP_FFMPEG");
        if let Some(chosen) = chosen {
            cmd.env("GULP_FFMPEG", chosen);
        }
        let output = cmd.output().unwrap();
        assert!(!output.status.success(), "case {i}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "case {i}: {stderr}");
        assert!(stderr.ends_with(&format!("{want}\n")), "case {i}: {stderr}");
        assert!(
            !out.exists() || ids(&out).is_empty(),
            "case {i}: items were written"
        );
    }
}

/// Names, sizes and CRC-32s of a directory's files (short messages when
/// two directories differ).
fn digest(dir: &Path) -> Vec<(String, usize, u32)> {
    contents(dir)
        .into_iter()
        .map(|(n, b)| (n, b.len(), crc32fast::hash(&b)))
        .collect()
}

/// The crash dataset's list with a bad item (no frame folder) at input #4,
/// so that one chunk is shorter: chunking slices the list first.
fn shard_dataset(root: &Path) -> (PathBuf, PathBuf) {
    let (list, frames) = crash_dataset(root);
    let mut lines: Vec<String> = fs::read_to_string(&list)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.insert(4, "missing;l0".into());
    fs::write(&list, lines.join("\n") + "\n").unwrap();
    (list, frames)
}

/// The shard dataset under `root`, ingested by one run into
/// `root/reference`: the list, the frames and the reference's digest.
fn one_run(root: &Path) -> (PathBuf, PathBuf, Vec<(String, usize, u32)>) {
    let (list, frames) = shard_dataset(root);
    let reference = root.join("reference");
    let status = ingest_cmd(&list, &frames, &reference).status().unwrap();
    assert!(status.success());
    let want = digest(&reference);
    (list, frames, want)
}

fn shard_cmd(list: &Path, frames: &Path, out: &Path, shard: &str) -> Command {
    let mut cmd = ingest_cmd(list, frames, out);
    cmd.args(["--shard", shard]);
    cmd
}

/// Starts the `count` tasks of a sharded ingest of `list` into `out`, all
/// at once.
fn spawn_shards(list: &Path, frames: &Path, out: &Path, count: usize) -> Vec<Child> {
    (0..count)
        .map(|i| {
            shard_cmd(list, frames, out, &format!("{i}/{count}"))
                .spawn()
                .unwrap()
        })
        .collect()
}

#[test]
fn sharded_tasks_give_what_one_run_gives() {
    let tmp = tempfile::tempdir().unwrap();
    let (list, frames, want) = one_run(tmp.path());
    let reference = tmp.path().join("reference");
    // 25 items in chunks of 3: chunk 1 lost its bad item.
    let gd = GulpDirectory::open(&reference).unwrap();
    assert_eq!(gd.chunks().len(), 9);
    assert_eq!(gd.chunks()[1].len(), 2);
    drop(gd);

    // Four tasks at once into one directory.
    let out = tmp.path().join("shared");
    let mut children = spawn_shards(&list, &frames, &out, 4);
    for child in &mut children {
        assert!(child.wait().unwrap().success());
    }
    assert_eq!(digest(&out), want, "four tasks differ from one run");
    gulpio2_opens(&out, 0);
    // A re-run of a finished task changes nothing.
    assert!(
        shard_cmd(&list, &frames, &out, "2/4")
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(digest(&out), want);

    // Tasks of another count are refused while a run is under way.
    let partial = tmp.path().join("partial");
    assert!(
        shard_cmd(&list, &frames, &partial, "0/4")
            .status()
            .unwrap()
            .success()
    );
    let refused = gulp()
        .args(["ingest", "20bn-csv-jpeg", s(&list), s(&frames), s(&partial)])
        .args([
            "--videos-per-chunk",
            "3",
            "--frame-size",
            "150",
            "-q",
            "--shard",
            "1/3",
        ])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(err.contains("4 tasks") && err.contains("1/3"), "{err}");
    // `gulp status` names the tasks to run again.
    let status = gulp()
        .args(["status", s(&partial), "--json"])
        .assert()
        .code(1);
    let report: serde_json::Value = serde_json::from_slice(&status.get_output().stdout).unwrap();
    assert_eq!(report["shards"], 4);
    assert_eq!(report["resubmit"], serde_json::json!([1, 2, 3]));
    assert_eq!(report["tasks"][0]["state"], "done");
    assert_eq!(report["tasks"][1]["missing"], serde_json::json!([1, 5]));
    // A plain run finishes it, and the result is the same.
    assert!(
        ingest_cmd(&list, &frames, &partial)
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(digest(&partial), want);
    gulp()
        .args(["status", s(&partial), "--shards", "4"])
        .assert()
        .code(0);

    // The same task twice at once: the second is refused.
    let twice = tmp.path().join("twice");
    fs::create_dir_all(&twice).unwrap();
    let held = fs::File::create(twice.join(".gulp-tmp.shard-1-of-4.lock")).unwrap();
    held.lock().unwrap();
    let refused = shard_cmd(&list, &frames, &twice, "1/4").output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(err.contains("already running"), "{err}");
}

#[test]
fn killed_shard_tasks_rerun_to_the_same_result() {
    let tmp = tempfile::tempdir().unwrap();
    let (list, frames) = shard_dataset(tmp.path());
    let reference = tmp.path().join("reference");
    let full = timed_reference(&list, &frames, &reference);
    let want = digest(&reference);
    let mut rng = fastrand::Rng::with_seed(11);
    for trial in 0..3 {
        let out = tmp.path().join(format!("trial{trial}"));
        let victim = rng.usize(0..4);
        let mut children = spawn_shards(&list, &frames, &out, 4);
        // Four tasks share two cores: each takes about the full run's time.
        std::thread::sleep(full.mul_f64(rng.f64() * 0.9));
        children[victim].kill().unwrap(); // SIGKILL
        for child in &mut children {
            child.wait().unwrap();
        }
        // What the killed task committed is the reference's, byte for byte.
        let gd = GulpDirectory::open(&out).unwrap_or_else(|e| panic!("trial {trial}: {e}"));
        assert_committed_chunks_match(&gd, &want, trial);
        drop(gd);
        let status = shard_cmd(&list, &frames, &out, &format!("{victim}/4"))
            .status()
            .unwrap();
        assert!(
            status.success(),
            "trial {trial}: re-run of task {victim} failed"
        );
        assert_eq!(
            digest(&out),
            want,
            "trial {trial}: task {victim} killed and re-run"
        );
    }
}

#[test]
fn merge_of_shard_directories_equals_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (list, frames, want) = one_run(tmp.path());
    let dirs: Vec<PathBuf> = (0..3)
        .map(|i| tmp.path().join(format!("node{i}")))
        .collect();
    for (i, dir) in dirs.iter().enumerate() {
        assert!(
            shard_cmd(&list, &frames, dir, &format!("{i}/3"))
                .status()
                .unwrap()
                .success()
        );
    }
    // A collision (node0's chunks in two sources) is refused, nothing moved.
    let copy = tmp.path().join("node0-copy");
    common::copy_dir(&dirs[0], &copy);
    let before: Vec<_> = dirs.iter().chain([&copy]).map(|d| digest(d)).collect();
    let out = tmp.path().join("merged");
    let refused = gulp()
        .arg("merge")
        .arg(&out)
        .args(&dirs)
        .arg(&copy)
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(err.contains("chunk 0 is in both"), "{err}");
    let after: Vec<_> = dirs.iter().chain([&copy]).map(|d| digest(d)).collect();
    assert_eq!(before, after);
    assert!(digest(&out).is_empty());
    // The three shards merge into what one run gives.
    gulp().arg("merge").arg(&out).args(&dirs).assert().code(0);
    assert_eq!(digest(&out), want);
    gulpio2_opens(&out, 0);
    for dir in &dirs {
        assert!(
            digest(dir).iter().all(|(n, _, _)| n == "label2idx.json"),
            "{dir:?}"
        );
    }
    // Merging the copy now collides with what is in OUT.
    gulp().arg("merge").arg(&out).arg(&copy).assert().code(2);
    assert_eq!(digest(&out), want);
}

/// An image of `w`×`h` (ffmpeg's test pattern) at `path`.
fn sized_image(path: &Path, w: usize, h: usize) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        &format!("testsrc=size={w}x{h}"),
        "-frames:v",
        "1",
        "-q:v",
        "3",
        path.to_str().unwrap(),
    ]);
}

#[test]
fn max_size_brings_long_edges_down_and_keeps_small_jpegs_as_they_are() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let imgs = t.join("imgs");
    sized_image(&imgs.join("a/wide.jpg"), 200, 120);
    sized_image(&imgs.join("a/tall.jpg"), 90, 160);
    sized_image(&imgs.join("a/small.jpg"), 60, 40);
    sized_image(&imgs.join("a/picture.png"), 300, 100);
    let out = t.join("g");
    gulp()
        .args([
            "ingest",
            "image-folder",
            s(&imgs),
            s(&out),
            "--max-size",
            "64",
        ])
        .assert()
        .code(0);
    let gd = GulpDirectory::open(&out).unwrap();
    let frame = |id: &str| gd.frames(id, &Selection::All).unwrap()[0].to_vec();
    let shape = |id: &str| decode_jpeg(&frame(id), ColorMode::Auto).unwrap().shape();
    // The long edge at 64, the other scaled and truncated.
    assert_eq!(shape("a-wide.jpg"), vec![38, 64, 3]);
    assert_eq!(shape("a-tall.jpg"), vec![64, 36, 3]);
    assert_eq!(shape("a-picture.png"), vec![21, 64, 3]);
    // Within the limit: the file's own JPEG, byte for byte.
    assert_eq!(
        frame("a-small.jpg"),
        fs::read(imgs.join("a/small.jpg")).unwrap()
    );
    // With a short edge first: 200x120 -> 166x100 (short edge 100), then
    // the long edge down to 128.
    let both = t.join("g2");
    gulp()
        .args([
            "ingest",
            "image-folder",
            s(&imgs),
            s(&both),
            "--frame-size",
            "100",
            "--max-size",
            "128",
        ])
        .assert()
        .code(0);
    let gd = GulpDirectory::open(&both).unwrap();
    let jpeg = gd.frames("a-wide.jpg", &Selection::All).unwrap()[0].to_vec();
    assert_eq!(
        decode_jpeg(&jpeg, ColorMode::Auto).unwrap().shape(),
        vec![77, 128, 3]
    );
    check_clean(&out);
}

/// An ingest that writes chunks, and a merge, leave the index file up to
/// date when the directory has one or `GULP_INDEX` asks for one; a sharded
/// task leaves it to the first open after the run.
#[test]
fn ingest_and_merge_leave_a_fresh_index_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (list, frames) = shard_dataset(tmp.path());
    let index_says = |dir: &Path| {
        let out = gulp().arg("index").arg(dir).assert().success();
        String::from_utf8_lossy(&out.get_output().stdout).into_owned()
    };
    let one = tmp.path().join("one");
    let status = ingest_cmd(&list, &frames, &one)
        .env("GULP_INDEX", "always")
        .status()
        .unwrap();
    assert!(status.success());
    assert!(one.join(gulp_format::INDEX_FILE).is_file());
    assert!(index_says(&one).contains("was up to date"));
    // Without GULP_INDEX, a small directory that has one gets it refreshed
    // when chunks are added: here, the items of a longer list.
    let mut longer = fs::read_to_string(&list).unwrap();
    let first = longer.lines().next().unwrap().to_owned();
    let (id, label) = first.split_once(';').unwrap();
    common::copy_dir(&frames.join(id), &frames.join("extra"));
    longer.push_str(&format!("extra;{label}\n"));
    let longer_list = tmp.path().join("longer.csv");
    fs::write(&longer_list, longer).unwrap();
    assert!(
        ingest_cmd(&longer_list, &frames, &one)
            .status()
            .unwrap()
            .success()
    );
    assert!(ids(&one).contains(&"extra".to_owned()));
    assert!(index_says(&one).contains("was up to date"));
    // Shards write none; the merge of their directories does.
    let dirs: Vec<PathBuf> = (0..2)
        .map(|i| tmp.path().join(format!("node{i}")))
        .collect();
    for (i, dir) in dirs.iter().enumerate() {
        let mut cmd = shard_cmd(&list, &frames, dir, &format!("{i}/2"));
        assert!(cmd.env("GULP_INDEX", "always").status().unwrap().success());
        assert!(!dir.join(gulp_format::INDEX_FILE).exists());
    }
    let out = tmp.path().join("merged");
    gulp()
        .arg("merge")
        .arg(&out)
        .args(&dirs)
        .env("GULP_INDEX", "always")
        .assert()
        .code(0);
    assert!(index_says(&out).contains("was up to date"));
}
