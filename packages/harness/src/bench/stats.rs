//! Medians, spreads and slopes of interleaved samples.

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
        let median = match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        };
        Summary {
            median,
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

/// The least-squares slope of `ys` over `xs`.
pub fn slope(xs: &[f64], ys: &[f64]) -> f64 {
    let n = xs.len().min(ys.len()) as f64;
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let cov: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let var: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    cov / var
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
}
