//! Copies a gulp directory between places: a local folder and an
//! object-store prefix, either way, or two of one kind.
//!
//! The order keeps the destination readable at every moment: each chunk's
//! data file before its meta file (a reader never finds a meta whose data
//! is missing), then the other files, then `label2idx.json` and the index
//! file last. Temporary and lock files are left out. A local file appears
//! by `rename` once complete and synced; an object appears whole when its
//! upload completes. A file already at the destination with the same size
//! and checksum is skipped, so a copy that was stopped is run again to
//! finish it; each file copied is verified against its source (MD5, as S3's
//! entity tags are).

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use gulp_format::{ChunkFile, INDEX_FILE, INDEX_LOCK_FILE, TEMP_PREFIX, parse_chunk_file_name};
use gulp_store::etag::{self, EtagHasher};
use gulp_store::{is_remote, list_dir};

use crate::error::{Error, ErrorKind, Result};
use crate::labels::LABEL_FILE;

/// The prefix of a file being copied into a local destination (a
/// temporary: readers and gulpio2's globs skip it).
const COPY_TEMP: &str = ".gulp-tmp.copy.";

/// What was done with one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyAction {
    /// Copied, and verified where the checksums allow.
    Copied,
    /// Already at the destination, same size and checksum.
    Skipped,
}

/// One file done, for progress.
#[derive(Debug, Clone)]
pub struct CopyStep<'a> {
    /// The file's name.
    pub name: &'a str,
    /// Its size in bytes.
    pub bytes: u64,
    /// What was done.
    pub action: CopyAction,
    /// How many files are done, this one included.
    pub done: usize,
    /// How many files the copy has.
    pub total: usize,
}

/// What a copy did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyReport {
    /// Files copied.
    pub copied: usize,
    /// Bytes copied.
    pub copied_bytes: u64,
    /// Files already there, skipped.
    pub skipped: usize,
    /// Files copied whose checksum could not be compared (an object whose
    /// entity tag is not an MD5 tag): their size was checked.
    pub unverified: usize,
    /// Files of the source left out (temporary and lock files).
    pub left_out: Vec<String>,
}

/// A file of the source, in copy order.
#[derive(Debug, Clone)]
struct Planned {
    name: String,
    path: PathBuf,
    size: u64,
    etag: Option<String>,
}

/// A file at the destination before the copy.
#[derive(Debug, Clone)]
struct Present {
    size: u64,
    etag: Option<String>,
}

/// Copies the gulp directory `src` to `dst` (local paths or `s3://`
/// prefixes), calling `progress` after each file.
pub fn copy_dir(
    src: &Path,
    dst: &Path,
    progress: &mut dyn FnMut(&CopyStep<'_>),
) -> Result<CopyReport> {
    if src == dst {
        return Err(invalid(dst, "the source and the destination are the same"));
    }
    let (plan, left_out) = plan(src)?;
    let present = present(dst)?;
    refuse_foreign_chunks(src, dst, &plan, &present)?;
    let mut report = CopyReport {
        left_out,
        ..CopyReport::default()
    };
    let total = plan.len();
    for (i, file) in plan.iter().enumerate() {
        let to = dst.join(&file.name);
        let action = if already_there(file, &to, present.get(&file.name))? {
            report.skipped += 1;
            CopyAction::Skipped
        } else {
            if !copy_file(file, &to)? {
                report.unverified += 1;
            }
            report.copied += 1;
            report.copied_bytes += file.size;
            CopyAction::Copied
        };
        progress(&CopyStep {
            name: &file.name,
            bytes: file.size,
            action,
            done: i + 1,
            total,
        });
    }
    Ok(report)
}

fn invalid(path: &Path, reason: impl Into<String>) -> Error {
    ErrorKind::Invalid {
        path: path.to_owned(),
        reason: reason.into(),
    }
    .into()
}

/// The source's files in copy order, and the names left out.
fn plan(src: &Path) -> Result<(Vec<Planned>, Vec<String>)> {
    let mut chunks = Vec::new();
    let mut others = Vec::new();
    let mut last = Vec::new();
    let mut left_out = Vec::new();
    for entry in list_dir(src)? {
        let name = entry.name;
        if name.starts_with(TEMP_PREFIX) || name == INDEX_LOCK_FILE || name.ends_with(".lock") {
            left_out.push(name);
            continue;
        }
        let (size, etag) = match entry.object {
            Some(object) => (object.size, object.etag),
            None => {
                let meta =
                    fs::metadata(&entry.path).map_err(|e| Error::io("reading", &entry.path, e))?;
                if !meta.is_file() {
                    left_out.push(name);
                    continue;
                }
                (meta.len(), None)
            }
        };
        let file = Planned {
            path: entry.path,
            name,
            size,
            etag,
        };
        if let Some(chunk) = parse_chunk_file_name(&file.name) {
            // Data (false) before meta (true) in each chunk.
            let key = match chunk {
                ChunkFile::Data(n) => (n, false),
                ChunkFile::Meta(n) => (n, true),
            };
            chunks.push((key, file));
        } else if file.name == LABEL_FILE || file.name == INDEX_FILE {
            last.push(file);
        } else {
            others.push(file);
        }
    }
    if chunks.is_empty() {
        return Err(invalid(
            src,
            "no chunk files (data_N.gulp, meta_N.gmeta): not a gulp directory",
        ));
    }
    chunks.sort_by_key(|(key, _)| *key);
    others.sort_by(|a, b| a.name.cmp(&b.name));
    // label2idx.json, then the index file: the index names the labels.
    last.sort_by_key(|f| f.name == INDEX_FILE);
    left_out.sort();
    let plan = chunks
        .into_iter()
        .map(|(_, f)| f)
        .chain(others)
        .chain(last)
        .collect();
    Ok((plan, left_out))
}

/// The destination's files by name; empty if it does not exist yet. A
/// local destination is created, and what an earlier copy left half-done
/// in it is removed.
fn present(dst: &Path) -> Result<std::collections::HashMap<String, Present>> {
    let mut out = std::collections::HashMap::new();
    if !is_remote(dst) {
        fs::create_dir_all(dst).map_err(|e| Error::io("creating", dst, e))?;
    }
    for entry in list_dir(dst)? {
        if entry.name.starts_with(COPY_TEMP) && entry.object.is_none() {
            fs::remove_file(&entry.path).map_err(|e| Error::io("removing", &entry.path, e))?;
            continue;
        }
        let (size, etag) = match entry.object {
            Some(object) => (object.size, object.etag),
            None => match fs::metadata(&entry.path) {
                Ok(meta) if meta.is_file() => (meta.len(), None),
                _ => continue,
            },
        };
        out.insert(entry.name, Present { size, etag });
    }
    Ok(out)
}

/// A destination that holds chunks the source does not is another
/// directory: copying into it would mix two datasets.
fn refuse_foreign_chunks(
    src: &Path,
    dst: &Path,
    plan: &[Planned],
    present: &std::collections::HashMap<String, Present>,
) -> Result<()> {
    let mut foreign: Vec<&String> = present
        .keys()
        .filter(|name| parse_chunk_file_name(name).is_some())
        .filter(|name| !plan.iter().any(|f| &f.name == *name))
        .collect();
    foreign.sort();
    match foreign.first() {
        None => Ok(()),
        Some(first) => Err(invalid(
            dst,
            format!(
                "holds {} chunk file(s) that {} has not ({first}, ...): not a copy of it; \
                 remove them or choose an empty destination",
                foreign.len(),
                src.display()
            ),
        )),
    }
}

/// Whether `to` already holds the file: same size and same checksum.
fn already_there(file: &Planned, to: &Path, present: Option<&Present>) -> Result<bool> {
    let Some(present) = present else {
        return Ok(false);
    };
    if present.size != file.size {
        return Ok(false);
    }
    Ok(match (&file.etag, &present.etag) {
        // Object to object: the store's tags.
        (Some(a), Some(b)) => etag::normalise(a) == etag::normalise(b),
        // A local file and an object: the file's tag as the object's.
        (None, Some(tag)) => etag::file_matches(&file.path, tag)? == Some(true),
        (Some(tag), None) => etag::file_matches(to, tag)? == Some(true),
        // Two local files.
        (None, None) => {
            let sizes = [etag::PART_SIZE];
            etag::file_tags(&file.path, &sizes)? == etag::file_tags(to, &sizes)?
        }
    })
}

/// Copies one file; `false` if it arrived but its checksum could not be
/// compared (the size was).
fn copy_file(file: &Planned, to: &Path) -> Result<bool> {
    match (is_remote(&file.path), is_remote(to)) {
        (false, false) => copy_local(file, to),
        (false, true) => upload(file, to),
        (true, false) => download(file, to),
        (true, true) => copy_remote(file, to),
    }
}

/// A local file into a local folder: a temporary file, synced, then
/// renamed; its tag computed as it is written and compared with the
/// copy's, read back.
fn copy_local(file: &Planned, to: &Path) -> Result<bool> {
    let temp = temp_path(to);
    let result = (|| {
        let mut input = File::open(&file.path).map_err(|e| Error::io("opening", &file.path, e))?;
        let mut output = File::create(&temp).map_err(|e| Error::io("creating", &temp, e))?;
        let mut hasher = EtagHasher::new(etag::PART_SIZE);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = input
                .read(&mut buf)
                .map_err(|e| Error::io("reading", &file.path, e))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            output
                .write_all(&buf[..n])
                .map_err(|e| Error::io("writing", &temp, e))?;
        }
        let want = hasher.finish();
        keep_mtime(&file.path, &output);
        output
            .sync_all()
            .map_err(|e| Error::io("syncing", &temp, e))?;
        let got = etag::file_tags(&temp, &[etag::PART_SIZE])?;
        if got.first() != Some(&want) {
            return Err(changed(&file.path, to));
        }
        publish(&temp, to)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result.map(|()| true)
}

/// `to`'s temporary name while it is written.
fn temp_path(to: &Path) -> PathBuf {
    let name = to.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    to.with_file_name(format!("{COPY_TEMP}{name}"))
}

/// The copy's modification time is the source's: an index file stamps
/// each meta file's time, so a local copy of a directory keeps its index
/// valid. Best effort (an object's time is not kept).
fn keep_mtime(from: &Path, output: &File) {
    if let Ok(time) = fs::metadata(from).and_then(|m| m.modified()) {
        let _ = output.set_modified(time);
    }
}

/// Renames `temp` to `to` and syncs the folder.
fn publish(temp: &Path, to: &Path) -> Result<()> {
    fs::rename(temp, to).map_err(|e| Error::io("renaming", temp, e))?;
    if let Some(dir) = to.parent() {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io("syncing", dir, e))?;
    }
    Ok(())
}

fn changed(from: &Path, to: &Path) -> Error {
    invalid(
        to,
        format!(
            "the copy of {} does not match it (the source changed during the copy, or the \
             bytes were damaged on the way); run the copy again",
            from.display()
        ),
    )
}

#[cfg(feature = "s3")]
fn upload(file: &Planned, to: &Path) -> Result<bool> {
    gulp_store::s3::upload_file(&file.path, to)?;
    let want = etag::file_tags(&file.path, &[etag::PART_SIZE])?;
    verify_object(&file.path, to, file.size, want.first().map(String::as_str))
}

/// Checks the object `to` against the size and tag expected of it; `false`
/// when the store's tag is not an MD5 tag (the size was checked).
fn verify_object(from: &Path, to: &Path, size: u64, want: Option<&str>) -> Result<bool> {
    let got = gulp_store::store(to)?.version(to)?;
    if got.size != size {
        return Err(changed(from, to));
    }
    match (want, got.etag.as_deref()) {
        (Some(want), Some(tag)) if !etag::part_sizes(tag, size).is_empty() => {
            if etag::normalise(tag) == etag::normalise(want) {
                Ok(true)
            } else {
                Err(changed(from, to))
            }
        }
        _ => Ok(false),
    }
}

fn download(file: &Planned, to: &Path) -> Result<bool> {
    let temp = temp_path(to);
    let result = (|| {
        let output = File::create(&temp).map_err(|e| Error::io("creating", &temp, e))?;
        output
            .set_len(file.size)
            .map_err(|e| Error::io("writing", &temp, e))?;
        let version = gulp_store::cache::ObjectId {
            size: file.size,
            etag: file.etag.clone(),
        };
        gulp_store::store(&file.path)?.download(&file.path, &version, &output, &[])?;
        output
            .sync_all()
            .map_err(|e| Error::io("syncing", &temp, e))?;
        let verified = match &file.etag {
            Some(tag) => match etag::file_matches(&temp, tag)? {
                Some(true) => true,
                Some(false) => return Err(changed(&file.path, to)),
                None => false,
            },
            None => false,
        };
        publish(&temp, to)?;
        Ok(verified)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// An object to another: on the server within a bucket, else through a
/// local temporary file.
fn copy_remote(file: &Planned, to: &Path) -> Result<bool> {
    if gulp_store::same_store(&file.path, to) {
        gulp_store::copy_file(&file.path, to)?;
        // A server-side copy may tag the copy anew (one part instead of
        // many): the size, and the tag where both are whole-object tags.
        return verify_object(&file.path, to, file.size, file.etag.as_deref());
    }
    let local = std::env::temp_dir().join(format!("{COPY_TEMP}{}", file.name));
    let staged = Planned {
        path: local.clone(),
        ..file.clone()
    };
    let result = download(file, &local).and_then(|_| upload(&staged, to));
    let _ = fs::remove_file(&local);
    result
}

#[cfg(not(feature = "s3"))]
fn upload(_: &Planned, to: &Path) -> Result<bool> {
    Err(gulp_store::Error::no_object_store(to).into())
}
