package engine

import (
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
)

// runTimeoutKey stores the run timeout in the workflow's private state.
const runTimeoutKey = workflowstate.RunTimeoutKey

// stepDef is a decoded _steps entry. The definition format, written by
// package queuety and read here, lives in internal/workflowdef.
type stepDef = workflowdef.Step

// parseSteps decodes the _steps value of a state.
func parseSteps(state *phpjson.Object) ([]*stepDef, error) { return workflowdef.Parse(state) }

// The definition format's readers, which the engine uses on its other
// stored JSON values too.

// handlerRef reads a handler reference stored under one of keys (see
// workflowdef.HandlerRef).
func handlerRef(o *phpjson.Object, keys ...string) string { return workflowdef.HandlerRef(o, keys...) }

// strField returns the trimmed string at k, or "".
func strField(o *phpjson.Object, k string) string { return workflowdef.String(o, k) }

// strList returns the non-empty strings of the list at k.
func strList(o *phpjson.Object, k string) []string { return workflowdef.Strings(o, k) }

// intValue returns the number at k as an integer, or 0.
func intValue(o *phpjson.Object, k string) int64 { return workflowdef.Int(o, k) }
