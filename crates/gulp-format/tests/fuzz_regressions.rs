//! Replays the saved fuzz inputs in `tests/data/fuzz-regressions/<target>/`
//! through the checks of the fuzz targets in `fuzz/` (docs/fuzzing.md).
//!
//! Each folder holds inputs for one target: crashes the fuzzer found (kept
//! after the fix so the bug stays fixed) and seeds of awkward shape. The
//! checks below are a copy of `fuzz/src/lib.rs`, which this crate cannot
//! depend on: keep the two in step.

// Test code: a panic is a failure with a message.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use gulp_format::{ChunkMeta, ItemMeta, JsonSerializer, MSGPACK_MAGIC, MetaFormat, read_meta};

/// `json_meta`: what parses round-trips through JSON and through msgpack.
fn check_json(data: &[u8]) {
    let json = MetaFormat::Json.serializer();
    let parsed = json.read_meta(data);
    if MetaFormat::detect(data) == Some(MetaFormat::Json) {
        assert_eq!(read_meta(data).ok().as_ref(), parsed.as_ref().ok());
    }
    if let Ok(meta) = parsed {
        let written = json.to_vec(&meta).unwrap();
        let again = json
            .read_meta(&written)
            .unwrap_or_else(|e| panic!("our own JSON does not parse: {e}"));
        assert_eq!(again, meta, "JSON → meta → JSON → meta changed the meta");
        assert_eq!(
            json.to_vec(&again).unwrap(),
            written,
            "writing the re-parsed meta gave other bytes"
        );

        let msgpack = MetaFormat::Msgpack.serializer();
        let packed = msgpack
            .to_vec(&meta)
            .unwrap_or_else(|e| panic!("a JSON meta cannot be written as msgpack: {e}"));
        assert_eq!(MetaFormat::detect(&packed), Some(MetaFormat::Msgpack));
        let unpacked =
            read_meta(&packed).unwrap_or_else(|e| panic!("our own msgpack does not parse: {e}"));
        assert_eq!(unpacked, meta, "JSON → msgpack → meta changed the meta");
    }

    if let Ok(value) = JsonSerializer::parse_value(data) {
        let text = JsonSerializer::value_to_string(&value);
        let again = JsonSerializer::parse_value(text.as_bytes())
            .unwrap_or_else(|e| panic!("our own JSON value does not parse: {e}"));
        assert_eq!(again, value, "value → JSON → value changed the value");
    }
}

/// `msgpack_meta`: what parses round-trips through msgpack (to the same
/// canonical bytes) and keeps its ids, frames and meta_data through JSON.
fn check_msgpack(data: &[u8]) {
    let msgpack = MetaFormat::Msgpack.serializer();
    let parsed = msgpack.read_meta(data);
    if MetaFormat::detect(data) == Some(MetaFormat::Msgpack) {
        assert_eq!(read_meta(data).ok().as_ref(), parsed.as_ref().ok());
    }
    let Ok(meta) = parsed else { return };

    let packed = msgpack
        .to_vec(&meta)
        .unwrap_or_else(|e| panic!("a parsed msgpack meta cannot be written back: {e}"));
    let again = msgpack
        .read_meta(&packed)
        .unwrap_or_else(|e| panic!("our own msgpack does not parse: {e}"));
    assert_eq!(
        again, meta,
        "msgpack → meta → msgpack → meta changed the meta"
    );
    assert_eq!(
        msgpack.to_vec(&again).unwrap(),
        packed,
        "writing the re-parsed meta gave other bytes"
    );
    assert_eq!(read_meta(&packed).ok().as_ref(), Some(&meta));

    let json = MetaFormat::Json.serializer();
    let text = json.to_vec(&meta).unwrap();
    let from_json = json
        .read_meta(&text)
        .unwrap_or_else(|e| panic!("the JSON form of a msgpack meta does not parse: {e}"));
    let without_extras: ChunkMeta = meta
        .iter()
        .map(|(id, item)| {
            let item = ItemMeta {
                frame_info: item.frame_info.clone(),
                meta_data: item.meta_data.clone(),
                ..ItemMeta::default()
            };
            (id.to_owned(), item)
        })
        .collect();
    assert_eq!(
        from_json, without_extras,
        "msgpack → JSON → meta lost content"
    );
}

/// Appends a correct trailer: `92 cf <len u64 BE> ce <crc32 u32 BE>`.
fn seal(mut content: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&content);
    let len = content.len() as u64;
    content.extend_from_slice(&[0x92, 0xcf]);
    content.extend_from_slice(&len.to_be_bytes());
    content.push(0xce);
    content.extend_from_slice(&crc.to_be_bytes());
    content
}

/// `msgpack_meta_sealed`'s input → file: the input is the content (a header
/// is built from its first three bytes when it has none) and gets a trailer.
fn sealed(data: &[u8]) -> Vec<u8> {
    if data.first().is_some_and(|b| b & 0xf0 == 0x90) && data[1..].starts_with(MSGPACK_MAGIC) {
        return seal(data.to_vec());
    }
    let (head, rest) = data.split_at(data.len().min(3));
    let byte = |i: usize| head.get(i).copied().unwrap_or(0);
    let mut content = vec![0x95];
    content.extend_from_slice(MSGPACK_MAGIC);
    content.push(1);
    for n in [byte(0) & 3, byte(1), byte(2)] {
        if n >= 0x80 {
            content.push(0xcc);
        }
        content.push(n);
    }
    content.extend_from_slice(rest);
    seal(content)
}

/// The saved inputs of one target, sorted; fails if the folder is missing or
/// empty, so that a moved folder cannot turn this test into a no-op.
fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fuzz-regressions")
        .join(target);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "{} holds no inputs", dir.display());
    paths
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect()
}

/// Runs `check` on every input of `target`, naming the input that fails.
fn replay(target: &str, check: impl Fn(&[u8]) + std::panic::RefUnwindSafe) {
    let mut failed = Vec::new();
    for (path, bytes) in inputs(target) {
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
        inputs(target).iter().filter(|(_, b)| parse(b)).count()
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
