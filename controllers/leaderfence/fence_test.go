package leaderfence

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// testNow is the fixed "now" of the tests, far from the wall clock so that
// code reading the wall clock instead of the fence's clock shows.
var testNow = time.Date(2021, time.March, 4, 12, 0, 0, 0, time.UTC)

// fakeLock is a lease lock whose writes succeed or fail on demand, held by
// holder, written updates times.
type fakeLock struct {
	resourcelock.Interface
	fail    bool
	holder  string
	updates int
	// whileSent, when set, runs while an update is on its way.
	whileSent func()
}

func (l *fakeLock) Update(_ context.Context, ler resourcelock.LeaderElectionRecord) error {
	if l.whileSent != nil {
		l.whileSent()
	}
	if l.fail {
		return errors.New("the lease is held by another replica")
	}
	l.updates++
	l.holder = ler.HolderIdentity
	return nil
}

func (l *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return &resourcelock.LeaderElectionRecord{HolderIdentity: l.holder}, nil, nil
}

func (l *fakeLock) Identity() string { return "me" }

// client-go's release decides whether this replica leads from what it knew
// before reading the lease: a replica that lost its lease while paused
// released its successor's lease on its way out. The lock refuses that.
func TestFencedLockReleasesOnlyItsOwnLease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	lock := &fakeLock{holder: "successor"}
	wrapped := New(2 * time.Second).Wrap(lock)

	_, _, err := wrapped.Get(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wrapped.Update(ctx, resourcelock.LeaderElectionRecord{})).To(MatchError(errNotTheHolder))
	g.Expect(lock.updates).To(BeZero())
	g.Expect(lock.holder).To(Equal("successor"))

	// Its own lease it releases.
	lock.holder = "me"
	_, _, err = wrapped.Get(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wrapped.Update(ctx, resourcelock.LeaderElectionRecord{})).To(Succeed())
	g.Expect(lock.holder).To(BeEmpty())
}

// A leader that reads the lease held by another replica stops at once,
// not at its renew deadline.
func TestLeaderFenceClosesWhenAnotherReplicaHoldsTheLease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	clock := testNow
	f := New(2 * time.Second)
	f.now = func() time.Time { return clock }
	f.lastTick = clock
	lock := &fakeLock{holder: "me"}
	wrapped := f.Wrap(lock)
	g.Expect(wrapped.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).To(Succeed())
	g.Expect(f.Allow()).To(Succeed())

	clock = clock.Add(time.Second)
	lock.holder = "successor"
	_, _, err := wrapped.Get(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Allow()).To(MatchError(ErrFenced))

	// Leading again: the fence opens with its next write of the lease.
	clock = clock.Add(time.Second)
	g.Expect(wrapped.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).To(Succeed())
	g.Expect(f.Allow()).To(Succeed())
}

func TestLeaderFence(t *testing.T) {
	g := NewWithT(t)
	clock := testNow
	f := New(2 * time.Second)
	f.now = func() time.Time { return clock }
	f.lastTick = clock
	lock := &fakeLock{}
	wrapped := f.Wrap(lock)
	advance := func(d time.Duration) { clock = clock.Add(d) }

	// Ticking along: allowed, without any renewal.
	for range 30 {
		advance(100 * time.Millisecond)
		f.observe()
	}
	g.Expect(f.Allow()).To(Succeed())

	// Paused for 20 s: the first worker to run after the resume is refused,
	// even before the ticker saw the gap.
	advance(20 * time.Second)
	g.Expect(f.Allow()).To(MatchError(ErrFenced))
	advance(100 * time.Millisecond)
	f.observe()
	g.Expect(f.Allow()).To(MatchError(ErrFenced), "still refused: no renewal yet")

	// The lease is another's now: the renewal fails, the fence holds.
	lock.fail = true
	g.Expect(wrapped.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).NotTo(Succeed())
	g.Expect(f.Allow()).To(MatchError(ErrFenced))

	// Still the leader after all: a successful renewal lifts the fence.
	lock.fail = false
	advance(time.Second)
	g.Expect(wrapped.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).To(Succeed())
	g.Expect(f.Allow()).To(Succeed())
	advance(100 * time.Millisecond)
	g.Expect(f.Allow()).To(Succeed())
}

// A renewal sent just before a pause is answered after the resume. It says
// the replica led before the pause, not after it: the successor may hold the
// lease by now. The fault matrix saw a resumed replica act on such an answer
// beside its successor (84 live pods for a bound of 63).
func TestLeaderFenceIgnoresARenewalSentBeforeThePause(t *testing.T) {
	g := NewWithT(t)
	clock := testNow
	f := New(2 * time.Second)
	f.now = func() time.Time { return clock }
	f.lastTick = clock
	lock := &fakeLock{}
	wrapped := f.Wrap(lock)

	lock.whileSent = func() {
		clock = clock.Add(20 * time.Second) // paused with the write out
		f.observe()                         // the resume is noticed first
		clock = clock.Add(100 * time.Millisecond)
	}
	g.Expect(wrapped.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).To(Succeed())
	g.Expect(f.Allow()).To(MatchError(ErrFenced), "a renewal sent before the pause opened the fence")

	// A renewal sent after it does.
	lock.whileSent = nil
	clock = clock.Add(time.Second)
	g.Expect(wrapped.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).To(Succeed())
	g.Expect(f.Allow()).To(Succeed())
}

// The pause can fall between a worker's check of the fence and its request:
// the transport asks the fence again just before the request leaves, and a
// refused write is never sent and counts as not made.
func TestFencedTransportRefusesWritesAfterAPause(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Method]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`)
	}))
	defer srv.Close()
	sent := func(method string) int {
		mu.Lock()
		defer mu.Unlock()
		return seen[method]
	}

	clock := testNow
	f := New(2 * time.Second)
	f.now = func() time.Time { return clock }
	f.lastTick = clock
	cs := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, WrapTransport: f.WrapTransport})
	pods := cs.CoreV1().Pods("ns")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "p-"}}

	_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sent(http.MethodPost)).To(Equal(1))

	// A worker passes the reconcile's check, and the process is paused
	// before its request leaves.
	g.Expect(f.Allow()).To(Succeed())
	clock = clock.Add(20 * time.Second)
	_, err = pods.Create(ctx, pod, metav1.CreateOptions{})
	g.Expect(err).To(MatchError(ErrFenced))
	g.Expect(sent(http.MethodPost)).To(Equal(1), "the refused create reached the server")

	// Reads go on: a standby's or a fenced replica's caches stay warm.
	_, err = pods.List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sent(http.MethodGet)).To(Equal(1))
	// And so do token reviews, which the metrics endpoint asks of every
	// scrape, on a standby too.
	_, err = cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{})
	g.Expect(errors.Is(err, ErrFenced)).To(BeFalse(), "the token review was fenced")
	g.Expect(sent(http.MethodPost)).To(Equal(2), "the token review did not reach the server")

	// Once the lease is renewed, writes go through again.
	clock = clock.Add(time.Second)
	f.renewed(f.now())
	_, err = pods.Create(ctx, pod, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sent(http.MethodPost)).To(Equal(3))
}

// pauseAfter pauses the process, on a fake clock, once a request has passed
// the fence's round-trip check: the request then waits on its connection
// across the pause, as a slow-start batch's creates do behind each other.
type pauseAfter struct {
	next  http.RoundTripper
	pause func()
	armed bool
}

func (p *pauseAfter) RoundTrip(req *http.Request) (*http.Response, error) {
	if p.armed {
		p.armed = false
		p.pause()
	}
	return p.next.RoundTrip(req)
}

// A request that passed the round trip's check before a pause, and waited
// across it for its turn on the HTTP/2 connection, is refused when its body
// is read to be sent, so it never reaches the API server after the resume;
// reads go on as before, and writes once the lease is renewed.
func TestFencedBodySendsNothingQueuedBeforeAPause(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Over HTTP/2 the handler starts with the headers; like the API
		// server, it acts on nothing before it has the whole body.
		if _, err := io.ReadAll(r.Body); err != nil {
			return
		}
		mu.Lock()
		seen[r.Method]++
		if r.ProtoMajor != 2 {
			seen["not HTTP/2"]++
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	sent := func(what string) int {
		mu.Lock()
		defer mu.Unlock()
		return seen[what]
	}

	// The connections' goroutines read the clock too.
	var clockMu sync.Mutex
	clock := testNow
	advance := func(d time.Duration) {
		clockMu.Lock()
		defer clockMu.Unlock()
		clock = clock.Add(d)
	}
	f := New(2 * time.Second)
	f.now = func() time.Time {
		clockMu.Lock()
		defer clockMu.Unlock()
		return clock
	}
	f.lastTick = clock
	pauser := &pauseAfter{pause: func() { advance(20 * time.Second) }}
	cs := kubernetes.NewForConfigOrDie(&rest.Config{
		Host:            srv.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			pauser.next = rt
			return f.WrapTransport(pauser)
		},
	})
	pods := cs.CoreV1().Pods("ns")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "p-"}}

	_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sent(http.MethodPost)).To(Equal(1))

	pauser.armed = true
	_, err = pods.Create(ctx, pod, metav1.CreateOptions{})
	g.Expect(err).To(MatchError(ErrFenced))
	g.Expect(sent(http.MethodPost)).To(Equal(1), "the create queued across the pause reached the server")

	// Reads go on, on the same connection.
	_, err = pods.List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sent(http.MethodGet)).To(Equal(1))
	// Writes wait for the lease's renewal, as before.
	_, err = pods.Create(ctx, pod, metav1.CreateOptions{})
	g.Expect(err).To(MatchError(ErrFenced))
	advance(time.Second)
	f.renewed(f.now())
	_, err = pods.Create(ctx, pod, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sent(http.MethodPost)).To(Equal(2))
	g.Expect(sent("not HTTP/2")).To(BeZero(), "the test must run over HTTP/2, as the manager does")
}

// A replica run without a fence (nil) is never fenced and notices no pause.
func TestNilFenceAllowsEverything(t *testing.T) {
	g := NewWithT(t)
	var f *Fence
	g.Expect(f.Allow()).To(Succeed())
	g.Expect(f.Trips()).To(BeZero())
}
