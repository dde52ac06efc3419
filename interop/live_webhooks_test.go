package interop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/webhook"
	"github.com/queuety/queuety-go/worker"
)

// hookPost is one webhook POST the test endpoint received.
type hookPost struct {
	contentType string
	path        string
	header      http.Header
	body        string
}

// phpFailJobs defines, in the PHP process, the plain-job handlers the
// webhook test runs on both sides: "noop" completes, `App\Jobs\Fail`
// throws.
const phpFailJobs = `
final class NoopJob implements \Queuety\Handler {
	public function handle( array $payload ): void {}
	public function config(): array { return array(); }
}
final class FailJob implements \Queuety\Handler {
	public function handle( array $payload ): void { throw new \RuntimeException( 'disk/full "now"' ); }
	public function config(): array { return array(); }
}
\Queuety\Queuety::register( 'noop', NoopJob::class );
\Queuety\Queuety::register( 'App\Jobs\Fail', FailJob::class );
`

// webhookShape blanks what differs between two runs of the same event: ids,
// durations, the queue and the time.
var webhookShape = regexp.MustCompile(`"(job_id|workflow_id|duration_ms)":\d+|"queue":"[^"]*"|"timestamp":"[^"]*"`)

func shapeOf(body string) string {
	return webhookShape.ReplaceAllStringFunc(body, func(m string) string { return m[:strings.Index(m, ":")+1] + "_" })
}

// TestLiveWebhooksShareRowsAndBodies: webhooks registered by Queuety PHP
// are the rows Go lists and its worker posts to, unsigned as PHP sends
// them; a webhook Go adds (with a secret in the Go engine's own table) is
// one PHP lists, without the secret, and removes; and for the same events
// (a job completed, a job failed and retried, a job buried, a workflow
// failed) the bodies Go's worker POSTs are the bytes Queuety PHP's worker
// POSTs, but for ids, durations, queue names and times. A PHP webhook
// given a secret by Go is signed by Go's worker, still sent by PHP's.
func TestLiveWebhooksShareRowsAndBodies(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix) // skips before anything is opened
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	defer c.Close()
	db := testdb.Admin(t)
	secretRows := func() int {
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM `"+prefix+"queuety_go_webhook_secrets`").Scan(&n))
		return n
	}
	got := make(chan hookPost, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- hookPost{contentType: r.Header.Get("Content-Type"), path: r.URL.Path, header: r.Header.Clone(), body: string(b)}
	}))
	defer srv.Close()

	// PHP registers; Go lists the same rows.
	var phpIDs []int64
	require.NoError(t, json.Unmarshal([]byte(php.eval(fmt.Sprintf(`$ids = array();
foreach ( array( 'job.completed', 'job.failed', 'job.buried', 'workflow.failed' ) as $event ) {
	$ids[] = \Queuety\Queuety::register_webhook( $event, %q );
}
echo json_encode( $ids );`, srv.URL+"/hook"))), &phpIDs))
	hooks, err := c.Webhooks(ctx)
	require.NoError(t, err)
	require.Len(t, hooks, 4, "PHP's webhooks, as Go reads them")
	for i, h := range hooks {
		assert.Equal(t, phpIDs[i], h.ID)
		assert.Equal(t, queuety.WebhookEvents()[i], h.Event)
		assert.Equal(t, srv.URL+"/hook", h.URL)
		assert.False(t, h.CreatedAt.IsZero(), "created_at")
		assert.False(t, h.Signed, "PHP's webhooks have no secret")
	}

	// Go adds one; PHP lists it (without its secret) and removes it, and
	// the secret goes when Go next adds a webhook.
	goHook, err := c.AddWebhook(ctx, queuety.WebhookJobBuried, "https://hooks.example.com/go?a=1")
	require.NoError(t, err)
	goID := goHook.ID
	assert.Equal(t, 1, secretRows())
	goHooks, err := c.Webhooks(ctx)
	require.NoError(t, err)
	var listed []map[string]any
	require.NoError(t, json.Unmarshal([]byte(php.eval(`echo json_encode( \Queuety\Queuety::list_webhooks() );`)), &listed))
	require.Len(t, listed, 5, "PHP lists Go's webhook too")
	assert.Equal(t, map[string]any{"id": float64(goID), "event": "job.buried", "url": "https://hooks.example.com/go?a=1",
		"created_at": goHooks[4].CreatedAt.Format(time.DateTime)}, listed[4], "Go's row, as PHP reads it")
	php.eval(fmt.Sprintf(`\Queuety\Queuety::remove_webhook( %d );`, goID))
	hooks, err = c.Webhooks(ctx)
	require.NoError(t, err)
	assert.Len(t, hooks, 4, "PHP removed Go's webhook")
	other, err := c.AddWebhook(ctx, queuety.WebhookJobBuried, "https://hooks.example.com/other")
	require.NoError(t, err)
	assert.Equal(t, 1, secretRows(), "the removed webhook's secret went; the new one's is there")
	require.NoError(t, c.RemoveWebhook(ctx, other.ID))
	assert.Equal(t, 0, secretRows(), "Go removes a secret with its webhook")

	// The same events on both sides.
	var flushed struct {
		Processed int `json:"processed"`
	}
	require.NoError(t, json.Unmarshal([]byte(php.eval(phpFailJobs+`
\Queuety\Queuety::dispatch( 'noop', array() )->on_queue( 'to-php' );
\Queuety\Queuety::dispatch( 'App\Jobs\Fail', array() )->on_queue( 'to-php' )->max_attempts( 1 );
\Queuety\Queuety::dispatch( 'App\Jobs\Fail', array() )->on_queue( 'to-php' )->max_attempts( 2 );
\Queuety\Queuety::workflow( 'wf_fail' )->then( \QueuetyGoInterop\FailStep::class )->on_queue( 'to-php' )->max_attempts( 1 )->dispatch();
echo json_encode( array( 'processed' => \Queuety\Queuety::flush_queue( 'to-php' ) ) );`)), &flushed))
	assert.Equal(t, 4, flushed.Processed, "PHP ran its four jobs (the retry is not due yet)")
	phpPosts := drainPosts(t, got, 5)

	_, err = c.Dispatch(ctx, "noop", nil, queuety.OnQueue("to-go"))
	require.NoError(t, err)
	_, err = c.Dispatch(ctx, `App\Jobs\Fail`, nil, queuety.OnQueue("to-go"), queuety.MaxAttempts(1))
	require.NoError(t, err)
	_, err = c.Dispatch(ctx, `App\Jobs\Fail`, nil, queuety.OnQueue("to-go"), queuety.MaxAttempts(2))
	require.NoError(t, err)
	_, err = builder.Workflow("wf_fail").OnQueue("to-go").MaxAttempts(1).Then(`QueuetyGoInterop\FailStep`).Dispatch(ctx, c, nil)
	require.NoError(t, err)
	w := interopWorker(c)
	w.HandleJob("noop", func(context.Context, queuety.Payload) error { return nil })
	w.HandleJob(`App\Jobs\Fail`, func(context.Context, queuety.Payload) error { return errors.New(`disk/full "now"`) })
	goWorker := func() *worker.Worker {
		return worker.New(c, worker.Queues("to-go"), worker.NoMaintenance(), worker.WithRegistry(w.Registry()),
			worker.WithLogger(slog.New(slog.DiscardHandler)), worker.Webhooks(worker.WebhookOptions{Allow: []string{"127.0.0.1"}}))
	}
	st, err := goWorker().RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(4), st.Claimed, "Go ran its four jobs")
	goPosts := drainPosts(t, got, 5)
	for _, p := range append(phpPosts, goPosts...) {
		assert.Empty(t, p.header.Get(webhook.HeaderSignature), "PHP's webhooks are sent unsigned, by both")
	}

	shapes := func(posts []hookPost) []string {
		out := make([]string, len(posts))
		for i, p := range posts {
			assert.Equal(t, "application/json", p.contentType)
			out[i] = shapeOf(p.body)
		}
		return out
	}
	want := []string{
		`{"event":"job.completed","data":{"job_id":_,"handler":"noop","queue":_,"duration_ms":_},"timestamp":_}`,
		`{"event":"job.buried","data":{"job_id":_,"handler":"App\\Jobs\\Fail","queue":_,"error_message":"disk\/full \"now\""},"timestamp":_}`,
		`{"event":"job.failed","data":{"job_id":_,"handler":"App\\Jobs\\Fail","queue":_,"attempt":1,"error_message":"disk\/full \"now\""},"timestamp":_}`,
		`{"event":"job.buried","data":{"job_id":_,"handler":"QueuetyGoInterop\\FailStep","queue":_,"error_message":"child failed"},"timestamp":_}`,
		`{"event":"workflow.failed","data":{"workflow_id":_,"job_id":_,"handler":"QueuetyGoInterop\\FailStep","error_message":"child failed"},"timestamp":_}`,
	}
	assert.ElementsMatch(t, want, shapes(phpPosts), "Queuety PHP's bodies")
	assert.ElementsMatch(t, shapes(phpPosts), shapes(goPosts), "Go's bodies have PHP's bytes")
	for _, p := range append(phpPosts, goPosts...) {
		assert.Regexp(t, `"timestamp":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"}$`, p.body, "UTC time, as gmdate('Y-m-d\\TH:i:s\\Z')")
	}

	// Go gives PHP's job.completed webhook a secret: PHP still lists four
	// columns and sends unsigned; Go's worker signs with the secret.
	secret, err := c.RotateWebhookSecret(ctx, phpIDs[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(php.eval(`echo json_encode( \Queuety\Queuety::list_webhooks() );`)), &listed))
	require.Len(t, listed, 4)
	assert.Len(t, listed[0], 4, "PHP sees no secret column: %v", listed[0])
	php.eval(phpFailJobs + `
\Queuety\Queuety::dispatch( 'noop', array() )->on_queue( 'to-php' );
\Queuety\Queuety::flush_queue( 'to-php' );`)
	phpSent := drainPosts(t, got, 1)[0]
	assert.Empty(t, phpSent.header.Get(webhook.HeaderSignature), "PHP sends it unsigned")
	_, err = c.Dispatch(ctx, "noop", nil, queuety.OnQueue("to-go"))
	require.NoError(t, err)
	_, err = goWorker().RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)
	goSent := drainPosts(t, got, 1)[0]
	require.NoError(t, webhook.Verify(secret, goSent.header, []byte(goSent.body), 0), "Go signs it with the secret")
}

// drainPosts receives n POSTs and checks that no more arrived.
func drainPosts(t *testing.T, got chan hookPost, n int) []hookPost {
	t.Helper()
	out := make([]hookPost, 0, n)
	for range n {
		select {
		case p := <-got:
			out = append(out, p)
		case <-time.After(30 * time.Second):
			require.FailNow(t, "webhook POSTs missing", "got %d of %d: %v", len(out), n, out)
		}
	}
	select {
	case p := <-got:
		require.FailNow(t, "an unexpected POST", p.body)
	default:
	}
	return out
}
