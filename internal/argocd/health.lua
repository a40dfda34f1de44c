-- Argo CD health check of app.example.com/PodSet. It reads the conditions
-- the operator sets for kstatus (Reconciling, Stalled), so that Argo CD
-- judges a PodSet as Flux, Helm and kpt do, and as Argo CD judges a
-- Deployment: Healthy once the pods match the spec, Suspended while the
-- rollout is paused (also by a canary's pause step, or an analysis that
-- holds it until promoted, as Argo CD judges a paused Argo Rollout),
-- Degraded when it cannot go on without someone acting (a failed analysis
-- retreats, and says so in Stalled), Progressing otherwise.
local hs = {}
if obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "PodSet is being deleted"
  return hs
end
if obj.status == nil or obj.status.observedGeneration == nil or obj.status.observedGeneration ~= obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. tostring(obj.metadata.generation)
  return hs
end
local reconciling = nil
local stalled = nil
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Reconciling" then
      reconciling = c
    elseif c.type == "Stalled" then
      stalled = c
    end
  end
end
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = stalled.message
  return hs
end
if reconciling == nil then
  -- An operator older than these conditions.
  hs.status = "Progressing"
  hs.message = "Waiting for the Reconciling condition"
  return hs
end
if reconciling.status == "True" then
  if reconciling.reason == "Paused" or reconciling.reason == "CanaryPaused" or
     reconciling.reason == "AnalysisInconclusive" or reconciling.reason == "AnalysisError" then
    hs.status = "Suspended"
  else
    hs.status = "Progressing"
  end
  hs.message = reconciling.message
  return hs
end
hs.status = "Healthy"
hs.message = reconciling.message
return hs
