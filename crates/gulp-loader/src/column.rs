//! Subsets and weights written as expressions on meta keys
//! ([`Predicate`], [`WeightColumn`]), evaluated in Rust on each item's meta
//! (`meta_data[0]`) when the loader is made: no function call into the
//! caller's language per item, and, on a directory with an index file,
//! expressions on its label key alone are evaluated once per label value
//! rather than once per item.
//!
//! An item's value of `key` is its meta's entry `key`; an item without one
//! (or whose meta is not an object) has `null`, as `meta.get(key)` gives
//! `None` in Python. Values compare as JSON values do, with integers and
//! floats compared as numbers.

use std::cmp::Ordering;

use gulp_format::Value;

/// A comparison of a key's value with a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// `==`: equal (a missing key equals `null`).
    Eq,
    /// `!=`: not `==`.
    Ne,
    /// `<`: numbers by value, strings by their bytes.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

impl Compare {
    /// The operator as Python writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            Compare::Eq => "==",
            Compare::Ne => "!=",
            Compare::Lt => "<",
            Compare::Le => "<=",
            Compare::Gt => ">",
            Compare::Ge => ">=",
        }
    }

    /// Parses [`Compare::symbol`]'s text.
    pub fn parse(text: &str) -> Option<Compare> {
        [
            Compare::Eq,
            Compare::Ne,
            Compare::Lt,
            Compare::Le,
            Compare::Gt,
            Compare::Ge,
        ]
        .into_iter()
        .find(|c| c.symbol() == text)
    }
}

/// Which items a source keeps, as an expression on their meta keys.
///
/// ```
/// use gulp_format::Value;
/// use gulp_loader::{Compare, Predicate};
/// // label in {"a", "b"} and duration >= 2
/// let keep = Predicate::And(vec![
///     Predicate::In { key: "label".into(), values: vec!["a".into(), "b".into()] },
///     Predicate::Compare { key: "duration".into(), op: Compare::Ge, value: Value::Int(2) },
/// ]);
/// # let _ = keep;
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// The key's value compared with `value`. An ordering (`<`, `<=`, `>`,
    /// `>=`) is false for an item whose value is `null` or missing, and an
    /// error for one whose value is of another kind than `value` (a string
    /// against a number).
    Compare {
        /// The meta key.
        key: String,
        /// How it compares.
        op: Compare,
        /// With what.
        value: Value,
    },
    /// The key's value equals one of `values`.
    In {
        /// The meta key.
        key: String,
        /// The values kept.
        values: Vec<Value>,
    },
    /// The key is present and not `null`.
    Present {
        /// The meta key.
        key: String,
    },
    /// Every one holds (true when empty).
    And(Vec<Predicate>),
    /// At least one holds (false when empty).
    Or(Vec<Predicate>),
    /// It does not hold.
    Not(Box<Predicate>),
}

impl Predicate {
    /// Whether the item whose meta is `meta` is kept; an error says which
    /// key and value could not be compared.
    pub fn eval(&self, meta: &Value) -> Result<bool, String> {
        match self {
            Predicate::Compare { key, op, value } => compare(key, lookup(meta, key), *op, value),
            Predicate::In { key, values } => {
                let v = lookup(meta, key);
                Ok(values.iter().any(|x| equal(v, x)))
            }
            Predicate::Present { key } => Ok(!matches!(lookup(meta, key), Value::Null)),
            Predicate::And(all) => {
                for p in all {
                    if !p.eval(meta)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Predicate::Or(any) => {
                for p in any {
                    if p.eval(meta)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Predicate::Not(p) => Ok(!p.eval(meta)?),
        }
    }

    /// Whether every key it reads is `key` (so that it is a function of
    /// that key's value alone).
    pub fn reads_only(&self, key: &str) -> bool {
        match self {
            Predicate::Compare { key: k, .. }
            | Predicate::In { key: k, .. }
            | Predicate::Present { key: k } => k == key,
            Predicate::And(ps) | Predicate::Or(ps) => ps.iter().all(|p| p.reads_only(key)),
            Predicate::Not(p) => p.reads_only(key),
        }
    }
}

/// Per-item sampling weights read from a meta key.
#[derive(Debug, Clone, PartialEq)]
pub enum WeightColumn {
    /// The key's value, a number; `default` for an item whose value is
    /// `null` or missing (an error without one).
    Key {
        /// The meta key.
        key: String,
        /// The weight of an item without a value.
        default: Option<f64>,
    },
    /// The weight paired with the key's value in `table` (values compared
    /// as [`Predicate::In`] compares them); `default` for a value not in it
    /// (an error without one).
    Replace {
        /// The meta key.
        key: String,
        /// Value → weight.
        table: Vec<(Value, f64)>,
        /// The weight of a value not in `table`.
        default: Option<f64>,
    },
}

impl WeightColumn {
    /// The weight of the item whose meta is `meta`.
    pub fn eval(&self, meta: &Value) -> Result<f64, String> {
        match self {
            WeightColumn::Key { key, default } => match lookup(meta, key) {
                Value::Null => default.ok_or_else(|| format!("no value of {key:?} for a weight")),
                v => number(v)
                    .ok_or_else(|| format!("the value of {key:?}, {}, is not a number", show(v))),
            },
            WeightColumn::Replace {
                key,
                table,
                default,
            } => {
                let v = lookup(meta, key);
                table
                    .iter()
                    .find(|(x, _)| equal(v, x))
                    .map(|(_, w)| *w)
                    .or(*default)
                    .ok_or_else(|| {
                        format!("the value of {key:?}, {}, has no weight given", show(v))
                    })
            }
        }
    }

    /// The key it reads.
    pub fn key(&self) -> &str {
        match self {
            WeightColumn::Key { key, .. } | WeightColumn::Replace { key, .. } => key,
        }
    }
}

/// `meta[key]`, `null` when absent.
fn lookup<'m>(meta: &'m Value, key: &str) -> &'m Value {
    const NULL: &Value = &Value::Null;
    meta.get(key).unwrap_or(NULL)
}

/// A number's value (integers and floats; not booleans).
fn number(v: &Value) -> Option<f64> {
    match v {
        #[allow(clippy::cast_precision_loss)] // compared as doubles, as Python does
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::BigInt(b) => b.as_str().parse().ok(),
        _ => None,
    }
}

/// JSON equality, with numbers compared by value.
fn equal(a: &Value, b: &Value) -> bool {
    match (number(a), number(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn compare(key: &str, v: &Value, op: Compare, with: &Value) -> Result<bool, String> {
    let ordering = match op {
        Compare::Eq => return Ok(equal(v, with)),
        Compare::Ne => return Ok(!equal(v, with)),
        _ if matches!(v, Value::Null) => return Ok(false),
        _ => match (v, with) {
            (Value::String(a), Value::String(b)) => Some(a.as_str().cmp(b.as_str())),
            _ => match (number(v), number(with)) {
                (Some(a), Some(b)) => a.partial_cmp(&b),
                _ => {
                    return Err(format!(
                        "the value of {key:?}, {}, cannot be compared with {}",
                        show(v),
                        show(with)
                    ));
                }
            },
        },
    };
    // NaN compares false, as in Python.
    Ok(ordering.is_some_and(|o| match op {
        Compare::Lt => o == Ordering::Less,
        Compare::Le => o != Ordering::Greater,
        Compare::Gt => o == Ordering::Greater,
        _ => o != Ordering::Less,
    }))
}

/// A value for a message, shortened.
fn show(v: &Value) -> String {
    let text = format!("{v:?}");
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(pairs: &[(&str, Value)]) -> Value {
        let mut m = gulp_format::Map::default();
        for (k, v) in pairs {
            m.insert((*k).to_owned(), v.clone());
        }
        Value::Object(m)
    }

    fn cmp(key: &str, op: &str, value: Value) -> Predicate {
        Predicate::Compare {
            key: key.into(),
            op: Compare::parse(op).unwrap(),
            value,
        }
    }

    #[test]
    fn comparisons_follow_python_on_the_meta_dict() {
        let m = meta(&[
            ("label", "a".into()),
            ("duration", Value::Float(2.5)),
            ("n", Value::Int(3)),
        ]);
        assert!(cmp("label", "==", "a".into()).eval(&m).unwrap());
        assert!(!cmp("label", "!=", "a".into()).eval(&m).unwrap());
        assert!(cmp("duration", ">=", Value::Int(2)).eval(&m).unwrap());
        assert!(!cmp("duration", "<", Value::Float(2.5)).eval(&m).unwrap());
        assert!(cmp("n", "==", Value::Float(3.0)).eval(&m).unwrap());
        assert!(cmp("label", "<", "b".into()).eval(&m).unwrap());
        // A missing key is null: equal to null only, never ordered.
        assert!(cmp("absent", "==", Value::Null).eval(&m).unwrap());
        assert!(cmp("absent", "!=", "a".into()).eval(&m).unwrap());
        assert!(!cmp("absent", ">", Value::Int(0)).eval(&m).unwrap());
        assert!(
            !cmp("duration", "<", Value::Float(f64::NAN))
                .eval(&m)
                .unwrap()
        );
        let err = cmp("label", ">", Value::Int(1)).eval(&m).unwrap_err();
        assert!(
            err.contains("\"label\"") && err.contains("cannot be compared"),
            "{err}"
        );
        // A meta that is not an object has no keys.
        assert!(
            !Predicate::Present {
                key: "label".into()
            }
            .eval(&Value::Null)
            .unwrap()
        );
    }

    #[test]
    fn combinations_and_the_keys_they_read() {
        let m = meta(&[("label", "b".into()), ("split", "train".into())]);
        let in_ab = Predicate::In {
            key: "label".into(),
            values: vec!["a".into(), "b".into()],
        };
        let train = cmp("split", "==", "train".into());
        assert!(
            Predicate::And(vec![in_ab.clone(), train.clone()])
                .eval(&m)
                .unwrap()
        );
        assert!(
            !Predicate::And(vec![in_ab.clone(), Predicate::Not(Box::new(train.clone()))])
                .eval(&m)
                .unwrap()
        );
        assert!(
            Predicate::Or(vec![Predicate::Not(Box::new(in_ab.clone())), train.clone()])
                .eval(&m)
                .unwrap()
        );
        assert!(Predicate::And(vec![]).eval(&m).unwrap());
        assert!(!Predicate::Or(vec![]).eval(&m).unwrap());
        assert!(in_ab.reads_only("label"));
        assert!(!Predicate::Or(vec![in_ab, train]).reads_only("label"));
    }

    #[test]
    fn weights_from_a_number_or_a_table() {
        let m = meta(&[("label", "rare".into()), ("q", Value::Int(2))]);
        let q = WeightColumn::Key {
            key: "q".into(),
            default: None,
        };
        assert_eq!(q.eval(&m).unwrap(), 2.0);
        let err = WeightColumn::Key {
            key: "label".into(),
            default: None,
        }
        .eval(&m)
        .unwrap_err();
        assert!(err.contains("not a number"), "{err}");
        let missing = WeightColumn::Key {
            key: "w".into(),
            default: Some(0.5),
        };
        assert_eq!(missing.eval(&m).unwrap(), 0.5);
        let table = WeightColumn::Replace {
            key: "label".into(),
            table: vec![("rare".into(), 5.0)],
            default: Some(1.0),
        };
        assert_eq!(table.eval(&m).unwrap(), 5.0);
        assert_eq!(table.eval(&meta(&[("label", "x".into())])).unwrap(), 1.0);
        let strict = WeightColumn::Replace {
            key: "label".into(),
            table: vec![],
            default: None,
        };
        assert!(strict.eval(&m).unwrap_err().contains("no weight"));
    }
}
