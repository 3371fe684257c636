//! Parsers of command-line values whose errors point the right way: a negative number reaches
//! its own flag's range (clap would otherwise take `-1` for a flag and say "unexpected argument"),
//! and `serve` and `live`, which play one story, list the stories they take.

use crate::model::{MORE_STORY_NAMES, STORY_NAMES, Story};

/// A whole number from `min` to `max`, for an argument declared with `allow_negative_numbers`.
/// The message says the range: "must be at least 1", "must be from 1 to 64", "must not be
/// negative".
pub(crate) fn whole<T>(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    move |s: &str| {
        let below = match (min, max) {
            (0, u64::MAX) => "must not be negative".to_owned(),
            (min, u64::MAX) => format!("must be at least {min}"),
            (min, max) => format!("must be from {min} to {max}"),
        };
        let above = match max {
            u64::MAX => format!("must be at most {max}"),
            max => format!("must be from {min} to {max}"),
        };
        let n: i128 = s
            .trim()
            .parse()
            .map_err(|_| format!("expected a whole number; {below}"))?;
        if n < i128::from(min) {
            return Err(below);
        }
        u64::try_from(n)
            .ok()
            .filter(|n| *n <= max)
            .and_then(|n| T::try_from(n).ok())
            .ok_or(above)
    }
}

/// Demand per instance, units per minute: a number from 0 to 1,000,000.
pub(crate) fn demand(s: &str) -> Result<f64, String> {
    let d: f64 = s
        .trim()
        .parse()
        .map_err(|_| "expected a number of units per minute".to_owned())?;
    if d.is_finite() && (0.0..=1e6).contains(&d) {
        Ok(d)
    } else {
        Err("must be from 0 to 1,000,000".to_owned())
    }
}

/// A share of the round trip (`--forward`): a number from 0 to 1.
pub(crate) fn share(s: &str) -> Result<f64, String> {
    let x: f64 = s
        .trim()
        .parse()
        .map_err(|_| "expected a share of the round trip, from 0 to 1".to_owned())?;
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err("must be from 0 to 1".to_owned())
    }
}

/// A fixed window's phase (`--phase`): seconds, at least 0 and under 60 (the longest window);
/// the run checks it against `--window`.
pub(crate) fn seconds(s: &str) -> Result<f64, String> {
    let x: f64 = s
        .trim()
        .parse()
        .map_err(|_| "expected a number of seconds, at least 0 and under 60".to_owned())?;
    if (0.0..60.0).contains(&x) {
        Ok(x)
    } else {
        Err("must be at least 0 and under 60 seconds".to_owned())
    }
}

/// One story by name, for `serve` and `live` (which cannot take `all`).
pub(crate) fn one_story(s: &str) -> Result<String, String> {
    if let Some(story) = Story::by_name(s) {
        return Ok(story.name.to_owned());
    }
    let choices = STORY_NAMES
        .iter()
        .chain(&MORE_STORY_NAMES)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if s == "all" {
        Err(format!(
            "this command plays one story at a time, not all: expected one of {choices}"
        ))
    } else {
        Err(format!("unknown story {s:?}: expected one of {choices}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_say_their_range() {
        let instances = whole::<u32>(1, 64);
        assert_eq!(instances("3"), Ok(3));
        assert_eq!(instances("-1"), Err("must be from 1 to 64".to_owned()));
        assert_eq!(instances("65"), Err("must be from 1 to 64".to_owned()));
        assert_eq!(
            instances("two"),
            Err("expected a whole number; must be from 1 to 64".to_owned())
        );
        let quota = whole::<u64>(1, u64::MAX);
        assert_eq!(quota("-5"), Err("must be at least 1".to_owned()));
        let seed = whole::<u64>(0, u64::MAX);
        assert_eq!(seed("-1"), Err("must not be negative".to_owned()));
        assert_eq!(seed("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(
            seed("18446744073709551616"),
            Err("must be at most 18446744073709551615".to_owned())
        );
        assert_eq!(
            whole::<u16>(0, 65535)("70000"),
            Err("must be from 0 to 65535".to_owned())
        );
        assert_eq!(demand("-5"), Err("must be from 0 to 1,000,000".to_owned()));
        assert_eq!(demand("1500"), Ok(1500.0));
        assert_eq!(share("0.5"), Ok(0.5));
        assert_eq!(share("1"), Ok(1.0));
        assert_eq!(share("-0.1"), Err("must be from 0 to 1".to_owned()));
        assert_eq!(share("1.5"), Err("must be from 0 to 1".to_owned()));
        assert_eq!(
            share("half"),
            Err("expected a share of the round trip, from 0 to 1".to_owned())
        );
    }

    #[test]
    fn one_story_lists_the_stories_and_refuses_all() {
        assert_eq!(one_story("quota-cut"), Ok("quota-cut".to_owned()));
        let e = one_story("all").unwrap_err();
        assert!(e.contains("plays one story at a time"), "{e}");
        assert!(!e.contains("expected all"), "{e}");
        let e = one_story("mars").unwrap_err();
        assert!(e.contains("expected one of free-run, "), "{e}");
    }
}
