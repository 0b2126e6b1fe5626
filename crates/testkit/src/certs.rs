//! Throw-away credentials for one environment: a CA, the API server's serving certificate,
//! the service-account signing key and an admin bearer token; and the webhook serving
//! certificates of the Cluster API managers ([`ServingCerts`]).

use std::path::{Path, PathBuf};

use capo_tls::{Ca, LOOPBACK};

use crate::error::{Error, Result};

/// Files written for the API server plus what a client needs to trust and reach it.
pub struct Credentials {
    /// CA certificate (PEM) that signed the serving certificate.
    pub ca_pem: String,
    /// Serving certificate file.
    pub serving_cert: PathBuf,
    /// Serving key file.
    pub serving_key: PathBuf,
    /// Service-account signing key (private key PEM).
    pub sa_key: PathBuf,
    /// Its public key (PEM), which the API server uses to verify tokens.
    pub sa_pub: PathBuf,
    /// Static token file granting `token` to an admin in `system:masters`.
    pub token_file: PathBuf,
    /// The admin bearer token; kept out of Debug output.
    token: String,
    /// Extra administrators and their tokens; kept out of Debug output.
    users: Vec<(String, String)>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("serving_cert", &self.serving_cert)
            .field("token_file", &self.token_file)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Generates everything and writes the files into `dir`; each of `users` becomes an
    /// administrator with a token of its own.
    pub fn generate(dir: &Path, users: &[String]) -> Result<Self> {
        let ca = Ca::new("capo-testkit-ca")?;
        let serving = ca.issue("kube-apiserver", LOOPBACK)?;
        let (sa_key, sa_pub) = capo_tls::signing_key_pem()?;
        let token = random_token();

        let creds = Self {
            ca_pem: ca.pem(),
            serving_cert: dir.join("apiserver.crt"),
            serving_key: dir.join("apiserver.key"),
            sa_key: dir.join("sa.key"),
            sa_pub: dir.join("sa.pub"),
            token_file: dir.join("tokens.csv"),
            token,
            users: users.iter().map(|u| (u.clone(), random_token())).collect(),
        };
        write(&dir.join("ca.crt"), &creds.ca_pem)?;
        write(&creds.serving_cert, &serving.cert_pem())?;
        write(&creds.serving_key, &serving.key_pem())?;
        write(&creds.sa_key, &sa_key)?;
        write(&creds.sa_pub, &sa_pub)?;
        // Format: token,user,uid,"group,..." — system:masters bypasses RBAC.
        let mut lines = format!("{},capo-admin,capo-admin,\"system:masters\"\n", creds.token);
        for (user, token) in &creds.users {
            lines.push_str(&format!("{token},{user},{user},\"system:masters\"\n"));
        }
        write(&creds.token_file, &lines)?;
        Ok(creds)
    }

    /// The admin bearer token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The extra administrators and their tokens.
    pub fn users(&self) -> &[(String, String)] {
        &self.users
    }
}

/// A self-signed CA and a serving certificate it signed for `localhost` and `127.0.0.1`, written
/// into one directory under the file names controller-runtime's webhook server reads by default.
#[derive(Debug, Clone)]
pub struct ServingCerts {
    /// The directory holding `tls.crt`, `tls.key` and `ca.crt`.
    pub dir: PathBuf,
    /// The CA certificate (PEM), i.e. the `caBundle` clients need.
    pub ca_pem: String,
}

impl ServingCerts {
    /// Generates the CA and the serving certificate and writes them into `dir` (created if
    /// missing).
    pub fn generate(dir: &Path, common_name: &str) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(Error::io(format!("creating {}", dir.display())))?;
        let ca = Ca::new(&format!("{common_name}-ca"))?;
        let serving = ca.issue(common_name, LOOPBACK)?;
        let certs = Self {
            dir: dir.to_path_buf(),
            ca_pem: ca.pem(),
        };
        write(&dir.join("ca.crt"), &certs.ca_pem)?;
        write(&dir.join(capo_tls::CERT_FILE), &serving.cert_pem())?;
        write(&dir.join(capo_tls::KEY_FILE), &serving.key_pem())?;
        Ok(certs)
    }
}

/// A random token; it lives as long as one test process and only on 127.0.0.1.
fn random_token() -> String {
    rand::random::<[u8; 24]>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn write(path: &Path, contents: &str) -> Result<()> {
    std::fs::write(path, contents).map_err(Error::io(format!("writing {}", path.display())))
}
