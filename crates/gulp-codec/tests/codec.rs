//! libjpeg-turbo decoding and encoding (the default build): DCT-domain
//! scaling, region decoding, decoding into a caller's buffer, strict and
//! lenient decoding of damaged frames, and agreement with the pure-Rust
//! codec. Frames are encoded by gulp itself, in the settings of gulpio2
//! (4:4:4) and of most videos (4:2:0), and gray.
#![cfg(feature = "turbojpeg")]
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use gulp_codec::{
    Codec, ColorMode, Crop, Dct, DecodeOptions, Image, JpegFrame, Scale, Shape, Subsampling,
    Upsampling, decode_jpeg_into, decode_jpeg_with, encode_jpeg, read_header, scaled,
};

/// A frame with what makes real ones hard: smooth gradients, hard edges
/// and noise. `channels` is 1 or 3.
fn picture(width: usize, height: usize, channels: usize, seed: u32) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    let mut noise = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (state % 32) as usize
    };
    let mut out = Vec::with_capacity(width * height * channels);
    for y in 0..height {
        for x in 0..width {
            let edge = if (x / 13 + y / 7) % 3 == 0 { 90 } else { 0 };
            for c in 0..channels {
                let base = (x * 255 / width.max(1)) * (c + 1) / 3 + y * 255 / height.max(1) / 2;
                out.push(((base + edge + noise()) % 256) as u8);
            }
        }
    }
    out
}

/// `(name, jpeg, width, height)` for every kind of frame the tests use.
fn frames() -> Vec<(String, Vec<u8>, usize, usize)> {
    let mut out = Vec::new();
    for &(w, h) in &[(320, 240), (100, 75), (17, 9), (8, 8)] {
        for (kind, channels, sub) in [
            ("444", 3, Subsampling::S444),
            ("420", 3, Subsampling::S420),
            ("gray", 1, Subsampling::S444),
        ] {
            let pixels = picture(w, h, channels, (w * h) as u32);
            let jpeg = encode_jpeg(&pixels, (w, h), channels, 90, sub).unwrap();
            out.push((format!("{w}x{h} {kind}"), jpeg, w, h));
        }
    }
    out
}

fn decode(jpeg: &[u8], options: &DecodeOptions) -> Image {
    decode_jpeg_with(jpeg, options).unwrap()
}

/// The `crop` window of `image`.
fn cut(image: &Image, crop: &Crop) -> Vec<u8> {
    let c = image.channels;
    let mut out = Vec::new();
    for row in crop.y..crop.y + crop.height {
        let start = (row * image.width + crop.x) * c;
        out.extend_from_slice(&image.pixels[start..start + crop.width * c]);
    }
    out
}

#[test]
fn headers_give_the_stored_size_and_colour() {
    for (name, jpeg, w, h) in frames() {
        for codec in [Codec::LibjpegTurbo, Codec::Zune] {
            let header = read_header(&jpeg, codec).unwrap();
            assert_eq!((header.width, header.height), (w, h), "{name} {codec:?}");
            assert_eq!(header.gray, name.ends_with("gray"), "{name} {codec:?}");
        }
    }
}

#[test]
fn every_scale_gives_the_size_libjpeg_turbo_computes() {
    for (name, jpeg, w, h) in frames() {
        let header = read_header(&jpeg, Codec::LibjpegTurbo).unwrap();
        for n in 1..=8u8 {
            let options = DecodeOptions {
                scale: Scale::Eighths(n),
                ..DecodeOptions::default()
            };
            let image = decode(&jpeg, &options);
            let (sw, sh) = scaled(w, h, n);
            assert_eq!((image.width, image.height), (sw, sh), "{name} {n}/8");
            assert_eq!(header.output_shape(&options).len(), image.pixels.len());
        }
        // Full size is 8/8, and exactly the default decoding.
        let full = decode(&jpeg, &DecodeOptions::default());
        let eight = decode(
            &jpeg,
            &DecodeOptions {
                scale: Scale::Eighths(8),
                ..DecodeOptions::default()
            },
        );
        assert_eq!(full, eight, "{name}");
    }
}

#[test]
fn scales_by_short_edge_and_least_size_pick_the_smallest_that_fits() {
    let pixels = picture(320, 240, 3, 1);
    let jpeg = encode_jpeg(&pixels, (320, 240), 3, 90, Subsampling::S444).unwrap();
    let size = |scale| {
        let image = decode(
            &jpeg,
            &DecodeOptions {
                scale,
                ..DecodeOptions::default()
            },
        );
        (image.width, image.height)
    };
    assert_eq!(size(Scale::ShortEdge(120)), (160, 120));
    assert_eq!(size(Scale::ShortEdge(121)), (200, 150));
    assert_eq!(size(Scale::ShortEdge(30)), (40, 30));
    assert_eq!(size(Scale::ShortEdge(1000)), (320, 240));
    assert_eq!(
        size(Scale::AtLeast {
            width: 81,
            height: 10
        }),
        (120, 90)
    );
    assert_eq!(Scale::parse("1/2"), Some(Scale::Eighths(4)));
    assert_eq!(Scale::parse("3/8"), Some(Scale::Eighths(3)));
    assert_eq!(Scale::parse("1"), Some(Scale::Eighths(8)));
    for bad in ["1/3", "0/8", "9/8", "2", "x", "1/0"] {
        assert_eq!(Scale::parse(bad), None, "{bad}");
    }
}

/// A region decodes to exactly the window of the whole frame decoded at the
/// same scale, wherever it starts (on an iMCU column or not), for every
/// subsampling, at full and half size.
#[test]
fn a_crop_is_the_window_of_the_whole_frame() {
    let mut checked = 0;
    for (name, jpeg, w, h) in frames() {
        for n in [8u8, 4, 3] {
            for upsampling in [Upsampling::Fast, Upsampling::Smooth] {
                let base = DecodeOptions {
                    scale: Scale::Eighths(n),
                    upsampling,
                    ..DecodeOptions::default()
                };
                let whole = decode(&jpeg, &base);
                let (sw, sh) = scaled(w, h, n);
                let mut crops = vec![
                    Crop {
                        x: 0,
                        y: 0,
                        width: sw,
                        height: sh,
                    },
                    Crop {
                        x: sw - 1,
                        y: sh - 1,
                        width: 1,
                        height: 1,
                    },
                ];
                for (x, y) in [(0, 0), (1, 2), (8, 3), (16, 16), (21, 5), (sw / 3, sh / 2)] {
                    let (cw, ch) = (sw / 2, sh / 2);
                    if cw > 0 && ch > 0 && x + cw <= sw && y + ch <= sh {
                        crops.push(Crop {
                            x,
                            y,
                            width: cw,
                            height: ch,
                        });
                    }
                }
                for crop in crops {
                    let options = DecodeOptions {
                        crop: Some(crop),
                        ..base
                    };
                    let part = decode(&jpeg, &options);
                    assert_eq!(
                        (part.width, part.height, part.channels),
                        (crop.width, crop.height, whole.channels),
                        "{name} {n}/8 {crop:?}"
                    );
                    assert!(
                        part.pixels == cut(&whole, &crop),
                        "{name} {n}/8 {upsampling:?} {crop:?}: region differs"
                    );
                    // The pure-Rust codec cuts the same window from its own
                    // full-size decoding.
                    if n == 8 {
                        let zune = DecodeOptions {
                            codec: Codec::Zune,
                            ..options
                        };
                        let z = decode(&jpeg, &zune);
                        let zw = decode(
                            &jpeg,
                            &DecodeOptions {
                                codec: Codec::Zune,
                                ..base
                            },
                        );
                        assert_eq!(z.pixels, cut(&zw, &crop), "{name} zune {crop:?}");
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 300, "{checked}");
}

#[test]
fn a_crop_outside_the_scaled_frame_is_refused() {
    let pixels = picture(100, 75, 3, 3);
    let jpeg = encode_jpeg(&pixels, (100, 75), 3, 90, Subsampling::S444).unwrap();
    for (scale, crop) in [
        (Scale::Full, (90, 0, 11, 10)),
        (Scale::Full, (0, 70, 10, 6)),
        (Scale::Eighths(4), (0, 0, 51, 10)),
        (Scale::Full, (0, 0, 0, 10)),
    ] {
        for codec in [Codec::LibjpegTurbo, Codec::Zune] {
            let options = DecodeOptions {
                codec,
                scale,
                crop: Some(Crop {
                    x: crop.0,
                    y: crop.1,
                    width: crop.2,
                    height: crop.3,
                }),
                ..DecodeOptions::default()
            };
            if codec == Codec::Zune && scale != Scale::Full {
                continue;
            }
            let err = decode_jpeg_with(&jpeg, &options).unwrap_err();
            assert!(matches!(err, gulp_codec::Error::Decode { .. }), "{err}");
            assert!(err.to_string().contains("crop"), "{err}");
        }
    }
    // zune-jpeg has no DCT-domain scaling, and says so.
    let err = decode_jpeg_with(
        &jpeg,
        &DecodeOptions {
            codec: Codec::Zune,
            scale: Scale::Eighths(4),
            ..DecodeOptions::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("libjpeg-turbo"), "{err}");
}

#[test]
fn decoding_into_a_buffer_writes_its_start_and_refuses_a_short_one() {
    let (_, jpeg, w, h) = frames().swap_remove(0);
    let options = DecodeOptions::default();
    let whole = decode(&jpeg, &options);
    let mut big = vec![7u8; w * h * 3 + 100];
    let shape = decode_jpeg_into(&jpeg, &options, &mut big).unwrap();
    assert_eq!(
        shape,
        Shape {
            height: h,
            width: w,
            channels: 3
        }
    );
    assert_eq!(&big[..shape.len()], &whole.pixels[..]);
    assert!(
        big[shape.len()..].iter().all(|&b| b == 7),
        "wrote past the frame"
    );
    for codec in [Codec::LibjpegTurbo, Codec::Zune] {
        let mut short = vec![0u8; w * h * 3 - 1];
        let err =
            decode_jpeg_into(&jpeg, &DecodeOptions { codec, ..options }, &mut short).unwrap_err();
        assert!(matches!(err, gulp_codec::Error::Decode { .. }), "{err}");
    }
}

#[test]
fn colour_modes_convert_as_asked() {
    for (name, jpeg, w, h) in frames() {
        for codec in [Codec::LibjpegTurbo, Codec::Zune] {
            let with = |color| {
                decode(
                    &jpeg,
                    &DecodeOptions {
                        codec,
                        color,
                        ..DecodeOptions::default()
                    },
                )
            };
            let auto = with(ColorMode::Auto);
            let want = if name.ends_with("gray") { 1 } else { 3 };
            assert_eq!(auto.channels, want, "{name}");
            assert_eq!(auto.pixels.len(), w * h * want);
            assert_eq!(with(ColorMode::Rgb).channels, 3, "{name}");
            assert_eq!(with(ColorMode::Gray).channels, 1, "{name}");
            if want == 1 {
                // Gray to RGB repeats the sample.
                let rgb = with(ColorMode::Rgb);
                assert!(
                    rgb.pixels
                        .chunks(3)
                        .zip(&auto.pixels)
                        .all(|(p, &g)| p == [g, g, g]),
                    "{name} {codec:?}"
                );
            }
        }
    }
}

/// The two codecs see the same picture: libjpeg-turbo's fast settings and
/// zune-jpeg's own (it has one IDCT and one upsampler) differ by about one
/// level on average, more on noisy 4:2:0 chroma, where the upsampling
/// methods disagree most (see fixtures.rs).
#[test]
fn libjpeg_turbo_and_zune_jpeg_agree() {
    for (name, jpeg, _, _) in frames() {
        let turbo = decode(&jpeg, &DecodeOptions::default());
        let zune = decode(
            &jpeg,
            &DecodeOptions {
                codec: Codec::Zune,
                ..DecodeOptions::default()
            },
        );
        assert_eq!(zune.pixels.len(), turbo.pixels.len(), "{name}");
        let mean = turbo
            .pixels
            .iter()
            .zip(&zune.pixels)
            .map(|(a, b)| f64::from(a.abs_diff(*b)))
            .sum::<f64>()
            / turbo.pixels.len() as f64;
        let bound = if name.ends_with("420") { 16.0 } else { 2.0 };
        assert!(mean < bound, "{name}: mean difference {mean}");
        // Accurate DCT and smooth upsampling change the pixels only a little.
        let accurate = decode(
            &jpeg,
            &DecodeOptions {
                dct: Dct::Accurate,
                upsampling: Upsampling::Smooth,
                ..DecodeOptions::default()
            },
        );
        let mean = turbo
            .pixels
            .iter()
            .zip(&accurate.pixels)
            .map(|(a, b)| f64::from(a.abs_diff(*b)))
            .sum::<f64>()
            / turbo.pixels.len() as f64;
        let bound = if name.ends_with("420") { 16.0 } else { 2.0 };
        assert!(
            mean < bound,
            "{name}: accurate differs by {mean} on average"
        );
    }
}

/// A frame cut short: strict decoding (the default, as gulpio2) refuses it
/// with libjpeg-turbo's warning as the reason; lenient decoding returns the
/// decoder's best image, of the full size.
#[test]
fn strict_decoding_refuses_a_truncated_frame_lenient_decoding_does_not() {
    let pixels = picture(320, 240, 3, 9);
    let jpeg = encode_jpeg(&pixels, (320, 240), 3, 90, Subsampling::S420).unwrap();
    let good = decode(&jpeg, &DecodeOptions::default());
    let short = &jpeg[..jpeg.len() * 2 / 3];
    let err = decode_jpeg_with(short, &DecodeOptions::default()).unwrap_err();
    assert!(matches!(err, gulp_codec::Error::Decode { .. }), "{err}");
    assert!(err.to_string().contains("Premature end"), "{err}");
    let lenient = DecodeOptions {
        strict: false,
        ..DecodeOptions::default()
    };
    let best = decode(short, &lenient);
    assert_eq!((best.width, best.height), (320, 240));
    // The top of the frame is intact.
    let top = 320 * 3 * 64;
    assert_eq!(best.pixels[..top], good.pixels[..top]);
    // And the next good frame decodes as before: the failed decoding left
    // nothing behind.
    assert_eq!(decode(&jpeg, &DecodeOptions::default()), good);
}

/// A stream without a frame header (a tables-only JPEG, one cut before its
/// SOF, a lone byte) is refused, strict or not, even right after another
/// frame decoded on the same thread: libjpeg-turbo's header read succeeds on
/// such streams and would leave the previous frame's size behind.
#[test]
fn a_stream_without_a_frame_header_never_takes_the_previous_size() {
    let pixels = picture(24, 16, 3, 5);
    let jpeg = encode_jpeg(&pixels, (24, 16), 3, 90, Subsampling::S444).unwrap();
    let sof = jpeg.windows(2).position(|w| w == [0xff, 0xc0]).unwrap();
    let mut tables_only = jpeg[..sof].to_vec();
    tables_only.extend_from_slice(&[0xff, 0xd9]);
    let cut_in_sof = jpeg[..sof + 6].to_vec();
    for bad in [
        &tables_only[..],
        &cut_in_sof[..],
        &[0xff][..],
        &[0xff, 0xd8][..],
    ] {
        for strict in [true, false] {
            for codec in [Codec::LibjpegTurbo, Codec::Zune] {
                let options = DecodeOptions {
                    codec,
                    strict,
                    ..DecodeOptions::default()
                };
                decode(&jpeg, &options);
                assert!(read_header(bad, codec).is_err(), "{codec:?} {bad:02x?}");
                let err = decode_jpeg_with(bad, &options).unwrap_err();
                assert!(matches!(err, gulp_codec::Error::Decode { .. }), "{err}");
            }
        }
    }
}

/// Lenient decoding of a damaged frame writes every byte of the output
/// (black where the decoder produced nothing), whatever the buffer held.
#[test]
fn lenient_decoding_writes_the_whole_output() {
    let pixels = picture(64, 48, 3, 6);
    for sub in [Subsampling::S444, Subsampling::S420] {
        let jpeg = encode_jpeg(&pixels, (64, 48), 3, 90, sub).unwrap();
        for cut in [jpeg.len() / 3, jpeg.len() / 2, jpeg.len() - 40] {
            let short = &jpeg[..cut];
            for codec in [Codec::LibjpegTurbo, Codec::Zune] {
                let options = DecodeOptions {
                    codec,
                    strict: false,
                    ..DecodeOptions::default()
                };
                let Ok(first) = decode_jpeg_with(short, &options) else {
                    continue;
                };
                let mut buf = vec![0xa5u8; first.pixels.len()];
                decode_jpeg_into(short, &options, &mut buf).unwrap();
                assert!(buf == first.pixels, "{codec:?} {sub:?} cut at {cut}");
            }
        }
    }
}

/// A `JpegFrame` (header read once, then decoded on the same handle, any
/// number of times) gives what `decode_jpeg_into` gives, for every kind of
/// frame, scale and crop, and a damaged one fails the same way each time.
#[test]
fn a_frame_opened_once_decodes_as_the_one_call_api() {
    for (name, jpeg, _, _) in frames() {
        for codec in [Codec::LibjpegTurbo, Codec::Zune] {
            let mut frame = JpegFrame::new(&jpeg, codec).unwrap();
            assert_eq!(*frame.header(), read_header(&jpeg, codec).unwrap());
            let scales: &[Scale] = if codec == Codec::Zune {
                &[Scale::Full]
            } else {
                &[Scale::Full, Scale::Eighths(4), Scale::ShortEdge(5)]
            };
            for &scale in scales {
                let (sw, sh) = frame.header().scaled_size(&DecodeOptions {
                    codec,
                    scale,
                    ..DecodeOptions::default()
                });
                for crop in [
                    None,
                    Some(Crop {
                        x: sw / 3,
                        y: sh / 4,
                        width: sw - sw / 3,
                        height: (sh / 2).max(1),
                    }),
                ] {
                    let options = DecodeOptions {
                        codec,
                        scale,
                        crop,
                        ..DecodeOptions::default()
                    };
                    let want = decode(&jpeg, &options);
                    for _ in 0..2 {
                        let mut out = vec![9u8; want.pixels.len()];
                        let shape = frame.decode_into(&options, &mut out).unwrap();
                        assert_eq!(shape.len(), out.len());
                        assert!(out == want.pixels, "{name} {codec:?} {scale:?} {crop:?}");
                    }
                }
            }
        }
    }
    let pixels = picture(64, 48, 3, 8);
    let jpeg = encode_jpeg(&pixels, (64, 48), 3, 90, Subsampling::S420).unwrap();
    let short = &jpeg[..jpeg.len() / 2];
    let mut frame = JpegFrame::new(short, Codec::LibjpegTurbo).unwrap();
    let mut out = vec![0u8; 64 * 48 * 3];
    for _ in 0..2 {
        let err = frame
            .decode_into(&DecodeOptions::default(), &mut out)
            .unwrap_err();
        assert!(err.to_string().contains("Premature end"), "{err}");
    }
}
