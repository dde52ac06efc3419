//go:build chaos

package chaos

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queuety/queuety-go/internal/testdb/mariadbproc"
)

// The suite's own MariaDB: a fresh data directory in a temporary
// directory, a free port on 127.0.0.1, no grant tables. It never connects
// to any other server.

// Where the binaries are looked for, after $QUEUETY_CHAOS_MARIADBD /
// $QUEUETY_CHAOS_INSTALL_DB and $PATH.
var (
	serverCandidates  = []string{"/usr/sbin/mariadbd", "/usr/libexec/mariadbd", "/usr/local/mysql/bin/mariadbd", "/usr/local/bin/mariadbd"}
	installCandidates = []string{"/usr/bin/mariadb-install-db", "/usr/local/bin/mariadb-install-db", "/usr/local/mysql/scripts/mariadb-install-db",
		"/usr/bin/mysql_install_db", "/usr/local/mysql/scripts/mysql_install_db"}
)

// mariaDB is a private MariaDB server owned by one test.
type mariaDB struct {
	t       *testing.T
	server  string // mariadbd
	dir     string
	dataDir string
	socket  string
	errLog  string
	port    int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

// startMariaDB installs a data directory and starts a server on it. It
// skips the test when MariaDB is not installed, unless CI=true.
func startMariaDB(t *testing.T) *mariaDB {
	t.Helper()
	server := mariadbproc.FindBinary("QUEUETY_CHAOS_MARIADBD", []string{"mariadbd"}, serverCandidates)
	install := mariadbproc.FindBinary("QUEUETY_CHAOS_INSTALL_DB", []string{"mariadb-install-db", "mysql_install_db"}, installCandidates)
	if server == "" || install == "" {
		msg := fmt.Sprintf("MariaDB is not installed (mariadbd: %q, mariadb-install-db: %q); set QUEUETY_CHAOS_MARIADBD and QUEUETY_CHAOS_INSTALL_DB", server, install)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// A short directory keeps the socket path under the 107-byte limit.
	dir, err := os.MkdirTemp("", "queuety-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	m := &mariaDB{
		t: t, server: server, dir: dir,
		dataDir: filepath.Join(dir, "data"), socket: filepath.Join(dir, "mysqld.sock"), errLog: filepath.Join(dir, "mariadbd.err"),
	}
	t.Cleanup(func() {
		m.stop()
		if os.Getenv("QUEUETY_CHAOS_KEEP") != "" || t.Failed() {
			t.Logf("private MariaDB files kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})

	args := []string{"--no-defaults", "--datadir=" + m.dataDir, "--skip-test-db"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	out, err := exec.Command(install, args...).CombinedOutput()
	if err != nil && bytes.Contains(out, []byte("skip-test-db")) { // older install scripts
		out, err = exec.Command(install, slicesWithout(args, "--skip-test-db")...).CombinedOutput()
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", install, err, out)
	}

	// A port another process takes between the probe and the bind makes
	// the server exit at once; try a few.
	for try := 0; ; try++ {
		m.port = freePort(t)
		err = m.start(60 * time.Second)
		if err == nil {
			break
		}
		if try >= 4 {
			t.Fatalf("start private MariaDB: %v", err)
		}
		t.Logf("start private MariaDB on port %d: %v; trying another port", m.port, err)
	}
	t.Logf("private MariaDB %s on 127.0.0.1:%d, data in %s", server, m.port, m.dataDir)
	return m
}

func slicesWithout(s []string, drop string) []string {
	var out []string
	for _, v := range s {
		if v != drop {
			out = append(out, v)
		}
	}
	return out
}

func freePort(t *testing.T) int { return mariadbproc.FreePorts(t, 1)[0] }

// start starts mariadbd on the data directory and waits until it answers.
func (m *mariaDB) start(timeout time.Duration) error {
	if m.port == mariadbproc.SharedPort {
		return errors.New("refusing to run the private server on the shared port")
	}
	args := []string{
		"--no-defaults",
		"--datadir=" + m.dataDir,
		"--socket=" + m.socket,
		"--pid-file=" + filepath.Join(m.dir, "mariadbd.pid"),
		"--log-error=" + m.errLog,
		"--tmpdir=" + m.dir,
		"--bind-address=127.0.0.1",
		"--port=" + strconv.Itoa(m.port),
		"--skip-grant-tables",
		"--skip-name-resolve",
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_unicode_ci",
		"--max-connections=4000",
		// Commits reach the OS at once and disk once a second: they
		// survive a kill -9 of the server (the failure this suite causes),
		// not a power cut.
		"--innodb-flush-log-at-trx-commit=2",
		// Every deadlock goes to the error log, kept with a failing run.
		"--innodb-print-all-deadlocks=ON",
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(m.server, args...)
	mariadbproc.Detach(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	m.mu.Lock()
	m.cmd, m.exited = cmd, exited
	m.starts++
	m.mu.Unlock()

	db, err := sql.Open("mysql", m.driverDSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	return mariadbproc.Starting{Name: "mariadbd", Exited: exited, State: func() string { return fmt.Sprint(cmd.ProcessState) },
		Timeout: timeout, Pause: 25 * time.Millisecond, Kill: m.kill9, LogTail: func() string { return m.errLogTail(20) }}.WaitReady(db)
}

// kill9 SIGKILLs the server and waits for it to be gone.
func (m *mariaDB) kill9() {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	mariadbproc.KillGroup(cmd.Process.Pid)
	<-exited
}

// stop shuts the server down cleanly, or kills it (and anything left in
// its process group) after 30 s.
func (m *mariaDB) stop() {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	mariadbproc.Stop(cmd, exited, "private MariaDB", m.t.Logf)
}

// restart starts the server again on the same data directory and port,
// after kill9; it returns how long crash recovery and start-up took.
func (m *mariaDB) restart() (time.Duration, error) {
	t0 := time.Now()
	err := m.start(120 * time.Second)
	return time.Since(t0), err
}

func (m *mariaDB) errLogTail(n int) string { return mariadbproc.ErrLogTail(m.errLog, n) }

// driverDSN is a go-sql-driver DSN for database db (none when empty).
func (m *mariaDB) driverDSN(db string) string { return mariadbproc.DriverDSN(m.port, db) }

// queuetyDSN is the DSN workers and clients open database db with.
func (m *mariaDB) queuetyDSN(db, prefix string) string { return mariadbproc.DSN(m.port, db, prefix) }

func (m *mariaDB) root() string   { return m.dir }
func (m *mariaDB) driver() string { return "mysql" }

// crash is kill -9 of mariadbd.
func (m *mariaDB) crash() { m.kill9() }
