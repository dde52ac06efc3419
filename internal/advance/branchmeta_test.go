package advance

import (
	"testing"

	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A branch's inputs read its item and index from the payload its claim
// decoded while the locked row holds the payload claimed, without
// decoding the payload again, and from the row's payload when it does
// not hold the one claimed.
func TestBranchInputsFromClaimedPayload(t *testing.T) {
	s := service(&fakeCore{})
	state := decode(t, `{"items":["a","b"],"_steps":[{"type":"for_each","name":"each","class":"A","items_key":"items"}]}`)
	steps, err := workflowdef.Parse(state)
	require.NoError(t, err)
	row := &driver.Job{ID: 7, Handler: "A", StepIndex: ptr(0), Payload: []byte(`{"__for_each":{"item":"a","item_index":0}}`)}
	// The claim's tree, told apart from the row's bytes by its item and
	// index: the inputs come from it.
	claimed := decode(t, `{"__for_each":{"item":"b","item_index":1}}`)
	sc := &stepCtx{s: s, wf: &driver.Workflow{ID: 1}, row: row, state: state, steps: steps, step: steps[0],
		at: &fakeAttempt{job: row, payload: claimed}, now: now}
	assert.Equal(t, `{"item":"b","item_index":1}`, string(sc.inputs().context))

	locked := *row
	locked.Payload = []byte(`{"__for_each":{"item":"a","item_index":0}} `)
	sc.row = &locked
	assert.Equal(t, `{"item":"a","item_index":0}`, string(sc.inputs().context), "a row not as claimed is decoded")

	sc.row, sc.at = row, &fakeAttempt{job: row}
	assert.Equal(t, `{"item":"a","item_index":0}`, string(sc.inputs().context), "no tree claimed: the row is decoded")
}
