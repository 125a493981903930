//! What a location spells: a local path, or an object-store URL.

use std::path::Path;

/// The URL scheme of S3 and compatible stores.
pub const S3_SCHEME: &str = "s3://";

/// Whether `path` spells an object-store URL (`s3://bucket/prefix`): the
/// one test of a location's prefix.
pub fn is_remote(path: &Path) -> bool {
    path.to_str().is_some_and(|p| p.starts_with(S3_SCHEME))
}
