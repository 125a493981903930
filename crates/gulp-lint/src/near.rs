//! Near-duplicate search over 64-bit perceptual hashes in less than
//! quadratic time: banded locality-sensitive hashing over the hash bits.
//!
//! Each of [`BANDS`] bands is a fixed choice of [`BAND_BITS`] of the 64
//! bits; two hashes that agree on every bit of some band are candidates,
//! found by sorting the items on that band's bits, and a candidate pair is
//! then verified (its Hamming distance, or for videos the distances of
//! several sampled frames). Two hashes `d` bits apart agree on a band with
//! probability about `(1 - d/64)^24`, so 128 bands find a pair 6 bits apart
//! with probability 0.99999, 8 bits apart 0.995, 10 bits apart 0.89 (and
//! groups are joined transitively); unrelated hashes (about 32 apart)
//! almost never share a band. The cost is `BANDS` sorts of `n` keys plus
//! the candidates. Bands are 24 bits, not 16, because the candidates grow
//! as `n^2 / 2^bits` per band: with 16 bits two million keys (a million
//! items, whole and centre) give tens of millions of candidate pairs per
//! band even if the hashes were uniform, and perceptual hashes are not.

/// Bands of the LSH.
pub(crate) const BANDS: usize = 128;
/// Bits per band.
pub(crate) const BAND_BITS: usize = 24;

/// Union-find over item indices, with path halving.
#[derive(Debug)]
pub(crate) struct Groups {
    parent: Vec<usize>,
}

impl Groups {
    pub(crate) fn new(n: usize) -> Groups {
        Groups {
            parent: (0..n).collect(),
        }
    }

    pub(crate) fn find(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    /// Joins the groups of `a` and `b` (the smaller index becomes the root,
    /// so that a group's root is its first member).
    pub(crate) fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent[hi] = lo;
        }
    }

    /// The groups of more than one member, each sorted, in the order of
    /// their first member.
    pub(crate) fn multi(mut self) -> Vec<Vec<usize>> {
        let n = self.parent.len();
        let mut by_root: Vec<Vec<usize>> = vec![Vec::new(); n];
        for i in 0..n {
            let r = self.find(i);
            by_root[r].push(i);
        }
        by_root.into_iter().filter(|g| g.len() > 1).collect()
    }
}

/// The bit positions of each band: a fixed shuffle of 0..64, so that every
/// run finds the same pairs. Bands take consecutive 16-bit windows of
/// successive shuffles.
fn band_bits() -> Vec<[u8; BAND_BITS]> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut bands = Vec::with_capacity(BANDS);
    let mut order: Vec<u8> = (0..64).collect();
    while bands.len() < BANDS {
        for i in (1..order.len()).rev() {
            let j = usize::try_from(next() % (i as u64 + 1)).unwrap_or(0);
            order.swap(i, j);
        }
        for window in order.chunks_exact(BAND_BITS) {
            if bands.len() < BANDS {
                let mut band = [0u8; BAND_BITS];
                band.copy_from_slice(window);
                bands.push(band);
            }
        }
    }
    bands
}

fn band_key(hash: u64, bits: &[u8; BAND_BITS]) -> u32 {
    bits.iter()
        .enumerate()
        .fold(0u32, |k, (i, &b)| k | (((hash >> b) & 1) as u32) << i)
}

/// Finds the near-duplicate pairs among `hashes` (`(hash, item)`) and joins
/// them in `groups`; `verify(a, b)` decides a candidate pair of items and
/// returns its distance when they are duplicates. Returns the largest
/// verified distance of each joined pair, as `(a, b, distance)`.
pub(crate) fn search(
    hashes: &[(u64, usize)],
    groups: &mut Groups,
    mut verify: impl FnMut(usize, usize) -> Option<u32>,
) -> Vec<(usize, usize, u32)> {
    let mut joined = Vec::new();
    let mut keyed: Vec<(u32, usize)> = Vec::with_capacity(hashes.len());
    for bits in band_bits() {
        keyed.clear();
        keyed.extend(hashes.iter().map(|&(h, item)| (band_key(h, &bits), item)));
        keyed.sort_unstable();
        for run in keyed.chunk_by(|a, b| a.0 == b.0) {
            for (i, &(_, a)) in run.iter().enumerate() {
                for &(_, b) in &run[i + 1..] {
                    if groups.find(a) == groups.find(b) {
                        continue;
                    }
                    if let Some(d) = verify(a, b) {
                        groups.union(a, b);
                        joined.push((a, b, d));
                    }
                }
            }
        }
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_cover_every_bit_and_are_fixed() {
        let bands = band_bits();
        assert_eq!(bands.len(), BANDS);
        let mut seen = [false; 64];
        for band in &bands {
            for &b in band {
                seen[usize::from(b)] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(bands, band_bits());
    }

    #[test]
    fn finds_close_hashes_and_leaves_far_ones() {
        // 2000 pseudo-random hashes; item 2000 is item 7 with 5 bits
        // flipped, item 2001 is item 9 with 30 bits flipped.
        let mut x = 1u64;
        let mut hashes: Vec<(u64, usize)> = (0..2000)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x, i)
            })
            .collect();
        hashes.push((hashes[7].0 ^ 0b10_0100_1001_0001, 2000));
        hashes.push((hashes[9].0 ^ 0x3fff_ffff, 2001));
        let table: Vec<u64> = hashes.iter().map(|h| h.0).collect();
        let mut groups = Groups::new(hashes.len());
        let joined = search(&hashes, &mut groups, |a, b| {
            let d = (table[a] ^ table[b]).count_ones();
            (d <= 10).then_some(d)
        });
        assert_eq!(joined, vec![(7, 2000, 5)]);
        assert_eq!(groups.multi(), vec![vec![7, 2000]]);
    }
}
