//! The bad-data corpus, `tests/data/bad/` at the repository root (see its
//! README.md): every case gives its expected error, through the public API,
//! and never a panic; a guard test keeps the corpus and its manifest,
//! `expectations.txt`, in step.
//!
//! `GULP_BAD_DATA_PRINT=1 cargo test -p gulp-io --test bad_data -- --nocapture`
//! prints what each case actually gives, in the manifest's format.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::collections::BTreeSet;
use std::path::Path;

use gulp_codec::{ColorMode, FrameDecoder, JpegDecoder, ZuneDecoder};

use gulp_io::{ErrorKind, GulpDirectory, ReadMode, Selection};

use gulp_test_support::bad_corpus;
use gulp_test_support::bad_manifest::{corpus_dir, expectations, files_under};

/// Layers this test runs.
const LAYERS_HERE: &[&str] = &["meta", "chunk", "directory", "decode"];
/// Layers whose cases other tests run (gulp-ingest's inputs: videos, image
/// files, lists); the guard accepts them, this test skips them.
const LAYERS_ELSEWHERE: &[&str] = &["ingest"];
/// Files of the corpus folder that are not cases (the ingest layer's
/// generator script included).
const NOT_CASES: &[&str] = &["README.md", "expectations.txt", "ingest/make.sh"];

/// The guard: every file of the corpus belongs to exactly one expectation
/// (its own path or a folder above it), every expectation names a file or
/// folder that exists, and every layer is one somebody runs.
#[test]
fn every_case_has_an_expectation_and_every_expectation_a_case() {
    let dir = corpus_dir();
    let expectations = expectations();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for e in &expectations {
        let known =
            LAYERS_HERE.contains(&e.layer.as_str()) || LAYERS_ELSEWHERE.contains(&e.layer.as_str());
        if !known {
            problems.push(format!("line {}: unknown layer {:?}", e.line, e.layer));
        }
        if !dir.join(&e.case).exists() {
            problems.push(format!("line {}: {} does not exist", e.line, e.case));
        }
        if !seen.insert(e.case.trim_end_matches('/')) {
            problems.push(format!("line {}: {} is listed twice", e.line, e.case));
        }
    }
    let mut files = Vec::new();
    files_under(&dir, "", &mut files);
    for file in files.iter().filter(|f| !NOT_CASES.contains(&f.as_str())) {
        let owners = expectations
            .iter()
            .filter(|e| {
                let case = e.case.trim_end_matches('/');
                file == case || file.starts_with(&format!("{case}/"))
            })
            .count();
        if owners != 1 {
            problems.push(format!("{file}: covered by {owners} expectations"));
        }
    }
    assert!(problems.is_empty(), "tests/data/bad: {problems:#?}");
}

/// The committed corpus is what the generator writes (the ingest layer and
/// other hand-made files may sit beside it).
#[test]
fn generated_files_are_up_to_date() {
    let dir = corpus_dir();
    let mut stale = Vec::new();
    for (rel, bytes) in bad_corpus::corpus() {
        if std::fs::read(dir.join(&rel)).ok().as_deref() != Some(&bytes[..]) {
            stale.push(rel);
        }
    }
    assert!(
        stale.is_empty(),
        "rerun `cargo run -p gulp-io --example bad_corpus`: {stale:#?}"
    );
}

fn io_kind(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Io { .. } => "Io",
        ErrorKind::Meta { .. } => "Meta",
        ErrorKind::Record { .. } => "Record",
        ErrorKind::DuplicateId { .. } => "DuplicateId",
        ErrorKind::UnknownId { .. } => "UnknownId",
        ErrorKind::Selection { .. } => "Selection",
        ErrorKind::SelectionSyntax { .. } => "SelectionSyntax",
        ErrorKind::Decode { .. } => "Decode",
        ErrorKind::ChunkExists { .. } => "ChunkExists",
        ErrorKind::Invalid { .. } => "Invalid",
        _ => "other",
    }
}

fn format_kind(kind: &gulp_format::ErrorKind) -> &'static str {
    use gulp_format::ErrorKind as K;
    match kind {
        K::Empty => "Empty",
        K::UnknownFormat { .. } => "UnknownFormat",
        K::Json { .. } => "Json",
        K::Msgpack { .. } => "Msgpack",
        K::Item { .. } => "Item",
        K::UnsupportedVersion { .. } => "UnsupportedVersion",
        K::Fingerprint { .. } => "Fingerprint",
        _ => "other",
    }
}

/// Opens a directory and reads every frame of every item (and decodes them,
/// if `decode`); an error may come at open or at first use of a chunk.
/// Returns the number of frames read.
fn read_everything(dir: &Path, mode: ReadMode, decode: bool) -> gulp_io::Result<usize> {
    let gulp = GulpDirectory::open_with(dir, mode)?;
    // The build's codec (libjpeg-turbo by default), then zune-jpeg: a frame
    // must fail in both, each error saying where the frame is.
    let zune = ZuneDecoder {
        mode: ColorMode::Auto,
    };
    let default = JpegDecoder::default();
    let decoders: [&dyn FrameDecoder; 2] = [&default, &zune];
    let mut frames = 0;
    for index in 0..gulp.chunks().len() {
        let reader = gulp.reader(index)?;
        let ids: Vec<String> = reader.meta().ids().map(str::to_owned).collect();
        for id in ids {
            gulp.item(&id)?;
            let n = reader.frames(&id, &Selection::All)?.len();
            assert_eq!(gulp.frames(&id, &Selection::All)?.len(), n);
            if decode {
                for k in 0..n {
                    let mut first = None;
                    for decoder in decoders {
                        if let Err(e) = reader.decode_frame(&id, k, decoder) {
                            first.get_or_insert(e);
                        }
                    }
                    if let Some(e) = first {
                        return Err(e);
                    }
                }
            }
            frames += n;
        }
    }
    Ok(frames)
}

/// What a case gives: `(kind, message)`, kind `none` when all went well.
fn outcome(layer: &str, path: &Path) -> Vec<(String, String)> {
    let mut outcomes = Vec::new();
    if layer == "meta" {
        let bytes = std::fs::read(path).unwrap();
        // The parser on its own (no path to name), then gulp-io (the path).
        match gulp_format::read_meta(&bytes) {
            Ok(_) => outcomes.push(("none".to_owned(), String::new())),
            Err(e) => outcomes.push((format_kind(e.kind()).to_owned(), e.to_string())),
        }
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("meta_0.gmeta"), &bytes).unwrap();
        std::fs::write(tmp.path().join("data_0.gulp"), b"").unwrap();
        match read_everything(tmp.path(), ReadMode::Mmap, false) {
            Ok(_) => outcomes.push(("none".to_owned(), String::new())),
            Err(e) => {
                let ErrorKind::Meta { path, source } = e.kind() else {
                    panic!("{}: not a meta error: {e}", path.display())
                };
                assert_eq!(path, &tmp.path().join("meta_0.gmeta"));
                let shown = format!("{}: ", path.display());
                assert_eq!(e.to_string(), format!("meta file {shown}{source}"));
                outcomes.push((format_kind(source.kind()).to_owned(), source.to_string()));
            }
        }
    } else {
        for mode in [ReadMode::Mmap, ReadMode::Buffered] {
            match read_everything(path, mode, layer == "decode") {
                Ok(_) => outcomes.push(("none".to_owned(), String::new())),
                Err(e) => {
                    let msg = e.to_string();
                    // Errors name the file: a path inside the case folder.
                    assert!(
                        msg.contains(&path.display().to_string()),
                        "{}: the error does not name a path in the case: {msg}",
                        path.display()
                    );
                    outcomes.push((io_kind(e.kind()).to_owned(), msg));
                }
            }
        }
    }
    outcomes
}

#[test]
fn every_case_gives_its_expected_error() {
    let dir = corpus_dir();
    let print = std::env::var_os("GULP_BAD_DATA_PRINT").is_some();
    let mut failures = Vec::new();
    let mut ran = 0;
    for e in expectations() {
        if !LAYERS_HERE.contains(&e.layer.as_str()) {
            continue; // run by the tests of its own layer
        }
        let path = dir.join(&e.case);
        let case = e.case.clone();
        let layer = e.layer.clone();
        let results = std::panic::catch_unwind(|| outcome(&layer, &path))
            .unwrap_or_else(|_| vec![("panic".to_owned(), String::new())]);
        ran += 1;
        for (kind, msg) in &results {
            if print {
                println!("{:<9} {:<48} {kind:<12} {msg}", e.layer, e.case);
            }
            let shown = msg.replace(&format!("{}/", dir.display()), "");
            if *kind != e.kind || (e.kind != "none" && !msg.contains(&e.substring)) {
                failures.push(format!(
                    "line {} {case}: expected {} {:?}, got {kind} {shown:?}",
                    e.line, e.kind, e.substring
                ));
            }
        }
        if e.kind == "none" {
            assert!(
                e.substring.starts_with("# "),
                "line {}: a `none` case says why, after `# `",
                e.line
            );
        }
    }
    assert!(ran >= 60, "only {ran} cases ran");
    assert!(failures.is_empty(), "{failures:#?}");
}
