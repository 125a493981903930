//! The saved fuzz inputs of a crate, `tests/data/fuzz-regressions/<target>/`
//! under its manifest directory, for the regression replays of gulp-format
//! and gulp-io (`fuzz_regressions.rs`).

use std::path::{Path, PathBuf};

/// The saved inputs of one target of the crate at `manifest_dir` (the
/// caller's `env!("CARGO_MANIFEST_DIR")`), sorted; fails if the folder is
/// missing or empty, so that a moved folder cannot turn a test into a no-op.
pub fn inputs(manifest_dir: impl AsRef<Path>, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = manifest_dir
        .as_ref()
        .join("tests/data/fuzz-regressions")
        .join(target);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "{} holds no inputs", dir.display());
    paths
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect()
}
