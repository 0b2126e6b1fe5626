//! The control API (`/_sim/...`, no auth) and its typed in-process twin [`Control`]: reset, seed,
//! latency, transition delays, fault injection, reclaim of soft-deleted servers, request log,
//! counters and per-project state dumps.
//! Also the middleware that applies latency and faults and records every request.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{ApiError, Svc};
use crate::http::{AppState, Query, Shared};
use crate::seed::Seed;
use crate::world::Delays;

/// Most recent requests kept in the log.
const LOG_CAPACITY: usize = 20_000;

/// One fault-injection rule.
///
/// `Default` gives an inert rule (status 0, empty regex) that exists so literals can fill the
/// fields they do not care about with `..Default::default()` and survive new optional fields.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FaultSpec {
    /// HTTP method to match (any when absent).
    #[serde(default)]
    pub method: Option<String>,
    /// Regex matched (searched) against the request path.
    pub path_regex: String,
    /// Status code of the injected reply.
    pub status: u16,
    /// Reply body (the service's error shape when absent).
    #[serde(default)]
    pub body: Option<Value>,
    /// Fire this many times, then disappear.
    #[serde(default)]
    pub count: Option<u32>,
    /// Fire with this probability (0..1) on every match (when `count` is absent).
    #[serde(default)]
    pub rate: Option<f64>,
    /// Perform the action, then replace the reply (models a lost reply).
    #[serde(default)]
    pub after_action: bool,
    /// Extra reply headers (e.g. `Retry-After`), set on the injected reply; they replace a
    /// header of the same name. Names and values are validated when the rule is added.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

/// One logged request.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LogEntry {
    /// HTTP method.
    pub method: String,
    /// Path (no query).
    pub path: String,
    /// Reply status.
    pub status: u16,
    /// Service name.
    pub service: String,
    /// Whether the reply was an injected fault.
    pub injected: bool,
}

/// Runtime knobs and observations (separate from the world so a reset of resources keeps the log).
#[derive(Debug, Default)]
pub struct Runtime {
    /// Added latency per service name, in ms.
    pub latency: HashMap<String, u64>,
    /// Fault rules with their compiled regexes.
    pub faults: Vec<(FaultSpec, regex::Regex)>,
    /// Request log (most recent last).
    pub log: VecDeque<LogEntry>,
    /// Counters keyed `service METHOD /route/{id}`.
    pub counters: BTreeMap<String, u64>,
}

/// Route template of a path: id-like segments become `{id}`.
pub fn route_template(path: &str) -> String {
    let is_id = |s: &str| {
        (s.len() == 36 && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-'))
            || (s.len() == 32 && s.chars().all(|c| c.is_ascii_hexdigit()))
            || (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit()))
    };
    path.split('/')
        .map(|s| if is_id(s) { "{id}" } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

impl Runtime {
    /// The first fault rule that fires for a request, consuming one shot of it.
    fn take_fault(&mut self, method: &str, path: &str) -> Option<FaultSpec> {
        let idx = self.faults.iter().position(|(f, re)| {
            f.method
                .as_deref()
                .is_none_or(|m| m.eq_ignore_ascii_case(method))
                && re.is_match(path)
                && (f.count.is_some() || f.rate.is_none_or(|r| rand::random::<f64>() < r))
        })?;
        let spec = self.faults[idx].0.clone();
        if let Some(n) = self.faults[idx].0.count.as_mut() {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.faults.remove(idx);
            }
        }
        Some(spec)
    }

    fn record(&mut self, svc: Svc, method: &str, path: &str, status: u16, injected: bool) {
        if self.log.len() >= LOG_CAPACITY {
            self.log.pop_front();
        }
        let entry = LogEntry {
            method: method.to_string(),
            path: path.to_string(),
            status,
            service: svc.name().to_string(),
            injected,
        };
        self.log.push_back(entry);
        *self
            .counters
            .entry(format!(
                "{} {} {}",
                svc.name(),
                method,
                route_template(path)
            ))
            .or_default() += 1;
    }
}

/// A fault's headers as typed pairs; the error names the first invalid name or value.
fn fault_headers(f: &FaultSpec) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    f.headers
        .iter()
        .map(|(k, v)| {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| format!("fault header name {k:?}: {e}"))?;
            let value =
                HeaderValue::from_str(v).map_err(|e| format!("fault header {k:?} value: {e}"))?;
            Ok((name, value))
        })
        .collect()
}

fn fault_reply(svc: Svc, f: &FaultSpec) -> Response {
    let status = StatusCode::from_u16(f.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = match &f.body {
        Some(Value::String(s)) => (status, s.clone()).into_response(),
        Some(v) => (status, axum::Json(v.clone())).into_response(),
        None => ApiError::new(svc, status, "SimulatedFault", "Injected fault").into_response(),
    };
    // Validated in `Control::add_faults`, so nothing is dropped here in practice.
    for (name, value) in fault_headers(f).unwrap_or_default() {
        resp.headers_mut().insert(name, value);
    }
    resp
}

/// Middleware: latency, fault injection, request log and counters.
pub async fn observe(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    let svc = Svc::from_path(&path);
    if svc == Svc::Control {
        return next.run(req).await;
    }
    let method = req.method().as_str().to_string();
    let (latency, fault) = {
        let mut rt = st.rt.lock();
        (
            rt.latency.get(svc.name()).copied().unwrap_or(0),
            rt.take_fault(&method, &path),
        )
    };
    if latency > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(latency)).await;
    }
    let (resp, injected) = match fault {
        Some(f) if !f.after_action => (fault_reply(svc, &f), true),
        Some(f) => {
            let _ = next.run(req).await;
            (fault_reply(svc, &f), true)
        }
        None => (next.run(req).await, false),
    };
    st.rt
        .lock()
        .record(svc, &method, &path, resp.status().as_u16(), injected);
    let mut resp = resp;
    if let Ok(v) = axum::http::HeaderValue::from_str(&format!("req-{}", crate::world::new_id())) {
        resp.headers_mut().insert("x-openstack-request-id", v);
    }
    resp
}

/// Typed, in-process access to the control operations.
#[derive(Clone)]
pub struct Control {
    pub(crate) shared: Arc<Shared>,
    pub(crate) initial_delays: Delays,
}

impl Control {
    /// Restore the seeded state: resources, tokens, delays, latency and faults (keeps the request log).
    pub fn reset(&self) {
        let seed = self.shared.world.lock().seed.clone();
        self.reseed(seed);
    }

    /// Replace the seed and reset to it.
    pub fn reseed(&self, seed: Seed) {
        let ttl = self.shared.world.lock().token_ttl_s;
        let fresh = crate::seed::build_world(&seed, self.initial_delays.clone(), ttl);
        *self.shared.world.lock() = fresh;
        let mut rt = self.shared.rt.lock();
        rt.latency.clear();
        rt.faults.clear();
    }

    /// Added latency per service (`identity`, `compute`, `network`, `load-balancer`, `image`, `volume`).
    pub fn set_latency(&self, per_service_ms: HashMap<String, u64>) {
        self.shared.rt.lock().latency = per_service_ms;
    }

    /// State transition delays.
    pub fn set_delays(&self, delays: Delays) {
        self.shared.world.lock().delays = delays;
    }

    /// Current transition delays.
    pub fn delays(&self) -> Delays {
        self.shared.world.lock().delays.clone()
    }

    /// Add fault rules. Fails (adding none) on an invalid regex or header name/value.
    pub fn add_faults(&self, faults: Vec<FaultSpec>) -> Result<(), String> {
        let mut compiled = Vec::new();
        for f in faults {
            fault_headers(&f)?;
            let re = regex::Regex::new(&f.path_regex).map_err(|e| e.to_string())?;
            compiled.push((f, re));
        }
        self.shared.rt.lock().faults.extend(compiled);
        Ok(())
    }

    /// Remove every fault rule.
    pub fn clear_faults(&self) {
        self.shared.rt.lock().faults.clear();
    }

    /// Fault rules still armed.
    pub fn faults(&self) -> Vec<FaultSpec> {
        self.shared
            .rt
            .lock()
            .faults
            .iter()
            .map(|(f, _)| f.clone())
            .collect()
    }

    /// Servers whose name matches `name_regex` fail their build with NoValidHost, `count` times.
    pub fn fail_builds(&self, name_regex: &str, count: u32) -> Result<(), String> {
        regex::Regex::new(name_regex).map_err(|e| e.to_string())?;
        self.shared
            .world
            .lock()
            .build_failures
            .push((name_regex.to_string(), count));
        Ok(())
    }

    /// Nova's `reclaim_instance_interval` in ms ([`Seed::server_reclaim_ms`]): 0 deletes servers
    /// at once, above 0 soft-deletes them. Kept by [`Control::reset`] (it is part of the seed).
    pub fn set_server_reclaim_ms(&self, ms: u64) {
        self.shared.world.lock().seed.server_reclaim_ms = ms;
    }

    /// Add the region [`Seed::internal_only_region`] to every catalog issued from now on; kept by
    /// [`Control::reset`] (it is part of the seed).
    pub fn set_internal_only_region(&self, region: &str) {
        self.shared.world.lock().seed.internal_only_region = Some(region.to_owned());
    }

    /// Make Neutron one without tags ([`Seed::without_neutron_tags`]) from now on, or one with
    /// them again; kept by [`Control::reset`] (it is part of the seed).
    pub fn set_without_neutron_tags(&self, without: bool) {
        self.shared.world.lock().seed.without_neutron_tags = without;
    }

    /// Reclaim every `SOFT_DELETED` server now, as Nova's periodic task does once
    /// `reclaim_instance_interval` has passed (ports Nova made deleted, others unbound, volumes
    /// detached, those marked `delete_on_termination` deleted); returns how many.
    pub fn reclaim_servers(&self) -> usize {
        crate::compute::servers::reclaim_all(&mut self.shared.world.lock())
    }

    /// The request log (most recent last).
    pub fn requests(&self) -> Vec<LogEntry> {
        self.shared.rt.lock().log.iter().cloned().collect()
    }

    /// Clear the request log and counters.
    pub fn clear_requests(&self) {
        let mut rt = self.shared.rt.lock();
        rt.log.clear();
        rt.counters.clear();
    }

    /// Request counters keyed `service METHOD /route/{id}`.
    pub fn counters(&self) -> BTreeMap<String, u64> {
        self.shared.rt.lock().counters.clone()
    }

    /// Every resource owned by a project (all projects when `None`), grouped by collection.
    pub fn state(&self, project: Option<&str>) -> Value {
        self.shared.world().dump(project)
    }

    /// Id of a project by name (or id).
    pub fn project_id(&self, name: &str) -> Option<String> {
        self.shared.world.lock().project(name).map(|p| p.id.clone())
    }

    /// The whole world as JSON (what `--state` persists).
    pub fn snapshot(&self) -> Value {
        serde_json::to_value(&*self.shared.world.lock()).unwrap_or(Value::Null)
    }
}

fn ctl_err(msg: impl Into<String>) -> Response {
    ApiError::bad_request(Svc::Control, msg).into_response()
}

fn parse<T: serde::de::DeserializeOwned>(b: &Bytes) -> Result<T, Box<Response>> {
    let text = std::str::from_utf8(b).map_err(|e| Box::new(ctl_err(e.to_string())))?;
    yaml_serde::from_str(text).map_err(|e| Box::new(ctl_err(e.to_string())))
}

fn done() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

/// Routes of the control API.
pub fn routes(ctl: Control) -> Router<AppState> {
    let c = |ctl: &Control| ctl.clone();
    let (c1, c2, c3, c4, c5, c6, c7, c8, c9) = (
        c(&ctl),
        c(&ctl),
        c(&ctl),
        c(&ctl),
        c(&ctl),
        c(&ctl),
        c(&ctl),
        c(&ctl),
        c(&ctl),
    );
    Router::new()
        .route(
            "/_sim/reset",
            post(move || async move {
                c1.reset();
                done()
            }),
        )
        .route(
            "/_sim/seed",
            post(move |b: Bytes| async move {
                match parse::<Seed>(&b) {
                    Ok(seed) => {
                        c2.reseed(seed);
                        done()
                    }
                    Err(r) => *r,
                }
            }),
        )
        .route(
            "/_sim/latency",
            put(move |b: Bytes| async move {
                match parse(&b) {
                    Ok(m) => {
                        c3.set_latency(m);
                        done()
                    }
                    Err(r) => *r,
                }
            }),
        )
        .route(
            "/_sim/delays",
            put(move |b: Bytes| async move {
                // Keys left out keep their current value.
                let mut current = serde_json::to_value(c4.delays()).unwrap_or_default();
                match parse::<Value>(&b) {
                    Ok(Value::Object(m)) => {
                        for (k, v) in m {
                            current[k] = v;
                        }
                        match serde_json::from_value(current) {
                            Ok(d) => {
                                c4.set_delays(d);
                                done()
                            }
                            Err(e) => ctl_err(e.to_string()),
                        }
                    }
                    Ok(_) => ctl_err("expected an object of delays in ms"),
                    Err(r) => *r,
                }
            })
            .get(move || async move { axum::Json(c9.delays()).into_response() }),
        )
        .route(
            "/_sim/faults",
            post(move |b: Bytes| async move {
                let faults: Vec<FaultSpec> = match parse::<Value>(&b) {
                    Ok(v @ Value::Array(_)) => match serde_json::from_value(v) {
                        Ok(f) => f,
                        Err(e) => return ctl_err(e.to_string()),
                    },
                    Ok(v) => match serde_json::from_value(v) {
                        Ok(f) => vec![f],
                        Err(e) => return ctl_err(e.to_string()),
                    },
                    Err(r) => return *r,
                };
                match c5.add_faults(faults) {
                    Ok(()) => done(),
                    Err(e) => ctl_err(e),
                }
            })
            .delete({
                let c = c(&ctl);
                move || async move {
                    c.clear_faults();
                    done()
                }
            })
            .get({
                let c = c(&ctl);
                move || async move { axum::Json(c.faults()).into_response() }
            }),
        )
        .route(
            "/_sim/build-failures",
            post(move |b: Bytes| async move {
                match parse::<Value>(&b) {
                    Ok(v) => {
                        let re = v["name_regex"].as_str().unwrap_or(".*");
                        let count = v["count"].as_u64().unwrap_or(1) as u32;
                        match c6.fail_builds(re, count) {
                            Ok(()) => done(),
                            Err(e) => ctl_err(e),
                        }
                    }
                    Err(r) => *r,
                }
            }),
        )
        .route(
            "/_sim/requests",
            get(move || async move { axum::Json(c7.requests()).into_response() }).delete({
                let c = c(&ctl);
                move || async move {
                    c.clear_requests();
                    done()
                }
            }),
        )
        .route(
            "/_sim/reclaim",
            post({
                let c = c(&ctl);
                move || async move {
                    axum::Json(json!({"reclaimed": c.reclaim_servers()})).into_response()
                }
            })
            .put({
                let c = c(&ctl);
                move |b: Bytes| async move {
                    match parse::<Value>(&b) {
                        Ok(v) => match v["server_reclaim_ms"].as_u64() {
                            Some(ms) => {
                                c.set_server_reclaim_ms(ms);
                                done()
                            }
                            None => ctl_err("expected {\"server_reclaim_ms\": <ms>}"),
                        },
                        Err(r) => *r,
                    }
                }
            }),
        )
        .route(
            "/_sim/counters",
            get(move || async move { axum::Json(c8.counters()).into_response() }),
        )
        .route(
            "/_sim/state",
            get(move |q: Query| async move {
                let project = q.get("project").map(str::to_string);
                axum::Json(ctl.state(project.as_deref())).into_response()
            }),
        )
        .route(
            "/_sim/projects",
            get(|State(st): State<AppState>| async move { projects(&st) }),
        )
}

fn projects(st: &Shared) -> Response {
    let w = st.world.lock();
    let list: Vec<Value> = w
        .identity
        .projects
        .iter()
        .map(|p| json!({"id": p.id, "name": p.name}))
        .collect();
    axum::Json(json!({"projects": list})).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_replace_ids() {
        assert_eq!(
            route_template("/network/v2.0/networks/6f1c2b8e-0000-4000-8000-000000000000"),
            "/network/v2.0/networks/{id}"
        );
        assert_eq!(
            route_template("/compute/v2.1/flavors/3"),
            "/compute/v2.1/flavors/{id}"
        );
    }

    #[test]
    fn one_shot_fault_is_consumed() {
        let mut rt = Runtime::default();
        let f = FaultSpec {
            method: Some("POST".into()),
            path_regex: "/servers$".into(),
            status: 500,
            body: None,
            count: Some(1),
            ..Default::default()
        };
        rt.faults.push((
            f,
            regex::Regex::new("/servers$").unwrap_or_else(|_| unreachable!()),
        ));
        assert!(rt.take_fault("GET", "/compute/v2.1/servers").is_none());
        assert!(rt.take_fault("POST", "/compute/v2.1/servers").is_some());
        assert!(rt.take_fault("POST", "/compute/v2.1/servers").is_none());
    }
}
