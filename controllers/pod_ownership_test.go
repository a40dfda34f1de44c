package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/slimpod"
)

// patchesOf records the body of every patch sent through the client c
// returns.
func patchesOf(bodies *[]map[string]any) interceptor.Funcs {
	return interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		data, err := patch.Data(obj)
		if err != nil {
			return err
		}
		var body map[string]any
		if err := json.Unmarshal(data, &body); err != nil {
			return err
		}
		*bodies = append(*bodies, body)
		return c.Patch(ctx, obj, patch, opts...)
	}}
}

// Adoption and release change a pod's ownerReferences and nothing else:
// their merge patches, computed from the cache's slim pod, carry only the
// owner references and the resourceVersion of the optimistic lock, so a
// field the slim pod does not hold is never sent (and never cleared).
func TestAdoptAndReleasePatchOnlyTheOwnersUnderTheLock(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(2)
	orphan := unitPod("orphan", operandtest.WithLabels(operand.Labels(ps)))
	owned := unitPod("mismatched", operandtest.ControlledByPodSet(ps.Name), operandtest.WithLabels(map[string]string{"app": "other"}))
	var bodies []map[string]any
	c := unitClientBuilder(ps, operandtest.AsPod(orphan), operandtest.AsPod(owned)).WithInterceptorFuncs(patchesOf(&bodies)).Build()
	r := &PodSetReconciler{Client: c, APIReader: c, Scheme: testScheme}
	s := &podSetScope{podSet: ps, record: newPodSetRecords().of(ps), key: consistency.Key(ps.Namespace, ps.Name, ps.UID)}

	claimed, err := r.refManager(s).ClaimPods(context.Background(), []*slimpod.Pod{orphan, owned})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claimed).To(ConsistOf(HaveField("Name", "orphan")), "the orphan adopted, the mismatched pod released")

	g.Expect(bodies).To(HaveLen(2))
	for i, body := range bodies {
		g.Expect(body).To(HaveLen(1), "patch %d: %v", i, body)
		g.Expect(body).To(HaveKey("metadata"), "patch %d", i)
		meta := body["metadata"].(map[string]any)
		g.Expect(meta).To(HaveLen(2), "patch %d: %v", i, meta)
		g.Expect(meta).To(HaveKeyWithValue("resourceVersion", "1"), "patch %d: the optimistic lock", i)
		g.Expect(meta).To(HaveKey("ownerReferences"), "patch %d", i)
	}
	g.Expect(bodies[0]["metadata"].(map[string]any)["ownerReferences"]).To(HaveLen(1), "the adoption")
	g.Expect(bodies[1]["metadata"].(map[string]any)["ownerReferences"]).To(BeNil(), "the release")
}

// Two in-place patches of one pod in one reconcile (the gate, then the
// update) each carry the resourceVersion the previous one left: patchPod
// copies the API server's answer into the reconcile's pod, so the second is
// not refused as a conflict with the first.
func TestPatchPodCarriesTheNewResourceVersionToTheNextPatch(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(1)
	pod := unitPod("web-a", operandtest.ControlledByPodSet(ps.Name))
	c := unitClientBuilder(ps, operandtest.AsPod(pod)).Build()
	r := &PodSetReconciler{Client: c, APIReader: c, Scheme: testScheme}
	s := &podSetScope{podSet: ps, record: newPodSetRecords().of(ps), key: consistency.Key(ps.Namespace, ps.Name, ps.UID)}
	mine := pod.DeepCopy() // the reconcile's copy, not the cache's
	lockedPatch := func(key string) []byte {
		return fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q,"annotations":{%q:"1"}}}`, mine.ResourceVersion, key)
	}

	g.Expect(r.patchPod(context.Background(), s, mine, "", lockedPatch("first"))).To(Succeed())
	g.Expect(mine.ResourceVersion).NotTo(Equal(pod.ResourceVersion), "the pod holds what the API server stored")
	g.Expect(r.patchPod(context.Background(), s, mine, "", lockedPatch("second"))).To(Succeed())

	stored := &corev1.Pod{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(mine), stored)).To(Succeed())
	g.Expect(stored.Annotations).To(HaveKey("first"))
	g.Expect(stored.Annotations).To(HaveKey("second"))
	g.Expect(pod.ResourceVersion).To(Equal("1"), "the cache's pod is not written")
	// The lock is real: the version the cache still shows is refused.
	stale := pod.DeepCopy()
	err := r.patchPod(context.Background(), s, stale, "", fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q,"annotations":{"third":"1"}}}`, pod.ResourceVersion))
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "%v", err)
}
