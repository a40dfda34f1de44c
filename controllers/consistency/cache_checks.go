package consistency

import "time"

// Doubts counts what may have left a cache behind without any event to say
// so: the pauses this replica noticed (a process stopped and resumed missed
// what happened meanwhile), and the failures of a watch while it is down.
// Each count only grows while there is something to doubt; the watch
// failures read 0 again once every watch delivers.
type Doubts struct {
	Pauses, WatchFailures uint64
}

// CacheCheck is what the last checks of one owner's cached objects against
// the API server found: the doubts the last check that found them current
// came after, and how many checks in a row have found them behind. The
// zero value has checked nothing and doubts nothing.
type CacheCheck struct {
	checkedAfter Doubts
	behind       int
}

// UpToDate reports whether the last check that found the cache current came
// after every doubt counted in d.
func (c *CacheCheck) UpToDate(d Doubts) bool {
	return c.checkedAfter.Pauses >= d.Pauses && c.checkedAfter.WatchFailures >= d.WatchFailures
}

// IsBehind reports whether the last check found the cache behind.
func (c *CacheCheck) IsBehind() bool { return c.behind > 0 }

// FoundBehind records a check that found the cache behind, and returns when
// to check again: first, then twice as long at each check in a row that
// finds it behind, up to most. A cache behind is one whose watch is broken,
// and looking often at one that only a relist will fix loads the API server
// for nothing.
func (c *CacheCheck) FoundBehind(first, most time.Duration) time.Duration {
	n := c.behind
	c.behind = n + 1
	return min(first<<min(n, 8), most)
}

// Converging records a check that found the cache behind while the owner
// still has work to do on the API server's objects: it checks again after
// first, not after a growing interval, since each look acts.
func (c *CacheCheck) Converging(first time.Duration) time.Duration {
	c.behind = 1
	return first
}

// Done records a check that found the cache current, after the doubts d.
// The highest count seen is kept, so that a watch failure counted after the
// counts went back to 0 is still one to check after.
func (c *CacheCheck) Done(d Doubts) {
	c.checkedAfter = Doubts{Pauses: max(c.checkedAfter.Pauses, d.Pauses), WatchFailures: max(c.checkedAfter.WatchFailures, d.WatchFailures)}
	c.behind = 0
}
