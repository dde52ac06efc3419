package observe

import "context"

// Multi returns an Observer that calls each of obs in turn (nil entries
// are skipped): Start calls in order, each given the context the previous
// one returned, and End calls in reverse order, each given the last
// context, which descends from all of theirs. It returns nil when no
// observer is left, and the observer itself when only one is.
func Multi(obs ...Observer) Observer {
	var list multi
	for _, o := range obs {
		switch o := o.(type) {
		case nil:
		case multi:
			list = append(list, o...)
		default:
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return list
}

type multi []Observer

func (m multi) DispatchStart(ctx context.Context, d Dispatch) context.Context {
	for _, o := range m {
		ctx = o.DispatchStart(ctx, d)
	}
	return ctx
}

func (m multi) DispatchEnd(ctx context.Context, d Dispatch, r Dispatched) {
	for i := len(m) - 1; i >= 0; i-- {
		m[i].DispatchEnd(ctx, d, r)
	}
}

func (m multi) Claimed(ctx context.Context, c Claim) context.Context {
	for _, o := range m {
		ctx = o.Claimed(ctx, c)
	}
	return ctx
}

func (m multi) JobStart(ctx context.Context, j Job) context.Context {
	for _, o := range m {
		ctx = o.JobStart(ctx, j)
	}
	return ctx
}

func (m multi) HandlerStart(ctx context.Context, j Job) context.Context {
	for _, o := range m {
		ctx = o.HandlerStart(ctx, j)
	}
	return ctx
}

func (m multi) HandlerEnd(ctx context.Context, j Job, h Handled) {
	for i := len(m) - 1; i >= 0; i-- {
		m[i].HandlerEnd(ctx, j, h)
	}
}

func (m multi) JobEnd(ctx context.Context, j Job, e Ended) {
	for i := len(m) - 1; i >= 0; i-- {
		m[i].JobEnd(ctx, j, e)
	}
}

func (m multi) Swept(ctx context.Context, s Sweep) {
	for _, o := range m {
		o.Swept(ctx, s)
	}
}

// HandlerAbandoned calls the observers that implement AbandonObserver.
func (m multi) HandlerAbandoned(ctx context.Context, j Job, a Abandon) {
	for _, o := range m {
		if ao, ok := o.(AbandonObserver); ok {
			ao.HandlerAbandoned(ctx, j, a)
		}
	}
}
