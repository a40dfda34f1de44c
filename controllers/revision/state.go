package revision

import (
	appsv1 "k8s.io/api/apps/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// State is what one reconcile knows of a PodSet's revisions: those stored,
// and which of them the rollout moves the pods from and to.
type State struct {
	// All are the PodSet's ControllerRevisions, update revision included.
	All []*appsv1.ControllerRevision
	// NamesakesCached is set when the cache holds a revision labelled
	// with the PodSet's name, whoever controls it.
	NamesakesCached bool
	// Update is the revision the rollout moves the pods to: that of the
	// spec's pod template, or while auto-rollback returns the pods from
	// it, the last completed one. Current is the one the pods ran before
	// the rollout in progress (Update when none is).
	Update, Current *appsv1.ControllerRevision
	// The templates and hashes of Update and Current.
	UpdateTemplate, CurrentTemplate Template
	UpdateHash, CurrentHash         string
	// Spec is the revision of the spec's pod template, which the status
	// reports as the update revision, and SpecHash its pods' hash.
	Spec     *appsv1.ControllerRevision
	SpecHash string
	// RollingBack: auto-rollback returns the pods to Update, the last
	// completed revision, ignoring partition (the pods it kept already run
	// it); RollbackStopped: that revision failed too, and no pod is
	// replaced for its template any more.
	RollingBack, RollbackStopped bool
	// CollisionCount is the count the update revision's hash was made with.
	CollisionCount *int32
	// templates memoizes the templates of All, by hash (Template).
	templates map[string]Template
}

// Template is the template of the revision with this hash, if one is
// stored and readable.
func (s *State) Template(hash string) (Template, bool) {
	if t, ok := s.templates[hash]; ok {
		return t, true
	}
	for _, cr := range s.All {
		if HashOf(cr) != hash {
			continue
		}
		t, err := Decode(cr)
		if err != nil {
			return t, false
		}
		if s.templates == nil {
			s.templates = map[string]Template{}
		}
		s.templates[hash] = t
		return t, true
	}
	return Template{}, false
}

// CanCreateOld reports whether pods of an older revision can be created:
// partition keeps old pods, and scaling up with a partition adds some.
func (s *State) CanCreateOld() bool {
	return s.Current != nil && s.Update != nil && s.Current.Name != s.Update.Name
}

// RollBackTo points the rollout at target, a stored revision other than
// the spec's, as auto-rollback does: the pods return to it, partition
// aside, and it is the current revision too. stopped says that target
// failed as well, and no pod is replaced for it any more. It reports false,
// changing nothing, when target's template cannot be read.
func (s *State) RollBackTo(target *appsv1.ControllerRevision, stopped bool) bool {
	tmpl, ok := s.Template(HashOf(target))
	if !ok {
		return false
	}
	s.Update, s.UpdateTemplate, s.UpdateHash = target, tmpl, HashOf(target)
	s.Current, s.CurrentTemplate, s.CurrentHash = target, tmpl, HashOf(target)
	s.RollingBack, s.RollbackStopped = true, stopped
	return true
}

// HashOf is the hash a revision's pods carry.
func HashOf(cr *appsv1.ControllerRevision) string {
	return cr.Labels[appv1alpha1.LabelRevisionHash]
}

// Named is the revision of that name among all, or nil.
func Named(all []*appsv1.ControllerRevision, name string) *appsv1.ControllerRevision {
	for _, cr := range all {
		if name != "" && cr.Name == name {
			return cr
		}
	}
	return nil
}
