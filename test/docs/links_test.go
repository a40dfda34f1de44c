// Package docs checks the project's Markdown: every link from one page to a
// file of the repository, or to a heading of a page, resolves, as GitHub
// renders it. Links to other sites are not followed (the tests run
// offline).
package docs

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// repoRoot is the repository, two levels up from this package.
const repoRoot = "../.."

// skipped are directories whose Markdown is not the project's own.
var skipped = []string{".git", "bin", "node_modules", "vendor"}

// page is what one Markdown file offers and asks for.
type page struct {
	// anchors are its headings' fragments, as GitHub makes them.
	anchors map[string]bool
	// links are the destinations of its links and images.
	links []string
}

func TestLinksResolve(t *testing.T) {
	pages := map[string]*page{}
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && slices.Contains(skipped, d.Name()) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			pages[filepath.Clean(path)] = parse(src)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 5 {
		t.Fatalf("found %d Markdown files under %s: the walk is wrong", len(pages), repoRoot)
	}
	checked := 0
	for from, p := range pages {
		rel, _ := filepath.Rel(repoRoot, from)
		for _, link := range p.links {
			if why := broken(pages, from, link); why != "" {
				t.Errorf("%s: link %q: %s", rel, link, why)
			}
			checked++
		}
	}
	t.Logf("%d links checked in %d Markdown files", checked, len(pages))
}

// broken says why link, in the page at from, does not resolve; "" when it
// does or leads off the repository.
func broken(pages map[string]*page, from, link string) string {
	u, err := url.Parse(link)
	if err != nil {
		return err.Error()
	}
	if u.Scheme != "" || u.Host != "" {
		return ""
	}
	target := from
	if u.Path != "" {
		target = filepath.Clean(filepath.Join(filepath.Dir(from), u.Path))
		if _, err := os.Stat(target); err != nil {
			return "no such file"
		}
	}
	if u.Fragment == "" {
		return ""
	}
	p, ok := pages[target]
	if !ok {
		// A fragment of a source file is a line (#L12): GitHub's.
		if strings.HasPrefix(u.Fragment, "L") {
			return ""
		}
		return "a fragment of a file that is not Markdown"
	}
	if !p.anchors[u.Fragment] {
		return "no heading has that anchor"
	}
	return ""
}

// parse reads a page's headings and links.
func parse(src []byte) *page {
	p := &page{anchors: map[string]bool{}}
	seen := map[string]int{}
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			slug := anchorOf(plainText(n, src))
			// GitHub numbers the repeats of a heading: x, x-1, x-2.
			if k := seen[slug]; k > 0 {
				p.anchors[slug+"-"+strconv.Itoa(k)] = true
			} else {
				p.anchors[slug] = true
			}
			seen[slug]++
		case *ast.Link:
			p.links = append(p.links, string(n.Destination))
		case *ast.Image:
			p.links = append(p.links, string(n.Destination))
		}
		return ast.WalkContinue, nil
	})
	return p
}

// plainText is the text of a node's inline content, code spans included,
// markup left out.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// anchorOf is the anchor GitHub gives a heading: lower case, letters, digits,
// '-' and '_' kept, spaces made '-', everything else dropped.
func anchorOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestAnchorOfIsGitHubs(t *testing.T) {
	for heading, want := range map[string]string{
		"The `kubectl podset rollout` plugin":             "the-kubectl-podset-rollout-plugin",
		"Architectures, mirrored registries and the SBOM": "architectures-mirrored-registries-and-the-sbom",
		"app.example.com/v1alpha1":                        "appexamplecomv1alpha1",
		"On a real node: `make test-olm-real`":            "on-a-real-node-make-test-olm-real",
		"100,000 pods":                                    "100000-pods",
		"1x1000: one PodSet of 1000 pods":                 "1x1000-one-podset-of-1000-pods",
		"Deletes sent without holding a worker":           "deletes-sent-without-holding-a-worker",
		"With OLM v1 on a real node: `make test-olmv1`":   "with-olm-v1-on-a-real-node-make-test-olmv1",
		"snake_case and -dashes-":                         "snake_case-and--dashes-",
	} {
		if got := anchorOf(heading); got != want {
			t.Errorf("anchorOf(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestBrokenLinksAreFound(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := write("a.md", "# Title\n\n## Same\n\n## Same\n\nSee [b](b.md#the-part) and [here](#same-1).\n")
	b := write("b.md", "# B\n\n## The part\n")
	write("c.txt", "text")
	pages := map[string]*page{}
	for _, p := range []string{a, b} {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		pages[p] = parse(src)
	}
	if got := pages[a].links; !slices.Equal(got, []string{"b.md#the-part", "#same-1"}) {
		t.Fatalf("links of a.md: %q", got)
	}
	for link, want := range map[string]string{
		"b.md#the-part":       "",
		"#same-1":             "",
		"#same":               "",
		"#same-2":             "no heading has that anchor",
		"b.md#a-part":         "no heading has that anchor",
		"missing.md":          "no such file",
		"c.txt":               "",
		"c.txt#part":          "a fragment of a file that is not Markdown",
		"https://example.com": "",
	} {
		if got := broken(pages, a, link); got != want {
			t.Errorf("broken(%q) = %q, want %q", link, got, want)
		}
	}
}
