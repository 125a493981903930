//! The error type of this crate.

use std::path::PathBuf;

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What stopped a lint run. Findings are not errors: they are the report.
///
/// Not `non_exhaustive`: a front end maps every variant, and a new
/// variant does not compile until it is mapped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A directory could not be opened or read (the gulp-io error says the
    /// path, id and byte offset).
    #[error(transparent)]
    Read(#[from] gulp_io::Error),
    /// A directory could not be opened.
    #[error("cannot open gulp directory {path}: {source}")]
    Open {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: gulp_io::Error,
    },
    /// A report or id list could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The options do not make sense (`--ids-out` for two directories, ...).
    #[error("{0}")]
    Options(String),
    /// A broken invariant of this crate.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub(crate) fn read(e: gulp_io::Error) -> Error {
        Error::Read(e)
    }
}
