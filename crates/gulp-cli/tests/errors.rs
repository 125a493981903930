//! Error paths of every command: exit status 2 and a `gulp: error:` line that
//! says what and where; never a panic.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

mod common;

use std::path::Path;

use common::{clean_dir, gulp};
use gulp_test_support::gulp_dir::GulpDirBuilder;
use predicates::prelude::*;
use predicates::str::contains;

/// Every command, with the arguments it needs besides the directory.
fn commands(out: &Path) -> Vec<Vec<String>> {
    let out = out.display().to_string();
    vec![
        vec!["check".into()],
        vec!["check".into(), "--decode".into(), "--json".into()],
        vec!["dump-meta".into()],
        vec!["info".into()],
        vec!["info".into(), "--json".into()],
        vec!["convert".into(), "--to".into(), "msgpack".into()],
        vec![
            "extract".into(),
            "--id".into(),
            "a".into(),
            "--out".into(),
            out,
        ],
        vec!["bench".into()],
    ]
}

/// Asserts exit 2 with an error naming `what`, nothing on stdout, and no
/// panic.
fn assert_error(args: &[String], dir: &Path, what: &str) {
    gulp()
        .args(args)
        .arg(dir)
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::starts_with("gulp: error: "))
        .stderr(contains(what))
        .stderr(contains("panicked").not());
}

#[test]
fn missing_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    for args in commands(&tmp.path().join("out")) {
        assert_error(&args, &missing, &missing.display().to_string());
    }
}

#[test]
fn a_file_instead_of_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("file");
    std::fs::write(&file, b"not a directory").unwrap();
    for args in commands(&tmp.path().join("out")) {
        assert_error(&args, &file, &file.display().to_string());
    }
}

#[test]
fn corrupt_meta_is_an_error_except_for_check() {
    let tmp = clean_dir();
    let meta = tmp.path().join("meta_0.gmeta");
    let text = std::fs::read(&meta).unwrap();
    std::fs::write(&meta, &text[..text.len() - 3]).unwrap();
    let out = tempfile::tempdir().unwrap();
    for args in commands(out.path()) {
        if args[0] == "check" {
            gulp().args(&args).arg(tmp.path()).assert().code(1);
        } else {
            assert_error(&args, tmp.path(), &meta.display().to_string());
        }
    }
    // The offset in the meta file is part of the message.
    gulp()
        .arg("info")
        .arg(tmp.path())
        .assert()
        .code(2)
        .stderr(contains(format!("at byte {}", text.len() - 3)));
}

#[test]
fn unreadable_meta_file() {
    // A directory where the meta file should be: reading it fails (this works
    // as root too, unlike permissions).
    let tmp = clean_dir();
    let meta = tmp.path().join("meta_1.gmeta");
    std::fs::remove_file(&meta).unwrap();
    std::fs::create_dir(&meta).unwrap();
    for args in [vec!["info".to_owned()], vec!["dump-meta".to_owned()]] {
        assert_error(&args, tmp.path(), &meta.display().to_string());
    }
    gulp()
        .arg("check")
        .arg(tmp.path())
        .assert()
        .code(1)
        .stdout(contains(meta.display().to_string()).and(contains("cannot read")));
}

#[test]
fn record_past_the_end_of_the_data_file() {
    let tmp = clean_dir();
    let data = tmp.path().join("data_0.gulp");
    let file = std::fs::OpenOptions::new().write(true).open(&data).unwrap();
    file.set_len(common::frame_info(tmp.path(), 0, "b", 0).loc + 8)
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    for args in [
        vec!["bench".to_owned()],
        vec![
            "convert".to_owned(),
            "--to".to_owned(),
            "msgpack".to_owned(),
        ],
        vec![
            "extract".to_owned(),
            "--id".to_owned(),
            "b".to_owned(),
            "--out".to_owned(),
            out.path().display().to_string(),
        ],
    ] {
        assert_error(
            &args,
            tmp.path(),
            &format!("{}: id \"b\" frame 0", data.display()),
        );
    }
    // The failed conversion left the meta as it was.
    assert_eq!(
        std::fs::read(tmp.path().join("meta_0.gmeta")).unwrap()[0],
        b'{'
    );
}

#[test]
fn duplicate_id_is_an_error_naming_both_chunks() {
    let tmp = clean_dir();
    GulpDirBuilder::new(tmp.path())
        .chunk(5)
        .item("c", gulp_format::Value::Null, [common::jpeg("white-8x8")])
        .write();
    gulp()
        .arg("info")
        .arg(tmp.path())
        .assert()
        .code(2)
        .stderr(contains("duplicate id \"c\""))
        .stderr(contains("meta_1.gmeta").and(contains("meta_5.gmeta")));
}

#[test]
fn bad_selection_syntax() {
    let tmp = clean_dir();
    let out = tmp.path().join("out");
    for (sel, what) in [
        ("1:2:3:4", "invalid frame selection \"1:2:3:4\""),
        ("a:b", "\"a\" is not an integer"),
        ("::0", "step cannot be zero"),
        ("1,,2", "empty index"),
        ("0,9", "frame index 9 is out of range for 3 frames"),
    ] {
        gulp()
            .args(["extract", "--id", "a", "--select", sel, "--out"])
            .arg(&out)
            .arg(tmp.path())
            .assert()
            .code(2)
            .stderr(predicate::str::starts_with("gulp: error: "))
            .stderr(contains(what));
    }
    assert!(!out.exists(), "nothing is written for a bad selection");
}

#[test]
fn unknown_id() {
    let tmp = clean_dir();
    gulp()
        .args(["dump-meta", "--id", "a", "--id", "zz"])
        .arg(tmp.path())
        .assert()
        .code(2)
        .stdout("")
        .stderr(contains("no item with id \"zz\""));
    gulp()
        .args(["extract", "--id", "zz", "--out"])
        .arg(tmp.path().join("out"))
        .arg(tmp.path())
        .assert()
        .code(2)
        .stderr(contains("no item with id \"zz\""));
    gulp()
        .args(["dump-meta", "--chunk", "7"])
        .arg(tmp.path())
        .assert()
        .code(2)
        .stderr(contains("no chunk 7"));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["check"][..],
        &["convert", "dir", "--to", "yaml"],
        &["extract", "dir", "--out", "o"],
        &["bench", "dir", "--threads", "0"],
        &["frobnicate"],
        &[],
    ] {
        gulp().args(args).assert().code(2);
    }
    gulp().arg("--help").assert().success();
    for command in ["check", "dump-meta", "info", "convert", "extract", "bench"] {
        gulp()
            .args([command, "--help"])
            .assert()
            .success()
            .stdout(contains("Usage: gulp ").and(contains("Example: gulp")));
    }
}
