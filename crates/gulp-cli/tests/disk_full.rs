//! Ingest into a filesystem that fills up: a clear error, committed chunks
//! intact, nothing half-written visible. Needs permission to mount a tmpfs
//! (root); elsewhere the test says it is skipped and passes.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use gulp_io::GulpDirectory;

struct Mount(PathBuf);

impl Mount {
    fn tmpfs(at: &Path, size: &str) -> Result<Mount, String> {
        fs::create_dir_all(at).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(Mount(at.to_owned()))
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn disk_full_gives_a_clear_error_and_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    // 30 items of 8 noisy frames (~7 kB each): ~1.7 MB in all, for a 600 kB
    // filesystem.
    let frames = tmp.path().join("frames");
    let photo = common::jpeg("photo-176x100");
    let mut csv = String::new();
    for i in 0..30 {
        let d = frames.join(format!("c{i:02}"));
        fs::create_dir_all(&d).unwrap();
        for k in 0..8 {
            fs::write(d.join(format!("{k}.jpg")), &photo).unwrap();
        }
        csv.push_str(&format!("c{i:02};x\n"));
    }
    let list = tmp.path().join("list.csv");
    fs::write(&list, csv).unwrap();
    let ingest = |out: &Path| {
        common::gulp()
            .args([
                "ingest",
                "20bn-csv-jpeg",
                s(&list),
                s(&frames),
                s(out),
                "--videos-per-chunk",
                "4",
                "-q",
            ])
            .output()
            .unwrap()
    };
    let reference = tmp.path().join("reference");
    assert!(ingest(&reference).status.success());

    let mount = match Mount::tmpfs(&tmp.path().join("small"), "600k") {
        Ok(m) => m,
        Err(e) => {
            eprintln!(
                "SKIPPED disk_full_gives_a_clear_error_and_loses_nothing: cannot mount a tmpfs here ({e})"
            );
            return;
        }
    };
    let out = mount.0.join("gulp");
    let result = ingest(&out);
    let stderr = String::from_utf8_lossy(&result.stderr).into_owned();
    assert_eq!(result.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(
        stderr.contains(".gulp-tmp.data_") || stderr.contains(".gulp-tmp.meta_"),
        "names the file: {stderr}"
    );

    // Nothing half-written: no temporary files, and every chunk that is
    // there is the reference's chunk byte for byte.
    let names: Vec<String> = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with(".gulp-tmp")),
        "{names:?}"
    );
    let gd = GulpDirectory::open(&out).unwrap();
    assert!(
        !gd.chunks().is_empty(),
        "some chunks fit before the disk filled"
    );
    assert!(gd.warnings().is_empty(), "{:?}", gd.warnings());
    for chunk in gd.chunks() {
        for p in [&chunk.data_path, &chunk.meta_path] {
            let name = p.file_name().unwrap();
            assert_eq!(
                fs::read(p).unwrap(),
                fs::read(reference.join(name)).unwrap(),
                "{}",
                p.display()
            );
        }
    }
    let committed = gd.len();
    assert!(committed < 30 && committed.is_multiple_of(4), "{committed}");
    drop(gd);
    common::gulp().args(["check", s(&out)]).assert().code(0);
}
