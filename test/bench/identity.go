package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/example/podset-operator/test/localcluster"
)

// The operator runs as it is installed: under the ServiceAccount and RBAC
// of config/default (what `make deploy` applies and the bundle ships), with
// a token from the TokenRequest API. Its identity decides how API Priority
// and Fairness treats its requests: a ServiceAccount outside kube-system
// falls in the `workload-low` priority level, while cluster-admin
// (system:masters) is exempt and never queues. `-operator-identity admin`
// runs it with the cluster-admin kubeconfig instead, for an A/B.
const (
	identityServiceAccount = "serviceaccount"
	identityAdmin          = "admin"
)

// operatorIdentity is who the operator is in one run set.
type operatorIdentity struct {
	// user is the name the API server's audit log gives the operator.
	user string
	// flowSchema is the APF flow schema its requests are classified into
	// by the API server's default configuration; empty when exempt.
	flowSchema string
	// rbac holds config/default's Namespace, ServiceAccount and RBAC
	// objects; empty for the admin identity.
	rbac              []*unstructured.Unstructured
	namespace, saName string
}

// rbacKinds are what config/default gives the operator's identity; its
// Deployment and Service are left out, since the benchmark runs the manager
// binary itself.
var rbacKinds = map[string]schema.GroupVersionResource{
	"Namespace":          {Version: "v1", Resource: "namespaces"},
	"ServiceAccount":     {Version: "v1", Resource: "serviceaccounts"},
	"Role":               {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"RoleBinding":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
}

// newOperatorIdentity renders configDir with the cluster's kubectl, before
// the cluster starts, so that the audit policy can name the ServiceAccount.
func newOperatorIdentity(kind, binDir, configDir string) (*operatorIdentity, error) {
	switch kind {
	case identityAdmin:
		// Exempt from APF, with the benchmark and kwok: no figure of the
		// operator's own to read there.
		return &operatorIdentity{user: adminUser}, nil
	case identityServiceAccount:
	default:
		return nil, fmt.Errorf("-operator-identity %q: want %s or %s", kind, identityServiceAccount, identityAdmin)
	}
	objs, err := localcluster.Render(exec.Command(filepath.Join(binDir, "kubectl"), "kustomize", configDir))
	if err != nil {
		return nil, err
	}
	id := &operatorIdentity{flowSchema: "service-accounts"}
	for _, u := range objs {
		if _, ok := rbacKinds[u.GetKind()]; !ok {
			continue
		}
		if u.GetKind() == "ServiceAccount" {
			id.namespace, id.saName = u.GetNamespace(), u.GetName()
		}
		id.rbac = append(id.rbac, u)
	}
	if id.saName == "" {
		return nil, fmt.Errorf("%s renders no ServiceAccount", configDir)
	}
	id.user = fmt.Sprintf("system:serviceaccount:%s:%s", id.namespace, id.saName)
	return id, nil
}

// install applies the identity's objects (server-side, as `kubectl apply
// --server-side` would) and returns a kubeconfig for the operator.
func (id *operatorIdentity) install(ctx context.Context, c *localcluster.Cluster, dc dynamic.Interface) (string, error) {
	if len(id.rbac) == 0 {
		return c.KubeconfigPath(), nil
	}
	for _, u := range id.rbac {
		data, err := u.MarshalJSON()
		if err != nil {
			return "", err
		}
		gvr := rbacKinds[u.GetKind()]
		var ri dynamic.ResourceInterface = dc.Resource(gvr)
		if u.GetNamespace() != "" {
			ri = dc.Resource(gvr).Namespace(u.GetNamespace())
		}
		if _, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "podset-bench", Force: ptr.To(true)}); err != nil {
			return "", fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	// Long enough for the longest run set (bench-growth's largest size).
	cfg, err := c.ServiceAccountConfig(ctx, id.namespace, id.saName, 24*time.Hour)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.WorkDir(), "operator.kubeconfig")
	return path, localcluster.WriteKubeconfig(path, cfg)
}
