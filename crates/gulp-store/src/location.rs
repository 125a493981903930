//! What a location spells: a local path, or an object-store URL.

use std::path::Path;

/// The URL scheme of S3 and compatible stores.
pub const S3_SCHEME: &str = "s3://";

/// The URL schemes of web servers, read-only.
pub const HTTP_SCHEMES: [&str; 2] = ["https://", "http://"];

/// Whether `path` spells a location on the network: an object store
/// (`s3://bucket/prefix`) or a web server (`https://host/path`). The one
/// test of a location's prefix, with [`is_http`].
pub fn is_remote(path: &Path) -> bool {
    path.to_str().is_some_and(|p| p.starts_with(S3_SCHEME)) || is_http(path)
}

/// Whether `path` spells a URL of a web server (`https://` or `http://`):
/// read with range requests, never listed or written.
pub fn is_http(path: &Path) -> bool {
    path.to_str()
        .is_some_and(|p| HTTP_SCHEMES.iter().any(|s| p.starts_with(s)))
}

/// The bucket of an `s3://bucket/key` URL; `None` for anything else.
pub fn s3_bucket(path: &Path) -> Option<&str> {
    path.to_str()?
        .strip_prefix(S3_SCHEME)?
        .split('/')
        .next()
        .filter(|b| !b.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths_by_their_scheme() {
        for url in ["s3://b/x", "https://h/p", "http://127.0.0.1:8080/d"] {
            assert!(is_remote(Path::new(url)), "{url}");
        }
        for path in ["/data/train", "data/s3://x", "https_dir/x", "./http://x"] {
            assert!(!is_remote(Path::new(path)), "{path}");
        }
        assert!(is_http(Path::new("https://h/p")) && !is_http(Path::new("s3://b/x")));
        assert_eq!(s3_bucket(Path::new("s3://b/x/y")), Some("b"));
        assert_eq!(s3_bucket(Path::new("s3:///x")), None);
        assert_eq!(s3_bucket(Path::new("https://h/p")), None);
    }
}
