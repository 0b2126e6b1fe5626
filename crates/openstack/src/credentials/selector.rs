//! Kubernetes label selector evaluation (matchLabels + matchExpressions), for the
//! OpenStackClusterIdentity `namespaceSelector`.

use std::collections::BTreeMap;

/// A `metav1.LabelSelector`. The empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    /// Exact label matches (ANDed).
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements (ANDed).
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One `matchExpressions` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelSelectorRequirement {
    /// Label key.
    pub key: String,
    /// In, NotIn, Exists, DoesNotExist.
    pub operator: String,
    /// Values for In/NotIn.
    pub values: Vec<String>,
}

impl LabelSelector {
    /// Whether `labels` satisfy the selector; an unknown operator or In/NotIn without values is an
    /// error (Kubernetes rejects such selectors too), never a silent match.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> Result<bool, String> {
        for (k, v) in &self.match_labels {
            if labels.get(k) != Some(v) {
                return Ok(false);
            }
        }
        for r in &self.match_expressions {
            let value = labels.get(&r.key);
            let ok = match r.operator.as_str() {
                "In" | "NotIn" if r.values.is_empty() => {
                    return Err(format!(
                        "operator {} on {:?} needs values",
                        r.operator, r.key
                    ));
                }
                "In" => value.is_some_and(|v| r.values.contains(v)),
                "NotIn" => value.is_none_or(|v| !r.values.contains(v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                other => return Err(format!("unknown operator {other:?}")),
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn empty_matches_all() {
        assert_eq!(LabelSelector::default().matches(&labels(&[])), Ok(true));
    }

    #[test]
    fn labels_and_expressions() {
        let sel = LabelSelector {
            match_labels: labels(&[("team", "a")]),
            match_expressions: vec![LabelSelectorRequirement {
                key: "env".into(),
                operator: "In".into(),
                values: vec!["prod".into(), "stage".into()],
            }],
        };
        assert_eq!(
            sel.matches(&labels(&[("team", "a"), ("env", "prod")])),
            Ok(true)
        );
        assert_eq!(
            sel.matches(&labels(&[("team", "a"), ("env", "dev")])),
            Ok(false)
        );
        assert_eq!(sel.matches(&labels(&[("env", "prod")])), Ok(false));
        let bad = LabelSelector {
            match_expressions: vec![LabelSelectorRequirement {
                key: "x".into(),
                operator: "Sometimes".into(),
                values: vec![],
            }],
            ..Default::default()
        };
        assert!(bad.matches(&labels(&[])).is_err());
    }
}
