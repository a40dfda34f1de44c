// Package argocd holds the Argo CD health check of the PodSet kind
// (health.lua), which `make argocd-manifests` puts into the argocd-cm patch
// users apply (config/argocd/), and runs it as Argo CD does, for the tests
// that hold it to the operator's statuses.
package argocd

import (
	_ "embed"
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// HealthLua is the health check, in Argo CD's resource customization
// format: it reads the global obj and returns a table with status and
// message.
//
//go:embed health.lua
var HealthLua string

// Health statuses a check may return, as Argo CD names them.
const (
	Healthy     = "Healthy"
	Progressing = "Progressing"
	Degraded    = "Degraded"
	Suspended   = "Suspended"
	Missing     = "Missing"
	Unknown     = "Unknown"
)

// Health is what a health check returns.
type Health struct {
	Status, Message string
}

// Evaluate runs script with obj (an object as decoded from JSON) bound to
// the global obj, as Argo CD's Lua VM does, and returns the health it
// reports. A status Argo CD does not know is an error here (Argo CD would
// show Unknown), so that a typo in the check fails its tests.
func Evaluate(script string, obj map[string]any) (Health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	// The libraries Argo CD opens for a resource customization (without
	// its useOpenLibs): package, base and table, and a restricted os that
	// the check does not use. A check that called string or math would
	// fail here as it fails in Argo CD.
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		l.Push(l.NewFunction(lib.fn))
		l.Push(lua.LString(lib.name))
		l.Call(1, 0)
	}
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return Health{}, err
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return Health{}, fmt.Errorf("the health check returned %s, not a table", l.Get(-1).Type())
	}
	h := Health{Status: lua.LVAsString(ret.RawGetString("status")), Message: lua.LVAsString(ret.RawGetString("message"))}
	switch h.Status {
	case Healthy, Progressing, Degraded, Suspended, Missing, Unknown:
		return h, nil
	}
	return Health{}, fmt.Errorf("the health check returned an unknown status %q", h.Status)
}

// toLua converts a value decoded from JSON into Lua values: objects and
// arrays become tables (arrays indexed from 1), numbers numbers.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case map[string]any:
		t := l.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(l, e))
		}
		return t
	case []any:
		t := l.NewTable()
		for _, e := range v {
			t.Append(toLua(l, e))
		}
		return t
	}
	panic(fmt.Sprintf("toLua: unexpected %T", v))
}
