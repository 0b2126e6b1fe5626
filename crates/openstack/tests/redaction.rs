//! No secret reaches the logs, even at TRACE for every target (this crate, reqwest, hyper,
//! rustls, the openstack-sdk auth plugins; `log` records are bridged into tracing).

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use base64::Engine;
use capo_openstack::compute::{ServerCreate, UserData, create_server};

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const USER_DATA: &str = "#cloud-config\nbootstrap_token: abcdef.0123456789abcdef-SECRET-USERDATA\n";

#[tokio::test]
async fn no_secret_in_trace_logs() {
    let cap = Capture::default();
    let writer = cap.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .try_init()
        .expect("subscriber");

    let env = common::env().await;
    let yaml = env.sim.clouds_yaml();
    let s = env.session("capo-sim");
    let app = env.session("capo-sim-appcred");
    app.project_id().await.unwrap();

    let image = capo_openstack::image::list_images(&s, &Default::default())
        .await
        .unwrap()[0]
        .clone();
    let flavor = capo_openstack::compute::list_flavors(&s).await.unwrap()[0].clone();
    let (_, p) = common::network_with_port(&s, "10.9.0.0/24", "p").await;
    let spec = ServerCreate {
        name: "secret-test".into(),
        flavor_id: flavor.id,
        image_id: Some(image.id),
        port_ids: vec![p.id],
        user_data: Some(UserData::new(USER_DATA)),
        ..Default::default()
    };
    create_server(&s, &spec).await.unwrap();
    // A failing create (bad flavor) must not echo the body either.
    let bad = ServerCreate {
        flavor_id: "nope".into(),
        ..spec.clone()
    };
    let err = create_server(&s, &bad).await.unwrap_err();
    // Debug of everything that holds secrets, logged at TRACE on purpose.
    let creds = env.creds("capo-sim");
    tracing::trace!(?creds, ?s, ?spec, %err, "debug dump");

    let logs = String::from_utf8(cap.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.len() > 1000,
        "captured too little to prove anything: {} bytes",
        logs.len()
    );
    assert!(logs.contains("debug dump"));

    let mut secrets: Vec<String> = vec![
        "bootstrap_token".into(),
        "SECRET-USERDATA".into(),
        base64::engine::general_purpose::STANDARD.encode(USER_DATA),
    ];
    // Passwords and application credential secrets from the clouds.yaml the simulator gave us.
    for line in yaml.lines() {
        let line = line.trim();
        for key in ["password:", "application_credential_secret:"] {
            if let Some(v) = line.strip_prefix(key) {
                secrets.push(v.trim().trim_matches('"').trim_matches('\'').to_owned());
            }
        }
    }
    // Every token the simulator issued.
    if let Some(tokens) = env
        .sim
        .control()
        .snapshot()
        .get("tokens")
        .and_then(|t| t.as_object())
    {
        secrets.extend(tokens.keys().cloned());
    }
    assert!(secrets.len() >= 5, "{} secrets collected", secrets.len());
    for secret in secrets.iter().filter(|s| s.len() >= 6) {
        assert!(
            !logs.contains(secret.as_str()),
            "a secret appears in the logs"
        );
    }
    if std::env::var_os("CAPO_DUMP_LOGS").is_some() {
        println!("{logs}");
    }
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "checked {} secrets against {} bytes of TRACE logs",
        secrets.len(),
        logs.len()
    );
}
