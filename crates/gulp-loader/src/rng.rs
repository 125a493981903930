//! The loader's random numbers: SplitMix64, written out here so that a seed
//! gives the same order, clips and crops in every version of gulp and on
//! every platform (a dependency's generator or shuffle may change between
//! releases).

/// SplitMix64 (Steele, Lea and Flood, 2014): 64-bit state, passes BigCrush,
/// and any seed, 0 included, is a good one.
#[derive(Debug, Clone)]
pub struct Rng(u64);

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's output function: a bijective mix of 64 bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator for the stream named by `keys` (e.g. seed, epoch,
    /// position): different keys give independent streams.
    pub fn new(keys: &[u64]) -> Rng {
        let state = keys.iter().fold(0x6a09_e667_f3bc_c908_u64, |acc, &k| {
            mix(acc ^ k.wrapping_add(GOLDEN))
        });
        Rng(state)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        mix(self.0)
    }

    /// A uniform integer in `0..n` (`n > 0`), without modulo bias
    /// (Lemire's multiply-and-reject).
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            // The low half decides rejection; the high half is the result.
            #[allow(clippy::cast_possible_truncation)]
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }

    /// A uniform integer in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        debug_assert!(lo <= hi);
        let span = (hi - lo) as u64 + 1;
        #[allow(clippy::cast_possible_truncation)]
        let r = self.below(span) as usize;
        lo + r
    }

    /// A uniform float in `[0, 1)` (53 bits).
    pub fn unit(&mut self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let v = (self.next_u64() >> 11) as f64;
        v * (1.0 / (1u64 << 53) as f64)
    }

    /// `true` with probability 1/2.
    pub fn coin(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }

    /// Shuffles `items` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.range(0, i);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_fixed_by_their_keys() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(&[1, 2]).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(Rng::new(&[1, 2]).next_u64(), Rng::new(&[2, 1]).next_u64());
        assert_ne!(Rng::new(&[0]).next_u64(), Rng::new(&[0, 0]).next_u64());
        // The first output of the stream for seed 0, epoch 0: fixed forever,
        // as the orders of every dataset depend on it.
        assert_eq!(Rng::new(&[0, 0]).next_u64(), 0x880a_f1f0_0c47_3f4e);
    }

    #[test]
    fn below_is_uniform_enough_and_in_range() {
        let mut rng = Rng::new(&[7]);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            let v = rng.below(6);
            counts[usize::try_from(v).expect("small")] += 1;
        }
        for c in counts {
            assert!((9_400..10_600).contains(&c), "{counts:?}");
        }
        for _ in 0..1000 {
            let u = rng.unit();
            assert!((0.0..1.0).contains(&u));
            let r = rng.range(3, 5);
            assert!((3..=5).contains(&r));
        }
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut v: Vec<u32> = (0..1000).collect();
        Rng::new(&[3, 4]).shuffle(&mut v);
        assert_ne!(v, (0..1000).collect::<Vec<_>>());
        v.sort_unstable();
        assert_eq!(v, (0..1000).collect::<Vec<_>>());
    }
}
