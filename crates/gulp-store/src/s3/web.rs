//! A gulp directory on a web server, found without a listing: static
//! servers, CDNs and the Hugging Face hub answer a folder's URL with 403 or
//! 404, never with its files. The chunks come from the index file's chunk
//! table (two range requests) when the directory has one, or else from
//! asking for `meta_N.gmeta` and `data_N.gulp` for N = 0, 1, ... (16 chunks
//! at a time) until neither is there. A file that is not there may be
//! answered 404 or, by servers in front of a private bucket (S3's website
//! endpoints, CloudFront), 403: both mean "not there" here, but for the
//! first chunk, whose 403 is reported (a server that refuses everything).

use futures::future::join_all;
use gulp_format::{INDEX_FILE, INDEX_MAGIC, LABEL_FILE, data_file_name, meta_file_name};
use object_store::path::Path as Key;

use super::{Listed, Object, count, received};
use crate::error::Result;

/// The index file's header, then a row of eight u64s a chunk: its number,
/// meta length, meta mtime, data length, ... (gulp-format's `index_file`).
const HEADER: u64 = 96;
const ROW: usize = 64;
/// More chunks than this in a header is a damaged index, not a directory.
const MOST_CHUNKS: u64 = 1 << 24;
/// Chunk numbers asked for at once when there is no index file.
const AT_ONCE: u64 = 16;

/// The files of the gulp directory at `dir`: the index and label files
/// when there, and every chunk's data and meta.
pub(super) fn list(dir: &Object) -> Result<Vec<Listed>> {
    let mut out = Vec::new();
    for name in [INDEX_FILE, LABEL_FILE] {
        if let Some(found) = head(dir, name)? {
            out.push(found);
        }
    }
    let chunks = match out.iter().any(|l| l.name == INDEX_FILE) {
        true => from_index(dir)?,
        false => None,
    };
    match chunks {
        Some(chunks) => out.extend(chunks),
        None => out.extend(probe(dir)?),
    }
    Ok(out)
}

fn child(dir: &Object, name: &str) -> Key {
    let base = dir.key.as_ref().trim_end_matches('/');
    if base.is_empty() {
        Key::from(name)
    } else {
        Key::from(format!("{base}/{name}"))
    }
}

/// `name` in `dir`, `None` if the server has no such file.
fn head(dir: &Object, name: &str) -> Result<Option<Listed>> {
    count(1);
    match dir.run(dir.bucket.store.head(&child(dir, name))) {
        Ok(meta) => Ok(Some(Listed {
            name: name.to_owned(),
            size: meta.size,
            etag: meta.e_tag,
        })),
        Err(e) if absent(&e) => Ok(None),
        Err(e) => Err(named(dir, name).fail(None, e)),
    }
}

/// The object `name` of `dir`, for its errors.
fn named(dir: &Object, name: &str) -> Object {
    Object {
        bucket: std::sync::Arc::clone(&dir.bucket),
        key: child(dir, name),
        url: format!("{}/{name}", dir.url.trim_end_matches('/')),
    }
}

/// Bytes `range` of the index file (fewer where the file is shorter).
fn index_bytes(dir: &Object, range: std::ops::Range<u64>) -> Result<bytes::Bytes> {
    count(1);
    let index = named(dir, INDEX_FILE);
    let bytes = dir
        .run(dir.bucket.store.get_range(&index.key, range.clone()))
        .map_err(|e| index.fail(Some(&range), e))?;
    received(bytes.len());
    Ok(bytes)
}

/// The chunks the index file's table names, with their files' sizes; `None`
/// when the file is not an index (then the chunks are probed).
fn from_index(dir: &Object) -> Result<Option<Vec<Listed>>> {
    let header = index_bytes(dir, 0..HEADER)?;
    if (header.len() as u64) < HEADER || header[..8] != INDEX_MAGIC {
        return Ok(None);
    }
    let word = |bytes: &[u8], at: usize| {
        bytes
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes)
    };
    let chunks = word(&header, 16);
    if chunks > MOST_CHUNKS {
        return Ok(None);
    }
    if chunks == 0 {
        return Ok(Some(Vec::new()));
    }
    let table = index_bytes(dir, HEADER..HEADER + chunks * ROW as u64)?;
    if table.len() as u64 != chunks * ROW as u64 {
        return Ok(None);
    }
    let mut out = Vec::new();
    for row in table.chunks_exact(ROW) {
        let number = word(row, 0);
        out.push(Listed {
            name: data_file_name(number),
            size: word(row, 24),
            etag: None,
        });
        out.push(Listed {
            name: meta_file_name(number),
            size: word(row, 8),
            etag: None,
        });
    }
    Ok(Some(out))
}

/// The chunks found by asking for each chunk's files in turn, until a
/// number has neither.
fn probe(dir: &Object) -> Result<Vec<Listed>> {
    let mut out = Vec::new();
    let mut first = 0;
    loop {
        let names: Vec<String> = (first..first + AT_ONCE)
            .flat_map(|n| [data_file_name(n), meta_file_name(n)])
            .collect();
        count(names.len() as u64);
        let heads = names.iter().map(|name| {
            let key = child(dir, name);
            let store = &dir.bucket.store;
            async move { store.head(&key).await }
        });
        let mut answers = super::runtime().block_on(join_all(heads)).into_iter();
        for pair in names.chunks(2) {
            let mut found = false;
            for name in pair {
                match answers.next() {
                    Some(Ok(meta)) => {
                        found = true;
                        out.push(Listed {
                            name: name.clone(),
                            size: meta.size,
                            etag: meta.e_tag,
                        });
                    }
                    // A 403 is "not there" once a chunk was found.
                    Some(Err(e)) if is_404(&e) || (absent(&e) && !out.is_empty()) => {}
                    Some(Err(e)) => return Err(named(dir, name).fail(None, e)),
                    None => {}
                }
            }
            if !found {
                return Ok(out);
            }
        }
        first += AT_ONCE;
    }
}

fn is_404(e: &object_store::Error) -> bool {
    matches!(e, object_store::Error::NotFound { .. })
}

/// Whether a server's answer means the file is not there: 404, or 403 as
/// servers in front of private buckets answer.
fn absent(e: &object_store::Error) -> bool {
    matches!(
        e,
        object_store::Error::NotFound { .. } | object_store::Error::PermissionDenied { .. }
    )
}
