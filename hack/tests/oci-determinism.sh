#!/usr/bin/env bash
# Tests hack/lib/oci.sh without a release build or a container engine (a few seconds): a small
# image assembled twice, in two directories, with different file dates and umasks, must have the
# same digest and byte-identical archives; SOURCE_DATE_EPOCH and the content must change the
# digest; the archive must be a well-formed OCI image layout whose layer holds the expected
# files, modes and owners (and, where skopeo is installed, skopeo must read it).
#
#   hack/tests/oci-determinism.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { echo "oci-determinism: $*" >&2; }
fail() { say "FAIL: $*"; exit 1; }
# shellcheck source=hack/lib/oci.sh
source "$here/lib/oci.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ref=localhost/capo/oci-test:v0.0.1

# build DIR OUT [WORD]: a root filesystem like the manager's (a small script that echoes WORD,
# default hello, stands in for the binary).
build() {
  local dir=$1 out=$2
  mkdir -p "$dir"
  oci_base_rootfs "$dir"
  printf '#!/bin/sh\necho %s\n' "${3:-hello}" >"$dir/manager"
  chmod 0755 "$dir/manager"
  oci_image "$dir" "$ref" "$out" --entrypoint '["/manager"]' --user 65532:65532 \
    --label org.opencontainers.image.version=v0.0.1
}

export SOURCE_DATE_EPOCH=1700000000
first=$(build "$work/one/rootfs" "$work/one.tar")
sleep 1
second=$( (umask 077 && build "$work/two/a/b/rootfs" "$work/two.tar") )
[[ "$first" =~ ^sha256:[0-9a-f]{64}$ ]] || fail "oci_image printed '$first', not a digest"
[[ "$first" == "$second" ]] || fail "same inputs, two digests: $first, $second"
cmp -s "$work/one.tar" "$work/two.tar" || fail "same inputs, different archives"
say "same inputs in two directories, dates and umasks: $first"

third=$(SOURCE_DATE_EPOCH=1700000001 build "$work/three/rootfs" "$work/three.tar")
[[ "$third" != "$first" ]] || fail "SOURCE_DATE_EPOCH does not reach the image"
fourth=$(build "$work/four/rootfs" "$work/four.tar" changed)
[[ "$fourth" != "$first" ]] || fail "the content does not reach the digest"

# The layout: index -> manifest -> config and layer, every blob named by its digest; the layer's
# entries sorted, owned by root, dated at the epoch, with the modes the image needs.
python3 - "$work/one.tar" "$first" "$ref" <<'PY' || fail "the archive is not the expected OCI layout"
import hashlib, io, json, sys, tarfile
archive, digest, ref = sys.argv[1:]
t = tarfile.open(archive)
def blob(d):
    data = t.extractfile("blobs/sha256/" + d.split(":", 1)[1]).read()
    assert "sha256:" + hashlib.sha256(data).hexdigest() == d, d
    return data
assert json.loads(t.extractfile("oci-layout").read()) == {"imageLayoutVersion": "1.0.0"}
index = json.loads(t.extractfile("index.json").read())
(desc,) = index["manifests"]
assert desc["digest"] == digest
assert desc["annotations"]["io.containerd.image.name"] == ref
assert desc["annotations"]["org.opencontainers.image.ref.name"] == "v0.0.1"
manifest = json.loads(blob(digest))
config = json.loads(blob(manifest["config"]["digest"]))
assert config["config"]["Entrypoint"] == ["/manager"]
assert config["config"]["User"] == "65532:65532"
assert config["config"]["Labels"] == {"org.opencontainers.image.version": "v0.0.1"}
assert config["created"] == "2023-11-14T22:13:20Z", config["created"]
(layer_desc,) = manifest["layers"]
layer = tarfile.open(fileobj=io.BytesIO(blob(layer_desc["digest"])))
members = layer.getmembers()
names = [m.name for m in members]
assert names == sorted(names, key=str.encode), names
modes = {m.name: m.mode for m in members}
expected = {"etc": 0o755, "etc/passwd": 0o644, "etc/group": 0o644, "etc/nsswitch.conf": 0o644,
            "etc/ssl/certs/ca-certificates.crt": 0o644, "tmp": 0o1777, "manager": 0o755}
for name, mode in expected.items():
    assert modes.get(name) == mode, (name, oct(modes.get(name, 0)))
for m in members:
    assert (m.uid, m.gid, m.uname, m.gname, m.mtime) == (0, 0, "", "", 1700000000), m.name
passwd = layer.extractfile("etc/passwd").read().decode()
assert "nonroot:x:65532:65532:" in passwd, passwd
PY
say "the archive is an OCI image layout with the expected layer"

if command -v skopeo >/dev/null; then
  skopeo inspect --raw "oci-archive:$work/one.tar" >/dev/null || fail "skopeo cannot read the archive"
  say "skopeo reads the archive"
fi
say "ok"
