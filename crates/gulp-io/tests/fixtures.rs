//! Directories written by the real gulpio2 0.0.4 and GulpIO v1 read with the
//! same ids, meta and frame bytes, and decode like gulpio2 decodes them.
//! The fixtures and the script that made them are in `tests/data/fixtures/`.

// Test code: a panic is a failure with a message.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::path::{Path, PathBuf};

use gulp_codec::{ColorMode, decode_jpeg};
use gulp_format::{JsonSerializer, Value};
use gulp_io::{GulpDirectory, ReadMode, Selection};
use sha2::{Digest, Sha256};

/// Largest difference allowed between the pure-Rust build's decoding
/// (zune-jpeg, accurate IDCT
/// and smooth upsampling) and gulpio2's (libjpeg-turbo with fast IDCT and fast
/// upsampling) on non-flat gray and 4:4:4 frames. Flat black and white frames
/// must match exactly.
const TOLERANCE: u8 = 8;
/// For 4:2:0 frames (GulpIO v1) the upsampling methods disagree on noisy
/// chroma: on the v1 12x20 noise frame libjpeg-turbo's own accurate mode
/// differs from gulpio2's fast mode by up to 47, 11.8 on average. There we
/// bound the mean difference.
const TOLERANCE_420_MEAN: f64 = 16.0;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/fixtures")
}

fn cases() -> Vec<(PathBuf, Value, Vec<u8>)> {
    let mut out = Vec::new();
    for implementation in ["gulpio2", "gulpio1"] {
        let dir = fixtures().join(implementation);
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for path in names.into_iter().filter(|p| p.is_dir()) {
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            let expected = std::fs::read(dir.join(format!("{name}.expected.json"))).unwrap();
            let expected = JsonSerializer::parse_value(&expected).unwrap();
            let decoded = std::fs::read(dir.join(format!("{name}.decoded.bin"))).unwrap();
            out.push((path, expected, decoded));
        }
    }
    assert!(out.len() >= 10, "fixtures missing: {}", out.len());
    out
}

fn u(v: &Value) -> u64 {
    v.as_i64().unwrap() as u64
}

#[test]
fn gulpio_fixtures_read_identically() {
    let mut frames_checked = 0;
    let mut flat_checked = 0;
    let mut worst = 0u8;
    for (path, expected, decoded) in cases() {
        for mode in [ReadMode::Mmap, ReadMode::Buffered] {
            let gulp = GulpDirectory::open_with(&path, mode).unwrap();
            assert!(
                gulp.warnings().is_empty(),
                "{}: {:?}",
                path.display(),
                gulp.warnings()
            );
            // Chunks and ids per chunk, numeric order.
            let chunks = expected.get("chunks").unwrap().as_array().unwrap();
            assert_eq!(gulp.chunks().len(), chunks.len(), "{}", path.display());
            for (entry, want) in gulp.chunks().iter().zip(chunks) {
                assert_eq!(entry.chunk, u(want.get("chunk").unwrap()));
                let ids: Vec<&str> = want
                    .get("ids")
                    .unwrap()
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect();
                // Read at open, and from the full parse.
                assert_eq!(entry.ids().collect::<Vec<_>>(), ids, "{}", path.display());
                assert_eq!(
                    entry.meta().unwrap().ids().collect::<Vec<_>>(),
                    ids,
                    "{}",
                    path.display()
                );
            }
            let items = expected.get("items").unwrap().as_object().unwrap();
            assert_eq!(gulp.len(), items.len());
            for (id, want) in items {
                let item = gulp.item(id).unwrap();
                assert_eq!(
                    &Value::Array(item.meta_data.to_vec()),
                    want.get("meta_data").unwrap(),
                    "{id}"
                );
                let want_frames = want.get("frames").unwrap().as_array().unwrap();
                let got = gulp.frames(id, &Selection::All).unwrap();
                assert_eq!(got.len(), want_frames.len(), "{id}");
                for (k, (jpeg, wf)) in got.iter().zip(want_frames).enumerate() {
                    let fi = item.frame_info[k];
                    assert_eq!(
                        (fi.loc, fi.pad, fi.length),
                        (
                            u(wf.get("loc").unwrap()),
                            u(wf.get("pad").unwrap()),
                            u(wf.get("length").unwrap())
                        )
                    );
                    let sha = format!("{:x}", Sha256::digest(jpeg));
                    assert_eq!(
                        Some(sha.as_str()),
                        wf.get("jpeg_sha256").unwrap().as_str(),
                        "{id} frame {k}"
                    );
                    if mode == ReadMode::Buffered {
                        continue;
                    }
                    let image = decode_jpeg(jpeg, ColorMode::Auto).unwrap();
                    let shape: Vec<usize> = wf
                        .get("shape")
                        .unwrap()
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| u(v) as usize)
                        .collect();
                    assert_eq!(image.shape(), shape, "{} {id} frame {k}", path.display());
                    let start = u(wf.get("decoded_offset").unwrap()) as usize;
                    let theirs = &decoded[start..start + image.pixels.len()];
                    match wf.get("flat").unwrap() {
                        Value::Int(flat) => {
                            assert!(
                                image.pixels.iter().all(|&p| i64::from(p) == *flat),
                                "{id} frame {k} not flat"
                            );
                            assert_eq!(image.pixels, theirs);
                            flat_checked += 1;
                        }
                        // The default build decodes with libjpeg-turbo, as
                        // gulpio2 does, with its settings: the same pixels.
                        _ if cfg!(feature = "turbojpeg") => {
                            assert_eq!(
                                image.pixels,
                                theirs,
                                "{} {id} frame {k}: differs from gulpio2",
                                path.display()
                            );
                        }
                        _ => {
                            let diffs =
                                || image.pixels.iter().zip(theirs).map(|(a, b)| a.abs_diff(*b));
                            let max = diffs().max().unwrap_or(0);
                            let mean = diffs().map(f64::from).sum::<f64>() / theirs.len() as f64;
                            if wf.get("jpeg_subsampling").and_then(Value::as_str) == Some("420") {
                                assert!(
                                    mean <= TOLERANCE_420_MEAN,
                                    "{} {id} frame {k}: mean {mean}",
                                    path.display()
                                );
                            } else {
                                worst = worst.max(max);
                                assert!(
                                    max <= TOLERANCE,
                                    "{} {id} frame {k}: differs by {max}",
                                    path.display()
                                );
                            }
                        }
                    }
                    frames_checked += 1;
                }
            }
        }
    }
    println!(
        "{frames_checked} frames decoded, {flat_checked} flat ones exact, worst difference {worst}"
    );
    assert!(frames_checked > 50 && flat_checked >= 8);
}

#[test]
fn gulpio1_colour_frames_are_420_and_read_as_gulpio2_reads_them() {
    let gulp = GulpDirectory::open(fixtures().join("gulpio1/v1_basic")).unwrap();
    // v1 wrote an RGB array as BGR: gulpio2 reads [255, 0, 0] back as [0, 0, 254].
    let (id, item) = gulp.items().unwrap().next().unwrap();
    assert!(!item.frame_info.is_empty());
    let first = gulp.frames(id, &Selection::Indices(vec![0])).unwrap();
    let image = decode_jpeg(&first[0], ColorMode::Auto).unwrap();
    let px = &image.pixels[..3];
    assert!(px[0] <= 2 && px[1] <= 2 && px[2] >= 252, "{px:?}");
    // Integer ids were stored as strings.
    assert!(gulp.contains("3"));
}
