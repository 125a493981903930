//! Synthetic gulp directories for gulp-io's `read` bench and its
//! `make_bench_dir` example: items shaped like Something-Something's, frames
//! that are real JPEG bytes.

use std::borrow::Cow;
use std::path::Path;
use std::time::Instant;

use gulp_io::ChunkWriter;
use gulp_io::gulp_format::{Map, MetaFormat, Value};

/// Errors of the helpers.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A 176x100 photo-like JPEG (quality 90, 4:4:4, as gulpio2's writer makes
/// them): the frame size of Something-Something v1 and Jester.
/// Made by `scripts/bench/bench_gulpio2_io.py make-jpeg`.
pub const PHOTO_JPEG: &[u8] = include_bytes!("../../gulp-io/benches/data/photo-176x100.jpg");

/// Width and height of [`PHOTO_JPEG`].
pub const PHOTO_SIZE: (usize, usize) = (176, 100);

/// A tiny real JPEG (24x16), for directories where only the meta matters.
pub const TINY_JPEG: &[u8] = include_bytes!("../../gulp-io/tests/data/noise-24x16.jpg");

/// The shape of a directory to make.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Number of items.
    pub items: usize,
    /// Number of chunks (items are spread evenly, in order).
    pub chunks: usize,
    /// Frames per item.
    pub frames_per_item: usize,
    /// Meta file format.
    pub format: MetaFormat,
}

/// What was written.
#[derive(Debug, Clone, Copy, Default)]
pub struct Written {
    /// Items written.
    pub items: usize,
    /// Frames written.
    pub frames: usize,
    /// Bytes of data files.
    pub data_bytes: u64,
    /// Bytes of meta files.
    pub meta_bytes: u64,
    /// Seconds it took.
    pub seconds: f64,
}

const TEMPLATES: [(&str, usize); 8] = [
    ("Putting [something] on [something]", 2),
    ("Pushing [something] from left to right", 1),
    ("Moving [something] and [something] closer to each other", 2),
    ("Taking [something] out of [something]", 2),
    ("Turning [something] upside down", 1),
    ("Holding [something] next to [something]", 2),
    ("Tearing [something] into two pieces", 1),
    ("Pretending to pick [something] up", 1),
];

const THINGS: [&str; 12] = [
    "a pen",
    "a coffee mug",
    "the remote control",
    "a book",
    "a plastic bottle",
    "a phone",
    "a piece of paper",
    "the table",
    "a box",
    "a spoon",
    "a shoe",
    "a towel",
];

/// The id of item `i`: Something-Something's ids are decimal integers.
pub fn item_id(i: usize) -> String {
    (i + 1).to_string()
}

/// The `meta_data` of item `i`, shaped like a Something-Something v2 label
/// entry: `{"id", "label", "template", "placeholders"}`.
pub fn item_meta(i: usize) -> Value {
    let (template, slots) = TEMPLATES[i % TEMPLATES.len()];
    let placeholders: Vec<&str> = (0..slots)
        .map(|k| THINGS[(i / TEMPLATES.len() + 5 * k) % THINGS.len()])
        .collect();
    let mut label = template.to_owned();
    for p in &placeholders {
        label = label.replacen("[something]", p, 1);
    }
    let mut map = Map::with_capacity_and_hasher(4, Default::default());
    map.insert(
        "id".to_owned(),
        Value::from(i64::try_from(i + 1).unwrap_or(i64::MAX)),
    );
    map.insert("label".to_owned(), Value::from(label));
    map.insert("template".to_owned(), Value::from(template));
    map.insert(
        "placeholders".to_owned(),
        Value::from(
            placeholders
                .into_iter()
                .map(Value::from)
                .collect::<Vec<_>>(),
        ),
    );
    Value::from(map)
}

/// A JPEG frame of item `i` (frame `k`), given to the writers of
/// directories.
pub type FrameFn<'a> = dyn FnMut(usize, usize) -> Result<Cow<'a, [u8]>, BoxError> + 'a;

/// Writes `spec` into the existing, empty directory `dir`, every frame being
/// `jpeg`.
pub fn write_dir(dir: &Path, spec: &Spec, jpeg: &[u8]) -> Result<Written, BoxError> {
    write_dir_with(dir, spec, &mut |_, _| Ok(Cow::Borrowed(jpeg)))
}

/// Writes `spec` into the existing, empty directory `dir`, frame `k` of
/// item `i` being `frame(i, k)`.
pub fn write_dir_with<'a>(
    dir: &Path,
    spec: &Spec,
    frame: &mut FrameFn<'a>,
) -> Result<Written, BoxError> {
    let start = Instant::now();
    let chunks = spec.chunks.max(1);
    let per_chunk = spec.items.div_ceil(chunks).max(1);
    let mut written = Written::default();
    for (chunk, first) in (0..spec.items).step_by(per_chunk).enumerate() {
        let mut writer = ChunkWriter::builder()
            .meta_format(spec.format)
            .fsync(false)
            .create(dir, chunk as u64)?;
        for i in first..(first + per_chunk).min(spec.items) {
            let frames = (0..spec.frames_per_item)
                .map(|k| frame(i, k))
                .collect::<Result<Vec<_>, _>>()?;
            writer.append(&item_id(i), item_meta(i), &frames)?;
        }
        let summary = writer.finish()?;
        written.items += summary.items;
        written.frames += summary.frames;
        written.data_bytes += summary.bytes;
        written.meta_bytes += std::fs::metadata(&summary.meta_path)
            .map(|m| m.len())
            .unwrap_or(0);
    }
    written.seconds = start.elapsed().as_secs_f64();
    Ok(written)
}

/// Makes `dir` with `spec` unless it exists already (it is built under a
/// temporary name and renamed into place when complete, so an interrupted
/// run never leaves a half directory that would be reused). Returns `None`
/// when it was reused.
pub fn ensure_dir(dir: &Path, spec: &Spec, jpeg: &[u8]) -> Result<Option<Written>, BoxError> {
    ensure_dir_with(dir, spec, &mut |_, _| Ok(Cow::Borrowed(jpeg)))
}

/// [`ensure_dir`] with frame `k` of item `i` being `frame(i, k)`.
pub fn ensure_dir_with<'a>(
    dir: &Path,
    spec: &Spec,
    frame: &mut FrameFn<'a>,
) -> Result<Option<Written>, BoxError> {
    if dir.is_dir() {
        return Ok(None);
    }
    let mut tmp = dir.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = std::path::PathBuf::from(tmp);
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp)?;
    }
    std::fs::create_dir_all(&tmp)?;
    let written = write_dir_with(&tmp, spec, frame)?;
    std::fs::rename(&tmp, dir)?;
    Ok(Some(written))
}

/// A `width`x`height` RGB picture of its own for every `(i, k)`, to be
/// encoded as a frame: random coefficients for the 8x8 lowest frequencies
/// of its DCT (the block a perceptual hash reads, so that the hashes of
/// different items are as far apart as random ones), amplitude falling
/// with frequency, over a random colour, with a little noise; for
/// near-duplicate search at scale. Frame `k` moves the coefficients a
/// little from frame `k - 1`.
pub fn varied_pixels(i: usize, k: usize, (width, height): (usize, usize)) -> Vec<u8> {
    const SIDE: usize = 8;
    let mut state = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5851_f42d_4c95_7f2d;
    // A uniform number in [0, 1).
    let mut unit = move || (crate::splitmix64(&mut state) >> 40) as f32 / (1u64 << 24) as f32;
    let mean = [
        60.0 + 130.0 * unit(),
        60.0 + 130.0 * unit(),
        60.0 + 130.0 * unit(),
    ];
    // coeffs[u][v]: u along the rows (vertical frequency), v along the
    // columns; the mean is the colour's.
    let mut coeffs = [[0f32; SIDE]; SIDE];
    for (u, row) in coeffs.iter_mut().enumerate() {
        for (v, c) in row.iter_mut().enumerate() {
            let amplitude = 70.0 / ((1 + u + v) as f32).sqrt();
            let (value, drift) = (unit() - 0.5, unit() - 0.5);
            if u + v > 0 {
                *c = amplitude * (value + 0.05 * k as f32 * drift);
            }
        }
    }
    let basis = |n: usize, len: usize| -> Vec<[f32; SIDE]> {
        (0..len)
            .map(|x| {
                let mut b = [0f32; SIDE];
                for (f, slot) in b.iter_mut().enumerate() {
                    *slot = (std::f32::consts::PI * (2 * x + 1) as f32 * f as f32 / (2 * n) as f32)
                        .cos();
                }
                b
            })
            .collect()
    };
    let (along_x, along_y) = (basis(width, width), basis(height, height));
    let mut pixels = Vec::with_capacity(width * height * 3);
    for by in &along_y {
        // This row's weight of each horizontal frequency.
        let mut row = [0f32; SIDE];
        for (v, r) in row.iter_mut().enumerate() {
            *r = (0..SIDE).map(|u| coeffs[u][v] * by[u]).sum();
        }
        for bx in &along_x {
            let luma: f32 = row.iter().zip(bx).map(|(r, b)| r * b).sum();
            let noise = 8.0 * (unit() - 0.5);
            for m in mean {
                // Clamped to 0..=255 first: no truncation.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                pixels.push((m + luma + noise).clamp(0.0, 255.0) as u8);
            }
        }
    }
    pixels
}
