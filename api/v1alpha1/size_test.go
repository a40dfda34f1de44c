package v1alpha1

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// etcdRequestLimit is etcd's default --max-request-bytes: the largest
// object the API server can store.
const etcdRequestLimit = 1536 * 1024

// statusBudget is the part of etcd's limit the status may take at the
// replica cap; the other 512 KiB are for the spec (a large pod template,
// and the copy of it that a client-side apply keeps in an annotation),
// the rest of the metadata and managedFields.
const statusBudget = 1024 * 1024

// The cap on spec.replicas comes from status.podNames, which names every
// live pod: at the cap, with pod names of the longest kind (63
// characters), every pod surged (maxSurge 100%) and every condition's
// message as long as the schema allows, the status must fit in
// statusBudget. A ReplicaSet has no such list, and no cap. Raising the
// cap later is an allowed CRD change and lowering it is not, so the cap
// stays where this test passes.
func TestAPodSetAtTheReplicaCapFitsInEtcd(t *testing.T) {
	data, err := os.ReadFile("../../config/crd/bases/app.example.com_podsets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	replicas := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["replicas"]
	if replicas.Maximum == nil {
		t.Fatal("spec.replicas has no maximum")
	}
	maxReplicas := int(*replicas.Maximum)

	live := 2 * maxReplicas
	st := PodSetStatus{Replicas: int32(live), ReadyReplicas: int32(live), AvailableReplicas: int32(live)}
	name := strings.Repeat("w", 58) // generateName keeps 58 characters of the PodSet's name
	for i := range live {
		st.PodNames = append(st.PodNames, fmt.Sprintf("%s-%05d", name, i))
	}
	long := strings.Repeat("m", 32768) // metav1.Condition's maxLength
	for _, c := range []string{ConditionAvailable, ConditionProgressing, ConditionReplicaFailure, ConditionReconciling, ConditionStalled} {
		st.Conditions = append(st.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: "SomeReason", Message: long})
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status at %d replicas, %d live pods named like %s-xxxxx: %d bytes (%.0f%% of etcd's %d)",
		maxReplicas, live, name, len(b), 100*float64(len(b))/etcdRequestLimit, etcdRequestLimit)
	if len(b) > statusBudget {
		t.Fatalf("the status at the replica cap takes %d bytes, over its budget of %d of etcd's %d", len(b), statusBudget, etcdRequestLimit)
	}
}
