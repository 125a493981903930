//! Where a file or a directory is: a local path, an object of a bucket, a
//! file of a web server, or an object of a store held in memory. Paths
//! travel through the crates as `PathBuf`s spelling one of these (so that
//! errors name an object as they name a file); [`Location::parse`] is the
//! one reading of them, and every test of a location's kind asks it.

use std::path::{Path, PathBuf};

use crate::error::{ErrorKind, Result};

/// The URL scheme of S3 and compatible stores.
pub const S3_SCHEME: &str = "s3://";

/// The URL schemes of web servers, read-only.
pub const HTTP_SCHEMES: [&str; 2] = ["https://", "http://"];

/// The URL scheme of stores held in this process's memory.
pub const MEMORY_SCHEME: &str = "memory://";

/// A location, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A path of the local filesystem.
    Local(PathBuf),
    /// An object, or a prefix, of an S3 bucket: `s3://bucket/key`.
    S3 {
        /// The bucket's name.
        bucket: String,
        /// The key, without a leading or trailing `/`.
        key: String,
    },
    /// A file, or a folder, of a web server: `https://host[:port]/path`.
    /// Read only, never listed.
    Http {
        /// `https://host[:port]` (or `http://`).
        origin: String,
        /// The path on the server, without a leading or trailing `/`.
        key: String,
    },
    /// An object of a store that lives in this process's memory, made on
    /// first use and gone when the process ends: `memory://name/key`. What
    /// the tests put directories in, to run everything that reads a bucket
    /// without a server.
    Memory {
        /// The store's name.
        name: String,
        /// The key, without a leading or trailing `/`.
        key: String,
    },
}

impl Location {
    /// Reads a path: a URL of one of the schemes above, or else a local
    /// path. A URL without a bucket or a host is an error naming it.
    pub fn parse(path: &Path) -> Result<Location> {
        let Some(text) = path.to_str().filter(|t| scheme(t).is_some()) else {
            return Ok(Location::Local(path.to_owned()));
        };
        let (scheme, rest) = text.split_once("://").unwrap_or((text, ""));
        let (authority, key) = rest.split_once('/').unwrap_or((rest, ""));
        let key = key.trim_matches('/').to_owned();
        if authority.is_empty() {
            let what = match scheme {
                "s3" => "no bucket name",
                "memory" => "no store name",
                _ => "no host name",
            };
            return Err(invalid(text, what));
        }
        let authority = authority.to_owned();
        Ok(match scheme {
            "s3" => Location::S3 {
                bucket: authority,
                key,
            },
            "memory" => Location::Memory {
                name: authority,
                key,
            },
            _ => Location::Http {
                origin: format!("{scheme}://{authority}"),
                key,
            },
        })
    }

    /// Whether this is a location on the network or in a store (anything
    /// but a local path).
    pub fn is_remote(&self) -> bool {
        !matches!(self, Location::Local(_))
    }

    /// The store the location is in, as a URL (`s3://bucket`,
    /// `https://host`, `memory://name`); `None` for a local path. Two
    /// locations of one store can be copied between on the store's side.
    pub fn store(&self) -> Option<String> {
        match self {
            Location::Local(_) => None,
            Location::S3 { bucket, .. } => Some(format!("{S3_SCHEME}{bucket}")),
            Location::Http { origin, .. } => Some(origin.clone()),
            Location::Memory { name, .. } => Some(format!("{MEMORY_SCHEME}{name}")),
        }
    }

    /// The key in the store; `None` for a local path.
    pub fn key(&self) -> Option<&str> {
        match self {
            Location::Local(_) => None,
            Location::S3 { key, .. }
            | Location::Http { key, .. }
            | Location::Memory { key, .. } => Some(key),
        }
    }

    /// The location written out: the path, or the URL in its one spelling
    /// (`s3://bucket/key`, without a trailing `/`).
    pub fn url(&self) -> String {
        match (self, self.store()) {
            (Location::Local(path), _) => path.display().to_string(),
            (_, store) => {
                let store = store.unwrap_or_default();
                match self.key().unwrap_or_default() {
                    "" => store,
                    key => format!("{store}/{key}"),
                }
            }
        }
    }
}

/// The scheme `text` begins with, if it is one of a store's.
fn scheme(text: &str) -> Option<&'static str> {
    [S3_SCHEME, MEMORY_SCHEME]
        .into_iter()
        .chain(HTTP_SCHEMES)
        .find(|s| text.starts_with(s))
}

fn invalid(text: &str, reason: &str) -> crate::Error {
    ErrorKind::Invalid {
        path: PathBuf::from(text),
        reason: reason.to_owned(),
    }
    .into()
}

/// Whether `path` spells a location that is not a local path: an object
/// store (`s3://bucket/prefix`), a web server (`https://host/path`) or a
/// store in memory (`memory://name/prefix`).
pub fn is_remote(path: &Path) -> bool {
    path.to_str().and_then(scheme).is_some()
}

/// Whether `path` spells a URL of a web server (`https://` or `http://`):
/// read with range requests, never listed or written.
pub fn is_http(path: &Path) -> bool {
    matches!(Location::parse(path), Ok(Location::Http { .. }))
}

/// Whether `a` and `b` are in one store that can copy between its objects
/// itself (one bucket, or one store in memory; never a web server).
pub fn same_store(a: &Path, b: &Path) -> bool {
    match (Location::parse(a), Location::parse(b)) {
        (Ok(a), Ok(b)) => {
            !matches!(a, Location::Http { .. }) && a.store().is_some() && a.store() == b.store()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Location {
        Location::parse(Path::new(text)).expect(text)
    }

    #[test]
    fn urls_are_told_from_paths_by_their_scheme() {
        for url in [
            "s3://b/x",
            "https://h/p",
            "http://127.0.0.1:8080/d",
            "memory://t/d",
        ] {
            assert!(is_remote(Path::new(url)), "{url}");
            assert!(parse(url).is_remote(), "{url}");
        }
        for path in [
            "/data/train",
            "data/s3://x",
            "https_dir/x",
            "./http://x",
            "memory/x",
        ] {
            assert!(!is_remote(Path::new(path)), "{path}");
            assert_eq!(parse(path), Location::Local(PathBuf::from(path)));
        }
        assert!(is_http(Path::new("https://h/p")) && !is_http(Path::new("s3://b/x")));
    }

    #[test]
    fn urls_split_into_store_and_key() {
        assert_eq!(
            parse("s3://b/some/prefix/"),
            Location::S3 {
                bucket: "b".into(),
                key: "some/prefix".into()
            }
        );
        assert_eq!(
            parse("s3://b"),
            Location::S3 {
                bucket: "b".into(),
                key: String::new()
            }
        );
        assert_eq!(
            parse("http://127.0.0.1:8080/a/b"),
            Location::Http {
                origin: "http://127.0.0.1:8080".into(),
                key: "a/b".into()
            }
        );
        assert_eq!(parse("memory://t/d/").url(), "memory://t/d");
        assert_eq!(parse("s3://b").url(), "s3://b");
        for bad in ["s3:///x", "https:///x", "memory://"] {
            let e = Location::parse(Path::new(bad)).expect_err(bad);
            assert!(e.to_string().starts_with(bad), "{e}");
        }
    }

    #[test]
    fn a_store_copies_within_itself_only() {
        let same = |a: &str, b: &str| same_store(Path::new(a), Path::new(b));
        assert!(same("s3://b/x/data_0.gulp", "s3://b/y/data_0.gulp"));
        assert!(same("memory://t/x", "memory://t/y"));
        assert!(!same("s3://b/x", "s3://c/x"));
        assert!(!same("s3://b/x", "memory://b/x"));
        assert!(!same("https://h/x", "https://h/y"));
        assert!(!same("/data/x", "/data/y"));
    }
}
