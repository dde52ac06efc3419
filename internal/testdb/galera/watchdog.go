package galera

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// A server that drops its privileges (--user, when the tests run as root)
// loses the kernel's parent-death signal, so a test process that dies (a
// test timeout) would leave it running. The watchdog is a shell that
// waits for the end of a pipe the test process holds: when the test
// process is gone, the pipe closes and the shell SIGKILLs every process
// group a node ever ran in (listed in the file groups).

const watchdogScript = `cat >/dev/null
while read -r pgid; do kill -KILL "-$pgid" 2>/dev/null; done < "$1"
`

func (c *Cluster) groupsFile() string { return filepath.Join(c.dir, "groups") }

func (c *Cluster) startWatchdog() error {
	if err := os.WriteFile(c.groupsFile(), nil, 0o644); err != nil {
		return err
	}
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "watchdog", c.groupsFile())
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the cluster's watchdog: %w", err)
	}
	c.watchdog, c.watchdogIn = cmd, in
	return nil
}

// recordGroup adds the process group of a started node to the
// watchdog's list.
func (c *Cluster) recordGroup(pgid int) error {
	c.groupsMu.Lock()
	defer c.groupsMu.Unlock()
	f, err := os.OpenFile(c.groupsFile(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(strconv.Itoa(pgid) + "\n")
	return err
}

// stopWatchdog ends the watchdog once every node is stopped; its kills
// then find nothing.
func (c *Cluster) stopWatchdog() {
	if c.watchdog == nil {
		return
	}
	_ = c.watchdogIn.Close()
	_ = c.watchdog.Wait()
}
