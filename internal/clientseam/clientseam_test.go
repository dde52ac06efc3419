package clientseam_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	_ "github.com/queuety/queuety-go/store/sqlite"
)

func TestAccessorsUnwrapAClient(t *testing.T) {
	ctx := context.Background()
	clock := queuety.NewFakeClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	c, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithClock(clock))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })

	e := clientseam.Engine(c)
	require.NotNil(t, e)
	assert.Same(t, clientseam.StoreOf(c), e.Store(), "the client's store is its engine's")
	assert.Equal(t, c.StoreInfo(), clientseam.StoreOf(c).Info())
	assert.Equal(t, clock.Now(), clientseam.Clock(c).Now(), "the clock set with WithClock")

	reg := queuety.NewRegistry()
	fns := clientseam.Functions(reg)
	_, ok := fns.Reducer("sum")
	assert.False(t, ok, "nothing registered yet")
	reg.HandleReducer("sum", func(ctx context.Context, s queuety.State, r queuetytype.ForEachResult) (queuety.State, error) {
		return s, nil
	})
	_, ok = fns.Reducer("sum")
	assert.True(t, ok, "a function registered later is seen")

	other := clientseam.NewClient(clientseam.StoreOf(c), queuety.WithClock(clock)).(*queuety.Client) // shares c's store: not closed
	assert.Same(t, clientseam.StoreOf(c), clientseam.StoreOf(other))
}

func TestAccessorsPanicOnAnythingElse(t *testing.T) {
	var nilClient *queuety.Client
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"Engine of an int", func() { clientseam.Engine(42) }, "clientseam.Engine: want a non-nil *queuety.Client, got int"},
		{"Engine of nil", func() { clientseam.Engine(nil) }, "clientseam.Engine: want a non-nil *queuety.Client, got <nil>"},
		{"Engine of a nil client", func() { clientseam.Engine(nilClient) }, "clientseam.Engine: want a non-nil *queuety.Client, got *queuety.Client"},
		{"StoreOf a registry", func() { clientseam.StoreOf(queuety.NewRegistry()) }, "clientseam.StoreOf: want a non-nil *queuety.Client, got *queuety.Registry"},
		{"Clock of a string", func() { clientseam.Clock("c") }, "clientseam.Clock: want a non-nil *queuety.Client, got string"},
		{"Functions of a client", func() { clientseam.Functions(nilClient) }, "clientseam.Functions: want a non-nil *queuety.Registry, got *queuety.Client"},
		{"NewClient with a bad option", func() { clientseam.NewClient(nil, queuety.WithClock(nil), "x") }, "clientseam.NewClient: option 1 is a string, want a queuety.Option"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, tc.call)
		})
	}
}
