package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of the bounded reads of a workflow's signals, failures
// and artifacts: pages, counts, and large values left out or cut.
func init() {
	registerDriver("Signals/PageNewestInIDOrderWithPayloadCaps", testDriverSignalPage)
	registerDriver("Failures/PageNewestWithCutMessagesAndCounts", testDriverFailurePage)
	registerDriver("Artifacts/PageByKeyWithValueCaps", testDriverArtifactPage)
}

func testDriverSignalPage(t *testing.T, d *DriverEnv) {
	wf := d.insertWorkflow(newWorkflow("wf", driver.WorkflowWaitingForSignal))
	other := d.insertWorkflow(newWorkflow("wf", driver.WorkflowWaitingForSignal))
	big := `{"blob":"` + strings.Repeat("x", 300) + `"}`
	var ids []int64
	d.Tx(func(tx driver.Tx) error {
		for i := range 12 {
			payload := fmt.Sprintf(`{"i":%d}`, i)
			if i%4 == 3 {
				payload = big
			}
			s := &driver.Signal{WorkflowID: wf, Name: fmt.Sprintf("s%d", i%3), Payload: []byte(payload), ReceivedAt: Epoch}
			if err := tx.SignalInsert(d.Ctx, s); err != nil {
				return err
			}
			ids = append(ids, s.ID)
			if err := tx.SignalInsert(d.Ctx, &driver.Signal{WorkflowID: other, Name: "x", Payload: []byte(`{}`), ReceivedAt: Epoch}); err != nil {
				return err
			}
		}
		return nil
	})
	page := func(q driver.SignalQuery) []*driver.Signal {
		t.Helper()
		return inTx(d, func(tx driver.Tx) ([]*driver.Signal, error) { return tx.SignalPage(d.Ctx, q) })
	}
	idsOf := func(ss []*driver.Signal) []int64 {
		out := make([]int64, len(ss))
		for i, s := range ss {
			out[i] = s.ID
		}
		return out
	}
	assert.Equal(t, int64(12), inTx(d, func(tx driver.Tx) (int64, error) { return tx.SignalCount(d.Ctx, wf) }), "count")
	assert.Zero(t, inTx(d, func(tx driver.Tx) (int64, error) { return tx.SignalCount(d.Ctx, 999) }), "count of no signals")

	all := page(driver.SignalQuery{WorkflowID: wf})
	assert.Equal(t, ids, idsOf(all), "no limit: every signal of the workflow, in id order")
	assert.Equal(t, big, string(all[3].Payload), "no cap: the whole payload")
	assert.Zero(t, all[3].OmittedPayloadBytes)
	assert.Equal(t, "s0", all[0].Name, "name")
	assert.Equal(t, Epoch, all[0].ReceivedAt, "received_at")

	newest := page(driver.SignalQuery{WorkflowID: wf, Limit: 5, MaxPayloadBytes: 100})
	assert.Equal(t, ids[7:], idsOf(newest), "the newest five, in id order")
	for _, s := range newest {
		if s.ID == ids[7] || s.ID == ids[11] {
			assert.Nil(t, s.Payload, "signal %d: a payload over the cap is left out", s.ID)
			assert.Equal(t, int64(len(big)), s.OmittedPayloadBytes, "signal %d: its length", s.ID)
		} else {
			assert.NotNil(t, s.Payload, "signal %d: a payload under the cap", s.ID)
			assert.Zero(t, s.OmittedPayloadBytes, "signal %d", s.ID)
		}
	}
	assert.Equal(t, `{"i":8}`, string(newest[1].Payload), "payload under the cap")

	light := page(driver.SignalQuery{WorkflowID: wf, Limit: 2, MaxPayloadBytes: -1})
	assert.Equal(t, ids[10:], idsOf(light), "the newest two")
	assert.Nil(t, light[0].Payload, "every payload left out")
	assert.Equal(t, int64(len(`{"i":10}`)), light[0].OmittedPayloadBytes, "its length")

	some := page(driver.SignalQuery{WorkflowID: wf, IDs: []int64{ids[1], ids[5], ids[2]}})
	assert.Equal(t, []int64{ids[1], ids[2], ids[5]}, idsOf(some), "by ids, in id order")
	assert.Empty(t, page(driver.SignalQuery{WorkflowID: other, IDs: []int64{ids[1]}}), "ids of another workflow")
}

func testDriverFailurePage(t *testing.T, d *DriverEnv) {
	cats := []driver.FailureCategory{driver.FailureApplication, driver.FailureTimeout, driver.FailureApplication, driver.FailureCancelled}
	long := strings.Repeat("é", 50) + "-end"
	var ids []int64
	d.Tx(func(tx driver.Tx) error {
		for i := range 20 {
			step := i % 2
			f := &driver.Failure{WorkflowID: 8, JobID: int64(100 + i%5), StepIndex: &step, Attempt: i/5 + 1, Category: cats[i%4],
				Message: fmt.Sprintf("failure %d", i), CreatedAt: Epoch}
			if f.Category == driver.FailureTimeout {
				f.TimeoutKind = driver.TimeoutStartToClose
			}
			if i == 18 {
				f.Message = long
			}
			if err := tx.FailureInsert(d.Ctx, f); err != nil {
				return err
			}
			ids = append(ids, f.ID)
		}
		return tx.FailureInsert(d.Ctx, &driver.Failure{WorkflowID: 9, JobID: 100, Category: driver.FailureBudget, Message: "other", CreatedAt: Epoch})
	})
	page := func(q driver.FailureQuery) []*driver.Failure {
		t.Helper()
		return inTx(d, func(tx driver.Tx) ([]*driver.Failure, error) { return tx.FailurePage(d.Ctx, q) })
	}
	idsOf := func(fs []*driver.Failure) []int64 {
		out := make([]int64, len(fs))
		for i, f := range fs {
			out[i] = f.ID
		}
		return out
	}
	counts := inTx(d, func(tx driver.Tx) ([]driver.FailureCount, error) { return tx.FailureCountByCategory(d.Ctx, 8) })
	assert.Equal(t, []driver.FailureCount{{Category: driver.FailureApplication, Count: 10}, {Category: driver.FailureCancelled, Count: 5},
		{Category: driver.FailureTimeout, Count: 5}}, counts,
		"counts by category, ordered by category")
	assert.Empty(t, inTx(d, func(tx driver.Tx) ([]driver.FailureCount, error) { return tx.FailureCountByCategory(d.Ctx, 99) }), "no failures")

	all := page(driver.FailureQuery{WorkflowID: 8})
	assert.Equal(t, ids, idsOf(all), "no limit: every failure of the workflow, in id order")
	assert.Equal(t, long, all[18].Message, "no cut: the whole message")
	assert.False(t, all[18].MessageCut)

	newest := page(driver.FailureQuery{WorkflowID: 8, Limit: 4, MaxMessageChars: 10})
	assert.Equal(t, ids[16:], idsOf(newest), "the newest four, in id order")
	assert.Equal(t, strings.Repeat("é", 10), newest[2].Message, "a message cut at 10 characters")
	assert.True(t, newest[2].MessageCut, "cut")
	assert.Equal(t, "failure 19", newest[3].Message, "a message of exactly 10 characters")
	assert.False(t, newest[3].MessageCut, "not cut")
	f := newest[3]
	assert.Equal(t, int64(104), f.JobID, "job_id")
	assert.Equal(t, 4, f.Attempt, "attempt")
	assert.Equal(t, driver.FailureCancelled, f.Category, "category")
	if assert.NotNil(t, f.StepIndex) {
		assert.Equal(t, 1, *f.StepIndex, "step_index")
	}

	timed := page(driver.FailureQuery{WorkflowID: 8, JobIDs: []int64{101, 103}, TimedOut: true})
	assert.Equal(t, []int64{ids[1], ids[13]}, idsOf(timed), "timeouts of jobs 101 and 103")
	for _, f := range timed {
		assert.Equal(t, driver.TimeoutStartToClose, f.TimeoutKind)
	}
	jobs := page(driver.FailureQuery{JobIDs: []int64{100}, Limit: 2})
	require.Len(t, jobs, 2, "the newest two of job 100, any workflow")
	assert.Equal(t, int64(9), jobs[1].WorkflowID, "workflow 9's")
	assert.Equal(t, ids[15], jobs[0].ID)
	err := d.TxErr(func(tx driver.Tx) error { _, err := tx.FailurePage(d.Ctx, driver.FailureQuery{Limit: 3}); return err })
	assert.Error(t, err, "a query without a workflow or jobs")
}

func testDriverArtifactPage(t *testing.T, d *DriverEnv) {
	big := `{"blob":"` + strings.Repeat("y", 200) + `"}`
	for i, k := range []string{"k4", "k1", "k3", "k0", "k2"} {
		a := &driver.Artifact{WorkflowID: 3, Key: k, Kind: "json", Content: []byte(fmt.Sprintf(`{"k":%q}`, k)), CreatedAt: Epoch, UpdatedAt: Epoch}
		switch i {
		case 1:
			a.Content = []byte(big)
		case 2:
			a.Metadata = []byte(big)
		case 3:
			a.Metadata = []byte(`{"m":1}`)
		}
		d.putArtifact(a)
	}
	d.putArtifact(&driver.Artifact{WorkflowID: 4, Key: "k0", Kind: "text", Content: []byte("x"), CreatedAt: Epoch, UpdatedAt: Epoch})
	page := func(q driver.ArtifactQuery) []*driver.Artifact {
		t.Helper()
		return inTx(d, func(tx driver.Tx) ([]*driver.Artifact, error) { return tx.ArtifactPage(d.Ctx, q) })
	}
	keys := func(list []*driver.Artifact) []string {
		out := make([]string, len(list))
		for i, a := range list {
			out[i] = a.Key
		}
		return out
	}
	assert.Equal(t, int64(5), inTx(d, func(tx driver.Tx) (int64, error) { return tx.ArtifactCount(d.Ctx, 3) }), "count")

	all := page(driver.ArtifactQuery{WorkflowID: 3})
	assert.Equal(t, []string{"k0", "k1", "k2", "k3", "k4"}, keys(all), "by key")
	assert.Equal(t, big, string(all[1].Content), "no cap: the whole content")
	assert.Equal(t, []byte(`{"m":1}`), all[0].Metadata, "metadata")
	assert.Nil(t, all[2].Metadata, "NULL metadata")

	capped := page(driver.ArtifactQuery{WorkflowID: 3, Limit: 4, MaxValueBytes: 100})
	assert.Equal(t, []string{"k0", "k1", "k2", "k3"}, keys(capped), "the first four by key")
	assert.Nil(t, capped[1].Content, "content over the cap left out")
	assert.Equal(t, int64(len(big)), capped[1].OmittedContentBytes, "its length")
	assert.Nil(t, capped[3].Metadata, "metadata over the cap left out")
	assert.Equal(t, int64(len(big)), capped[3].OmittedMetadataBytes, "its length")
	assert.Equal(t, `{"k":"k3"}`, string(capped[3].Content), "content under the cap")
	assert.Equal(t, []byte(`{"m":1}`), capped[0].Metadata, "metadata under the cap")
	assert.Zero(t, capped[0].OmittedContentBytes+capped[0].OmittedMetadataBytes+capped[2].OmittedMetadataBytes, "nothing left out")

	light := page(driver.ArtifactQuery{WorkflowID: 3, MaxValueBytes: -1})
	require.Len(t, light, 5)
	for _, a := range light {
		assert.Nil(t, a.Content, "%s: content left out", a.Key)
		assert.Nil(t, a.Metadata, "%s: metadata left out", a.Key)
		assert.Positive(t, a.OmittedContentBytes, "%s: content length", a.Key)
	}
	assert.Equal(t, int64(len(`{"m":1}`)), light[0].OmittedMetadataBytes, "metadata length")
	assert.Zero(t, light[2].OmittedMetadataBytes, "NULL metadata has no length")

	some := page(driver.ArtifactQuery{WorkflowID: 3, IDs: []int64{all[4].ID, all[0].ID}})
	assert.Equal(t, []string{"k0", "k4"}, keys(some), "by ids")
}
