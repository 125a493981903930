//! Merging shard directories into one ([`merge`]): what `gulp merge` and
//! `gulp.merge` do.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use gulp_format::{ChunkFile, TEMP_PREFIX, data_file_name, meta_file_name, parse_chunk_file_name};
use gulp_io::{DirectoryWarning, GulpDirectory, LabelIndex};
use serde::Serialize;

use super::is_bookkeeping;
use crate::error::{Error, Result};

/// Returns an [`Error::Merge`] of the formatted message.
macro_rules! refuse {
    ($($arg:tt)*) => {
        return Err(Error::Merge(format!($($arg)*)))
    };
}

/// One chunk to move.
struct Move {
    chunk: u64,
    from: PathBuf,
}

/// What the merge needs to know of one directory.
struct Listing {
    dir: PathBuf,
    chunks: Vec<u64>,
    ids: Vec<String>,
    labels: Option<LabelIndex>,
}

impl Listing {
    fn of(dir: &Path, gulp: &GulpDirectory) -> Result<Listing> {
        Ok(Listing {
            dir: dir.to_owned(),
            chunks: gulp.chunks().iter().map(|c| c.chunk).collect(),
            ids: gulp.ids().map(str::to_owned).collect(),
            labels: LabelIndex::read(dir)?,
        })
    }
}

/// What a merge does: the chunks to move, and OUT's labels afterwards.
struct MergePlan {
    moves: Vec<Move>,
    labels: LabelIndex,
}

/// The merge of `sources` into `target`, or why it cannot be: a chunk or an
/// id in two directories, a label numbered differently, two labels with one
/// index.
fn plan(target: Listing, sources: &[Listing]) -> Result<MergePlan> {
    let mut chunk_owner: BTreeMap<u64, &Path> = target
        .chunks
        .iter()
        .map(|&c| (c, target.dir.as_path()))
        .collect();
    let mut id_owner: HashMap<&str, &Path> = target
        .ids
        .iter()
        .map(|id| (id.as_str(), target.dir.as_path()))
        .collect();
    let mut labels = target.labels.clone().unwrap_or_default();
    let mut moves = Vec::new();
    for source in sources {
        let dir = source.dir.as_path();
        for &chunk in &source.chunks {
            if let Some(other) = chunk_owner.insert(chunk, dir) {
                refuse!(
                    "chunk {chunk} is in both {} and {}: the shards were not made with the same --shard count and list, or were merged already",
                    other.display(),
                    dir.display()
                );
            }
            moves.push(Move {
                chunk,
                from: dir.to_owned(),
            });
        }
        for id in &source.ids {
            if let Some(other) = id_owner.insert(id, dir) {
                refuse!(
                    "id {id:?} is in both {} and {}",
                    other.display(),
                    dir.display()
                );
            }
        }
        if let Some(theirs) = &source.labels {
            labels.merge(theirs, &LabelIndex::path(dir)).map_err(|e| {
                Error::Merge(format!("the shards numbered their labels differently: {e}"))
            })?;
        }
    }
    let mut by_index: HashMap<i64, &str> = HashMap::new();
    for (label, index) in labels.iter() {
        if let Some(other) = by_index.insert(index, label) {
            refuse!("labels {other:?} and {label:?} both have index {index}");
        }
    }
    Ok(MergePlan { moves, labels })
}

/// What a merge did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MergeReport {
    /// Chunks moved into the output (those of a merge that was cut short
    /// included).
    pub moved: usize,
    /// Source directories.
    pub sources: usize,
    /// Labels in the output's `label2idx.json` (0 without one).
    pub labels: usize,
}

/// Moves the chunks of the shard directories `dirs` into `out` (`gulp
/// merge`): everything is checked before anything moves (a chunk or an id
/// in two directories, labels numbered differently, an unfinished write);
/// each chunk's data then meta is renamed (copied, synced and renamed on
/// another filesystem; copied on the server within one bucket), the label
/// indices united, and the sharded run's bookkeeping removed. A merge cut
/// short is finished by the next one.
pub fn merge(out: &Path, dirs: &[PathBuf]) -> Result<MergeReport> {
    merge_with_progress(out, dirs, &mut |_| {})
}

/// [`merge`], calling `moved(n)` as chunks are moved (local directories).
pub fn merge_with_progress(
    out: &Path,
    dirs: &[PathBuf],
    moved: &mut dyn FnMut(usize),
) -> Result<MergeReport> {
    if gulp_store::is_remote(out) || dirs.iter().any(|d| gulp_store::is_remote(d)) {
        return merge_remote(out, dirs);
    }
    fs::create_dir_all(out).map_err(|e| Error::io("creating", out, e))?;
    let lock = File::open(out).map_err(|e| Error::io("opening", out, e))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            refuse!(
                "{}: an ingest or merge is writing into this directory",
                out.display()
            )
        }
        Err(fs::TryLockError::Error(e)) => {
            return Err(Error::io("locking", out, e));
        }
    }
    let out_canon = fs::canonicalize(out).map_err(|e| Error::io("opening", out, e))?;
    for dir in dirs {
        if fs::canonicalize(dir).map_err(|e| Error::io("opening", dir, e))? == out_canon {
            refuse!("{} is the output directory", dir.display());
        }
    }
    // A merge cut between a chunk's two moves left its data in OUT and its
    // meta in the source: finish those first.
    let mut finished = 0;
    for dir in dirs {
        finished += finish_cut_moves(dir, out)?;
    }

    // Everything is checked before anything moves: each directory is read
    // once, then the plan is made from what was read.
    let target = {
        let gulp = open(out)?;
        refuse_unfinished(out, &gulp, false, &[])?;
        Listing::of(out, &gulp)?
    };
    let sources = source_listings(dirs)?;
    let items = target.ids.len() + sources.iter().map(|s| s.ids.len()).sum::<usize>();
    let MergePlan { moves, labels } = plan(target, &sources)?;

    for m in &moves {
        // Data first, then the meta: the meta is the commit, as in an
        // ingest, so OUT never shows a chunk without its data.
        for name in [data_file_name(m.chunk), meta_file_name(m.chunk)] {
            move_file(&m.from.join(&name), &out.join(&name), out)?;
        }
        moved(1);
    }
    if !labels.is_empty() {
        // In index order, as an ingest writes them.
        labels.sorted().write(out)?;
    }
    sync_dir(out)?;
    for dir in dirs {
        // A sharded task's records of its run, done with now.
        let listing = fs::read_dir(dir).map_err(|e| Error::io("listing", dir, e))?;
        for entry in listing {
            let name = entry.map_err(|e| Error::io("listing", dir, e))?.file_name();
            let name = name.to_string_lossy();
            if is_bookkeeping(&name) {
                let _ = fs::remove_file(dir.join(&*name));
            }
        }
        sync_dir(dir)?;
    }
    GulpDirectory::refresh_index(out, items)?;
    drop(lock);
    Ok(MergeReport {
        moved: moves.len() + finished,
        sources: dirs.len(),
        labels: labels.len(),
    })
}

/// Opens a directory for a merge: its chunks and ids only, never through
/// the node cache, its index file read if fresh but not written (the merge
/// changes them; it writes the output's after).
fn open(dir: &Path) -> Result<GulpDirectory> {
    GulpDirectory::options()
        .cache(None)
        .index(GulpDirectory::writer_index_policy()?)
        .open(dir)
        .map_err(Error::from)
}

/// `gulp merge` within one bucket (or one store in memory): each chunk is copied on the server (no
/// byte passes through this process), data then meta (the meta is the
/// commit, as in an ingest), then the source's objects are removed, meta
/// first. There is no lock in a bucket: run one merge at a time, after the
/// ingests. A merge killed between the copies leaves in OUT a data object
/// without its meta (which readers ignore, and the next merge overwrites);
/// one killed after the copies leaves the chunk in both places, with the
/// same meta: the next merge finishes it by removing the source's copy.
fn merge_remote(out: &Path, dirs: &[PathBuf]) -> Result<MergeReport> {
    let key = |p: &Path| p.to_string_lossy().trim_end_matches('/').to_owned();
    // A build without object stores says so, naming the location.
    for at in std::iter::once(out).chain(dirs.iter().map(PathBuf::as_path)) {
        gulp_store::store(at)?;
    }
    for dir in dirs {
        if !gulp_store::same_store(dir, out) {
            refuse!(
                "gulp merge moves chunks within one filesystem or within one bucket: {} and {} are not in one bucket",
                dir.display(),
                out.display()
            );
        }
        if key(dir) == key(out) {
            refuse!("{} is the output directory", dir.display());
        }
    }
    let object = |dir: &Path, name: &str| dir.join(name);
    // Chunks a killed merge copied but did not remove.
    let mut finished = 0;
    let target = open(out)?;
    for dir in dirs {
        let source = open(dir)?;
        for entry in source.chunks() {
            let Some(theirs) = target.chunks().iter().find(|c| c.chunk == entry.chunk) else {
                continue;
            };
            let same = theirs.data_size() == entry.data_size()
                && gulp_store::read_optional(&theirs.meta_path)?
                    == gulp_store::read_optional(&entry.meta_path)?;
            if same {
                gulp_store::remove_file(&entry.meta_path)?;
                gulp_store::remove_file(&entry.data_path)?;
                finished += 1;
            }
        }
    }
    let sources = source_listings(dirs)?;
    let incoming: Vec<u64> = sources.iter().flat_map(|s| s.chunks.clone()).collect();
    let target = {
        let gulp = open(out)?;
        refuse_unfinished(out, &gulp, false, &incoming)?;
        Listing::of(out, &gulp)?
    };
    let MergePlan { moves, labels } = plan(target, &sources)?;
    for m in &moves {
        let (data, meta) = (data_file_name(m.chunk), meta_file_name(m.chunk));
        gulp_store::copy_file(&object(&m.from, &data), &object(out, &data))?;
        gulp_store::copy_file(&object(&m.from, &meta), &object(out, &meta))?;
        gulp_store::remove_file(&object(&m.from, &meta))?;
        gulp_store::remove_file(&object(&m.from, &data))?;
    }
    if !labels.is_empty() {
        labels.sorted().write(out)?;
    }
    for dir in dirs {
        // A sharded run's records in the source, done with now.
        for listed in gulp_store::list_dir(dir)? {
            if is_bookkeeping(&listed.name) {
                gulp_store::remove_file(&object(dir, &listed.name))?;
            }
        }
    }
    Ok(MergeReport {
        moved: moves.len() + finished,
        sources: dirs.len(),
        labels: labels.len(),
    })
}

/// Each source directory opened, refused if an ingest into it is
/// unfinished, and listed.
fn source_listings(dirs: &[PathBuf]) -> Result<Vec<Listing>> {
    dirs.iter()
        .map(|dir| {
            let source = open(dir)?;
            refuse_unfinished(dir, &source, true, &[])?;
            Listing::of(dir, &source)
        })
        .collect()
}

/// Refuses a directory with an unfinished write (a running or killed
/// task): temporary files, orphan data or meta. A sharded task's plan and
/// done files are not unfinished writes, nor (in a merge's output) a data
/// file of a chunk in `incoming`, which the merge writes again.
fn refuse_unfinished(
    dir: &Path,
    gulp: &GulpDirectory,
    source: bool,
    incoming: &[u64],
) -> Result<()> {
    for warning in gulp.warnings() {
        let path = match warning {
            DirectoryWarning::TempFile(p)
            | DirectoryWarning::OrphanData(p)
            | DirectoryWarning::OrphanMeta(p) => p,
            // Not a write of the data: the directory reads without it.
            DirectoryWarning::IndexNotWritten(..) => continue,
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let (DirectoryWarning::OrphanData(_), Some(ChunkFile::Data(k))) =
            (warning, parse_chunk_file_name(&name))
            && incoming.contains(&k)
        {
            continue;
        }
        if source && is_bookkeeping(&name) {
            continue;
        }
        refuse!(
            "{} has an unfinished write ({}): let its ingest finish (re-run the task), or run `gulp recover {}`; nothing was moved",
            dir.display(),
            path.display(),
            dir.display()
        );
    }
    Ok(())
}

/// Finishes the moves a killed merge cut between data and meta: a source's
/// meta whose data is already in `out` (and not in the source).
fn finish_cut_moves(dir: &Path, out: &Path) -> Result<usize> {
    let mut done = 0;
    for entry in fs::read_dir(dir).map_err(|e| Error::io("listing", dir, e))? {
        let name = entry.map_err(|e| Error::io("listing", dir, e))?.file_name();
        let Some(ChunkFile::Meta(chunk)) = name.to_str().and_then(parse_chunk_file_name) else {
            continue;
        };
        let data = data_file_name(chunk);
        if !dir.join(&data).exists()
            && out.join(&data).exists()
            && !out.join(meta_file_name(chunk)).exists()
        {
            move_file(&dir.join(&name), &out.join(&name), out)?;
            done += 1;
        }
    }
    Ok(done)
}

/// Moves `from` to `to`: a rename, or on another filesystem a copy under a
/// temporary name in `out`, synced, renamed into place, then the source
/// removed.
fn move_file(from: &Path, to: &Path, out: &Path) -> Result<()> {
    if to.exists() {
        refuse!("{} exists already; nothing of it was moved", to.display());
    }
    match fs::rename(from, to) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {}
        Err(e) => {
            return Err(Error::Merge(format!(
                "moving {} to {}: {e}",
                from.display(),
                to.display()
            )));
        }
    }
    let name = to
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = out.join(format!("{TEMP_PREFIX}{name}"));
    fs::copy(from, &tmp).map_err(|e| Error::io("copying", from, e))?;
    File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io("syncing", &tmp, e))?;
    fs::rename(&tmp, to).map_err(|e| Error::io("renaming", &tmp, e))?;
    sync_dir(out)?;
    fs::remove_file(from).map_err(|e| Error::io("removing", from, e))?;
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io("syncing", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(dir: &str, chunks: &[u64], ids: &[&str], labels: Option<&str>) -> Listing {
        Listing {
            dir: PathBuf::from(dir),
            chunks: chunks.to_vec(),
            ids: ids.iter().map(|s| (*s).to_owned()).collect(),
            labels: labels
                .map(|text| LabelIndex::parse(Path::new("l"), text.as_bytes()).expect("labels")),
        }
    }

    #[test]
    fn a_plan_moves_every_source_chunk_and_unites_the_labels() {
        let out = listing("out", &[0], &["a"], Some(r#"{"x": 0}"#));
        let sources = [
            listing("s1", &[1, 3], &["b", "d"], Some(r#"{"x": 0, "y": 1}"#)),
            listing("s2", &[2], &["c"], None),
        ];
        let plan = plan(out, &sources).expect("plan");
        let moves: Vec<_> = plan
            .moves
            .iter()
            .map(|m| (m.chunk, m.from.to_string_lossy().into_owned()))
            .collect();
        assert_eq!(
            moves,
            [(1, "s1".into()), (3, "s1".into()), (2, "s2".into())]
        );
        assert_eq!(plan.labels.iter().collect::<Vec<_>>(), [("x", 0), ("y", 1)]);
    }

    #[test]
    fn a_plan_refuses_what_two_directories_share() {
        let out = || listing("out", &[0], &["a"], None);
        let err = |sources: &[Listing]| {
            plan(out(), sources)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(err(&[listing("s", &[0], &["b"], None)]).contains("chunk 0 is in both out and s"));
        assert!(err(&[listing("s", &[1], &["a"], None)]).contains("id \"a\" is in both out and s"));
        let labels = [
            listing("s1", &[1], &["b"], Some(r#"{"x": 0}"#)),
            listing("s2", &[2], &["c"], Some(r#"{"x": 1}"#)),
        ];
        assert!(err(&labels).contains("numbered their labels differently"));
        let shared = [
            listing("s1", &[1], &["b"], Some(r#"{"x": 0}"#)),
            listing("s2", &[2], &["c"], Some(r#"{"y": 0}"#)),
        ];
        assert!(err(&shared).contains("both have index 0"));
    }
}
