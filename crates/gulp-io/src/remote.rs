//! Gulp directories in object storage: `s3://bucket/prefix`.
//!
//! Paths of a remote directory are kept as `PathBuf`s spelling the URL
//! (`s3://bucket/prefix/data_0.gulp`), so errors name the object as they
//! name a file. One client per bucket is made on first use and shared: it is
//! configured by the standard variables (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`,
//! `AWS_ALLOW_HTTP`, ...), retries transient errors with exponential
//! backoff, and coalesces the byte ranges of one read into few requests.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as Key;
use object_store::{ClientOptions, ObjectStore, RetryConfig};

use crate::error::{ErrorKind, Result};

/// The URL scheme of S3 and compatible stores.
pub const SCHEME: &str = "s3://";

/// Whether `path` spells an object-store URL.
pub fn is_remote(path: &Path) -> bool {
    path.to_str().is_some_and(|p| p.starts_with(SCHEME))
}

/// A bucket's client and the runtime that drives it.
struct Bucket {
    store: AmazonS3,
    name: String,
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("gulp-s3")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the object-store runtime: {e}"))
    })
}

/// Requests sent to object stores by this process (GET, HEAD, LIST, PUT).
static REQUESTS: AtomicU64 = AtomicU64::new(0);

/// The number of requests sent to object stores so far.
pub fn requests() -> u64 {
    REQUESTS.load(Ordering::Relaxed)
}

fn count(n: u64) {
    REQUESTS.fetch_add(n, Ordering::Relaxed);
}

fn remote_err(
    url: &str,
    range: Option<&Range<u64>>,
    reason: impl std::fmt::Display,
) -> crate::Error {
    ErrorKind::Remote {
        url: url.to_owned(),
        range: range.map(|r| (r.start, r.end)),
        reason: reason.to_string(),
    }
    .into()
}

/// `s3://bucket/key...` as (bucket, key).
fn split(path: &Path) -> Result<(String, String)> {
    let text = path.to_str().unwrap_or_default();
    let rest = text
        .strip_prefix(SCHEME)
        .ok_or_else(|| remote_err(text, None, "not an s3:// URL"))?;
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(remote_err(text, None, "no bucket name"));
    }
    Ok((bucket.to_owned(), key.trim_matches('/').to_owned()))
}

fn bucket(name: &str, url: &str) -> Result<Arc<Bucket>> {
    static BUCKETS: OnceLock<Mutex<HashMap<String, Arc<Bucket>>>> = OnceLock::new();
    let map = BUCKETS.get_or_init(Default::default);
    let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(b) = map.get(name) {
        return Ok(Arc::clone(b));
    }
    let retry = RetryConfig {
        max_retries: std::env::var("GULP_S3_RETRIES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(4),
        retry_timeout: Duration::from_secs(30),
        ..RetryConfig::default()
    };
    let mut builder =
        AmazonS3Builder::from_env()
            .with_bucket_name(name)
            .with_retry(retry)
            .with_client_options(
                // (Replaces the client options `from_env` read: AWS_ALLOW_HTTP
                // is read again here.)
                ClientOptions::new()
                    .with_allow_http(std::env::var("AWS_ALLOW_HTTP").is_ok_and(|v| {
                        matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes")
                    }))
                    .with_connect_timeout(Duration::from_secs(5))
                    .with_timeout(Duration::from_secs(120)),
            );
    // Path-style requests (`endpoint/bucket/key`) where an endpoint is
    // given: what S3-compatible servers on one host name expect.
    if std::env::var_os("AWS_ENDPOINT_URL").is_some() || std::env::var_os("AWS_ENDPOINT").is_some()
    {
        builder = builder.with_virtual_hosted_style_request(false);
    }
    let store = builder
        .build()
        .map_err(|e| remote_err(url, None, format!("configuring the client: {e}")))?;
    let b = Arc::new(Bucket {
        store,
        name: name.to_owned(),
    });
    map.insert(name.to_owned(), Arc::clone(&b));
    Ok(b)
}

/// One object (or prefix) of a store.
pub(crate) struct Object {
    bucket: Arc<Bucket>,
    key: Key,
    url: String,
}

impl std::fmt::Debug for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Object").field("url", &self.url).finish()
    }
}

impl Object {
    pub(crate) fn at(path: &Path) -> Result<Object> {
        let (name, key) = split(path)?;
        let url = format!("{SCHEME}{name}/{key}");
        Ok(Object {
            bucket: bucket(&name, &url)?,
            key: Key::from(key),
            url,
        })
    }

    /// The object's URL.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    fn run<T>(
        &self,
        f: impl std::future::Future<Output = object_store::Result<T>>,
    ) -> object_store::Result<T> {
        runtime().block_on(f)
    }

    /// The names and sizes of the objects directly under this prefix.
    pub(crate) fn list(&self) -> Result<Vec<(String, u64)>> {
        count(1);
        let prefix = if self.key.as_ref().is_empty() {
            None
        } else {
            Some(&self.key)
        };
        let listed = self
            .run(self.bucket.store.list_with_delimiter(prefix))
            .map_err(|e| self.fail(None, e))?;
        Ok(listed
            .objects
            .into_iter()
            .filter_map(|o| o.location.filename().map(|n| (n.to_owned(), o.size)))
            .collect())
    }

    /// The whole object.
    pub(crate) fn get(&self) -> Result<Vec<u8>> {
        self.get_optional()?
            .ok_or_else(|| remote_err(&self.url, None, self.missing()))
    }

    /// The whole object, `None` if there is none (one GET either way).
    pub(crate) fn get_optional(&self) -> Result<Option<Vec<u8>>> {
        count(1);
        let got = self.run(async {
            let got = self.bucket.store.get(&self.key).await?;
            got.bytes().await
        });
        match got {
            Ok(bytes) => Ok(Some(bytes.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.fail(None, e)),
        }
    }

    /// The object's size.
    pub(crate) fn size(&self) -> Result<u64> {
        count(1);
        let meta = self
            .run(self.bucket.store.head(&self.key))
            .map_err(|e| self.fail(None, e))?;
        Ok(meta.size)
    }

    /// Byte ranges of the object, fetched in as few requests as the ranges
    /// allow (ranges less than 1 MiB apart share a request).
    pub(crate) fn get_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>> {
        if ranges.is_empty() {
            return Ok(Vec::new());
        }
        count(coalesced(ranges));
        let got = self
            .run(self.bucket.store.get_ranges(&self.key, ranges))
            .map_err(|e| {
                let whole = ranges[0].start..ranges.iter().map(|r| r.end).max().unwrap_or(0);
                self.fail(Some(&whole), e)
            })?;
        let mut out = Vec::with_capacity(got.len());
        for (bytes, range) in got.into_iter().zip(ranges) {
            if bytes.len() as u64 != range.end - range.start {
                return Err(remote_err(
                    &self.url,
                    Some(range),
                    format!(
                        "got {} bytes (the object is shorter than its meta says)",
                        bytes.len()
                    ),
                ));
            }
            out.push(bytes.to_vec());
        }
        Ok(out)
    }

    /// Writes the whole object.
    pub(crate) fn put(&self, bytes: Vec<u8>) -> Result<()> {
        count(1);
        self.run(self.bucket.store.put(&self.key, bytes.into()))
            .map(|_| ())
            .map_err(|e| self.fail(None, e))
    }

    /// Removes the object.
    pub(crate) fn delete(&self) -> Result<()> {
        count(1);
        self.run(self.bucket.store.delete(&self.key))
            .map_err(|e| self.fail(None, e))
    }

    /// Why an object that is not there cannot be read.
    fn missing(&self) -> String {
        format!(
            "not found (no such object, or no bucket {:?})",
            self.bucket.name
        )
    }

    fn fail(&self, range: Option<&Range<u64>>, e: object_store::Error) -> crate::Error {
        let reason = match &e {
            object_store::Error::NotFound { .. } => self.missing(),
            other => clean(other),
        };
        remote_err(&self.url, range, reason)
    }
}

/// An object-store error in one line: its chain of causes.
fn clean(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// Requests [`Object::get_ranges`] sends for `ranges`: object_store merges
/// ranges less than 1 MiB apart.
fn coalesced(ranges: &[Range<u64>]) -> u64 {
    let mut sorted: Vec<&Range<u64>> = ranges.iter().collect();
    sorted.sort_by_key(|r| r.start);
    let mut n = 0;
    let mut end: Option<u64> = None;
    for r in sorted {
        match end {
            Some(e) if r.start <= e + (1 << 20) => end = Some(e.max(r.end)),
            _ => {
                n += 1;
                end = Some(r.end);
            }
        }
    }
    n
}

/// Lists a remote directory: (name, URL) of each object under it.
pub(crate) fn list_dir(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let object = Object::at(dir)?;
    let base = object.url().trim_end_matches('/').to_owned();
    Ok(object
        .list()?
        .into_iter()
        .map(|(name, _)| {
            let url = PathBuf::from(format!("{base}/{name}"));
            (name, url)
        })
        .collect())
}

/// Reads a whole remote object.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>> {
    Object::at(path)?.get()
}

/// Reads a whole remote object, `None` if there is none.
pub(crate) fn read_optional(path: &Path) -> Result<Option<Vec<u8>>> {
    Object::at(path)?.get_optional()
}

/// The names and sizes of the objects directly under the prefix `url`.
pub fn list(url: &Path) -> Result<Vec<(String, u64)>> {
    Object::at(url)?.list()
}

/// Reads a whole remote object.
pub fn read_object(url: &Path) -> Result<Vec<u8>> {
    read(url)
}

/// Writes a whole remote object.
pub fn write(path: &Path, bytes: Vec<u8>) -> Result<()> {
    Object::at(path)?.put(bytes)
}

/// Uploads the local file `local` as the object `url`, streaming it in
/// parts of 16 MiB (a chunk's data file may be gigabytes); the object
/// appears only when the upload completes.
pub fn upload_file(local: &Path, url: &Path) -> Result<()> {
    use std::io::Read;
    let object = Object::at(url)?;
    let mut file = std::fs::File::open(local).map_err(|e| crate::Error::io("opening", local, e))?;
    let len = file
        .metadata()
        .map_err(|e| crate::Error::io("reading", local, e))?
        .len();
    const PART: usize = 16 << 20;
    if len <= PART as u64 {
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| crate::Error::io("reading", local, e))?;
        return object.put(bytes);
    }
    count(len.div_ceil(PART as u64) + 2);
    let result: std::result::Result<(), crate::Error> = runtime().block_on(async {
        let upload = object
            .bucket
            .store
            .put_multipart(&object.key)
            .await
            .map_err(|e| object.fail(None, e))?;
        let mut writer = object_store::WriteMultipart::new_with_chunk_size(upload, PART);
        let mut buf = vec![0u8; PART];
        loop {
            let n = file
                .read(&mut buf)
                .map_err(|e| crate::Error::io("reading", local, e))?;
            if n == 0 {
                break;
            }
            writer
                .wait_for_capacity(4)
                .await
                .map_err(|e| object.fail(None, e))?;
            writer.write(&buf[..n]);
        }
        writer.finish().await.map_err(|e| object.fail(None, e))?;
        Ok(())
    });
    result
}

/// Removes a remote object.
pub fn remove(path: &Path) -> Result<()> {
    Object::at(path)?.delete()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_bucket_and_key() {
        assert_eq!(
            split(Path::new("s3://b/some/prefix/")).expect("url"),
            ("b".into(), "some/prefix".into())
        );
        assert_eq!(
            split(Path::new("s3://b")).expect("url"),
            ("b".into(), String::new())
        );
        assert!(split(Path::new("s3:///x")).is_err());
        assert!(is_remote(Path::new("s3://b/x")) && !is_remote(Path::new("/data/x")));
    }

    #[test]
    fn nearby_ranges_count_as_one_request() {
        assert_eq!(coalesced(&[0..10, 10..20, 30..40]), 1);
        assert_eq!(coalesced(&[0..10, (3 << 20)..(3 << 20) + 5]), 2);
        assert_eq!(coalesced(&[]), 0);
    }
}
