//! HTTP proxies for the OpenStack APIs, with the rules of Go's `http.ProxyFromEnvironment`
//! (`golang.org/x/net/http/httpproxy`), which upstream CAPO's client uses.
//!
//! This module reads no environment variable: the manager reads them once at start and passes
//! the result ([`ProxySettings::from_lookup`]) in [`crate::tls::HttpOptions`]. The rules, as Go
//! applies them:
//!
//! - Variables: `HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`; for each, the upper-case name is used when
//!   it is set and non-empty, else the lower-case one (`http_proxy`, ...). An empty value is unset.
//!   `ALL_PROXY` is not used (Go does not use it).
//! - `https://` requests use the HTTPS proxy, `http://` requests the HTTP proxy; there is no
//!   fallback from one to the other.
//! - A proxy value without a scheme (`proxy.corp:3128`) means `http://proxy.corp:3128`. User and
//!   password in the proxy URL are sent as `Proxy-Authorization: Basic`.
//! - Requests to `localhost` and to loopback addresses (127.0.0.0/8, ::1, IPv4-mapped 127/8)
//!   never use a proxy.
//! - `NO_PROXY` is a comma-separated list, entries trimmed and lower-cased: `*` (no proxy at all;
//!   the rest of the list is ignored); a CIDR (`10.0.0.0/8`, `fd00::/8`); an IP, optionally with a
//!   port (`10.1.2.3`, `10.1.2.3:5000`, `[fd00::1]:5000`); a domain, optionally with a port:
//!   `example.com` matches `example.com` and its subdomains, `.example.com` and `*.example.com`
//!   only its subdomains. IP entries only match requests to IP addresses, domain entries only
//!   requests to names (no resolution). An entry with a port matches only that port (the
//!   request's port, 80/443 when the URL has none).
//! - `REQUEST_METHOD` set (a CGI environment, "httpoxy"): Go refuses `HTTP_PROXY` for `http://`
//!   requests and fails them; capo does not use `HTTP_PROXY` then (the requests go direct) and the
//!   manager warns at start.
//!
//! Where capo differs: a proxy value that does not parse, or a scheme other than `http`/`https`
//! (`socks5`, which Go supports), is an error at start (Go ignores an unparsable value silently
//! and would go direct); non-ASCII `NO_PROXY` domain entries are compared as written (Go converts
//! them to punycode first).

use std::net::IpAddr;

use url::{Host, Url};

use crate::error::{Error, Result};

/// Proxy settings for the OpenStack HTTP clients. The default uses no proxy.
#[derive(Clone)]
pub struct ProxySettings {
    http: Option<Url>,
    https: Option<Url>,
    no_proxy: NoProxy,
    loopback_direct: bool,
    http_refused_cgi: bool,
}

impl Default for ProxySettings {
    fn default() -> Self {
        Self {
            http: None,
            https: None,
            no_proxy: NoProxy::default(),
            loopback_direct: true,
            http_refused_cgi: false,
        }
    }
}

impl std::fmt::Debug for ProxySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxySettings")
            .field("http", &self.http_proxy_display())
            .field("https", &self.https_proxy_display())
            .field("no_proxy", &self.no_proxy.raw)
            .field("loopback_direct", &self.loopback_direct)
            .finish()
    }
}

impl ProxySettings {
    /// The settings from environment variables, looked up through `get` (the manager passes
    /// `std::env::var`), with Go's precedence: `HTTP_PROXY` before `http_proxy`, and so on;
    /// `REQUEST_METHOD` set drops the HTTP proxy.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let any = |names: [&str; 2]| {
            names
                .into_iter()
                .find_map(|n| get(n).filter(|v| !v.is_empty()))
        };
        let http = any(["HTTP_PROXY", "http_proxy"]);
        let https = any(["HTTPS_PROXY", "https_proxy"]);
        let no_proxy = any(["NO_PROXY", "no_proxy"]).unwrap_or_default();
        let cgi = get("REQUEST_METHOD").is_some_and(|v| !v.is_empty());
        let http_refused_cgi = cgi && http.is_some();
        let http = if cgi { None } else { http };
        let mut s = Self::new(http.as_deref(), https.as_deref(), &no_proxy)?;
        s.http_refused_cgi = http_refused_cgi;
        Ok(s)
    }

    /// Explicit settings: the proxy for `http://` and for `https://` URLs (values as in the
    /// environment variables) and a `NO_PROXY` list.
    pub fn new(http: Option<&str>, https: Option<&str>, no_proxy: &str) -> Result<Self> {
        Ok(Self {
            http: http.map(|v| parse_proxy("HTTP_PROXY", v)).transpose()?,
            https: https.map(|v| parse_proxy("HTTPS_PROXY", v)).transpose()?,
            no_proxy: NoProxy::parse(no_proxy),
            ..Self::default()
        })
    }

    /// Send requests to `localhost` and loopback addresses through the proxy too. Go never
    /// does, and the manager never calls this: it exists for tests whose only servers listen on
    /// loopback (a test proxy in front of capo-sim); the loopback rule itself is unit-tested.
    #[must_use]
    pub fn proxy_loopback_for_tests(mut self) -> Self {
        self.loopback_direct = false;
        self
    }

    /// True when no request uses a proxy.
    pub fn is_empty(&self) -> bool {
        self.http.is_none() && self.https.is_none()
    }

    /// True when `REQUEST_METHOD` was set and `HTTP_PROXY` was therefore dropped.
    pub fn http_proxy_refused_cgi(&self) -> bool {
        self.http_refused_cgi
    }

    /// The HTTP proxy for logs: scheme, host and port, never user or password.
    pub fn http_proxy_display(&self) -> Option<String> {
        self.http.as_ref().map(redacted)
    }

    /// The HTTPS proxy for logs: scheme, host and port, never user or password.
    pub fn https_proxy_display(&self) -> Option<String> {
        self.https.as_ref().map(redacted)
    }

    /// The `NO_PROXY` list in effect, as given.
    pub fn no_proxy(&self) -> &str {
        &self.no_proxy.raw
    }

    /// The proxy a request to `url` goes through, if any.
    pub fn proxy_for(&self, url: &Url) -> Option<&Url> {
        let proxy = match url.scheme() {
            "https" => self.https.as_ref(),
            "http" => self.http.as_ref(),
            _ => None,
        }?;
        self.use_proxy(url).then_some(proxy)
    }

    /// Go's `useProxy`: false for localhost, loopback and `NO_PROXY` matches.
    fn use_proxy(&self, url: &Url) -> bool {
        let Some(host) = url.host() else {
            return true;
        };
        let port = url
            .port_or_known_default()
            .map(|p| p.to_string())
            .unwrap_or_default();
        let ip = match &host {
            Host::Domain(d) => {
                if self.loopback_direct && *d == "localhost" {
                    return false;
                }
                None
            }
            Host::Ipv4(a) => Some(IpAddr::V4(*a)),
            Host::Ipv6(a) => Some(IpAddr::V6(*a).to_canonical()),
        };
        if self.loopback_direct && ip.is_some_and(|ip| ip.is_loopback()) {
            return false;
        }
        !self.no_proxy.matches(&host, ip, &port)
    }
}

/// Go's `parseProxy`: a value that is not an absolute URL with a host is tried as `http://` +
/// value (here only when it has no `://`). Only `http` and `https` proxies are supported.
fn parse_proxy(var: &str, value: &str) -> Result<Url> {
    let parsed = match Url::parse(value) {
        Ok(u) if u.host_str().is_some_and(|h| !h.is_empty()) => Ok(u),
        // Only a value without a scheme gets one: Go would also turn a broken
        // `http://host:port` into `http://http://host:port` (host `http`).
        first if !value.contains("://") => Url::parse(&format!("http://{value}")).or(first),
        first => first,
    };
    // Never echo the value: it may carry a password.
    let u = parsed.map_err(|e| Error::Proxy(format!("{var}: not a proxy URL ({e})")))?;
    match u.scheme() {
        "http" | "https" => Ok(u),
        other => Err(Error::Proxy(format!(
            "{var}: proxy scheme {other:?} is not supported (http and https are)"
        ))),
    }
}

fn redacted(u: &Url) -> String {
    let host = u.host_str().unwrap_or_default();
    let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
    let creds = if u.username().is_empty() && u.password().is_none() {
        ""
    } else {
        " (with credentials)"
    };
    format!("{}://{host}{port}{creds}", u.scheme())
}

/// A parsed `NO_PROXY` list.
#[derive(Clone, Debug, Default)]
struct NoProxy {
    raw: String,
    all: bool,
    ips: Vec<IpMatch>,
    domains: Vec<DomainMatch>,
}

#[derive(Clone, Debug)]
enum IpMatch {
    Cidr { net: IpAddr, prefix: u8 },
    Ip { ip: IpAddr, port: String },
}

#[derive(Clone, Debug)]
struct DomainMatch {
    /// With a leading dot.
    suffix: String,
    /// Also matches the name without the dot (the entry had no leading dot or `*.`).
    exact_too: bool,
    port: String,
}

impl NoProxy {
    /// Go's `config.init` for the `NO_PROXY` part.
    fn parse(list: &str) -> Self {
        let mut np = NoProxy {
            raw: list.to_owned(),
            ..NoProxy::default()
        };
        for entry in list.split(',') {
            let p = entry.trim().to_lowercase();
            if p.is_empty() {
                continue;
            }
            if p == "*" {
                np.all = true;
                np.ips.clear();
                np.domains.clear();
                return np;
            }
            if let Some((net, prefix)) = parse_cidr(&p) {
                np.ips.push(IpMatch::Cidr { net, prefix });
                continue;
            }
            let (host, port) = match split_host_port(&p) {
                Some((h, port)) => {
                    if h.is_empty() {
                        continue;
                    }
                    let h = h
                        .strip_prefix('[')
                        .and_then(|h| h.strip_suffix(']'))
                        .unwrap_or(h);
                    (h.to_owned(), port.to_owned())
                }
                None => (p.clone(), String::new()),
            };
            if let Ok(ip) = host.parse::<IpAddr>() {
                np.ips.push(IpMatch::Ip {
                    ip: ip.to_canonical(),
                    port,
                });
                continue;
            }
            if host.is_empty() {
                continue;
            }
            let host = host
                .strip_prefix('*')
                .filter(|h| h.starts_with('.'))
                .unwrap_or(&host);
            let (suffix, exact_too) = match host.starts_with('.') {
                true => (host.to_owned(), false),
                false => (format!(".{host}"), true),
            };
            np.domains.push(DomainMatch {
                suffix,
                exact_too,
                port,
            });
        }
        np
    }

    /// True when a request to `host` (`ip` when it is an address) on `port` goes direct.
    fn matches(&self, host: &Host<&str>, ip: Option<IpAddr>, port: &str) -> bool {
        if self.all {
            return true;
        }
        let port_ok = |want: &str| want.is_empty() || want == port;
        match (host, ip) {
            (_, Some(ip)) => self.ips.iter().any(|m| match m {
                IpMatch::Cidr { net, prefix } => cidr_contains(*net, *prefix, ip),
                IpMatch::Ip { ip: want, port: p } => *want == ip && port_ok(p),
            }),
            (Host::Domain(d), None) => {
                let d = d.trim().to_lowercase();
                self.domains.iter().any(|m| {
                    (d.ends_with(&m.suffix) || (m.exact_too && d == m.suffix[1..]))
                        && port_ok(&m.port)
                })
            }
            _ => false,
        }
    }
}

/// Go's `net.ParseCIDR`: `addr/prefix`, prefix in decimal within the address length.
fn parse_cidr(s: &str) -> Option<(IpAddr, u8)> {
    let (addr, prefix) = s.split_once('/')?;
    let ip: IpAddr = addr.parse().ok()?;
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let prefix: u8 = prefix.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (prefix <= max).then_some((ip, prefix))
}

/// `ip` (canonical: an IPv4-mapped address is IPv4) within `net/prefix`. An IPv4 address is never
/// within an IPv6 network and the other way round, as in Go.
fn cidr_contains(net: IpAddr, prefix: u8, ip: IpAddr) -> bool {
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(a)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(n) & mask == u32::from(a) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(a)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(n) & mask == u128::from(a) & mask
        }
        _ => false,
    }
}

/// Go's `net.SplitHostPort`: `host:port` or `[host]:port`; `None` when there is no port or
/// the form is invalid. The host is returned without brackets.
fn split_host_port(s: &str) -> Option<(&str, &str)> {
    let i = s.rfind(':')?;
    let (host, k) = if s.starts_with('[') {
        let end = s.find(']')?;
        if end + 1 != i {
            return None;
        }
        (&s[1..end], end + 1)
    } else {
        let host = &s[..i];
        if host.contains(':') {
            return None;
        }
        (host, 0)
    };
    let j = usize::from(s.starts_with('['));
    if s[j..].contains('[') || s[k..].contains(']') {
        return None;
    }
    Some((host, &s[i + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(no_proxy: &str) -> ProxySettings {
        ProxySettings::new(
            Some("http://hp.example:3128"),
            Some("http://sp.example:3129"),
            no_proxy,
        )
        .unwrap()
    }

    /// The proxy host for `url`, or "" when direct.
    fn via(s: &ProxySettings, url: &str) -> String {
        s.proxy_for(&Url::parse(url).unwrap())
            .map(|p| p.host_str().unwrap().to_owned())
            .unwrap_or_default()
    }

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn scheme_picks_the_proxy_without_fallback() {
        let s = settings("");
        assert_eq!(via(&s, "https://keystone.example:5000/v3"), "sp.example");
        assert_eq!(via(&s, "http://keystone.example:5000/v3"), "hp.example");
        let only_http = ProxySettings::new(Some("hp.example:3128"), None, "").unwrap();
        assert_eq!(via(&only_http, "https://keystone.example/"), "");
        assert_eq!(via(&only_http, "http://keystone.example/"), "hp.example");
        assert!(ProxySettings::default().is_empty());
        assert_eq!(via(&ProxySettings::default(), "https://a.example/"), "");
    }

    #[test]
    fn localhost_and_loopback_never_use_the_proxy() {
        let s = settings("");
        for url in [
            "http://localhost:8080/",
            "https://localhost/",
            "http://127.0.0.1:5000/",
            "https://127.1.2.3/",
            "http://[::1]:5000/",
            "https://[::ffff:127.0.0.1]/",
        ] {
            assert_eq!(via(&s, url), "", "{url}");
        }
        // Only the name `localhost` itself, as in Go.
        assert_eq!(via(&s, "http://foo.localhost/"), "hp.example");
        assert_eq!(via(&s, "http://128.0.0.1/"), "hp.example");
        // The test-only switch.
        let t = settings("").proxy_loopback_for_tests();
        assert_eq!(via(&t, "http://127.0.0.1:5000/"), "hp.example");
        assert_eq!(via(&t, "http://localhost:5000/"), "hp.example");
    }

    #[test]
    fn no_proxy_domains() {
        let s = settings("example.com, .corp.example ,*.lab.example,API.Cloud.Example:5000");
        // `example.com`: the domain and its subdomains.
        assert_eq!(via(&s, "https://example.com/"), "");
        assert_eq!(via(&s, "https://keystone.example.com/"), "");
        assert_eq!(via(&s, "https://notexample.com/"), "sp.example");
        // `.corp.example` and `*.lab.example`: subdomains only.
        assert_eq!(via(&s, "https://corp.example/"), "sp.example");
        assert_eq!(via(&s, "https://a.corp.example/"), "");
        assert_eq!(via(&s, "https://lab.example/"), "sp.example");
        assert_eq!(via(&s, "https://b.lab.example/"), "");
        // With a port: that port only; the default port counts; case-insensitive.
        assert_eq!(via(&s, "https://api.cloud.example:5000/"), "");
        assert_eq!(via(&s, "https://API.CLOUD.EXAMPLE:5000/"), "");
        assert_eq!(via(&s, "https://api.cloud.example/"), "sp.example");
        let p443 = settings("nova.example:443");
        assert_eq!(via(&p443, "https://nova.example/"), "");
        assert_eq!(via(&p443, "http://nova.example/"), "hp.example");
        // Domain entries never match an address.
        let d = settings("0.0.1");
        assert_eq!(via(&d, "https://10.0.0.1/"), "sp.example");
    }

    #[test]
    fn no_proxy_ips_and_cidrs() {
        let s = settings(
            "10.0.0.0/8,192.168.1.5,192.168.1.6:5000,[fd00::1]:8774,fd01::/16,::ffff:172.16.0.1",
        );
        assert_eq!(via(&s, "https://10.20.30.40:5000/"), "");
        assert_eq!(via(&s, "https://11.0.0.1/"), "sp.example");
        assert_eq!(via(&s, "https://192.168.1.5:13000/"), "");
        assert_eq!(via(&s, "https://192.168.1.6:5000/"), "");
        assert_eq!(via(&s, "https://192.168.1.6:5001/"), "sp.example");
        assert_eq!(via(&s, "https://[fd00::1]:8774/"), "");
        assert_eq!(via(&s, "https://[fd00::1]:8775/"), "sp.example");
        assert_eq!(via(&s, "https://[fd01:2::3]/"), "");
        assert_eq!(via(&s, "https://[fd02::3]/"), "sp.example");
        // IPv4-mapped and plain IPv4 are the same address (Go's IP.Equal, IPNet.Contains).
        assert_eq!(via(&s, "https://172.16.0.1/"), "");
        assert_eq!(via(&s, "https://[::ffff:10.1.1.1]/"), "");
        // IP entries never match a name.
        let n = settings("10.0.0.0/8");
        assert_eq!(via(&n, "https://ten.example/"), "sp.example");
        // Edges of the prefix lengths.
        let edges = settings("0.0.0.0/0,203.0.113.7/32");
        assert_eq!(via(&edges, "https://198.51.100.1/"), "");
        assert_eq!(via(&edges, "https://[2001:db8::1]/"), "sp.example");
        let bad = settings("10.0.0.0/33,10.0.0.0/x,/8");
        assert_eq!(via(&bad, "https://10.0.0.1/"), "sp.example");
    }

    #[test]
    fn no_proxy_star_disables_the_proxy() {
        let s = settings("foo.example, * ,bar.example");
        assert_eq!(via(&s, "https://anything.example/"), "");
        assert_eq!(via(&s, "https://10.1.1.1/"), "");
        // `*` inside a name is no wildcard.
        let t = settings("*example");
        assert_eq!(via(&t, "https://a.example/"), "sp.example");
    }

    #[test]
    fn env_precedence_as_go() {
        let s = ProxySettings::from_lookup(env(&[
            ("HTTPS_PROXY", "http://upper:1"),
            ("https_proxy", "http://lower:2"),
            ("HTTP_PROXY", ""),
            ("http_proxy", "lowerhttp:3"),
            ("no_proxy", "skip.example"),
        ]))
        .unwrap();
        assert_eq!(via(&s, "https://a.example/"), "upper");
        // An empty upper-case value falls through to the lower-case one.
        assert_eq!(via(&s, "http://a.example/"), "lowerhttp");
        assert_eq!(s.no_proxy(), "skip.example");
        assert_eq!(via(&s, "https://skip.example/"), "");
        assert!(!s.http_proxy_refused_cgi());
        let none = ProxySettings::from_lookup(env(&[])).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn cgi_drops_http_proxy_only() {
        let s = ProxySettings::from_lookup(env(&[
            ("HTTP_PROXY", "http://hp:1"),
            ("HTTPS_PROXY", "http://sp:2"),
            ("REQUEST_METHOD", "GET"),
        ]))
        .unwrap();
        assert!(s.http_proxy_refused_cgi());
        assert_eq!(via(&s, "http://a.example/"), "");
        assert_eq!(via(&s, "https://a.example/"), "sp");
    }

    #[test]
    fn proxy_values_and_redaction() {
        let s = ProxySettings::new(
            Some("http://user:s3cret@proxy.example:3128"),
            Some("10.0.0.1:8080"),
            "",
        )
        .unwrap();
        let http = s.http_proxy_display().unwrap();
        assert_eq!(http, "http://proxy.example:3128 (with credentials)");
        assert_eq!(
            s.https_proxy_display().as_deref(),
            Some("http://10.0.0.1:8080")
        );
        let dbg = format!("{s:?}");
        assert!(!dbg.contains("s3cret") && !dbg.contains("user"), "{dbg}");
        assert!(ProxySettings::new(Some("https://proxy.example"), None, "").is_ok());
        let socks = ProxySettings::new(None, Some("socks5://u:pw@proxy.example:1080"), "");
        let e = socks.unwrap_err().to_string();
        assert!(e.contains("HTTPS_PROXY") && e.contains("socks5"), "{e}");
        assert!(!e.contains("pw@"), "{e}");
        let bad = ProxySettings::new(Some("http://[::1"), None, "").unwrap_err();
        assert!(bad.to_string().contains("HTTP_PROXY"), "{bad}");
    }

    #[test]
    fn split_host_port_as_go() {
        assert_eq!(split_host_port("a.example:80"), Some(("a.example", "80")));
        assert_eq!(split_host_port("[fd00::1]:80"), Some(("fd00::1", "80")));
        assert_eq!(split_host_port("a.example:"), Some(("a.example", "")));
        assert_eq!(split_host_port("a.example"), None);
        assert_eq!(split_host_port("fd00::1"), None);
        assert_eq!(split_host_port("[fd00::1]"), None);
    }
}
