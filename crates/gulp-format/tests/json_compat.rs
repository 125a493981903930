//! The JSON meta reads what GulpIO/gulpio2 wrote and writes the same bytes.

// Test code: a panic is a failure with a message, and sizes are small.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use gulp_format::{ErrorKind, FrameInfo, MetaFormat, Value, read_meta};

fn json() -> &'static dyn gulp_format::Serializer {
    MetaFormat::Json.serializer()
}

#[test]
fn format_description_snippet_parses_with_exact_frame_info() {
    let text = std::fs::read("tests/data/format-description-snippet.json").unwrap();
    let meta = read_meta(&text).unwrap();
    assert_eq!(
        meta.ids().collect::<Vec<_>>(),
        ["702766", "803959", "803957"]
    );
    let first = meta.get("702766").unwrap();
    assert_eq!(first.frame_info.len(), 25);
    assert_eq!(
        first.frame_info[0],
        FrameInfo {
            loc: 0,
            pad: 3,
            length: 7260
        }
    );
    assert_eq!(
        first.frame_info[1],
        FrameInfo {
            loc: 7260,
            pad: 3,
            length: 7252
        }
    );
    assert_eq!(
        first.frame_info[2],
        FrameInfo {
            loc: 14512,
            pad: 2,
            length: 7256
        }
    );
    assert_eq!(
        first.frame_info[24],
        FrameInfo {
            loc: 176864,
            pad: 2,
            length: 7436
        }
    );
    assert_eq!(
        meta.get("803959").unwrap().frame_info[0],
        FrameInfo {
            loc: 184300,
            pad: 1,
            length: 9256
        }
    );
    assert_eq!(
        meta.get("803957").unwrap().frame_info[25],
        FrameInfo {
            loc: 644092,
            pad: 2,
            length: 9100
        }
    );
    let md = &first.meta_data[0];
    assert_eq!(md.get("label"), Some(&Value::from("something something")));
    assert_eq!(md.get("id"), Some(&Value::Int(702766)));
    // The records of one write are back to back.
    let all: Vec<FrameInfo> = meta
        .iter()
        .flat_map(|(_, item)| item.frame_info.clone())
        .collect();
    for pair in all.windows(2) {
        assert_eq!(pair[0].loc + pair[0].length, pair[1].loc);
    }
    assert!(all.iter().all(|fi| fi.problem().is_none()));
    assert_eq!(meta.last_record_end(), Some(644092 + 9100));
}

/// Files gulpio2 0.0.4 wrote (gulpio-reference.md §1.4 and §6.1).
const GULPIO2_FILES: &[&str] = &[
    r#"{"7": {"frame_info": [[0, 0, 736], [736, 3, 744], [1480, 1, 744], [2224, 3, 336]], "meta_data": [{"label": "x", "id": 7, "nested": {"a": [1, 2]}}, {"second": true}]}, "abc": {"frame_info": [[2560, 3, 632]], "meta_data": [{"k": 1.5}]}}"#,
    r#"{"\u00e9": {"frame_info": [[0, 3, 632]], "meta_data": [{"x": NaN, "y": Infinity, "name": "caf\u00e9", "t": [1, 2], "5": "intkey"}]}}"#,
    r#"{"1": {"frame_info": [[0, 3, 632], [632, 3, 632], [1264, 3, 632], [1896, 3, 632]], "meta_data": [{"name": "bunch of numpy arrays"}]}}"#,
    r#"{"A": {"frame_info": [[0, 3, 632], [1264, 3, 632]], "meta_data": [{"a": 1}, {"a": 2}]}, "B": {"frame_info": [[632, 3, 632]], "meta_data": [{"b": -Infinity}]}}"#,
    r#"{"big": {"frame_info": [[5000000000, 0, 4294967300]], "meta_data": [{"n": 9007199254740993, "u": 18446744073709551621, "neg": -1180591620717411303424, "f": 1e-05, "g": 1e+16, "h": 1.0, "s": "\ud83c\udfac \"q\" \\ \n\t\u0001\u007f/", "z": null, "b": false, "e": [], "o": {}}]}}"#,
    "{}",
];

#[test]
fn gulpio2_meta_files_round_trip_byte_identically() {
    for &text in GULPIO2_FILES {
        let meta = read_meta(text.as_bytes()).unwrap_or_else(|e| panic!("{text}: {e}"));
        let written = json().to_vec(&meta).unwrap();
        assert_eq!(String::from_utf8(written).unwrap(), text);
        // And the same content survives msgpack.
        let packed = MetaFormat::Msgpack.serializer().to_vec(&meta).unwrap();
        let back = read_meta(&packed).unwrap();
        assert_eq!(back, meta);
        assert_eq!(
            String::from_utf8(json().to_vec(&back).unwrap()).unwrap(),
            text
        );
    }
}

#[test]
fn values_keep_python_types() {
    let meta = read_meta(GULPIO2_FILES[1].as_bytes()).unwrap();
    let (id, item) = meta.iter().next().unwrap();
    assert_eq!(id, "é");
    let md = item.first_meta_data().unwrap();
    assert!(md.get("x").unwrap().as_f64().unwrap().is_nan());
    assert_eq!(md.get("y"), Some(&Value::Float(f64::INFINITY)));
    assert_eq!(md.get("name"), Some(&Value::from("café")));
    let keys: Vec<&str> = md.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["x", "y", "name", "t", "5"], "key order is kept");

    let meta = read_meta(GULPIO2_FILES[4].as_bytes()).unwrap();
    let md = meta.get("big").unwrap().first_meta_data().unwrap();
    assert_eq!(md.get("n"), Some(&Value::Int(9007199254740993)));
    assert!(matches!(md.get("u"), Some(Value::BigInt(b)) if b.as_str() == "18446744073709551621"));
    assert!(
        matches!(md.get("neg"), Some(Value::BigInt(b)) if b.as_str() == "-1180591620717411303424")
    );
    assert_eq!(
        md.get("s"),
        Some(&Value::from("🎬 \"q\" \\ \n\t\u{1}\u{7f}/"))
    );
    assert_eq!(meta.get("big").unwrap().frame_info[0].loc, 5_000_000_000);
}

#[test]
fn python_reader_quirks() {
    // Whitespace anywhere, a repeated id keeps its first position and last value
    // (OrderedDict), and the escaped form of a character equals the plain one.
    let text = br#" { "b" : {"frame_info":[],"meta_data":[1]} ,
        "a": {"meta_data": [], "frame_info": [[0,0,4]]},
        "\u0062": {"frame_info": [[4, 1, 4]], "meta_data": [2]} } "#;
    let meta = read_meta(text).unwrap();
    assert_eq!(meta.ids().collect::<Vec<_>>(), ["b", "a"]);
    assert_eq!(meta.get("b").unwrap().meta_data, [Value::Int(2)]);
    assert_eq!(
        String::from_utf8(json().to_vec(&meta).unwrap()).unwrap(),
        r#"{"b": {"frame_info": [[4, 1, 4]], "meta_data": [2]}, "a": {"frame_info": [[0, 0, 4]], "meta_data": []}}"#
    );
}

#[test]
fn malformed_json_is_reported_with_offset_and_id() {
    let cases: &[(&str, Option<&str>, u64, &str)] = &[
        ("", None, 0, "empty"),
        ("[]", None, 0, "unrecognised"),
        (
            "{\"a\": {\"frame_info\": [[0, 3, 632]], \"meta_data\": [{\"bad\": ",
            None,
            58,
            "end of file",
        ),
        (
            r#"{"a": {"frame_info": [[0, 3]], "meta_data": []}}"#,
            Some("a"),
            27,
            "exactly 3",
        ),
        (
            r#"{"a": {"frame_info": [[0, -3, 4]], "meta_data": []}}"#,
            Some("a"),
            26,
            "pad is not a non-negative",
        ),
        (
            r#"{"a": {"frame_info": [[1.5, 0, 4]], "meta_data": []}}"#,
            Some("a"),
            23,
            "loc is not",
        ),
        (
            r#"{"a": {"frame_info": [[0, 0, 18446744073709551616]], "meta_data": []}}"#,
            Some("a"),
            29,
            "64 bits",
        ),
        (r#"{"a": {"frame_info": []}}"#, Some("a"), 6, "no meta_data"),
        (r#"{"a": {"meta_data": []}}"#, Some("a"), 6, "no frame_info"),
        (
            r#"{"a": {"frame_info": [], "meta_data": {}}}"#,
            Some("a"),
            38,
            "not a list",
        ),
        (
            r#"{"a": {"frame_info": [], "meta_data": [], "x": 1}}"#,
            Some("a"),
            42,
            "unexpected key",
        ),
        (r#"{"a": [1]}"#, Some("a"), 6, "not an object"),
        (
            r#"{"a": {"frame_info": [], "meta_data": [nan]}}"#,
            None,
            39,
            "expected a value",
        ),
        (
            r#"{"a": {"frame_info": [], "meta_data": ["\ud800"]}}"#,
            None,
            40,
            "lone surrogate",
        ),
        ("{\"a\u{1}\": 1}", None, 3, "control character"),
        (
            r#"{"a": {"frame_info": [], "meta_data": []}} x"#,
            None,
            43,
            "extra data",
        ),
        (
            r#"{"a": {"frame_info": [], "meta_data": [01]}}"#,
            None,
            40,
            "expected ',' or ']'",
        ),
    ];
    for &(text, id, offset, needle) in cases {
        let err = read_meta(text.as_bytes()).expect_err(text);
        let msg = err.to_string();
        assert!(msg.contains(needle), "{text}: {msg}");
        assert_eq!(err.id(), id, "{text}: {msg}");
        if !matches!(
            err.kind(),
            ErrorKind::Empty | ErrorKind::UnknownFormat { .. }
        ) {
            assert_eq!(err.offset(), Some(offset), "{text}: {msg}");
        }
    }
    let invalid_utf8 = b"{\"a\xff\": 1}";
    let err = read_meta(invalid_utf8).unwrap_err();
    assert_eq!(err.offset(), Some(3), "{err}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let depth = 100_000;
    let text = format!(
        r#"{{"a": {{"frame_info": [], "meta_data": [{}{}]}}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let err = read_meta(text.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("nested deeper"), "{err}");
}

#[test]
fn every_prefix_of_a_json_meta_is_an_error_or_valid() {
    for &text in GULPIO2_FILES {
        for len in 0..text.len() {
            // Prefixes are never complete documents here; none may panic.
            assert!(
                read_meta(&text.as_bytes()[..len]).is_err(),
                "{len} of {text}"
            );
        }
    }
}

/// Every meta file of the fixtures that the real gulpio2 (and GulpIO v1)
/// wrote parses, and writing it back gives the same bytes.
#[test]
fn meta_files_written_by_gulpio2_round_trip_byte_identically() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/fixtures");
    let mut seen = 0;
    for implementation in ["gulpio2", "gulpio1"] {
        for case in std::fs::read_dir(root.join(implementation)).unwrap() {
            let case = case.unwrap().path();
            if !case.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&case).unwrap() {
                let path = file.unwrap().path();
                if path.extension().is_some_and(|e| e == "gmeta") {
                    let bytes = std::fs::read(&path).unwrap();
                    let meta =
                        read_meta(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    assert_eq!(json().to_vec(&meta).unwrap(), bytes, "{}", path.display());
                    seen += 1;
                }
            }
        }
    }
    assert!(seen >= 20, "only {seen} fixture meta files found");
}
