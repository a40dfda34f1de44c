package operandtest

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// Unstructured is ps as a tool that reads JSON from the API server gets it:
// integers as int64, which kstatus requires (encoding/json into a map
// would give float64).
func Unstructured(ps *appv1alpha1.PodSet) (*unstructured.Unstructured, error) {
	ps = ps.DeepCopy()
	ps.SetGroupVersionKind(appv1alpha1.GroupVersion.WithKind("PodSet"))
	data, err := json.Marshal(ps)
	if err != nil {
		return nil, err
	}
	obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, data)
	if err != nil {
		return nil, err
	}
	return obj.(*unstructured.Unstructured), nil
}
