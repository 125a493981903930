//! Errors of an ingest run and of single items.

use std::path::PathBuf;

/// What went wrong with one input item. The run skips the item and reports
/// it, or stops in strict mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemError {
    /// The input file the problem is in, when there is one.
    pub path: Option<PathBuf>,
    /// What is wrong, in words (with a byte offset or frame index where one
    /// applies).
    pub reason: String,
    /// The problem is not the item's but the machine's (e.g. ffmpeg is not
    /// installed): the run stops whatever the mode.
    pub fatal: bool,
    /// Where the item is in the input, when the adapter says (a manifest's
    /// `row 12`); written first.
    pub origin: Option<String>,
}

impl ItemError {
    /// A problem with the item.
    pub fn new(reason: impl Into<String>) -> ItemError {
        ItemError {
            path: None,
            reason: reason.into(),
            fatal: false,
            origin: None,
        }
    }

    /// A problem with the item's file `path`.
    pub fn at(path: impl Into<PathBuf>, reason: impl Into<String>) -> ItemError {
        ItemError {
            path: Some(path.into()),
            reason: reason.into(),
            fatal: false,
            origin: None,
        }
    }

    /// Marks the problem as one that stops the whole run.
    #[must_use]
    pub fn fatal(mut self) -> ItemError {
        self.fatal = true;
        self
    }
}

impl std::fmt::Display for ItemError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(origin) = &self.origin {
            write!(f, "{origin}: ")?;
        }
        match &self.path {
            Some(p) => write!(f, "{}: {}", p.display(), self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

impl std::error::Error for ItemError {}

/// An item that was not ingested, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedItem {
    /// Position of the item in the adapter's (unshuffled) order.
    pub index: usize,
    /// The item's id.
    pub id: String,
    /// Why it was skipped.
    pub error: ItemError,
}

impl std::fmt::Display for SkippedItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "id {:?}: {}", self.id, self.error)
    }
}

/// The error type of this crate.
///
/// Not `non_exhaustive`: a front end maps every variant, and a new
/// variant does not compile until it is mapped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing the gulp directory failed.
    #[error(transparent)]
    Gulp(#[from] gulp_io::Error),
    /// A file-system operation on an input or output path failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What was being done ("reading", "listing", …).
        op: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An input list (CSV, JSON, text) or layout is malformed.
    #[error("{}: {reason}", path.display())]
    Input {
        /// The input file or folder.
        path: PathBuf,
        /// What is wrong, with the line or byte offset.
        reason: String,
    },
    /// An item failed in strict mode, or with a problem that stops any run.
    #[error("item {id:?} (input #{index}): {error}")]
    Item {
        /// Position of the item in the adapter's order.
        index: usize,
        /// The item's id.
        id: String,
        /// What went wrong.
        error: ItemError,
    },
    /// A worker thread panicked; the message is the panic's.
    #[error("worker {worker} panicked: {message}")]
    WorkerPanic {
        /// The worker's name.
        worker: String,
        /// The panic message.
        message: String,
    },
    /// Another ingest or [`Writer`](crate::Writer) is writing into the
    /// same directory.
    #[error("{}: another ingest or writer is writing into this directory", path.display())]
    Locked {
        /// The output directory.
        path: PathBuf,
    },
    /// An item a [`Writer`](crate::Writer) was given that it cannot store
    /// (no frames, a frame that is not a JPEG or not 8-bit gray or RGB
    /// pixels, an `"idx"` that is not its label's number); nothing of it
    /// was written.
    #[error(
        "{}: id {id:?}{}: {reason}",
        dir.display(),
        frame.map(|k| format!(" frame {k}")).unwrap_or_default()
    )]
    Rejected {
        /// The directory written.
        dir: PathBuf,
        /// The item's id.
        id: String,
        /// The frame at fault, when one is.
        frame: Option<usize>,
        /// What is wrong.
        reason: String,
    },
    /// An id a [`Writer`](crate::Writer) was given twice, or that is
    /// already in the directory.
    #[error("{}: id {id:?} {reason}", dir.display())]
    IdExists {
        /// The directory written.
        dir: PathBuf,
        /// The id.
        id: String,
        /// Where it is already ("is already in the directory", "was given
        /// twice").
        reason: String,
    },
    /// A [`Writer`](crate::Writer) used after an error stopped it.
    #[error(
        "{}: the writer stopped after an error; committed chunks are kept, open a new writer to go on",
        path.display()
    )]
    WriterStopped {
        /// The directory written.
        path: PathBuf,
    },
    /// An option given a value outside its range.
    #[error("invalid options: {option} must be {expected}, not {given}")]
    InvalidOption {
        /// The option ("items per chunk", "quality", ...).
        option: &'static str,
        /// The value given.
        given: String,
        /// What it must be ("at least 1", "1 to 100", ...).
        expected: &'static str,
    },
    /// Options that cannot work together.
    #[error("invalid options: {0}")]
    Options(String),
    /// A merge refused before moving anything (a chunk or an id in two
    /// directories, labels numbered differently, an unfinished write), or a
    /// move that failed: the message says which.
    #[error("{0}")]
    Merge(String),
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn input(path: impl Into<PathBuf>, reason: impl Into<String>) -> Error {
        Error::Input {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A store's error (an object or a file of the output or of a shard), as
/// `gulp_io` reports it.
impl From<gulp_store::Error> for Error {
    fn from(e: gulp_store::Error) -> Error {
        Error::Gulp(e.into())
    }
}
