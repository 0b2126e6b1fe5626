//! The substitution used by the template tests behaves like clusterctl's.

mod common;

use std::collections::BTreeMap;

use common::envsubst::{Op, Piece, parse, render, variables};

fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn every_form_clusterctl_templates_use() {
    let v = vars(&[("A", "x"), ("V", "v1.34.3"), ("EMPTY", "")]);
    let cases = [
        ("${A}", "x"),
        ("$A-b", "x-b"),
        ("${B:=d}", "d"),
        ("${B:-d}", "d"),
        ("${EMPTY:=d}", "d"),
        ("${EMPTY=d}", ""),
        ("${EMPTY-d}", ""),
        ("${B=d}", "d"),
        ("${A:=d}", "x"),
        ("${V%.*}", "v1.34"),
        ("${V#v}", "1.34.3"),
        ("${V#*.}", "34.3"),
        ("$${KEEP}", "${KEEP}"),
        ("$${KEEP%.*}", "${KEEP%.*}"),
        ("cost: 5$", "cost: 5$"),
        ("$$", "$"),
        ("${B:=\"\"}", "\"\""),
        ("${B:=[]}", "[]"),
    ];
    for (input, want) in cases {
        assert_eq!(render(input, &v).as_deref(), Ok(want), "{input}");
    }
}

#[test]
fn agrees_with_the_testkit_on_the_forms_both_support() {
    let owned = vars(&[("A", "x"), ("V", "v1.34.3")]);
    let borrowed: BTreeMap<&str, &str> = [("A", "x"), ("V", "v1.34.3")].into_iter().collect();
    let text = "${A}-${B:=d}-${V%.*}-$${KEEP}";
    assert_eq!(
        render(text, &owned),
        capo_testkit::envsubst(text, &borrowed)
    );
}

#[test]
fn unset_variables_are_all_reported() {
    let got = render("${Z} ${A} ${Z} ${D:=ok} ${V%.*}", &vars(&[]));
    assert_eq!(
        got,
        Err("value for variables [A, V, Z] is not set".to_owned())
    );
}

#[test]
fn unsupported_expressions_are_errors_not_text() {
    for bad in ["${A", "${A:?x}", "${1A}", "${A:=${B}}", "${A/x/y}"] {
        assert!(render(bad, &vars(&[("A", "a")])).is_err(), "{bad}");
    }
}

#[test]
fn variables_split_required_and_defaulted() {
    let got = variables("${A} ${B:=1} ${B:=1} ${C:-x} ${A:=y} $D ${E%.*} $${NOT_A_VAR}");
    let want: BTreeMap<String, Option<String>> = [
        ("A", None),
        ("B", Some("1")),
        ("C", Some("x")),
        ("D", None),
        ("E", None),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.map(str::to_owned)))
    .collect();
    assert_eq!(got, Ok(want));
    assert!(variables("${A:=1} ${A:=2}").is_err());
}

#[test]
fn parse_keeps_escapes_as_text() {
    assert_eq!(
        parse("a$${B}c${D:=e}"),
        Ok(vec![
            Piece::Text("a${B}c".to_owned()),
            Piece::Var {
                name: "D".to_owned(),
                op: Op::DefaultIfEmpty("e".to_owned())
            },
        ])
    );
}
