//! Items with sound through the commands that read it: `gulp info` counts
//! it, `gulp extract --audio` writes it as a WAV file that ffprobe reads,
//! `gulp lint` judges it; on real encodes through the real `gulp ingest`.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{clean_dir, gulp, stdout_of};
use gulp_io::GulpDirectory;
use gulp_test_support::media::FlashBeep;

/// `beeps/beep.mp4` (AAC, beeps at 0.5 s and 1.5 s, 2 s) and
/// `beeps/mute.mp4` (no audio stream) gulped at 4 fps with their sound at
/// 22050 Hz stereo; returns the directory and the two ids.
fn gulped(tmp: &Path) -> (PathBuf, String, String) {
    let videos = tmp.join("videos");
    std::fs::create_dir_all(videos.join("beeps")).unwrap();
    FlashBeep::mp4(2.0, &[0.5, 1.5]).write(&videos.join("beeps/beep.mp4"));
    FlashBeep {
        sound: false,
        ..FlashBeep::mp4(2.0, &[1.0])
    }
    .write(&videos.join("beeps/mute.mp4"));
    let out = tmp.join("gulped");
    gulp()
        .args(["ingest", "video-folder"])
        .arg(&videos)
        .arg(&out)
        .args(["--frame-rate", "4", "--frame-size", "64", "--audio"])
        .args(["--audio-rate", "22050", "--audio-channels", "2", "-q"])
        .assert()
        .success();
    let dir = GulpDirectory::open(&out).unwrap();
    let id = |stem: &str| dir.ids().find(|id| id.contains(stem)).unwrap().to_owned();
    let (beep, mute) = (id("beep"), id("mute"));
    (out, beep, mute)
}

fn info_json(dir: &Path) -> serde_json::Value {
    let out = gulp().arg("info").arg("--json").arg(dir).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// ffprobe's view of an audio file: codec, rate, channels, duration.
fn probe(path: &Path) -> serde_json::Value {
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-show_entries"])
        .args([
            "stream=codec_name,sample_rate,channels,duration",
            "-of",
            "json",
        ])
        .arg(path)
        .output()
        .expect("ffprobe comes with ffmpeg");
    assert!(out.status.success(), "ffprobe {}: {out:?}", path.display());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["streams"][0].clone()
}

#[test]
fn info_counts_sound_and_frame_times() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, beep, _) = gulped(tmp.path());
    let track = GulpDirectory::open(&dir)
        .unwrap()
        .item(&beep)
        .unwrap()
        .audio_track()
        .unwrap()
        .clone();
    let info = info_json(&dir);
    assert_eq!(info["items"], 2);
    let audio = &info["audio"];
    assert_eq!(audio["items"], 1, "{info}");
    assert_eq!(audio["no_sound"], 1);
    assert_eq!(audio["sample_rates"], serde_json::json!({"22050": 1}));
    assert_eq!(audio["channels"], serde_json::json!({"2": 1}));
    let seconds = audio["seconds"].as_f64().unwrap();
    assert!((seconds - track.duration()).abs() < 1e-9, "{seconds}");
    assert!((seconds - 2.0).abs() < 0.05, "{seconds}");
    assert_eq!(info["frame_times"], 2);
    let text = stdout_of(
        &gulp()
            .arg("info")
            .arg(&dir)
            .assert()
            .success()
            .get_output()
            .clone(),
    );
    assert!(
        text.contains(&format!(
            "sound       1 item, {seconds:.1} s; 22050 Hz: 1; 2 channels: 1; 1 item without sound\n"
        )),
        "{text}"
    );
    assert!(text.contains("frame times 2 items\n"), "{text}");

    // A directory without sound: zeros in the JSON, no line in the text.
    let plain = clean_dir();
    let info = info_json(plain.path());
    assert_eq!(info["audio"]["items"], 0);
    assert_eq!(info["audio"]["no_sound"], 0);
    assert_eq!(info["frame_times"], 0);
    let text = stdout_of(
        &gulp()
            .arg("info")
            .arg(plain.path())
            .assert()
            .success()
            .get_output()
            .clone(),
    );
    assert!(
        !text.contains("sound") && !text.contains("frame times"),
        "{text}"
    );

    // Read from an index file, no meta is parsed: not counted.
    gulp().arg("index").arg(&dir).assert().success();
    let info = info_json(&dir);
    assert_eq!(info["index"].as_u64().map(|n| n > 0), Some(true), "{info}");
    assert!(
        info["audio"].is_null() && info["frame_times"].is_null(),
        "{info}"
    );
    assert_eq!(info["frames"].as_u64(), Some(16));
}

#[test]
fn extract_audio_writes_a_wav_that_plays() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, beep, mute) = gulped(tmp.path());
    let out = tmp.path().join("out");
    let run = gulp()
        .args([
            "extract", "--id", &beep, "--id", &mute, "--select", "::2", "--audio",
        ])
        .arg("--out")
        .arg(&out)
        .arg(&dir)
        .assert()
        .success();
    let text = stdout_of(run.get_output());
    let gulp_dir = GulpDirectory::open(&dir).unwrap();
    let track = gulp_dir.item(&beep).unwrap().audio_track().unwrap().clone();
    let pcm = gulp_dir
        .reader_for(&beep)
        .unwrap()
        .audio(&beep, &track)
        .unwrap()
        .into_owned();
    let wav = out.join(&beep).join("audio.wav");
    assert!(
        text.contains(&format!(
            "sound in {} (22050 Hz, 2 channels, {:.3} s from {:.3} s)",
            wav.display(),
            track.duration(),
            track.start
        )),
        "{text}"
    );
    // ffprobe reads what the track says.
    let stream = probe(&wav);
    assert_eq!(stream["codec_name"], "pcm_s16le");
    assert_eq!(stream["sample_rate"], "22050");
    assert_eq!(stream["channels"], 2);
    let duration: f64 = stream["duration"].as_str().unwrap().parse().unwrap();
    assert!((duration - track.duration()).abs() < 1e-3, "{duration}");
    // The samples are the record's, behind a 44-byte header; ffmpeg
    // decodes them back to the same bytes.
    let bytes = std::fs::read(&wav).unwrap();
    assert_eq!(bytes.len(), 44 + pcm.len());
    assert_eq!(&bytes[44..], &pcm[..]);
    let decoded = Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-i"])
        .arg(&wav)
        .args(["-f", "s16le", "-"])
        .output()
        .unwrap();
    assert!(decoded.status.success(), "{decoded:?}");
    assert_eq!(decoded.stdout, pcm);
    // The frames of the selection are there too.
    let mut names: Vec<String> = std::fs::read_dir(out.join(&beep))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "00000.jpg",
            "00002.jpg",
            "00004.jpg",
            "00006.jpg",
            "audio.wav"
        ]
    );

    // A video without sound: said so, its frames written, no file.
    assert!(
        text.contains(&format!("of id {mute:?}; no sound (its video had none)")),
        "{text}"
    );
    assert!(out.join(&mute).join("00000.jpg").is_file());
    assert!(!out.join(&mute).join("audio.wav").exists());
    // Without --audio, no sound is written.
    let again = tmp.path().join("again");
    gulp()
        .args(["extract", "--id", &beep, "--out"])
        .arg(&again)
        .arg(&dir)
        .assert()
        .success();
    assert!(!again.join(&beep).join("audio.wav").exists());
    // A directory ingested without sound says that.
    let plain = clean_dir();
    let run = gulp()
        .args(["extract", "--id", "a", "--audio", "--out"])
        .arg(tmp.path().join("plain"))
        .arg(plain.path())
        .assert()
        .success();
    assert!(
        stdout_of(run.get_output()).contains("no sound (ingested without --audio)"),
        "{}",
        stdout_of(run.get_output())
    );
}

#[test]
fn lint_judges_the_sound_with_thresholds_from_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, beep, _) = gulped(tmp.path());
    // The beeps are sound at the default; at -10 dBFS (a negative number
    // as a flag's value) they are too quiet.
    let report = tmp.path().join("lint.json");
    gulp()
        .args([
            "lint",
            "--checks",
            "silent_audio,clipped_audio",
            "-q",
            "--json",
        ])
        .arg(&report)
        .arg(&dir)
        .assert()
        .code(0);
    gulp()
        .args([
            "lint",
            "--checks",
            "silent_audio",
            "--silent-audio",
            "-10",
            "-q",
        ])
        .arg("--json")
        .arg(&report)
        .arg(&dir)
        .assert()
        .code(1);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let findings = json["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{json}");
    assert_eq!(findings[0]["check"], "silent_audio");
    assert_eq!(findings[0]["items"][0]["id"], beep.as_str());
    let level = findings[0]["score"].as_f64().unwrap();
    assert!((-30.0..-15.0).contains(&level), "{level}");
}
