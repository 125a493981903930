//! Helpers shared by the tests, benches and examples of the gulp crates and
//! by the fuzz crate (`fuzz/`), so that each is written once. Not published;
//! the crates take it as a dev-dependency, the fuzz crate as a dependency.
//!
//! | module | what | used by |
//! |---|---|---|
//! | [`trailer`] | the 15-byte msgpack meta trailer: [`trailer::seal`], [`trailer::unseal`] | gulp-format and gulp-io tests, [`fuzz_checks`], [`bad_corpus`], `fuzz/examples/seeds.rs` |
//! | [`fuzz_checks::format`] | the checks of the meta fuzz targets | gulp-format tests (`fuzz_regressions`, `msgpack_corruption`, `lazy_meta_data`, `skim`), `fuzz/` |
//! | [`fuzz_checks::io`] | the checks and seeds of the gulp-io fuzz targets | gulp-io's `fuzz_regressions`, `fuzz/` |
//! | [`saved_inputs`] | the saved fuzz inputs of a crate | gulp-format's and gulp-io's `fuzz_regressions` |
//! | [`counting_alloc`] | a global allocator that records the peak | gulp-format's and gulp-io's `alloc_limits` |
//! | [`bad_manifest`] | `tests/data/bad/expectations.txt` | gulp-io's `bad_data`, gulp-ingest's `bad_inputs` |
//! | [`bad_corpus`] | the generated files of `tests/data/bad/` | gulp-io's `bad_data` and `bad_corpus` example |
//! | [`bench_dir`] | synthetic gulp directories | gulp-io's `read` bench and `make_bench_dir` example |
//! | [`gulp_dir`] | small gulp directories item by item, and gradient JPEG frames | gulp-io's `check` and `corrupt`, gulp-cli's `common` and `preview`, gulp-lint's `planted`, gulp-serve's `http` tests |
//! | [`media`] | videos and JPEG folders made with ffmpeg | gulp-ingest tests, gulp-cli's `ingest` test |
//! | [`splitmix64`] | a seeded pseudo-random sequence | [`bench_dir::varied_pixels`], gulp-io's `bare_turbo` example |
//!
//! ```
//! use gulp_test_support::trailer::{seal, unseal};
//!
//! let file = seal(b"content".to_vec());
//! assert_eq!(unseal(&file), b"content");
//! ```
// Test code: a panic is a test failure with a message, and the sizes and
// numbers it converts are small.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

pub mod bad_corpus;
pub mod bad_manifest;
pub mod bench_dir;
pub mod counting_alloc;
pub mod fuzz_checks;
pub mod gulp_dir;
pub mod media;
pub mod saved_inputs;
pub mod trailer;

/// The next number of the SplitMix64 sequence whose state is `state`: the
/// seeded, reproducible randomness of generated inputs (not a loader's:
/// gulp-loader has its own).
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
