//! Generic list handling shared by the services: attribute filters, tag filters, sorting,
//! limit/marker pagination and field selection.

use serde_json::Value;

use crate::http::Query;

/// Query keys that are never attribute filters.
const RESERVED: &[&str] = &[
    "limit",
    "marker",
    "fields",
    "sort",
    "sort_key",
    "sort_dir",
    "page_reverse",
    "tags",
    "tags-any",
    "not-tags",
    "not-tags-any",
    "tag",
    "all_tenants",
    "all_projects",
    "cascade",
    "changes-since",
    "changes-before",
    "member_status",
    "include_count",
];

/// A JSON value rendered the way it appears in a query string.
pub fn as_query_str(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Null => Some(String::new()),
        _ => None,
    }
}

fn value_matches(v: &Value, wanted: &str) -> bool {
    match v {
        // oslo `bool_from_string`, as Neutron converts boolean filters.
        Value::Bool(b) => {
            let w = wanted.to_ascii_lowercase();
            let truthy = matches!(w.as_str(), "1" | "t" | "true" | "on" | "y" | "yes");
            let falsy = matches!(w.as_str(), "0" | "f" | "false" | "off" | "n" | "no");
            if *b { truthy } else { falsy }
        }
        Value::Array(items) => items.iter().any(|i| value_matches(i, wanted)),
        other => as_query_str(other).is_some_and(|s| s == wanted),
    }
}

/// Attribute filters of a query, grouped once so a list scan does not re-parse the query per item.
pub struct Filter<'a> {
    groups: Vec<(&'a str, Vec<&'a str>)>,
    q: &'a Query,
    tags: bool,
}

impl<'a> Filter<'a> {
    /// Compile the filters of `q`, ignoring reserved keys and `skip`.
    pub fn new(q: &'a Query, skip: &[&str]) -> Filter<'a> {
        let groups = q
            .grouped()
            .into_iter()
            .filter(|(k, _)| !RESERVED.contains(k) && !skip.contains(k))
            .collect();
        let tags = ["tags", "tags-any", "not-tags", "not-tags-any"]
            .iter()
            .any(|k| q.get(k).is_some());
        Filter { groups, q, tags }
    }

    /// Whether a body passes. Keys the body does not have are not filters; repeated keys are
    /// alternatives (OR), as in Neutron.
    pub fn matches(&self, body: &Value) -> bool {
        self.groups.iter().all(|(k, wanted)| match body.get(*k) {
            Some(v) => wanted.iter().any(|w| value_matches(v, w)),
            None => true,
        }) && (!self.tags || tags_match(body, self.q))
    }
}

/// Whether a body passes every attribute and tag filter in the query (see [`Filter`]).
pub fn matches(body: &Value, q: &Query, skip: &[&str]) -> bool {
    Filter::new(q, skip).matches(body)
}

fn split_tags<'a>(q: &'a Query, key: &str) -> Vec<&'a str> {
    q.all(key)
        .into_iter()
        .flat_map(|v| v.split(','))
        .filter(|t| !t.is_empty())
        .collect()
}

/// The `tags`, `tags-any`, `not-tags`, `not-tags-any` filters (comma separated or repeated).
pub fn tags_match(body: &Value, q: &Query) -> bool {
    let have: Vec<&str> = body["tags"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let all = split_tags(q, "tags");
    let any = split_tags(q, "tags-any");
    let not_all = split_tags(q, "not-tags");
    let not_any = split_tags(q, "not-tags-any");
    all.iter().all(|t| have.contains(t))
        && (any.is_empty() || any.iter().any(|t| have.contains(t)))
        && (not_all.is_empty() || !not_all.iter().all(|t| have.contains(t)))
        && !not_any.iter().any(|t| have.contains(t))
}

/// Sort by `sort_key`/`sort_dir` when asked (first key only; values compared as strings, numbers numerically).
pub fn sort(items: &mut [Value], q: &Query) {
    let Some(key) = q
        .get("sort_key")
        .map(|k| k.split(':').next().unwrap_or(k).to_string())
    else {
        return;
    };
    let desc = q.get("sort_dir").is_some_and(|d| d == "desc")
        || q.get("sort_key").is_some_and(|k| k.ends_with(":desc"));
    items.sort_by(|a, b| {
        let ord = match (a[&key].as_f64(), b[&key].as_f64()) {
            (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal),
            _ => as_query_str(&a[&key]).cmp(&as_query_str(&b[&key])),
        };
        if desc { ord.reverse() } else { ord }
    });
}

/// Apply `marker` and `limit`. Returns the page and the marker for the next page when one exists.
pub fn page(items: Vec<Value>, q: &Query, id_key: &str) -> (Vec<Value>, Option<String>) {
    let start = match q.get("marker") {
        Some(m) if !m.is_empty() => items
            .iter()
            .position(|i| i[id_key].as_str() == Some(m))
            .map_or(items.len(), |p| p + 1),
        _ => 0,
    };
    let limit = q
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let rest: Vec<Value> = items.into_iter().skip(start).collect();
    match limit {
        Some(l) if rest.len() > l => {
            let page: Vec<Value> = rest.into_iter().take(l).collect();
            let next = page
                .last()
                .and_then(|v| v[id_key].as_str())
                .map(str::to_string);
            (page, next)
        }
        _ => (rest, None),
    }
}

/// Keep only the requested `fields` (Neutron/Octavia `fields=` selection).
pub fn select_fields(items: &mut [Value], q: &Query) {
    let fields = q.all("fields");
    if fields.is_empty() {
        return;
    }
    let fields: Vec<&str> = fields.iter().flat_map(|f| f.split(',')).collect();
    for item in items.iter_mut() {
        if let Value::Object(m) = item {
            m.retain(|k, _| fields.contains(&k.as_str()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(s: &str) -> Query {
        Query::parse(Some(s))
    }

    #[test]
    fn attribute_filters() {
        let b = json!({"name": "a", "admin_state_up": true, "mtu": 1450});
        assert!(matches(&b, &q("name=a&admin_state_up=True&mtu=1450"), &[]));
        assert!(!matches(&b, &q("name=b"), &[]));
        assert!(matches(&b, &q("name=b&name=a"), &[]));
        assert!(matches(&b, &q("unknown=x"), &[]));
    }

    #[test]
    fn tag_filters() {
        let b = json!({"tags": ["a", "b"]});
        assert!(tags_match(&b, &q("tags=a,b")));
        assert!(!tags_match(&b, &q("tags=a,c")));
        assert!(tags_match(&b, &q("tags-any=c,b")));
        assert!(!tags_match(&b, &q("not-tags=a,b")));
        assert!(tags_match(&b, &q("not-tags=a,c")));
        assert!(!tags_match(&b, &q("not-tags-any=c,a")));
    }

    #[test]
    fn pagination() {
        let items: Vec<Value> = (0..5).map(|i| json!({"id": i.to_string()})).collect();
        let (p, next) = page(items.clone(), &q("limit=2"), "id");
        assert_eq!(p.len(), 2);
        assert_eq!(next.as_deref(), Some("1"));
        let (p, next) = page(items, &q("limit=2&marker=3"), "id");
        assert_eq!(p, vec![json!({"id": "4"})]);
        assert!(next.is_none());
    }

    #[test]
    fn sorting_desc() {
        let mut items = vec![json!({"n": 1}), json!({"n": 3}), json!({"n": 2})];
        sort(&mut items, &q("sort_key=n&sort_dir=desc"));
        assert_eq!(items[0]["n"], 3);
    }
}
