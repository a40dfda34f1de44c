// Package controllers holds the PodSet reconciler. Reconcile
// (podset_controller.go) runs one PodSet through the phases it lists, and
// the files beside it hold one concern each; the reconciler, the scope of
// one reconcile and what every phase uses are in reconciler.go. What the
// reconciler remembers about a PodSet between reconciles is its record
// (podset_record.go); its timings are in timings.go.
//
// The packages under it hold what needs no reconciler, and never import it:
//
//   - consistency: whether the cache has caught up: the expectations, what
//     was written or read until the cache shows it, the checks of the
//     cache against the API server, and the scan for events that lag;
//   - podcache: what the manager caches, and whether its watches deliver;
//   - podwrites: how pod writes are sent (PodControl, slots, slow start,
//     surge room, deletes in the background), and what a failed one says
//     about the API server;
//   - status: the status and its conditions, when a changed one is written,
//     and its patch;
//   - operand: what a PodSet's pods are (labels, template, state, deletion
//     rank);
//   - slimpod: what the operator keeps of a pod, the type the cache holds
//     and the reconciler reads;
//   - revision and rollout, both pure: what a revision holds, and one step
//     of a rolling update;
//   - leaderfence: what keeps a leader resumed after a pause from acting;
//   - metrics: the podset_* gauges and the operator's counters.
//
// docs/architecture.md maps each concern to its files, and .golangci.yml
// (depguard) enforces the import direction.
package controllers
