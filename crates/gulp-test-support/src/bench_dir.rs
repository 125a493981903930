//! Synthetic gulp directories for gulp-io's `read` bench and its
//! `make_bench_dir` example: items shaped like Something-Something's, frames
//! that are real JPEG bytes.

use std::borrow::Cow;
use std::f32::consts::TAU;
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
/// encoded as a frame: twelve colour gratings of random direction,
/// frequency (up to eight cycles across, amplitude falling as a
/// photograph's spectrum does) and phase over a random mean, with a little
/// noise, for near-duplicate search at scale. Every item differs, but to a
/// perceptual hash they are less varied than photographs: of a million,
/// about a third fall in near-duplicate groups at the default 8 bits
/// (docs/runs/benchmarks-log-2026-11.md). Frame `k` drifts the phases a
/// little from frame `k - 1`.
pub fn varied_pixels(i: usize, k: usize, (width, height): (usize, usize)) -> Vec<u8> {
    let mut state = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5851_f42d_4c95_7f2d;
    let mut next = move || {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    // A uniform number in [0, 1).
    let mut unit = move || (next() >> 40) as f32 / (1u64 << 24) as f32;
    let mean = [
        60.0 + 130.0 * unit(),
        60.0 + 130.0 * unit(),
        60.0 + 130.0 * unit(),
    ];
    let (w, h) = (width as f32, height as f32);
    // Each grating separable as cos(a + b) = cos a cos b - sin a sin b:
    // (sin, cos) along the columns, along the rows, and its amplitude per
    // channel.
    type Grating = (Vec<(f32, f32)>, Vec<(f32, f32)>, [f32; 3]);
    let gratings: Vec<Grating> = (0..12)
        .map(|_| {
            let fx = (unit() * 17.0).floor() - 8.0;
            let fy = (unit() * 17.0).floor() - 8.0;
            let phase = TAU * unit() + 0.1 * k as f32;
            let amplitude = 40.0 * unit() / fx.abs().max(fy.abs()).max(1.0).sqrt();
            let tint = [
                amplitude * (0.5 + unit()),
                amplitude * (0.5 + unit()),
                amplitude * (0.5 + unit()),
            ];
            let columns = (0..width)
                .map(|x| (TAU * fx * x as f32 / w + phase).sin_cos())
                .collect();
            let rows = (0..height)
                .map(|y| (TAU * fy * y as f32 / h).sin_cos())
                .collect();
            (columns, rows, tint)
        })
        .collect();
    let mut pixels = Vec::with_capacity(width * height * 3);
    for y in 0..height {
        for x in 0..width {
            let noise = 8.0 * (unit() - 0.5);
            for (c, m) in mean.iter().enumerate() {
                let v = gratings.iter().fold(m + noise, |v, (columns, rows, tint)| {
                    let ((sa, ca), (sb, cb)) = (columns[x], rows[y]);
                    v + tint[c] * (ca * cb - sa * sb)
                });
                // Clamped to 0..=255 first: no truncation.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                pixels.push(v.clamp(0.0, 255.0) as u8);
            }
        }
    }
    pixels
}
