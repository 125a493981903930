//! An item's sound (`docs/format.md` §8.2): the samples of its record, a
//! span of them as floats at a rate and channel count of the caller's, and
//! a WAV file of them.

use std::borrow::Cow;

use gulp_format::AudioTrack;

use crate::error::{AUDIO_RECORD, Result};
use crate::reader::ChunkReader;

impl ChunkReader {
    /// The samples of `id`'s audio track (`track`, from its meta): the
    /// record's bytes without their pad, checked against the data file as a
    /// frame's; a slice of the map when mapped.
    pub fn audio(&self, id: &str, track: &AudioTrack) -> Result<Cow<'_, [u8]>> {
        self.read(id, AUDIO_RECORD, &track.record)
    }
}

/// A span of sound, as floats in `[-1, 1)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpanRequest {
    /// The source time of the span's first sample, in seconds.
    pub start: f64,
    /// Samples to give (of each channel).
    pub samples: usize,
    /// Samples per second to give.
    pub sample_rate: u32,
    /// Channels to give: 1 mixes a track down to mono, more than a mono
    /// track has repeats it, and otherwise channel `c` is the track's
    /// channel `c` (the last one's where the track has fewer).
    pub channels: u16,
}

/// Writes the span `request` of `track`'s samples `pcm` (its record's
/// bytes, interleaved signed 16-bit little-endian) into `out`, channel by
/// channel (`[channels, samples]`, row-major): silence before the track
/// starts and after it ends. At another rate than the track's, each sample
/// is linearly interpolated between the track's two around its time.
/// `out` must hold `channels × samples` floats.
pub fn span_f32(pcm: &[u8], track: &AudioTrack, request: &SpanRequest, out: &mut [f32]) {
    out.fill(0.0);
    let cin = usize::from(track.channels.max(1));
    let cout = usize::from(request.channels.max(1));
    let frames = pcm.len() / (2 * cin);
    let sample = |k: usize, c: usize| -> f32 {
        let at = (k * cin + c) * 2;
        f32::from(i16::from_le_bytes([pcm[at], pcm[at + 1]])) / 32768.0
    };
    // The track's channel (or the mix) that output channel `c` takes.
    let value = |k: usize, c: usize| -> f32 {
        if cout == 1 && cin > 1 {
            #[allow(clippy::cast_precision_loss)] // at most 64 channels
            let n = cin as f32;
            (0..cin).map(|ch| sample(k, ch)).sum::<f32>() / n
        } else {
            sample(k, c.min(cin - 1))
        }
    };
    let n = request.samples;
    if n == 0 || frames == 0 || out.len() < cout * n {
        return;
    }
    let rate_in = f64::from(track.sample_rate);
    let rate_out = f64::from(request.sample_rate.max(1));
    let offset = (request.start - track.start) * rate_in;
    if track.sample_rate == request.sample_rate {
        // Sample for sample, from the track's nearest.
        #[allow(clippy::cast_possible_truncation)] // a sample count
        let first = offset.round() as i64;
        for i in 0..n {
            let Some(k) = usize::try_from(first + i as i64)
                .ok()
                .filter(|&k| k < frames)
            else {
                continue;
            };
            for c in 0..cout {
                out[c * n + i] = value(k, c);
            }
        }
        return;
    }
    for i in 0..n {
        #[allow(clippy::cast_precision_loss)]
        let pos = offset + i as f64 * rate_in / rate_out;
        if pos < 0.0 || pos > (frames - 1) as f64 {
            continue;
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked above
        let k = pos.floor() as usize;
        #[allow(clippy::cast_possible_truncation)]
        let w = (pos - k as f64) as f32;
        let next = (k + 1).min(frames - 1);
        for c in 0..cout {
            out[c * n + i] = value(k, c) * (1.0 - w) + value(next, c) * w;
        }
    }
}

/// Bytes of a WAV file's header ([`wav_header`]), before its samples.
pub const WAV_HEADER_LEN: usize = 44;

/// A WAV file (RIFF, 16-bit PCM) of interleaved little-endian samples: the
/// header of [`wav_header`], then the samples (the first `u32::MAX - 44`
/// bytes of them, all that a WAV file's sizes can say).
pub fn wav(pcm: &[u8], sample_rate: u32, channels: u16) -> Vec<u8> {
    let header = wav_header(pcm.len() as u64, sample_rate, channels);
    let data = wav_data_len(pcm.len() as u64) as usize;
    let mut out = Vec::with_capacity(WAV_HEADER_LEN + data);
    out.extend_from_slice(&header);
    out.extend_from_slice(&pcm[..data]);
    out
}

/// The header of a WAV file of `pcm_len` bytes of 16-bit samples, for a
/// writer or a server that sends the samples from where they lie (a
/// record of the data file) rather than copying them behind it. A WAV
/// file says sizes in 32 bits: past `u32::MAX - 44` bytes, the header
/// names that many ([`wav_data_len`]).
pub fn wav_header(pcm_len: u64, sample_rate: u32, channels: u16) -> [u8; WAV_HEADER_LEN] {
    let data = wav_data_len(pcm_len);
    let block = channels.saturating_mul(2);
    let mut out = [0u8; WAV_HEADER_LEN];
    let fields: [&[u8]; 12] = [
        b"RIFF",
        &(36 + data).to_le_bytes(),
        b"WAVEfmt ",
        &16u32.to_le_bytes(),
        &1u16.to_le_bytes(), // PCM
        &channels.to_le_bytes(),
        &sample_rate.to_le_bytes(),
        &sample_rate.saturating_mul(u32::from(block)).to_le_bytes(),
        &block.to_le_bytes(),
        &16u16.to_le_bytes(),
        b"data",
        &data.to_le_bytes(),
    ];
    let mut at = 0;
    for field in fields {
        out[at..at + field.len()].copy_from_slice(field);
        at += field.len();
    }
    out
}

/// The bytes of samples a WAV file of `pcm_len` bytes of them holds: all
/// of them, up to `u32::MAX - 44`.
pub fn wav_data_len(pcm_len: u64) -> u32 {
    const MAX: u64 = u32::MAX as u64 - WAV_HEADER_LEN as u64;
    u32::try_from(pcm_len.min(MAX)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gulp_format::{AudioCodec, FrameInfo};

    fn track(rate: u32, channels: u16, samples: u64, start: f64) -> AudioTrack {
        AudioTrack {
            record: FrameInfo::for_jpeg(0, samples * u64::from(channels) * 2),
            codec: AudioCodec::PcmS16le,
            sample_rate: rate,
            channels,
            samples,
            start,
            checksum: 0,
        }
    }

    fn pcm(values: &[i16]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn spans_are_cut_by_time_with_silence_outside_the_track() {
        // 4 samples a second from 1.0 s: 1.0, 1.25, 1.5, 1.75.
        let bytes = pcm(&[8192, 16384, -8192, -16384]);
        let t = track(4, 1, 4, 1.0);
        let mut out = vec![9.0; 6];
        let req = SpanRequest {
            start: 0.5,
            samples: 6,
            sample_rate: 4,
            channels: 1,
        };
        span_f32(&bytes, &t, &req, &mut out);
        assert_eq!(out, [0.0, 0.0, 0.25, 0.5, -0.25, -0.5]);
        // Stereo to mono is the mean; mono to stereo repeats.
        let stereo = pcm(&[16384, 0, 8192, 8192]);
        let mut out = vec![0.0; 2];
        span_f32(
            &stereo,
            &track(4, 2, 2, 0.0),
            &SpanRequest {
                start: 0.0,
                samples: 2,
                sample_rate: 4,
                channels: 1,
            },
            &mut out,
        );
        assert_eq!(out, [0.25, 0.25]);
        let mut out = vec![0.0; 4];
        span_f32(
            &bytes,
            &t,
            &SpanRequest {
                start: 1.0,
                samples: 2,
                sample_rate: 4,
                channels: 2,
            },
            &mut out,
        );
        assert_eq!(out, [0.25, 0.5, 0.25, 0.5]);
        // Twice the rate: every other sample interpolated.
        let mut out = vec![0.0; 4];
        span_f32(
            &bytes,
            &t,
            &SpanRequest {
                start: 1.0,
                samples: 4,
                sample_rate: 8,
                channels: 1,
            },
            &mut out,
        );
        assert_eq!(out, [0.25, 0.375, 0.5, 0.125]);
    }

    #[test]
    fn a_wav_header_says_what_follows() {
        let w = wav(&pcm(&[1, 2, 3, 4]), 16000, 2);
        assert_eq!(&w[..4], b"RIFF");
        assert_eq!(u32::from_le_bytes(w[4..8].try_into().unwrap()), 36 + 8);
        assert_eq!(u32::from_le_bytes(w[24..28].try_into().unwrap()), 16000);
        assert_eq!(u32::from_le_bytes(w[28..32].try_into().unwrap()), 64000);
        assert_eq!(w.len(), 52);
        assert_eq!(&w[..WAV_HEADER_LEN], &wav_header(8, 16000, 2));
        // Past what 32 bits can say, the header names the most it can.
        let huge = wav_header(u64::from(u32::MAX) + 10, 8000, 1);
        assert_eq!(
            u32::from_le_bytes(huge[40..44].try_into().unwrap()),
            u32::MAX - 44
        );
        assert_eq!(
            u32::from_le_bytes(huge[4..8].try_into().unwrap()),
            u32::MAX - 8
        );
    }
}
