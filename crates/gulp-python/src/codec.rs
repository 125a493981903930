//! JPEG encoding and decoding of single images, and short-edge resizing:
//! what `gulp.utils` builds gulpio2's `img_to_jpeg_bytes`,
//! `jpeg_bytes_to_img` and `resize_by_short_edge` on.

use gulp_ingest::Pixels;
use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::directory::{decode_options, image_to_py};
use crate::errors::{Class, io_err};

/// A `uint8` C-contiguous array of shape `H×W` (gray) or `H×W×3` (RGB) as
/// pixels, with gulpio2's (simplejpeg's) errors for anything else.
fn pixels(img: &Bound<'_, PyAny>) -> PyResult<Pixels> {
    let array = img.cast::<PyArrayDyn<u8>>().map_err(|_| {
        let dtype = img
            .getattr("dtype")
            .map(|d| d.to_string())
            .unwrap_or_else(|_| img.get_type().to_string());
        Class::Invalid.err(format!(
            "frames must be uint8 numpy arrays (H×W or H×W×3), not {dtype}"
        ))
    })?;
    let shape = array.shape().to_vec();
    let (height, width, channels) = match shape[..] {
        [h, w] => (h, w, 1),
        [h, w, 3] => (h, w, 3),
        [h, w, 1] => (h, w, 1),
        [_, _, c] => {
            return Err(Class::Invalid.err(format!(
                "{c} channels does not match colorspace RGB (frames are H×W or H×W×3)"
            )));
        }
        _ => {
            return Err(Class::Invalid.err(format!(
                "frames are 2-d (gray) or 3-d (RGB) arrays, not {}-d",
                shape.len()
            )));
        }
    };
    let readonly = array.readonly();
    let data = readonly
        .as_slice()
        .map_err(|_| {
            Class::Invalid.err("frames must be C-contiguous arrays (use np.ascontiguousarray)")
        })?
        .to_vec();
    let dim = |v: usize| {
        u32::try_from(v).map_err(|_| Class::Invalid.err(format!("frame side {v} is too large")))
    };
    Ok(Pixels {
        width: dim(width)?,
        height: dim(height)?,
        channels: if channels == 1 { 1 } else { 3 },
        data,
    })
}

/// Pixels as a numpy array (`H×W×3` or `H×W`), without a copy.
fn pixels_to_py(py: Python<'_>, px: Pixels) -> PyResult<Bound<'_, PyAny>> {
    image_to_py(
        py,
        gulp_codec::Image {
            height: px.height as usize,
            width: px.width as usize,
            channels: usize::from(px.channels),
            pixels: px.data,
        },
    )
}

/// Encodes pixels to JPEG as gulpio2 does (4:4:4, baseline, simplejpeg's
/// settings), in `quality` 1-100.
pub(crate) fn encode_pixels(px: &Pixels, quality: u8) -> PyResult<Vec<u8>> {
    px.check().map_err(|e| Class::Invalid.err(e))?;
    gulp_ingest::frames::encode_jpeg(px, quality).map_err(|e| Class::Encode.err(e))
}

/// The pixels of a numpy frame (for the writer).
pub(crate) fn frame_pixels(img: &Bound<'_, PyAny>) -> PyResult<Pixels> {
    pixels(img)
}

/// Encodes a `uint8` array (`H×W` gray or `H×W×3` RGB) to JPEG bytes.
#[pyfunction]
#[pyo3(signature = (img, quality = 90))]
pub(crate) fn encode_jpeg<'py>(
    py: Python<'py>,
    img: &Bound<'py, PyAny>,
    quality: u8,
) -> PyResult<Bound<'py, PyBytes>> {
    let px = pixels(img)?;
    let jpeg = py.detach(|| encode_pixels(&px, quality))?;
    Ok(PyBytes::new(py, &jpeg))
}

/// Decodes JPEG bytes to a `uint8` array, with the decoding options of
/// `Directory.read`.
#[pyfunction]
#[pyo3(signature = (data, *, color = None, dct_scale = None, min_size = None, region = None,
                    dct = None, upsampling = None, strict = true, codec = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn decode_jpeg<'py>(
    py: Python<'py>,
    data: &[u8],
    color: Option<&str>,
    dct_scale: Option<&Bound<'py, PyAny>>,
    min_size: Option<(usize, usize)>,
    region: Option<(usize, usize, usize, usize)>,
    dct: Option<&str>,
    upsampling: Option<&str>,
    strict: bool,
    codec: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let options = decode_options(
        color, dct_scale, min_size, region, dct, upsampling, strict, codec,
    )?;
    let image = py
        .detach(|| gulp_codec::decode_jpeg_with(data, &options))
        .map_err(io_err)?;
    image_to_py(py, image)
}

/// `(height, width, channels)` from a JPEG's header.
#[pyfunction]
pub(crate) fn jpeg_header(data: &[u8]) -> PyResult<(usize, usize, usize)> {
    let h = gulp_codec::read_header(data, gulp_codec::DecodeOptions::default().codec)
        .map_err(io_err)?;
    Ok((h.height, h.width, if h.gray { 1 } else { 3 }))
}

/// Resizes a `uint8` frame so that its short edge is `size` (gulpio2's
/// `resize_by_short_edge`: Pillow's bilinear, sizes truncated, squares by
/// width).
#[pyfunction]
pub(crate) fn resize<'py>(
    py: Python<'py>,
    img: &Bound<'py, PyAny>,
    size: u32,
) -> PyResult<Bound<'py, PyAny>> {
    let px = pixels(img)?;
    let out = py
        .detach(|| {
            let mut resizer = fast_image_resize::Resizer::new();
            gulp_ingest::frames::resize_short_edge(&px, Some(size), &mut resizer)
        })
        .map_err(|e| Class::Invalid.err(e))?;
    let px = out.unwrap_or(px);
    pixels_to_py(py, px)
}

/// Decodes an image file's bytes (JPEG, PNG, BMP, GIF, TIFF, WebP) to a
/// `uint8` array, `H×W×3` or `H×W` (what gulpio2's adapters read with
/// Pillow).
#[pyfunction]
pub(crate) fn decode_image<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let px = py
        .detach(|| gulp_ingest::frames::decode_image(data))
        .map_err(|e| Class::Decode.err(e))?;
    pixels_to_py(py, px)
}
