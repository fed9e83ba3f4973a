//! The version sets PubGrub works with: sets of *candidate indices*.
//!
//! Each package's published versions are sorted in semver order and numbered `0..n`; PubGrub only ever
//! sees those numbers. A requirement becomes the exact set `{ i | req.matches(versions[i]) }`. That set is
//! not always one interval of versions — `>=1.0.0` matches `1.4.0` and `1.5.0` but not `1.5.0-rc.1`
//! between them — but over indices it is always a finite union of index intervals, and such unions are
//! closed under complement and intersection, as PubGrub's [`VersionSet`] requires. So cargo's
//! pre-release rules are applied exactly once, by `semver::VersionReq::matches`, and never approximated.
//!
//! The universe is `0..END`. Two canonical representations (equal sets are always represented alike,
//! so `Eq`/`Hash` are structural):
//!
//! - **bits**, when every index from 63 up is either in the set or not: bit `i < 63` is index `i`, bit
//!   63 stands for all of `63..END`. Every package with at most 63 versions — nearly all of them — only
//!   ever produces these, and set operations are single machine instructions.
//! - **bounds** otherwise: the sorted, strictly increasing boundaries `[s0, e0, s1, e1, …]` of half-open
//!   intervals `[s, e)` (`END` as a last bound means "and everything above").

use std::fmt;

use pubgrub::VersionSet;

/// One past the largest index: the top of the universe. Never a real candidate.
pub(crate) const END: u32 = u32::MAX;

/// Bit 63 of a bits set: all of `63..END`.
const TOP_BIT: u32 = 63;

/// A set of candidate indices (see the module documentation).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) enum IndexSet {
    Bits(u64),
    #[allow(clippy::box_collection, reason = "a thin pointer keeps every set, and PubGrub's terms, at 16 bytes")]
    Bounds(Box<Vec<u32>>),
}

impl IndexSet {
    /// The canonical set with these boundaries.
    fn from_bounds(b: Vec<u32>) -> Self {
        let mut bits = 0u64;
        for pair in b.chunks_exact(2) {
            let (s, e) = (pair[0], pair[1]);
            if e == END && s <= TOP_BIT {
                bits |= !0u64 << s;
            } else if e <= TOP_BIT {
                bits |= (!0u64 << s) & !(!0u64 << e);
            } else {
                return IndexSet::Bounds(Box::new(b));
            }
        }
        IndexSet::Bits(bits)
    }

    /// Appends the boundaries of the set to `out`.
    fn bounds_into(&self, out: &mut Vec<u32>) {
        match self {
            IndexSet::Bounds(b) => out.extend_from_slice(b),
            &IndexSet::Bits(bits) => {
                let mut t = bits ^ (bits << 1);
                while t != 0 {
                    let i = t.trailing_zeros();
                    out.push(i);
                    t &= t - 1;
                }
                if bits >> TOP_BIT == 1 {
                    // The interval that reaches bit 63 goes on to the top of the universe.
                    out.push(END);
                }
            }
        }
    }

    fn bounds(&self) -> Vec<u32> {
        let mut v = Vec::new();
        self.bounds_into(&mut v);
        v
    }

    /// The set of indices `i` for which `pred(i)` holds, for `i` in `0..n`.
    pub(crate) fn from_predicate(n: u32, mut pred: impl FnMut(u32) -> bool) -> Self {
        if n <= TOP_BIT {
            let mut bits = 0u64;
            for i in 0..n {
                bits |= u64::from(pred(i)) << i;
            }
            return IndexSet::Bits(bits);
        }
        let mut b = Vec::new();
        let mut inside = false;
        for i in 0..n {
            if pred(i) != inside {
                b.push(i);
                inside = !inside;
            }
        }
        if inside {
            b.push(n);
        }
        IndexSet::from_bounds(b)
    }

    /// `start..end` (half-open).
    pub(crate) fn interval(start: u32, end: u32) -> Self {
        if start >= end {
            return IndexSet::Bits(0);
        }
        IndexSet::from_bounds(vec![start, end])
    }

    /// The half-open intervals of the set, lowest first.
    pub(crate) fn intervals(&self) -> impl DoubleEndedIterator<Item = (u32, u32)> {
        let b = self.bounds();
        (0..b.len() / 2).map(move |k| (b[2 * k], b[2 * k + 1]))
    }

    /// The members below `n` (the real candidates of a package with `n` versions), lowest first.
    pub(crate) fn members_below(&self, n: u32) -> impl DoubleEndedIterator<Item = u32> {
        let (bits, rest) = match self {
            // Indices below 63 from the bits; the rest of 0..n when bit 63 is set.
            &IndexSet::Bits(bits) => {
                let low = if n < TOP_BIT { bits & !(!0u64 << n) } else { bits & !(1u64 << TOP_BIT) };
                let rest = if bits >> TOP_BIT == 1 && n > TOP_BIT { TOP_BIT..n } else { 0..0 };
                (low, rest)
            }
            IndexSet::Bounds(_) => (0, 0..0),
        };
        let from_bounds: Vec<u32> = match self {
            IndexSet::Bounds(b) => b.chunks_exact(2).filter(|c| c[0] < n).flat_map(|c| c[0]..c[1].min(n)).collect(),
            IndexSet::Bits(_) => Vec::new(),
        };
        BitIter(bits).chain(rest).chain(from_bounds)
    }

    /// The set restricted to `0..n`.
    pub(crate) fn clamp(&self, n: u32) -> Self {
        self.intersection(&IndexSet::interval(0, n))
    }

    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, IndexSet::Bits(0))
    }

    /// Walks the union of both boundary lists; `visit(at, in_self, in_other)` is told the membership of
    /// each maximal piece in turn and may stop the walk by returning `false`.
    fn walk(&self, other: &Self, mut visit: impl FnMut(u32, bool, bool) -> bool) {
        let (a, b) = (self.bounds(), other.bounds());
        let (mut i, mut j) = (0, 0);
        let (mut in_a, mut in_b) = (false, false);
        loop {
            let next = match (a.get(i), b.get(j)) {
                (Some(&x), Some(&y)) => x.min(y),
                (Some(&x), None) => x,
                (None, Some(&y)) => y,
                (None, None) => return,
            };
            if a.get(i) == Some(&next) {
                in_a = !in_a;
                i += 1;
            }
            if b.get(j) == Some(&next) {
                in_b = !in_b;
                j += 1;
            }
            if !visit(next, in_a, in_b) {
                return;
            }
        }
    }

    fn combine(&self, other: &Self, op: impl Fn(bool, bool) -> bool) -> Self {
        let mut out = Vec::new();
        let mut inside = false;
        self.walk(other, |at, in_a, in_b| {
            if op(in_a, in_b) != inside {
                inside = !inside;
                out.push(at);
            }
            true
        });
        IndexSet::from_bounds(out)
    }
}

/// The set bits of a word, lowest first (and from the top when reversed).
struct BitIter(u64);

impl Iterator for BitIter {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros();
        self.0 &= self.0 - 1;
        Some(i)
    }
}

impl DoubleEndedIterator for BitIter {
    fn next_back(&mut self) -> Option<u32> {
        if self.0 == 0 {
            return None;
        }
        let i = 63 - self.0.leading_zeros();
        self.0 &= !(1u64 << i);
        Some(i)
    }
}

impl VersionSet for IndexSet {
    type V = u32;

    fn empty() -> Self {
        IndexSet::Bits(0)
    }

    fn singleton(v: u32) -> Self {
        if v < TOP_BIT {
            return IndexSet::Bits(1u64 << v);
        }
        IndexSet::interval(v, v.saturating_add(1))
    }

    fn complement(&self) -> Self {
        match self {
            &IndexSet::Bits(b) => IndexSet::Bits(!b),
            IndexSet::Bounds(b) => {
                // Toggle the two ends of the universe.
                let mut out = Vec::with_capacity(b.len() + 2);
                let body = match b.first() {
                    Some(0) => &b[1..],
                    _ => {
                        out.push(0);
                        &b[..]
                    }
                };
                let (body, ends_at_top) = match body.split_last() {
                    Some((&END, rest)) => (rest, true),
                    _ => (body, false),
                };
                out.extend_from_slice(body);
                if !ends_at_top {
                    out.push(END);
                }
                IndexSet::from_bounds(out)
            }
        }
    }

    fn intersection(&self, other: &Self) -> Self {
        match (self, other) {
            (&IndexSet::Bits(a), &IndexSet::Bits(b)) => IndexSet::Bits(a & b),
            _ => self.combine(other, |a, b| a && b),
        }
    }

    fn union(&self, other: &Self) -> Self {
        match (self, other) {
            (&IndexSet::Bits(a), &IndexSet::Bits(b)) => IndexSet::Bits(a | b),
            _ => self.combine(other, |a, b| a || b),
        }
    }

    fn contains(&self, v: &u32) -> bool {
        match self {
            &IndexSet::Bits(b) => b >> (*v).min(TOP_BIT) & 1 == 1,
            IndexSet::Bounds(b) => b.partition_point(|x| x <= v) % 2 == 1,
        }
    }

    fn full() -> Self {
        IndexSet::Bits(!0)
    }

    fn is_disjoint(&self, other: &Self) -> bool {
        if let (&IndexSet::Bits(a), &IndexSet::Bits(b)) = (self, other) {
            return a & b == 0;
        }
        let mut disjoint = true;
        self.walk(other, |_, a, b| {
            disjoint = !(a && b);
            disjoint
        });
        disjoint
    }

    fn subset_of(&self, other: &Self) -> bool {
        if let (&IndexSet::Bits(a), &IndexSet::Bits(b)) = (self, other) {
            return a & !b == 0;
        }
        let mut subset = true;
        self.walk(other, |_, a, b| {
            subset = !a || b;
            subset
        });
        subset
    }
}

impl fmt::Debug for IndexSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Index notation (`#0..#3 | #5`), for PubGrub's logs only; explanations show real versions.
impl fmt::Display for IndexSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("∅");
        }
        for (k, (s, e)) in self.intervals().enumerate() {
            if k > 0 {
                f.write_str(" | ")?;
            }
            match (e - s, e) {
                (1, _) => write!(f, "#{s}")?,
                (_, END) => write!(f, "#{s}..")?,
                _ => write!(f, "#{s}..#{}", e - 1)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Probe points: around the bits/bounds border and the top of the universe.
    const PROBES: [u32; 12] = [0, 1, 2, 5, 61, 62, 63, 64, 65, 70, 1000, END - 1];

    fn model(s: &IndexSet) -> Vec<bool> {
        PROBES.iter().map(|i| s.contains(i)).collect()
    }

    /// Random unions of intervals with ends drawn from the probe neighbourhoods.
    fn arb_set() -> impl Strategy<Value = IndexSet> {
        let point = prop_oneof![0u32..8, 58u32..70, Just(1000), Just(END)];
        proptest::collection::vec((point.clone(), point), 0..4).prop_map(|pairs| {
            pairs.into_iter().fold(IndexSet::empty(), |acc, (a, b)| acc.union(&IndexSet::interval(a.min(b), a.max(b))))
        })
    }

    fn canonical(s: &IndexSet) -> bool {
        match s {
            IndexSet::Bits(_) => true,
            IndexSet::Bounds(b) => {
                b.windows(2).all(|w| w[0] < w[1])
                    && b.len() % 2 == 0
                    && matches!(IndexSet::from_bounds(b.to_vec()), IndexSet::Bounds(_))
            }
        }
    }

    proptest! {
        #[test]
        fn operations_match_the_model(a in arb_set(), b in arb_set()) {
            let (ma, mb) = (model(&a), model(&b));
            let i = a.intersection(&b);
            let u = a.union(&b);
            let c = a.complement();
            for s in [&a, &b, &i, &u, &c] {
                prop_assert!(canonical(s), "{s:?}");
            }
            let (mi, mu, mc) = (model(&i), model(&u), model(&c));
            for k in 0..PROBES.len() {
                prop_assert_eq!(mi[k], ma[k] && mb[k]);
                prop_assert_eq!(mu[k], ma[k] || mb[k]);
                prop_assert_eq!(mc[k], !ma[k]);
            }
            prop_assert_eq!(a.is_disjoint(&b), i == IndexSet::empty());
            prop_assert_eq!(a.subset_of(&b), a == i);
            prop_assert!(c.complement() == a);
            // Equal sets are equal whatever built them.
            prop_assert!(IndexSet::from_bounds(a.bounds()) == a);
            let n = 70;
            let members: Vec<u32> = a.members_below(n).collect();
            let expected: Vec<u32> = (0..n).filter(|k| a.contains(k)).collect();
            prop_assert_eq!(&members, &expected);
            let mut rev: Vec<u32> = a.members_below(n).rev().collect();
            rev.reverse();
            prop_assert_eq!(rev, expected);
        }
    }

    #[test]
    fn basics() {
        assert!(IndexSet::full().contains(&0) && IndexSet::full().contains(&(END - 1)));
        assert!(IndexSet::full().complement().is_empty());
        assert!(IndexSet::empty().complement() == IndexSet::full());
        let s = IndexSet::singleton(3);
        assert!(s.contains(&3) && !s.contains(&2) && !s.contains(&4));
        assert_eq!(s.complement().to_string(), "#0..#2 | #4..");
        assert_eq!(IndexSet::from_predicate(6, |i| i != 2).members_below(6).collect::<Vec<_>>(), [0, 1, 3, 4, 5]);
        let many = IndexSet::from_predicate(100, |i| i % 2 == 0);
        assert!(matches!(many, IndexSet::Bounds(_)));
        assert_eq!(many.members_below(100).count(), 50);
        assert!(many.contains(&98) && !many.contains(&99) && !many.contains(&100));
        let high = IndexSet::singleton(80);
        assert!(high.contains(&80) && !high.contains(&79) && !high.contains(&81));
        assert!(high.complement().complement() == high);
        assert!(IndexSet::interval(63, END) == IndexSet::Bits(1 << 63));
    }
}
