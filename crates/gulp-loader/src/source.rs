//! The directories a loader reads: each a [`Source`] with the share of an
//! epoch it gives ([`Amount`]), the subset of its items it keeps (by id, or
//! by a predicate on the meta) and, for weighted sampling, each item's
//! weight.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gulp_format::Value;

use crate::column::{Predicate, WeightColumn};
use crate::error::{Error, Result};

/// A function of an item's id and meta (`meta_data[0]`, `Null` if the item
/// has none), evaluated once per item when the loader is made, never per
/// batch. An `Err` is reported with the directory and the id.
pub type ItemFn<T> = Arc<dyn Fn(&str, &Value) -> std::result::Result<T, String> + Send + Sync>;

/// Which items a source keeps: an expression on meta keys, evaluated in
/// Rust (and per label value on an index file), or any function.
#[derive(Clone)]
pub enum ItemFilter {
    /// An expression on meta keys.
    Column(Predicate),
    /// A function of the id and meta.
    Fn(ItemFn<bool>),
}

impl ItemFilter {
    /// Whether the item `id` with meta `meta` is kept.
    pub fn keeps(&self, id: &str, meta: &Value) -> std::result::Result<bool, String> {
        match self {
            ItemFilter::Column(p) => p.eval(meta),
            ItemFilter::Fn(f) => f(id, meta),
        }
    }
}

/// Each item's sampling weight: read from a meta key, or any function.
#[derive(Clone)]
pub enum ItemWeights {
    /// From a meta key.
    Column(WeightColumn),
    /// A function of the id and meta.
    Fn(ItemFn<f64>),
}

impl ItemWeights {
    /// The weight of the item `id` with meta `meta`.
    pub fn weigh(&self, id: &str, meta: &Value) -> std::result::Result<f64, String> {
        match self {
            ItemWeights::Column(c) => c.eval(meta),
            ItemWeights::Fn(f) => f(id, meta),
        }
    }
}

/// How many samples a source gives per epoch (MosaicML Streaming's
/// `proportion`, `repeat` and `choose`). Counts are exact: an epoch holds
/// exactly the samples they say, not that many in expectation.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Amount {
    /// Every sample once.
    #[default]
    All,
    /// This share of the epoch, relative to the other sources' weights
    /// (all sources then have one). The epoch has
    /// [`LoaderOptions::samples_per_epoch`](crate::LoaderOptions::samples_per_epoch)
    /// samples, or as many as all sources together; the counts are rounded
    /// so that they add up to it.
    Weight(f64),
    /// Every sample `r` times (`round(r × samples)` in all: a fraction of a
    /// pass is a random subset, another each epoch).
    Repeat(f64),
    /// This many samples (a random subset, another each epoch; more than
    /// the source has repeats it whole first).
    Choose(usize),
}

/// One directory of a loader.
///
/// ```
/// use gulp_loader::{Amount, Source};
/// let kinetics = Source::new("/data/kinetics-gulp").amount(Amount::Weight(0.3));
/// let ssv2 = Source::new("/data/ssv2-gulp")
///     .amount(Amount::Weight(0.7))
///     .filter(|_id, meta| Ok(meta.get("template").is_some()));
/// # let _ = (kinetics, ssv2);
/// ```
#[derive(Clone)]
pub struct Source {
    /// The gulp directory.
    pub path: PathBuf,
    /// Its share of an epoch.
    pub amount: Amount,
    /// Keep only these ids (each must be in the directory).
    pub ids: Option<Vec<String>>,
    /// Keep only the items for which this is `true`.
    pub filter: Option<ItemFilter>,
    /// Each item's weight, for sampling in proportion to it (an item's
    /// segments share its weight). Weights are finite and non-negative, and
    /// not all 0.
    pub weights: Option<ItemWeights>,
    /// Label → class index of this source's string labels; `None` reads
    /// [`LoaderOptions::labels`](crate::LoaderOptions::labels), then the
    /// directory's `label2idx.json`.
    pub labels: Option<Vec<(String, i64)>>,
}

impl Source {
    /// Every item of the directory `path`, once per epoch.
    pub fn new(path: impl Into<PathBuf>) -> Source {
        Source {
            path: path.into(),
            amount: Amount::All,
            ids: None,
            filter: None,
            weights: None,
            labels: None,
        }
    }

    /// With this share of an epoch.
    #[must_use]
    pub fn amount(mut self, amount: Amount) -> Source {
        self.amount = amount;
        self
    }

    /// Keeping only the items for which `keep(id, meta)` is `true`.
    #[must_use]
    pub fn filter(
        mut self,
        keep: impl Fn(&str, &Value) -> std::result::Result<bool, String> + Send + Sync + 'static,
    ) -> Source {
        self.filter = Some(ItemFilter::Fn(Arc::new(keep)));
        self
    }

    /// Keeping only the items for which `keep` holds.
    #[must_use]
    pub fn keep(mut self, keep: Predicate) -> Source {
        self.filter = Some(ItemFilter::Column(keep));
        self
    }

    /// Sampling each item in proportion to the weight `weights` reads.
    #[must_use]
    pub fn weigh(mut self, weights: WeightColumn) -> Source {
        self.weights = Some(ItemWeights::Column(weights));
        self
    }
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source")
            .field("path", &self.path)
            .field("amount", &self.amount)
            .field("ids", &self.ids.as_ref().map(Vec::len))
            .field("filter", &self.filter.is_some())
            .field("weights", &self.weights.is_some())
            .field("labels", &self.labels.as_ref().map(Vec::len))
            .finish()
    }
}

/// The ids of a list file: one per line, surrounding blanks trimmed; empty
/// lines and lines starting with `#` are skipped.
pub fn read_ids(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Config(format!("cannot read the id list {}: {e}", path.display())))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect())
}
