//! A bounds-checked msgpack parser that reports byte offsets, and the two
//! ways of using it: building [`Value`]s or only checking them.

use std::collections::HashSet;
use std::ops::Range;

use rmp::Marker;

use crate::error::{Error, Result};
use crate::value::{BigInt, MAX_DEPTH, Map, Value};

use super::EXT_BIGINT;

/// The most elements reserved ahead for a list or map. A declared length is
/// at most the bytes left (each element takes one), but an element takes
/// tens of bytes in memory and every level of nesting reserves its own: a
/// file of `n` bytes nested 1024 deep could make the reader reserve about
/// `1024 × n × size_of::<Value>()` bytes before failing. Beyond this, lists
/// and maps grow as their elements are actually read.
const MAX_PREALLOC: usize = 256;

/// Decodes a `meta_data` list that [`read_meta`](super::validate::read_meta) has checked (`Cursor::item`
/// with [`Skip`]), which cannot fail: the same parser accepted it.
pub(crate) fn decode_checked_list(bytes: &[u8]) -> Vec<Value> {
    let mut c = Cursor {
        bytes,
        pos: 0,
        depth: 0,
    };
    let decoded = c.value(&mut Build);
    debug_assert!(
        matches!(decoded, Ok(Value::Array(_))) && c.pos == bytes.len(),
        "a checked meta_data list does not decode: {decoded:?}"
    );
    match decoded {
        Ok(Value::Array(list)) => list,
        // Unreachable for checked bytes; an empty list is the least surprise.
        _ => Vec::new(),
    }
}

/// Whether `n`, the length of a string, list or map, is written with marker
/// `m` by the writer (rmp picks the smallest form).
fn canonical_len(m: Marker, n: usize) -> bool {
    match m {
        Marker::Str8 => n >= 32,
        Marker::Array16 | Marker::Map16 => n >= 16,
        Marker::Str16 => n > 0xff,
        Marker::Array32 | Marker::Map32 | Marker::Str32 => n > 0xffff,
        _ => true,
    }
}

/// What [`Cursor::value`] makes of the values it reads: [`Build`] makes
/// [`Value`]s, [`Skip`] checks them and makes nothing. One parser serves
/// both, so the check at load and the decoding on first access accept
/// exactly the same bytes.
trait Sink<'a> {
    /// Whether to report encodings the writer would not produce
    /// ([`Sink::non_canonical`]).
    const CANONICAL: bool;
    /// What a value becomes.
    type Out;
    /// A list being read.
    type List;
    /// A map being read.
    type Map;
    /// A value other than a list or map (`make` builds it).
    fn leaf(&mut self, make: impl FnOnce() -> Value) -> Self::Out;
    /// Starts a list that declares `n` elements.
    fn list(&mut self, n: usize) -> Self::List;
    /// Adds an element to a list.
    fn push(&mut self, list: &mut Self::List, value: Self::Out);
    /// Ends a list.
    fn end_list(&mut self, list: Self::List) -> Self::Out;
    /// Starts a map that declares `n` entries.
    fn map(&mut self, n: usize) -> Self::Map;
    /// Adds an entry to a map; `false` if the key is already there.
    fn insert(&mut self, map: &mut Self::Map, key: &'a str, value: Self::Out) -> bool;
    /// Ends a map.
    fn end_map(&mut self, map: Self::Map) -> Self::Out;
    /// The value just read is not in the writer's form.
    fn non_canonical(&mut self);
}

/// Builds the values.
struct Build;

impl<'a> Sink<'a> for Build {
    const CANONICAL: bool = false;
    type Out = Value;
    type List = Vec<Value>;
    type Map = Map;

    #[inline]
    fn leaf(&mut self, make: impl FnOnce() -> Value) -> Value {
        make()
    }

    #[inline]
    fn list(&mut self, n: usize) -> Vec<Value> {
        Vec::with_capacity(n.min(MAX_PREALLOC))
    }

    #[inline]
    fn push(&mut self, list: &mut Vec<Value>, value: Value) {
        list.push(value);
    }

    #[inline]
    fn end_list(&mut self, list: Vec<Value>) -> Value {
        Value::Array(list)
    }

    #[inline]
    fn map(&mut self, n: usize) -> Map {
        Map::with_capacity_and_hasher(n.min(MAX_PREALLOC), Default::default())
    }

    #[inline]
    fn insert(&mut self, map: &mut Map, key: &'a str, value: Value) -> bool {
        map.insert(key.to_owned(), value).is_none()
    }

    #[inline]
    fn end_map(&mut self, map: Map) -> Value {
        Value::Object(map)
    }

    #[inline]
    fn non_canonical(&mut self) {}
}

/// Maps of up to this many keys are checked for repeated keys by comparing
/// each key with the earlier ones; larger maps use a hash set.
const SMALL_MAP: usize = 16;

/// Checks the values and builds nothing. It allocates only its key buffer,
/// reused from item to item, and a hash set for a map of more than
/// [`SMALL_MAP`] keys.
pub(super) struct Skip<'a> {
    /// The keys of the maps being read, innermost last.
    keys: Vec<&'a str>,
    /// Whether everything since [`Skip::reset`] is in the writer's form.
    pub(super) canonical: bool,
}

/// A map being checked by [`Skip`].
struct SkipMap<'a> {
    /// Where its keys start in [`Skip::keys`].
    base: usize,
    /// Its keys, once it has more than [`SMALL_MAP`].
    set: Option<HashSet<&'a str, foldhash::fast::RandomState>>,
}

impl Skip<'_> {
    pub(super) fn new() -> Self {
        Skip {
            keys: Vec::new(),
            canonical: true,
        }
    }

    /// Starts a new value.
    fn reset(&mut self) {
        self.keys.clear();
        self.canonical = true;
    }
}

impl<'a> Sink<'a> for Skip<'a> {
    const CANONICAL: bool = true;
    type Out = ();
    type List = ();
    type Map = SkipMap<'a>;

    #[inline]
    fn leaf(&mut self, _make: impl FnOnce() -> Value) {}

    #[inline]
    fn list(&mut self, _n: usize) {}

    #[inline]
    fn push(&mut self, _list: &mut (), _value: ()) {}

    #[inline]
    fn end_list(&mut self, _list: ()) {}

    #[inline]
    fn map(&mut self, _n: usize) -> SkipMap<'a> {
        SkipMap {
            base: self.keys.len(),
            set: None,
        }
    }

    fn insert(&mut self, map: &mut SkipMap<'a>, key: &'a str, _value: ()) -> bool {
        if let Some(set) = &mut map.set {
            return set.insert(key);
        }
        // Inner maps have truncated the buffer back to their own base, at
        // or above this map's.
        let earlier = self.keys.get(map.base..).unwrap_or_default();
        if earlier.contains(&key) {
            return false;
        }
        if earlier.len() < SMALL_MAP {
            self.keys.push(key);
        } else {
            let mut set = HashSet::with_capacity_and_hasher(2 * SMALL_MAP, Default::default());
            set.extend(self.keys.drain(map.base..));
            set.insert(key);
            map.set = Some(set);
        }
        true
    }

    #[inline]
    fn end_map(&mut self, map: SkipMap<'a>) {
        self.keys.truncate(map.base);
    }

    #[inline]
    fn non_canonical(&mut self) {
        self.canonical = false;
    }
}

/// A bounds-checked reader of msgpack objects that knows its byte offset.
pub(super) struct Cursor<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) pos: usize,
    pub(super) depth: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn err(&self, reason: impl Into<String>) -> Error {
        let mut reason = reason.into();
        if self.pos >= self.bytes.len() {
            reason.push_str(" (at the end of the section: truncated?)");
        }
        Error::msgpack(self.pos, reason)
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| {
                self.err(format!(
                    "{n} bytes needed, {} left",
                    self.bytes.len().saturating_sub(self.pos)
                ))
            })?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn be(&mut self, n: usize) -> Result<u64> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn marker(&mut self) -> Result<Marker> {
        Ok(Marker::from_u8(self.take(1)?[0]))
    }

    fn len_of(&mut self, marker: Marker) -> Result<Option<usize>> {
        let n = match marker {
            Marker::FixArray(n) | Marker::FixMap(n) | Marker::FixStr(n) => u64::from(n),
            Marker::Array16 | Marker::Map16 | Marker::Str16 | Marker::Bin16 => self.be(2)?,
            Marker::Array32 | Marker::Map32 | Marker::Str32 | Marker::Bin32 => self.be(4)?,
            Marker::Str8 | Marker::Bin8 => self.be(1)?,
            _ => return Ok(None),
        };
        // Every element takes at least one byte: a count past the end is a lie
        // and must not size an allocation.
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        if n > self.bytes.len().saturating_sub(self.pos) {
            return Err(self.err(format!("declared length {n} runs past the end")));
        }
        Ok(Some(n))
    }

    pub(super) fn array_len(&mut self) -> Result<usize> {
        let at = self.pos;
        let m = self.marker()?;
        match m {
            Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => {
                Ok(self.len_of(m)?.unwrap_or(0))
            }
            _ => Err(Error::msgpack(
                at,
                format!("expected an array, found {m:?}"),
            )),
        }
    }

    pub(super) fn str_ref(&mut self) -> Result<&'a str> {
        let at = self.pos;
        let m = self.marker()?;
        self.str_body(m, at)
    }

    /// The rest of a string whose marker `m` (at `at`) was just read.
    fn str_body(&mut self, m: Marker, at: usize) -> Result<&'a str> {
        match m {
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                let n = self.len_of(m)?.unwrap_or(0);
                let start = self.pos;
                let raw = self.take(n)?;
                std::str::from_utf8(raw).map_err(|e| {
                    Error::msgpack(start + e.valid_up_to(), "invalid UTF-8 in a string")
                })
            }
            _ => Err(Error::msgpack(
                at,
                format!("expected a string, found {m:?}"),
            )),
        }
    }

    pub(super) fn uint(&mut self) -> Result<u64> {
        let at = self.pos;
        match self.marker()? {
            Marker::FixPos(n) => Ok(u64::from(n)),
            Marker::U8 => self.be(1),
            Marker::U16 => self.be(2),
            Marker::U32 => self.be(4),
            Marker::U64 => self.be(8),
            m => Err(Error::msgpack(
                at,
                format!("expected an unsigned integer, found {m:?}"),
            )),
        }
    }

    pub(super) fn bin(&mut self) -> Result<&'a [u8]> {
        let at = self.pos;
        let m = self.marker()?;
        match m {
            Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => {
                let n = self.len_of(m)?.unwrap_or(0);
                self.take(n)
            }
            _ => Err(Error::msgpack(at, format!("expected bin, found {m:?}"))),
        }
    }

    pub(super) fn nil(&mut self) -> Result<()> {
        let at = self.pos;
        match self.marker()? {
            Marker::Null => Ok(()),
            m => Err(Error::msgpack(
                at,
                format!("expected nil (no checksums), found {m:?}"),
            )),
        }
    }

    /// An item, `[meta_data, metalayers]`: the `meta_data` list checked by
    /// `skip` (which also tells whether its encoding is the writer's own) and
    /// returned as its byte range, the metalayers decoded.
    pub(super) fn item(&mut self, skip: &mut Skip<'a>) -> Result<(Range<usize>, Map)> {
        let at = self.pos;
        if self.array_len()? != 2 {
            return Err(Error::msgpack(at, "an item is not [meta_data, metalayers]"));
        }
        let list_at = self.pos;
        skip.reset();
        self.value(skip)?;
        let is_list = self.bytes.get(list_at).is_some_and(|&b| {
            matches!(
                Marker::from_u8(b),
                Marker::FixArray(_) | Marker::Array16 | Marker::Array32
            )
        });
        if !is_list {
            return Err(Error::msgpack(list_at, "meta_data is not a list"));
        }
        let list = list_at..self.pos;
        let map_at = self.pos;
        let Value::Object(metalayers) = self.value(&mut Build)? else {
            return Err(Error::msgpack(map_at, "metalayers is not a map"));
        };
        Ok((list, metalayers))
    }

    /// One value, handed to `sink`: [`Build`] makes it, [`Skip`] only checks
    /// it. Both run this same code, so a value that passes the check decodes.
    fn value<S: Sink<'a>>(&mut self, sink: &mut S) -> Result<S::Out> {
        let at = self.pos;
        let m = self.marker()?;
        // Only lists and maps recurse. The other kinds live in `scalar` so that
        // each nesting level costs small stack frames: unoptimised builds give
        // every temporary of a function its own stack slot, and with all of
        // them in this one function, MAX_DEPTH levels overflowed a thread's
        // default 2 MiB stack (tests/data/fuzz-regressions/).
        match m {
            Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => self.list(sink, m, at),
            Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => self.map(sink, m, at),
            Marker::FixStr(n) => {
                let text = self.fixstr(n, at)?;
                Ok(sink.leaf(|| Value::String(text.to_owned())))
            }
            Marker::Str8 => {
                let text = self.str8(at)?;
                if S::CANONICAL && !canonical_len(m, text.len()) {
                    sink.non_canonical();
                }
                Ok(sink.leaf(|| Value::String(text.to_owned())))
            }
            _ => self.scalar(sink, m, at),
        }
    }

    /// A fixstr of `n` bytes whose marker (at `at`) was just read: the
    /// common case of `str_body`, which it falls back to (for its errors).
    #[inline]
    fn fixstr(&mut self, n: u8, at: usize) -> Result<&'a str> {
        let start = self.pos;
        let end = start + usize::from(n);
        if let Some(text) = self
            .bytes
            .get(start..end)
            .and_then(|raw| std::str::from_utf8(raw).ok())
        {
            self.pos = end;
            return Ok(text);
        }
        self.str_body(Marker::FixStr(n), at)
    }

    /// A str8 whose marker (at `at`) was just read, as [`Cursor::fixstr`].
    #[inline]
    fn str8(&mut self, at: usize) -> Result<&'a str> {
        let start = self.pos + 1;
        if let Some(&n) = self.bytes.get(self.pos)
            && let Some(text) = self
                .bytes
                .get(start..start + usize::from(n))
                .and_then(|raw| std::str::from_utf8(raw).ok())
        {
            self.pos = start + usize::from(n);
            return Ok(text);
        }
        self.str_body(Marker::Str8, at)
    }

    /// An index entry in its usual form, `93`, a fixstr id, and two
    /// integers below 2^16, moving past it; `None` (nothing consumed) for any
    /// other form, which the general path then reads or rejects.
    #[inline]
    pub(super) fn short_index_entry(&mut self) -> Option<(&'a str, u64, u64)> {
        let bytes = self.bytes;
        let mut p = self.pos;
        if *bytes.get(p)? != 0x93 {
            return None;
        }
        let marker = *bytes.get(p + 1)?;
        if marker & 0xe0 != 0xa0 {
            return None;
        }
        let start = p + 2;
        p = start + usize::from(marker & 0x1f);
        let id = std::str::from_utf8(bytes.get(start..p)?).ok()?;
        let mut small_uint = || -> Option<u64> {
            let b = *bytes.get(p)?;
            match b {
                0x00..=0x7f => {
                    p += 1;
                    Some(u64::from(b))
                }
                0xcc => {
                    let v = *bytes.get(p + 1)?;
                    p += 2;
                    Some(u64::from(v))
                }
                0xcd => {
                    let v = bytes.get(p + 1..p + 3)?;
                    p += 3;
                    Some(u64::from(u16::from_be_bytes([v[0], v[1]])))
                }
                _ => None,
            }
        };
        let n_frames = small_uint()?;
        let meta_len = small_uint()?;
        self.pos = p;
        Some((id, n_frames, meta_len))
    }

    /// A map key: a string, usually a fixstr.
    #[inline]
    fn key<S: Sink<'a>>(&mut self, sink: &mut S) -> Result<&'a str> {
        let at = self.pos;
        match self.bytes.get(at) {
            Some(&b) if b & 0xe0 == 0xa0 => {
                self.pos += 1;
                self.fixstr(b & 0x1f, at)
            }
            _ => {
                let m = self.marker()?;
                let text = self.str_body(m, at)?;
                if S::CANONICAL && !canonical_len(m, text.len()) {
                    sink.non_canonical();
                }
                Ok(text)
            }
        }
    }

    /// A list whose marker `m` (at `at`) was just read.
    fn list<S: Sink<'a>>(&mut self, sink: &mut S, m: Marker, at: usize) -> Result<S::Out> {
        let n = self.len_of(m)?.unwrap_or(0);
        if S::CANONICAL && !canonical_len(m, n) {
            sink.non_canonical();
        }
        self.descend(at)?;
        let mut items = sink.list(n);
        for _ in 0..n {
            let value = self.value(sink)?;
            sink.push(&mut items, value);
        }
        self.depth -= 1;
        Ok(sink.end_list(items))
    }

    /// A map whose marker `m` (at `at`) was just read.
    fn map<S: Sink<'a>>(&mut self, sink: &mut S, m: Marker, at: usize) -> Result<S::Out> {
        let n = self.len_of(m)?.unwrap_or(0);
        if S::CANONICAL && !canonical_len(m, n) {
            sink.non_canonical();
        }
        self.descend(at)?;
        let mut map = sink.map(n);
        for _ in 0..n {
            let key = self.key(sink)?;
            let value = self.value(sink)?;
            if !sink.insert(&mut map, key, value) {
                return Err(Error::msgpack(at, "map has a repeated key"));
            }
        }
        self.depth -= 1;
        Ok(sink.end_map(map))
    }

    /// A value other than a list or map, whose marker `m` (at `at`) was just
    /// read.
    #[cfg_attr(debug_assertions, inline(never))]
    fn scalar<S: Sink<'a>>(&mut self, sink: &mut S, m: Marker, at: usize) -> Result<S::Out> {
        // Whether `m` is the form the writer picks for this value.
        let mut canonical = true;
        let out = match m {
            Marker::Null => sink.leaf(|| Value::Null),
            Marker::True => sink.leaf(|| Value::Bool(true)),
            Marker::False => sink.leaf(|| Value::Bool(false)),
            Marker::FixPos(n) => sink.leaf(|| Value::Int(i64::from(n))),
            Marker::U8 | Marker::U16 | Marker::U32 | Marker::U64 => {
                let (n, least) = match m {
                    Marker::U8 => (1, 0x80),
                    Marker::U16 => (2, 0x100),
                    Marker::U32 => (4, 0x1_0000),
                    _ => (8, 0x1_0000_0000),
                };
                let u = self.be(n)?;
                canonical = u >= least;
                sink.leaf(|| Value::from(u))
            }
            Marker::FixNeg(n) => sink.leaf(|| Value::Int(i64::from(n))),
            Marker::I8 | Marker::I16 | Marker::I32 | Marker::I64 => {
                let (i, below) = match m {
                    Marker::I8 => (i64::from(i8::from_be_bytes(self.array()?)), -32),
                    Marker::I16 => (i64::from(i16::from_be_bytes(self.array()?)), -128),
                    Marker::I32 => (i64::from(i32::from_be_bytes(self.array()?)), -32_768),
                    _ => (i64::from_be_bytes(self.array()?), -2_147_483_648),
                };
                canonical = i < below;
                sink.leaf(|| Value::Int(i))
            }
            Marker::F32 => {
                canonical = false;
                let f = f64::from(f32::from_be_bytes(self.array()?));
                sink.leaf(|| Value::Float(f))
            }
            Marker::F64 => {
                let f = f64::from_bits(u64::from_be_bytes(self.array()?));
                sink.leaf(|| Value::Float(f))
            }
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                let text = self.str_body(m, at)?;
                canonical = canonical_len(m, text.len());
                sink.leaf(|| Value::String(text.to_owned()))
            }
            Marker::FixExt1
            | Marker::FixExt2
            | Marker::FixExt4
            | Marker::FixExt8
            | Marker::FixExt16
            | Marker::Ext8
            | Marker::Ext16
            | Marker::Ext32 => {
                let n = match m {
                    Marker::FixExt1 => 1,
                    Marker::FixExt2 => 2,
                    Marker::FixExt4 => 4,
                    Marker::FixExt8 => 8,
                    Marker::FixExt16 => 16,
                    Marker::Ext8 => usize::from(self.take(1)?[0]),
                    Marker::Ext16 => usize::from(u16::from_be_bytes(self.array()?)),
                    _ => usize::try_from(self.be(4)?).unwrap_or(usize::MAX),
                };
                // rmp's write_ext_meta: a fixext for 1, 2, 4, 8 and 16 bytes,
                // else the smallest of ext 8, 16 and 32.
                canonical = match m {
                    Marker::Ext8 => !matches!(n, 1 | 2 | 4 | 8 | 16),
                    Marker::Ext16 => n > 0xff,
                    Marker::Ext32 => n > 0xffff,
                    _ => true,
                };
                let ty = self.take(1)?[0] as i8;
                let payload = self.take(n)?;
                let text = std::str::from_utf8(payload)
                    .ok()
                    .filter(|text| ty == EXT_BIGINT && BigInt::is_valid(text))
                    .ok_or_else(|| {
                        Error::msgpack(at, format!("unsupported ext type {ty} or bad big integer"))
                    })?;
                // The writer puts an integer that fits u64 in a uint 64.
                if S::CANONICAL && text.parse::<u64>().is_ok() {
                    canonical = false;
                }
                sink.leaf(|| Value::BigInt(BigInt::from_valid(text)))
            }
            other => {
                return Err(Error::msgpack(
                    at,
                    format!("{other:?} is not part of the meta model"),
                ));
            }
        };
        if S::CANONICAL && !canonical {
            sink.non_canonical();
        }
        Ok(out)
    }

    fn descend(&mut self, at: usize) -> Result<()> {
        if self.depth >= MAX_DEPTH {
            return Err(Error::msgpack(
                at,
                format!("values nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.depth += 1;
        Ok(())
    }
}
