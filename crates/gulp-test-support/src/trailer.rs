//! The trailer of a msgpack meta file (`docs/format.md` §4.6), for tests that
//! damage a file's content and then give it a right fingerprint again, so
//! that the damage reaches the section parsers behind it.

/// Bytes of the trailer: `92 cf <content length u64 BE> ce <crc32 u32 BE>`.
pub const TRAILER_LEN: usize = 15;

/// Appends a correct trailer to `content`.
pub fn seal(mut content: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&content);
    let len = content.len() as u64;
    content.extend_from_slice(&[0x92, 0xcf]);
    content.extend_from_slice(&len.to_be_bytes());
    content.push(0xce);
    content.extend_from_slice(&crc.to_be_bytes());
    content
}

/// The content part of a msgpack meta file: everything before its trailer
/// (the input form of the `msgpack_meta_sealed` fuzz target).
pub fn unseal(file: &[u8]) -> &[u8] {
    &file[..file.len().saturating_sub(TRAILER_LEN)]
}
