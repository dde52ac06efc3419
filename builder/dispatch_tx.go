package builder

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// DispatchTx starts the workflow on c inside tx, a database/sql
// transaction the caller began on c's database (see
// queuety.Client.DispatchTx) and will commit or roll back. The workflow
// row, its first step's job(s) and the workflow_started log exist if and
// only if tx commits. Everything else is as in Dispatch.
func (b *Builder) DispatchTx(ctx context.Context, c *queuety.Client, tx *sql.Tx, state any) (int64, error) {
	def, err := b.Definition()
	if err != nil {
		return 0, err
	}
	if c == nil {
		return 0, fmt.Errorf("builder: dispatch workflow %q: %w: nil client", def.Name, queuetytype.ErrInvalidArgument)
	}
	return c.DispatchWorkflowTx(ctx, tx, def, state)
}
