package engine

import (
	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/dispatch"
	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/phpjson"
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

// SyncPayload is the payload a handler run by a sync dispatch sees: the
// object as a claimed job's handler would read it back from its row (the
// stored JSON decoded again), without reserved keys.
func SyncPayload(payload *phpjson.Object) (Payload, error) {
	if payload == nil {
		payload = phpjson.NewObject()
	}
	for _, k := range payload.Keys() {
		if dispatch.IsReservedPayloadKey(k) { // as a dispatch
			return nil, invalidf("payload key %q is reserved", k)
		}
	}
	raw, err := phpjson.Marshal(payload)
	if err != nil {
		return nil, invalidf("payload does not encode as JSON: %v", err)
	}
	doc, err := workflowstate.DecodeObject("payload", raw)
	if err != nil {
		return nil, err
	}
	return (&Claimed{payload: doc}).Payload(), nil
}
