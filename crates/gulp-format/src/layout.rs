//! Names and numbers of the on-disk layout (`docs/format.md` §1–§2).

/// Prefix of a data file name: `data_N.gulp`.
pub const DATA_PREFIX: &str = "data_";
/// Extension of a data file.
pub const DATA_EXTENSION: &str = ".gulp";
/// Prefix of a meta file name: `meta_N.gmeta`.
pub const META_PREFIX: &str = "meta_";
/// Extension of a meta file.
pub const META_EXTENSION: &str = ".gmeta";
/// Prefix of the temporary files a writer creates before it commits a chunk.
///
/// The leading dot keeps them out of gulpio2's `data*.gulp` / `meta*.gmeta`
/// globs, and [`parse_chunk_file_name`] never accepts them.
pub const TEMP_PREFIX: &str = ".gulp-tmp.";

/// A directory's label file: each label's number, as gulpio2 writes it.
pub const LABEL_FILE: &str = "label2idx.json";
/// Every record (JPEG bytes plus padding) is a multiple of this many bytes.
pub const RECORD_ALIGN: u64 = 4;
/// The value of every padding byte.
pub const PAD_BYTE: u8 = 0x00;

/// The data file name of chunk `n`: `data_{n}.gulp`.
pub fn data_file_name(n: u64) -> String {
    format!("{DATA_PREFIX}{n}{DATA_EXTENSION}")
}

/// The meta file name of chunk `n`: `meta_{n}.gmeta`.
pub fn meta_file_name(n: u64) -> String {
    format!("{META_PREFIX}{n}{META_EXTENSION}")
}

/// Which file of a chunk a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkFile {
    /// `data_N.gulp`.
    Data(u64),
    /// `meta_N.gmeta`.
    Meta(u64),
}

/// Parses a directory entry name as a chunk file.
///
/// Only the names a writer produces are accepted: the prefix, a decimal chunk
/// number without sign or leading zeros (`0` itself is fine), and the
/// extension. Anything else (`label2idx.json`, temporary files, `data_01.gulp`,
/// `database.gulp`) is `None`, so a reader ignores it rather than failing.
pub fn parse_chunk_file_name(name: &str) -> Option<ChunkFile> {
    let parse = |prefix: &str, ext: &str| -> Option<u64> {
        let digits = name.strip_prefix(prefix)?.strip_suffix(ext)?;
        let canonical = !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'));
        if canonical { digits.parse().ok() } else { None }
    };
    if let Some(n) = parse(DATA_PREFIX, DATA_EXTENSION) {
        Some(ChunkFile::Data(n))
    } else {
        parse(META_PREFIX, META_EXTENSION).map(ChunkFile::Meta)
    }
}

/// Number of padding bytes after a JPEG of `len` bytes: `(4 - len % 4) % 4`.
pub fn pad_len(len: u64) -> u64 {
    (RECORD_ALIGN - len % RECORD_ALIGN) % RECORD_ALIGN
}

/// Where one frame's record lies in the data file: serialised as
/// `[loc, pad, length]`.
///
/// `length` counts the padding, so the JPEG is `data[loc .. loc + length - pad]`
/// and the next record of the same write starts at `loc + length`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FrameInfo {
    /// Absolute byte offset of the record in the data file.
    pub loc: u64,
    /// Number of trailing padding bytes (0..=3 in a well-formed file).
    pub pad: u64,
    /// Record length including the padding (a multiple of 4 in a well-formed file).
    pub length: u64,
}

impl FrameInfo {
    /// The frame info of a JPEG of `jpeg_len` bytes stored at `loc`.
    pub fn for_jpeg(loc: u64, jpeg_len: u64) -> FrameInfo {
        let pad = pad_len(jpeg_len);
        FrameInfo {
            loc,
            pad,
            length: jpeg_len + pad,
        }
    }

    /// The number of JPEG bytes (`length - pad`), or `None` if `pad > length`.
    pub fn jpeg_len(&self) -> Option<u64> {
        self.length.checked_sub(self.pad)
    }

    /// The offset just past the record (`loc + length`), or `None` on overflow.
    pub fn end(&self) -> Option<u64> {
        self.loc.checked_add(self.length)
    }

    /// What breaks the record rules, if anything: `pad` in 0..=3, `pad <=
    /// length`, `length` a multiple of 4, and `loc + length` representable.
    pub fn problem(&self) -> Option<&'static str> {
        if self.pad >= RECORD_ALIGN {
            Some("pad is not in 0..=3")
        } else if self.pad > self.length {
            Some("pad is larger than length")
        } else if !self.length.is_multiple_of(RECORD_ALIGN) {
            Some("length is not a multiple of 4")
        } else if self.end().is_none() {
            Some("loc + length overflows")
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_matches_gulpio2_test_pad_image() {
        // test/unit/fileio_tests.py: 0→0, 3→1, 2→2, 1→3, 4→0.
        for (len, pad) in [(0, 0), (3, 1), (2, 2), (1, 3), (4, 0), (629, 3), (736, 0)] {
            assert_eq!(pad_len(len), pad, "len {len}");
        }
        assert_eq!(
            FrameInfo::for_jpeg(632, 629),
            FrameInfo {
                loc: 632,
                pad: 3,
                length: 632
            }
        );
    }

    #[test]
    fn chunk_file_names() {
        assert_eq!(data_file_name(12), "data_12.gulp");
        assert_eq!(meta_file_name(0), "meta_0.gmeta");
        assert_eq!(
            parse_chunk_file_name("data_0.gulp"),
            Some(ChunkFile::Data(0))
        );
        assert_eq!(
            parse_chunk_file_name("meta_123.gmeta"),
            Some(ChunkFile::Meta(123))
        );
        for ignored in [
            "label2idx.json",
            "database.gulp",
            "data_.gulp",
            "data_01.gulp",
            "data_-1.gulp",
            "data_1.gulp.bak",
            "meta_1.gulp",
            ".gulp-tmp.data_1.gulp",
            "data_99999999999999999999999.gulp",
            "data_１.gulp",
        ] {
            assert_eq!(parse_chunk_file_name(ignored), None, "{ignored}");
        }
    }

    #[test]
    fn frame_info_problems() {
        let ok = FrameInfo {
            loc: 8,
            pad: 3,
            length: 632,
        };
        assert_eq!(ok.problem(), None);
        assert_eq!(ok.jpeg_len(), Some(629));
        assert_eq!(ok.end(), Some(640));
        assert!(
            FrameInfo {
                loc: 0,
                pad: 4,
                length: 8
            }
            .problem()
            .is_some()
        );
        assert!(
            FrameInfo {
                loc: 0,
                pad: 3,
                length: 2
            }
            .problem()
            .is_some()
        );
        assert!(
            FrameInfo {
                loc: 0,
                pad: 1,
                length: 6
            }
            .problem()
            .is_some()
        );
        assert!(
            FrameInfo {
                loc: u64::MAX,
                pad: 0,
                length: 4
            }
            .problem()
            .is_some()
        );
    }
}
