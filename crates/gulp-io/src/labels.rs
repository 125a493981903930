//! `label2idx.json`: the label → class index map beside a directory's
//! chunks, as gulpio2 writes it. This module is the file's one owner: its
//! name, reading (local or remote), the rule its contents follow, and
//! writing (atomic).
//!
//! The rule: a JSON object whose values are non-negative integers, in file
//! order. Several labels may share an index (a hand-made file that maps
//! synonyms to one class); the indices an ingest assigns are distinct.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use gulp_format::{JsonSerializer, Map, TEMP_PREFIX, Value};

use crate::error::{Error, ErrorKind, Result};

pub use gulp_format::LABEL_FILE;

/// Labels and their class indices, in file order.
///
/// ```
/// # fn main() -> gulp_io::Result<()> {
/// use gulp_io::LabelIndex;
/// let dir = tempfile::tempdir().unwrap();
/// let mut labels = LabelIndex::read(dir.path())?.unwrap_or_default();
/// labels.extend(["pushing", "pulling", "pushing"]);
/// assert_eq!(labels.index("pulling"), Some(0)); // new labels: sorted, next indices
/// labels.write(dir.path())?;
/// assert_eq!(LabelIndex::read(dir.path())?, Some(labels));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelIndex {
    map: Map,
}

fn invalid(path: &Path, reason: impl Into<String>) -> Error {
    ErrorKind::Labels {
        path: path.to_owned(),
        reason: reason.into(),
    }
    .into()
}

impl LabelIndex {
    /// The label file of the directory `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(LABEL_FILE)
    }

    /// The label file of `dir` (local, or `s3://...`), or `None` if it has
    /// none.
    pub fn read(dir: &Path) -> Result<Option<LabelIndex>> {
        let path = LabelIndex::path(dir);
        match gulp_store::read_optional(&path)? {
            Some(bytes) => LabelIndex::parse(&path, &bytes).map(Some),
            None => Ok(None),
        }
    }

    /// Parses the bytes of the label file `path` (named in errors).
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<LabelIndex> {
        let value = JsonSerializer::parse_value(bytes)
            .map_err(|e| invalid(path, format!("not valid JSON: {e}")))?;
        let Value::Object(map) = value else {
            return Err(invalid(path, "expected a JSON object of label: index"));
        };
        for (label, index) in &map {
            if index.as_i64().is_none_or(|i| i < 0) {
                return Err(invalid(
                    path,
                    format!("label {label:?} has index {index:?}; expected a non-negative integer"),
                ));
            }
        }
        Ok(LabelIndex { map })
    }

    /// Labels with the given indices, in the given order (an index that is
    /// negative is refused).
    pub fn from_pairs<'a>(
        path: &Path,
        pairs: impl IntoIterator<Item = (&'a str, i64)>,
    ) -> Result<LabelIndex> {
        let mut map = Map::default();
        for (label, index) in pairs {
            if index < 0 {
                return Err(invalid(
                    path,
                    format!("label {label:?} has index {index}; expected a non-negative integer"),
                ));
            }
            map.insert(label.to_owned(), Value::Int(index));
        }
        Ok(LabelIndex { map })
    }

    /// Adds the labels not yet known, in sorted order, with the next free
    /// indices (as gulpio2's 20BN adapters extend a directory; its folder
    /// adapters renumber, which gulp does not copy).
    pub fn extend<'a>(&mut self, labels: impl IntoIterator<Item = &'a str>) {
        let mut new: Vec<&str> = labels
            .into_iter()
            .filter(|l| !self.map.contains_key(*l))
            .collect();
        new.sort_unstable();
        new.dedup();
        let next = self.iter().map(|(_, i)| i + 1).max().unwrap_or(0);
        for (label, index) in new.into_iter().zip(next..) {
            self.map.insert(label.to_owned(), Value::Int(index));
        }
    }

    /// Adds the labels of `other` (the label file `from`, named in errors);
    /// a label that `other` numbers differently is an error.
    pub fn merge(&mut self, other: &LabelIndex, from: &Path) -> Result<()> {
        for (label, index) in other.iter() {
            match self.index(label) {
                Some(known) if known != index => {
                    return Err(invalid(
                        from,
                        format!("label {label:?} is {index} here but {known} elsewhere"),
                    ));
                }
                Some(_) => {}
                None => {
                    self.map.insert(label.to_owned(), Value::Int(index));
                }
            }
        }
        Ok(())
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

    /// The same labels in index order (file order among equal indices).
    #[must_use]
    pub fn sorted(&self) -> LabelIndex {
        let mut pairs: Vec<(&str, i64)> = self.iter().collect();
        pairs.sort_by_key(|&(_, i)| i);
        LabelIndex {
            map: pairs
                .into_iter()
                .map(|(l, i)| (l.to_owned(), Value::Int(i)))
                .collect(),
        }
    }

    /// The file's text, as Python's `json.dump` writes the dict.
    pub fn to_json(&self) -> String {
        JsonSerializer::value_to_string(&Value::Object(self.map.clone()))
    }

    /// Writes the label file of directory `dir` atomically: locally under a
    /// temporary name of this process, synced and renamed (unless it
    /// already holds exactly these labels); in an object store, one PUT.
    /// Returns its path.
    pub fn write(&self, dir: &Path) -> Result<PathBuf> {
        let path = LabelIndex::path(dir);
        let text = self.to_json();
        if gulp_store::is_remote(dir) {
            gulp_store::write_object(&path, text.into_bytes())?;
            return Ok(path);
        }
        if fs::read(&path).is_ok_and(|old| old == text.as_bytes()) {
            return Ok(path);
        }
        // A name of this process: the tasks of a sharded ingest may write
        // the same labels at the same time.
        let tmp = dir.join(format!("{TEMP_PREFIX}{LABEL_FILE}.{}", std::process::id()));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<LabelIndex> {
        LabelIndex::parse(Path::new("d/label2idx.json"), text.as_bytes())
    }

    #[test]
    fn one_rule_for_every_reader() {
        let labels = parse(r#"{"b": 1, "a": 0, "synonym of a": 0}"#).expect("valid");
        assert_eq!(
            labels.iter().collect::<Vec<_>>(),
            [("b", 1), ("a", 0), ("synonym of a", 0)]
        );
        for (text, reason) in [
            ("[1, 2]", "expected a JSON object"),
            (r#"{"a": -1}"#, "non-negative integer"),
            (r#"{"a": 1.5}"#, "non-negative integer"),
            (r#"{"a": "0"}"#, "non-negative integer"),
            ("{", "not valid JSON"),
        ] {
            let err = parse(text).expect_err(text).to_string();
            assert!(
                err.contains("d/label2idx.json") && err.contains(reason),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn extend_numbers_new_labels_after_the_known_ones() {
        let mut labels = parse(r#"{"z": 0, "y": 4}"#).expect("valid");
        labels.extend(["b", "a", "z", "b"]);
        assert_eq!(
            labels.iter().collect::<Vec<_>>(),
            [("z", 0), ("y", 4), ("a", 5), ("b", 6)]
        );
    }

    #[test]
    fn merge_refuses_a_label_numbered_twice() {
        let mut labels = parse(r#"{"a": 0}"#).expect("valid");
        labels
            .merge(
                &parse(r#"{"b": 1, "a": 0}"#).expect("valid"),
                Path::new("x"),
            )
            .expect("consistent");
        assert_eq!(labels.len(), 2);
        let err = labels
            .merge(
                &parse(r#"{"b": 2}"#).expect("valid"),
                Path::new("s/label2idx.json"),
            )
            .expect_err("conflict")
            .to_string();
        assert!(
            err.contains("s/label2idx.json") && err.contains(r#""b" is 2"#),
            "{err}"
        );
    }

    #[test]
    fn written_atomically_and_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(LabelIndex::read(dir.path()).expect("read"), None);
        let labels = parse(r#"{"b": 1, "a": 0}"#).expect("valid").sorted();
        labels.write(dir.path()).expect("write");
        let text = fs::read_to_string(dir.path().join(LABEL_FILE)).expect("file");
        assert_eq!(text, r#"{"a": 0, "b": 1}"#);
        assert_eq!(LabelIndex::read(dir.path()).expect("read"), Some(labels));
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, [LABEL_FILE]);
    }
}
