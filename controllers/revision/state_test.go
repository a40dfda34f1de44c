package revision

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// hashed is a stored revision of image, named and labelled by its hash.
func hashed(image string) *appsv1.ControllerRevision {
	tmpl := FromPodSet(podSet(func(s *appv1alpha1.PodSetSpec) { s.Image = image }))
	hash := Hash(tmpl, nil)
	cr := stored(Name("web", hash), 1, tmpl)
	cr.Labels = map[string]string{appv1alpha1.LabelRevisionHash: hash}
	return cr
}

// Template finds a stored revision's template by its pods' hash, and
// nothing for a hash no stored revision has or one that does not decode.
func TestStateTemplate(t *testing.T) {
	v1, v2 := hashed("img:1"), hashed("img:2")
	broken := hashed("img:3")
	broken.Data.Raw = []byte("{not json")
	s := State{All: []*appsv1.ControllerRevision{v1, v2, broken}}
	for _, tc := range []struct {
		name  string
		hash  string
		image string
		found bool
	}{
		{"the first", HashOf(v1), "img:1", true},
		{"the second", HashOf(v2), "img:2", true},
		{"again, from the memo", HashOf(v2), "img:2", true},
		{"unknown", "nope", "", false},
		{"undecodable", HashOf(broken), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := s.Template(tc.hash)
			if ok != tc.found || got.Image != tc.image {
				t.Errorf("Template(%q) = %q, %v; want %q, %v", tc.hash, got.Image, ok, tc.image, tc.found)
			}
		})
	}
}

// RollBackTo points the rollout at a stored revision, which becomes the
// current one too; an unreadable one changes nothing.
func TestStateRollBackTo(t *testing.T) {
	v1, v2 := hashed("img:1"), hashed("img:2")
	s := State{All: []*appsv1.ControllerRevision{v1, v2}, Update: v2, UpdateHash: HashOf(v2), Current: v1, CurrentHash: HashOf(v1)}
	if !s.CanCreateOld() {
		t.Error("CanCreateOld() = false during a rollout")
	}
	if !s.RollBackTo(v1, true) {
		t.Fatal("RollBackTo(v1) = false")
	}
	if s.Update != v1 || s.Current != v1 || s.UpdateHash != HashOf(v1) || s.UpdateTemplate.Image != "img:1" || !s.RollingBack || !s.RollbackStopped {
		t.Errorf("after RollBackTo(v1): %+v", s)
	}
	if s.CanCreateOld() {
		t.Error("CanCreateOld() = true with update and current the same")
	}
	gone := hashed("img:9")
	before := s
	if s.RollBackTo(gone, false) || s.Update != before.Update || s.RollbackStopped != before.RollbackStopped {
		t.Error("RollBackTo an unstored revision changed the state")
	}
	if Named(s.All, v2.Name) != v2 || Named(s.All, "") != nil || Named(s.All, "other") != nil {
		t.Error("Named does not find revisions by name alone")
	}
}
