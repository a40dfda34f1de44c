package podwrites_test

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/example/podset-operator/controllers/podwrites"
)

// startBackground runs b until the test ends.
func startBackground(t *testing.T, b *podwrites.Background) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = b.Start(ctx)
	}()
	t.Cleanup(func() { cancel(); <-stopped })
	NewWithT(t).Eventually(b.Context).ShouldNot(BeNil())
}

func TestBackgroundStepsReportTheirOutcomeToTheOwner(t *testing.T) {
	for _, tc := range []struct {
		name string
		// holdCheck: a reconcile held back a cache check while the step
		// was in flight.
		holdCheck bool
		err       error
		wantWake  bool
	}{
		{"answered: nothing to wake for", false, nil, false},
		{"failed: the owner is woken to report it", false, errors.New("denied"), true},
		{"a cache check was held back: the owner is woken to make it", true, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			b := &podwrites.Background{}
			startBackground(t, b)
			var steps podwrites.BackgroundSteps
			release := make(chan struct{})
			woken := make(chan context.Context, 1)
			var deleted int

			b.Run(&steps, func() (int, error) { <-release; return 2, tc.err },
				func(n int, _ error) { deleted = n },
				func(ctx context.Context) { woken <- ctx })
			if tc.holdCheck {
				g.Expect(steps.HoldWhileSending()).To(BeTrue(), "a check must wait while deletes are in flight")
			}
			close(release)
			b.Wait()

			g.Expect(deleted).To(Equal(2))
			if tc.wantWake {
				g.Expect(woken).To(Receive(Not(BeNil())))
			} else {
				g.Expect(woken).NotTo(Receive())
			}
			g.Expect(steps.HoldWhileSending()).To(BeFalse(), "nothing is in flight any more")
			if tc.err != nil {
				g.Expect(steps.TakeFailure()).To(MatchError(tc.err))
			}
			g.Expect(steps.TakeFailure()).To(Succeed(), "a failure is reported once")
		})
	}
}

// Before Start, and once it has ended, a step waits for its deletes as any
// other does: Run returns only when done has run.
func TestBackgroundNotRunningWaitsInline(t *testing.T) {
	g := NewWithT(t)
	var nilBackground *podwrites.Background
	g.Expect(nilBackground.Context()).To(BeNil())

	b := &podwrites.Background{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.Expect(b.Start(ctx)).To(Succeed())
	g.Expect(b.Context()).To(BeNil())
	var steps podwrites.BackgroundSteps
	ran := false
	b.Run(&steps, func() (int, error) { return 1, nil }, func(int, error) { ran = true }, func(context.Context) {})
	g.Expect(ran).To(BeTrue())
}
