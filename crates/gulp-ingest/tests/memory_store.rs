//! Sharded ingests, their status, merges and checks in a store held in
//! memory (`memory://`): the code paths of a bucket, run by `cargo test`
//! without a server. The same paths run against Garage in the S3 test
//! (scripts/ci/s3-test.sh).
#![cfg(feature = "s3")]
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use gulp_ingest::adapters::Dataset;
use gulp_ingest::shard::{merge, status};
use gulp_ingest::{FrameOptions, IngestOptions, Shard, ingest};
use gulp_io::check::{Options, Report, check_directory};
use gulp_io::{GulpDirectory, Selection};
use gulp_test_support::media;

/// A 20BN-CSV-JPEG dataset of `n` folders of test-pattern JPEGs, named
/// `{prefix}{i}`.
fn dataset(root: &Path, prefix: &str, n: usize) -> (PathBuf, PathBuf) {
    let frames = root.join("frames");
    let mut csv = String::new();
    for i in 0..n {
        media::jpeg_folder(
            &frames.join(format!("{prefix}{i}")),
            "64x48",
            if i % 2 == 0 { 3 } else { 4 },
        );
        csv.push_str(&format!("{prefix}{i};label {}\n", i % 2));
    }
    let list = root.join(format!("{prefix}.csv"));
    fs::write(&list, csv).unwrap();
    (list, frames)
}

fn opts(shard: Option<Shard>) -> IngestOptions {
    IngestOptions {
        items_per_chunk: 2,
        workers: 2,
        frames: FrameOptions::default(),
        fsync: false,
        shard,
        ..IngestOptions::default()
    }
}

/// Every id of the directory at `dir`, and the frames of each, read back.
fn contents(dir: &Path) -> Vec<(String, Vec<Vec<u8>>)> {
    let gulp = GulpDirectory::open(dir).unwrap();
    let mut out: Vec<(String, Vec<Vec<u8>>)> = gulp
        .ids()
        .map(|id| {
            let frames = gulp.frames(id, &Selection::All).unwrap();
            (id.to_owned(), frames.iter().map(|f| f.to_vec()).collect())
        })
        .collect();
    out.sort();
    out
}

/// `check_directory` of `dir`, decoding every frame or not.
fn check(dir: &Path, decode: bool) -> Report {
    let threads = if decode { 2 } else { 1 };
    check_directory(dir, Options { decode, threads }, &|_| {}).unwrap()
}

fn names(dir: &Path) -> BTreeSet<String> {
    gulp_store::list_dir(dir)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect()
}

#[test]
fn a_sharded_ingest_into_a_store_reports_its_tasks_and_checks_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let (list, frames) = dataset(tmp.path(), "clip", 7);
    let out = PathBuf::from("memory://sharded/train");
    let local = tmp.path().join("local");
    let d = Dataset::twenty_bn_csv_jpeg(&list, &frames, &out).unwrap();
    ingest(&d, &local, &opts(None), &mut |_| {}).unwrap();

    // Task 0 of 2 writes chunks 0 and 2 of 0..4, then leaves its done file.
    let r = ingest(&d, &out, &opts(Shard::new(0, 2)), &mut |_| {}).unwrap();
    assert_eq!(r.chunks, vec![0, 2]);
    let s = status(&out, None).unwrap();
    assert!(s.in_bucket && s.running && !s.complete, "{s:?}");
    assert_eq!(
        (s.shards, s.chunks_total, s.chunks_committed),
        (2, Some(4), 2)
    );
    let states: Vec<&str> = s.tasks.iter().map(|t| t.state).collect();
    assert_eq!(states, ["done", "not started"]);
    assert_eq!(s.resubmit, [1]);
    assert_eq!(s.tasks[1].missing, [1, 3]);

    let r = ingest(&d, &out, &opts(Shard::new(1, 2)), &mut |_| {}).unwrap();
    assert_eq!(r.chunks, vec![1, 3]);
    let s = status(&out, Some(2)).unwrap();
    assert_eq!(s.chunks_committed, 4, "{s:?}");
    assert!(s.resubmit.is_empty(), "{s:?}");

    // The same items and frames as the unsharded local ingest.
    assert_eq!(contents(&out), contents(&local));
    let report = check(&out, true);
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.chunks, 4);

    // A data object cut short is a problem that names it.
    let data = out.join("data_1.gulp");
    let mut bytes = gulp_store::read(&data).unwrap();
    bytes.truncate(bytes.len() / 2);
    gulp_store::write_object(&data, bytes).unwrap();
    let report = check(&out, false);
    assert!(!report.is_clean());
    let text = format!("{:?}", report.problems);
    assert!(
        text.contains("memory://sharded/train/data_1.gulp"),
        "{text}"
    );
}

#[test]
fn shard_directories_in_a_store_merge_within_it() {
    let tmp = tempfile::tempdir().unwrap();
    let store = "memory://merging";
    let (list, frames) = dataset(tmp.path(), "clip", 7);
    let local = tmp.path().join("local");
    let d = Dataset::twenty_bn_csv_jpeg(&list, &frames, &local).unwrap();
    ingest(&d, &local, &opts(None), &mut |_| {}).unwrap();
    // Each task of a sharded run into a directory of its own.
    let mut dirs = Vec::new();
    for k in 0..2 {
        let dir = PathBuf::from(format!("{store}/part{k}"));
        ingest(&d, &dir, &opts(Shard::new(k, 2)), &mut |_| {}).unwrap();
        dirs.push(dir);
    }
    let expected = contents(&local);

    let out = PathBuf::from(format!("{store}/all"));
    let report = merge(&out, &dirs).unwrap();
    assert_eq!((report.moved, report.sources), (4, 2));
    assert_eq!(contents(&out), expected);
    for dir in &dirs {
        assert!(
            !names(dir)
                .iter()
                .any(|n| n.ends_with(".gulp") || n.ends_with(".gmeta")),
            "{} keeps chunks: {:?}",
            dir.display(),
            names(dir)
        );
    }
    let report = check(&out, false);
    assert!(report.is_clean(), "{:?}", report.problems);

    // Another store is another bucket: refused, nothing moved.
    let (list, frames) = dataset(&tmp.path().join("c"), "c", 2);
    let other = PathBuf::from("memory://elsewhere/c");
    let d = Dataset::twenty_bn_csv_jpeg(&list, &frames, &other).unwrap();
    ingest(&d, &other, &opts(None), &mut |_| {}).unwrap();
    let before = names(&other);
    let e = merge(&out, std::slice::from_ref(&other)).unwrap_err();
    assert!(e.to_string().contains("not in one bucket"), "{e}");
    assert_eq!(names(&other), before);
}
