//! One pass over every item of the directories, on all cores: each frame's
//! stored bytes are hashed, then decoded to luma at the least DCT scale
//! whose short edge is at least 32 pixels (1/8, the DC coefficients alone,
//! for frames of 256 pixels and more) and measured; an item's sound is
//! measured as it lies in the data file; what the later checks need is
//! kept per item, a few dozen bytes per frame.
//!
//! Blur is the exception: it lives in the detail that 1/8 averages away,
//! so when the `blurry` check runs, up to [`BLUR_SAMPLES`] frames of each
//! item (the one frame of an image) are also decoded at the least scale
//! whose short edge is [`BLUR_EDGE`] pixels, and judged there.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use gulp_codec::{ColorMode, DecodeOptions, JpegFrame, JpegHeader, Scale, Shape};

use gulp_io::{ChunkReader, GulpDirectory};

use crate::error::{Error, Result};
use crate::measure::{self, THUMB};
use crate::options::{Check, Options, Thresholds};

/// Frames sampled per item for its near-duplicate signature (all of them,
/// repeated, for items of fewer frames).
pub(crate) const SAMPLES: usize = 8;
/// Which of the [`SAMPLES`] are also judged for blur.
const BLUR_SAMPLES: [usize; 3] = [1, 4, 6];
/// The least short edge, in pixels, of the decoding a frame's blur is
/// judged on (1/2 of a 224-pixel frame; 3/8 of a 300-pixel one).
const BLUR_EDGE: usize = 112;

/// The perceptual hashes of an item's sampled frames: of the whole frame,
/// and of its centre (which matches the whole of a slightly cropped copy).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Signature {
    pub full: [u64; SAMPLES],
    pub centre: [u64; SAMPLES],
}

impl Signature {
    /// The distance of sample `k` of two items: the least over whole/whole,
    /// centre/whole and whole/centre.
    pub(crate) fn distance(&self, other: &Signature, k: usize) -> u32 {
        let d = |a: u64, b: u64| (a ^ b).count_ones();
        d(self.full[k], other.full[k])
            .min(d(self.centre[k], other.full[k]))
            .min(d(self.full[k], other.centre[k]))
    }
}

/// One item to scan: its directory, the reader of its chunk, its id.
pub(crate) struct Unit<'a> {
    pub dir: usize,
    pub reader: &'a ChunkReader,
    pub id: &'a str,
}

/// A per-frame check's frames in one item, and the worst score among them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Flagged {
    pub check: Check,
    pub frames: Vec<usize>,
    pub score: f64,
}

/// What an item's scan keeps.
#[derive(Debug, Clone)]
pub(crate) struct ItemScan {
    /// Number of frames.
    pub frames: usize,
    /// Stored width and height of frame 0 (`None` if it did not decode).
    pub size: Option<(usize, usize)>,
    /// Hash of all the frames' stored bytes, in order.
    pub content: u128,
    /// Hash of each frame's stored bytes, `None` for blank frames (whose
    /// copies are no finding). Empty for items of one frame.
    pub frame_hashes: Vec<Option<u64>>,
    /// Perceptual hashes of [`SAMPLES`] frames spread over the item;
    /// `None` if the middle one is blank or did not decode.
    pub signature: Option<Signature>,
    /// Per-frame findings.
    pub flagged: Vec<Flagged>,
    /// Frames that did not decode, with the decoder's message.
    pub undecodable: Vec<(usize, String)>,
    /// The level of the item's sound, when it has a track and a sound
    /// check runs.
    pub sound: Option<measure::Level>,
}

/// The decoding of every frame: luma, fast DCT, at the least DCT scale
/// whose short edge is at least the thumbnail's side; a damaged frame
/// gives the decoder's best picture.
fn decode_options(edge: usize) -> DecodeOptions {
    DecodeOptions {
        color: ColorMode::Gray,
        scale: Scale::ShortEdge(edge),
        strict: false,
        ..DecodeOptions::default()
    }
}

/// The hasher of stored bytes: fixed seeds, so equal bytes give equal
/// hashes across threads and directories.
fn byte_hash(bytes: &[u8], seed: u64) -> u64 {
    foldhash::quality::FixedState::with_seed(seed).hash_one(bytes)
}

/// Frame `k` of `SAMPLES` spread over `n` frames.
pub(crate) fn sample_frame(k: usize, n: usize) -> usize {
    if n <= 1 {
        0
    } else {
        k * (n - 1) / (SAMPLES - 1)
    }
}

/// Per-frame state of one item's scan.
struct FrameWork {
    flagged: Vec<Flagged>,
    previous: Option<[f32; THUMB * THUMB]>,
    run: Vec<usize>,
    frozen: Flagged,
}

impl FrameWork {
    fn new() -> FrameWork {
        FrameWork {
            flagged: Vec::new(),
            previous: None,
            run: Vec::new(),
            frozen: Flagged {
                check: Check::Frozen,
                frames: Vec::new(),
                score: 0.0,
            },
        }
    }

    /// Flags frame `k` for each check whose threshold its statistics `s`
    /// (and `blur_score`, if it was measured) cross.
    fn flag_frame(
        &mut self,
        k: usize,
        s: &measure::Stats,
        blur_score: Option<f64>,
        t: &Thresholds,
    ) {
        if s.p99 <= t.dark {
            self.flag(Check::Dark, k, s.p99, lower);
        }
        if s.p5 >= t.light {
            self.flag(Check::Light, k, s.p5, higher);
        }
        if s.std <= t.blank {
            self.flag(Check::Blank, k, s.std, lower);
        }
        if s.entropy <= t.low_information {
            self.flag(Check::LowInformation, k, s.entropy, lower);
        }
        if let Some(score) = blur_score.filter(|&x| x <= t.blurry) {
            self.flag(Check::Blurry, k, score, lower);
        }
    }

    /// Extends the run of same frames with frame `k` (thumbnail `thumb`) if
    /// it matches the previous frame, or ends the run.
    fn follow_frozen(&mut self, k: usize, thumb: [f32; THUMB * THUMB], t: &Thresholds) {
        let same = self
            .previous
            .as_ref()
            .is_some_and(|p| measure::thumb_diff(p, &thumb) <= t.frozen_diff);
        if same {
            if self.run.is_empty() {
                self.run.push(k - 1);
            }
            self.run.push(k);
        } else {
            self.end_run(t.frozen_frames);
        }
        self.previous = Some(thumb);
    }

    fn flag(&mut self, check: Check, frame: usize, score: f64, worse: fn(f64, f64) -> bool) {
        match self.flagged.iter_mut().find(|f| f.check == check) {
            Some(f) => {
                f.frames.push(frame);
                if worse(score, f.score) {
                    f.score = score;
                }
            }
            None => self.flagged.push(Flagged {
                check,
                frames: vec![frame],
                score,
            }),
        }
    }

    /// Ends the current run of same frames.
    fn end_run(&mut self, min: usize) {
        if self.run.len() >= min {
            self.frozen.frames.extend(&self.run);
            self.frozen.score = self.frozen.score.max(self.run.len() as f64);
        }
        self.run.clear();
    }
}

fn lower(a: f64, b: f64) -> bool {
    a < b
}

fn higher(a: f64, b: f64) -> bool {
    a > b
}

/// Decodes one frame into `buf` with `decode`: its header, the shape
/// written, and, when `blur` is given, its blur score. The frame's header is
/// read once; a frame judged for blur is decoded twice (at the blur scale,
/// then as every frame is, so that its statistics and thumbnail compare
/// with the others').
fn decode_frame(
    jpeg: &[u8],
    decode: &DecodeOptions,
    blur: Option<&DecodeOptions>,
    t: &Thresholds,
    buf: &mut Vec<u8>,
) -> gulp_io::Result<(JpegHeader, Shape, Option<f64>)> {
    let mut frame = JpegFrame::new(jpeg, decode.codec)?;
    let header = *frame.header();
    let mut blur_score = None;
    if let Some(blur_decode) = blur {
        let shape = header.output_shape(blur_decode);
        buf.resize(shape.len(), 0);
        let shape = frame.decode_into(blur_decode, buf)?;
        let luma = &buf[..shape.len()];
        let std = measure::stats(luma).std;
        // A uniform frame has no edges to be sharp or blurred.
        if std > t.blank {
            blur_score = Some(measure::blur_score(luma, shape.width, shape.height, std));
        }
    }
    let shape = header.output_shape(decode);
    buf.resize(shape.len(), 0);
    let shape = frame.decode_into(decode, buf)?;
    Ok((header, shape, blur_score))
}

/// Scans one item.
fn scan_item(unit: &Unit<'_>, options: &Options, buf: &mut Vec<u8>) -> Result<ItemScan> {
    let t: &Thresholds = &options.thresholds;
    let item = unit.reader.item(unit.id).map_err(Error::read)?;
    let n = item.frame_info.len();
    let indices: Vec<usize> = (0..n).collect();
    let jpegs = unit
        .reader
        .frames_at(unit.id, &indices)
        .map_err(Error::read)?;
    let (decode, blur_decode) = (decode_options(THUMB), decode_options(BLUR_EDGE));
    let samples: Vec<usize> = (0..SAMPLES).map(|k| sample_frame(k, n)).collect();
    let blur_frames: Vec<usize> = if options.runs(Check::Blurry) {
        BLUR_SAMPLES.iter().map(|&k| samples[k]).collect()
    } else {
        Vec::new()
    };
    let mut signature = Signature {
        full: [0; SAMPLES],
        centre: [0; SAMPLES],
    };
    let mut signature_ok = n > 0;
    let mut content = (0u64, 0u64);
    let mut frame_hashes = Vec::with_capacity(if n > 1 { n } else { 0 });
    let mut size = None;
    let mut undecodable = Vec::new();
    let mut work = FrameWork::new();
    for (k, jpeg) in jpegs.iter().enumerate() {
        let h = byte_hash(jpeg, 1);
        content.0 = byte_hash(&[content.0.to_le_bytes(), h.to_le_bytes()].concat(), 2);
        content.1 = byte_hash(
            &[content.1.to_le_bytes(), byte_hash(jpeg, 3).to_le_bytes()].concat(),
            4,
        );
        let judge_blur = blur_frames.contains(&k);
        let blur = judge_blur.then_some(&blur_decode);
        let (header, shape, blur_score) = match decode_frame(jpeg, &decode, blur, t, buf) {
            Ok(d) => d,
            Err(e) => {
                undecodable.push((k, e.to_string()));
                if samples[SAMPLES / 2] == k {
                    signature_ok = false;
                }
                work.end_run(t.frozen_frames);
                work.previous = None;
                if n > 1 {
                    frame_hashes.push(Some(h));
                }
                continue;
            }
        };
        if k == 0 {
            size = Some((header.width, header.height));
        }
        let luma = &buf[..shape.len()];
        let s = measure::stats(luma);
        let blank = s.std <= t.blank;
        if n > 1 {
            frame_hashes.push((!blank).then_some(h));
        }
        work.flag_frame(k, &s, blur_score, t);
        let thumb = measure::thumbnail(luma, shape.width, shape.height);
        if samples.contains(&k) {
            let full = measure::phash(&thumb);
            let centre =
                measure::phash(&measure::centre_thumbnail(luma, shape.width, shape.height));
            for (slot, _) in samples.iter().enumerate().filter(|(_, f)| **f == k) {
                signature.full[slot] = full;
                signature.centre[slot] = centre;
            }
            if samples[SAMPLES / 2] == k && blank {
                signature_ok = false;
            }
        }
        work.follow_frozen(k, thumb, t);
    }
    work.end_run(t.frozen_frames);
    let mut flagged = work.flagged;
    if !work.frozen.frames.is_empty() {
        flagged.push(work.frozen);
    }
    flagged.retain(|f| options.runs(f.check));
    let sound = match item.audio_track() {
        Some(track) if options.runs(Check::SilentAudio) || options.runs(Check::ClippedAudio) => {
            let pcm = unit.reader.audio(unit.id, track).map_err(Error::read)?;
            Some(measure::level(&pcm))
        }
        _ => None,
    };
    Ok(ItemScan {
        frames: n,
        size,
        content: u128::from(content.0) << 64 | u128::from(content.1),
        frame_hashes,
        signature: signature_ok.then_some(signature),
        flagged,
        undecodable,
        sound,
    })
}

/// Scans `units` on the option's threads; `progress(frames)` after each
/// item. The first error (in unit order) wins.
pub(crate) fn scan(
    units: &[Unit<'_>],
    options: &Options,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<ItemScan>> {
    let threads = options.thread_count().min(units.len()).max(1);
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let run = || {
        let mut buf = Vec::new();
        let mut done = Vec::new();
        while !failed.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(unit) = units.get(i) else { break };
            let result = scan_item(unit, options, &mut buf);
            match &result {
                Ok(scan) => progress(scan.frames as u64),
                Err(_) => failed.store(true, Ordering::Relaxed),
            }
            done.push((i, result));
        }
        done
    };
    let mut results: Vec<Option<Result<ItemScan>>> = Vec::new();
    results.resize_with(units.len(), || None);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads)
            .map(|k| {
                std::thread::Builder::new()
                    .name(format!("gulp-lint-{k}"))
                    .spawn_scoped(scope, run)
            })
            .collect();
        let mut all = vec![run()];
        // A thread that could not be started: the others did its share.
        for h in handles.into_iter().flatten() {
            all.push(
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        for (i, result) in all.into_iter().flatten() {
            results[i] = Some(result);
        }
    });
    let mut scans = Vec::with_capacity(units.len());
    for (i, result) in results.into_iter().enumerate() {
        match result {
            Some(r) => scans.push(r?),
            // Left undone after another item failed; that error is first
            // unless this one is earlier, which cannot be: units are taken
            // in order.
            None => {
                return Err(Error::Internal(format!(
                    "item {} was not scanned",
                    units[i].id
                )));
            }
        }
    }
    Ok(scans)
}

/// The units of every item of `dirs`, in directory order.
pub(crate) fn units<'a>(dirs: &'a [GulpDirectory]) -> Result<Vec<Unit<'a>>> {
    let mut units = Vec::new();
    for (d, dir) in dirs.iter().enumerate() {
        dir.load_metas().map_err(Error::read)?;
        for (c, chunk) in dir.chunks().iter().enumerate() {
            let reader = dir.reader(c).map_err(Error::read)?;
            units.extend(chunk.ids().map(|id| Unit { dir: d, reader, id }));
        }
    }
    Ok(units)
}
