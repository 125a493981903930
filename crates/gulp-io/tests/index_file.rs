//! A directory's index file: written when asked, used when fresh, never
//! trusted when stale or damaged, and the directory read from it the same
//! as from its meta files.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::path::Path;

use gulp_format::{INDEX_FILE, Map, MetaFormat, Value};
use gulp_io::{ChunkWriter, GulpDirectory, IndexPolicy, IndexState, Selection};

/// `chunks` chunks of `per` items, alternately JSON and msgpack meta, ids
/// `c{chunk}-{k}` written in a shuffled order (so that sorted order and
/// directory order differ), labels of three classes, item k with k % 3 + 1
/// frames; chunk 1 empty.
fn make(dir: &Path, first_chunk: u64, chunks: u64, per: usize) {
    for n in first_chunk..first_chunk + chunks {
        let format = if n % 2 == 0 {
            MetaFormat::Json
        } else {
            MetaFormat::Msgpack
        };
        let mut w = ChunkWriter::builder()
            .meta_format(format)
            .fsync(false)
            .create(dir, n)
            .unwrap();
        let count = if n == 1 { 0 } else { per };
        for k in (0..count).rev() {
            let mut meta = Map::with_capacity_and_hasher(2, Default::default());
            meta.insert("label".into(), Value::from(["push", "pull", "hold"][k % 3]));
            meta.insert("n".into(), Value::from(k as i64));
            let frames: Vec<Vec<u8>> = (0..k % 3 + 1)
                .map(|f| vec![0xff, 0xd8, k as u8, f as u8, 0xff, 0xd9])
                .collect();
            w.append(&format!("c{n}-{k:03}"), Value::from(meta), frames)
                .unwrap();
        }
        w.finish().unwrap();
    }
}

fn open(dir: &Path, policy: IndexPolicy) -> GulpDirectory {
    GulpDirectory::options().index(policy).open(dir).unwrap()
}

/// Everything a reader sees of a directory.
fn contents(gd: &GulpDirectory) -> Vec<(String, usize, Vec<Vec<u8>>, Value)> {
    gd.ids()
        .map(|id| {
            let (chunk, item) = gd.read_item(id).unwrap();
            let frames = gd
                .frames(id, &Selection::All)
                .unwrap()
                .into_iter()
                .map(|f| f.to_vec())
                .collect();
            (
                id.to_owned(),
                chunk,
                frames,
                item.first_meta_data().unwrap().clone(),
            )
        })
        .collect()
}

#[test]
fn index_is_written_used_and_reads_the_same_as_the_metas() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), 0, 4, 20);
    let plain = open(dir.path(), IndexPolicy::Off);
    assert!(plain.index_file().is_none());
    assert!(!dir.path().join(INDEX_FILE).exists());
    // Below the automatic threshold nothing is written.
    let auto = open(dir.path(), IndexPolicy::Auto);
    assert!(auto.index_file().is_none());
    assert!(!dir.path().join(INDEX_FILE).exists());

    let written = open(dir.path(), IndexPolicy::Always);
    assert!(written.index_file().is_some());
    assert!(dir.path().join(INDEX_FILE).exists());
    // Now fresh, `auto` reads it too.
    let indexed = open(dir.path(), IndexPolicy::Auto);
    let index = indexed.index_file().unwrap();
    assert_eq!(index.len(), 60);
    assert!(indexed.chunks().iter().all(|c| c.index().is_mapped()));
    assert!(matches!(indexed.index_state(), Some(IndexState::Fresh(_))));

    assert_eq!(indexed.len(), plain.len());
    assert_eq!(indexed.n_frames(), plain.n_frames());
    assert_eq!(
        indexed.ids().collect::<Vec<_>>(),
        plain.ids().collect::<Vec<_>>()
    );
    for (a, b) in indexed.chunks().iter().zip(plain.chunks()) {
        assert_eq!(a.index(), b.index(), "chunk {}", a.chunk);
    }
    assert_eq!(contents(&indexed), contents(&plain));
    // Every id is found where the metas put it; others are not.
    for id in plain.ids() {
        assert_eq!(
            indexed.chunk_of(id).unwrap().chunk,
            plain.chunk_of(id).unwrap().chunk
        );
    }
    for missing in ["", "c0", "c0-999", "c9-000", "zzz"] {
        assert!(!indexed.contains(missing), "{missing}");
    }
    // The file holds what gulp check would build from the metas.
    assert_eq!(
        indexed.expected_index().unwrap().unwrap(),
        std::fs::read(dir.path().join(INDEX_FILE)).unwrap()
    );
}

#[test]
fn a_stale_index_is_detected_and_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), 0, 3, 10);
    open(dir.path(), IndexPolicy::Always);
    // A chunk added after the index was written.
    make(dir.path(), 3, 1, 5);
    let gd = open(dir.path(), IndexPolicy::Off);
    match gd.index_state() {
        None => {} // `off` does not look at it
        Some(state) => panic!("{state:?}"),
    }
    let gd = GulpDirectory::options()
        .index(IndexPolicy::Auto)
        .open(dir.path())
        .unwrap();
    // Stale, so not used (and `auto` writes none for 25 items)...
    assert!(gd.index_file().is_none());
    assert!(gd.contains("c3-004"));
    match gd.index_state() {
        Some(IndexState::Stale(why)) => assert!(why.contains("chunks"), "{why}"),
        other => panic!("{other:?}"),
    }
    // ...and rebuilt by `always`.
    let gd = open(dir.path(), IndexPolicy::Always);
    assert_eq!(gd.index_file().unwrap().len(), 25);
    assert!(gd.contains("c3-004"));

    // A meta file rewritten in place with the same length: its
    // modification time tells.
    let meta = dir.path().join("meta_2.gmeta");
    let bytes = std::fs::read(&meta).unwrap();
    let later =
        std::fs::metadata(&meta).unwrap().modified().unwrap() + std::time::Duration::from_secs(5);
    std::fs::write(&meta, &bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&meta)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let gd = open(dir.path(), IndexPolicy::Auto);
    assert!(gd.index_file().is_none());
    assert!(matches!(gd.index_state(), Some(IndexState::Stale(_))));
}

#[test]
fn a_damaged_index_is_never_trusted() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), 0, 3, 10);
    open(dir.path(), IndexPolicy::Always);
    let path = dir.path().join(INDEX_FILE);
    let good = std::fs::read(&path).unwrap();
    let plain = contents(&open(dir.path(), IndexPolicy::Off));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("cut short", good[..good.len() - 8].to_vec()),
        ("empty", Vec::new()),
        ("a body byte flipped", {
            let mut b = good.clone();
            let at = b.len() / 2;
            b[at] ^= 0x40;
            b
        }),
        ("the flags changed", {
            let mut b = good.clone();
            b[12] ^= 1;
            b
        }),
        ("another magic", {
            let mut b = good.clone();
            b[0] = b'X';
            b
        }),
    ];
    for (what, bytes) in cases {
        std::fs::write(&path, &bytes).unwrap();
        // Written after the metas: only its content can tell it is wrong.
        let gd = open(dir.path(), IndexPolicy::Auto);
        assert!(gd.index_file().is_none(), "{what}");
        match gd.index_state() {
            Some(IndexState::Damaged(_)) => {}
            other => panic!("{what}: {other:?}"),
        }
        assert_eq!(contents(&gd), plain, "{what}");
        // `always` replaces it with a good one.
        let gd = open(dir.path(), IndexPolicy::Always);
        assert!(gd.index_file().is_some(), "{what}");
        assert_eq!(std::fs::read(&path).unwrap(), good, "{what}");
    }
}

#[test]
fn gulp_check_compares_the_index_with_the_metas() {
    use gulp_io::check::{Options, ProblemKind, check_directory};
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), 0, 3, 10);
    let options = Options {
        decode: false,
        threads: 1,
    };
    let check = || check_directory(dir.path(), options, &|_| {}).unwrap();
    let index_notes = |r: &gulp_io::check::Report| {
        r.notes
            .iter()
            .filter(|n| n.kind == ProblemKind::IndexFile)
            .count()
    };
    // None yet, then a fresh one: clean either way.
    assert!(check().is_clean());
    open(dir.path(), IndexPolicy::Always);
    let report = check();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(index_notes(&report), 0);

    // Damaged: a note (it is never used), not a problem.
    let path = dir.path().join(INDEX_FILE);
    let good = std::fs::read(&path).unwrap();
    std::fs::write(&path, &good[..good.len() / 2]).unwrap();
    let report = check();
    assert!(report.is_clean());
    assert_eq!(index_notes(&report), 1);
    assert!(
        report.notes[0].message.contains("damaged"),
        "{}",
        report.notes[0]
    );

    // A label changed in a JSON meta with its length and time kept: the
    // index passes every check opening makes, yet differs from the metas.
    std::fs::write(&path, &good).unwrap();
    let meta = dir.path().join("meta_0.gmeta");
    let then = std::fs::metadata(&meta).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(&meta).unwrap();
    let changed = text.replacen("\"push\"", "\"pull\"", 1);
    assert_ne!(text, changed);
    std::fs::write(&meta, changed).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&meta)
        .unwrap()
        .set_modified(then)
        .unwrap();
    assert!(open(dir.path(), IndexPolicy::Auto).index_file().is_some());
    let report = check();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].kind, ProblemKind::IndexFile);
}

/// Runs `f` on another thread and returns what it returns, failing (rather
/// than hanging the test run) if it has not returned after a minute: what
/// an open that waits for a lock nobody releases does.
fn without_waiting<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()).unwrap());
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what}: still waiting after a minute"))
}

#[test]
fn builders_at_once_build_one_valid_index() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), 0, 6, 40);
    let plain = contents(&open(dir.path(), IndexPolicy::Off));
    let n = 4;
    let start = std::sync::Barrier::new(n);
    // Each thread opens the file on its own, as the ranks of a node do:
    // the builders' lock (a flock) keeps them apart as it keeps processes.
    let opened: Vec<GulpDirectory> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..n)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    open(dir.path(), IndexPolicy::Always)
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    for gd in &opened {
        assert_eq!(gd.index_file().unwrap().len(), 200);
        assert!(gd.warnings().is_empty(), "{:?}", gd.warnings());
        assert_eq!(contents(gd), plain);
    }
    let gd = open(dir.path(), IndexPolicy::Read);
    assert!(matches!(gd.index_state(), Some(IndexState::Fresh(_))));
    assert_eq!(
        gd.expected_index().unwrap().unwrap(),
        std::fs::read(dir.path().join(INDEX_FILE)).unwrap()
    );
    // No temporary file left behind.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(gulp_format::TEMP_PREFIX))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn a_build_does_not_wait_for_a_writer_of_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), 0, 3, 10);
    // What `gulp ingest` and `gulp merge` hold while they run.
    let writer = std::fs::File::open(dir.path()).unwrap();
    writer.lock().unwrap();
    let path = dir.path().to_owned();
    let gd = without_waiting("an open with the directory locked", move || {
        open(&path, IndexPolicy::Always)
    });
    assert_eq!(gd.index_file().unwrap().len(), 20); // chunk 1 is empty
    // And the writer's own open of its directory (it holds the lock).
    make(dir.path(), 3, 1, 5);
    let gd = open(dir.path(), IndexPolicy::Always);
    assert_eq!(gd.index_file().unwrap().len(), 25);
    drop(writer);
}

#[test]
fn recover_keeps_the_file_of_a_build_in_progress() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), 0, 1, 3);
    let temp = dir
        .path()
        .join(format!("{}{INDEX_FILE}", gulp_format::TEMP_PREFIX));
    std::fs::write(&temp, b"half an index").unwrap();
    // A builder at work holds the builders' lock.
    let builder = std::fs::File::create(dir.path().join(gulp_format::INDEX_LOCK_FILE)).unwrap();
    builder.lock().unwrap();
    assert_eq!(gulp_io::recover(dir.path()).unwrap(), Vec::new());
    assert!(temp.exists());
    // Once it is gone, what it left is an unfinished write.
    drop(builder);
    assert_eq!(
        gulp_io::recover(dir.path()).unwrap(),
        vec![gulp_io::Recovery::RemovedTemp(temp.clone())]
    );
    assert!(!temp.exists());
}

#[test]
fn builds_beside_a_writer_never_leave_a_wrong_index() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), 0, 4, 30);
    let check = |gd: &GulpDirectory| {
        // Whatever the open found, a fresh index holds what the metas say.
        if let Some(IndexState::Fresh(_)) = gd.index_state_now() {
            assert_eq!(
                gd.expected_index().unwrap().unwrap(),
                std::fs::read(dir.path().join(INDEX_FILE)).unwrap()
            );
        }
    };
    std::thread::scope(|s| {
        // A writer adds chunks while the directory is opened and indexed.
        let writer = s.spawn(|| {
            for n in 4..24 {
                make(dir.path(), n, 1, 30);
            }
        });
        while !writer.is_finished() {
            let gd = open(dir.path(), IndexPolicy::Always);
            if gd.index_file().is_some() {
                assert_eq!(gd.ids().count(), gd.len());
            }
            check(&gd);
        }
    });
    let gd = open(dir.path(), IndexPolicy::Read);
    check(&gd);
    let gd = open(dir.path(), IndexPolicy::Always);
    assert!(matches!(gd.index_state(), Some(IndexState::Fresh(_))));
    assert_eq!(gd.len(), 3 * 30 + 20 * 30); // chunk 1 is empty
    check(&gd);
}

/// What a writer calls after it changed a directory (`GULP_INDEX` unset:
/// `auto`).
#[test]
fn refresh_writes_for_large_or_indexed_directories_and_reads_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), 0, 3, 10);
    // A meta no open could read: deciding must not read it.
    let meta = dir.path().join("meta_2.gmeta");
    let good = std::fs::read(&meta).unwrap();
    std::fs::write(&meta, b"not a meta").unwrap();
    assert!(!GulpDirectory::refresh_index(dir.path(), 20).unwrap());
    assert!(!dir.path().join(INDEX_FILE).exists());
    assert!(GulpDirectory::refresh_index(dir.path(), gulp_io::AUTO_ITEMS).is_err());
    std::fs::write(&meta, good).unwrap();
    // At the threshold (as the writer counts) it is written...
    assert!(GulpDirectory::refresh_index(dir.path(), gulp_io::AUTO_ITEMS).unwrap());
    let gd = open(dir.path(), IndexPolicy::Read);
    assert_eq!(gd.index_file().unwrap().len(), 20);
    // ...and one that has an index gets it rewritten whatever its size.
    make(dir.path(), 3, 1, 5);
    assert!(GulpDirectory::refresh_index(dir.path(), 25).unwrap());
    let gd = open(dir.path(), IndexPolicy::Read);
    assert_eq!(gd.index_file().unwrap().len(), 25);
}
