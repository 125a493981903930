//! `gulp ingest manifest` as a user runs it: one ffmpeg per video, counted
//! through a wrapper on `GULP_FFMPEG`; the report names each bad row; the
//! output passes `gulp check --decode`.
#![allow(clippy::unwrap_used)]

mod common;

use std::fs;

use common::gulp;
use gulp_test_support::media::{FlashBeep, counting_ffmpeg};

#[test]
fn one_ffmpeg_per_video_whatever_its_clips() {
    let tmp = tempfile::tempdir().unwrap();
    let videos = tmp.path().join("videos");
    fs::create_dir_all(&videos).unwrap();
    FlashBeep::mp4(6.0, &[1.0]).write(&videos.join("long.mp4"));
    FlashBeep::mp4(3.0, &[2.0]).write(&videos.join("short.mp4"));
    // 15 clips of the long video (overlapping), 3 of the short one, and a
    // row whose span is past the short video's end.
    let mut csv = String::from("path,start,end,caption\n");
    for k in 0..15 {
        let start = f64::from(k) * 0.3;
        csv.push_str(&format!(
            "long.mp4,{start:.1},{:.1},clip {k}\n",
            start + 1.5
        ));
    }
    csv.push_str("short.mp4,0,1,a\nshort.mp4,0.5,2.5,b\nshort.mp4,2,3,c\nshort.mp4,4,5,late\n");
    let manifest = videos.join("clips.csv");
    fs::write(&manifest, csv).unwrap();
    let (wrapper, log) = counting_ffmpeg(tmp.path());
    let out = tmp.path().join("gulped");
    let report = tmp.path().join("report.json");
    let run = gulp()
        .env("GULP_FFMPEG", &wrapper)
        .args(["ingest", "manifest"])
        .arg(&manifest)
        .arg(&out)
        .args([
            "--frame-rate",
            "4",
            "--frame-size",
            "64",
            "--audio",
            "-q",
            "--report",
        ])
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("gulp: skipped: id \"short.mp4@4-5\": row 20: ")
            && stderr.contains("starts after the video"),
        "{stderr}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["items"], 18);
    assert_eq!(json["skipped"].as_array().unwrap().len(), 1);
    // One decode per video; the other runs are the version check.
    let runs = fs::read_to_string(&log).unwrap();
    let decodes = runs.lines().filter(|l| l.contains("-i ")).count();
    assert_eq!(decodes, 2, "{runs}");
    let check = gulp()
        .args(["check", "--decode"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{:?} {}{}",
        check.status,
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    // The clips' meta keeps the manifest's columns.
    let dump = gulp().args(["dump-meta"]).arg(&out).output().unwrap();
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(
        text.contains("\"caption\"") && text.contains("clip 0"),
        "{text}"
    );
}
