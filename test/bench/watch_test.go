package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

func TestQuantile(t *testing.T) {
	g := NewWithT(t)
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	g.Expect(quantile(ds, 0.5)).To(Equal(time.Duration(5)))
	g.Expect(quantile(ds, 0.9)).To(Equal(time.Duration(9)))
	g.Expect(quantile(ds, 1)).To(Equal(time.Duration(10)))
	g.Expect(quantile(nil, 0.5)).To(Equal(time.Duration(0)))
	g.Expect(ds[0]).To(Equal(time.Duration(5)), "the input is not sorted in place")
}

func TestTraceOwners(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Unix(1000, 0)
	ow := &ownerWatcher{seen: map[types.UID]time.Time{"a": t0, "b": t0.Add(time.Second), "no-pods-yet": t0}}
	pw := &podWatcher{
		firstPod: map[types.UID]time.Time{"a": t0.Add(100 * time.Millisecond), "b": t0.Add(1300 * time.Millisecond), "foreign": t0},
		lastPod:  map[types.UID]time.Time{"a": t0.Add(900 * time.Millisecond), "b": t0.Add(1500 * time.Millisecond), "foreign": t0},
	}
	got := traceOwners(ow, pw)
	// a: 100 ms to its first pod, 800 ms to its last; b: 300 ms, 200 ms.
	g.Expect(got.ToFirstMedian).To(Equal(100 * time.Millisecond))
	g.Expect(got.ToFirstP90).To(Equal(300 * time.Millisecond))
	g.Expect(got.FirstToLastMedian).To(Equal(200 * time.Millisecond))
	g.Expect(got.FirstToLastP90).To(Equal(800 * time.Millisecond))
}
