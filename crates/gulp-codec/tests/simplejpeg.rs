//! gulp encodes a frame to the very bytes gulpio2 writes (its
//! `img_to_jpeg_bytes`: simplejpeg, quality 90, 4:4:4, which is libjpeg-turbo's
//! fast DCT: see `set_compress_params` in src/ffi.rs), and
//! decodes gulpio2's JPEGs to the very pixels gulpio2 reads
//! (`jpeg_bytes_to_img`: fast DCT, fast upsampling). Runs gulpio2 from the
//! compatibility venv (`GULP_PYTHON`, set by scripts/test.sh).
#![cfg(feature = "turbojpeg")]
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::path::PathBuf;
use std::process::Command;

use gulp_codec::{Subsampling, decode_jpeg, encode_jpeg};

const SCRIPT: &str = r#"
import sys, numpy as np
from gulpio2.utils import img_to_jpeg_bytes, jpeg_bytes_to_img
folder = sys.argv[1]
for line in open(folder + "/list.txt"):
    name, h, w, c = line.split()
    h, w, c = int(h), int(w), int(c)
    raw = np.fromfile(folder + "/" + name + ".raw", dtype=np.uint8)
    img = raw.reshape((h, w) if c == 1 else (h, w, c))
    jpeg = img_to_jpeg_bytes(img)
    open(folder + "/" + name + ".jpg", "wb").write(jpeg)
    jpeg_bytes_to_img(jpeg).tofile(folder + "/" + name + ".decoded")
"#;

fn python() -> Option<PathBuf> {
    std::env::var_os("GULP_PYTHON")
        .map(PathBuf::from)
        .filter(|p| p.exists())
}

/// `(name, width, height, channels, pixels)`: noise, gradients, flat
/// frames, odd sizes and a frame of real proportions.
fn arrays() -> Vec<(String, usize, usize, usize, Vec<u8>)> {
    let mut out = Vec::new();
    let mut state = 0x9e37_79b9_u32;
    let mut noise = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state as u8
    };
    for &(w, h) in &[(1, 1), (7, 5), (17, 9), (64, 48), (176, 100), (427, 240)] {
        for c in [1, 3] {
            let n = w * h * c;
            let kinds: [(&str, Vec<u8>); 3] = [
                ("noise", (0..n).map(|_| noise()).collect()),
                (
                    "gradient",
                    (0..n)
                        .map(|i| {
                            let (x, y) = ((i / c) % w, (i / c) / w);
                            ((x * 255 / w + y * 3 + (i % c) * 40) % 256) as u8
                        })
                        .collect(),
                ),
                ("flat", vec![200; n]),
            ];
            for (kind, pixels) in kinds {
                out.push((format!("{kind}-{w}x{h}x{c}"), w, h, c, pixels));
            }
        }
    }
    out
}

#[test]
fn frames_encode_to_gulpio2s_bytes_and_decode_to_its_pixels() {
    let Some(python) = python() else {
        eprintln!("GULP_PYTHON is not set: no gulpio2 to compare with (scripts/test.sh sets it)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let arrays = arrays();
    let mut list = String::new();
    for (name, w, h, c, pixels) in &arrays {
        std::fs::write(dir.join(format!("{name}.raw")), pixels).unwrap();
        list.push_str(&format!("{name} {h} {w} {c}\n"));
    }
    std::fs::write(dir.join("list.txt"), list).unwrap();
    let out = Command::new(python)
        .args(["-c", SCRIPT])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gulpio2: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, w, h, c, pixels) in &arrays {
        let theirs = std::fs::read(dir.join(format!("{name}.jpg"))).unwrap();
        let ours = encode_jpeg(pixels, (*w, *h), *c, 90, Subsampling::S444).unwrap();
        assert!(
            ours == theirs,
            "{name}: {} bytes from gulp, {} from gulpio2",
            ours.len(),
            theirs.len()
        );
        let decoded = std::fs::read(dir.join(format!("{name}.decoded"))).unwrap();
        let image = decode_jpeg(&theirs, gulp_codec::ColorMode::Auto).unwrap();
        assert_eq!((image.width, image.height, image.channels), (*w, *h, *c));
        assert!(image.pixels == decoded, "{name}: decoded pixels differ");
    }
    assert_eq!(arrays.len(), 36);
}
