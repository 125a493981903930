//! `Loader` and `BatchIter`: the native side of `gulp.ClipLoader`.
//!
//! Batches are decoded on the loader's Rust threads while the GIL is
//! released; each batch's pixels become a numpy array that owns the Rust
//! buffer they were decoded into (no copy), so `torch.from_dlpack` or
//! `torch.from_numpy` take them as they are.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use gulp_format::Value;
use gulp_io::GulpDirectory;
use gulp_loader::{
    Amount, Batch, Batches, Bounds, CropMode, ItemFn, Labels, Loader as RustLoader, LoaderOptions,
    OnError, OnMissing, Order, Sampler, Sampling, Segments, Source, Spatial, State, Target,
    TargetFn, TargetValues, Targets, Unit,
};
use ndarray::{Array1, Array2, Array5, ArrayD, IxDyn};
use numpy::PyArray;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::convert::to_py;
use crate::directory::decode_options;
use crate::errors::{Class, io_err};

/// A loader error as a Python exception: decoding and I/O errors keep their
/// classes, bad options are `InvalidInputError` (a `ValueError`).
pub(crate) fn loader_err(e: gulp_loader::Error) -> PyErr {
    match e {
        gulp_loader::Error::Io(e) => io_err(e),
        gulp_loader::Error::Clip { .. } => Class::Decode.err(e.to_string()),
        other => Class::Invalid.err(other.to_string()),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The clip loader (see `gulp.ClipLoader` for the options).
#[pyclass(frozen, module = "gulp._gulp")]
pub(crate) struct Loader {
    inner: Mutex<RustLoader>,
}

/// The value named `name` among `choices`, else an `InvalidInputError`
/// listing them.
fn choice<T: Copy>(what: &str, name: &str, choices: &[(&str, T)]) -> PyResult<T> {
    choices
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let names: Vec<String> = choices.iter().map(|(n, _)| format!("'{n}'")).collect();
            Class::Invalid.err(format!(
                "{what} must be one of {}, not {name:?}",
                names.join(", ")
            ))
        })
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
    unit: String,
    fps: Option<f64>,
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

/// The item weights of a `Source`: a dict id → weight, or a function of
/// the meta.
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

impl PySource {
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
            filter: self.filter.map(|f| meta_fn(f, "where", |r| r.is_truthy())),
            weights: self.weights.map(weights_fn).transpose()?,
            labels: self.labels,
        })
    }
}

#[pymethods]
impl Loader {
    #[new]
    #[pyo3(signature = (sources, *, frames, sampling, step, clips, resize, size, crop, scale, ratio,
        flip, batch_size, shuffle, seed, drop_last, rank, world_size, train, threads, prefetch,
        on_error, label_key, label_index, dct, codec, strict, local_world_size = 0,
        sampler = "uniform", samples_per_epoch = None, target = "label", target_keys = Vec::new(),
        num_classes = 0, target_fn = None, on_missing = "raise", segments = None,
        shared_labels = false, chunk_window = None, cache_dir = None, cache_limit = None,
        cache_fetch = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        sources: Vec<Bound<'_, PyAny>>,
        frames: usize,
        sampling: &str,
        step: usize,
        clips: usize,
        resize: Option<usize>,
        size: Option<(usize, usize)>,
        crop: &str,
        scale: (f64, f64),
        ratio: (f64, f64),
        flip: bool,
        batch_size: usize,
        shuffle: bool,
        seed: u64,
        drop_last: bool,
        rank: usize,
        world_size: usize,
        train: bool,
        threads: usize,
        prefetch: usize,
        on_error: &str,
        label_key: String,
        label_index: Option<Vec<(String, i64)>>,
        dct: Option<&str>,
        codec: Option<&str>,
        strict: bool,
        local_world_size: usize,
        sampler: &str,
        samples_per_epoch: Option<usize>,
        target: &str,
        target_keys: Vec<String>,
        num_classes: usize,
        target_fn: Option<Py<PyAny>>,
        on_missing: &str,
        segments: Option<Bound<'_, PyAny>>,
        shared_labels: bool,
        chunk_window: Option<usize>,
        cache_dir: Option<&Bound<'_, PyAny>>,
        cache_limit: Option<&Bound<'_, PyAny>>,
        cache_fetch: Option<&str>,
    ) -> PyResult<Loader> {
        let bad = |what: &str, value: &str, allowed: &str| {
            Class::Invalid.err(format!("{what} must be one of {allowed}, not {value:?}"))
        };
        let sampling = Sampling::parse(sampling).ok_or_else(|| {
            bad(
                "sampling",
                sampling,
                "'window', 'segments', 'uniform', 'dense', 'frame:K'",
            )
        })?;
        let crop = match CropMode::parse(crop) {
            Some(CropMode::RandomResized { .. }) => CropMode::RandomResized { scale, ratio },
            Some(mode) => mode,
            None => {
                return Err(bad(
                    "crop",
                    crop,
                    "'random', 'center', 'random_resized', 'three', 'none'",
                ));
            }
        };
        let on_error = choice(
            "on_error",
            on_error,
            &[("raise", OnError::Raise), ("skip", OnError::Skip)],
        )?;
        let sampler = choice(
            "sampler",
            sampler,
            &[
                ("uniform", Sampler::Uniform),
                ("balanced", Sampler::Balanced),
            ],
        )?;
        let on_missing = choice(
            "on_missing",
            on_missing,
            &[("raise", OnMissing::Raise), ("skip", OnMissing::Skip)],
        )?;
        let one_key = |keys: &[String]| -> PyResult<String> {
            match keys {
                [key] => Ok(key.clone()),
                _ => {
                    Err(Class::Invalid.err(format!("{target} targets take one key, not {keys:?}")))
                }
            }
        };
        let target = match (target, target_fn) {
            ("label", None) => Target::Label,
            ("key", None) => Target::Key(one_key(&target_keys)?),
            ("keys", None) => Target::Keys(target_keys),
            ("float", None) => Target::Float(one_key(&target_keys)?),
            ("floats", None) => Target::Floats(target_keys),
            ("multi_hot", None) => Target::MultiHot {
                key: one_key(&target_keys)?,
                classes: num_classes,
            },
            ("computed", Some(f)) => Target::Computed(computed_target(f)),
            (other, _) => {
                return Err(bad(
                    "target",
                    other,
                    "'label', 'key', 'keys', 'float', 'floats', 'multi_hot', 'computed'",
                ));
            }
        };
        let segments = segments
            .map(|s| -> PyResult<Segments> {
                let s: PySegments = s.extract()?;
                Ok(Segments {
                    key: s.key,
                    bounds: match s.pair {
                        Some(pair) => Bounds::Pair(pair),
                        None => Bounds::Keys {
                            start: s.start,
                            end: s.end,
                        },
                    },
                    unit: choice(
                        "segment unit",
                        &s.unit,
                        &[("frames", Unit::Frames), ("seconds", Unit::Seconds)],
                    )?,
                    fps: s.fps,
                })
            })
            .transpose()?;
        let sources = sources
            .into_iter()
            .map(|s| s.extract::<PySource>()?.into_source())
            .collect::<PyResult<Vec<Source>>>()?;
        let decode = decode_options(None, None, None, dct, None, strict, codec)?;
        let options = LoaderOptions {
            frames,
            sampling,
            step,
            clips,
            spatial: Spatial {
                resize,
                size,
                crop,
                flip,
            },
            batch_size,
            order: Order {
                shuffle,
                chunk_window,
                seed,
                drop_last,
                rank,
                world_size,
            },
            train,
            threads,
            local_world_size,
            prefetch,
            on_error,
            labels: Labels {
                key: label_key,
                index: label_index,
            },
            decode,
            sampler,
            samples_per_epoch,
            target,
            on_missing,
            segments,
            shared_labels,
            open: match crate::directory::cache_options(cache_dir, cache_limit, cache_fetch)? {
                Some(cache) => GulpDirectory::options().cache(cache),
                None => GulpDirectory::options(),
            },
        };
        let loader = py
            .detach(|| RustLoader::from_sources(&sources, options))
            .map_err(loader_err)?;
        Ok(Loader {
            inner: Mutex::new(loader),
        })
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
/// sources, segments)`.
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
    let ids = PyList::new(py, ids)?;
    let skipped = PyList::new(py, skipped.into_iter().map(|s| (s.id, s.reason)))?;
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
        ],
    )
}

/// The ids of a list file (one per line; blank lines and `#` comments
/// skipped).
#[pyfunction]
pub(crate) fn read_ids(path: PathBuf) -> PyResult<Vec<String>> {
    gulp_loader::read_ids(&path).map_err(loader_err)
}
