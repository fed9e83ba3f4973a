//! Medians, spreads and slopes of interleaved samples: robust slopes
//! (Theil–Sen) with bootstrap confidence intervals, for slopes and for ratios of
//! slopes measured in the same rounds, and the checks that say when a fit should
//! not be believed (not linear, samples in two clusters).

use serde::Serialize;

/// A set of samples of one quantity.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub samples: usize,
}

impl Summary {
    pub fn of(samples: &[f64]) -> Summary {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        Summary {
            median: median_sorted(&v),
            min: v.first().copied().unwrap_or(f64::NAN),
            max: v.last().copied().unwrap_or(f64::NAN),
            samples: v.len(),
        }
    }

    /// `12.3 (11.9–13.0)`
    pub fn show(&self, decimals: usize) -> String {
        format!("{:.d$} ({:.d$}–{:.d$})", self.median, self.min, self.max, d = decimals)
    }
}

fn median_sorted(v: &[f64]) -> f64 {
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    median_sorted(&v)
}

/// The least-squares slope of `ys` over `xs`.
pub fn slope(xs: &[f64], ys: &[f64]) -> f64 {
    let n = xs.len().min(ys.len()) as f64;
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let cov: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let var: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    cov / var
}

/// Theil–Sen: the median of the slopes between every two points with different
/// x. Up to 29% of the points can be anywhere without moving it.
pub fn theil_sen(points: &[(f64, f64)]) -> f64 {
    let mut slopes = Vec::with_capacity(points.len() * points.len() / 2);
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            if a.0 != b.0 {
                slopes.push((b.1 - a.1) / (b.0 - a.0));
            }
        }
    }
    median(slopes)
}

/// A value with its 95% bootstrap confidence interval.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Estimate {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

impl Estimate {
    /// `12.30 [11.90, 12.80]`
    pub fn show(&self, decimals: usize) -> String {
        format!("{:.d$} [{:.d$}, {:.d$}]", self.value, self.low, self.high, d = decimals)
    }
}

/// Samples of a quantity measured at several sizes in interleaved rounds:
/// `rounds[r][i]` is round r's sample at `xs[i]`.
pub struct Rounds<'a> {
    pub xs: &'a [f64],
    pub rounds: &'a [Vec<f64>],
}

impl Rounds<'_> {
    fn points(&self, pick: &[usize]) -> Vec<(f64, f64)> {
        pick.iter().flat_map(|&r| self.xs.iter().copied().zip(self.rounds[r].iter().copied())).collect()
    }

    fn all(&self) -> Vec<usize> {
        (0..self.rounds.len()).collect()
    }

    /// The Theil–Sen slope over every sample.
    pub fn slope(&self) -> f64 {
        theil_sen(&self.points(&self.all()))
    }

    /// Per size, the samples of every round.
    pub fn at(&self, i: usize) -> Vec<f64> {
        self.rounds.iter().filter_map(|r| r.get(i).copied()).collect()
    }
}

/// Bootstrap resamples (rounds drawn with replacement).
const RESAMPLES: usize = 400;

/// SplitMix64: resampling needs reproducible, not cryptographic, randomness.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n.max(1) as u64) as usize
    }
}

fn interval(value: f64, mut draws: Vec<f64>) -> Estimate {
    draws.retain(|x| x.is_finite());
    draws.sort_by(f64::total_cmp);
    let at = |q: f64| draws.get(((draws.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN);
    Estimate { value, low: at(0.025), high: at(0.975) }
}

/// The slope of `series` with its bootstrap interval.
pub fn slope_estimate(series: &Rounds<'_>) -> Estimate {
    let n = series.rounds.len();
    let mut rng = Rng(0x5EED);
    let draws = (0..RESAMPLES)
        .map(|_| {
            let pick: Vec<usize> = (0..n).map(|_| rng.below(n)).collect();
            theil_sen(&series.points(&pick))
        })
        .collect();
    interval(series.slope(), draws)
}

/// `a`'s slope over `b`'s, both measured in the same rounds: resampled by
/// round, so what a round shared (the machine's state then) stays paired.
pub fn ratio_estimate(a: &Rounds<'_>, b: &Rounds<'_>) -> Estimate {
    let n = a.rounds.len().min(b.rounds.len());
    let mut rng = Rng(0xACE);
    let draws = (0..RESAMPLES)
        .map(|_| {
            let pick: Vec<usize> = (0..n).map(|_| rng.below(n)).collect();
            theil_sen(&a.points(&pick)) / theil_sen(&b.points(&pick))
        })
        .collect();
    interval(a.slope() / b.slope(), draws)
}

/// median(a) / median(b) for samples taken in the same rounds (`a[r]` and `b[r]`
/// in round r), with its bootstrap interval (rounds resampled, pairs kept).
pub fn ratio_of_medians(a: &[f64], b: &[f64]) -> Estimate {
    let n = a.len().min(b.len());
    let mut rng = Rng(0xB0B);
    let draws = (0..RESAMPLES)
        .map(|_| {
            let pick: Vec<usize> = (0..n).map(|_| rng.below(n)).collect();
            median(pick.iter().map(|&i| a[i]).collect()) / median(pick.iter().map(|&i| b[i]).collect())
        })
        .collect();
    interval(median(a[..n].to_vec()) / median(b[..n].to_vec()), draws)
}

/// Why a linear fit of `series` should not be believed, if it should not: a
/// median more than 10% of the largest size's median away from the line.
pub fn not_linear(name: &str, series: &Rounds<'_>) -> Option<String> {
    let slope = series.slope();
    let medians: Vec<f64> = (0..series.xs.len()).map(|i| median(series.at(i))).collect();
    let intercept = median(series.xs.iter().zip(&medians).map(|(x, y)| y - slope * x).collect());
    let scale = medians.last().copied().unwrap_or(f64::NAN).abs().max(1e-9);
    let (worst, at) = series
        .xs
        .iter()
        .zip(&medians)
        .map(|(x, y)| ((y - (intercept + slope * x)).abs(), *x))
        .fold((0.0, 0.0), |m, v| if v.0 > m.0 { v } else { m });
    (worst / scale > 0.10)
        .then(|| format!("{name}: not linear in N (the median at N = {at} is {worst:.1} ns off the fitted line)"))
}

/// Which sizes of `series` have samples in two clusters (a gap in the middle
/// wider than 8% of the median, with at least a fifth of the samples on each side).
pub fn bimodal(name: &str, series: &Rounds<'_>) -> Option<String> {
    let mut flagged = Vec::new();
    for (i, x) in series.xs.iter().enumerate() {
        let mut v = series.at(i);
        v.retain(|s| s.is_finite());
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n < 5 {
            continue;
        }
        let m = median_sorted(&v);
        let edge = n.div_ceil(5);
        if (edge..=n - edge).any(|j| (v[j] - v[j - 1]) > 0.08 * m) {
            flagged.push(x.to_string());
        }
    }
    (!flagged.is_empty()).then(|| format!("{name}: samples in two clusters at N = {}", flagged.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_slopes() {
        let s = Summary::of(&[3.0, 1.0, 2.0, f64::NAN]);
        assert_eq!((s.median, s.min, s.max, s.samples), (2.0, 1.0, 3.0, 3));
        assert_eq!(Summary::of(&[1.0, 2.0, 3.0, 4.0]).median, 2.5);
        assert!((slope(&[1.0, 2.0, 3.0], &[10.0, 12.0, 14.0]) - 2.0).abs() < 1e-9);
    }

    #[test]
    fn theil_sen_ignores_outliers_least_squares_does_not() {
        let xs: Vec<f64> = (0..10).map(f64::from).collect();
        let mut ys: Vec<f64> = xs.iter().map(|x| 5.0 + 3.0 * x).collect();
        ys[9] = 500.0;
        let points: Vec<(f64, f64)> = xs.iter().copied().zip(ys.iter().copied()).collect();
        assert!((theil_sen(&points) - 3.0).abs() < 1e-9);
        assert!(slope(&xs, &ys) > 10.0);
    }

    fn noisy(xs: &[f64], slope: f64, rounds: usize, noise: f64) -> Vec<Vec<f64>> {
        let mut rng = Rng(7);
        (0..rounds)
            .map(|_| xs.iter().map(|x| 10.0 + slope * x + noise * (rng.below(1000) as f64 / 1000.0 - 0.5)).collect())
            .collect()
    }

    #[test]
    fn intervals_cover_the_truth_and_narrow_with_less_noise() {
        let xs = [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0];
        let wide = noisy(&xs, 3.0, 15, 8.0);
        let narrow = noisy(&xs, 3.0, 15, 0.5);
        let w = slope_estimate(&Rounds { xs: &xs, rounds: &wide });
        let n = slope_estimate(&Rounds { xs: &xs, rounds: &narrow });
        assert!(w.low <= 3.0 && 3.0 <= w.high, "{w:?}");
        assert!(n.low <= 3.0 && 3.0 <= n.high, "{n:?}");
        assert!(n.high - n.low < w.high - w.low);
        let double = noisy(&xs, 6.0, 15, 0.5);
        let r = ratio_estimate(&Rounds { xs: &xs, rounds: &double }, &Rounds { xs: &xs, rounds: &narrow });
        assert!(r.low <= 2.0 && 2.0 <= r.high && r.high - r.low < 0.1, "{r:?}");
    }

    #[test]
    fn a_ratio_of_medians_has_an_interval_around_it() {
        let a: Vec<f64> = (0..30).map(|i| 110.0 + f64::from(i % 7)).collect();
        let b: Vec<f64> = (0..30).map(|i| 100.0 + f64::from(i % 5)).collect();
        let r = ratio_of_medians(&a, &b);
        assert!(r.low <= r.value && r.value <= r.high && r.high - r.low < 0.1, "{r:?}");
        assert!((r.value - 113.0 / 102.0).abs() < 1e-9, "{r:?}");
    }

    #[test]
    fn a_bend_and_two_clusters_are_flagged() {
        let xs = [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0];
        let straight = noisy(&xs, 3.0, 15, 0.5);
        assert_eq!(not_linear("s", &Rounds { xs: &xs, rounds: &straight }), None);
        assert_eq!(bimodal("s", &Rounds { xs: &xs, rounds: &straight }), None);
        let bent: Vec<Vec<f64>> = (0..15)
            .map(|_| xs.iter().map(|x| if *x < 6.0 { 3.0 * x } else { 18.0 + 10.0 * (x - 6.0) }).collect())
            .collect();
        assert!(not_linear("bent", &Rounds { xs: &xs, rounds: &bent }).is_some());
        let two: Vec<Vec<f64>> = (0..15)
            .map(|r| xs.iter().map(|x| 10.0 + 3.0 * x + if r % 2 == 0 { 0.0 } else { 20.0 }).collect())
            .collect();
        assert!(bimodal("two", &Rounds { xs: &xs, rounds: &two }).is_some());
    }
}
