//! `gulp copy` between local folders: every file arrives byte for byte in
//! the order readers need, temporaries are left out, a second run skips
//! what is there, a copy killed mid-way finishes when run again, and a
//! destination holding another directory's chunks is refused. (Copies to
//! and from a real S3 server are in scripts/ci/s3-test.sh.)
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{gulp, jpeg, stdout_of};
use gulp_format::MetaFormat;
use gulp_test_support::bench_dir::{Spec, write_dir};

/// A directory of `chunks` chunks, a label file, an index file and a
/// temporary file a crashed writer left.
fn source(root: &Path, chunks: usize, frames_per_item: usize) -> std::path::PathBuf {
    let src = root.join("src");
    std::fs::create_dir(&src).unwrap();
    let spec = Spec {
        items: chunks * 8,
        chunks,
        frames_per_item,
        format: MetaFormat::Msgpack,
    };
    write_dir(&src, &spec, &jpeg("photo-176x100")).unwrap();
    std::fs::write(src.join("label2idx.json"), r#"{"a": 0, "b": 1}"#).unwrap();
    gulp().arg("index").arg(&src).assert().success();
    std::fs::write(src.join(".gulp-tmp.abandoned"), b"half a chunk").unwrap();
    src
}

/// The names of a folder's files, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// `dst` holds every file of `src` but temporaries and locks, byte for
/// byte, and
/// checks clean with its frames decoded (the index file included, so the
/// meta files kept their times).
fn assert_same(src: &Path, dst: &Path) {
    let wanted: Vec<String> = names(src)
        .into_iter()
        .filter(|n| !n.starts_with(".gulp-tmp.") && !n.ends_with(".lock"))
        .collect();
    assert_eq!(names(dst), wanted);
    for name in &wanted {
        assert!(
            std::fs::read(src.join(name)).unwrap() == std::fs::read(dst.join(name)).unwrap(),
            "{name} differs"
        );
    }
    let check = gulp()
        .arg("check")
        .arg(dst)
        .arg("--decode")
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", stdout_of(&check));
}

#[test]
fn a_copy_arrives_whole_in_order_and_a_second_run_skips_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source(tmp.path(), 3, 2);
    let dst = tmp.path().join("dst");
    let out = gulp().arg("copy").arg(&src).arg(&dst).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = stdout_of(&out);
    assert!(stdout.contains("8 file(s) copied"), "{stdout}");
    assert!(
        stdout.contains("left out (temporary and lock files): .gulp-tmp.abandoned"),
        "{stdout}"
    );
    // Data before meta in each chunk; the label file, then the index, last.
    let order: Vec<String> = String::from_utf8(out.stderr)
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().nth(3).unwrap().to_owned())
        .collect();
    assert_eq!(
        order,
        [
            "data_0.gulp",
            "meta_0.gmeta",
            "data_1.gulp",
            "meta_1.gmeta",
            "data_2.gulp",
            "meta_2.gmeta",
            "label2idx.json",
            "gulp_index.bin"
        ]
    );
    assert_same(&src, &dst);

    let again = gulp().arg("copy").arg(&src).arg(&dst).output().unwrap();
    assert!(again.status.success());
    assert!(
        stdout_of(&again).contains("0 file(s) copied (0 B), 8 already there"),
        "{}",
        stdout_of(&again)
    );
    // A file changed in the source is copied again, the rest skipped.
    std::fs::write(src.join("label2idx.json"), r#"{"a": 1, "b": 0}"#).unwrap();
    let changed = gulp().arg("copy").arg(&src).arg(&dst).output().unwrap();
    assert!(
        stdout_of(&changed).contains("1 file(s) copied"),
        "{}",
        stdout_of(&changed)
    );
    assert_eq!(
        std::fs::read(dst.join("label2idx.json")).unwrap(),
        br#"{"a": 1, "b": 0}"#
    );
}

#[test]
fn a_copy_killed_mid_way_finishes_when_run_again() {
    let tmp = tempfile::tempdir().unwrap();
    // 16 chunks of about 1 MB.
    let src = source(tmp.path(), 16, 24);
    let dst = tmp.path().join("dst");
    let mut child = Command::new(env!("CARGO_BIN_EXE_gulp"))
        .arg("copy")
        .arg(&src)
        .arg(&dst)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("data_0.gulp"), "{first}");
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(9),
        "the copy ended before it was killed"
    );
    let partial = names(&dst);
    assert!(
        partial.len() < names(&src).len() - 1,
        "the copy was killed after {partial:?}"
    );
    // What the killed copy left is a readable directory: complete files,
    // each chunk's data before its meta (a half-written file only under a
    // temporary name).
    for name in &partial {
        if let Some(n) = name.strip_prefix("meta_") {
            let data = format!("data_{}", n.replace(".gmeta", ".gulp"));
            assert!(partial.contains(&data), "{name} without {data}");
        }
    }

    let rerun = gulp().arg("copy").arg(&src).arg(&dst).output().unwrap();
    assert!(rerun.status.success(), "{rerun:?}");
    assert_same(&src, &dst);
    // Every id once.
    let info = gulp().arg("info").arg(&dst).arg("--json").output().unwrap();
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(info["items"], 16 * 8, "{info}");
}

#[test]
fn a_destination_with_other_chunks_is_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source(tmp.path(), 2, 1);
    let dst = tmp.path().join("dst");
    std::fs::create_dir(&dst).unwrap();
    std::fs::write(dst.join("data_7.gulp"), b"another dataset").unwrap();
    let out = gulp().arg("copy").arg(&src).arg(&dst).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("holds 1 chunk file(s) that") && stderr.contains("data_7.gulp"),
        "{stderr}"
    );
    assert_eq!(names(&dst), ["data_7.gulp"]);
    // Not a gulp directory: refused too.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = gulp()
        .arg("copy")
        .arg(&empty)
        .arg(tmp.path().join("x"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("not a gulp directory"),
        "refused"
    );
}
