package podwrites

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/example/podset-operator/controllers/leaderfence"
)

func TestMayHaveReachedServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"EOF: the server went away mid-request", &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/api/v1/namespaces/ns/pods", Err: io.EOF}, true},
		{"connection reset", &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{"server timeout", apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "create", 1), true},
		{"connection force closed while the response was awaited", &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/api/v1/namespaces/ns/pods", Err: errors.New("http2: client connection force closed via ClientConn.Close")}, true},
		{"client-side deadline", &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/api/v1/namespaces/ns/pods", Err: context.DeadlineExceeded}, true},
		{"connection refused: never sent", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, false},
		{"connection refused, wrapped by client-go", &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/api/v1/namespaces/ns/pods", Err: &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}, false},
		{"no route: never sent", &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/api/v1/namespaces/ns/pods", Err: &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}}, false},
		{"an answer: refused", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New("quota")), false},
		{"unavailable: refused", apierrors.NewServiceUnavailable("restarting"), false},
		{"internal error: etcd may have committed the write", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), true},
		{"too many requests: refused before it was processed", apierrors.NewTooManyRequests("slow down", 1), false},
		{"refused by the leader fence, as client-go wraps it: never sent", &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/api/v1/namespaces/ns/pods", Err: leaderfence.ErrFenced}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(MayHaveReachedServer(tc.err)).To(Equal(tc.want))
		})
	}
}

func TestIsOwnerMappingLag(t *testing.T) {
	// As kube-apiserver's OwnerReferencesPermissionEnforcement words it.
	lag := func(resource string) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "podset-sample-xb5kn",
			errors.New(`cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion app.example.com/v1alpha1 Kind PodSet: no matches for kind "PodSet" in version "app.example.com/v1alpha1"`))
	}
	otherForbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New("unable to validate against any security context constraint"))
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"a pod's create", lag("pods"), true},
		{"wrapped", fmt.Errorf("creating pods: %w", lag("pods")), true},
		{"alone in an aggregate, as the reconciler returns it", kerrors.NewAggregate([]error{fmt.Errorf("creating pods: %w", lag("pods"))}), true},
		{"a pod's and a revision's, aggregated", kerrors.NewAggregate([]error{fmt.Errorf("creating pods: %w", lag("pods")), lag("controllerrevisions.apps")}), true},
		{"beside another refusal", kerrors.NewAggregate([]error{lag("pods"), otherForbidden}), false},
		{"another refusal", otherForbidden, false},
		{"the same words, not a refusal", errors.New("cannot set blockOwnerDeletion in this case because cannot find RESTMapping"), false},
		{"refused blockOwnerDeletion for lack of permission", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New("cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(IsOwnerMappingLag(tc.err)).To(Equal(tc.want))
		})
	}
}
