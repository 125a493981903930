//! The loader's errors: each names the directory, the id and the frame
//! where it can.

use std::path::PathBuf;

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or decoding failed; the message names the data file, the id,
    /// the frame and the record's byte offset.
    #[error(transparent)]
    Io(#[from] gulp_io::Error),
    /// An option is out of range or options contradict each other.
    #[error("invalid loader option: {0}")]
    Config(String),
    /// A value of an item's meta that the loader needs (its label or
    /// target, its segments, its weight, a filter's verdict) is missing or
    /// unusable.
    #[error("{path}: id {id:?}: {key}: {reason}")]
    Meta {
        /// The directory.
        path: PathBuf,
        /// The item.
        id: String,
        /// The key (e.g. `label`, `segments[2].start`, `where`).
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// A clip cannot be made from an item (its frames are smaller than the
    /// crop, its frames differ in size from the batch's, ...).
    #[error("id {id:?}: {reason}")]
    Clip {
        /// The item.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// A saved state does not belong to this loader.
    #[error("cannot resume from this state: {0}")]
    State(String),
}
