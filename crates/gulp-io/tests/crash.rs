//! SIGKILL in the middle of writing: the directory opens afterwards, every
//! committed chunk is intact, and nothing half-written is visible.

// Test code: a panic is a failure with a message.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use gulp_format::{MetaFormat, Value, parse_chunk_file_name};
use gulp_io::{ChunkWriter, DirectoryWarning, GulpDirectory, Selection};

const ITEMS: usize = 20;
const FRAMES: usize = 5;

fn frame(chunk: u64, item: usize, k: usize) -> Vec<u8> {
    let len = 700 + (item * 7 + k * 13) % 300;
    (0..len)
        .map(|i| (i as u64 ^ chunk ^ (item * 31 + k) as u64) as u8)
        .collect()
}

/// Run by the crash test in a child process: writes chunks forever, with
/// fsync, printing each chunk number once it is committed.
#[test]
#[ignore = "child process of kill_during_write_leaves_committed_chunks_intact"]
fn child_process_writing_chunks() {
    let dir = std::env::var("GULP_CRASH_DIR").expect("run by the crash test only");
    let format = if std::env::var("GULP_CRASH_MSGPACK").is_ok() {
        MetaFormat::Msgpack
    } else {
        MetaFormat::Json
    };
    for chunk in 0.. {
        let mut writer = ChunkWriter::builder()
            .meta_format(format)
            .create(&dir, chunk)
            .unwrap();
        for item in 0..ITEMS {
            let frames: Vec<Vec<u8>> = (0..FRAMES).map(|k| frame(chunk, item, k)).collect();
            writer
                .append(&format!("{chunk}-{item}"), Value::Int(item as i64), frames)
                .unwrap();
        }
        writer.finish().unwrap();
        println!("COMMITTED {chunk}");
    }
}

fn check_directory(dir: &Path, committed: u64) {
    let gulp = GulpDirectory::open(dir).unwrap();
    // The last rename may not have happened: at most one orphan data file,
    // the one of the chunk being committed; temporary files are hidden.
    for w in gulp.warnings() {
        match w {
            DirectoryWarning::TempFile(p) => {
                assert!(p.file_name().unwrap().to_str().unwrap().starts_with('.'))
            }
            DirectoryWarning::OrphanData(p) => {
                let name = p.file_name().unwrap().to_str().unwrap();
                assert!(parse_chunk_file_name(name).is_some());
            }
            other => panic!("unexpected {other}"),
        }
    }
    let chunks = gulp.chunks();
    assert!(
        chunks.len() as u64 >= committed,
        "{} chunks, {committed} reported committed",
        chunks.len()
    );
    for (n, entry) in chunks.iter().enumerate() {
        assert_eq!(entry.chunk, n as u64);
        assert_eq!(entry.meta().unwrap().len(), ITEMS);
        assert_eq!(entry.len(), ITEMS);
        for item in 0..ITEMS {
            let id = format!("{n}-{item}");
            let frames = gulp.frames(&id, &Selection::All).unwrap();
            assert_eq!(frames.len(), FRAMES);
            for (k, f) in frames.iter().enumerate() {
                assert_eq!(**f, frame(n as u64, item, k)[..], "{id} frame {k}");
            }
        }
    }
    // gulpio2 globs data*.gulp / meta*.gmeta: no temporary name matches.
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if (name.starts_with("data") && name.ends_with(".gulp"))
            || (name.starts_with("meta") && name.ends_with(".gmeta"))
        {
            assert!(
                parse_chunk_file_name(&name).is_some(),
                "{name} would be picked up by gulpio2"
            );
        }
    }
}

#[test]
fn kill_during_write_leaves_committed_chunks_intact() {
    let exe = std::env::current_exe().unwrap();
    for trial in 0..6u64 {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(&exe);
        cmd.args([
            "--exact",
            "child_process_writing_chunks",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("GULP_CRASH_DIR", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
        if trial % 2 == 1 {
            cmd.env("GULP_CRASH_MSGPACK", "1");
        }
        let mut child = cmd.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut committed = 0;
        // Let it commit a chunk or two, then kill it at a varying moment.
        while committed < 1 + trial % 2 {
            let line = lines.next().expect("child ended early").unwrap();
            if line.starts_with("COMMITTED") {
                committed += 1;
            }
        }
        std::thread::sleep(Duration::from_micros(1_500 * trial * trial + 300));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let reported = committed
            + lines
                .map_while(Result::ok)
                .filter(|l| l.starts_with("COMMITTED"))
                .count() as u64;
        check_directory(dir.path(), reported);
    }
}
