package readview

import (
	"context"
	"fmt"

	"github.com/queuety/queuety-go/internal/operate"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// StateAt returns the public state a workflow had right after step idx
// completed (Queuety's workflow_state_at), read from its events. It
// returns ErrNotFound when no event records that step.
func (v *Views) StateAt(ctx context.Context, id int64, idx int) (map[string]any, error) {
	var st *phpjson.Object
	err := v.store.InTx(ctx, func(tx driver.Tx) (err error) {
		if _, err = tx.WorkflowGet(ctx, id, driver.LockNone); err != nil {
			return err
		}
		st, err = operate.StateAfterStep(ctx, tx, id, idx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: state of workflow %d at step %d: %w", id, idx, err)
	}
	if st == nil {
		return nil, fmt.Errorf("queuety: state of workflow %d at step %d: %w: no recorded state for that step", id, idx, queuetytype.ErrNotFound)
	}
	return st.ToMap(), nil
}
