//go:build e2e && chaos

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The throttled API server: API Priority and Fairness gives the operator's
// requests, and those of kube-controller-manager's ReplicaSet and
// Deployment controllers (the reference), each a priority level of its own
// with one share of the server's seats (3 of its 600) and no queue, so that
// what does not fit is rejected at once with 429, as a priority level whose
// queues are full rejects. Leases are left where they were, as an admin who
// squeezes an operator's work keeps its leader election alive; the
// reference's controllers run without leader election here. Only the
// requests sent under the controllers' own ServiceAccounts are squeezed and
// counted: kube-controller-manager's shared informers list and watch under
// its own identity, the operator's under its ServiceAccount; in a 30 s
// squeeze those are a handful of requests either way.

const (
	squeezePrecedence = 200
	// leasePrecedence comes first: the operator's Lease requests keep the
	// leader-election priority level that kube-controller-manager's own
	// leader election uses.
	leasePrecedence = 150
)

// The users whose requests squeezeFlows counts besides the operator's.
var referenceControllers = []string{
	"system:serviceaccount:kube-system:replicaset-controller",
	"system:serviceaccount:kube-system:deployment-controller",
}

func squeezedLevel(name string) *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](1),
				LendablePercent:          ptr.To[int32](0),
				BorrowingLimitPercent:    ptr.To[int32](0),
				LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}
}

func flowSchema(name, level string, precedence int32, subjects []flowcontrolv1.Subject, rule flowcontrolv1.PolicyRulesWithSubjects) *flowcontrolv1.FlowSchema {
	rule.Subjects = subjects
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         precedence,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules:                      []flowcontrolv1.PolicyRulesWithSubjects{rule},
		},
	}
}

var everything = flowcontrolv1.PolicyRulesWithSubjects{
	ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
		Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"},
	}},
	NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
}

// squeezeFlows applies the configuration above and returns what undoes it
// (again at the test's end: it is idempotent).
func squeezeFlows(t *testing.T) (undo func()) {
	operator := []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount,
		ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: env.operatorNS, Name: env.operatorSA}}}
	var reference []flowcontrolv1.Subject
	for _, name := range []string{"replicaset-controller", "deployment-controller"} {
		reference = append(reference, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount,
			ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "kube-system", Name: name}})
	}
	objs := []client.Object{
		squeezedLevel("chaos-squeezed-operator"),
		squeezedLevel("chaos-squeezed-reference"),
		flowSchema("chaos-operator-leases", "leader-election", leasePrecedence, operator, flowcontrolv1.PolicyRulesWithSubjects{
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
				Verbs: []string{"*"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Namespaces: []string{"*"},
			}},
		}),
		flowSchema("chaos-squeezed-operator", "chaos-squeezed-operator", squeezePrecedence, operator, everything),
		flowSchema("chaos-squeezed-reference", "chaos-squeezed-reference", squeezePrecedence, reference, everything),
	}
	undo = func() {
		// Also from a cleanup, once t.Context() is done.
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		for _, o := range objs {
			Expect(client.IgnoreNotFound(env.admin.Delete(ctx, o))).To(Succeed())
		}
	}
	// Undone even if a create below fails.
	t.Cleanup(undo)
	for _, o := range objs {
		Expect(env.admin.Create(t.Context(), o)).To(Succeed())
	}
	return undo
}

// requestCount is one identity's requests in a span of time, from the
// audit log: all, and those rejected with 429.
type requestCount struct{ all, rejected int }

func (c requestCount) String(span time.Duration) string {
	return fmt.Sprintf("%d requests (%.1f/s), %d rejected with 429", c.all, float64(c.all)/span.Seconds(), c.rejected)
}

// auditRequests counts, per user, the requests the API server received
// from users in [from, to).
func auditRequests(users []string, from, to time.Time) (map[string]requestCount, error) {
	want := map[string]bool{}
	for _, u := range users {
		want[u] = true
	}
	type request struct {
		User struct {
			Username string `json:"username"`
		} `json:"user"`
		ResponseStatus *struct {
			Code int `json:"code"`
		} `json:"responseStatus"`
		RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	}
	counts := map[string]requestCount{}
	err := eachClusterAuditEvent(func(e request) {
		if at := e.RequestReceivedTimestamp; !want[e.User.Username] || at.Before(from) || !at.Before(to) {
			return
		}
		c := counts[e.User.Username]
		c.all++
		if e.ResponseStatus != nil && e.ResponseStatus.Code == 429 {
			c.rejected++
		}
		counts[e.User.Username] = c
	})
	return counts, err
}

// squeezeFor squeezes the controllers for d, then reports and checks the
// requests each sent meanwhile: the operator may not answer 429s with more
// requests than the ReplicaSet and Deployment controllers send through the
// same squeeze, beyond a margin for the work of the operator's own that
// they do not have (its status writes and events).
func squeezeFor(t *testing.T, d time.Duration) {
	undo := squeezeFlows(t)
	from := time.Now()
	time.Sleep(d)
	undo()
	to := time.Now()
	operatorUser := fmt.Sprintf("system:serviceaccount:%s:%s", env.operatorNS, env.operatorSA)
	var counts map[string]requestCount
	// Requests sent just before the end may still be in flight; their
	// events are logged when they complete.
	time.Sleep(2 * time.Second)
	counts, err := auditRequests(append([]string{operatorUser}, referenceControllers...), from, to)
	Expect(err).NotTo(HaveOccurred())
	var ref requestCount
	for _, u := range referenceControllers {
		ref.all += counts[u].all
		ref.rejected += counts[u].rejected
	}
	op := counts[operatorUser]
	step("squeezed for %s: the operator %s; the ReplicaSet and Deployment controllers %s", to.Sub(from).Round(100*time.Millisecond), op.String(to.Sub(from)), ref.String(to.Sub(from)))
	Expect(op.all).To(BeNumerically(">", 0), "no request of the operator in the audit log: it is not being read right")
	Expect(op.all).To(BeNumerically("<=", 2*ref.all+100), "the operator's requests while throttled, against the reference's")
}
