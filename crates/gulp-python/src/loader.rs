//! `Loader` and `BatchIter`: the native side of `gulp.ClipLoader`.
//!
//! Batches are decoded on the loader's Rust threads while the GIL is
//! released; each batch's pixels become a numpy array that owns the Rust
//! buffer they were decoded into (no copy), so `torch.from_dlpack` or
//! `torch.from_numpy` take them as they are.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use gulp_codec::{Codec, Dct, DecodeOptions};
use gulp_format::Choice;
use gulp_format::Value;
use gulp_io::GulpDirectory;
use gulp_loader::{
    Amount, AudioOptions, Batch, Batches, Bounds, Compare, CropMode, GivenRanks, ItemFilter,
    ItemFn, ItemWeights, Labels, Launch, Launcher, Loader as RustLoader, LoaderOptions, OnError,
    OnMissing, Order, Predicate, Ranks, Sampler, Sampling, Segments, Shuffle, Source, Spatial,
    State, Target, TargetFn, TargetKeys, TargetKind, TargetValues, Targets, Unit, WeightColumn,
};
use ndarray::{Array1, Array2, Array3, Array5, ArrayD, IxDyn};
use numpy::PyArray;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::convert::{from_py, to_py};
use crate::errors::{Class, io_err};

/// A loader error as a Python exception: decoding and I/O errors keep their
/// classes, bad options are `InvalidInputError` (a `ValueError`).
pub(crate) fn loader_err(e: gulp_loader::Error) -> PyErr {
    match e {
        gulp_loader::Error::Io(e) => io_err(e),
        gulp_loader::Error::Clip { .. } => Class::Decode.err(e.to_string()),
        gulp_loader::Error::Config(_)
        | gulp_loader::Error::InvalidOption { .. }
        | gulp_loader::Error::Meta { .. }
        | gulp_loader::Error::Resample { .. }
        | gulp_loader::Error::Window { .. }
        | gulp_loader::Error::State(_) => Class::Invalid.err(e.to_string()),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The clip loader (see `gulp.ClipLoader` for the options).
#[pyclass(frozen, module = "gulp._gulp")]
pub(crate) struct Loader {
    inner: Mutex<RustLoader>,
    ranks: Ranks,
}

/// A value of an option with named values, from its name (gulp-loader's
/// and gulp-io's one list of names; its error lists them).
pub(crate) struct Named<T>(pub(crate) T);

impl<'py, T: Choice> FromPyObject<'_, 'py> for Named<T> {
    type Error = PyErr;

    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<Named<T>> {
        let text: String = ob.extract().map_err(|_| {
            Class::Invalid.err(format!(
                "{} must be one of {}, not {}",
                T::OPTION,
                gulp_format::quoted(T::NAMES),
                ob.repr().map_or_else(|_| "?".into(), |r| r.to_string())
            ))
        })?;
        T::parse_choice(&text)
            .map(Named)
            .map_err(|e| Class::Invalid.err(e.to_string()))
    }
}

/// `shuffle=`: `True` (every sample), `False` or a name of [`Shuffle`].
enum PyShuffle {
    Flag(bool),
    Named(Named<Shuffle>),
}

impl<'py> FromPyObject<'_, 'py> for PyShuffle {
    type Error = PyErr;

    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<PyShuffle> {
        if let Ok(flag) = ob.cast::<pyo3::types::PyBool>() {
            return Ok(PyShuffle::Flag(flag.is_true()));
        }
        ob.extract().map(PyShuffle::Named)
    }
}

impl PyShuffle {
    fn value(self) -> Shuffle {
        match self {
            PyShuffle::Flag(true) => Shuffle::Items,
            PyShuffle::Flag(false) => Shuffle::Off,
            PyShuffle::Named(Named(shuffle)) => shuffle,
        }
    }
}

/// `size=`: `N` (a square) or `(H, W)`.
#[derive(FromPyObject)]
enum PySize {
    Square(usize),
    Hw((usize, usize)),
}

impl PyShuffle {
    /// The shuffle, its chunk window `chunk_window=` if given.
    fn with_window(self, chunk_window: Option<usize>) -> PyResult<Shuffle> {
        self.value()
            .with_window(chunk_window)
            .map_err(|e| Class::Invalid.err(e))
    }
}

/// How the loader opens its directories: `cache_dir=`, `cache_limit=`
/// and `cache_fetch=`.
fn open_options(
    cache_dir: Option<&Bound<'_, PyAny>>,
    cache_limit: Option<&Bound<'_, PyAny>>,
    cache_fetch: Option<&str>,
) -> PyResult<gulp_io::DirectoryOptions> {
    Ok(
        GulpDirectory::options().cache_choice(crate::directory::cache_options(
            cache_dir,
            cache_limit,
            cache_fetch,
        )?),
    )
}

impl PySize {
    /// `(H, W)`.
    fn hw(self) -> (usize, usize) {
        match self {
            PySize::Square(n) => (n, n),
            PySize::Hw(hw) => hw,
        }
    }
}

/// `crop=`, with `scale=` and `ratio=` for a random resized crop.
fn crop_mode(crop: Option<Named<CropMode>>, scale: (f64, f64), ratio: (f64, f64)) -> CropMode {
    match crop.map_or(CropMode::None, |c| c.0) {
        CropMode::RandomResized { .. } => CropMode::RandomResized { scale, ratio },
        mode => mode,
    }
}

/// `dct=`, `codec=` and `strict=`.
fn decode_options(dct: Named<Dct>, codec: Option<Named<Codec>>, strict: bool) -> DecodeOptions {
    DecodeOptions {
        dct: dct.0,
        codec: codec.map_or_else(Codec::default, |c| c.0),
        strict,
        ..DecodeOptions::default()
    }
}

/// `target=`: a key, several keys, or a function of the meta.
enum PyTarget {
    Keys(TargetKeys),
    Function(Py<PyAny>),
}

impl PyTarget {
    /// The loader's target from `target=`, `target_type=` and
    /// `num_classes=`.
    fn into_target(
        target: Option<PyTarget>,
        kind: Option<Named<TargetKind>>,
        num_classes: Option<usize>,
    ) -> PyResult<Target> {
        let kind = kind.map(|t| t.0);
        match target {
            None => Target::from_keys(None, kind, num_classes),
            Some(PyTarget::Keys(keys)) => Target::from_keys(Some(keys), kind, num_classes),
            Some(PyTarget::Function(f)) => {
                Target::from_function(computed_target(f), kind, num_classes)
            }
        }
        .map_err(|e| Class::Invalid.err(e))
    }
}

impl<'py> FromPyObject<'_, 'py> for PyTarget {
    type Error = PyErr;

    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<PyTarget> {
        if let Ok(key) = ob.extract::<String>() {
            return Ok(PyTarget::Keys(TargetKeys::One(key)));
        }
        if ob.is_callable() {
            return Ok(PyTarget::Function(ob.to_owned().unbind()));
        }
        let keys = ob
            .try_iter()
            .and_then(|it| {
                it.map(|k| k.and_then(|k| Ok(k.str()?.to_string())))
                    .collect::<PyResult<Vec<String>>>()
            })
            .map_err(|_| {
                Class::Invalid.err("target is a meta key, a list of keys or a function of the meta")
            })?;
        Ok(PyTarget::Keys(TargetKeys::Many(keys)))
    }
}

/// The ranks: those given (`rank=`, `world_size=`, `local_world_size=`),
/// the rest from `torch.distributed` (the rank and world size the Python
/// side found in an initialised process group) or the launcher's
/// variables; a given value that contradicts the launcher is a
/// `UserWarning` (Python shows each once).
pub(crate) fn resolve_ranks(
    py: Python<'_>,
    (rank, world_size, local_world_size): (Option<usize>, Option<usize>, Option<usize>),
    torch: Option<(usize, usize)>,
) -> PyResult<Ranks> {
    let given = GivenRanks {
        rank,
        world_size,
        local_world_size,
    };
    let var = |k: &str| std::env::var(k).ok();
    let env = Launch::from_env(var);
    let launch = match torch {
        Some((rank, world_size)) => Some(Launch {
            launcher: Launcher::TorchDistributed,
            rank,
            world_size,
            local_world_size: env.and_then(|e| e.local_world_size),
        }),
        None => env,
    };
    let (ranks, warnings) = Ranks::resolve(given, launch, Launch::local_from_env(var));
    for warning in warnings {
        let text = std::ffi::CString::new(warning).unwrap_or_default();
        PyErr::warn(
            py,
            &py.get_type::<pyo3::exceptions::PyUserWarning>(),
            &text,
            2,
        )?;
    }
    Ok(ranks)
}

/// What the launcher's variables say of this process (torchrun's, else an
/// `srun` step's; gulp-loader's `Launch`): `(rank, world_size, ranks_from,
/// local_rank, local_rank_from, local_world_size)`, each `None` where they
/// say nothing; the `_from` values name the variables read. `gulp.torch`
/// takes a rank's GPU and the process group's ranks from it.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub(crate) fn launcher_env() -> (
    Option<usize>,
    Option<usize>,
    Option<String>,
    Option<usize>,
    Option<&'static str>,
    Option<usize>,
) {
    let var = |k: &str| std::env::var(k).ok();
    let launch = Launch::from_env(var);
    let local = Launch::local_rank_from_env(var);
    let node = Launch::local_from_env(var);
    (
        launch.map(|l| l.rank),
        launch.map(|l| l.world_size),
        launch.map(|l| l.launcher.to_string()),
        local.map(|l| l.0),
        local.map(|l| match l.1 {
            Launcher::Slurm => "SLURM_LOCALID",
            _ => "LOCAL_RANK",
        }),
        launch
            .and_then(|l| l.local_world_size)
            .or(node.map(|n| n.0)),
    )
}

/// A `gulp.Source` as the native side reads it (its attributes).
#[derive(FromPyObject)]
struct PySource {
    path: PathBuf,
    weight: Option<f64>,
    repeat: Option<f64>,
    choose: Option<usize>,
    ids: Option<Vec<String>>,
    #[pyo3(attribute("where"))]
    filter: Option<Py<PyAny>>,
    weights: Option<Py<PyAny>>,
    labels: Option<Vec<(String, i64)>>,
}

/// A `gulp.Segments` as the native side reads it.
#[derive(FromPyObject)]
struct PySegments {
    key: String,
    start: String,
    end: String,
    pair: Option<String>,
    unit: Named<Unit>,
    fps: Option<f64>,
}

impl PySegments {
    /// The segments of a `gulp.Segments` object.
    fn of(object: Bound<'_, PyAny>) -> PyResult<Segments> {
        Ok(object.extract::<PySegments>()?.into_segments())
    }

    fn into_segments(self) -> Segments {
        Segments {
            key: self.key,
            bounds: match self.pair {
                Some(pair) => Bounds::Pair(pair),
                None => Bounds::Keys {
                    start: self.start,
                    end: self.end,
                },
            },
            unit: self.unit.0,
            fps: self.fps,
        }
    }
}

/// A Python function of an item's meta, called once per item (the GIL
/// taken back from the loader's construction, which runs without it).
fn meta_fn<T: 'static>(
    f: Py<PyAny>,
    what: &'static str,
    convert: fn(&Bound<'_, PyAny>) -> PyResult<T>,
) -> ItemFn<T> {
    Arc::new(move |_id: &str, meta: &Value| {
        Python::attach(|py| {
            let result = f.bind(py).call1((to_py(py, meta)?,))?;
            convert(&result)
        })
        .map_err(|e| format!("{what} raised {e}"))
    })
}

/// The `where` of a `Source`: a `gulp.col` predicate (its `_predicate`
/// tree, evaluated in Rust), or a function of the meta.
fn item_filter(filter: Py<PyAny>) -> PyResult<ItemFilter> {
    Python::attach(|py| {
        let f = filter.bind(py);
        match f.getattr_opt("_predicate")? {
            Some(tree) => predicate(&tree).map(ItemFilter::Column),
            None => Ok(ItemFilter::Fn(meta_fn(
                filter.clone_ref(py),
                "where",
                |r| r.is_truthy(),
            ))),
        }
    })
}

/// The item weights of a `Source`: a `gulp.col` key or weight column (its
/// `_weights` tree), a dict id → weight, or a function of the meta.
fn item_weights(weights: Py<PyAny>) -> PyResult<ItemWeights> {
    let column = Python::attach(|py| {
        weights
            .bind(py)
            .getattr_opt("_weights")?
            .map(|tree| weight_column(&tree))
            .transpose()
    })?;
    match column {
        Some(c) => Ok(ItemWeights::Column(c)),
        None => weights_fn(weights).map(ItemWeights::Fn),
    }
}

/// A `gulp.columns.Predicate` tree: `("cmp", key, op, value)`, `("in",
/// key, [values])`, `("present", key)`, `("and" | "or", [trees])`,
/// `("not", tree)`.
fn predicate(tree: &Bound<'_, PyAny>) -> PyResult<Predicate> {
    let kind: String = tree.get_item(0)?.extract()?;
    let key = || -> PyResult<String> { tree.get_item(1)?.extract() };
    let value = |v: &Bound<'_, PyAny>| from_py(v, &|| "a value compared with a meta key".into());
    Ok(match kind.as_str() {
        "cmp" => {
            let op: String = tree.get_item(2)?.extract()?;
            Predicate::Compare {
                key: key()?,
                op: Compare::parse(&op)
                    .ok_or_else(|| Class::Invalid.err(format!("no comparison {op:?}")))?,
                value: value(&tree.get_item(3)?)?,
            }
        }
        "in" => Predicate::In {
            key: key()?,
            values: tree
                .get_item(2)?
                .try_iter()?
                .map(|v| value(&v?))
                .collect::<PyResult<_>>()?,
        },
        "present" => Predicate::Present { key: key()? },
        "and" | "or" => {
            let all = tree
                .get_item(1)?
                .try_iter()?
                .map(|t| predicate(&t?))
                .collect::<PyResult<Vec<_>>>()?;
            if kind == "and" {
                Predicate::And(all)
            } else {
                Predicate::Or(all)
            }
        }
        "not" => Predicate::Not(Box::new(predicate(&tree.get_item(1)?)?)),
        other => {
            return Err(Class::Invalid.err(format!("not a gulp.col predicate: {other:?}")));
        }
    })
}

/// A `gulp.columns.WeightColumn` tree: `("key", key, default)` or
/// `("replace", key, [(value, weight)], default)`.
fn weight_column(tree: &Bound<'_, PyAny>) -> PyResult<WeightColumn> {
    let kind: String = tree.get_item(0)?.extract()?;
    let key: String = tree.get_item(1)?.extract()?;
    Ok(match kind.as_str() {
        "key" => WeightColumn::Key {
            key,
            default: tree.get_item(2)?.extract()?,
        },
        "replace" => WeightColumn::Replace {
            key,
            table: tree
                .get_item(2)?
                .try_iter()?
                .map(|pair| {
                    let (v, w): (Bound<'_, PyAny>, f64) = pair?.extract()?;
                    Ok((from_py(&v, &|| "a value given a weight".into())?, w))
                })
                .collect::<PyResult<_>>()?,
            default: tree.get_item(3)?.extract()?,
        },
        other => {
            return Err(Class::Invalid.err(format!("not a gulp.col weight column: {other:?}")));
        }
    })
}

/// The item weights of a `Source` given as a dict id → weight, or a
/// function of the meta.
fn weights_fn(weights: Py<PyAny>) -> PyResult<ItemFn<f64>> {
    let by_id = Python::attach(|py| {
        let w = weights.bind(py);
        if w.is_instance_of::<PyDict>() {
            w.extract::<HashMap<String, f64>>().map(Some)
        } else {
            Ok(None)
        }
    })?;
    Ok(match by_id {
        Some(map) => Arc::new(move |id: &str, _: &Value| {
            map.get(id)
                .copied()
                .ok_or_else(|| "no weight for this id in the weights given".to_owned())
        }),
        None => meta_fn(weights, "weights", |r| r.extract::<f64>()),
    })
}

/// A target computed by a Python function of the meta (for a segment, the
/// item's meta updated with the segment's keys): `None` when missing, else
/// a number or an array, `int64` when its dtype is an integer or bool,
/// `float32` when it is a float.
fn computed_target(f: Py<PyAny>) -> TargetFn {
    Arc::new(move |_id: &str, meta: &Value, segment: Option<&Value>| {
        Python::attach(|py| -> PyResult<Option<Targets>> {
            let arg = to_py(py, meta)?;
            if let Some(segment) = segment {
                let merged = PyDict::new(py);
                if let Ok(dict) = arg.cast::<PyDict>() {
                    merged.update(dict.as_mapping())?;
                }
                merged.update(to_py(py, segment)?.cast::<PyDict>()?.as_mapping())?;
                return convert_target(&f.bind(py).call1((merged,))?);
            }
            convert_target(&f.bind(py).call1((arg,))?)
        })
        .map_err(|e| format!("the target function: {e}"))
    })
}

fn convert_target(value: &Bound<'_, PyAny>) -> PyResult<Option<Targets>> {
    if value.is_none() {
        return Ok(None);
    }
    let np = value.py().import("numpy")?;
    let array = np.call_method1("asarray", (value,))?;
    let kind: String = array.getattr("dtype")?.getattr("kind")?.extract()?;
    let shape: Vec<usize> = array.getattr("shape")?.extract()?;
    let flat = |dtype: &str| -> PyResult<Bound<'_, PyAny>> {
        array
            .call_method1("astype", (dtype,))?
            .call_method0("ravel")?
            .call_method0("tolist")
    };
    let values = match kind.as_str() {
        "b" | "i" | "u" => TargetValues::Int64(flat("int64")?.extract()?),
        "f" => TargetValues::Float32(flat("float32")?.extract()?),
        _ => {
            return Err(Class::Invalid.err(format!(
                "returned {} (dtype kind {kind:?}); a target is a number, an array of numbers or None",
                value.repr()?
            )));
        }
    };
    Ok(Some(Targets { shape, values }))
}

/// The loader's time, sound and text options as Python passes them:
/// `(fps, default_fps, audio, sample_rate, channels, texts)`.
type PyMedia = (Option<f64>, f64, bool, u32, u16, Option<String>);

/// [`PyMedia`]'s parts as [`LoaderOptions`] holds them.
trait MediaParts {
    fn parts(self) -> (Option<f64>, f64, Option<AudioOptions>, Option<String>);
}

impl MediaParts for PyMedia {
    fn parts(self) -> (Option<f64>, f64, Option<AudioOptions>, Option<String>) {
        let (fps, default_fps, audio, sample_rate, channels, texts) = self;
        let audio = audio.then_some(AudioOptions {
            sample_rate,
            channels,
        });
        (fps, default_fps, audio, texts)
    }
}

impl PySource {
    /// The loader's sources, `gulp.Source` objects.
    fn all(sources: Vec<Bound<'_, PyAny>>) -> PyResult<Vec<Source>> {
        sources
            .into_iter()
            .map(|s| s.extract::<PySource>()?.into_source())
            .collect()
    }

    fn into_source(self) -> PyResult<Source> {
        let amount = match (self.weight, self.repeat, self.choose) {
            (None, None, None) => Amount::All,
            (Some(w), None, None) => Amount::Weight(w),
            (None, Some(r), None) => Amount::Repeat(r),
            (None, None, Some(c)) => Amount::Choose(c),
            _ => {
                return Err(Class::Invalid.err(format!(
                    "{}: give a source one of weight, repeat and choose",
                    self.path.display()
                )));
            }
        };
        Ok(Source {
            path: self.path,
            amount,
            ids: self.ids,
            filter: self.filter.map(item_filter).transpose()?,
            weights: self.weights.map(item_weights).transpose()?,
            labels: self.labels,
        })
    }
}

#[pymethods]
impl Loader {
    #[new]
    #[pyo3(signature = (sources, *, frames, sampling, step, clips, resize, size, crop, scale,
        ratio, flip, batch_size, shuffle, chunk_window, seed, drop_last, rank, world_size,
        local_world_size, torch_ranks, train, threads, prefetch, on_error, label_key, labels,
        dct, codec, strict, sampler, samples_per_epoch, target, target_type, num_classes,
        on_missing, segments, shared_labels, cache_dir, cache_limit, cache_fetch, media))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        sources: Vec<Bound<'_, PyAny>>,
        frames: usize,
        sampling: Named<Sampling>,
        step: usize,
        clips: usize,
        resize: Option<usize>,
        size: Option<PySize>,
        crop: Option<Named<CropMode>>,
        scale: (f64, f64),
        ratio: (f64, f64),
        flip: bool,
        batch_size: usize,
        shuffle: PyShuffle,
        chunk_window: Option<usize>,
        seed: u64,
        drop_last: bool,
        rank: Option<usize>,
        world_size: Option<usize>,
        local_world_size: Option<usize>,
        torch_ranks: Option<(usize, usize)>,
        train: Option<bool>,
        threads: Option<usize>,
        prefetch: usize,
        on_error: Named<OnError>,
        label_key: String,
        labels: Option<Vec<(String, i64)>>,
        dct: Named<Dct>,
        codec: Option<Named<Codec>>,
        strict: bool,
        sampler: Named<Sampler>,
        samples_per_epoch: Option<usize>,
        target: Option<PyTarget>,
        target_type: Option<Named<TargetKind>>,
        num_classes: Option<usize>,
        on_missing: Named<OnMissing>,
        segments: Option<Bound<'_, PyAny>>,
        shared_labels: bool,
        cache_dir: Option<&Bound<'_, PyAny>>,
        cache_limit: Option<&Bound<'_, PyAny>>,
        cache_fetch: Option<&str>,
        media: PyMedia,
    ) -> PyResult<Loader> {
        let (fps, default_fps, audio, texts) = media.parts();
        let target = PyTarget::into_target(target, target_type, num_classes)?;
        let segments = segments.map(PySegments::of).transpose()?;
        let sources = PySource::all(sources)?;
        let ranks = resolve_ranks(py, (rank, world_size, local_world_size), torch_ranks)?;
        let defaults = LoaderOptions::default();
        let options = LoaderOptions {
            frames,
            sampling: sampling.0,
            step,
            clips,
            spatial: Spatial {
                resize,
                size: size.map(PySize::hw),
                crop: crop_mode(crop, scale, ratio),
                flip,
            },
            batch_size,
            order: Order {
                shuffle: shuffle.with_window(chunk_window)?,
                seed,
                drop_last,
                ..defaults.order
            },
            train,
            threads,
            prefetch,
            on_error: on_error.0,
            labels: Labels {
                key: label_key,
                index: labels,
            },
            decode: decode_options(dct, codec, strict),
            sampler: sampler.0,
            samples_per_epoch,
            target,
            on_missing: on_missing.0,
            segments,
            shared_labels,
            open: open_options(cache_dir, cache_limit, cache_fetch)?,
            fps,
            default_fps,
            audio,
            texts,
            ..defaults
        }
        .with_ranks(&ranks);
        let loader = py
            .detach(|| RustLoader::from_sources(&sources, options))
            .map_err(loader_err)?;
        Ok(Loader {
            inner: Mutex::new(loader),
            ranks,
        })
    }

    /// This process's rank, the world size, the ranks on this node, and
    /// where the ranks and the node's count came from.
    #[getter]
    fn ranks(&self) -> (usize, usize, usize, String, String) {
        let r = self.ranks;
        (
            r.rank,
            r.world_size,
            r.local_world_size,
            r.source.to_string(),
            r.local_source.to_string(),
        )
    }

    fn __len__(&self) -> usize {
        lock(&self.inner).len()
    }

    /// Clips per epoch of this rank.
    #[getter]
    fn samples(&self) -> usize {
        lock(&self.inner).samples()
    }

    /// Items kept (all sources).
    #[getter]
    fn items(&self) -> usize {
        lock(&self.inner).items()
    }

    /// Samples of an epoch before the split between ranks.
    #[getter]
    fn epoch_samples(&self) -> usize {
        lock(&self.inner).epoch_samples()
    }

    /// Samples left out for a missing or unusable value.
    #[getter]
    fn missing(&self) -> usize {
        lock(&self.inner).missing()
    }

    /// Every source's directory.
    #[getter]
    fn paths(&self) -> Vec<PathBuf> {
        lock(&self.inner).paths()
    }

    /// Decoding threads.
    #[getter]
    fn threads(&self) -> usize {
        lock(&self.inner).threads()
    }

    #[getter]
    fn epoch(&self) -> u64 {
        lock(&self.inner).epoch()
    }

    fn set_epoch(&self, epoch: u64) {
        lock(&self.inner).set_epoch(epoch);
    }

    /// The position and what identifies this loader, as a dict.
    fn state_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = lock(&self.inner).state();
        let d = PyDict::new(py);
        d.set_item("epoch", s.epoch)?;
        d.set_item("batch", s.batch)?;
        d.set_item("start", s.start)?;
        if let Some(position) = s.position {
            d.set_item("position", position)?;
        }
        d.set_item("seed", s.seed)?;
        d.set_item("rank", s.rank)?;
        d.set_item("world_size", s.world_size)?;
        d.set_item("batches", s.batches)?;
        d.set_item("items", s.items)?;
        d.set_item("batch_size", s.batch_size)?;
        d.set_item("options", s.options)?;
        d.set_item("sources", s.sources)?;
        d.set_item("subset", s.subset)?;
        d.set_item("weights", s.weights)?;
        d.set_item("targets", s.targets)?;
        d.set_item("layout", s.layout)?;
        Ok(d)
    }

    fn load_state_dict(&self, state: &Bound<'_, PyDict>) -> PyResult<()> {
        let now = lock(&self.inner).state();
        let get_or = |key: &str, default: Option<u64>| -> PyResult<u64> {
            match state.get_item(key)? {
                Some(v) => v.extract::<u64>(),
                None => default.ok_or_else(|| Class::Invalid.err(format!("state has no {key:?}"))),
            }
        };
        let size_or = |key: &str, default: Option<usize>| -> PyResult<usize> {
            usize::try_from(get_or(key, default.map(|d| d as u64))?)
                .map_err(|_| Class::Invalid.err(format!("state's {key:?} is too large")))
        };
        let position = match state.get_item("position")? {
            Some(v) => Some(
                usize::try_from(v.extract::<u64>()?)
                    .map_err(|_| Class::Invalid.err("state's \"position\" is too large"))?,
            ),
            None => None,
        };
        // A state saved before gulp kept positions: no start (0), and the
        // options and batch size are those of the same world size's check.
        let state = State {
            epoch: get_or("epoch", None)?,
            batch: size_or("batch", None)?,
            start: size_or("start", Some(0))?,
            position,
            seed: get_or("seed", None)?,
            rank: size_or("rank", None)?,
            world_size: size_or("world_size", None)?,
            batches: size_or("batches", None)?,
            items: size_or("items", None)?,
            batch_size: size_or("batch_size", Some(now.batch_size))?,
            options: get_or("options", Some(now.options))?,
            sources: get_or("sources", Some(now.sources))?,
            subset: get_or("subset", Some(now.subset))?,
            weights: get_or("weights", Some(now.weights))?,
            targets: get_or("targets", Some(now.targets))?,
            // A state saved before shuffles by chunks: laid out for its own
            // world size.
            layout: 0,
        };
        let state = State {
            layout: size_or("layout", Some(state.world_size))?,
            ..state
        };
        lock(&self.inner).load_state(&state).map_err(loader_err)
    }

    /// Starts a pass from the current position.
    fn iter(&self) -> BatchIter {
        BatchIter {
            batches: Mutex::new(Some(lock(&self.inner).iter())),
        }
    }
}

/// One pass of a loader; `__next__` returns the batch's parts as a tuple
/// `(frames, targets, ids, indices, views, skipped, index, epoch, positions,
/// sources, segments, padding)`.
#[pyclass(frozen, module = "gulp._gulp")]
pub(crate) struct BatchIter {
    batches: Mutex<Option<Batches>>,
}

#[pymethods]
impl BatchIter {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let next = py.detach(|| lock(&self.batches).as_mut().and_then(Iterator::next));
        match next {
            None => {
                lock(&self.batches).take();
                Ok(None)
            }
            Some(Err(e)) => {
                lock(&self.batches).take();
                Err(loader_err(e))
            }
            Some(Ok(batch)) => batch_to_py(py, batch).map(Some),
        }
    }

    /// Stops the decoding threads (also done when the iterator is dropped).
    fn close(&self, py: Python<'_>) {
        let batches = lock(&self.batches).take();
        py.detach(move || drop(batches));
    }
}

/// Indices as numpy's `int64`.
fn int64(values: Vec<usize>) -> Vec<i64> {
    values
        .into_iter()
        .map(|v| i64::try_from(v).unwrap_or(i64::MAX))
        .collect()
}

fn batch_to_py(py: Python<'_>, batch: Batch) -> PyResult<Bound<'_, PyTuple>> {
    let Batch {
        epoch,
        index,
        frames,
        shape,
        targets,
        ids,
        sources,
        segments,
        positions,
        indices,
        views,
        skipped,
        padding,
        times,
        audio,
        audio_shape,
        has_audio,
        texts,
        ..
    } = batch;
    let bad = |e: ndarray::ShapeError| Class::Invalid.err(e.to_string());
    let [b, t, h, w, c] = shape;
    let frames = PyArray::from_owned_array(
        py,
        Array5::from_shape_vec((b, t, h, w, c), frames).map_err(bad)?,
    );
    let dims = IxDyn(&targets.shape);
    let targets = match targets.values {
        TargetValues::Int64(v) => {
            PyArray::from_owned_array(py, ArrayD::from_shape_vec(dims, v).map_err(bad)?).into_any()
        }
        TargetValues::Float32(v) => {
            PyArray::from_owned_array(py, ArrayD::from_shape_vec(dims, v).map_err(bad)?).into_any()
        }
    };
    let indices = PyArray::from_owned_array(
        py,
        Array2::from_shape_vec((b, t), int64(indices)).map_err(bad)?,
    );
    let views = PyArray::from_owned_array(py, Array1::from_vec(int64(views)));
    let positions = PyArray::from_owned_array(py, Array1::from_vec(int64(positions)));
    let sources = PyArray::from_owned_array(py, Array1::from_vec(int64(sources)));
    let segments = int64(segments.into_iter().flatten().collect());
    let segments =
        PyArray::from_owned_array(py, Array2::from_shape_vec((b, 2), segments).map_err(bad)?);
    let padding = PyArray::from_owned_array(py, Array1::from_vec(padding));
    let ids = PyList::new(py, ids)?;
    let skipped = PyList::new(py, skipped.into_iter().map(|s| (s.id, s.reason)))?;
    // Time, sound and text, when the loader gives them (None otherwise).
    let none = || py.None().into_bound(py);
    let times = if times.is_empty() {
        none()
    } else {
        PyArray::from_owned_array(py, Array2::from_shape_vec((b, t), times).map_err(bad)?)
            .into_any()
    };
    let (sound, has_audio) = if has_audio.is_empty() {
        (none(), none())
    } else {
        let [ab, ac, as_] = audio_shape;
        let sound = Array3::from_shape_vec((ab, ac, as_), audio).map_err(bad)?;
        (
            PyArray::from_owned_array(py, sound).into_any(),
            PyArray::from_owned_array(py, Array1::from_vec(has_audio)).into_any(),
        )
    };
    let texts = if texts.is_empty() && b > 0 {
        none()
    } else {
        PyList::new(py, texts)?.into_any()
    };
    PyTuple::new(
        py,
        [
            frames.into_any(),
            targets,
            ids.into_any(),
            indices.into_any(),
            views.into_any(),
            skipped.into_any(),
            index.into_pyobject(py)?.into_any(),
            epoch.into_pyobject(py)?.into_any(),
            positions.into_any(),
            sources.into_any(),
            segments.into_any(),
            padding.into_any(),
            times,
            sound,
            has_audio,
            texts,
        ],
    )
}

/// The ids of a list file (one per line; blank lines and `#` comments
/// skipped).
#[pyfunction]
pub(crate) fn read_ids(path: PathBuf) -> PyResult<Vec<String>> {
    gulp_loader::read_ids(&path).map_err(loader_err)
}

/// The defaults of the loader's options as Python spells them: `"clips"`
/// for `ClipLoader` (gulp-loader's `LoaderOptions::default()`), `"images"`
/// for `ImageLoader` (`LoaderOptions::images()`). Python's signatures are
/// checked against these by the tests.
#[pyfunction]
pub(crate) fn loader_defaults<'py>(py: Python<'py>, kind: &str) -> PyResult<Bound<'py, PyDict>> {
    let o = match kind {
        "clips" => LoaderOptions::default(),
        "images" => LoaderOptions::images(),
        _ => return Err(Class::Invalid.err("kind is 'clips' or 'images'")),
    };
    let d = PyDict::new(py);
    // A square as Python's signatures write it: `size=112`.
    let size: Option<Bound<'py, PyAny>> = match o.spatial.size {
        None => None,
        Some((h, w)) if h == w => Some(h.into_pyobject(py)?.into_any()),
        Some(hw) => Some(hw.into_pyobject(py)?.into_any()),
    };
    let (scale, ratio) = match o.spatial.crop {
        CropMode::RandomResized { scale, ratio } => (scale, ratio),
        _ => (
            gulp_loader::RANDOM_RESIZED_SCALE,
            gulp_loader::RANDOM_RESIZED_RATIO,
        ),
    };
    d.set_item("frames", o.frames)?;
    if kind == "clips" {
        d.set_item("sampling", o.sampling.name())?;
        d.set_item("step", o.step)?;
        d.set_item("clips", o.clips)?;
    }
    d.set_item("resize", o.spatial.resize)?;
    d.set_item("size", size)?;
    d.set_item("crop", o.spatial.crop.name())?;
    d.set_item("scale", scale)?;
    d.set_item("ratio", ratio)?;
    d.set_item("flip", o.spatial.flip)?;
    d.set_item("batch_size", o.batch_size)?;
    d.set_item("shuffle", o.order.shuffle == Shuffle::Items)?;
    d.set_item("chunk_window", o.order.shuffle.chunk_window())?;
    d.set_item("seed", o.order.seed)?;
    d.set_item("drop_last", o.order.drop_last)?;
    d.set_item("train", o.train)?;
    d.set_item("threads", o.threads)?;
    d.set_item("local_world_size", o.local_world_size)?;
    d.set_item("prefetch", o.prefetch)?;
    d.set_item("on_error", o.on_error.name())?;
    d.set_item("label_key", &o.labels.key)?;
    d.set_item("dct", o.decode.dct.name())?;
    d.set_item("strict", o.decode.strict)?;
    d.set_item("sampler", o.sampler.name())?;
    d.set_item("samples_per_epoch", o.samples_per_epoch)?;
    d.set_item("on_missing", o.on_missing.name())?;
    d.set_item("shared_labels", o.shared_labels)?;
    d.set_item("fps", o.fps)?;
    d.set_item("default_fps", o.default_fps)?;
    let audio = o.audio.unwrap_or_default();
    d.set_item("audio", o.audio.is_some())?;
    d.set_item("sample_rate", audio.sample_rate)?;
    d.set_item("channels", audio.channels)?;
    d.set_item("texts", &o.texts)?;
    Ok(d)
}

/// Every option with named values: its names, from the one list of each
/// (gulp-loader's and gulp-io's).
#[pyfunction]
pub(crate) fn option_names<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    fn add<T: Choice>(d: &Bound<'_, PyDict>) -> PyResult<()> {
        d.set_item(T::OPTION, T::NAMES.to_vec())
    }
    let d = PyDict::new(py);
    add::<Sampling>(&d)?;
    add::<CropMode>(&d)?;
    add::<Shuffle>(&d)?;
    add::<Sampler>(&d)?;
    add::<TargetKind>(&d)?;
    add::<OnError>(&d)?;
    add::<OnMissing>(&d)?;
    add::<Unit>(&d)?;
    add::<Dct>(&d)?;
    add::<Codec>(&d)?;
    add::<gulp_codec::ColorMode>(&d)?;
    add::<gulp_codec::Upsampling>(&d)?;
    Ok(d)
}
