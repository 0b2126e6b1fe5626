//! The request loop: token, rate limit, microversion headers, one HTTP exchange, metrics,
//! re-authentication once on 401, retries for idempotent requests, pagination.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderValue, Method, header};
use secrecy::ExposeSecret;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Session, VersionRange, catalog, transport_error};
use crate::error::{Error, ErrorKind, Result, classify};
use crate::request::{ApiVersion, Request, Service};
use crate::retry::RetryPolicy;

/// A successful reply.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status (< 400).
    pub status: u16,
    /// Body bytes (may be empty).
    pub body: Bytes,
}

impl Reply {
    /// Decode the body as JSON.
    pub fn json<T: DeserializeOwned>(&self, label: &str) -> Result<T> {
        serde_json::from_slice(&self.body).map_err(|e| Error::Decode {
            request: label.to_owned(),
            message: e.to_string(),
        })
    }
}

/// One HTTP exchange's inputs, independent of retries.
struct Exchange<'a> {
    method: Method,
    url: url::Url,
    body: Option<Vec<u8>>,
    headers: Vec<(&'static str, String)>,
    label: &'a str,
    idempotent: bool,
}

fn retry_after(headers: &http::HeaderMap) -> Option<Duration> {
    let v = headers.get(header::RETRY_AFTER)?.to_str().ok()?;
    v.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// Whether the endpoint's announced range `range` of service `name` holds microversion `v`:
/// a call needing more than the maximum, or less than the minimum (a cloud that has retired
/// old microversions), is refused before it is sent.
fn supported(name: &str, v: ApiVersion, range: VersionRange) -> Result<()> {
    if v > range.max || v < range.min {
        return Err(Error::MicroversionUnsupported {
            service: name.to_owned(),
            min: range.min.to_string(),
            max: range.max.to_string(),
            needed: v.to_string(),
        });
    }
    Ok(())
}

impl Session {
    /// Send a request; errors are classified, see [`ErrorKind`].
    pub async fn send(&self, req: &Request) -> Result<Reply> {
        let endpoint = self.endpoint(req.service).await?;
        let mut headers = Vec::new();
        if let (Some(v), Some(name)) = (req.microversion, req.service.microversion_name()) {
            supported(name, v, self.versions(req.service).await?)?;
            headers.push(("OpenStack-API-Version", format!("{name} {v}")));
            if req.service == Service::Compute {
                headers.push(("X-OpenStack-Nova-API-Version", v.to_string()));
            }
        }
        let mut url = endpoint.join(&req.path).map_err(|e| Error::Decode {
            request: req.label.to_owned(),
            message: format!("bad path: {e}"),
        })?;
        if !req.query.is_empty() {
            url.query_pairs_mut().extend_pairs(req.query.iter());
        }
        let body = match &req.body {
            Some(b) => Some(serde_json::to_vec(b).map_err(|e| Error::Decode {
                request: req.label.to_owned(),
                message: e.to_string(),
            })?),
            None => None,
        };
        self.exchange(Exchange {
            method: req.method.clone(),
            url,
            body,
            headers,
            label: req.label,
            idempotent: req.is_idempotent(),
        })
        .await
    }

    /// Send and decode the JSON reply.
    pub async fn send_json<T: DeserializeOwned>(&self, req: &Request) -> Result<T> {
        self.send(req).await?.json(req.label)
    }

    /// Send and decode the object under `key` of the JSON reply (`{"server": {...}}`).
    pub async fn fetch<T: DeserializeOwned>(&self, req: &Request, key: &str) -> Result<T> {
        let mut doc: Value = self.send_json(req).await?;
        let v = doc
            .get_mut(key)
            .map(Value::take)
            .ok_or_else(|| Error::Decode {
                request: req.label.to_owned(),
                message: format!("no {key:?} in the reply"),
            })?;
        serde_json::from_value(v).map_err(|e| Error::Decode {
            request: req.label.to_owned(),
            message: e.to_string(),
        })
    }

    /// GET a list under `key`, following `<key>_links` / `next` pagination via `marker`.
    pub async fn list<T: DeserializeOwned>(&self, req: &Request, key: &str) -> Result<Vec<T>> {
        let mut req = req.clone();
        let mut out = Vec::new();
        for _ in 0..10_000 {
            let doc: Value = self.send_json(&req).await?;
            let items = doc.get(key).cloned().unwrap_or(Value::Array(vec![]));
            let page: Vec<T> = serde_json::from_value(items).map_err(|e| Error::Decode {
                request: req.label.to_owned(),
                message: e.to_string(),
            })?;
            let empty = page.is_empty();
            out.extend(page);
            match next_marker(&doc, key) {
                Some(marker) if !empty => {
                    req.query.retain(|(k, _)| k != "marker");
                    req.query.push(("marker".into(), marker));
                }
                _ => break,
            }
        }
        Ok(out)
    }

    /// Version discovery for `service`: one GET, counted as `<service>_version_get`.
    pub(super) async fn discover(&self, service: Service) -> Result<VersionRange> {
        let endpoint = self.endpoint(service).await?;
        let url = catalog::discovery_url(&endpoint, service);
        let label = match service {
            Service::Compute => "compute_version_get",
            Service::BlockStorage => "volume_version_get",
            Service::LoadBalancer => "loadbalancer_version_get",
            Service::Network => "network_version_get",
            Service::Image => "image_version_get",
            Service::Identity => "identity_version_get",
        };
        let reply = self
            .exchange(Exchange {
                method: Method::GET,
                url,
                body: None,
                headers: vec![],
                label,
                idempotent: true,
            })
            .await?;
        let doc: Value = reply.json(label)?;
        let (min, max) = catalog::parse_versions(&doc).ok_or_else(|| Error::Decode {
            request: label.to_owned(),
            message: "no version in the version document".into(),
        })?;
        tracing::debug!(service = service.short(), %min, %max, "discovered API versions");
        Ok(VersionRange { min, max })
    }

    async fn exchange(&self, x: Exchange<'_>) -> Result<Reply> {
        let policy = &self.inner.retry;
        let mut attempt = 0;
        let mut reauthed = false;
        loop {
            attempt += 1;
            let (state, token) = self.token().await?;
            self.inner.limiter.acquire().await;
            let mut token_value = HeaderValue::from_str(token.expose_secret()).map_err(|_| {
                Error::Credentials("Keystone returned a token that is not a valid header".into())
            })?;
            token_value.set_sensitive(true);
            let mut rb = self
                .inner
                .http
                .request(x.method.clone(), x.url.clone())
                .header(header::ACCEPT, "application/json")
                .header("X-Auth-Token", token_value);
            for (k, v) in &x.headers {
                rb = rb.header(*k, v.as_str());
            }
            if let Some(b) = &x.body {
                rb = rb
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(b.clone());
            }
            let started = Instant::now();
            let sent = rb.send().await;
            let rsp = match sent {
                Ok(r) => r,
                Err(e) => {
                    self.inner
                        .metrics
                        .observe(x.label, started.elapsed().as_secs_f64(), true);
                    let err = transport_error(x.label, &e, x.idempotent);
                    if attempt < policy.max_attempts && err.kind() == Some(&ErrorKind::Transient) {
                        tokio::time::sleep(policy.backoff(attempt)).await;
                        continue;
                    }
                    return Err(err);
                }
            };
            let status = rsp.status().as_u16();
            let after = retry_after(rsp.headers());
            let body = rsp.bytes().await;
            self.inner.metrics.observe(
                x.label,
                started.elapsed().as_secs_f64(),
                status >= 400 || body.is_err(),
            );
            tracing::debug!(
                request = x.label,
                method = %x.method,
                path = x.url.path(),
                status,
                ms = started.elapsed().as_millis() as u64,
                "OpenStack request"
            );
            let body = body.map_err(|e| transport_error(x.label, &e, x.idempotent))?;
            if status < 400 {
                return Ok(Reply { status, body });
            }
            if status == 401 && !reauthed {
                // The token was revoked or expired early: one new token, then repeat. Safe even
                // for POST, a 401 means the request was not executed.
                reauthed = true;
                attempt -= 1;
                tracing::info!(
                    request = x.label,
                    "401 from OpenStack, re-authenticating once"
                );
                self.reauthenticate(Some(state.generation)).await?;
                continue;
            }
            let (kind, message) = classify(status, &body, after, x.idempotent);
            let wait = retry_wait(&kind, attempt, policy);
            if let Some(wait) = wait
                && attempt < policy.max_attempts
            {
                tracing::debug!(
                    request = x.label,
                    status,
                    ?wait,
                    "retrying OpenStack request"
                );
                tokio::time::sleep(wait).await;
                continue;
            }
            return Err(Error::Api {
                kind,
                request: x.label.to_owned(),
                status,
                message,
            });
        }
    }
}

/// How long to wait before repeating a request that failed with `kind` on attempt `attempt`;
/// None when it must not be repeated in-line. `Transient` is only ever produced for requests
/// that may be repeated (see [`classify`]); a 429 means "not executed", so even a POST may be
/// repeated. A Retry-After above the policy's ceiling goes back to the caller (requeue) instead
/// of holding a worker.
fn retry_wait(kind: &ErrorKind, attempt: u32, policy: &RetryPolicy) -> Option<Duration> {
    match kind {
        ErrorKind::Transient => Some(policy.backoff(attempt)),
        ErrorKind::RateLimited { retry_after } => match retry_after {
            Some(d) if *d <= policy.max_retry_after => Some(*d),
            Some(_) => None,
            None => Some(policy.backoff(attempt)),
        },
        _ => None,
    }
}

/// The `marker` of the next page: from `<key>_links` (Nova, Neutron, Octavia, Cinder) or the
/// top-level `next` link (Glance).
fn next_marker(doc: &Value, key: &str) -> Option<String> {
    let href = doc
        .get(format!("{key}_links"))
        .and_then(Value::as_array)
        .and_then(|links| {
            links
                .iter()
                .find(|l| l.get("rel").and_then(Value::as_str) == Some("next"))
        })
        .and_then(|l| l.get("href"))
        .or_else(|| doc.get("next"))
        .and_then(Value::as_str)?;
    let parsed = url::Url::parse(href)
        .or_else(|_| url::Url::parse("http://x/").and_then(|b| b.join(href)))
        .ok()?;
    parsed
        .query_pairs()
        .find(|(k, _)| k == "marker")
        .map(|(_, v)| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn retry_after_is_honoured() {
        let mut h = http::HeaderMap::new();
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(
            header::RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), None);
        let p = RetryPolicy::default();
        let rl = |s| ErrorKind::RateLimited {
            retry_after: Some(Duration::from_secs(s)),
        };
        assert_eq!(retry_wait(&rl(7), 1, &p), Some(Duration::from_secs(7)));
        assert_eq!(
            retry_wait(&rl(600), 1, &p),
            None,
            "long waits go back to the caller"
        );
        let no_hint = retry_wait(&ErrorKind::RateLimited { retry_after: None }, 2, &p).unwrap();
        assert!(no_hint >= p.base && no_hint <= p.base * 2);
        assert!(retry_wait(&ErrorKind::Transient, 1, &p).is_some());
        for k in [
            ErrorKind::OutcomeUnknown,
            ErrorKind::Conflict,
            ErrorKind::NotFound,
            ErrorKind::BadRequest,
        ] {
            assert_eq!(retry_wait(&k, 1, &p), None);
        }
    }

    #[test]
    fn a_microversion_outside_the_announced_range_is_refused() {
        let range = VersionRange {
            min: ApiVersion(2, 1),
            max: ApiVersion(2, 90),
        };
        assert!(supported("compute", ApiVersion(2, 1), range).is_ok(), "min");
        assert!(
            supported("compute", ApiVersion(2, 90), range).is_ok(),
            "max"
        );
        let high = supported("compute", ApiVersion(2, 95), range).unwrap_err();
        assert_eq!(
            high.to_string(),
            "compute supports microversions 2.1 to 2.90, call needs 2.95"
        );
        let raised = VersionRange {
            min: ApiVersion(2, 53),
            ..range
        };
        let low = supported("compute", ApiVersion(2, 1), raised).unwrap_err();
        assert!(
            matches!(low, Error::MicroversionUnsupported { ref needed, .. } if needed == "2.1"),
            "{low}"
        );
        // A malformed version is no version at all.
        assert_eq!(ApiVersion::parse("2.1.53"), None);
    }

    #[test]
    fn markers() {
        let nova = json!({"servers": [], "servers_links": [{"rel": "next", "href": "http://h/compute/v2.1/servers/detail?limit=1&marker=abc"}]});
        assert_eq!(next_marker(&nova, "servers").as_deref(), Some("abc"));
        let glance = json!({"images": [], "next": "/v2/images?marker=img1&limit=2"});
        assert_eq!(next_marker(&glance, "images").as_deref(), Some("img1"));
        let last = json!({"ports": [], "ports_links": [{"rel": "previous", "href": "http://h/?marker=z"}]});
        assert_eq!(next_marker(&last, "ports"), None);
    }
}
