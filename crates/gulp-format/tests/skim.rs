//! `read_index` (what opening a directory reads) against `read_meta` (the
//! full parse): the same ids, order and frame counts, and for JSON the same
//! verdict on malformed input.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

mod common;

use std::path::{Path, PathBuf};

use gulp_format::{ErrorKind, MetaFormat, read_index, read_meta};
use gulp_test_support::fuzz_checks::format::check_index;
use gulp_test_support::trailer::seal;
use proptest::prelude::*;
use proptest::test_runner::Config;

fn check(bytes: &[u8]) {
    check_index(bytes, read_meta(bytes).ok().as_ref());
}

/// Pieces that make or break JSON, spliced into valid metas.
fn token() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::sample::select(vec![
            "\"",
            "\\",
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            " ",
            "\n",
            "-",
            "0",
            "01",
            "1.",
            "1e",
            "1e400",
            "-0",
            "NaN",
            "Infinity",
            "-Infinity",
            "nul",
            "true",
            "\\u",
            "\\ud83c",
            "\\udf89",
            "\\ud83c\\udf89",
            "\\u00e9",
            "\\x",
            "\"frame_info\": [[0, 0, 4]]",
            "\"meta_data\": []",
            "\"meta_data\": {}",
            "\"a\": {\"frame_info\": [], \"meta_data\": []}",
            "[[1, 2, 3]]",
            "18446744073709551616",
            "\u{e9}",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 1..3),
    ]
}

#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Replace(usize, u8),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), token()).prop_map(|(at, t)| Edit::Insert(at, t)),
        (any::<usize>(), 1usize..4).prop_map(|(at, n)| Edit::Delete(at, n)),
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Edit::Replace(at, b)),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn apply(bytes: &mut Vec<u8>, edit: &Edit) {
    let len = bytes.len();
    match edit {
        Edit::Insert(at, t) => {
            let at = at % (len + 1);
            bytes.splice(at..at, t.iter().copied());
        }
        Edit::Delete(at, n) if len > 0 => {
            let at = at % len;
            bytes.drain(at..(at + n).min(len));
        }
        Edit::Replace(at, b) if len > 0 => bytes[at % len] = *b,
        Edit::Truncate(at) => bytes.truncate(at % (len + 1)),
        _ => {}
    }
}

/// A JSON meta written by hand from `(id, frame count)` pairs, so that ids
/// may repeat, with `meta_data` values from `values`.
fn hand_written(items: &[(String, usize)], values: &[String]) -> Vec<u8> {
    let mut out = String::from("{");
    for (i, (id, n)) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let frames: Vec<String> = (0..*n).map(|f| format!("[{}, 0, 4]", f * 4)).collect();
        let value = &values[i % values.len()];
        out.push_str(&format!(
            "{id}: {{\"frame_info\": [{}], \"meta_data\": [{value}]}}",
            frames.join(", ")
        ));
    }
    out.push('}');
    out.into_bytes()
}

proptest! {
    #![proptest_config(Config::with_cases(512))]

    #[test]
    fn json_index_matches_full_parse(meta in common::json_meta()) {
        let bytes = MetaFormat::Json.serializer().to_vec(&meta).unwrap();
        check(&bytes);
        prop_assert!(read_index(&bytes).is_ok());
    }

    #[test]
    fn msgpack_index_matches_full_parse(meta in common::msgpack_meta()) {
        let bytes = MetaFormat::Msgpack.serializer().to_vec(&meta).unwrap();
        check(&bytes);
        prop_assert!(read_index(&bytes).is_ok());
    }

    /// Repeated ids, ids spelled with escapes (the same id written two ways
    /// is one id), and every kind of value in meta_data.
    #[test]
    fn repeated_and_escaped_ids(
        items in prop::collection::vec(
            (prop::sample::select(vec![
                "\"a\"", "\"b\"", "\"\\u0061\"", "\"\\u00e9\"", "\"\u{e9}\"",
                "\"\\ud83c\\udf89\"", "\"\u{1f389}\"", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\"",
            ]), 0usize..4),
            0..8,
        ),
        values in prop::collection::vec(common::value(), 1..4),
    ) {
        let items: Vec<(String, usize)> =
            items.into_iter().map(|(id, n)| (id.to_owned(), n)).collect();
        let values: Vec<String> = values
            .iter()
            .map(gulp_format::JsonSerializer::value_to_string)
            .collect();
        let bytes = hand_written(&items, &values);
        check(&bytes);
        prop_assert!(read_meta(&bytes).is_ok());
    }

    /// Damaged JSON: both reject it or both accept it with the same ids.
    #[test]
    fn damaged_json_gets_the_same_verdict(
        meta in common::json_meta(),
        edits in prop::collection::vec(edit(), 1..4),
    ) {
        let mut bytes = MetaFormat::Json.serializer().to_vec(&meta).unwrap();
        for e in &edits {
            apply(&mut bytes, e);
        }
        check(&bytes);
    }

    /// Damaged msgpack: whatever the full parse accepts, the index reads the
    /// same; damage anywhere is caught at the latest by the fingerprint.
    #[test]
    fn damaged_msgpack_is_rejected_by_the_index(
        meta in common::msgpack_meta(),
        edits in prop::collection::vec(edit(), 1..3),
    ) {
        let good = MetaFormat::Msgpack.serializer().to_vec(&meta).unwrap();
        let mut bytes = good.clone();
        for e in &edits {
            apply(&mut bytes, e);
        }
        check(&bytes);
        if bytes != good && MetaFormat::detect(&bytes) == Some(MetaFormat::Msgpack) {
            prop_assert!(read_index(&bytes).is_err());
        }
    }
}

#[test]
fn escaped_item_keys_and_ids() {
    let cases: &[(&str, bool)] = &[
        (r#"{"frame\u005finfo": 1}"#, false),
        (
            r#"{"x": {"frame\u005finfo": [[0, 0, 4]], "meta\u005fdata": [1]}}"#,
            true,
        ),
        (
            r#"{"\ud83c\udf89\u00e9\"": {"frame_info": [], "meta_data": []}}"#,
            true,
        ),
        (r#"{"\ud83c": {"frame_info": [], "meta_data": []}}"#, false),
        (r#"{"\udf89": {"frame_info": [], "meta_data": []}}"#, false),
        (
            r#"{"a": {"frame_info": [], "meta_data": ["\ud800x"]}}"#,
            false,
        ),
        (
            r#"{"a": {"frame_info": [], "meta_data": [{"\u00zz": 1}]}}"#,
            false,
        ),
        (
            r#"{"a": {"frame_info": [[0, 0, 4]], "frame_info": [], "meta_data": []}}"#,
            true,
        ),
        (r#"{"a": {"frame_info": [[0, 0, 4]]}}"#, false),
        (r#"{"a": {"meta_data": []}}"#, false),
        (r#"{"a": {"frame_info": [], "meta_data": {}}}"#, false),
        (
            r#"{"a": {"frame_info": [], "meta_data": [], "x": 1}}"#,
            false,
        ),
        (
            r#"{"a": {"frame_info": [[0, 0, 4.0]], "meta_data": []}}"#,
            false,
        ),
        (
            r#"{"a": {"frame_info": [[01, 0, 4]], "meta_data": []}}"#,
            false,
        ),
        (r#"{"a": {"frame_info": [], "meta_data": [01]}}"#, false),
        (r#"{"a": {"frame_info": [], "meta_data": [1.]}}"#, false),
        (r#"{"a": {"frame_info": [], "meta_data": [-]}}"#, false),
        (r#"{"a": {"frame_info": [], "meta_data": [[1, ]]}}"#, false),
        (
            r#"{"a": {"frame_info": [], "meta_data": [{"k": 1,}]}}"#,
            false,
        ),
        (
            r#"{"a": {"frame_info": [], "meta_data": [{"k" 1}]}}"#,
            false,
        ),
        (r#"{"a": {"frame_info": [], "meta_data": [{1: 1}]}}"#, false),
        (
            r#"{"a": {"frame_info": [], "meta_data": [NaN, -Infinity, 1e400, -0]}} "#,
            true,
        ),
        (r#"{"a": {"frame_info": [], "meta_data": []}} x"#, false),
        (
            "{\"a\": {\"frame_info\": [], \"meta_data\": [\"\x01\"]}}",
            false,
        ),
        (
            "{\"a\": {\"frame_info\": [], \"meta_data\": [\"\u{e9}\"]}}",
            true,
        ),
        (
            r#"{"a": {"frame_info": [], "meta_data": []}, "a": {"frame_info": [[0, 0, 4]], "meta_data": []}}"#,
            true,
        ),
    ];
    for (text, ok) in cases {
        assert_eq!(read_meta(text.as_bytes()).is_ok(), *ok, "{text}");
        check(text.as_bytes());
    }
    // Invalid UTF-8 inside strings, in an id and in a value.
    for bad in [
        b"{\"\xff\": {\"frame_info\": [], \"meta_data\": []}}".as_slice(),
        b"{\"a\": {\"frame_info\": [], \"meta_data\": [\"\xc3\"]}}",
        b"{\"a\": {\"frame_info\": [], \"meta_data\": [{\"\xe6\x97\": 1}]}}",
    ] {
        assert!(read_meta(bad).is_err());
        check(bad);
    }
}

#[test]
fn nesting_limit_is_the_same() {
    for depth in [1023usize, 1024, 1025, 3000] {
        for (open, close) in [("[", "]"), ("{\"k\": ", "}")] {
            // meta_data is level 1.
            let inner = depth - 1;
            let text = format!(
                "{{\"a\": {{\"frame_info\": [], \"meta_data\": [{}0{}]}}}}",
                open.repeat(inner),
                close.repeat(inner)
            );
            assert_eq!(read_meta(text.as_bytes()).is_ok(), depth <= 1024, "{depth}");
            check(text.as_bytes());
        }
    }
}

#[test]
fn repeated_id_keeps_first_position_and_last_frames() {
    let text = br#"{"a": {"frame_info": [[0, 0, 4]], "meta_data": [1]}, "b": {"frame_info": [], "meta_data": [2]}, "a": {"frame_info": [[4, 0, 4], [8, 0, 4]], "meta_data": [3]}}"#;
    let index = read_index(text).unwrap();
    assert_eq!(index.iter().collect::<Vec<_>>(), [("a", 2), ("b", 0)]);
    assert_eq!(index.n_frames(), 2);
    check(text);
}

#[test]
fn msgpack_fingerprint_is_checked() {
    let meta =
        read_meta(br#"{"a": {"frame_info": [[0, 0, 4]], "meta_data": [{"k": "v"}]}}"#).unwrap();
    let mut bytes = MetaFormat::Msgpack.serializer().to_vec(&meta).unwrap();
    // A byte of the meta section, which the index does not decode.
    let at = bytes.len() - 20;
    bytes[at] ^= 0x01;
    let err = read_index(&bytes).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Fingerprint { .. }), "{err}");
}

#[test]
fn msgpack_repeated_id_is_rejected() {
    // Index of two entries with the same id, sealed with a right fingerprint.
    let mut content = b"\x95\xa8gulpmeta\x01\x00\x02\x00".to_vec();
    content.extend_from_slice(b"\x92\x93\xa1a\x00\x03\x93\xa1a\x00\x03");
    content.extend_from_slice(b"\xc4\x00\xc0\xc4\x06\x92\x90\x80\x92\x90\x80");
    let bytes = seal(content);
    let err = read_index(&bytes).unwrap_err();
    assert!(err.to_string().contains("id appears twice"), "{err}");
    assert!(read_meta(&bytes).is_err());
}

fn meta_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            meta_files(&path, out);
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("gmeta" | "json" | "msgpack" | "content")
        ) {
            out.push(path);
        }
    }
}

/// Every meta file in the repository: gulpio2 and GulpIO fixtures, fuzz
/// regressions and seeds.
#[test]
fn fixtures_and_seeds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in [
        "tests/data/fixtures",
        "crates/gulp-format/tests/data",
        "fuzz/seeds",
    ] {
        meta_files(&root.join(dir), &mut files);
    }
    let mut parsed = 0;
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let full = read_meta(&bytes);
        if path.extension().is_some_and(|e| e == "content") {
            let sealed = seal(bytes.clone());
            check(&sealed);
        }
        check(&bytes);
        parsed += usize::from(full.is_ok());
    }
    assert!(parsed >= 28, "only {parsed} of {} files parse", files.len());
}
