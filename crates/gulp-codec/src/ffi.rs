//! libjpeg-turbo's TurboJPEG 3 API, the one place besides the mmap where
//! this crate uses `unsafe`.
//!
//! TurboJPEG catches libjpeg's errors itself (with `setjmp`), so a corrupt
//! JPEG comes back as an error code and a message, never as an abort; a
//! warning ("corrupt JPEG data: premature end of data segment", ...) comes
//! back as an error code that [`Handle::failure`] tells apart, so that the
//! caller decides whether it counts.
//!
//! Every call goes through [`Handle`], which owns one `tjhandle`. A handle
//! is not shared between threads (it holds the parameters of the next
//! call): decoding makes one per frame (`turbo.rs` says why), encoding
//! keeps one per thread (`encode.rs`).
#![allow(unsafe_code)]

use std::ffi::{CStr, c_int, c_void};
use std::ptr::NonNull;

use turbojpeg_sys as raw;

/// Why a call failed: libjpeg-turbo's message, and whether it was only a
/// warning (the image was decoded, with a problem in the data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) message: String,
    pub(crate) warning: bool,
}

/// A JPEG header, as `tj3DecompressHeader` reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawHeader {
    pub(crate) width: usize,
    pub(crate) height: usize,
    /// `TJSAMP_*`.
    pub(crate) subsamp: c_int,
    /// `TJCS_*`.
    pub(crate) colorspace: c_int,
    pub(crate) lossless: bool,
    /// Bits per sample (8 for the JPEGs this crate decodes).
    pub(crate) precision: c_int,
}

/// The output pixel formats this crate uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PixelFormat {
    Rgb,
    Gray,
}

impl PixelFormat {
    fn raw(self) -> c_int {
        match self {
            PixelFormat::Rgb => raw::TJPF_TJPF_RGB as c_int,
            PixelFormat::Gray => raw::TJPF_TJPF_GRAY as c_int,
        }
    }

    pub(crate) fn channels(self) -> usize {
        match self {
            PixelFormat::Rgb => 3,
            PixelFormat::Gray => 1,
        }
    }
}

// The library's enums as C ints (bindgen gives them as signed or unsigned
// depending on the platform); all are small, so `as` is exact.
pub(crate) const CS_GRAY: c_int = raw::TJCS_TJCS_GRAY as c_int;
pub(crate) const CS_CMYK: c_int = raw::TJCS_TJCS_CMYK as c_int;
pub(crate) const CS_YCCK: c_int = raw::TJCS_TJCS_YCCK as c_int;
pub(crate) const SAMP_444: c_int = raw::TJSAMP_TJSAMP_444 as c_int;
pub(crate) const SAMP_420: c_int = raw::TJSAMP_TJSAMP_420 as c_int;
pub(crate) const SAMP_GRAY: c_int = raw::TJSAMP_TJSAMP_GRAY as c_int;
const SAMP_422: c_int = raw::TJSAMP_TJSAMP_422 as c_int;
const SAMP_440: c_int = raw::TJSAMP_TJSAMP_440 as c_int;
const SAMP_411: c_int = raw::TJSAMP_TJSAMP_411 as c_int;
const SAMP_441: c_int = raw::TJSAMP_TJSAMP_441 as c_int;
const ERR_WARNING: c_int = raw::TJERR_TJERR_WARNING as c_int;

/// The width in pixels of a JPEG's iMCU (the unit of region decoding) for
/// a `TJSAMP_*` value, before scaling: libjpeg-turbo's `tjMCUWidth`.
pub(crate) fn mcu_width(subsamp: c_int) -> Option<usize> {
    match subsamp {
        SAMP_444 | SAMP_GRAY | SAMP_440 | SAMP_441 => Some(8),
        SAMP_422 | SAMP_420 => Some(16),
        SAMP_411 => Some(32),
        _ => None,
    }
}

/// Decompression parameters, set on the handle before each call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Params {
    pub(crate) fast_dct: bool,
    pub(crate) fast_upsample: bool,
    pub(crate) stop_on_warning: bool,
    /// `num / 8`, 1 to 8.
    pub(crate) scale_eighths: u8,
    /// `(x, y, w, h)` in the scaled image; `x` a multiple of the scaled
    /// iMCU width.
    pub(crate) region: Option<(usize, usize, usize, usize)>,
}

/// Progressive scans allowed in one JPEG: a real frame has about ten; a
/// hostile one can have thousands, each a pass over the whole image.
const SCAN_LIMIT: c_int = 100;

/// One TurboJPEG instance (compressor or decompressor), destroyed on drop.
pub(crate) struct Handle {
    ptr: NonNull<c_void>,
    /// A compressor's output buffer, kept between frames: it must hold
    /// `tj3JPEGBufSize` bytes (the worst case, far more than a JPEG takes),
    /// so each frame gets an exact copy instead of the buffer itself.
    out: Vec<u8>,
}

// SAFETY: a tjhandle has no thread affinity (TurboJPEG keeps no
// thread-local state); it may move to another thread as long as one thread
// uses it at a time, which `&mut self` on every call guarantees.
unsafe impl Send for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the pointer came from tj3Init, is not null, and is
        // destroyed once, here.
        unsafe { raw::tj3Destroy(self.ptr.as_ptr()) }
    }
}

fn to_int(n: usize, what: &str) -> Result<c_int, Failure> {
    c_int::try_from(n).map_err(|_| Failure {
        message: format!("{what} {n} is too large for libjpeg-turbo"),
        warning: false,
    })
}

impl Handle {
    fn new(init: c_int) -> Result<Handle, Failure> {
        // SAFETY: tj3Init takes a plain integer and returns a new handle or
        // null.
        let ptr = unsafe { raw::tj3Init(init) };
        let ptr = NonNull::new(ptr).ok_or_else(|| Failure {
            message: "libjpeg-turbo could not create a handle (out of memory?)".into(),
            warning: false,
        })?;
        Ok(Handle {
            ptr,
            out: Vec::new(),
        })
    }

    pub(crate) fn decompressor() -> Result<Handle, Failure> {
        Handle::new(raw::TJINIT_TJINIT_DECOMPRESS as c_int)
    }

    pub(crate) fn compressor() -> Result<Handle, Failure> {
        Handle::new(raw::TJINIT_TJINIT_COMPRESS as c_int)
    }

    /// The error of the last call on this handle.
    fn failure(&mut self) -> Failure {
        // SAFETY: the handle is valid; tj3GetErrorStr returns a pointer to a
        // NUL-terminated string owned by the handle, read before the next
        // call on it.
        let (message, code) = unsafe {
            let text = raw::tj3GetErrorStr(self.ptr.as_ptr());
            let message = if text.is_null() {
                "unknown libjpeg-turbo error".to_owned()
            } else {
                CStr::from_ptr(text).to_string_lossy().into_owned()
            };
            (message, raw::tj3GetErrorCode(self.ptr.as_ptr()))
        };
        Failure {
            message,
            warning: code == ERR_WARNING,
        }
    }

    fn check(&mut self, status: c_int) -> Result<(), Failure> {
        if status == 0 {
            Ok(())
        } else {
            Err(self.failure())
        }
    }

    fn set(&mut self, param: raw::TJPARAM, value: c_int) -> Result<(), Failure> {
        // SAFETY: the handle is valid; tj3Set only stores the value.
        let status = unsafe { raw::tj3Set(self.ptr.as_ptr(), param as c_int, value) };
        self.check(status)
    }

    fn get(&mut self, param: raw::TJPARAM) -> c_int {
        // SAFETY: the handle is valid; tj3Get only reads a value.
        unsafe { raw::tj3Get(self.ptr.as_ptr(), param as c_int) }
    }

    /// Reads the header of `jpeg`; a warning is an error only if `strict`.
    pub(crate) fn header(&mut self, jpeg: &[u8], strict: bool) -> Result<RawHeader, Failure> {
        self.set(raw::TJPARAM_TJPARAM_STOPONWARNING, c_int::from(strict))?;
        // SAFETY: the handle is valid and `jpeg` is readable for its length.
        let status =
            unsafe { raw::tj3DecompressHeader(self.ptr.as_ptr(), jpeg.as_ptr(), jpeg.len() as _) };
        match self.check(status) {
            Err(e) if strict || !e.warning => return Err(e),
            _ => {}
        }
        let dim = |v: c_int| usize::try_from(v).unwrap_or(0);
        Ok(RawHeader {
            width: dim(self.get(raw::TJPARAM_TJPARAM_JPEGWIDTH)),
            height: dim(self.get(raw::TJPARAM_TJPARAM_JPEGHEIGHT)),
            subsamp: self.get(raw::TJPARAM_TJPARAM_SUBSAMP),
            colorspace: self.get(raw::TJPARAM_TJPARAM_COLORSPACE),
            lossless: self.get(raw::TJPARAM_TJPARAM_LOSSLESS) != 0,
            precision: self.get(raw::TJPARAM_TJPARAM_PRECISION),
        })
    }

    /// Decompresses `jpeg`, whose header was just read by [`Handle::header`]
    /// on this handle, into `out` as `height` rows of `width` pixels of
    /// `format`, `width` being the region's (or the scaled image's) width.
    pub(crate) fn decompress(
        &mut self,
        jpeg: &[u8],
        params: &Params,
        format: PixelFormat,
        (width, height): (usize, usize),
        out: &mut [u8],
    ) -> Result<(), Failure> {
        let pitch = width * format.channels();
        if out.len() < pitch * height {
            return Err(Failure {
                message: format!(
                    "output buffer of {} bytes is smaller than {width}x{height}x{}",
                    out.len(),
                    format.channels()
                ),
                warning: false,
            });
        }
        self.set(raw::TJPARAM_TJPARAM_FASTDCT, c_int::from(params.fast_dct))?;
        self.set(
            raw::TJPARAM_TJPARAM_FASTUPSAMPLE,
            c_int::from(params.fast_upsample),
        )?;
        self.set(
            raw::TJPARAM_TJPARAM_STOPONWARNING,
            c_int::from(params.stop_on_warning),
        )?;
        self.set(raw::TJPARAM_TJPARAM_SCANLIMIT, SCAN_LIMIT)?;
        // libjpeg-turbo lists its factors in lowest terms (1/1, 1/2, 3/8...)
        // and accepts only those.
        let (mut num, mut denom) = (c_int::from(params.scale_eighths), 8);
        while num % 2 == 0 && denom > 1 {
            (num, denom) = (num / 2, denom / 2);
        }
        let factor = raw::tjscalingfactor { num, denom };
        // SAFETY: the handle is valid; both calls only store and check
        // their arguments against the header read last.
        let status = unsafe { raw::tj3SetScalingFactor(self.ptr.as_ptr(), factor) };
        self.check(status)?;
        let region = match params.region {
            Some((x, y, w, h)) => raw::tjregion {
                x: to_int(x, "crop x")?,
                y: to_int(y, "crop y")?,
                w: to_int(w, "crop width")?,
                h: to_int(h, "crop height")?,
            },
            None => raw::tjregion {
                x: 0,
                y: 0,
                w: 0,
                h: 0,
            },
        };
        // SAFETY: as above.
        let status = unsafe { raw::tj3SetCroppingRegion(self.ptr.as_ptr(), region) };
        self.check(status)?;
        let pitch_int = to_int(pitch, "row pitch")?;
        // SAFETY: the handle is valid, `jpeg` is readable for its length,
        // and `out` is writable for `pitch * height` bytes (checked above),
        // which is what libjpeg-turbo writes for the scaled (or cropped)
        // size computed from the same header, factor and region.
        let status = unsafe {
            raw::tj3Decompress8(
                self.ptr.as_ptr(),
                jpeg.as_ptr(),
                jpeg.len() as _,
                out.as_mut_ptr(),
                pitch_int,
                format.raw(),
            )
        };
        self.check(status)
    }

    /// Compresses `height` rows of `width` pixels (`pitch` bytes apart) of
    /// `format` to a baseline JPEG of `quality`, 4:4:4 or 4:2:0 colour
    /// (`subsamp`; gray images are one-component JPEGs), fast DCT as gulpio2.
    pub(crate) fn compress(
        &mut self,
        pixels: &[u8],
        format: PixelFormat,
        (width, height): (usize, usize),
        quality: u8,
        subsamp: c_int,
    ) -> Result<Vec<u8>, Failure> {
        let pitch = width * format.channels();
        if width == 0 || height == 0 || pixels.len() < pitch * height {
            return Err(Failure {
                message: format!(
                    "{} bytes do not hold a {width}x{height}x{} image",
                    pixels.len(),
                    format.channels()
                ),
                warning: false,
            });
        }
        let subsamp = if format == PixelFormat::Gray {
            SAMP_GRAY
        } else {
            subsamp
        };
        self.set_compress_params(quality, subsamp)?;
        let (w, h, p) = (
            to_int(width, "width")?,
            to_int(height, "height")?,
            to_int(pitch, "row pitch")?,
        );
        let (mut out_ptr, mut out_len) = self.out_buffer(w, h, subsamp)?;
        // SAFETY: the handle is valid, `pixels` holds `pitch * height`
        // readable bytes (checked above), and `out_ptr` has room for
        // `out_len` bytes, the most a JPEG of this size and subsampling can
        // take; NOREALLOC keeps the library from freeing or replacing it.
        let status = unsafe {
            raw::tj3Compress8(
                self.ptr.as_ptr(),
                pixels.as_ptr(),
                w,
                p,
                h,
                format.raw(),
                &mut out_ptr,
                &mut out_len,
            )
        };
        self.check(status)?;
        self.written(out_ptr, out_len)
    }

    /// Compresses three planes (Y, Cb, Cr; rows `strides` bytes apart) of a
    /// `width`×`height` frame, 4:2:0 or 4:4:4 (`subsamp`).
    pub(crate) fn compress_planes(
        &mut self,
        planes: [&[u8]; 3],
        strides: [usize; 3],
        (width, height): (usize, usize),
        quality: u8,
        subsamp: c_int,
    ) -> Result<Vec<u8>, Failure> {
        let (pw, ph) = if subsamp == SAMP_420 {
            (width.div_ceil(2), height.div_ceil(2))
        } else {
            (width, height)
        };
        // libjpeg-turbo reads `rows` rows of each plane at its stride:
        // check that every plane holds them.
        for (i, (plane, &stride)) in planes.iter().zip(&strides).enumerate() {
            let (cols, rows) = if i == 0 { (width, height) } else { (pw, ph) };
            if width == 0
                || height == 0
                || stride < cols
                || plane.len() < stride * (rows - 1) + cols
            {
                return Err(Failure {
                    message: format!("YUV plane {i} is too small for a {width}x{height} frame"),
                    warning: false,
                });
            }
        }
        self.set_compress_params(quality, subsamp)?;
        let strides = [
            to_int(strides[0], "stride")?,
            to_int(strides[1], "stride")?,
            to_int(strides[2], "stride")?,
        ];
        let pointers = planes.map(<[u8]>::as_ptr);
        let (w, h) = (to_int(width, "width")?, to_int(height, "height")?);
        let (mut out_ptr, mut out_len) = self.out_buffer(w, h, subsamp)?;
        // SAFETY: the handle is valid; each plane holds its rows at its
        // stride (checked above); `pointers` and `strides` are arrays of 3;
        // the output buffer as in `compress`.
        let status = unsafe {
            raw::tj3CompressFromYUVPlanes8(
                self.ptr.as_ptr(),
                pointers.as_ptr(),
                w,
                strides.as_ptr(),
                h,
                &mut out_ptr,
                &mut out_len,
            )
        };
        self.check(status)?;
        self.written(out_ptr, out_len)
    }

    /// gulpio2's settings through simplejpeg: baseline, Huffman tables not
    /// optimised, the given quality and subsampling, and the *fast* integer
    /// DCT. simplejpeg's `encode_jpeg(fastdct=False)` calls the TurboJPEG 2
    /// API without `TJFLAG_ACCURATEDCT`, and that API compresses with the
    /// fast DCT unless asked otherwise or the quality is 96 or more: gulpio2's
    /// JPEGs are fast-DCT ones below quality 96, accurate-DCT ones from 96 on
    /// (tests/simplejpeg.rs checks the bytes).
    fn set_compress_params(&mut self, quality: u8, subsamp: c_int) -> Result<(), Failure> {
        let quality = quality.clamp(1, 100);
        self.set(raw::TJPARAM_TJPARAM_QUALITY, c_int::from(quality))?;
        self.set(raw::TJPARAM_TJPARAM_SUBSAMP, subsamp)?;
        self.set(raw::TJPARAM_TJPARAM_FASTDCT, c_int::from(quality < 96))?;
        self.set(raw::TJPARAM_TJPARAM_NOREALLOC, 1)
    }

    /// The output buffer with room for the largest JPEG of a `w`×`h` image
    /// of `subsamp`, and that room.
    fn out_buffer(
        &mut self,
        w: c_int,
        h: c_int,
        subsamp: c_int,
    ) -> Result<(*mut u8, raw::size_t), Failure> {
        // SAFETY: a pure function of its arguments.
        let capacity = unsafe { raw::tj3JPEGBufSize(w, h, subsamp) };
        let room = usize::try_from(capacity)
            .ok()
            .filter(|&c| c > 0 && c < usize::MAX / 2)
            .ok_or_else(|| Failure {
                message: format!("no JPEG buffer size for a {w}x{h} image"),
                warning: false,
            })?;
        // Room left uninitialised: the library writes the JPEG from the
        // start, and only what it wrote is read.
        self.out.clear();
        self.out.reserve(room);
        Ok((self.out.as_mut_ptr(), capacity))
    }

    /// A copy of the `len` bytes the library wrote at `ptr`, which must be
    /// the buffer of [`Handle::out_buffer`].
    fn written(&self, ptr: *mut u8, len: raw::size_t) -> Result<Vec<u8>, Failure> {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if ptr != self.out.as_ptr().cast_mut() || len > self.out.capacity() {
            return Err(Failure {
                message: "libjpeg-turbo replaced the output buffer".into(),
                warning: false,
            });
        }
        // SAFETY: `ptr` is the start of `self.out`'s allocation (checked
        // above), into which the library wrote `len` bytes, within capacity.
        Ok(unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec())
    }
}
