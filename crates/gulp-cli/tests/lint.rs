//! `gulp lint` and `gulp ingest --lint` on videos made by the real ffmpeg
//! and gulped by the real ingest: a copied clip, a re-encoded one, a frozen
//! one, a black one, a short one, and a clip of train also in val (a
//! leak); the JSON report's shape, `--ids-out` with `--drop`, `--checks`,
//! the exit status.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{gulp, stdout_of};
use gulp_test_support::media::ffmpeg;
use serde_json::Value;

/// `ffmpeg -f lavfi -i SOURCE [-vf FILTER] -t SECONDS OUT`.
fn clip(out: &Path, source: &str, filter: Option<&str>, seconds: &str) {
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let mut args = vec!["-f", "lavfi", "-i", source];
    if let Some(f) = filter {
        args.extend(["-vf", f]);
    }
    args.extend(["-t", seconds, "-pix_fmt", "yuv420p", out.to_str().unwrap()]);
    ffmpeg(&args);
}

/// The planted video folders, gulped: `train` (classes x and y) and `val`.
fn planted(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let src = root.join("src");
    let (x, y, v) = (src.join("train/x"), src.join("train/y"), src.join("val/v"));
    clip(
        &x.join("mandel.mp4"),
        "mandelbrot=size=160x120:rate=10",
        None,
        "3",
    );
    clip(
        &x.join("testsrc.mp4"),
        "testsrc2=size=160x120:rate=10",
        None,
        "3",
    );
    let life = "life=size=160x120:rate=10:mold=10:ratio=0.5:death_color=#203040:life_color=#e0c080";
    clip(&x.join("life.mp4"), life, None, "3");
    std::fs::create_dir_all(&y).unwrap();
    std::fs::copy(x.join("mandel.mp4"), y.join("mandel-copy.mp4")).unwrap();
    ffmpeg(&[
        "-i",
        x.join("testsrc.mp4").to_str().unwrap(),
        "-vf",
        "scale=128:96",
        "-crf",
        "35",
        y.join("testsrc-reenc.mp4").to_str().unwrap(),
    ]);
    // One second of motion, then its last frame for two seconds.
    clip(
        &y.join("frozen.mp4"),
        "testsrc2=size=160x120:rate=10:duration=1",
        Some("hue=h=90,rotate=0.5,tpad=stop_mode=clone:stop_duration=2"),
        "3",
    );
    clip(
        &y.join("black.mp4"),
        "color=black:size=160x120:rate=10",
        None,
        "2",
    );
    clip(
        &y.join("short.mp4"),
        "cellauto=size=160x120:rate=10:rule=110",
        None,
        "0.3",
    );
    // val: a clip of its own and train's life clip.
    clip(
        &v.join("own.mp4"),
        "cellauto=size=160x120:rate=10:rule=30",
        None,
        "3",
    );
    std::fs::create_dir_all(&v).unwrap();
    std::fs::copy(x.join("life.mp4"), v.join("life.mp4")).unwrap();
    let (train, val) = (root.join("train"), root.join("val"));
    for (from, to) in [(src.join("train"), &train), (src.join("val"), &val)] {
        gulp()
            .args(["ingest", "video-folder", "-q"])
            .arg(&from)
            .arg(to)
            .assert()
            .success();
    }
    (train, val)
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

/// (dir, id, frame count) of an item of a finding.
type Item = (u64, String, usize);

/// (check, items) of every finding.
fn findings(report: &Value) -> Vec<(String, Vec<Item>)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let items = f["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    (
                        i["dir"].as_u64().unwrap(),
                        i["id"].as_str().unwrap().to_owned(),
                        i["frames"].as_array().unwrap().len(),
                    )
                })
                .collect();
            (f["check"].as_str().unwrap().to_owned(), items)
        })
        .collect()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn planted_video_issues_json_shape_and_ids_out() {
    let tmp = tempfile::tempdir().unwrap();
    let (train, val) = planted(tmp.path());
    let json = tmp.path().join("lint.json");
    let (train_ids, val_ids) = (tmp.path().join("train.ids"), tmp.path().join("val.ids"));
    let output = gulp()
        .arg("lint")
        .arg(&train)
        .arg(&val)
        .arg("--json")
        .arg(&json)
        .arg("--ids-out")
        .arg(&train_ids)
        .arg("--ids-out")
        .arg(&val_ids)
        .args(["--drop", "frozen,short"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let table = stdout_of(&output);
    assert!(table.contains("10 items"), "{table}");

    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(
        keys(&report),
        ["classes", "findings", "items", "undecodable"].into()
    );
    assert_eq!(report["items"], 10);
    for f in report["findings"].as_array().unwrap() {
        assert_eq!(keys(f), ["check", "detail", "items", "score"].into(), "{f}");
        assert!(f["score"].is_number(), "{f}");
        for item in f["items"].as_array().unwrap() {
            assert_eq!(keys(item), ["dir", "frames", "id"].into(), "{item}");
        }
    }
    let got = findings(&report);
    let has = |check: &str, items: &[(u64, &str, usize)]| {
        let want: Vec<Item> = items
            .iter()
            .map(|(d, id, n)| (*d, (*id).to_owned(), *n))
            .collect();
        assert!(
            got.iter().any(|(c, i)| c == check && *i == want),
            "no {check} finding {want:?} in\n{got:#?}"
        );
    };
    has(
        "exact_duplicate",
        &[(0, "x-mandel.mp4", 0), (0, "y-mandel-copy.mp4", 0)],
    );
    has(
        "near_duplicate",
        &[(0, "x-testsrc.mp4", 0), (0, "y-testsrc-reenc.mp4", 0)],
    );
    has("leak", &[(0, "x-life.mp4", 0), (1, "v-life.mp4", 0)]);
    // Frames 9-29: the last moving frame and its 20 clones.
    has("frozen", &[(0, "y-frozen.mp4", 21)]);
    has("dark", &[(0, "y-black.mp4", 20)]);
    has("blank", &[(0, "y-black.mp4", 20)]);
    has("short", &[(0, "y-short.mp4", 0)]);
    // Nothing else is a duplicate, and no clip but the black one is dark.
    let count = |check: &str| got.iter().filter(|(c, _)| c == check).count();
    assert_eq!(
        (
            count("exact_duplicate"),
            count("near_duplicate"),
            count("leak"),
            count("dark")
        ),
        (1, 1, 1, 1),
        "{got:#?}"
    );
    assert_eq!(report["classes"][0]["y"], 5);

    // One item per group of copies; none frozen or short.
    let kept = lines(&train_ids);
    assert_eq!(
        kept,
        ["x-life.mp4", "x-mandel.mp4", "x-testsrc.mp4"],
        "{kept:?}"
    );
    assert_eq!(lines(&val_ids), ["v-own.mp4"]);
}

#[test]
fn checks_flag_exit_status_and_bad_arguments() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src/a");
    clip(
        &src.join("one.mp4"),
        "mandelbrot=size=96x64:rate=10",
        None,
        "1",
    );
    let dir = tmp.path().join("out");
    // ingest --lint prints the table after the ingest.
    let output = gulp()
        .args(["ingest", "video-folder"])
        .arg(tmp.path().join("src"))
        .arg(&dir)
        .arg("--lint")
        .arg("--lint-json")
        .arg(tmp.path().join("ingest-lint.json"))
        .assert()
        .success()
        .get_output()
        .clone();
    let out = stdout_of(&output);
    assert!(
        out.contains("near_duplicate") && out.contains("1 items, 10 frames"),
        "{out}"
    );
    let report: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("ingest-lint.json")).unwrap())
            .unwrap();
    assert_eq!(report["items"], 1);

    // One clip of moving picture: clean for these checks, exit 0.
    let output = gulp()
        .arg("lint")
        .arg(&dir)
        .args(["--checks", "dark,frozen,exact_duplicate"])
        .assert()
        .success()
        .get_output()
        .clone();
    let out = stdout_of(&output);
    assert!(out.contains("frozen") && !out.contains("blurry"), "{out}");

    gulp()
        .arg("lint")
        .arg(&dir)
        .args(["--checks", "dark,fuzzy"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("unknown check \"fuzzy\""));
    gulp()
        .arg("lint")
        .arg(&dir)
        .arg(&dir)
        .arg("--ids-out")
        .arg(tmp.path().join("one.ids"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("give one per directory"));
    gulp()
        .arg("lint")
        .arg(tmp.path().join("missing"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("missing"));
}
