package consistency

import (
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

const expKey = "ns/web/uid-1"

// testTimeouts are the reconciler's timings (controllers/timings.go).
var testTimeouts = Timeouts{Expectations: 5 * time.Minute, UncertainCreation: 3 * time.Second, LagThreshold: time.Second}

// newTestExpectations are expectations with testTimeouts, whose wait for
// lost events is timeout.
func newTestExpectations(timeout time.Duration) *Expectations {
	t := testTimeouts
	t.Expectations = timeout
	return NewExpectations(t)
}

func TestExpectationsUnsetKeyIsSatisfied(t *testing.T) {
	g := NewWithT(t)
	e := newTestExpectations(time.Minute)

	g.Expect(e.Satisfied(expKey)).To(BeTrue())

	e.ExpectCreations("ns/other", 1)
	g.Expect(e.Satisfied(expKey)).To(BeTrue(), "another key's expectations must not leak")
	g.Expect(e.Satisfied("ns/other")).To(BeFalse())
}

func TestExpectationsCreations(t *testing.T) {
	tests := []struct {
		name     string
		expect   int
		observed int
		want     bool
	}{
		{name: "zero expected", expect: 0, observed: 0, want: true},
		{name: "none observed", expect: 3, observed: 0, want: false},
		{name: "some observed", expect: 3, observed: 2, want: false},
		{name: "all observed", expect: 3, observed: 3, want: true},
		{name: "more observed than expected", expect: 3, observed: 5, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e := newTestExpectations(time.Minute)
			e.ExpectCreations(expKey, tt.expect)
			for range tt.observed {
				e.CreationObserved(expKey)
			}
			g.Expect(e.Satisfied(expKey)).To(Equal(tt.want))
		})
	}
}

func TestExpectationsExtraCreationObservationsAreHarmless(t *testing.T) {
	g := NewWithT(t)
	e := newTestExpectations(time.Minute)

	// Observations for a key nothing is expected of must not create an entry
	// that a later expectation would inherit.
	e.CreationObserved(expKey)
	g.Expect(e.items).NotTo(HaveKey(expKey))
	g.Expect(e.Satisfied(expKey)).To(BeTrue())

	e.ExpectCreations(expKey, 1)
	for range 3 {
		e.CreationObserved(expKey)
	}
	g.Expect(e.items[expKey].creations).To(BeZero(), "the count must not go negative")
	g.Expect(e.Satisfied(expKey)).To(BeTrue())
}

func TestExpectationsDeletionsAreTrackedByUID(t *testing.T) {
	tests := []struct {
		name     string
		expect   []types.UID
		observed []types.UID
		want     bool
	}{
		{name: "none expected", expect: nil, observed: nil, want: true},
		{name: "none observed", expect: []types.UID{"a", "b"}, observed: nil, want: false},
		{name: "all observed", expect: []types.UID{"a", "b"}, observed: []types.UID{"b", "a"}, want: true},
		{name: "same UID observed twice counts once", expect: []types.UID{"a", "b"}, observed: []types.UID{"a", "a"}, want: false},
		{name: "unknown UID counts nothing", expect: []types.UID{"a"}, observed: []types.UID{"z"}, want: false},
		{name: "unknown UID among the expected ones", expect: []types.UID{"a"}, observed: []types.UID{"z", "a"}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e := newTestExpectations(time.Minute)
			e.ExpectDeletions(expKey, tt.expect)
			for _, uid := range tt.observed {
				e.DeletionObserved(expKey, uid)
			}
			g.Expect(e.Satisfied(expKey)).To(Equal(tt.want))
		})
	}
}

func TestExpectationsTimeout(t *testing.T) {
	const timeout = time.Minute
	tests := []struct {
		name    string
		expect  func(*Expectations)
		elapsed time.Duration
		want    bool
	}{
		{name: "creation, just set", expect: expectOneCreation, elapsed: 0, want: false},
		{name: "creation, before the timeout", expect: expectOneCreation, elapsed: timeout - time.Second, want: false},
		{name: "creation, exactly at the timeout: the wait is over", expect: expectOneCreation, elapsed: timeout, want: true},
		{name: "creation, past the timeout", expect: expectOneCreation, elapsed: timeout + time.Nanosecond, want: true},
		{name: "deletion, before the timeout", expect: expectOneDeletion, elapsed: timeout - time.Second, want: false},
		{name: "deletion, past the timeout", expect: expectOneDeletion, elapsed: timeout + time.Second, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			clock := time.Unix(1000, 0)
			e := newTestExpectations(timeout)
			e.now = func() time.Time { return clock }

			tt.expect(e)
			clock = clock.Add(tt.elapsed)
			g.Expect(e.Satisfied(expKey)).To(Equal(tt.want))
		})
	}
}

func TestExpectationsNewExpectationReplacesTheOld(t *testing.T) {
	tests := []struct {
		name   string
		first  func(*Expectations)
		second func(*Expectations)
	}{
		{
			name:   "fewer creations",
			first:  func(e *Expectations) { e.ExpectCreations(expKey, 5) },
			second: expectOneCreation,
		},
		{
			name:   "deletions after creations",
			first:  func(e *Expectations) { e.ExpectCreations(expKey, 5) },
			second: expectOneDeletion,
		},
		{
			name:   "creations after deletions",
			first:  func(e *Expectations) { e.ExpectDeletions(expKey, []types.UID{"x", "y"}) },
			second: expectOneCreation,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e := newTestExpectations(time.Minute)
			tt.first(e)
			tt.second(e)
			g.Expect(e.Satisfied(expKey)).To(BeFalse())

			e.CreationObserved(expKey)
			e.DeletionObserved(expKey, "a")
			g.Expect(e.Satisfied(expKey)).To(BeTrue(), "only the second expectation should be waited for")
		})
	}
}

func TestExpectationsNewExpectationRestartsTheTimeout(t *testing.T) {
	g := NewWithT(t)
	clock := time.Unix(1000, 0)
	e := newTestExpectations(time.Minute)
	e.now = func() time.Time { return clock }

	expectOneCreation(e)
	clock = clock.Add(50 * time.Second)
	expectOneCreation(e)
	clock = clock.Add(50 * time.Second)

	g.Expect(e.Satisfied(expKey)).To(BeFalse())
}

func TestExpectationsForget(t *testing.T) {
	g := NewWithT(t)
	e := newTestExpectations(time.Minute)
	e.ExpectCreations(expKey, 2)
	e.ExpectCreations("ns/web/uid-0", 2) // a predecessor of the same name
	e.ExpectCreations("ns/other/uid-2", 2)
	e.ExpectCreations("ns/web-2/uid-3", 2)

	e.Forget("ns/web")

	g.Expect(e.Satisfied(expKey)).To(BeTrue())
	g.Expect(e.items).NotTo(HaveKey(expKey))
	g.Expect(e.items).NotTo(HaveKey("ns/web/uid-0"))
	g.Expect(e.Satisfied("ns/other/uid-2")).To(BeFalse(), "Forget must drop only its PodSet")
	g.Expect(e.Satisfied("ns/web-2/uid-3")).To(BeFalse(), "a name with the same prefix is another PodSet")
}

func TestExpectationsConcurrentCreationObserved(t *testing.T) {
	const n = 200
	g := NewWithT(t)
	e := newTestExpectations(time.Minute)
	e.ExpectCreations(expKey, n)

	var wg sync.WaitGroup
	for range n - 1 {
		wg.Go(func() { e.CreationObserved(expKey) })
	}
	wg.Wait()
	// A lost decrement would leave more than one creation pending here and
	// the key unsatisfied after the last observation below.
	g.Expect(e.Satisfied(expKey)).To(BeFalse())

	e.CreationObserved(expKey)
	g.Expect(e.Satisfied(expKey)).To(BeTrue())
}

func expectOneCreation(e *Expectations) { e.ExpectCreations(expKey, 1) }

func expectOneDeletion(e *Expectations) { e.ExpectDeletions(expKey, []types.UID{"a"}) }

func TestExpectationsExpiresIn(t *testing.T) {
	g := NewWithT(t)
	clock := time.Unix(1000, 0)
	e := newTestExpectations(time.Minute)
	e.now = func() time.Time { return clock }

	g.Expect(e.ExpiresIn(expKey)).To(BeZero(), "nothing pending")
	e.ExpectCreations(expKey, 1)
	clock = clock.Add(20 * time.Second)
	g.Expect(e.ExpiresIn(expKey)).To(Equal(40 * time.Second))
	clock = clock.Add(time.Hour)
	g.Expect(e.ExpiresIn(expKey)).To(BeZero(), "expired")
}

func TestExpectationsObservedReportsTheLastWrite(t *testing.T) {
	g := NewWithT(t)
	e := newTestExpectations(time.Hour)

	e.ExpectCreations(expKey, 2)
	g.Expect(e.CreationObserved(expKey)).To(BeFalse(), "one creation still pending")
	g.Expect(e.CreationObserved(expKey)).To(BeTrue(), "the last one")
	g.Expect(e.CreationObserved(expKey)).To(BeFalse(), "nothing was pending any more")

	e.ExpectDeletions(expKey, []types.UID{"a", "b"})
	g.Expect(e.DeletionObserved(expKey, "a")).To(BeFalse())
	g.Expect(e.DeletionObserved(expKey, "a")).To(BeFalse(), "the second event of one deletion")
	g.Expect(e.DeletionObserved(expKey, "c")).To(BeFalse(), "a deletion never expected")
	g.Expect(e.DeletionObserved(expKey, "b")).To(BeTrue())

	g.Expect(e.CreationObserved("ns/unknown/uid")).To(BeFalse())
}

// A create whose connection broke may have made its pod: it stays expected,
// so that a cache that missed it does not bring a second one, but only for
// testTimeouts.UncertainCreation, since a pod that was not made sends no event.
func TestExpectationsUncertainCreations(t *testing.T) {
	g := NewWithT(t)
	clock := time.Unix(1000, 0)
	e := newTestExpectations(5 * time.Minute)
	e.now = func() time.Time { return clock }
	e.ExpectCreations(expKey, 3)
	e.CreationObserved(expKey)
	e.CreationUncertain(expKey)
	e.CreationUncertain(expKey)

	g.Expect(e.Satisfied(expKey)).To(BeFalse(), "the uncertain pods are still expected")
	g.Expect(e.ExpiresIn(expKey)).To(Equal(testTimeouts.UncertainCreation))
	clock = clock.Add(testTimeouts.UncertainCreation - time.Second)
	g.Expect(e.Satisfied(expKey)).To(BeFalse())
	clock = clock.Add(time.Second)
	g.Expect(e.Satisfied(expKey)).To(BeTrue(), "not for the whole expectations timeout")

	// If the pods were made, their events fulfil the expectations early.
	e.ExpectCreations(expKey, 1)
	e.CreationUncertain(expKey)
	g.Expect(e.CreationObserved(expKey)).To(BeTrue())
}

// A cache check resolves a PodSet's expectations when it finds the pods
// the API server has. Their creation events can still reach the handler
// after that (the informer updates its store first; a relist hands over
// every pod at once): counted against the next step's creations, one such
// late event would let the PodSet act on a cache lacking one of its new
// pods, and create it again.
func TestResolvedPodsDoNotCountForTheNextStep(t *testing.T) {
	g := NewWithT(t)
	e := newTestExpectations(time.Minute)
	e.Resolve(expKey, "seen-a", "seen-b")
	e.ExpectCreations(expKey, 2)

	g.Expect(e.PodCreationObserved(expKey, "seen-a")).To(BeFalse())
	g.Expect(e.Satisfied(expKey)).To(BeFalse(), "a pod found by the check counted as one of the next step's")
	g.Expect(e.PodCreationObserved(expKey, "new-1")).To(BeFalse())
	g.Expect(e.PodCreationObserved(expKey, "seen-b")).To(BeFalse())
	g.Expect(e.Satisfied(expKey)).To(BeFalse())
	g.Expect(e.PodCreationObserved(expKey, "new-2")).To(BeTrue())

	// A pod's creation is ignored once only; a skipped creation, which
	// names no pod, always counts.
	e.ExpectCreations(expKey, 2)
	g.Expect(e.PodCreationObserved(expKey, "seen-a")).To(BeFalse())
	g.Expect(e.CreationObserved(expKey)).To(BeTrue())
}
