//! "Did you mean" suggestions for package names that do not exist, and the
//! lists in prose they (and the explanations) are written as.

use ebpkg_spec::PackageName;

/// Up to three names from `known` close to `missing` (normalized edit distance at most a third of its
/// length, at least 1), closest first.
pub(crate) fn close_names(missing: &PackageName, known: &[PackageName]) -> Vec<PackageName> {
    let target = missing.normalized();
    let limit = (target.chars().count() / 3).max(1);
    let mut scored: Vec<(usize, &PackageName)> = known
        .iter()
        .filter_map(|k| {
            let d = levenshtein(&target, &k.normalized());
            (d <= limit).then_some((d, k))
        })
        .collect();
    scored.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(3).map(|(_, k)| k.clone()).collect()
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// `a`, `a and b`, `a, b and c`.
pub(crate) fn and_list(items: &[String]) -> String {
    join_last(items, " and ")
}

/// `a`, `a or b`, `a, b or c`.
pub(crate) fn or_list(items: &[String]) -> String {
    join_last(items, " or ")
}

fn join_last(items: &[String], last: &str) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., tail] => format!("{}{last}{tail}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> PackageName {
        PackageName::new(s).unwrap()
    }

    #[test]
    fn distances() {
        assert_eq!(levenshtein("meter", "metr"), 1);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("kitten", "sitting"), 3);
    }

    #[test]
    fn suggests_close_names_first() {
        let known = [n("meter"), n("metre"), n("net"), n("ddos-guard")];
        assert_eq!(close_names(&n("metr"), &known), [n("meter"), n("metre")]);
        assert_eq!(close_names(&n("ddos_guard"), &known), [n("ddos-guard")]);
        assert!(close_names(&n("zzz"), &known).is_empty());
    }

    #[test]
    fn the_same_name_listed_is_told_apart_from_a_suggestion() {
        let e = crate::ResolveError::UnknownPackage {
            pkg: crate::QualifiedName::new(n("meter")),
            required_by: n("app"),
            suggestions: close_names(&n("meter"), &[n("meter"), n("metre")]),
        };
        let text = e.to_string();
        assert!(!text.contains("did you mean"), "{text}");
        assert!(text.contains("the registry lists `meter` but serves no index file for it"), "{text}");
    }
}
