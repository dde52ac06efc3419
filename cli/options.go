package cli

import (
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// Option configures a program built on Main or Run.
type Option func(*config)

type config struct {
	name       string
	extra      []*Command
	workerOpts []worker.Option
	observer   observe.Observer
}

func newConfig(opts []Option) *config {
	cfg := &config{name: Program}
	for _, o := range opts {
		if o != nil {
			o(cfg)
		}
	}
	return cfg
}

// WithName sets the program name that usage, help, errors, version and
// the completion scripts use. Main defaults to the base name of
// os.Args[0], Run to Program.
func WithName(name string) Option {
	return func(c *config) {
		if name != "" {
			c.name = name
		}
	}
}

// WithCommands adds commands after the built-in ones, in help's list and
// the completion: a Command with a Setup (or a group with Sub), as the
// built-in commands are defined (see the package documentation). A name
// a built-in command or wp queuety spelling has is an error when the
// program runs.
func WithCommands(cmds ...*Command) Option {
	return func(c *config) { c.extra = append(c.extra, cmds...) }
}

// WithWorkerOptions adds options to the workers of work and flush, after
// the ones their flags make (so they win where both set something): rate
// limits, group limits, cost budgets, hooks, or any other worker.Option.
func WithWorkerOptions(opts ...worker.Option) Option {
	return func(c *config) { c.workerOpts = append(c.workerOpts, opts...) }
}

// WithObserver installs an instrumentation observer on the stores that
// work and flush open (queuety.WithObserver): it hears their claims,
// attempts and sweeps. With work --metrics-listen it is combined with the
// Prometheus metrics through observe.Multi.
func WithObserver(o observe.Observer) Option {
	return func(c *config) { c.observer = o }
}

// workerOptions are the options of cfg for a worker.
func (e *Env) workerOptions() []worker.Option {
	if e.app == nil {
		return nil
	}
	return e.app.cfg.workerOpts
}

// observer returns the client option with the observer of the options,
// combined with metrics (nil for none).
func (e *Env) observer(metrics observe.Observer) queuety.Option {
	var user observe.Observer
	if e.app != nil {
		user = e.app.cfg.observer
	}
	switch {
	case user == nil:
		return queuety.WithObserver(metrics)
	case metrics == nil:
		return queuety.WithObserver(user)
	}
	return queuety.WithObserver(observe.Multi(metrics, user))
}
