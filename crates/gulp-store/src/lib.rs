//! Where a gulp directory's files are, and how they are read: the local
//! filesystem, or an object store (`s3://bucket/prefix`, cargo feature
//! `s3`), through the node cache when a directory has one.
//!
//! `gulp_io` reads and writes the format on top of this crate; nothing
//! here knows what a chunk is. [`is_remote`] is the one test of whether a
//! path spells an object-store location.
#![deny(unsafe_code)]

pub mod cache;
mod error;
pub mod etag;
mod files;
mod location;
#[cfg(feature = "s3")]
pub mod s3;

pub use crate::cache::{
    CACHE_DIR_ENV, CACHE_FETCH_ENV, CACHE_LIMIT_ENV, CacheChoice, CacheFetch, CacheOptions,
    parse_byte_size,
};
pub use crate::error::{Error, ErrorKind, Result};
pub use crate::files::{
    DirEntry, StoredFile, file_len, list_dir, read, read_into, read_optional, write_object,
};
pub use crate::location::{HTTP_SCHEMES, S3_SCHEME, is_http, is_remote, s3_bucket};
