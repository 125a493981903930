//! Real media made with the real ffmpeg, for the ingest tests of gulp-ingest
//! and gulp-cli: test-pattern videos, gulpio2's black-and-white video, 20BN
//! JPEG frame folders; and listings of what a directory holds.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs the real ffmpeg (quiet, overwriting) and returns its stdout.
pub fn ffmpeg(args: &[&str]) -> Vec<u8> {
    let out = Command::new("ffmpeg")
        .args(["-nostdin", "-hide_banner", "-loglevel", "error", "-y"])
        .args(args)
        .output()
        .expect("ffmpeg must be installed (scripts/env/deps.sh installs it)");
    assert!(
        out.status.success(),
        "ffmpeg {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// gulpio2's integration-test video: 80 frames, 100x100, alternating black
/// and white, 8 fps, made exactly as its `system_tests.py` does.
pub fn black_white_video(dir: &Path) -> PathBuf {
    let raw = dir.join("source");
    let mut bytes = Vec::with_capacity(40 * 60000);
    for _ in 0..40 {
        bytes.extend(std::iter::repeat_n(0u8, 30000));
        bytes.extend(std::iter::repeat_n(0xffu8, 30000));
    }
    fs::write(&raw, bytes).unwrap();
    let out = dir.join("source.mp4");
    ffmpeg(&[
        "-t",
        "10",
        "-s",
        "100x100",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "-r",
        "8",
        "-i",
        raw.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    out
}

/// A short moving test pattern (`testsrc2`), `seconds` long at `fps`.
pub fn test_video(path: &Path, size: &str, fps: u32, seconds: f64) {
    testsrc2(path, size, fps, seconds, &[]);
}

/// `testsrc2` encoded to `path`, with `extra` output options.
fn testsrc2(path: &Path, size: &str, fps: u32, seconds: f64, extra: &[&str]) {
    let source = format!("testsrc2=size={size}:rate={fps}:duration={seconds}");
    let mut args = vec!["-f", "lavfi", "-i", &source, "-pix_fmt", "yuv420p"];
    args.extend(extra);
    args.push(path.to_str().unwrap());
    ffmpeg(&args);
}

/// JPEG frames of a test pattern, as a 20BN frame folder.
pub fn jpeg_folder(dir: &Path, size: &str, frames: u32) {
    fs::create_dir_all(dir).unwrap();
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        &format!("testsrc2=size={size}:rate=10"),
        "-frames:v",
        &frames.to_string(),
        "-q:v",
        "3",
        dir.join("%05d.jpg").to_str().unwrap(),
    ]);
}

/// Every file of a directory (not hidden ones) with its bytes.
pub fn dir_contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().into_string().unwrap(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// Names of every entry of a directory, hidden ones included.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// A `testsrc2` clip whose stream starts at 0.2 s, as clips cut from a
/// longer video do (how `-r` treats the start depends on ffmpeg's other
/// options).
pub fn late_start_video(path: &Path, size: &str, fps: u32, seconds: f64) {
    testsrc2(path, size, fps, seconds, &["-output_ts_offset", "0.2"]);
}

/// How `flash_beep_video` encodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// H.264 and AAC in MP4.
    Mp4,
    /// VP9 and Opus in WebM.
    Webm,
}

/// A test video with events at known times: a moving test pattern
/// (`testsrc2`, `size` at `fps`, `seconds` long) where a white box fills
/// the frame from each event time for [`FLASH_S`], and a 1 kHz beep (48
/// kHz) over the same spans. `audio_delay` starts the audio stream that
/// much after the video (`-itsoffset`); `vfr` keeps one frame in three
/// between 1 s and 2 s, each with its own timestamp (a variable frame
/// rate).
#[derive(Debug, Clone, Copy)]
pub struct FlashBeep<'a> {
    /// The encoding.
    pub container: Container,
    /// `WxH`.
    pub size: &'a str,
    /// Frames per second (before `vfr` drops some).
    pub fps: u32,
    /// Length.
    pub seconds: f64,
    /// When the flashes and beeps start.
    pub events: &'a [f64],
    /// How much later the audio stream starts.
    pub audio_delay: f64,
    /// A variable frame rate.
    pub vfr: bool,
    /// An audio stream (with the beeps).
    pub sound: bool,
}

impl FlashBeep<'_> {
    /// A 160×120 mp4 at 25 fps, `seconds` long, with these events.
    pub fn mp4(seconds: f64, events: &[f64]) -> FlashBeep<'_> {
        FlashBeep {
            container: Container::Mp4,
            size: "160x120",
            fps: 25,
            seconds,
            events,
            audio_delay: 0.0,
            vfr: false,
            sound: true,
        }
    }

    /// Encodes it to `path`.
    pub fn write(&self, path: &Path) {
        let FlashBeep {
            container,
            size,
            fps,
            seconds,
            events,
            audio_delay,
            vfr,
            sound,
        } = *self;
        let delay = if sound { Some(audio_delay) } else { None };
        flash_beep_video(path, container, size, fps, seconds, events, delay, vfr);
    }
}

#[allow(clippy::too_many_arguments)] // FlashBeep's fields
fn flash_beep_video(
    path: &Path,
    container: Container,
    size: &str,
    fps: u32,
    seconds: f64,
    events: &[f64],
    audio_delay: Option<f64>,
    vfr: bool,
) {
    let between = |t: f64| format!("between(t,{t},{})", t + FLASH_S);
    let on = events
        .iter()
        .map(|&t| between(t))
        .collect::<Vec<_>>()
        .join("+");
    let on = if on.is_empty() { "0".to_owned() } else { on };
    let video = format!("testsrc2=size={size}:rate={fps}:duration={seconds}");
    let mut filter = format!("drawbox=x=0:y=0:w=iw:h=ih:color=white:t=fill:enable='{on}'");
    if vfr {
        filter.push_str(",select='not(between(t,1,2))+not(mod(n,3))'");
    }
    // The beep's events shifted back by the delay: the stream is moved
    // forward by it.
    let beeps = events
        .iter()
        .map(|&t| between(t - audio_delay.unwrap_or(0.0)))
        .collect::<Vec<_>>()
        .join("+");
    let beeps = if beeps.is_empty() {
        "0".to_owned()
    } else {
        beeps
    };
    let audio = format!(
        "aevalsrc='0.6*sin(2*PI*1000*t)*({beeps})':s=48000:d={}",
        seconds - audio_delay.unwrap_or(0.0)
    );
    let delay = audio_delay.unwrap_or(0.0).to_string();
    let mut args = vec!["-f", "lavfi", "-i", &video];
    if audio_delay.is_some_and(|d| d > 0.0) {
        args.extend(["-itsoffset", &delay]);
    }
    if audio_delay.is_some() {
        args.extend(["-f", "lavfi", "-i", &audio]);
    }
    args.extend(["-vf", &filter, "-pix_fmt", "yuv420p"]);
    if vfr {
        args.extend(["-fps_mode", "vfr"]);
    }
    match container {
        Container::Mp4 => args.extend(["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"]),
        Container::Webm => args.extend([
            "-c:v",
            "libvpx-vp9",
            "-deadline",
            "realtime",
            "-cpu-used",
            "8",
            "-c:a",
            "libopus",
        ]),
    }
    if audio_delay.is_none() {
        args.push("-an");
    }
    args.push(path.to_str().unwrap());
    ffmpeg(&args);
}

/// How long each flash and beep of `flash_beep_video` lasts.
pub const FLASH_S: f64 = 0.1;

/// The presentation times (seconds) of every video frame of `path`, as
/// ffprobe reads them from the packets, sorted.
pub fn frame_times(path: &Path) -> Vec<f64> {
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v:0", "-show_entries"])
        .args(["packet=pts_time", "-of", "csv=p=0"])
        .arg(path)
        .output()
        .expect("ffprobe comes with ffmpeg");
    assert!(out.status.success(), "ffprobe {}", path.display());
    let mut times: Vec<f64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().trim_end_matches(',').parse().ok())
        .collect();
    times.sort_by(f64::total_cmp);
    times
}

/// Writes a wrapper script `dir/ffmpeg` that appends its arguments, one
/// run a line, to `dir/ffmpeg.log` and runs the real ffmpeg: for tests
/// that count ffmpeg's starts (`GULP_FFMPEG`).
pub fn counting_ffmpeg(dir: &Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let real = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v ffmpeg"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let log = dir.join("ffmpeg.log");
    let script = dir.join("ffmpeg");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.trim()
        ),
    )
    .unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    (script, log)
}
