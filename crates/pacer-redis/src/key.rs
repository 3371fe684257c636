//! From a window key (an endpoint, a user) to a Redis key: prefixed, bounded, one hash slot.
//!
//! `pacer:w:{api.example.com:443}`: the configurable prefix, then the key inside a hash tag so
//! that everything Pacer keeps for one key maps to one Redis Cluster slot. A key longer than
//! [`MAX_LITERAL_KEY_BYTES`], or one that holds `{` or `}` (which would break the tag) or starts
//! with `#`, is replaced by `#` and the first 128 bits of its SHA-256 in hex: the Redis key stays
//! short and bounded whatever the endpoint. SHA-256 rather than a fast non-cryptographic hash:
//! endpoint keys can come from URLs others choose, and two keys that collide would share one
//! window; with 128 bits that takes about 2^64 keys, and `sha2` is small and well kept.

use crate::RedisWindowError;
use sha2::{Digest, Sha256};

/// The default key prefix.
pub const DEFAULT_KEY_PREFIX: &str = "pacer:w:";

/// Keys up to this many bytes are kept as they are (inside the hash tag); longer ones are hashed.
pub const MAX_LITERAL_KEY_BYTES: usize = 128;

/// The longest key prefix accepted.
pub const MAX_PREFIX_BYTES: usize = 64;

/// How window keys become Redis keys.
///
/// ```
/// use pacer_redis::KeyFormat;
///
/// let keys = KeyFormat::new("pacer:w:")?;
/// assert_eq!(keys.redis_key("api.example.com:443"), "pacer:w:{api.example.com:443}");
/// let long = "x".repeat(500);
/// assert_eq!(keys.redis_key(&long).len(), "pacer:w:{#}".len() + 32);
/// # Ok::<(), pacer_redis::RedisWindowError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFormat {
    prefix: String,
}

impl KeyFormat {
    /// Keys under `prefix`.
    ///
    /// # Errors
    ///
    /// [`RedisWindowError::Config`] for a prefix longer than [`MAX_PREFIX_BYTES`] or holding `{`
    /// or `}` (the hash tag must be Pacer's).
    pub fn new(prefix: impl Into<String>) -> Result<Self, RedisWindowError> {
        let prefix = prefix.into();
        if prefix.len() > MAX_PREFIX_BYTES {
            return Err(RedisWindowError::Config(format!(
                "the key prefix must be at most {MAX_PREFIX_BYTES} bytes, got {}",
                prefix.len()
            )));
        }
        if prefix.contains(['{', '}']) {
            return Err(RedisWindowError::Config(format!(
                "the key prefix must not hold '{{' or '}}', got {prefix:?}"
            )));
        }
        Ok(KeyFormat { prefix })
    }

    /// The prefix.
    #[must_use]
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The Redis key that holds the window of `key`.
    #[must_use]
    pub fn redis_key(&self, key: &str) -> String {
        let literal = key.len() <= MAX_LITERAL_KEY_BYTES
            && !key.contains(['{', '}'])
            && !key.starts_with('#');
        if literal {
            format!("{}{{{key}}}", self.prefix)
        } else {
            let digest = Sha256::digest(key.as_bytes());
            let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
            format!("{}{{#{hex}}}", self.prefix)
        }
    }
}

impl Default for KeyFormat {
    fn default() -> Self {
        KeyFormat {
            prefix: DEFAULT_KEY_PREFIX.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_keys_are_kept_inside_a_hash_tag() {
        let k = KeyFormat::default();
        assert_eq!(
            k.redis_key("https://a.example:443"),
            "pacer:w:{https://a.example:443}"
        );
        assert_eq!(k.redis_key(""), "pacer:w:{}");
        let exactly = "k".repeat(MAX_LITERAL_KEY_BYTES);
        assert_eq!(k.redis_key(&exactly), format!("pacer:w:{{{exactly}}}"));
    }

    #[test]
    fn long_or_awkward_keys_are_hashed() {
        let k = KeyFormat::new("p:").unwrap();
        let long = "k".repeat(MAX_LITERAL_KEY_BYTES + 1);
        for key in [long.as_str(), "a{b}", "}", "#abc"] {
            let r = k.redis_key(key);
            assert!(r.starts_with("p:{#") && r.ends_with('}'), "{r}");
            assert_eq!(r.len(), "p:{#}".len() + 32);
            assert_eq!(r, k.redis_key(key), "stable");
        }
        assert_ne!(k.redis_key("#abc"), k.redis_key("#abd"));
        // The first 16 bytes of SHA-256("#"): the digest is the standard one.
        let known = k.redis_key("#");
        assert_eq!(known, "p:{#334359b90efed75da5f0ada1d5e6b256}");
    }

    #[test]
    fn prefixes_are_bounded_and_free_of_braces() {
        assert!(KeyFormat::new("x".repeat(MAX_PREFIX_BYTES)).is_ok());
        assert!(KeyFormat::new("x".repeat(MAX_PREFIX_BYTES + 1)).is_err());
        let e = KeyFormat::new("a{b").unwrap_err();
        assert!(e.to_string().contains("must not hold"), "{e}");
    }
}
