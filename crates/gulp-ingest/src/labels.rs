//! `label2idx.json`: the label → class index map written beside the chunks.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use gulp_format::{JsonSerializer, Map, Value};

use crate::error::{Error, Result};

/// The file name, as gulpio2 writes it.
pub const LABEL_FILE: &str = "label2idx.json";

/// Labels and their class indices, in index order of first assignment.
///
/// Extending a directory keeps the indices already in its `label2idx.json`
/// and gives new labels the next free indices in sorted order (gulpio2's 20BN
/// adapters do this; its folder adapters renumber, which we do not copy).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Labels {
    map: Map,
}

impl Labels {
    /// The labels of `output_dir/label2idx.json` if it exists (empty if not),
    /// extended with `labels` (any order, repeats allowed).
    pub fn load_and_extend<'a>(
        output_dir: &Path,
        labels: impl IntoIterator<Item = &'a str>,
    ) -> Result<Labels> {
        let mut this = Labels::load(output_dir)?;
        this.extend(labels);
        Ok(this)
    }

    /// The labels of `output_dir/label2idx.json`, or none if it does not exist.
    pub fn load(output_dir: &Path) -> Result<Labels> {
        let path = output_dir.join(LABEL_FILE);
        // Local, or in an object store (s3://...).
        let Some(bytes) = gulp_io::read_optional(&path)? else {
            return Ok(Labels::default());
        };
        let value = JsonSerializer::parse_value(&bytes)
            .map_err(|e| Error::input(&path, format!("not valid JSON: {e}")))?;
        let Value::Object(map) = value else {
            return Err(Error::input(
                &path,
                "expected a JSON object of label: index",
            ));
        };
        for (label, idx) in &map {
            if idx.as_i64().is_none_or(|i| i < 0) {
                return Err(Error::input(
                    &path,
                    format!("label {label:?} has index {idx:?}; expected a non-negative integer"),
                ));
            }
        }
        Ok(Labels { map })
    }

    /// Adds the labels not yet known, in sorted order, with the next indices.
    pub fn extend<'a>(&mut self, labels: impl IntoIterator<Item = &'a str>) {
        let mut new: Vec<&str> = labels
            .into_iter()
            .filter(|l| !self.map.contains_key(*l))
            .collect();
        new.sort_unstable();
        new.dedup();
        let next = self
            .map
            .values()
            .filter_map(Value::as_i64)
            .max()
            .map_or(0, |m| m + 1);
        for (label, idx) in new.into_iter().zip(next..) {
            self.map.insert(label.to_owned(), Value::Int(idx));
        }
    }

    /// The index of `label`.
    pub fn index(&self, label: &str) -> Option<i64> {
        self.map.get(label).and_then(Value::as_i64)
    }

    /// The number of labels.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are no labels.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Labels and indices in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, i64)> {
        self.map
            .iter()
            .filter_map(|(k, v)| Some((k.as_str(), v.as_i64()?)))
    }

    /// The file's text, as Python's `json.dump` writes the dict.
    pub fn to_json(&self) -> String {
        JsonSerializer::value_to_string(&Value::Object(self.map.clone()))
    }

    /// Writes `output_dir/label2idx.json` atomically (temporary file, sync,
    /// rename), unless it already holds exactly these labels.
    pub fn write(&self, output_dir: &Path) -> Result<PathBuf> {
        let path = output_dir.join(LABEL_FILE);
        let text = self.to_json();
        if fs::read(&path).is_ok_and(|old| old == text.as_bytes()) {
            return Ok(path);
        }
        // A name of this process: the tasks of a sharded ingest write the
        // same labels at the same time.
        let tmp = output_dir.join(format!(
            "{}{LABEL_FILE}.{}",
            gulp_format::TEMP_PREFIX,
            std::process::id()
        ));
        let write = || -> std::io::Result<()> {
            let mut f = File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()
        };
        write().map_err(|e| Error::io("writing", &tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| Error::io("renaming", &tmp, e))?;
        Ok(path)
    }
}
