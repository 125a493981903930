//! Damaged frames in a real chunk: every truncation of a frame, bit flips
//! all over it, zeroed and shuffled scan data. Reading them through a
//! `ChunkReader` never panics, a failure is a decoding error that names the
//! data file, the id, the frame and the record's byte offset, and the good
//! frames around a damaged one decode to exactly their pixels (a failed
//! decoding leaves nothing behind in the thread's decoder).
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::path::Path;

use gulp_codec::{Codec, DecodeOptions, decode_jpeg_with};
use gulp_format::Value;
use gulp_io::{ChunkReader, ChunkWriter, ErrorKind, ReadMode};

/// Real frames: the committed test JPEGs, and in the default build frames
/// encoded by gulp as gulpio2 writes them (4:4:4) and as videos are (4:2:0).
fn originals() -> Vec<(&'static str, Vec<u8>)> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    #[cfg_attr(not(feature = "turbojpeg"), allow(unused_mut))]
    let mut out = vec![
        (
            "noise-24x16",
            std::fs::read(data.join("noise-24x16.jpg")).unwrap(),
        ),
        (
            "black-gray-8x8",
            std::fs::read(data.join("black-gray-8x8.jpg")).unwrap(),
        ),
    ];
    #[cfg(feature = "turbojpeg")]
    {
        use gulp_codec::{Subsampling, encode_jpeg};
        let (w, h) = (64, 40);
        let pixels: Vec<u8> = (0..w * h * 3)
            .map(|i| ((i * 7 + (i / 191) * 13) % 251) as u8)
            .collect();
        out.push((
            "64x40-444",
            encode_jpeg(&pixels, (w, h), 3, 90, Subsampling::S444).unwrap(),
        ));
        out.push((
            "64x40-420",
            encode_jpeg(&pixels, (w, h), 3, 90, Subsampling::S420).unwrap(),
        ));
    }
    out
}

/// Where the entropy-coded data starts: after the SOS segment.
fn scan_start(jpeg: &[u8]) -> usize {
    let sos = jpeg.windows(2).position(|w| w == [0xff, 0xda]).unwrap();
    sos + 2 + usize::from(u16::from_be_bytes([jpeg[sos + 2], jpeg[sos + 3]]))
}

/// `(what, frame)` for the damage done to `jpeg`.
fn mutants(jpeg: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let n = jpeg.len();
    let step = (n / 97).max(1);
    for cut in (0..n - 1).step_by(step).chain([n - 2, n - 1]) {
        out.push((format!("cut at {cut}"), jpeg[..cut].to_vec()));
    }
    let mut state = n as u64 | 1;
    for k in 0..200 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let at = (state >> 33) as usize % n;
        let bit = (state >> 20) % 8;
        let mut m = jpeg.to_vec();
        m[at] ^= 1 << bit;
        out.push((format!("flip {k}: bit {bit} of byte {at}"), m));
    }
    let scan = scan_start(jpeg);
    let mut zeroed = jpeg.to_vec();
    zeroed[scan..n - 2].fill(0);
    out.push(("scan zeroed".into(), zeroed));
    let mut ones = jpeg.to_vec();
    ones[scan..n - 2].fill(0xff);
    out.push(("scan all 0xff".into(), ones));
    let mut reversed = jpeg.to_vec();
    reversed[scan..n - 2].reverse();
    out.push(("scan reversed".into(), reversed));
    let mut doubled = jpeg[..n - 2].to_vec();
    doubled.extend_from_slice(&jpeg[scan..]);
    out.push(("scan twice".into(), doubled));
    out
}

fn codecs() -> Vec<Codec> {
    if cfg!(feature = "turbojpeg") {
        vec![Codec::LibjpegTurbo, Codec::Zune]
    } else {
        vec![Codec::Zune]
    }
}

#[test]
fn damaged_frames_fail_with_their_place_and_spare_their_neighbours() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut items = Vec::new();
    let mut writer = ChunkWriter::builder().fsync(false).create(dir, 0).unwrap();
    for (name, jpeg) in originals() {
        for (what, bad) in mutants(&jpeg) {
            let id = format!("{name} {what}");
            writer
                .append(&id, Value::Null, [&jpeg, &bad, &jpeg])
                .unwrap();
            items.push((id, jpeg.clone(), what));
        }
    }
    writer.finish().unwrap();
    let data = dir.join("data_0.gulp");
    let mut failed = 0;
    let mut truncations_refused = 0;
    for mode in [ReadMode::Mmap, ReadMode::Buffered] {
        let reader = ChunkReader::open(dir, 0, mode).unwrap();
        for codec in codecs() {
            let options = DecodeOptions {
                codec,
                ..DecodeOptions::default()
            };
            let mut buf = vec![0u8; 1 << 20];
            for (id, good, what) in &items {
                let want = decode_jpeg_with(good, &options).unwrap();
                let loc = reader.item(id).unwrap().frame_info[1].loc;
                let shape = reader.decode_frame_into(id, 0, &options, &mut buf).unwrap();
                assert_eq!(&buf[..shape.len()], &want.pixels[..], "{id} frame 0");
                match reader.decode_frame_into(id, 1, &options, &mut buf) {
                    Ok(shape) => assert!(shape.len() <= buf.len()),
                    Err(e) => {
                        failed += 1;
                        if what.starts_with("cut") {
                            truncations_refused += 1;
                        }
                        assert!(matches!(e.kind(), ErrorKind::Decode { .. }), "{id}: {e}");
                        let text = e.to_string();
                        let place = format!(
                            "{}: id {id:?} frame 1 (record at byte {loc})",
                            data.display()
                        );
                        assert!(text.contains(&place), "{codec:?} {id}: {text}");
                    }
                }
                let shape = reader.decode_frame_into(id, 2, &options, &mut buf).unwrap();
                assert_eq!(
                    &buf[..shape.len()],
                    &want.pixels[..],
                    "{codec:?} {id} frame 2"
                );
            }
            // Strict decoding, as gulpio2's: libjpeg-turbo refuses every
            // truncated frame ("premature end of data"), not only those cut
            // in their header.
            if codec == Codec::LibjpegTurbo {
                let cuts = items
                    .iter()
                    .filter(|(_, _, w)| w.starts_with("cut"))
                    .count();
                assert_eq!(truncations_refused, cuts, "{mode:?}");
            }
            truncations_refused = 0;
        }
    }
    assert!(failed > 500, "only {failed} damaged frames failed");
}
