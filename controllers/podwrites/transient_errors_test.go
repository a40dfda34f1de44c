package podwrites

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
