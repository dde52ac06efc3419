package cli

import (
	"encoding/json"
	"flag"
	"strings"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// parseBackoff reads --backoff: a strategy name or a list of seconds.
func parseBackoff(s string) (queuetytype.Backoff, error) {
	b, err := queuety.ParseBackoff(s)
	if err != nil {
		return nil, Usagef("--backoff %q: want exponential, fixed, linear or a comma-separated list of seconds such as 10,30,60", s)
	}
	return b, nil
}

func parsePriority(s string) (queuetytype.Priority, error) {
	p, err := queuetytype.ParsePriority(s)
	if err != nil {
		return 0, Usagef("--priority %q: want low, normal, high, urgent or 0-3", s)
	}
	return p, nil
}

func dispatchCommand() *Command {
	return &Command{
		Name:    "dispatch",
		Summary: "enqueue a job for a handler and print its id",
		Args:    "HANDLER [JSON]",
		Help: `JSON is the payload: a JSON object (default {}), given as the second
argument or with --payload (as wp queuety dispatch takes it). It is stored
with its keys in the order given, as Queuety PHP stores an array. The
handler name is the string stored in jobs.handler; PHP class names work
('App\Jobs\SendEmail'). --delay takes seconds (--delay=30) or a duration.
--unique returns the id of a pending or processing unique job of the
handler with the same payload, whatever the order of its keys.`,
		Examples: []string{
			Program + ` dispatch send_email '{"to": "ada@example.com"}'`,
			Program + ` dispatch 'App\Jobs\Rebuild' --queue reports --priority high --delay 5m`,
			Program + ` dispatch sync_feed '{"feed": 7}' --max-attempts 5 --backoff 10,30,60 --unique --json`,
		},
		MinArgs: 1, MaxArgs: 2,
		Setup: func(fs *flag.FlagSet) RunFunc {
			queue := fs.String("queue", queuetytype.DefaultQueue, "`name` of the queue to put the job on")
			priority := fs.String("priority", "low", "`level`: low, normal, high, urgent or 0-3")
			delay := durationFlag(fs, "delay", 0, "wait this `duration` before the first attempt (30s, 5m, 1d)")
			maxAttempts := fs.Int("max-attempts", queuetytype.DefaultMaxAttempts, "attempts before the job is buried (1-255)")
			backoff := fs.String("backoff", "", "wait between attempts: exponential (default), fixed, linear or a `list` of seconds such as 10,30,60")
			unique := fs.Bool("unique", false, "return the id of an identical pending or processing job instead of adding one")
			dependsOn := fs.Int64("depends-on", 0, "run only after the job with this `id` completed")
			payloadFlag := fs.String("payload", "", "the payload as a `JSON` object, instead of the second argument")
			return func(e *Env, args []string) error {
				handler, _, err := handlerArgs(args) // checks the payload argument
				if err != nil {
					return err
				}
				var payload any = queuety.State{}
				if len(args) > 1 {
					payload = json.RawMessage(args[1])
				}
				if *payloadFlag != "" {
					if len(args) > 1 {
						return Usagef("give the payload once: as the second argument or with --payload")
					}
					if _, err = parseJSONObject("--payload", *payloadFlag); err != nil {
						return err
					}
					payload = json.RawMessage(*payloadFlag)
				}
				if strings.TrimSpace(*queue) == "" {
					return Usagef("--queue is empty")
				}
				opts := []queuety.JobOption{queuety.OnQueue(*queue)}
				p, err := parsePriority(*priority)
				if err != nil {
					return err
				}
				opts = append(opts, queuety.WithPriority(p))
				if *delay < 0 {
					return Usagef("--delay must not be negative, got %s", *delay)
				}
				if *delay > 0 {
					opts = append(opts, queuety.Delay(*delay))
				}
				if *maxAttempts < 1 || *maxAttempts > queuetytype.MaxAttemptsLimit {
					return Usagef("--max-attempts must be between 1 and %d, got %d", queuetytype.MaxAttemptsLimit, *maxAttempts)
				}
				opts = append(opts, queuety.MaxAttempts(*maxAttempts))
				if *backoff != "" {
					b, err := parseBackoff(*backoff)
					if err != nil {
						return err
					}
					opts = append(opts, queuety.WithBackoff(b))
				}
				if *unique {
					opts = append(opts, queuety.Unique())
				}
				if *dependsOn < 0 {
					return Usagef("--depends-on must be a job id, got %d", *dependsOn)
				}
				if *dependsOn > 0 {
					opts = append(opts, queuety.DependsOn(*dependsOn))
				}
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				id, err := c.Dispatch(e.Ctx, handler, payload, opts...)
				if err != nil {
					return err
				}
				return printID(e, id)
			}
		},
	}
}
