//! What an epoch holds, before it is shuffled: how many samples each source
//! gives ([`crate::Amount`], `samples_per_epoch`) and which ones (every
//! sample once, a random subset, whole passes and a subset, per-class
//! counts for balanced sampling, or draws in proportion to per-item
//! weights). A pure function of the seed and the epoch; the shuffle
//! ([`crate::Order::arrange`]) is a separate step, so another shuffle can
//! take the same composition.

use crate::error::{Error, Result};
use crate::rng::Rng;
use crate::source::Amount;

/// Keys of the composition's random streams (after the seed and the epoch),
/// apart from the shuffle's.
const SUBSET: u64 = 0x5355_4253; // "SUBS"
const CLASSES: u64 = 0x434c_4153; // "CLAS"
const WEIGHTS: u64 = 0x5745_4947; // "WEIG"

gulp_format::choice!(Sampler, "sampler", {
    Sampler::Uniform => "uniform",
    Sampler::Balanced => "balanced",
});

/// How the samples of a source are drawn for an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sampler {
    /// Every sample equally often: each once when the source gives as many
    /// samples as it has; whole passes and a random subset otherwise. With
    /// per-item weights ([`crate::Source::weights`]), in proportion to
    /// them.
    #[default]
    Uniform,
    /// Each class equally often: an epoch's count per class differs by at
    /// most 1 (which classes get the extra sample is drawn each epoch),
    /// repeating the samples of small classes (whole passes, then a random
    /// subset) and taking a random subset of large ones. Needs one class
    /// per sample ([`crate::Target::Label`] or [`crate::Target::Key`]).
    Balanced,
}

/// How a source picks its samples for an epoch.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Draw {
    /// Every sample equally often (whole passes, then a random subset).
    Uniform,
    /// Each class equally often (±1 per epoch), the samples of a class
    /// uniformly: the source's samples grouped by class.
    Balanced(Vec<Vec<u32>>),
    /// In proportion to these weights, one per sample (systematic
    /// sampling: a sample of expected count `e` is drawn `floor(e)` or
    /// `ceil(e)` times).
    Weighted(Vec<f64>),
}

/// One source's part of an epoch.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Part {
    /// Its first sample in the loader's numbering.
    pub(crate) first: u32,
    /// Its samples.
    pub(crate) len: u32,
    /// The samples it gives per epoch.
    pub(crate) count: usize,
    /// Which.
    pub(crate) draw: Draw,
}

/// The epoch's parts, one per source.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Composition {
    parts: Vec<Part>,
    len: usize,
}

impl Composition {
    /// The parts of sources with `amounts`, of `sizes` samples each, drawn
    /// with `draws`, in an epoch of `samples_per_epoch` samples if given.
    pub(crate) fn new(
        amounts: &[Amount],
        sizes: &[u32],
        draws: Vec<Draw>,
        samples_per_epoch: Option<usize>,
    ) -> Result<Composition> {
        let counts = counts(amounts, sizes, samples_per_epoch)?;
        let mut first = 0u32;
        let mut parts = Vec::with_capacity(sizes.len());
        for ((k, (&len, count)), draw) in sizes.iter().zip(counts).enumerate().zip(draws) {
            if len == 0 && count > 0 {
                return Err(Error::Config(format!(
                    "source {k} has no samples to give the {count} its share asks for"
                )));
            }
            parts.push(Part {
                first,
                len,
                count,
                draw,
            });
            first = first
                .checked_add(len)
                .ok_or_else(|| Error::Config("more than 2^32 samples".into()))?;
        }
        let len = parts.iter().map(|p| p.count).sum();
        if u32::try_from(len).is_err() {
            return Err(Error::Config(format!(
                "an epoch of {len} samples: at most 2^32 - 1"
            )));
        }
        Ok(Composition { parts, len })
    }

    /// Samples per epoch.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Samples per epoch of each source.
    pub(crate) fn counts(&self) -> impl Iterator<Item = usize> + '_ {
        self.parts.iter().map(|p| p.count)
    }

    /// Whether an epoch is every sample once, in order (no draw at all).
    fn is_identity(&self) -> bool {
        self.parts
            .iter()
            .all(|p| p.count == p.len as usize && p.draw == Draw::Uniform)
    }

    /// The samples of epoch `epoch`, grouped by source (the shuffle mixes
    /// them): exactly each part's count.
    pub(crate) fn epoch(&self, seed: u64, epoch: u64) -> Vec<u32> {
        if self.is_identity() {
            return (0..self.parts.iter().map(|p| p.len).sum()).collect();
        }
        let mut out = Vec::with_capacity(self.len);
        for (k, part) in self.parts.iter().enumerate() {
            let start = out.len();
            let key = [seed, epoch, k as u64];
            match &part.draw {
                Draw::Uniform => {
                    let mut rng = Rng::new(&[key[0], key[1], SUBSET, key[2]]);
                    uniform(part.len, part.count, &mut rng, &mut out);
                }
                Draw::Balanced(classes) => balanced(classes, part.count, key, &mut out),
                Draw::Weighted(weights) => {
                    let mut rng = Rng::new(&[key[0], key[1], WEIGHTS, key[2]]);
                    weighted(weights, part.count, &mut rng, &mut out);
                }
            }
            for sample in &mut out[start..] {
                *sample += part.first;
            }
        }
        out
    }
}

/// Each source's samples per epoch.
fn counts(
    amounts: &[Amount],
    sizes: &[u32],
    samples_per_epoch: Option<usize>,
) -> Result<Vec<usize>> {
    let bad = |m: String| Err(Error::Config(m));
    let total: usize = sizes.iter().map(|&n| n as usize).sum();
    let weights: Vec<f64> = amounts
        .iter()
        .filter_map(|a| match a {
            Amount::Weight(w) => Some(*w),
            _ => None,
        })
        .collect();
    if !weights.is_empty() {
        if weights.len() != amounts.len() {
            return bad(
                "a weight is a share of the epoch: give every source a weight, or \
                 none (repeat and choose set a source's count on their own)"
                    .into(),
            );
        }
        if weights.iter().any(|w| !(w.is_finite() && *w >= 0.0))
            || weights.iter().sum::<f64>() <= 0.0
        {
            return bad(format!(
                "source weights must be finite, at least 0 and not all 0, not {weights:?}"
            ));
        }
        return Ok(apportion(samples_per_epoch.unwrap_or(total), &weights, 0.5));
    }
    let mut counts = Vec::with_capacity(amounts.len());
    for (a, &n) in amounts.iter().zip(sizes) {
        counts.push(match *a {
            Amount::All | Amount::Weight(_) => n as usize,
            Amount::Repeat(r) if r.is_finite() && r >= 0.0 => {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let c = (r * f64::from(n)).round() as usize;
                c
            }
            Amount::Repeat(r) => return Err(Error::option("repeat", r, "at least 0")),
            Amount::Choose(c) => c,
        });
    }
    match samples_per_epoch {
        None => Ok(counts),
        Some(_) if amounts.iter().any(|a| *a != Amount::All) => bad(
            "samples_per_epoch sets the size of the epoch, repeat and choose the count of a \
             source: give one or the other (or weights with samples_per_epoch)"
                .into(),
        ),
        Some(n) if total == 0 && n > 0 => bad(format!(
            "samples_per_epoch is {n}, but there are no samples"
        )),
        #[allow(clippy::cast_precision_loss)]
        Some(n) => Ok(apportion(
            n,
            &sizes.iter().map(|&s| f64::from(s)).collect::<Vec<_>>(),
            0.5,
        )),
    }
}

/// `total` split in proportion to `weights` (finite, non-negative, not all
/// 0) by systematic rounding: the cumulative shares `total × W_k / W`
/// shifted by `offset` in `[0, 1)` and floored. Each count is the floor or
/// the ceiling of its share, and exact when the share is a whole number;
/// they add up to `total`.
fn apportion(total: usize, weights: &[f64], offset: f64) -> Vec<usize> {
    let sum: f64 = weights.iter().sum();
    let mut acc = 0.0;
    let mut prev = 0usize;
    let mut counts = Vec::with_capacity(weights.len());
    for (k, w) in weights.iter().enumerate() {
        acc += w;
        #[allow(clippy::cast_precision_loss)]
        let share = total as f64 * acc / sum;
        // A share a rounding error away from a whole number is that number
        // (so that whole shares stay exact whatever the offset).
        let share = if (share - share.round()).abs() < 1e-9 * share.abs().max(1.0) {
            share.round()
        } else {
            share
        };
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let cum = if k + 1 == weights.len() {
            total
        } else {
            ((share + offset).floor() as usize).clamp(prev, total)
        };
        counts.push(cum - prev);
        prev = cum;
    }
    counts
}

/// `count` samples of `0..len` (`len > 0` unless `count` is 0), each
/// `count / len` times, plus `count % len` distinct ones at random.
fn uniform(len: u32, count: usize, rng: &mut Rng, out: &mut Vec<u32>) {
    if len == 0 {
        return;
    }
    let n = len as usize;
    for _ in 0..count / n {
        out.extend(0..len);
    }
    let rest = count % n;
    if rest > 0 {
        let mut pool: Vec<u32> = (0..len).collect();
        for i in 0..rest {
            pool.swap(i, rng.range(i, n - 1));
        }
        out.extend_from_slice(&pool[..rest]);
    }
}

/// `count` samples spread equally over `classes` (each gets the floor or the
/// ceiling of `count / classes`, which ones is drawn each epoch), uniform
/// within a class.
fn balanced(classes: &[Vec<u32>], count: usize, key: [u64; 3], out: &mut Vec<u32>) {
    let c = classes.len();
    if c == 0 || count == 0 {
        return;
    }
    let mut rng = Rng::new(&[key[0], key[1], CLASSES, key[2]]);
    let mut order: Vec<usize> = (0..c).collect();
    rng.shuffle(&mut order);
    #[allow(clippy::cast_possible_truncation)]
    let offset = rng.below(c as u64) as usize;
    // Integer systematic split: class at rank k gets
    // floor((count·(k+1) + r) / c) - floor((count·k + r) / c).
    let cum = |k: usize| (count as u128 * k as u128 + offset as u128) / c as u128;
    for (k, &class) in order.iter().enumerate() {
        #[allow(clippy::cast_possible_truncation)]
        let n = (cum(k + 1) - cum(k)) as usize;
        let members = &classes[class];
        let mut rng = Rng::new(&[key[0], key[1], CLASSES, key[2], class as u64]);
        let start = out.len();
        #[allow(clippy::cast_possible_truncation)]
        uniform(members.len() as u32, n, &mut rng, out);
        for sample in &mut out[start..] {
            *sample = members[*sample as usize];
        }
    }
}

/// `count` samples drawn in proportion to `weights` by systematic sampling
/// over the samples in a random order: sample `j` comes
/// `floor(E_j + u) - floor(E_{j-1} + u)` times, `E` the cumulative expected
/// counts and `u` uniform in `[0, 1)`.
fn weighted(weights: &[f64], count: usize, rng: &mut Rng, out: &mut Vec<u32>) {
    if weights.is_empty() || count == 0 {
        return;
    }
    #[allow(clippy::cast_possible_truncation)]
    let mut order: Vec<u32> = (0..weights.len() as u32).collect();
    rng.shuffle(&mut order);
    let ordered: Vec<f64> = order.iter().map(|&j| weights[j as usize]).collect();
    let counts = apportion(count, &ordered, rng.unit());
    for (&sample, n) in order.iter().zip(counts) {
        out.extend(std::iter::repeat_n(sample, n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(samples: &[u32], n: usize) -> Vec<usize> {
        let mut h = vec![0; n];
        for &s in samples {
            h[s as usize] += 1;
        }
        h
    }

    #[test]
    fn shares_are_exact_and_add_up() {
        assert_eq!(apportion(100, &[0.7, 0.3], 0.5), [70, 30]);
        assert_eq!(apportion(10, &[1.0, 1.0, 1.0], 0.5), [3, 4, 3]);
        assert_eq!(apportion(7, &[0.0, 2.0, 0.0], 0.5), [0, 7, 0]);
        for offset in [0.0, 0.3, 0.999] {
            let c = apportion(1000, &[0.1, 0.2, 0.3, 0.4], offset);
            assert_eq!(c, [100, 200, 300, 400], "offset {offset}");
            // Whole shares of sums that are not exact in binary.
            let c = apportion(14, &[3.0, 1.0, 3.0, 1.0, 1.0, 3.0, 1.0, 1.0], offset);
            assert_eq!(c, [3, 1, 3, 1, 1, 3, 1, 1], "offset {offset}");
            let c = apportion(49, &[0.1; 49], offset);
            assert!(c.iter().all(|&k| k == 1), "offset {offset}: {c:?}");
        }
    }

    #[test]
    fn amounts_set_each_sources_count() {
        let sizes = [10, 40];
        let c = |a: &[Amount], spe| counts(a, &sizes, spe);
        assert_eq!(c(&[Amount::All, Amount::All], None).unwrap(), [10, 40]);
        assert_eq!(c(&[Amount::All, Amount::All], Some(10)).unwrap(), [2, 8]);
        let w = [Amount::Weight(0.5), Amount::Weight(0.5)];
        assert_eq!(c(&w, None).unwrap(), [25, 25]);
        assert_eq!(c(&w, Some(8)).unwrap(), [4, 4]);
        let rc = [Amount::Repeat(2.5), Amount::Choose(3)];
        assert_eq!(c(&rc, None).unwrap(), [25, 3]);
        assert!(c(&[Amount::Weight(1.0), Amount::All], None).is_err());
        assert!(c(&rc, Some(10)).is_err());
        assert!(c(&[Amount::Weight(-1.0), Amount::Weight(2.0)], None).is_err());
        assert!(c(&[Amount::Repeat(f64::NAN), Amount::All], None).is_err());
    }

    #[test]
    fn a_sources_draws_are_whole_passes_then_a_subset() {
        let comp = Composition::new(
            &[Amount::Choose(25), Amount::Choose(3)],
            &[10, 5],
            vec![Draw::Uniform, Draw::Uniform],
            None,
        )
        .unwrap();
        assert_eq!(comp.len(), 28);
        let e0 = comp.epoch(1, 0);
        assert_eq!(e0.len(), 28);
        let h = histogram(&e0, 15);
        // 25 of 10: every sample twice, 5 of them a third time.
        assert!(h[..10].iter().all(|&k| k == 2 || k == 3));
        assert_eq!(h[..10].iter().filter(|&&k| k == 3).count(), 5);
        // 3 of 5, distinct.
        assert_eq!(h[10..].iter().filter(|&&k| k == 1).count(), 3);
        assert_eq!(e0, comp.epoch(1, 0));
        assert_ne!(e0, comp.epoch(1, 1));
    }

    #[test]
    fn balanced_classes_are_equal_within_one() {
        // Classes of 1, 3 and 16 samples; 20 draws: 6 or 7 each.
        let classes = vec![vec![0], vec![1, 2, 3], (4..20).collect()];
        let comp = Composition::new(
            &[Amount::All],
            &[20],
            vec![Draw::Balanced(classes.clone())],
            None,
        )
        .unwrap();
        for epoch in 0..5 {
            let e = comp.epoch(3, epoch);
            assert_eq!(e.len(), 20);
            let per: Vec<usize> = classes
                .iter()
                .map(|c| e.iter().filter(|s| c.contains(s)).count())
                .collect();
            assert!(per.iter().all(|&k| k == 6 || k == 7), "{per:?}");
            // Within the class of 3, each sample twice (and one a third time).
            let h = histogram(&e, 20);
            assert!(h[1..4].iter().all(|&k| k >= 2), "{h:?}");
        }
    }

    #[test]
    fn weighted_draws_follow_the_weights() {
        let weights = vec![0.0, 1.0, 3.0, 6.0];
        let comp = Composition::new(
            &[Amount::All],
            &[4],
            vec![Draw::Weighted(weights)],
            Some(100),
        )
        .unwrap();
        let e = comp.epoch(0, 0);
        assert_eq!(histogram(&e, 4), [0, 10, 30, 60]);
        let comp = Composition::new(
            &[Amount::All],
            &[4],
            vec![Draw::Weighted(vec![1.0, 1.0, 1.0, 1.0])],
            Some(6),
        )
        .unwrap();
        let mut seen = [0usize; 4];
        for epoch in 0..40 {
            let h = histogram(&comp.epoch(0, epoch), 4);
            assert!(h.iter().all(|&k| k == 1 || k == 2), "{h:?}");
            for (s, k) in seen.iter_mut().zip(h) {
                *s += k;
            }
        }
        // Which samples get the extra draw changes with the epoch.
        assert!(seen.iter().all(|&k| k > 40), "{seen:?}");
    }

    #[test]
    fn every_sample_once_is_the_identity() {
        let comp = Composition::new(
            &[Amount::All, Amount::All],
            &[3, 2],
            vec![Draw::Uniform, Draw::Uniform],
            None,
        )
        .unwrap();
        assert_eq!(comp.epoch(9, 9), [0, 1, 2, 3, 4]);
        let err = Composition::new(&[Amount::Choose(2)], &[0], vec![Draw::Uniform], None)
            .expect_err("nothing to choose from");
        assert!(err.to_string().contains("no samples"), "{err}");
    }
}
