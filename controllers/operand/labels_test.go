package operand

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

func TestPodSetNames(t *testing.T) {
	controller := func(apiVersion, kind, name string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: "uid", Controller: ptr.To(true)}
	}
	podSet := func(name string) metav1.OwnerReference {
		return controller(appv1alpha1.GroupVersion.String(), "PodSet", name)
	}
	labelled := func(name string) map[string]string { return map[string]string{appv1alpha1.LabelPodSet: name} }
	tests := []struct {
		name   string
		labels map[string]string
		refs   []metav1.OwnerReference
		want   []string
	}{
		{"labelled and controlled by one PodSet", labelled("web"), []metav1.OwnerReference{podSet("web")}, []string{"web"}},
		{"relabelled for another PodSet", labelled("api"), []metav1.OwnerReference{podSet("web")}, []string{"api", "web"}},
		{"controlled, label removed", map[string]string{"app": "web"}, []metav1.OwnerReference{podSet("web")}, []string{"web"}},
		{"an orphan", labelled("web"), nil, []string{"web"}},
		{"another version of the API group", labelled("api"), []metav1.OwnerReference{controller("app.example.com/v1", "PodSet", "web")}, []string{"api", "web"}},
		{"a ReplicaSet's", labelled("web"), []metav1.OwnerReference{controller("apps/v1", "ReplicaSet", "rs")}, []string{"web"}},
		{"a PodSet of another group", nil, []metav1.OwnerReference{controller("other.example.com/v1", "PodSet", "web")}, nil},
		{"owned but not controlled", nil, []metav1.OwnerReference{{APIVersion: appv1alpha1.GroupVersion.String(), Kind: "PodSet", Name: "web", UID: "uid"}}, nil},
		{"nothing", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Labels: tt.labels, OwnerReferences: tt.refs}
			got := PodSetNames(obj)
			if len(got) != len(tt.want) {
				t.Fatalf("PodSetNames = %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("PodSetNames = %q, want %q", got, tt.want)
				}
			}
		})
	}
}
