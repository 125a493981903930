//! `gulp preview`: the contact sheet's tiles are the item's decoded frames,
//! resized as the command documents, in order; the GIF has one frame per
//! selected frame; bad requests fail with exit 2 and write nothing.
#![cfg(feature = "turbojpeg")]
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

mod common;

use std::path::Path;

use common::gulp;
use gulp_codec::{ColorMode, decode_jpeg};
use gulp_ingest::Pixels;
use gulp_test_support::gulp_dir::{GulpDirBuilder, gradient_jpeg, labelled};

/// The layout `gulp preview` documents (src/cmd/preview.rs).
const HEADER: u32 = 12;
const CAPTION: u32 = 10;
const COLUMNS: u32 = 8;

/// Frame `k` of the test item: 64×48, a different colour field each.
fn frame(k: usize) -> Vec<u8> {
    gradient_jpeg(64, 48, k)
}

fn item_dir(dir: &Path, frames: &[Vec<u8>]) {
    GulpDirBuilder::new(dir)
        .item("clip", labelled("pouring water"), frames.to_vec())
        .write();
}

/// A frame decoded and resized by its short edge to `tile`, as the command
/// does it.
fn expected_tile(jpeg: &[u8], tile: u32) -> Pixels {
    let image = decode_jpeg(jpeg, ColorMode::Rgb).unwrap();
    let px = Pixels {
        width: image.width as u32,
        height: image.height as u32,
        channels: 3,
        data: image.pixels,
    };
    let mut resizer = fast_image_resize::Resizer::new();
    gulp_ingest::frames::resize_short_edge(&px, Some(tile), &mut resizer)
        .unwrap()
        .unwrap()
}

#[test]
fn the_sheet_holds_the_frames_resized_and_the_gif_plays_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gulped");
    let frames: Vec<Vec<u8>> = (0..10).map(frame).collect();
    item_dir(&dir, &frames);
    let sheet = tmp.path().join("sheet.png");
    gulp()
        .args(["preview"])
        .arg(&dir)
        .args(["--id", "clip", "--select", "::-1", "--tile", "24", "--out"])
        .arg(&sheet)
        .assert()
        .code(0);
    let image = image::open(&sheet).unwrap().into_rgb8();
    // 10 frames, 8 per row: 2 rows of cells 32 wide (48 × 24/32... the short
    // edge 48 becomes 24, the width 32) and 24 + CAPTION high.
    let (cell_w, cell_h) = (32, 24 + CAPTION);
    assert_eq!(image.dimensions(), (COLUMNS * cell_w, HEADER + 2 * cell_h));
    // `::-1`: the first tile is the last frame.
    for (i, k) in (0u32..).zip((0..10).rev()) {
        let want = expected_tile(&frames[k], 24);
        assert_eq!((want.width, want.height), (32, 24));
        let (x0, y0) = (i % COLUMNS * cell_w, HEADER + i / COLUMNS * cell_h);
        for y in 0..want.height {
            for x in 0..want.width {
                let got = image.get_pixel(x0 + x, y0 + y).0;
                let at = ((y * want.width + x) * 3) as usize;
                assert_eq!(
                    got,
                    [want.data[at], want.data[at + 1], want.data[at + 2]],
                    "tile {i} (frame {k}) at ({x}, {y})"
                );
            }
        }
        // The caption strip holds the frame index in white.
        let caption = (0..CAPTION).flat_map(|y| (0..cell_w).map(move |x| (x, y)));
        assert!(
            caption
                .into_iter()
                .any(|(x, y)| image.get_pixel(x0 + x, y0 + 24 + y).0 == [255, 255, 255]),
            "tile {i}: no caption"
        );
    }
    // The header has text (id and label).
    assert!((0..HEADER).any(|y| (0..100).any(|x| image.get_pixel(x, y).0 == [255, 255, 255])));

    let gif = tmp.path().join("anim.gif");
    gulp()
        .args(["preview"])
        .arg(&dir)
        .args(["--id", "clip", "--select", "0:6", "--tile", "24", "--out"])
        .arg(&gif)
        .assert()
        .code(0);
    use image::AnimationDecoder;
    let decoder = image::codecs::gif::GifDecoder::new(std::io::BufReader::new(
        std::fs::File::open(&gif).unwrap(),
    ))
    .unwrap();
    let anim: Vec<image::Frame> = decoder.into_frames().collect_frames().unwrap();
    assert_eq!(anim.len(), 6);
    for (k, f) in anim.iter().enumerate() {
        assert_eq!(f.buffer().dimensions(), (32, 24));
        // GIF has a 256-colour palette: close to the tile, not equal (6.7–8.4
        // levels on average here).
        let want = expected_tile(&frames[k], 24);
        let diff: u64 = f
            .buffer()
            .pixels()
            .zip(want.data.chunks(3))
            .map(|(p, w)| {
                (0..3)
                    .map(|c| u64::from(p.0[c].abs_diff(w[c])))
                    .sum::<u64>()
            })
            .sum();
        let mean = diff as f64 / (32.0 * 24.0 * 3.0);
        assert!(mean < 12.0, "gif frame {k}: mean difference {mean}");
    }
}

#[test]
fn bad_requests_fail_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gulped");
    item_dir(&dir, &[frame(0)]);
    for (args, out) in [
        (vec!["--id", "nope"], "a.png"),
        (vec!["--id", "clip", "--frames", "5:"], "b.png"),
        (vec!["--id", "clip"], "c.webp"),
    ] {
        let path = tmp.path().join(out);
        gulp()
            .arg("preview")
            .arg(&dir)
            .args(&args)
            .arg("--out")
            .arg(&path)
            .assert()
            .code(2);
        assert!(!path.exists(), "{out}");
    }
}
