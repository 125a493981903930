//! The store's error: every error names the file or the object's URL.

use std::path::{Path, PathBuf};

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error reading, writing or listing a file or an object.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(Box<ErrorKind>);

/// What went wrong, and where. `gulp_io::ErrorKind` has a kind of the same
/// name for each, which these convert to.
#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    /// A filesystem operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done ("reading", "creating", ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An object store refused or failed a request (after its retries).
    #[error("{url}{}: {reason}", range.map_or(String::new(), |(s, e)| format!(" (bytes {s}..{e})")))]
    Remote {
        /// The object's URL.
        url: String,
        /// The byte range asked for, if any.
        range: Option<(u64, u64)>,
        /// What went wrong (the store's answer or the network's).
        reason: String,
    },
    /// An object store has no such object (or no such bucket).
    #[error("{url}{}: {reason}", range.map_or(String::new(), |(s, e)| format!(" (bytes {s}..{e})")))]
    RemoteNotFound {
        /// The object's URL.
        url: String,
        /// The byte range asked for, if any.
        range: Option<(u64, u64)>,
        /// Which object or bucket is missing, in words.
        reason: String,
    },
    /// An object-store location (`s3://`) given to a build without object
    /// stores: every crate's one wording of it.
    #[error("{path}: this build of gulp has no object store (cargo feature `s3`)")]
    NoObjectStore {
        /// The location.
        path: PathBuf,
    },
    /// A setting or a fetched file is not what it must be (a cache option,
    /// a range the store did not return).
    #[error("{path}: {reason}")]
    Invalid {
        /// The file or setting concerned.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

impl Error {
    /// The kind of error.
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }

    /// The kind of error, owned.
    pub fn into_kind(self) -> ErrorKind {
        *self.0
    }

    /// Whether the file or object is not there (a missing local file, an
    /// object store's "no such object").
    pub fn is_not_found(&self) -> bool {
        match self.kind() {
            ErrorKind::RemoteNotFound { .. } => true,
            ErrorKind::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
            _ => false,
        }
    }

    /// [`ErrorKind::NoObjectStore`] for `path`.
    pub fn no_object_store(path: &Path) -> Error {
        ErrorKind::NoObjectStore {
            path: path.to_owned(),
        }
        .into()
    }

    /// [`ErrorKind::Io`]: `op` ("reading", "creating", ...) on `path` failed.
    pub fn io(op: &'static str, path: &Path, source: std::io::Error) -> Error {
        ErrorKind::Io {
            op,
            path: path.to_owned(),
            source,
        }
        .into()
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error(Box::new(kind))
    }
}
