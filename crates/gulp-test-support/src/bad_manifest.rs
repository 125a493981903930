//! The manifest of the bad-data corpus, `tests/data/bad/expectations.txt`,
//! read by the tests of gulp-io (`bad_data.rs`) and gulp-ingest
//! (`bad_inputs.rs`).

use std::path::{Path, PathBuf};

/// `tests/data/bad` at the repository root.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/bad")
}

/// One line of `expectations.txt`: `layer case kind substring...`.
#[derive(Debug)]
pub struct Expectation {
    /// Line number in `expectations.txt`, from 1.
    pub line: usize,
    /// The layer whose test runs the case (`meta`, `chunk`, `ingest`, ...).
    pub layer: String,
    /// The file or folder of the case, relative to [`corpus_dir`].
    pub case: String,
    /// The expected kind of error.
    pub kind: String,
    /// Text the error message must contain (the rest of the line).
    pub substring: String,
}

/// Every expectation of `expectations.txt`, in order; blank lines and `#`
/// comments skipped.
pub fn expectations() -> Vec<Expectation> {
    let path = corpus_dir().join("expectations.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut rest = line;
        let mut field = || {
            let (f, r) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            rest = r.trim_start();
            f.to_owned()
        };
        let (layer, case, kind) = (field(), field(), field());
        assert!(
            !kind.is_empty(),
            "expectations.txt line {}: want `layer case kind substring`: {raw}",
            i + 1
        );
        out.push(Expectation {
            line: i + 1,
            layer,
            case,
            kind,
            substring: rest.to_owned(),
        });
    }
    out
}

/// Every file under `dir`, relative to it, with `/` separators.
pub fn files_under(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if entry.file_type().unwrap().is_dir() {
            files_under(&entry.path(), &rel, out);
        } else {
            out.push(rel);
        }
    }
}
