//! The checker as a library (`gulp_io::check`), what `gulp check` and the
//! Python package call: a typed report with problems (damage) and notes
//! (leftovers of an interrupted write).
#![allow(clippy::unwrap_used)]

use gulp_format::Value;
use gulp_io::check::{Options, ProblemKind, check_directory};
use gulp_test_support::gulp_dir::GulpDirBuilder;

const JPEG: &[u8] = include_bytes!("data/noise-24x16.jpg");

#[test]
fn a_typed_report_of_damage_and_leftovers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    GulpDirBuilder::new(dir)
        .item("a", Value::Null, [JPEG.to_vec(), JPEG.to_vec()])
        .item("b", Value::Null, [JPEG.to_vec()])
        .write();
    let options = Options {
        decode: true,
        threads: 2,
    };
    let report = check_directory(dir, options, &|_| {}).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(
        (report.chunks, report.items, report.frames, report.decoded),
        (1, 2, 3, 3)
    );
    assert!(report.notes.is_empty());

    // A leftover is a note: still clean.
    std::fs::write(dir.join(".gulp-tmp.data_1.gulp"), b"partial").unwrap();
    let report = check_directory(dir, options, &|_| {}).unwrap();
    assert!(report.is_clean());
    assert_eq!(report.notes.len(), 1);
    assert_eq!(report.notes[0].kind, ProblemKind::TempFile);

    // Frame 1 of "a" loses its end marker: a problem that says where.
    let meta = gulp_io::ChunkReader::open(dir, 0, gulp_io::ReadMode::Mmap).unwrap();
    let fi = meta.item("a").unwrap().frame_info[1];
    drop(meta);
    let data = dir.join("data_0.gulp");
    let mut bytes = std::fs::read(&data).unwrap();
    let end = usize::try_from(fi.loc + fi.jpeg_len().unwrap()).unwrap();
    bytes[end - 1] = 0x00;
    std::fs::write(&data, bytes).unwrap();
    let report = check_directory(dir, options, &|_| {}).unwrap();
    assert!(!report.is_clean());
    let p = report
        .problems
        .iter()
        .find(|p| p.kind == ProblemKind::JpegEnd)
        .unwrap_or_else(|| panic!("{:?}", report.problems));
    assert_eq!(
        (p.file.as_path(), p.id.as_deref(), p.frame, p.offset),
        (data.as_path(), Some("a"), Some(1), Some(fi.loc))
    );
}
