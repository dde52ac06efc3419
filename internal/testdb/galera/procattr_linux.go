package galera

import (
	"os/exec"
	"syscall"
)

// detach puts a server in its own process group, so a signal to the group
// reaches it and the state-transfer scripts it starts, and has the kernel
// kill it when the test process dies (a test timeout), so no server
// outlives an aborted run.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
