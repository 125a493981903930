//! The error type of this crate: every error says where.

use std::path::{Path, PathBuf};

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error reading or writing a gulp directory.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(Box<ErrorKind>);

/// What went wrong, and where.
///
/// Not `non_exhaustive`: a front end maps every kind, and a new kind
/// does not compile until it is mapped.
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
    /// A meta file could not be parsed.
    #[error("meta file {path}: {source}")]
    Meta {
        /// The meta file.
        path: PathBuf,
        /// The parse error (with byte offset and id where known).
        source: gulp_format::Error,
    },
    /// A frame's record is inconsistent with the data file.
    #[error("{path}: id {id:?} {}: {reason} (record at byte {offset})", record_name(*frame))]
    Record {
        /// The data file.
        path: PathBuf,
        /// The item id.
        id: String,
        /// The frame index within the item ([`AUDIO_RECORD`] for its
        /// audio record).
        frame: usize,
        /// The record's `loc`.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The same id is in two chunks.
    #[error("duplicate id {id:?}: in {first} and in {second}")]
    DuplicateId {
        /// The id.
        id: String,
        /// Meta file of the first chunk that has it.
        first: PathBuf,
        /// Meta file of the second chunk that has it.
        second: PathBuf,
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
    /// No item has this id.
    #[error("no item with id {id:?} in {dir}")]
    UnknownId {
        /// The id.
        id: String,
        /// The directory or chunk searched.
        dir: PathBuf,
    },
    /// A frame selection does not fit the item.
    #[error("id {id:?}: {reason}")]
    Selection {
        /// The item id.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// A frame selection could not be parsed.
    #[error("invalid frame selection {text:?}: {reason}")]
    SelectionSyntax {
        /// The text given.
        text: String,
        /// What is wrong.
        reason: String,
    },
    /// A frame could not be decoded.
    #[error("cannot decode JPEG{at}: {reason}")]
    Decode {
        /// Where the frame is, if known (" in PATH: id ... frame ... (record
        /// at byte ...)"), else empty.
        at: String,
        /// The decoder's message.
        reason: String,
    },
    /// Pixels could not be encoded as a JPEG.
    #[error("cannot encode JPEG: {reason}")]
    Encode {
        /// The encoder's message.
        reason: String,
    },
    /// A chunk cannot be created because it exists.
    #[error("chunk {chunk} already exists in {dir}")]
    ChunkExists {
        /// The chunk number.
        chunk: u64,
        /// The directory.
        dir: PathBuf,
    },
    /// A directory's `label2idx.json` does not follow the rule of
    /// [`crate::LabelIndex`].
    #[error("{path}: {reason}")]
    Labels {
        /// The label file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// An object-store location (`s3://`) given to a build without object
    /// stores: every crate's one wording of it.
    #[error("{path}: this build of gulp has no object store (cargo feature `s3`)")]
    NoObjectStore {
        /// The location.
        path: PathBuf,
    },
    /// The writer was given something it cannot store.
    #[error("{path}: {reason}")]
    Invalid {
        /// The file concerned.
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

    pub(crate) fn io(op: &'static str, path: &Path, source: std::io::Error) -> Error {
        ErrorKind::Io {
            op,
            path: path.to_owned(),
            source,
        }
        .into()
    }

    pub(crate) fn record(
        path: &Path,
        id: &str,
        frame: usize,
        offset: u64,
        reason: impl Into<String>,
    ) -> Error {
        ErrorKind::Record {
            path: path.to_owned(),
            id: id.to_owned(),
            frame,
            offset,
            reason: reason.into(),
        }
        .into()
    }
}

/// The frame index of an item's audio record in [`ErrorKind::Record`] and
/// [`crate::ChunkReader::read`] (`docs/format.md` §8.2).
pub const AUDIO_RECORD: usize = usize::MAX;

/// "frame K", or "audio" for [`AUDIO_RECORD`].
fn record_name(frame: usize) -> String {
    if frame == AUDIO_RECORD {
        "audio".into()
    } else {
        format!("frame {frame}")
    }
}

/// A codec's error, not yet placed: the reader that decoded the frame adds
/// its file, id and byte offset to [`ErrorKind::Decode`].
impl From<gulp_codec::Error> for Error {
    fn from(e: gulp_codec::Error) -> Error {
        match e {
            gulp_codec::Error::Decode { reason } => ErrorKind::Decode {
                at: String::new(),
                reason,
            },
            gulp_codec::Error::Encode { reason } => ErrorKind::Encode { reason },
        }
        .into()
    }
}

/// The store's errors are kinds of this crate's, one for one.
impl From<gulp_store::Error> for Error {
    fn from(e: gulp_store::Error) -> Error {
        use gulp_store::ErrorKind as Store;
        match e.into_kind() {
            Store::Io { op, path, source } => ErrorKind::Io { op, path, source },
            Store::Remote { url, range, reason } => ErrorKind::Remote { url, range, reason },
            Store::RemoteNotFound { url, range, reason } => {
                ErrorKind::RemoteNotFound { url, range, reason }
            }
            Store::NoObjectStore { path } => ErrorKind::NoObjectStore { path },
            Store::Invalid { path, reason } => ErrorKind::Invalid { path, reason },
        }
        .into()
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error(Box::new(kind))
    }
}
