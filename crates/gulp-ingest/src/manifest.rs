//! Manifests: a table of clips of videos (CSV, JSONL or Parquet), the way
//! Panda-70M, HowTo100M, WebVid or VGGSound are distributed.
//!
//! Each row is a clip: `path` (a video; relative paths against the root,
//! by default the manifest's folder), optionally `id`, `label`, and
//! `start`/`end` in seconds (or `H:MM:SS.fff`; the whole video without
//! them). Every column is kept in the clip's meta under its own name and
//! type, `start` and `end` as seconds. The clips of one video are cut from
//! one decode of it ([`crate::cut`]); with [`ManifestOptions::segments`],
//! each video is one item instead, its rows kept as its `segments`.
//!
//! A row that cannot be a clip (no path, `end <= start`, a start that is
//! not seconds) is an item that fails with the reason, so the run reports
//! it with its row number and goes on; a file that is not a manifest (bad
//! CSV, a JSONL line that is not an object, no `path` column) is an error
//! naming the row and column.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use gulp_format::{JsonSerializer, Map, Value};
use gulp_io::LabelIndex;

use crate::adapters::{compact, csv_value, expand, id_string, timestamp_seconds};
use crate::cut::Span;
use crate::dataset::{DatasetAdapter, FrameSource, Item};
use crate::error::{Error, ItemError, Result};

/// The roles of a manifest's columns, and the column that holds each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Columns {
    /// The video's path (required).
    pub path: String,
    /// The clip's id.
    pub id: String,
    /// The clip's label, numbered in `label2idx.json`.
    pub label: String,
    /// The clip's start, in seconds.
    pub start: String,
    /// The clip's end, in seconds (excluded).
    pub end: String,
}

impl Default for Columns {
    fn default() -> Columns {
        Columns {
            path: "path".into(),
            id: "id".into(),
            label: "label".into(),
            start: "start".into(),
            end: "end".into(),
        }
    }
}

impl Columns {
    /// The role names, for `ROLE=COLUMN` arguments.
    pub const ROLES: [&'static str; 5] = ["path", "id", "label", "start", "end"];

    /// Sets the column of a role from `ROLE=COLUMN` (`--column`).
    pub fn set(&mut self, arg: &str) -> Result<()> {
        let (role, column) = arg.split_once('=').ok_or_else(|| {
            Error::Options(format!(
                "column {arg:?}: expected ROLE=COLUMN, e.g. path=video"
            ))
        })?;
        let slot = match role.trim() {
            "path" => &mut self.path,
            "id" => &mut self.id,
            "label" => &mut self.label,
            "start" => &mut self.start,
            "end" => &mut self.end,
            other => {
                return Err(Error::Options(format!(
                    "column {arg:?}: unknown role {other:?} (one of {})",
                    Columns::ROLES.join(", ")
                )));
            }
        };
        column.trim().clone_into(slot);
        Ok(())
    }
}

/// How a manifest becomes items.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ManifestOptions {
    /// The folder relative paths are taken from; the manifest's folder when
    /// `None`.
    pub root: Option<PathBuf>,
    /// One item per video, its rows as its `segments`, rather than an item
    /// per row.
    pub segments: bool,
    /// Which column holds what.
    pub columns: Columns,
    /// The length of a clip whose row has a start and no end (VGGSound's
    /// 10 s from `start`).
    pub clip_length: Option<f64>,
    /// The run's frame rate, written as the `fps` of `--segments` items.
    pub frame_rate: Option<f64>,
}

/// The meta key of a `--segments` item's list of rows.
pub const SEGMENTS_KEY: &str = "segments";

/// One row read from a manifest: its number (the line of a CSV or JSONL
/// file, from 1, the CSV header being line 1; a Parquet row's number from
/// 1) and its columns.
type Row = (usize, Map);

/// What a row becomes.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    /// The row's number (see [`Row`]).
    line: usize,
    id: String,
    /// The meta as JSON text, without `"idx"`.
    meta: Box<str>,
    idx: Option<i64>,
    /// The video and the span, or why the row cannot be a clip.
    what: std::result::Result<(u32, Span), String>,
}

/// A manifest read into items (see the module's doc).
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    entries: Vec<Entry>,
    /// The videos, resolved against the root.
    sources: Vec<PathBuf>,
    labels: Option<LabelIndex>,
}

impl Manifest {
    /// Reads `manifest` (`.csv`, `.jsonl`/`.ndjson`, `.parquet`, by its
    /// extension; `.csv.gz` and `.jsonl.gz` too) into the items of an
    /// ingest into `output` (whose `label2idx.json` keeps its numbers).
    pub fn read(manifest: &Path, output: &Path, opts: &ManifestOptions) -> Result<Manifest> {
        let rows = read_rows(manifest, &opts.columns)?;
        let root = opts.root.clone().unwrap_or_else(|| {
            manifest
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
        });
        let mut labels = LabelIndex::read(output)?.unwrap_or_default();
        let mut clips = Vec::with_capacity(rows.len());
        for (line, map) in rows {
            let clip = Clip::from_row(line, map, &opts.columns, opts.clip_length);
            if let Some(label) = &clip.label {
                labels.extend(std::iter::once(label.as_str()));
            }
            clips.push(clip);
        }
        let mut manifest = if opts.segments {
            Manifest::by_video(clips, &root, &labels, opts.frame_rate)
        } else {
            Manifest::by_clip(clips, &root, &labels)
        };
        manifest.labels = (!labels.is_empty()).then_some(labels);
        Ok(manifest)
    }

    /// An item per row, the rows of a video together (in the order of its
    /// first row), each video's in the manifest's order.
    fn by_clip(clips: Vec<Clip>, root: &Path, labels: &LabelIndex) -> Manifest {
        let mut sources = Sources::default();
        let mut per_source: Vec<Vec<Entry>> = Vec::new();
        let mut bad = Vec::new();
        for clip in clips {
            let idx = clip.label.as_deref().and_then(|l| labels.index(l));
            let id = clip.id();
            let meta = compact(&Value::Object(clip.meta));
            match (clip.path, clip.span) {
                (Some(path), Ok(span)) => {
                    let k = sources.index(root, &path);
                    if per_source.len() <= k as usize {
                        per_source.resize_with(k as usize + 1, Vec::new);
                    }
                    per_source[k as usize].push(Entry {
                        line: clip.line,
                        id,
                        meta,
                        idx,
                        what: Ok((k, span)),
                    });
                }
                _ => bad.push(Entry {
                    line: clip.line,
                    id,
                    meta,
                    idx,
                    what: Err(clip.problem.unwrap_or_default()),
                }),
            }
        }
        let mut entries: Vec<Entry> = per_source.into_iter().flatten().collect();
        entries.extend(bad);
        Manifest {
            entries,
            sources: sources.paths,
            labels: None,
        }
    }

    /// An item per video: its rows as its `segments` (their columns, with
    /// `start` and `end` in seconds and each label's `idx`), its frames
    /// from the start of the video to the end of its last row (to its end
    /// when a row has no end), so that a segment's frames are found from
    /// its seconds and the item's `fps` or frame times.
    fn by_video(
        clips: Vec<Clip>,
        root: &Path,
        labels: &LabelIndex,
        frame_rate: Option<f64>,
    ) -> Manifest {
        let mut sources = Sources::default();
        // Each video: its path as the manifest gives it, its first row, its
        // segments and the end of the last.
        let mut videos: Vec<(String, usize, Vec<Value>, f64)> = Vec::new();
        let mut bad = Vec::new();
        for clip in clips {
            let idx = clip.label.as_deref().and_then(|l| labels.index(l));
            match (&clip.path, &clip.span) {
                (Some(path), Ok(span)) => {
                    let k = sources.index(root, path) as usize;
                    if videos.len() <= k {
                        videos.push((path.clone(), clip.line, Vec::new(), 0.0));
                    }
                    let mut segment = clip.meta.clone();
                    if let Some(idx) = idx {
                        segment.insert("idx".into(), Value::Int(idx));
                    }
                    let (_, _, list, end) = &mut videos[k];
                    list.push(Value::Object(segment));
                    *end = end.max(span.end);
                }
                _ => bad.push(Entry {
                    line: clip.line,
                    id: clip.id(),
                    meta: compact(&Value::Object(clip.meta)),
                    idx,
                    what: Err(clip.problem.unwrap_or_default()),
                }),
            }
        }
        let mut entries: Vec<Entry> = videos
            .into_iter()
            .enumerate()
            .map(|(k, (path, first_line, segments, end))| {
                let mut meta = Map::default();
                meta.insert("path".into(), Value::from(path.as_str()));
                if let Some(rate) = frame_rate {
                    meta.insert("fps".into(), Value::Float(rate));
                }
                meta.insert(SEGMENTS_KEY.into(), Value::Array(segments));
                Entry {
                    line: first_line,
                    id: path,
                    meta: compact(&Value::Object(meta)),
                    idx: None,
                    what: Ok((
                        u32::try_from(k).unwrap_or(u32::MAX),
                        Span { start: 0.0, end },
                    )),
                }
            })
            .collect();
        entries.extend(bad);
        Manifest {
            entries,
            sources: sources.paths,
            labels: None,
        }
    }

    /// The items' ids, in order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.id.as_str())
    }

    /// The number of distinct videos.
    pub fn videos(&self) -> usize {
        self.sources.len()
    }
}

impl DatasetAdapter for Manifest {
    fn len(&self) -> usize {
        self.entries.len()
    }

    fn id(&self, index: usize) -> String {
        self.entries[index].id.clone()
    }

    fn item(&self, index: usize) -> std::result::Result<Item, ItemError> {
        let entry = &self.entries[index];
        let (source, span) = entry.what.clone().map_err(ItemError::new)?;
        let meta = expand(&entry.meta, entry.idx)?;
        Ok(Item {
            meta,
            frames: FrameSource::Clip {
                path: self.sources[source as usize].clone(),
                span,
            },
        })
    }

    fn labels(&self) -> Option<&LabelIndex> {
        self.labels.as_ref()
    }

    fn origin(&self, index: usize) -> Option<String> {
        Some(format!("row {}", self.entries[index].line))
    }

    fn source(&self, index: usize) -> Option<u64> {
        self.entries[index]
            .what
            .as_ref()
            .ok()
            .map(|(source, _)| u64::from(*source))
    }
}

/// The distinct videos, numbered in order of first appearance.
#[derive(Default)]
struct Sources {
    paths: Vec<PathBuf>,
    by_path: HashMap<PathBuf, u32>,
}

impl Sources {
    fn index(&mut self, root: &Path, path: &str) -> u32 {
        let resolved = root.join(path);
        if let Some(&k) = self.by_path.get(&resolved) {
            return k;
        }
        let k = u32::try_from(self.paths.len()).unwrap_or(u32::MAX);
        self.by_path.insert(resolved.clone(), k);
        self.paths.push(resolved);
        k
    }
}

/// A row as a clip, before it is placed.
struct Clip {
    line: usize,
    given_id: Option<String>,
    path: Option<String>,
    label: Option<String>,
    span: std::result::Result<Span, ()>,
    /// Why the row cannot be a clip.
    problem: Option<String>,
    meta: Map,
}

impl Clip {
    fn from_row(line: usize, mut meta: Map, columns: &Columns, clip_length: Option<f64>) -> Clip {
        let present = |v: Option<&Value>| -> Option<Value> {
            match v {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if s.trim().is_empty() => None,
                Some(v) => Some(v.clone()),
            }
        };
        let path = present(meta.get(&columns.path)).map(|v| match v {
            Value::String(s) => s,
            other => JsonSerializer::value_to_string(&other),
        });
        let given_id = present(meta.get(&columns.id))
            .map(|v| id_string(&v).unwrap_or_else(|| JsonSerializer::value_to_string(&v)));
        let label = present(meta.get(&columns.label)).map(|v| match v {
            Value::String(s) => s,
            other => JsonSerializer::value_to_string(&other),
        });
        let mut problem = None;
        let seconds = |role: &str, column: &str| -> std::result::Result<Option<f64>, String> {
            match present(meta.get(column)) {
                None => Ok(None),
                Some(v) => as_seconds(&v).map(Some).ok_or_else(|| {
                    format!(
                        "{role} {} is not seconds",
                        JsonSerializer::value_to_string(&v)
                    )
                }),
            }
        };
        let start = seconds("start", &columns.start);
        let end = seconds("end", &columns.end);
        let span = match (start, end) {
            (Err(e), _) | (_, Err(e)) => Err(e),
            (Ok(start), Ok(end)) => {
                let s = start.unwrap_or(0.0);
                let e = end
                    .or_else(|| start.zip(clip_length).map(|(s, l)| s + l))
                    .unwrap_or(f64::INFINITY);
                if s < 0.0 {
                    Err(format!("start {s} is negative"))
                } else if e <= s {
                    Err(format!("end {e} is not after start {s}"))
                } else {
                    Ok((
                        start.map(|_| s),
                        (e.is_finite()).then_some(e),
                        Span { start: s, end: e },
                    ))
                }
            }
        };
        let span = match span {
            Ok((start, end, span)) => {
                // The seconds, under the roles' own names.
                if let Some(s) = start {
                    meta.insert("start".into(), Value::Float(s));
                }
                if let Some(e) = end {
                    meta.insert("end".into(), Value::Float(e));
                }
                Ok(span)
            }
            Err(why) => {
                problem = Some(why);
                Err(())
            }
        };
        if path.is_none() && problem.is_none() {
            problem = Some(format!("row has no {:?}", columns.path));
        }
        Clip {
            line,
            given_id,
            path,
            label,
            span,
            problem,
            meta,
        }
    }

    /// The row's id, or one made from its video and span (the same on
    /// every run): `PATH` for a whole video, `PATH@START-END` otherwise;
    /// `row N` for a row that cannot be a clip.
    fn id(&self) -> String {
        if let Some(id) = &self.given_id {
            return id.clone();
        }
        let (Some(path), None) = (&self.path, &self.problem) else {
            return format!("row {}", self.line);
        };
        match self.span {
            Ok(span) if span.end.is_finite() => format!("{path}@{}-{}", span.start, span.end),
            Ok(span) if span.start > 0.0 => format!("{path}@{}-", span.start),
            _ => path.clone(),
        }
    }
}

/// Seconds from a number, a numeric string or `H:MM:SS.fff`.
fn as_seconds(v: &Value) -> Option<f64> {
    let x = match v {
        Value::String(s) => {
            let s = s.trim();
            s.parse::<f64>().ok().or_else(|| timestamp_seconds(s))?
        }
        other => other.as_f64()?,
    };
    x.is_finite().then_some(x)
}

/// The kinds of manifest file, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Csv,
    Jsonl,
    Parquet,
}

fn kind_of(path: &Path) -> Result<Kind> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    if name.ends_with(".csv") {
        Ok(Kind::Csv)
    } else if name.ends_with(".jsonl") || name.ends_with(".ndjson") {
        Ok(Kind::Jsonl)
    } else if name.ends_with(".parquet") {
        Ok(Kind::Parquet)
    } else {
        Err(Error::input(
            path,
            "not a manifest: the name must end in .csv, .jsonl (or .ndjson) or .parquet",
        ))
    }
}

/// Every row of a manifest, its columns in the file's order; checks that
/// the file has a path column.
fn read_rows(path: &Path, columns: &Columns) -> Result<Vec<Row>> {
    let rows = match kind_of(path)? {
        Kind::Csv => csv_rows(path, &columns.path)?,
        Kind::Jsonl => jsonl_rows(path)?,
        Kind::Parquet => parquet_rows(path, &columns.path)?,
    };
    Ok(rows)
}

fn csv_rows(path: &Path, path_column: &str) -> Result<Vec<Row>> {
    let bytes = crate::adapters::read_bytes(path)?;
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(&bytes[..]);
    let headers = reader
        .headers()
        .map_err(|e| Error::input(path, format!("line 1: {e}")))?
        .clone();
    if !headers.iter().any(|h| h == path_column) {
        return Err(Error::input(
            path,
            format!(
                "line 1: no {path_column:?} column in the header ({})",
                headers.iter().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| Error::input(path, csv_error(&e, &headers)))?;
        let line = record
            .position()
            .map_or(0, |p| usize::try_from(p.line()).unwrap_or(0));
        let map = headers
            .iter()
            .zip(record.iter())
            .map(|(h, v)| {
                (
                    h.to_owned(),
                    if v.is_empty() {
                        Value::Null
                    } else {
                        csv_value(v)
                    },
                )
            })
            .collect();
        rows.push((line, map));
    }
    Ok(rows)
}

/// A CSV error as one line naming the row (and the column where there is
/// one).
fn csv_error(e: &csv::Error, headers: &csv::StringRecord) -> String {
    match e.kind() {
        csv::ErrorKind::UnequalLengths {
            pos,
            expected_len,
            len,
        } => {
            let line = pos.as_ref().map_or(0, csv::Position::line);
            let column = if len < expected_len {
                headers.get(usize::try_from(*len).unwrap_or(0))
            } else {
                None
            };
            format!(
                "line {line}: {len} fields where the header has {expected_len}{} (a quote not closed, or a stray comma?)",
                column.map_or(String::new(), |c| format!(", column {c:?} missing"))
            )
        }
        csv::ErrorKind::Utf8 { pos, err } => format!(
            "line {}: column {:?} is not UTF-8 text",
            pos.as_ref().map_or(0, csv::Position::line),
            headers.get(err.field()).unwrap_or("?")
        ),
        _ => e.to_string(),
    }
}

fn jsonl_rows(path: &Path) -> Result<Vec<Row>> {
    let bytes = crate::adapters::read_bytes(path)?;
    let mut rows = Vec::new();
    for (n, line) in BufReader::new(&bytes[..]).split(b'\n').enumerate() {
        let line_no = n + 1;
        let line = line.map_err(|e| Error::io("reading", path, e))?;
        let text = line.strip_suffix(b"\r").unwrap_or(&line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value = JsonSerializer::parse_value(text)
            .map_err(|e| Error::input(path, format!("line {line_no}: not JSON ({e})")))?;
        let Value::Object(map) = value else {
            return Err(Error::input(
                path,
                format!("line {line_no}: not a JSON object (each line is one row)"),
            ));
        };
        rows.push((line_no, map));
    }
    Ok(rows)
}

fn parquet_rows(path: &Path, path_column: &str) -> Result<Vec<Row>> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let file = File::open(path).map_err(|e| Error::io("opening", path, e))?;
    let reader = SerializedFileReader::new(file)
        .map_err(|e| Error::input(path, format!("not a Parquet file: {e}")))?;
    let schema = reader.metadata().file_metadata().schema_descr_ptr();
    let names: Vec<String> = schema
        .root_schema()
        .get_fields()
        .iter()
        .map(|f| f.name().to_owned())
        .collect();
    if !names.iter().any(|n| n == path_column) {
        return Err(Error::input(
            path,
            format!(
                "no {path_column:?} column (the columns are {})",
                names.join(", ")
            ),
        ));
    }
    let mut rows = Vec::new();
    let iter = reader
        .get_row_iter(None)
        .map_err(|e| Error::input(path, format!("row 1: {e}")))?;
    for (n, row) in iter.enumerate() {
        let row = row.map_err(|e| Error::input(path, format!("row {}: {e}", n + 1)))?;
        let map = row
            .get_column_iter()
            .map(|(name, field)| (name.clone(), from_json(field.to_json_value())))
            .collect();
        rows.push((n + 1, map));
    }
    Ok(rows)
}

/// A Parquet value (through its JSON form) as a meta value.
fn from_json(v: serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Value::Int(i),
            (None, Some(u), _) => Value::from(u),
            (_, _, Some(f)) => Value::Float(f),
            _ => Value::Null,
        },
        serde_json::Value::String(s) => Value::String(s),
        serde_json::Value::Array(items) => Value::Array(items.into_iter().map(from_json).collect()),
        serde_json::Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, from_json(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pairs: &[(&str, Value)]) -> Map {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn rows_become_clips_with_their_columns() {
        let c = Columns::default();
        let clip = Clip::from_row(
            2,
            row(&[
                ("path", Value::from("v/a.mp4")),
                ("start", Value::from("0:00:01.500")),
                ("end", Value::Int(3)),
                ("caption", Value::from("a dog")),
            ]),
            &c,
            None,
        );
        assert_eq!(
            clip.span,
            Ok(Span {
                start: 1.5,
                end: 3.0
            })
        );
        assert_eq!(clip.id(), "v/a.mp4@1.5-3");
        assert_eq!(clip.meta.get("start"), Some(&Value::Float(1.5)));
        assert_eq!(clip.meta.get("caption"), Some(&Value::from("a dog")));
        let whole = Clip::from_row(3, row(&[("path", Value::from("b.mp4"))]), &c, None);
        assert_eq!(whole.span, Ok(Span::WHOLE));
        assert_eq!(whole.id(), "b.mp4");
        let vgg = Clip::from_row(
            4,
            row(&[("path", Value::from("c.mp4")), ("start", Value::Int(30))]),
            &c,
            Some(10.0),
        );
        assert_eq!(
            vgg.span,
            Ok(Span {
                start: 30.0,
                end: 40.0
            })
        );
        for (bad, why) in [
            (
                row(&[
                    ("path", Value::from("a")),
                    ("start", Value::Int(2)),
                    ("end", Value::Int(2)),
                ]),
                "end 2 is not after start 2",
            ),
            (
                row(&[("path", Value::from("a")), ("start", Value::from("soon"))]),
                "start \"soon\" is not seconds",
            ),
            (
                row(&[("path", Value::Null), ("id", Value::Int(7))]),
                "row has no \"path\"",
            ),
        ] {
            let clip = Clip::from_row(5, bad, &c, None);
            assert_eq!(clip.problem.as_deref(), Some(why));
        }
    }

    #[test]
    fn roles_map_to_columns() {
        let mut c = Columns::default();
        c.set("path=video").unwrap();
        c.set(" start = start_seconds").unwrap();
        assert_eq!(
            (c.path.as_str(), c.start.as_str()),
            ("video", "start_seconds")
        );
        assert!(
            c.set("length=x")
                .unwrap_err()
                .to_string()
                .contains("unknown role")
        );
        assert!(
            c.set("path")
                .unwrap_err()
                .to_string()
                .contains("ROLE=COLUMN")
        );
    }
}
