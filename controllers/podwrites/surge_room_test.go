package podwrites

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestSurgeRoom(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// One pod above the bound: the first deletion frees no room.
	room := NewSurgeRoom(-1)
	took := make(chan error, 3)
	for range 3 {
		go func() { took <- room.Take(ctx) }()
	}
	g.Consistently(took, 50*time.Millisecond).ShouldNot(Receive())
	room.Freed()
	g.Consistently(took, 50*time.Millisecond).ShouldNot(Receive(), "the first deletion only brings the pods down to the bound")
	room.Freed()
	g.Eventually(took).Should(Receive(BeNil()))
	g.Consistently(took, 50*time.Millisecond).ShouldNot(Receive(), "one deletion, one creation")
	room.Freed()
	g.Eventually(took).Should(Receive(BeNil()))
	room.AllAnswered()
	g.Eventually(took).Should(Receive(MatchError(ErrNoRoom)), "no room will ever come for the last one")

	g.Expect(NewSurgeRoom(2).Take(ctx)).To(Succeed(), "the headroom needs no deletion")
	var none *SurgeRoom
	g.Expect(none.Take(ctx)).To(Succeed(), "a step without deletions has room for all its creations")

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	g.Expect(NewSurgeRoom(0).Take(canceled)).To(MatchError(context.Canceled))
}
