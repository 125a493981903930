//! Replays the saved fuzz inputs in `tests/data/fuzz-regressions/<target>/`
//! through the checks of the fuzz targets in `fuzz/` (docs/fuzzing.md).
//!
//! Each folder holds inputs for one target: crashes the fuzzer found (kept
//! after the fix so the bug stays fixed) and seeds of awkward shape. The
//! checks are the fuzz targets' own, from
//! `gulp_test_support::fuzz_checks::format`.

// Test code: a panic is a failure with a message.
#![allow(clippy::unwrap_used)]

use gulp_format::MetaFormat;
use gulp_test_support::fuzz_checks::format::{check_json, check_msgpack, sealed};
use gulp_test_support::saved_inputs::inputs;

/// Runs `check` on every input of `target`, naming the input that fails.
fn replay(target: &str, check: impl Fn(&[u8]) + std::panic::RefUnwindSafe) {
    let mut failed = Vec::new();
    for (path, bytes) in inputs(env!("CARGO_MANIFEST_DIR"), target) {
        if std::panic::catch_unwind(|| check(&bytes)).is_err() {
            failed.push(path.display().to_string());
        }
    }
    assert!(failed.is_empty(), "{target}: failing inputs {failed:#?}");
}

#[test]
fn json_meta_regressions() {
    replay("json_meta", check_json);
}

#[test]
fn msgpack_meta_regressions() {
    replay("msgpack_meta", check_msgpack);
}

#[test]
fn msgpack_meta_sealed_regressions() {
    replay("msgpack_meta_sealed", |data| check_msgpack(&sealed(data)));
}

/// The replay is not vacuous: some saved inputs of each target parse, so the
/// round-trip checks run, and the sealed ones reach past the fingerprint.
#[test]
fn regressions_exercise_the_parsers() {
    let json = MetaFormat::Json.serializer();
    let msgpack = MetaFormat::Msgpack.serializer();
    let parsing = |target: &str, parse: &dyn Fn(&[u8]) -> bool| {
        inputs(env!("CARGO_MANIFEST_DIR"), target)
            .iter()
            .filter(|(_, b)| parse(b))
            .count()
    };
    assert!(parsing("json_meta", &|b| json.read_meta(b).is_ok()) > 0);
    assert!(parsing("msgpack_meta", &|b| msgpack.read_meta(b).is_ok()) > 0);
    assert!(
        parsing("msgpack_meta_sealed", &|b| msgpack
            .read_meta(&sealed(b))
            .is_ok())
            > 0
    );
}
