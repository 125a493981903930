//! `gulp serve`: a read-only gallery of gulp directories in the browser.
//!
//! One [`App`] serves one or more directories (local or `s3://`, through the
//! node cache) with pages built from each directory's index, never from
//! every meta at once:
//!
//! - `/` — the overview: items, frames, chunks, classes, frame sizes, the
//!   `gulp check` state and a lint report;
//! - `/d/N/items` — the grid of directory `N`: paged, filtered (class, id
//!   prefix, meta key and value) and sorted, every view a shareable URL;
//! - `/d/N/item?id=ID` — one item: film strip, player, meta, frame sizes,
//!   the same id in the other directories; an item with sound plays it,
//!   its frames in step (`/d/N/audio?id=ID`, a WAV file);
//! - `/d/N/model` — what the model sees: one batch of a
//!   [`gulp_loader::Loader`] configured in the page, the crop of each clip
//!   drawn on its source frames.
//!
//! Nothing a request names is a file path: a directory is a number in the
//! list given at start, an item an id looked up in that directory's index,
//! and the page assets are compiled in.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use gulp_serve::{App, Options};
//! let app = App::open(Options::new(vec!["data/train".into(), "data/val".into()]))?;
//! gulp_serve::run(app, "127.0.0.1:8000".parse()?, |addr| println!("http://{addr}/"))?;
//! # Ok(())
//! # }
//! ```
// On docs.rs, items behind a cargo feature say which (`--cfg docsrs`).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_code)]

mod app;
mod error;
mod html;
mod model_view;
mod pages;
mod served;
mod sound;
mod state;
mod thumbs;

pub use crate::app::{App, Options, run, serve};
pub use crate::error::{Error, Result};
