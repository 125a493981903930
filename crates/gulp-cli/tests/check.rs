//! `gulp check`: clean directories pass; each kind of damage gives exit 1 and
//! a report line naming the file, the id, the frame and the byte offset.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

mod common;

use std::path::Path;

use common::{clean_dir, fixture_cases, fixture_copy, frame_info, gulp, meta, patch, stdout_of};
use gulp_format::{JsonSerializer, Serializer, Value};
use gulp_test_support::gulp_dir::GulpDirBuilder;

/// Runs `gulp check dir [extra]`, expects `code`, returns stdout.
fn check(dir: &Path, extra: &[&str], code: i32) -> String {
    let output = gulp()
        .arg("check")
        .arg(dir)
        .args(extra)
        .assert()
        .code(code)
        .get_output()
        .clone();
    stdout_of(&output)
}

/// Asserts that one line of `report` has all of `parts`.
fn assert_line(report: &str, parts: &[&str]) {
    assert!(
        report
            .lines()
            .any(|line| parts.iter().all(|p| line.contains(p))),
        "no line with {parts:?} in:\n{report}"
    );
}

fn at(dir: &Path, file: &str, id: &str, frame: usize, offset: u64) -> Vec<String> {
    vec![
        dir.join(file).display().to_string(),
        format!("id {id:?} frame {frame} at byte {offset}"),
    ]
}

fn parts(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn clean_directory_exits_0() {
    let tmp = clean_dir();
    let report = check(tmp.path(), &["--decode"], 0);
    assert!(
        report.contains("2 chunks, 3 items, 7 frames") && report.contains("7 frames decoded"),
        "{report}"
    );
    assert!(report.contains("no problems found"), "{report}");
}

#[test]
fn every_fixture_is_clean_including_gulpio2_false_alarms() {
    // same_id_twice fails gulpio2's size check; empty_chunk crashes it.
    for case in fixture_cases() {
        let report = check(&case, &["--decode"], 0);
        assert!(report.contains("no problems found"), "{report}");
    }
}

#[test]
fn flipped_jpeg_start_marker() {
    let tmp = clean_dir();
    let dir = tmp.path();
    let fi = frame_info(dir, 0, "a", 1);
    patch(&dir.join("data_0.gulp"), fi.loc, &[0x00]);
    let report = check(dir, &[], 1);
    let mut want = at(dir, "data_0.gulp", "a", 1, fi.loc);
    want.push("FFD8".into());
    assert_line(&report, &parts(&want));
}

#[test]
fn flipped_jpeg_end_marker() {
    let tmp = clean_dir();
    let dir = tmp.path();
    let fi = frame_info(dir, 0, "b", 0);
    let eoi = fi.loc + fi.jpeg_len().unwrap() - 1;
    patch(&dir.join("data_0.gulp"), eoi, &[0xd8]);
    let report = check(dir, &[], 1);
    let mut want = at(dir, "data_0.gulp", "b", 0, fi.loc);
    want.push("FFD9".into());
    assert_line(&report, &parts(&want));
}

#[test]
fn truncated_data_file() {
    let tmp = clean_dir();
    let dir = tmp.path();
    let last = frame_info(dir, 0, "b", 1);
    let first = frame_info(dir, 0, "b", 0);
    let data = dir.join("data_0.gulp");
    let file = std::fs::OpenOptions::new().write(true).open(&data).unwrap();
    file.set_len(first.loc + 10).unwrap();
    let report = check(dir, &[], 1);
    for (k, fi) in [(0, first), (1, last)] {
        let mut want = at(dir, "data_0.gulp", "b", k, fi.loc);
        want.push("past the end of the data file".into());
        assert_line(&report, &parts(&want));
    }
    // Frames before the cut are fine, and the other chunk is still checked.
    assert!(!report.contains("id \"a\""), "{report}");
    assert!(report.contains("2 chunks, 3 items, 7 frames"), "{report}");
}

#[test]
fn pad_byte_not_zero() {
    let tmp = clean_dir();
    let dir = tmp.path();
    let m = meta(dir, 0);
    let (id, k, fi) = m
        .iter()
        .flat_map(|(id, item)| {
            item.frame_info
                .iter()
                .enumerate()
                .map(move |(k, fi)| (id.to_owned(), k, *fi))
        })
        .find(|(_, _, fi)| fi.pad > 0)
        .expect("a frame with padding");
    let pad_at = fi.loc + fi.jpeg_len().unwrap();
    patch(&dir.join("data_0.gulp"), pad_at, &[0x55]);
    let report = check(dir, &[], 1);
    let mut want = at(dir, "data_0.gulp", &id, k, fi.loc);
    want.push(format!("pad byte at {pad_at} is 0x55"));
    assert_line(&report, &parts(&want));
}

/// Rewrites chunk 0's JSON meta after `change`.
fn edit_meta(dir: &Path, change: impl FnOnce(&mut gulp_format::ChunkMeta)) {
    let mut m = meta(dir, 0);
    change(&mut m);
    std::fs::write(dir.join("meta_0.gmeta"), JsonSerializer.to_vec(&m).unwrap()).unwrap();
}

#[test]
fn offset_past_end_of_file() {
    let tmp = clean_dir();
    let dir = tmp.path();
    let size = std::fs::metadata(dir.join("data_0.gulp")).unwrap().len();
    edit_meta(dir, |m| {
        m.get_mut("a").unwrap().frame_info[2].loc = size + 400;
    });
    let report = check(dir, &[], 1);
    let mut want = at(dir, "data_0.gulp", "a", 2, size + 400);
    want.push("past the end of the data file".into());
    assert_line(&report, &parts(&want));
}

#[test]
fn overlapping_records_and_bad_frame_info() {
    let tmp = clean_dir();
    let dir = tmp.path();
    let a0 = frame_info(dir, 0, "a", 0);
    edit_meta(dir, |m| {
        let b = m.get_mut("b").unwrap();
        b.frame_info[1] = a0;
        b.frame_info[0].pad = 5;
    });
    let report = check(dir, &[], 1);
    let mut want = at(dir, "data_0.gulp", "b", 1, a0.loc);
    want.push("overlaps id \"a\" frame 0".into());
    assert_line(&report, &parts(&want));
    assert_line(&report, &["id \"b\" frame 0", "pad is not in 0..=3"]);
}

#[test]
fn trailing_bytes_after_the_last_record() {
    let tmp = clean_dir();
    let dir = tmp.path();
    let data = dir.join("data_0.gulp");
    let size = std::fs::metadata(&data).unwrap().len();
    let mut bytes = std::fs::read(&data).unwrap();
    bytes.extend_from_slice(&[0; 8]);
    std::fs::write(&data, bytes).unwrap();
    let report = check(dir, &[], 1);
    assert_line(
        &report,
        &[
            &data.display().to_string(),
            &format!("at byte {size}: 8 bytes after the last record"),
        ],
    );
}

#[test]
fn duplicate_id_in_two_chunks() {
    let tmp = clean_dir();
    let dir = tmp.path();
    GulpDirBuilder::new(dir)
        .chunk(2)
        .item("a", Value::from("again"), [common::jpeg("white-8x8")])
        .write();
    // The directory does not open, but check still looks at every chunk.
    let report = check(dir, &["--decode"], 1);
    assert_line(
        &report,
        &[
            &dir.join("meta_2.gmeta").display().to_string(),
            "id \"a\"",
            &format!("also in {}", dir.join("meta_0.gmeta").display()),
        ],
    );
    assert!(report.contains("3 chunks, 4 items, 8 frames"), "{report}");
    assert!(report.contains("8 frames decoded"), "{report}");
}

#[test]
fn orphan_and_temporary_files() {
    let tmp = clean_dir();
    let dir = tmp.path();
    std::fs::remove_file(dir.join("meta_1.gmeta")).unwrap();
    std::fs::write(dir.join(".gulp-tmp.data_7.gulp"), b"partial").unwrap();
    std::fs::write(dir.join("data_01.gulp"), b"").unwrap();
    let report = check(dir, &[], 1);
    assert_line(
        &report,
        &[
            &dir.join("data_1.gulp").display().to_string(),
            "data file without its meta file",
        ],
    );
    assert_line(&report, &[".gulp-tmp.data_7.gulp", "temporary file"]);
    assert_line(&report, &["data_01.gulp", "gulpio2 would take it"]);
}

#[test]
fn corrupt_inside_the_jpeg_stream_needs_decode() {
    let tmp = clean_dir();
    let dir = tmp.path();
    let fi = frame_info(dir, 0, "a", 1);
    let len = fi.jpeg_len().unwrap() as usize;
    // Everything between the SOI and EOI markers becomes zeros.
    patch(&dir.join("data_0.gulp"), fi.loc + 2, &vec![0; len - 4]);
    check(dir, &[], 0);
    let report = check(dir, &["--decode"], 1);
    let mut want = at(dir, "data_0.gulp", "a", 1, fi.loc);
    want.push("cannot decode JPEG".into());
    assert_line(&report, &parts(&want));
    assert!(report.contains("6 frames decoded"), "{report}");
}

#[test]
fn msgpack_checksum_mismatch() {
    let tmp = clean_dir();
    let dir = tmp.path();
    let fi = frame_info(dir, 1, "c", 0);
    let middle = fi.loc + fi.jpeg_len().unwrap() / 2;
    let data = dir.join("data_1.gulp");
    let old = std::fs::read(&data).unwrap()[middle as usize];
    patch(&data, middle, &[!old]);
    let report = check(dir, &[], 1);
    let mut want = at(dir, "data_1.gulp", "c", 0, fi.loc);
    want.push("CRC-32".into());
    assert_line(&report, &parts(&want));
}

#[test]
fn unreadable_empty_and_fingerprint_broken_meta() {
    let tmp = clean_dir();
    let dir = tmp.path();
    // Chunk 0: JSON cut short; chunk 1: msgpack with a flipped byte.
    let meta0 = dir.join("meta_0.gmeta");
    let text = std::fs::read(&meta0).unwrap();
    std::fs::write(&meta0, &text[..40]).unwrap();
    let meta1 = dir.join("meta_1.gmeta");
    let mut packed = std::fs::read(&meta1).unwrap();
    packed[20] ^= 0x01;
    std::fs::write(&meta1, packed).unwrap();
    let report = check(dir, &[], 1);
    assert_line(
        &report,
        &[&meta0.display().to_string(), "at byte 40: invalid meta"],
    );
    assert_line(&report, &[&meta1.display().to_string(), "fingerprint"]);

    std::fs::write(&meta0, b"").unwrap();
    let report = check(dir, &[], 1);
    assert_line(
        &report,
        &[&meta0.display().to_string(), "meta file is empty"],
    );
}

#[test]
fn empty_data_file_with_frames_in_meta() {
    let tmp = clean_dir();
    let dir = tmp.path();
    std::fs::write(dir.join("data_1.gulp"), b"").unwrap();
    let report = check(dir, &[], 1);
    assert_line(
        &report,
        &[
            &dir.join("data_1.gulp").display().to_string(),
            "data file is empty, but the meta has 2 frames",
        ],
    );
}

#[test]
fn every_problem_is_reported_in_one_run() {
    let tmp = clean_dir();
    let dir = tmp.path();
    let a0 = frame_info(dir, 0, "a", 0);
    let b1 = frame_info(dir, 0, "b", 1);
    let c1 = frame_info(dir, 1, "c", 1);
    let data0 = dir.join("data_0.gulp");
    patch(&data0, a0.loc, &[0x12, 0x34]);
    patch(&data0, b1.loc, &[0x00]);
    let data1 = dir.join("data_1.gulp");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&data1)
        .unwrap();
    file.set_len(c1.loc + 4).unwrap();
    let report = check(dir, &[], 1);
    assert_line(&report, &parts(&at(dir, "data_0.gulp", "a", 0, a0.loc)));
    assert_line(&report, &parts(&at(dir, "data_0.gulp", "b", 1, b1.loc)));
    assert_line(&report, &parts(&at(dir, "data_1.gulp", "c", 1, c1.loc)));
    assert!(report.contains(": 3 problems"), "{report}");
}

#[test]
fn json_report() {
    let tmp = clean_dir();
    let dir = tmp.path();
    let fi = frame_info(dir, 0, "a", 2);
    patch(&dir.join("data_0.gulp"), fi.loc, &[0x00]);
    let output = gulp()
        .args(["check", "--json"])
        .arg(dir)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["clean"], false);
    assert_eq!(report["chunks"], 2);
    assert_eq!(report["items"], 3);
    assert_eq!(report["frames"], 7);
    let problems = report["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{report}");
    let p = &problems[0];
    assert_eq!(p["kind"], "jpeg-start");
    assert_eq!(
        p["file"],
        dir.join("data_0.gulp").to_string_lossy().as_ref()
    );
    assert_eq!(p["id"], "a");
    assert_eq!(p["frame"], 2);
    assert_eq!(p["offset"], fi.loc);

    let clean = clean_dir();
    let output = gulp()
        .args(["check", "--json"])
        .arg(clean.path())
        .assert()
        .code(0)
        .get_output()
        .clone();
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["clean"], true);
    assert_eq!(report["problems"], serde_json::json!([]));
}

#[test]
fn missing_directory_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    gulp()
        .arg("check")
        .arg(&missing)
        .assert()
        .code(2)
        .stderr(predicates::str::starts_with("gulp: error: "))
        .stderr(predicates::str::contains(missing.display().to_string()));
}

#[test]
fn fixture_with_a_damaged_copy() {
    // A gulpio2-written directory, damaged: its problems are found too.
    let case = common::fixtures().join("gulpio2/same_id_twice");
    let (_tmp, dir) = fixture_copy(&case);
    let fi = frame_info(&dir, 0, "x", 1);
    patch(&dir.join("data_0.gulp"), fi.loc + 1, &[0x00]);
    let report = check(&dir, &[], 1);
    assert_line(&report, &parts(&at(&dir, "data_0.gulp", "x", 1, fi.loc)));
}

/// 300 zero bytes over the middle of a real frame's scan data, markers
/// intact: the records are fine, so only `--decode` sees it, and strict
/// decoding (libjpeg-turbo's corrupt-data warning is an error) reports it
/// with the id, the frame and the offset.
#[cfg(feature = "turbojpeg")]
#[test]
fn scan_data_overwritten_mid_stream_needs_strict_decode() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (w, h) = (320, 240);
    let pixels: Vec<u8> = (0..w * h * 3)
        .map(|i| ((i * 31 + (i / 960) * 7) % 251) as u8)
        .collect();
    let jpeg =
        gulp_codec::encode_jpeg(&pixels, (w, h), 3, 90, gulp_codec::Subsampling::S444).unwrap();
    GulpDirBuilder::new(dir)
        .item("clip", Value::Null, [jpeg.clone(), jpeg.clone(), jpeg])
        .write();
    check(dir, &["--decode"], 0);
    let fi = frame_info(dir, 0, "clip", 1);
    let middle = fi.loc + fi.jpeg_len().unwrap() / 2;
    patch(&dir.join("data_0.gulp"), middle, &[0; 300]);
    check(dir, &[], 0);
    let report = check(dir, &["--decode"], 1);
    let mut want = at(dir, "data_0.gulp", "clip", 1, fi.loc);
    want.push("cannot decode JPEG".into());
    assert_line(&report, &parts(&want));
    assert!(report.contains("2 frames decoded"), "{report}");
}

/// What a killed ingest leaves (temporary files, a commit cut between its
/// two renames) is listed as notes, exit 0; `gulp recover` finishes the
/// commit and removes the rest, and the directory is whole again.
#[test]
fn leftovers_of_an_interrupted_write_are_notes_and_recover_clears_them() {
    let tmp = clean_dir();
    let dir = tmp.path();
    let before = std::fs::read(dir.join("meta_1.gmeta")).unwrap();
    // Chunk 1's commit cut after its data rename, and a write that never
    // reached its commit.
    std::fs::rename(dir.join("meta_1.gmeta"), dir.join(".gulp-tmp.meta_1.gmeta")).unwrap();
    std::fs::write(dir.join(".gulp-tmp.data_2.gulp"), b"partial").unwrap();
    let report = check(dir, &[], 0);
    assert_line(
        &report,
        &[
            "note: ",
            &dir.join("data_1.gulp").display().to_string(),
            "cut between its two renames",
        ],
    );
    assert_line(
        &report,
        &["note: ", ".gulp-tmp.data_2.gulp", "temporary file"],
    );
    assert!(
        report.contains("no problems found; 2 leftovers"),
        "{report}"
    );
    let json = check(dir, &["--json"], 0);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["clean"], true);
    assert_eq!(json["notes"].as_array().unwrap().len(), 2, "{json}");
    let kinds: Vec<&str> = json["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["temp-file", "unfinished-commit"], "{json}");
    // A real orphan (no temporary meta) stays damage.
    let out = gulp()
        .arg("recover")
        .arg(dir)
        .assert()
        .code(0)
        .get_output()
        .clone();
    let said = stdout_of(&out);
    assert!(
        said.contains("chunk 1: finished an interrupted commit"),
        "{said}"
    );
    assert!(said.contains(".gulp-tmp.data_2.gulp"), "{said}");
    assert_eq!(std::fs::read(dir.join("meta_1.gmeta")).unwrap(), before);
    let report = check(dir, &["--decode"], 0);
    assert!(
        report.contains("2 chunks, 3 items, 7 frames") && !report.contains("note"),
        "{report}"
    );
    let out = gulp()
        .arg("recover")
        .arg(dir)
        .assert()
        .code(0)
        .get_output()
        .clone();
    assert!(stdout_of(&out).contains("nothing to recover"));
    // Without its temporary meta, a data file alone is damage.
    std::fs::remove_file(dir.join("meta_1.gmeta")).unwrap();
    let report = check(dir, &[], 1);
    assert_line(&report, &["data_1.gulp", "data file without its meta file"]);
}
