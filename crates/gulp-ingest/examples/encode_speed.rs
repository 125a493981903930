//! Times JPEG encoding and resizing of one decoded frame (a quick look; the
//! figures in docs/benchmarks.md come from the ingest comparison).
#![allow(clippy::unwrap_used)]
use std::time::Instant;

use gulp_ingest::frames::{decode_image, encode_jpeg, resize_short_edge};

fn main() {
    let path = std::env::args().nth(1).expect("usage: encode_speed IMAGE");
    let px = decode_image(&std::fs::read(path).unwrap()).unwrap();
    let n = 50;
    let t = Instant::now();
    let mut bytes = 0;
    for _ in 0..n {
        bytes = encode_jpeg(&px, 90).unwrap().len();
    }
    let enc = t.elapsed().as_secs_f64() / f64::from(n);
    let mut resizer = fast_image_resize::Resizer::new();
    let t = Instant::now();
    for _ in 0..n {
        resize_short_edge(&px, Some(256), &mut resizer).unwrap();
    }
    let res = t.elapsed().as_secs_f64() / f64::from(n);
    println!(
        "{}x{}: encode q90 {:.2} ms ({bytes} B), resize to 256 {:.2} ms",
        px.width,
        px.height,
        enc * 1e3,
        res * 1e3
    );
}
