//! Gulp directories in object storage: `s3://bucket/prefix`; read only,
//! on web servers: `https://host/path` (plain servers, CDNs, the Hugging
//! Face hub's `resolve/` URLs), through object_store's HTTP store (GET with
//! ranges, HEAD, redirects followed); and in stores held in memory,
//! `memory://name/prefix` (object_store's `InMemory`), which run every
//! path of a bucket in a test without a server. A web server is never
//! listed: a directory's chunks are read from its index file's chunk table
//! or found by asking for `meta_0.gmeta`, `meta_1.gmeta`, ... in turn.
//!
//! Paths of a remote directory are kept as `PathBuf`s spelling the URL
//! (`s3://bucket/prefix/data_0.gulp`), so errors name the object as they
//! name a file. One client per bucket is made on first use and shared: it is
//! configured by the standard variables (`AWS_ENDPOINT_URL`,
//! `AWS_ALLOW_HTTP`, ...), with credentials and region found as the AWS
//! tools find them (src/s3/credentials.rs), retries transient errors with
//! exponential backoff, and coalesces the byte ranges of one read into few
//! requests.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path as Key;
use object_store::{ClientOptions, GetOptions, GetRange, ObjectStore, RetryConfig};

use self::credentials::Source;
use crate::error::{ErrorKind, Result};

mod connector;
mod credentials;
mod web;

/// The spans of one read fetched at once (each its own request).
const SPANS_AT_ONCE: usize = 8;

use crate::location::{Location, MEMORY_SCHEME};
use crate::store::{DirEntry, Store};

/// A bucket's client (or a web server's), driven by the shared runtime.
struct Bucket {
    store: Arc<dyn ObjectStore>,
    name: String,
    /// A web server: read only, never listed.
    web: bool,
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
/// Bytes of object data received by this process (GET bodies).
static RECEIVED: AtomicU64 = AtomicU64::new(0);

/// The number of requests sent to object stores so far.
pub fn requests() -> u64 {
    REQUESTS.load(Ordering::Relaxed)
}

/// The bytes of object data received from object stores so far.
pub fn bytes_received() -> u64 {
    RECEIVED.load(Ordering::Relaxed)
}

fn count(n: u64) {
    REQUESTS.fetch_add(n, Ordering::Relaxed);
    #[cfg(test)]
    HERE.with(|here| here.set(here.get() + n));
}

#[cfg(test)]
thread_local! {
    /// Requests counted on this thread: a request's future is polled on the
    /// thread that blocks on it, so a test counts its own requests while
    /// other tests of the process send theirs.
    static HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The requests this thread has sent so far.
#[cfg(test)]
pub(crate) fn requests_here() -> u64 {
    HERE.with(std::cell::Cell::get)
}

fn received(n: usize) {
    RECEIVED.fetch_add(n as u64, Ordering::Relaxed);
}

/// Retries of a request that failed, from `GULP_S3_RETRIES` (default 4).
fn retries() -> usize {
    std::env::var("GULP_S3_RETRIES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(4)
}

/// The longest a connection may take to open, for either client.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest a request may take, from `GULP_S3_TIMEOUT` in seconds
/// (default 120): a response slower than this fails and is retried.
fn timeout() -> Duration {
    std::env::var("GULP_S3_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::from_secs(120), Duration::from_secs_f64)
}

/// An object as a listing names it: what a cached copy is checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The object's name under the listed prefix.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its entity tag, where the store gives one: another ETag is another
    /// version of the object.
    pub etag: Option<String>,
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

/// A builder configured by the process's `AWS_*` variables, as
/// object_store's `from_env` reads them, but for the credentials and the
/// region: those are [`credentials::resolve`]'s (the environment, then the
/// profile's files, ...), so that the keys of one source are never mixed
/// with another's token.
fn from_env(url: &str) -> Result<AmazonS3Builder> {
    let chain = credentials::resolve(|name| std::env::var(name).ok())
        .map_err(|reason| remote_err(url, None, reason))?;
    let mut builder = AmazonS3Builder::new();
    for (key, value) in std::env::vars_os() {
        let (Some(key), Some(value)) = (key.to_str(), value.to_str()) else {
            continue;
        };
        if !key.starts_with("AWS_") {
            continue;
        }
        let Ok(config) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() else {
            continue;
        };
        if !matches!(
            config,
            AmazonS3ConfigKey::AccessKeyId
                | AmazonS3ConfigKey::SecretAccessKey
                | AmazonS3ConfigKey::Token
                | AmazonS3ConfigKey::Region
                | AmazonS3ConfigKey::DefaultRegion
        ) {
            builder = builder.with_config(config, value);
        }
    }
    if let Some(region) = chain.region {
        builder = builder.with_region(region);
    }
    if let Source::Keys { keys, .. } = chain.source {
        builder = builder
            .with_access_key_id(keys.key_id)
            .with_secret_access_key(keys.secret);
        if let Some(token) = keys.token {
            builder = builder.with_token(token);
        }
    }
    Ok(builder)
}

/// The client named `name` (a bucket's name, or a web server's origin: an
/// origin holds "://", a bucket name cannot), made by `make` on first use
/// and shared by every object of it.
fn client(name: &str, make: impl FnOnce() -> Result<Bucket>) -> Result<Arc<Bucket>> {
    static CLIENTS: OnceLock<Mutex<HashMap<String, Arc<Bucket>>>> = OnceLock::new();
    let map = CLIENTS.get_or_init(Default::default);
    let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(b) = map.get(name) {
        return Ok(Arc::clone(b));
    }
    let b = Arc::new(make()?);
    map.insert(name.to_owned(), Arc::clone(&b));
    Ok(b)
}

/// Retries and timeouts, the same for every client.
fn retry_config() -> RetryConfig {
    RetryConfig {
        max_retries: retries(),
        retry_timeout: Duration::from_secs(30),
        ..RetryConfig::default()
    }
}

fn client_options(allow_http: bool) -> ClientOptions {
    ClientOptions::new()
        .with_allow_http(allow_http)
        .with_connect_timeout(CONNECT_TIMEOUT)
        .with_timeout(timeout())
}

/// `AWS_ALLOW_HTTP`: consent to plain http, for S3 endpoints and web
/// servers alike.
fn allow_http_env() -> bool {
    std::env::var("AWS_ALLOW_HTTP")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

fn bucket(name: &str, url: &str) -> Result<Arc<Bucket>> {
    client(name, || {
        let allow_http = allow_http_env();
        // (The client options replace those `from_env` read: AWS_ALLOW_HTTP
        // is read again here.)
        let mut builder = from_env(url)?
            .with_bucket_name(name)
            .with_retry(retry_config())
            .with_client_options(client_options(allow_http));
        // Path-style requests (`endpoint/bucket/key`) where an endpoint is
        // given: what S3-compatible servers on one host name expect.
        let endpoint = std::env::var("AWS_ENDPOINT_URL")
            .or_else(|_| std::env::var("AWS_ENDPOINT"))
            .ok();
        if endpoint.is_some() {
            builder = builder.with_virtual_hosted_style_request(false);
        }
        // A plain-HTTP endpoint gets the client that acknowledges at once
        // (src/s3/connector.rs, which says when).
        if connector::wanted(allow_http, endpoint.as_deref()) {
            builder = builder.with_http_connector(connector::QuickAckConnector {
                connect_timeout: CONNECT_TIMEOUT,
                timeout: timeout(),
            });
        }
        let store = builder
            .build()
            .map_err(|e| remote_err(url, None, format!("configuring the client: {e}")))?;
        Ok(Bucket {
            store: Arc::new(store),
            name: name.to_owned(),
            web: false,
        })
    })
}

/// The host of an origin (`http://127.0.0.1:8080` gives `127.0.0.1`).
fn host(origin: &str) -> &str {
    let authority = origin.split_once("://").map_or(origin, |(_, a)| a);
    match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    }
}

/// The client of the web server at `origin` (`https://host[:port]`), one
/// per origin. Plain `http://` is refused but on loopback or with
/// `AWS_ALLOW_HTTP=true`, as for an S3 endpoint.
fn site(origin: &str, url: &str) -> Result<Arc<Bucket>> {
    client(origin, || {
        let plain = origin.starts_with("http://");
        let loopback = matches!(host(origin), "127.0.0.1" | "localhost" | "[::1]");
        if plain && !loopback && !allow_http_env() {
            return Err(remote_err(
                url,
                None,
                "plain http:// is refused off loopback: use https://, or set AWS_ALLOW_HTTP=true",
            ));
        }
        let store = object_store::http::HttpBuilder::new()
            .with_url(origin)
            .with_retry(retry_config())
            .with_client_options(client_options(plain))
            .build()
            .map_err(|e| remote_err(url, None, format!("configuring the client: {e}")))?;
        Ok(Bucket {
            store: Arc::new(store),
            name: origin.to_owned(),
            web: true,
        })
    })
}

/// The store in memory named `name`, one per name for the life of the
/// process.
fn memory(name: &str) -> Result<Arc<Bucket>> {
    client(&format!("{MEMORY_SCHEME}{name}"), || {
        Ok(Bucket {
            store: Arc::new(object_store::memory::InMemory::new()),
            name: name.to_owned(),
            web: false,
        })
    })
}

/// One object (or prefix) of a store.
pub struct Object {
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
    /// The object `path` spells (`s3://bucket/key`, or `https://host/path`
    /// to read from a web server), with its bucket's (or server's) client.
    pub fn at(path: &Path) -> Result<Object> {
        let location = Location::parse(path)?;
        let url = location.url();
        let bucket = match &location {
            Location::S3 { bucket: name, .. } => bucket(name, &url)?,
            Location::Http { origin, .. } => site(origin, &url)?,
            Location::Memory { name, .. } => memory(name)?,
            Location::Local(_) => {
                return Err(remote_err(&url, None, "not a URL of an object store"));
            }
        };
        Ok(Object {
            bucket,
            key: Key::from(location.key().unwrap_or_default()),
            url,
        })
    }

    /// Refuses to change anything on a web server.
    fn writable(&self) -> Result<()> {
        if self.bucket.web {
            return Err(remote_err(
                &self.url,
                None,
                "a directory on a web server is read only (gulp copy it to a folder or a bucket \
                 to change it)",
            ));
        }
        Ok(())
    }

    /// The object's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn run<T>(
        &self,
        f: impl std::future::Future<Output = object_store::Result<T>>,
    ) -> object_store::Result<T> {
        runtime().block_on(f)
    }

    /// The objects directly under this prefix (on a web server, the files
    /// of the gulp directory there: `web::list`).
    pub fn list(&self) -> Result<Vec<Listed>> {
        if self.bucket.web {
            return web::list(self);
        }
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
            .filter_map(|o| {
                Some(Listed {
                    name: o.location.filename()?.to_owned(),
                    size: o.size,
                    etag: o.e_tag,
                })
            })
            .collect())
    }

    /// The whole object.
    pub fn get(&self) -> Result<Vec<u8>> {
        self.get_optional()?.ok_or_else(|| self.missing(None))
    }

    /// The whole object, `None` if there is none (one GET either way).
    pub fn get_optional(&self) -> Result<Option<Vec<u8>>> {
        count(1);
        let got = self.run(async {
            let got = self.bucket.store.get(&self.key).await?;
            got.bytes().await
        });
        match got {
            Ok(bytes) => {
                received(bytes.len());
                Ok(Some(bytes.to_vec()))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.fail(None, e)),
        }
    }

    /// The object's size.
    pub fn size(&self) -> Result<u64> {
        Ok(self.head()?.size)
    }

    /// The object's size and entity tag, as a listing gives them.
    pub fn head(&self) -> Result<crate::cache::ObjectId> {
        count(1);
        let meta = self
            .run(self.bucket.store.head(&self.key))
            .map_err(|e| self.fail(None, e))?;
        Ok(crate::cache::ObjectId {
            size: meta.size,
            etag: meta.e_tag,
        })
    }

    /// Byte ranges of the object, fetched in as few requests as the ranges
    /// allow (ranges less than 1 MiB apart share a request).
    pub fn get_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>> {
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
        received(got.iter().map(|b| b.len()).sum());
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

    /// Bytes `range` of the object, asked for with `If-Match: etag` so
    /// that they come from the version listed (another version is an
    /// error, never a mix), and tried again up to `GULP_S3_RETRIES` times
    /// when the transfer fails (a reset connection, a timeout). Each piece
    /// of the body goes to `take` as it arrives, with its offset in the
    /// object (a try starts again from the range's start); an error of
    /// `take` ends the fetch, untried again.
    async fn fetch_range_with(
        &self,
        range: Range<u64>,
        etag: Option<&str>,
        mut take: impl FnMut(u64, &[u8]) -> std::io::Result<()>,
    ) -> Result<()> {
        use futures::StreamExt;
        let retries = retries();
        let want = range.end - range.start;
        let mut attempt = 0;
        loop {
            count(1);
            let options = GetOptions {
                range: Some(GetRange::Bounded(range.clone())),
                if_match: etag.map(str::to_owned),
                ..GetOptions::default()
            };
            let mut untaken = None;
            let got = async {
                let mut body = self
                    .bucket
                    .store
                    .get_opts(&self.key, options)
                    .await?
                    .into_stream();
                let mut at = range.start;
                while let Some(piece) = body.next().await {
                    let piece = piece?;
                    received(piece.len());
                    let end = at + piece.len() as u64;
                    if end > range.end {
                        // Longer than asked: said below as a wrong length.
                        return Ok(end - range.start);
                    }
                    if let Err(e) = take(at, &piece) {
                        untaken = Some(e);
                        break;
                    }
                    at = end;
                }
                Ok(at - range.start)
            }
            .await;
            if let Some(e) = untaken {
                return Err(crate::Error::io("writing", Path::new(&self.url), e));
            }
            let failed = match got {
                Ok(n) if n == want => return Ok(()),
                Ok(n) => format!(
                    "got {n} bytes of {want} (the object is {} than its listing says)",
                    if n < want { "shorter" } else { "longer" }
                ),
                Err(object_store::Error::Precondition { .. }) => {
                    return Err(remote_err(
                        &self.url,
                        Some(&range),
                        "the object changed after the directory was opened (open it again)",
                    ));
                }
                Err(e @ object_store::Error::NotFound { .. }) => {
                    return Err(self.fail(Some(&range), e));
                }
                Err(e) => clean(&e),
            };
            if attempt >= retries {
                return Err(remote_err(
                    &self.url,
                    Some(&range),
                    format!("{failed} (after {} attempts)", attempt + 1),
                ));
            }
            attempt += 1;
            tokio::time::sleep(Duration::from_millis(100 << attempt.min(6))).await;
        }
    }

    /// Bytes `range` of the object ([`fetch_range_with`](Self::fetch_range_with)).
    async fn fetch_range(&self, range: Range<u64>, etag: Option<&str>) -> Result<bytes::Bytes> {
        let mut bytes = Vec::new();
        let start = range.start;
        let want = usize::try_from(range.end - range.start).unwrap_or(0);
        self.fetch_range_with(range, etag, |at, piece| {
            if at == start {
                bytes.clear();
                bytes.reserve(want);
            }
            bytes.extend_from_slice(piece);
            Ok(())
        })
        .await?;
        Ok(bytes.into())
    }

    /// Bytes `range` of the object written into `file` at the same offsets
    /// as they arrive ([`fetch_range_with`](Self::fetch_range_with)): no
    /// buffer of the range's size is filled first (its fresh pages, faulted
    /// in and returned for each part, were 4 % of a loader's CPU streaming
    /// chunks from a bucket).
    async fn fetch_range_into(
        &self,
        range: Range<u64>,
        etag: Option<&str>,
        file: &std::fs::File,
    ) -> Result<()> {
        use std::os::unix::fs::FileExt;
        self.fetch_range_with(range, etag, |at, piece| file.write_all_at(piece, at))
            .await
    }

    /// The bytes of `spans` (each fetched as one request, `SPANS_AT_ONCE`
    /// at a time, as `fetch_range` fetches), in order.
    pub fn get_spans(&self, spans: &[Range<u64>], etag: Option<&str>) -> Result<Vec<bytes::Bytes>> {
        runtime().block_on(
            futures::stream::iter(spans.iter().cloned())
                .map(|span| self.fetch_range(span, etag))
                .buffered(SPANS_AT_ONCE)
                .try_collect(),
        )
    }

    /// Writes the object, of `size` bytes, into `file` at its offsets, but
    /// for the ranges `have` (already written): parts of at most 2 MiB,
    /// four at a time, each as `fetch_range` fetches.
    pub fn download(
        &self,
        file: &std::fs::File,
        size: u64,
        etag: Option<&str>,
        have: &[Range<u64>],
    ) -> Result<()> {
        const PARALLEL: usize = 4;
        let parts =
            crate::store::missing_parts(size, have, crate::store::PART, crate::store::KEEP_SPAN);
        let fetch = |range: Range<u64>| self.fetch_range_into(range, etag, file);
        runtime().block_on(
            futures::stream::iter(parts)
                .map(fetch)
                .buffer_unordered(PARALLEL)
                .try_collect::<Vec<()>>(),
        )?;
        Ok(())
    }

    /// Copies the object to `to` in the same store (a server-side copy: no
    /// byte passes through this process).
    pub fn copy_to(&self, to: &Object) -> Result<()> {
        to.writable()?;
        if !Arc::ptr_eq(&self.bucket, &to.bucket) {
            return Err(remote_err(
                &to.url,
                None,
                format!("cannot copy {} across buckets", self.url),
            ));
        }
        count(1);
        self.run(self.bucket.store.copy(&self.key, &to.key))
            .map_err(|e| self.fail(None, e))
    }

    /// Writes the whole object.
    pub fn put(&self, bytes: Vec<u8>) -> Result<()> {
        self.writable()?;
        count(1);
        self.run(self.bucket.store.put(&self.key, bytes.into()))
            .map(|_| ())
            .map_err(|e| self.fail(None, e))
    }

    /// Removes the object.
    pub fn delete(&self) -> Result<()> {
        self.writable()?;
        count(1);
        self.run(self.bucket.store.delete(&self.key))
            .map_err(|e| self.fail(None, e))
    }

    /// Why an object that is not there cannot be read.
    fn missing(&self, range: Option<&Range<u64>>) -> crate::Error {
        ErrorKind::RemoteNotFound {
            url: self.url.clone(),
            range: range.map(|r| (r.start, r.end)),
            reason: if self.bucket.web {
                "not found (HTTP 404)".to_owned()
            } else {
                format!(
                    "not found (no such object, or no bucket {:?})",
                    self.bucket.name
                )
            },
        }
        .into()
    }

    fn fail(&self, range: Option<&Range<u64>>, e: object_store::Error) -> crate::Error {
        match &e {
            object_store::Error::NotFound { .. } => self.missing(range),
            other => remote_err(&self.url, range, clean(other)),
        }
    }
}

/// An object-store error in one line: its chain of causes.
/// A part said twice in a row is said once: object_store wraps an error
/// of a response's body in another of the same kind, which read "Generic
/// S3 error: Generic S3 error: ...".
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
    let mut parts: Vec<&str> = text.split(": ").collect();
    parts.dedup();
    parts.join(": ")
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

/// Lists a remote directory: each object under it, with its URL.
fn list_dir(dir: &Path) -> Result<Vec<(Listed, PathBuf)>> {
    let object = Object::at(dir)?;
    let base = object.url().trim_end_matches('/').to_owned();
    Ok(object
        .list()?
        .into_iter()
        .map(|listed| {
            let url = PathBuf::from(format!("{base}/{}", listed.name));
            (listed, url)
        })
        .collect())
}

/// Uploads the local file `local` as the object `url`, streaming it in
/// parts of 16 MiB (a chunk's data file may be gigabytes); the object
/// appears only when the upload completes.
pub fn upload_file(local: &Path, url: &Path) -> Result<()> {
    use std::io::Read;
    let object = Object::at(url)?;
    object.writable()?;
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

/// Every object store as one [`Store`]: S3 buckets, web
/// servers and stores in memory, told apart by their URLs' schemes
/// (object_store gives each the same interface).
#[derive(Debug, Clone, Copy)]
pub struct ObjectStores;

impl Store for ObjectStores {
    fn list(&self, dir: &Path) -> Result<Vec<DirEntry>> {
        Ok(list_dir(dir)?
            .into_iter()
            .map(|(listed, path)| DirEntry {
                object: Some(crate::cache::ObjectId {
                    size: listed.size,
                    etag: listed.etag,
                }),
                name: listed.name,
                path,
            })
            .collect())
    }

    fn get(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        Object::at(path)?.get_optional()
    }

    fn read(&self, path: &Path) -> Result<Vec<u8>> {
        Object::at(path)?.get()
    }

    fn get_ranges(&self, path: &Path, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>> {
        Object::at(path)?.get_ranges(ranges)
    }

    fn len(&self, path: &Path) -> Result<u64> {
        Object::at(path)?.size()
    }

    fn put(&self, path: &Path, bytes: Vec<u8>) -> Result<()> {
        Object::at(path)?.put(bytes)
    }

    fn copy(&self, from: &Path, to: &Path) -> Result<()> {
        Object::at(from)?.copy_to(&Object::at(to)?)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        Object::at(path)?.delete()
    }

    fn version(&self, path: &Path) -> Result<crate::cache::ObjectId> {
        Object::at(path)?.head()
    }

    fn get_version_ranges(
        &self,
        path: &Path,
        version: &crate::cache::ObjectId,
        ranges: &[Range<u64>],
    ) -> Result<Vec<bytes::Bytes>> {
        Object::at(path)?.get_spans(ranges, version.etag.as_deref())
    }

    fn download(
        &self,
        path: &Path,
        version: &crate::cache::ObjectId,
        file: &std::fs::File,
        have: &[Range<u64>],
    ) -> Result<()> {
        Object::at(path)?.download(file, version.size, version.etag.as_deref(), have)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_error_wrapped_in_its_own_kind_is_said_once() {
        let inner = object_store::Error::Generic {
            store: "S3",
            source: "error decoding response body".into(),
        };
        let outer = object_store::Error::Generic {
            store: "S3",
            source: Box::new(inner),
        };
        assert!(
            outer
                .to_string()
                .starts_with("Generic S3 error: Generic S3 error: ")
        );
        assert_eq!(
            super::clean(&outer),
            "Generic S3 error: error decoding response body"
        );
    }

    use super::*;

    #[test]
    fn an_origin_s_host_is_told_from_its_port() {
        assert_eq!(host("http://127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(host("https://example.org"), "example.org");
        assert_eq!(host("http://[::1]:80"), "[::1]");
        assert_eq!(host("http://[::1]"), "[::1]");
    }

    #[test]
    fn nearby_ranges_count_as_one_request() {
        assert_eq!(coalesced(&[0..10, 10..20, 30..40]), 1);
        assert_eq!(coalesced(&[0..10, (3 << 20)..(3 << 20) + 5]), 2);
        assert_eq!(coalesced(&[]), 0);
    }
}
