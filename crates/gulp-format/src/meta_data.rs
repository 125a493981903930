//! An item's `meta_data` list, which a msgpack meta leaves encoded until it
//! is first used.

use std::fmt;
use std::ops::{Deref, DerefMut, Range};
use std::sync::{Arc, OnceLock};

use crate::value::Value;

/// The `meta_data` list of one item: one [`Value`] per `append` of its id.
///
/// It dereferences to `[Value]`, so it reads like a `Vec<Value>`:
/// `item.meta_data[0]`, `item.meta_data.first()`, `item.meta_data.iter()`.
///
/// A list read from a msgpack meta is held as its encoded bytes (part of
/// one buffer shared by every item of the chunk): `read_meta` has already
/// checked them completely, and they are decoded into [`Value`]s on first
/// access, once, which cannot fail. Loading a chunk thus costs no
/// allocation per value for the items nobody looks at. Any mutable access
/// ([`as_mut_vec`](Self::as_mut_vec), [`push`](Self::push), `DerefMut`)
/// decodes the list and drops the encoded bytes, so they never disagree with
/// the values; writing an untouched list as msgpack copies its bytes, which
/// are exactly those the writer would produce for its values. Lists built in
/// memory or read from JSON are held decoded.
///
/// Equality, `Debug` and every other view are those of the decoded list.
#[derive(Clone, Default)]
pub struct MetaData {
    /// The list, when `lazy` is `None`.
    list: Vec<Value>,
    /// The encoded list, and its values once decoded.
    lazy: Option<Lazy>,
}

/// A checked, canonically encoded msgpack list and its decoded values.
#[derive(Clone)]
struct Lazy {
    /// The buffer holding the encoding (a chunk's meta section).
    buffer: Arc<[u8]>,
    /// Where the encoding lies in `buffer`.
    range: Range<usize>,
    /// The decoder of the format that checked the bytes (given by the
    /// reader, so that this module depends on no format).
    decode: fn(&[u8]) -> Vec<Value>,
    decoded: OnceLock<Vec<Value>>,
}

impl Lazy {
    fn bytes(&self) -> &[u8] {
        self.buffer.get(self.range.clone()).unwrap_or_default()
    }

    fn get(&self) -> &Vec<Value> {
        self.decoded.get_or_init(|| (self.decode)(self.bytes()))
    }

    fn into_vec(self) -> Vec<Value> {
        match self.decoded.into_inner() {
            Some(list) => list,
            None => (self.decode)(self.buffer.get(self.range).unwrap_or_default()),
        }
    }
}

impl MetaData {
    /// An empty list.
    pub fn new() -> MetaData {
        MetaData::default()
    }

    /// A list held as `buffer[range]`, the msgpack encoding of a list that
    /// the reader has checked completely and found in the writer's own
    /// (canonical) form; `decode` decodes such bytes, which cannot fail.
    pub(crate) fn from_checked_msgpack(
        buffer: Arc<[u8]>,
        range: Range<usize>,
        decode: fn(&[u8]) -> Vec<Value>,
    ) -> MetaData {
        debug_assert!(buffer.get(range.clone()).is_some());
        MetaData {
            list: Vec::new(),
            lazy: Some(Lazy {
                buffer,
                range,
                decode,
                decoded: OnceLock::new(),
            }),
        }
    }

    /// The list as a slice (decoding it on first access).
    pub fn as_slice(&self) -> &[Value] {
        match &self.lazy {
            None => &self.list,
            Some(lazy) => lazy.get(),
        }
    }

    /// The list, mutably. Decodes it if needed and drops its encoded bytes.
    pub fn as_mut_vec(&mut self) -> &mut Vec<Value> {
        if let Some(lazy) = self.lazy.take() {
            self.list = lazy.into_vec();
        }
        &mut self.list
    }

    /// Appends a value (see [`as_mut_vec`](Self::as_mut_vec)).
    pub fn push(&mut self, value: Value) {
        self.as_mut_vec().push(value);
    }

    /// The list as a `Vec` (decoding it if needed).
    pub fn into_vec(self) -> Vec<Value> {
        match self.lazy {
            None => self.list,
            Some(lazy) => lazy.into_vec(),
        }
    }

    /// Whether the values exist as [`Value`]s: `false` only for a list read
    /// from a msgpack meta and not accessed yet.
    pub fn is_decoded(&self) -> bool {
        self.lazy
            .as_ref()
            .is_none_or(|lazy| lazy.decoded.get().is_some())
    }

    /// The msgpack encoding of the list as it was read, if it is still held:
    /// exactly the bytes the writer produces for [`as_slice`](Self::as_slice).
    pub(crate) fn msgpack_bytes(&self) -> Option<&[u8]> {
        self.lazy.as_ref().map(Lazy::bytes)
    }
}

impl Deref for MetaData {
    type Target = [Value];

    fn deref(&self) -> &[Value] {
        self.as_slice()
    }
}

impl DerefMut for MetaData {
    /// Decodes the list if needed and drops its encoded bytes.
    fn deref_mut(&mut self) -> &mut [Value] {
        self.as_mut_vec()
    }
}

impl AsRef<[Value]> for MetaData {
    fn as_ref(&self) -> &[Value] {
        self.as_slice()
    }
}

impl fmt::Debug for MetaData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl PartialEq for MetaData {
    fn eq(&self, other: &MetaData) -> bool {
        // Identical canonical bytes are identical values; otherwise compare
        // the values (two NaNs with different bits are equal values).
        if let (Some(a), Some(b)) = (&self.lazy, &other.lazy)
            && a.bytes() == b.bytes()
        {
            return true;
        }
        self.as_slice() == other.as_slice()
    }
}

impl PartialEq<[Value]> for MetaData {
    fn eq(&self, other: &[Value]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<&[Value]> for MetaData {
    fn eq(&self, other: &&[Value]) -> bool {
        self.as_slice() == *other
    }
}

impl<const N: usize> PartialEq<[Value; N]> for MetaData {
    fn eq(&self, other: &[Value; N]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<Vec<Value>> for MetaData {
    fn eq(&self, other: &Vec<Value>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl PartialEq<MetaData> for Vec<Value> {
    fn eq(&self, other: &MetaData) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl From<Vec<Value>> for MetaData {
    fn from(list: Vec<Value>) -> MetaData {
        MetaData { list, lazy: None }
    }
}

impl From<MetaData> for Vec<Value> {
    fn from(meta_data: MetaData) -> Vec<Value> {
        meta_data.into_vec()
    }
}

impl FromIterator<Value> for MetaData {
    fn from_iter<I: IntoIterator<Item = Value>>(iter: I) -> MetaData {
        MetaData::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl Extend<Value> for MetaData {
    fn extend<I: IntoIterator<Item = Value>>(&mut self, iter: I) {
        self.as_mut_vec().extend(iter);
    }
}

impl<'a> IntoIterator for &'a MetaData {
    type Item = &'a Value;
    type IntoIter = std::slice::Iter<'a, Value>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl IntoIterator for MetaData {
    type Item = Value;
    type IntoIter = std::vec::IntoIter<Value>;

    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn is_send_and_sync() {
        assert_send_sync::<MetaData>();
    }

    #[test]
    fn built_in_memory_is_decoded_and_compares_as_a_list() {
        let mut md: MetaData = [Value::from("a"), Value::Int(1)].into_iter().collect();
        assert!(md.is_decoded());
        assert_eq!(md, [Value::from("a"), Value::Int(1)]);
        assert_eq!(md, vec![Value::from("a"), Value::Int(1)]);
        md.push(Value::Null);
        assert_eq!(md.len(), 3);
        assert_eq!(format!("{md:?}"), "[String(\"a\"), Int(1), Null]");
        assert_eq!(MetaData::default(), MetaData::new());
        assert!(MetaData::new().is_empty());
        assert_eq!(md.into_vec().len(), 3);
    }

    /// `[{"k": 1}, "x"]` as the writer encodes it, inside a larger buffer.
    fn lazy() -> MetaData {
        let buffer: Arc<[u8]> = Arc::from(&b"\xff\x92\x81\xa1k\x01\xa1x\xff"[..]);
        MetaData::from_checked_msgpack(buffer, 1..8, crate::msgpack::decode_checked_list)
    }

    #[test]
    fn encoded_list_decodes_on_first_access_only() {
        let want = vec![
            [("k", Value::Int(1))].into_iter().collect::<Value>(),
            Value::from("x"),
        ];
        let md = lazy();
        assert!(!md.is_decoded());
        assert_eq!(md.msgpack_bytes(), Some(&b"\x92\x81\xa1k\x01\xa1x"[..]));
        // Equal bytes compare equal without decoding.
        assert_eq!(md, lazy());
        assert!(!md.is_decoded());
        let copy = md.clone();
        assert_eq!(md[1], Value::from("x"));
        assert!(md.is_decoded());
        assert!(!copy.is_decoded());
        assert_eq!(md, want);
        assert_eq!(copy.into_vec(), want);
        assert_eq!(md.msgpack_bytes(), Some(&b"\x92\x81\xa1k\x01\xa1x"[..]));
    }

    #[test]
    fn mutation_drops_the_encoded_bytes() {
        let mut md = lazy();
        md[1] = Value::from("y");
        assert!(md.is_decoded());
        assert_eq!(md.msgpack_bytes(), None);
        assert_eq!(md[1], Value::from("y"));
        assert_ne!(md, lazy());

        let mut md = lazy();
        let _ = md.first();
        md.push(Value::Null);
        assert_eq!(md.msgpack_bytes(), None);
        assert_eq!(md.len(), 3);

        let mut md = lazy();
        md.as_mut_vec().clear();
        assert_eq!(md.msgpack_bytes(), None);
        assert!(md.is_empty());
    }
}
