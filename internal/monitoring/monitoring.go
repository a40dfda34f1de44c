// Package monitoring has the manager apply its own ServiceMonitor and
// PrometheusRule (the Prometheus Operator's API, monitoring.coreos.com/v1)
// in its namespace, when and only when the cluster serves that API.
//
// Why the manager and not the OLM bundle or `make deploy`: an object of a
// kind the cluster does not serve makes OLM's InstallPlan fail ("Kind=
// ServiceMonitor not found on the cluster") and `kubectl apply` fail, and
// most clusters (kind, minikube, ...) do not run the Prometheus Operator. So
// the bundle ships no monitoring object, and the manager applies them once
// the API is there, including when it is installed after the operator.
//
// The objects are owned by the manager's Deployment (an ownerReference), so
// the garbage collector deletes them with it: under OLM the CSV owns the
// Deployment, so uninstalling the operator removes them too.
package monitoring

import (
	"context"
	_ "embed" // the manifests below
	"fmt"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/example/podset-operator/internal/selfapply"
)

// The manager's permissions for this package, all in its own namespace
// (controller-gen makes a Role of them; config/rbac binds it, and
// `operator-sdk generate bundle` turns it into the CSV's permissions).
// Server-side apply is a PATCH that creates the object when it is missing,
// so it needs patch and create, and no get. Finding the Deployment reads the
// manager's own pod and its ReplicaSet.
//
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors;prometheusrules,verbs=create;patch,namespace=system
// +kubebuilder:rbac:groups="",resources=pods,verbs=get,namespace=system
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get,namespace=system

var (
	// ServiceMonitorYAML is the ServiceMonitor the manager applies; config/
	// prometheus/monitor.yaml is generated from it.
	//
	//go:embed servicemonitor.yaml
	ServiceMonitorYAML []byte
	// PrometheusRuleYAML is the PrometheusRule the manager applies, and the
	// file `make test-alerts` tests; config/prometheus/prometheus_rule.yaml
	// is generated from it.
	//
	//go:embed prometheusrule.yaml
	PrometheusRuleYAML []byte
)

// GroupVersion is the Prometheus Operator's API the objects belong to.
const GroupVersion = "monitoring.coreos.com/v1"

// Objects returns the ServiceMonitor and PrometheusRule to apply in
// namespace, owned by owner (nil: no owner).
func Objects(namespace string, owner *metav1.OwnerReference) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, data := range [][]byte{ServiceMonitorYAML, PrometheusRuleYAML} {
		decoded, err := selfapply.Decode(data, GroupVersion, owner)
		if err != nil {
			return nil, err
		}
		if len(decoded) != 1 {
			return nil, fmt.Errorf("%d objects in a manifest: want one per manifest", len(decoded))
		}
		decoded[0].SetNamespace(namespace)
		objs = append(objs, decoded[0])
	}
	return objs, nil
}

// OwnerOf returns an ownerReference to the Deployment that runs pod
// namespace/name: the pod's controller is a ReplicaSet, whose controller is
// the Deployment. The ReplicaSet's ownerReference already carries the
// Deployment's name and UID, so the Deployment itself is not read.
//
// Why walk from the pod rather than take the Deployment's name from a flag:
// its name is whatever kustomize's namePrefix or the CSV made of it, and the
// pod knows its own name and namespace from the downward API wherever it
// runs.
func OwnerOf(ctx context.Context, r client.Reader, namespace, name string) (*metav1.OwnerReference, error) {
	pod := &corev1.Pod{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		return nil, fmt.Errorf("reading the manager's pod: %w", err)
	}
	rsRef := metav1.GetControllerOf(pod)
	if rsRef == nil || rsRef.Kind != "ReplicaSet" || rsRef.APIVersion != appsv1.SchemeGroupVersion.String() {
		return nil, fmt.Errorf("pod %s/%s is not controlled by a ReplicaSet: %w", namespace, name, errNoDeployment)
	}
	rs := &appsv1.ReplicaSet{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: rsRef.Name}, rs); err != nil {
		return nil, fmt.Errorf("reading the manager's ReplicaSet: %w", err)
	}
	depRef := metav1.GetControllerOf(rs)
	if depRef == nil || depRef.Kind != "Deployment" || depRef.APIVersion != appsv1.SchemeGroupVersion.String() {
		return nil, fmt.Errorf("ReplicaSet %s/%s is not controlled by a Deployment: %w", namespace, rs.Name, errNoDeployment)
	}
	// Neither controller nor blockOwnerDeletion: the Deployment does not
	// manage these objects, and blockOwnerDeletion would need update on
	// deployments/finalizers where the OwnerReferencesPermissionEnforcement
	// admission plugin is on (OpenShift).
	return &metav1.OwnerReference{
		APIVersion: depRef.APIVersion,
		Kind:       depRef.Kind,
		Name:       depRef.Name,
		UID:        depRef.UID,
	}, nil
}

// Options configure Add.
type Options struct {
	// Enabled is --monitoring-objects: false adds nothing.
	Enabled bool
	// Namespace and PodName are the manager's own pod (POD_NAMESPACE and
	// POD_NAME from the downward API). When either is empty (a manager run
	// outside a cluster and not told them) nothing is added.
	Namespace, PodName string
	// Interval between two discovery checks; selfapply.DefaultInterval when
	// zero.
	Interval time.Duration
	Log      logr.Logger
}

// Add adds an Applier to mgr as opts say; it logs one line when it adds
// none.
func Add(mgr manager.Manager, opts Options) error {
	switch {
	case !opts.Enabled:
		opts.Log.Info("not applying the ServiceMonitor and PrometheusRule: --monitoring-objects=false")
		return nil
	case opts.Namespace == "" || opts.PodName == "":
		opts.Log.Info("not applying the ServiceMonitor and PrometheusRule: the manager's pod name and namespace (POD_NAME, POD_NAMESPACE) are not set")
		return nil
	}
	disc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	return mgr.Add(NewApplier(mgr.GetClient(), mgr.GetAPIReader(), disc, opts))
}

// errNoDeployment: the manager does not run under a Deployment, so there is
// nothing to own the objects.
var errNoDeployment = fmt.Errorf("no Deployment to own the monitoring objects: %w", selfapply.ErrGiveUp)

// NewApplier returns the Applier of the monitoring objects in
// opts.Namespace, owned by the Deployment that runs pod opts.PodName. c
// writes them; r reads the manager's pod and ReplicaSet, and must not be a
// cached client: the cache covers only the watched namespaces, which need
// not include the operator's.
func NewApplier(c client.Client, r client.Reader, disc discovery.DiscoveryInterface, opts Options) *selfapply.Applier {
	var owner *metav1.OwnerReference
	return &selfapply.Applier{
		Client:       c,
		Discovery:    disc,
		GroupVersion: GroupVersion,
		Kinds:        []string{"ServiceMonitor", "PrometheusRule"},
		What:         "the ServiceMonitor and PrometheusRule",
		NotServed:    GroupVersion + " is not served (no Prometheus Operator); the ServiceMonitor and PrometheusRule will be applied if it appears",
		Objects: func(ctx context.Context) ([]*unstructured.Unstructured, error) {
			// The Deployment is found once: a new one runs a new manager.
			if owner == nil {
				o, err := OwnerOf(ctx, r, opts.Namespace, opts.PodName)
				if err != nil {
					return nil, err
				}
				owner = o
			}
			return Objects(opts.Namespace, owner)
		},
		Interval: opts.Interval,
		Log:      opts.Log,
	}
}
