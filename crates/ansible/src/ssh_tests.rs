use super::*;
use ssh_key::PublicKey;
use std::process::Command;

#[test]
fn generated_key_parses_back_and_matches() {
    let pair = generate_ed25519("default/demo").unwrap();
    assert!(
        pair.private_openssh
            .starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    );
    assert!(
        pair.private_openssh
            .ends_with("-----END OPENSSH PRIVATE KEY-----\n")
    );
    let private = PrivateKey::from_openssh(pair.private_openssh.as_str()).unwrap();
    assert_eq!(private.algorithm(), Algorithm::Ed25519);
    assert!(
        !private.is_encrypted(),
        "ssh -i must work without a passphrase"
    );

    assert!(pair.public_openssh.starts_with("ssh-ed25519 AAAA"));
    assert!(pair.public_openssh.ends_with(" default/demo"));
    let public = PublicKey::from_openssh(&pair.public_openssh).unwrap();
    assert_eq!(public.key_data(), private.public_key().key_data());
    assert!(pair.fingerprint_sha256.starts_with("SHA256:"));

    let again = SshKeyPair::from_private_openssh(&pair.private_openssh).unwrap();
    assert_eq!(again.public_openssh, pair.public_openssh);
    assert_eq!(again.fingerprint_sha256, pair.fingerprint_sha256);
}

#[test]
fn two_keys_differ() {
    let a = generate_ed25519("a").unwrap();
    let b = generate_ed25519("a").unwrap();
    assert_ne!(a.fingerprint_sha256, b.fingerprint_sha256);
}

#[test]
fn debug_redacts_the_private_key() {
    let pair = generate_ed25519("c").unwrap();
    let shown = format!("{pair:?}");
    assert!(shown.contains("<redacted>"));
    assert!(!shown.contains("PRIVATE KEY"));
    let body: String = pair
        .private_openssh
        .lines()
        .nth(1)
        .unwrap_or_default()
        .into();
    assert!(!shown.contains(&body));
}

#[test]
fn garbage_is_an_error_without_echo() {
    let err = SshKeyPair::from_private_openssh("not a key").unwrap_err();
    assert!(!err.to_string().contains("not a key"));
}

/// `ssh-keygen -y` derives the public key from the private key file exactly as `ssh -i`
/// loads it, so agreeing with it proves the file is usable by OpenSSH.
#[test]
fn openssh_accepts_the_private_key() {
    // hack/test.sh does not install OpenSSH, so its absence is not a failure; the parse-back
    // test above still checks the format.
    let Some(keygen) = find_ssh_keygen() else {
        eprintln!(
            "SKIPPED openssh_accepts_the_private_key: ssh-keygen not found on PATH \
             (install openssh-client to run it)"
        );
        return;
    };
    let pair = generate_ed25519("check").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("id_ed25519");
    std::fs::write(&path, pair.private_openssh.as_bytes()).unwrap();
    set_owner_only(&path);
    let derived = Command::new(&keygen)
        .arg("-y")
        .arg("-f")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        derived.status.success(),
        "ssh-keygen -y failed: {}",
        String::from_utf8_lossy(&derived.stderr)
    );
    let derived = String::from_utf8_lossy(&derived.stdout);
    // ssh-keygen prints "<type> <base64> <comment>"; compare type and key.
    let words = |s: &str| s.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    assert_eq!(words(&derived), words(&pair.public_openssh));

    let listed = Command::new(&keygen)
        .arg("-l")
        .arg("-f")
        .arg(&path)
        .output()
        .unwrap();
    assert!(listed.status.success());
    assert!(String::from_utf8_lossy(&listed.stdout).contains(&pair.fingerprint_sha256));
}

fn find_ssh_keygen() -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("ssh-keygen"))
            .find(|p| p.is_file())
    })
}

#[cfg(unix)]
fn set_owner_only(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[cfg(not(unix))]
fn set_owner_only(_: &std::path::Path) {}

#[test]
fn a_pkcs1_rsa_key_as_the_bootstrap_provider_writes_it_gives_its_public_key() {
    use rsa::pkcs1::EncodeRsaPrivateKey;
    let rsa = rsa::RsaPrivateKey::new(&mut ssh_key::rand_core::OsRng, 1024).unwrap();
    let pem = rsa.to_pkcs1_pem(rsa::pkcs1::LineEnding::LF).unwrap();
    assert!(pem.contains("BEGIN RSA PRIVATE KEY"));
    let pair = SshKeyPair::from_private_any(&pem).unwrap();
    assert!(
        pair.public_openssh.starts_with("ssh-rsa "),
        "{}",
        pair.public_openssh
    );
    let again = SshKeyPair::from_private_openssh(&pair.private_openssh).unwrap();
    assert_eq!(again.public_openssh, pair.public_openssh);
    assert_eq!(again.fingerprint_sha256, pair.fingerprint_sha256);
    // OpenSSH text goes through unchanged.
    let ed = generate_ed25519("c").unwrap();
    let same = SshKeyPair::from_private_any(&ed.private_openssh).unwrap();
    assert_eq!(same.public_openssh, ed.public_openssh);
    // A broken PEM is refused without echoing it.
    let err = SshKeyPair::from_private_any("-----BEGIN RSA PRIVATE KEY-----\nnot-a-key\n")
        .unwrap_err()
        .to_string();
    assert!(!err.contains("not-a-key"), "{err}");
}
