package sqlstore

import (
	"strconv"
	"strings"
)

// claimByHandlerMax is the most handlers a claim reads one by one
// (Dialect.ClaimByHandler); a claim of more handlers reads the queue's
// pending jobs in claim order, as without it.
const claimByHandlerMax = 32

// claimReturningByHandler is Statements.ClaimReturning read handler by
// handler (Dialect.ClaimByHandler): for each handler, its first due
// jobs in claim order, locked (FOR UPDATE SKIP LOCKED), through an index
// of pending jobs by (queue, handler, priority DESC, available_at, id);
// then the first of them all in claim order. A claim then reads the jobs
// it claims and not the pending jobs of handlers it does not run ahead of
// them. A handler's read locks up to the limit, so with several handlers
// due a claim may lock more jobs than it claims, until its transaction
// ends: other claims skip them meanwhile. The arguments are those of the
// one-read statement; the statement names them by number ($n), the
// handlers first in an array.
func claimReturningByHandler(t Tables, d Dialect, handlers, groups int, capCost bool) string {
	n := 0
	arg := func() string { n++; return "$" + strconv.Itoa(n) }
	queue, due := arg(), arg()
	hs := make([]string, handlers)
	for i := range hs {
		hs[i] = arg()
	}
	queueAgain := arg()
	var gs []string
	for range groups {
		gs = append(gs, arg())
	}
	cost := ""
	if capCost {
		cost = arg()
	}
	where := "job.queue = " + queue + " AND job.status = 'pending' AND job.available_at <= " + due + " AND job.handler = h.handler" +
		claimBlockers(t, d, queueAgain) + claimAdmission(strings.Join(gs, ","), cost)
	limit := arg()
	reservedAt, token := arg(), arg()
	return "WITH claimed AS (SELECT c.id FROM (SELECT DISTINCT unnest(CAST(ARRAY[" + strings.Join(hs, ",") + "] AS VARCHAR[])) AS handler) h" +
		" CROSS JOIN LATERAL (SELECT job.id, job.priority, job.available_at FROM " + t.Jobs + " job WHERE " + where +
		" ORDER BY job.priority DESC, job.available_at ASC, job.id ASC LIMIT " + limit + d.SkipLocked + ") c" +
		" ORDER BY c.priority DESC, c.available_at ASC, c.id ASC LIMIT " + limit + ")" +
		" UPDATE " + t.Jobs + " job SET status = 'processing', reserved_at = " + reservedAt + ", claim_token = CAST(" + token + " AS " + d.BigInt + ") + " + nextAttempt +
		", attempts = " + nextAttempt + " FROM claimed WHERE job.id = claimed.id RETURNING " + prefixed("job.", jobCols)
}
