//! [`TokenUsage`]: a request's tokens, as estimated before the send and as the model API's
//! answer reports them (its `usage`), and [`UsageReader`], which finds that report in a body
//! read a chunk at a time, streamed or not.

use crate::QuotaUnit;
use http::HeaderMap;
use serde::Deserialize;

/// The most of a body [`UsageReader`] keeps at once: 1 MiB. A JSON answer is read whole (its
/// `usage` comes after the text), a stream one event at a time; a longer answer or event is
/// let through unread, and its usage is not known (the reservation then stands).
pub const USAGE_BODY_LIMIT: usize = 1024 * 1024;

/// The tokens of one request: those it sends (its prompt, `input`) and those it produces
/// (`output`).
///
/// Before the send it is an estimate (the request's [`TokenCost`](crate::TokenCost) and
/// [`OutputTokens`](crate::OutputTokens)), reserved from the endpoint's budgets; after, the
/// truth its answer reports ([`from_body`](Self::from_body)), which settles the reservation.
/// Each budget takes the part it counts ([`in_unit`](Self::in_unit)): OpenAI's `tokens` the
/// whole, Anthropic's `input-tokens` and `output-tokens` each its part.
///
/// ```
/// use pacer_core::{QuotaUnit, TokenUsage};
///
/// let estimate = TokenUsage::new(1_000, Some(256));
/// assert_eq!(estimate.in_unit(&QuotaUnit::Tokens), Some(1_256));
/// assert_eq!(estimate.in_unit(&QuotaUnit::OutputTokens), Some(256));
/// // Without a known output, an output budget cannot tell what the request costs.
/// assert_eq!(TokenUsage::new(1_000, None).in_unit(&QuotaUnit::OutputTokens), None);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TokenUsage {
    /// The tokens the request sends (its prompt).
    pub input: u64,
    /// The tokens it produces; `None` when not known (an estimate without a `max_tokens`).
    pub output: Option<u64>,
}

impl TokenUsage {
    /// `input` tokens sent and `output` produced (`None`: not known).
    #[must_use]
    pub const fn new(input: u64, output: Option<u64>) -> Self {
        TokenUsage { input, output }
    }

    /// All its tokens: input and output (an unknown output counts 0).
    #[must_use]
    pub fn total(&self) -> u64 {
        self.input.saturating_add(self.output.unwrap_or(0))
    }

    /// Its cost in a quota of `unit`: the whole for [`QuotaUnit::Tokens`], the input for
    /// [`QuotaUnit::InputTokens`], the output for [`QuotaUnit::OutputTokens`]; `None` for the
    /// output when it is not known, and for every other unit.
    #[must_use]
    pub fn in_unit(&self, unit: &QuotaUnit) -> Option<u64> {
        match unit {
            QuotaUnit::Tokens => Some(self.total()),
            QuotaUnit::InputTokens => Some(self.input),
            QuotaUnit::OutputTokens => self.output,
            _ => None,
        }
    }

    /// The `usage` a model API's JSON answer reports: OpenAI's chat completions
    /// (`prompt_tokens`, `completion_tokens`), its Responses API and Anthropic's Messages API
    /// (`input_tokens`, `output_tokens`, at the top or under `response` or `message`), Gemini's
    /// `usageMetadata` (`promptTokenCount`, `candidatesTokenCount`). Anthropic's
    /// `cache_creation_input_tokens` are input; its `cache_read_input_tokens` are not (they do
    /// not count toward its input-tokens limit, its rate-limit guide says). `None` when the
    /// body is not JSON or reports no usage.
    ///
    /// ```
    /// use pacer_core::TokenUsage;
    ///
    /// let openai = br#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":30,"total_tokens":42}}"#;
    /// assert_eq!(TokenUsage::from_body(openai), Some(TokenUsage::new(12, Some(30))));
    /// let anthropic = br#"{"content":[],"usage":{"input_tokens":20,"cache_creation_input_tokens":5,
    ///   "cache_read_input_tokens":100,"output_tokens":7}}"#;
    /// assert_eq!(TokenUsage::from_body(anthropic), Some(TokenUsage::new(25, Some(7))));
    /// assert_eq!(TokenUsage::from_body(b"not json"), None);
    /// ```
    #[must_use]
    pub fn from_body(body: &[u8]) -> Option<TokenUsage> {
        let doc: Document = serde_json::from_slice(body).ok()?;
        doc.usage()
    }

    /// The larger of each count: what a stream's reports add up to, each a running total
    /// (Anthropic's `message_delta` repeats the output so far).
    fn most(self, other: TokenUsage) -> TokenUsage {
        TokenUsage {
            input: self.input.max(other.input),
            output: self.output.max(other.output),
        }
    }
}

/// `tokens` in all, the output among them not known: a [`TokenCost`](crate::TokenCost) alone.
impl From<u64> for TokenUsage {
    fn from(tokens: u64) -> Self {
        TokenUsage::new(tokens, None)
    }
}

/// A body's JSON document, as far as its usage goes: each part read leniently (a part of
/// another shape, such as an error's `message` string, is no usage, not a failure).
#[derive(Deserialize)]
struct Document {
    usage: Option<serde_json::Value>,
    #[serde(rename = "usageMetadata")]
    usage_metadata: Option<serde_json::Value>,
    /// Anthropic's `message_start` event.
    message: Option<serde_json::Value>,
    /// OpenAI's Responses API `response.completed` event.
    response: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Usage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GeminiUsage {
    prompt_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
}

impl Document {
    fn usage(self) -> Option<TokenUsage> {
        fn read<T: for<'de> Deserialize<'de>>(v: Option<serde_json::Value>) -> Option<T> {
            v.and_then(|v| T::deserialize(v).ok())
        }
        let inner = |v: Option<serde_json::Value>| {
            read::<Usage>(v.and_then(|mut v| v.get_mut("usage").map(serde_json::Value::take)))
        };
        if let Some(g) = read::<GeminiUsage>(self.usage_metadata)
            && (g.prompt_token_count.is_some() || g.candidates_token_count.is_some())
        {
            return Some(TokenUsage::new(
                g.prompt_token_count.unwrap_or(0),
                Some(g.candidates_token_count.unwrap_or(0)),
            ));
        }
        let usage = read::<Usage>(self.usage)
            .or_else(|| inner(self.message))
            .or_else(|| inner(self.response))?;
        let input = usage.prompt_tokens.or(usage.input_tokens);
        let output = usage.completion_tokens.or(usage.output_tokens);
        if input.is_none() && output.is_none() {
            return None;
        }
        let input = input
            .unwrap_or(0)
            .saturating_add(usage.cache_creation_input_tokens.unwrap_or(0));
        Some(TokenUsage::new(input, Some(output.unwrap_or(0))))
    }
}

/// Finds the [`TokenUsage`] in a model API's answer as its body goes by, a chunk at a time,
/// without keeping the body from its reader: a JSON body (`application/json`) is kept up to
/// [`USAGE_BODY_LIMIT`] and read at its end; a stream of server-sent events
/// (`text/event-stream`, OpenAI's and Anthropic's `stream: true`) is read an event at a time,
/// and its usage is the larger of each count its events report (OpenAI's last chunk with
/// `stream_options.include_usage`; Anthropic's `message_start` and `message_delta`).
///
/// ```
/// use http::HeaderMap;
/// use pacer_core::{TokenUsage, UsageReader};
///
/// let mut headers = HeaderMap::new();
/// headers.insert("content-type", "text/event-stream".parse().unwrap());
/// let mut reader = UsageReader::new(&headers).expect("a stream it reads");
/// reader.feed(b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":");
/// reader.feed(b"{\"input_tokens\":25,\"output_tokens\":1}}}\n\n");
/// reader.feed(b"data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n");
/// assert_eq!(reader.finish(), Some(TokenUsage::new(25, Some(15))));
/// ```
#[derive(Debug)]
pub struct UsageReader {
    stream: bool,
    /// The JSON body so far, or the stream's unfinished line.
    buffer: Vec<u8>,
    /// The JSON body went past the limit: its usage is not known.
    over: bool,
    /// The stream's line in `buffer` went past the limit: skipped to its end.
    skipping: bool,
    seen: Option<TokenUsage>,
}

impl UsageReader {
    /// A reader for an answer with `headers`, when its content type is JSON or a stream of
    /// events; `None` for any other (its usage is not read).
    #[must_use]
    pub fn new(headers: &HeaderMap) -> Option<UsageReader> {
        let content_type = headers.get(http::header::CONTENT_TYPE)?.to_str().ok()?;
        let essence = content_type.split(';').next()?.trim();
        let stream = essence.eq_ignore_ascii_case("text/event-stream");
        let json = essence.eq_ignore_ascii_case("application/json")
            || essence.to_ascii_lowercase().ends_with("+json");
        (stream || json).then(|| UsageReader {
            stream,
            buffer: Vec::new(),
            over: false,
            skipping: false,
            seen: None,
        })
    }

    /// A reader that reads nothing and finds no usage.
    #[must_use]
    pub(crate) fn none() -> UsageReader {
        UsageReader {
            stream: false,
            buffer: Vec::new(),
            over: true,
            skipping: false,
            seen: None,
        }
    }

    /// Reads the next chunk of the body.
    pub fn feed(&mut self, mut chunk: &[u8]) {
        if !self.stream {
            if !self.over && self.buffer.len() + chunk.len() <= USAGE_BODY_LIMIT {
                self.buffer.extend_from_slice(chunk);
            } else {
                self.over = true;
                self.buffer = Vec::new();
            }
            return;
        }
        while let Some(end) = chunk.iter().position(|b| *b == b'\n') {
            if !self.skipping {
                self.buffer.extend_from_slice(&chunk[..end]);
                let line = std::mem::take(&mut self.buffer);
                self.line(&line);
                self.buffer = line;
            }
            self.buffer.clear();
            self.skipping = false;
            chunk = &chunk[end + 1..];
        }
        if self.skipping {
            return;
        }
        if self.buffer.len() + chunk.len() > USAGE_BODY_LIMIT {
            self.skipping = true;
            self.buffer = Vec::new();
        } else {
            self.buffer.extend_from_slice(chunk);
        }
    }

    /// One line of the stream: a `data:` line that mentions a usage is read as JSON.
    fn line(&mut self, line: &[u8]) {
        let Some(data) = line.strip_prefix(b"data:") else {
            return;
        };
        if !data.windows(5).any(|w| w == b"usage") {
            return;
        }
        if let Some(usage) = TokenUsage::from_body(data.trim_ascii()) {
            self.seen = Some(self.seen.map_or(usage, |s| s.most(usage)));
        }
    }

    /// The body ended: the usage it reported, if any.
    #[must_use]
    pub fn finish(mut self) -> Option<TokenUsage> {
        if self.stream {
            if !self.skipping {
                let line = std::mem::take(&mut self.buffer);
                self.line(&line);
            }
            return self.seen;
        }
        if self.over {
            return None;
        }
        TokenUsage::from_body(&self.buffer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(content_type: &str) -> UsageReader {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", content_type.parse().unwrap());
        UsageReader::new(&headers).expect("a reader")
    }

    #[test]
    fn each_api_s_usage_is_read() {
        let cases: [(&[u8], Option<TokenUsage>); 6] = [
            (
                br#"{"id":"resp_1","usage":{"input_tokens":36,"output_tokens":87,"total_tokens":123}}"#,
                Some(TokenUsage::new(36, Some(87))),
            ),
            (
                br#"{"type":"response.completed","response":{"usage":{"input_tokens":5,"output_tokens":9}}}"#,
                Some(TokenUsage::new(5, Some(9))),
            ),
            (
                br#"{"candidates":[],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":11,"totalTokenCount":15}}"#,
                Some(TokenUsage::new(4, Some(11))),
            ),
            (br#"{"usage":null}"#, None),
            (br#"{"usage":{"total_tokens":3}}"#, None),
            (br#"[1,2]"#, None),
        ];
        for (body, want) in cases {
            assert_eq!(
                TokenUsage::from_body(body),
                want,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn a_json_body_is_read_whole_however_it_is_cut() {
        let body = br#"{"choices":[{"message":{"content":"usage"}}],"usage":{"prompt_tokens":12,"completion_tokens":30}}"#;
        for cut in 0..body.len() {
            let mut r = reader("application/json; charset=utf-8");
            r.feed(&body[..cut]);
            r.feed(&body[cut..]);
            assert_eq!(
                r.finish(),
                Some(TokenUsage::new(12, Some(30))),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn an_openai_stream_s_last_chunk_gives_its_usage_however_it_is_cut() {
        let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}],\"usage\":null}\n\n\
            data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":2}}\n\n\
            data: [DONE]\n\n";
        for cut in 0..body.len() {
            let mut r = reader("text/event-stream");
            r.feed(&body[..cut]);
            r.feed(&body[cut..]);
            assert_eq!(
                r.finish(),
                Some(TokenUsage::new(8, Some(2))),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_stream_without_a_usage_or_a_body_of_another_type_gives_none() {
        let mut r = reader("text/event-stream");
        r.feed(b"data: {\"choices\":[]}\n\ndata: [DONE]\n\n");
        assert_eq!(r.finish(), None);
        let mut headers = HeaderMap::new();
        headers.insert("content-type", "text/plain".parse().unwrap());
        assert!(UsageReader::new(&headers).is_none());
        assert!(UsageReader::new(&HeaderMap::new()).is_none());
    }

    #[test]
    fn past_the_limit_a_body_is_let_through_unread() {
        let mut r = reader("application/json");
        r.feed(&vec![b' '; USAGE_BODY_LIMIT]);
        r.feed(br#"{"usage":{"prompt_tokens":1,"completion_tokens":1}}"#);
        assert_eq!(r.finish(), None);
        // A stream skips the long line alone.
        let mut r = reader("text/event-stream");
        r.feed(b"data: ");
        r.feed(&vec![b'x'; USAGE_BODY_LIMIT + 1]);
        r.feed(b"usage\n\ndata: {\"usage\":{\"input_tokens\":3,\"output_tokens\":4}}\n");
        assert_eq!(r.finish(), Some(TokenUsage::new(3, Some(4))));
        assert!(r_buffer_is_small());
    }

    fn r_buffer_is_small() -> bool {
        let mut r = reader("text/event-stream");
        r.feed(&vec![b'x'; USAGE_BODY_LIMIT + 10]);
        r.buffer.capacity() == 0 && r.skipping
    }
}
