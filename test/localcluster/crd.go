package localcluster

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitForCRDEstablished waits until the named CustomResourceDefinition is
// served. It is not `kubectl wait --for=condition=Established`: a CRD's
// status.conditions is serialized as null until the API server's
// establishing controller first writes it, and kubectl wait fails on a null
// list instead of waiting, so it fails whenever it runs first.
func (c *Cluster) WaitForCRDEstablished(ctx context.Context, name string, timeout time.Duration) error {
	cs, err := apiextensionsclient.NewForConfig(c.admin)
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		crd, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			last = "not found"
			return false, nil
		}
		if err != nil {
			return false, err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		last = fmt.Sprintf("conditions %v", crd.Status.Conditions)
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established within %s (%s): %w", name, timeout, last, err)
	}
	return nil
}
