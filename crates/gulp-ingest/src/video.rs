//! Video decoding with the `ffmpeg` binary: YUV 4:2:0 frames on a pipe.
//!
//! ffmpeg writes the decoder's own YUV 4:2:0 planes as a YUV4MPEG2 stream on
//! its stdout (a text header with the frame size and colour range, then one
//! `FRAME` line and the planes per frame), so nothing touches the disk
//! (gulpio2 bursts JPEGs into `/dev/shm` first) and no frame is converted
//! to RGB and back: the JPEG encoder takes the planes as they are. Sources in
//! other pixel formats (or full-range yuvj420p) are converted to video-range
//! 4:2:0 by ffmpeg. `-r RATE` is an
//! output option, as in gulpio2's `ffmpeg -i VIDEO -r RATE … -f image2`, so
//! the same frames are dropped or duplicated and the frame count is the same.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::num::NonZeroU32;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use crate::error::ItemError;
use crate::ffmpeg;
use crate::yuv::Yuv420;

/// How many bytes of ffmpeg's error output are kept for a report.
const STDERR_KEEP: usize = 4096;

/// Decodes `path` at `frame_rate` (every frame when `None`), giving each frame
/// to `sink` as YUV 4:2:0 planes, in the range ffmpeg gives (video range
/// unless the source is full range). Returns what ffmpeg printed at its "error" log
/// level when it still exited successfully (e.g. a damaged packet it could
/// skip), so the caller can report it, and the frames' rate. `threads` is
/// ffmpeg's decoding `-threads` (its own choice when `None`).
pub fn decode_video(
    path: &Path,
    frame_rate: Option<f64>,
    threads: Option<NonZeroU32>,
    sink: &mut dyn FnMut(Yuv420) -> Result<(), ItemError>,
) -> Result<Decoded, ItemError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(ItemError::at(path, "not a file")),
        Err(e) => return Err(ItemError::at(path, format!("cannot open video: {e}"))),
    }
    if let Some(rate) = frame_rate
        && !(rate.is_finite() && rate > 0.0)
    {
        return Err(ItemError::new(format!("frame rate {rate} is not positive")).fatal());
    }
    let ffmpeg = ffmpeg::binary().map_err(|e| ItemError::new(e).fatal())?;
    let mut cmd = Command::new(&ffmpeg);
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error"]);
    input_args(&mut cmd, path, threads);
    output_args(&mut cmd, 0, frame_rate);
    cmd.arg("-")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| ItemError::new(format!("cannot start {}: {e}", ffmpeg.display())).fatal())?;
    let stderr = collect_stderr(&mut child);
    let result = read_frames(&mut child, sink);
    if result.is_err() {
        let _ = child.kill();
    }
    let status = child.wait();
    let message = stderr_text(stderr);
    let stream = finished(
        path,
        result,
        status,
        message.as_deref(),
        "the video has no video frames",
    )?;
    Ok(Decoded {
        warning: message,
        frame_rate: stream.rate,
    })
}

/// What [`decode_video`] says of a video besides its frames.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// What ffmpeg printed at its "error" level although it succeeded.
    pub warning: Option<String>,
    /// The frames' rate (their stream's, YUV4MPEG2's `F`): the output of
    /// `-r`, or the rate ffmpeg gives the source's frames, one every
    /// `1 / rate` seconds from 0.
    pub frame_rate: Option<f64>,
}

/// How much earlier than asked a timed decode starts, so that the frame on
/// screen at the asked time (shown before it) is decoded too.
pub const SEEK_MARGIN_S: f64 = 1.0;

/// The sound a timed decode is asked for: resampled and mixed by ffmpeg.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AudioRequest {
    /// Samples per second.
    pub sample_rate: u32,
    /// Channels (1: mono, mixed down).
    pub channels: u16,
}

/// What a timed decode gave besides its frames.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedDecode {
    /// The source time decoding started at.
    pub start: f64,
    /// The time just past the last frame: its time plus its duration.
    pub end: f64,
    /// What ffmpeg printed at its "error" level although it succeeded.
    pub warning: Option<String>,
    /// The sound, when asked for: interleaved signed 16-bit little-endian
    /// samples, sample 0 at `start` (silence before the sound starts).
    pub audio: Option<Vec<u8>>,
}

/// Decodes `path` from `from` seconds (a little earlier, see
/// [`SEEK_MARGIN_S`]) for `duration` seconds (to the end when `None`)
/// with one ffmpeg, giving `sink` every frame with its presentation time in
/// seconds of the source, in order. The frames are the source's own (no
/// frame is dropped or repeated for a rate): YUV 4:2:0 on one pipe, their
/// times on another (ffmpeg's `framecrc` of the same frames), and the sound
/// on a third when asked for (resampled by ffmpeg, its first sample at the
/// decode's start).
///
/// With sound asked for, a source without sound (or whose sound ffmpeg
/// cannot decode) fails: decode it again without ([`no_track_reason`] says
/// why it had none).
pub fn decode_timed(
    path: &Path,
    from: f64,
    duration: Option<f64>,
    threads: Option<NonZeroU32>,
    audio: Option<AudioRequest>,
    sink: &mut dyn FnMut(Yuv420, f64) -> Result<(), ItemError>,
) -> Result<TimedDecode, ItemError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(ItemError::at(path, "not a file")),
        Err(e) => return Err(ItemError::at(path, format!("cannot open video: {e}"))),
    }
    let seek = (from - SEEK_MARGIN_S).max(0.0);
    let duration = duration.map(|d| d + (from - seek));
    timed_once(path, seek, duration, threads, audio, sink)
}

/// What [`no_track_reason`] says of a source without an audio stream.
pub const NO_AUDIO_STREAM: &str = "no audio stream";

/// Why a source has no sound, from the error of its decode with sound.
pub fn no_track_reason(e: &ItemError) -> String {
    if e.reason.contains("matches no streams") {
        NO_AUDIO_STREAM.into()
    } else {
        format!("its sound could not be decoded: {}", e.reason)
    }
}

fn timed_once(
    path: &Path,
    seek: f64,
    duration: Option<f64>,
    threads: Option<NonZeroU32>,
    audio: Option<AudioRequest>,
    sink: &mut dyn FnMut(Yuv420, f64) -> Result<(), ItemError>,
) -> Result<TimedDecode, ItemError> {
    let ffmpeg = ffmpeg::binary().map_err(|e| ItemError::new(e).fatal())?;
    let dir = tempfile::Builder::new()
        .prefix("gulp-ffmpeg-")
        .tempdir()
        .map_err(|e| ItemError::new(format!("making a folder for ffmpeg's pipes: {e}")).fatal())?;
    let outputs = if audio.is_some() { 3 } else { 2 };
    let (fifos, mut readers, keepers) = open_fifos(dir.path(), outputs)
        .ok_or_else(|| ItemError::new("cannot make ffmpeg's pipes").fatal())?;
    let mut cmd = timed_command(&ffmpeg, path, (seek, duration), threads, audio, &fifos);
    let mut child = cmd
        .spawn()
        .map_err(|e| ItemError::new(format!("cannot start {}: {e}", ffmpeg.display())).fatal())?;
    let stderr = collect_stderr(&mut child);
    let audio_stream = (audio.is_some()).then(|| readers.pop()).flatten();
    let frames_stream = readers.pop();
    let times_stream = readers.pop();
    let (tx, rx) = crossbeam_channel::unbounded::<(f64, f64)>();
    let result = thread::scope(|scope| {
        // ffmpeg's write ends are closed when it exits: closing ours then
        // ends every stream, those of outputs it never opened included.
        // A read that stops early closes its pipe, and ffmpeg's next write
        // to it ends ffmpeg.
        let waiter = scope.spawn(move || {
            let status = child.wait();
            drop(keepers);
            status
        });
        let times_reader =
            times_stream.map(|stream| scope.spawn(move || read_framecrc(stream, &tx)));
        let audio_reader = audio_stream.map(|mut stream| {
            scope.spawn(move || {
                let mut bytes = Vec::new();
                stream.read_to_end(&mut bytes).map(|_| bytes)
            })
        });
        let mut last: Option<(f64, f64)> = None;
        let read = match frames_stream {
            Some(stream) => read_stream(stream, &mut |frame| {
                let (pts, dur) = rx
                    .recv()
                    .map_err(|_| ItemError::new("ffmpeg gave a frame without its time"))?;
                last = Some((pts, dur));
                sink(frame, seek + pts)
            }),
            None => Err(ItemError::new("no pipe for the frames")),
        };
        let status = waiter
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("waiting for ffmpeg panicked")));
        let times = times_reader.map(|h| {
            h.join()
                .unwrap_or_else(|_| Err("its reader panicked".into()))
        });
        let sound = audio_reader.map(|h| {
            h.join()
                .unwrap_or_else(|_| Err(std::io::Error::other("panicked")))
        });
        (read, status, times, sound, last)
    });
    let (read, status, times, sound, last) = result;
    let message = stderr_text(stderr);
    let frames = finished(path, read, status, message.as_deref(), "none in the span")?;
    if let Some(Err(e)) = times {
        return Err(ItemError::at(
            path,
            format!("reading the frames' times from ffmpeg: {e}"),
        ));
    }
    let (pts, dur) = match last {
        Some(last) if frames.frames > 0 => last,
        _ => return Err(ItemError::at(path, "no frames decoded in the span")),
    };
    let audio = match sound {
        None => None,
        Some(Ok(bytes)) => Some(bytes),
        Some(Err(e)) => {
            return Err(ItemError::at(
                path,
                format!("reading the sound from ffmpeg: {e}"),
            ));
        }
    };
    Ok(TimedDecode {
        start: seek,
        end: seek + pts + dur,
        warning: message,
        audio,
    })
}

/// The stream an ffmpeg run read, once it has exited: a read error with
/// what ffmpeg said, its exit status, and a stream without frames (`why`
/// when ffmpeg said nothing) are the item's errors.
fn finished(
    path: &Path,
    read: Result<Stream, ItemError>,
    status: std::io::Result<std::process::ExitStatus>,
    message: Option<&str>,
    why: &str,
) -> Result<Stream, ItemError> {
    let stream = read.map_err(|e| match message {
        Some(m) if e.path.is_none() => ItemError::at(path, format!("{}; ffmpeg: {m}", e.reason)),
        _ => e,
    })?;
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => {
            let message = message.unwrap_or("no message");
            let what = if message.contains("does not contain any stream")
                || message.contains("matches no streams")
            {
                "no video stream"
            } else {
                "ffmpeg failed"
            };
            return Err(ItemError::at(path, format!("{what} ({s}): {message}")));
        }
        Err(e) => return Err(ItemError::at(path, format!("waiting for ffmpeg: {e}"))),
    }
    if stream.frames == 0 {
        return Err(ItemError::at(
            path,
            match message {
                Some(m) => format!("no frames decoded; ffmpeg: {m}"),
                None => format!("no frames decoded ({why})"),
            },
        ));
    }
    Ok(stream)
}

/// The ffmpeg command of [`timed_once`]: `path` from `seek` for
/// `duration`, its frames' times to `fifos[0]`, the frames to `fifos[1]`,
/// the sound to `fifos[2]` when asked for.
fn timed_command(
    ffmpeg: &Path,
    path: &Path,
    (seek, duration): (f64, Option<f64>),
    threads: Option<NonZeroU32>,
    audio: Option<AudioRequest>,
    fifos: &[PathBuf],
) -> Command {
    let mut cmd = Command::new(ffmpeg);
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error", "-y"]);
    if let Some(n) = threads {
        cmd.arg("-threads").arg(n.to_string());
    }
    if seek > 0.0 {
        cmd.arg("-ss").arg(format!("{seek}"));
    }
    if let Some(d) = duration {
        cmd.arg("-t").arg(format!("{d}"));
    }
    cmd.arg("-i").arg(path);
    // Every frame as the source has it, in both outputs of the video.
    let dialect = ffmpeg::Dialect::of(ffmpeg);
    // The times first: ffmpeg writes an output's packet of a frame before
    // the next output's, so a frame's time is there when its pixels are.
    cmd.args(["-map", "0:V:0", "-an", "-sn", "-c:v", "wrapped_avframe"]);
    cmd.args(dialect.passthrough)
        .args(dialect.demuxer_time_base);
    cmd.args(["-flush_packets", "1", "-f", "framecrc"]);
    cmd.arg(file_url(&fifos[0]));
    cmd.args([
        "-map",
        "0:V:0",
        "-an",
        "-sn",
        "-pix_fmt",
        "yuv420p",
        "-f",
        "yuv4mpegpipe",
    ]);
    cmd.args(dialect.passthrough);
    cmd.arg(file_url(&fifos[1]));
    if let Some(a) = audio {
        cmd.args([
            "-map",
            "0:a:0",
            "-vn",
            "-sn",
            "-af",
            "aresample=async=1:first_pts=0",
        ]);
        cmd.arg("-ac").arg(a.channels.to_string());
        cmd.arg("-ar").arg(a.sample_rate.to_string());
        cmd.args(["-c:a", "pcm_s16le", "-f", "s16le"]);
        cmd.arg(file_url(&fifos[2]));
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// `file:PATH`, so that ffmpeg takes the path as a file whatever it holds.
fn file_url(path: &Path) -> OsString {
    let mut url = OsString::from("file:");
    url.push(path);
    url
}

/// Reads ffmpeg's `framecrc` output (`#tb 0: N/D`, then a line `0, dts,
/// pts, duration, size, crc` per frame), sending each frame's time and
/// duration in seconds.
fn read_framecrc(stream: File, tx: &crossbeam_channel::Sender<(f64, f64)>) -> Result<(), String> {
    let mut time_base: Option<f64> = None;
    for line in BufReader::new(stream).lines() {
        let line = line.map_err(|e| e.to_string())?;
        if let Some(tb) = line.strip_prefix("#tb 0:") {
            let (n, d) = tb.trim().split_once('/').ok_or("bad #tb line")?;
            let (n, d): (f64, f64) = (
                n.trim().parse().map_err(|_| "bad #tb line")?,
                d.trim().parse().map_err(|_| "bad #tb line")?,
            );
            if !(n > 0.0 && d > 0.0) {
                return Err(format!("time base {n}/{d}"));
            }
            time_base = Some(n / d);
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let tb = time_base.ok_or("a frame before the time base")?;
        let mut fields = line.split(',').map(str::trim);
        let (_, _, pts, dur) = (fields.next(), fields.next(), fields.next(), fields.next());
        let num = |f: Option<&str>| f.and_then(|s| s.parse::<i64>().ok());
        let (Some(pts), Some(dur)) = (num(pts), num(dur)) else {
            return Err(format!("bad framecrc line {line:?}"));
        };
        #[allow(clippy::cast_precision_loss)] // timestamps far below 2^53
        let times = (pts as f64 * tb, dur.max(0) as f64 * tb);
        if tx.send(times).is_err() {
            break;
        }
    }
    Ok(())
}

/// An input and its decoding threads, the same for one video and a batch.
fn input_args(cmd: &mut Command, path: &Path, threads: Option<NonZeroU32>) {
    if let Some(n) = threads {
        cmd.arg("-threads").arg(n.to_string());
    }
    cmd.arg("-i").arg(path);
}

/// The options of output `input` (`-map`, rate, pixel format, muxer), the
/// same for one video and for a batch, so that both give the same frames.
fn output_args(cmd: &mut Command, input: usize, frame_rate: Option<f64>) {
    // The first video stream that is not a cover picture.
    cmd.arg("-map").arg(format!("{input}:V:0"));
    if let Some(rate) = frame_rate {
        cmd.arg("-r").arg(format_rate(rate));
    }
    // YUV 4:2:0, which most videos are already (anything else is
    // converted). Not a `-vf format=` filter: an explicit filter graph
    // changes how `-r` treats a stream that starts after 0 (one frame fewer
    // than gulpio2's burst), where `-pix_fmt` does not.
    cmd.args(["-an", "-sn", "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe"]);
}

/// The most videos [`decode_videos`] is given at once by the pipeline.
/// With the videos decoded one after another, 8 rather than 4 saves half
/// of the remaining ffmpeg starts: on the comparison corpus at 8 fps, 7 %
/// less CPU and wall time (13 of 16 alternating runs faster), for 47 MB
/// more peak memory (PSS of the ingest 182 → 229 MB).
pub const BATCH: usize = 8;

/// The largest video file worth a place in a batch: beyond this, decoding
/// takes so much longer than ffmpeg's start-up that batching saves little.
pub const BATCH_MAX_FILE: u64 = 4 << 20;

/// The largest frame (in pixels) a batch decodes. ffmpeg holds a decoder's
/// reference frames for every video of a batch at once, so a batch of
/// larger frames fails and its videos are decoded one by one. Peak RSS of
/// one ffmpeg with one decoding thread per input, 8 videos (one alone): at
/// 1280×720 178 MB (66 MB), at 1920×1080 313 MB (80 MB), at 3840×2160
/// 1046 MB (154 MB).
const BATCH_MAX_PIXELS: u64 = 1280 * 720;

/// Whether the outputs of a batch are decoded one after another (see
/// [`decode_videos`]); cleared for the rest of the process by an ffmpeg
/// without the `setts` bitstream filter (before 4.4).
static SERIAL: AtomicBool = AtomicBool::new(true);

/// Seconds between the timestamps of consecutive outputs of a batch (34
/// years, longer than any video; for [`BATCH`] outputs and a 90 kHz time
/// base the shifted times stay exact in the double precision `setts`
/// computes in).
const SERIAL_SHIFT_S: u64 = 1 << 30;

/// A frame consumer that can run on a thread of its own.
pub type SendSink<'a> = dyn FnMut(Yuv420) -> Result<(), ItemError> + Send + 'a;

/// Decodes several videos with one ffmpeg process, which pays ffmpeg's
/// start-up (about 60 ms of CPU, mostly its dynamic linking) once for all of
/// them. Each video is an output of its own, with the options of
/// [`decode_video`], so its frames are the same; they reach its sink on a
/// thread of its own, through a named pipe that ffmpeg writes to.
///
/// The videos are decoded one after another, not interleaved. ffmpeg 5.1
/// (Debian 12's; later versions schedule their outputs differently, and
/// give the same frames either way) works on the output whose last muxed
/// packet has the smallest timestamp, which left to itself keeps every
/// decoder of the batch going at once, each evicting the others' frames
/// from the caches. The packets of output `i` are shifted by `i` × 2^30 s
/// with the `setts` bitstream filter, after `-r` has chosen its frames
/// (YUV4MPEG stores no timestamps, so the output is the same), and it waits
/// until the outputs before it are done; each one still starts early, as
/// ffmpeg sets up every output before it sorts them by time.
///
/// [`BatchOutcome::Decoded`] only if ffmpeg succeeded without printing an error and
/// every video gave at least one frame that its sink took. Otherwise the
/// caller must throw away what the sinks received and decode the videos one
/// by one with [`decode_video`], which reports each one's errors against it.
pub fn decode_videos(
    paths: &[&Path],
    frame_rate: Option<f64>,
    threads: Option<NonZeroU32>,
    sinks: &mut [&mut SendSink<'_>],
) -> BatchOutcome {
    if paths.is_empty() || paths.len() != sinks.len() {
        return BatchOutcome::Failed;
    }
    if frame_rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
        return BatchOutcome::Failed;
    }
    let Ok(dir) = tempfile::Builder::new().prefix("gulp-ffmpeg-").tempdir() else {
        return BatchOutcome::Failed;
    };
    let Some((fifos, readers, keepers)) = open_fifos(dir.path(), paths.len()) else {
        return BatchOutcome::Failed;
    };
    let Ok(ffmpeg) = ffmpeg::binary() else {
        return BatchOutcome::Failed;
    };
    let serial = SERIAL.load(Ordering::Relaxed);
    let mut cmd = batch_command(&ffmpeg, paths, &fifos, frame_rate, threads, serial);
    let Ok(mut child) = cmd.spawn() else {
        return BatchOutcome::Failed;
    };
    let stderr = collect_stderr(&mut child);
    let too_large = AtomicBool::new(false);
    let too_large = &too_large;
    let all_read = thread::scope(|scope| {
        let readers: Vec<_> = readers
            .into_iter()
            .zip(sinks.iter_mut())
            .enumerate()
            .map(|(i, (stream, sink))| {
                thread::Builder::new()
                    .name(format!("ffmpeg-output-{i}"))
                    .spawn_scoped(scope, move || read_output(stream, sink, too_large))
            })
            .collect();
        let status = child.wait();
        // ffmpeg's write ends are closed: closing ours ends every stream,
        // including those of outputs ffmpeg never opened (it stopped early).
        drop(keepers);
        let mut rates = Some(Vec::with_capacity(readers.len()));
        if !matches!(status, Ok(s) if s.success()) {
            rates = None;
        }
        for reader in readers {
            let rate = match reader {
                Ok(handle) => handle.join().ok().flatten(),
                Err(_) => None,
            };
            match (rate, rates.as_mut()) {
                (Some(rate), Some(all)) => all.push(rate),
                _ => rates = None,
            }
        }
        rates
    });
    let message = stderr_text(stderr);
    if serial && message.as_deref().is_some_and(|m| m.contains("setts")) {
        // An ffmpeg older than 4.4 (no `setts`); this batch is decoded one
        // video at a time by the caller, later ones interleaved.
        SERIAL.store(false, Ordering::Relaxed);
    }
    if too_large.load(Ordering::Relaxed) {
        BatchOutcome::TooLarge
    } else if let (Some(rates), None) = (all_read, &message) {
        BatchOutcome::Decoded(rates)
    } else {
        BatchOutcome::Failed
    }
}

/// One named pipe per video in `dir`, both ends open before ffmpeg starts
/// (see `open_fifo`): the pipes' paths, the read ends, and the write ends
/// kept open until ffmpeg exits.
fn open_fifos(dir: &Path, n: usize) -> Option<(Vec<PathBuf>, Vec<File>, Vec<File>)> {
    let mut fifos = Vec::with_capacity(n);
    let mut ends = Vec::with_capacity(n);
    for i in 0..n {
        let fifo = dir.join(format!("{i}.y4m"));
        ends.push(open_fifo(&fifo).ok()?);
        fifos.push(fifo);
    }
    let (readers, keepers) = ends.into_iter().unzip();
    Some((fifos, readers, keepers))
}

/// The ffmpeg command that decodes `paths` into `fifos`, one output each,
/// shifted in time one after the other when `serial` (see [`SERIAL`]).
fn batch_command(
    ffmpeg: &Path,
    paths: &[&Path],
    fifos: &[PathBuf],
    frame_rate: Option<f64>,
    threads: Option<NonZeroU32>,
    serial: bool,
) -> Command {
    let mut cmd = Command::new(ffmpeg);
    // -y: the outputs exist (they are the pipes).
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error", "-y"]);
    for path in paths {
        input_args(&mut cmd, path, threads);
    }
    for (i, fifo) in fifos.iter().enumerate() {
        output_args(&mut cmd, i, frame_rate);
        if serial && i > 0 {
            cmd.arg("-bsf:v")
                .arg(format!("setts=ts=TS+{i}*{SERIAL_SHIFT_S}/TB"));
        }
        let mut url = OsString::from("file:");
        url.push(fifo);
        cmd.arg(url);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// Reads one output of a batch into its sink, on the output's own thread;
/// whether it gave at least one frame and the sink took them all.
///
/// This thread reads and encodes. While it encodes, ffmpeg writes on into
/// the pipe (1 MiB: a whole frame up to 720p) and wakes nobody; a reader
/// thread of its own drained the pipe as fast as it filled and was woken by
/// most of ffmpeg's 32 KiB writes (on the corpus, 20 % more context
/// switches and 2-3 % more CPU time). A sink that fails, or frames too
/// large (then `too_large` is set), end the read, which closes this end of
/// the pipe: ffmpeg's next write to it fails and it exits.
fn read_output(
    stream: File,
    sink: &mut &mut SendSink<'_>,
    too_large: &AtomicBool,
) -> Option<Option<f64>> {
    let read = read_stream(stream, &mut |frame| {
        if u64::from(frame.width) * u64::from(frame.height) > BATCH_MAX_PIXELS {
            too_large.store(true, Ordering::Relaxed);
            return Err(ItemError::new("frames too large to batch"));
        }
        sink(frame)
    });
    read.ok().filter(|s| s.frames > 0).map(|s| s.rate)
}

/// What became of a batch given to [`decode_videos`].
#[derive(Debug, Clone, PartialEq)]
pub enum BatchOutcome {
    /// Every video was decoded and taken by its sink; each one's frame
    /// rate (see [`Decoded::frame_rate`]).
    Decoded(Vec<Option<f64>>),
    /// Something failed (a video, ffmpeg, a sink); decode them one by one.
    Failed,
    /// A video has frames over the batch limit (1280×720 pixels); decode
    /// them one by one, and larger videos are likely to follow.
    TooLarge,
}

/// Pipe buffer asked for on ffmpeg's outputs (Linux's default is 64 KiB; an
/// unprivileged process may go up to `/proc/sys/fs/pipe-max-size`, 1 MiB by
/// default). A larger buffer means fewer hand-overs between ffmpeg and the
/// reader per frame.
const PIPE_SIZE: usize = 1 << 20;

/// Makes a named pipe at `path` and opens both of its ends without waiting
/// for ffmpeg: the read end, for a reader thread, and a write end that the
/// caller keeps until ffmpeg has exited. The reader then sees the end of the
/// stream only once ffmpeg is done with it, and also when ffmpeg stopped
/// before opening it, so no reader ever waits for an open that will not
/// come. Both are close-on-exec, so that no other ffmpeg (of another worker)
/// holds an end of this pipe.
fn open_fifo(path: &Path) -> std::io::Result<(File, File)> {
    use rustix::fs::{Mode, OFlags};
    rustix::fs::mkfifoat(rustix::fs::CWD, path, Mode::RUSR | Mode::WUSR)?;
    // Opening the read end of a pipe without a writer waits, unless
    // non-blocking; reads are blocking again from then on.
    let read = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    rustix::fs::fcntl_setfl(&read, OFlags::empty())?;
    // With a reader there, opening the write end does not wait.
    let keep = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    // Best effort: the default size works, only with more hand-overs.
    let _ = rustix::pipe::fcntl_setpipe_size(&read, PIPE_SIZE);
    Ok((File::from(read), File::from(keep)))
}

fn format_rate(rate: f64) -> String {
    if rate.fract() == 0.0 && rate < 1e9 {
        format!("{rate:.0}")
    } else {
        format!("{rate}")
    }
}

type Shared = Arc<Mutex<Vec<u8>>>;

/// Drains ffmpeg's stderr on a thread (so a chatty ffmpeg never blocks on a
/// full pipe), keeping the first `STDERR_KEEP` bytes.
fn collect_stderr(child: &mut Child) -> (Shared, Option<thread::JoinHandle<()>>) {
    let buf: Shared = Arc::new(Mutex::new(Vec::new()));
    let handle = child.stderr.take().map(|mut err| {
        let buf = Arc::clone(&buf);
        thread::Builder::new()
            .name("ffmpeg-stderr".into())
            .spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n) = err.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut b) = buf.lock() {
                        let room = STDERR_KEEP.saturating_sub(b.len());
                        b.extend_from_slice(&chunk[..n.min(room)]);
                    }
                }
            })
            .ok()
    });
    (buf, handle.flatten())
}

fn stderr_text(stderr: (Shared, Option<thread::JoinHandle<()>>)) -> Option<String> {
    let (buf, handle) = stderr;
    if let Some(h) = handle {
        // The pipe closes when ffmpeg exits, which ends the thread.
        let _ = h.join();
    }
    let text = buf
        .lock()
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    (!text.is_empty()).then(|| text.lines().collect::<Vec<_>>().join(" | "))
}

fn read_frames(
    child: &mut Child,
    sink: &mut dyn FnMut(Yuv420) -> Result<(), ItemError>,
) -> Result<Stream, ItemError> {
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| ItemError::new("ffmpeg has no stdout"))?;
    read_stream(stdout, sink)
}

/// What a YUV4MPEG2 stream held besides its frames.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stream {
    frames: usize,
    /// Its header's frame rate (`F`).
    rate: Option<f64>,
}

/// Reads a YUV4MPEG2 stream to its end, giving each frame to `sink`.
fn read_stream(
    stream: impl Read + AsFd,
    sink: &mut dyn FnMut(Yuv420) -> Result<(), ItemError>,
) -> Result<Stream, ItemError> {
    let mut reader = BufReader::with_capacity(1 << 20, stream);
    let mut frames = 0usize;
    if reader
        .fill_buf()
        .map_err(|e| ItemError::new(format!("reading ffmpeg output: {e}")))?
        .is_empty()
    {
        return Ok(Stream {
            frames: 0,
            rate: None,
        });
    }
    let header = read_line(&mut reader, MAX_HEADER)
        .and_then(|line| StreamHeader::parse(&line))
        .map_err(|e| ItemError::new(format!("ffmpeg output at byte 0: {e}")))?;
    let len = Yuv420::byte_len(header.width, header.height)
        .filter(|&l| l <= 1 << 31)
        .ok_or_else(|| {
            ItemError::new(format!(
                "{}x{} frames are too large",
                header.width, header.height
            ))
        })?;
    let mut offset = header.len;
    loop {
        if reader
            .fill_buf()
            .map_err(|e| ItemError::new(format!("reading ffmpeg output: {e}")))?
            .is_empty()
        {
            return Ok(Stream {
                frames,
                rate: header.rate,
            });
        }
        let line = read_line(&mut reader, MAX_FRAME_HEADER).map_err(|e| {
            ItemError::new(format!(
                "frame {frames}: ffmpeg output at byte {offset}: {e}"
            ))
        })?;
        if line != b"FRAME" && !line.starts_with(b"FRAME ") {
            return Err(ItemError::new(format!(
                "frame {frames}: ffmpeg output at byte {offset}: not a YUV4MPEG2 frame header"
            )));
        }
        let data = read_frame_data(&mut reader, len).map_err(|e| {
            ItemError::new(format!(
                "frame {frames}: ffmpeg output ended inside a frame: {e}"
            ))
        })?;
        offset += line.len() as u64 + 1 + len as u64;
        sink(Yuv420 {
            width: header.width,
            height: header.height,
            data,
            full_range: header.full_range,
        })?;
        frames += 1;
    }
}

/// Reads the `len` bytes of a frame's planes: what `reader` holds, then
/// straight from the pipe into the frame's buffer, which is not zeroed first
/// (a frame is up to 1.4 MB at 720p, and every byte of it is overwritten).
fn read_frame_data<R: Read + AsFd>(
    reader: &mut BufReader<R>,
    len: usize,
) -> std::io::Result<Vec<u8>> {
    // Reads fill the spare capacity, so it must be exactly `len` bytes, or
    // they could take bytes of the next frame. `with_capacity` gives that
    // for bytes in practice but promises only "at least": a larger buffer
    // takes the zeroed path.
    let mut data = Vec::with_capacity(len);
    let held = reader.buffer();
    let n = held.len().min(len);
    data.extend_from_slice(&held[..n]);
    reader.consume(n);
    if data.capacity() != len {
        data.resize(len, 0);
        return reader.get_mut().read_exact(&mut data[n..]).map(|()| data);
    }
    while data.len() < len {
        match rustix::io::read(reader.get_ref(), rustix::buffer::spare_capacity(&mut data)) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("{} of {len} bytes", data.len()),
                ));
            }
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(data)
}

/// The longest stream header accepted (ffmpeg's are under 100 bytes).
const MAX_HEADER: usize = 4096;
/// The longest frame header accepted (ffmpeg writes `FRAME`).
const MAX_FRAME_HEADER: usize = 1024;

/// Reads one line up to `\n` (not included), at most `max` bytes.
fn read_line(reader: &mut impl BufRead, max: usize) -> Result<Vec<u8>, String> {
    let mut line = Vec::new();
    reader
        .take(max as u64 + 1)
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("reading a header: {e}"))?;
    if line.last() != Some(&b'\n') {
        return Err(if line.len() > max {
            format!("header line longer than {max} bytes")
        } else {
            "output ended inside a header".into()
        });
    }
    line.pop();
    Ok(line)
}

/// What the YUV4MPEG2 stream header says.
#[derive(Debug, PartialEq)]
struct StreamHeader {
    width: u32,
    height: u32,
    /// `XCOLORRANGE=FULL` (yuvj420p); video range otherwise.
    full_range: bool,
    /// `F<num>:<den>`, frames per second.
    rate: Option<f64>,
    /// Bytes of the header line, newline included.
    len: u64,
}

impl StreamHeader {
    /// Parses `YUV4MPEG2 W.. H.. [F..] [I..] [A..] [C..] [X..]` (the line
    /// without its newline).
    fn parse(line: &[u8]) -> Result<StreamHeader, String> {
        let text = std::str::from_utf8(line).map_err(|_| "not a YUV4MPEG2 stream header")?;
        let mut fields = text.split(' ');
        if fields.next() != Some("YUV4MPEG2") {
            return Err("not a YUV4MPEG2 stream header".into());
        }
        let (mut width, mut height, mut full_range, mut rate) = (None, None, false, None);
        for field in fields {
            let number = |s: &str| {
                s.parse::<u32>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("bad YUV4MPEG2 size field {field:?}"))
            };
            if let Some(w) = field.strip_prefix('W') {
                width = Some(number(w)?);
            } else if let Some(h) = field.strip_prefix('H') {
                height = Some(number(h)?);
            } else if let Some(c) = field.strip_prefix('C') {
                // 420, 420jpeg, 420mpeg2, 420paldv: the same planes.
                if !c.starts_with("420") {
                    return Err(format!("unexpected YUV4MPEG2 pixel layout {c:?}"));
                }
            } else if let Some(range) = field.strip_prefix("XCOLORRANGE=") {
                full_range = range == "FULL";
            } else if let Some((n, d)) = field.strip_prefix('F').and_then(|f| f.split_once(':')) {
                // 0:0 (unknown) and anything malformed: no rate.
                rate = match (n.parse::<u32>(), d.parse::<u32>()) {
                    (Ok(n), Ok(d)) if n > 0 && d > 0 => Some(f64::from(n) / f64::from(d)),
                    _ => None,
                };
            }
        }
        match (width, height) {
            (Some(width), Some(height)) => Ok(StreamHeader {
                width,
                height,
                full_range,
                rate,
                len: line.len() as u64 + 1,
            }),
            _ => Err("YUV4MPEG2 stream header without a frame size".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_header() {
        let h = StreamHeader::parse(b"YUV4MPEG2 W768 H576 F8:1 Ip A0:0 C420mpeg2 XYSCSS=420MPEG2")
            .unwrap();
        assert_eq!(
            (h.width, h.height, h.full_range, h.len),
            (768, 576, false, 59)
        );
        let h = StreamHeader::parse(
            b"YUV4MPEG2 W100 H74 F8:1 Ip A1:1 C420jpeg XYSCSS=420JPEG XCOLORRANGE=FULL",
        )
        .unwrap();
        assert!(h.full_range);
        let h = StreamHeader::parse(b"YUV4MPEG2 W3 H2 XCOLORRANGE=LIMITED").unwrap();
        assert_eq!((h.width, h.height, h.full_range), (3, 2, false));
        for bad in [
            &b"YUV4MPEG W3 H2"[..],
            b"YUV4MPEG2 W3",
            b"YUV4MPEG2 W0 H2",
            b"YUV4MPEG2 W3 H2 C444",
            b"YUV4MPEG2 W99999999999 H2",
            b"\xff",
        ] {
            assert!(StreamHeader::parse(bad).is_err(), "{bad:?}");
        }
    }

    /// Frames written in pieces, with pauses, so that the reader gets part
    /// of a frame from its buffer and the rest straight from the pipe; then
    /// a frame cut short.
    #[test]
    fn frames_are_read_whole_from_a_pipe() {
        use std::io::Write;
        let (reader, mut writer) = std::io::pipe().unwrap();
        let len = Yuv420::byte_len(64, 48).unwrap();
        let frame = move |k: usize| -> Vec<u8> {
            (0..len)
                .map(|i| u8::try_from((i * 7 + k * 13) % 251).unwrap())
                .collect()
        };
        let feeder = thread::spawn(move || {
            writer
                .write_all(b"YUV4MPEG2 W64 H48 F8:1 Ip A1:1 C420mpeg2\n")
                .unwrap();
            for k in 0..3 {
                writer.write_all(b"FRAME\n").unwrap();
                for piece in frame(k).chunks(1000) {
                    writer.write_all(piece).unwrap();
                    thread::sleep(std::time::Duration::from_millis(5));
                }
            }
            writer.write_all(b"FRAME\n").unwrap();
            writer.write_all(&frame(3)[..len - 1]).unwrap();
        });
        let mut got = Vec::new();
        let err = read_stream(reader, &mut |f| {
            got.push(f);
            Ok(())
        })
        .unwrap_err();
        feeder.join().unwrap();
        assert_eq!(got.len(), 3);
        for (k, f) in got.iter().enumerate() {
            assert_eq!((f.width, f.height, f.full_range), (64, 48, false));
            assert!(f.data == frame(k), "frame {k} differs");
        }
        assert!(
            err.reason.contains("frame 3") && err.reason.contains("ended inside a frame"),
            "{}",
            err.reason
        );
    }

    #[test]
    fn header_lines() {
        let mut r: &[u8] = b"FRAME\nrest";
        assert_eq!(read_line(&mut r, 10).unwrap(), b"FRAME");
        assert_eq!(r, b"rest");
        assert!(
            read_line(&mut &b"FRAME"[..], 10)
                .unwrap_err()
                .contains("ended")
        );
        assert!(
            read_line(&mut &b"FRAMEFRAMEFRAME\n"[..], 10)
                .unwrap_err()
                .contains("longer")
        );
    }

    #[test]
    fn rates() {
        assert_eq!(format_rate(8.0), "8");
        assert_eq!(format_rate(12.5), "12.5");
    }
}
