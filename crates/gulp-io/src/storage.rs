//! Where a directory's files are: the local filesystem, or an object store
//! (`s3://...`, cargo feature `s3`). Paths spell either.

use std::fs;
use std::path::{Path, PathBuf};

#[cfg(not(feature = "s3"))]
use crate::error::ErrorKind;
use crate::error::{Error, Result};

/// Whether `path` spells an object-store URL (`s3://bucket/prefix`).
pub fn is_remote(path: &Path) -> bool {
    path.to_str().is_some_and(|p| p.starts_with("s3://"))
}

#[cfg(not(feature = "s3"))]
fn no_s3(path: &Path) -> Error {
    ErrorKind::Invalid {
        path: path.to_owned(),
        reason: "this build of gulp reads no object stores (cargo feature `s3`)".into(),
    }
    .into()
}

/// The entries of directory `dir`: (file name, path).
pub(crate) fn list_dir(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    if is_remote(dir) {
        #[cfg(feature = "s3")]
        return crate::remote::list_dir(dir);
        #[cfg(not(feature = "s3"))]
        return Err(no_s3(dir));
    }
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io("listing", dir, e))? {
        let entry = entry.map_err(|e| Error::io("listing", dir, e))?;
        if let Some(name) = entry.file_name().to_str() {
            out.push((name.to_owned(), entry.path()));
        }
    }
    Ok(out)
}

/// Reads a whole file into `buf` (cleared first).
pub(crate) fn read_into(path: &Path, buf: &mut Vec<u8>) -> Result<()> {
    buf.clear();
    if is_remote(path) {
        #[cfg(feature = "s3")]
        {
            *buf = crate::remote::read(path)?;
            return Ok(());
        }
        #[cfg(not(feature = "s3"))]
        return Err(no_s3(path));
    }
    use std::io::Read;
    fs::File::open(path)
        .and_then(|mut file| file.read_to_end(buf))
        .map(|_| ())
        .map_err(|e| Error::io("reading", path, e))
}

/// Reads a whole file.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    read_into(path, &mut buf)?;
    Ok(buf)
}

/// Reads a whole file of a directory, local or remote; `None` if it does
/// not exist (e.g. a directory's `label2idx.json`).
pub fn read_optional(path: &Path) -> Result<Option<Vec<u8>>> {
    if is_remote(path) {
        #[cfg(feature = "s3")]
        return crate::remote::read_optional(path);
        #[cfg(not(feature = "s3"))]
        return Err(no_s3(path));
    }
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("reading", path, e)),
    }
}

/// The size of a file, local or remote.
pub(crate) fn file_len(path: &Path) -> Result<u64> {
    if is_remote(path) {
        #[cfg(feature = "s3")]
        return crate::remote::Object::at(path)?.size();
        #[cfg(not(feature = "s3"))]
        return Err(no_s3(path));
    }
    fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| Error::io("reading", path, e))
}
