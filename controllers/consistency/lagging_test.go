package consistency

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

func TestExpectationsLagging(t *testing.T) {
	for _, tc := range []struct {
		name string
		// steps run against expectations set at clock 0.
		steps   func(e *Expectations, advance func(time.Duration))
		lagging bool
	}{
		{"writes just set", func(_ *Expectations, _ func(time.Duration)) {}, false},
		{"no event for the threshold", func(_ *Expectations, advance func(time.Duration)) {
			advance(testTimeouts.LagThreshold)
		}, true},
		{"the writes returned late: the lag counts from then", func(e *Expectations, advance func(time.Duration)) {
			advance(5 * time.Second)
			e.WritesReturned(expKey)
			advance(testTimeouts.LagThreshold / 2)
		}, false},
		{"an event came: the lag counts from it", func(e *Expectations, advance func(time.Duration)) {
			advance(5 * time.Second)
			e.CreationObserved(expKey)
			advance(testTimeouts.LagThreshold / 2)
		}, false},
		{"a deletion came, then nothing", func(e *Expectations, advance func(time.Duration)) {
			e.DeletionObserved(expKey, "a")
			advance(testTimeouts.LagThreshold)
		}, true},
		{"everything came", func(e *Expectations, advance func(time.Duration)) {
			e.CreationObserved(expKey)
			e.CreationObserved(expKey)
			e.DeletionObserved(expKey, "a")
			advance(time.Minute)
		}, false},
		{"past the timeout: Expired's case, not a lag", func(_ *Expectations, advance func(time.Duration)) {
			advance(testTimeouts.Expectations)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			clock := time.Unix(1000, 0)
			e := newTestExpectations(testTimeouts.Expectations)
			e.now = func() time.Time { return clock }
			e.Expect(expKey, 2, []types.UID{"a"})
			tc.steps(e, func(d time.Duration) { clock = clock.Add(d) })
			g.Expect(e.Lagging(expKey)).To(Equal(tc.lagging))
		})
	}
}

// Each lag is reported once, and again only after progress and a new lag:
// the loop must not queue a PodSet every LagCheckInterval while it waits.
func TestExpectationsTakeLaggingReportsEachLagOnce(t *testing.T) {
	g := NewWithT(t)
	clock := time.Unix(1000, 0)
	e := newTestExpectations(testTimeouts.Expectations)
	e.now = func() time.Time { return clock }
	e.ExpectCreations(expKey, 2)
	e.ExpectCreations("ns/settled/uid", 1)
	e.CreationObserved("ns/settled/uid")

	g.Expect(e.TakeLagging()).To(BeEmpty())
	clock = clock.Add(testTimeouts.LagThreshold)
	g.Expect(e.TakeLagging()).To(ConsistOf(expKey))
	g.Expect(e.TakeLagging()).To(BeEmpty(), "reported twice")

	e.CreationObserved(expKey)
	g.Expect(e.TakeLagging()).To(BeEmpty())
	clock = clock.Add(testTimeouts.LagThreshold)
	g.Expect(e.TakeLagging()).To(ConsistOf(expKey), "a new lag after progress")
}

// Creations and deletions whose events are behind a pod watch that still
// delivers are late, not lost: the watch delivers in the order of
// resourceVersions, so they are still to come, and a check against the API
// server would only load it (the memory scenario's PodSets listed their
// thousand pods every second that way, and a scale-down of a hundred
// PodSets checked some forty of them). A watch that fell silent, or that
// delivered a newer version without them, lags as before; so does a write
// that returned no version.
func TestExpectationsWritesBehindALiveWatchDoNotLag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		steps   func(e *Expectations, advance func(time.Duration))
		lagging bool
	}{
		{"the watch delivers older versions: on their way", func(e *Expectations, advance func(time.Duration)) {
			e.CreationReturned(expKey, "200")
			advance(5 * time.Second)
			e.PodEventSeen("ns", "150")
		}, false},
		{"the watch delivered a newer version without them: lost", func(e *Expectations, advance func(time.Duration)) {
			e.CreationReturned(expKey, "200")
			advance(5 * time.Second)
			e.PodEventSeen("ns", "201")
		}, true},
		{"the watch fell silent: maybe broken", func(e *Expectations, advance func(time.Duration)) {
			e.CreationReturned(expKey, "200")
			e.PodEventSeen("ns", "150")
			advance(testTimeouts.LagThreshold)
		}, true},
		{"another namespace's watch says nothing of this one", func(e *Expectations, advance func(time.Duration)) {
			e.CreationReturned(expKey, "200")
			advance(5 * time.Second)
			e.PodEventSeen("other", "150")
		}, true},
		{"a newer creation returned: its events are behind too", func(e *Expectations, advance func(time.Duration)) {
			e.CreationReturned(expKey, "200")
			e.CreationReturned(expKey, "300")
			e.CreationReturned(expKey, "250")
			advance(5 * time.Second)
			e.PodEventSeen("ns", "260")
		}, false},
		{"no version returned", func(e *Expectations, advance func(time.Duration)) {
			advance(5 * time.Second)
			e.PodEventSeen("ns", "150")
		}, true},
		{"an uncertain creation: maybe never made", func(e *Expectations, advance func(time.Duration)) {
			e.CreationReturned(expKey, "200")
			e.CreationUncertain(expKey)
			advance(5 * time.Second)
			e.PodEventSeen("ns", "150")
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			clock := time.Unix(1000, 0)
			e := newTestExpectations(testTimeouts.Expectations)
			e.now = func() time.Time { return clock }
			e.ExpectCreations(expKey, 2)
			tc.steps(e, func(d time.Duration) { clock = clock.Add(d) })
			g.Expect(e.Lagging(expKey)).To(Equal(tc.lagging))
		})
	}

	// Each case awaits two deletions, and creations as many as it says.
	for _, tc := range []struct {
		name      string
		creations int
		steps     func(e *Expectations, advance func(time.Duration))
		lagging   bool
	}{
		{"deletions behind a live watch: on their way", 0, func(e *Expectations, advance func(time.Duration)) {
			e.DeletionReturned(expKey, "200")
			advance(5 * time.Second)
			e.PodEventSeen("ns", "150")
		}, false},
		{"deletions: the watch delivered a newer version without them: lost", 0, func(e *Expectations, advance func(time.Duration)) {
			e.DeletionReturned(expKey, "200")
			advance(5 * time.Second)
			e.PodEventSeen("ns", "201")
		}, true},
		{"the newest deletion counts", 0, func(e *Expectations, advance func(time.Duration)) {
			e.DeletionReturned(expKey, "300")
			e.DeletionReturned(expKey, "200")
			advance(5 * time.Second)
			e.PodEventSeen("ns", "250")
		}, false},
		{"a delete that returned no version", 0, func(e *Expectations, advance func(time.Duration)) {
			e.DeletionReturned(expKey, "200")
			e.DeletionReturned(expKey, "")
			advance(5 * time.Second)
			e.PodEventSeen("ns", "150")
		}, true},
		{"no delete returned a version", 0, func(e *Expectations, advance func(time.Duration)) {
			advance(5 * time.Second)
			e.PodEventSeen("ns", "150")
		}, true},
		{"deletions: the watch fell silent", 0, func(e *Expectations, advance func(time.Duration)) {
			e.DeletionReturned(expKey, "200")
			e.PodEventSeen("ns", "150")
			advance(testTimeouts.LagThreshold)
		}, true},
		{"creations and deletions: the newest of both", 1, func(e *Expectations, advance func(time.Duration)) {
			e.CreationReturned(expKey, "200")
			e.DeletionReturned(expKey, "300")
			advance(5 * time.Second)
			e.PodEventSeen("ns", "250")
		}, false},
		{"creations and deletions: the creations returned no version", 1, func(e *Expectations, advance func(time.Duration)) {
			e.DeletionReturned(expKey, "300")
			advance(5 * time.Second)
			e.PodEventSeen("ns", "250")
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			clock := time.Unix(1000, 0)
			e := newTestExpectations(testTimeouts.Expectations)
			e.now = func() time.Time { return clock }
			e.Expect(expKey, tc.creations, []types.UID{"a", "b"})
			tc.steps(e, func(d time.Duration) { clock = clock.Add(d) })
			g.Expect(e.Lagging(expKey)).To(Equal(tc.lagging))
		})
	}
}
