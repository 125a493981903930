//! `gulp preview`: an item's frames as one contact sheet (PNG) or an
//! animation (GIF), to look at gulped data before training on it.
//!
//! Layout of the sheet (what the test relies on): every frame is decoded to
//! RGB and resized by its short edge to `--tile` pixels with gulp's resizer
//! (Pillow's bilinear, as ingest resizes); cells are as wide and as high as
//! the largest tile, plus a [`CAPTION`]-pixel strip under each tile with the
//! frame index; [`COLUMNS`] cells per row; a [`HEADER`]-pixel strip on top
//! with the id and the label. Tile `i` has its top-left corner at
//! `(i % COLUMNS * cell_width, HEADER + i / COLUMNS * cell_height)`.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use gulp_codec::{ColorMode, DecodeOptions, decode_jpeg_with};
use gulp_format::Value;
use gulp_ingest::Pixels;
use gulp_io::Selection;
use image::{Rgb, RgbImage};

use crate::Outcome;
use crate::cli::PreviewArgs;

/// Height of the strip with the id and the label, in pixels.
pub(super) const HEADER: u32 = 12;
/// Height of the strip with the frame index under each tile, in pixels.
pub(super) const CAPTION: u32 = 10;
/// Cells per row of the contact sheet.
pub(super) const COLUMNS: u32 = 8;
/// Frame time of the animation: 8 frames per second, gulpio2's default rate.
const FRAME_MS: u32 = 125;

pub(super) fn run(args: &PreviewArgs) -> Result<Outcome> {
    let text = super::selection(&args.select, &args.frames);
    let selection = Selection::parse(&text)?;
    let gulp = super::open_dir(&args.dir)?;
    let id = &args.id;
    let reader = gulp.reader_for(id)?;
    let indices = super::frame_indices(reader, id, &selection)?;
    if indices.is_empty() {
        bail!("id {id:?}: the selection {text:?} has no frames");
    }
    let label = label_of(gulp.meta_data(id)?);
    let options = DecodeOptions {
        color: ColorMode::Rgb,
        ..DecodeOptions::default()
    };
    let mut resizer = fast_image_resize::Resizer::new();
    let mut tiles = Vec::with_capacity(indices.len());
    for &k in &indices {
        let jpeg = reader.frame(id, k)?;
        let image = decode_jpeg_with(&jpeg, &options)
            .with_context(|| format!("id {id:?} frame {k} in {}", reader.data_path().display()))?;
        tiles.push((k, tile(image, args.tile, &mut resizer)?));
    }
    let ext = args
        .out
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("png") => sheet(&tiles, id, label.as_deref())
            .save(&args.out)
            .with_context(|| format!("writing {}", args.out.display()))?,
        Some("gif") => animation(&tiles, &args.out)?,
        _ => bail!(
            "{}: the output must end in .png (a contact sheet) or .gif (an animation)",
            args.out.display()
        ),
    }
    let mut out = super::stdout();
    writeln!(
        out,
        "{}: {} frames of id {id:?}",
        args.out.display(),
        tiles.len()
    )?;
    out.flush()?;
    Ok(Outcome::Success)
}

/// The item's label: `label` (or `template`) of its first `meta_data` map,
/// as the adapters write it.
fn label_of(meta: &Value) -> Option<String> {
    ["label", "template"].iter().find_map(|key| {
        meta.get(key).map(|v| match v.as_str() {
            Some(s) => s.to_owned(),
            None => gulp_format::JsonSerializer::value_to_string(v),
        })
    })
}

/// One frame resized by its short edge to `size` (gulp's ingest resizer).
pub(super) fn tile(
    image: gulp_codec::Image,
    size: u32,
    resizer: &mut fast_image_resize::Resizer,
) -> Result<RgbImage> {
    let px = Pixels {
        width: u32::try_from(image.width)?,
        height: u32::try_from(image.height)?,
        channels: 3,
        data: image.pixels,
    };
    let px = gulp_ingest::frames::resize_short_edge(&px, Some(size), resizer)
        .map_err(anyhow::Error::msg)?
        .unwrap_or(px);
    RgbImage::from_raw(px.width, px.height, px.data).context("resized frame of the wrong size")
}

fn sheet(tiles: &[(usize, RgbImage)], id: &str, label: Option<&str>) -> RgbImage {
    let cell_w = tiles.iter().map(|(_, t)| t.width()).max().unwrap_or(1);
    let cell_h = tiles.iter().map(|(_, t)| t.height()).max().unwrap_or(1) + CAPTION;
    let n = u32::try_from(tiles.len()).unwrap_or(u32::MAX);
    let cols = n.min(COLUMNS);
    let rows = n.div_ceil(COLUMNS);
    let mut sheet = RgbImage::new(cols * cell_w, HEADER + rows * cell_h);
    let title = match label {
        Some(label) => format!("{id}: {label}"),
        None => id.to_owned(),
    };
    draw_text(&mut sheet, 2, 2, &title);
    for (i, (k, tile)) in (0u32..).zip(tiles) {
        let (x, y) = (i % COLUMNS * cell_w, HEADER + i / COLUMNS * cell_h);
        image::imageops::replace(&mut sheet, tile, i64::from(x), i64::from(y));
        draw_text(&mut sheet, x + 1, y + tile.height() + 1, &k.to_string());
    }
    sheet
}

/// Writes `text` in 8×8 glyphs (font8x8), white, clipped to the image.
fn draw_text(image: &mut RgbImage, x: u32, y: u32, text: &str) {
    use font8x8::UnicodeFonts;
    for (i, c) in (0u32..).zip(text.chars()) {
        let glyph = font8x8::BASIC_FONTS
            .get(c)
            .or_else(|| font8x8::BASIC_FONTS.get('?'))
            .unwrap_or([0; 8]);
        for (row, bits) in (0u32..).zip(glyph) {
            for col in 0..8 {
                if bits & (1 << col) != 0 {
                    let (px, py) = (x + i * 8 + col, y + row);
                    if px < image.width() && py < image.height() {
                        image.put_pixel(px, py, Rgb([255, 255, 255]));
                    }
                }
            }
        }
    }
}

fn animation(tiles: &[(usize, RgbImage)], out: &Path) -> Result<()> {
    use image::codecs::gif::{GifEncoder, Repeat};
    use image::{Delay, DynamicImage, Frame};
    let file = std::fs::File::create(out).with_context(|| format!("writing {}", out.display()))?;
    let mut encoder = GifEncoder::new_with_speed(std::io::BufWriter::new(file), 1);
    encoder.set_repeat(Repeat::Infinite)?;
    for (_, tile) in tiles {
        let rgba = DynamicImage::ImageRgb8(tile.clone()).into_rgba8();
        let frame = Frame::from_parts(rgba, 0, 0, Delay::from_numer_denom_ms(FRAME_MS, 1));
        encoder
            .encode_frame(frame)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(())
}
