//! Writes a gulp directory from a JSON description of the chunks to write,
//! item by item, through `ChunkWriter`. The cross-compatibility suite
//! (`scripts/ci/compat.sh`) uses it to make directories that gulpio2 then reads.
//!
//! ```text
//! cargo run --release -p gulp-io --example write_spec -- <spec.json> <out_dir>
//! ```
//!
//! The spec is a list of operations, applied in order:
//!
//! ```text
//! [{"op": "create" | "append_to", "chunk": 0, "format": "json" | "msgpack",
//!   "items": [{"id": "a", "meta": {...}, "frames": ["path/to/0.jpg", ...]}]}]
//! ```
//!
//! `create` starts a new chunk, `append_to` reopens an existing one. `meta` is
//! the item's `meta_data`, any JSON value. The spec is read with gulp's own
//! parser of Python-flavoured JSON, so `NaN`/`Infinity` tokens, integers of
//! any size and key order in `meta` reach the chunk exactly as written.
//! Frame paths are relative to the spec file's directory unless absolute.
//! `format` defaults to JSON. Items with an empty frame list are appended as
//! they are; a `create` with no items makes an empty chunk.

use std::path::Path;

use gulp_format::{JsonSerializer, MetaFormat, Value};
use gulp_io::ChunkWriter;

type Error = Box<dyn std::error::Error>;

fn field<'a>(value: &'a Value, key: &str, what: &str) -> Result<&'a Value, Error> {
    value
        .get(key)
        .ok_or_else(|| format!("{what}: missing {key:?}").into())
}

fn string<'a>(value: &'a Value, key: &str, what: &str) -> Result<&'a str, Error> {
    field(value, key, what)?
        .as_str()
        .ok_or_else(|| format!("{what}: {key:?} is not a string").into())
}

fn array<'a>(value: &'a Value, key: &str, what: &str) -> Result<&'a [Value], Error> {
    field(value, key, what)?
        .as_array()
        .ok_or_else(|| format!("{what}: {key:?} is not a list").into())
}

fn run_op(op: &Value, index: usize, base: &Path, out_dir: &Path) -> Result<(), Error> {
    let what = format!("operation {index}");
    let chunk = field(op, "chunk", &what)?
        .as_i64()
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| format!("{what}: \"chunk\" is not a chunk number"))?;
    let format = match op.get("format") {
        None => MetaFormat::Json,
        Some(f) => f
            .as_str()
            .ok_or_else(|| format!("{what}: \"format\" is not a string"))?
            .parse::<MetaFormat>()?,
    };
    let mut builder = ChunkWriter::builder();
    builder.meta_format(format);
    let mut writer = match string(op, "op", &what)? {
        "create" => builder.create(out_dir, chunk)?,
        "append_to" => builder.append_to(out_dir, chunk)?,
        other => return Err(format!("{what}: unknown op {other:?}").into()),
    };
    for (k, item) in array(op, "items", &what)?.iter().enumerate() {
        let what = format!("{what}, item {k}");
        let id = string(item, "id", &what)?;
        let meta = field(item, "meta", &what)?.clone();
        let frames = array(item, "frames", &what)?
            .iter()
            .map(|path| {
                let path = path
                    .as_str()
                    .ok_or_else(|| format!("{what}: a frame path is not a string"))?;
                let path = base.join(path);
                std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))
            })
            .collect::<Result<Vec<Vec<u8>>, String>>()?;
        writer.append(id, meta, &frames)?;
    }
    let summary = writer.finish()?;
    println!(
        "chunk {} ({format}): {} items, {} frames, {} bytes",
        summary.chunk, summary.items, summary.frames, summary.bytes
    );
    Ok(())
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [spec_path, out_dir] = args.as_slice() else {
        return Err("usage: write_spec <spec.json> <out_dir>".into());
    };
    let spec_path = Path::new(spec_path);
    let text =
        std::fs::read(spec_path).map_err(|e| format!("reading {}: {e}", spec_path.display()))?;
    let spec = JsonSerializer::parse_value(&text)?;
    let ops = spec
        .as_array()
        .ok_or("the spec must be a list of operations")?;
    let base = spec_path.parent().unwrap_or(Path::new("."));
    let out_dir = Path::new(out_dir);
    std::fs::create_dir_all(out_dir)?;
    for (index, op) in ops.iter().enumerate() {
        run_op(op, index, base, out_dir)?;
    }
    Ok(())
}
