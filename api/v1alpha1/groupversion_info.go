// Package v1alpha1 contains the API schema of the app.example.com v1alpha1 group.
// +kubebuilder:object:generate=true
// +groupName=app.example.com
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the PodSet API.
	GroupVersion = schema.GroupVersion{Group: "app.example.com", Version: "v1alpha1"}

	// SchemeBuilder registers the API's Go types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
