//! Writes the provider's CRDs to `config/crd/bases/` (or the directory given as the only
//! argument), one file per CRD with upstream's file names.

use std::path::PathBuf;

fn main() -> std::process::ExitCode {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config/crd/bases")
        });
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("cannot create {}: {e}", dir.display());
        return std::process::ExitCode::FAILURE;
    }
    for crd in capo_api::crds::all() {
        let path = dir.join(capo_api::crds::file_name(&crd));
        if let Err(e) = std::fs::write(&path, capo_api::crds::render_yaml(&crd)) {
            eprintln!("cannot write {}: {e}", path.display());
            return std::process::ExitCode::FAILURE;
        }
        println!("wrote {}", path.display());
    }
    std::process::ExitCode::SUCCESS
}
