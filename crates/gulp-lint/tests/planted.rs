//! Two directories of real JPEG images (made by the real ffmpeg) with one
//! planted issue of each image check, and copies across them: every plant
//! is found, under its check and no other of its kind, and nothing is
//! found on the clean images. Then real videos with silent, quiet, clipped
//! and ordinary sound (real encodes through the real ingest): each sound
//! check finds its plants and nothing else.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use gulp_format::Value;
use gulp_io::LabelIndex;
use gulp_lint::{Check, Options, Report, lint};
use gulp_test_support::gulp_dir::{GulpDirBuilder, labelled};
use gulp_test_support::media::ffmpeg;

/// A distinct picture: ffmpeg's moving test pattern at time `i`, rotated
/// and tinted differently for each `i`.
fn picture(dir: &Path, i: u32) -> Vec<u8> {
    let out = dir.join(format!("p{i}.jpg"));
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        &format!("testsrc2=size=320x240:rate=10,trim=start={i}"),
        "-vf",
        &format!("hue=h={}:s=1.5,rotate={}", i * 47, f64::from(i) * 0.4),
        "-frames:v",
        "1",
        "-q:v",
        "3",
        out.to_str().unwrap(),
    ]);
    std::fs::read(out).unwrap()
}

/// `source` through an ffmpeg filter (and quality), as a new JPEG.
fn filtered(dir: &Path, name: &str, source: &[u8], filter: &str, quality: &str) -> Vec<u8> {
    let input = dir.join(format!("{name}-in.jpg"));
    let out = dir.join(format!("{name}.jpg"));
    std::fs::write(&input, source).unwrap();
    ffmpeg(&[
        "-i",
        input.to_str().unwrap(),
        "-vf",
        filter,
        "-q:v",
        quality,
        out.to_str().unwrap(),
    ]);
    std::fs::read(out).unwrap()
}

fn color(dir: &Path, name: &str, color: &str) -> Vec<u8> {
    let out = dir.join(format!("{name}.jpg"));
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        &format!("color={color}:size=320x240"),
        "-frames:v",
        "1",
        out.to_str().unwrap(),
    ]);
    std::fs::read(out).unwrap()
}

fn write(dir: &Path, items: &[(&str, Option<&str>, &[u8])]) {
    let mut gulp = GulpDirBuilder::new(dir);
    for (id, label, jpeg) in items {
        let meta = label.map_or(Value::Object(gulp_format::Map::default()), labelled);
        gulp = gulp.item(id, meta, [jpeg.to_vec()]);
    }
    gulp.write();
}

/// check → the sets of (dir, id) of its findings.
fn found(report: &Report) -> BTreeMap<Check, Vec<BTreeSet<(usize, String)>>> {
    let mut out: BTreeMap<Check, Vec<BTreeSet<(usize, String)>>> = BTreeMap::new();
    for f in &report.findings {
        out.entry(f.check)
            .or_default()
            .push(f.items.iter().map(|i| (i.dir, i.id.clone())).collect());
    }
    out
}

fn set(items: &[(usize, &str)]) -> BTreeSet<(usize, String)> {
    items.iter().map(|(d, id)| (*d, (*id).to_owned())).collect()
}

#[test]
fn every_planted_image_issue_is_found_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let media = tmp.path().join("media");
    std::fs::create_dir(&media).unwrap();
    let p: Vec<Vec<u8>> = (0..14).map(|i| picture(&media, i)).collect();
    let reencoded = filtered(&media, "reenc", &p[1], "scale=200:150", "12");
    let cropped = filtered(&media, "crop", &p[2], "crop=iw*0.88:ih*0.88", "3");
    let blurred = filtered(&media, "blur", &p[3], "gblur=sigma=12", "3");
    let tiny = filtered(&media, "tiny", &p[12], "scale=48:36", "3");
    let wide = filtered(&media, "wide", &p[13], "scale=480:100", "3");
    let val_near = filtered(&media, "valnear", &p[6], "scale=256:192", "8");
    let black = color(&media, "black", "black");
    let white = color(&media, "white", "white");

    let train = tmp.path().join("train");
    let val = tmp.path().join("val");
    let (a, b) = (Some("a"), Some("b"));
    write(
        &train,
        &[
            ("p0", a, &p[0]),
            ("p1", a, &p[1]),
            ("p2", a, &p[2]),
            ("p3", a, &p[3]),
            ("p4", a, &p[4]),
            ("p5", a, &p[5]),
            ("p6", b, &p[6]),
            ("p7", b, &p[7]),
            ("p8", b, &p[8]),
            ("p9", b, &p[9]),
            ("copy-of-p0", b, &p[0]),
            ("reencoded-p1", b, &reencoded),
            ("cropped-p2", b, &cropped),
            ("blurred", Some("rare"), &blurred),
            ("tiny", None, &tiny),
            ("wide", Some("unlisted"), &wide),
            ("black", b, &black),
            ("white", b, &white),
        ],
    );
    LabelIndex::from_pairs(&train, [("a", 0), ("b", 1), ("rare", 2)])
        .unwrap()
        .write(&train)
        .unwrap();
    write(
        &val,
        &[
            ("v10", a, &p[10]),
            ("v11", a, &p[11]),
            ("val-copy-p7", a, &p[7]),
            ("val-near-p6", a, &val_near),
        ],
    );

    let report = lint(&[&train, &val], &Options::default(), &|_| {}).unwrap();
    // The findings are a function of the data alone: one thread or
    // several, the same report.
    for threads in [1, 3] {
        let options = Options {
            threads,
            ..Options::default()
        };
        let again = lint(&[&train, &val], &options, &|_| {}).unwrap();
        assert_eq!(again.findings, report.findings, "{threads} threads");
    }
    assert_eq!(report.items, 22);
    assert!(report.undecodable.is_empty());
    let got = found(&report);
    let expect: BTreeMap<Check, Vec<BTreeSet<(usize, String)>>> = [
        (
            Check::ExactDuplicate,
            vec![set(&[(0, "p0"), (0, "copy-of-p0")])],
        ),
        (
            Check::NearDuplicate,
            vec![
                set(&[(0, "p1"), (0, "reencoded-p1")]),
                set(&[(0, "p2"), (0, "cropped-p2")]),
            ],
        ),
        (
            Check::Leak,
            vec![
                set(&[(0, "p6"), (1, "val-near-p6")]),
                set(&[(0, "p7"), (1, "val-copy-p7")]),
            ],
        ),
        (Check::Dark, vec![set(&[(0, "black")])]),
        (Check::Light, vec![set(&[(0, "white")])]),
        (
            Check::Blank,
            vec![set(&[(0, "black")]), set(&[(0, "white")])],
        ),
        (
            Check::LowInformation,
            vec![set(&[(0, "black")]), set(&[(0, "white")])],
        ),
        (Check::Blurry, vec![set(&[(0, "blurred")])]),
        (Check::OddSize, vec![set(&[(0, "tiny")])]),
        (Check::OddAspect, vec![set(&[(0, "wide")])]),
        (
            Check::Label,
            vec![
                set(&[(0, "tiny")]),
                set(&[(0, "blurred")]),
                set(&[(0, "wide")]),
                set(&[(0, "wide")]),
                // Four items of class "a" in val: fewer than 5.
                set(&[
                    (1, "v10"),
                    (1, "v11"),
                    (1, "val-copy-p7"),
                    (1, "val-near-p6"),
                ]),
            ],
        ),
    ]
    .into_iter()
    .collect();
    // The blurred copy of p3 may also be a near duplicate of it; nothing
    // else may differ.
    let mut got_without_blur = got.clone();
    if let Some(near) = got_without_blur.get_mut(&Check::NearDuplicate) {
        near.retain(|g| *g != set(&[(0, "p3"), (0, "blurred")]));
    }
    for (check, groups) in &expect {
        let mut want = groups.clone();
        want.sort();
        let mut have = got_without_blur.get(check).cloned().unwrap_or_default();
        have.sort();
        assert_eq!(have, want, "{check}\n{}", report.table());
    }
    assert_eq!(
        got_without_blur.keys().collect::<Vec<_>>(),
        expect.keys().collect::<Vec<_>>(),
        "{}",
        report.table()
    );
    // The label findings say what they are about.
    let details: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.check == Check::Label)
        .map(|f| f.detail.as_str())
        .collect();
    assert!(
        details
            .iter()
            .any(|d| d.contains("\"unlisted\" is not in label2idx.json")),
        "{details:?}"
    );
    assert!(
        details
            .iter()
            .any(|d| d.contains("class \"rare\" has 1 items")),
        "{details:?}"
    );
    assert!(
        details.iter().any(|d| d.contains("without the label key")),
        "{details:?}"
    );
    assert_eq!(report.classes[0]["a"], 6);
    assert_eq!(report.classes[1]["a"], 4);

    // Ids to keep: the first of each group of copies (so the val copies of
    // train items go), and with --drop dark,light, not those either.
    let keep = report.keep(&[Check::Dark, Check::Light]);
    for gone in ["copy-of-p0", "reencoded-p1", "cropped-p2", "black", "white"] {
        assert!(!keep[0].contains(&gone), "{gone} kept");
    }
    assert!(keep[0].contains(&"p0") && keep[0].contains(&"p1") && keep[0].contains(&"p3"));
    assert_eq!(keep[1], vec!["v10", "v11"]);
    // Dropping leaks drops both sides.
    assert!(!report.keep(&[Check::Leak])[0].contains(&"p7"));
}

#[test]
fn checks_pick_what_runs_and_thresholds_move_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    let media = tmp.path().join("media");
    std::fs::create_dir(&media).unwrap();
    let gray = color(&media, "gray", "0x202020");
    let p = picture(&media, 1);
    let dir = tmp.path().join("d");
    write(
        &dir,
        &[
            ("gray", None, &gray),
            ("p", None, &p),
            ("p-again", None, &p),
        ],
    );

    let only_dark = Options {
        checks: vec![Check::Dark],
        ..Options::default()
    };
    let report = lint(&[&dir], &only_dark, &|_| {}).unwrap();
    assert_eq!(
        report.findings.iter().map(|f| f.check).collect::<Vec<_>>(),
        vec![Check::Dark]
    );
    // Luma 32 is dark at the default (p99 <= 60), not at --dark 20.
    let mut strict = only_dark.clone();
    strict.thresholds.dark = 20.0;
    let report = lint(&[&dir], &strict, &|_| {}).unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    // The score is the measure the threshold is compared with.
    let report = lint(&[&dir], &only_dark, &|_| {}).unwrap();
    let score = report.findings[0].score;
    assert!((25.0..=40.0).contains(&score), "{score}");
}

#[test]
fn a_missing_directory_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    let err = lint(&[&missing], &Options::default(), &|_| {}).unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
}

/// A 3 s `testsrc2` video with the sound of the lavfi graph `audio`
/// (none when `None`), encoded as H.264 and AAC.
fn video_with_sound(path: &Path, audio: Option<&str>) {
    let mut args = vec![
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=160x120:rate=25:duration=3",
    ];
    if let Some(graph) = audio {
        args.extend(["-f", "lavfi", "-i", graph]);
    }
    args.extend([
        "-pix_fmt",
        "yuv420p",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
    ]);
    args.extend(["-c:a", "aac", "-shortest", path.to_str().unwrap()]);
    ffmpeg(&args);
}

#[test]
fn silent_and_clipped_sound_is_found_and_items_without_sound_are_not_judged() {
    use gulp_ingest::video::AudioRequest;
    use gulp_ingest::{AdapterKind, IngestRequest, ingest};

    let tmp = tempfile::tempdir().unwrap();
    let videos = tmp.path().join("videos");
    let class = videos.join("all");
    std::fs::create_dir_all(&class).unwrap();
    gulp_test_support::media::FlashBeep::mp4(3.0, &[0.5, 1.5]).write(&class.join("beep.mp4"));
    video_with_sound(&class.join("silent.mp4"), Some("aevalsrc=0:s=48000:d=3"));
    // White noise about 67 dB below full scale: a hiss, no content.
    video_with_sound(
        &class.join("hiss.mp4"),
        Some("anoisesrc=a=0.0014:c=white:r=48000:d=3"),
    );
    // A sine 40 dB too loud, clipped to 16 bits before the encoder (as an
    // overdriven recording is).
    video_with_sound(
        &class.join("clipped.mp4"),
        Some("aevalsrc='0.5*sin(2*PI*440*t)':s=48000:d=3,volume=+40dB,aformat=sample_fmts=s16"),
    );
    video_with_sound(&class.join("mute.mp4"), None);
    let dir = tmp.path().join("gulped");
    let mut request = IngestRequest::new(AdapterKind::VideoFolder, vec![videos], dir.clone());
    request.options.fsync = false;
    request.options.frames.frame_rate = Some(4.0);
    request.options.frames.short_edge = Some(64);
    request.options.frames.audio = Some(AudioRequest {
        sample_rate: 16000,
        channels: 1,
    });
    let dataset = request.dataset().unwrap();
    let report = ingest(&dataset, &dir, &request.options, &mut |_| {}).unwrap();
    assert_eq!(report.items, 5, "{report:?}");
    // Beside it, a directory ingested without sound.
    let media = tmp.path().join("media");
    std::fs::create_dir(&media).unwrap();
    let plain = tmp.path().join("plain");
    write(&plain, &[("p", None, &picture(&media, 1))]);

    let sound_checks = Options {
        checks: vec![Check::SilentAudio, Check::ClippedAudio],
        ..Options::default()
    };
    let report = lint(&[&dir, &plain], &sound_checks, &|_| {}).unwrap();
    let short = |id: &str| id.rsplit(['/', '-']).next().unwrap_or(id).to_owned();
    let got: BTreeMap<Check, BTreeSet<String>> =
        report.findings.iter().fold(BTreeMap::new(), |mut m, f| {
            assert_eq!(f.items.len(), 1, "{f:?}");
            m.entry(f.check).or_default().insert(short(&f.items[0].id));
            m
        });
    let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(
        got,
        BTreeMap::from([
            (Check::SilentAudio, names(&["hiss.mp4", "silent.mp4"])),
            (Check::ClippedAudio, names(&["clipped.mp4"])),
        ]),
        "{}",
        report.table()
    );
    let score = |check: Check, name: &str| {
        report
            .findings
            .iter()
            .find(|f| f.check == check && short(&f.items[0].id) == name)
            .map(|f| (f.score, f.detail.clone()))
            .unwrap()
    };
    // Digital silence scores the floor; the hiss its level; the clipped
    // sine a quarter of its samples at the rails (docs/lint.md).
    let (silent, detail) = score(Check::SilentAudio, "silent.mp4");
    assert_eq!(silent, -120.0);
    assert!(detail.contains("digital silence"), "{detail}");
    let (hiss, detail) = score(Check::SilentAudio, "hiss.mp4");
    assert!((-72.0..-62.0).contains(&hiss), "{hiss}");
    assert!(detail.contains("dBFS"), "{detail}");
    let (clipped, detail) = score(Check::ClippedAudio, "clipped.mp4");
    assert!((0.1..0.5).contains(&clipped), "{clipped}");
    assert!(detail.contains("% of samples at full scale"), "{detail}");

    // The thresholds move the line: at -70 dBFS the hiss is sound, at
    // half of the samples the clipped sine passes.
    let mut strict = sound_checks.clone();
    strict.thresholds.silent_audio = -70.0;
    strict.thresholds.clipped_audio = 0.5;
    let report = lint(&[&dir], &strict, &|_| {}).unwrap();
    let found: Vec<(Check, String)> = report
        .findings
        .iter()
        .map(|f| (f.check, short(&f.items[0].id)))
        .collect();
    assert_eq!(found, vec![(Check::SilentAudio, "silent.mp4".to_owned())]);
    // All checks: the sound findings are the same.
    let report = lint(&[&dir], &Options::default(), &|_| {}).unwrap();
    let sound: Vec<_> = report
        .findings
        .iter()
        .filter(|f| matches!(f.check, Check::SilentAudio | Check::ClippedAudio))
        .map(|f| (f.check, short(&f.items[0].id)))
        .collect();
    assert_eq!(sound.len(), 3, "{}", report.table());
    assert!(
        report.table().contains("silent_audio"),
        "{}",
        report.table()
    );
}
