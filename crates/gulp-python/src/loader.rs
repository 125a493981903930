//! `Loader` and `BatchIter`: the native side of `gulp.ClipLoader`.
//!
//! Batches are decoded on the loader's Rust threads while the GIL is
//! released; each batch's pixels become a numpy array that owns the Rust
//! buffer they were decoded into (no copy), so `torch.from_dlpack` or
//! `torch.from_numpy` take them as they are.

use std::sync::Mutex;

use gulp_loader::{
    Batch, Batches, CropMode, Labels, Loader as RustLoader, LoaderOptions, OnError, Order,
    Sampling, Spatial, State,
};
use ndarray::{Array1, Array2, Array5};
use numpy::PyArray;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::directory::decode_options;
use crate::errors::{Class, io_err};

/// A loader error as a Python exception: decoding and I/O errors keep their
/// classes, bad options are `InvalidInputError` (a `ValueError`).
fn loader_err(e: gulp_loader::Error) -> PyErr {
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

#[pymethods]
impl Loader {
    #[new]
    #[pyo3(signature = (path, *, frames, sampling, step, clips, resize, size, crop, scale, ratio,
        flip, batch_size, shuffle, seed, drop_last, rank, world_size, train, threads, prefetch,
        on_error, label_key, label_index, dct, codec, strict, local_world_size = 0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: std::path::PathBuf,
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
        let on_error = match on_error {
            "raise" => OnError::Raise,
            "skip" => OnError::Skip,
            other => return Err(bad("on_error", other, "'raise', 'skip'")),
        };
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
            ..LoaderOptions::default()
        };
        let loader = py
            .detach(|| RustLoader::open(&path, options))
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

    /// Items in the directory.
    #[getter]
    fn items(&self) -> usize {
        lock(&self.inner).items()
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
/// `(frames, labels, ids, indices, views, skipped, index, epoch, positions)`.
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

fn batch_to_py(py: Python<'_>, batch: Batch) -> PyResult<Bound<'_, PyTuple>> {
    let Batch {
        epoch,
        index,
        frames,
        shape,
        labels,
        ids,
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
    let labels = PyArray::from_owned_array(py, Array1::from_vec(labels));
    let indices: Vec<i64> = indices
        .into_iter()
        .map(|i| i64::try_from(i).unwrap_or(i64::MAX))
        .collect();
    let indices =
        PyArray::from_owned_array(py, Array2::from_shape_vec((b, t), indices).map_err(bad)?);
    let views: Vec<i64> = views
        .into_iter()
        .map(|v| i64::try_from(v).unwrap_or(i64::MAX))
        .collect();
    let views = PyArray::from_owned_array(py, Array1::from_vec(views));
    let positions: Vec<i64> = positions
        .into_iter()
        .map(|p| i64::try_from(p).unwrap_or(i64::MAX))
        .collect();
    let positions = PyArray::from_owned_array(py, Array1::from_vec(positions));
    let ids = PyList::new(py, ids)?;
    let skipped = PyList::new(py, skipped.into_iter().map(|s| (s.id, s.reason)))?;
    PyTuple::new(
        py,
        [
            frames.into_any(),
            labels.into_any(),
            ids.into_any(),
            indices.into_any(),
            views.into_any(),
            skipped.into_any(),
            index.into_pyobject(py)?.into_any(),
            epoch.into_pyobject(py)?.into_any(),
            positions.into_any(),
        ],
    )
}
