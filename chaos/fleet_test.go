//go:build chaos

package chaos

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/internal/testdb/mariadbproc"
)

// fleet starts and watches the child processes of one scenario. Every
// process that exits without the fleet having signalled it is a crash, and
// so is one that exits with a non-zero status after SIGTERM.
type fleet struct {
	t   *testing.T
	exe string
	dir string // child logs

	mu      sync.Mutex
	seq     int
	procs   []*proc
	kills   map[int]time.Time // pid -> when the fleet SIGKILLed it
	crashes []string
}

type proc struct {
	name    string
	pid     int
	cmd     *exec.Cmd
	logPath string
	started time.Time
	out     *syncbuf.Buffer
	done    chan struct{}

	mu       sync.Mutex
	expect   string // "", "sigkill" or "sigterm": what the fleet did to it
	exitedAt time.Time
	state    *os.ProcessState
}

func newFleet(t *testing.T, exe, dir string) *fleet {
	f := &fleet{t: t, exe: exe, dir: dir, kills: map[int]time.Time{}}
	// Whatever is still running when the scenario ends is killed.
	t.Cleanup(func() {
		for _, p := range f.all() {
			if !p.exited() {
				p.setExpect("sigkill")
				_ = p.cmd.Process.Kill()
				mariadbproc.KillGroup(p.pid)
				<-p.done
			}
		}
	})
	return f
}

// start starts a child process running cfg.
func (f *fleet) start(kind string, cfg childConfig) (*proc, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.seq++
	name := fmt.Sprintf("%s-%d", kind, f.seq)
	f.mu.Unlock()
	logPath := filepath.Join(f.dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(f.exe)
	cmd.Env = append(os.Environ(), envChild+"="+string(raw))
	p := &proc{name: name, cmd: cmd, logPath: logPath, out: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, logFile
	mariadbproc.Detach(cmd)
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	p.pid = cmd.Process.Pid
	f.mu.Lock()
	f.procs = append(f.procs, p)
	f.mu.Unlock()
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.exitedAt, p.state = time.Now(), cmd.ProcessState
		expect := p.expect
		p.mu.Unlock()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			f.crash(p, fmt.Sprintf("wait: %v", err))
		}
		switch {
		case expect == "" && kind == "sweeper" && cmd.ProcessState.Success():
			// sweepers exit when they are done
		case expect == "":
			f.crash(p, fmt.Sprintf("exited on its own: %v", cmd.ProcessState))
		case expect == "sigterm" && !cmd.ProcessState.Success():
			f.crash(p, fmt.Sprintf("exited with %v after SIGTERM", cmd.ProcessState))
		}
		close(p.done)
	}()
	return p, nil
}

func (f *fleet) crash(p *proc, why string) {
	msg := fmt.Sprintf("%s (pid %d) %s; last lines of %s:\n%s", p.name, p.pid, why, p.logPath, tail(p.logPath, 30))
	f.mu.Lock()
	f.crashes = append(f.crashes, msg)
	f.mu.Unlock()
}

func (f *fleet) all() []*proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*proc(nil), f.procs...)
}

// running lists the processes of kind that the fleet has not signalled
// and that have not exited.
func (f *fleet) running(kind string) []*proc {
	var out []*proc
	for _, p := range f.all() {
		if strings.HasPrefix(p.name, kind+"-") && !p.exited() && p.getExpect() == "" {
			out = append(out, p)
		}
	}
	return out
}

func (f *fleet) crashReports() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.crashes...)
}

// killTimes returns when each SIGKILLed process was killed, by pid.
func (f *fleet) killTimes() map[int]time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[int]time.Time, len(f.kills))
	for k, v := range f.kills {
		out[k] = v
	}
	return out
}

// sigkill kills p with SIGKILL, waits until it is gone and returns the
// moment the signal was sent.
func (f *fleet) sigkill(p *proc) time.Time {
	p.setExpect("sigkill")
	at := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	f.mu.Lock()
	f.kills[p.pid] = at
	f.mu.Unlock()
	<-p.done
	return at
}

// stopResult is how one process answered SIGTERM.
type stopResult struct {
	p    *proc
	took time.Duration // until exit; the bound when hung
	hung bool
}

// terminate sends SIGTERM to ps at once and waits up to bound for each to
// exit. A process still running then is hung: it is SIGKILLed.
func (f *fleet) terminate(ps []*proc, bound time.Duration) []stopResult {
	sent := time.Now()
	for _, p := range ps {
		p.setExpect("sigterm")
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	res := make([]stopResult, len(ps))
	for i, p := range ps {
		res[i].p = p
		select {
		case <-p.done:
		case <-deadline.C:
			deadline.Reset(0) // the rest get no more time
		}
		select {
		case <-p.done:
			res[i].took = p.exitTime().Sub(sent)
		default:
			res[i].hung, res[i].took = true, bound
			p.setExpect("hung")
			_ = p.cmd.Process.Kill()
			mariadbproc.KillGroup(p.pid)
			<-p.done
		}
	}
	return res
}

func (p *proc) setExpect(e string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.expect == "" || e == "hung" {
		p.expect = e
	}
}

func (p *proc) getExpect() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.expect
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) exitTime() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitedAt
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
