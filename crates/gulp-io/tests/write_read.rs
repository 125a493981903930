//! Items written with `ChunkWriter` read back identically through the mmap
//! and the buffered path.

// Test code: a panic is a failure with a message.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use gulp_format::{MetaFormat, Value};
use gulp_io::{ChunkReader, ChunkWriter, ErrorKind, GulpDirectory, ReadMode, Selection};
use proptest::prelude::*;

type Item = (String, Value, Vec<Vec<u8>>);

fn items() -> impl Strategy<Value = Vec<Item>> {
    let payload = prop::collection::vec(any::<u8>(), 0..67);
    let value = prop_oneof![
        Just(Value::Null),
        any::<i64>().prop_map(Value::Int),
        "[a-zé ]{0,10}".prop_map(Value::from),
        any::<f64>().prop_map(Value::Float),
    ];
    // Few distinct ids, so that the same id is often appended twice.
    prop::collection::vec(
        (
            "[a-c]{1,2}|[0-9]{1,3}|é",
            value,
            prop::collection::vec(payload, 0..5),
        ),
        0..12,
    )
}

fn write(dir: &std::path::Path, chunk: u64, format: MetaFormat, items: &[Item]) {
    let mut writer = ChunkWriter::builder()
        .meta_format(format)
        .fsync(false)
        .create(dir, chunk)
        .unwrap();
    for (id, meta, frames) in items {
        writer.append(id, meta.clone(), frames).unwrap();
    }
    let summary = writer.finish().unwrap();
    assert_eq!(
        summary.frames,
        items.iter().map(|i| i.2.len()).sum::<usize>()
    );
}

/// What GulpIO's merge rule predicts: per id, meta_data list and frames.
fn expected(items: &[Item]) -> Vec<(String, Vec<Value>, Vec<Vec<u8>>)> {
    let mut out: Vec<(String, Vec<Value>, Vec<Vec<u8>>)> = Vec::new();
    for (id, meta, frames) in items {
        match out.iter_mut().find(|e| &e.0 == id) {
            Some(e) => {
                e.1.push(meta.clone());
                e.2.extend(frames.iter().cloned());
            }
            None => out.push((id.clone(), vec![meta.clone()], frames.clone())),
        }
    }
    out
}

fn check(dir: &std::path::Path, chunk: u64, items: &[Item]) {
    for mode in [ReadMode::Mmap, ReadMode::Buffered] {
        let reader = ChunkReader::open(dir, chunk, mode).unwrap();
        let want = expected(items);
        assert_eq!(
            reader.meta().ids().collect::<Vec<_>>(),
            want.iter().map(|e| e.0.as_str()).collect::<Vec<_>>()
        );
        for (id, metas, frames) in &want {
            let item = reader.item(id).unwrap();
            assert_eq!(&item.meta_data, metas);
            let got = reader.frames(id, &Selection::All).unwrap();
            assert_eq!(got.iter().map(|f| f.to_vec()).collect::<Vec<_>>(), *frames);
            for fi in &item.frame_info {
                assert_eq!(fi.problem(), None);
                assert_eq!(fi.loc % 4, 0);
            }
        }
        let data = std::fs::read(reader.data_path()).unwrap();
        assert_eq!(data.len() as u64, reader.meta().data_extent().unwrap());
        // Pad bytes are zero.
        for (_, item) in reader.meta().iter() {
            for fi in &item.frame_info {
                let end = (fi.loc + fi.length) as usize;
                assert!(data[end - fi.pad as usize..end].iter().all(|&b| b == 0));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn written_items_read_back(items in items(), msgpack in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let format = if msgpack { MetaFormat::Msgpack } else { MetaFormat::Json };
        write(dir.path(), 0, format, &items);
        check(dir.path(), 0, &items);
    }

    #[test]
    fn append_to_existing_chunk(first in items(), second in items(), msgpack in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), 0, MetaFormat::Json, &first);
        let format = if msgpack { MetaFormat::Msgpack } else { MetaFormat::Json };
        let mut writer = ChunkWriter::builder().meta_format(format).fsync(false).append_to(dir.path(), 0).unwrap();
        for (id, meta, frames) in &second {
            writer.append(id, meta.clone(), frames).unwrap();
        }
        writer.finish().unwrap();
        let all: Vec<Item> = first.iter().chain(&second).cloned().collect();
        check(dir.path(), 0, &all);
    }
}

#[test]
fn payloads_of_every_length_mod_4() {
    let dir = tempfile::tempdir().unwrap();
    let frames: Vec<Vec<u8>> = (0..9u8).map(|n| vec![0xab; usize::from(n)]).collect();
    write(
        dir.path(),
        0,
        MetaFormat::Json,
        &[("x".into(), Value::Null, frames.clone())],
    );
    let reader = ChunkReader::open(dir.path(), 0, ReadMode::Mmap).unwrap();
    let pads: Vec<u64> = reader
        .item("x")
        .unwrap()
        .frame_info
        .iter()
        .map(|f| f.pad)
        .collect();
    assert_eq!(pads, [0, 3, 2, 1, 0, 3, 2, 1, 0]);
    assert_eq!(reader.meta().data_extent(), Some(4 * 4 + 8 * 4));
}

#[test]
fn empty_chunk_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), 0, MetaFormat::Json, &[]);
    assert_eq!(
        std::fs::read(dir.path().join("meta_0.gmeta")).unwrap(),
        b"{}"
    );
    assert_eq!(
        std::fs::metadata(dir.path().join("data_0.gulp"))
            .unwrap()
            .len(),
        0
    );
    let reader = ChunkReader::open(dir.path(), 0, ReadMode::Mmap).unwrap();
    assert!(!reader.is_mapped(), "an empty file is read, not mapped");
    let gulp = GulpDirectory::open(dir.path()).unwrap();
    assert_eq!(
        (gulp.len(), gulp.n_frames(), gulp.chunks().len()),
        (0, 0, 1)
    );
}

#[test]
fn dropped_writer_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        0,
        MetaFormat::Json,
        &[("a".into(), Value::Null, vec![vec![1, 2, 3]])],
    );
    let before: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    {
        let mut writer = ChunkWriter::builder().create(dir.path(), 1).unwrap();
        writer.append("b", Value::Null, [[9u8; 10]]).unwrap();
        let mut appending = ChunkWriter::builder().append_to(dir.path(), 0).unwrap();
        appending.append("c", Value::Null, [[9u8; 10]]).unwrap();
    }
    let after: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before.len(), after.len());
    let gulp = GulpDirectory::open(dir.path()).unwrap();
    assert_eq!(gulp.ids().collect::<Vec<_>>(), ["a"]);
    assert!(gulp.warnings().is_empty());
    let err = ChunkWriter::builder().create(dir.path(), 0).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ChunkExists { chunk: 0, .. }),
        "{err}"
    );
}

#[test]
fn directory_opens_chunks_in_numeric_order() {
    let dir = tempfile::tempdir().unwrap();
    for chunk in [0u64, 1, 2, 10, 11] {
        write(
            dir.path(),
            chunk,
            MetaFormat::Json,
            &[(
                format!("id{chunk}"),
                Value::Int(chunk as i64),
                vec![vec![7; 5]],
            )],
        );
    }
    std::fs::write(dir.path().join("label2idx.json"), "{}").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
    std::fs::write(dir.path().join("database.gulp"), "x").unwrap();
    let gulp = GulpDirectory::open(dir.path()).unwrap();
    assert_eq!(
        gulp.chunks().iter().map(|c| c.chunk).collect::<Vec<_>>(),
        [0, 1, 2, 10, 11]
    );
    assert_eq!(
        gulp.ids().collect::<Vec<_>>(),
        ["id0", "id1", "id2", "id10", "id11"]
    );
    assert_eq!(gulp.next_chunk_number(), 12);
    assert_eq!(gulp.chunk_of("id10").unwrap().chunk, 10);
    assert_eq!(gulp.meta_data("id11").unwrap(), &Value::Int(11));
    assert_eq!(
        gulp.frames("id2", &Selection::parse("::-1").unwrap())
            .unwrap()[0]
            .to_vec(),
        vec![7; 5]
    );
    let err = gulp
        .frames("id2", &Selection::parse("3").unwrap())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "id \"id2\": frame index 3 is out of range for 1 frames"
    );
    assert!(matches!(
        gulp.item("nope").unwrap_err().kind(),
        ErrorKind::UnknownId { .. }
    ));
}

/// A create or append_to that fails (the chunk exists, or does not) must not
/// remove the temporary files of another writer of the same chunk number.
#[test]
fn failed_writer_leaves_other_writers_temp_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    let builder = || {
        let mut b = ChunkWriter::builder();
        b.fsync(false);
        b
    };
    // Chunk 2 is being written; appending to it fails, as it is not committed.
    let mut writer = builder().create(dir.path(), 2).unwrap();
    writer.append("a", Value::Null, [[1u8, 2, 3]]).unwrap();
    assert!(builder().append_to(dir.path(), 2).is_err());
    writer.finish().unwrap();
    // Chunk 2 is being appended to; creating it fails, as it exists.
    let mut writer = builder().append_to(dir.path(), 2).unwrap();
    writer.append("b", Value::Null, [[4u8]]).unwrap();
    let err = builder().create(dir.path(), 2).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::ChunkExists { .. }), "{err}");
    writer.finish().unwrap();
    let gulp = GulpDirectory::open(dir.path()).unwrap();
    assert_eq!(gulp.ids().collect::<Vec<_>>(), ["a", "b"]);
    assert!(gulp.warnings().is_empty(), "{:?}", gulp.warnings());
}
