//! dump-meta, convert, info, extract and bench on gulpio2's fixtures and on
//! directories written here.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{clean_dir, fixture_cases, fixture_copy, fixtures, gulp, meta, stdout_of};
use gulp_codec::{ColorMode, decode_jpeg};
use gulp_format::{JsonSerializer, MSGPACK_MAGIC, Map, Value};
use gulp_io::{GulpDirectory, Selection};
use gulp_test_support::gulp_dir::GulpDirBuilder;

fn run_ok(args: &[&str], dir: &Path) -> Vec<u8> {
    gulp()
        .arg(args[0])
        .arg(dir)
        .args(&args[1..])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone()
}

/// The meta files of a directory, in numeric chunk order.
fn meta_files(dir: &Path) -> Vec<PathBuf> {
    let mut metas: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name()?.to_str()?.to_owned();
            let n = name
                .strip_prefix("meta_")?
                .strip_suffix(".gmeta")?
                .parse()
                .ok()?;
            Some((n, path))
        })
        .collect();
    metas.sort();
    metas.into_iter().map(|(_, p)| p).collect()
}

/// What gulpio2 wrote: every meta file's object, merged in chunk order.
fn merged_gmeta(dir: &Path) -> Value {
    let mut merged = Map::default();
    for path in meta_files(dir) {
        let Value::Object(items) =
            JsonSerializer::parse_value(&std::fs::read(path).unwrap()).unwrap()
        else {
            panic!("meta is not an object");
        };
        merged.extend(items);
    }
    Value::Object(merged)
}

fn parse(bytes: &[u8]) -> Value {
    JsonSerializer::parse_value(bytes).unwrap()
}

/// Checks a dump against `<case>.expected.json` (what gulpio2 read back).
fn assert_matches_expected(case: &Path, dump: &Value) {
    let expected_path = case.with_file_name(format!(
        "{}.expected.json",
        case.file_name().unwrap().to_str().unwrap()
    ));
    let expected = parse(&std::fs::read(expected_path).unwrap());
    let items = expected.get("items").unwrap().as_object().unwrap();
    let dumped = dump.as_object().unwrap();
    assert_eq!(dumped.len(), items.len(), "{}", case.display());
    for (id, item) in items {
        let got = dumped.get(id).unwrap_or_else(|| panic!("{id} missing"));
        assert_eq!(got.get("meta_data"), item.get("meta_data"), "{id}");
        let frames: Vec<Value> = item
            .get("frames")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                Value::Array(vec![
                    f.get("loc").unwrap().clone(),
                    f.get("pad").unwrap().clone(),
                    f.get("length").unwrap().clone(),
                ])
            })
            .collect();
        assert_eq!(got.get("frame_info"), Some(&Value::Array(frames)), "{id}");
    }
}

#[test]
fn dump_meta_equals_what_gulpio2_wrote() {
    for case in fixture_cases() {
        let out = run_ok(&["dump-meta"], &case);
        let dump = parse(&out);
        assert_eq!(dump, merged_gmeta(&case), "{}", case.display());
        assert_matches_expected(&case, &dump);
        // One chunk: the very bytes of its meta file.
        for path in meta_files(&case) {
            let n = path.file_stem().unwrap().to_str().unwrap()["meta_".len()..].to_owned();
            let out = run_ok(&["dump-meta", "--chunk", &n], &case);
            assert_eq!(out, std::fs::read(&path).unwrap(), "{}", path.display());
        }
    }
}

#[test]
fn dump_meta_of_msgpack_meta_is_the_same() {
    for case in fixture_cases() {
        let (_tmp, dir) = fixture_copy(&case);
        let json_dump = run_ok(&["dump-meta"], &dir);
        run_ok(&["convert", "--to", "msgpack"], &dir);
        for path in meta_files(&dir) {
            assert_eq!(&std::fs::read(&path).unwrap()[1..9], &MSGPACK_MAGIC[..8]);
        }
        assert_eq!(
            run_ok(&["dump-meta"], &dir),
            json_dump,
            "{}",
            case.display()
        );
        assert_matches_expected(&case, &parse(&json_dump));
    }
}

#[test]
fn dump_meta_ids_and_no_frame_info() {
    let case = fixtures().join("gulpio2/same_id_twice");
    let out = run_ok(&["dump-meta", "--id", "y", "--id", "a", "--id", "y"], &case);
    let merged = merged_gmeta(&case);
    let dump = parse(&out);
    let ids: Vec<&String> = dump.as_object().unwrap().keys().collect();
    assert_eq!(ids, ["y", "a"]);
    assert_eq!(dump.get("a"), merged.get("a"));
    let out = run_ok(&["dump-meta", "--no-frame-info", "--id", "x"], &case);
    let x = merged.get("x").unwrap();
    let mut want = Map::default();
    want.insert("meta_data".into(), x.get("meta_data").unwrap().clone());
    let mut top = Map::default();
    top.insert("x".into(), Value::Object(want));
    assert_eq!(
        out,
        JsonSerializer::value_to_string(&Value::Object(top)).into_bytes()
    );
    // An id in another chunk than the one asked for.
    let case = fixtures().join("gulpio2/test_init");
    gulp()
        .args(["dump-meta", "--chunk", "0", "--id", "2"])
        .arg(&case)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("id \"2\" is not in chunk 0"));
}

#[test]
fn convert_round_trip_is_byte_identical() {
    for case in fixture_cases() {
        let (_tmp, dir) = fixture_copy(&case);
        let originals: Vec<Vec<u8>> = meta_files(&dir)
            .iter()
            .map(|p| std::fs::read(p).unwrap())
            .collect();
        let out = stdout_of(
            &gulp()
                .args(["convert", "--to", "msgpack"])
                .arg(&dir)
                .assert()
                .success()
                .get_output()
                .clone(),
        );
        assert!(out.contains(&format!("{} chunks converted to msgpack", originals.len())));
        // msgpack meta gets per-frame checksums of the data.
        let m = meta(
            &dir,
            meta_files(&dir)[0].file_stem().unwrap().to_str().unwrap()[5..]
                .parse()
                .unwrap(),
        );
        for (_, item) in m.iter() {
            assert_eq!(item.frame_checksums.len(), item.frame_info.len());
        }
        gulp().args(["check"]).arg(&dir).assert().success();
        // Converting again changes nothing.
        let out = stdout_of(
            &gulp()
                .args(["convert", "--to", "msgpack"])
                .arg(&dir)
                .assert()
                .success()
                .get_output()
                .clone(),
        );
        assert!(out.contains("0 chunks converted"), "{out}");
        run_ok(&["convert", "--to", "json"], &dir);
        let back: Vec<Vec<u8>> = meta_files(&dir)
            .iter()
            .map(|p| std::fs::read(p).unwrap())
            .collect();
        assert_eq!(back, originals, "{}", case.display());
        // No temporary file is left behind.
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name();
            assert!(
                !name.to_str().unwrap().starts_with(".gulp-tmp."),
                "{name:?}"
            );
        }
    }
}

#[test]
fn convert_leaves_chunks_in_the_target_format_alone() {
    let tmp = clean_dir();
    let dir = tmp.path();
    let msgpack_before = std::fs::read(dir.join("meta_1.gmeta")).unwrap();
    let out = stdout_of(
        &gulp()
            .args(["convert", "--to", "msgpack"])
            .arg(dir)
            .assert()
            .success()
            .get_output()
            .clone(),
    );
    assert!(
        out.contains("1 chunks converted to msgpack, 1 already msgpack"),
        "{out}"
    );
    assert_eq!(
        std::fs::read(dir.join("meta_1.gmeta")).unwrap(),
        msgpack_before
    );
}

#[test]
fn info_json_fields() {
    let case = fixtures().join("gulpio2/extension");
    let out = run_ok(&["info", "--json"], &case);
    let info: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(info["chunks"], 3);
    assert_eq!(info["items"], 5);
    assert_eq!(info["frames"], 9);
    let bytes: u64 = ["data_0.gulp", "data_1.gulp", "data_2.gulp"]
        .iter()
        .map(|f| std::fs::metadata(case.join(f)).unwrap().len())
        .sum();
    assert_eq!(info["bytes"], bytes);
    assert_eq!(info["meta_formats"], serde_json::json!({"json": 3}));
    assert_eq!(info["labels"]["count"], 3);
    assert_eq!(
        info["labels"]["names"],
        serde_json::json!(["lifting", "pushing", "dropping"])
    );
    assert_eq!(info["warnings"], serde_json::json!([]));
    // Frame sizes from the meta: JPEG bytes = length - pad.
    let gulp_dir = GulpDirectory::open(&case).unwrap();
    let mut sizes: Vec<u64> = gulp_dir
        .items()
        .unwrap()
        .flat_map(|(_, item)| item.frame_info.iter().map(|fi| fi.jpeg_len().unwrap()))
        .collect();
    sizes.sort_unstable();
    assert_eq!(info["frame_bytes"]["min"], sizes[0]);
    assert_eq!(info["frame_bytes"]["median"], sizes[sizes.len() / 2]);
    assert_eq!(info["frame_bytes"]["max"], *sizes.last().unwrap());

    // Mixed formats and a warning.
    let tmp = clean_dir();
    std::fs::write(tmp.path().join("data_9.gulp"), b"").unwrap();
    let out = run_ok(&["info", "--json"], tmp.path());
    let info: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        info["meta_formats"],
        serde_json::json!({"json": 1, "msgpack": 1})
    );
    assert_eq!(info["labels"], serde_json::Value::Null);
    let warnings = info["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].as_str().unwrap().contains("data_9.gulp"));
    let text = stdout_of(
        &gulp()
            .arg("info")
            .arg(tmp.path())
            .assert()
            .success()
            .get_output()
            .clone(),
    );
    assert!(text.contains("items       3"), "{text}");
    assert!(text.contains("json: 1, msgpack: 1"), "{text}");
    assert!(
        text.contains("warning: ") && text.contains("data_9.gulp"),
        "{text}"
    );
}

#[test]
fn extract_writes_the_stored_frames() {
    let case = fixtures().join("gulpio2/padding");
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    gulp()
        .args([
            "extract", "--id", "pad_gray", "--id", "pad_rgb", "--select", "::-2", "--out",
        ])
        .arg(&out_dir)
        .arg(&case)
        .assert()
        .success();
    let dir = GulpDirectory::open(&case).unwrap();
    for id in ["pad_gray", "pad_rgb"] {
        let n = dir.item(id).unwrap().frame_info.len();
        let want = Selection::parse("::-2").unwrap().resolve(n).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(out_dir.join(id))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        let mut want_names: Vec<String> = want.iter().map(|k| format!("{k:05}.jpg")).collect();
        want_names.sort();
        assert_eq!(names, want_names);
        for k in want {
            let stored = dir.frames(id, &Selection::Indices(vec![k as i64])).unwrap();
            let written = std::fs::read(out_dir.join(id).join(format!("{k:05}.jpg"))).unwrap();
            assert_eq!(written, &*stored[0], "{id} frame {k}");
        }
    }
}

#[test]
fn extract_decodes_to_png() {
    let case = fixtures().join("gulpio2/gray_rgb");
    let tmp = tempfile::tempdir().unwrap();
    gulp()
        .args(["extract", "--id", "mixed", "--decode", "png", "--out"])
        .arg(tmp.path())
        .arg(&case)
        .assert()
        .success();
    let dir = GulpDirectory::open(&case).unwrap();
    let frames = dir.frames("mixed", &Selection::All).unwrap();
    assert!(frames.len() > 5);
    for (k, jpeg) in frames.iter().enumerate() {
        let want = decode_jpeg(jpeg, ColorMode::Auto).unwrap();
        let png = image::open(tmp.path().join("mixed").join(format!("{k:05}.png"))).unwrap();
        assert_eq!(
            (png.height() as usize, png.width() as usize),
            (want.height, want.width)
        );
        let pixels = if want.channels == 1 {
            png.to_luma8().into_raw()
        } else {
            png.to_rgb8().into_raw()
        };
        assert_eq!(pixels, want.pixels, "frame {k}");
    }
}

#[test]
fn extract_escapes_ids_that_are_not_file_names() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = GulpDirBuilder::new(tmp.path().join("gulp"))
        .item("../up", Value::Null, [common::jpeg("white-8x8")])
        .write();
    let out = tmp.path().join("out");
    gulp()
        .args(["extract", "--id", "../up", "--out"])
        .arg(&out)
        .arg(&dir)
        .assert()
        .success();
    assert!(out.join("..%2Fup").join("00000.jpg").is_file());
    assert!(!tmp.path().join("up").exists());
}

#[test]
fn bench_reports_rates() {
    let tmp = clean_dir();
    let text = stdout_of(
        &gulp()
            .args(["bench", "--threads", "2"])
            .arg(tmp.path())
            .assert()
            .success()
            .get_output()
            .clone(),
    );
    for what in ["7 frames read and decoded", "frames/s", "MP/s", "MB/s"] {
        assert!(text.contains(what), "{text}");
    }
    let out = run_ok(&["bench", "--raw", "--json"], tmp.path());
    let figures: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(figures["frames"], 7);
    assert_eq!(figures["decode"], false);
    assert_eq!(figures["pixels"], 0);
    let out = run_ok(&["bench", "--json", "--threads", "1"], tmp.path());
    let figures: serde_json::Value = serde_json::from_slice(&out).unwrap();
    // 8x8 + 24x16 + 8x8 + 176x100 + 8x8 + 24x16 + 8x8
    assert_eq!(figures["pixels"], 4 * 64 + 2 * 384 + 17600);
    assert_eq!(figures["failed"], 0);
}

#[test]
fn bench_loader_reports_clips() {
    let tmp = clean_dir();
    let out = run_ok(
        &[
            "bench",
            "--loader",
            "--json",
            "--threads",
            "2",
            "--frames",
            "3",
            "--resize",
            "none",
            "--size",
            "8,8",
            "--crop",
            "center",
            "--drop-last",
            "false",
            "--batch-size",
            "2",
            "--epochs",
            "2",
        ],
        tmp.path(),
    );
    let figures: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let items = gulp_io::GulpDirectory::open(tmp.path()).unwrap().len() as u64;
    assert_eq!(figures["clips"], 2 * items);
    assert_eq!(figures["batches"], 2 * items.div_ceil(2));
    assert_eq!(figures["skipped"], 0);
    assert!(figures["clips_per_s"].as_f64().unwrap() > 0.0);
    let text = stdout_of(
        &gulp()
            .args(["bench", "--loader", "--resize", "none", "--size", "8"])
            .args(["--crop", "nowhere"])
            .arg(tmp.path())
            .assert()
            .failure()
            .code(2)
            .get_output()
            .clone(),
    );
    assert!(text.is_empty());
}

#[test]
fn broken_pipe_exits_0_quietly() {
    // Enough meta to fill any pipe buffer.
    let tmp = tempfile::tempdir().unwrap();
    let jpeg = common::jpeg("white-8x8");
    let long = "x".repeat(1000);
    let mut gulp = GulpDirBuilder::new(tmp.path());
    for i in 0..1000 {
        gulp = gulp.item(
            &format!("item{i}"),
            Value::from(long.as_str()),
            [jpeg.clone()],
        );
    }
    gulp.write();
    for args in [&["dump-meta"][..], &["check"], &["info", "--json"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_gulp"))
            .args(args)
            .arg(tmp.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 1];
        stdout.read_exact(&mut first).unwrap();
        drop(stdout);
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert_eq!(status.code(), Some(0), "{args:?}: {stderr}");
        assert_eq!(stderr, "", "{args:?}");
    }
}

#[test]
fn index_writes_refreshes_and_info_and_check_read_it() {
    let tmp = clean_dir();
    let dir = tmp.path();
    let index = dir.join(gulp_format::INDEX_FILE);
    let before = run_ok(&["info", "--json"], dir);
    let out = String::from_utf8(run_ok(&["index"], dir)).unwrap();
    assert!(
        out.contains(": written: 2 chunks, 3 items, 7 frames"),
        "{out}"
    );
    assert!(index.exists());
    let out = String::from_utf8(run_ok(&["index"], dir)).unwrap();
    assert!(out.contains("was up to date"), "{out}");
    // `gulp info` reads the frame sizes from the index: the same figures;
    // sound and frame times, which the index does not hold, are not
    // counted.
    let mut with: serde_json::Value =
        serde_json::from_slice(&run_ok(&["info", "--json"], dir)).unwrap();
    let mut before: serde_json::Value = serde_json::from_slice(&before).unwrap();
    assert_eq!(with["index"], std::fs::metadata(&index).unwrap().len());
    with["index"] = serde_json::Value::Null;
    assert_eq!(before["audio"]["items"], 0);
    assert_eq!(before["frame_times"], 0);
    assert!(
        with["audio"].is_null() && with["frame_times"].is_null(),
        "{with}"
    );
    before["audio"] = serde_json::Value::Null;
    before["frame_times"] = serde_json::Value::Null;
    assert_eq!(with, before);
    let out = String::from_utf8(run_ok(&["check"], dir)).unwrap();
    assert!(out.contains("no problems found"), "{out}");
    // Damaged: check notes it (no leftover of a write) and exits 0; index
    // rewrites it.
    std::fs::write(&index, b"GULPIDX\0short").unwrap();
    let out = String::from_utf8(run_ok(&["check"], dir)).unwrap();
    assert!(
        out.contains("index file damaged") && !out.contains("leftover"),
        "{out}"
    );
    let out = String::from_utf8(run_ok(&["index"], dir)).unwrap();
    assert!(out.contains("rewritten (it was damaged)"), "{out}");
    // `gulp convert` rewrites every meta, then the index that describes
    // them: it is up to date after, either way.
    for to in ["msgpack", "json"] {
        let out = String::from_utf8(run_ok(&["convert", "--to", to], dir)).unwrap();
        assert!(out.contains("index file gulp_index.bin written"), "{out}");
        let out = String::from_utf8(run_ok(&["index"], dir)).unwrap();
        assert!(out.contains("was up to date"), "{to}: {out}");
    }
    let out = String::from_utf8(run_ok(&["index", "--remove"], dir)).unwrap();
    assert!(out.contains("removed") && !index.exists(), "{out}");
}
