# Sourced by the hack/*.sh scripts that build Kubernetes' own commands from k8s.io/kubernetes.

# The -ldflags Kubernetes' release build gives its commands for a version like v1.34.3 (stripped,
# and stamped so /version, the node and the compatibility version report it rather than a
# development placeholder).
k8s_ldflags() { # version
  local minor=${1#v1.} pkg flags="-s -w"
  minor=${minor%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$1 -X $pkg.gitMajor=1 -X $pkg.gitMinor=${minor} -X $pkg.gitTreeState=clean"
  done
  echo "$flags"
}
