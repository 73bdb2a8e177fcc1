-- Argo CD health check for fleet.snoreloc.io/Site (snoreloc-fleet: deploy/argocd/site-health.lua).
-- Argo CD runs it with the live Site as `obj` and reads `hs.status` and `hs.message` (argocd-cm key
-- resource.customizations.health.fleet.snoreloc.io_Site; argocd-cm-patch.yaml carries this same text).
-- It reads only what the snoreloc controller writes: status.observedGeneration, phase, reason, conditions.
--   Relocated, Ready             -> Healthy     (Ready: valid, waiting for its stick and its node)
--   InProgress, Pending, unseen  -> Progressing (Pending: not checked yet; unseen: the controller has not
--                                                 observed this generation)
--   Pending with reason Suspended -> Suspended  (spec.suspend: the controller leaves the Site alone)
--   Invalid, Failed, Stale       -> Degraded    (someone must act: fix the Site, the run, or call the site)
local hs = {}
local healthy = {Relocated = true, Ready = true}
local degraded = {Invalid = true, Failed = true, Stale = true}

local function said(status)
  -- the message of the condition giving the Site's reason, as `kubectl describe` and `fleet why` show it
  if status.conditions ~= nil then
    for _, condition in ipairs(status.conditions) do
      if condition.reason == status.reason and condition.status == "False" and condition.message ~= nil then
        return condition.message
      end
    end
  end
  return status.reason or ""
end

local status = obj.status
if status == nil or status.phase == nil then
  hs.status = "Progressing"
  hs.message = "waiting for the snoreloc controller to check this Site"
  return hs
end
local generation = obj.metadata and obj.metadata.generation
if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "waiting for the snoreloc controller to check this edit (generation " .. generation .. ")"
  return hs
end
local phase = status.phase
local reason = status.reason or ""
if phase == "Pending" and reason == "Suspended" then
  hs.status = "Suspended"
  hs.message = "spec.suspend is true: the controller leaves this Site alone"
elseif healthy[phase] then
  hs.status = "Healthy"
  hs.message = phase .. " (" .. reason .. ")"
  if phase == "Ready" and reason ~= "NoReport" then
    hs.message = hs.message .. ": " .. said(status)
  end
elseif degraded[phase] then
  hs.status = "Degraded"
  hs.message = phase .. " (" .. reason .. "): " .. said(status)
elseif phase == "InProgress" or phase == "Pending" then
  hs.status = "Progressing"
  hs.message = phase .. " (" .. reason .. ")"
else
  hs.status = "Unknown"
  hs.message = "a phase this health check does not know: " .. phase
end
return hs
