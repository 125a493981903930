//! Errors of opening what is served, and the HTTP answer of a bad request.

use std::path::PathBuf;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// An error of [`crate::App::open`] or of serving.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A directory could not be opened.
    #[error("{}: {source}", path.display())]
    Open {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: gulp_io::Error,
    },
    /// The lint report could not be read.
    #[error("{}: {source}", path.display())]
    Lint {
        /// The report file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Nothing to serve.
    #[error("no directory to serve")]
    NoDirectory,
    /// Binding or serving failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Result of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A request that cannot be answered: a status (4xx for the request's
/// fault) and a message shown as plain text.
#[derive(Debug)]
pub(crate) struct HttpError {
    pub status: StatusCode,
    pub message: String,
}

impl HttpError {
    pub(crate) fn not_found(message: impl Into<String>) -> HttpError {
        HttpError {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> HttpError {
        HttpError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }

    /// The data could not be read (a damaged chunk, a failing store).
    pub(crate) fn data(e: impl std::fmt::Display) -> HttpError {
        HttpError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: e.to_string(),
        }
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        (self.status, format!("{}\n", self.message)).into_response()
    }
}
