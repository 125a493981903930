//! One served directory: its items by position (from the index read at
//! opening), and what a background scan of the metas adds — each item's
//! class, the JPEG sizes, the `gulp check` state — chunk by chunk, so that
//! no page waits for it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use gulp_codec::Codec;
use gulp_format::Value;
use gulp_io::{GulpDirectory, LabelIndex};

/// No class: the item's meta has no label.
pub(crate) const NO_CLASS: u32 = u32::MAX;

/// A served directory.
pub(crate) struct Served {
    /// As given on the command line.
    pub name: String,
    pub dir: GulpDirectory,
    /// Position of the first item of each chunk, then the item count.
    pub starts: Vec<usize>,
    /// Each chunk's data file size (its listing's for an object), if known.
    pub chunk_bytes: Vec<u64>,
    /// The directory's `label2idx.json`.
    pub labels: Option<LabelIndex>,
    /// The meta key holding an item's class.
    pub label_key: String,
    pub scan: RwLock<Scan>,
    /// Item positions sorted by id, made on first use.
    pub by_id: OnceLock<Vec<u32>>,
    /// Item positions sorted by frame count, made on first use.
    pub by_frames: OnceLock<Vec<u32>>,
}

/// What the background scan has found so far.
#[derive(Default)]
pub(crate) struct Scan {
    /// Chunks scanned (in order): `class_of` covers their items.
    pub chunks_done: usize,
    /// Class of each item scanned, by position.
    pub class_of: Vec<u32>,
    pub class_names: Vec<String>,
    pub class_counts: Vec<usize>,
    class_ids: HashMap<String, u32>,
    /// JPEG bytes per frame, by power of two (`2^k <= bytes < 2^(k+1)`).
    pub frame_bytes: Vec<usize>,
    /// Pixel sizes of the first frame of each chunk's first item.
    pub frame_dims: HashMap<(usize, usize), usize>,
    /// Metas that could not be read.
    pub errors: Vec<String>,
    /// `gulp check`: `None` until it has run (after the metas).
    pub check: Option<Check>,
}

/// The outcome of `gulp check` (structure and CRCs, no decoding).
pub(crate) enum Check {
    /// Not run: the directory is in an object store.
    Remote,
    Clean,
    Problems(Vec<String>),
    Failed(String),
}

/// Text of a label as the grid shows and filters it.
pub(crate) fn label_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => other
            .as_i64()
            .map(|i| i.to_string())
            .or_else(|| other.as_f64().map(|f| f.to_string())),
    }
}

impl Served {
    pub(crate) fn new(name: String, dir: GulpDirectory, label_key: String) -> Served {
        let mut starts = Vec::with_capacity(dir.chunks().len() + 1);
        let mut at = 0;
        for chunk in dir.chunks() {
            starts.push(at);
            at += chunk.len();
        }
        starts.push(at);
        let chunk_bytes = dir
            .chunks()
            .iter()
            .filter_map(|c| {
                c.data_size()
                    .or_else(|| std::fs::metadata(&c.data_path).ok().map(|m| m.len()))
            })
            .collect();
        // A damaged label file is shown by `gulp info`; here it only
        // means no class index of the directory's own.
        let labels = dir.labels().ok().flatten();
        Served {
            name,
            dir,
            starts,
            chunk_bytes,
            labels,
            label_key,
            scan: RwLock::new(Scan::default()),
            by_id: OnceLock::new(),
            by_frames: OnceLock::new(),
        }
    }

    /// Number of items.
    pub(crate) fn len(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    /// The chunk and position in it of the item at `pos`.
    pub(crate) fn locate(&self, pos: usize) -> Option<(usize, usize)> {
        if pos >= self.len() {
            return None;
        }
        let chunk = self.starts.partition_point(|&s| s <= pos) - 1;
        Some((chunk, pos - self.starts[chunk]))
    }

    /// The id and frame count of the item at `pos`.
    pub(crate) fn item_at(&self, pos: usize) -> Option<(&str, u64)> {
        let (chunk, k) = self.locate(pos)?;
        let index = self.dir.chunks()[chunk].index();
        Some((index.id(k)?, index.item_frames(k)?))
    }

    pub(crate) fn read_scan(&self) -> std::sync::RwLockReadGuard<'_, Scan> {
        self.scan.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Item positions in the order `key` asks (`id` or `frames`).
    pub(crate) fn sorted(&self, key: &str) -> &[u32] {
        let cell = if key == "id" {
            &self.by_id
        } else {
            &self.by_frames
        };
        cell.get_or_init(|| {
            let mut order: Vec<u32> = (0..self.len())
                .map(|p| u32::try_from(p).unwrap_or(u32::MAX))
                .collect();
            if key == "id" {
                let ids: Vec<&str> = self.dir.ids().collect();
                order.sort_unstable_by(|&a, &b| ids[a as usize].cmp(ids[b as usize]));
            } else {
                let frames: Vec<u64> = self
                    .dir
                    .chunks()
                    .iter()
                    .flat_map(|c| c.index().iter().map(|(_, n)| n))
                    .collect();
                order.sort_by_key(|&p| frames[p as usize]);
            }
            order
        })
    }

    /// Reads every chunk's meta in order (not kept), adding classes and
    /// frame sizes to the scan as each chunk is done; then checks the
    /// directory. Runs on a thread of its own; `stop` ends it early.
    pub(crate) fn run_scan(self: &Arc<Self>, stop: &AtomicBool) {
        for (k, chunk) in self.dir.chunks().iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let mut classes = Vec::with_capacity(chunk.len());
            let mut bytes: Vec<u64> = Vec::new();
            let mut error = None;
            match chunk.read_meta() {
                Ok(meta) => {
                    for (_, item) in meta.iter() {
                        let label = item
                            .first_meta_data()
                            .and_then(|m| m.get(&self.label_key))
                            .and_then(label_text);
                        classes.push(label);
                        bytes.extend(item.frame_info.iter().filter_map(|fi| fi.jpeg_len()));
                    }
                }
                Err(e) => {
                    error = Some(e.to_string());
                    classes.resize(chunk.len(), None);
                }
            }
            // The pixel size of one frame per chunk (a local chunk only: a
            // remote one would be fetched whole for it).
            let dims = (!chunk.is_remote() && !chunk.is_empty())
                .then(|| self.first_frame_dims(k, chunk.ids().next().unwrap_or_default()))
                .flatten();
            let mut scan = self.scan.write().unwrap_or_else(PoisonError::into_inner);
            let scan = &mut *scan;
            for label in classes {
                let class = match label {
                    None => NO_CLASS,
                    Some(name) => {
                        let next = u32::try_from(scan.class_names.len()).unwrap_or(NO_CLASS);
                        let id = *scan.class_ids.entry(name.clone()).or_insert(next);
                        if id == next {
                            scan.class_names.push(name);
                            scan.class_counts.push(0);
                        }
                        if let Some(count) = scan.class_counts.get_mut(id as usize) {
                            *count += 1;
                        }
                        id
                    }
                };
                scan.class_of.push(class);
            }
            for b in bytes {
                let bucket = (63 - b.max(1).leading_zeros()) as usize;
                if scan.frame_bytes.len() <= bucket {
                    scan.frame_bytes.resize(bucket + 1, 0);
                }
                scan.frame_bytes[bucket] += 1;
            }
            if let Some(d) = dims {
                *scan.frame_dims.entry(d).or_default() += 1;
            }
            if let Some(e) = error {
                scan.errors.push(e);
            }
            scan.chunks_done = k + 1;
        }
        let check = self.check();
        self.scan
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .check = Some(check);
    }

    fn first_frame_dims(&self, chunk: usize, id: &str) -> Option<(usize, usize)> {
        let reader = self.dir.reader(chunk).ok()?;
        let jpeg = reader.frame(id, 0).ok()?;
        let header = gulp_codec::read_header(&jpeg, Codec::default()).ok()?;
        Some((header.width, header.height))
    }

    fn check(&self) -> Check {
        if gulp_store::is_remote(self.dir.path()) {
            return Check::Remote;
        }
        let options = gulp_io::check::Options {
            decode: false,
            threads: 1,
        };
        match gulp_io::check::check_directory(self.dir.path(), options, &|_| {}) {
            Ok(report) if report.is_clean() => Check::Clean,
            Ok(report) => Check::Problems(report.problems.iter().map(|p| p.to_string()).collect()),
            Err(e) => Check::Failed(e.to_string()),
        }
    }
}
