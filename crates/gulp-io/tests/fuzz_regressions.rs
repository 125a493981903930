//! Replays the saved inputs of the gulp-io fuzz targets (`fuzz/`,
//! docs/fuzzing.md) from `tests/data/fuzz-regressions/<target>/` through the
//! targets' own checks, and the targets' seeds as well.
//!
//! Each folder holds inputs for one target: what the fuzzer found (kept after
//! the fix so that the bug stays fixed) and inputs of awkward shape.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

#[path = "support/fuzz_checks.rs"]
mod fuzz_checks;
#[path = "../../../tests/support/saved_inputs.rs"]
mod saved_inputs;

use saved_inputs::inputs;

use fuzz_checks::{check_chunk_read, check_random_ops, chunk_read_seeds, random_ops_seeds};

/// Runs `check` on every saved input and seed, naming the ones that fail.
fn replay(
    target: &str,
    seeds: Vec<(String, Vec<u8>)>,
    check: impl Fn(&[u8]) + std::panic::RefUnwindSafe,
) {
    let mut failed = Vec::new();
    let saved = inputs(target)
        .into_iter()
        .map(|(path, bytes)| (path.display().to_string(), bytes));
    for (name, bytes) in saved.chain(seeds) {
        if std::panic::catch_unwind(|| check(&bytes)).is_err() {
            failed.push(name);
        }
    }
    assert!(failed.is_empty(), "{target}: failing inputs {failed:#?}");
}

#[test]
fn chunk_read_regressions() {
    replay("chunk_read", chunk_read_seeds(), check_chunk_read);
}

#[test]
fn random_ops_regressions() {
    replay("random_ops", random_ops_seeds(), check_random_ops);
}

/// The seeds reach what the checks are for: valid chunks whose frames read,
/// and frames that do not.
#[test]
fn chunk_read_seeds_exercise_both_outcomes() {
    let mut ok = 0;
    let mut bad = 0;
    for (_, input) in chunk_read_seeds() {
        let pair = fuzz_checks::chunk_pair(&input);
        let meta = gulp_format::read_meta(&pair.meta).unwrap();
        for (_, item) in &meta {
            for fi in &item.frame_info {
                let fits = fi.problem().is_none()
                    && fi.end().is_some_and(|end| end <= pair.data.len() as u64);
                if fits { ok += 1 } else { bad += 1 }
            }
        }
    }
    assert!(ok > 10 && bad > 0, "{ok} valid and {bad} invalid frames");
}
