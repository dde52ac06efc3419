package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Peer says which other queue to run beside the scenarios, in the same
// run, and where. The only peer is "river": River on PostgreSQL, run by
// the separate Go module in the source tree's bench/river (so the library
// does not depend on River). It is built once with the go command and
// run once a round, after the round's own scenarios.
type Peer struct {
	// Name is the peer: "river".
	Name string
	// Dir is the peer module's directory; empty: bench/river of the
	// source tree around the working directory.
	Dir string
	// DSN is the peer's database server (for River, a PostgreSQL URL).
	DSN string
}

// PeerInfo describes the peer a report ran beside.
type PeerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Server  string `json:"server"`
}

// peerModules are the peers bench knows, by name: their module directory
// in the source tree.
var peerModules = map[string]string{"river": filepath.Join("bench", "river")}

// DefaultPeerDSN is the server a peer runs on when none is given.
const DefaultPeerDSN = "postgres://127.0.0.1:5432/test"

// peerRunner builds the peer and runs its scenarios, a round at a time.
type peerRunner struct {
	bin, dsn, tmp string
	scenarios     []string // the peer's names, without its "river-" prefix
	jobs, conc    int
}

// peerReport is what the peer program prints.
type peerReport struct {
	Peer    string    `json:"peer"`
	Version string    `json:"version"`
	Server  string    `json:"server"`
	Results []*Result `json:"results"`
}

// findPeerDir returns p's module directory: p.Dir, or the peer's
// directory in the source tree around the working directory.
func findPeerDir(p Peer) (string, error) {
	sub, ok := peerModules[p.Name]
	if !ok {
		return "", fmt.Errorf("unknown peer %q (known: river)", p.Name)
	}
	if p.Dir != "" {
		if _, err := os.Stat(filepath.Join(p.Dir, "go.mod")); err != nil {
			return "", fmt.Errorf("peer %s: %s is not its module directory (no go.mod)", p.Name, p.Dir)
		}
		return p.Dir, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("peer %s: %w", p.Name, err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, sub, "go.mod")); err == nil {
			return filepath.Join(dir, sub), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("peer %s runs from the queuety-go source tree (its %s module); run bench inside a checkout or give the module's directory", p.Name, sub)
		}
		dir = parent
	}
}

// newPeerRunner builds the peer's program into a temporary directory.
func newPeerRunner(ctx context.Context, p Peer, scenarios []string, jobs, concurrency int) (*peerRunner, error) {
	dir, err := findPeerDir(p)
	if err != nil {
		return nil, err
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("peer %s: building it needs the go command: %w", p.Name, err)
	}
	tmp, err := os.MkdirTemp("", "queuety-bench-peer-")
	if err != nil {
		return nil, fmt.Errorf("peer %s: %w", p.Name, err)
	}
	r := &peerRunner{bin: filepath.Join(tmp, p.Name), dsn: p.DSN, tmp: tmp, scenarios: scenarios, jobs: jobs, conc: concurrency}
	if r.dsn == "" {
		r.dsn = DefaultPeerDSN
	}
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", r.bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		r.close()
		return nil, fmt.Errorf("peer %s: go build in %s: %w\n%s", p.Name, dir, err, bytes.TrimSpace(out))
	}
	return r, nil
}

// round runs each of the peer's scenarios once.
func (r *peerRunner) round(ctx context.Context) (*peerReport, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, r.bin, "-dsn", r.dsn, "-jobs", fmt.Sprint(r.jobs), "-runs", "1",
		"-concurrency", fmt.Sprint(r.conc), "-scenarios", strings.Join(r.scenarios, ","))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("peer: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var rep peerReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("peer: read its report: %w", err)
	}
	if len(rep.Results) != len(r.scenarios) {
		return nil, fmt.Errorf("peer: %d results for %d scenarios", len(rep.Results), len(r.scenarios))
	}
	return &rep, nil
}

func (r *peerRunner) close() { os.RemoveAll(r.tmp) }

// peerScenarios are the peer scenarios a run asks for, without the
// peer's prefix: its twin of each drain-<N>w of workers that runs
// (named, or every scenario runs), and bench (River's `river bench`
// settings) when every scenario runs or it is named.
func peerScenarios(name string, workers []int, want map[string]bool) []string {
	var out []string
	for _, w := range workers {
		d := fmt.Sprintf("drain-%dw", w)
		if len(want) == 0 || want[d] || want[name+"-"+d] {
			out = append(out, d)
		}
	}
	if len(want) == 0 || want[name+"-bench"] {
		out = append(out, "bench")
	}
	return out
}

// addPeerRound appends a round of the peer's results to rep, by name.
func addPeerRound(rep *Report, got *peerReport) {
	if rep.Peer == nil {
		rep.Peer = &PeerInfo{Name: got.Peer, Version: got.Version, Server: got.Server}
	}
	for _, g := range got.Results {
		var r *Result
		for _, have := range rep.Results {
			if have.Name == g.Name {
				r = have
			}
		}
		if r == nil {
			r = &Result{Name: g.Name, Unit: g.Unit, Extra: g.Extra}
			rep.Results = append(rep.Results, r)
		}
		r.Runs = append(r.Runs, g.Runs...)
		r.ClientCPU = append(r.ClientCPU, g.ClientCPU...)
		r.ServerCPU = append(r.ServerCPU, g.ServerCPU...)
	}
}

// peerShares sets each drain's share of its twin on the peer.
func peerShares(rep *Report) {
	if rep.Peer == nil {
		return
	}
	byName := map[string]*Result{}
	for _, r := range rep.Results {
		byName[r.Name] = r
	}
	for _, r := range rep.Results {
		twin := byName[rep.Peer.Name+"-"+r.Name]
		if twin == nil || twin.Median <= 0 || !strings.HasPrefix(r.Name, "drain-") {
			continue
		}
		r.OfPeer, r.OfPeerPaired = r.Median/twin.Median, pairedRatio(r.Runs, twin.Runs)
	}
}

// formatPeer writes the peer's line and each drain's ratio to its twin.
func (r *Report) formatPeer(w io.Writer) {
	if r.Peer == nil {
		return
	}
	fmt.Fprintf(w, "\npeer %s %s on %s, in the same run (its CPU figures: this process is the peer's, the server is every postgres process)\n",
		r.Peer.Name, r.Peer.Version, r.Peer.Server)
	for _, res := range r.Results {
		if res.OfPeer > 0 {
			fmt.Fprintf(w, "%-28s %.2fx %s-%s (paired %.2fx)\n", res.Name, res.OfPeer, r.Peer.Name, res.Name, res.OfPeerPaired)
		}
	}
}
