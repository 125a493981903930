//! An item's sound as a WAV file (`/d/N/audio?id=ID`), with the byte
//! ranges a browser's `<audio>` asks for to seek.
//!
//! The file is the item's audio record (`docs/format.md` §8.2: 16-bit PCM)
//! behind a WAV header; a range is copied from where the samples lie (the
//! map of the data file), never from a whole file built first.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use gulp_io::audio::{WAV_HEADER_LEN, wav_data_len, wav_header};

use crate::error::HttpError;
use crate::pages::ItemQuery;
use crate::state::{AppState, blocking};

/// The WAV of an item's sound: 200 with the whole file, 206 with the one
/// byte range a `Range` header asks for, 416 for a range past its end; 404
/// for an item without a track.
pub(crate) async fn audio(
    State(state): State<Arc<AppState>>,
    Path(n): Path<usize>,
    Query(q): Query<ItemQuery>,
    headers: HeaderMap,
) -> Result<Response, HttpError> {
    let served = Arc::clone(state.dir(n)?);
    if !served.dir.contains(&q.id) {
        return Err(HttpError::not_found(format!(
            "no item {:?} in {}",
            q.id, served.name
        )));
    }
    let range = headers.get(header::RANGE).cloned();
    blocking(move || {
        let id = q.id.as_str();
        let item = served.dir.item(id).map_err(HttpError::data)?;
        let Some(track) = item.audio_track() else {
            return Err(HttpError::not_found(format!(
                "item {id:?} in {} has no sound",
                served.name
            )));
        };
        let pcm = served
            .dir
            .reader_for(id)
            .and_then(|r| r.audio(id, track))
            .map_err(HttpError::data)?;
        let head = wav_header(pcm.len() as u64, track.sample_rate, track.channels);
        let samples = &pcm[..wav_data_len(pcm.len() as u64) as usize];
        let len = (WAV_HEADER_LEN + samples.len()) as u64;
        let file = |start: u64, end: u64| -> Vec<u8> {
            // Both parts of [start, end) of the header, then the samples.
            let part = |bytes: &[u8], offset: u64| -> Vec<u8> {
                let clip = |x: u64| {
                    usize::try_from(x.saturating_sub(offset))
                        .map_or(bytes.len(), |at| at.min(bytes.len()))
                };
                bytes[clip(start)..clip(end)].to_vec()
            };
            let mut out = part(&head, 0);
            out.extend(part(samples, WAV_HEADER_LEN as u64));
            out
        };
        let mut response = match byte_range(range.as_ref(), len) {
            Ok(None) => file(0, len).into_response(),
            Ok(Some((start, end))) => {
                let mut partial = (StatusCode::PARTIAL_CONTENT, file(start, end)).into_response();
                let content_range = format!("bytes {start}-{}/{len}", end - 1);
                if let Ok(value) = HeaderValue::from_str(&content_range) {
                    partial.headers_mut().insert(header::CONTENT_RANGE, value);
                }
                partial
            }
            Err(()) => {
                let mut refused = StatusCode::RANGE_NOT_SATISFIABLE.into_response();
                if let Ok(value) = HeaderValue::from_str(&format!("bytes */{len}")) {
                    refused.headers_mut().insert(header::CONTENT_RANGE, value);
                }
                return Ok(refused);
            }
        };
        let h = response.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("audio/wav"));
        h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
        // The data is read-only while served.
        h.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("max-age=3600"),
        );
        Ok(response)
    })
    .await
}

/// The bytes `[start, end)` of a resource of `len` bytes that a `Range`
/// header asks for (RFC 9110 §14): `Ok(None)` for the whole resource (no
/// header, or one this server ignores, as the RFC allows: several ranges,
/// another unit, a malformed one), `Err` for a range that starts past the
/// end.
fn byte_range(value: Option<&HeaderValue>, len: u64) -> Result<Option<(u64, u64)>, ()> {
    let Some(spec) = value
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("bytes="))
    else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None);
    }
    let Some((first, last)) = spec.split_once('-') else {
        return Ok(None);
    };
    let number = |text: &str| -> Option<u64> {
        let text = text.trim();
        (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse().ok())
            .flatten()
    };
    match (number(first), number(last), last.trim().is_empty()) {
        // `-N`: the last N bytes.
        (None, Some(suffix), _) if first.trim().is_empty() => {
            if suffix == 0 || len == 0 {
                Err(())
            } else {
                Ok(Some((len.saturating_sub(suffix), len)))
            }
        }
        // `A-` and `A-B` (B included, cut to the end).
        (Some(start), None, true) if start < len => Ok(Some((start, len))),
        (Some(start), Some(end), _) if start <= end && start < len => {
            Ok(Some((start, end.saturating_add(1).min(len))))
        }
        (Some(start), Some(end), _) if start <= end => Err(()),
        (Some(_), None, true) => Err(()),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(text: &str, len: u64) -> Result<Option<(u64, u64)>, ()> {
        byte_range(Some(&HeaderValue::from_str(text).unwrap()), len)
    }

    #[test]
    fn ranges_are_read_as_rfc_9110_says() {
        assert_eq!(byte_range(None, 100), Ok(None));
        assert_eq!(range("bytes=0-", 100), Ok(Some((0, 100))));
        assert_eq!(range("bytes=10-19", 100), Ok(Some((10, 20))));
        assert_eq!(range("bytes=90-500", 100), Ok(Some((90, 100))));
        assert_eq!(range("bytes=-30", 100), Ok(Some((70, 100))));
        assert_eq!(range("bytes=-300", 100), Ok(Some((0, 100))));
        // Past the end: 416.
        assert_eq!(range("bytes=100-", 100), Err(()));
        assert_eq!(range("bytes=100-200", 100), Err(()));
        assert_eq!(range("bytes=-0", 100), Err(()));
        // Forms served as the whole file.
        for ignored in [
            "bytes=0-1,5-9",
            "items=0-5",
            "bytes=9-2",
            "bytes=x-",
            "bytes=-",
            "bytes=+1-2",
            "bytes=18446744073709551616-",
        ] {
            assert_eq!(range(ignored, 100), Ok(None), "{ignored}");
        }
    }
}
