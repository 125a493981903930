//! What a loader knows of its data, read once when it is made: the items it
//! keeps from each source (ids, subsets), their frame records, the samples
//! (an item, or one segment of an item), each sample's target and weight,
//! and the epoch's composition. Each chunk's meta is parsed, read for these
//! and dropped: a rank keeps 12 bytes a frame, 24 an item, 4 to 8 a
//! sample's target and, with segments, 16 a segment.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use gulp_format::{DirIndex, NO_LABEL, Value};
use gulp_io::{ChunkReader, GulpDirectory, LABEL_FILE, LabelIndex};

use crate::compose::{Composition, Draw, Sampler};
use crate::error::{Error, Result};
use crate::fingerprint::Fnv;
use crate::frames::FrameTable;
use crate::indexed::IndexedSource;
use crate::options::LoaderOptions;
use crate::source::{Amount, ItemFilter, ItemWeights, Source};
use crate::targets::{LabelSpace, OnMissing, Problem, Target, TargetTable};

/// One source's directory and its data files.
#[derive(Debug)]
pub(crate) struct Dir {
    pub(crate) dir: GulpDirectory,
    /// Per chunk, its data file (opened on first use, without its meta;
    /// from a node cache, dropped after its last use in a pass).
    readers: Vec<Mutex<Option<Arc<ChunkReader>>>>,
    /// Per chunk, whether the pass reads it by ranges through the node
    /// cache rather than whole (set when a pass is scheduled).
    ranged: Vec<AtomicBool>,
}

/// A chunk of one of the loader's sources: (source, chunk index).
pub(crate) type ChunkKey = (u32, u32);

/// An item: 24 bytes (its id is the directory index's, by place).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Item {
    pub(crate) source: u32,
    pub(crate) chunk: u32,
    /// Its place in its chunk's meta.
    pub(crate) slot: u32,
    pub(crate) frames: u32,
    /// Its first record in the loader's [`FrameTable`] (with an index file,
    /// its first frame in the file).
    pub(crate) first: usize,
}

/// A segment of an item: 16 bytes.
#[derive(Debug, Clone, Copy)]
struct Span {
    item: u32,
    start: u32,
    end: u32,
    /// Its place in the item's list of segments.
    segment: u32,
}

/// The fingerprints of what a loader read, for [`crate::State`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Fingerprints {
    pub(crate) sources: u64,
    pub(crate) subset: u64,
    pub(crate) weights: u64,
    pub(crate) targets: u64,
}

#[derive(Debug)]
pub(crate) struct Catalog {
    pub(crate) dirs: Vec<Dir>,
    items: Vec<Item>,
    /// Every item's records.
    frames: FrameTable,
    /// With every source read from its directory's index file (see
    /// [`read_indexed`]). `items` and `frames` are then empty: a rank holds
    /// nothing per item, or 4 bytes an item kept of a subset.
    indexed: Option<Vec<IndexedSource>>,
    /// A sample's item and frames, when samples are segments; else sample
    /// `k` is item `k`, all its frames.
    spans: Option<Vec<Span>>,
    pub(crate) targets: TargetTable,
    pub(crate) composition: Composition,
    /// Each source's label index, for targets read per batch.
    pub(crate) spaces: Vec<LabelSpace>,
    /// Samples left out for a missing or unusable value
    /// ([`OnMissing::Skip`]).
    pub(crate) missing: usize,
    pub(crate) fingerprints: Fingerprints,
}

impl Catalog {
    /// The id of `item`, as its directory's index holds it.
    pub(crate) fn id(&self, item: &Item) -> &str {
        self.dirs[item.source as usize].dir.chunks()[item.chunk as usize]
            .index()
            .id(item.slot as usize)
            .unwrap_or_default()
    }

    /// The number of items the loader keeps.
    pub(crate) fn n_items(&self) -> usize {
        match &self.indexed {
            Some(parts) => parts.iter().map(IndexedSource::len).sum(),
            None => self.items.len(),
        }
    }

    /// Whether the items are read from index files.
    pub(crate) fn is_indexed(&self) -> bool {
        self.indexed.is_some()
    }

    /// Record `k` of `item`'s frames.
    pub(crate) fn frame(&self, item: &Item, k: usize) -> gulp_format::FrameInfo {
        match &self.indexed {
            Some(parts) => parts[item.source as usize]
                .index
                .record((item.first + k) as u64),
            None => self.frames.get(item.first + k),
        }
    }

    /// The data file of `item`'s chunk.
    pub(crate) fn reader(&self, item: &Item) -> Result<Arc<ChunkReader>> {
        self.reader_of((item.source, item.chunk))
    }

    /// The data file of chunk `key`, opened if it is not (from a node
    /// cache, fetched first if missing: a thread that wants a chunk being
    /// opened waits for it).
    pub(crate) fn reader_of(&self, (source, chunk): ChunkKey) -> Result<Arc<ChunkReader>> {
        let dir = &self.dirs[source as usize];
        let mut cell = dir.readers[chunk as usize]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(reader) = &*cell {
            return Ok(Arc::clone(reader));
        }
        let entry = &dir.dir.chunks()[chunk as usize];
        let mode = dir.dir.read_mode();
        let reader = Arc::new(if dir.ranged[chunk as usize].load(Ordering::Relaxed) {
            entry.range_reader(mode)?
        } else {
            entry.whole_reader(mode)?
        });
        *cell = Some(Arc::clone(&reader));
        Ok(reader)
    }

    /// Decides, for a pass, whether chunk `key` is read by ranges (the
    /// directory's fetch policy, [`gulp_store::CacheFetch`]), and whether it
    /// is to be made whole behind the passes
    /// ([`gulp_io::ChunkEntry::fill_pending`]): `(ranged, fill)`. A chunk
    /// the policy wants whole but the cache does not hold whole yet is read
    /// by ranges, and made whole apart ([`Self::fill`]).
    pub(crate) fn plan_ranges(&self, (source, chunk): ChunkKey) -> (bool, bool) {
        let dir = &self.dirs[source as usize];
        let entry = &dir.dir.chunks()[chunk as usize];
        let fill = entry.fill_pending();
        let ranged = fill || !entry.fetches_whole();
        dir.ranged[chunk as usize].store(ranged, Ordering::Relaxed);
        (ranged, fill)
    }

    /// Fetches into the node cache the frames `frames` (indices into the
    /// item's records) of `item` that it does not hold, when the pass
    /// reads its chunk by ranges; the bytes fetched.
    pub(crate) fn fetch_frames(&self, item: &Item, frames: &[usize]) -> Result<u64> {
        let records: Vec<(usize, gulp_format::FrameInfo)> =
            frames.iter().map(|&k| (k, self.frame(item, k))).collect();
        Ok(self.reader(item)?.fetch_records(self.id(item), &records)?)
    }

    /// Whether the pass reads chunk `key` by ranges.
    pub(crate) fn reads_ranges(&self, (source, chunk): ChunkKey) -> bool {
        self.dirs[source as usize].ranged[chunk as usize].load(Ordering::Relaxed)
    }

    /// Opens chunk `key` from the node cache, fetching it into the cache
    /// if needed: `false` when the cache has no room for it now.
    pub(crate) fn prefetch(&self, (source, chunk): ChunkKey) -> Result<bool> {
        let dir = &self.dirs[source as usize];
        let mut cell = dir.readers[chunk as usize]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if cell.is_some() {
            return Ok(true);
        }
        let entry = &dir.dir.chunks()[chunk as usize];
        match entry.cached_data_reader(dir.dir.read_mode())? {
            Some(reader) => {
                *cell = Some(Arc::new(reader));
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Fetches chunk `key` whole into the node cache without holding it
    /// open (what the next pass opens first): `false` when the cache has
    /// no room for it now.
    pub(crate) fn warm(&self, (source, chunk): ChunkKey) -> Result<bool> {
        let dir = &self.dirs[source as usize];
        let entry = &dir.dir.chunks()[chunk as usize];
        Ok(entry.cached_data_reader(dir.dir.read_mode())?.is_some())
    }

    /// Makes chunk `key`'s data object whole in the node cache (its missing
    /// bytes fetched): `false` when the cache has no room for it now. A
    /// chunk the pass has open is then read from the whole copy for the
    /// rest of the pass (its clips' ranges are no longer fetched).
    pub(crate) fn fill(&self, (source, chunk): ChunkKey) -> Result<bool> {
        let dir = &self.dirs[source as usize];
        let entry = &dir.dir.chunks()[chunk as usize];
        let Some(whole) = entry.cached_data_reader(dir.dir.read_mode())? else {
            return Ok(false);
        };
        let mut cell = dir.readers[chunk as usize]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if cell.is_some() {
            *cell = Some(Arc::new(whole));
        }
        Ok(true)
    }

    /// Drops the loader's hold on chunk `key`'s data file: from a node
    /// cache, it may then be evicted once the batches using it are done.
    pub(crate) fn release(&self, (source, chunk): ChunkKey) {
        let dir = &self.dirs[source as usize];
        *dir.readers[chunk as usize]
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Whether source `source` is read through a node cache (its chunks
    /// are then fetched ahead and released after use).
    pub(crate) fn is_cached(&self, source: u32) -> bool {
        self.dirs[source as usize].dir.cache_dir().is_some()
    }

    /// The size of chunk `key`'s data object (0 for a local file).
    pub(crate) fn chunk_size(&self, (source, chunk): ChunkKey) -> u64 {
        self.dirs[source as usize].dir.chunks()[chunk as usize]
            .data_size()
            .unwrap_or(0)
    }

    /// The bytes of chunks a loader may hold ahead of its batches: half the
    /// smallest node cache's limit (the rest for the chunks in use and the
    /// other processes of the node); `None` without a limit.
    pub(crate) fn cache_budget(&self) -> Option<u64> {
        self.dirs
            .iter()
            .filter_map(|d| d.dir.cache_limit())
            .min()
            .map(|limit| limit / 2)
    }

    /// The meta of `item`, parsed alone ([`gulp_io::ChunkEntry::read_item`]):
    /// its frame times, sound and keys, when a batch needs them.
    pub(crate) fn item_meta(&self, item: &Item) -> Result<gulp_format::ItemMeta> {
        let dir = &self.dirs[item.source as usize].dir;
        Ok(dir.chunks()[item.chunk as usize].read_item(item.slot as usize)?)
    }

    /// The place of sample `sample`'s segment in its item's list, when
    /// samples are segments.
    pub(crate) fn segment(&self, sample: usize) -> Option<usize> {
        self.spans
            .as_ref()
            .map(|spans| spans[sample].segment as usize)
    }

    /// The chunk sample `sample` is read from.
    pub(crate) fn chunk_of(&self, sample: usize) -> ChunkKey {
        let (item, _, _) = self.sample(sample);
        (item.source, item.chunk)
    }

    /// Sample `sample`'s item and frames `start..end`.
    pub(crate) fn sample(&self, sample: usize) -> (Item, usize, usize) {
        if let Some(parts) = &self.indexed {
            let source = parts.partition_point(|p| p.first <= sample) - 1;
            let part = &parts[source];
            let index = &part.index;
            let global = part.item(sample - part.first);
            let chunk = index.chunk_of(global);
            let frames = index.frames(global);
            #[allow(clippy::cast_possible_truncation)] // < 2^32 each, checked when made
            let item = Item {
                source: source as u32,
                chunk: chunk as u32,
                slot: (global - index.chunk_items(chunk).start) as u32,
                frames: (frames.end - frames.start) as u32,
                first: frames.start as usize,
            };
            return (item, 0, item.frames as usize);
        }
        match &self.spans {
            Some(spans) => {
                let s = spans[sample];
                (
                    self.items[s.item as usize],
                    s.start as usize,
                    s.end as usize,
                )
            }
            None => {
                let item = self.items[sample];
                (item, 0, item.frames as usize)
            }
        }
    }

    /// Reads every source.
    pub(crate) fn open(sources: &[Source], options: &LoaderOptions) -> Result<Catalog> {
        if sources.is_empty() {
            return Err(Error::Config("a loader needs at least one source".into()));
        }
        let dirs = sources
            .iter()
            .map(|s| options.open.open(&s.path))
            .collect::<Result<Vec<_>, _>>()?;
        let spaces = label_spaces(sources, &dirs, options)?;
        let Read {
            items,
            frames,
            spans,
            targets,
            weights,
            missing,
            subset,
            sizes,
            firsts,
            indexed,
        } = match read_indexed(sources, &dirs, options, &spaces)? {
            Some(read) => read,
            None => read_metas(sources, &dirs, options, &spaces)?,
        };
        let mut catalog = Catalog {
            dirs: dirs
                .into_iter()
                .map(|dir| Dir {
                    readers: (0..dir.chunks().len()).map(|_| Mutex::new(None)).collect(),
                    ranged: (0..dir.chunks().len())
                        .map(|_| AtomicBool::new(false))
                        .collect(),
                    dir,
                })
                .collect(),
            items,
            frames,
            indexed,
            spans,
            targets,
            // Set below: the draws need the classes of the samples read.
            composition: Composition::new(&[], &[], Vec::new(), None)?,
            spaces: spaces.clone(),
            missing,
            fingerprints: Fingerprints::default(),
        };
        let draws = catalog.draws(sources, options, &firsts, &sizes, weights.as_deref())?;
        let amounts: Vec<Amount> = sources.iter().map(|s| s.amount).collect();
        catalog.composition = Composition::new(&amounts, &sizes, draws, options.samples_per_epoch)?;
        catalog.fingerprints = Fingerprints {
            sources: Fnv::of_debug(&(
                &amounts,
                &sizes,
                catalog.composition.counts().collect::<Vec<_>>(),
                options.sampler,
                options.samples_per_epoch,
                &options.segments,
                options.shared_labels,
            )),
            subset: subset.finish(),
            weights: weights.map_or(0, |w| {
                let mut h = Fnv::default();
                w.iter().for_each(|x| h.write_u64(x.to_bits()));
                h.finish()
            }),
            targets: catalog.targets.fingerprint(),
        };
        Ok(catalog)
    }

    /// How each source draws its samples.
    fn draws(
        &self,
        sources: &[Source],
        options: &LoaderOptions,
        firsts: &[usize],
        sizes: &[u32],
        weights: Option<&[f64]>,
    ) -> Result<Vec<Draw>> {
        let mut draws = Vec::with_capacity(sources.len());
        for (k, source) in sources.iter().enumerate() {
            let range = firsts[k]..firsts[k] + sizes[k] as usize;
            draws.push(match (options.sampler, weights) {
                (Sampler::Balanced, Some(_)) => {
                    return Err(Error::Config(
                        "balanced sampling and per-item weights exclude each other".into(),
                    ));
                }
                (Sampler::Balanced, None) => Draw::Balanced(self.classes(range, options)?),
                (Sampler::Uniform, Some(w)) if source.weights.is_some() => {
                    let part = &w[range];
                    if part.iter().sum::<f64>() <= 0.0 && !part.is_empty() {
                        return Err(Error::Config(format!(
                            "{}: every item's weight is 0",
                            source.path.display()
                        )));
                    }
                    Draw::Weighted(part.to_vec())
                }
                (Sampler::Uniform, _) => Draw::Uniform,
            });
        }
        Ok(draws)
    }

    /// The samples of `range` grouped by class (local indices), classes in
    /// increasing order.
    fn classes(
        &self,
        range: std::ops::Range<usize>,
        options: &LoaderOptions,
    ) -> Result<Vec<Vec<u32>>> {
        if !self.targets.is_class() {
            return Err(Error::Config(
                "balanced sampling needs one class per sample: the default label or a single \
                 key as the target"
                    .into(),
            ));
        }
        let mut classes: BTreeMap<i64, Vec<u32>> = BTreeMap::new();
        let base = range.start;
        for sample in range {
            let class = self.targets.class_of(sample).unwrap_or(-1);
            if class < 0 {
                let (item, _, _) = self.sample(sample);
                return Err(Error::Meta {
                    path: self.dirs[item.source as usize].dir.path().to_owned(),
                    id: self.id(&item).to_owned(),
                    key: self.targets.key_name(&options.labels.key),
                    reason: "balanced sampling needs a class for every sample".into(),
                });
            }
            #[allow(clippy::cast_possible_truncation)] // the source has < 2^32 samples
            classes
                .entry(class)
                .or_default()
                .push((sample - base) as u32);
        }
        Ok(classes.into_values().collect())
    }
}

/// What reading the sources gave.
struct Read {
    items: Vec<Item>,
    frames: FrameTable,
    spans: Option<Vec<Span>>,
    targets: TargetTable,
    weights: Option<Vec<f64>>,
    missing: usize,
    subset: Fnv,
    /// Each source's number of samples.
    sizes: Vec<u32>,
    /// Each source's first sample.
    firsts: Vec<usize>,
    indexed: Option<Vec<IndexedSource>>,
}

/// Reads every source's items from its chunks' meta files, parsing each
/// meta and keeping what the loader needs.
fn read_metas(
    sources: &[Source],
    dirs: &[GulpDirectory],
    options: &LoaderOptions,
    spaces: &[LabelSpace],
) -> Result<Read> {
    let mut builder = Builder {
        options,
        items: Vec::with_capacity(dirs.iter().map(GulpDirectory::len).sum()),
        frames: FrameTable::with_capacity(dirs.iter().map(GulpDirectory::n_frames).sum()),
        spans: options.segments.as_ref().map(|_| Vec::new()),
        targets: TargetTable::new(&options.target),
        weights: sources.iter().any(|s| s.weights.is_some()).then(Vec::new),
        samples: 0,
        missing: 0,
        subset: Fnv::default(),
    };
    if options.segments.is_none() {
        builder.targets.reserve(builder.items.capacity());
    }
    let mut sizes = Vec::with_capacity(sources.len());
    let mut firsts = Vec::with_capacity(sources.len());
    for (k, (source, dir)) in sources.iter().zip(dirs).enumerate() {
        let first = builder.samples;
        builder.source(k, source, dir, &spaces[k])?;
        firsts.push(first);
        sizes.push(samples_u32(source, builder.samples - first)?);
    }
    let Builder {
        mut items,
        mut frames,
        mut spans,
        mut targets,
        weights,
        missing,
        subset,
        ..
    } = builder;
    items.shrink_to_fit();
    frames.shrink();
    targets.shrink();
    if let Some(spans) = &mut spans {
        spans.shrink_to_fit();
    }
    Ok(Read {
        items,
        frames,
        spans,
        targets,
        weights,
        missing,
        subset,
        sizes,
        firsts,
        indexed: None,
    })
}

fn samples_u32(source: &Source, n: usize) -> Result<u32> {
    u32::try_from(n)
        .map_err(|_| Error::Config(format!("{}: more than 2^32 samples", source.path.display())))
}

/// Reads the sources from their directories' index files, when every one
/// has a fresh one and what the loader asks of the metas is in it: the
/// default target read from the index's label key (every label value
/// numbered), no segments, and for each source at most an id list, a
/// [`Predicate`](crate::Predicate) on the label key and
/// [`WeightColumn`](crate::WeightColumn) weights on it (both evaluated once
/// per label value). Nothing is then held per item, or 4 bytes an item kept
/// of a subset, the items' frames and targets read from the files that
/// every process of the node maps. `None` when the sources must be read
/// from their meta files (also for any error those would report, so that
/// it is theirs); the samples, targets, weights and fingerprints are those
/// [`read_metas`] gives.
fn read_indexed(
    sources: &[Source],
    dirs: &[GulpDirectory],
    options: &LoaderOptions,
    spaces: &[LabelSpace],
) -> Result<Option<Read>> {
    let Some(lazy) = indexed_targets(options) else {
        return Ok(None);
    };
    let mut parts = Vec::with_capacity(sources.len());
    let mut classes = Vec::with_capacity(sources.len());
    let mut code_weights = Vec::with_capacity(sources.len());
    for ((source, dir), space) in sources.iter().zip(dirs).zip(spaces) {
        let Some(index) = dir.index_file() else {
            return Ok(None);
        };
        if !index.labels_exact()
            || !index.all_have_frames()
            || index.label_key() != gulp_io::LABEL_KEY
            || u32::try_from(index.len()).is_err()
        {
            return Ok(None);
        }
        let values = index.label_values();
        // Each label value's class, as the meta path numbers it; a value
        // that is a problem there (not in the label index) is left to it.
        let mut of_code = Vec::with_capacity(values.len());
        for value in &values {
            match space.class(gulp_io::LABEL_KEY, Some(value)) {
                Ok(class) => of_code.push(class.unwrap_or(-1)),
                // The label is not the target: its classes are not needed.
                Err(_) if lazy => of_code.push(-1),
                Err(_) => return Ok(None),
            }
        }
        let Some(by_code) = LabelCodes::of(source, index, &values) else {
            return Ok(None);
        };
        if (0..index.len())
            .any(|i| index.frames(i).end - index.frames(i).start > u64::from(u32::MAX))
        {
            return Ok(None);
        }
        let Some((kept, item_weights)) = by_code.items(source, index) else {
            return Ok(None);
        };
        parts.push((Arc::clone(index), kept));
        classes.push(of_code);
        code_weights.push(item_weights);
    }
    let mut subset = Fnv::default();
    let mut sizes = Vec::with_capacity(sources.len());
    let mut firsts = Vec::with_capacity(sources.len());
    let mut weights = sources.iter().any(|s| s.weights.is_some()).then(Vec::new);
    let mut indexed = Vec::with_capacity(sources.len());
    let mut samples = 0;
    for (k, (source, ((index, kept), item_weights))) in sources
        .iter()
        .zip(parts.into_iter().zip(code_weights))
        .enumerate()
    {
        let part = IndexedSource {
            first: samples,
            index,
            kept: kept.map(Arc::from),
        };
        subset.write_str(&format!("source {k}"));
        for local in 0..part.len() {
            subset.write_str(part.index.id(part.item(local)));
        }
        if let Some(weights) = &mut weights {
            match item_weights {
                Some(w) => weights.extend(w),
                None => weights.extend(std::iter::repeat_n(1.0, part.len())),
            }
        }
        firsts.push(samples);
        sizes.push(samples_u32(source, part.len())?);
        samples += part.len();
        indexed.push(part);
    }
    let coded = indexed.iter().cloned().zip(classes).collect();
    Ok(Some(Read {
        items: Vec::new(),
        frames: FrameTable::default(),
        spans: None,
        targets: if lazy {
            TargetTable::lazy(&options.target)
        } else {
            TargetTable::coded(&options.target, coded)
        },
        weights,
        missing: 0,
        subset,
        sizes,
        firsts,
        indexed: Some(indexed),
    }))
}

/// Whether the loader's options let it read index files (no segments, the
/// index's label key), and then whether the target is read from each
/// sample's item when its batch is made rather than from every meta file
/// when the loader opens: a target on meta keys (not a function), drawn
/// uniformly (balanced sampling needs every class first) and an error when
/// missing (skipping needs to know first). The label is read from the
/// index.
fn indexed_targets(options: &LoaderOptions) -> Option<bool> {
    if options.segments.is_some() || options.labels.key != gulp_io::LABEL_KEY {
        return None;
    }
    let lazy = matches!(
        options.target,
        Target::Key(_)
            | Target::Keys(_)
            | Target::Float(_)
            | Target::Floats(_)
            | Target::MultiHot { .. }
    ) && options.sampler == Sampler::Uniform
        && options.on_missing == OnMissing::Raise;
    (lazy || matches!(options.target, Target::Label)).then_some(lazy)
}

/// A source's filter and weights as functions of an index's label codes,
/// each evaluated once per label value (the last entry for items without
/// one); `None` for a value whose evaluation fails or gives an invalid
/// weight, which the meta path reports if an item has it.
struct LabelCodes {
    /// Whether items of each code are kept (`None`: all are).
    keep: Option<Vec<Option<bool>>>,
    /// The weight of each code's items.
    weights: Option<Vec<Option<f64>>>,
}

impl LabelCodes {
    /// `None` when the source's filter or weights read more than the label
    /// key or are functions.
    fn of(source: &Source, index: &DirIndex, values: &[Value]) -> Option<LabelCodes> {
        let key = index.label_key();
        // The meta of an item with each label value, then of one without.
        let metas: Vec<Value> = values
            .iter()
            .map(|v| {
                let mut m = gulp_format::Map::default();
                m.insert(key.to_owned(), v.clone());
                Value::Object(m)
            })
            .chain([Value::Object(gulp_format::Map::default())])
            .collect();
        let keep = match &source.filter {
            None => None,
            Some(ItemFilter::Column(p)) if p.reads_only(key) => {
                Some(metas.iter().map(|m| p.eval(m).ok()).collect())
            }
            Some(_) => return None,
        };
        let weights = match &source.weights {
            None => None,
            Some(ItemWeights::Column(c)) if c.key() == key => Some(
                metas
                    .iter()
                    .map(|m| c.eval(m).ok().filter(|w| w.is_finite() && *w >= 0.0))
                    .collect(),
            ),
            Some(_) => return None,
        };
        Some(LabelCodes { keep, weights })
    }

    /// The entry of `table` for global item `item` of `index`.
    fn of_item<T: Copy>(table: &[Option<T>], index: &DirIndex, item: usize) -> Option<T> {
        match index.label_code(item) {
            NO_LABEL => table[table.len() - 1],
            code => table[code as usize],
        }
    }

    /// The items of `index` the source keeps, in order (`None`: all of
    /// them), and their weights if it has some; `None` when an id asked for
    /// is not in the directory, or a kept item's value has no valid
    /// evaluation (the meta path reports either).
    #[allow(clippy::type_complexity)]
    fn items(
        &self,
        source: &Source,
        index: &DirIndex,
    ) -> Option<(Option<Vec<u32>>, Option<Vec<f64>>)> {
        let kept_by_code = |item: usize| match &self.keep {
            None => Some(true),
            Some(keep) => LabelCodes::of_item(keep, index, item),
        };
        #[allow(clippy::cast_possible_truncation)] // the index has < 2^32 items, checked
        let kept: Option<Vec<u32>> = match &source.ids {
            Some(ids) => {
                let mut items = Vec::with_capacity(ids.len());
                for id in ids {
                    items.push(index.find(id)? as u32);
                }
                items.sort_unstable();
                items.dedup();
                let mut kept = Vec::with_capacity(items.len());
                for i in items {
                    if kept_by_code(i as usize)? {
                        kept.push(i);
                    }
                }
                Some(kept)
            }
            None if self.keep.is_none() => None,
            None => {
                let mut kept = Vec::new();
                for i in 0..index.len() {
                    if kept_by_code(i)? {
                        kept.push(i as u32);
                    }
                }
                Some(kept)
            }
        };
        let weights = match &self.weights {
            None => None,
            Some(table) => {
                let of = |i: usize| LabelCodes::of_item(table, index, i);
                Some(match &kept {
                    Some(kept) => kept
                        .iter()
                        .map(|&i| of(i as usize))
                        .collect::<Option<_>>()?,
                    None => (0..index.len()).map(of).collect::<Option<_>>()?,
                })
            }
        };
        Some((kept, weights))
    }
}

/// The label index of each source: its own (given, else the loader's, else
/// its directory's file), or one shared by all (`shared_labels`: the first
/// index's numbering, then the labels of the others not yet in it,
/// numbered after in name order).
fn label_spaces(
    sources: &[Source],
    dirs: &[GulpDirectory],
    options: &LoaderOptions,
) -> Result<Vec<LabelSpace>> {
    let mut spaces = Vec::with_capacity(sources.len());
    for (source, dir) in sources.iter().zip(dirs) {
        let given = source.labels.as_ref().or(options.labels.index.as_ref());
        spaces.push(match given {
            Some(pairs) => LabelSpace {
                index: Some(LabelIndex::from_pairs(
                    dir.path(),
                    pairs.iter().map(|(l, i)| (l.as_str(), *i)),
                )?),
                name: "the labels given".into(),
            },
            None => LabelSpace {
                index: dir.labels()?,
                name: dir.path().join(LABEL_FILE).display().to_string(),
            },
        });
    }
    if options.shared_labels && spaces.len() > 1 {
        let mut shared: Option<LabelIndex> = None;
        for index in spaces.iter().filter_map(|s| s.index.as_ref()) {
            match &mut shared {
                None => shared = Some(index.clone()),
                Some(shared) => shared.extend(index.iter().map(|(label, _)| label)),
            }
        }
        let name = format!(
            "the labels shared by the sources ({})",
            spaces
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let shared = LabelSpace {
            index: shared,
            name,
        };
        spaces = vec![shared; spaces.len()];
    }
    Ok(spaces)
}

/// The tables being filled, source after source.
struct Builder<'o> {
    options: &'o LoaderOptions,
    items: Vec<Item>,
    frames: FrameTable,
    spans: Option<Vec<Span>>,
    targets: TargetTable,
    /// Each sample's weight, when a source has weights (1 for the samples
    /// of the others).
    weights: Option<Vec<f64>>,
    samples: usize,
    missing: usize,
    /// The ids kept.
    subset: Fnv,
}

impl Builder<'_> {
    /// A problem with a sample: counted and left out
    /// ([`OnMissing::Skip`]), or the error.
    fn problem(&mut self, dir: &Path, id: &str, p: Problem) -> Result<()> {
        if p.skippable && self.options.on_missing == OnMissing::Skip {
            self.missing += 1;
            return Ok(());
        }
        Err(Error::Meta {
            path: dir.to_owned(),
            id: id.to_owned(),
            key: p.key,
            reason: p.reason,
        })
    }

    fn source(
        &mut self,
        k: usize,
        source: &Source,
        dir: &GulpDirectory,
        labels: &LabelSpace,
    ) -> Result<()> {
        let path = dir.path();
        let wanted: Option<HashSet<&str>> = source
            .ids
            .as_ref()
            .map(|ids| ids.iter().map(String::as_str).collect());
        if let Some(wanted) = &wanted {
            let mut absent: Vec<&str> = wanted
                .iter()
                .copied()
                .filter(|id| !dir.contains(id))
                .collect();
            absent.sort_unstable();
            if let Some(first) = absent.first() {
                return Err(Error::Config(format!(
                    "{}: {} of the ids asked for are not in the directory, the first {first:?}",
                    path.display(),
                    absent.len()
                )));
            }
        }
        self.subset.write_str(&format!("source {k}"));
        let null = Value::Null;
        let too_many = |id: &str, what: &str| Error::Clip {
            id: id.to_owned(),
            reason: format!("{what} out of the loader's range (in {})", path.display()),
        };
        for (chunk, entry) in dir.chunks().iter().enumerate() {
            let meta = entry.read_meta()?;
            for (slot, (id, item)) in meta.iter().enumerate() {
                if wanted.as_ref().is_some_and(|w| !w.contains(id)) {
                    continue;
                }
                let m = item.first_meta_data().unwrap_or(&null);
                if let Some(keep) = &source.filter {
                    let keep = keep.keeps(id, m).map_err(|reason| Error::Meta {
                        path: path.to_owned(),
                        id: id.to_owned(),
                        key: "where".into(),
                        reason,
                    })?;
                    if !keep {
                        continue;
                    }
                }
                if item.frame_info.is_empty() {
                    return Err(Error::Clip {
                        id: id.to_owned(),
                        reason: format!("item has no frames (in {})", path.display()),
                    });
                }
                let n = item.frame_info.len();
                let frames = u32::try_from(n).map_err(|_| too_many(id, "frames"))?;
                let index = u32::try_from(self.items.len()).map_err(|_| too_many(id, "item"))?;
                let added = self.samples_of(path, id, m, item, index, labels)?;
                if added == 0 {
                    continue;
                }
                if let Some(weights) = &mut self.weights {
                    let w = match &source.weights {
                        Some(weigh) => weigh.weigh(id, m).map_err(|reason| Error::Meta {
                            path: path.to_owned(),
                            id: id.to_owned(),
                            key: "weights".into(),
                            reason,
                        })?,
                        None => 1.0,
                    };
                    if !(w.is_finite() && w >= 0.0) {
                        return Err(Error::Meta {
                            path: path.to_owned(),
                            id: id.to_owned(),
                            key: "weights".into(),
                            reason: format!("weight {w}: weights are finite and at least 0"),
                        });
                    }
                    weights.extend(std::iter::repeat_n(w, added));
                }
                self.subset.write_str(id);
                self.samples += added;
                self.items.push(Item {
                    source: u32::try_from(k).map_err(|_| too_many(id, "source"))?,
                    chunk: u32::try_from(chunk).map_err(|_| too_many(id, "chunk"))?,
                    slot: u32::try_from(slot).map_err(|_| too_many(id, "item"))?,
                    frames,
                    first: self.frames.push_item(&item.frame_info),
                });
            }
        }
        Ok(())
    }

    /// Adds the samples of item number `index` (`id`, meta `m`, `item`'s
    /// frames and their times): itself, or each of its segments; returns
    /// how many.
    fn samples_of(
        &mut self,
        path: &Path,
        id: &str,
        m: &Value,
        item: &gulp_format::ItemMeta,
        index: u32,
        labels: &LabelSpace,
    ) -> Result<usize> {
        let (n, times) = (item.frame_info.len(), item.frame_times.as_ref());
        let key = self.options.labels.key.as_str();
        let Some(segments) = &self.options.segments else {
            return match self.targets.push(id, m, None, key, labels) {
                Ok(()) => Ok(1),
                Err(p) => self.problem(path, id, p).map(|()| 0),
            };
        };
        let (list, clock) = match segments
            .list(m)
            .and_then(|l| Ok((l, segments.clock(m, n, times)?)))
        {
            Ok(found) => found,
            Err(p) => return self.problem(path, id, p).map(|()| 0),
        };
        let mut added = 0;
        for (k, segment) in list.iter().enumerate() {
            let span = segments.span(k, segment, clock, n).and_then(|span| {
                self.targets.push(id, m, Some(segment), key, labels)?;
                Ok(span)
            });
            match span {
                Ok((start, end)) => {
                    if let Some(spans) = &mut self.spans {
                        #[allow(clippy::cast_possible_truncation)] // frames < 2^32, checked
                        spans.push(Span {
                            item: index,
                            start: start as u32,
                            end: end as u32,
                            segment: k as u32,
                        });
                    }
                    added += 1;
                }
                Err(p) => self.problem(path, id, p)?,
            }
        }
        Ok(added)
    }
}
