//! S3's entity tags, computed from bytes: a whole object's is the hex MD5 of
//! its bytes; a multipart upload's is the MD5 of its parts' MD5s, then `-`
//! and the number of parts. gulp uploads in parts of [`PART_SIZE`], so the
//! tag of anything it uploads is known before the upload; a tag from
//! another uploader is matched when its part size is one of the usual ones.

use std::io::Read;
use std::path::Path;

use md5::{Digest, Md5};

use crate::error::{Error, Result};

/// The part size of gulp's multipart uploads; a file of at most this size
/// is uploaded whole.
pub const PART_SIZE: u64 = 16 << 20;

/// Part sizes of other uploaders (the AWS CLI's 8 MiB, boto3's, rclone's),
/// tried when a multipart tag's part count fits them.
const OTHER_PART_SIZES: [u64; 5] = [8 << 20, 5 << 20, 32 << 20, 64 << 20, 100 << 20];

/// The entity tag S3 gives an object of these bytes, uploaded as gulp
/// uploads: whole up to [`PART_SIZE`], in parts of it above.
#[derive(Debug, Clone)]
pub struct EtagHasher {
    part_size: u64,
    part: Md5,
    in_part: u64,
    digests: Vec<u8>,
    total: u64,
}

impl EtagHasher {
    /// A hasher for uploads in parts of `part_size` bytes.
    pub fn new(part_size: u64) -> EtagHasher {
        EtagHasher {
            part_size: part_size.max(1),
            part: Md5::new(),
            in_part: 0,
            digests: Vec::new(),
            total: 0,
        }
    }

    /// Adds the next bytes.
    pub fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.in_part == self.part_size {
                let done = std::mem::replace(&mut self.part, Md5::new()).finalize();
                self.digests.extend_from_slice(&done);
                self.in_part = 0;
            }
            let room = usize::try_from(self.part_size - self.in_part).unwrap_or(usize::MAX);
            let (now, rest) = bytes.split_at(room.min(bytes.len()));
            self.part.update(now);
            self.in_part += now.len() as u64;
            self.total += now.len() as u64;
            bytes = rest;
        }
    }

    /// The tag, without quotes.
    pub fn finish(mut self) -> String {
        if self.total <= self.part_size {
            return hex(&self.part.finalize());
        }
        let last = self.part.finalize();
        self.digests.extend_from_slice(&last);
        let parts = self.digests.len() / 16;
        format!("{}-{parts}", hex(&Md5::digest(&self.digests)))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A tag as stores write it, without its quotes and in lower case.
pub fn normalise(etag: &str) -> String {
    etag.trim_matches('"').to_ascii_lowercase()
}

/// The part sizes an object of `size` bytes with tag `etag` may have been
/// uploaded in, among gulp's and the usual ones; empty when the tag is not
/// an MD5 tag (a server that tags otherwise, as web servers do).
pub fn part_sizes(etag: &str, size: u64) -> Vec<u64> {
    let etag = normalise(etag);
    let (digest, parts) = match etag.split_once('-') {
        Some((digest, parts)) => match parts.parse::<u64>() {
            Ok(parts) if parts > 0 => (digest, Some(parts)),
            _ => return Vec::new(),
        },
        None => (etag.as_str(), None),
    };
    if digest.len() != 32 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Vec::new();
    }
    match parts {
        // A whole upload: any part size at least the size gives its tag.
        None => vec![size.max(1)],
        Some(parts) => std::iter::once(PART_SIZE)
            .chain(OTHER_PART_SIZES)
            .filter(|&p| size > p && size.div_ceil(p) == parts)
            .collect(),
    }
}

/// Whether the bytes of local file `path` are those of an object of tag
/// `etag`: `None` when the tag cannot tell (not an MD5 tag, or parts of an
/// unusual size).
pub fn file_matches(path: &Path, etag: &str) -> Result<Option<bool>> {
    let size = std::fs::metadata(path)
        .map_err(|e| Error::io("reading", path, e))?
        .len();
    let sizes = part_sizes(etag, size);
    if sizes.is_empty() {
        return Ok(None);
    }
    let want = normalise(etag);
    let tags = file_tags(path, &sizes)?;
    Ok(Some(tags.contains(&want)))
}

/// The tags of local file `path` uploaded in parts of each of `part_sizes`,
/// in one read of the file.
pub fn file_tags(path: &Path, part_sizes: &[u64]) -> Result<Vec<String>> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
    let mut hashers: Vec<EtagHasher> = part_sizes.iter().map(|&p| EtagHasher::new(p)).collect();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| Error::io("reading", path, e))?;
        if n == 0 {
            break;
        }
        for h in &mut hashers {
            h.update(&buf[..n]);
        }
    }
    Ok(hashers.into_iter().map(EtagHasher::finish).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tags S3 documents: a whole object's is its MD5; a multipart
    /// upload's is the MD5 of the parts' MD5s with the part count.
    #[test]
    fn tags_are_md5s_of_the_bytes_or_of_the_parts() {
        let mut h = EtagHasher::new(PART_SIZE);
        h.update(b"hello");
        assert_eq!(h.finish(), "5d41402abc4b2a76b9719d911017c592");
        let mut h = EtagHasher::new(4);
        h.update(b"hel");
        h.update(b"lo world");
        // Parts "hell", "o wo", "rld".
        let mut digests = Vec::new();
        for part in [&b"hell"[..], b"o wo", b"rld"] {
            digests.extend_from_slice(&Md5::digest(part));
        }
        assert_eq!(h.finish(), format!("{}-3", hex(&Md5::digest(&digests))));
        // A part exactly full is not followed by an empty one.
        let mut h = EtagHasher::new(4);
        h.update(b"abcdefgh");
        assert!(h.finish().ends_with("-2"));
    }

    #[test]
    fn only_md5_tags_name_their_part_sizes() {
        let md5 = "\"5D41402ABC4B2A76B9719D911017C592\"";
        assert_eq!(part_sizes(md5, 5), vec![5]);
        let size = 40 << 20;
        assert_eq!(
            part_sizes("5d41402abc4b2a76b9719d911017c592-3", size),
            vec![PART_SIZE]
        );
        assert_eq!(
            part_sizes("5d41402abc4b2a76b9719d911017c592-5", size),
            vec![8 << 20]
        );
        assert!(part_sizes("5d41402abc4b2a76b9719d911017c592-1000", size).is_empty());
        // nginx's tags are the mtime and size in hex.
        assert!(part_sizes("\"6566b1c2-1f4\"", 500).is_empty());
    }
}
