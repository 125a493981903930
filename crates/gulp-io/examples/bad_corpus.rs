//! Writes the bad-data corpus, `tests/data/bad/` at the repository root
//! (see its README.md): corrupt, truncated and hostile chunk files, each
//! with an expected error in `tests/data/bad/expectations.txt`.
//!
//! ```text
//! cargo run -p gulp-io --example bad_corpus [OUT_DIR]
//! ```
//!
//! The output is deterministic; the `bad_data` test checks that the
//! committed files are what this writes. The files are defined in
//! `gulp_test_support::bad_corpus`, which that test reads too.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use gulp_test_support::bad_corpus::corpus;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf();
    let out = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("tests/data/bad"));
    let files = corpus();
    for (rel, bytes) in &files {
        let path = out.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    println!("{} files written under {}", files.len(), out.display());
}
