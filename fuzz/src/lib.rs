//! The checks the fuzz targets run on each input, and the helpers that build
//! sealed msgpack files and seeds. They live beside gulp-format's tests, which
//! replay saved fuzz inputs through the very same code.

#[path = "../../crates/gulp-format/tests/support/fuzz_checks.rs"]
mod fuzz_checks;

pub use fuzz_checks::*;
