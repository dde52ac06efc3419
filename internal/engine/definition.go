package engine

import (
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
)

// stepDef is a decoded _steps entry. The definition format, written by
// package queuety and read here, lives in internal/workflowdef.
type stepDef = workflowdef.Step

// parseSteps decodes the _steps value of a state.
func parseSteps(state *phpjson.Object) ([]*stepDef, error) { return workflowdef.Parse(state) }

// The definition format's readers, which the engine uses on its other
// stored JSON values too.

// strField returns the trimmed string at k, or "".
func strField(o *phpjson.Object, k string) string { return workflowdef.String(o, k) }
