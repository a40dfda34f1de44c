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

	// Each case awaits two deletions, and a creation when created is set:
	// the writes return their versions, and five seconds later the watch
	// delivers seen (or, silent, delivered it at once and nothing since).
	for _, tc := range []struct {
		name    string
		created string
		deleted []string
		seen    string
		silent  bool
		lagging bool
	}{
		{name: "deletions behind a live watch: on their way", deleted: []string{"200"}, seen: "150"},
		{name: "deletions: the watch delivered a newer version without them: lost", deleted: []string{"200"}, seen: "201", lagging: true},
		{name: "the newest deletion counts", deleted: []string{"300", "200"}, seen: "250"},
		{name: "a delete that returned no version", deleted: []string{"200", ""}, seen: "150", lagging: true},
		{name: "no delete returned a version", seen: "150", lagging: true},
		{name: "deletions: the watch fell silent", deleted: []string{"200"}, seen: "150", silent: true, lagging: true},
		{name: "creations and deletions: the newest of both", created: "200", deleted: []string{"300"}, seen: "250"},
		{name: "creations and deletions: the creations returned no version", created: "-", deleted: []string{"300"}, seen: "250", lagging: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			clock := time.Unix(1000, 0)
			e := newTestExpectations(testTimeouts.Expectations)
			e.now = func() time.Time { return clock }
			creations := 0
			if tc.created != "" {
				creations = 1
			}
			e.Expect(expKey, creations, []types.UID{"a", "b"})
			if tc.created != "" && tc.created != "-" {
				e.CreationReturned(expKey, tc.created)
			}
			for _, v := range tc.deleted {
				e.DeletionReturned(expKey, v)
			}
			if tc.silent {
				e.PodEventSeen("ns", tc.seen)
				clock = clock.Add(testTimeouts.LagThreshold)
			} else {
				clock = clock.Add(5 * time.Second)
				e.PodEventSeen("ns", tc.seen)
			}
			g.Expect(e.Lagging(expKey)).To(Equal(tc.lagging))
		})
	}
}
