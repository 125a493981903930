//! Which ffmpeg decodes the videos, and whether it is new enough.
//!
//! The rule, in this order: `$GULP_FFMPEG`; `ffmpeg` on the `PATH`; the
//! bundled binary a host registered with [`set_bundled`] (the Python
//! package registers the static build of the optional `imageio-ffmpeg`
//! package, `pip install "gulp-video[ffmpeg]"`). The first one found is
//! the one run, once checked to be ffmpeg [`MIN_VERSION`] or later; an
//! `ffmpeg` on the `PATH` older than that gives way to the bundled one
//! when there is one (`$GULP_FFMPEG`, a choice, never does).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError};

/// The oldest ffmpeg gulp runs: 4.0, whose libavformat is 58 (5.x is 59,
/// 6.x 60, 7.x 61). The command lines gulp gives need nothing newer
/// (`-map N:V:0`, `-pix_fmt yuv420p -f yuv4mpegpipe`, several outputs);
/// an ffmpeg before 4.4 has no `setts` bitstream filter, so its batches
/// of videos are decoded interleaved rather than one after another (the
/// same frames; see `video::decode_videos`).
pub const MIN_VERSION: &str = "4.0";

/// libavformat's major version in [`MIN_VERSION`].
const MIN_LIBAVFORMAT: u32 = 58;

/// How to get an ffmpeg, the end of every "not found" message.
const HOW_TO_GET: &str = "set GULP_FFMPEG to an ffmpeg binary, put `ffmpeg` on the PATH (e.g. `apt-get install ffmpeg`), or `pip install \"gulp-video[ffmpeg]\"` for a static build";

/// The bundled ffmpeg, the last resort of the rule.
static BUNDLED: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The result of each binary's version check (its libavformat major
/// version when `-version` printed one), so that it runs once per process.
type Checked = Result<Option<u32>, String>;
static CHECKED: Mutex<Option<HashMap<PathBuf, Checked>>> = Mutex::new(None);

/// Registers the ffmpeg used when neither `$GULP_FFMPEG` nor `ffmpeg` on
/// the `PATH` is there (`None` forgets it).
pub fn set_bundled(path: Option<PathBuf>) {
    *BUNDLED.lock().unwrap_or_else(PoisonError::into_inner) = path;
}

/// The ffmpeg to run, by the rule of this module, checked to be
/// [`MIN_VERSION`] or later; otherwise one line that says what is wrong
/// and how to get one.
pub fn binary() -> Result<PathBuf, String> {
    let (path, chosen) = find()?;
    match checked(&path) {
        Ok(_) => Ok(path),
        Err(too_old) if !chosen => match bundled().filter(|b| *b != path) {
            Some(b) if checked(&b).is_ok() => Ok(b),
            _ => Err(too_old),
        },
        Err(e) => Err(e),
    }
}

/// The bundled ffmpeg, when one is registered and executable.
fn bundled() -> Option<PathBuf> {
    BUNDLED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .filter(|p| is_executable(p))
}

/// The version check of `path`, run once per process.
fn checked(path: &Path) -> Checked {
    let mut checked = CHECKED.lock().unwrap_or_else(PoisonError::into_inner);
    let checked = checked.get_or_insert_with(HashMap::new);
    if let Some(result) = checked.get(path) {
        return result.clone();
    }
    let result = check_version(path);
    checked.insert(path.to_path_buf(), result.clone());
    result
}

/// The options of a timed decode that changed names across ffmpeg's
/// versions, for the `ffmpeg` binary given: each is put before the name of
/// every output it concerns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dialect {
    /// Every frame as the source has it, none dropped or repeated:
    /// `-fps_mode passthrough`, an option of each output, from ffmpeg 6
    /// (libavformat 60) on, where the global `-vsync` it replaces is
    /// deprecated (ffmpeg 7 and later refuse it); `-vsync passthrough`
    /// before, as ffmpeg 4 knows no `-fps_mode` (given again, the same
    /// setting).
    pub passthrough: [&'static str; 2],
    /// Packets timed in the demuxer's time base, so that a frame's time is
    /// the source's without rounding: `-enc_time_base -1` up to ffmpeg 6,
    /// `-enc_time_base demux` from ffmpeg 7 (libavformat 61) on, which
    /// deprecates the number (ffmpeg 9 refuses it).
    pub demuxer_time_base: [&'static str; 2],
}

impl Dialect {
    /// The options for `ffmpeg`, from its version check (run once per
    /// process); the newest ffmpeg's when its version is unknown.
    pub fn of(ffmpeg: &Path) -> Dialect {
        Dialect::for_libavformat(checked(ffmpeg).ok().flatten())
    }

    fn for_libavformat(major: Option<u32>) -> Dialect {
        let major = major.unwrap_or(u32::MAX);
        Dialect {
            passthrough: if major < 60 {
                ["-vsync", "passthrough"]
            } else {
                ["-fps_mode", "passthrough"]
            },
            demuxer_time_base: if major < 61 {
                ["-enc_time_base", "-1"]
            } else {
                ["-enc_time_base", "demux"]
            },
        }
    }
}

/// The first ffmpeg of the rule that exists, and whether it was chosen by
/// `$GULP_FFMPEG`.
fn find() -> Result<(PathBuf, bool), String> {
    let path_var = std::env::var_os("PATH");
    if let Some(chosen) = std::env::var_os("GULP_FFMPEG").filter(|v| !v.is_empty()) {
        return on_path(&chosen, path_var.as_deref())
            .map(|p| (p, true))
            .ok_or_else(|| {
                format!(
                    "GULP_FFMPEG={}: no such executable; {HOW_TO_GET}",
                    chosen.to_string_lossy()
                )
            });
    }
    if let Some(found) = on_path(OsStr::new("ffmpeg"), path_var.as_deref()) {
        return Ok((found, false));
    }
    bundled()
        .map(|p| (p, false))
        .ok_or_else(|| format!("ffmpeg not found (videos are decoded with ffmpeg): {HOW_TO_GET}"))
}

/// `name` as the shell finds it: a path when it has a `/`, else the first
/// executable of that name in the directories of `path_var`.
fn on_path(name: &OsStr, path_var: Option<&OsStr>) -> Option<PathBuf> {
    let name = Path::new(name);
    if name.components().count() > 1 || name.is_absolute() {
        return is_executable(name).then(|| name.to_path_buf());
    }
    std::env::split_paths(path_var?)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `ffmpeg -version` and refuses a libavformat older than
/// [`MIN_VERSION`]'s. An output without a libavformat line is let through
/// (the decoding then reports what goes wrong).
fn check_version(path: &Path) -> Checked {
    let out = Command::new(path)
        .arg("-version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}; {HOW_TO_GET}", path.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    match libavformat_major(&text) {
        Some(major) if major < MIN_LIBAVFORMAT => Err(format!(
            "{} is ffmpeg {} (libavformat {major}); gulp needs ffmpeg {MIN_VERSION} or later: {HOW_TO_GET}",
            path.display(),
            version_name(&text).unwrap_or("of an unknown version"),
        )),
        major => Ok(major),
    }
}

/// The major version on the `libavformat  59. 27.100 / 59. 27.100` line
/// of `ffmpeg -version`.
fn libavformat_major(text: &str) -> Option<u32> {
    let rest = text
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("libavformat"))?;
    rest.trim_start().split('.').next()?.trim().parse().ok()
}

/// The version word of `ffmpeg version 5.1.6-0+deb12u1 Copyright ...`.
fn version_name(text: &str) -> Option<&str> {
    text.lines()
        .find_map(|l| l.strip_prefix("ffmpeg version "))?
        .split_whitespace()
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBIAN_12: &str = "ffmpeg version 5.1.6-0+deb12u1 Copyright (c) 2000-2024 the FFmpeg developers\n\
        built with gcc 12 (Debian 12.2.0-14)\n\
        libavutil      57. 28.100 / 57. 28.100\n\
        libavformat    59. 27.100 / 59. 27.100\n";

    #[test]
    fn version_lines() {
        assert_eq!(libavformat_major(DEBIAN_12), Some(59));
        assert_eq!(version_name(DEBIAN_12), Some("5.1.6-0+deb12u1"));
        assert_eq!(
            libavformat_major("libavformat    57. 83.100 / 57. 83.100"),
            Some(57)
        );
        assert_eq!(libavformat_major("ffmpeg version N-1234-gabcdef"), None);
        assert_eq!(libavformat_major("libavformat    x. 1.100"), None);
    }

    #[test]
    fn dialects() {
        let old = Dialect::for_libavformat(Some(59));
        assert_eq!(old.passthrough, ["-vsync", "passthrough"]);
        assert_eq!(old.demuxer_time_base, ["-enc_time_base", "-1"]);
        let six = Dialect::for_libavformat(Some(60));
        assert_eq!(six.passthrough, ["-fps_mode", "passthrough"]);
        assert_eq!(six.demuxer_time_base, ["-enc_time_base", "-1"]);
        for new in [Some(61), Some(63), None] {
            let new = Dialect::for_libavformat(new);
            assert_eq!(new.passthrough, ["-fps_mode", "passthrough"]);
            assert_eq!(new.demuxer_time_base, ["-enc_time_base", "demux"]);
        }
    }

    #[test]
    fn path_search() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("ffmpeg");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        let var =
            std::env::join_paths(["/nonexistent-gulp-dir", dir.path().to_str().unwrap()]).unwrap();
        // Not executable yet: not found.
        assert_eq!(on_path(OsStr::new("ffmpeg"), Some(&var)), None);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(on_path(OsStr::new("ffmpeg"), Some(&var)), Some(exe.clone()));
        assert_eq!(on_path(exe.as_os_str(), None), Some(exe.clone()));
        assert_eq!(on_path(OsStr::new("ffmpeg"), None), None);
    }
}
