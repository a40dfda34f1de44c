package consistency

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestCacheCheckKeepsTheHighestDoubtsChecked(t *testing.T) {
	g := NewWithT(t)
	var c CacheCheck
	g.Expect(c.UpToDate(Doubts{})).To(BeTrue())
	g.Expect(c.UpToDate(Doubts{WatchFailures: 1})).To(BeFalse())
	c.Done(Doubts{WatchFailures: 1})
	g.Expect(c.UpToDate(Doubts{WatchFailures: 1})).To(BeTrue())
	// The watches deliver again: the failures read 0, and a check then
	// must not forget the failure it was made after.
	c.Done(Doubts{Pauses: 1})
	g.Expect(c.UpToDate(Doubts{Pauses: 1, WatchFailures: 1})).To(BeTrue())
	g.Expect(c.UpToDate(Doubts{Pauses: 1, WatchFailures: 2})).To(BeFalse())
	g.Expect(c.UpToDate(Doubts{Pauses: 2, WatchFailures: 1})).To(BeFalse())
}

func TestCacheCheckBacksOff(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps func(c *CacheCheck) []time.Duration
		want  []time.Duration
	}{
		{"behind at each check: twice as long each time, up to the most", func(c *CacheCheck) []time.Duration {
			var waits []time.Duration
			for range 7 {
				waits = append(waits, c.FoundBehind(time.Second, 16*time.Second))
			}
			return waits
		}, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 16 * time.Second, 16 * time.Second}},
		{"a check that found the cache current starts over", func(c *CacheCheck) []time.Duration {
			c.FoundBehind(time.Second, 16*time.Second)
			c.FoundBehind(time.Second, 16*time.Second)
			c.Done(Doubts{})
			return []time.Duration{c.FoundBehind(time.Second, 16*time.Second)}
		}, []time.Duration{time.Second}},
		{"converging looks again after the first interval, and then backs off from there", func(c *CacheCheck) []time.Duration {
			c.FoundBehind(time.Second, 16*time.Second)
			c.FoundBehind(time.Second, 16*time.Second)
			c.FoundBehind(time.Second, 16*time.Second)
			return []time.Duration{c.Converging(time.Second), c.FoundBehind(time.Second, 16*time.Second)}
		}, []time.Duration{time.Second, 2 * time.Second}},
		{"a very long first interval does not overflow", func(c *CacheCheck) []time.Duration {
			var last time.Duration
			for range 40 {
				last = c.FoundBehind(time.Hour, 24*time.Hour)
			}
			return []time.Duration{last}
		}, []time.Duration{24 * time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var c CacheCheck
			g.Expect(tc.steps(&c)).To(Equal(tc.want))
			g.Expect(c.IsBehind()).To(BeTrue(), "every case ends with a check that found the cache behind")
			c.Done(Doubts{})
			g.Expect(c.IsBehind()).To(BeFalse())
		})
	}
}
