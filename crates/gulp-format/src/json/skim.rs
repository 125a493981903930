//! The JSON skim: ids and frame counts of a chunk meta, with the whole file
//! checked as [`Parser::chunk_meta`] checks it but no value built.
//!
//! Every rule of the full parser is applied here by the same code where it
//! can be (strings, escapes, numbers, `frame_info`) and mirrored where the
//! full parser builds values (objects, lists, items), so that a file is
//! accepted here exactly when `chunk_meta` accepts it. A property test in
//! `tests/skim.rs` holds the two together.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::media::{AUDIO_KEY, FRAME_TIMES_KEY, take_media};
use crate::meta_index::{IndexBuilder, MetaIndex};
use crate::serializer::MetaFormat;
use crate::value::Map;

use super::MAX_DEPTH;
use super::read::{Parser, unexpected_item_key};

/// Bits of the stack of open containers in [`Parser::skip_value`]: one per
/// level, set for an object.
const KIND_WORDS: usize = MAX_DEPTH.div_ceil(64);

impl<'a> Parser<'a> {
    /// The ids and frame counts of a whole meta file (errors worded as
    /// [`Parser::chunk_meta`] words them, the truncation hint included).
    pub(crate) fn index(mut self) -> Result<MetaIndex> {
        let result = self.index_inner();
        result.map_err(|e| self.hint_truncated(e))
    }

    fn index_inner(&mut self) -> Result<MetaIndex> {
        // About 1,000 items in 250 KB in typical chunks; a guess only.
        let guess = (self.bytes.len() / 256).min(1 << 16);
        let mut index = IndexBuilder::new(MetaFormat::Json, guess);
        self.skip_ws();
        self.expect(b'{', "expected '{' at the start of the meta")?;
        self.skip_ws();
        if !self.eat(b'}') {
            loop {
                self.skip_ws();
                let start = index.arena().len();
                match self.plain_string() {
                    Some(text) => index.arena().push_str(text),
                    None => self.string_into(index.arena(), "expected a string id")?,
                }
                self.skip_ws();
                self.expect(b':', "expected ':' after the id")?;
                self.skip_ws();
                let at = self.pos as u64;
                let frames = self.skim_item(index.pending(start))?;
                let span = [at, self.pos as u64];
                // An OrderedDict keeps the first position and the last value.
                if let Some(earlier) = index.finish_id(start, frames, span) {
                    index.set_item(earlier, frames, span);
                }
                self.skip_ws();
                if self.eat(b'}') {
                    break;
                }
                self.expect(b',', "expected ',' or '}' after an item")?;
            }
        }
        self.end()?;
        Ok(index.finish())
    }

    /// An item object, as `Parser::item` parses it; returns its frame count.
    fn skim_item(&mut self, id: &str) -> Result<u64> {
        let start = self.pos;
        if !self.eat(b'{') {
            return Err(Error::item(id, start, "item is not an object"));
        }
        let mut frames = None;
        let mut meta_data = false;
        // Checked as the full parser checks them (rare, and small).
        let mut media = Map::default();
        self.skip_ws();
        if !self.eat(b'}') {
            loop {
                self.skip_ws();
                let key_at = self.pos;
                let key = self.key("expected a key in the item object")?;
                self.skip_ws();
                self.expect(b':', "expected ':' after a key")?;
                self.skip_ws();
                match &*key {
                    "frame_info" => {
                        let mut n = 0u64;
                        self.frame_info_with(id, |_| n += 1)?;
                        frames = Some(n);
                    }
                    "meta_data" => {
                        let at = self.pos;
                        let is_list = self.peek() == Some(b'[');
                        self.skip_value()?;
                        if !is_list {
                            return Err(Error::item(id, at, "meta_data is not a list"));
                        }
                        meta_data = true;
                    }
                    FRAME_TIMES_KEY | AUDIO_KEY => {
                        let value = self.value()?;
                        media.insert(key.into_owned(), value);
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
        let frames = frames.ok_or_else(|| Error::item(id, start, "item has no frame_info"))?;
        if !meta_data {
            return Err(Error::item(id, start, "item has no meta_data"));
        }
        if !media.is_empty() {
            let n = usize::try_from(frames).unwrap_or(usize::MAX);
            take_media(&mut media, n).map_err(|e| Error::item(id, start, e))?;
        }
        Ok(frames)
    }

    /// A string's text, borrowed from the input when it has no escapes.
    fn key(&mut self, what: &str) -> Result<Cow<'a, str>> {
        match self.plain_string() {
            Some(text) => Ok(Cow::Borrowed(text)),
            // Escapes, or an error to report as the full parser does.
            None => self.string(what).map(Cow::Owned),
        }
    }

    /// The string at `pos` if it is plain ASCII without escapes (moving past
    /// it); otherwise `None`, and nothing moves.
    fn plain_string(&mut self) -> Option<&'a str> {
        let bytes = self.bytes;
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.pos + 1;
        let end = start + string_stop(&bytes[start..])?;
        if bytes[end] != b'"' {
            return None;
        }
        let text = std::str::from_utf8(&bytes[start..end]).ok()?;
        self.pos = end + 1;
        Some(text)
    }

    /// Moves past a string, checking it as `Parser::string` does.
    fn skip_string(&mut self, what: &str) -> Result<()> {
        if !self.eat(b'"') {
            return Err(self.err(what));
        }
        let bytes = self.bytes;
        let start = self.pos;
        let mut ascii = true;
        loop {
            let rest = &bytes[self.pos..];
            let Some(i) = string_stop(rest) else {
                self.pos = bytes.len();
                return Err(Error::json(self.pos, "unterminated string"));
            };
            self.pos += i;
            match rest[i] {
                b'"' => break,
                b'\\' => {
                    self.escape()?;
                }
                0x80.. => {
                    ascii = false;
                    self.pos += 1;
                }
                _ => return Err(self.err("control character in a string")),
            }
        }
        // Escapes are ASCII, so the raw text is valid UTF-8 exactly when each
        // run between them is, which is what the full parser checks.
        if !ascii {
            std::str::from_utf8(&bytes[start..self.pos])
                .map_err(|e| Error::json(start + e.valid_up_to(), "invalid UTF-8 in a string"))?;
        }
        self.pos += 1;
        Ok(())
    }

    /// Moves past one value, checking it as `Parser::value` does, without
    /// recursion: open containers are bits in a fixed-size stack.
    fn skip_value(&mut self) -> Result<()> {
        let mut kinds = [0u64; KIND_WORDS];
        let mut depth = 0usize;
        loop {
            // A value starts here.
            match self.peek() {
                Some(open @ (b'{' | b'[')) => {
                    if self.depth + depth >= MAX_DEPTH {
                        return Err(
                            self.err(format!("values nested deeper than {MAX_DEPTH} levels"))
                        );
                    }
                    self.pos += 1;
                    let object = open == b'{';
                    let (word, bit) = (depth / 64, 1u64 << (depth % 64));
                    if object {
                        kinds[word] |= bit;
                    } else {
                        kinds[word] &= !bit;
                    }
                    depth += 1;
                    self.skip_ws();
                    let close = if object { b'}' } else { b']' };
                    if !self.eat(close) {
                        self.skip_ws();
                        if object {
                            self.skip_member_key()?;
                        }
                        continue;
                    }
                    depth -= 1;
                }
                _ => self.skip_scalar()?,
            }
            // A value ended: close containers until one has a next element.
            loop {
                let Some(level) = depth.checked_sub(1) else {
                    return Ok(());
                };
                self.skip_ws();
                let object = kinds[level / 64] & (1u64 << (level % 64)) != 0;
                if object {
                    if self.eat(b'}') {
                        depth = level;
                        continue;
                    }
                    self.expect(b',', "expected ',' or '}' in an object")?;
                    self.skip_ws();
                    self.skip_member_key()?;
                } else {
                    if self.eat(b']') {
                        depth = level;
                        continue;
                    }
                    self.expect(b',', "expected ',' or ']' in a list")?;
                    self.skip_ws();
                }
                break;
            }
        }
    }

    /// `"key" :` and the whitespace after it, in an object.
    fn skip_member_key(&mut self) -> Result<()> {
        self.skip_string("expected a string key")?;
        self.skip_ws();
        self.expect(b':', "expected ':' after a key")?;
        self.skip_ws();
        Ok(())
    }

    /// Moves past a value other than an object or list, as `Parser::scalar`
    /// parses it.
    fn skip_scalar(&mut self) -> Result<()> {
        match self.peek() {
            Some(b'"') => self.skip_string("expected a string"),
            Some(b'n') => self.skip_literal("null"),
            Some(b't') => self.skip_literal("true"),
            Some(b'f') => self.skip_literal("false"),
            Some(b'N') => self.skip_literal("NaN"),
            Some(b'I') => self.skip_literal("Infinity"),
            Some(b'-') if self.bytes.get(self.pos + 1) == Some(&b'I') => {
                self.skip_literal("-Infinity")
            }
            Some(b'-' | b'0'..=b'9') => self.scan_number().map(|_| ()),
            Some(_) => Err(self.err("expected a value")),
            None => Err(self.err("unexpected end of file, expected a value")),
        }
    }
}

/// The position of the first byte of `bytes` that ends a run of plain string
/// text: `"`, a backslash, a control character or a non-ASCII byte. Eight
/// bytes at a time: for each test, the lowest byte flagged by the
/// "has a zero byte" trick is exact (false positives only follow a match).
fn string_stop(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut at = 0;
    while let Some(word) = bytes.get(at..at + 8) {
        let x = u64::from_le_bytes(word.try_into().unwrap_or_default());
        let quote = x ^ (ONES * u64::from(b'"'));
        let backslash = x ^ (ONES * u64::from(b'\\'));
        let flags = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (x.wrapping_sub(ONES * 0x20) & !x)
            | x;
        let flags = flags & HIGH;
        if flags != 0 {
            let byte = usize::try_from(flags.trailing_zeros() / 8).unwrap_or(0);
            return Some(at + byte);
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b))
        .map(|i| at + i)
}
