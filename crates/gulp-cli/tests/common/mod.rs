//! Helpers shared by the integration tests: the binary, the gulpio2
//! fixtures, and small directories written with gulp-test-support's `GulpDirBuilder`.
#![allow(dead_code)] // each test file uses a different subset

use std::path::{Path, PathBuf};

use gulp_format::{ChunkMeta, FrameInfo, Value, read_meta};
use gulp_test_support::gulp_dir::GulpDirBuilder;

/// The `gulp` binary built for these tests.
pub(crate) fn gulp() -> assert_cmd::Command {
    assert_cmd::Command::new(env!("CARGO_BIN_EXE_gulp"))
}

/// `tests/data/fixtures` at the repository root.
pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/fixtures")
}

/// Every fixture directory written by gulpio2 or GulpIO v1.
pub(crate) fn fixture_cases() -> Vec<PathBuf> {
    let mut cases = Vec::new();
    for implementation in ["gulpio2", "gulpio1"] {
        for entry in std::fs::read_dir(fixtures().join(implementation)).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                cases.push(path);
            }
        }
    }
    cases.sort();
    assert!(cases.len() >= 10, "fixtures missing: {cases:?}");
    cases
}

/// A test JPEG from gulp-io's test data (`white-8x8`, `noise-24x16`,
/// `black-gray-8x8`) or its bench data (`photo-176x100`).
pub(crate) fn jpeg(name: &str) -> Vec<u8> {
    let io = Path::new(env!("CARGO_MANIFEST_DIR")).join("../gulp-io");
    let path = if name == "photo-176x100" {
        io.join("benches/data").join(format!("{name}.jpg"))
    } else {
        io.join("tests/data").join(format!("{name}.jpg"))
    };
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Copies a flat directory.
pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// A copy of a fixture in a fresh temporary directory.
pub(crate) fn fixture_copy(case: &Path) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(case.file_name().unwrap());
    copy_dir(case, &dir);
    (tmp, dir)
}

/// A clean directory: chunk 0 (JSON meta) holds "a" (white, noise,
/// black-gray) and "b" (photo, white); chunk 1 (msgpack meta, with
/// checksums) holds "c" (noise, white).
pub(crate) fn clean_dir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    GulpDirBuilder::new(tmp.path())
        .item(
            "a",
            Value::from("label a"),
            [
                jpeg("white-8x8"),
                jpeg("noise-24x16"),
                jpeg("black-gray-8x8"),
            ],
        )
        .item(
            "b",
            Value::from("label b"),
            [jpeg("photo-176x100"), jpeg("white-8x8")],
        )
        .next_chunk()
        .msgpack()
        .item(
            "c",
            Value::from("label c"),
            [jpeg("noise-24x16"), jpeg("white-8x8")],
        )
        .write();
    tmp
}

/// The parsed meta of chunk `n`.
pub(crate) fn meta(dir: &Path, n: u64) -> ChunkMeta {
    read_meta(&std::fs::read(dir.join(format!("meta_{n}.gmeta"))).unwrap()).unwrap()
}

/// Frame `k` of `id` in chunk `n`.
pub(crate) fn frame_info(dir: &Path, n: u64, id: &str, k: usize) -> FrameInfo {
    meta(dir, n).get(id).unwrap().frame_info[k]
}

/// Overwrites bytes of a file at `offset`.
pub(crate) fn patch(path: &Path, offset: u64, bytes: &[u8]) {
    let mut data = std::fs::read(path).unwrap();
    let at = usize::try_from(offset).unwrap();
    data[at..at + bytes.len()].copy_from_slice(bytes);
    std::fs::write(path, data).unwrap();
}

/// stdout of a finished command as text.
pub(crate) fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}
