//! `gulp merge OUT DIR...`: move the chunks of shard directories into one.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use gulp_format::{ChunkFile, TEMP_PREFIX, data_file_name, meta_file_name, parse_chunk_file_name};
use gulp_ingest::PLAN_FILE;
use gulp_io::{DirectoryWarning, GulpDirectory};
use gulp_io::{LABEL_FILE, LabelIndex};

use crate::Outcome;
use crate::cli::MergeArgs;

/// One chunk to move.
struct Move {
    chunk: u64,
    from: PathBuf,
}

pub fn run(args: &MergeArgs) -> Result<Outcome> {
    let out = &args.out;
    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let lock = File::open(out).with_context(|| format!("opening {}", out.display()))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            bail!(
                "{}: an ingest or merge is writing into this directory",
                out.display()
            )
        }
        Err(fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("locking {}", out.display()));
        }
    }
    let out_canon = fs::canonicalize(out)?;
    for dir in &args.dirs {
        if fs::canonicalize(dir).with_context(|| format!("opening {}", dir.display()))? == out_canon
        {
            bail!("{} is the output directory", dir.display());
        }
    }
    // A merge cut between a chunk's two moves left its data in OUT and its
    // meta in the source: finish those first.
    let mut finished = 0;
    for dir in &args.dirs {
        finished += finish_cut_moves(dir, out)?;
    }

    // Everything is checked before anything moves.
    let target = GulpDirectory::open(out).with_context(|| format!("opening {}", out.display()))?;
    refuse_unfinished(out, &target, false)?;
    let mut chunk_owner: BTreeMap<u64, PathBuf> = target
        .chunks()
        .iter()
        .map(|c| (c.chunk, out.clone()))
        .collect();
    let mut id_owner: HashMap<String, PathBuf> = target
        .ids()
        .map(|id| (id.to_owned(), out.clone()))
        .collect();
    let mut labels = LabelIndex::read(out)?.unwrap_or_default();
    let mut moves = Vec::new();
    for dir in &args.dirs {
        let source =
            GulpDirectory::open(dir).with_context(|| format!("opening {}", dir.display()))?;
        refuse_unfinished(dir, &source, true)?;
        for entry in source.chunks() {
            if let Some(other) = chunk_owner.insert(entry.chunk, dir.clone()) {
                bail!(
                    "chunk {} is in both {} and {}: the shards were not made with the same --shard count and list, or were merged already",
                    entry.chunk,
                    other.display(),
                    dir.display()
                );
            }
            moves.push(Move {
                chunk: entry.chunk,
                from: dir.clone(),
            });
        }
        for id in source.ids() {
            if let Some(other) = id_owner.insert(id.to_owned(), dir.clone()) {
                bail!(
                    "id {id:?} is in both {} and {}",
                    other.display(),
                    dir.display()
                );
            }
        }
        if let Some(theirs) = LabelIndex::read(dir)? {
            labels
                .merge(&theirs, &LabelIndex::path(dir))
                .context("the shards numbered their labels differently")?;
        }
    }
    let mut by_index: HashMap<i64, &str> = HashMap::new();
    for (label, index) in labels.iter() {
        if let Some(other) = by_index.insert(index, label) {
            bail!("labels {other:?} and {label:?} both have index {index}");
        }
    }
    drop(target);

    for m in &moves {
        // Data first, then the meta: the meta is the commit, as in an
        // ingest, so OUT never shows a chunk without its data.
        for name in [data_file_name(m.chunk), meta_file_name(m.chunk)] {
            move_file(&m.from.join(&name), &out.join(&name), out)?;
        }
    }
    if !labels.is_empty() {
        // In index order, as an ingest writes them.
        labels.sorted().write(out)?;
    }
    sync_dir(out)?;
    for dir in &args.dirs {
        // A sharded task's records of its run, done with now.
        for entry in fs::read_dir(dir)? {
            let name = entry?.file_name();
            let name = name.to_string_lossy();
            if name == PLAN_FILE
                || (name.starts_with(&format!("{TEMP_PREFIX}shard-")) && name.ends_with(".done"))
            {
                let _ = fs::remove_file(dir.join(&*name));
            }
        }
        sync_dir(dir)?;
    }
    let mut stdout = super::stdout();
    writeln!(
        stdout,
        "moved {} chunks from {} directories into {}{}",
        moves.len() + finished,
        args.dirs.len(),
        out.display(),
        if labels.is_empty() {
            String::new()
        } else {
            format!("; {} labels in {LABEL_FILE}", labels.len())
        }
    )?;
    stdout.flush()?;
    Ok(Outcome::Success)
}

/// Refuses a directory with an unfinished write (a running or killed
/// task): temporary files, orphan data or meta. A sharded task's plan and
/// done files are not unfinished writes.
fn refuse_unfinished(dir: &Path, gulp: &GulpDirectory, source: bool) -> Result<()> {
    for warning in gulp.warnings() {
        let path = match warning {
            DirectoryWarning::TempFile(p)
            | DirectoryWarning::OrphanData(p)
            | DirectoryWarning::OrphanMeta(p) => p,
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bookkeeping = name == PLAN_FILE
            || (name.starts_with(&format!("{TEMP_PREFIX}shard-")) && name.ends_with(".done"));
        if source && bookkeeping {
            continue;
        }
        bail!(
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
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let name = entry?.file_name();
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
        bail!("{} exists already; nothing of it was moved", to.display());
    }
    match fs::rename(from, to) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {}
        Err(e) => {
            return Err(e)
                .with_context(|| format!("moving {} to {}", from.display(), to.display()));
        }
    }
    let name = to
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = out.join(format!("{TEMP_PREFIX}{name}"));
    fs::copy(from, &tmp)
        .with_context(|| format!("copying {} to {}", from.display(), tmp.display()))?;
    File::open(&tmp)?.sync_all()?;
    fs::rename(&tmp, to).with_context(|| format!("renaming {}", tmp.display()))?;
    sync_dir(out)?;
    fs::remove_file(from).with_context(|| format!("removing {}", from.display()))?;
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("syncing {}", dir.display()))
}
