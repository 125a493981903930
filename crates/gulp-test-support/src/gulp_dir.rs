//! Small gulp directories for tests, written chunk by chunk and item by
//! item ([`GulpDirBuilder`]), and JPEG frames of known pictures to fill them
//! without ffmpeg ([`gradient_jpeg`]).
//!
//! ```
//! use gulp_test_support::gulp_dir::{GulpDirBuilder, gradient_jpeg, labelled};
//!
//! let tmp = std::env::temp_dir().join(format!("gulp-dir-doc-{}", std::process::id()));
//! let frames = |k: usize| (0..3).map(|f| gradient_jpeg(32, 24, k * 3 + f)).collect::<Vec<_>>();
//! GulpDirBuilder::new(&tmp)
//!     .item("a", labelled("cat"), frames(0))
//!     .next_chunk()
//!     .msgpack()
//!     .item("b", labelled("dog"), frames(1))
//!     .write();
//! let gulp = gulp_io::GulpDirectory::open(&tmp).unwrap();
//! assert_eq!((gulp.len(), gulp.chunks().len()), (2, 2));
//! # std::fs::remove_dir_all(&tmp).unwrap();
//! ```

use std::path::{Path, PathBuf};

use gulp_format::{Map, MetaFormat, Value};
use gulp_io::ChunkWriter;

/// A `width`×`height` RGB picture of colour gradients, a different one for
/// each `k` (its fields shift with it).
pub fn gradient(width: usize, height: usize, k: usize) -> Vec<u8> {
    (0..width * height)
        .flat_map(|i| {
            let (x, y) = (i % width, i / width);
            [
                (x * 4 + k * 40) as u8,
                (y * 5 + k * 25) as u8,
                ((x + y) * 2 + k * 60) as u8,
            ]
        })
        .collect()
}

/// [`gradient`] as a JPEG (quality 90, 4:4:4; jpeg-encoder, in every
/// build).
pub fn gradient_jpeg(width: usize, height: usize, k: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut out, 90);
    encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_4_4);
    encoder
        .encode(
            &gradient(width, height, k),
            width as u16,
            height as u16,
            jpeg_encoder::ColorType::Rgb,
        )
        .unwrap_or_else(|e| panic!("encoding a {width}x{height} gradient: {e}"));
    out
}

/// The meta `{"label": label}`.
pub fn labelled(label: &str) -> Value {
    let mut meta = Map::default();
    meta.insert("label".into(), Value::from(label));
    Value::Object(meta)
}

/// A gulp directory to write: chunks of items, each chunk's meta in JSON
/// unless [`msgpack`](Self::msgpack) says otherwise. Written without
/// fsync (tests), through gulp-io's [`ChunkWriter`], as an ingest writes.
#[derive(Debug, Clone)]
pub struct GulpDirBuilder {
    dir: PathBuf,
    chunks: Vec<Chunk>,
}

#[derive(Debug, Clone)]
struct Chunk {
    number: u64,
    format: MetaFormat,
    items: Vec<(String, Value, Vec<Vec<u8>>)>,
}

impl GulpDirBuilder {
    /// A directory at `dir` (made if missing) whose first chunk is 0.
    pub fn new(dir: impl Into<PathBuf>) -> GulpDirBuilder {
        GulpDirBuilder {
            dir: dir.into(),
            chunks: vec![Chunk {
                number: 0,
                format: MetaFormat::Json,
                items: Vec::new(),
            }],
        }
    }

    fn current(&mut self) -> &mut Chunk {
        self.chunks.last_mut().expect("a builder has a chunk")
    }

    /// Item `id` with `meta` and the JPEG `frames`, in the current chunk.
    pub fn item(
        mut self,
        id: &str,
        meta: Value,
        frames: impl IntoIterator<Item = Vec<u8>>,
    ) -> GulpDirBuilder {
        let frames = frames.into_iter().collect();
        self.current().items.push((id.to_owned(), meta, frames));
        self
    }

    /// Items `ids`, `per_chunk` a chunk from the current one on, each with
    /// the meta and frames `item(position, id)` gives.
    pub fn items(
        mut self,
        ids: &[&str],
        per_chunk: usize,
        mut item: impl FnMut(usize, &str) -> (Value, Vec<Vec<u8>>),
    ) -> GulpDirBuilder {
        for (k, id) in ids.iter().enumerate() {
            if k > 0 && k % per_chunk.max(1) == 0 {
                self = self.next_chunk();
            }
            let (meta, frames) = item(k, id);
            self = self.item(id, meta, frames);
        }
        self
    }

    /// Starts the next chunk (the current one's number + 1, JSON meta).
    pub fn next_chunk(mut self) -> GulpDirBuilder {
        let number = self.current().number + 1;
        self.chunk(number)
    }

    /// Starts chunk `number` (JSON meta).
    pub fn chunk(mut self, number: u64) -> GulpDirBuilder {
        if self.current().items.is_empty() {
            self.chunks.pop();
        }
        self.chunks.push(Chunk {
            number,
            format: MetaFormat::Json,
            items: Vec::new(),
        });
        self
    }

    /// The current chunk's meta in msgpack (with its checksums).
    pub fn msgpack(mut self) -> GulpDirBuilder {
        self.current().format = MetaFormat::Msgpack;
        self
    }

    /// Writes the directory; its path.
    pub fn write(self) -> PathBuf {
        std::fs::create_dir_all(&self.dir)
            .unwrap_or_else(|e| panic!("{}: {e}", self.dir.display()));
        for chunk in &self.chunks {
            write_chunk(&self.dir, chunk);
        }
        self.dir
    }
}

fn write_chunk(dir: &Path, chunk: &Chunk) {
    let fail =
        |e: gulp_io::Error| format!("writing chunk {} in {}: {e}", chunk.number, dir.display());
    let mut writer = ChunkWriter::builder()
        .meta_format(chunk.format)
        .fsync(false)
        .create(dir, chunk.number)
        .unwrap_or_else(|e| panic!("{}", fail(e)));
    for (id, meta, frames) in &chunk.items {
        writer
            .append(id, meta.clone(), frames)
            .unwrap_or_else(|e| panic!("{}", fail(e)));
    }
    writer.finish().unwrap_or_else(|e| panic!("{}", fail(e)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builder_writes_what_it_is_given() {
        let tmp = std::env::temp_dir().join(format!("gulp-dir-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let ids = ["a", "b", "c", "d", "e"];
        GulpDirBuilder::new(&tmp)
            .chunk(3)
            .items(&ids, 2, |k, _| {
                (labelled(&format!("c{k}")), vec![gradient_jpeg(16, 8, k)])
            })
            .msgpack()
            .write();
        let gulp = gulp_io::GulpDirectory::open(&tmp).unwrap();
        let mut chunks: Vec<u64> = gulp.chunks().iter().map(|c| c.chunk).collect();
        chunks.sort_unstable();
        assert_eq!(chunks, [3, 4, 5]);
        assert_eq!(gulp.len(), 5);
        let frames = gulp.frames("d", &gulp_io::Selection::All).unwrap();
        assert_eq!(frames[0].as_ref(), gradient_jpeg(16, 8, 3).as_slice());
        assert!(
            std::fs::read(tmp.join("meta_5.gmeta")).unwrap()[0] != b'{',
            "msgpack"
        );
        assert!(
            std::fs::read(tmp.join("meta_3.gmeta")).unwrap()[0] == b'{',
            "json"
        );
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
