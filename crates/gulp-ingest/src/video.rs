//! Video decoding with the `ffmpeg` binary: raw RGB frames on a pipe.
//!
//! ffmpeg writes each frame as a binary PPM (`P6`) image on its stdout, so the
//! frame size travels with every frame and nothing touches the disk (gulpio2
//! bursts JPEGs into `/dev/shm` first). `-r RATE` is an output option, as in
//! gulpio2's `ffmpeg -i VIDEO -r RATE … -f image2`, so the same frames are
//! dropped or duplicated and the frame count is the same.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;

use crate::adapter::Pixels;
use crate::error::ItemError;

/// The ffmpeg binary: `$GULP_FFMPEG` if set, else `ffmpeg` on the `PATH`.
pub fn ffmpeg_binary() -> std::ffi::OsString {
    std::env::var_os("GULP_FFMPEG").unwrap_or_else(|| "ffmpeg".into())
}

/// How many bytes of ffmpeg's error output are kept for a report.
const STDERR_KEEP: usize = 4096;

/// Decodes `path` at `frame_rate` (every frame when `None`), giving each frame
/// to `sink` as RGB pixels. Returns what ffmpeg printed at its "error" log
/// level when it still exited successfully (e.g. a damaged packet it could
/// skip), so the caller can report it.
pub fn decode_video(
    path: &Path,
    frame_rate: Option<f64>,
    sink: &mut dyn FnMut(Pixels) -> Result<(), ItemError>,
) -> Result<Option<String>, ItemError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(ItemError::at(path, "not a file")),
        Err(e) => return Err(ItemError::at(path, format!("cannot open video: {e}"))),
    }
    let mut cmd = Command::new(ffmpeg_binary());
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error", "-i"])
        .arg(path);
    if let Some(rate) = frame_rate {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(ItemError::new(format!("frame rate {rate} is not positive")).fatal());
        }
        cmd.arg("-r").arg(format_rate(rate));
    }
    cmd.args([
        "-an",
        "-sn",
        "-f",
        "image2pipe",
        "-c:v",
        "ppm",
        "-pix_fmt",
        "rgb24",
        "-",
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ItemError::new(format!(
                "{} not found: videos are decoded with ffmpeg; install it (e.g. `apt-get install ffmpeg`) or set GULP_FFMPEG to its path",
                ffmpeg_binary().to_string_lossy()
            ))
            .fatal()
        } else {
            ItemError::new(format!("cannot start ffmpeg: {e}")).fatal()
        }
    })?;
    let stderr = collect_stderr(&mut child);
    let result = read_frames(&mut child, sink);
    if result.is_err() {
        let _ = child.kill();
    }
    let status = child.wait();
    let message = stderr_text(stderr);
    let frames = result.map_err(|e| match &message {
        Some(m) if e.path.is_none() => ItemError::at(path, format!("{}; ffmpeg: {m}", e.reason)),
        _ => e,
    })?;
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => {
            let message = message.as_deref().unwrap_or("no message");
            let what = if message.contains("does not contain any stream") {
                "no video stream"
            } else {
                "ffmpeg failed"
            };
            return Err(ItemError::at(path, format!("{what} ({s}): {message}")));
        }
        Err(e) => return Err(ItemError::at(path, format!("waiting for ffmpeg: {e}"))),
    }
    if frames == 0 {
        return Err(ItemError::at(
            path,
            match message {
                Some(m) => format!("no frames decoded; ffmpeg: {m}"),
                None => "no frames decoded (the video has no video frames)".into(),
            },
        ));
    }
    Ok(message)
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
    sink: &mut dyn FnMut(Pixels) -> Result<(), ItemError>,
) -> Result<usize, ItemError> {
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| ItemError::new("ffmpeg has no stdout"))?;
    let mut reader = BufReader::with_capacity(1 << 20, stdout);
    let mut frames = 0usize;
    let mut offset = 0u64;
    loop {
        if reader
            .fill_buf()
            .map_err(|e| ItemError::new(format!("reading ffmpeg output: {e}")))?
            .is_empty()
        {
            return Ok(frames);
        }
        let (width, height, header_len) = read_ppm_header(&mut reader).map_err(|e| {
            ItemError::new(format!(
                "frame {frames}: ffmpeg output at byte {offset}: {e}"
            ))
        })?;
        let len = u64::from(width) * u64::from(height) * 3;
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= 1 << 31)
            .ok_or_else(|| {
                ItemError::new(format!("frame {frames}: {width}x{height} is too large"))
            })?;
        let mut data = vec![0u8; len];
        reader.read_exact(&mut data).map_err(|e| {
            ItemError::new(format!(
                "frame {frames}: ffmpeg output ended inside a frame: {e}"
            ))
        })?;
        offset += header_len + len as u64;
        sink(Pixels {
            width,
            height,
            channels: 3,
            data,
        })?;
        frames += 1;
    }
}

/// Reads `P6 <w> <h> <maxval>` and the one whitespace byte after it.
fn read_ppm_header(reader: &mut impl BufRead) -> Result<(u32, u32, u64), String> {
    let mut consumed = 0u64;
    let mut next_byte = |consumed: &mut u64| -> Result<u8, String> {
        let mut b = [0u8; 1];
        reader
            .read_exact(&mut b)
            .map_err(|e| format!("in a PPM header: {e}"))?;
        *consumed += 1;
        Ok(b[0])
    };
    if next_byte(&mut consumed)? != b'P' || next_byte(&mut consumed)? != b'6' {
        return Err("not a PPM (P6) frame".into());
    }
    let mut numbers = [0u32; 3];
    for n in &mut numbers {
        let mut b = next_byte(&mut consumed)?;
        while b.is_ascii_whitespace() {
            b = next_byte(&mut consumed)?;
        }
        let mut value: u32 = 0;
        let mut digits = 0;
        while b.is_ascii_digit() {
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u32::from(b - b'0')))
                .ok_or("PPM header number overflows")?;
            digits += 1;
            b = next_byte(&mut consumed)?;
        }
        if digits == 0 || !b.is_ascii_whitespace() {
            return Err("malformed PPM header".into());
        }
        *n = value;
    }
    let [width, height, maxval] = numbers;
    if maxval != 255 || width == 0 || height == 0 {
        return Err(format!(
            "unexpected PPM frame {width}x{height} maxval {maxval}"
        ));
    }
    Ok((width, height, consumed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ppm_header() {
        let mut r: &[u8] = b"P6\n640 360\n255\nrest";
        assert_eq!(read_ppm_header(&mut r).unwrap(), (640, 360, 15));
        assert_eq!(r, b"rest");
        assert!(read_ppm_header(&mut &b"P5\n1 1\n255\n"[..]).is_err());
        assert!(read_ppm_header(&mut &b"P6\n1 1\n65535\n"[..]).is_err());
        assert!(read_ppm_header(&mut &b"P6\n99999999999 1\n255\n"[..]).is_err());
        assert!(read_ppm_header(&mut &b"P6\n1"[..]).is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(format_rate(8.0), "8");
        assert_eq!(format_rate(12.5), "12.5");
    }
}
