package observe_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuety/queuety-go/observe"
)

type ctxKey string

// recorder notes its calls in a shared log and puts its name in the
// contexts it returns.
type recorder struct {
	observe.Nop
	name string
	log  *[]string
}

func (r recorder) note(ctx context.Context, call string) {
	seen, _ := ctx.Value(ctxKey("chain")).(string)
	*r.log = append(*r.log, r.name+"."+call+"("+seen+")")
}

func (r recorder) mark(ctx context.Context) context.Context {
	seen, _ := ctx.Value(ctxKey("chain")).(string)
	return context.WithValue(ctx, ctxKey("chain"), seen+r.name)
}

func (r recorder) JobStart(ctx context.Context, _ observe.Job) context.Context {
	r.note(ctx, "start")
	return r.mark(ctx)
}

func (r recorder) JobEnd(ctx context.Context, _ observe.Job, _ observe.Ended) { r.note(ctx, "end") }

func TestMulti(t *testing.T) {
	var log []string
	a, b := recorder{name: "a", log: &log}, recorder{name: "b", log: &log}
	m := observe.Multi(a, nil, observe.Multi(b))
	ctx := m.JobStart(context.Background(), observe.Job{})
	m.JobEnd(ctx, observe.Job{}, observe.Ended{})
	assert.Equal(t, []string{"a.start()", "b.start(a)", "b.end(ab)", "a.end(ab)"}, log,
		"starts in order, each on the previous context; ends in reverse, on the last context")

	assert.Nil(t, observe.Multi(), "no observer")
	assert.Nil(t, observe.Multi(nil, nil), "only nils")
	assert.Equal(t, observe.Observer(a), observe.Multi(nil, a), "a single observer is itself")
}
