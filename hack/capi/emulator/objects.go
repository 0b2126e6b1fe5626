package main

import (
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/blang/semver/v4"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	kubeadmtypes "sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/types"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/types/upstream"
)

// What kubeadm, the kubelet and the cloud controller manager make appear in a workload cluster,
// as far as Cluster API's controllers look at it.

const (
	labelControlPlaneRole = "node-role.kubernetes.io/control-plane"
	imageRegistry         = "registry.k8s.io"
)

// staticPodComponents are the kubeadm static pods of a control plane node, etcd first.
var staticPodComponents = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

func staticPodName(component, nodeName string) string { return component + "-" + nodeName }

// imageTag turns a Kubernetes version into an OCI tag, as kubeadm does (`+` is not allowed).
func imageTag(version string) string { return strings.ReplaceAll(version, "+", "_") }

// nodeAddresses are the Machine's addresses (copied by Cluster API from the infrastructure machine),
// which is what the cloud controller manager publishes on the Node, plus the hostname.
func nodeAddresses(m *clusterv1.Machine, nodeName string) []corev1.NodeAddress {
	out := []corev1.NodeAddress{}
	hasHostname := false
	for _, a := range m.Status.Addresses {
		t := corev1.NodeAddressType(a.Type)
		if t == corev1.NodeHostName {
			hasHostname = true
		}
		out = append(out, corev1.NodeAddress{Type: t, Address: a.Address})
	}
	if !hasHostname {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeHostName, Address: nodeName})
	}
	return out
}

func newNode(m *clusterv1.Machine, nodeName string, controlPlane bool) *corev1.Node {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: nodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname":  nodeName,
				"kubernetes.io/os":        "linux",
				"kubernetes.io/arch":      "amd64",
				"beta.kubernetes.io/os":   "linux",
				"beta.kubernetes.io/arch": "amd64",
			},
		},
		Spec: corev1.NodeSpec{ProviderID: m.Spec.ProviderID},
		Status: corev1.NodeStatus{
			Addresses: nodeAddresses(m, nodeName),
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          m.Spec.Version,
				OperatingSystem:         "linux",
				Architecture:            "amd64",
				OSImage:                 "capo workload emulator",
				ContainerRuntimeVersion: "containerd://2.1.0",
			},
			Capacity:    nodeResources(),
			Allocatable: nodeResources(),
		},
	}
	if controlPlane {
		// kubeadm init/join --control-plane labels and taints the node.
		node.Labels[labelControlPlaneRole] = ""
		node.Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
		node.Spec.Taints = []corev1.Taint{{Key: labelControlPlaneRole, Effect: corev1.TaintEffectNoSchedule}}
	}
	setNodeReadiness(node, true)
	return node
}

func nodeResources() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
}

var unreachableTaints = []corev1.Taint{
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
}

// setNodeReadiness sets the conditions the way a running kubelet reports them, or the way the
// node lifecycle controller marks a node whose kubelet stopped posting (conditions Unknown and
// the unreachable taints). Transition times only move when a status changes.
func setNodeReadiness(node *corev1.Node, ready bool) {
	now := metav1.Now()
	type cond struct {
		t              corev1.NodeConditionType
		status         corev1.ConditionStatus
		reason, detail string
	}
	var want []cond
	if ready {
		want = []cond{
			{corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
			{corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
			{corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
			{corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"},
		}
	} else {
		for _, t := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady} {
			want = append(want, cond{t, corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."})
		}
	}
	for _, w := range want {
		found := false
		for i := range node.Status.Conditions {
			c := &node.Status.Conditions[i]
			if c.Type != w.t {
				continue
			}
			found = true
			if c.Status != w.status {
				c.Status, c.LastTransitionTime = w.status, now
			}
			c.Reason, c.Message = w.reason, w.detail
			if ready {
				c.LastHeartbeatTime = now
			}
		}
		if !found {
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
				Type: w.t, Status: w.status, Reason: w.reason, Message: w.detail,
				LastHeartbeatTime: now, LastTransitionTime: now,
			})
		}
	}
	// The unreachable taints follow readiness.
	kept := node.Spec.Taints[:0:0]
	for _, t := range node.Spec.Taints {
		if t.Key != corev1.TaintNodeUnreachable {
			kept = append(kept, t)
		}
	}
	if !ready {
		for _, t := range unreachableTaints {
			t.TimeAdded = &now
			kept = append(kept, t)
		}
	}
	node.Spec.Taints = kept
}

// nodeReady reports the Ready condition's status.
func nodeReady(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// newStaticPod is the mirror pod of a kubeadm static pod, running and ready.
func newStaticPod(component, nodeName, version string, ip string) *corev1.Pod {
	image := fmt.Sprintf("%s/%s:%s", imageRegistry, component, imageTag(version))
	if component == "etcd" {
		image = imageRegistry + "/etcd:3.6.5-0"
	}
	now := metav1.Now()
	hash := fmt.Sprintf("%016x", stableID(component, nodeName, version))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: metav1.NamespaceSystem,
			Name:      staticPodName(component, nodeName),
			Labels:    map[string]string{"component": component, "tier": "control-plane"},
			// The kubelet's mirror pod markers: drain leaves mirror pods alone.
			Annotations: map[string]string{
				"kubernetes.io/config.source": "file",
				"kubernetes.io/config.hash":   hash,
				corev1.MirrorPodAnnotationKey: hash,
			},
		},
		Spec: corev1.PodSpec{
			NodeName:          nodeName,
			HostNetwork:       true,
			PriorityClassName: "system-node-critical",
			Containers:        []corev1.Container{{Name: component, Image: image}},
		},
		Status: corev1.PodStatus{
			Phase:     corev1.PodRunning,
			HostIP:    ip,
			PodIP:     ip,
			StartTime: &now,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name:    component,
				Image:   image,
				Ready:   true,
				Started: ptr.To(true),
				State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			}},
		},
	}
	if component == "etcd" && ip != "" {
		pod.Annotations["kubeadm.kubernetes.io/etcd.advertise-client-urls"] = fmt.Sprintf("https://%s:2379", ip)
	}
	if component == "kube-apiserver" && ip != "" {
		pod.Annotations["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"] = ip + ":6443"
	}
	return pod
}

// internalIP is the node's first internal address (else any address), for the pods' IPs.
func internalIP(m *clusterv1.Machine) string {
	for _, a := range m.Status.Addresses {
		if a.Type == clusterv1.MachineInternalIP {
			return a.Address
		}
	}
	for _, a := range m.Status.Addresses {
		if a.Type == clusterv1.MachineExternalIP {
			return a.Address
		}
	}
	return ""
}

// stableID derives a stable, non-zero ID (etcd cluster or member, pod hash) from names that identify it, so
// that a restarted emulator rebuilds the same membership. The in-memory etcd server parses IDs
// as a Go int, hence 63 bits.
func stableID(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	id := h.Sum64() & (1<<63 - 1)
	if id == 0 {
		id = 1
	}
	return id
}

// kubeadmConfigMap is kube-system/kubeadm-config as kubeadm init writes it, encoded by the
// Cluster API kubeadm types for the Kubernetes version (v1beta3 or v1beta4), which is how KCP
// reads and rewrites it.
func kubeadmConfigMap(cluster *clusterv1.Cluster, version string) (*corev1.ConfigMap, error) {
	v, err := semver.ParseTolerant(version)
	if err != nil {
		return nil, fmt.Errorf("parsing version %q: %w", version, err)
	}
	ep := cluster.Spec.ControlPlaneEndpoint
	cfg := &bootstrapv1.ClusterConfiguration{
		ControlPlaneEndpoint: fmt.Sprintf("%s:%d", ep.Host, ep.Port),
		CertificatesDir:      "/etc/kubernetes/pki",
		ImageRepository:      imageRegistry,
		Etcd:                 bootstrapv1.Etcd{Local: bootstrapv1.LocalEtcd{DataDir: "/var/lib/etcd"}},
	}
	net := cluster.Spec.ClusterNetwork
	data := &upstream.AdditionalData{
		KubernetesVersion: ptr.To("v" + v.String()),
		ClusterName:       ptr.To(cluster.Name),
		DNSDomain:         ptr.To(dnsDomain(cluster)),
		ServiceSubnet:     ptr.To("10.96.0.0/12"),
	}
	if s := net.Services.String(); s != "" {
		data.ServiceSubnet = ptr.To(s)
	}
	if p := net.Pods.String(); p != "" {
		data.PodSubnet = ptr.To(p)
	}
	text, err := kubeadmtypes.MarshalClusterConfigurationForVersion(cfg, v, data)
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "kubeadm-config"},
		Data:       map[string]string{"ClusterConfiguration": text},
	}, nil
}

func dnsDomain(cluster *clusterv1.Cluster) string {
	if d := cluster.Spec.ClusterNetwork.ServiceDomain; d != "" {
		return d
	}
	return "cluster.local"
}

// kubeadmRBAC is the role kubeadm creates so that joining nodes can read Nodes.
func kubeadmRBAC() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	const name = "kubeadm:get-nodes"
	return &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}}},
		}, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:bootstrappers:kubeadm:default-node-token"}},
		}
}

// kubeProxy is kubeadm's kube-proxy DaemonSet (KCP rewrites its image on upgrades).
func kubeProxy(version string) *appsv1.DaemonSet {
	labels := map[string]string{"k8s-app": "kube-proxy"}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "kube-proxy", Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:    "kube-proxy",
						Image:   fmt.Sprintf("%s/kube-proxy:%s", imageRegistry, imageTag(version)),
						Command: []string{"/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf", "--hostname-override=$(NODE_NAME)"},
					}},
				},
			},
		},
	}
}

// coreDNSVersion is the CoreDNS release kubeadm deploys for a Kubernetes minor version.
func coreDNSVersion(version string) string {
	v, err := semver.ParseTolerant(version)
	if err != nil {
		return "v1.12.1"
	}
	switch {
	case v.Minor >= 34:
		return "v1.12.1"
	case v.Minor == 33:
		return "v1.12.0"
	case v.Minor >= 31:
		return "v1.11.3"
	case v.Minor >= 29:
		return "v1.11.1"
	default:
		return "v1.10.1"
	}
}

// coreDNS is kubeadm's CoreDNS ConfigMap and Deployment (KCP migrates both on CoreDNS upgrades).
func coreDNS(cluster *clusterv1.Cluster, version string) (*corev1.ConfigMap, *appsv1.Deployment) {
	domain := dnsDomain(cluster)
	corefile := `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes ` + domain + ` in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success ` + domain + `
       disable denial ` + domain + `
    }
    loop
    reload
    loadbalance
}
`
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "coredns"},
		Data:       map[string]string{"Corefile": corefile},
	}
	labels := map[string]string{"k8s-app": "kube-dns"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "coredns", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:  "coredns",
						Image: fmt.Sprintf("%s/coredns/coredns:%s", imageRegistry, coreDNSVersion(version)),
						Args:  []string{"-conf", "/etc/coredns/Corefile"},
					}},
					Volumes: []corev1.Volume{{
						Name: "config-volume",
						VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"},
							Items:                []corev1.KeyToPath{{Key: "Corefile", Path: "Corefile"}},
						}},
					}},
				},
			},
		},
	}
	return cm, deploy
}
