//! Two directories of real JPEG images (made by the real ffmpeg) with one
//! planted issue of each image check, and copies across them: every plant
//! is found, under its check and no other of its kind, and nothing is
//! found on the clean images.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use gulp_format::Value;
use gulp_io::{ChunkWriter, LabelIndex};
use gulp_lint::{Check, Options, Report, lint};
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
    std::fs::create_dir_all(dir).unwrap();
    let mut writer = ChunkWriter::builder().create(dir, 0).unwrap();
    for (id, label, jpeg) in items {
        let mut meta = gulp_format::Map::default();
        if let Some(label) = label {
            meta.insert("label".into(), Value::from(*label));
        }
        writer.append(id, Value::Object(meta), [jpeg]).unwrap();
    }
    writer.finish().unwrap();
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
