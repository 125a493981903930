//! Every prefix of a valid meta file, JSON or msgpack, is an error that says
//! the file may be cut short, never a panic and never a different meta; and
//! every prefix of a msgpack file's content, sealed with a correct trailer
//! so that it reaches the section parsers, is an error too.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use gulp_format::{ChunkMeta, ErrorKind, FrameInfo, MetaFormat, Value, read_meta};
use gulp_test_support::trailer::{seal, unseal};

/// Four items of several frames, one appended twice, with awkward values.
fn meta() -> ChunkMeta {
    let mut meta = ChunkMeta::new();
    let mut loc = 0;
    for (k, id) in ["clip-1", "7", "ünï", "clip-1", "last"].iter().enumerate() {
        let frames: Vec<FrameInfo> = (0..k + 1)
            .map(|i| {
                let fi = FrameInfo::for_jpeg(loc, 600 + (k * 7 + i) as u64);
                loc += fi.length;
                fi
            })
            .collect();
        let value: Value = [
            ("label", Value::from(format!("class {k}"))),
            ("score", Value::Float(if k == 1 { f64::NAN } else { 0.25 })),
            (
                "nested",
                Value::Array(vec![Value::Int(-3), Value::Null, Value::from(u64::MAX)]),
            ),
        ]
        .into_iter()
        .collect();
        let item = meta.append(id, value, frames);
        item.frame_checksums = (0..item.frame_info.len() as u32).collect();
    }
    meta
}

fn check_prefixes(format: MetaFormat) {
    let mut meta = meta();
    if format == MetaFormat::Json {
        // JSON has no checksums.
        let ids: Vec<String> = meta.ids().map(str::to_owned).collect();
        for id in ids {
            meta.get_mut(&id).unwrap().frame_checksums.clear();
        }
    }
    let bytes = format.serializer().to_vec(&meta).unwrap();
    assert_eq!(read_meta(&bytes).unwrap(), meta);
    for len in 0..bytes.len() {
        let err = read_meta(&bytes[..len])
            .expect_err(&format!("{format} prefix of {len} bytes accepted"));
        let msg = err.to_string();
        let says_cut = matches!(err.kind(), ErrorKind::Empty)
            || msg.contains("truncated")
            || msg.contains("file ends inside the header magic");
        // JSON reads like Python's json: a cut number such as `0.` is the
        // number `0` followed by an unexpected `.`, an error that points
        // just before the end without knowing the file was cut.
        let near_end = format == MetaFormat::Json
            && err.offset().is_some_and(|offset| offset + 8 >= len as u64);
        assert!(
            says_cut || near_end,
            "{format} prefix of {len} bytes: {msg}"
        );
        if let Some(offset) = err.offset() {
            assert!(offset <= len as u64, "{format} prefix of {len}: {msg}");
        }
    }
}

#[test]
fn every_prefix_of_a_json_meta_is_an_error_saying_truncated() {
    check_prefixes(MetaFormat::Json);
}

#[test]
fn every_prefix_of_a_msgpack_meta_is_an_error_saying_truncated() {
    check_prefixes(MetaFormat::Msgpack);
}

#[test]
fn every_sealed_prefix_of_msgpack_content_is_an_error() {
    let bytes = MetaFormat::Msgpack.serializer().to_vec(&meta()).unwrap();
    let content = unseal(&bytes);
    for len in 0..content.len() {
        let file = seal(content[..len].to_vec());
        let err = read_meta(&file).expect_err(&format!("content prefix of {len} bytes accepted"));
        // Past the header, the error is the sections' own, not the trailer's.
        if len > 20 {
            assert!(
                !matches!(err.kind(), ErrorKind::Fingerprint { .. }),
                "content prefix of {len}: {err}"
            );
        }
    }
    assert!(read_meta(&seal(content.to_vec())).is_ok());
}
