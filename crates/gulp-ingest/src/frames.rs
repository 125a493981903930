//! Turning a frame source into JPEG records: validate, decode, resize, encode.

use std::num::NonZeroU32;
use std::path::Path;

use fast_image_resize::{PixelType, Resizer};
use gulp_codec::ColorMode;
#[cfg(not(feature = "turbojpeg"))]
use jpeg_encoder::ColorType;

use crate::cut::{self, Cutter, Span, Use};
use crate::dataset::{FrameSource, Pixels};
use crate::error::ItemError;
#[cfg(not(feature = "turbojpeg"))]
use crate::raster::rust_encoder;
#[cfg(feature = "turbojpeg")]
use crate::raster::subsampling;
pub use crate::raster::{Resize, long_edge_size, short_edge_size, stored_size};
use crate::raster::{jpeg_size, resize_plane};
use crate::video::{self, AudioRequest};
use crate::yuv::{self, Yuv420};
use gulp_format::FrameTimes;

/// How frames are turned into stored JPEGs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameOptions {
    /// Resize so that the shorter edge has this many pixels (gulpio2's
    /// `frame_size`/`img_size`); `None` keeps the size.
    pub short_edge: Option<u32>,
    /// Then bring the long edge down to this many pixels if it is longer
    /// (FFCV's `max_resolution`); JPEGs within it are stored as they are.
    pub max_size: Option<u32>,
    /// JPEG quality of encoded frames, 1–100 (gulpio2 uses 90).
    pub quality: u8,
    /// Sample videos at this rate (ffmpeg's output `-r`); `None` keeps every
    /// frame.
    pub frame_rate: Option<f64>,
    /// Chroma subsampling of the JPEGs gulp encodes.
    pub subsampling: SubsamplingChoice,
    /// Threads each ffmpeg process decodes with (its input `-threads`).
    /// `None` leaves the choice to ffmpeg when [`encode_frames`] is called
    /// directly, while [`crate::ingest`] gives each worker's ffmpeg its
    /// share of the cores: the workers already keep every core busy, and
    /// ffmpeg's own choice (a thread per core in every process) then costs
    /// CPU time for nothing. The decoded frames are the same either way.
    pub decode_threads: Option<NonZeroU32>,
    /// Keep each video's sound, resampled to this rate and these channels
    /// (`--audio`; the clips of a manifest and every video, in the same
    /// decode as their frames).
    pub audio: Option<AudioRequest>,
}

/// Chroma subsampling of encoded JPEGs (stored JPEGs keep theirs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubsamplingChoice {
    /// The source's chroma resolution: 4:2:0 for video frames (which
    /// ffmpeg decodes as 4:2:0), 4:4:4 for images and pixels.
    #[default]
    Auto,
    /// 4:4:4, no subsampling: gulpio2's layout for every frame.
    S444,
    /// 4:2:0: half the chroma resolution both ways, for every frame.
    S420,
}

// `auto`, `444` (`4:4:4`) or `420` (`4:2:0`): the names every front end
// parses (`--subsampling`, `gulp.ingest(subsampling=...)`).
gulp_format::choice!(SubsamplingChoice, "subsampling", {
    SubsamplingChoice::Auto => "auto",
    SubsamplingChoice::S444 => "444" | "4:4:4",
    SubsamplingChoice::S420 => "420" | "4:2:0",
});

impl SubsamplingChoice {
    /// Whether images and pixel frames keep full chroma resolution.
    fn full_for_images(self) -> bool {
        self != SubsamplingChoice::S420
    }

    /// Whether video frames keep full chroma resolution.
    fn full_for_video(self) -> bool {
        self == SubsamplingChoice::S444
    }
}

impl FrameOptions {
    /// How a frame's size changes.
    pub fn resize(&self) -> Resize {
        Resize {
            short_edge: self.short_edge,
            max_size: self.max_size,
        }
    }
}

impl Default for FrameOptions {
    fn default() -> FrameOptions {
        FrameOptions {
            short_edge: None,
            max_size: None,
            quality: 90,
            frame_rate: None,
            subsampling: SubsamplingChoice::Auto,
            decode_threads: None,
            audio: None,
        }
    }
}

/// Checks the counts and ranges every writer needs, for `gulp ingest`, the
/// Python writer and the pipeline alike: chunks of at least one item, at
/// least one worker, a JPEG quality of 1 to 100 and a positive frame rate.
pub(crate) fn check_ranges(
    items_per_chunk: usize,
    workers: usize,
    frames: &FrameOptions,
) -> Result<(), crate::Error> {
    let invalid = |option, given: &dyn std::fmt::Display, expected| crate::Error::InvalidOption {
        option,
        given: given.to_string(),
        expected,
    };
    if items_per_chunk == 0 {
        return Err(invalid("items per chunk", &0, "at least 1"));
    }
    if workers == 0 {
        return Err(invalid("workers", &0, "at least 1"));
    }
    if !(1..=100).contains(&frames.quality) {
        return Err(invalid("quality", &frames.quality, "1 to 100"));
    }
    if let Some(rate) = frames.frame_rate
        && !(rate.is_finite() && rate > 0.0)
    {
        return Err(invalid("frame rate", &rate, "a positive number"));
    }
    Ok(())
}

/// What [`encode_frames`] says of a source besides its frames.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Encoding {
    /// What ffmpeg reported about a video it could still decode.
    pub warning: Option<String>,
    /// A video's frame times: a grid at its frames' rate from 0 (ffmpeg's
    /// start of the video), or a clip's. Images have none.
    pub times: Option<FrameTimes>,
}

impl Encoding {
    /// The times of a video's frames at `rate` (ffmpeg's output, evenly
    /// spaced from 0).
    pub fn video(warning: Option<String>, rate: Option<f64>) -> Encoding {
        Encoding {
            warning,
            times: rate.map(|r| FrameTimes::Grid {
                start: 0.0,
                step: 1.0 / r,
            }),
        }
    }
}

/// Turns `source` into JPEG frames, giving each one to `sink` as soon as it is
/// ready (so a long video is never held decoded in memory).
pub fn encode_frames(
    source: &FrameSource,
    opts: &FrameOptions,
    sink: &mut dyn FnMut(Vec<u8>) -> Result<(), ItemError>,
) -> Result<Encoding, ItemError> {
    let mut resizer = Resizer::new();
    match source {
        FrameSource::Jpeg(frames) => {
            for (i, jpeg) in frames.iter().enumerate() {
                let out = jpeg_frame(jpeg, opts, &mut resizer)
                    .map_err(|e| ItemError::new(format!("frame {i}: {e}")))?;
                sink(out)?;
            }
        }
        FrameSource::Pixels(frames) => {
            for (i, px) in frames.iter().enumerate() {
                px.check()
                    .map_err(|e| ItemError::new(format!("frame {i}: {e}")))?;
                let resized = resize_short_edge(px, opts.resize(), &mut resizer)
                    .map_err(|e| ItemError::new(format!("frame {i}: {e}")))?;
                let px = resized.as_ref().unwrap_or(px);
                sink(
                    encode_jpeg_with(px, opts.quality, opts.subsampling.full_for_images())
                        .map_err(|e| ItemError::new(format!("frame {i}: {e}")))?,
                )?;
            }
        }
        FrameSource::ImageFiles(paths) => {
            for path in paths {
                let bytes = std::fs::read(path)
                    .map_err(|e| ItemError::at(path, format!("cannot read: {e}")))?;
                let out = if is_jpeg(&bytes) {
                    jpeg_frame(&bytes, opts, &mut resizer)
                } else if has_extension(path, &["jpg", "jpeg", "jpe"]) {
                    Err("not a JPEG stream (no start-of-image marker at byte 0)".into())
                } else {
                    decode_image(&bytes).and_then(|px| {
                        let resized = resize_short_edge(&px, opts.resize(), &mut resizer)?;
                        encode_jpeg_with(
                            resized.as_ref().unwrap_or(&px),
                            opts.quality,
                            opts.subsampling.full_for_images(),
                        )
                    })
                };
                sink(out.map_err(|e| ItemError::at(path, e))?)?;
            }
        }
        FrameSource::Clip { path, span } => {
            let got = std::cell::RefCell::new(Vec::new());
            let report = encode_clips(
                path,
                std::slice::from_ref(span),
                opts,
                &mut |_, jpeg| {
                    got.borrow_mut().push(jpeg.to_vec());
                    Ok(())
                },
                &mut || got.borrow_mut().clear(),
            )?;
            let times = match report.clips.into_iter().next() {
                Some(Ok(cut)) => cut.times,
                Some(Err(why)) => return Err(ItemError::at(path, why)),
                None => return Err(ItemError::at(path, "no clip")),
            };
            for jpeg in got.into_inner() {
                sink(jpeg)?;
            }
            return Ok(Encoding {
                warning: report.warning,
                times: Some(times),
            });
        }
        FrameSource::Video(path) => {
            let decoded = video::decode_video(
                path,
                opts.frame_rate,
                opts.decode_threads,
                &mut |frame: Yuv420| {
                    sink(
                        video_frame(frame, opts, &mut resizer)
                            .map_err(|e| ItemError::at(path, e))?,
                    )
                },
            )?;
            return Ok(Encoding::video(decoded.warning, decoded.frame_rate));
        }
    }
    Ok(Encoding::default())
}

/// A consumer of encoded frames that can run on a thread of its own.
pub type JpegSink<'a> = dyn FnMut(Vec<u8>) -> Result<(), ItemError> + Send + 'a;

/// A consumer of the frames [`encode_clips`] cuts: `(clip, jpeg)`.
pub type ClipSink<'a> = dyn FnMut(usize, &[u8]) -> Result<(), ItemError> + 'a;

/// One clip as [`encode_clips`] cut it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClipCut {
    /// Its frames' times: the grid of the frame rate from the clip's start,
    /// or the source's own times.
    pub times: FrameTimes,
    /// Its sound, when asked for.
    pub audio: Option<ClipAudio>,
}

/// A clip's sound.
#[derive(Debug, Clone, PartialEq)]
pub enum ClipAudio {
    /// The source has none (that ffmpeg can decode).
    NoTrack,
    /// 16-bit samples at the asked rate and channels, from `start`.
    Pcm {
        /// Interleaved signed 16-bit little-endian samples.
        samples: Vec<u8>,
        /// The source time of the first sample.
        start: f64,
    },
}

/// What [`encode_clips`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct CutReport {
    /// Each clip: how it was cut, or why it could not be.
    pub clips: Vec<Result<ClipCut, String>>,
    /// What ffmpeg reported although it decoded the source.
    pub warning: Option<String>,
    /// Why the source has no sound, when sound was asked for.
    pub no_audio: Option<String>,
}

/// Cuts the clips `spans` of the video `path` from one decode of the part
/// they cover ([`video::decode_timed`], [`crate::cut`]): each frame that a
/// clip takes is resized and encoded once, and given to `frame` for each
/// clip that takes it (`frame(clip, jpeg)`). `restart` means: drop every
/// frame given so far (the source is decoded again, without sound).
pub fn encode_clips(
    path: &Path,
    spans: &[Span],
    opts: &FrameOptions,
    frame: &mut ClipSink<'_>,
    restart: &mut dyn FnMut(),
) -> Result<CutReport, ItemError> {
    let from = spans.iter().map(|s| s.start).fold(f64::INFINITY, f64::min);
    let from = if from.is_finite() { from.max(0.0) } else { 0.0 };
    let to = spans.iter().map(|s| s.end).fold(0.0, f64::max);
    let duration = to.is_finite().then(|| (to - from).max(0.0));
    let mut resizer = Resizer::new();
    let mut attempt = |audio: Option<AudioRequest>| {
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); spans.len()];
        let mut cutter = Cutter::new(spans, opts.frame_rate);
        let mut encode = |yuv: Yuv420, uses: &[Use]| -> Result<(), ItemError> {
            let jpeg = video_frame(yuv, opts, &mut resizer).map_err(|e| ItemError::at(path, e))?;
            for u in uses {
                times[u.clip].push(u.time);
                frame(u.clip, &jpeg)?;
            }
            Ok(())
        };
        let decoded = video::decode_timed(
            path,
            from,
            duration,
            opts.decode_threads,
            audio,
            &mut |yuv, t| cutter.push(yuv, t, &mut encode),
        )?;
        let outcomes = cutter.finish(decoded.end, &mut encode)?;
        Ok::<_, ItemError>((decoded, outcomes, times))
    };
    let mut no_audio = None;
    let (decoded, outcomes, times) = match attempt(opts.audio) {
        Err(e) if opts.audio.is_some() && !e.fatal => {
            restart();
            no_audio = Some(video::no_track_reason(&e));
            attempt(None)?
        }
        other => other?,
    };
    let samples = decoded.audio.as_deref();
    let clips = outcomes
        .into_iter()
        .zip(spans)
        .zip(times)
        .map(|((outcome, span), times)| match outcome {
            cut::Outcome::Outside(why) => Err(why),
            cut::Outcome::Frames(_) => Ok(ClipCut {
                times: match opts.frame_rate {
                    Some(rate) => FrameTimes::Grid {
                        start: span.start,
                        step: 1.0 / rate,
                    },
                    None => FrameTimes::from_times(times),
                },
                audio: opts.audio.map(|a| match samples {
                    None => ClipAudio::NoTrack,
                    Some(bytes) => {
                        let end = span.end.min(decoded.end);
                        ClipAudio::Pcm {
                            samples: audio_span(bytes, a, decoded.start, span.start, end).to_vec(),
                            start: span.start,
                        }
                    }
                }),
            }),
        })
        .collect();
    Ok(CutReport {
        clips,
        warning: decoded.warning,
        no_audio,
    })
}

/// The samples of `[start, end)` (source seconds) in `bytes`, the sound of
/// a decode that started at `from`; shorter where the sound ends first.
fn audio_span(bytes: &[u8], a: AudioRequest, from: f64, start: f64, end: f64) -> &[u8] {
    let frame = usize::from(a.channels) * 2;
    let at = |t: f64| -> usize {
        let n = ((t - from) * f64::from(a.sample_rate)).round().max(0.0);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // clamped below
        let n = n.min((bytes.len() / frame) as f64) as usize;
        n * frame
    };
    let (s, e) = (at(start), at(end));
    &bytes[s..e.max(s)]
}

/// Encodes several videos with one ffmpeg process
/// ([`video::decode_videos`]), each video's JPEG frames going to its sink
/// (from a thread of its own). Anything but [`video::BatchOutcome::Decoded`]: what
/// the sinks got must be thrown away and each video encoded with
/// [`encode_frames`], which reports its own errors.
pub fn encode_videos(
    paths: &[&Path],
    opts: &FrameOptions,
    sinks: &mut [&mut JpegSink<'_>],
) -> video::BatchOutcome {
    let mut encoders: Vec<_> = sinks
        .iter_mut()
        .map(|sink| {
            let mut resizer = Resizer::new();
            move |frame: Yuv420| -> Result<(), ItemError> {
                sink(video_frame(frame, opts, &mut resizer).map_err(ItemError::new)?)
            }
        })
        .collect();
    let mut refs: Vec<&mut video::SendSink<'_>> = encoders
        .iter_mut()
        .map(|e| e as &mut video::SendSink<'_>)
        .collect();
    video::decode_videos(paths, opts.frame_rate, opts.decode_threads, &mut refs)
}

/// One decoded video frame to a JPEG: resized (before the range mapping, so
/// that it runs on the smaller frame), mapped to full range, encoded.
fn video_frame(
    frame: Yuv420,
    opts: &FrameOptions,
    resizer: &mut Resizer,
) -> Result<Vec<u8>, String> {
    let mut frame = yuv::resize_short_edge(&frame, opts.resize(), resizer)?.unwrap_or(frame);
    frame.expand_range();
    yuv::encode_jpeg(&frame, opts.quality, opts.subsampling.full_for_video())
}

/// Whether `bytes` start like a JPEG file (SOI marker then another marker).
pub fn is_jpeg(bytes: &[u8]) -> bool {
    bytes.len() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF
}

/// One frame that is already JPEG: checked and stored as it is, or decoded,
/// resized and re-encoded when its size must change.
fn jpeg_frame(jpeg: &[u8], opts: &FrameOptions, resizer: &mut Resizer) -> Result<Vec<u8>, String> {
    let (width, height) = check_jpeg(jpeg)?;
    if stored_size(width, height, opts.resize()).is_none() {
        return Ok(jpeg.to_vec());
    }
    let px = decode_jpeg(jpeg)?;
    let resized = resize_short_edge(&px, opts.resize(), resizer)?;
    encode_jpeg_with(
        resized.as_ref().unwrap_or(&px),
        opts.quality,
        opts.subsampling.full_for_images(),
    )
}

/// Checks that `jpeg` is a whole JPEG stream as far as can be told without
/// decoding it: start-of-image, readable headers, and an end-of-image marker
/// at the end (trailing zero bytes allowed). Returns width and height.
pub fn check_jpeg(jpeg: &[u8]) -> Result<(u32, u32), String> {
    if !is_jpeg(jpeg) {
        return Err("not a JPEG stream (no start-of-image marker at byte 0)".into());
    }
    let end = jpeg.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
    if end < 4 || jpeg[end - 2..end] != [0xFF, 0xD9] {
        return Err(format!(
            "truncated JPEG: no end-of-image marker at the end ({} bytes)",
            jpeg.len()
        ));
    }
    let mut decoder =
        zune_jpeg::JpegDecoder::new(zune_jpeg::zune_core::bytestream::ZCursor::new(jpeg));
    decoder
        .decode_headers()
        .map_err(|e| format!("bad JPEG headers: {e:?}"))?;
    let (w, h) = decoder
        .dimensions()
        .ok_or_else(|| "bad JPEG headers: no frame size".to_string())?;
    Ok((
        u32::try_from(w).unwrap_or(u32::MAX),
        u32::try_from(h).unwrap_or(u32::MAX),
    ))
}

fn decode_jpeg(jpeg: &[u8]) -> Result<Pixels, String> {
    let image = gulp_codec::decode_jpeg(jpeg, ColorMode::Auto).map_err(|e| e.to_string())?;
    Ok(Pixels {
        width: u32::try_from(image.width).map_err(|_| "image too wide")?,
        height: u32::try_from(image.height).map_err(|_| "image too high")?,
        channels: u8::try_from(image.channels).map_err(|_| "too many channels")?,
        data: image.pixels,
    })
}

/// Decodes a non-JPEG image file to RGB or gray: alpha is dropped, palettes
/// are expanded, 16-bit samples are scaled to 8 bits.
pub fn decode_image(bytes: &[u8]) -> Result<Pixels, String> {
    if is_jpeg(bytes) {
        return decode_jpeg(bytes);
    }
    let image = image::load_from_memory(bytes).map_err(|e| format!("cannot decode image: {e}"))?;
    let (width, height) = (image.width(), image.height());
    let gray = matches!(
        image.color(),
        image::ColorType::L8
            | image::ColorType::L16
            | image::ColorType::La8
            | image::ColorType::La16
    );
    let (channels, data) = if gray {
        (1, image.into_luma8().into_raw())
    } else {
        (3, image.into_rgb8().into_raw())
    };
    Ok(Pixels {
        width,
        height,
        channels,
        data,
    })
}

/// Resizes with Pillow's BILINEAR (a support-scaled triangle filter, so
/// downscaling is antialiased) when the size must change (`resize`: a short
/// edge, or a [`Resize`]); `None` when not.
pub fn resize_short_edge(
    px: &Pixels,
    resize: impl Into<Resize>,
    resizer: &mut Resizer,
) -> Result<Option<Pixels>, String> {
    let Some((nw, nh)) = stored_size(px.width, px.height, resize) else {
        return Ok(None);
    };
    let pixel_type = if px.channels == 1 {
        PixelType::U8
    } else {
        PixelType::U8x3
    };
    let data = resize_plane(
        &px.data,
        (px.width, px.height),
        (nw, nh),
        pixel_type,
        resizer,
    )?;
    Ok(Some(Pixels {
        width: nw,
        height: nh,
        channels: px.channels,
        data,
    }))
}

/// Encodes as gulpio2 does: baseline JPEG, 4:4:4 (no chroma subsampling),
/// gray images as one-component JPEGs. With the `turbojpeg` feature (the
/// default) the encoder is libjpeg-turbo with simplejpeg's settings (fast
/// integer DCT), so the bytes are gulpio2's; otherwise the pure-Rust
/// jpeg-encoder.
pub fn encode_jpeg(px: &Pixels, quality: u8) -> Result<Vec<u8>, String> {
    encode_jpeg_with(px, quality, true)
}

/// [`encode_jpeg`], 4:2:0 unless `full_chroma`.
pub fn encode_jpeg_with(px: &Pixels, quality: u8, full_chroma: bool) -> Result<Vec<u8>, String> {
    let (w, h) = jpeg_size(px.width, px.height)?;
    encode_with(px, w, h, quality.clamp(1, 100), full_chroma)
}

/// The JPEG encoder this build uses.
pub const ENCODER: &str = if cfg!(feature = "turbojpeg") {
    "libjpeg-turbo"
} else {
    "jpeg-encoder"
};

#[cfg(not(feature = "turbojpeg"))]
fn encode_with(
    px: &Pixels,
    w: u16,
    h: u16,
    quality: u8,
    full_chroma: bool,
) -> Result<Vec<u8>, String> {
    let color = if px.channels == 1 {
        ColorType::Luma
    } else {
        ColorType::Rgb
    };
    let mut out = Vec::with_capacity(px.data.len() / 8 + 1024);
    rust_encoder(&mut out, quality, full_chroma)
        .encode(&px.data, w, h, color)
        .map_err(|e| format!("JPEG encoding: {e}"))?;
    Ok(out)
}

#[cfg(feature = "turbojpeg")]
fn encode_with(
    px: &Pixels,
    w: u16,
    h: u16,
    quality: u8,
    full_chroma: bool,
) -> Result<Vec<u8>, String> {
    gulp_codec::encode_jpeg(
        &px.data,
        (usize::from(w), usize::from(h)),
        usize::from(px.channels),
        quality,
        subsampling(full_chroma),
    )
    .map_err(|e| e.to_string())
}

/// Whether a path has an image extension the image adapters pick up.
pub fn is_image_path(path: &Path) -> bool {
    has_extension(path, IMAGE_EXTENSIONS)
}

/// Whether a path has a video extension the video adapters pick up.
pub fn is_video_path(path: &Path) -> bool {
    has_extension(path, VIDEO_EXTENSIONS)
}

/// Image file extensions (compared without case).
pub const IMAGE_EXTENSIONS: &[&str] = &[
    "jpg", "jpeg", "jpe", "png", "bmp", "gif", "tif", "tiff", "webp",
];

/// Video file extensions (compared without case).
pub const VIDEO_EXTENSIONS: &[&str] = &[
    "mp4", "webm", "mkv", "avi", "mov", "m4v", "ogv", "ogg", "mpg", "mpeg", "flv", "wmv", "3gp",
    "ts",
];

fn has_extension(path: &Path, list: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| list.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_edge_matches_gulpio2() {
        // gulpio2's unit test: (6,10) -> (3,5) and (10,6) -> (5,3) with size 3
        // (PIL sizes are (w, h)).
        assert_eq!(short_edge_size(6, 10, 3), (3, 5));
        assert_eq!(short_edge_size(10, 6, 3), (5, 3));
        assert_eq!(short_edge_size(100, 100, 50), (50, 50));
        // int(256 * 176 / 100) = 450
        assert_eq!(short_edge_size(176, 100, 256), (450, 256));
        // int(256 * 427 / 240) = int(455.466..) = 455
        assert_eq!(short_edge_size(427, 240, 256), (455, 256));
    }

    #[test]
    fn encode_then_check() {
        let px = Pixels {
            width: 9,
            height: 5,
            channels: 3,
            data: (0..135u8).collect(),
        };
        let jpeg = encode_jpeg(&px, 90).unwrap();
        assert_eq!(check_jpeg(&jpeg).unwrap(), (9, 5));
        assert!(
            check_jpeg(&jpeg[..jpeg.len() - 1])
                .unwrap_err()
                .contains("truncated")
        );
        let mut padded = jpeg.clone();
        padded.extend([0, 0]);
        assert_eq!(check_jpeg(&padded).unwrap(), (9, 5));
        let back = decode_jpeg(&jpeg).unwrap();
        assert_eq!((back.width, back.height, back.channels), (9, 5, 3));
    }
}
