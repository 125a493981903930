//! FNV-1a: the fingerprints a [`crate::State`] carries, so that a state is
//! refused by a loader of other options, sources, ids, weights or targets.

/// A 64-bit FNV-1a hash being fed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// Adds bytes.
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// Adds a 64-bit word in one step (a bijection of the state, so that
    /// tables that differ in one word always hash apart): eight times fewer
    /// steps than its bytes, for the tables of a million samples.
    pub(crate) fn write_u64(&mut self, word: u64) {
        self.0 = (self.0 ^ word).wrapping_mul(0x0100_0000_01b3);
    }

    /// Adds a string and a terminator (so that `"ab", "c"` and `"a", "bc"`
    /// differ).
    pub(crate) fn write_str(&mut self, text: &str) {
        self.write(text.as_bytes());
        self.write(&[0xff]);
    }

    /// The hash so far.
    pub(crate) fn finish(self) -> u64 {
        self.0
    }

    /// The hash of a value's `Debug` text, which names every field and
    /// prints floats exactly.
    pub(crate) fn of_debug(value: &impl std::fmt::Debug) -> u64 {
        let mut h = Fnv::default();
        h.write(format!("{value:?}").as_bytes());
        h.finish()
    }
}
