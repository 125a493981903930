//! `gulp dump-meta`: the meta as gulpio2's JSON, whatever the format on disk.

use std::io::{IsTerminal, Write};

use anyhow::{Result, bail};
use gulp_format::{ChunkMeta, ItemMeta, JsonSerializer, Serializer, Value};
use gulp_io::GulpDirectory;

use crate::Outcome;
use crate::cli::DumpMetaArgs;

pub(super) fn run(args: &DumpMetaArgs) -> Result<Outcome> {
    let gulp = super::open_dir(&args.dir)?;
    let indices: Vec<usize> = match args.chunk {
        Some(n) => match gulp.chunks().iter().position(|c| c.chunk == n) {
            Some(index) => vec![index],
            None => bail!("no chunk {n} in {}", args.dir.display()),
        },
        None => (0..gulp.chunks().len()).collect(),
    };
    // Unknown ids are errors before anything is printed.
    let mut chosen = Vec::with_capacity(args.ids.len());
    let mut seen = std::collections::HashSet::new();
    for id in &args.ids {
        if seen.insert(id.as_str()) {
            chosen.push((id.as_str(), item_in(&gulp, &indices, args.chunk, id)?));
        }
    }
    let mut out = super::stdout();
    let mut first = true;
    out.write_all(b"{")?;
    if args.ids.is_empty() {
        for index in indices {
            let reader = gulp.reader(index)?;
            for (id, item) in reader.meta().iter() {
                write_item(&mut out, &mut first, id, item, !args.no_frame_info)?;
            }
        }
    } else {
        for (id, item) in chosen {
            write_item(&mut out, &mut first, id, item, !args.no_frame_info)?;
        }
    }
    out.write_all(b"}")?;
    // The bytes are json.dump's, which ends without a newline; add one only
    // for a person reading a terminal.
    if std::io::stdout().is_terminal() {
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(Outcome::Success)
}

/// The item `id`, in the chunk at `indices[0]` if a chunk was asked for.
fn item_in<'g>(
    gulp: &'g GulpDirectory,
    indices: &[usize],
    chunk: Option<u64>,
    id: &str,
) -> Result<&'g ItemMeta> {
    let (Some(n), Some(&index)) = (chunk, indices.first()) else {
        return Ok(gulp.item(id)?);
    };
    match gulp.reader(index)?.meta().get(id) {
        Some(item) => Ok(item),
        None if gulp.contains(id) => bail!("id {id:?} is not in chunk {n}"),
        None => Ok(gulp.item(id)?),
    }
}

/// Writes `"id": {...}` exactly as `json.dump` writes one entry of a meta
/// file, preceded by `", "` unless it is the first.
fn write_item(
    out: &mut impl Write,
    first: &mut bool,
    id: &str,
    item: &ItemMeta,
    frame_info: bool,
) -> Result<()> {
    if !*first {
        out.write_all(b", ")?;
    }
    *first = false;
    if frame_info {
        // gulp-format's writer, given a one-item chunk, writes `{"id": {...}}`;
        // the entry is that without the outer braces.
        let one: ChunkMeta = std::iter::once((
            id.to_owned(),
            // What a JSON meta holds (a msgpack meta's checksums and
            // metalayers aside): frame times and sound included.
            ItemMeta {
                frame_info: item.frame_info.clone(),
                meta_data: item.meta_data.clone(),
                frame_times: item.frame_times.clone(),
                audio: item.audio.clone(),
                ..ItemMeta::default()
            },
        ))
        .collect();
        let bytes = JsonSerializer.to_vec(&one)?;
        let entry = bytes
            .strip_prefix(b"{")
            .and_then(|b| b.strip_suffix(b"}"))
            .unwrap_or(&bytes);
        out.write_all(entry)?;
    } else {
        let mut map = gulp_format::Map::default();
        map.insert(
            "meta_data".to_owned(),
            Value::Array(item.meta_data.to_vec()),
        );
        let key = JsonSerializer::value_to_string(&Value::from(id));
        let value = JsonSerializer::value_to_string(&Value::Object(map));
        write!(out, "{key}: {value}")?;
    }
    Ok(())
}
