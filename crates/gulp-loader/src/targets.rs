//! What each sample teaches: read once from the meta when the loader is
//! made into one compact table (a row per sample, not an object per item),
//! and gathered into [`Batch::targets`](crate::Batch::targets) per batch.
//!
//! A key is looked up in the sample's segment first (see
//! [`crate::Segments`]), then in the item's meta (`meta_data[0]`).

use std::fmt;
use std::sync::Arc;

use gulp_format::{JsonSerializer, NO_LABEL, Value};
use gulp_io::LabelIndex;

use crate::fingerprint::Fnv;
use crate::indexed::IndexedSource;

/// A target computed from an item's id, its meta and, for a segment, the
/// segment's object: `Ok(None)` when the item has none (see
/// [`OnMissing`]), `Err` for an error naming the item. Evaluated once per
/// sample when the loader is made.
pub type TargetFn = Arc<
    dyn Fn(&str, &Value, Option<&Value>) -> std::result::Result<Option<Targets>, String>
        + Send
        + Sync,
>;

/// The target of each sample, and so [`Batch::targets`](crate::Batch::targets)'s
/// dtype and shape.
#[derive(Clone, Default)]
pub enum Target {
    /// [`Labels::key`](crate::Labels::key), as batches always had it:
    /// `int64 [B]`, -1 for an item without the key.
    #[default]
    Label,
    /// The class in this key: `int64 [B]` (an integer as it is, a string
    /// numbered by the label index).
    Key(String),
    /// The classes in these keys: `int64 [B, K]` (e.g. EPIC-Kitchens'
    /// `verb_class` and `noun_class`).
    Keys(Vec<String>),
    /// The number in this key: `float32 [B]` (regression).
    Float(String),
    /// The numbers in these keys: `float32 [B, K]`.
    Floats(Vec<String>),
    /// A multi-hot vector from the list of classes in this key: `float32
    /// [B, classes]`, 1 at each listed class.
    MultiHot {
        /// The key holding a list of classes.
        key: String,
        /// The number of classes; every listed class is in `0..classes`.
        classes: usize,
    },
    /// Computed by a function: `int64` or `float32 [B, ...]`, whatever the
    /// function returns, the same dtype and shape for every sample.
    Computed(TargetFn),
}

/// What the values of a target read from meta keys are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// Classes: `int64` (strings numbered by the label index).
    Class,
    /// Numbers: `float32`.
    Float,
    /// A list of classes as a multi-hot vector: `float32 [num_classes]`.
    MultiHot,
}

gulp_format::choice!(TargetKind, "target_type", {
    TargetKind::Class => "class",
    TargetKind::Float => "float",
    TargetKind::MultiHot => "multi_hot",
});

/// The meta keys of a target: one (a value per sample) or several (a row
/// of values per sample, even for a list of one key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetKeys {
    /// One key: `[B]`.
    One(String),
    /// Several keys: `[B, K]`.
    Many(Vec<String>),
}

impl Target {
    /// The target of `keys` read as `kind` (default: classes, or a
    /// multi-hot vector when `num_classes` is given); no keys is the
    /// default label. The errors say which argument is wrong, by the
    /// Python name (`target`, `target_type`, `num_classes`).
    pub fn from_keys(
        keys: Option<TargetKeys>,
        kind: Option<TargetKind>,
        num_classes: Option<usize>,
    ) -> std::result::Result<Target, String> {
        let Some(keys) = keys else {
            if kind.is_some() || num_classes.is_some() {
                return Err("target_type and num_classes need a target".into());
            }
            return Ok(Target::Label);
        };
        let kind = kind.unwrap_or(if num_classes.is_some() {
            TargetKind::MultiHot
        } else {
            TargetKind::Class
        });
        let classes = match (kind, num_classes) {
            (TargetKind::MultiHot, Some(n)) if n > 0 => n,
            (TargetKind::MultiHot, _) => {
                return Err("a multi-hot target needs num_classes of at least 1".into());
            }
            (_, Some(_)) => return Err("num_classes is for a multi-hot target".into()),
            (_, None) => 0,
        };
        Ok(match (keys, kind) {
            (TargetKeys::Many(keys), _) if keys.is_empty() => {
                return Err("target= needs at least one key".into());
            }
            (TargetKeys::One(key), TargetKind::Class) => Target::Key(key),
            (TargetKeys::One(key), TargetKind::Float) => Target::Float(key),
            (TargetKeys::One(key), TargetKind::MultiHot) => Target::MultiHot { key, classes },
            (TargetKeys::Many(keys), TargetKind::Class) => Target::Keys(keys),
            (TargetKeys::Many(keys), TargetKind::Float) => Target::Floats(keys),
            (TargetKeys::Many(keys), TargetKind::MultiHot) => {
                return Err(format!("a multi_hot target takes one key, not {keys:?}"));
            }
        })
    }

    /// The target computed by `f`, which sets its own dtype and shape:
    /// `kind` and `num_classes` are refused beside it.
    pub fn from_function(
        f: TargetFn,
        kind: Option<TargetKind>,
        num_classes: Option<usize>,
    ) -> std::result::Result<Target, String> {
        if kind.is_some() || num_classes.is_some() {
            return Err(
                "a target function sets its own dtype and shape: no target_type or \
                 num_classes with it"
                    .into(),
            );
        }
        Ok(Target::Computed(f))
    }

    /// The key a problem with the target is about.
    fn key_name(&self) -> String {
        match self {
            Target::Label => "label".into(),
            Target::Key(k) | Target::Float(k) | Target::MultiHot { key: k, .. } => k.clone(),
            Target::Keys(keys) | Target::Floats(keys) => keys.join(", "),
            Target::Computed(_) => "target".into(),
        }
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Label => f.write_str("Label"),
            Target::Key(k) => f.debug_tuple("Key").field(k).finish(),
            Target::Keys(k) => f.debug_tuple("Keys").field(k).finish(),
            Target::Float(k) => f.debug_tuple("Float").field(k).finish(),
            Target::Floats(k) => f.debug_tuple("Floats").field(k).finish(),
            Target::MultiHot { key, classes } => f
                .debug_struct("MultiHot")
                .field("key", key)
                .field("classes", classes)
                .finish(),
            Target::Computed(_) => f.write_str("Computed"),
        }
    }
}

impl PartialEq for Target {
    fn eq(&self, other: &Target) -> bool {
        match (self, other) {
            (Target::Computed(a), Target::Computed(b)) => Arc::ptr_eq(a, b),
            (Target::Computed(_), _) | (_, Target::Computed(_)) => false,
            _ => format!("{self:?}") == format!("{other:?}"),
        }
    }
}

gulp_format::choice!(OnMissing, "on_missing", {
    OnMissing::Raise => "raise",
    OnMissing::Skip => "skip",
});

/// A sample's target whose value is missing or unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnMissing {
    /// An error when the loader is made, naming the directory, the item and
    /// the key.
    #[default]
    Raise,
    /// The sample (an item, or one segment) is left out and counted
    /// ([`Loader::missing`](crate::Loader::missing)).
    Skip,
}

/// Targets of a batch, or of one sample as a [`TargetFn`] gives them:
/// row-major values and their shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Targets {
    /// `[B, ...]` for a batch; the sample's own shape (`[]` for a scalar)
    /// from a [`TargetFn`].
    pub shape: Vec<usize>,
    /// The values.
    pub values: TargetValues,
}

/// The values of [`Targets`].
#[derive(Debug, Clone, PartialEq)]
pub enum TargetValues {
    /// `int64`.
    Int64(Vec<i64>),
    /// `float32`.
    Float32(Vec<f32>),
}

/// What is wrong with a sample's target or segment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Problem {
    pub(crate) key: String,
    pub(crate) reason: String,
    /// Missing or ill-typed ([`OnMissing::Skip`] leaves the sample out);
    /// otherwise always an error.
    pub(crate) skippable: bool,
}

impl Problem {
    pub(crate) fn skippable(key: impl Into<String>, reason: impl Into<String>) -> Problem {
        Problem {
            key: key.into(),
            reason: reason.into(),
            skippable: true,
        }
    }

    pub(crate) fn fatal(key: impl Into<String>, reason: impl Into<String>) -> Problem {
        Problem {
            skippable: false,
            ..Problem::skippable(key, reason)
        }
    }
}

/// The label index of one source, and how to name it in errors.
#[derive(Debug, Clone, Default)]
pub(crate) struct LabelSpace {
    pub(crate) index: Option<LabelIndex>,
    /// `<dir>/label2idx.json`, or "the labels given".
    pub(crate) name: String,
}

impl LabelSpace {
    pub(crate) fn class(&self, key: &str, value: Option<&Value>) -> Result<Option<i64>, Problem> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Int(i)) => Ok(Some(*i)),
            Some(Value::String(label)) => match &self.index {
                Some(index) => index.index(label).map(Some).ok_or_else(|| {
                    Problem::skippable(key, format!("label {label:?} is not in {}", self.name))
                }),
                None => Err(Problem::skippable(
                    key,
                    format!(
                        "label {label:?} is a string and there is no {} to number it",
                        self.name
                    ),
                )),
            },
            Some(other) => Err(Problem::skippable(
                key,
                format!("holds {}, not a class", short(other)),
            )),
        }
    }
}

/// A value as a message shows it: its JSON, long lists and objects cut
/// short.
fn short(value: &Value) -> String {
    let text = JsonSerializer::value_to_string(value);
    if text.chars().count() > 60 {
        format!("{}...", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

/// The key's value in the segment, else in the item's meta.
fn lookup<'a>(key: &str, meta: &'a Value, segment: Option<&'a Value>) -> Option<&'a Value> {
    segment
        .and_then(|s| s.get(key))
        .or_else(|| meta.get(key))
        .filter(|v| !matches!(v, Value::Null))
}

/// One row per sample.
#[derive(Debug, Clone)]
enum Column {
    Int(Vec<i64>),
    Float(Vec<f32>),
    /// Multi-hot rows as lists of classes: row `r` is
    /// `members[offsets[r]..offsets[r + 1]]`.
    Hot {
        classes: usize,
        offsets: Vec<u32>,
        members: Vec<u32>,
    },
    /// One class per sample read from directories' index files: each
    /// source's rows in its index and the class of each of the index's
    /// label codes.
    Coded(Vec<(IndexedSource, Vec<i64>)>),
    /// Nothing held: each sample's value is read from its item's meta when
    /// its batch is made ([`TargetTable::lazy`]).
    Lazy,
}

/// The class of row `row` of a [`Column::Coded`].
fn coded_class(parts: &[(IndexedSource, Vec<i64>)], row: usize) -> Option<i64> {
    let part = parts
        .partition_point(|(source, _)| source.first <= row)
        .checked_sub(1)?;
    let (source, of_code) = &parts[part];
    let local = row - source.first;
    if local >= source.len() {
        return None;
    }
    match source.index.label_code(source.item(local)) {
        NO_LABEL => Some(-1),
        code => of_code.get(code as usize).copied(),
    }
}

/// Every sample's target.
#[derive(Debug, Clone)]
pub(crate) struct TargetTable {
    target: Target,
    /// Values per sample and their shape, `None` until a [`TargetFn`] has
    /// given the first.
    shape: Option<Vec<usize>>,
    column: Column,
}

impl TargetTable {
    pub(crate) fn new(target: &Target) -> TargetTable {
        let (shape, column) = match target {
            Target::Label | Target::Key(_) => (Some(vec![]), Column::Int(Vec::new())),
            Target::Keys(keys) => (Some(vec![keys.len()]), Column::Int(Vec::new())),
            Target::Float(_) => (Some(vec![]), Column::Float(Vec::new())),
            Target::Floats(keys) => (Some(vec![keys.len()]), Column::Float(Vec::new())),
            Target::MultiHot { classes, .. } => (
                Some(vec![*classes]),
                Column::Hot {
                    classes: *classes,
                    offsets: vec![0],
                    members: Vec::new(),
                },
            ),
            Target::Computed(_) => (None, Column::Int(Vec::new())),
        };
        TargetTable {
            target: target.clone(),
            shape,
            column,
        }
    }

    /// The table of a [`Target::Label`] whose classes are read from index
    /// files (see [`Column::Coded`]).
    pub(crate) fn coded(target: &Target, parts: Vec<(IndexedSource, Vec<i64>)>) -> TargetTable {
        TargetTable {
            target: target.clone(),
            shape: Some(vec![]),
            column: Column::Coded(parts),
        }
    }

    /// A table that holds nothing: the loader reads each sample's target
    /// from its item's meta when its batch is made (with index files, for
    /// a target on any key; [`TargetTable::is_lazy`]).
    pub(crate) fn lazy(target: &Target) -> TargetTable {
        TargetTable {
            column: Column::Lazy,
            ..TargetTable::new(target)
        }
    }

    /// Whether sample values are read when batches are made.
    pub(crate) fn is_lazy(&self) -> bool {
        matches!(self.column, Column::Lazy)
    }

    /// The number of rows of a [`Column::Coded`] table.
    fn coded_rows(parts: &[(IndexedSource, Vec<i64>)]) -> usize {
        parts
            .last()
            .map_or(0, |(source, _)| source.first + source.len())
    }

    /// Room for `rows` more rows (one per item without segments), so that
    /// the table is allocated once, not grown by doubling.
    pub(crate) fn reserve(&mut self, rows: usize) {
        let width = self.width();
        match &mut self.column {
            Column::Int(v) => v.reserve_exact(rows * width),
            Column::Float(v) => v.reserve_exact(rows * width),
            Column::Hot { offsets, .. } => offsets.reserve_exact(rows),
            Column::Coded(_) | Column::Lazy => {}
        }
    }

    /// Whether each row is one class (`batch.labels`, balanced sampling).
    pub(crate) fn is_class(&self) -> bool {
        matches!(self.target, Target::Label | Target::Key(_))
    }

    /// The class of sample `row` (for [`TargetTable::is_class`] tables).
    pub(crate) fn class_of(&self, row: usize) -> Option<i64> {
        match &self.column {
            Column::Int(v) if self.is_class() => v.get(row).copied(),
            Column::Coded(parts) => coded_class(parts, row),
            _ => None,
        }
    }

    /// The key that classes are read from, for messages.
    pub(crate) fn key_name(&self, labels_key: &str) -> String {
        match self.target {
            Target::Label => labels_key.to_owned(),
            _ => self.target.key_name(),
        }
    }

    fn width(&self) -> usize {
        self.shape.as_ref().map_or(0, |s| s.iter().product())
    }

    /// Appends the target of the sample of item `id` (`meta`, and its
    /// `segment` if any); on a problem nothing is appended.
    pub(crate) fn push(
        &mut self,
        id: &str,
        meta: &Value,
        segment: Option<&Value>,
        labels_key: &str,
        labels: &LabelSpace,
    ) -> Result<(), Problem> {
        match (&self.target, &mut self.column) {
            (Target::Label, Column::Int(v)) => {
                let value = lookup(labels_key, meta, segment);
                v.push(labels.class(labels_key, value)?.unwrap_or(-1));
            }
            (Target::Key(key), Column::Int(v)) => {
                let class = labels.class(key, lookup(key, meta, segment))?;
                v.push(class.ok_or_else(|| missing(key))?);
            }
            (Target::Keys(keys), Column::Int(v)) => {
                let row = keys
                    .iter()
                    .map(|k| {
                        labels
                            .class(k, lookup(k, meta, segment))?
                            .ok_or_else(|| missing(k))
                    })
                    .collect::<Result<Vec<i64>, Problem>>()?;
                v.extend(row);
            }
            (Target::Float(key), Column::Float(v)) => v.push(number(key, meta, segment)?),
            (Target::Floats(keys), Column::Float(v)) => {
                let row = keys
                    .iter()
                    .map(|k| number(k, meta, segment))
                    .collect::<Result<Vec<f32>, Problem>>()?;
                v.extend(row);
            }
            (
                Target::MultiHot { key, .. },
                Column::Hot {
                    classes,
                    offsets,
                    members,
                },
            ) => {
                let list = match lookup(key, meta, segment) {
                    None => return Err(missing(key)),
                    Some(Value::Array(list)) => list,
                    Some(other) => {
                        return Err(Problem::skippable(
                            key.as_str(),
                            format!("holds {}, not a list of classes", short(other)),
                        ));
                    }
                };
                let mut row = Vec::with_capacity(list.len());
                for value in list {
                    let class = labels.class(key, Some(value))?.ok_or_else(|| {
                        Problem::skippable(key.as_str(), "a null in the list of classes")
                    })?;
                    match u32::try_from(class) {
                        Ok(c) if (c as usize) < *classes => row.push(c),
                        _ => {
                            return Err(Problem::skippable(
                                key.as_str(),
                                format!("class {class} is not in 0..{classes} (num_classes)"),
                            ));
                        }
                    }
                }
                members.extend(row);
                let end = u32::try_from(members.len())
                    .map_err(|_| Problem::fatal(key.as_str(), "more than 2^32 listed classes"))?;
                offsets.push(end);
            }
            (Target::Computed(f), _) => {
                let given = f(id, meta, segment)
                    .map_err(|reason| Problem::fatal("target", reason))?
                    .ok_or_else(|| missing("target"))?;
                self.push_computed(given)?;
            }
            _ => unreachable!("the column is made for its target"),
        }
        Ok(())
    }

    fn push_computed(&mut self, given: Targets) -> Result<(), Problem> {
        let Targets { shape, values } = given;
        let count: usize = shape.iter().product();
        let len = match &values {
            TargetValues::Int64(v) => v.len(),
            TargetValues::Float32(v) => v.len(),
        };
        if count != len {
            return Err(Problem::fatal(
                "target",
                format!("{len} values for the shape {shape:?}"),
            ));
        }
        let dtype = |v: &TargetValues| match v {
            TargetValues::Int64(_) => "int64",
            TargetValues::Float32(_) => "float32",
        };
        match &self.shape {
            None => {
                self.column = match &values {
                    TargetValues::Int64(_) => Column::Int(Vec::new()),
                    TargetValues::Float32(_) => Column::Float(Vec::new()),
                };
                self.shape = Some(shape.clone());
            }
            Some(first) => {
                let first_dtype = match self.column {
                    Column::Float(_) => "float32",
                    _ => "int64",
                };
                if *first != shape || first_dtype != dtype(&values) {
                    return Err(Problem::fatal(
                        "target",
                        format!(
                            "{} {shape:?}, where the first sample's is {first_dtype} {first:?}: \
                             every sample's target must have the same dtype and shape",
                            dtype(&values)
                        ),
                    ));
                }
            }
        }
        match (&mut self.column, values) {
            (Column::Int(v), TargetValues::Int64(given)) => v.extend(given),
            (Column::Float(v), TargetValues::Float32(given)) => v.extend(given),
            _ => unreachable!("the column's dtype was checked"),
        }
        Ok(())
    }

    /// The shape of one sample's target (`[]` before the first of a
    /// computed target).
    pub(crate) fn sample_shape(&self) -> Vec<usize> {
        self.shape.clone().unwrap_or_default()
    }

    /// The targets of samples `rows` (`[B, ...]`), and their classes for a
    /// one-class target (else empty).
    pub(crate) fn gather(&self, rows: &[usize]) -> (Targets, Vec<i64>) {
        let width = self.width();
        let mut shape = vec![rows.len()];
        shape.extend(self.sample_shape());
        let values = match &self.column {
            Column::Int(v) => TargetValues::Int64(
                rows.iter()
                    .flat_map(|&r| &v[r * width..(r + 1) * width])
                    .copied()
                    .collect(),
            ),
            Column::Float(v) => TargetValues::Float32(
                rows.iter()
                    .flat_map(|&r| &v[r * width..(r + 1) * width])
                    .copied()
                    .collect(),
            ),
            Column::Hot {
                classes,
                offsets,
                members,
            } => {
                let mut hot = vec![0f32; rows.len() * classes];
                for (b, &r) in rows.iter().enumerate() {
                    for &c in &members[offsets[r] as usize..offsets[r + 1] as usize] {
                        hot[b * classes + c as usize] = 1.0;
                    }
                }
                TargetValues::Float32(hot)
            }
            Column::Coded(parts) => TargetValues::Int64(
                rows.iter()
                    .map(|&r| coded_class(parts, r).unwrap_or(-1))
                    .collect(),
            ),
            // Read per batch by the loader (`TargetTable::is_lazy`).
            Column::Lazy => TargetValues::Int64(Vec::new()),
        };
        let labels = match (&values, self.is_class()) {
            (TargetValues::Int64(v), true) => v.clone(),
            _ => Vec::new(),
        };
        (Targets { shape, values }, labels)
    }

    /// A fingerprint of the target and every sample's value.
    pub(crate) fn fingerprint(&self) -> u64 {
        let mut h = Fnv::default();
        h.write_str(&format!("{:?} {:?}", self.target, self.shape));
        match &self.column {
            #[allow(clippy::cast_sign_loss)] // the bits, not the value
            Column::Int(v) => v.iter().for_each(|&x| h.write_u64(x as u64)),
            Column::Float(v) => v.iter().for_each(|x| h.write_u64(u64::from(x.to_bits()))),
            Column::Hot {
                offsets, members, ..
            } => {
                offsets.iter().for_each(|&x| h.write_u64(u64::from(x)));
                members.iter().for_each(|&x| h.write_u64(u64::from(x)));
            }
            // The same bits as the [`Column::Int`] of the same classes.
            #[allow(clippy::cast_sign_loss)] // the bits, not the value
            Column::Coded(parts) => (0..TargetTable::coded_rows(parts))
                .for_each(|r| h.write_u64(coded_class(parts, r).unwrap_or(-1) as u64)),
            // The values are the items', read per batch: the spec says it.
            Column::Lazy => h.write_str("read per batch"),
        }
        h.finish()
    }

    /// Frees what the vectors hold beyond their length.
    pub(crate) fn shrink(&mut self) {
        match &mut self.column {
            Column::Int(v) => v.shrink_to_fit(),
            Column::Float(v) => v.shrink_to_fit(),
            Column::Hot {
                offsets, members, ..
            } => {
                offsets.shrink_to_fit();
                members.shrink_to_fit();
            }
            Column::Coded(_) | Column::Lazy => {}
        }
    }
}

fn missing(key: &str) -> Problem {
    Problem::skippable(key, "missing")
}

fn number(key: &str, meta: &Value, segment: Option<&Value>) -> Result<f32, Problem> {
    match lookup(key, meta, segment) {
        None => Err(missing(key)),
        Some(v @ (Value::Int(_) | Value::BigInt(_) | Value::Float(_))) =>
        {
            #[allow(clippy::cast_possible_truncation)]
            Ok(v.as_f64().unwrap_or(f64::NAN) as f32)
        }
        Some(other) => Err(Problem::skippable(
            key,
            format!("holds {}, not a number", short(other)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gulp_format::Map;

    fn meta(pairs: &[(&str, Value)]) -> Value {
        let mut m = Map::default();
        for (k, v) in pairs {
            m.insert((*k).to_owned(), v.clone());
        }
        Value::Object(m)
    }

    #[test]
    fn every_form_gives_its_dtype_and_shape() {
        let labels = LabelSpace {
            index: Some(LabelIndex::from_pairs(std::path::Path::new("x"), [("a", 4)]).unwrap()),
            name: "x/label2idx.json".into(),
        };
        let m = meta(&[
            ("label", Value::from("a")),
            ("verb", Value::Int(2)),
            ("noun", Value::Int(7)),
            ("score", Value::Float(0.5)),
            ("tags", Value::Array(vec![Value::Int(0), Value::Int(2)])),
        ]);
        let segment = meta(&[("verb", Value::Int(3))]);
        let cases: Vec<(Target, Vec<usize>, TargetValues)> = vec![
            (Target::Label, vec![2], TargetValues::Int64(vec![4, 4])),
            (
                Target::Key("verb".into()),
                vec![2],
                TargetValues::Int64(vec![2, 3]),
            ),
            (
                Target::Keys(vec!["verb".into(), "noun".into()]),
                vec![2, 2],
                TargetValues::Int64(vec![2, 7, 3, 7]),
            ),
            (
                Target::Float("score".into()),
                vec![2],
                TargetValues::Float32(vec![0.5, 0.5]),
            ),
            (
                Target::MultiHot {
                    key: "tags".into(),
                    classes: 3,
                },
                vec![2, 3],
                TargetValues::Float32(vec![1.0, 0.0, 1.0, 1.0, 0.0, 1.0]),
            ),
        ];
        for (target, shape, values) in cases {
            let mut table = TargetTable::new(&target);
            table.push("i", &m, None, "label", &labels).unwrap();
            // The segment's keys come first.
            table
                .push("i", &m, Some(&segment), "label", &labels)
                .unwrap();
            let (t, classes) = table.gather(&[0, 1]);
            assert_eq!((t.shape, &t.values), (shape, &values), "{target:?}");
            assert_eq!(classes.is_empty(), !table.is_class());
        }
    }

    #[test]
    fn missing_and_ill_typed_values_name_their_key() {
        let labels = LabelSpace::default();
        let m = meta(&[("label", Value::from("a")), ("n", Value::Bool(true))]);
        let mut t = TargetTable::new(&Target::Key("verb".into()));
        let p = t.push("i", &m, None, "label", &labels).unwrap_err();
        assert_eq!((p.key.as_str(), p.skippable), ("verb", true));
        let mut t = TargetTable::new(&Target::Float("n".into()));
        assert!(
            t.push("i", &m, None, "label", &labels)
                .unwrap_err()
                .reason
                .contains("not a number")
        );
        // The default label: an item without one is -1, a string without an
        // index is a problem.
        let mut t = TargetTable::new(&Target::Label);
        t.push("i", &meta(&[]), None, "label", &labels).unwrap();
        assert_eq!(t.class_of(0), Some(-1));
        assert!(t.push("i", &m, None, "label", &labels).is_err());
        let mut t = TargetTable::new(&Target::MultiHot {
            key: "tags".into(),
            classes: 2,
        });
        let tags = meta(&[("tags", Value::Array(vec![Value::Int(5)]))]);
        assert!(
            t.push("i", &tags, None, "label", &labels)
                .unwrap_err()
                .reason
                .contains("0..2")
        );
    }

    #[test]
    fn computed_targets_keep_one_dtype_and_shape() {
        let f: TargetFn = Arc::new(|id: &str, _: &Value, _: Option<&Value>| {
            Ok(match id {
                "none" => None,
                "float" => Some(Targets {
                    shape: vec![2],
                    values: TargetValues::Float32(vec![1.0, 2.0]),
                }),
                _ => Some(Targets {
                    shape: vec![2],
                    values: TargetValues::Int64(vec![1, id.len() as i64]),
                }),
            })
        });
        let mut t = TargetTable::new(&Target::Computed(f));
        let (m, l) = (Value::Null, LabelSpace::default());
        t.push("ab", &m, None, "label", &l).unwrap();
        t.push("abc", &m, None, "label", &l).unwrap();
        assert!(t.push("none", &m, None, "label", &l).unwrap_err().skippable);
        let p = t.push("float", &m, None, "label", &l).unwrap_err();
        assert!(!p.skippable && p.reason.contains("same dtype"), "{p:?}");
        assert_eq!(
            t.gather(&[1, 0]).0,
            Targets {
                shape: vec![2, 2],
                values: TargetValues::Int64(vec![1, 3, 1, 2])
            }
        );
    }
}
