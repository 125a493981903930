//! Real media made with the real ffmpeg, for the ingest tests of gulp-ingest
//! and gulp-cli: test-pattern videos, gulpio2's black-and-white video, 20BN
//! JPEG frame folders; and listings of what a directory holds.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs the real ffmpeg (quiet, overwriting) and returns its stdout.
pub fn ffmpeg(args: &[&str]) -> Vec<u8> {
    let out = Command::new("ffmpeg")
        .args(["-nostdin", "-hide_banner", "-loglevel", "error", "-y"])
        .args(args)
        .output()
        .expect("ffmpeg must be installed (scripts/env/deps.sh installs it)");
    assert!(
        out.status.success(),
        "ffmpeg {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// gulpio2's integration-test video: 80 frames, 100x100, alternating black
/// and white, 8 fps, made exactly as its `system_tests.py` does.
pub fn black_white_video(dir: &Path) -> PathBuf {
    let raw = dir.join("source");
    let mut bytes = Vec::with_capacity(40 * 60000);
    for _ in 0..40 {
        bytes.extend(std::iter::repeat_n(0u8, 30000));
        bytes.extend(std::iter::repeat_n(0xffu8, 30000));
    }
    fs::write(&raw, bytes).unwrap();
    let out = dir.join("source.mp4");
    ffmpeg(&[
        "-t",
        "10",
        "-s",
        "100x100",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "-r",
        "8",
        "-i",
        raw.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    out
}

/// A short moving test pattern (`testsrc2`), `seconds` long at `fps`.
pub fn test_video(path: &Path, size: &str, fps: u32, seconds: f64) {
    testsrc2(path, size, fps, seconds, &[]);
}

/// `testsrc2` encoded to `path`, with `extra` output options.
fn testsrc2(path: &Path, size: &str, fps: u32, seconds: f64, extra: &[&str]) {
    let source = format!("testsrc2=size={size}:rate={fps}:duration={seconds}");
    let mut args = vec!["-f", "lavfi", "-i", &source, "-pix_fmt", "yuv420p"];
    args.extend(extra);
    args.push(path.to_str().unwrap());
    ffmpeg(&args);
}

/// JPEG frames of a test pattern, as a 20BN frame folder.
pub fn jpeg_folder(dir: &Path, size: &str, frames: u32) {
    fs::create_dir_all(dir).unwrap();
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        &format!("testsrc2=size={size}:rate=10"),
        "-frames:v",
        &frames.to_string(),
        "-q:v",
        "3",
        dir.join("%05d.jpg").to_str().unwrap(),
    ]);
}

/// Every file of a directory (not hidden ones) with its bytes.
pub fn dir_contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().into_string().unwrap(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// Names of every entry of a directory, hidden ones included.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// A `testsrc2` clip whose stream starts at 0.2 s, as clips cut from a
/// longer video do (how `-r` treats the start depends on ffmpeg's other
/// options).
pub fn late_start_video(path: &Path, size: &str, fps: u32, seconds: f64) {
    testsrc2(path, size, fps, seconds, &["-output_ts_offset", "0.2"]);
}
