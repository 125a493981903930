//! Corrupt directories: each gives the error that names what is wrong and
//! where, and never a panic.

// Test code: a panic is a failure with a message.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use gulp_format::Value;
use gulp_io::{DirectoryWarning, ErrorKind, GulpDirectory, ReadMode, Selection};
use gulp_test_support::gulp_dir::GulpDirBuilder;

/// A valid directory: chunk 0 with ids a (2 frames) and b (1 frame), chunk 1
/// with id c. Frames are 5, 6 and 7 bytes, so pads are 3, 2 and 1.
fn valid(dir: &Path) {
    GulpDirBuilder::new(dir)
        .item(
            "a",
            Value::from("A"),
            [
                vec![0xffu8, 0xd8, 1, 0xff, 0xd9],
                vec![0xff, 0xd8, 1, 2, 0xff, 0xd9],
            ],
        )
        .item(
            "b",
            Value::from("B"),
            [vec![0xffu8, 0xd8, 1, 2, 3, 0xff, 0xd9]],
        )
        .next_chunk()
        .msgpack()
        .item("c", Value::from("C"), [vec![0xffu8, 0xd8, 0xff, 0xd9]])
        .write();
}

fn set_meta(dir: &Path, text: &str) {
    std::fs::write(dir.join("meta_0.gmeta"), text).unwrap();
}

/// What goes wrong: at open, or when reading id "a" (or "b").
enum Expect {
    Open(&'static str),
    Read(&'static str, &'static str),
}

#[test]
fn corrupt_directories_give_precise_errors() {
    type Damage = fn(&Path);
    let cases: Vec<(&str, Damage, Expect)> = vec![
        (
            "offset past end of file",
            |d| {
                set_meta(
                    d,
                    r#"{"a": {"frame_info": [[0, 3, 8], [4000, 2, 8]], "meta_data": ["A"]}}"#,
                )
            },
            Expect::Read(
                "a",
                "data_0.gulp: id \"a\" frame 1: record ends at byte 4008, past the end of the data file (24 bytes) (record at byte 4000)",
            ),
        ),
        (
            "length not a multiple of 4",
            |d| {
                set_meta(
                    d,
                    r#"{"a": {"frame_info": [[0, 3, 7]], "meta_data": ["A"]}}"#,
                )
            },
            Expect::Read(
                "a",
                "data_0.gulp: id \"a\" frame 0: length is not a multiple of 4 (record at byte 0)",
            ),
        ),
        (
            "pad of 4 or more",
            |d| {
                set_meta(
                    d,
                    r#"{"a": {"frame_info": [[0, 4, 8]], "meta_data": ["A"]}}"#,
                )
            },
            Expect::Read(
                "a",
                "id \"a\" frame 0: pad is not in 0..=3 (record at byte 0)",
            ),
        ),
        (
            "pad larger than length",
            |d| {
                set_meta(
                    d,
                    r#"{"a": {"frame_info": [[8, 3, 0]], "meta_data": ["A"]}}"#,
                )
            },
            Expect::Read(
                "a",
                "id \"a\" frame 0: pad is larger than length (record at byte 8)",
            ),
        ),
        (
            "offset overflow",
            |d| {
                set_meta(
                    d,
                    r#"{"a": {"frame_info": [[18446744073709551612, 0, 8]], "meta_data": ["A"]}}"#,
                )
            },
            Expect::Read(
                "a",
                "loc + length overflows (record at byte 18446744073709551612)",
            ),
        ),
        (
            "truncated data file",
            |d| {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(d.join("data_0.gulp"))
                    .unwrap();
                f.set_len(17).unwrap();
            },
            Expect::Read(
                "b",
                "id \"b\" frame 0: record ends at byte 24, past the end of the data file (17 bytes) (record at byte 16)",
            ),
        ),
        (
            "garbage meta",
            |d| std::fs::write(d.join("meta_0.gmeta"), b"\x00\x01garbage").unwrap(),
            Expect::Open(
                "meta_0.gmeta: unrecognised meta format: first bytes are [00, 01, 67, 61, 72, 62, 61, 67, 65]",
            ),
        ),
        (
            "empty meta",
            |d| set_meta(d, ""),
            Expect::Open("meta_0.gmeta: meta file is empty"),
        ),
        (
            "truncated JSON meta",
            |d| {
                set_meta(
                    d,
                    r#"{"a": {"frame_info": [[0, 3, 8]], "meta_data": [{"x": "#,
                )
            },
            Expect::Open(
                "meta_0.gmeta: invalid JSON meta at byte 54: unexpected end of file, expected a value (the file ends here: truncated?)",
            ),
        ),
        (
            "damaged msgpack meta",
            |d| {
                let p = d.join("meta_1.gmeta");
                let mut bytes = std::fs::read(&p).unwrap();
                bytes[20] ^= 0x10;
                std::fs::write(p, bytes).unwrap();
            },
            Expect::Open("meta_1.gmeta: msgpack meta fingerprint mismatch"),
        ),
        (
            "duplicate id across chunks",
            |d| {
                GulpDirBuilder::new(d)
                    .chunk(7)
                    .item("b", Value::Null, [vec![1u8; 4]])
                    .write();
            },
            Expect::Open("duplicate id \"b\": in "),
        ),
        (
            "unreadable meta (a directory)",
            |d| {
                std::fs::remove_file(d.join("meta_0.gmeta")).unwrap();
                std::fs::create_dir(d.join("meta_0.gmeta")).unwrap();
            },
            Expect::Open("reading "),
        ),
    ];
    for (name, damage, expect) in cases {
        let dir = tempfile::tempdir().unwrap();
        valid(dir.path());
        damage(dir.path());
        for mode in [ReadMode::Mmap, ReadMode::Buffered] {
            let opened = GulpDirectory::open_with(dir.path(), mode);
            match &expect {
                Expect::Open(needle) => {
                    let err = opened.expect_err(name).to_string();
                    assert!(err.contains(needle), "{name}: {err}");
                }
                Expect::Read(id, needle) => {
                    let gulp = opened.unwrap();
                    let err = gulp.frames(id, &Selection::All).expect_err(name);
                    let msg = err.to_string();
                    assert!(msg.contains(needle), "{name}: {msg}");
                    assert!(matches!(err.kind(), ErrorKind::Record { .. }), "{name}");
                    // The other chunk is still readable.
                    assert_eq!(
                        gulp.frames("c", &Selection::All).unwrap().len(),
                        1,
                        "{name}"
                    );
                }
            }
        }
    }
}

#[test]
fn duplicate_id_error_names_both_chunks() {
    let dir = tempfile::tempdir().unwrap();
    valid(dir.path());
    GulpDirBuilder::new(dir.path())
        .chunk(12)
        .item("c", Value::Null, [vec![1u8; 4]])
        .write();
    let err = GulpDirectory::open(dir.path()).unwrap_err();
    let ErrorKind::DuplicateId { id, first, second } = err.kind() else {
        panic!("{err}")
    };
    assert_eq!(id, "c");
    assert!(
        first.ends_with("meta_1.gmeta") && second.ends_with("meta_12.gmeta"),
        "{err}"
    );
}

#[test]
fn orphans_and_temp_files_are_warnings() {
    let dir = tempfile::tempdir().unwrap();
    valid(dir.path());
    // Missing meta: what gulpio2 leaves after a crash. The rest stays readable.
    std::fs::write(dir.path().join("data_5.gulp"), [1, 2, 3, 4]).unwrap();
    std::fs::write(dir.path().join("meta_6.gmeta"), "{}").unwrap();
    std::fs::write(dir.path().join(".gulp-tmp.data_9.gulp"), [0]).unwrap();
    let gulp = GulpDirectory::open(dir.path()).unwrap();
    assert_eq!(gulp.ids().collect::<Vec<_>>(), ["a", "b", "c"]);
    let w = gulp.warnings();
    assert_eq!(w.len(), 3, "{w:?}");
    assert!(
        w.iter()
            .any(|w| matches!(w, DirectoryWarning::OrphanData(p) if p.ends_with("data_5.gulp")))
    );
    assert!(
        w.iter()
            .any(|w| matches!(w, DirectoryWarning::OrphanMeta(p) if p.ends_with("meta_6.gmeta")))
    );
    assert!(w.iter().any(|w| matches!(w, DirectoryWarning::TempFile(_))));
    // New chunks never reuse a number that is on disk.
    assert_eq!(gulp.next_chunk_number(), 7);
}

#[test]
fn missing_directory_is_an_error_with_its_path() {
    let err = GulpDirectory::open("/nonexistent/gulp-dir").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("listing /nonexistent/gulp-dir: "),
        "{err}"
    );
}
