package controllers

import (
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"
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
