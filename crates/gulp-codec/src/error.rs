//! The codec's error: a frame that cannot be decoded, or pixels that cannot
//! be encoded, with the codec's own words. Where the frame is (its file, id
//! and byte offset) is added by the reader that found it (`gulp_io`).

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A JPEG that could not be decoded, or pixels that could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A frame could not be decoded (damaged, too large, unsupported, or a
    /// crop or buffer that does not fit it).
    #[error("cannot decode JPEG: {reason}")]
    Decode {
        /// The decoder's message.
        reason: String,
    },
    /// Pixels could not be encoded as a JPEG.
    #[error("cannot encode JPEG: {reason}")]
    Encode {
        /// The encoder's message.
        reason: String,
    },
}
