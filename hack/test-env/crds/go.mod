module capo.test/test-env/crds

go 1.24.0

require (
	github.com/k-orc/openstack-resource-controller/v2 v2.4.0
	sigs.k8s.io/cluster-api v1.12.5
)
