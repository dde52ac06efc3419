package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of Queuety's webhooks and artifacts tables.
func init() {
	registerDriver("Webhooks/InsertListByEventDelete", testDriverWebhooks)
	registerDriver("Webhooks/SecretsBesideTheRows", testDriverWebhookSecrets)
	registerDriver("Artifacts/PutReplacesByKeyKeepingIDAndCreatedAt", testDriverArtifactPut)
	registerDriver("Artifacts/ListByKeyWithAndWithoutContent", testDriverArtifactList)
	registerDriver("Artifacts/ConcurrentPutsOfOneKeyLeaveOneRow", testDriverArtifactRace)
}

func testDriverWebhooks(t *testing.T, d *DriverEnv) {
	hooks := []*driver.Webhook{
		{Event: "job.buried", URL: "https://a.example/1", CreatedAt: Epoch},
		{Event: "job.failed", URL: "https://a.example/2", CreatedAt: Epoch.Add(time.Second)},
		{Event: "job.buried", URL: "https://b.example/3?x=1", CreatedAt: Epoch.Add(1500 * time.Millisecond)},
	}
	for _, h := range hooks {
		d.Tx(func(tx driver.Tx) error { return tx.WebhookInsert(d.Ctx, h) })
		require.NotZero(t, h.ID, "insert sets the id")
	}
	assert.Less(t, hooks[0].ID, hooks[1].ID, "ids ascend")
	all := inTx(d, func(tx driver.Tx) ([]*driver.Webhook, error) { return tx.WebhookList(d.Ctx, "") })
	require.Len(t, all, 3, "all webhooks")
	assert.Equal(t, hooks[0], all[0], "row as written")
	assert.Equal(t, Epoch.Add(time.Second), all[2].CreatedAt, "created_at keeps whole seconds")
	buried := inTx(d, func(tx driver.Tx) ([]*driver.Webhook, error) { return tx.WebhookList(d.Ctx, "job.buried") })
	require.Len(t, buried, 2, "one event's webhooks")
	assert.Equal(t, []string{"https://a.example/1", "https://b.example/3?x=1"}, []string{buried[0].URL, buried[1].URL}, "by id")
	assert.Empty(t, inTx(d, func(tx driver.Tx) ([]*driver.Webhook, error) { return tx.WebhookList(d.Ctx, "workflow.failed") }))
	if r, ok := d.S.(driver.WebhookReader); ok {
		read, err := r.WebhookListRead(d.Ctx, "")
		require.NoError(t, err)
		assert.Equal(t, all, read, "the list outside a transaction")
		read, err = r.WebhookListRead(d.Ctx, "job.buried")
		require.NoError(t, err)
		assert.Equal(t, buried, read, "one event's webhooks outside a transaction")
	}

	assert.True(t, inTx(d, func(tx driver.Tx) (bool, error) { return tx.WebhookDelete(d.Ctx, hooks[0].ID) }), "delete finds the row")
	assert.False(t, inTx(d, func(tx driver.Tx) (bool, error) { return tx.WebhookDelete(d.Ctx, hooks[0].ID) }), "a second delete finds none")
	assert.Len(t, inTx(d, func(tx driver.Tx) ([]*driver.Webhook, error) { return tx.WebhookList(d.Ctx, "") }), 2, "the others stay")
}

// testDriverWebhookSecrets: a secret is stored with its webhook and listed
// with it; a webhook without one (as Queuety PHP writes them) lists as
// unsigned until a secret is set; setting replaces; a webhook that does
// not exist gets none; deleting the webhook deletes its secret.
func testDriverWebhookSecrets(t *testing.T, d *DriverEnv) {
	const s1, s2, s3 = "whsec_c2VjcmV0LW9uZQ==", "whsec_c2VjcmV0LXR3bw==", "whsec_c2VjcmV0LXRocmVl"
	signed := &driver.Webhook{Event: "job.buried", URL: "https://a.example/1", CreatedAt: Epoch, Secret: s1}
	plain := &driver.Webhook{Event: "job.buried", URL: "https://a.example/2", CreatedAt: Epoch}
	for _, h := range []*driver.Webhook{signed, plain} {
		d.Tx(func(tx driver.Tx) error { return tx.WebhookInsert(d.Ctx, h) })
	}
	assert.True(t, signed.Signed, "insert marks a webhook with a secret signed")
	list := func(event string) []*driver.Webhook {
		return inTx(d, func(tx driver.Tx) ([]*driver.Webhook, error) { return tx.WebhookList(d.Ctx, event) })
	}
	all := list("")
	require.Len(t, all, 2)
	assert.Equal(t, *signed, *all[0], "the secret is listed with its webhook")
	assert.Equal(t, driver.Webhook{ID: plain.ID, Event: "job.buried", URL: "https://a.example/2", CreatedAt: Epoch}, *all[1], "no secret")
	byEvent := list("job.buried")
	require.Len(t, byEvent, 2)
	assert.Equal(t, s1, byEvent[0].Secret, "by event too")

	set := func(id int64, secret string) bool {
		return inTx(d, func(tx driver.Tx) (bool, error) { return tx.WebhookSetSecret(d.Ctx, id, secret, Epoch.Add(time.Hour)) })
	}
	assert.True(t, set(plain.ID, s2), "a secret for a webhook that had none")
	assert.True(t, set(signed.ID, s3), "a secret replaced")
	assert.False(t, set(plain.ID+100, s2), "no webhook, no secret")
	all = list("")
	require.Len(t, all, 2, "setting secrets adds no webhook")
	assert.Equal(t, []string{s3, s2}, []string{all[0].Secret, all[1].Secret})
	assert.True(t, all[1].Signed)

	assert.True(t, inTx(d, func(tx driver.Tx) (bool, error) { return tx.WebhookDelete(d.Ctx, signed.ID) }))
	again := &driver.Webhook{Event: "job.failed", URL: "https://a.example/3", CreatedAt: Epoch}
	d.Tx(func(tx driver.Tx) error { return tx.WebhookInsert(d.Ctx, again) })
	all = list("")
	require.Len(t, all, 2)
	assert.Equal(t, []string{s2, ""}, []string{all[0].Secret, all[1].Secret}, "the deleted webhook's secret went with it")
}

func (d *DriverEnv) putArtifact(a *driver.Artifact) {
	d.T.Helper()
	d.Tx(func(tx driver.Tx) error { return tx.ArtifactPut(d.Ctx, a) })
}

func (d *DriverEnv) artifact(wf int64, key string) *driver.Artifact {
	d.T.Helper()
	return inTx(d, func(tx driver.Tx) (*driver.Artifact, error) { return tx.ArtifactGet(d.Ctx, wf, key) })
}

func testDriverArtifactPut(t *testing.T, d *DriverEnv) {
	step := 2
	d.putArtifact(&driver.Artifact{WorkflowID: 7, Key: "draft", Kind: "json", Content: []byte(`{"a":"b/c"}`), Metadata: []byte(`{"by":"x"}`),
		StepIndex: &step, CreatedAt: Epoch, UpdatedAt: Epoch})
	first := d.artifact(7, "draft")
	assert.NotZero(t, first.ID)
	assert.Equal(t, &driver.Artifact{ID: first.ID, WorkflowID: 7, Key: "draft", Kind: "json", Content: []byte(`{"a":"b/c"}`),
		Metadata: []byte(`{"by":"x"}`), StepIndex: &step, CreatedAt: Epoch, UpdatedAt: Epoch}, first, "row as written")

	later := Epoch.Add(time.Minute)
	d.putArtifact(&driver.Artifact{WorkflowID: 7, Key: "draft", Kind: "markdown", Content: []byte("# v2"), CreatedAt: later, UpdatedAt: later})
	second := d.artifact(7, "draft")
	assert.Equal(t, &driver.Artifact{ID: first.ID, WorkflowID: 7, Key: "draft", Kind: "markdown", Content: []byte("# v2"),
		CreatedAt: Epoch, UpdatedAt: later}, second, "replaced in place: same id and created_at; NULL metadata and step index")

	d.putArtifact(&driver.Artifact{WorkflowID: 8, Key: "draft", Kind: "json", Content: []byte(`1`), Metadata: []byte(`[]`), CreatedAt: later, UpdatedAt: later})
	other := d.artifact(8, "draft")
	assert.NotEqual(t, first.ID, other.ID, "the same key in another workflow is another row")
	assert.Equal(t, []byte(`[]`), other.Metadata)

	err := d.TxErr(func(tx driver.Tx) error { _, err := tx.ArtifactGet(d.Ctx, 7, "nope"); return err })
	assert.ErrorIs(t, err, driver.ErrNotFound, "missing key")
	assert.True(t, inTx(d, func(tx driver.Tx) (bool, error) { return tx.ArtifactDelete(d.Ctx, 7, "draft") }), "delete finds the row")
	assert.False(t, inTx(d, func(tx driver.Tx) (bool, error) { return tx.ArtifactDelete(d.Ctx, 7, "draft") }), "a second delete finds none")
	assert.Equal(t, other, d.artifact(8, "draft"), "delete is per workflow")
}

func testDriverArtifactList(t *testing.T, d *DriverEnv) {
	for _, k := range []string{"zeta", "alpha", "mid"} {
		d.putArtifact(&driver.Artifact{WorkflowID: 3, Key: k, Kind: "text", Content: []byte("content of " + k), Metadata: []byte(`[]`),
			CreatedAt: Epoch, UpdatedAt: Epoch})
	}
	d.putArtifact(&driver.Artifact{WorkflowID: 4, Key: "other", Kind: "text", Content: []byte("x"), CreatedAt: Epoch, UpdatedAt: Epoch})
	keys := func(list []*driver.Artifact) []string {
		out := make([]string, len(list))
		for i, a := range list {
			out[i] = a.Key
		}
		return out
	}
	bare := inTx(d, func(tx driver.Tx) ([]*driver.Artifact, error) { return tx.ArtifactList(d.Ctx, 3, false) })
	assert.Equal(t, []string{"alpha", "mid", "zeta"}, keys(bare), "ordered by key")
	for _, a := range bare {
		assert.Nil(t, a.Content, "%s: no content without withContent", a.Key)
		assert.Equal(t, []byte(`[]`), a.Metadata, "%s: metadata is always read", a.Key)
	}
	full := inTx(d, func(tx driver.Tx) ([]*driver.Artifact, error) { return tx.ArtifactList(d.Ctx, 3, true) })
	require.Len(t, full, 3)
	assert.Equal(t, []byte("content of alpha"), full[0].Content, "content with withContent")
	assert.Empty(t, inTx(d, func(tx driver.Tx) ([]*driver.Artifact, error) { return tx.ArtifactList(d.Ctx, 99, true) }), "no artifacts")
}

func testDriverArtifactRace(t *testing.T, d *DriverEnv) {
	const n = 6
	stores := make([]driver.Store, n)
	for i := range stores {
		stores[i] = d.Open()
	}
	errs := make(chan error, n)
	for i, s := range stores {
		go func() {
			errs <- s.InTx(d.Ctx, func(tx driver.Tx) error {
				return tx.ArtifactPut(d.Ctx, &driver.Artifact{WorkflowID: 5, Key: "shared", Kind: "text", Content: []byte{byte('a' + i)},
					CreatedAt: Epoch, UpdatedAt: Epoch})
			})
		}()
	}
	for range n {
		require.NoError(t, <-errs, "a racing put")
	}
	list := inTx(d, func(tx driver.Tx) ([]*driver.Artifact, error) { return tx.ArtifactList(d.Ctx, 5, true) })
	require.Len(t, list, 1, "one row for one key")
	assert.Len(t, list[0].Content, 1, "one of the puts' content")
}
