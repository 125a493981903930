//! The application: what is served, the routes, and the server loop.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use gulp_io::DirectoryOptions;

use crate::error::{Error, HttpError, Result};
use crate::served::Served;
use crate::state::{AppState, blocking};
use crate::thumbs::ThumbCache;

/// What to serve.
#[derive(Debug, Clone)]
pub struct Options {
    /// The directories, local or `s3://`.
    pub dirs: Vec<PathBuf>,
    /// A `gulp lint` report to show on the overview.
    pub lint: Option<PathBuf>,
    /// How the directories are opened (the node cache of remote ones).
    pub open: DirectoryOptions,
    /// The meta key holding an item's class.
    pub label_key: String,
    /// Bytes of thumbnails kept in memory.
    pub thumb_cache: usize,
}

impl Options {
    /// The directories, with the defaults: no lint report, the node cache
    /// of the environment, classes from `label`, 64 MiB of thumbnails.
    pub fn new(dirs: Vec<PathBuf>) -> Options {
        Options {
            dirs,
            lint: None,
            open: DirectoryOptions::default(),
            label_key: "label".into(),
            thumb_cache: 64 << 20,
        }
    }
}

/// The largest lint report read (a report is a summary, not data).
const LINT_LIMIT: u64 = 16 << 20;

/// A running application: its directories are open, and a background scan
/// of each directory's metas (classes, frame sizes, `gulp check`) is under
/// way; it stops when the `App` is dropped.
pub struct App {
    state: Arc<AppState>,
    stop: Arc<AtomicBool>,
}

impl App {
    /// Opens the directories (reading each one's index only) and starts
    /// their background scans.
    pub fn open(options: Options) -> Result<App> {
        if options.dirs.is_empty() {
            return Err(Error::NoDirectory);
        }
        let lint = match &options.lint {
            Some(path) => Some((path.clone(), read_lint(path)?)),
            None => None,
        };
        let mut dirs = Vec::new();
        for path in &options.dirs {
            let dir = options.open.open(path).map_err(|source| Error::Open {
                path: path.clone(),
                source,
            })?;
            let name = path.display().to_string();
            dirs.push(Arc::new(Served::new(name, dir, options.label_key.clone())));
        }
        let stop = Arc::new(AtomicBool::new(false));
        for (n, served) in dirs.iter().enumerate() {
            let served = Arc::clone(served);
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name(format!("gulp-serve-scan-{n}"))
                .spawn(move || served.run_scan(&stop))?;
        }
        Ok(App {
            state: Arc::new(AppState {
                dirs,
                lint,
                thumbs: ThumbCache::new(options.thumb_cache),
                open: options.open.clone(),
            }),
            stop,
        })
    }

    /// The routes.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/", get(crate::pages::overview))
            .route("/d/{n}/items", get(crate::pages::grid))
            .route("/d/{n}/item", get(crate::pages::item))
            .route("/d/{n}/thumb", get(thumb))
            .route("/d/{n}/frame", get(frame))
            .route("/d/{n}/audio", get(crate::sound::audio))
            .route("/d/{n}/model", get(crate::model_view::model_page))
            .route("/static/style.css", get(style))
            .route("/static/app.js", get(script))
            .with_state(Arc::clone(&self.state))
    }
}

impl Drop for App {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn read_lint(path: &std::path::Path) -> Result<String> {
    use std::io::Read;
    let lint = |source| Error::Lint {
        path: path.to_owned(),
        source,
    };
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(lint)?
        .take(LINT_LIMIT)
        .read_to_string(&mut text)
        .map_err(lint)?;
    Ok(text)
}

/// Serves `app` on `listener` until the process ends. Every connection is
/// a task of its own, and every handler that reads data runs on the
/// blocking pool, so a slow client or a slow read holds no one else.
pub async fn serve(listener: tokio::net::TcpListener, app: &App) -> Result<()> {
    axum::serve(listener, app.router()).await?;
    Ok(())
}

/// Binds `addr`, calls `on_bound` with the address bound (the port the
/// system chose for port 0), and serves `app` on a runtime of its own
/// until the process ends.
pub fn run(app: App, addr: SocketAddr, on_bound: impl FnOnce(SocketAddr)) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("gulp-serve")
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        on_bound(listener.local_addr()?);
        serve(listener, &app).await
    })
}

/// `?id=ID&frame=K` of a frame.
#[derive(serde::Deserialize)]
pub(crate) struct FrameQuery {
    id: String,
    #[serde(default)]
    frame: usize,
}

/// Checks that directory `n` has `id` with a frame `frame`.
fn frame_of(
    state: &AppState,
    n: usize,
    q: &FrameQuery,
) -> std::result::Result<Arc<Served>, HttpError> {
    let served = state.dir(n)?;
    let Some(entry) = served.dir.chunk_of(&q.id) else {
        return Err(HttpError::not_found(format!(
            "no item {:?} in {}",
            q.id, served.name
        )));
    };
    let frames = entry
        .index()
        .iter()
        .find(|(id, _)| *id == q.id)
        .map_or(0, |(_, n)| n);
    if q.frame as u64 >= frames {
        return Err(HttpError::not_found(format!(
            "item {:?} has {frames} frames, no frame {}",
            q.id, q.frame
        )));
    }
    Ok(Arc::clone(served))
}

fn jpeg(bytes: Vec<u8>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "image/jpeg"),
            // The data is read-only while served.
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        bytes,
    )
        .into_response()
}

/// A frame's thumbnail.
async fn thumb(
    State(state): State<Arc<AppState>>,
    Path(n): Path<usize>,
    Query(q): Query<FrameQuery>,
) -> std::result::Result<Response, HttpError> {
    let served = frame_of(&state, n, &q)?;
    let key = (n, q.id.clone(), q.frame);
    if let Some(hit) = state.thumbs.get(&key) {
        return Ok(jpeg(hit.to_vec()));
    }
    let made = blocking(move || {
        let jpeg = served
            .dir
            .reader_for(&q.id)
            .and_then(|r| r.frame(&q.id, q.frame))
            .map_err(HttpError::data)?;
        crate::thumbs::thumbnail(&jpeg).map_err(|e| {
            HttpError::data(format!(
                "{}: id {:?} frame {}: {e}",
                served.name, q.id, q.frame
            ))
        })
    })
    .await?;
    let made = Arc::new(made);
    state.thumbs.put(key, Arc::clone(&made));
    Ok(jpeg(made.to_vec()))
}

/// A frame's JPEG as stored.
async fn frame(
    State(state): State<Arc<AppState>>,
    Path(n): Path<usize>,
    Query(q): Query<FrameQuery>,
) -> std::result::Result<Response, HttpError> {
    let served = frame_of(&state, n, &q)?;
    let bytes = blocking(move || {
        served
            .dir
            .reader_for(&q.id)
            .and_then(|r| r.frame(&q.id, q.frame))
            .map(|f| f.into_owned())
            .map_err(HttpError::data)
    })
    .await?;
    Ok(jpeg(bytes))
}

async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css")], crate::html::STYLE).into_response()
}

async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript")],
        crate::html::SCRIPT,
    )
        .into_response()
}
