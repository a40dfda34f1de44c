package status

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// Patch is the merge patch that turns orig's status into updated's,
// with every replica count in it whether it changed or not.
//
// A plain merge patch carries only the fields that differ between the two
// objects. A count the API server does not hold at all (a status written
// before the field existed, or by a patch that left it out) reads as 0, so a
// count that stays 0 would never be written: `availableReplicas` of a PodSet
// whose pods wait out minReadySeconds would be missing, not 0, and the
// printer column blank. The counts are small; sending them always is cheap.
func Patch(orig, updated *appv1alpha1.PodSet) (client.Patch, error) {
	data, err := client.MergeFrom(orig).Data(updated)
	if err != nil {
		return nil, fmt.Errorf("computing the status patch: %w", err)
	}
	var patch map[string]any
	if err := json.Unmarshal(data, &patch); err != nil {
		return nil, fmt.Errorf("reading the status patch: %w", err)
	}
	status, _ := patch["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		patch["status"] = status
	}
	st := updated.Status
	for field, n := range map[string]int32{
		"replicas":                 st.Replicas,
		"readyReplicas":            st.ReadyReplicas,
		"availableReplicas":        st.AvailableReplicas,
		"updatedReplicas":          st.UpdatedReplicas,
		"updatedReadyReplicas":     st.UpdatedReadyReplicas,
		"updatedAvailableReplicas": st.UpdatedAvailableReplicas,
		"terminatingReplicas":      st.TerminatingReplicas,
	} {
		status[field] = n
	}
	if data, err = json.Marshal(patch); err != nil {
		return nil, fmt.Errorf("encoding the status patch: %w", err)
	}
	return client.RawPatch(types.MergePatchType, data), nil
}
