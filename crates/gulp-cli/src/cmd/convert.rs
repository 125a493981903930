//! `gulp convert`: rewrite each chunk's meta in the other format.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use gulp_format::{ChunkMeta, MetaFormat, TEMP_PREFIX, read_meta};
use gulp_io::ChunkReader;

use crate::Outcome;
use crate::cli::ConvertArgs;

pub(super) fn run(args: &ConvertArgs) -> Result<Outcome> {
    let target = MetaFormat::from(args.to);
    // The index file is read if fresh (the chunks listed without a table
    // of every id) and written once, after the metas it describes are
    // rewritten, not on this open (it would be stale at once).
    let gulp = super::directory_options()
        .index(gulp_io::GulpDirectory::writer_index_policy()?)
        .open(&args.dir)
        .with_context(|| format!("cannot open gulp directory {}", args.dir.display()))?;
    let (mut converted, mut kept) = (0usize, 0usize);
    let bar = super::progress("chunks converted");
    for (index, entry) in gulp.chunks().iter().enumerate() {
        bar.inc(1);
        let meta_path = &entry.meta_path;
        let bytes = gulp_store::read_optional(meta_path)?
            .with_context(|| format!("{} vanished", meta_path.display()))?;
        if MetaFormat::detect(&bytes) == Some(target) {
            kept += 1;
            continue;
        }
        // A local chunk's reader is dropped after it, so that memory holds
        // one chunk's meta at a time, not every one (18.6 GB at 10^7 items).
        let local;
        let reader = if gulp_store::is_remote(meta_path) {
            gulp.reader(index)?
        } else {
            local = ChunkReader::open(&args.dir, entry.chunk, gulp.read_mode())?;
            &local
        };
        let mut meta = reader.meta().clone();
        match target {
            MetaFormat::Msgpack => add_checksums(&mut meta, reader)?,
            MetaFormat::Json => {
                let dropped = meta
                    .iter()
                    .filter(|(_, i)| !i.metalayers.is_empty())
                    .count();
                if dropped > 0 {
                    eprintln!(
                        "gulp: warning: {}: JSON has no place for metalayers; those of {dropped} items are dropped",
                        meta_path.display()
                    );
                }
            }
        }
        let new = target
            .serializer()
            .to_vec(&meta)
            .with_context(|| format!("converting {}", meta_path.display()))?;
        // Read back what is about to replace the meta: it must hold the same
        // items, frames and meta_data.
        let back = read_meta(&new)
            .with_context(|| format!("re-reading the converted {}", meta_path.display()))?;
        if !same_content(&back, &meta) {
            bail!(
                "{}: the converted meta does not read back the same; left unchanged",
                meta_path.display()
            );
        }
        if gulp_store::is_remote(meta_path) {
            // A PUT replaces an object whole: readers see the old meta or
            // the new one.
            gulp_store::write_object(meta_path, new)?;
        } else {
            replace_file(meta_path, &new)?;
        }
        converted += 1;
    }
    bar.finish_and_clear();
    let mut out = super::stdout();
    writeln!(
        out,
        "{}: {converted} chunks converted to {target}, {kept} already {target}",
        args.dir.display()
    )?;
    if converted > 0 && gulp_io::GulpDirectory::refresh_index(&args.dir, gulp.len())? {
        writeln!(
            out,
            "{}: index file {} written",
            args.dir.display(),
            gulp_format::INDEX_FILE
        )?;
    }
    out.flush()?;
    Ok(Outcome::Success)
}

/// Sets the CRC-32 of every frame from the data file.
fn add_checksums(meta: &mut ChunkMeta, reader: &ChunkReader) -> Result<()> {
    let mut checksums = Vec::with_capacity(meta.len());
    for (id, item) in meta.iter() {
        let crcs = item
            .frame_info
            .iter()
            .enumerate()
            .map(|(k, fi)| reader.read(id, k, fi).map(|jpeg| crc32fast::hash(&jpeg)))
            .collect::<gulp_io::Result<Vec<u32>>>()
            .context("cannot compute frame checksums (see `gulp check`)")?;
        checksums.push((id.to_owned(), crcs));
    }
    for (id, crcs) in checksums {
        if let Some(item) = meta.get_mut(&id) {
            item.frame_checksums = crcs;
        }
    }
    Ok(())
}

/// Whether two metas have the same ids, `frame_info` and `meta_data` in the
/// same order (checksums and metalayers aside).
fn same_content(a: &ChunkMeta, b: &ChunkMeta) -> bool {
    a.len() == b.len()
        && a.iter().zip(b.iter()).all(|((id_a, x), (id_b, y))| {
            id_a == id_b && x.frame_info == y.frame_info && x.meta_data == y.meta_data
        })
}

/// Replaces `path` with `bytes` atomically: a temporary file beside it (named
/// with [`TEMP_PREFIX`], which no reader takes for a chunk file), synced,
/// renamed over `path`, and the directory synced.
fn replace_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("{}: not a file name", path.display()))?;
    let mut tmp_name = std::ffi::OsString::from(TEMP_PREFIX);
    tmp_name.push(name);
    let mut tmp = TempFile {
        path: dir.join(tmp_name),
        renamed: false,
    };
    let mut file =
        File::create(&tmp.path).with_context(|| format!("creating {}", tmp.path.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", tmp.path.display()))?;
    drop(file);
    std::fs::rename(&tmp.path, path)
        .with_context(|| format!("renaming {} to {}", tmp.path.display(), path.display()))?;
    tmp.renamed = true;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("syncing directory {}", dir.display()))
}

/// A temporary file, removed unless it was renamed into place.
struct TempFile {
    path: PathBuf,
    renamed: bool,
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
