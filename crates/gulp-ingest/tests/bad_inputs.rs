//! The `ingest` layer of the bad-data corpus (`tests/data/bad/ingest/` at the
//! repository root; see its README.md): broken videos, bad JPEG frames and
//! malformed lists, each run for real (ffmpeg, files, a temporary output
//! directory) and checked against its line in `expectations.txt`.
//!
//! - `ingest/videos/<case>/`: the video folder of id `<case>` in a 20BN JSON
//!   dataset, between two good videos; expected kind `skipped`.
//! - `ingest/frames/<case>/`: the frame folder of id `<case>` in a 20BN CSV
//!   JPEG dataset, between two good folders; run as stored JPEGs and with a
//!   resize; expected kind `skipped`.
//! - `ingest/lists/<adapter>_<case>.<ext>`: a list given to the constructor
//!   named by its prefix (`twenty_bn_json`, `twenty_bn_csv`, `image_list`,
//!   `kinetics`, `activitynet`, `epic_kitchens`); expected kind `input`.
//!
//! `GULP_BAD_DATA_PRINT=1 cargo test -p gulp-ingest --test bad_inputs --
//! --nocapture` prints what each case actually gives.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use gulp_ingest::adapters::Dataset;
use gulp_ingest::{Error, FrameOptions, IngestOptions, ingest};
use gulp_io::GulpDirectory;
use gulp_test_support::bad_manifest::{Expectation, corpus_dir, expectations, files_under};
use gulp_test_support::media;

/// Files of `ingest/` that are not cases.
const NOT_CASES: &[&str] = &["ingest/make.sh"];

/// The good items around each bad one.
const GOOD: [&str; 2] = ["good_a", "good_b"];

fn ingest_expectations() -> Vec<Expectation> {
    expectations()
        .into_iter()
        .filter(|e| e.layer == "ingest")
        .collect()
}

/// Copies the files of folder `from` into the new folder `to`.
fn copy_folder(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn opts(short_edge: Option<u32>) -> IngestOptions {
    IngestOptions {
        items_per_chunk: 2,
        workers: 2,
        frames: FrameOptions {
            short_edge,
            ..FrameOptions::default()
        },
        fsync: false,
        ..IngestOptions::default()
    }
}

/// Good media made once: a video folder and a JPEG frame folder.
struct Good {
    video: PathBuf,
    frames: PathBuf,
}

fn good_media(root: &Path) -> Good {
    let video = root.join("good-video");
    fs::create_dir_all(&video).unwrap();
    media::test_video(&video.join("good.mp4"), "32x24", 10, 0.5);
    let frames = root.join("good-frames");
    media::jpeg_folder(&frames, "32x24", 2);
    Good { video, frames }
}

/// What one run of a case gave: `(kind, message)`, plus every check that
/// failed on the way.
struct Outcome {
    results: Vec<(String, String)>,
    problems: Vec<String>,
}

/// Runs an item case (`videos/` or `frames/`): the case's folder between two
/// good ones, ingested into a fresh directory.
fn run_item_case(case_dir: &Path, frames: bool, good: &Good, work: &Path) -> Outcome {
    let name = case_dir.file_name().unwrap().to_str().unwrap().to_owned();
    let inputs = work.join("inputs");
    for g in GOOD {
        copy_folder(
            if frames { &good.frames } else { &good.video },
            &inputs.join(g),
        );
    }
    copy_folder(case_dir, &inputs.join(&name));
    let ids = [GOOD[0], name.as_str(), GOOD[1]];
    let list = if frames {
        let list = work.join("list.csv");
        let csv: String = ids.iter().map(|id| format!("{id};x\n")).collect();
        fs::write(&list, csv).unwrap();
        list
    } else {
        let list = work.join("list.json");
        let json: Vec<String> = ids
            .iter()
            .map(|id| format!("{{\"id\": \"{id}\", \"template\": \"x\"}}"))
            .collect();
        fs::write(&list, format!("[{}]", json.join(", "))).unwrap();
        list
    };
    let mut case_files: Vec<String> = fs::read_dir(case_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    case_files.sort();
    let mut out = Outcome {
        results: Vec::new(),
        problems: Vec::new(),
    };
    // Frames: as stored JPEGs, then decoded and resized.
    let runs: &[Option<u32>] = if frames { &[None, Some(16)] } else { &[None] };
    for (n, &short_edge) in runs.iter().enumerate() {
        let output = work.join(format!("out{n}"));
        let dataset = if frames {
            Dataset::twenty_bn_csv_jpeg(&list, &inputs, &output)
        } else {
            Dataset::twenty_bn_json(&list, &inputs, &output, "template")
        };
        let dataset = match dataset {
            Ok(d) => d,
            Err(e) => {
                out.problems.push(format!("the good list is refused: {e}"));
                continue;
            }
        };
        let report = match ingest(&dataset, &output, &opts(short_edge), &mut |_| {}) {
            Ok(r) => r,
            Err(e) => {
                out.results.push(("error".to_owned(), e.to_string()));
                continue;
            }
        };
        match &report.skipped[..] {
            [] => out.results.push(("none".to_owned(), String::new())),
            [s] => {
                let msg = s.to_string();
                if s.id != name {
                    out.problems
                        .push(format!("the wrong item was skipped: {msg}"));
                }
                // The message names the bad file (its folder when the
                // folder holds nothing to read).
                let names_file = case_files
                    .iter()
                    .any(|f| msg.contains(&format!("{name}/{f}")))
                    || (case_files.is_empty() && msg.contains(&name));
                if !names_file {
                    out.problems
                        .push(format!("the message names no file of the case: {msg}"));
                }
                out.results.push(("skipped".to_owned(), msg));
            }
            many => out.problems.push(format!(
                "{} items skipped: {:?}",
                many.len(),
                many.iter().map(ToString::to_string).collect::<Vec<_>>()
            )),
        }
        // The rest is ingested, and nothing temporary is left.
        if report.items != GOOD.len() {
            out.problems
                .push(format!("{} items written, expected 2", report.items));
        }
        let leftovers: Vec<String> = media::names(&output)
            .into_iter()
            .filter(|n| n.starts_with(".gulp-tmp"))
            .collect();
        if !leftovers.is_empty() {
            out.problems
                .push(format!("temporary files left: {leftovers:?}"));
        }
        match GulpDirectory::open(&output) {
            Ok(gulp) => {
                let got: Vec<&str> = gulp.ids().collect();
                if got != GOOD {
                    out.problems
                        .push(format!("the output holds {got:?}, expected {GOOD:?}"));
                }
                if !gulp.warnings().is_empty() {
                    out.problems
                        .push(format!("the output has warnings: {:?}", gulp.warnings()));
                }
            }
            Err(e) => out.problems.push(format!("the output does not open: {e}")),
        }
    }
    out
}

/// Runs a list case: the constructor its name starts with.
fn run_list_case(list: &Path, work: &Path) -> Outcome {
    let name = list.file_name().unwrap().to_str().unwrap();
    let output = work.join("out");
    let media = work.join("media");
    fs::create_dir_all(&media).unwrap();
    let mut out = Outcome {
        results: Vec::new(),
        problems: Vec::new(),
    };
    let result = if name.starts_with("twenty_bn_json_") {
        Dataset::twenty_bn_json(list, &media, &output, "template")
    } else if name.starts_with("twenty_bn_csv_") {
        Dataset::twenty_bn_csv_jpeg(list, &media, &output)
    } else if name.starts_with("image_list_") {
        Dataset::image_list(list, &media, &output)
    } else if name.starts_with("kinetics_") {
        Dataset::kinetics(list, &media, &output)
    } else if name.starts_with("activitynet_") {
        Dataset::activitynet(list, &media, &output, "training")
    } else if name.starts_with("epic_kitchens_") {
        Dataset::epic_kitchens(list, &media)
    } else {
        out.problems
            .push(format!("{name}: no adapter has this prefix"));
        return out;
    };
    match result {
        Ok(d) => out
            .results
            .push(("none".to_owned(), format!("{} items", d.ids().count()))),
        Err(e) => {
            let kind = if let Error::Input { path, .. } = &e {
                if path != list {
                    out.problems.push(format!(
                        "the error names {}, not the list: {e}",
                        path.display()
                    ));
                }
                "input"
            } else {
                "other"
            };
            out.results.push((kind.to_owned(), e.to_string()));
        }
    }
    if output.exists() {
        out.problems
            .push("the refused list created the output directory".to_owned());
    }
    out
}

#[test]
fn every_ingest_case_gives_its_expected_error() {
    let corpus = corpus_dir();
    let tmp = tempfile::tempdir().unwrap();
    let good = good_media(tmp.path());
    let print = std::env::var_os("GULP_BAD_DATA_PRINT").is_some();
    let mut failures = Vec::new();
    let mut ran = 0;
    for (n, e) in ingest_expectations().iter().enumerate() {
        let path = corpus.join(&e.case);
        let work = tmp.path().join(format!("case{n}"));
        fs::create_dir_all(&work).unwrap();
        let case = e.case.trim_end_matches('/');
        let outcome = std::panic::catch_unwind(|| {
            if let Some(rest) = case.strip_prefix("ingest/videos/") {
                assert!(!rest.contains('/'), "a video case is a folder");
                run_item_case(&path, false, &good, &work)
            } else if let Some(rest) = case.strip_prefix("ingest/frames/") {
                assert!(!rest.contains('/'), "a frame case is a folder");
                run_item_case(&path, true, &good, &work)
            } else if case.starts_with("ingest/lists/") {
                run_list_case(&path, &work)
            } else {
                Outcome {
                    results: Vec::new(),
                    problems: vec![format!("{case}: not under ingest/videos, frames or lists")],
                }
            }
        })
        .unwrap_or_else(|_| Outcome {
            results: vec![("panic".to_owned(), String::new())],
            problems: Vec::new(),
        });
        ran += 1;
        for p in outcome.problems {
            failures.push(format!("line {} {case}: {p}", e.line));
        }
        if outcome.results.is_empty() {
            failures.push(format!("line {} {case}: no result", e.line));
        }
        for (kind, msg) in &outcome.results {
            let shown = msg.replace(&format!("{}/", tmp.path().display()), "");
            let shown = shown.replace(&format!("{}/", corpus.display()), "");
            if print {
                println!("ingest    {case:<48} {kind:<8} {shown}");
            }
            if *kind != e.kind || !msg.contains(&e.substring) {
                failures.push(format!(
                    "line {} {case}: expected {} {:?}, got {kind} {shown:?}",
                    e.line, e.kind, e.substring
                ));
            }
        }
    }
    assert!(ran >= 16, "only {ran} ingest cases ran");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The guard of this layer: every file under `ingest/` (but the generator)
/// belongs to exactly one `ingest` expectation, every `ingest` expectation is
/// a case of the right shape that exists, with the kind its folder gives.
#[test]
fn every_ingest_case_has_one_expectation() {
    let corpus = corpus_dir();
    let expectations = expectations();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for e in &expectations {
        let case = e.case.trim_end_matches('/');
        let under = case.starts_with("ingest/");
        if under != (e.layer == "ingest") {
            problems.push(format!(
                "line {}: layer {} for {case} (ingest/ is the ingest layer's)",
                e.line, e.layer
            ));
        }
        if e.layer != "ingest" {
            continue;
        }
        if !seen.insert(case) {
            problems.push(format!("line {}: {case} is listed twice", e.line));
        }
        let path = corpus.join(case);
        let parts: Vec<&str> = case.split('/').collect();
        let (shape_ok, kind) = match parts[..] {
            ["ingest", "videos" | "frames", _] => (path.is_dir(), "skipped"),
            ["ingest", "lists", _] => (path.is_file(), "input"),
            _ => (false, ""),
        };
        if !shape_ok {
            problems.push(format!(
                "line {}: {case} is not an existing videos/ or frames/ folder or lists/ file",
                e.line
            ));
        }
        if e.kind != kind {
            problems.push(format!(
                "line {}: kind {} for {case}, expected {kind}",
                e.line, e.kind
            ));
        }
        if e.substring.is_empty() {
            problems.push(format!("line {}: no substring", e.line));
        }
    }
    let mut files = Vec::new();
    files_under(&corpus.join("ingest"), "ingest", &mut files);
    for file in files.iter().filter(|f| !NOT_CASES.contains(&f.as_str())) {
        let owners = expectations
            .iter()
            .filter(|e| {
                let case = e.case.trim_end_matches('/');
                file == case || file.starts_with(&format!("{case}/"))
            })
            .count();
        if owners != 1 {
            problems.push(format!("{file}: covered by {owners} expectations"));
        }
    }
    assert!(problems.is_empty(), "tests/data/bad: {problems:#?}");
}
