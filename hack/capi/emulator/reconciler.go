package main

import (
	"context"
	"errors"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	cloudv1 "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/cloud/api/v1alpha1"
	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
)

const (
	infraGroup = "infrastructure.cluster.x-k8s.io"
	infraKind  = "OpenStackMachine"
	// resync re-reads a cluster periodically: the controllers acting on the workload cluster
	// (Cluster API deleting a Node, KCP moving the etcd leader) leave no trace in the management
	// cluster's events.
	resync = 10 * time.Second
)

var infraGVK = schema.GroupVersionKind{Group: infraGroup, Version: "v1beta1", Kind: infraKind}

// emulator reconciles one workload cluster per request (the Cluster's key): its endpoint, and
// for every Machine what kubeadm, the kubelet and the cloud controller manager would have made
// appear. Everything is recomputed from the management cluster on each pass, so a restart only
// costs the state of the in-memory clusters, which the next pass rebuilds.
type emulator struct {
	client    client.Client
	inmem     inmemoryruntime.Manager
	listeners *listeners
	log       logr.Logger
	serve     *net.IPNet // endpoints served: 127.0.0.0/8 unless --serve-cidr says otherwise
	// infraWatched is set once OpenStackMachines are watched; until then (no such CRD) every
	// instance counts as present and running.
	infraWatched atomic.Bool

	mu      sync.Mutex
	refused map[types.NamespacedName]string // endpoints already reported as not served
}

func (e *emulator) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	group := req.Namespace + "/" + req.Name
	log := e.log.WithValues("cluster", group)

	cluster := &clusterv1.Cluster{}
	if err := e.client.Get(ctx, req.NamespacedName, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			e.forget(log, req.NamespacedName, group, "Cluster deleted")
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	addr, ok := e.endpoint(log, req.NamespacedName, cluster)
	if !ok {
		e.forget(log, req.NamespacedName, group, "no control plane endpoint in the served range")
		return ctrl.Result{}, nil
	}
	ca, err := e.authority(ctx, req.Namespace, req.Name+"-ca")
	if err != nil {
		return ctrl.Result{}, err
	}
	if ca == nil {
		log.V(1).Info("Waiting for the cluster CA Secret", "secret", req.Name+"-ca")
		return ctrl.Result{}, nil
	}
	etcdCA, err := e.authority(ctx, req.Namespace, req.Name+"-etcd")
	if err != nil {
		return ctrl.Result{}, err
	}

	e.inmem.AddResourceGroup(group) // no-op when it exists
	rg := e.inmem.GetResourceGroup(group).GetClient()
	if err := ensureNamespaces(ctx, rg); err != nil {
		return ctrl.Result{}, err
	}
	if err := e.listeners.configure(group, addr, ca, etcdCA); err != nil {
		log.Error(err, "Cannot serve the workload cluster")
		return ctrl.Result{RequeueAfter: resync}, nil
	}

	// The endpoint answers from the moment the cluster CA exists (as it would once the first
	// control plane server is up), until the Cluster is gone.
	if err := e.listeners.serve(group); err != nil {
		return ctrl.Result{}, err
	}
	if err := e.syncMachines(ctx, log, cluster, rg, group); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: resync}, nil
}

// forget stops serving a cluster and drops its in-memory state.
func (e *emulator) forget(log logr.Logger, key types.NamespacedName, group, why string) {
	known := e.listeners.remove(group, why)
	e.inmem.DeleteResourceGroup(group)
	if key.Name != "" && why == "Cluster deleted" {
		e.mu.Lock()
		delete(e.refused, key)
		e.mu.Unlock()
	}
	if known {
		log.Info("Workload cluster dropped", "reason", why)
	}
}

// endpoint returns the address to serve: the control plane endpoint, when it is an IPv4 address
// in the served range (loopback by default; anything else would mean binding a real interface,
// which this test tool never does).
func (e *emulator) endpoint(log logr.Logger, key types.NamespacedName, cluster *clusterv1.Cluster) (string, bool) {
	ep := cluster.Spec.ControlPlaneEndpoint
	if ep.Host == "" || ep.Port <= 0 {
		return "", false
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	ip := net.ParseIP(ep.Host)
	if ip == nil || ip.To4() == nil || !e.serve.Contains(ip) {
		e.mu.Lock()
		reported := e.refused[key] == addr
		e.refused[key] = addr
		e.mu.Unlock()
		if !reported {
			log.Info("Not serving this cluster: its control plane endpoint is not an IPv4 address in the served range", "endpoint", addr, "served", e.serve.String())
		}
		return "", false
	}
	e.mu.Lock()
	delete(e.refused, key)
	e.mu.Unlock()
	return net.JoinHostPort(ip.To4().String(), strconv.Itoa(int(ep.Port))), true
}

// authority reads a CA Secret; nil when it does not exist (yet).
func (e *emulator) authority(ctx context.Context, namespace, name string) (*authority, error) {
	s := &corev1.Secret{}
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return parseAuthority(s)
}

func ensureNamespaces(ctx context.Context, rg inmemoryruntime.Client) error {
	for _, name := range []string{metav1.NamespaceDefault, metav1.NamespacePublic, metav1.NamespaceSystem, corev1.NamespaceNodeLease} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/metadata.name": name}}}
		if err := rg.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{}); err == nil {
			continue
		} else if !apierrors.IsNotFound(err) {
			return err
		}
		if err := rg.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// instance is what the emulator knows of a Machine's server.
type instance struct {
	gone  bool   // the infrastructure machine is gone, or reports the server DELETED
	down  bool   // SHUTOFF or ERROR: the kubelet stopped posting
	state string // status.instanceState, for the logs
}

func (e *emulator) instance(ctx context.Context, m *clusterv1.Machine) (instance, error) {
	ref := m.Spec.InfrastructureRef
	if ref.Kind != infraKind || ref.APIGroup != infraGroup || !e.infraWatched.Load() {
		return instance{}, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(infraGVK)
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return instance{gone: true, state: "infrastructure machine gone"}, nil
		}
		return instance{}, err
	}
	state, _, _ := unstructured.NestedString(u.Object, "status", "instanceState")
	switch state {
	case "DELETED":
		return instance{gone: true, state: state}, nil
	case "SHUTOFF", "ERROR":
		return instance{down: true, state: state}, nil
	}
	return instance{state: state}, nil
}

func isControlPlane(m *clusterv1.Machine) bool {
	_, ok := m.Labels[clusterv1.MachineControlPlaneLabel]
	return ok
}

// provisioned: the point at which a real server boots, runs its bootstrap data and registers.
func provisioned(m *clusterv1.Machine) bool {
	return m.Spec.ProviderID != "" &&
		ptr.Deref(m.Status.Initialization.InfrastructureProvisioned, false) &&
		m.Spec.Bootstrap.DataSecretName != nil
}

// syncMachines converges the workload cluster on the cluster's Machines.
func (e *emulator) syncMachines(ctx context.Context, log logr.Logger, cluster *clusterv1.Cluster, rg inmemoryruntime.Client, group string) error {
	list := &clusterv1.MachineList{}
	if err := e.client.List(ctx, list, client.InNamespace(cluster.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}); err != nil {
		return err
	}
	machines := make([]*clusterv1.Machine, 0, len(list.Items))
	for i := range list.Items {
		machines = append(machines, &list.Items[i])
	}
	// Oldest first: after a restart the first control plane machine becomes the etcd leader again.
	sort.Slice(machines, func(i, j int) bool {
		a, b := machines[i], machines[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})

	keepNodes := sets.New[string]() // Nodes with a Machine whose server exists
	keepPods := sets.New[string]()  // control plane Nodes whose static pods may exist
	removal := map[string]string{}  // why a Node goes, for the logs
	var errs []error
	newestVersion := ""
	for _, m := range machines {
		nodeName := m.Spec.InfrastructureRef.Name
		if nodeName == "" {
			continue
		}
		cp := isControlPlane(m)
		inst, err := e.instance(ctx, m)
		if err != nil {
			// Unknown: leave this machine's objects as they are.
			errs = append(errs, err)
			keepNodes.Insert(nodeName)
			keepPods.Insert(nodeName)
			continue
		}
		if inst.gone {
			removal[nodeName] = inst.state
			if inst.state == "DELETED" {
				removal[nodeName] = "instance DELETED"
			}
			continue
		}
		keepNodes.Insert(nodeName)
		hasNode, err := e.syncNode(ctx, log, rg, m, nodeName, cp, inst)
		if err != nil {
			errs = append(errs, err)
			keepPods.Insert(nodeName)
			continue
		}
		if !cp || !hasNode {
			continue
		}
		keepPods.Insert(nodeName)
		if m.DeletionTimestamp.IsZero() {
			if err := e.ensureStaticPods(ctx, log, rg, cluster, m, nodeName); err != nil {
				errs = append(errs, err)
			}
			newestVersion = m.Spec.Version
		}
	}

	if err := e.collectGarbage(ctx, log, rg, group, keepNodes, keepPods, removal); err != nil {
		errs = append(errs, err)
	}
	if err := e.ensureEtcdLeader(ctx, log, rg); err != nil {
		errs = append(errs, err)
	}
	if newestVersion != "" {
		if err := e.ensureClusterObjects(ctx, log, rg, cluster, newestVersion); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// syncNode registers the Machine's Node (kubelet) and keeps its readiness, addresses and version
// in line with the server (cloud controller manager, node lifecycle controller). It reports
// whether the Node exists afterwards.
func (e *emulator) syncNode(ctx context.Context, log logr.Logger, rg inmemoryruntime.Client, m *clusterv1.Machine, name string, cp bool, inst instance) (bool, error) {
	node := &corev1.Node{}
	err := rg.Get(ctx, client.ObjectKey{Name: name}, node)
	if apierrors.IsNotFound(err) {
		// A deleting Machine's Node is gone for good (Cluster API deleted it); a server that is
		// not provisioned or not running has no kubelet to register one.
		if !m.DeletionTimestamp.IsZero() || !provisioned(m) || inst.down {
			return false, nil
		}
		node = newNode(m, name, cp)
		if err := rg.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, err
		}
		log.Info("Node registered", "node", name, "providerID", m.Spec.ProviderID, "controlPlane", cp, "version", m.Spec.Version)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if !node.DeletionTimestamp.IsZero() {
		return false, nil
	}

	before := node.DeepCopy()
	ready := nodeReady(node)
	switch {
	case inst.down && ready != corev1.ConditionUnknown:
		setNodeReadiness(node, false)
	case !inst.down && ready != corev1.ConditionTrue:
		setNodeReadiness(node, true)
	}
	if node.Spec.ProviderID == "" {
		node.Spec.ProviderID = m.Spec.ProviderID
	}
	if addrs := nodeAddresses(m, name); !apiequality.Semantic.DeepEqual(node.Status.Addresses, addrs) {
		node.Status.Addresses = addrs
	}
	if m.Spec.Version != "" {
		node.Status.NodeInfo.KubeletVersion = m.Spec.Version
	}
	if apiequality.Semantic.DeepEqual(before, node) {
		return true, nil
	}
	if err := rg.Update(ctx, node); err != nil {
		return true, err
	}
	if now := nodeReady(node); now != ready {
		log.Info("Node readiness changed", "node", name, "ready", now, "instanceState", inst.state)
	}
	return true, nil
}

// ensureStaticPods creates the control plane static pods of a node; the etcd pod carries the
// member's identity (cluster ID, member ID and, for the first member, leadership), which the
// in-memory etcd server answers from.
func (e *emulator) ensureStaticPods(ctx context.Context, log logr.Logger, rg inmemoryruntime.Client, cluster *clusterv1.Cluster, m *clusterv1.Machine, nodeName string) error {
	var created []string
	for _, component := range staticPodComponents {
		name := staticPodName(component, nodeName)
		if err := rg.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: name}, &corev1.Pod{}); err == nil {
			continue
		} else if !apierrors.IsNotFound(err) {
			return err
		}
		pod := newStaticPod(component, nodeName, m.Spec.Version, internalIP(m))
		if component == "etcd" {
			ann, err := etcdMemberAnnotations(ctx, rg, cluster, m)
			if err != nil {
				return err
			}
			for k, v := range ann {
				pod.Annotations[k] = v
			}
		}
		if err := rg.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		created = append(created, name)
	}
	if len(created) > 0 {
		log.Info("Static pods created", "node", nodeName, "pods", created)
	}
	return nil
}

// list reads core/v1 objects of a kind from a workload cluster. Objects written through the
// in-memory API server are stored unstructured, which the in-memory cache cannot put into a typed
// list, so this lists unstructured and converts.
func list[T any](ctx context.Context, rg inmemoryruntime.Client, kind string, opts ...client.ListOption) ([]T, error) {
	ul := &unstructured.UnstructuredList{}
	ul.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind + "List"))
	if err := rg.List(ctx, ul, opts...); err != nil {
		return nil, err
	}
	out := make([]T, len(ul.Items))
	for i := range ul.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(ul.Items[i].Object, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func listControlPlanePods(ctx context.Context, rg inmemoryruntime.Client, component string) ([]corev1.Pod, error) {
	selector := client.MatchingLabels{"tier": "control-plane"}
	if component != "" {
		selector["component"] = component
	}
	return list[corev1.Pod](ctx, rg, "Pod", client.InNamespace(metav1.NamespaceSystem), selector)
}

func listEtcdPods(ctx context.Context, rg inmemoryruntime.Client) ([]corev1.Pod, error) {
	return listControlPlanePods(ctx, rg, "etcd")
}

// activeMember: an etcd pod that is still a member (not removed by KCP, not being deleted).
func activeMember(p *corev1.Pod) bool {
	_, removed := p.Annotations[cloudv1.EtcdMemberRemoved]
	return !removed && p.DeletionTimestamp.IsZero()
}

// etcdMemberAnnotations joins a new member to the cluster's etcd: the existing cluster ID (or a
// stable one derived from the Cluster), a stable member ID derived from the Machine, and
// leadership when there is no leader.
func etcdMemberAnnotations(ctx context.Context, rg inmemoryruntime.Client, cluster *clusterv1.Cluster, m *clusterv1.Machine) (map[string]string, error) {
	pods, err := listEtcdPods(ctx, rg)
	if err != nil {
		return nil, err
	}
	clusterID := ""
	used := sets.New[string]()
	hasLeader := false
	for i := range pods {
		p := &pods[i]
		used.Insert(p.Annotations[cloudv1.EtcdMemberIDAnnotationName])
		if !activeMember(p) {
			continue
		}
		if clusterID == "" {
			clusterID = p.Annotations[cloudv1.EtcdClusterIDAnnotationName]
		}
		if _, err := time.Parse(time.RFC3339, p.Annotations[cloudv1.EtcdLeaderFromAnnotationName]); err == nil {
			hasLeader = true
		}
	}
	if clusterID == "" {
		clusterID = strconv.FormatUint(stableID(string(cluster.UID), "etcd-cluster"), 10)
	}
	member := stableID(string(cluster.UID), string(m.UID))
	for used.Has(strconv.FormatUint(member, 10)) {
		member = (member + 1) & (1<<63 - 1)
	}
	ann := map[string]string{
		cloudv1.EtcdClusterIDAnnotationName: clusterID,
		cloudv1.EtcdMemberIDAnnotationName:  strconv.FormatUint(member, 10),
	}
	if !hasLeader {
		ann[cloudv1.EtcdLeaderFromAnnotationName] = time.Now().UTC().Format(time.RFC3339)
	}
	return ann, nil
}

// ensureEtcdLeader elects the oldest member when the remaining members have no leader (its
// leader's pod went with its server), as a real etcd cluster would.
func (e *emulator) ensureEtcdLeader(ctx context.Context, log logr.Logger, rg inmemoryruntime.Client) error {
	pods, err := listEtcdPods(ctx, rg)
	if err != nil {
		return err
	}
	var active []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if !activeMember(p) {
			continue
		}
		if _, err := time.Parse(time.RFC3339, p.Annotations[cloudv1.EtcdLeaderFromAnnotationName]); err == nil {
			return nil
		}
		active = append(active, p)
	}
	if len(active) == 0 {
		return nil
	}
	sort.Slice(active, func(i, j int) bool {
		a, b := active[i], active[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	leader := active[0]
	original := leader.DeepCopy()
	leader.Annotations[cloudv1.EtcdLeaderFromAnnotationName] = time.Now().UTC().Format(time.RFC3339)
	if err := rg.Patch(ctx, leader, client.MergeFrom(original)); err != nil {
		return err
	}
	log.Info("etcd leader elected", "member", leader.Name)
	return nil
}

// collectGarbage deletes the Nodes of Machines (or servers) that are gone, as the cloud controller
// manager would, and the static pods of control plane nodes that are gone, as the garbage
// collector does for mirror pods.
func (e *emulator) collectGarbage(ctx context.Context, log logr.Logger, rg inmemoryruntime.Client, group string, keepNodes, keepPods sets.Set[string], removal map[string]string) error {
	var errs []error
	nodes, err := list[corev1.Node](ctx, rg, "Node")
	if err != nil {
		return err
	}
	for i := range nodes {
		n := &nodes[i]
		if keepNodes.Has(n.Name) || !n.DeletionTimestamp.IsZero() {
			continue
		}
		why := removal[n.Name]
		if why == "" {
			why = "Machine gone"
		}
		if err := rg.Delete(ctx, n); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		log.Info("Node deleted", "node", n.Name, "reason", why)
	}

	pods, err := listControlPlanePods(ctx, rg, "")
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	removed := map[string][]string{}
	for i := range pods {
		p := &pods[i]
		if keepPods.Has(p.Spec.NodeName) || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if err := rg.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		if p.Labels["component"] == "etcd" {
			e.listeners.forgetEtcdMember(group, p.Name)
		}
		removed[p.Spec.NodeName] = append(removed[p.Spec.NodeName], p.Name)
	}
	for node, names := range removed {
		log.Info("Static pods removed", "node", node, "pods", names)
	}
	return errors.Join(errs...)
}

// ensureClusterObjects creates, once, what kubeadm init leaves in a new cluster and KCP reads or
// rewrites: kubeadm-config, the kubeadm:get-nodes RBAC, kube-proxy and CoreDNS.
func (e *emulator) ensureClusterObjects(ctx context.Context, log logr.Logger, rg inmemoryruntime.Client, cluster *clusterv1.Cluster, version string) error {
	kubeadmConfig, err := kubeadmConfigMap(cluster, version)
	if err != nil {
		return err
	}
	role, binding := kubeadmRBAC()
	corefile, coredns := coreDNS(cluster, version)
	var created []string
	for _, obj := range []client.Object{kubeadmConfig, role, binding, kubeProxy(version), corefile, coredns} {
		probe := obj.DeepCopyObject().(client.Object)
		if err := rg.Get(ctx, client.ObjectKeyFromObject(obj), probe); err == nil {
			continue
		} else if !apierrors.IsNotFound(err) {
			return err
		}
		if err := rg.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		// Create set the kind.
		created = append(created, obj.GetObjectKind().GroupVersionKind().Kind+"/"+obj.GetName())
	}
	if len(created) > 0 {
		log.Info("kubeadm objects created", "objects", created, "version", version)
	}
	return nil
}

// Event mapping: a Machine, infrastructure machine or CA Secret concerns its Cluster.

func clusterOfLabel(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[clusterv1.ClusterNameLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

func clusterOfSecret(_ context.Context, o client.Object) []reconcile.Request {
	for _, suffix := range []string{"-ca", "-etcd"} {
		if name, ok := strings.CutSuffix(o.GetName(), suffix); ok && name != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
		}
	}
	return nil
}
