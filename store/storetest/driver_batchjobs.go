package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver case of a batch's job listing.
func init() {
	registerDriver("Jobs/ListByBatch", testDriverJobListByBatch)
}

func testDriverJobListByBatch(t *testing.T, d *DriverEnv) {
	b7, b8 := int64(7), int64(8)
	ids := d.insertJobs(
		&driver.Job{Queue: "default", Handler: "a", Payload: []byte("{}"), BatchID: b7, AvailableAt: Epoch, CreatedAt: Epoch},
		&driver.Job{Queue: "default", Handler: "b", Payload: []byte("{}"), BatchID: b8, AvailableAt: Epoch, CreatedAt: Epoch},
		&driver.Job{Queue: "other", Handler: "c", Payload: []byte("{}"), BatchID: b7, AvailableAt: Epoch, CreatedAt: Epoch},
		&driver.Job{Queue: "default", Handler: "d", Payload: []byte("{}"), AvailableAt: Epoch, CreatedAt: Epoch},
	)
	list := func(f driver.JobFilter) []int64 {
		t.Helper()
		jobs := inTx(d, func(tx driver.Tx) ([]*driver.Job, error) { return tx.JobList(d.Ctx, f) })
		out := []int64{}
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	assert.Equal(t, []int64{ids[0], ids[2]}, list(driver.JobFilter{BatchID: 7}), "the jobs of batch 7")
	assert.Equal(t, []int64{ids[2]}, list(driver.JobFilter{BatchID: 7, AfterID: ids[0]}), "paged")
	assert.Equal(t, []int64{ids[1]}, list(driver.JobFilter{BatchID: 8, WithoutPayload: true}), "batch 8")
	assert.Equal(t, []int64{}, list(driver.JobFilter{BatchID: 9}), "no such batch")
}
