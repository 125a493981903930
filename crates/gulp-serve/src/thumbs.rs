//! Thumbnails: a frame decoded at the least DCT scale whose short edge is
//! still [`THUMB_EDGE`] pixels, reduced to about that size, encoded as a
//! small JPEG, and kept in a cache of bounded size.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use gulp_codec::{ColorMode, DecodeOptions, Image, Scale};
use jpeg_encoder::{ColorType, Encoder};

/// The short edge of a thumbnail, in pixels.
pub(crate) const THUMB_EDGE: usize = 96;
const QUALITY: u8 = 80;

/// Key of a cached thumbnail: directory, id, frame.
type Key = (usize, String, usize);

/// Thumbnails, oldest evicted first once their bytes pass the limit.
pub(crate) struct ThumbCache {
    limit: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    map: HashMap<Key, Arc<Vec<u8>>>,
    order: VecDeque<Key>,
    bytes: usize,
}

impl ThumbCache {
    pub(crate) fn new(limit: usize) -> ThumbCache {
        ThumbCache {
            limit,
            inner: Mutex::new(Inner::default()),
        }
    }

    pub(crate) fn get(&self, key: &Key) -> Option<Arc<Vec<u8>>> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.map.get(key).cloned()
    }

    pub(crate) fn put(&self, key: Key, jpeg: Arc<Vec<u8>>) {
        if jpeg.len() > self.limit {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let inner = &mut *inner;
        if inner.map.contains_key(&key) {
            return;
        }
        inner.bytes += jpeg.len();
        inner.order.push_back(key.clone());
        inner.map.insert(key, jpeg);
        while inner.bytes > self.limit {
            let Some(old) = inner.order.pop_front() else {
                break;
            };
            if let Some(v) = inner.map.remove(&old) {
                inner.bytes -= v.len();
            }
        }
    }

    /// Bytes held.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .bytes
    }
}

/// Makes the thumbnail of one JPEG frame.
pub(crate) fn thumbnail(jpeg: &[u8]) -> Result<Vec<u8>, String> {
    let options = DecodeOptions {
        color: ColorMode::Rgb,
        scale: Scale::ShortEdge(THUMB_EDGE),
        // The decoder's best picture of a damaged frame is still worth
        // showing.
        strict: false,
        ..DecodeOptions::default()
    };
    let image = gulp_codec::decode_jpeg_with(jpeg, &options).map_err(|e| e.to_string())?;
    let image = shrink(image);
    encode(&image)
}

/// Encodes an RGB image as a JPEG.
pub(crate) fn encode(image: &Image) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let fail = |e: jpeg_encoder::EncodingError| format!("JPEG encoding: {e}");
    let (w, h) = (
        u16::try_from(image.width).unwrap_or(u16::MAX),
        u16::try_from(image.height).unwrap_or(u16::MAX),
    );
    Encoder::new(&mut out, QUALITY)
        .encode(&image.pixels, w, h, ColorType::Rgb)
        .map_err(fail)?;
    Ok(out)
}

/// Halves the image (2×2 box) while its short edge stays at least twice
/// [`THUMB_EDGE`]: DCT scaling stops at 1/8, and the pure-Rust decoder
/// does not scale at all.
fn shrink(mut image: Image) -> Image {
    while image.width.min(image.height) >= 2 * THUMB_EDGE {
        let (w, h) = (image.width / 2, image.height / 2);
        let c = image.channels;
        let src = &image.pixels;
        let stride = image.width * c;
        let mut out = vec![0u8; w * h * c];
        for y in 0..h {
            for x in 0..w {
                for k in 0..c {
                    let at = |dy: usize, dx: usize| {
                        u16::from(src[(2 * y + dy) * stride + (2 * x + dx) * c + k])
                    };
                    let sum = at(0, 0) + at(0, 1) + at(1, 0) + at(1, 1);
                    out[(y * w + x) * c + k] = u8::try_from((sum + 2) / 4).unwrap_or(u8::MAX);
                }
            }
        }
        image = Image {
            width: w,
            height: h,
            channels: c,
            pixels: out,
        };
    }
    image
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_keeps_its_bound_and_evicts_the_oldest() {
        let cache = ThumbCache::new(100);
        for i in 0..10 {
            cache.put((0, format!("{i}"), 0), Arc::new(vec![0; 30]));
        }
        assert!(cache.bytes() <= 100);
        assert!(cache.get(&(0, "9".into(), 0)).is_some());
        assert!(cache.get(&(0, "0".into(), 0)).is_none());
        // Larger than the whole cache: not kept.
        cache.put((1, "big".into(), 0), Arc::new(vec![0; 101]));
        assert!(cache.get(&(1, "big".into(), 0)).is_none());
    }

    #[test]
    fn shrink_halves_down_to_about_the_thumbnail_edge() {
        let image = Image {
            width: 800,
            height: 400,
            channels: 3,
            pixels: vec![200; 800 * 400 * 3],
        };
        let small = shrink(image);
        assert_eq!((small.width, small.height), (200, 100));
        assert!(small.pixels.iter().all(|&p| p == 200));
    }
}
