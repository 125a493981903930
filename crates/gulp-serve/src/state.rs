//! What every request shares, and how handlers run blocking work.

use std::path::PathBuf;
use std::sync::Arc;

use gulp_io::DirectoryOptions;

use crate::error::HttpError;
use crate::served::Served;
use crate::thumbs::ThumbCache;

/// The served directories and what every request shares.
pub(crate) struct AppState {
    pub dirs: Vec<Arc<Served>>,
    pub lint: Option<(PathBuf, String)>,
    pub thumbs: ThumbCache,
    /// How the loader of "what the model sees" opens a directory.
    pub open: DirectoryOptions,
}

impl AppState {
    /// Directory `n` of the command line.
    pub(crate) fn dir(&self, n: usize) -> std::result::Result<&Arc<Served>, HttpError> {
        self.dirs
            .get(n)
            .ok_or_else(|| HttpError::not_found(format!("no directory {n}")))
    }
}

/// Runs `work` on the blocking pool: reading and decoding never hold the
/// runtime's workers.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> std::result::Result<T, HttpError> + Send + 'static,
) -> std::result::Result<T, HttpError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| HttpError::data(format!("the request failed: {e}")))?
}
