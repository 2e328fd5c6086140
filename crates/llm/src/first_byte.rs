//! How long to wait for a model to begin its answer. Pure policy.
//!
//! Until the first event that yields part of the answer (text, reasoning, a
//! tool call), the server is reading the prompt. An official API does that in seconds; a small model on a laptop's
//! CPU takes a minute or more for a few thousand tokens and sends nothing
//! meanwhile. So unless the person set `first_byte_timeout_secs`, the wait
//! adapts:
//!
//! - a server on this machine or its network (loopback, private, link-local
//!   and unique-local addresses, `localhost`, `*.local`): as long as it keeps
//!   the connection open, up to [`CEILING`] (or [`SLOWEST_READ`] per input
//!   token, if longer). A server that dies closes the connection at once; a
//!   host that vanishes fails the TCP keep-alive probes;
//! - any other server: [`REMOTE_BASE`] plus [`REMOTE_PER_1K`] per thousand
//!   input tokens; a keep-alive (an SSE comment, an Anthropic `ping`) shows
//!   the server is alive and extends the wait to the idle limit after it, up
//!   to the same ceiling, so an endless keep-alive stream still ends. Events
//!   that yield nothing yet (`message_start`, `response.created`) count as
//!   keep-alives.
//!
//! A set `first_byte_timeout_secs` is exact: that long from the request,
//! keep-alives or not.

use std::time::Duration;

/// tern's default wait for a remote server with an empty prompt.
pub const REMOTE_BASE: Duration = Duration::from_secs(120);
/// Added per thousand input tokens for a remote server.
pub const REMOTE_PER_1K: Duration = Duration::from_secs(1);
/// The longest default wait, local server or keep-alives.
pub const CEILING: Duration = Duration::from_secs(30 * 60);
/// Time per input token of the slowest prefill waited for (10 tokens a
/// second): a prompt that would take longer raises the ceiling.
pub const SLOWEST_READ: Duration = Duration::from_millis(100);
/// The most any default wait grows to, however long the prompt: a hung
/// server that keeps its socket open must not hold a run for hours.
pub const MOST: Duration = Duration::from_secs(2 * 60 * 60);

/// How the first-byte limit is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstByte {
    /// Set by the person: exactly this long from the request.
    Fixed(Duration),
    /// tern's default, adapting to the server and the prompt; `remote_base`
    /// is the wait for a remote server with an empty prompt
    /// ([`REMOTE_BASE`]).
    Adaptive {
        /// See [`REMOTE_BASE`].
        remote_base: Duration,
    },
}

impl Default for FirstByte {
    fn default() -> Self {
        Self::Adaptive { remote_base: REMOTE_BASE }
    }
}

/// Where a model server is, as its base URL names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerPlace {
    /// This machine or its network.
    Local,
    /// Anywhere else.
    Remote,
}

impl ServerPlace {
    /// Judge a base URL by its host: an address on this machine or its
    /// network, `localhost` (and its subdomains) or an mDNS `*.local` name
    /// is local. A name is not resolved.
    pub fn of(base_url: &str) -> Self {
        let Ok(url) = reqwest::Url::parse(base_url) else { return Self::Remote };
        let Some(host) = url.host_str() else { return Self::Remote };
        let host = host.trim_matches(['[', ']']).trim_end_matches('.').to_ascii_lowercase();
        let local = match host.parse::<std::net::IpAddr>() {
            Ok(ip) => tern_protocol::hosts::internal_address(ip).is_some(),
            Err(_) => tern_protocol::hosts::is_internal_host(&host) || host.ends_with(".local"),
        };
        if local { Self::Local } else { Self::Remote }
    }
}

/// The wait for one request's first content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirstByteWait {
    /// With nothing from the server but its open connection.
    pub silent: Duration,
    /// Whether a keep-alive extends the wait to the idle limit after it.
    pub keepalives_extend: bool,
    /// The most, keep-alives or not.
    pub ceiling: Duration,
}

impl FirstByteWait {
    /// The wait for a prompt of about `input_tokens` sent to a server at `place`.
    pub fn new(rule: FirstByte, place: ServerPlace, input_tokens: u64) -> Self {
        let remote_base = match rule {
            FirstByte::Fixed(d) => return Self { silent: d, keepalives_extend: false, ceiling: d },
            FirstByte::Adaptive { remote_base } => remote_base,
        };
        let tokens = u32::try_from(input_tokens).unwrap_or(u32::MAX);
        let ceiling = CEILING.max(SLOWEST_READ.saturating_mul(tokens)).min(MOST);
        match place {
            ServerPlace::Local => Self { silent: ceiling, keepalives_extend: false, ceiling },
            ServerPlace::Remote => Self {
                silent: (remote_base + REMOTE_PER_1K.saturating_mul(tokens / 1000)).min(ceiling),
                keepalives_extend: true,
                ceiling,
            },
        }
    }

    /// How long after the request the wait ends, given the last keep-alive
    /// (as time after the request) and the idle limit.
    pub fn limit(&self, last_keepalive: Option<Duration>, idle: Duration) -> Duration {
        match last_keepalive {
            Some(at) if self.keepalives_extend => self.silent.max(at + idle).min(self.ceiling),
            _ => self.silent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn servers_on_this_machine_or_its_network_are_local() {
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://127.8.0.1/v1",
            "http://[::1]:11434/v1",
            "http://localhost:11434/v1",
            "http://LOCALHOST./v1",
            "http://api.localhost/v1",
            "http://10.1.2.3/v1",
            "http://172.16.0.9/v1",
            "http://172.31.255.1/v1",
            "http://192.168.1.20:8000/v1",
            "http://[fd00::1]/v1",
            "http://gpu-box.local:8080/v1",
            "http://169.254.3.4/v1",
        ] {
            assert_eq!(ServerPlace::of(url), ServerPlace::Local, "{url}");
        }
        for url in [
            "https://api.anthropic.com",
            "https://api.openai.com/v1",
            "https://openrouter.ai/api/v1",
            "http://172.32.0.1/v1",
            "http://8.8.8.8/v1",
            "https://local.example.com/v1",
            "not a url",
        ] {
            assert_eq!(ServerPlace::of(url), ServerPlace::Remote, "{url}");
        }
    }

    #[test]
    fn a_set_limit_is_exact() {
        for place in [ServerPlace::Local, ServerPlace::Remote] {
            let w = FirstByteWait::new(FirstByte::Fixed(S(7)), place, 500_000);
            assert_eq!(w.limit(None, S(180)), S(7));
            assert_eq!(w.limit(Some(S(6)), S(180)), S(7), "keep-alives do not extend a set limit");
        }
    }

    #[test]
    fn a_local_server_is_waited_for_while_the_connection_is_open() {
        let w = FirstByteWait::new(FirstByte::default(), ServerPlace::Local, 4_200);
        assert_eq!(w.limit(None, S(180)), CEILING);
        // A prompt slower than the ceiling at 10 tokens a second raises it.
        let w = FirstByteWait::new(FirstByte::default(), ServerPlace::Local, 40_000);
        assert_eq!(w.limit(None, S(180)), S(4_000));
        // A 200k-token history does not make it hours.
        let w = FirstByteWait::new(FirstByte::default(), ServerPlace::Local, 200_000);
        assert_eq!(w.limit(None, S(180)), MOST);
    }

    #[test]
    fn a_remote_wait_grows_with_the_prompt_and_with_keepalives_to_the_ceiling() {
        let w = FirstByteWait::new(FirstByte::default(), ServerPlace::Remote, 4_200);
        assert_eq!(w.limit(None, S(180)), S(124));
        let w = FirstByteWait::new(FirstByte::default(), ServerPlace::Remote, 200_000);
        assert_eq!(w.limit(None, S(180)), S(320));
        assert_eq!(w.limit(Some(S(10)), S(180)), S(320), "an early keep-alive does not shorten it");
        assert_eq!(w.limit(Some(S(300)), S(180)), S(480), "a keep-alive extends it by the idle limit");
        assert_eq!(w.limit(Some(S(19_900)), S(180)), MOST, "never past the ceiling, at most 2 hours");
        let w = FirstByteWait::new(FirstByte::default(), ServerPlace::Remote, 4_200);
        assert_eq!(w.limit(Some(S(1_790)), S(180)), CEILING, "never past the ceiling");
    }
}
