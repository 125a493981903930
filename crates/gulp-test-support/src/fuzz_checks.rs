//! What the fuzz targets of `fuzz/` check on each input (docs/fuzzing.md).
//!
//! The fuzz crate runs these, and the `fuzz_regressions` tests of gulp-format
//! and gulp-io replay saved inputs (see [`crate::saved_inputs`]) through the
//! very same code, so that a bug the fuzzer found stays fixed.

pub mod format;
pub mod io;
