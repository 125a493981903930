//! The error type of this crate.

use std::fmt;

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error while parsing or writing chunk meta.
///
/// The kind is boxed so that `Result<T>` stays one pointer wide.
#[derive(Debug)]
pub struct Error(Box<ErrorKind>);

/// What went wrong. Offsets are byte offsets into the meta file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The meta file is empty (gulpio2 leaves such files after a crash).
    #[error("meta file is empty")]
    Empty,
    /// The first bytes are neither JSON nor gulp msgpack meta.
    #[error("unrecognised meta format: first bytes are {prefix:02x?}")]
    UnknownFormat {
        /// Up to the first 12 bytes of the file.
        prefix: Vec<u8>,
    },
    /// The JSON text is malformed.
    #[error("invalid JSON meta at byte {offset}: {reason}")]
    Json {
        /// Byte offset of the problem.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The msgpack meta is malformed.
    #[error("invalid msgpack meta at byte {offset}: {reason}")]
    Msgpack {
        /// Byte offset of the problem.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The JSON or msgpack is well formed but an item breaks the meta model.
    #[error("invalid meta for id {id:?} at byte {offset}: {reason}")]
    Item {
        /// The item id.
        id: String,
        /// Byte offset of the problem.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The msgpack meta was written by a newer (or unknown) format version.
    #[error("unsupported msgpack meta version {version} (this build reads versions 1..={max})")]
    UnsupportedVersion {
        /// The version code found in the header.
        version: u64,
        /// The newest version this build knows.
        max: u8,
    },
    /// The fingerprint in the trailer does not match the content.
    #[error(
        "msgpack meta fingerprint mismatch: trailer says {stored:#010x}, content of bytes 0..{len} hashes to {computed:#010x}"
    )]
    Fingerprint {
        /// Fingerprint stored in the trailer.
        stored: u32,
        /// Fingerprint computed over the content.
        computed: u32,
        /// Number of bytes covered.
        len: u64,
    },
    /// The meta cannot be written in the requested format.
    #[error("cannot serialise meta: {0}")]
    Unrepresentable(String),
    /// Reading or writing the underlying stream failed.
    #[error("i/o error on meta stream")]
    Io(#[source] std::io::Error),
}

impl Error {
    /// The kind of error.
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }

    /// Consumes the error, returning its kind.
    pub fn into_kind(self) -> ErrorKind {
        *self.0
    }

    /// The byte offset the error points at, where it has one.
    pub fn offset(&self) -> Option<u64> {
        match &*self.0 {
            ErrorKind::Json { offset, .. }
            | ErrorKind::Msgpack { offset, .. }
            | ErrorKind::Item { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    /// The item id the error is about, where it has one.
    pub fn id(&self) -> Option<&str> {
        match &*self.0 {
            ErrorKind::Item { id, .. } => Some(id),
            _ => None,
        }
    }

    pub(crate) fn json(offset: usize, reason: impl Into<String>) -> Self {
        ErrorKind::Json {
            offset: offset as u64,
            reason: reason.into(),
        }
        .into()
    }

    pub(crate) fn msgpack(offset: usize, reason: impl Into<String>) -> Self {
        ErrorKind::Msgpack {
            offset: offset as u64,
            reason: reason.into(),
        }
        .into()
    }

    pub(crate) fn item(id: &str, offset: usize, reason: impl Into<String>) -> Self {
        ErrorKind::Item {
            id: id.to_owned(),
            offset: offset as u64,
            reason: reason.into(),
        }
        .into()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&*self.0)
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error(Box::new(kind))
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        ErrorKind::Io(err).into()
    }
}
