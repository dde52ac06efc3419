package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of the bounded reads of operator views.
func init() {
	registerDriver("ReadViews/OldestDueByQueueIsTheEarliestDuePendingJobOfEach", testDriverJobOldestDueByQueue)
	registerDriver("ReadViews/JobPreviewCutsLargeColumns", testDriverJobPreview)
	registerDriver("ReadViews/TextReadReadsPieces", testDriverTextRead)
	registerDriver("ReadViews/ListsWithoutLargeColumns", testDriverListsWithoutLargeColumns)
}

func testDriverJobOldestDueByQueue(t *testing.T, d *DriverEnv) {
	now := d.insertOldestDueJobs()
	due := inTx(d, func(tx driver.Tx) (map[string]time.Time, error) { return tx.JobOldestDueByQueue(d.Ctx, now) })
	require.Len(t, due, 2, "queues with a due pending job: %v", due)
	assert.True(t, now.Add(-30*time.Minute).Equal(due["a"]), "queue a: the earliest due pending job, got %v", due["a"])
	assert.True(t, now.Add(-5*time.Second).Equal(due["b"]), "queue b, got %v", due["b"])
	empty := inTx(d, func(tx driver.Tx) (map[string]time.Time, error) {
		return tx.JobOldestDueByQueue(d.Ctx, now.Add(-24*time.Hour))
	})
	assert.Empty(t, empty, "nothing due a day earlier")
}

// bigText is n characters of JSON text with multi-byte characters in it,
// so a store that counted bytes instead of characters would cut it
// elsewhere.
func bigText(n int) string {
	var b strings.Builder
	b.WriteString(`"`)
	for b.Len() < n*2 {
		b.WriteString("ab€ü")
	}
	r := []rune(b.String())[:n-1]
	return string(r) + `"`
}

func testDriverJobPreview(t *testing.T, d *DriverEnv) {
	payload := bigText(5000)
	j := newJob("q", "h")
	j.Payload = []byte(payload)
	id := d.insertJob(j)
	d.updateJob(id, func(j *driver.Job) { j.HeartbeatData = []byte(`{"done":12}`) })

	p := inTx(d, func(tx driver.Tx) (*driver.JobPreview, error) { return tx.JobPreview(d.Ctx, id, 100) })
	require.NotNil(t, p.Job)
	assert.Equal(t, id, p.Job.ID)
	assert.Equal(t, "h", p.Job.Handler)
	assert.Equal(t, string([]rune(payload)[:100]), string(p.Job.Payload), "the payload's first 100 characters")
	assert.EqualValues(t, 5000, p.PayloadLen, "the payload's length in characters")
	assert.Equal(t, `{"done":12}`, string(p.Job.HeartbeatData), "a short heartbeat is whole")
	assert.EqualValues(t, len(`{"done":12}`), p.HeartbeatLen)

	other := d.insertJob(newJob("q", "h"))
	p = inTx(d, func(tx driver.Tx) (*driver.JobPreview, error) { return tx.JobPreview(d.Ctx, other, 100) })
	assert.Equal(t, "{}", string(p.Job.Payload))
	assert.Nil(t, p.Job.HeartbeatData, "no heartbeat data")
	assert.Zero(t, p.HeartbeatLen)

	d.Tx(func(tx driver.Tx) error {
		_, err := tx.JobPreview(d.Ctx, id+1000, 100)
		assert.ErrorIs(t, err, driver.ErrNotFound)
		return nil
	})
}

func testDriverTextRead(t *testing.T, d *DriverEnv) {
	payload := bigText(3000)
	j := newJob("q", "h")
	j.Payload = []byte(payload)
	id := d.insertJob(j)
	wf := newWorkflow("w", driver.WorkflowRunning)
	wf.State = []byte(`{"_steps":[],"k":` + payload + `}`)
	wfID := d.insertWorkflow(wf)

	for _, c := range []struct {
		col  driver.TextColumn
		id   int64
		want string
	}{{driver.JobPayload, id, payload}, {driver.WorkflowState, wfID, string(wf.State)}} {
		var got []byte
		for from := int64(0); ; from += 700 {
			piece, total := inTx2(d, func(tx driver.Tx) ([]byte, int64, error) { return tx.TextRead(d.Ctx, c.col, c.id, from, 700) })
			assert.EqualValues(t, len([]rune(c.want)), total, "length in characters")
			got = append(got, piece...)
			if from+700 >= total {
				break
			}
		}
		assert.Equal(t, c.want, string(got), "column %d read in pieces of 700 characters", c.col)
	}
	piece, total := inTx2(d, func(tx driver.Tx) ([]byte, int64, error) {
		return tx.TextRead(d.Ctx, driver.JobHeartbeatData, id, 0, 100)
	})
	assert.Nil(t, piece)
	assert.EqualValues(t, -1, total, "NULL heartbeat data")
	d.Tx(func(tx driver.Tx) error {
		_, _, err := tx.TextRead(d.Ctx, driver.JobPayload, id+1000, 0, 10)
		assert.ErrorIs(t, err, driver.ErrNotFound, "a missing job")
		_, _, err = tx.TextRead(d.Ctx, driver.TextColumn(99), id, 0, 10)
		assert.ErrorIs(t, err, driver.ErrInvalidArgument, "an unknown column")
		return nil
	})
}

func testDriverListsWithoutLargeColumns(t *testing.T, d *DriverEnv) {
	j := newJob("q", "h")
	j.Payload = []byte(`{"big":true}`)
	id := d.insertJob(j)
	d.updateJob(id, func(j *driver.Job) { j.HeartbeatData = []byte(`{"done":1}`) })
	d.insertWorkflow(newWorkflow("w", driver.WorkflowRunning))

	jobs := inTx(d, func(tx driver.Tx) ([]*driver.Job, error) {
		return tx.JobList(d.Ctx, driver.JobFilter{Queue: "q", WithoutPayload: true})
	})
	require.Len(t, jobs, 1)
	assert.Nil(t, jobs[0].Payload)
	assert.Nil(t, jobs[0].HeartbeatData)
	assert.Equal(t, "h", jobs[0].Handler)
	assert.Equal(t, driver.JobPending, jobs[0].Status)
	jobs = inTx(d, func(tx driver.Tx) ([]*driver.Job, error) { return tx.JobList(d.Ctx, driver.JobFilter{Queue: "q"}) })
	assert.Equal(t, `{"big":true}`, string(jobs[0].Payload), "the payload by default")

	wfs := inTx(d, func(tx driver.Tx) ([]*driver.Workflow, error) {
		return tx.WorkflowList(d.Ctx, driver.WorkflowFilter{WithoutState: true})
	})
	require.Len(t, wfs, 1)
	assert.Nil(t, wfs[0].State)
	assert.Equal(t, "w", wfs[0].Name)
	assert.Equal(t, driver.WorkflowRunning, wfs[0].Status)
}

// inTx2 is inTx for operations with two results.
func inTx2[A, B any](d *DriverEnv, fn func(tx driver.Tx) (A, B, error)) (A, B) {
	d.T.Helper()
	var a A
	var b B
	d.Tx(func(tx driver.Tx) (err error) {
		a, b, err = fn(tx)
		return err
	})
	return a, b
}
