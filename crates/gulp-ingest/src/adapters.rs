//! The built-in adapters: every input layout of gulpio2's ingest scripts.
//!
//! Each constructor reads the list or walks the folders once and returns a
//! [`Dataset`]; frames are found and decoded later, by the pipeline's workers.
//! Labels are numbered as gulpio2's 20BN adapters do for every adapter with
//! labels: sorted, after the indices of an existing `label2idx.json`.
//!
//! Where gulpio2 has a bug, these do what it meant (see
//! `docs/architecture.md`): the video folder adapter takes every video
//! extension (gulpio2 only `.webm`), folder paths need no trailing slash,
//! image-list ids keep the whole relative path (gulpio2 keeps the file name
//! only, so ids collide), and fields are trimmed.

use std::collections::HashMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use gulp_format::{JsonSerializer, Map, Value};

use crate::dataset::{DatasetAdapter, FrameSource, Item};
use crate::error::{Error, ItemError, Result};
use crate::frames::{is_image_path, is_video_path};
use gulp_io::LabelIndex;

/// The frame rate gulpio2's 20BN video scripts sample at by default.
pub const TWENTY_BN_FRAME_RATE: f64 = 8.0;

/// Where one entry's frames are.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// The only video file in this folder.
    VideoIn(PathBuf),
    /// This video file.
    Video(PathBuf),
    /// The JPEG files of this folder, in name order.
    JpegFolder(PathBuf),
    /// This image file.
    Image(PathBuf),
}

/// An item of a list: about 200 bytes whatever its meta, so that a list of
/// ten million items is held in 2 GB, not the 8 GB its metas take as
/// values (a map, its keys and strings, each allocated).
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    id: String,
    /// Its meta as JSON text, without `"idx"`.
    meta: Box<str>,
    /// Its label's number, the meta's `"idx"` (added last).
    idx: Option<i64>,
    source: Source,
}

/// The meta an entry keeps as JSON text ([`compact`]), with its label's
/// number added last as `"idx"`.
pub(crate) fn expand(meta: &str, idx: Option<i64>) -> std::result::Result<Value, ItemError> {
    let mut meta = JsonSerializer::parse_value(meta.as_bytes())
        .map_err(|e| ItemError::new(format!("its meta does not read back: {e}")))?;
    if let (Some(idx), Value::Object(map)) = (idx, &mut meta) {
        map.insert("idx".into(), Value::Int(idx));
    }
    Ok(meta)
}

/// A meta as the JSON text an [`Entry`] keeps.
pub(crate) fn compact(meta: &Value) -> Box<str> {
    JsonSerializer::value_to_string(meta).into_boxed_str()
}

/// A dataset read by one of the built-in adapters.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    entries: Vec<Entry>,
    labels: Option<LabelIndex>,
    frame_rate: Option<f64>,
}

impl DatasetAdapter for Dataset {
    fn len(&self) -> usize {
        self.entries.len()
    }

    fn id(&self, index: usize) -> String {
        self.entries[index].id.clone()
    }

    fn item(&self, index: usize) -> std::result::Result<Item, ItemError> {
        let entry = &self.entries[index];
        let meta = expand(&entry.meta, entry.idx)?;
        let frames = match &entry.source {
            Source::Video(path) => FrameSource::Video(path.clone()),
            Source::VideoIn(dir) => FrameSource::Video(single_video(dir)?),
            Source::JpegFolder(dir) => FrameSource::ImageFiles(jpeg_files(dir)?),
            Source::Image(path) => FrameSource::ImageFiles(vec![path.clone()]),
        };
        Ok(Item { meta, frames })
    }

    fn labels(&self) -> Option<&LabelIndex> {
        self.labels.as_ref()
    }

    fn default_frame_rate(&self) -> Option<f64> {
        self.frame_rate
    }
}

/// An item before the labels are numbered: its meta (as an [`Entry`]
/// keeps it) gets `"idx"` last.
struct Row {
    id: String,
    meta: Box<str>,
    label: String,
    source: Source,
}

impl Row {
    /// gulpio2's meta, `{"id": id, "label": label, ["path": path]}` (then
    /// `"idx"`), with `id_value` the id as the input gave it.
    fn labeled(
        id: String,
        id_value: Value,
        label: String,
        path: Option<&Path>,
        source: Source,
    ) -> Row {
        let mut meta = Map::default();
        meta.insert("id".into(), id_value);
        meta.insert("label".into(), Value::from(label.as_str()));
        if let Some(p) = path {
            meta.insert("path".into(), Value::from(p.to_string_lossy().into_owned()));
        }
        Row {
            id,
            meta: compact(&Value::Object(meta)),
            label,
            source,
        }
    }
}

impl Dataset {
    /// The entries' ids in order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.id.as_str())
    }

    /// Numbers the rows' labels (after those of `output/label2idx.json`) and
    /// adds each row's `"idx"`.
    fn with_labels(rows: Vec<Row>, output: &Path, frame_rate: Option<f64>) -> Result<Dataset> {
        let mut labels = LabelIndex::read(output)?.unwrap_or_default();
        labels.extend(rows.iter().map(|r| r.label.as_str()));
        let entries = rows
            .into_iter()
            .map(
                |Row {
                     id,
                     meta,
                     label,
                     source,
                 }| Entry {
                    id,
                    meta,
                    idx: labels.index(&label),
                    source,
                },
            )
            .collect();
        Ok(Dataset {
            entries,
            labels: Some(labels),
            frame_rate,
        })
    }

    /// 20BN JSON videos (Something-Something, Jester): a JSON list (`.json`
    /// or gzipped) of objects with `id` and a label field (gulpio2's default
    /// `template`); the video of id X is the only video file in
    /// `videos_dir/X/`. Sampled at 8 fps unless the run sets a rate.
    pub fn twenty_bn_json(
        input_json: &Path,
        videos_dir: &Path,
        output: &Path,
        label_name: &str,
    ) -> Result<Dataset> {
        let list = read_json(input_json)?;
        let Value::Array(items) = list else {
            return Err(Error::input(input_json, "expected a JSON list of objects"));
        };
        let mut rows = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let at = |what: &str| Error::input(input_json, format!("entry #{i}: {what}"));
            let id_value = item.get("id").cloned().ok_or_else(|| at("no \"id\""))?;
            let id =
                id_string(&id_value).ok_or_else(|| at("\"id\" is not a string or an integer"))?;
            let label = match item.get(label_name) {
                Some(Value::String(s)) => s.clone(),
                Some(other) => JsonSerializer::value_to_string(other),
                None => return Err(at(&format!("no {label_name:?} field"))),
            };
            let source = Source::VideoIn(videos_dir.join(&id));
            rows.push(Row::labeled(id, id_value, label, None, source));
        }
        Dataset::with_labels(rows, output, Some(TWENTY_BN_FRAME_RATE))
    }

    /// 20BN CSV webm (Jester): `id;label` lines (`id` alone for a test split,
    /// labelled `dummy`); the video of id X is `videos_dir/X.webm`. Sampled at
    /// 8 fps unless the run sets a rate.
    pub fn twenty_bn_csv_webm(
        input_csv: &Path,
        videos_dir: &Path,
        output: &Path,
    ) -> Result<Dataset> {
        let rows = read_semicolon_csv(input_csv)?
            .into_iter()
            .map(|(id, label)| {
                let source = Source::Video(videos_dir.join(format!("{id}.webm")));
                Row::labeled(id.clone(), Value::from(id), label, None, source)
            })
            .collect();
        Dataset::with_labels(rows, output, Some(TWENTY_BN_FRAME_RATE))
    }

    /// 20BN CSV JPEG frame folders: `id;label` lines; the frames of id X are
    /// the JPEG files of `jpeg_dir/X/` in name order. JPEGs are stored as they
    /// are unless a resize is asked for.
    pub fn twenty_bn_csv_jpeg(input_csv: &Path, jpeg_dir: &Path, output: &Path) -> Result<Dataset> {
        let rows = read_semicolon_csv(input_csv)?
            .into_iter()
            .map(|(id, label)| {
                let source = Source::JpegFolder(jpeg_dir.join(&id));
                Row::labeled(id.clone(), Value::from(id), label, None, source)
            })
            .collect();
        Dataset::with_labels(rows, output, None)
    }

    /// A video folder: `videos_dir/<label>/<video>` with any common video
    /// extension; the id is `<label>-<file name>`.
    pub fn video_folder(videos_dir: &Path, output: &Path) -> Result<Dataset> {
        Dataset::class_folders(videos_dir, output, is_video_path, Source::Video)
    }

    /// An image folder: `images_dir/<label>/<image>` (JPEG, PNG, BMP, GIF,
    /// TIFF, WebP); one frame per item, id `<label>-<file name>`.
    pub fn image_folder(images_dir: &Path, output: &Path) -> Result<Dataset> {
        Dataset::class_folders(images_dir, output, is_image_path, Source::Image)
    }

    /// `root/<label>/<file>` for the files `keep` accepts, each an item
    /// whose frames come from `source(path)`; meta as gulpio2's folder
    /// adapters write it (with the folder as `path`).
    fn class_folders(
        root: &Path,
        output: &Path,
        keep: fn(&Path) -> bool,
        source: fn(PathBuf) -> Source,
    ) -> Result<Dataset> {
        let rows = class_folder(root, keep)?
            .into_iter()
            .map(|(id, label, dir, path)| {
                Row::labeled(id.clone(), Value::from(id), label, Some(&dir), source(path))
            })
            .collect();
        Dataset::with_labels(rows, output, None)
    }

    /// An image list: one `path,label` per line (the label is after the last
    /// comma), paths relative to `root` (or absolute); id `<label>-<path>`.
    pub fn image_list(list_file: &Path, root: &Path, output: &Path) -> Result<Dataset> {
        let text = read_text(list_file)?;
        let mut rows = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let Some((path, label)) = line.rsplit_once(',') else {
                return Err(Error::input(
                    list_file,
                    format!("line {}: expected `path,label`, got {line:?}", n + 1),
                ));
            };
            let (path, label) = (path.trim(), label.trim());
            if path.is_empty() || label.is_empty() {
                return Err(Error::input(
                    list_file,
                    format!("line {}: empty path or label", n + 1),
                ));
            }
            let id = format!("{label}-{path}");
            rows.push(Row::labeled(
                id.clone(),
                Value::from(id),
                label.to_owned(),
                None,
                Source::Image(root.join(path)),
            ));
        }
        Dataset::with_labels(rows, output, None)
    }

    /// Kinetics: the CSV of the official annotations (a header with at least
    /// `label`, `youtube_id`, `time_start`, `time_end`); the video of a row is
    /// found anywhere under `videos_dir` as `<youtube_id>_<start:06>_<end:06>.*`
    /// (the crawler's naming) or `<youtube_id>.*`. The id is the YouTube id;
    /// the meta is the row (numbers as numbers) plus `idx`. Rows whose video
    /// is missing are reported as skipped items.
    pub fn kinetics(input_csv: &Path, videos_dir: &Path, output: &Path) -> Result<Dataset> {
        let (mut reader, headers) = csv_with_header(input_csv)?;
        let col = |name: &str| column(&headers, input_csv, name);
        let (c_label, c_id, c_start, c_end) = (
            col("label")?,
            col("youtube_id")?,
            col("time_start")?,
            col("time_end")?,
        );
        let videos = index_videos(videos_dir)?;
        let mut rows = Vec::new();
        for (n, record) in reader.records().enumerate() {
            let record =
                record.map_err(|e| Error::input(input_csv, format!("row {}: {e}", n + 2)))?;
            let field = |c: usize| record.get(c).unwrap_or("").to_owned();
            let (label, id) = (field(c_label), field(c_id));
            if id.is_empty() {
                return Err(Error::input(
                    input_csv,
                    format!("row {}: empty youtube_id", n + 2),
                ));
            }
            let mut meta = Map::default();
            for (h, v) in headers.iter().zip(record.iter()) {
                let value = v.parse::<i64>().map_or_else(|_| Value::from(v), Value::Int);
                meta.insert(h.to_owned(), value);
            }
            let key = format!(
                "{id}_{:0>6}_{:0>6}",
                field(c_start)
                    .parse::<u64>()
                    .map_or(field(c_start), |v| v.to_string()),
                field(c_end)
                    .parse::<u64>()
                    .map_or(field(c_end), |v| v.to_string())
            );
            let source = videos
                .get(&key)
                .or_else(|| videos.get(&id))
                .cloned()
                .unwrap_or_else(|| videos_dir.join(format!("{key}.mp4")));
            rows.push(Row {
                id,
                meta: compact(&Value::Object(meta)),
                label,
                source: Source::Video(source),
            });
        }
        Dataset::with_labels(rows, output, None)
    }

    /// ActivityNet: the annotation JSON (`{"database": {youtube_id: entry}}`)
    /// and videos directly in `videos_dir` named `<youtube_id>.<ext>` (or
    /// `v_<youtube_id>.<ext>`); a video is taken when its entry's `subset` is
    /// `phase`. Partial downloads (`*.part`) are ignored. The meta is the
    /// whole database entry: its `annotations` (`[{"segment": [t0, t1],
    /// "label": ...}]`, in seconds) and `duration` are the segments the
    /// loader's `Segments::activitynet` reads. The annotations' labels are
    /// numbered (sorted, after those of `output/label2idx.json`).
    pub fn activitynet(
        input_json: &Path,
        videos_dir: &Path,
        output: &Path,
        phase: &str,
    ) -> Result<Dataset> {
        let json = read_json(input_json)?;
        let Some(Value::Object(db)) = json.get("database") else {
            return Err(Error::input(input_json, "no \"database\" object"));
        };
        let mut files: Vec<PathBuf> = fs::read_dir(videos_dir)
            .map_err(|e| Error::io("listing", videos_dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && is_video_path(p))
            .collect();
        files.sort();
        let mut entries = Vec::new();
        let mut labels = LabelIndex::read(output)?.unwrap_or_default();
        for path in files {
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let stem = name.split('.').next().unwrap_or(name);
            let (id, entry) = match db.get(stem) {
                Some(e) => (stem, e),
                None => match stem
                    .strip_prefix("v_")
                    .and_then(|s| db.get(s).map(|e| (s, e)))
                {
                    Some(found) => found,
                    None => continue,
                },
            };
            if entry.get("subset").and_then(Value::as_str) != Some(phase) {
                continue;
            }
            let annotations = entry.get("annotations").and_then(Value::as_array);
            labels.extend(
                annotations
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|a| a.get("label").and_then(Value::as_str)),
            );
            entries.push(Entry {
                id: id.to_owned(),
                meta: compact(entry),
                idx: None,
                source: Source::Video(path),
            });
        }
        Ok(Dataset {
            entries,
            labels: (!labels.is_empty()).then_some(labels),
            frame_rate: None,
        })
    }

    /// EPIC-Kitchens: the action annotation CSV (`EPIC_100_train.csv`, or
    /// EPIC-55's: a header with at least `video_id`, `start_frame` and
    /// `stop_frame`), one item per video with the video's rows as its
    /// segments, in the CSV's order. The video of id X is a video file
    /// `X.<ext>` anywhere under `videos_dir`, or a folder `X/` of JPEG frames
    /// (EPIC's `rgb_frames/X/frame_0000000001.jpg ...`). The meta is
    /// `{"video_id", "participant_id", "segments": [...]}`: each segment is
    /// its row (numbers as numbers, lists such as `all_noun_classes` as
    /// lists) plus `start` and `end`, its frames `[start_frame - 1,
    /// stop_frame)` counted from 0 (EPIC counts from 1 and includes the
    /// stop frame), and `start_time`/`end_time` in seconds from the
    /// timestamps. The frame numbers are the source's: ingest at its own
    /// rate (no `--frame-rate`) for them to hold, or use the seconds. Rows
    /// whose video is missing are reported as skipped items.
    pub fn epic_kitchens(input_csv: &Path, videos_dir: &Path) -> Result<Dataset> {
        let (mut reader, headers) = csv_with_header(input_csv)?;
        let col = |name: &str| column(&headers, input_csv, name);
        let (c_video, c_start, c_stop) =
            (col("video_id")?, col("start_frame")?, col("stop_frame")?);
        let c_participant = headers.iter().position(|h| h == "participant_id");
        // Videos in order of first appearance, each with its rows.
        let mut videos: Vec<(String, Option<String>, Vec<Value>)> = Vec::new();
        let mut by_id: HashMap<String, usize> = HashMap::new();
        for (n, record) in reader.records().enumerate() {
            let line = n + 2;
            let record = record.map_err(|e| Error::input(input_csv, format!("row {line}: {e}")))?;
            let field = |c: usize| record.get(c).unwrap_or("");
            let video = field(c_video);
            if video.is_empty() {
                return Err(Error::input(
                    input_csv,
                    format!("row {line}: empty video_id"),
                ));
            }
            let frame = |c: usize| {
                field(c)
                    .parse::<i64>()
                    .ok()
                    .filter(|f| *f >= 1)
                    .ok_or_else(|| {
                        Error::input(
                            input_csv,
                            format!(
                                "row {line}: {} {:?} is not a frame number (1 or more)",
                                &headers[c],
                                field(c)
                            ),
                        )
                    })
            };
            let (start, stop) = (frame(c_start)?, frame(c_stop)?);
            if stop < start {
                return Err(Error::input(
                    input_csv,
                    format!("row {line}: stop_frame {stop} is before start_frame {start}"),
                ));
            }
            let mut segment = Map::default();
            for (h, v) in headers.iter().zip(record.iter()) {
                segment.insert(h.to_owned(), csv_value(v));
            }
            segment.insert("start".into(), Value::Int(start - 1));
            segment.insert("end".into(), Value::Int(stop));
            for (key, column) in [
                ("start_time", "start_timestamp"),
                ("end_time", "stop_timestamp"),
            ] {
                if let Some(seconds) = headers
                    .iter()
                    .position(|h| h == column)
                    .and_then(|c| timestamp_seconds(field(c)))
                {
                    segment.insert(key.into(), Value::Float(seconds));
                }
            }
            let k = *by_id.entry(video.to_owned()).or_insert_with(|| {
                let participant = c_participant.map(|c| field(c).to_owned());
                videos.push((video.to_owned(), participant, Vec::new()));
                videos.len() - 1
            });
            videos[k].2.push(Value::Object(segment));
        }
        let files = index_videos(videos_dir)?;
        let folders = index_folders(videos_dir, &by_id)?;
        let entries = videos
            .into_iter()
            .map(|(id, participant, segments)| {
                let mut meta = Map::default();
                meta.insert("video_id".into(), Value::from(id.as_str()));
                if let Some(p) = participant {
                    meta.insert("participant_id".into(), Value::from(p));
                }
                meta.insert("segments".into(), Value::Array(segments));
                let source = match (files.get(&id), folders.get(&id)) {
                    (Some(video), _) => Source::Video(video.clone()),
                    (None, Some(folder)) => Source::JpegFolder(folder.clone()),
                    (None, None) => Source::Video(videos_dir.join(format!("{id}.MP4"))),
                };
                Entry {
                    id,
                    meta: compact(&Value::Object(meta)),
                    idx: None,
                    source,
                }
            })
            .collect();
        Ok(Dataset {
            entries,
            labels: None,
            frame_rate: None,
        })
    }
}

/// A CSV file with a header row (fields trimmed), and the header.
fn csv_with_header(path: &Path) -> Result<(csv::Reader<fs::File>, csv::StringRecord)> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_path(path)
        .map_err(|e| Error::input(path, e.to_string()))?;
    let headers = reader
        .headers()
        .map_err(|e| Error::input(path, e.to_string()))?
        .clone();
    Ok((reader, headers))
}

/// The index of the column `name` of the CSV `path`'s header.
fn column(headers: &csv::StringRecord, path: &Path, name: &str) -> Result<usize> {
    headers
        .iter()
        .position(|h| h == name)
        .ok_or_else(|| Error::input(path, format!("no {name:?} column in the header")))
}

/// A CSV field as a meta value: an integer, a number, a list (JSON, or a
/// Python list literal such as EPIC's `['tap', 'water']`), else the text.
pub(crate) fn csv_value(text: &str) -> Value {
    if let Ok(i) = text.parse::<i64>() {
        return Value::Int(i);
    }
    if text.starts_with('[') && text.ends_with(']') {
        if let Ok(list @ Value::Array(_)) = JsonSerializer::parse_value(text.as_bytes()) {
            return list;
        }
        if let Some(list) = python_list(text) {
            return Value::Array(list);
        }
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && !text.is_empty() => Value::Float(x),
        _ => Value::from(text),
    }
}

/// A Python list literal of strings (single or double quoted, with
/// backslash escapes) and integers, as `str(list)` prints it.
fn python_list(text: &str) -> Option<Vec<Value>> {
    let inner = text.strip_prefix('[')?.strip_suffix(']')?;
    let mut out = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&first) = chars.peek() else {
            return Some(out);
        };
        if first == '\'' || first == '"' {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next()? {
                    '\\' => s.push(chars.next()?),
                    c if c == first => break,
                    c => s.push(c),
                }
            }
            out.push(Value::from(s));
        } else {
            let mut token = String::new();
            while let Some(c) = chars.next_if(|c| *c != ',') {
                token.push(c);
            }
            out.push(Value::Int(token.trim().parse().ok()?));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        match chars.next() {
            None => return Some(out),
            Some(',') => {}
            Some(_) => return None,
        }
    }
}

/// Seconds of an `HH:MM:SS(.fff)` timestamp.
pub(crate) fn timestamp_seconds(text: &str) -> Option<f64> {
    let mut parts = text.split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let (h, m, s) = (
        h.parse::<u32>().ok()?,
        m.parse::<u32>().ok()?,
        s.parse::<f64>().ok()?,
    );
    (s.is_finite() && s >= 0.0).then(|| f64::from(h) * 3600.0 + f64::from(m) * 60.0 + s)
}

/// The folders named by one of `ids` anywhere under `dir` that hold JPEG
/// files (frame folders), by name.
fn index_folders(dir: &Path, ids: &HashMap<String, usize>) -> Result<HashMap<String, PathBuf>> {
    let mut map = HashMap::new();
    walk(dir, |entry| {
        if let Some(name) = entry.file_name().to_str()
            && entry.file_type().is_dir()
            && ids.contains_key(name)
            && !map.contains_key(name)
            && jpeg_files(entry.path()).is_ok()
        {
            map.insert(name.to_owned(), entry.path().to_owned());
        }
    })?;
    Ok(map)
}

pub(crate) fn id_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::BigInt(b) => Some(b.to_string()),
        _ => None,
    }
}

pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    let bytes = fs::read(path).map_err(|e| Error::io("reading", path, e))?;
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .map_err(|e| Error::input(path, format!("bad gzip data: {e}")))?;
        return Ok(out);
    }
    Ok(bytes)
}

fn read_text(path: &Path) -> Result<String> {
    String::from_utf8(read_bytes(path)?).map_err(|e| {
        Error::input(
            path,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

fn read_json(path: &Path) -> Result<Value> {
    let bytes = read_bytes(path)?;
    JsonSerializer::parse_value(&bytes).map_err(|e| {
        // The parser speaks of meta files; this is an input list.
        let mut reason = e
            .to_string()
            .replacen("invalid JSON meta", "invalid JSON", 1);
        if e.offset().is_some_and(|o| o >= bytes.len() as u64) {
            reason.push_str(" (the file ends here: truncated?)");
        }
        Error::input(path, reason)
    })
}

/// `id;label` or `id` lines (label `dummy`), as gulpio2's 20BN CSV adapters.
fn read_semicolon_csv(path: &Path) -> Result<Vec<(String, String)>> {
    let text = read_text(path)?;
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(b';')
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| Error::input(path, e.to_string()))?;
        let line = record.position().map_or(0, csv::Position::line);
        let id = record.get(0).unwrap_or("");
        if id.is_empty() && record.len() <= 1 {
            continue;
        }
        if id.is_empty() {
            return Err(Error::input(path, format!("line {line}: empty id")));
        }
        let label = match record.len() {
            1 => "dummy",
            2 => record.get(1).unwrap_or(""),
            n => {
                return Err(Error::input(
                    path,
                    format!("line {line}: {n} fields; expected `id;label` or `id`"),
                ));
            }
        };
        rows.push((id.to_owned(), label.to_owned()));
    }
    Ok(rows)
}

/// `(id, label, parent dir, path)` for every matching file under `root`,
/// sorted by path; the label is the name of the file's folder.
fn class_folder(
    root: &Path,
    keep: fn(&Path) -> bool,
) -> Result<Vec<(String, String, PathBuf, PathBuf)>> {
    if !root.is_dir() {
        return Err(Error::input(root, "not a directory"));
    }
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(root)
        .follow_links(true)
        .sort_by_file_name()
    {
        let entry = entry.map_err(|e| {
            let path = e.path().unwrap_or(root).to_owned();
            Error::input(path, e.to_string())
        })?;
        let path = entry.path();
        if !entry.file_type().is_file() || !keep(path) {
            continue;
        }
        let (Some(name), Some(dir)) = (path.file_name().and_then(|n| n.to_str()), path.parent())
        else {
            continue;
        };
        let label = dir
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        out.push((
            format!("{label}-{name}"),
            label,
            dir.to_owned(),
            path.to_owned(),
        ));
    }
    Ok(out)
}

/// File stem → path of every video under `dir`.
fn index_videos(dir: &Path) -> Result<HashMap<String, PathBuf>> {
    let mut map = HashMap::new();
    walk(dir, |entry| {
        let path = entry.path();
        if entry.file_type().is_file()
            && is_video_path(path)
            && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
        {
            map.entry(stem.to_owned())
                .or_insert_with(|| path.to_owned());
        }
    })?;
    Ok(map)
}

/// Calls `each` on every entry under the directory `dir` (links followed),
/// in name order.
fn walk(dir: &Path, mut each: impl FnMut(&walkdir::DirEntry)) -> Result<()> {
    if !dir.is_dir() {
        return Err(Error::input(dir, "not a directory"));
    }
    for entry in walkdir::WalkDir::new(dir)
        .follow_links(true)
        .sort_by_file_name()
    {
        let entry =
            entry.map_err(|e| Error::input(e.path().unwrap_or(dir).to_owned(), e.to_string()))?;
        each(&entry);
    }
    Ok(())
}

fn single_video(dir: &Path) -> std::result::Result<PathBuf, ItemError> {
    let entries = fs::read_dir(dir)
        .map_err(|e| ItemError::at(dir, format!("cannot list video folder: {e}")))?;
    let mut videos: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && is_video_path(p))
        .collect();
    videos.sort();
    match videos.len() {
        1 => Ok(videos.remove(0)),
        0 => Err(ItemError::at(dir, "no video file in the folder")),
        n => Err(ItemError::at(
            dir,
            format!("{n} video files in the folder; expected one"),
        )),
    }
}

fn jpeg_files(dir: &Path) -> std::result::Result<Vec<PathBuf>, ItemError> {
    let entries = fs::read_dir(dir)
        .map_err(|e| ItemError::at(dir, format!("cannot list frame folder: {e}")))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                    e.eq_ignore_ascii_case("jpg") || e.eq_ignore_ascii_case("jpeg")
                })
        })
        .collect();
    if files.is_empty() {
        return Err(ItemError::at(dir, "no JPEG files in the frame folder"));
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_become_numbers_lists_and_text() {
        assert_eq!(csv_value("12"), Value::Int(12));
        assert_eq!(csv_value("0.5"), Value::Float(0.5));
        assert_eq!(csv_value("open tap"), Value::from("open tap"));
        assert_eq!(csv_value(""), Value::from(""));
        assert_eq!(
            csv_value("[3, 7]"),
            Value::Array(vec![Value::Int(3), Value::Int(7)])
        );
        assert_eq!(
            csv_value(r#"['tap', "kid's cup", 'a\'b']"#),
            Value::Array(vec![
                Value::from("tap"),
                Value::from("kid's cup"),
                Value::from("a'b")
            ])
        );
        assert_eq!(csv_value("[]"), Value::Array(Vec::new()));
        // Not a list after all: kept as text.
        assert_eq!(csv_value("['open"), Value::from("['open"));
        assert_eq!(csv_value("[a b]"), Value::from("[a b]"));
    }

    #[test]
    fn timestamps_are_seconds() {
        assert_eq!(timestamp_seconds("00:01:02.5"), Some(62.5));
        assert_eq!(
            timestamp_seconds("99999999:00:00"),
            Some(99_999_999.0 * 3600.0)
        );
        assert_eq!(timestamp_seconds("01:02"), None);
        assert_eq!(timestamp_seconds("a:b:c"), None);
        assert_eq!(timestamp_seconds("00:00:-1"), None);
    }
}
