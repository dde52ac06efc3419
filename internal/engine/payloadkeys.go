package engine

import (
	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/workflowstate"
)

// Reserved payload keys. Queuety PHP writes and strips the first two; the
// third is the Go engine's marker on deadline and cancel callback jobs.
const (
	runtimeKey   = jobruntime.Key
	chainKey     = batch.ChainKey
	callbackKey  = batch.CallbackKey
	forEachKey   = workflowstate.ForEachKey
	stepIndexKey = "step_index"
)

// IsReservedPayloadKey reports whether k is a payload key the engine owns
// (__queuety_runtime, __queuety_callback), which callers may not set.
func IsReservedPayloadKey(k string) bool { return k == runtimeKey || k == callbackKey }
