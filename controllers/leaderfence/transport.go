package leaderfence

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

// The fence guards a paused leader's writes at two places on their way out:
// when the request enters the HTTP transport, and when its body is read to be
// put on the wire. A reconcile checks it before each create and delete as
// well, but a pause can fall after any of these checks, and whatever passed
// the last one before the pause is sent on resume, possibly after another
// replica took over.

// WrapTransport makes every write sent through rt ask the fence first, and
// fail with ErrFenced, unsent, when it refuses. The fault matrix once saw a
// leader resumed after 17 s send 11 creates that had passed the reconcile's
// check just before the pause, for pods the new leader had made meanwhile
// (61 live pods for 50).
//
// Reads are let through: they change nothing, and the caches of a standby
// replica must stay warm. So are token and access reviews, POSTs that
// change nothing either: the metrics endpoint asks them of every scrape, on
// a standby (which the fence refuses, having read another holder) as on the
// leader. The lease lock must use a config without this wrapper, or a
// fenced replica could never renew its lease.
func (f *Fence) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return &fencedTransport{next: rt, fence: f}
}

type fencedTransport struct {
	next  http.RoundTripper
	fence *Fence
}

// changesNothing reports whether a request only reads or asks.
func changesNothing(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return strings.HasPrefix(req.URL.Path, "/apis/authentication.k8s.io/") ||
		strings.HasPrefix(req.URL.Path, "/apis/authorization.k8s.io/")
}

func (t *fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if changesNothing(req) {
		return t.next.RoundTrip(req)
	}
	if err := t.fence.Allow(); err != nil {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper must close the body, even on error
		}
		return nil, err
	}
	return t.next.RoundTrip(t.fence.fenceBody(req))
}

// fenceBody returns req with a body that asks the fence again on every read.
//
// The check in RoundTrip is not the last step before the wire: a request that
// passed it may wait its turn on the HTTP/2 connection behind the others of
// the same slow-start batch, and go out when the process resumes. The fault
// matrix saw exactly that: a leader paused inside a 50-create step sent 16
// creates that had passed the transport's check when it resumed 20 s later,
// after the new leader had made those pods (66 live pods for 50). The HTTP
// transports read a request's body only once the request has its turn on
// the connection, right before they frame it, so that read is where the
// fence asks last; the API server acts on no write before it has the whole
// body, and a request whose body fails is reset, not completed. A retry of
// the request on another connection (GetBody) is fenced the same way. What
// is left is the path of one read's bytes to the socket.
//
// Every write the manager sends has a body (creates, patches, and deletes
// with their options); one without is let through as before.
func (f *Fence) fenceBody(req *http.Request) *http.Request {
	if req.Body == nil || req.Body == http.NoBody {
		return req
	}
	// A RoundTripper must not change the request it is given.
	fenced := new(http.Request)
	*fenced = *req
	fenced.Body = &fencedBody{ReadCloser: req.Body, fence: f}
	if req.GetBody != nil {
		fenced.GetBody = func() (io.ReadCloser, error) {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			return &fencedBody{ReadCloser: body, fence: f}, nil
		}
	}
	return fenced
}

// errFencedMidBody fails a write whose body was refused by the fence after
// part of it had been handed to the connection: the API server cannot have
// acted on it over HTTP/2 (the stream is reset before its end), but over
// HTTP/1.1 with a known length the part sent may have been all of it, so it
// counts as a write that may have reached the server.
var errFencedMidBody = errors.New("this replica may have lost its leader lease while it was paused; the request was stopped after part of its body was sent")

// fencedBody is a request body that asks the fence before each read.
type fencedBody struct {
	io.ReadCloser
	fence *Fence
	// read is set once any byte has been handed out.
	read atomic.Bool
}

func (b *fencedBody) Read(p []byte) (int, error) {
	if err := b.fence.Allow(); err != nil {
		if b.read.Load() {
			return 0, errFencedMidBody
		}
		return 0, err
	}
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.read.Store(true)
	}
	return n, err
}

// WrappedRoundTripper lets client-go reach the transport underneath (to
// close idle connections, for one).
func (t *fencedTransport) WrappedRoundTripper() http.RoundTripper { return t.next }
