//! A chunk whose data file is cut to every length, and whose meta file is cut
//! to every length, in both meta formats: every read gives the right bytes or
//! an error that names the file (and the id, frame and offset for records),
//! never a panic. Real files: the chunk is written once, then truncated step
//! by step with `set_len`.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::fs::OpenOptions;
use std::path::Path;

use gulp_format::{ChunkMeta, MetaFormat, Value};
use gulp_io::{ChunkReader, ChunkWriter, ErrorKind, GulpDirectory, ReadMode, Selection};

/// Writes chunk 0: four items of several frames (a real JPEG among them,
/// every padding length, an empty frame, an id appended twice).
fn write_chunk(dir: &Path, format: MetaFormat) -> ChunkMeta {
    let jpeg = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/black-gray-8x8.jpg"
    ))
    .unwrap();
    let frame = |n: usize, seed: u8| -> Vec<u8> {
        (0..n).map(|i| seed.wrapping_add(i as u8) | 1).collect()
    };
    let mut w = ChunkWriter::builder()
        .meta_format(format)
        .fsync(false)
        .create(dir, 0)
        .unwrap();
    w.append(
        "a",
        Value::from("A"),
        [frame(5, 1), frame(6, 2), frame(7, 3)],
    )
    .unwrap();
    w.append("b", Value::Int(2), [jpeg.clone(), frame(8, 4)])
        .unwrap();
    w.append("c", Value::Null, [frame(0, 0), frame(13, 5)])
        .unwrap();
    w.append("a", Value::from("again"), [frame(21, 6)]).unwrap();
    w.finish().unwrap();
    gulp_format::read_meta(&std::fs::read(dir.join("meta_0.gmeta")).unwrap()).unwrap()
}

fn cut(path: &Path, len: u64) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

fn data_prefixes(format: MetaFormat) {
    let dir = tempfile::tempdir().unwrap();
    let meta = write_chunk(dir.path(), format);
    let data_path = dir.path().join("data_0.gulp");
    let data = std::fs::read(&data_path).unwrap();
    assert!(data.len() > 400 && meta.n_frames() == 8);
    let (mut ok, mut bad) = (0, 0);
    for len in (0..=data.len()).rev() {
        cut(&data_path, len as u64);
        for mode in [ReadMode::Mmap, ReadMode::Buffered] {
            let reader = ChunkReader::open(dir.path(), 0, mode).unwrap();
            let gulp = GulpDirectory::open_with(dir.path(), mode).unwrap();
            for (id, item) in &meta {
                let mut all_fit = true;
                for (k, fi) in item.frame_info.iter().enumerate() {
                    let end = fi.loc + fi.length;
                    match reader.frame(id, k) {
                        Ok(bytes) if end as usize <= len => {
                            let jpeg_end = (end - fi.pad) as usize;
                            assert_eq!(&*bytes, &data[fi.loc as usize..jpeg_end]);
                            ok += 1;
                        }
                        Err(e) if end as usize > len => {
                            let ErrorKind::Record {
                                path,
                                id: eid,
                                frame,
                                offset,
                                ..
                            } = e.kind()
                            else {
                                panic!("{len}: {e}")
                            };
                            assert_eq!((path, eid, *frame, *offset), (&data_path, id, k, fi.loc));
                            assert!(
                                e.to_string().contains(&format!(
                                    "past the end of the data file ({len} bytes)"
                                )),
                                "{e}"
                            );
                            all_fit = false;
                            bad += 1;
                        }
                        other => panic!("data cut to {len}: id {id} frame {k}: {other:?}"),
                    }
                }
                let frames = gulp.frames(id, &Selection::All);
                assert_eq!(frames.is_ok(), all_fit, "cut to {len}: {id}");
                if let Ok(frames) = frames {
                    assert_eq!(frames.len(), item.frame_info.len());
                }
            }
        }
    }
    assert!(ok > 1000 && bad > 1000, "{ok} reads, {bad} errors");
}

fn meta_prefixes(format: MetaFormat) {
    let dir = tempfile::tempdir().unwrap();
    let meta = write_chunk(dir.path(), format);
    let meta_path = dir.path().join("meta_0.gmeta");
    let full = std::fs::read(&meta_path).unwrap().len();
    for len in (0..full).rev() {
        cut(&meta_path, len as u64);
        // An error when the directory opens or when the chunk is first used.
        let outcome = GulpDirectory::open(dir.path()).and_then(|gulp| {
            let reader = gulp.reader(0)?;
            Ok(reader.meta().len())
        });
        let err = outcome.expect_err(&format!("{format} meta cut to {len} accepted"));
        let ErrorKind::Meta { path, .. } = err.kind() else {
            panic!("{len}: {err}")
        };
        assert_eq!(path, &meta_path);
        assert!(err.to_string().contains("meta_0.gmeta: "), "{err}");
        let direct = ChunkReader::open(dir.path(), 0, ReadMode::Mmap).unwrap_err();
        assert!(matches!(direct.kind(), ErrorKind::Meta { .. }), "{direct}");
    }
    assert!(!meta.is_empty());
}

#[test]
fn json_chunk_with_its_data_file_cut_to_every_length() {
    data_prefixes(MetaFormat::Json);
}

#[test]
fn msgpack_chunk_with_its_data_file_cut_to_every_length() {
    data_prefixes(MetaFormat::Msgpack);
}

#[test]
fn json_meta_file_cut_to_every_length() {
    meta_prefixes(MetaFormat::Json);
}

#[test]
fn msgpack_meta_file_cut_to_every_length() {
    meta_prefixes(MetaFormat::Msgpack);
}
