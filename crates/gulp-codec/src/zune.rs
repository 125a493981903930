//! Decoding with zune-jpeg, the pure-Rust codec (`Codec::Zune`).

use super::*;

fn options(color: ColorSpace, strict: bool) -> DecoderOptions {
    DecoderOptions::default()
        .jpeg_set_out_colorspace(color)
        .set_strict_mode(strict)
}

/// Runs zune-jpeg, turning a panic inside it (seen on hostile frames in
/// lenient mode) into a decoding error.
fn guarded<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(fail("zune-jpeg failed on this frame (internal panic)")))
}

pub(super) fn header(jpeg: &[u8]) -> Result<JpegHeader> {
    guarded(|| {
        let mut probe = ZuneJpeg::new(ZCursor::new(jpeg));
        probe.decode_headers().map_err(|e| fail(format!("{e:?}")))?;
        let (width, height) = probe.dimensions().ok_or_else(|| fail("no image header"))?;
        Ok(JpegHeader {
            width,
            height,
            gray: matches!(probe.input_colorspace(), Some(ColorSpace::Luma)),
        })
    })
}

pub(super) fn decode_into(jpeg: &[u8], options: &DecodeOptions, out: &mut [u8]) -> Result<Shape> {
    if !matches!(options.scale, Scale::Full | Scale::Eighths(8)) {
        return Err(fail(
            "DCT-domain scaling needs libjpeg-turbo; zune-jpeg decodes at full size",
        ));
    }
    let head = header(jpeg)?;
    check_size(head.width, head.height)?;
    let shape = head.output_shape(options);
    check_out(out, &shape)?;
    let color = if shape.channels == 1 {
        ColorSpace::Luma
    } else {
        ColorSpace::RGB
    };
    let full = Shape {
        height: head.height,
        width: head.width,
        channels: shape.channels,
    };
    let decode = |dst: &mut [u8]| -> Result<()> {
        // zune-jpeg may report success on a damaged frame (lenient, and
        // even strict) with part of the output unwritten: it is then
        // black, not what the buffer held before.
        dst.fill(0);
        guarded(|| {
            let mut decoder =
                ZuneJpeg::new_with_options(ZCursor::new(jpeg), options_for(color, options));
            decoder
                .decode_into(dst)
                .map_err(|e| fail(format!("{e:?}")))?;
            let info = decoder.info().ok_or_else(|| fail("no image header"))?;
            if (usize::from(info.width), usize::from(info.height)) != (full.width, full.height) {
                return Err(fail("the image size changed while decoding"));
            }
            Ok(())
        })
    };
    match options.crop {
        None => decode(&mut out[..full.len()])?,
        Some(crop) => {
            check_crop(&crop, (full.width, full.height))?;
            with_scratch(full.len(), |scratch| -> Result<()> {
                decode(scratch)?;
                copy_crop(scratch, full.width, full.channels, &crop, out);
                Ok(())
            })?;
        }
    }
    Ok(shape)
}

fn options_for(color: ColorSpace, o: &DecodeOptions) -> DecoderOptions {
    options(color, o.strict)
        .set_max_width(usize::from(u16::MAX))
        .set_max_height(usize::from(u16::MAX))
}
