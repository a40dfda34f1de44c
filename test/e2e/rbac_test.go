//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// unusedButRequired are permissions the operator needs although it never
// makes a request with them, so the audit log cannot show them.
var unusedButRequired = map[string]string{
	// The OwnerReferencesPermissionEnforcement admission plugin (enabled by
	// the local cluster, as on OpenShift) checks it when the operator sets
	// blockOwnerDeletion on its pods' controller reference.
	"app.example.com/podsets/finalizers:update": "checked by OwnerReferencesPermissionEnforcement admission",
	// The event recorder patches an event instead of creating it again when
	// the same event repeats; whether that happens during a run is timing.
	"/events:patch":              "event aggregation by the event recorder",
	"events.k8s.io/events:patch": "event aggregation by the event recorder",
	// A revision is read directly only when creating it finds its name
	// taken (a stale cache, or a hash collision).
	"apps/controllerrevisions:get": "read when a revision's name is taken",
	// In-place updates need a kubelet that restarts containers and reports
	// resources, which kwok does not: the real-node suite
	// (TestRealNode/InPlace*) makes these requests with the same RBAC.
	"/pods/status:patch": "in-place updates: the readiness gate's condition (real-node suite)",
	"/pods/resize:patch": "in-place updates: resizes (real-node suite)",
	// The InPlaceOnly admission policy is applied by server-side apply, a
	// PATCH that the API server also authorizes as create when the object
	// is missing; the audit log records it as patch.
	"admissionregistration.k8s.io/validatingadmissionpolicies:create":       "server-side apply creating the admission policy (audited as patch)",
	"admissionregistration.k8s.io/validatingadmissionpolicybindings:create": "server-side apply creating the policy's binding (audited as patch)",
	// The tenancy port of OpenShift's Thanos querier authorizes a canary
	// analysis's query for a namespace by a SubjectAccessReview of it; the
	// operator never requests pod metrics of the API server.
	"metrics.k8s.io/pods:get": "checked by the Thanos querier's tenancy proxy for canary analyses",
}

// auditEvent is the part of an audit.k8s.io/v1 Event the check reads.
type auditEvent struct {
	Verb      string `json:"verb"`
	User      struct{ Username string }
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestURI string `json:"requestURI"`
	// Annotations carry the authorizer's decision
	// (authorization.k8s.io/decision: allow or forbid).
	Annotations map[string]string `json:"annotations"`
}

// deniedByRBAC reports whether the request was refused by the authorizer. A
// 403 the authorizer allowed comes from admission: a create in a namespace
// being deleted, which the operator expects and stops at.
func (e *auditEvent) deniedByRBAC() bool {
	return e.ResponseStatus != nil && e.ResponseStatus.Code == 403 && e.Annotations["authorization.k8s.io/decision"] != "allow"
}

// testLeastPrivilege runs last. Every scenario above ran with the operator
// authenticated as its ServiceAccount with only the RBAC of config/rbac, so
// they already prove the RBAC is sufficient. Here the API server's audit log
// of the operator's requests proves (a) no request was denied, and (b) every
// permission the manager ClusterRole grants was actually used.
func testLeastPrivilege(t *testing.T) {
	user := fmt.Sprintf("system:serviceaccount:%s:%s", env.operatorNS, env.operatorSA)

	used := map[string]bool{}
	var denied []string
	requests := 0
	Expect(eachClusterAuditEvent(func(e auditEvent) {
		if e.User.Username != user || e.ObjectRef == nil {
			return
		}
		requests++
		res := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			res += "/" + e.ObjectRef.Subresource
		}
		used[e.ObjectRef.APIGroup+"/"+res+":"+e.Verb] = true
		if e.deniedByRBAC() {
			denied = append(denied, e.Verb+" "+e.RequestURI)
		}
	})).To(Succeed())
	step("the operator made %d audited requests as %s", requests, user)
	Expect(requests).To(BeNumerically(">", 0), "no request of the operator's ServiceAccount in the audit log")
	Expect(denied).To(BeEmpty(), "requests of the operator denied by RBAC")

	// What RBAC grants the ServiceAccount: the ClusterRoles and Roles bound
	// to it by config/rbac, except the ones for features the suite does not
	// turn on (leader election and authenticated metrics are off in this
	// run; they only need create/get/update on leases and
	// tokenreviews/subjectaccessreviews).
	var bindings rbacv1.ClusterRoleBindingList
	Expect(env.admin.List(t.Context(), &bindings)).To(Succeed())
	var roles []string
	for _, b := range bindings.Items {
		for _, s := range b.Subjects {
			if s.Kind == "ServiceAccount" && s.Namespace == env.operatorNS && s.Name == env.operatorSA {
				roles = append(roles, b.RoleRef.Name)
			}
		}
	}
	managerRole := "podset-operator-manager-role"
	Expect(roles).To(ContainElement(managerRole), "ClusterRoles bound to the operator")

	var role rbacv1.ClusterRole
	Expect(env.admin.Get(t.Context(), client.ObjectKey{Name: managerRole}, &role)).To(Succeed())
	var unused []string
	for _, r := range role.Rules {
		Expect(r.NonResourceURLs).To(BeEmpty(), "non-resource URLs granted")
		// A rule restricted by resourceNames counts as used once a request
		// of its kind was made: requests for other names would have been
		// denied above.
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					Expect([]string{g, res, v}).NotTo(ContainElement("*"), "wildcard in %s", role.Name)
					key := g + "/" + res + ":" + v
					if !used[key] && unusedButRequired[key] == "" && !listBehindWatch(used, key) {
						unused = append(unused, key)
					}
				}
			}
		}
	}
	slices.Sort(unused)
	Expect(unused).To(BeEmpty(), "permissions of %s never used by the operator during the suite (used: %s)",
		managerRole, strings.Join(sortedKeys(used), ", "))
}

// listBehindWatch accepts an unused "list" next to a used "watch" of the
// same resource: client-go (1.35+) informers open with a streaming watch
// (WatchListClient) that sends the initial objects, so the list an informer
// needs shows up as a watch; list stays required for the fallback to a plain
// LIST when a server does not stream.
func listBehindWatch(used map[string]bool, key string) bool {
	base, ok := strings.CutSuffix(key, ":list")
	return ok && used[base+":watch"]
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
