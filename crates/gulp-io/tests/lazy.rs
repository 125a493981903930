//! Opening reads ids only; a chunk's full meta is parsed on first use.
//! What the open must still catch, and what first use reports.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::path::Path;

use gulp_format::{ErrorKind as FormatErrorKind, MetaFormat, Value};
use gulp_io::{ChunkWriter, ErrorKind, GulpDirectory, Selection};
use gulp_test_support::trailer::{seal, unseal};

/// Chunk 0 (JSON): a, b. Chunk 1 (msgpack): c, d. Chunk 2 (JSON): e.
fn make(dir: &Path) {
    let chunks: [(u64, MetaFormat, &[&str]); 3] = [
        (0, MetaFormat::Json, &["a", "b"]),
        (1, MetaFormat::Msgpack, &["c", "d"]),
        (2, MetaFormat::Json, &["e"]),
    ];
    for (n, format, ids) in chunks {
        let mut w = ChunkWriter::builder()
            .meta_format(format)
            .fsync(false)
            .create(dir, n)
            .unwrap();
        for id in ids {
            w.append(
                id,
                Value::from(id.to_uppercase()),
                [vec![0xffu8, 0xd8, 0xff, 0xd9]],
            )
            .unwrap();
        }
        w.finish().unwrap();
    }
}

/// Rewrites a msgpack meta's trailer for its (changed) content.
fn reseal(bytes: &mut Vec<u8>) {
    *bytes = seal(unseal(bytes).to_vec());
}

#[test]
fn open_parses_no_meta_until_needed() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path());
    let gulp = GulpDirectory::open(dir.path()).unwrap();
    assert_eq!(gulp.len(), 5);
    assert_eq!(gulp.n_frames(), 5);
    assert_eq!(gulp.ids().collect::<Vec<_>>(), ["a", "b", "c", "d", "e"]);
    assert!(gulp.contains("d") && !gulp.contains("f"));
    assert_eq!(gulp.chunk_of("d").unwrap().chunk, 1);
    assert!(gulp.chunks().iter().all(|c| !c.is_loaded()));

    assert_eq!(gulp.meta_data("d").unwrap(), &Value::from("D"));
    let loaded: Vec<bool> = gulp.chunks().iter().map(|c| c.is_loaded()).collect();
    assert_eq!(loaded, [false, true, false]);

    assert_eq!(gulp.frames("a", &Selection::All).unwrap().len(), 1);
    let ids: Vec<&str> = gulp.items().unwrap().map(|(id, _)| id).collect();
    assert_eq!(ids, ["a", "b", "c", "d", "e"]);
    assert!(gulp.chunks().iter().all(|c| c.is_loaded()));
}

#[test]
fn bad_msgpack_item_is_reported_on_first_access_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path());
    // Item "d"'s meta is [["D"], {}]: make its value the never-used marker
    // c1 and give the file a right fingerprint, so that only decoding the
    // item finds the damage.
    let path = dir.path().join("meta_1.gmeta");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(5)
        .position(|w| w == b"\x92\x91\xa1D\x80")
        .unwrap();
    bytes[at + 2] = 0xc1;
    reseal(&mut bytes);
    std::fs::write(&path, &bytes).unwrap();

    let gulp = GulpDirectory::open(dir.path()).unwrap();
    assert_eq!(gulp.len(), 5);
    // The other chunks read.
    assert_eq!(gulp.meta_data("a").unwrap(), &Value::from("A"));
    assert_eq!(gulp.frames("e", &Selection::All).unwrap().len(), 1);
    for err in [
        gulp.item("c").unwrap_err(),
        gulp.frames("d", &Selection::All).unwrap_err(),
        gulp.chunks()[1].meta().unwrap_err(),
        gulp.load_metas().unwrap_err(),
        gulp.items().err().unwrap(),
    ] {
        let msg = err.to_string();
        assert!(msg.contains("meta_1.gmeta"), "{msg}");
        let ErrorKind::Meta { path: p, source } = err.kind() else {
            panic!("{msg}")
        };
        assert_eq!(p, &path);
        assert_eq!(source.id(), Some("d"), "{msg}");
        assert!(msg.contains("not part of the meta model"), "{msg}");
    }
    assert!(!gulp.chunks()[1].is_loaded());
}

#[test]
fn msgpack_fingerprint_damage_is_caught_at_open() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path());
    let path = dir.path().join("meta_1.gmeta");
    let mut bytes = std::fs::read(&path).unwrap();
    // A byte of item "d"'s meta_data, which open does not decode.
    let at = bytes
        .windows(5)
        .position(|w| w == b"\x92\x91\xa1D\x80")
        .unwrap();
    bytes[at + 3] = b'X';
    std::fs::write(&path, &bytes).unwrap();
    let err = GulpDirectory::open(dir.path()).unwrap_err();
    let ErrorKind::Meta { path: p, source } = err.kind() else {
        panic!("{err}")
    };
    assert_eq!(p, &path);
    assert!(
        matches!(source.kind(), FormatErrorKind::Fingerprint { .. }),
        "{err}"
    );
}

#[test]
fn duplicate_id_across_formats_is_caught_at_open() {
    for format in [MetaFormat::Json, MetaFormat::Msgpack] {
        let dir = tempfile::tempdir().unwrap();
        make(dir.path());
        let mut w = ChunkWriter::builder()
            .meta_format(format)
            .fsync(false)
            .create(dir.path(), 5)
            .unwrap();
        w.append("x", Value::Null, [[1u8; 4]]).unwrap();
        w.append("c", Value::Null, [[1u8; 4]]).unwrap();
        w.finish().unwrap();
        let err = GulpDirectory::open(dir.path()).unwrap_err();
        let ErrorKind::DuplicateId { id, first, second } = err.kind() else {
            panic!("{err}")
        };
        assert_eq!(id, "c");
        assert!(first.ends_with("meta_1.gmeta"), "{err}");
        assert!(second.ends_with("meta_5.gmeta"), "{err}");
    }
}

#[test]
fn repeated_id_within_a_json_chunk_is_one_item() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path());
    // As json.load reads it: first position, last value.
    std::fs::write(
        dir.path().join("meta_0.gmeta"),
        r#"{"a": {"frame_info": [], "meta_data": ["old"]}, "b": {"frame_info": [[0, 0, 4]], "meta_data": ["B"]}, "a": {"frame_info": [[4, 0, 4]], "meta_data": ["A"]}}"#,
    )
    .unwrap();
    let gulp = GulpDirectory::open(dir.path()).unwrap();
    assert_eq!(gulp.len(), 5);
    assert_eq!(gulp.n_frames(), 5);
    assert_eq!(gulp.ids().take(2).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(gulp.meta_data("a").unwrap(), &Value::from("A"));
    assert_eq!(gulp.item("a").unwrap().frame_info[0].loc, 4);
}

#[test]
fn meta_replaced_after_open_is_an_error_on_first_access() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path());
    let gulp = GulpDirectory::open(dir.path()).unwrap();
    std::fs::write(
        dir.path().join("meta_2.gmeta"),
        r#"{"z": {"frame_info": [[0, 0, 4]], "meta_data": ["Z"]}}"#,
    )
    .unwrap();
    let err = gulp.item("e").unwrap_err();
    assert!(err.to_string().contains("meta_2.gmeta"), "{err}");
    assert!(err.to_string().contains("changed"), "{err}");
    // Chunks untouched still read.
    assert_eq!(gulp.meta_data("b").unwrap(), &Value::from("B"));
}

/// Enough ids for the id index to be built in shards on several threads:
/// the repeated id reported is still the first in directory order.
#[test]
fn first_repeated_id_in_directory_order_with_many_ids() {
    let dir = tempfile::tempdir().unwrap();
    let write = |n: u64, ids: &[String]| {
        let items: Vec<String> = ids
            .iter()
            .map(|id| format!("\"{id}\": {{\"frame_info\": [], \"meta_data\": [null]}}"))
            .collect();
        std::fs::write(
            dir.path().join(format!("meta_{n}.gmeta")),
            format!("{{{}}}", items.join(", ")),
        )
        .unwrap();
        std::fs::write(dir.path().join(format!("data_{n}.gulp")), b"").unwrap();
    };
    let chunk0: Vec<String> = (0..15_000).map(|i| format!("i{i}")).collect();
    let mut chunk1: Vec<String> = (0..15_000).map(|i| format!("j{i}")).collect();
    write(0, &chunk0);
    write(1, &chunk1);
    let gulp = GulpDirectory::open(dir.path()).unwrap();
    assert_eq!(gulp.len(), 30_000);
    assert!(chunk0.iter().chain(&chunk1).all(|id| gulp.contains(id)));
    assert_eq!(gulp.chunk_of("j14999").unwrap().chunk, 1);
    assert!(!gulp.contains("k1"));

    chunk1[500] = "i7".into();
    chunk1[9_000] = "i8".into();
    chunk1[12_000] = "i9".into();
    write(1, &chunk1);
    // The shards depend on the hash seed: try a few opens.
    for _ in 0..8 {
        let err = GulpDirectory::open(dir.path()).unwrap_err();
        let ErrorKind::DuplicateId { id, .. } = err.kind() else {
            panic!("{err}")
        };
        assert_eq!(id, "i7");
    }
}

#[test]
fn read_item_parses_one_item_and_equals_the_full_parse() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path());
    let alone = GulpDirectory::open(dir.path()).unwrap();
    let full = GulpDirectory::open(dir.path()).unwrap();
    for id in ["a", "b", "c", "d", "e"] {
        let (chunk, item) = alone.read_item(id).unwrap();
        let expected = full.item(id).unwrap();
        assert_eq!(item.frame_info, expected.frame_info, "{id}");
        assert_eq!(item.meta_data, expected.meta_data, "{id}");
        assert_eq!(
            chunk,
            full.chunks()
                .iter()
                .position(|c| c.chunk == full.chunk_of(id).unwrap().chunk)
                .unwrap()
        );
        // The frames read through the data reader and this frame_info are
        // the frames read through the parsed meta.
        let records: Vec<_> = item.frame_info.iter().copied().enumerate().collect();
        let bytes = alone
            .data_reader(chunk)
            .unwrap()
            .records_at(id, &records)
            .unwrap();
        assert_eq!(bytes, full.frames(id, &Selection::All).unwrap());
    }
    // Nothing of a chunk's meta is kept.
    assert!(alone.chunks().iter().all(|c| !c.is_loaded()));
    assert!(matches!(
        alone.read_item("f").unwrap_err().kind(),
        ErrorKind::UnknownId { .. }
    ));
}

#[test]
fn read_item_reports_a_meta_file_changed_after_opening() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path());
    let gulp = GulpDirectory::open(dir.path()).unwrap();
    // Truncated: the span of d lies past the end.
    let msgpack = dir.path().join("meta_1.gmeta");
    let len = std::fs::metadata(&msgpack).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&msgpack)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let err = gulp.read_item("d").unwrap_err();
    assert!(
        err.to_string()
            .contains("changed after the directory was opened"),
        "{err}"
    );
    // Overwritten: b's object no longer parses as an item.
    let json = dir.path().join("meta_0.gmeta");
    let text = std::fs::read(&json).unwrap();
    std::fs::write(&json, vec![b' '; text.len()]).unwrap();
    let err = gulp.read_item("b").unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Meta { source, .. } if matches!(source.kind(), FormatErrorKind::Item { id, .. } if id == "b")),
        "{err}"
    );
}
