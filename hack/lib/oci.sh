# Sourced by the scripts that build container images (hack/image.sh, hack/mgmt-cluster.sh).
# Images are assembled here without a container engine or a registry: one layer made from a
# directory, an OCI image config and manifest, written as an OCI image-layout archive that
# `ctr images import`, `podman load` and `skopeo copy oci-archive:...` read. Nothing in the
# result depends on the time or the machine: files are sorted, owned by 0:0 with their modes
# kept, dated at SOURCE_DATE_EPOCH (default 0), and gzip stores no name or time, so the same
# inputs give the same digest.
#
#   oci_base_rootfs DIR                 /etc/passwd and /etc/group with root and nonroot (65532),
#                                       /etc/nsswitch.conf, Debian's CA bundle, /tmp (1777)
#   oci_image DIR REF OUT.tar [--entrypoint JSON] [--cmd JSON] [--user U:G] [--env K=V]...
#                                       [--workdir DIR] [--label K=V]...
#                                       one-layer image of DIR as REF, written to OUT.tar; prints
#                                       the manifest digest
# The caller defines say().

oci_base_rootfs() {
  local dir=$1 bundle=/etc/ssl/certs/ca-certificates.crt
  [[ -s "$bundle" ]] || {
    say "the CA bundle $bundle is missing; installing Debian's ca-certificates"
    apt-get update -qq && apt-get install -y -qq ca-certificates >/dev/null
  }
  mkdir -p "$dir/etc/ssl/certs" "$dir/tmp"
  chmod 1777 "$dir/tmp"
  cp "$bundle" "$dir/etc/ssl/certs/ca-certificates.crt"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$dir/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$dir/etc/group"
  # Static glibc resolves names through files then DNS without loading any library.
  printf 'hosts: files dns\n' >"$dir/etc/nsswitch.conf"
  # The layer keeps modes as they are on disk: set them, so that a caller's umask (077 leaves
  # /etc unreadable to 65532, and with it the CA bundle) cannot change the image.
  chmod 0755 "$dir" "$dir/etc" "$dir/etc/ssl" "$dir/etc/ssl/certs"
  chmod 0644 "$dir/etc/passwd" "$dir/etc/group" "$dir/etc/nsswitch.conf" "$dir/etc/ssl/certs/ca-certificates.crt"
}

oci_image() {
  local dir=$1 ref=$2 out=$3
  shift 3
  python3 - "$dir" "$ref" "$out" "$@" <<'PY'
import gzip, hashlib, io, json, os, stat, sys, tarfile

src, ref, out, *args = sys.argv[1:]
epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
config = {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
labels = {}
i = 0
while i < len(args):
    flag, value = args[i], args[i + 1]
    i += 2
    if flag == "--entrypoint":
        config["Entrypoint"] = json.loads(value)
    elif flag == "--cmd":
        config["Cmd"] = json.loads(value)
    elif flag == "--user":
        config["User"] = value
    elif flag == "--env":
        config["Env"].append(value)
    elif flag == "--workdir":
        config["WorkingDir"] = value
    elif flag == "--label":
        k, _, v = value.partition("=")
        labels[k] = v
    else:
        sys.exit(f"oci_image: unknown option {flag}")
if labels:
    config["Labels"] = labels

# The layer: every entry under src in byte order (parents before children), owned by root,
# dated at the epoch.
layer = io.BytesIO()
with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as tar:
    paths = []
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for name in sorted(dirs + files):
            paths.append(os.path.join(root, name))
    for path in sorted(paths, key=lambda p: os.path.relpath(p, src).encode()):
        rel = os.path.relpath(path, src)
        info = tar.gettarinfo(path, arcname=rel)
        info.mtime = epoch
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.pax_headers = {}
        if info.isfile():
            with open(path, "rb") as f:
                tar.addfile(info, f)
        else:
            tar.addfile(info)
raw = layer.getvalue()
diff_id = "sha256:" + hashlib.sha256(raw).hexdigest()
gz = io.BytesIO()
with gzip.GzipFile(fileobj=gz, mode="wb", compresslevel=9, mtime=0, filename="") as g:
    g.write(raw)
layer_gz = gz.getvalue()

blobs = {}
def blob(data):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return digest

def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()

layer_digest = blob(layer_gz)
created = __import__("datetime").datetime.fromtimestamp(epoch, __import__("datetime").timezone.utc)
image_config = canonical({
    "architecture": {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine),
    "os": "linux",
    "created": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
    "config": config,
    "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    "history": [{"created": created.strftime("%Y-%m-%dT%H:%M:%SZ"), "created_by": "hack/lib/oci.sh"}],
})
config_digest = blob(image_config)
manifest = canonical({
    "schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": len(image_config)},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer_digest, "size": len(layer_gz)}],
})
manifest_digest = blob(manifest)
tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else "latest"
index = canonical({
    "schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.index.v1+json",
    "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": manifest_digest,
        "size": len(manifest),
        "annotations": {"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": tag},
    }],
})

def add(tar, name, data, mode=0o644):
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), epoch, mode
    tar.addfile(info, io.BytesIO(data))

tmp = out + ".tmp"
with tarfile.open(tmp, mode="w", format=tarfile.USTAR_FORMAT) as tar:
    for d in ("blobs", "blobs/sha256"):
        info = tarfile.TarInfo(d)
        info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, epoch
        tar.addfile(info)
    add(tar, "oci-layout", canonical({"imageLayoutVersion": "1.0.0"}))
    add(tar, "index.json", index)
    for digest in sorted(blobs):
        add(tar, "blobs/sha256/" + digest.split(":", 1)[1], blobs[digest])
os.replace(tmp, out)
print(manifest_digest)
PY
}
