//! Replays the saved inputs of the gulp-io fuzz targets (`fuzz/`,
//! docs/fuzzing.md) from `tests/data/fuzz-regressions/<target>/` through the
//! targets' own checks, and the targets' seeds as well.
//!
//! Each folder holds inputs for one target: what the fuzzer found (kept after
//! the fix so that the bug stays fixed) and inputs of awkward shape.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use gulp_test_support::fuzz_checks::io::{
    check_chunk_read, check_jpeg_decode, check_random_ops, chunk_pair, chunk_read_seeds, jpeg_crop,
    jpeg_decode_inputs, jpeg_options, random_ops_seeds,
};
use gulp_test_support::saved_inputs::inputs;

/// Runs `check` on every saved input and seed, naming the ones that fail.
fn replay(
    target: &str,
    seeds: Vec<(String, Vec<u8>)>,
    check: impl Fn(&[u8]) + std::panic::RefUnwindSafe,
) {
    let mut failed = Vec::new();
    let saved = inputs(env!("CARGO_MANIFEST_DIR"), target)
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

/// The committed seeds of a fuzz target, `fuzz/seeds/<target>/` (written
/// by the fuzz crate's `seeds` example).
fn committed_seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/seeds")
        .join(target);
    let mut seeds: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            (path.display().to_string(), std::fs::read(&path).unwrap())
        })
        .collect();
    seeds.sort();
    assert!(
        seeds.len() > 20,
        "{} holds {} seeds",
        dir.display(),
        seeds.len()
    );
    seeds
}

#[test]
fn jpeg_decode_regressions() {
    let mut seeds = committed_seeds("jpeg_decode");
    // And gulp-io's own test JPEGs behind the seeds' option prefixes.
    for name in ["white-8x8", "black-gray-8x8", "noise-24x16"] {
        let path = format!("{}/tests/data/{name}.jpg", env!("CARGO_MANIFEST_DIR"));
        let jpeg = std::fs::read(&path).unwrap();
        seeds.extend(jpeg_decode_inputs(name, &jpeg));
    }
    replay("jpeg_decode", seeds, check_jpeg_decode);
}

/// The JPEG seeds decode (so the success checks run): with the default
/// codec cropped and not, with zune-jpeg cropped.
#[test]
fn jpeg_decode_seeds_decode() {
    use gulp_codec::{Codec, decode_jpeg_into, read_header};
    let mut decoded = std::collections::BTreeSet::new();
    for (_, input) in committed_seeds("jpeg_decode") {
        let (mut options, crop, jpeg) = jpeg_options(&input);
        let Ok(header) = read_header(jpeg, options.codec) else {
            continue;
        };
        options.crop = crop.map(|c| jpeg_crop(c, header.scaled_size(&options)));
        let mut out = vec![0; 1 << 16];
        if decode_jpeg_into(jpeg, &options, &mut out).is_ok() {
            decoded.insert((options.codec == Codec::Zune, options.crop.is_some()));
        }
    }
    let zune = Codec::default() == Codec::Zune;
    for want in [(zune, false), (zune, true), (true, true)] {
        assert!(decoded.contains(&want), "{want:?} not in {decoded:?}");
    }
}

/// The seeds reach what the checks are for: valid chunks whose frames read,
/// and frames that do not.
#[test]
fn chunk_read_seeds_exercise_both_outcomes() {
    let mut ok = 0;
    let mut bad = 0;
    for (_, input) in chunk_read_seeds() {
        let pair = chunk_pair(&input);
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
