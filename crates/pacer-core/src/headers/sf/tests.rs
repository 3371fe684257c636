//! Tests of the structured-field readers.

use super::*;
use proptest::prelude::*;

/// Text in the characters the quick reader looks at, and a few it must leave to `sfv`.
fn text() -> impl Strategy<Value = String> {
    let alphabet: &[char] = &[
        '"', 'a', 'r', 't', 'q', 'w', 'p', 'k', 'u', '0', '1', '9', ';', '=', ',', ' ', '\t', '.',
        '*', '-', '\\', ':', '(', '?', 'é',
    ];
    proptest::collection::vec(proptest::sample::select(alphabet), 0..40)
        .prop_map(|chars| chars.into_iter().collect())
}

/// A list as servers write it, with the spacing RFC 9651 allows.
fn served_list() -> impl Strategy<Value = String> {
    let item = prop_oneof![
        "[a-z0-9 _-]{0,8}".prop_map(|s| format!("\"{s}\"")),
        (-999i64..1_000_000).prop_map(|n| n.to_string()),
    ];
    let param = (
        proptest::sample::select(&["r", "t", "q", "w", "qu", "pk", "x", "a1", "*b"][..]),
        -5i64..999_999_999_999_999,
        proptest::sample::select(&["", " ", "  "][..]),
    )
        .prop_map(|(k, v, sp)| format!(";{sp}{k}={v}"));
    let member = (item, proptest::collection::vec(param, 0..4))
        .prop_map(|(item, params)| format!("{item}{}", params.concat()));
    let separator = proptest::sample::select(&[",", ", ", " ,", "\t,\t", " , "][..]);
    (
        proptest::collection::vec((member, separator), 1..4),
        proptest::sample::select(&["", " ", "  "][..]),
    )
        .prop_map(|(members, edge)| {
            let mut out = String::from(edge);
            for (i, (member, separator)) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(separator);
                }
                out.push_str(member);
            }
            out.push_str(edge);
            out
        })
}

proptest! {
    #[test]
    fn the_quick_reader_agrees_with_sfv_on_any_text(input in text()) {
        if let Some(quick) = simple_list(&input) {
            prop_assert_eq!(Some(quick), sfv_list(&input), "{:?}", input);
        }
    }

    #[test]
    fn reading_member_by_member_gives_the_parsed_list(input in text()) {
        let read = read_list(&input, usize::MAX, Vec::new, |v, m| {
            v.push(m.clone());
            Some(())
        });
        prop_assert_eq!(read, parse_list(&input), "{:?}", input);
    }

    #[test]
    fn the_quick_reader_reads_what_servers_send(input in served_list()) {
        let quick = simple_list(&input);
        prop_assert!(quick.is_some(), "{:?}", input);
        prop_assert_eq!(quick, sfv_list(&input), "{:?}", input);
    }
}

#[test]
fn lists_keep_the_ietf_parameters_last_wins() {
    let m = parse_list(r#""burst";r=50;t=30;r=40;x=1, "daily";q=1000;w=86400;pk=:cHsdsRa894==:"#)
        .unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(m[0].item, Bare::Str(SfString::from("burst")));
    assert_eq!(m[0].params.r, Some(Bare::Int(40)));
    assert_eq!(m[0].params.t, Some(Bare::Int(30)));
    assert_eq!(m[1].params.q, Some(Bare::Int(1000)));
    assert!(matches!(m[1].params.pk, Some(Bare::Bytes(_))));
}

#[test]
fn escaped_strings_and_integer_items() {
    let m = parse_list(r#""a\"b";q=1, 100;w=10"#).unwrap();
    assert_eq!(m[0].item, Bare::Str(SfString::from(String::from("a\"b"))));
    assert_eq!(m[1].item, Bare::Int(100));
    assert_eq!(m[1].params.w, Some(Bare::Int(10)));
}

#[test]
fn malformed_lists_are_rejected_whole() {
    for bad in [
        r#""a";r=1,"#,
        r#""a";r=1, ("b")"#,
        r#""a";r=1 "b""#,
        r#""a;r=1"#,
        "limit=100, remaining=50",
    ] {
        assert_eq!(parse_list(bad), None, "{bad}");
    }
    assert_eq!(parse_list(""), Some(vec![]));
}

#[test]
fn a_list_read_member_by_member_is_refused_whole() {
    let names = |input: &str, max: usize| {
        read_list(input, max, Vec::new, |names: &mut Vec<String>, m| {
            let Bare::Str(name) = &m.item else {
                return None;
            };
            names.push(name.text().to_owned());
            Some(())
        })
    };
    // An escape after a plain member: `sfv` reads the list again, into a fresh state.
    assert_eq!(
        names(r#""a";r=1, "b\"c";r=2"#, 8),
        Some(vec!["a".to_owned(), "b\"c".to_owned()])
    );
    assert_eq!(names(r#""a", "b""#, 2).map(|n| n.len()), Some(2));
    assert_eq!(
        names(r#""a", "b", "c""#, 2),
        None,
        "more than the most members"
    );
    assert_eq!(
        names(r#""a", 5, "c""#, 8),
        None,
        "a member the reader refuses"
    );
    assert_eq!(names(r#""a", "b"#, 8), None, "malformed");
}

#[test]
fn draft07_dictionaries() {
    let d = parse_draft07("limit=100, remaining=50, reset=5").unwrap();
    assert_eq!(d.limit, Some(Bare::Int(100)));
    assert_eq!(d.remaining, Some(Bare::Int(50)));
    assert_eq!(d.reset, Some(Bare::Int(5)));
    let d = parse_draft07("limit=(1 2), reset").unwrap();
    assert_eq!(d.limit, Some(Bare::Other));
    assert_eq!(d.reset, Some(Bare::Other));
    assert_eq!(parse_draft07(r#""default";r=50"#), None);
}
