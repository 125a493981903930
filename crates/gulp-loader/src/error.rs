//! The loader's errors: each names the directory, the id and the frame
//! where it can.

use std::path::PathBuf;

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong.
///
/// Not `non_exhaustive`: a front end maps every variant, and a new
/// variant does not compile until it is mapped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or decoding failed; the message names the data file, the id,
    /// the frame and the record's byte offset.
    #[error(transparent)]
    Io(#[from] gulp_io::Error),
    /// An option given a value outside its range.
    #[error("invalid loader option: {option} must be {expected}, not {given}")]
    InvalidOption {
        /// The option, as Python and the command line name it.
        option: &'static str,
        /// The value given.
        given: String,
        /// What it must be ("at least 1", "a positive number", ...).
        expected: &'static str,
    },
    /// Options that contradict each other, or a value no range describes.
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
    /// An image cannot be resampled: its samples do not fill its shape, a
    /// size is zero, or the output does not fit in memory.
    #[error(
        "cannot resample a {}x{}x{} image to {height}x{width}: {reason}",
        from.0, from.1, from.2
    )]
    Resample {
        /// The input's `(height, width, channels)`.
        from: (usize, usize, usize),
        /// The output's height.
        height: usize,
        /// The output's width.
        width: usize,
        /// What is wrong.
        reason: String,
    },
    /// A GulpIO v1 window cannot be taken from an item.
    #[error("cannot take a window from frame {start} of an item of {n} frames: {reason}")]
    Window {
        /// The window's first frame.
        start: usize,
        /// Frames in the item.
        n: usize,
        /// What is wrong.
        reason: String,
    },
    /// A saved state does not belong to this loader.
    #[error("cannot resume from this state: {0}")]
    State(String),
}

impl Error {
    /// [`Error::InvalidOption`]: `option` was given `given`, and must be
    /// `expected`.
    pub(crate) fn option(
        option: &'static str,
        given: impl std::fmt::Display,
        expected: &'static str,
    ) -> Error {
        Error::InvalidOption {
            option,
            given: given.to_string(),
            expected,
        }
    }
}
