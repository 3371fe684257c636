//! Tests of the IETF `RateLimit` fields' readers.

use super::*;
use http::{HeaderMap, HeaderValue};
use proptest::prelude::*;

const NOW: u64 = 1_767_225_600;

fn read_map(pairs: &[(&'static str, &'static str)]) -> Vec<Policy> {
    let mut m = HeaderMap::new();
    for (k, v) in pairs {
        m.append(*k, HeaderValue::from_static(v));
    }
    let c = Collected::from_map(&m);
    let mut out = Vec::new();
    read(
        &c,
        SystemTime::UNIX_EPOCH + Duration::from_secs(NOW),
        &mut out,
    );
    out
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn ietf(name: &'static str) -> Policy {
    Policy::new(Dialect::IetfStructured).with_name(name)
}

#[test]
fn draft11_examples() {
    type Case = (Vec<(&'static str, &'static str)>, Vec<Policy>);
    let cases: Vec<Case> = vec![
        (
            vec![
                ("RateLimit-Policy", r#""default";q=100;w=10"#),
                ("RateLimit", r#""default";r=50;t=30"#),
            ],
            vec![
                ietf("default")
                    .with_limit(100)
                    .with_window(secs(10))
                    .with_remaining(50)
                    .with_reset_after(secs(30)),
            ],
        ),
        (
            // Cloudflare's API.
            vec![("ratelimit", r#""default";r=1199;t=1"#)],
            vec![
                ietf("default")
                    .with_remaining(1199)
                    .with_reset_after(secs(1)),
            ],
        ),
        (
            vec![("RateLimit", r#""default";r=999;pk=:dHJpYWwxMjEzMjM=:"#)],
            vec![
                ietf("default")
                    .with_remaining(999)
                    .with_partition_key(*b"trial121323"),
            ],
        ),
        (
            vec![(
                "RateLimit-Policy",
                r#""peruser";q=65535;qu="content-bytes";w=10;pk=:sdfjLJUOUH==:"#,
            )],
            vec![
                ietf("peruser")
                    .with_limit(65535)
                    .with_window(secs(10))
                    .with_unit(QuotaUnit::ContentBytes)
                    .with_partition_key(vec![177, 215, 227, 44, 149, 14, 80]),
            ],
        ),
        (
            vec![
                (
                    "RateLimit-Policy",
                    r#""hour";q=1000;w=3600, "day";q=5000;w=86400"#,
                ),
                ("RateLimit", r#""day";r=100;t=36000"#),
            ],
            vec![
                ietf("hour").with_limit(1000).with_window(secs(3600)),
                ietf("day")
                    .with_limit(5000)
                    .with_window(secs(86400))
                    .with_remaining(100)
                    .with_reset_after(secs(36000)),
            ],
        ),
        (
            // Names match case-insensitively; a RateLimit entry's pk wins.
            vec![
                ("RateLimit-Policy", r#""Dynamic";q=100;w=60;pk=:AAAA:"#),
                ("RateLimit", r#""dynamic";r=15;t=40;pk=:AQID:"#),
            ],
            vec![
                ietf("Dynamic")
                    .with_limit(100)
                    .with_window(secs(60))
                    .with_remaining(15)
                    .with_reset_after(secs(40))
                    .with_partition_key(vec![1, 2, 3]),
            ],
        ),
    ];
    for (i, (headers, want)) in cases.into_iter().enumerate() {
        assert_eq!(read_map(&headers), want, "case {i}");
    }
}

#[test]
fn repeated_lines_form_one_list() {
    let got = read_map(&[
        ("ratelimit-policy", r#""burst";q=100;w=60"#),
        ("ratelimit-policy", r#""daily";q=1000;w=86400"#),
        ("ratelimit", r#""burst";r=50;t=30"#),
        ("RateLimit", r#""daily";r=900;t=43200"#),
    ]);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].remaining(), Some(50));
    assert_eq!(got[1].remaining(), Some(900));
    assert_eq!(got[1].window(), Some(secs(86400)));
}

#[test]
fn malformed_structured_fields_are_discarded_whole() {
    let policy = ("RateLimit-Policy", r#""a";q=10;w=60"#);
    for bad in [
        r#""a";r=5, "b";t=3"#,   // b lacks r
        r#""a";r=-1"#,           // negative
        r#""a";r=5.5"#,          // decimal
        r#""a";r=5;t=?1"#,       // boolean t
        r#""a";r=5;pk="text""#,  // pk not bytes
        r#""a";r=5, b;r=2"#,     // token item
        r#""a";r=5,"#,           // trailing comma
        r#""a";r=5, ("b");r=1"#, // inner list
        r#""a\";r=1"#,           // unterminated string
    ] {
        let got = read_map(&[policy, ("RateLimit", bad)]);
        assert_eq!(
            got,
            vec![ietf("a").with_limit(10).with_window(secs(60))],
            "{bad}"
        );
    }
    for bad in [
        r#""a";w=60"#,
        r#""a";q=10;w=0"#,
        r#""a";q=10;qu=?1"#,
        r#""a";q=10, 1.5"#,
    ] {
        let got = read_map(&[("RateLimit-Policy", bad), ("RateLimit", r#""a";r=1"#)]);
        assert_eq!(got, vec![ietf("a").with_remaining(1)], "{bad}");
    }
}

#[test]
fn draft07_with_integer_policies() {
    let got = read_map(&[
        ("RateLimit", "limit=100, remaining=50, reset=5"),
        ("RateLimit-Policy", "100;w=10"),
    ]);
    let want = Policy::new(Dialect::IetfDraft07)
        .with_limit(100)
        .with_remaining(50)
        .with_reset_after(secs(5))
        .with_window(secs(10));
    assert_eq!(got, vec![want]);

    // Unity: two policies, the matching one gives the window.
    let got = read_map(&[
        ("RateLimit", "limit=20, remaining=19, reset=1"),
        ("RateLimit-Policy", "20;w=1, 4000;w=1800"),
    ]);
    assert_eq!(got.len(), 2);
    assert_eq!(
        got[0],
        Policy::new(Dialect::IetfDraft07)
            .with_limit(4000)
            .with_window(secs(1800))
    );
    assert_eq!(got[1].window(), Some(secs(1)));
    assert_eq!(got[1].remaining(), Some(19));

    assert!(read_map(&[("RateLimit", "remaining=50, reset=5")]).is_empty());
    assert!(read_map(&[("RateLimit", "limit=-1")]).is_empty());
}

#[test]
fn legacy_separate_fields() {
    // SharePoint on a 429.
    let got = read_map(&[
        ("RateLimit-Limit", "1200"),
        ("RateLimit-Remaining", "0"),
        ("RateLimit-Reset", "31"),
    ]);
    let sp = Policy::new(Dialect::IetfLegacy)
        .with_limit(1200)
        .with_remaining(0)
        .with_reset_after(secs(31));
    assert_eq!(got, vec![sp]);

    // drafts -03..-06 with a policy; drafts -00..-02 with policies in the limit.
    let got = read_map(&[
        ("RateLimit-Limit", "100"),
        ("RateLimit-Remaining", "40"),
        ("RateLimit-Reset", "4"),
        ("RateLimit-Policy", "100;w=10"),
    ]);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].window(), Some(secs(10)));
    let got = read_map(&[
        ("RateLimit-Limit", "10, 10;w=1, 50;w=60"),
        ("RateLimit-Remaining", "9"),
        ("RateLimit-Reset", "1"),
    ]);
    assert_eq!(got.len(), 2);
    assert_eq!(
        got[0],
        Policy::new(Dialect::IetfLegacy)
            .with_limit(50)
            .with_window(secs(60))
    );
    assert_eq!(got[1].window(), Some(secs(1)));
}

#[test]
fn draft_polli_00_window_and_draft06_parameters() {
    let got = read_map(&[
        ("RateLimit-Limit", "100, 100;window=60"),
        ("RateLimit-Remaining", r#"50;comment="x""#),
        ("RateLimit-Reset", "30;foo=1"),
    ]);
    let want = Policy::new(Dialect::IetfLegacy)
        .with_limit(100)
        .with_window(secs(60))
        .with_remaining(50)
        .with_reset_after(secs(30));
    assert_eq!(got, vec![want]);
    assert!(got[0].is_sound());
}

#[test]
fn out_of_range_values_are_read_but_unsound() {
    let year = crate::RateLimitInfo::MAX_RESET_AFTER;
    let got = read_map(&[
        ("RateLimit-Policy", r#""a";q=10;w=99999999999"#),
        ("RateLimit", r#""a";r=5;t=99999999999"#),
    ]);
    let want = ietf("a")
        .with_limit(10)
        .with_window(year)
        .with_remaining(5)
        .with_reset_after(year)
        .unsound();
    assert_eq!(got, vec![want]);
    // The RateLimit entry alone is out of range: the merged policy is unsound.
    let got = read_map(&[
        ("RateLimit-Policy", r#""a";q=10;w=60"#),
        ("RateLimit", r#""a";r=5;t=31536001"#),
    ]);
    assert!(!got[0].is_sound());
    let got = read_map(&[("RateLimit", "limit=10, remaining=5, reset=99999999999")]);
    assert_eq!(got[0].reset_after(), Some(year));
    assert!(!got[0].is_sound());
    let got = read_map(&[("RateLimit-Reset", "5"), ("RateLimit-Remaining", "5")]);
    assert!(got[0].is_sound());
}

#[test]
fn lists_of_more_than_64_members_are_discarded() {
    let policies = |n: usize| {
        (0..n)
            .map(|i| format!(r#""p{i}";q=10"#))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (n, want) in [(64, 64), (65, 0)] {
        let mut m = HeaderMap::new();
        m.insert("ratelimit-policy", policies(n).parse().unwrap());
        let mut out = Vec::new();
        read(&Collected::from_map(&m), SystemTime::UNIX_EPOCH, &mut out);
        assert_eq!(out.len(), want, "{n}");
    }
}

/// A `RateLimit-Policy` as servers write it, or broken: a member or two of names, `q`, `w`,
/// `qu` and `pk` parameters, Integer members, and now and then a stray character.
fn policy_field() -> impl Strategy<Value = String> {
    let member = prop_oneof![
        ("[a-cA-C]{1,3}", 0u64..1_000, 0u64..100)
            .prop_map(|(n, q, w)| format!(r#""{n}";q={q};w={w}"#)),
        ("[a-c]{1,3}", 0u64..1_000)
            .prop_map(|(n, q)| format!(r#""{n}";q={q};qu="tokens";pk=:AQ==:"#)),
        (0u64..1_000, 0u64..100).prop_map(|(q, w)| format!("{q};w={w}")),
        "[\"a;=q1, -]{0,6}",
    ];
    proptest::collection::vec(member, 1..3).prop_map(|m| m.join(", "))
}

proptest! {
    #[test]
    fn a_policy_field_read_again_gives_what_a_parse_gives(
        fields in proptest::collection::vec(policy_field(), 1..6),
    ) {
        for field in fields.iter().chain(fields.iter().rev()) {
            // Read once (kept, or already kept from an equal field), then from the copy.
            prop_assert_eq!(last_policy::members(field), parse_policy(field), "{:?}", field);
            prop_assert_eq!(last_policy::members(field), parse_policy(field), "{:?}", field);
            // A line compared with the kept field before its text is checked.
            let line = HeaderValue::from_str(field).expect("visible ASCII");
            prop_assert_eq!(last_policy::members_of_line(&line), parse_policy(field), "{:?}", field);
        }
    }
}

#[test]
fn a_policy_field_sent_again_reads_as_the_first_time() {
    let pairs = [
        (
            "RateLimit-Policy",
            r#""burst";q=100;w=10, "day";q=1000;w=86400;pk=:AQ==:"#,
        ),
        ("RateLimit", r#""burst";r=50;t=3"#),
    ];
    let first = read_map(&pairs);
    assert_eq!(first.len(), 2);
    let other = read_map(&[("RateLimit-Policy", r#""burst";q=5"#)]);
    assert_eq!(other[0].limit(), Some(5));
    for _ in 0..2 {
        assert_eq!(read_map(&pairs), first);
    }
    assert_eq!(read_map(&[("RateLimit-Policy", r#""burst";q=5;w=0"#)]), []);
    assert_eq!(read_map(&pairs), first);
}
