// Package v1alpha1 contains the API schema of the app.example.com v1alpha1 group.
// +kubebuilder:object:generate=true
// +groupName=app.example.com
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the PodSet API.
	GroupVersion = schema.GroupVersion{Group: "app.example.com", Version: "v1alpha1"}

	// SchemeBuilder registers the API's Go types with a runtime.Scheme. It
	// uses apimachinery only, so that clients can import this package
	// without pulling in controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &PodSet{}, &PodSetList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
