// Package pgproc runs a private PostgreSQL server for tests that must
// stop or crash their server, or need authentication the shared test
// server does not use: a fresh data directory from initdb in a temporary
// directory, a free port on 127.0.0.1 (never 5432), its socket in that
// directory. Run as root, the server runs as the postgres account (the
// server refuses to run as root). The shared server is never touched.
package pgproc

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/queuety/queuety-go/internal/testdb/mariadbproc"
)

// SharedPort is the shared test server's port; a private server never
// uses it.
const SharedPort = 5432

// Options configure a private server.
type Options struct {
	// Password, when set, is the password of the superuser root, and
	// connections over TCP must give it (scram-sha-256); connections over
	// the socket stay trusted. Empty: every connection is trusted.
	Password string
	// Settings are extra server settings (name → value), passed as -c.
	Settings map[string]string
	// Keep keeps the directory after a passing test.
	Keep bool
}

// Server is a private PostgreSQL server owned by one test.
type Server struct {
	t        testing.TB
	binDir   string
	Dir      string // the temporary directory: data/, the socket, server.log
	dataDir  string
	LogPath  string // the server's log (stderr)
	Port     int
	password string
	settings map[string]string
	cred     *syscall.Credential

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// BinDir returns the directory of initdb and postgres:
// $QUEUETY_PG_BINDIR, else the newest /usr/lib/postgresql/<v>/bin, else
// the directory of postgres on $PATH; "" when none has both.
func BinDir() string {
	if d := os.Getenv("QUEUETY_PG_BINDIR"); d != "" {
		return d
	}
	has := func(d string) bool {
		for _, p := range []string{"initdb", "postgres"} {
			if st, err := os.Stat(filepath.Join(d, p)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if has(d) {
			return d
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p)
	}
	return ""
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Start initialises a data directory and starts a server on it. It skips
// the test when PostgreSQL's server programs are not installed, unless
// CI=true, where it fails.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := BinDir()
	if bin == "" {
		msg := "PostgreSQL's server programs (initdb, postgres) are not installed; set QUEUETY_PG_BINDIR"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// A short directory keeps the socket path under the 107-byte limit.
	dir, err := os.MkdirTemp("", "queuety-pg-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, binDir: bin, Dir: dir, dataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "server.log"),
		password: opts.Password, settings: opts.Settings}
	t.Cleanup(func() {
		s.Stop()
		if opts.Keep || os.Getenv("QUEUETY_PG_KEEP") != "" || t.Failed() {
			t.Logf("private PostgreSQL files kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		s.cred, err = postgresAccount()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-D", s.dataDir, "-U", "root", "-E", "UTF8", "--locale=C", "--no-sync", "--auth-local=trust"}
	if opts.Password != "" {
		pw := filepath.Join(dir, "pwfile")
		if err := os.WriteFile(pw, []byte(opts.Password+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if s.cred != nil {
			_ = os.Chown(pw, int(s.cred.Uid), int(s.cred.Gid))
		}
		args = append(args, "--auth-host=scram-sha-256", "--pwfile="+pw)
	} else {
		args = append(args, "--auth-host=trust")
	}
	cmd := exec.Command(filepath.Join(bin, "initdb"), args...)
	s.attr(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	// A port another process takes between the probe and the bind makes
	// the server exit at once; try a few.
	for try := 0; ; try++ {
		s.Port = mariadbproc.FreePorts(t, 1)[0]
		if s.Port == SharedPort {
			continue
		}
		err = s.Restart(60 * time.Second)
		if err == nil {
			break
		}
		if try >= 4 {
			t.Fatalf("start private PostgreSQL: %v", err)
		}
		t.Logf("start private PostgreSQL on port %d: %v; trying another port", s.Port, err)
	}
	t.Logf("private PostgreSQL %s on 127.0.0.1:%d, data in %s", bin, s.Port, s.dataDir)
	return s
}

func postgresAccount() (*syscall.Credential, error) {
	out, err := exec.Command("id", "-u", "postgres").Output()
	if err != nil {
		return nil, fmt.Errorf("run as root, the private PostgreSQL needs the postgres account: %w", err)
	}
	uid, err := strconv.Atoi(string(trim(out)))
	if err != nil {
		return nil, fmt.Errorf("id -u postgres: %q", out)
	}
	out, err = exec.Command("id", "-g", "postgres").Output()
	if err != nil {
		return nil, fmt.Errorf("id -g postgres: %w", err)
	}
	gid, err := strconv.Atoi(string(trim(out)))
	if err != nil {
		return nil, fmt.Errorf("id -g postgres: %q", out)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func trim(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// Restart starts the server on its data directory and port (after Crash
// or Stop: crash recovery runs first) and waits until it answers.
func (s *Server) Restart(timeout time.Duration) error {
	if s.Port == SharedPort {
		return errors.New("refusing to run the private server on the shared port")
	}
	args := []string{"-D", s.dataDir, "-p", strconv.Itoa(s.Port), "-k", s.Dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "timezone=UTC", "-c", "max_connections=500",
		// Commits reach the OS at once (synchronous_commit stays on); the
		// disk is not waited for: they survive a crash of the server (the
		// failure tests cause), not a power cut.
		"-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "log_min_messages=warning"}
	for _, k := range sortedKeys(s.settings) {
		args = append(args, "-c", k+"="+s.settings[k])
	}
	logf, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(s.binDir, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	s.attr(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()

	db, err := sql.Open("pgx", s.adminURL("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	return mariadbproc.Starting{Name: "postgres", Exited: exited, State: func() string { return fmt.Sprint(cmd.ProcessState) },
		Timeout: timeout, Pause: 25 * time.Millisecond, Kill: s.Crash, LogTail: func() string { return s.LogTail(20) }}.WaitReady(db)
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Crash stops the server the way a crash does: an immediate shutdown
// (SIGQUIT to the postmaster: every backend quits at once, nothing is
// checkpointed, the next start replays the WAL). It waits until the
// server is gone, killing what is left of its process group after 10 s.
func (s *Server) Crash() {
	s.signal(syscall.SIGQUIT, 10*time.Second)
}

// Stop shuts the server down (fast shutdown, SIGINT), or kills it after
// 30 s.
func (s *Server) Stop() {
	s.signal(syscall.SIGINT, 30*time.Second)
}

func (s *Server) signal(sig syscall.Signal, grace time.Duration) {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(grace):
		s.t.Logf("private PostgreSQL did not stop within %s of %v; killing it", grace, sig)
	}
	mariadbproc.KillGroup(cmd.Process.Pid)
	_ = cmd.Process.Kill()
	<-exited
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string { return mariadbproc.ErrLogTail(s.LogPath, n) }

// adminURL is a pgx URL of database db as root, with the password.
func (s *Server) adminURL(db string) string {
	u := url.URL{Scheme: "postgres", Host: "127.0.0.1:" + strconv.Itoa(s.Port), Path: "/" + db,
		RawQuery: "sslmode=disable&connect_timeout=5&timezone=UTC"}
	if s.password != "" {
		u.User = url.UserPassword("root", s.password)
	} else {
		u.User = url.User("root")
	}
	return u.String()
}

// DriverDSN is a pgx (database/sql driver "pgx") URL of database db as
// root, in UTC.
func (s *Server) DriverDSN(db string) string { return s.adminURL(db) }

// DSN is the queuety DSN of database db with table prefix prefix, as root
// (without the password).
func (s *Server) DSN(db, prefix string) string {
	return fmt.Sprintf("postgres://root@127.0.0.1:%d/%s?prefix=%s&sslmode=disable", s.Port, db, prefix)
}
