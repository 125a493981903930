//! No allocation is sized by an unchecked number from a file: a JPEG frame
//! that claims a huge image in a few hundred bytes, and hostile chunks, make
//! the reader allocate in proportion to what is there. A counting global
//! allocator measures the peak.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::path::Path;

use gulp_codec::{ColorMode, MAX_DECODE_PIXELS, decode_jpeg};

use gulp_io::{GulpDirectory, ReadMode, Selection};
use gulp_test_support::counting_alloc::{Counting, ONE_AT_A_TIME, peak_during};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The 8×8 test JPEG with its frame header claiming `height × width`.
fn jpeg_claiming(height: u16, width: u16) -> Vec<u8> {
    let mut jpeg = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/white-8x8.jpg"
    ))
    .unwrap();
    let sof = jpeg.windows(2).position(|w| w == [0xff, 0xc0]).unwrap();
    jpeg[sof + 5..sof + 7].copy_from_slice(&height.to_be_bytes());
    jpeg[sof + 7..sof + 9].copy_from_slice(&width.to_be_bytes());
    jpeg
}

#[test]
fn a_small_jpeg_claiming_a_huge_image_is_refused_before_allocating() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 16000 × 16000 is within the decoder's own per-side limit (16384):
    // without gulp's pixel limit it decoded to 768 MB of pixels.
    for (h, w) in [(16000, 16000), (8193, 8192), (65535, 65535)] {
        let jpeg = jpeg_claiming(h, w);
        let (result, peak) = peak_during(|| decode_jpeg(&jpeg, ColorMode::Auto));
        let err = result.unwrap_err();
        assert!(matches!(err, gulp_codec::Error::Decode { .. }), "{err}");
        // gulp's limit, or past 65500 per side libjpeg-turbo's own (16384
        // for zune-jpeg).
        let text = err.to_string();
        assert!(
            text.contains("limit") || text.contains("Maximum supported image dimension"),
            "{err}"
        );
        assert!(peak < 1 << 20, "{h}x{w}: {} KiB allocated", peak >> 10);
    }
    // At the limit's edge and below, frames decode (here: garbage pixels
    // from an 8×8 scan, but no error from the limit).
    let (image, _) = peak_during(|| decode_jpeg(&jpeg_claiming(8, 8), ColorMode::Auto));
    assert_eq!(image.unwrap().pixels.len(), 8 * 8 * 3);
    assert_eq!(MAX_DECODE_PIXELS, 8192 * 8192);
}

/// Reading every frame of every case of the bad-data corpus allocates little:
/// no record length or count from a file sizes an allocation.
#[test]
fn bad_chunks_allocate_little() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/bad");
    let mut checked = 0;
    for layer in ["chunk", "directory", "decode"] {
        for entry in std::fs::read_dir(corpus.join(layer)).unwrap() {
            let dir = entry.unwrap().path();
            for mode in [ReadMode::Mmap, ReadMode::Buffered] {
                let (_, peak) = peak_during(|| -> gulp_io::Result<()> {
                    let gulp = GulpDirectory::open_with(&dir, mode)?;
                    for index in 0..gulp.chunks().len() {
                        let reader = gulp.reader(index)?;
                        let ids: Vec<String> = reader.meta().ids().map(str::to_owned).collect();
                        for id in ids {
                            reader.frames(&id, &Selection::All)?;
                        }
                    }
                    Ok(())
                });
                assert!(peak < 1 << 20, "{}: {} KiB", dir.display(), peak >> 10);
                checked += 1;
            }
        }
    }
    assert!(checked > 40, "{checked}");
}
