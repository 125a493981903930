//! Frame selection, as gulpio2's `gulp_directory[id, selector]`.

use crate::error::{ErrorKind, Result};

/// Which frames of an item to read.
///
/// The semantics are Python's, as in gulpio2: a [`Selection::Range`] is a
/// slice (negative bounds count from the end, out-of-range bounds are clipped,
/// a negative step walks backwards); [`Selection::Indices`] picks frames by
/// index, repeats allowed, and an index out of range is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Every frame (`:`).
    All,
    /// A slice `start:stop:step`.
    Range {
        /// First index (default: the start, or the end for a negative step).
        start: Option<i64>,
        /// End index, exclusive (default: the end, or the start for a negative step).
        stop: Option<i64>,
        /// Step, never 0.
        step: i64,
    },
    /// Explicit indices, negative ones counting from the end.
    Indices(Vec<i64>),
}

impl Selection {
    /// Parses the text form: `:` or `` (all), `1:10:2`, `::-1`, `-5:`, `0,5,9`,
    /// `7` (one index), `[]`... as written in Python between the brackets.
    pub fn parse(text: &str) -> Result<Selection> {
        let bad = |reason: &str| ErrorKind::SelectionSyntax {
            text: text.to_owned(),
            reason: reason.to_owned(),
        };
        let t = text.trim();
        let t = t
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .unwrap_or(t)
            .trim();
        if t.is_empty() && text.trim().starts_with('[') {
            return Ok(Selection::Indices(Vec::new()));
        }
        if t.is_empty() || t == ":" || t == "::" {
            return Ok(Selection::All);
        }
        let int = |s: &str| -> Result<Option<i64>> {
            let s = s.trim();
            if s.is_empty() {
                return Ok(None);
            }
            s.parse::<i64>()
                .map(Some)
                .map_err(|_| bad(&format!("{s:?} is not an integer")).into())
        };
        if t.contains(':') {
            let parts: Vec<&str> = t.split(':').collect();
            if parts.len() > 3 {
                return Err(bad("a slice has at most start:stop:step").into());
            }
            let step = match parts.get(2) {
                Some(s) => int(s)?.unwrap_or(1),
                None => 1,
            };
            if step == 0 {
                return Err(bad("slice step cannot be zero").into());
            }
            return Ok(Selection::Range {
                start: int(parts[0])?,
                stop: int(parts[1])?,
                step,
            });
        }
        let indices = t
            .split(',')
            .map(|s| int(s)?.ok_or_else(|| bad("empty index in a list").into()))
            .collect::<Result<Vec<i64>>>()?;
        Ok(Selection::Indices(indices))
    }

    /// The frame indices this selects among `n` frames, in order.
    pub fn resolve(&self, n: usize) -> std::result::Result<Vec<usize>, String> {
        let len = i64::try_from(n).map_err(|_| "too many frames".to_owned())?;
        match self {
            Selection::All => Ok((0..n).collect()),
            Selection::Indices(indices) => indices
                .iter()
                .map(|&i| {
                    let j = if i < 0 { i + len } else { i };
                    usize::try_from(j)
                        .ok()
                        .filter(|&j| j < n)
                        .ok_or_else(|| format!("frame index {i} is out of range for {n} frames"))
                })
                .collect(),
            Selection::Range { start, stop, step } => {
                let step = *step;
                if step == 0 {
                    return Err("slice step cannot be zero".to_owned());
                }
                // CPython's PySlice_AdjustIndices.
                let (lower, upper) = if step < 0 { (-1, len - 1) } else { (0, len) };
                let clip = |v: Option<i64>, default: i64| match v {
                    None => default,
                    Some(v) if v < 0 => (v + len).max(lower),
                    Some(v) => v.min(upper),
                };
                let start = clip(*start, if step < 0 { upper } else { lower });
                let stop = clip(*stop, if step < 0 { lower } else { upper });
                let mut out = Vec::new();
                let mut i = start;
                while (step > 0 && i < stop) || (step < 0 && i > stop) {
                    // i is within 0..len here by construction.
                    out.push(
                        usize::try_from(i).map_err(|_| "slice index out of range".to_owned())?,
                    );
                    i += step;
                }
                Ok(out)
            }
        }
    }
}

impl std::str::FromStr for Selection {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<Selection> {
        Selection::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(text: &str, n: usize) -> Vec<usize> {
        Selection::parse(text).unwrap().resolve(n).unwrap()
    }

    #[test]
    fn python_slice_semantics() {
        // Each expectation is list(range(10))[text] in Python.
        assert_eq!(sel(":", 10), (0..10).collect::<Vec<_>>());
        assert_eq!(sel("1:10:2", 10), [1, 3, 5, 7, 9]);
        assert_eq!(sel("1::2", 10), [1, 3, 5, 7, 9]);
        assert_eq!(sel("0::2", 5), [0, 2, 4]);
        assert_eq!(sel("::-1", 4), [3, 2, 1, 0]);
        assert_eq!(sel("-3:", 10), [7, 8, 9]);
        assert_eq!(sel(":-8", 10), [0, 1]);
        assert_eq!(sel("8:2:-2", 10), [8, 6, 4]);
        assert_eq!(sel("-1:-4:-1", 10), [9, 8, 7]);
        assert_eq!(sel("5:100", 8), [5, 6, 7]);
        assert_eq!(sel("-100:2", 8), [0, 1]);
        assert_eq!(sel("100:", 8), Vec::<usize>::new());
        assert_eq!(sel("::-1", 0), Vec::<usize>::new());
        assert_eq!(sel("[::3]", 7), [0, 3, 6]);
    }

    #[test]
    fn index_lists() {
        assert_eq!(sel("0,5,9", 10), [0, 5, 9]);
        assert_eq!(sel("[0, 5, 9]", 10), [0, 5, 9]);
        assert_eq!(sel("-1", 10), [9]);
        assert_eq!(sel("2,2,-10", 10), [2, 2, 0]);
        assert_eq!(sel("[]", 10), Vec::<usize>::new());
        let err = Selection::parse("0,10").unwrap().resolve(10).unwrap_err();
        assert_eq!(err, "frame index 10 is out of range for 10 frames");
        assert!(Selection::parse("-11").unwrap().resolve(10).is_err());
    }

    #[test]
    fn bad_syntax() {
        for text in ["1:2:3:4", "a:b", "::0", "1,,2", "1.5", "0x10"] {
            assert!(Selection::parse(text).is_err(), "{text}");
        }
    }
}
