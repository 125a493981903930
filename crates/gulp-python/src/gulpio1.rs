//! What GulpIO v1's Python classes compute with, from gulp-loader:
//! Pillow's resampling for `gulp.transforms` and v1's clip window for
//! `gulp.dataset`.

use gulp_loader::{Filter, Sample, Shape, V1Window};
use ndarray::{ArrayD, IxDyn};
use numpy::{Element, PyArray, PyArray1, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PySlice;

use crate::errors::Class;
use crate::loader::loader_err;

/// A `uint8` or `float64` array, `H×W` or `H×W×C`, resampled to `height ×
/// width` with Pillow's `filter` ('nearest', 'box', 'bilinear', 'bicubic',
/// 'lanczos'); same dtype and number of dimensions.
#[pyfunction]
pub(crate) fn resample<'py>(
    py: Python<'py>,
    img: &Bound<'py, PyAny>,
    height: usize,
    width: usize,
    filter: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let filter = Filter::parse(filter).ok_or_else(|| {
        Class::Invalid.err(format!(
            "unknown filter '{filter}': use 'nearest', 'box', 'bilinear', 'bicubic' or 'lanczos'"
        ))
    })?;
    if let Ok(array) = img.cast::<PyArrayDyn<u8>>() {
        return resample_array(py, array, height, width, filter);
    }
    if let Ok(array) = img.cast::<PyArrayDyn<f64>>() {
        return resample_array(py, array, height, width, filter);
    }
    let dtype = img
        .getattr("dtype")
        .map(|d| d.to_string())
        .unwrap_or_else(|_| img.get_type().to_string());
    Err(Class::Invalid.err(format!(
        "resample takes uint8 or float64 numpy arrays, not {dtype}"
    )))
}

fn resample_array<'py, T: Sample + Element>(
    py: Python<'py>,
    array: &Bound<'py, PyArrayDyn<T>>,
    height: usize,
    width: usize,
    filter: Filter,
) -> PyResult<Bound<'py, PyAny>> {
    let mut dims = array.shape().to_vec();
    let shape = match dims[..] {
        [h, w] => Shape {
            height: h,
            width: w,
            channels: 1,
        },
        [h, w, c] => Shape {
            height: h,
            width: w,
            channels: c,
        },
        _ => {
            return Err(Class::Invalid.err(format!(
                "expected an HxW or HxWxC image, got shape {dims:?}"
            )));
        }
    };
    // A copy: Python code may write to the array while the GIL is released.
    let readonly = array
        .try_readonly()
        .map_err(|e| Class::Invalid.err(e.to_string()))?;
    let src: Vec<T> = match readonly.as_slice() {
        Ok(samples) => samples.to_vec(),
        Err(_) => readonly.as_array().iter().copied().collect(),
    };
    let out = py
        .detach(|| gulp_loader::resample(&src, shape, height, width, filter))
        .map_err(loader_err)?;
    (dims[0], dims[1]) = (height, width);
    let out =
        ArrayD::from_shape_vec(IxDyn(&dims), out).map_err(|e| Class::Invalid.err(e.to_string()))?;
    Ok(PyArray::from_owned_array(py, out).into_any())
}

/// The input index of each of `out_size` pixels under Pillow's nearest
/// neighbour, from `in_size` pixels.
#[pyfunction]
pub(crate) fn nearest_indices(
    py: Python<'_>,
    in_size: usize,
    out_size: usize,
) -> Bound<'_, PyArray1<usize>> {
    PyArray1::from_vec(py, gulp_loader::nearest_indices(in_size, out_size))
}

/// How many first frames GulpIO v1's window of `frames` frames (`None`:
/// every frame) `step` apart can have in an item of `n` frames.
#[pyfunction]
pub(crate) fn window_starts(frames: Option<usize>, step: usize, n: usize) -> usize {
    V1Window::starts(frames, step, n)
}

/// GulpIO v1's window from frame `start`: the slice of frames to read and
/// how many copies of the last one complete the clip.
#[pyfunction]
pub(crate) fn window<'py>(
    py: Python<'py>,
    frames: Option<usize>,
    step: usize,
    n: usize,
    start: usize,
) -> PyResult<(Bound<'py, PySlice>, usize)> {
    let w = V1Window::new(frames, step, n, start).map_err(loader_err)?;
    let index = |v: usize| {
        isize::try_from(v).map_err(|_| Class::Invalid.err(format!("frame {v} is out of range")))
    };
    // Not `PySlice::new`, which leaks its integer arguments in pyo3 0.30.1
    // (see `directory::slice`).
    let slice = py
        .get_type::<PySlice>()
        .call1((index(w.start)?, index(w.stop)?, index(w.step)?))?
        .cast_into::<PySlice>()?;
    Ok((slice, w.pad))
}
