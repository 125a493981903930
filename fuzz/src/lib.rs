//! The checks the fuzz targets run on each input, and the helpers that build
//! sealed msgpack files and seeds. They live beside gulp-format's and
//! gulp-io's tests, which replay saved fuzz inputs through the very same code.

#[path = "../../crates/gulp-format/tests/support/fuzz_checks.rs"]
mod fuzz_checks;
#[path = "../../crates/gulp-io/tests/support/fuzz_checks.rs"]
mod io_fuzz_checks;

pub use fuzz_checks::*;
pub use io_fuzz_checks::{check_chunk_read, check_random_ops, chunk_read_seeds, random_ops_seeds};
