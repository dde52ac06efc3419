// Package galera starts a private three-node MariaDB Galera cluster on
// loopback for tests: three data directories in a temporary directory,
// three client ports and three group-communication ports (plus the ports
// of incremental and full state transfers), the first node bootstrapping
// the cluster. It never connects to the shared test server on port 3306.
//
// Start skips the test when mariadbd, mariadb-install-db or the Galera
// provider is missing, and fails it instead when CI=true. Every server is
// stopped in t.Cleanup, and killed with the test process if it dies (a
// test timeout), so no mariadbd outlives a run.
package galera

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queuety/queuety-go/internal/testdb/mariadbproc"
)

// Where the binaries are looked for, after the environment variables
// QUEUETY_GALERA_MARIADBD, QUEUETY_GALERA_INSTALL_DB and
// QUEUETY_GALERA_PROVIDER and $PATH.
var (
	serverCandidates   = []string{"/usr/sbin/mariadbd", "/usr/libexec/mariadbd", "/usr/local/mysql/bin/mariadbd", "/usr/local/bin/mariadbd"}
	installCandidates  = []string{"/usr/bin/mariadb-install-db", "/usr/local/bin/mariadb-install-db", "/usr/bin/mysql_install_db"}
	providerCandidates = []string{"/usr/lib/galera/libgalera_smm.so", "/usr/lib/galera-4/libgalera_smm.so",
		"/usr/lib64/galera-4/libgalera_smm.so", "/usr/lib64/galera/libgalera_smm.so", "/usr/lib/libgalera_smm.so"}
)

// Size is the number of nodes of a cluster.
const Size = 3

// Cluster is a running Galera cluster owned by one test.
type Cluster struct {
	t        testing.TB
	server   string
	provider string
	sst      string
	user     string // --user of the servers when run as root
	dir      string
	nodes    []*Node

	watchdog   *exec.Cmd
	watchdogIn io.WriteCloser
	groupsMu   sync.Mutex
}

// Node is one server of a Cluster.
type Node struct {
	c       *Cluster
	index   int
	dir     string
	dataDir string
	socket  string
	errLog  string
	// Port is the client port on 127.0.0.1.
	Port      int
	gcommPort int
	istPort   int
	sstPort   int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start installs three data directories, bootstraps the first node,
// joins the other two and waits until all three are synced members of a
// cluster of three.
func Start(t testing.TB) *Cluster {
	t.Helper()
	server := mariadbproc.FindBinary("QUEUETY_GALERA_MARIADBD", []string{"mariadbd"}, serverCandidates)
	install := mariadbproc.FindBinary("QUEUETY_GALERA_INSTALL_DB", []string{"mariadb-install-db", "mysql_install_db"}, installCandidates)
	provider := mariadbproc.FindBinary("QUEUETY_GALERA_PROVIDER", nil, providerCandidates)
	// rsync is the lighter state transfer; mariabackup is the fallback.
	sst := ""
	if _, err := exec.LookPath("rsync"); err == nil {
		if _, err := exec.LookPath("wsrep_sst_rsync"); err == nil {
			sst = "rsync"
		}
	}
	if sst == "" {
		if _, err := exec.LookPath("mariabackup"); err == nil {
			sst = "mariabackup"
		}
	}
	if server == "" || install == "" || provider == "" || sst == "" {
		msg := fmt.Sprintf("Galera is not installed (mariadbd: %q, mariadb-install-db: %q, libgalera_smm.so: %q, state transfer (rsync or mariabackup): %q); "+
			"install mariadb-server, galera-4 and rsync, or set QUEUETY_GALERA_MARIADBD, QUEUETY_GALERA_INSTALL_DB and QUEUETY_GALERA_PROVIDER",
			server, install, provider, sst)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// A short directory keeps the socket paths under the 107-byte limit.
	dir, err := os.MkdirTemp("", "queuety-galera-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, server: server, provider: provider, sst: sst, dir: dir}
	if err := c.startWatchdog(); err != nil {
		_ = os.RemoveAll(dir)
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// Run as root, the rsync daemon of a state transfer drops to
		// nobody, which cannot write a root-owned data directory: the
		// servers run as an unprivileged user instead.
		c.user, err = serverUser(dir)
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		c.stop()
		c.stopWatchdog()
		if os.Getenv("QUEUETY_GALERA_KEEP") != "" || t.Failed() {
			t.Logf("Galera cluster files kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})

	ports := mariadbproc.FreePorts(t, 4*Size)
	for i := range Size {
		nd := filepath.Join(dir, "n"+strconv.Itoa(i+1))
		n := &Node{
			c: c, index: i, dir: nd,
			dataDir: filepath.Join(nd, "data"), socket: filepath.Join(nd, "s.sock"), errLog: filepath.Join(nd, "mariadbd.err"),
			Port: ports[4*i], gcommPort: ports[4*i+1], istPort: ports[4*i+2], sstPort: ports[4*i+3],
		}
		if err := os.MkdirAll(nd, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := c.own(nd); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
	}
	// Only the first node needs a data directory: the others receive
	// theirs by state transfer, as in production. Installing all three
	// keeps the joiners' start-up uniform and costs about a second each.
	var wg sync.WaitGroup
	errs := make([]error, Size)
	for i, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = installDataDir(install, n.dataDir, n.dir, c.user)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	t0 := time.Now()
	if err := c.nodes[0].start(true); err != nil {
		t.Fatalf("bootstrap node 1: %v", err)
	}
	for _, n := range c.nodes[1:] {
		if err := n.start(false); err != nil {
			t.Fatalf("start node %d: %v", n.index+1, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Galera cluster of %d nodes synced in %s (state transfer %s): client ports %v, files in %s",
		Size, time.Since(t0).Round(time.Millisecond), sst, c.Ports(), dir)
	return c
}

// serverUser returns the unprivileged user the servers run as when the
// tests run as root ("mysql", else "nobody"), and hands dir to it.
func serverUser(dir string) (string, error) {
	for _, name := range []string{"mysql", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return "", fmt.Errorf("hand %s to %s: %w", dir, name, err)
		}
		return name, nil
	}
	return "", errors.New("running as root, and neither user mysql nor nobody exists to run the servers as")
}

// own hands path to the servers' user, when they run as one.
func (c *Cluster) own(path string) error {
	if c.user == "" {
		return nil
	}
	u, err := user.Lookup(c.user)
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(path, uid, gid)
}

// installDataDir runs mariadb-install-db with its own temporary
// directory: installs sharing /tmp collide on the names of their
// temporary tables.
func installDataDir(install, dataDir, tmpDir, user string) error {
	args := []string{"--no-defaults", "--datadir=" + dataDir, "--skip-test-db", "--auth-root-authentication-method=normal"}
	if user != "" {
		args = append(args, "--user="+user)
	}
	run := func(args []string) ([]byte, error) {
		cmd := exec.Command(install, args...)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmpDir)
		return cmd.CombinedOutput()
	}
	out, err := run(args)
	if err != nil && bytes.Contains(out, []byte("skip-test-db")) { // older install scripts
		out, err = run(append(args[:2:2], args[3:]...))
	}
	if err != nil {
		return fmt.Errorf("%s: %v\n%s", install, err, out)
	}
	return nil
}

// Nodes returns the cluster's nodes, the bootstrap node first.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Node returns node i, counting from 0.
func (c *Cluster) Node(i int) *Node { return c.nodes[i] }

// Ports returns the client ports of the nodes.
func (c *Cluster) Ports() []int {
	out := make([]int, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Port
	}
	return out
}

func (c *Cluster) address() string {
	parts := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		parts[i] = "127.0.0.1:" + strconv.Itoa(n.gcommPort)
	}
	return "gcomm://" + strings.Join(parts, ",")
}

// WaitSynced waits until every node is ready and synced in a primary
// component of all the cluster's nodes.
func (c *Cluster) WaitSynced(ctx context.Context) error {
	for _, n := range c.nodes {
		if err := n.WaitSynced(ctx, len(c.nodes)); err != nil {
			return err
		}
	}
	return nil
}

// stop shuts every node down, the joiners first.
func (c *Cluster) stop() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.stop()
		}()
	}
	wg.Wait()
}

// Name is "node1", "node2" or "node3".
func (n *Node) Name() string { return "node" + strconv.Itoa(n.index+1) }

// args are the server's arguments.
func (n *Node) args() []string {
	opts := strings.Join([]string{
		"gmcast.listen_addr=tcp://127.0.0.1:" + strconv.Itoa(n.gcommPort),
		"ist.recv_addr=127.0.0.1:" + strconv.Itoa(n.istPort),
		"gcache.size=64M",
		// A killed node leaves the view within seconds, not the 15 s
		// of the defaults.
		"evs.keepalive_period=PT0.5S",
		"evs.inactive_check_period=PT0.5S",
		"evs.suspect_timeout=PT3S",
		"evs.inactive_timeout=PT5S",
		"evs.install_timeout=PT5S",
		"pc.recovery=false",
	}, ";")
	args := []string{
		"--no-defaults",
		"--datadir=" + n.dataDir,
		"--socket=" + n.socket,
		"--pid-file=" + filepath.Join(n.dir, "mariadbd.pid"),
		"--log-error=" + n.errLog,
		"--tmpdir=" + n.dir,
		"--bind-address=127.0.0.1",
		"--port=" + strconv.Itoa(n.Port),
		"--skip-name-resolve",
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_unicode_ci",
		"--max-connections=1000",
		"--innodb-buffer-pool-size=64M",
		"--innodb-log-file-size=48M",
		"--innodb-flush-log-at-trx-commit=2",
		"--performance-schema=OFF",
		"--binlog-format=ROW",
		"--default-storage-engine=InnoDB",
		"--innodb-autoinc-lock-mode=2",
		"--wsrep-on=ON",
		"--wsrep-provider=" + n.c.provider,
		"--wsrep-provider-options=" + opts,
		"--wsrep-cluster-name=queuety-test",
		"--wsrep-cluster-address=" + n.c.address(),
		"--wsrep-node-name=" + n.Name(),
		"--wsrep-node-address=127.0.0.1:" + strconv.Itoa(n.gcommPort),
		"--wsrep-node-incoming-address=127.0.0.1:" + strconv.Itoa(n.Port),
		"--wsrep-sst-method=" + n.c.sst,
		"--wsrep-sst-receive-address=127.0.0.1:" + strconv.Itoa(n.sstPort),
		"--wsrep-slave-threads=2",
	}
	if n.c.user != "" {
		args = append(args, "--user="+n.c.user)
	}
	return args
}

// start starts the server: bootstrapping a new cluster, or joining it
// from startPosition ("uuid:seqno") when not empty.
func (n *Node) start(bootstrap bool, startPosition ...string) error {
	if n.Port == mariadbproc.SharedPort {
		return errors.New("refusing to run a node on the shared port")
	}
	args := n.args()
	if bootstrap {
		args = append(args, "--wsrep-new-cluster")
	}
	for _, p := range startPosition {
		args = append(args, "--wsrep-start-position="+p)
	}
	cmd := exec.Command(n.c.server, args...)
	mariadbproc.Detach(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := n.c.recordGroup(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()

	// Wait until it answers; a joiner answers once its state transfer is
	// done.
	db, err := sql.Open("mysql", n.DriverDSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	return mariadbproc.Starting{Name: n.Name(), Exited: exited, State: func() string { return fmt.Sprint(cmd.ProcessState) },
		Timeout: 3 * time.Minute, Pause: 50 * time.Millisecond, Kill: n.Kill, LogTail: func() string { return n.ErrLogTail(30) }}.WaitReady(db)
}

// Status is what a node reports of its membership.
type Status struct {
	Ready       bool // wsrep_ready = ON
	LocalState  int  // wsrep_local_state: 4 is Synced
	ClusterSize int  // wsrep_cluster_size
	Primary     bool // wsrep_cluster_status = Primary
}

// Synced reports a node that takes writes in a cluster of size nodes.
func (s Status) Synced(size int) bool {
	return s.Ready && s.LocalState == 4 && s.Primary && s.ClusterSize == size
}

// Status reads the node's wsrep status variables.
func (n *Node) Status(ctx context.Context) (Status, error) {
	db, err := sql.Open("mysql", n.DriverDSN(""))
	if err != nil {
		return Status{}, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state', 'wsrep_cluster_size', 'wsrep_cluster_status')")
	if err != nil {
		return Status{}, err
	}
	defer rows.Close()
	var s Status
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return Status{}, err
		}
		switch strings.ToLower(name) {
		case "wsrep_ready":
			s.Ready = value == "ON"
		case "wsrep_local_state":
			s.LocalState, _ = strconv.Atoi(value)
		case "wsrep_cluster_size":
			s.ClusterSize, _ = strconv.Atoi(value)
		case "wsrep_cluster_status":
			s.Primary = value == "Primary"
		}
	}
	return s, rows.Err()
}

// WaitSynced waits until the node is ready and synced in a primary
// component of size nodes.
func (n *Node) WaitSynced(ctx context.Context, size int) error {
	var last Status
	var lastErr error
	for {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last, lastErr = n.Status(qctx)
		cancel()
		if lastErr == nil && last.Synced(size) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not synced in a cluster of %d: last status %+v, error %v\n%s", n.Name(), size, last, lastErr, n.ErrLogTail(30))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Kill SIGKILLs the node and waits until it is gone. The other nodes
// drop it from the cluster once it stops answering (a few seconds).
func (n *Node) Kill() {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	mariadbproc.KillGroup(cmd.Process.Pid)
	<-exited
}

// Stop shuts the node down cleanly (SIGTERM) and waits until it is gone:
// it leaves the cluster in order, and the other nodes go on as a primary
// component of the rest at once.
func (n *Node) Stop() { n.stop() }

// Restart starts a killed or stopped node again on its data directory:
// it rejoins the cluster, catching up by incremental state transfer when
// the others still hold the writes it missed, by full transfer otherwise.
// It returns once the node is synced in a cluster of all the nodes.
func (n *Node) Restart(ctx context.Context) error {
	// A SIGKILLed node leaves its state marked unsafe, and would ask for
	// a full transfer: the position its storage recovers to lets it ask
	// for the writes it missed only, as the packaged start scripts do.
	var pos []string
	if p, err := n.recoverPosition(); err == nil {
		pos = append(pos, p)
	} else {
		n.c.t.Logf("%s: no position recovered, joining by full state transfer: %v", n.Name(), err)
	}
	if err := n.start(false, pos...); err != nil {
		return err
	}
	return n.WaitSynced(ctx, len(n.c.nodes))
}

// recoverPosition runs the server with --wsrep-recover, which recovers
// the storage, logs the last committed position and exits, and returns
// that position.
func (n *Node) recoverPosition() (string, error) {
	logPath := filepath.Join(n.dir, "recover.err")
	_ = os.Remove(logPath)
	cmd := exec.Command(n.c.server, append(n.args(), "--wsrep-recover", "--log-error="+logPath)...)
	mariadbproc.Detach(cmd)
	if err := cmd.Start(); err != nil {
		return "", err
	}
	if err := n.c.recordGroup(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return "", err
	}
	if err := cmd.Wait(); err != nil {
		return "", fmt.Errorf("mariadbd --wsrep-recover: %w", err)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		return "", err
	}
	const marker = "WSREP: Recovered position: "
	i := bytes.LastIndex(b, []byte(marker))
	if i < 0 {
		return "", fmt.Errorf("mariadbd --wsrep-recover logged no position:\n%s", b)
	}
	fields := strings.Fields(string(b[i+len(marker):]))
	if len(fields) == 0 || !strings.Contains(fields[0], ":") || strings.HasSuffix(fields[0], ":-1") {
		return "", fmt.Errorf("mariadbd --wsrep-recover logged no usable position: %q", fields)
	}
	return fields[0], nil
}

// stop shuts the node down cleanly, or kills it (with anything left in
// its process group, a state-transfer script) after 30 s.
func (n *Node) stop() {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	mariadbproc.Stop(cmd, exited, n.Name(), n.c.t.Logf)
}

// Pid returns the process id of the node's server, 0 when it is not
// running.
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	select {
	case <-n.exited:
		return 0
	default:
	}
	return n.cmd.Process.Pid
}

// ErrLogTail returns the last n lines of the node's error log.
func (n *Node) ErrLogTail(lines int) string { return mariadbproc.ErrLogTail(n.errLog, lines) }

// DriverDSN is a go-sql-driver DSN of the node for database db (none
// when empty).
func (n *Node) DriverDSN(db string) string { return mariadbproc.DriverDSN(n.Port, db) }

// DSN is the queuety DSN of the node for database db and table prefix.
func (n *Node) DSN(db, prefix string) string { return mariadbproc.DSN(n.Port, db, prefix) }
