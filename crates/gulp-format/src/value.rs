//! JSON-like values for `meta_data`, as Python's `json` module sees them.

use indexmap::IndexMap;

/// Deepest nesting accepted inside `meta_data`, in both meta formats.
/// CPython's `json` gives up near 1,000 levels (its recursion limit), so
/// nothing gulpio2 can write or read is refused; the limit keeps hostile
/// input from exhausting the stack.
pub(crate) const MAX_DEPTH: usize = 1024;

/// An object: keys in insertion order, as Python's `OrderedDict`.
///
/// Hashed with foldhash: seeded per process, and several times faster than
/// SipHash on the short keys of meta.
pub type Map = IndexMap<String, Value, foldhash::fast::RandomState>;

/// One `meta_data` value.
///
/// This is the data model of Python's `json` module rather than of strict
/// JSON: integers have no size limit ([`Value::BigInt`] holds those outside
/// `i64`), floats may be `NaN` or infinite, and object keys keep their order.
/// Integers and floats stay distinct (`1` and `1.0` are different values), so
/// meta written back is byte-identical to what was read.
///
/// Equality treats two `NaN`s as equal and `0.0` and `-0.0` as different:
/// values are equal exactly when they serialise to the same bytes.
#[derive(Debug, Clone)]
pub enum Value {
    /// `null` / `None`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer that fits in `i64`.
    Int(i64),
    /// An integer outside the `i64` range.
    BigInt(BigInt),
    /// A double, possibly `NaN` or infinite.
    Float(f64),
    /// A string.
    String(String),
    /// A list.
    Array(Vec<Value>),
    /// An object with string keys in insertion order.
    Object(Map),
}

/// An integer outside the `i64` range, kept as its canonical decimal text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BigInt(Box<str>);

impl BigInt {
    /// Parses canonical decimal text (optional `-`, no leading zeros) of an
    /// integer outside the `i64` range; `None` otherwise.
    pub fn new(text: &str) -> Option<BigInt> {
        BigInt::is_valid(text).then(|| BigInt(text.into()))
    }

    /// Whether [`BigInt::new`] accepts `text`, without allocating.
    pub(crate) fn is_valid(text: &str) -> bool {
        let digits = text.strip_prefix('-').unwrap_or(text);
        let canonical = !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && !digits.starts_with('0');
        canonical && text.parse::<i64>().is_err()
    }

    /// A big integer from text that [`BigInt::is_valid`] accepted.
    pub(crate) fn from_valid(text: &str) -> BigInt {
        debug_assert!(BigInt::is_valid(text), "{text:?}");
        BigInt(text.into())
    }

    /// The decimal text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value as `u64`, if it is in `i64::MAX + 1 ..= u64::MAX`.
    pub fn to_u64(&self) -> Option<u64> {
        self.0.parse().ok()
    }
}

impl std::fmt::Display for BigInt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Value {
    /// The value of `key` if this is an object that has it.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(map) => map.get(key),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if this is one that fits in `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The number as `f64` (integers converted), if this is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            #[allow(clippy::cast_precision_loss)] // Python's float(int) rounds the same way
            Value::Int(i) => Some(*i as f64),
            Value::BigInt(b) => b.as_str().parse().ok(),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// The object, if this is one.
    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    /// The list, if this is one.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::BigInt(a), Value::BigInt(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => {
                (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
            }
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Array(a), Value::Array(b)) => a == b,
            // Key order is part of the value: it decides the bytes written.
            (Value::Object(a), Value::Object(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
            }
            _ => false,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Int(i)
    }
}

impl From<u64> for Value {
    fn from(u: u64) -> Value {
        match i64::try_from(u) {
            Ok(i) => Value::Int(i),
            Err(_) => Value::BigInt(BigInt(u.to_string().into())),
        }
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Value::Float(f)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<Vec<Value>> for Value {
    fn from(items: Vec<Value>) -> Value {
        Value::Array(items)
    }
}

impl From<Map> for Value {
    fn from(map: Map) -> Value {
        Value::Object(map)
    }
}

impl<K: Into<String>, V: Into<Value>> FromIterator<(K, V)> for Value {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Value {
        Value::Object(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

/// Writes `f` as Python's `repr(float)` does, which is what `json.dump`
/// writes: the shortest text that reads back to the same double, in fixed
/// notation with a `.0` when the decimal exponent is in `-4..16`, otherwise
/// `d.ddde±XX`; `NaN`, `Infinity` and `-Infinity` for the non-finite values.
pub(crate) fn write_python_float(out: &mut Vec<u8>, f: f64) {
    if f.is_nan() {
        return out.extend_from_slice(b"NaN");
    }
    if f.is_infinite() {
        return out.extend_from_slice(if f > 0.0 { b"Infinity" } else { b"-Infinity" });
    }
    // Rust's `{:e}` prints the shortest round-trip digits: "-1.2345e-7".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    out.extend_from_slice(sign.as_bytes());
    if (-4..16).contains(&exp) {
        let n = i32::try_from(digits.len()).unwrap_or(i32::MAX);
        if exp < 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-exp - 1) as usize));
            out.extend_from_slice(digits.as_bytes());
        } else if exp + 1 >= n {
            out.extend_from_slice(digits.as_bytes());
            out.extend(std::iter::repeat_n(b'0', (exp + 1 - n) as usize));
            out.extend_from_slice(b".0");
        } else {
            let (int, frac) = digits.split_at((exp + 1) as usize);
            out.extend_from_slice(int.as_bytes());
            out.push(b'.');
            out.extend_from_slice(frac.as_bytes());
        }
    } else {
        let (first, rest) = digits.split_at(1);
        out.extend_from_slice(first.as_bytes());
        if !rest.is_empty() {
            out.push(b'.');
            out.extend_from_slice(rest.as_bytes());
        }
        let sign = if exp < 0 { '-' } else { '+' };
        out.extend_from_slice(format!("e{sign}{:02}", exp.unsigned_abs()).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(f: f64) -> String {
        let mut out = Vec::new();
        write_python_float(&mut out, f);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn float_repr_matches_python() {
        // Each right-hand side is what CPython 3.11's repr() prints.
        let cases: &[(f64, &str)] = &[
            (1.5, "1.5"),
            (1.0, "1.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-5, "1.5e-05"),
            (123456.789, "123456.789"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345e16, "1.2345e+16"),
            (9007199254740993.0, "9007199254740992.0"),
            (1e100, "1e+100"),
            (-2.5e-300, "-2.5e-300"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (1.0 / 3.0, "0.3333333333333333"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for &(f, want) in cases {
            assert_eq!(repr(f), want, "{f:e}");
        }
    }

    #[test]
    fn big_int_is_canonical_and_outside_i64() {
        assert!(BigInt::new("9223372036854775808").is_some());
        assert!(BigInt::new("-9223372036854775809").is_some());
        assert!(BigInt::new("9223372036854775807").is_none());
        assert!(BigInt::new("0123456789012345678901").is_none());
        assert!(BigInt::new("12a").is_none());
        assert_eq!(
            Value::from(u64::MAX),
            Value::BigInt(BigInt::new("18446744073709551615").unwrap())
        );
    }

    #[test]
    fn equality_is_serialisation_equality() {
        assert_eq!(Value::Float(f64::NAN), Value::Float(f64::NAN));
        assert_ne!(Value::Float(0.0), Value::Float(-0.0));
        assert_ne!(Value::Int(1), Value::Float(1.0));
        let ab: Value = [("a", 1i64), ("b", 2)].into_iter().collect();
        let ba: Value = [("b", 2i64), ("a", 1)].into_iter().collect();
        assert_ne!(ab, ba);
    }
}
