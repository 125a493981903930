//! A damaged msgpack meta is always an error that says what is wrong: never a
//! panic, never a silently different meta.

// Test code: a panic is a failure with a message, and sizes are small.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use gulp_format::{ChunkMeta, ErrorKind, MetaFormat, Value, read_meta};
use gulp_test_support::fuzz_checks::format::check_msgpack;
use gulp_test_support::trailer::{seal, unseal};

/// A realistic meta: the format-description snippet plus checksums,
/// metalayers and awkward values.
fn real_file() -> (ChunkMeta, Vec<u8>) {
    let text = std::fs::read("tests/data/format-description-snippet.json").unwrap();
    let mut meta = read_meta(&text).unwrap();
    let ids: Vec<String> = meta.ids().map(str::to_owned).collect();
    for (k, id) in ids.iter().enumerate() {
        let item = meta.get_mut(id).unwrap();
        item.frame_checksums = (0..item.frame_info.len() as u32)
            .map(|i| i.wrapping_mul(0x9e37_79b9) ^ k as u32)
            .collect();
        item.metalayers.insert(
            "shape".into(),
            Value::Array(vec![Value::Int(240), Value::Int(320), Value::Int(3)]),
        );
        item.meta_data.push(
            [
                ("nan", Value::Float(f64::NAN)),
                ("name", Value::from("café 🎬")),
                ("big", Value::from(u64::MAX)),
            ]
            .into_iter()
            .collect(),
        );
    }
    let bytes = MetaFormat::Msgpack.serializer().to_vec(&meta).unwrap();
    (meta, bytes)
}

#[test]
fn every_single_byte_flip_is_detected() {
    let (meta, bytes) = real_file();
    assert_eq!(read_meta(&bytes).unwrap(), meta);
    let mut kinds = std::collections::BTreeMap::new();
    for pos in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut damaged = bytes.clone();
            damaged[pos] ^= mask;
            match read_meta(&damaged) {
                Ok(got) => panic!(
                    "flip {mask:#04x} at byte {pos} went unnoticed (same meta: {})",
                    got == meta
                ),
                Err(err) => {
                    assert!(!err.to_string().is_empty());
                    let kind = format!("{:?}", err.kind())
                        .split([' ', '{', '('])
                        .next()
                        .unwrap()
                        .to_owned();
                    *kinds.entry(kind).or_insert(0) += 1;
                }
            }
        }
    }
    // Flips inside the content are caught by the fingerprint.
    assert!(
        kinds.get("Fingerprint").copied().unwrap_or(0) > bytes.len() * 2,
        "{kinds:?}"
    );
}

/// Behind the fingerprint: every flip, resealed so that the fingerprint
/// holds, is either an error at load or a meta whose every `meta_data` list
/// decodes and writes back consistently (the fuzz checks). A flip that
/// breaks a list is thus caught by `read_meta`, not on first access.
#[test]
fn every_resealed_single_byte_flip_errors_at_load_or_decodes() {
    let (_, bytes) = real_file();
    let content = unseal(&bytes);
    let (mut loaded, mut rejected) = (0, 0);
    for pos in 0..content.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut damaged = content.to_vec();
            damaged[pos] ^= mask;
            let sealed = seal(damaged);
            match read_meta(&sealed) {
                Ok(_) => loaded += 1,
                Err(err) => {
                    assert!(!err.to_string().is_empty());
                    rejected += 1;
                }
            }
            check_msgpack(&sealed);
        }
    }
    assert!(
        loaded > 0 && rejected > 0,
        "{loaded} loaded, {rejected} rejected"
    );
}

#[test]
fn every_truncation_is_an_error() {
    let (_, bytes) = real_file();
    for len in 0..bytes.len() {
        let err = read_meta(&bytes[..len]).expect_err("truncated file accepted");
        let msg = err.to_string();
        assert!(
            len < 11 || msg.contains("truncated") || msg.contains("trailer"),
            "truncation to {len} bytes: {msg}"
        );
    }
    // Bytes appended after the trailer are an error too.
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0, 0, 0, 0]);
    assert!(read_meta(&longer).is_err());
}

/// Rewrites the header byte at `pos` and re-seals the file with a valid
/// fingerprint, to test the checks behind the fingerprint.
fn reseal(bytes: &[u8], pos: usize, value: u8) -> Vec<u8> {
    let mut content = unseal(bytes).to_vec();
    content[pos] = value;
    seal(content)
}

#[test]
fn header_layout_and_version_check() {
    let (_, bytes) = real_file();
    // fixarray(5), fixstr(8) "gulpmeta", version 1, flags 1 (checksums).
    assert_eq!(&bytes[..12], b"\x95\xa8gulpmeta\x01\x01");
    let err = read_meta(&reseal(&bytes, 10, 2)).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::UnsupportedVersion { version: 2, .. }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "unsupported msgpack meta version 2 (this build reads versions 1..=1)"
    );
    let err = read_meta(&reseal(&bytes, 11, 0x03)).unwrap_err();
    assert!(err.to_string().contains("unknown flags"), "{err}");
}

#[test]
fn empty_chunk_meta_is_small_and_valid() {
    let bytes = MetaFormat::Msgpack
        .serializer()
        .to_vec(&ChunkMeta::new())
        .unwrap();
    assert_eq!(read_meta(&bytes).unwrap(), ChunkMeta::new());
    assert!(bytes.len() < 40, "{}", bytes.len());
}

#[test]
fn a_newer_version_with_a_longer_header_says_unsupported_version() {
    // [ "gulpmeta", 2, <a field v1 does not know>, ... ] sealed correctly.
    let content = seal(b"\x96\xa8gulpmeta\x02\x00\x00\x00\x00\xc0".to_vec());
    let err = read_meta(&content).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::UnsupportedVersion { version: 2, .. }),
        "{err}"
    );
}
