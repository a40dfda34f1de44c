// Package status holds what a PodSet reports: its status and conditions
// computed from its pods and what the reconciler observed and did (Compute,
// Observed, Outcome), when a changed status is worth a write (WriteIsUrgent,
// WriteCanWait, and Pacing, which spaces out the writes of a PodSet still
// converging), the merge patch that writes it (Patch), and when the reconciler
// must look again with no event to bring it (NextAvailabilityCheck,
// ProgressDeadlineIn). It knows nothing of the reconciler: it imports the
// API, operand and rollout only.
package status
