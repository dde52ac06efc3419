// Package mariadbproc holds what the tests that run their own database
// server processes share (the chaos suite's private server, the Galera
// cluster of package galera, and for some of it package pgproc's
// PostgreSQL): finding the binaries, choosing free ports that are never
// the shared server's, process groups that die with the test, waiting for
// a server to answer, the error log's tail and the DSNs of a server on a
// port.
package mariadbproc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

// SharedPort is the port of the shared test server; a private server
// never uses it.
const SharedPort = 3306

// FindBinary returns the path of a program: $envVar when set, else the
// first of names on $PATH, else the first of candidates that is a file
// (a program or, for Galera's provider, a library); "" when none is.
func FindBinary(envVar string, names, candidates []string) string {
	if p := os.Getenv(envVar); p != "" {
		return p
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// FreePorts returns n distinct free ports on 127.0.0.1, none of them
// SharedPort.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []int
	for len(ports) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln) // held open until all are chosen: distinct
		if p := ln.Addr().(*net.TCPAddr).Port; p != SharedPort {
			ports = append(ports, p)
		}
	}
	return ports
}

// ErrLogTail returns the last n lines of the error log at path.
func ErrLogTail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// DriverDSN is a go-sql-driver DSN of the server on port as root, for
// database db (none when empty), in UTC.
func DriverDSN(port int, db string) string {
	c := gomysql.NewConfig()
	c.User = "root"
	c.Net, c.Addr = "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c.DBName = db
	c.ParseTime = true
	c.Loc = time.UTC
	c.Timeout = 5 * time.Second
	c.Params = map[string]string{"time_zone": "'+00:00'"}
	return c.FormatDSN()
}

// DSN is the queuety DSN of the server on port for database db and table
// prefix.
func DSN(port int, db, prefix string) string {
	return fmt.Sprintf("mysql://root@127.0.0.1:%d/%s?prefix=%s", port, db, prefix)
}

// Stop shuts down the server cmd runs cleanly (SIGTERM), or, when it has
// not exited within 30 s, logs so with logf and kills it with anything
// left in its process group (a state-transfer script). exited is closed
// when the process has exited.
func Stop(cmd *exec.Cmd, exited <-chan struct{}, name string, logf func(format string, args ...any)) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	select {
	case <-exited:
	default:
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			logf("%s did not stop within 30 s; killing it", name)
		}
	}
	KillGroup(cmd.Process.Pid)
	_ = cmd.Process.Kill()
	<-exited
}
