//! The gulp on-disk format: what a gulp directory holds, byte for byte.
//!
//! A gulp directory is a flat directory of chunk pairs, `data_N.gulp` (JPEG
//! records padded to 4 bytes) and `meta_N.gmeta` (the chunk meta: for each
//! item id, its `frame_info` and `meta_data`). This crate knows the layout and
//! the meta model and turns meta into bytes and back; it never touches the
//! filesystem, so it works on byte slices and `Read`/`Write` streams.
//!
//! Two meta formats exist, told apart by their first bytes
//! ([`MetaFormat::detect`]):
//!
//! * **JSON**, exactly what GulpIO and gulpio2 write (Python's `json.dump`,
//!   `NaN`/`Infinity` tokens included), so their datasets open unchanged and
//!   ours open in gulpio2;
//! * **msgpack**, gulp's own, with a magic string, a format version, per-frame
//!   checksums, and a trailer whose fingerprint is verified on load.
//!
//! The byte-level specification of both is `docs/format.md` in the
//! repository.
//!
//! # Example
//!
//! ```
//! use gulp_format::{ChunkMeta, FrameInfo, MetaFormat, Value, read_meta};
//!
//! // A meta file as gulpio2 writes it.
//! let json = br#"{"7": {"frame_info": [[0, 3, 632], [632, 0, 736]], "meta_data": [{"label": "x", "score": NaN}]}}"#;
//! let meta = read_meta(json)?;
//! let item = meta.get("7").unwrap();
//! assert_eq!(item.frame_info[1], FrameInfo { loc: 632, pad: 0, length: 736 });
//! assert_eq!(item.meta_data[0].get("label"), Some(&Value::from("x")));
//!
//! // Parse-then-write reproduces gulpio2's bytes exactly.
//! assert_eq!(MetaFormat::Json.serializer().to_vec(&meta)?, json.to_vec());
//!
//! // The msgpack form holds the same content and converts back losslessly.
//! let packed = MetaFormat::Msgpack.serializer().to_vec(&meta)?;
//! assert_eq!(MetaFormat::detect(&packed), Some(MetaFormat::Msgpack));
//! assert_eq!(read_meta(&packed)?, meta);
//! # Ok::<(), gulp_format::Error>(())
//! ```
// On docs.rs, items behind a cargo feature say which (`--cfg docsrs`).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]

mod choice;
mod error;
mod index_file;
mod json;
mod layout;
mod media;
mod meta;
mod meta_data;
mod meta_index;
mod msgpack;
mod read;
mod serializer;
mod value;

pub use crate::choice::{Choice, UnknownChoice, quoted};
pub use crate::error::{Error, ErrorKind, Result};
pub use crate::index_file::{
    ChunkStamp, DirIndex, DirIndexWriter, INDEX_FILE, INDEX_LOCK_FILE, INDEX_MAGIC, INDEX_VERSION,
    IndexBytes, NO_LABEL,
};
pub use crate::json::JsonSerializer;
pub use crate::layout::{
    ChunkFile, DATA_EXTENSION, DATA_PREFIX, FrameInfo, LABEL_FILE, META_EXTENSION, META_PREFIX,
    PAD_BYTE, RECORD_ALIGN, TEMP_PREFIX, data_file_name, meta_file_name, pad_len,
    parse_chunk_file_name,
};
pub use crate::media::{
    AUDIO_KEY, Audio, AudioCodec, AudioTrack, FRAME_TIMES_KEY, FrameTimes, MAX_CHANNELS,
    MAX_SAMPLE_RATE,
};
pub use crate::meta::{ChunkMeta, ItemMeta};
pub use crate::meta_data::MetaData;
pub use crate::meta_index::{Ids, ItemSpan, MetaIndex};
pub use crate::msgpack::{MsgpackSerializer, MsgpackVersion};
pub use crate::read::{read_index, read_item, read_meta};
pub use crate::serializer::{MSGPACK_MAGIC, MetaFormat, Serializer};
pub use crate::value::{BigInt, Map, Value};
