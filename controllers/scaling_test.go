package controllers

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/events"

	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/leaderfence"
	"github.com/example/podset-operator/controllers/metrics"
	"github.com/example/podset-operator/controllers/podwrites"
	"github.com/example/podset-operator/controllers/revision"
)

func TestEventNote(t *testing.T) {
	for _, tc := range []struct {
		name string
		note string
	}{
		{"short", "Error creating pod: quota"},
		{"exactly the limit", strings.Repeat("a", maxEventNote)},
		{"too long", strings.Repeat("a", 5000)},
		{"too long, multi-byte at the cut", strings.Repeat("é", 1000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := eventNote(tc.note)
			g.Expect(len(got)).To(BeNumerically("<=", maxEventNote))
			g.Expect(utf8.ValidString(got)).To(BeTrue())
			if len(tc.note) <= maxEventNote {
				g.Expect(got).To(Equal(tc.note))
			} else {
				g.Expect(got).To(HaveSuffix("..."))
				g.Expect(tc.note).To(HavePrefix(strings.TrimSuffix(got, "...")))
			}
		})
	}
}

// A create the leader fence refuses is never sent: it is neither counted as
// a failed create nor reported in a FailedCreate event, and the error is the
// fence's, which brings the PodSet back at the lease's renewal.
func TestCreatesRefusedByTheFenceAreNotFailures(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(2)
	r, c := unitReconciler(t, nil, nil, ps)
	now := time.Now()
	r.Fence = leaderfence.New(2*time.Second, leaderfence.WithClock(func() time.Time { return now }))
	now = now.Add(20 * time.Second) // a pause the fence notices at the first write
	r.podWriteSlots = podwrites.NewSlots(podwrites.DefaultPodWritesInFlight)
	failedBefore := testutil.ToFloat64(metrics.PodCreates.WithLabelValues("failed"))
	s := &podSetScope{podSet: ps, record: newPodSetRecords().of(ps), key: consistency.Key(ps.Namespace, ps.Name, ps.UID)}

	made, err := r.createPods(context.Background(), s, revision.FromPodSet(ps), "hash", 2, nil)

	g.Expect(err).To(MatchError(leaderfence.ErrFenced))
	g.Expect(made).To(BeZero())
	g.Expect(podsIn(g, c)).To(BeEmpty())
	g.Expect(testutil.ToFloat64(metrics.PodCreates.WithLabelValues("failed"))).To(Equal(failedBefore))
	g.Expect(r.Recorder.(*events.FakeRecorder).Events).NotTo(Receive(), "an event was recorded for a create never sent")
}
