//! The sources a loader reads from their directories' index files.

use std::sync::Arc;

use gulp_format::DirIndex;

/// A source read from its directory's index file: its samples are the
/// index's items in order, or those of `kept` (a subset, in increasing
/// order: 4 bytes a sample kept).
#[derive(Debug, Clone)]
pub(crate) struct IndexedSource {
    /// Its first sample.
    pub(crate) first: usize,
    pub(crate) index: Arc<DirIndex>,
    pub(crate) kept: Option<Arc<[u32]>>,
}

impl IndexedSource {
    /// Its number of samples.
    pub(crate) fn len(&self) -> usize {
        self.kept.as_ref().map_or(self.index.len(), |k| k.len())
    }

    /// The item in the index of its sample `local`.
    pub(crate) fn item(&self, local: usize) -> usize {
        self.kept.as_ref().map_or(local, |k| k[local] as usize)
    }
}
