//! `ebpkg search` over a file registry: a walk of the index, since index lines carry
//! the description, keywords and program names (no archive is opened).

use ebpkg_spec::index::IndexEntry;
use ebpkg_spec::names::normalize;

use super::FileRegistry;
use crate::error::Result;
use crate::registry::{MatchedOn, Registry, SearchHit};

impl FileRegistry {
    pub(super) fn search_index(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        let query = query.trim().to_lowercase();
        let mut hits = Vec::new();
        for name in self.list_names()? {
            // One damaged index file should not hide every other package from search;
            // installing from it still fails loudly.
            let entries = match self.index(&name) {
                Ok(Some(entries)) => entries,
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(package = %name, "left out of search results: {e}");
                    continue;
                }
            };
            let Some(entry) = representative(&entries) else { continue };
            let Some(matched_on) = match_entry(entry, &query) else { continue };
            hits.push(SearchHit {
                name: entry.name.clone(),
                version: entry.vers.clone(),
                yanked: entry.yanked,
                description: entry.description.clone(),
                keywords: entry.keywords.clone(),
                programs: entry.programs.iter().map(|p| p.name.clone()).collect(),
                matched_on,
            });
        }
        // Names are unique, so this order is total: results never shuffle between runs.
        hits.sort_by(|a, b| a.matched_on.cmp(&b.matched_on).then_with(|| a.name.cmp(&b.name)));
        hits.truncate(limit);
        Ok(hits)
    }
}

/// The version that describes a package: the newest stable non-yanked one, else the
/// newest non-yanked pre-release, else (all yanked) the newest.
fn representative(entries: &[IndexEntry]) -> Option<&IndexEntry> {
    entries.iter().max_by_key(|e| (!e.yanked, !e.yanked && e.vers.pre.is_empty(), &e.vers))
}

/// Why `entry` matches the lowercased `query`, or `None`.
fn match_entry(entry: &IndexEntry, query: &str) -> Option<MatchedOn> {
    if query.is_empty() {
        return Some(MatchedOn::Everything);
    }
    let name = entry.name.normalized();
    let name_query = normalize(query);
    let contains = |text: &str| text.to_lowercase().contains(query);
    Some(match () {
        _ if name == name_query => MatchedOn::Name,
        _ if name.starts_with(&name_query) => MatchedOn::NamePrefix,
        _ if name.contains(&name_query) => MatchedOn::NameSubstring,
        _ if entry.keywords.iter().any(|k| contains(k)) => MatchedOn::Keyword,
        _ if entry.programs.iter().any(|p| contains(p.name.as_str())) => MatchedOn::Program,
        _ if entry.description.as_deref().is_some_and(contains) => MatchedOn::Description,
        _ => return None,
    })
}
