//! Where a gulp directory's files are, and how they are read: the local
//! filesystem, or an object store (cargo feature `s3`: `s3://bucket/prefix`,
//! `https://host/path` read only, `memory://name/prefix` in this process's
//! memory), through the node cache when a directory has one.
//!
//! `gulp_io` reads and writes the format on top of this crate; nothing
//! here knows what a chunk is. [`Location::parse`] is the one reading of a
//! location ([`is_remote`] and [`same_store`] ask it); [`store`] gives the
//! [`Store`] that keeps it.
// On docs.rs, items behind a cargo feature say which (`--cfg docsrs`).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_code)]

pub mod cache;
mod cached;
mod error;
pub mod etag;
mod files;
mod location;
#[cfg(feature = "s3")]
pub mod s3;
mod store;

pub use crate::cache::{
    CACHE_DIR_ENV, CACHE_FETCH_ENV, CACHE_LIMIT_ENV, CacheChoice, CacheFetch, CacheOptions,
    parse_byte_size,
};
pub use crate::cached::CachedStore;
pub use crate::error::{Error, ErrorKind, Result};
pub use crate::files::{
    StoredFile, copy_file, file_len, list_dir, read, read_into, read_optional, remove_file, store,
    write_object,
};
pub use crate::location::{
    HTTP_SCHEMES, Location, MEMORY_SCHEME, S3_SCHEME, is_http, is_remote, same_store,
};
pub use crate::store::{DirEntry, LocalFiles, Store};

/// Requests sent to object stores by this process (GET, HEAD, LIST, PUT);
/// 0 in a build without object stores.
pub fn requests() -> u64 {
    #[cfg(feature = "s3")]
    return s3::requests();
    #[cfg(not(feature = "s3"))]
    0
}

/// Bytes of object data received from object stores by this process; 0 in
/// a build without object stores.
pub fn bytes_received() -> u64 {
    #[cfg(feature = "s3")]
    return s3::bytes_received();
    #[cfg(not(feature = "s3"))]
    0
}
