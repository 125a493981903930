//! The JSON reader: accepts what Python's `json.load` accepts.

use indexmap::IndexMap;

use crate::error::{Error, Result};
use crate::layout::FrameInfo;
use crate::media::{AUDIO_KEY, FRAME_TIMES_KEY, take_media};
use crate::meta::{ChunkMeta, ItemMeta};
use crate::value::{BigInt, Map, Value};

use super::MAX_DEPTH;

/// The error for a key an item object may not have.
pub(super) fn unexpected_item_key(id: &str, at: usize, key: &str) -> Error {
    Error::item(
        id,
        at,
        format!(
            "unexpected key {key:?} (an item has frame_info and meta_data, and may have {FRAME_TIMES_KEY} and {AUDIO_KEY})"
        ),
    )
}

pub(crate) struct Parser<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) pos: usize,
    pub(super) depth: usize,
}

impl<'a> Parser<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Parser {
            bytes,
            pos: 0,
            depth: 0,
        }
    }

    pub(crate) fn chunk_meta(mut self) -> Result<ChunkMeta> {
        let result = self.chunk_meta_inner();
        result.map_err(|e| self.hint_truncated(e))
    }

    /// An error met at the end of the input says that the file may be cut
    /// short, whatever the parser was expecting there.
    pub(super) fn hint_truncated(&self, e: Error) -> Error {
        const HINT: &str = " (the file ends here: truncated?)";
        if self.pos < self.bytes.len() {
            return e;
        }
        let at = |offset: &u64| usize::try_from(*offset).unwrap_or(usize::MAX);
        match e.kind() {
            crate::ErrorKind::Json { offset, reason } if !reason.ends_with(HINT) => {
                Error::json(at(offset), format!("{reason}{HINT}"))
            }
            crate::ErrorKind::Item { id, offset, reason } if !reason.ends_with(HINT) => {
                Error::item(id, at(offset), format!("{reason}{HINT}"))
            }
            _ => e,
        }
    }

    fn chunk_meta_inner(&mut self) -> Result<ChunkMeta> {
        self.skip_ws();
        self.expect(b'{', "expected '{' at the start of the meta")?;
        let mut items: IndexMap<String, ItemMeta, foldhash::fast::RandomState> =
            IndexMap::default();
        self.skip_ws();
        if !self.eat(b'}') {
            loop {
                self.skip_ws();
                let id = self.string("expected a string id")?;
                self.skip_ws();
                self.expect(b':', "expected ':' after the id")?;
                self.skip_ws();
                let item = self.item(&id)?;
                // An OrderedDict keeps the first position and the last value.
                items.insert(id, item);
                self.skip_ws();
                if self.eat(b'}') {
                    break;
                }
                self.expect(b',', "expected ',' or '}' after an item")?;
            }
        }
        self.end()?;
        Ok(items.into_iter().collect())
    }

    pub(crate) fn whole_value(mut self) -> Result<Value> {
        self.skip_ws();
        let value = self.value()?;
        self.end()?;
        Ok(value)
    }

    pub(super) fn end(&mut self) -> Result<()> {
        self.skip_ws();
        if self.pos < self.bytes.len() {
            return Err(self.err("extra data after the end of the JSON document"));
        }
        Ok(())
    }

    pub(super) fn item(&mut self, id: &str) -> Result<ItemMeta> {
        let start = self.pos;
        if !self.eat(b'{') {
            return Err(Error::item(id, start, "item is not an object"));
        }
        let mut frame_info = None;
        let mut meta_data = None;
        let mut media = Map::default();
        self.skip_ws();
        if !self.eat(b'}') {
            loop {
                self.skip_ws();
                let key_at = self.pos;
                let key = self.string("expected a key in the item object")?;
                self.skip_ws();
                self.expect(b':', "expected ':' after a key")?;
                self.skip_ws();
                match key.as_str() {
                    "frame_info" => frame_info = Some(self.frame_info(id)?),
                    "meta_data" => {
                        let at = self.pos;
                        match self.value()? {
                            Value::Array(list) => meta_data = Some(list),
                            _ => return Err(Error::item(id, at, "meta_data is not a list")),
                        }
                    }
                    FRAME_TIMES_KEY | AUDIO_KEY => {
                        let value = self.value()?;
                        media.insert(key, value);
                    }
                    other => return Err(unexpected_item_key(id, key_at, other)),
                }
                self.skip_ws();
                if self.eat(b'}') {
                    break;
                }
                self.expect(b',', "expected ',' or '}' in the item object")?;
            }
        }
        let frame_info =
            frame_info.ok_or_else(|| Error::item(id, start, "item has no frame_info"))?;
        let meta_data = meta_data.ok_or_else(|| Error::item(id, start, "item has no meta_data"))?;
        let (frame_times, audio) =
            take_media(&mut media, frame_info.len()).map_err(|e| Error::item(id, start, e))?;
        Ok(ItemMeta {
            frame_info,
            meta_data: meta_data.into(),
            frame_times,
            audio,
            ..ItemMeta::default()
        })
    }

    fn frame_info(&mut self, id: &str) -> Result<Vec<FrameInfo>> {
        let mut frames = Vec::new();
        self.frame_info_with(id, |fi| frames.push(fi))?;
        Ok(frames)
    }

    /// Parses a `frame_info` list, handing each entry to `each`.
    pub(super) fn frame_info_with(
        &mut self,
        id: &str,
        mut each: impl FnMut(FrameInfo),
    ) -> Result<()> {
        if !self.eat(b'[') {
            return Err(Error::item(id, self.pos, "frame_info is not a list"));
        }
        self.skip_ws();
        if self.eat(b']') {
            return Ok(());
        }
        loop {
            self.skip_ws();
            let at = self.pos;
            if !self.eat(b'[') {
                return Err(Error::item(
                    id,
                    at,
                    "a frame_info entry is not a [loc, pad, length] list",
                ));
            }
            let mut triple = [0u64; 3];
            for (k, slot) in triple.iter_mut().enumerate() {
                self.skip_ws();
                *slot = match self.fast_frame_number() {
                    Some(n) => n,
                    None => self.frame_number(id, k)?,
                };
                self.skip_ws();
                let sep = if k == 2 { b']' } else { b',' };
                if !self.eat(sep) {
                    return Err(Error::item(
                        id,
                        self.pos,
                        "a frame_info entry must have exactly 3 integers [loc, pad, length]",
                    ));
                }
            }
            each(FrameInfo {
                loc: triple[0],
                pad: triple[1],
                length: triple[2],
            });
            self.skip_ws();
            if self.eat(b']') {
                return Ok(());
            }
            self.expect(b',', "expected ',' or ']' in frame_info")?;
        }
    }

    /// A `frame_info` number in its common form: 1 to 18 digits, no leading
    /// zero, then neither a digit nor the start of a fraction or exponent,
    /// which cannot overflow. `None` (nothing consumed) for anything else,
    /// which [`frame_number`](Self::frame_number) then reads or rejects.
    fn fast_frame_number(&mut self) -> Option<u64> {
        let bytes = self.bytes;
        let start = self.pos;
        let mut n = 0u64;
        let mut end = start;
        while end - start < 18 {
            match bytes.get(end) {
                Some(&b @ b'0'..=b'9') => n = n * 10 + u64::from(b - b'0'),
                _ => break,
            }
            end += 1;
        }
        let digits = end - start;
        let plain = digits > 0
            && (digits == 1 || bytes[start] != b'0')
            && !matches!(bytes.get(end), Some(b'0'..=b'9' | b'.' | b'e' | b'E'));
        plain.then(|| {
            self.pos = end;
            n
        })
    }

    fn frame_number(&mut self, id: &str, k: usize) -> Result<u64> {
        const NAMES: [&str; 3] = ["loc", "pad", "length"];
        let at = self.pos;
        let mut n: u64 = 0;
        let mut digits = 0;
        while let Some(&b) = self.bytes.get(self.pos) {
            if !b.is_ascii_digit() {
                break;
            }
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(b - b'0')))
                .ok_or_else(|| {
                    Error::item(id, at, format!("{} does not fit in 64 bits", NAMES[k]))
                })?;
            digits += 1;
            self.pos += 1;
        }
        let leading_zero = digits > 1 && self.bytes[at] == b'0';
        let more = matches!(self.peek(), Some(b'.' | b'e' | b'E'));
        if digits == 0 || leading_zero || more {
            return Err(Error::item(
                id,
                at,
                format!("{} is not a non-negative integer", NAMES[k]),
            ));
        }
        Ok(n)
    }

    pub(super) fn value(&mut self) -> Result<Value> {
        // Only objects and lists recurse. The other kinds live in `scalar` so
        // that each nesting level costs small stack frames: unoptimised
        // builds give every temporary of a function its own stack slot.
        match self.peek() {
            Some(b'{') => self.nested(Self::object),
            Some(b'[') => self.nested(Self::array),
            _ => self.scalar(),
        }
    }

    /// A value other than an object or list.
    #[inline(never)]
    fn scalar(&mut self) -> Result<Value> {
        match self.peek() {
            Some(b'"') => Ok(Value::String(self.string("expected a string")?)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'N') => self.literal("NaN", Value::Float(f64::NAN)),
            Some(b'I') => self.literal("Infinity", Value::Float(f64::INFINITY)),
            Some(b'-') if self.bytes.get(self.pos + 1) == Some(&b'I') => {
                self.literal("-Infinity", Value::Float(f64::NEG_INFINITY))
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("expected a value")),
            None => Err(self.err("unexpected end of file, expected a value")),
        }
    }

    fn nested(&mut self, parse: fn(&mut Self) -> Result<Value>) -> Result<Value> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err(format!("values nested deeper than {MAX_DEPTH} levels")));
        }
        self.depth += 1;
        let value = parse(self);
        self.depth -= 1;
        value
    }

    fn object(&mut self) -> Result<Value> {
        self.pos += 1; // '{'
        let mut map = Map::default();
        self.skip_ws();
        if self.eat(b'}') {
            return Ok(Value::Object(map));
        }
        loop {
            self.skip_ws();
            let key = self.string("expected a string key")?;
            self.skip_ws();
            self.expect(b':', "expected ':' after a key")?;
            self.skip_ws();
            let value = self.value()?;
            map.insert(key, value);
            self.skip_ws();
            if self.eat(b'}') {
                return Ok(Value::Object(map));
            }
            self.expect(b',', "expected ',' or '}' in an object")?;
        }
    }

    fn array(&mut self) -> Result<Value> {
        self.pos += 1; // '['
        let mut items = Vec::new();
        self.skip_ws();
        if self.eat(b']') {
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value()?);
            self.skip_ws();
            if self.eat(b']') {
                return Ok(Value::Array(items));
            }
            self.expect(b',', "expected ',' or ']' in a list")?;
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value> {
        self.skip_literal(word).map(|()| value)
    }

    pub(super) fn skip_literal(&mut self, word: &str) -> Result<()> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.err("expected a value"))
        }
    }

    /// Python's `NUMBER_RE`: `-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?`; an int
    /// unless a fraction or exponent is present.
    fn number(&mut self) -> Result<Value> {
        let (start, is_float) = self.scan_number()?;
        // The grammar above admits only ASCII.
        let text = std::str::from_utf8(&self.bytes[start..self.pos]).unwrap_or_default();
        if is_float {
            return text
                .parse()
                .map(Value::Float)
                .map_err(|_| Error::json(start, "invalid number"));
        }
        match text.parse::<i64>() {
            Ok(i) => Ok(Value::Int(i)),
            Err(_) => BigInt::new(text)
                .map(Value::BigInt)
                .ok_or_else(|| Error::json(start, "invalid integer")),
        }
    }

    /// Moves past a number, returning where it starts and whether it is a
    /// float (has a fraction or an exponent). Any text this accepts converts.
    pub(super) fn scan_number(&mut self) -> Result<(usize, bool)> {
        let start = self.pos;
        self.eat(b'-');
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.skip_digits(),
            _ => return Err(self.err("expected a digit")),
        }
        let mut is_float = false;
        if self.peek() == Some(b'.') && self.bytes.get(self.pos + 1).is_some_and(u8::is_ascii_digit)
        {
            self.pos += 1;
            self.skip_digits();
            is_float = true;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let mut p = self.pos + 1;
            if matches!(self.bytes.get(p), Some(b'+' | b'-')) {
                p += 1;
            }
            if self.bytes.get(p).is_some_and(u8::is_ascii_digit) {
                self.pos = p;
                self.skip_digits();
                is_float = true;
            }
        }
        Ok((start, is_float))
    }

    fn skip_digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    pub(super) fn string(&mut self, what: &str) -> Result<String> {
        let mut out = String::new();
        self.string_into(&mut out, what)?;
        Ok(out)
    }

    /// Parses a string, appending its text to `out`.
    pub(super) fn string_into(&mut self, out: &mut String, what: &str) -> Result<()> {
        if !self.eat(b'"') {
            return Err(self.err(what));
        }
        let mut run = self.pos;
        loop {
            let Some(&b) = self.bytes.get(self.pos) else {
                return Err(Error::json(self.pos, "unterminated string"));
            };
            match b {
                b'"' => {
                    self.push_utf8(out, run)?;
                    self.pos += 1;
                    return Ok(());
                }
                b'\\' => {
                    self.push_utf8(out, run)?;
                    out.push(self.escape()?);
                    run = self.pos;
                }
                0..=0x1f => return Err(self.err("control character in a string")),
                _ => self.pos += 1,
            }
        }
    }

    fn push_utf8(&self, out: &mut String, run: usize) -> Result<()> {
        match std::str::from_utf8(&self.bytes[run..self.pos]) {
            Ok(s) => {
                out.push_str(s);
                Ok(())
            }
            Err(e) => Err(Error::json(
                run + e.valid_up_to(),
                "invalid UTF-8 in a string",
            )),
        }
    }

    /// The character of the escape at `pos` (a backslash), moving past it.
    pub(super) fn escape(&mut self) -> Result<char> {
        let at = self.pos;
        self.pos += 1; // '\'
        let Some(&c) = self.bytes.get(self.pos) else {
            return Err(Error::json(at, "unterminated escape"));
        };
        self.pos += 1;
        let ch = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4(at)?;
                match unit {
                    0xd800..=0xdbff => {
                        let low_at = self.pos;
                        let low = if self.bytes[self.pos..].starts_with(b"\\u") {
                            self.pos += 2;
                            self.hex4(low_at)?
                        } else {
                            0
                        };
                        if !(0xdc00..=0xdfff).contains(&low) {
                            return Err(Error::json(at, "lone surrogate in a \\u escape"));
                        }
                        let code = 0x10000
                            + ((u32::from(unit) - 0xd800) << 10)
                            + (u32::from(low) - 0xdc00);
                        char::from_u32(code).ok_or_else(|| Error::json(at, "invalid \\u escape"))?
                    }
                    0xdc00..=0xdfff => {
                        return Err(Error::json(at, "lone surrogate in a \\u escape"));
                    }
                    _ => char::from_u32(u32::from(unit))
                        .ok_or_else(|| Error::json(at, "invalid \\u escape"))?,
                }
            }
            _ => return Err(Error::json(at, "invalid escape")),
        };
        Ok(ch)
    }

    fn hex4(&mut self, at: usize) -> Result<u16> {
        let digits = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| Error::json(at, "truncated \\u escape"))?;
        let mut unit = 0u16;
        for &d in digits {
            let v = (d as char)
                .to_digit(16)
                .ok_or_else(|| Error::json(at, "invalid \\u escape"))?;
            unit = (unit << 4) | u16::try_from(v).unwrap_or(0);
        }
        self.pos += 4;
        Ok(unit)
    }

    pub(super) fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    pub(super) fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    pub(super) fn expect(&mut self, b: u8, what: &str) -> Result<()> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(self.err(what))
        }
    }

    pub(super) fn err(&self, reason: impl Into<String>) -> Error {
        let mut reason = reason.into();
        if self.pos >= self.bytes.len() {
            reason.push_str(" (the file ends here: truncated?)");
        }
        Error::json(self.pos, reason)
    }
}
