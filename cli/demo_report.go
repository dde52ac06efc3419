package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// modulePath is the module the demo's hints name when the program runs
// from `go run` outside the module's tree.
const modulePath = "github.com/queuety/queuety-go"

// demoProgramPath and demoWorkDir are where the demo learns how it was
// started; tests replace them.
var (
	demoProgramPath = func() string { return os.Args[0] }
	demoWorkDir     = os.Getwd
)

// demoProgressEvery is the cadence of the demo's progress lines.
const demoProgressEvery = time.Second

// hintCommand returns how the user runs this program again: Program, or
// for a binary `go run` built (it lives in an "exe" directory of a
// go-build temporary directory), the `go run` command that builds it:
// "go run ./cmd/queuety-worker" at the module's root, the package path
// elsewhere in the module, and the package path at @latest outside it.
func hintCommand(programPath, wd string) string {
	p := filepath.ToSlash(programPath)
	if !strings.Contains(p, "/go-build") || !strings.Contains(p, "/exe/") {
		return Program
	}
	pkg := modulePath + "/cmd/" + Program
	for dir := wd; dir != ""; {
		if moduleOf(filepath.Join(dir, "go.mod")) == modulePath {
			if dir == wd {
				return "go run ./cmd/" + Program
			}
			return "go run " + pkg
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "go run " + pkg + "@latest"
}

// moduleOf returns the module path a go.mod file declares, or "".
func moduleOf(goMod string) string {
	f, err := os.Open(goMod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// redactDSN returns dsn with its password, if any, replaced by "xxxxx":
// the text from the first ':' of the user information to the last '@'.
func redactDSN(dsn string) string {
	prefix, rest := "", dsn
	if i := strings.Index(dsn, "://"); i > 0 && driver.SchemeOf(dsn) == strings.ToLower(dsn[:i]) {
		prefix, rest = dsn[:i+3], dsn[i+3:]
	}
	at := strings.LastIndexByte(rest, '@')
	colon := strings.IndexByte(rest, ':')
	if at < 0 || colon < 0 || colon > at {
		return dsn
	}
	return prefix + rest[:colon+1] + "xxxxx" + rest[at:]
}

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// line prints a line of text output, first ending a progress line that
// a terminal shows.
func (d *demo) line(format string, args ...any) {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	if d.progressOpen {
		fmt.Fprint(d.out, "\n")
		d.progressOpen = false
	}
	fmt.Fprintf(d.out, format, args...)
}

// progress prints one progress line: on a terminal a line rewritten in
// place, otherwise a plain line.
func (d *demo) progress(elapsed time.Duration, wfsDone int) {
	if d.e.Globals.JSON {
		return
	}
	done := d.jobsDone.Load()
	s := fmt.Sprintf("  %5.1fs  %d/%d jobs, %d/%d workflows, %.0f jobs/s",
		elapsed.Seconds(), done, d.jobs, wfsDone, len(d.wfIDs), float64(done)/elapsed.Seconds())
	d.outMu.Lock()
	defer d.outMu.Unlock()
	if !d.tty {
		fmt.Fprintln(d.out, s)
		return
	}
	pad := ""
	if n := d.progressWidth - len(s); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprint(d.out, "\r"+s+pad)
	d.progressWidth, d.progressOpen = len(s), true
}

// endProgress ends a progress line a terminal shows.
func (d *demo) endProgress() { d.line("") }

// demoReport is the demo's --json output.
type demoReport struct {
	DSN              string            `json:"dsn"`
	Store            demoStore         `json:"store"`
	Queue            string            `json:"queue"`
	Concurrency      int               `json:"concurrency"`
	ElapsedSeconds   float64           `json:"elapsed_seconds"`
	Jobs             demoJobCounts     `json:"jobs"`
	Workflows        demoWfCounts      `json:"workflows"`
	Callbacks        int64             `json:"deadline_callbacks"`
	JobsPerSecond    float64           `json:"jobs_per_second"`
	StepsPerSecond   float64           `json:"steps_per_second"`
	JobWindowSeconds float64           `json:"job_window_seconds"`
	Interesting      map[string]int64  `json:"interesting_workflows"`
	Hints            []string          `json:"look_around"`
	Failed           []demoFailedWfRow `json:"failed_workflows"`
}

type demoStore struct {
	Driver  string `json:"driver"`
	Server  string `json:"server"`
	Address string `json:"address"`
}

type demoJobCounts struct {
	Dispatched     int   `json:"dispatched"`
	Done           int64 `json:"done"`
	FailedAttempts int64 `json:"failed_attempts"`
	Buried         int64 `json:"buried"`
}

type demoWfCounts struct {
	Dispatched int   `json:"dispatched"`
	Completed  int   `json:"completed"`
	Failed     int   `json:"failed"`
	Steps      int64 `json:"steps_done"`
}

type demoFailedWfRow struct {
	ID    int64  `json:"id"`
	Name  string `json:"name"`
	Error string `json:"error"`
}
