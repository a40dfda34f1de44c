// Package analysis measures a canary with a Prometheus query and judges the
// measurements, for the analysis steps of a PodSet's rollout. It knows no
// PodSet: the reconciler hands it the query, the conditions and the limits
// a PodSet's spec gives, and the values it renders the query with.
//
// One measurement goes through four stages, each a function of its own:
//   - Render fills the query's placeholders ({{namespace}}, {{name}},
//     {{canaryHash}}, {{stableHash}}, {{interval}}) and refuses any other;
//   - Confine adds the PodSet's namespace to every series selector of the
//     query, with Prometheus's own matchers, and refuses a query whose own
//     matchers on that label select another namespace: a PodSet's author
//     chooses the query, never whose metrics it reads;
//   - a Querier sends it to the one Prometheus the cluster admin configured
//     (Prometheus, below), with a timeout and a bound on the answer;
//   - Judge turns the answer into a measurement: a value the conditions
//     (CEL expressions over `result`) call Successful or Failed, or
//     Inconclusive or Error when the answer is no single number.
//
// What the tools users otherwise add for this get wrong, ruled out here: an
// empty answer, NaN, several series, an error of Prometheus, a timeout or an
// unreachable server is never a success (flagger#1095, #1090, #1005, #421),
// and a run whose measurements all errored never succeeds
// (argo-rollouts#4479): Tally.Phase needs at least one successful
// measurement, and stops a run at its consecutive-error limit
// (argo-rollouts#4792).
//
// Runner takes measurements in a bounded pool of query slots, off the
// reconcile workers, one at a time per run. Everything but Prometheus.Query
// and Runner is pure.
package analysis
